//! DELETE /messages/{message_id}.

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; in general, Denmark
const IAGO: &str = "iago@natter.test"; // administrator; in core team
const SHIVA: &str = "shiva@natter.test"; // moderator; not in core team
const POLONIUS: &str = "polonius@natter.test"; // guest; in general only

fn send(c: &Client, params: &[(&str, &str)]) -> u64 {
    c.post("/messages", params).ok()["id"].as_u64().unwrap()
}

fn to_channel(c: &Client, channel: &str) -> u64 {
    send(c, &[("type", "stream"), ("to", channel), ("topic", "t"), ("content", "words")])
}

fn delete(c: &Client, id: u64) -> crate::util::Response {
    c.request("DELETE", &format!("/messages/{id}"), &[])
}

fn gone(c: &Client, id: u64) {
    let e = c.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
}

#[test]
fn authors_and_administrators_delete() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let own = to_channel(&hamlet, "general");
    delete(&hamlet, own).ok();
    gone(&hamlet, own);
    gone(&othello, own);
    delete(&hamlet, own).err(400, "BAD_REQUEST");
    // Someone else's message: refused for a member, allowed for an admin.
    let theirs = to_channel(&othello, "general");
    let e = delete(&hamlet, theirs).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You don't have permission to delete this message");
    assert_eq!(hamlet.get(&format!("/messages/{theirs}"), &[]).ok()["raw_content"], "words");
    delete(&server.client(IAGO), theirs).ok();
    gone(&othello, theirs);
    // A direct message: its recipient is not its author.
    let othello_id = othello.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    let dm = send(
        &hamlet,
        &[("type", "direct"), ("to", &format!("[{othello_id}]")), ("content", "psst")],
    );
    delete(&othello, dm).err(400, "BAD_REQUEST");
    delete(&hamlet, dm).ok();
    gone(&othello, dm);
    // Deletions are durable; the rest of the channel is untouched.
    let kept = to_channel(&hamlet, "general");
    server.kill();
    server.restart();
    gone(&server.client(HAMLET), own);
    gone(&server.client(HAMLET), dm);
    assert_eq!(
        server.client(HAMLET).get(&format!("/messages/{kept}"), &[]).ok()["raw_content"],
        "words"
    );
}

#[test]
fn delete_refusals_never_reveal_messages() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let secret = to_channel(&hamlet, "core team");
    let public = to_channel(&hamlet, "Denmark");
    let invalid = |c: &Client, id: u64| {
        let e = delete(c, id).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    };
    // Non-subscribers of a private channel: a member, a moderator.
    invalid(&server.client(OTHELLO), secret);
    invalid(&server.client(SHIVA), secret);
    // A guest, for a channel they are not in.
    invalid(&server.client(POLONIUS), public);
    // Another realm's owner; an id that does not exist; a bad id.
    invalid(&server.client("king@lear.test").with_host("lear.localhost"), public);
    invalid(&hamlet, 999_999);
    delete(&hamlet, 0).err(400, "BAD_REQUEST");
    hamlet.request("DELETE", "/messages/abc", &[]).err(400, "BAD_REQUEST");
    // The administrator, subscribed, may.
    delete(&server.client(IAGO), secret).ok();
    gone(&hamlet, secret);
    // A guest deletes their own message where they are subscribed.
    let polonius = server.client(POLONIUS);
    let own = to_channel(&polonius, "general");
    delete(&polonius, own).ok();
    gone(&hamlet, own);
}

#[test]
fn a_channel_adds_delete_rights_to_the_realm_s_and_none_by_default() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let iago = server.client(IAGO);
    let groups = iago.get("/user_groups", &[]).ok()["user_groups"].clone();
    let group = |name: &str| {
        let all = groups.as_array().unwrap();
        all.iter().find(|g| g["name"] == name).unwrap()["id"].as_u64().unwrap()
    };
    let general =
        hamlet.get("/get_stream_id", &[("stream", "general")]).ok()["stream_id"].as_u64().unwrap();
    let channel = hamlet.get(&format!("/streams/{general}"), &[]).ok()["stream"].clone();
    let nobody = group("role:nobody");
    assert_eq!(channel["can_delete_own_message_group"], nobody, "nobody beyond the realm's");
    assert_eq!(channel["can_delete_any_message_group"], nobody);
    // The realm lets only administrators delete their own messages: the
    // channel's default adds nobody.
    let admins = format!("{{\"new\": {}}}", group("role:administrators"));
    iago.request("PATCH", "/realm", &[("can_delete_own_message_group", &admins)]).ok();
    let own = to_channel(&hamlet, "general");
    let e = delete(&hamlet, own).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You don't have permission to delete this message");
    let iagos = to_channel(&iago, "general");
    delete(&iago, iagos).ok();
    // The channel grants it to everyone: its members may again.
    let everyone = format!("{{\"new\": {}}}", group("role:everyone"));
    iago.request(
        "PATCH",
        &format!("/streams/{general}"),
        &[("can_delete_own_message_group", &everyone)],
    )
    .ok();
    delete(&hamlet, own).ok();
    gone(&hamlet, own);
}
