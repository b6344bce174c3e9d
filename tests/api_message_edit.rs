//! PATCH /messages/{message_id} (content edits, topic and channel moves)
//! and GET /messages/{message_id}/history.

use serde_json::{json, Value};

use crate::util::{Client, Response, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; in general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; in general only
const SHIVA: &str = "shiva@natter.test"; // moderator; not in core team
const POLONIUS: &str = "polonius@natter.test"; // guest; in general only

fn send(c: &Client, to: &str, topic: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", topic), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

fn get(c: &Client, id: u64) -> Value {
    c.get(&format!("/messages/{id}"), &[]).ok()["message"].clone()
}

fn patch(c: &Client, id: u64, params: &[(&str, &str)]) -> Response {
    c.request("PATCH", &format!("/messages/{id}"), params)
}

fn history(c: &Client, id: u64) -> Vec<Value> {
    c.get(&format!("/messages/{id}/history"), &[]).ok()["message_history"]
        .as_array()
        .unwrap()
        .clone()
}

fn channel_id(c: &Client, name: &str) -> u64 {
    get(c, send(c, name, "probe", "x"))["stream_id"].as_u64().unwrap()
}

#[test]
fn content_edits_keep_history() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let id = send(&hamlet, "Denmark", "t", "hello world");
    let sent = get(&hamlet, id)["timestamp"].as_i64().unwrap();
    assert!(get(&hamlet, id).get("edit_history").is_none());
    let r =
        patch(&hamlet, id, &[("content", "hello brave world @**Othello, the Moor of Venice**")])
            .ok();
    assert_eq!(r["detached_uploads"], json!([]));
    let m = get(&othello, id);
    assert!(m["content"]
        .as_str()
        .unwrap()
        .starts_with("<p>hello brave world <span class=\"user-mention\""));
    assert_eq!(m["flags"], json!(["mentioned"]), "the edit mentions Othello now");
    let edited = m["last_edit_timestamp"].as_i64().unwrap();
    assert!(edited >= sent);
    assert!(m.get("last_moved_timestamp").is_none());
    let hamlet_id = m["sender_id"].clone();
    assert_eq!(
        m["edit_history"],
        json!([{
            "user_id": hamlet_id, "timestamp": edited,
            "prev_content": "hello world", "prev_rendered_content": "<p>hello world</p>",
        }])
    );
    // The history endpoint: the original first, then each edit.
    let h = history(&othello, id);
    assert_eq!(h.len(), 2);
    assert_eq!(
        h[0],
        json!({"topic": "t", "content": "hello world", "rendered_content": "<p>hello world</p>",
               "timestamp": sent, "user_id": hamlet_id})
    );
    assert_eq!(h[1]["topic"], "t");
    assert_eq!(h[1]["prev_content"], "hello world");
    assert!(h[1]["content"].as_str().unwrap().starts_with("hello brave world"));
    let diff = h[1]["content_html_diff"].as_str().unwrap();
    assert!(diff.contains("<span class=\"highlight_text_inserted\">brave</span>"), "{diff}");
    // Mentioning nobody any more clears the flag; an emptied message reads "(deleted)".
    patch(&hamlet, id, &[("content", "")]).ok();
    let m = get(&othello, id);
    assert_eq!(m["flags"], json!([]));
    assert_eq!(m["content"], "<p>(deleted)</p>");
    assert_eq!(m["edit_history"].as_array().unwrap().len(), 2);
    assert_eq!(history(&hamlet, id).len(), 3);
    // The same content again changes nothing.
    patch(&hamlet, id, &[("content", "(deleted)")]).ok();
    assert_eq!(history(&hamlet, id).len(), 3);
    // Only the author edits content.
    let e = patch(&othello, id, &[("content", "mine now")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You don't have permission to edit this message");
    patch(&server.client(SHIVA), id, &[("content", "mod")]).err(400, "BAD_REQUEST");
}

#[test]
fn topic_moves_follow_propagate_mode() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let m1 = send(&hamlet, "Denmark", "a", "one");
    let m2 = send(&othello, "Denmark", "A", "two");
    let m3 = send(&hamlet, "Denmark", "a", "three");
    let other = send(&hamlet, "Denmark", "elsewhere", "four");
    let topic = |id| get(&hamlet, id)["subject"].as_str().unwrap().to_owned();
    // change_later from m2 takes m2 and m3 (topics compare case-insensitively).
    patch(&othello, m2, &[("topic", "b"), ("propagate_mode", "change_later")]).ok();
    assert_eq!([topic(m1), topic(m2), topic(m3), topic(other)], ["a", "b", "b", "elsewhere"]);
    let m = get(&hamlet, m3);
    assert!(m["last_moved_timestamp"].is_i64());
    assert!(m.get("last_edit_timestamp").is_none(), "a move is not a content edit");
    let record = &m["edit_history"][0];
    assert_eq!((&record["prev_topic"], &record["topic"]), (&json!("a"), &json!("b")));
    assert!(record.get("prev_content").is_none());
    // change_one moves one; change_all the whole topic.
    patch(&hamlet, m3, &[("topic", "c")]).ok();
    assert_eq!([topic(m2), topic(m3)], ["b", "c"]);
    patch(&hamlet, m2, &[("topic", "c"), ("propagate_mode", "change_all")]).ok();
    assert_eq!([topic(m1), topic(m2), topic(m3)], ["a", "c", "c"]);
    // Resolving is not a move.
    patch(&hamlet, m1, &[("topic", "✔ a"), ("propagate_mode", "change_all")]).ok();
    let m = get(&hamlet, m1);
    assert_eq!(m["subject"], "✔ a");
    assert!(m.get("last_moved_timestamp").is_none());
    assert_eq!(m["edit_history"][0]["prev_topic"], "a");
    // The empty topic, shown by its display name unless asked.
    patch(&hamlet, m1, &[("topic", "(no topic)")]).ok();
    let h = history(&hamlet, m1);
    assert_eq!(h.last().unwrap()["topic"], "general chat");
    assert_eq!(h.last().unwrap()["prev_topic"], "✔ a");
    let raw =
        hamlet.get(&format!("/messages/{m1}/history"), &[("allow_empty_topic_name", "true")]).ok();
    assert_eq!(raw["message_history"].as_array().unwrap().last().unwrap()["topic"], "");
    // Same topic again: nothing to do, still a success.
    patch(&hamlet, m3, &[("topic", "c")]).ok();
    assert_eq!(get(&hamlet, m3)["edit_history"].as_array().unwrap().len(), 2);
}

#[test]
fn channel_moves_change_who_has_the_message() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let cordelia = server.client(CORDELIA);
    let general = channel_id(&hamlet, "general");
    let core = channel_id(&hamlet, "core team");
    let id = send(&othello, "Denmark", "move me", "words");
    let later = send(&othello, "Denmark", "move me", "more words");
    server.client(POLONIUS).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    // To general: its subscribers (a guest among them) now have it, read.
    patch(&hamlet, id, &[("stream_id", &general.to_string()), ("propagate_mode", "change_all")])
        .ok();
    for mid in [id, later] {
        let m = get(&cordelia, mid);
        assert_eq!(m["display_recipient"], "general");
        assert_eq!(m["flags"], json!(["read"]));
        let record = &m["edit_history"][0];
        assert_eq!(record["stream"], general);
        assert!(record["prev_stream"].is_u64());
        assert!(m["last_moved_timestamp"].is_i64());
    }
    assert_eq!(get(&server.client(POLONIUS), id)["display_recipient"], "general");
    // On to the private core team: Othello (not subscribed) loses it.
    patch(&hamlet, id, &[("stream_id", &core.to_string()), ("topic", "secret")]).ok();
    let m = get(&hamlet, id);
    assert_eq!(
        (m["display_recipient"].clone(), m["subject"].clone()),
        (json!("core team"), json!("secret"))
    );
    othello.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    cordelia.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(get(&cordelia, later)["display_recipient"], "general", "change_one left it");
    // Othello cannot move into a channel he cannot see.
    let e = patch(&othello, later, &[("stream_id", &core.to_string())])
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], core);
}

