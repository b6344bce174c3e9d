//! POST and DELETE /messages/{message_id}/reactions.

use serde_json::{json, Value};

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; in general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; in general only
const SHIVA: &str = "shiva@natter.test"; // moderator; not in core team
const POLONIUS: &str = "polonius@natter.test"; // guest; in general only
const BOT: &str = "helper-bot@natter.test";

fn send(c: &Client, to: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", "t"), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

fn reactions(c: &Client, id: u64) -> Value {
    c.get(&format!("/messages/{id}"), &[]).ok()["message"]["reactions"].clone()
}

fn me(c: &Client) -> Value {
    c.get("/users/me", &[]).ok()
}

/// Reactions read Zulip's emoji name table: its newer names and aliases
/// resolve, a name must belong to the code sent.
#[test]
fn names_come_from_zulips_emoji_table() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(&hamlet, "general", "react to me");
    let path = format!("/messages/{id}/reactions");
    hamlet.post(&path, &[("emoji_name", "jellyfish")]).ok();
    // An alias is the same emoji as its canonical name.
    hamlet.post(&path, &[("emoji_name", "honk")]).ok();
    hamlet
        .post(
            &path,
            &[("emoji_name", "goose"), ("emoji_code", "1fabf"), ("reaction_type", "unicode_emoji")],
        )
        .err(400, "REACTION_ALREADY_EXISTS");
    let got = reactions(&hamlet, id);
    let pairs: Vec<(&str, &str)> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["emoji_name"].as_str().unwrap(), r["emoji_code"].as_str().unwrap()))
        .collect();
    assert_eq!(pairs, [("jellyfish", "1fabc"), ("honk", "1fabf")]);
    let e = hamlet
        .post(
            &path,
            &[
                ("emoji_name", "jellyfish"),
                ("emoji_code", "1fabf"),
                ("reaction_type", "unicode_emoji"),
            ],
        )
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid emoji name.");
    let e = hamlet.post(&path, &[("emoji_name", "no_such_emoji_name")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Emoji 'no_such_emoji_name' does not exist");
}

#[test]
fn add_and_remove_by_name_or_code() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let bot = server.client(BOT);
    let id = send(&hamlet, "general", "react to me");
    let path = format!("/messages/{id}/reactions");
    // A bot sends only the name (zulip-run-bot's helloworld does).
    bot.post(
        &path,
        &[
            ("message_id", &id.to_string()),
            ("emoji_name", "wave"),
            ("reaction_type", "unicode_emoji"),
        ],
    )
    .ok();
    let bot_me = me(&bot);
    assert_eq!(
        reactions(&hamlet, id),
        json!([{
            "emoji_name": "wave",
            "emoji_code": "1f44b",
            "reaction_type": "unicode_emoji",
            "user_id": bot_me["user_id"],
            "user": {
                "id": bot_me["user_id"],
                "email": BOT,
                "full_name": "Helper Bot",
                "is_mirror_dummy": false,
            },
        }])
    );
    // zulip-term sends all three fields.
    let full =
        [("emoji_name", "thumbs_up"), ("emoji_code", "1f44d"), ("reaction_type", "unicode_emoji")];
    hamlet.post(&path, &full).ok();
    let e = hamlet.post(&path, &full).err(400, "REACTION_ALREADY_EXISTS");
    assert_eq!(e["msg"], "Reaction already exists.");
    // The same emoji under another of its names is the same reaction.
    hamlet.post(&path, &[("emoji_name", "+1")]).err(400, "REACTION_ALREADY_EXISTS");
    // Someone else may add the same one.
    server.client(OTHELLO).post(&path, &[("emoji_name", "+1")]).ok();
    // Zulip's one extra emoji.
    hamlet.post(&path, &[("emoji_name", "zulip")]).ok();
    let got = reactions(&hamlet, id);
    let codes: Vec<&str> =
        got.as_array().unwrap().iter().map(|r| r["emoji_code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["1f44b", "1f44d", "1f44d", "zulip"]);
    assert_eq!(got[3]["reaction_type"], "zulip_extra_emoji");
    // Remove with the fields zulip-term sends (a DELETE form body), then by name.
    hamlet.request("DELETE", &path, &full).ok();
    hamlet.request("DELETE", &path, &full).err(400, "REACTION_DOES_NOT_EXIST");
    hamlet.request("DELETE", &path, &[("emoji_name", "zulip")]).ok();
    bot.request("DELETE", &path, &[("emoji_name", "hello")]).ok(); // an alias of wave
    let got = reactions(&hamlet, id);
    assert_eq!(got.as_array().unwrap().len(), 1);
    assert_eq!(got[0]["user"]["email"], OTHELLO);
    // Only one's own reaction can be removed.
    hamlet.request("DELETE", &path, &[("emoji_name", "+1")]).err(400, "REACTION_DOES_NOT_EXIST");
}

#[test]
fn invalid_emoji_are_refused() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(&hamlet, "general", "x");
    let path = format!("/messages/{id}/reactions");
    let bad = |params: &[(&str, &str)]| hamlet.post(&path, params).err(400, "BAD_REQUEST");
    bad(&[("emoji_name", "no_such_emoji")]);
    bad(&[("emoji_name", "smile"), ("emoji_code", "zzzz")]);
    bad(&[("emoji_name", "smile"), ("emoji_code", "1f44d")]); // name and code disagree
    bad(&[("emoji_name", "smile"), ("emoji_code", "1f642"), ("reaction_type", "bogus")]);
    bad(&[("emoji_name", "party"), ("emoji_code", "42"), ("reaction_type", "realm_emoji")]);
    bad(&[("emoji_name", "zulip"), ("emoji_code", "nope"), ("reaction_type", "zulip_extra_emoji")]);
    let e = hamlet.post(&path, &[("emoji_code", "1f642")]).err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "emoji_name");
    hamlet.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    hamlet.post("/messages/abc/reactions", &[("emoji_name", "smile")]).err(400, "BAD_REQUEST");
    assert_eq!(reactions(&hamlet, id), json!([]));
}