#[test]
fn edit_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let polonius = server.client(POLONIUS);
    let id = send(&hamlet, "general", "t", "x");
    let general = channel_id(&hamlet, "general");
    let bad =
        |c: &Client, id: u64, params: &[(&str, &str)]| patch(c, id, params).err(400, "BAD_REQUEST");
    let e = bad(&hamlet, id, &[]);
    assert_eq!(e["msg"], "Nothing to change");
    bad(&hamlet, id, &[("topic", "u"), ("propagate_mode", "change_some")]);
    bad(&hamlet, id, &[("content", "y"), ("stream_id", &general.to_string())]);
    bad(&hamlet, id, &[("topic", "a\u{7}b")]);
    // A guest may not move topics, even of their own message.
    let own = send(&polonius, "general", "t", "guest words");
    let e = bad(&polonius, own, &[("topic", "moved")]);
    assert_eq!(e["msg"], "You don't have permission to edit this message");
    patch(&polonius, own, &[("content", "edited guest words")]).ok();
    // Direct messages have no topic or channel.
    let othello_id =
        get(&othello, send(&othello, "general", "t", "x"))["sender_id"].as_u64().unwrap();
    let dm = hamlet
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{othello_id}]")), ("content", "psst")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let e = bad(&hamlet, dm, &[("topic", "t")]);
    assert_eq!(e["msg"], "Direct messages cannot have topics.");
    bad(&hamlet, dm, &[("stream_id", &general.to_string())]);
    patch(&hamlet, dm, &[("content", "psst!")]).ok();
    // Messages the caller cannot see: private channel, guest, other realm, missing.
    let secret = send(&hamlet, "core team", "t", "the plan");
    let denmark = send(&hamlet, "Denmark", "t", "public");
    let invalid = |c: &Client, id: u64| {
        let e = patch(c, id, &[("topic", "mine")]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
        let e = c.get(&format!("/messages/{id}/history"), &[]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    };
    invalid(&othello, secret);
    invalid(&server.client(SHIVA), secret);
    invalid(&polonius, denmark);
    invalid(&server.client("king@lear.test").with_host("lear.localhost"), id);
    invalid(&hamlet, 999_999);
    assert_eq!(get(&hamlet, secret)["subject"], "t");
    // The notification parameters are understood (and must be booleans).
    let r = patch(&hamlet, id, &[("topic", "u"), ("send_notification_to_old_thread", "true")]).ok();
    assert!(r.get("ignored_parameters_unsupported").is_none());
    let e = patch(&hamlet, id, &[("topic", "v"), ("send_notification_to_new_thread", "maybe")])
        .err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("send_notification_to_new_thread"), "{e}");
}

#[test]
fn edits_survive_a_restart() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(&hamlet, "general", "t", "before");
    patch(&hamlet, id, &[("content", "after"), ("topic", "u")]).ok();
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    let m = get(&hamlet, id);
    assert_eq!((m["content"].clone(), m["subject"].clone()), (json!("<p>after</p>"), json!("u")));
    assert_eq!(history(&hamlet, id).len(), 2);
}

#[test]
fn moved_messages_are_found_under_their_new_topic_and_channel() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let a = send(&hamlet, "Denmark", "old place", "one");
    let b = send(&hamlet, "Denmark", "old place", "two");
    let general = channel_id(&hamlet, "general");
    let in_topic = |channel: &str, topic: &str| -> Vec<u64> {
        let narrow = json!([["stream", channel], ["topic", topic]]).to_string();
        hamlet
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "10"),
                    ("num_after", "0"),
                    ("narrow", &narrow),
                ],
            )
            .ok()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_u64().unwrap())
            .collect()
    };
    let topics = |channel: u64| -> Vec<String> {
        hamlet.get(&format!("/users/me/{channel}/topics"), &[]).ok()["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(in_topic("Denmark", "old place"), [a, b]);

    // (Without the Notification Bot's notices, which have their own tests.)
    let quiet = ("send_notification_to_new_thread", "false");
    patch(&hamlet, a, &[("topic", "new place"), ("propagate_mode", "change_all"), quiet]).ok();
    assert_eq!(in_topic("Denmark", "old place"), Vec::<u64>::new());
    assert_eq!(in_topic("Denmark", "new place"), [a, b]);
    let denmark = get(&hamlet, a)["stream_id"].as_u64().unwrap();
    assert!(topics(denmark).contains(&"new place".to_owned()));
    assert!(!topics(denmark).contains(&"old place".to_owned()));

    let to_general = general.to_string();
    patch(&hamlet, b, &[("stream_id", &to_general), ("propagate_mode", "change_one"), quiet]).ok();
    assert_eq!(in_topic("Denmark", "new place"), [a]);
    assert_eq!(in_topic("general", "new place"), [b]);
    assert!(topics(general).contains(&"new place".to_owned()));
}

/// The caller's visibility policies as `POST /register` gives them:
/// (channel id, topic, policy), sorted.
fn user_topics(c: &Client) -> Vec<(u64, String, u64)> {
    let r = c.post("/register", &[("fetch_event_types", r#"["user_topic"]"#)]).ok();
    let mut out: Vec<_> = r["user_topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let topic = t["topic_name"].as_str().unwrap().to_owned();
            (t["stream_id"].as_u64().unwrap(), topic, t["visibility_policy"].as_u64().unwrap())
        })
        .collect();
    out.sort();
    out
}

fn set_policy(c: &Client, channel: u64, topic: &str, policy: u8) {
    let params = [
        ("stream_id", channel.to_string()),
        ("topic", topic.to_owned()),
        ("visibility_policy", policy.to_string()),
    ];
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    c.post("/user_topics", &params).ok();
}

/// A whole-topic move carries the visibility policies along: they leave the
/// old topic, apply to the new one (the more attentive one stays where the
/// user had a policy there too), and are dropped for users who cannot read
/// the destination channel. A partial move leaves them.
#[test]
fn moving_a_whole_topic_moves_its_follows_and_mutes() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let iago = server.client("iago@natter.test");
    let denmark = channel_id(&hamlet, "Denmark");
    let first = send(&hamlet, "Denmark", "plans", "one");
    send(&hamlet, "Denmark", "plans", "two");
    set_policy(&othello, denmark, "plans", 3); // follows
    set_policy(&iago, denmark, "plans", 1); // mutes…
    set_policy(&iago, denmark, "dest", 3); // …but follows the destination

    // A partial move (`change_one`) moves no policy.
    patch(&hamlet, first, &[("topic", "elsewhere"), ("propagate_mode", "change_one")]).ok();
    assert_eq!(user_topics(&othello), vec![(denmark, "plans".into(), 3)]);
    patch(&hamlet, first, &[("topic", "plans"), ("propagate_mode", "change_one")]).ok();

    patch(&hamlet, first, &[("topic", "dest"), ("propagate_mode", "change_all")]).ok();
    assert_eq!(user_topics(&othello), vec![(denmark, "dest".into(), 3)]);
    assert_eq!(user_topics(&iago), vec![(denmark, "dest".into(), 3)]);

    // To a private channel Othello cannot read: his follow is dropped.
    let core = channel_id(&hamlet, "core team");
    let to_core = [("stream_id", core.to_string()), ("propagate_mode", "change_all".into())];
    let to_core: Vec<(&str, &str)> = to_core.iter().map(|(k, v)| (*k, v.as_str())).collect();
    patch(&hamlet, first, &to_core).ok();
    assert_eq!(user_topics(&othello), vec![]);
    assert_eq!(user_topics(&iago), vec![(core, "dest".into(), 3)]);
}