#[test]
fn only_those_who_see_the_message_may_react() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let secret = send(&hamlet, "core team", "the plan");
    let public = send(&hamlet, "Denmark", "public words");
    let invalid = |c: &Client, id: u64| {
        let path = format!("/messages/{id}/reactions");
        let e = c.post(&path, &[("emoji_name", "smile")]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
        let e = c.request("DELETE", &path, &[("emoji_name", "smile")]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    };
    hamlet.post(&format!("/messages/{secret}/reactions"), &[("emoji_name", "smile")]).ok();
    // Non-subscribers of a private channel, a moderator included.
    invalid(&server.client(OTHELLO), secret);
    invalid(&server.client(SHIVA), secret);
    // A guest sees only channels they are in.
    invalid(&server.client(POLONIUS), public);
    // Another realm's user, and a message id that does not exist.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    invalid(&king, public);
    invalid(&hamlet, 999_999);
    // A public channel's history is open to non-subscribers.
    server
        .client(CORDELIA)
        .post(&format!("/messages/{public}/reactions"), &[("emoji_name", "eyes")])
        .ok();
    assert_eq!(reactions(&hamlet, public)[0]["emoji_name"], "eyes");
    assert_eq!(reactions(&hamlet, secret).as_array().unwrap().len(), 1);
}

#[test]
fn reactions_survive_a_restart() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(&hamlet, "general", "durable");
    hamlet.post(&format!("/messages/{id}/reactions"), &[("emoji_name", "octopus")]).ok();
    server.kill();
    server.restart();
    let got = reactions(&server.client(HAMLET), id);
    assert_eq!(got[0]["emoji_code"], "1f419");
}

/// Reacting to a public channel's message one never received gives it a
/// historical, read entry (Zulip's historical UserMessage row): the message
/// is then among the user's messages, with those flags, as starring does.
#[test]
fn reacting_to_channel_history_makes_a_historical_entry() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA); // not in Denmark
    let id = send(&hamlet, "Denmark", "before you came");
    let mine = |c: &Client| -> Vec<(u64, Value)> {
        let params = [("anchor", "newest"), ("num_before", "20"), ("num_after", "0")];
        c.get("/messages", &params).ok()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["id"].as_u64().unwrap(), m["flags"].clone()))
            .collect()
    };
    assert!(mine(&cordelia).iter().all(|(m, _)| *m != id), "not hers before");
    let path = format!("/messages/{id}/reactions");
    cordelia.post(&path, &[("emoji_name", "smile")]).ok();
    let entry = mine(&cordelia).into_iter().find(|(m, _)| *m == id);
    assert_eq!(entry, Some((id, json!(["read", "historical"]))));
    // Taking the reaction back keeps the entry, as in Zulip; reacting again
    // changes nothing more.
    cordelia.request("DELETE", &path, &[("emoji_name", "smile")]).ok();
    cordelia.post(&path, &[("emoji_name", "smile")]).ok();
    let entry = mine(&cordelia).into_iter().find(|(m, _)| *m == id);
    assert_eq!(entry, Some((id, json!(["read", "historical"]))));
    // Starring it now keeps it historical.
    let ids = format!("[{id}]");
    cordelia
        .post("/messages/flags", &[("messages", &ids), ("op", "add"), ("flag", "starred")])
        .ok();
    let entry = mine(&cordelia).into_iter().find(|(m, _)| *m == id).unwrap();
    assert_eq!(entry.1, json!(["read", "starred", "historical"]));
    // A subscriber's own copy is untouched by reacting.
    let othello = server.client(OTHELLO);
    othello.post(&path, &[("emoji_name", "heart")]).ok();
    let theirs = mine(&othello).into_iter().find(|(m, _)| *m == id).unwrap();
    assert_eq!(theirs.1, json!([]));
}
