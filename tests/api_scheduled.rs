//! Scheduled messages: POST/GET /scheduled_messages, PATCH/DELETE
//! /scheduled_messages/{id}, delivery at the time as an ordinary message
//! with a new id, and exactly-once delivery across SIGKILL restarts.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::util::{channel_id, Client, TestServer};

const IAGO: &str = "iago@natter.test"; // administrator; general, Denmark, core team
const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const POLONIUS: &str = "polonius@natter.test"; // guest; general only
const KING: &str = "king@lear.test"; // owner of the other realm

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn king(server: &TestServer) -> Client {
    server.client(KING).with_host("lear.localhost")
}

fn user_id(c: &Client) -> u64 {
    c.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap()
}

fn scheduled(c: &Client) -> Vec<Value> {
    c.get("/scheduled_messages", &[]).ok()["scheduled_messages"].as_array().unwrap().clone()
}

/// Schedules a channel message; returns its scheduled id.
fn schedule(c: &Client, channel: u64, topic: &str, content: &str, at: i64) -> u64 {
    let (channel, at) = (channel.to_string(), at.to_string());
    let params = [
        ("type", "stream"),
        ("to", channel.as_str()),
        ("topic", topic),
        ("content", content),
        ("scheduled_delivery_timestamp", at.as_str()),
    ];
    c.post("/scheduled_messages", &params).ok()["scheduled_message_id"].as_u64().unwrap()
}

/// The messages `c` sees in a channel topic, oldest first.
fn topic_messages(c: &Client, channel: &str, topic: &str) -> Vec<Value> {
    let narrow = format!(r#"[["channel","{channel}"],["topic","{topic}"]]"#);
    let r = c.get("/messages", &[("anchor", "newest"), ("num_before", "100"), ("narrow", &narrow)]);
    r.ok()["messages"].as_array().unwrap().clone()
}

/// Polls `check` until it yields a value, for at most `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Blocks until the wall clock is past `t` (UNIX seconds).
fn wait_until_past(t: i64) {
    wait_for("the clock", Duration::from_secs(30), || (now() > t).then_some(()));
}

#[test]
fn schedule_list_edit_and_delete() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello_id = user_id(&server.client(OTHELLO));
    let denmark = channel_id(&hamlet, "Denmark");
    let general = channel_id(&hamlet, "general");
    let later = now() + 3600;
    let a = schedule(&hamlet, denmark, "plans", "**later**", later + 60);
    let to = format!("[{othello_id}]");
    let at = later.to_string();
    let b = hamlet
        .post(
            "/scheduled_messages",
            &[
                ("type", "direct"),
                ("to", &to),
                ("content", "psst"),
                ("scheduled_delivery_timestamp", &at),
            ],
        )
        .ok()["scheduled_message_id"]
        .as_u64()
        .unwrap();
    assert_ne!(a, b);

    // Listed by delivery time, in Zulip's shape.
    let list = scheduled(&hamlet);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["scheduled_message_id"], b);
    assert_eq!(list[0]["type"], "private");
    assert_eq!(list[0]["to"], serde_json::json!([othello_id]));
    assert_eq!(list[0]["failed"], false);
    assert_eq!(list[1]["scheduled_message_id"], a);
    assert_eq!(list[1]["type"], "stream");
    assert_eq!(list[1]["to"], denmark);
    assert_eq!(list[1]["topic"], "plans");
    assert_eq!(list[1]["content"], "**later**");
    assert_eq!(list[1]["rendered_content"], "<p><strong>later</strong></p>");
    assert_eq!(list[1]["scheduled_delivery_timestamp"], later + 60);
    assert!(scheduled(&server.client(OTHELLO)).is_empty(), "only the owner sees them");

    // Edits: content and topic, then time, then type and recipients.
    let path = format!("/scheduled_messages/{a}");
    hamlet.request("PATCH", &path, &[("content", "changed"), ("topic", "new plans")]).ok();
    let sooner = (later + 30).to_string();
    hamlet.request("PATCH", &path, &[("scheduled_delivery_timestamp", &sooner)]).ok();
    let edited = scheduled(&hamlet).into_iter().find(|s| s["scheduled_message_id"] == a).unwrap();
    assert_eq!(
        (&edited["content"], &edited["topic"], &edited["to"]),
        (&Value::from("changed"), &Value::from("new plans"), &Value::from(denmark))
    );
    assert_eq!(edited["scheduled_delivery_timestamp"], later + 30);
    hamlet.request("PATCH", &path, &[("to", &general.to_string())]).ok();
    hamlet.request("PATCH", &path, &[("type", "direct"), ("to", &to)]).ok();
    let edited = scheduled(&hamlet).into_iter().find(|s| s["scheduled_message_id"] == a).unwrap();
    assert_eq!(edited["type"], "private");
    assert_eq!(edited["to"], serde_json::json!([othello_id]));
    assert!(edited.get("topic").is_none());
    hamlet
        .request(
            "PATCH",
            &path,
            &[("type", "stream"), ("to", &general.to_string()), ("topic", "back")],
        )
        .ok();
    let edited = scheduled(&hamlet).into_iter().find(|s| s["scheduled_message_id"] == a).unwrap();
    assert_eq!((&edited["to"], &edited["topic"]), (&Value::from(general), &Value::from("back")));

    // Delete; a second delete finds nothing.
    hamlet.request("DELETE", &path, &[]).ok();
    let left: Vec<u64> =
        scheduled(&hamlet).iter().map(|s| s["scheduled_message_id"].as_u64().unwrap()).collect();
    assert_eq!(left, vec![b]);
    let e = hamlet.request("DELETE", &path, &[]).err(404, "NOT_FOUND");
    assert_eq!(e["msg"], "Scheduled message does not exist");
}

/// A complete channel scheduling request.
fn channel_req<'a>(to: &'a str, at: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("type", "stream"),
        ("to", to),
        ("topic", "t"),
        ("content", "hi"),
        ("scheduled_delivery_timestamp", at),
    ]
}

/// A complete direct scheduling request.
fn direct_req<'a>(to: &'a str, at: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![("type", "direct"), ("to", to), ("content", "hi"), ("scheduled_delivery_timestamp", at)]
}

fn refuse(c: &Client, params: &[(&str, &str)], code: &str) -> Value {
    c.post("/scheduled_messages", params).err(400, code)
}

#[test]
fn scheduling_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark").to_string();
    let core = channel_id(&hamlet, "core team").to_string();
    let lear = channel_id(&king(&server), "general").to_string();
    let king_to = format!("[{}]", user_id(&king(&server)));
    let at = (now() + 3600).to_string();
    let past = (now() - 10).to_string();

    // Missing parameters.
    for missing in ["type", "to", "content", "topic", "scheduled_delivery_timestamp"] {
        let mut params = channel_req(&denmark, &at);
        params.retain(|(k, _)| *k != missing);
        let e = refuse(&hamlet, &params, "REQUEST_VARIABLE_MISSING");
        assert_eq!(e["var_name"], missing);
    }
    // The time must lie in the future.
    let e = refuse(&hamlet, &channel_req(&denmark, &past), "BAD_REQUEST");
    assert_eq!(e["msg"], "Scheduled delivery time must be in the future.");
    refuse(&hamlet, &channel_req(&denmark, "soon"), "BAD_REQUEST");
    // Bad type and content.
    let mut p = channel_req(&denmark, &at);
    p[0] = ("type", "broadcast");
    assert_eq!(refuse(&hamlet, &p, "BAD_REQUEST")["msg"], "Invalid message type");
    let mut p = channel_req(&denmark, &at);
    p[3] = ("content", "   ");
    assert_eq!(refuse(&hamlet, &p, "BAD_REQUEST")["msg"], "Message must not be empty");
    // Recipients are ids only: names and emails are refused.
    refuse(&hamlet, &channel_req("Denmark", &at), "BAD_REQUEST");
    refuse(&hamlet, &channel_req("[1,2]", &at), "BAD_REQUEST");
    refuse(&hamlet, &direct_req(r#"["othello@natter.test"]"#, &at), "BAD_REQUEST");
    refuse(&hamlet, &direct_req("[]", &at), "BAD_REQUEST");
    let e = refuse(&hamlet, &direct_req("[99999]", &at), "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid user ID 99999");
    // Another realm's user is as unknown as a nonexistent one.
    refuse(&hamlet, &direct_req(&king_to, &at), "BAD_REQUEST");
    // Unknown, private-without-access and other-realm channels do not exist.
    let e = refuse(&hamlet, &channel_req("99999", &at), "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], 99999);
    refuse(&othello, &channel_req(&core, &at), "STREAM_DOES_NOT_EXIST");
    refuse(&hamlet, &channel_req(&lear, &at), "STREAM_DOES_NOT_EXIST");
    // A guest may schedule only where he may send: not to a public channel
    // he is not in.
    refuse(&server.client(POLONIUS), &channel_req(&denmark, &at), "STREAM_DOES_NOT_EXIST");
    // None of it was kept.
    assert!(scheduled(&hamlet).is_empty());
    assert!(scheduled(&othello).is_empty());
    // The private channel works for a subscriber.
    hamlet.post("/scheduled_messages", &channel_req(&core, &at)).ok();
    assert_eq!(scheduled(&hamlet).len(), 1);
}

#[test]
fn editing_and_deleting_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark");
    let id = schedule(&hamlet, denmark, "t", "mine", now() + 3600);
    let path = format!("/scheduled_messages/{id}");
    // Someone else's, another realm's, nonexistent ids: not found.
    for c in [&othello, &server.client(IAGO), &king(&server)] {
        let e = c.request("PATCH", &path, &[("content", "hijacked")]).err(404, "NOT_FOUND");
        assert_eq!(e["msg"], "Scheduled message does not exist");
        c.request("DELETE", &path, &[]).err(404, "NOT_FOUND");
    }
    hamlet.request("PATCH", "/scheduled_messages/99999", &[("content", "x")]).err(404, "NOT_FOUND");
    hamlet.request("DELETE", "/scheduled_messages/99999", &[]).err(404, "NOT_FOUND");
    hamlet.request("DELETE", "/scheduled_messages/abc", &[]).err(400, "BAD_REQUEST");

    let patch =
        |params: &[(&str, &str)]| hamlet.request("PATCH", &path, params).err(400, "BAD_REQUEST");
    assert_eq!(patch(&[])["msg"], "Nothing to change");
    assert_eq!(
        patch(&[("type", "direct")])["msg"],
        "Recipient required when updating type of scheduled message."
    );
    let othello_id = user_id(&othello).to_string();
    hamlet.request("PATCH", &path, &[("type", "direct"), ("to", &format!("[{othello_id}]"))]).ok();
    assert_eq!(
        patch(&[("type", "stream"), ("to", &denmark.to_string())])["msg"],
        "Topic required when updating scheduled message type to channel."
    );
    assert_eq!(patch(&[("type", "nope"), ("to", "[1]")])["msg"], "Invalid message type");
    let past = (now() - 5).to_string();
    assert_eq!(
        patch(&[("scheduled_delivery_timestamp", &past)])["msg"],
        "Scheduled delivery time must be in the future."
    );
    assert_eq!(patch(&[("content", " ")])["msg"], "Message must not be empty");
    patch(&[("to", "[99999]")]);
    patch(&[("to", "\"othello@natter.test\"")]);
    // Moving it into a channel the owner may not see is refused as sending is.
    let core = channel_id(&server.client(IAGO), "core team").to_string();
    let e = othello_scheduled_into(&server, &core);
    assert_eq!(e["code"], "STREAM_DOES_NOT_EXIST");
    // Nothing changed.
    let s = &scheduled(&hamlet)[0];
    assert_eq!((&s["type"], &s["content"]), (&Value::from("private"), &Value::from("mine")));
}

/// Othello schedules into Denmark, then tries to move it into `channel`.
fn othello_scheduled_into(server: &TestServer, channel: &str) -> Value {
    let othello = server.client(OTHELLO);
    let denmark = channel_id(&othello, "Denmark");
    let id = schedule(&othello, denmark, "t", "x", now() + 3600);
    let e = othello
        .request("PATCH", &format!("/scheduled_messages/{id}"), &[("to", channel)])
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(scheduled(&othello)[0]["to"], denmark);
    e
}

#[test]
fn delivered_at_the_time_as_a_new_message() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark");
    let before = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Denmark"), ("topic", "x"), ("content", "now")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let at = now() + 2;
    let id = schedule(&hamlet, denmark, "timed", "on **time**", at);
    let dm_at = (now() + 2).to_string();
    let to = format!("[{}]", user_id(&othello));
    hamlet
        .post(
            "/scheduled_messages",
            &[
                ("type", "direct"),
                ("to", &to),
                ("content", "direct, later"),
                ("scheduled_delivery_timestamp", &dm_at),
            ],
        )
        .ok();
    // Not before its time: if the clock is still short of it after looking,
    // it must not have been there.
    let seen = topic_messages(&othello, "Denmark", "timed");
    if now() < at {
        assert!(seen.is_empty(), "delivered early");
    }

    let delivered = wait_for("delivery", Duration::from_secs(20), || {
        let seen = topic_messages(&othello, "Denmark", "timed");
        (!seen.is_empty()).then_some(seen)
    });
    assert_eq!(delivered.len(), 1);
    let m = &delivered[0];
    assert_eq!(m["content"], "<p>on <strong>time</strong></p>");
    assert_eq!(m["sender_email"], HAMLET);
    assert!(m["timestamp"].as_i64().unwrap() >= at);
    let message_id = m["id"].as_u64().unwrap();
    assert!(message_id > before, "a new message id");
    // Gone from the list once both are delivered; the direct one arrived.
    wait_for("both deliveries", Duration::from_secs(20), || {
        scheduled(&hamlet).is_empty().then_some(())
    });
    let dms = othello
        .get(
            "/messages",
            &[("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["is","dm"]]"#)],
        )
        .ok();
    assert!(dms["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["content"] == "<p>direct, later</p>"));
    // The scheduled id no longer answers.
    hamlet.request("DELETE", &format!("/scheduled_messages/{id}"), &[]).err(404, "NOT_FOUND");
}

#[test]
fn a_deleted_scheduled_message_is_never_sent() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    let at = now() + 2;
    let gone = schedule(&hamlet, denmark, "cancelled", "never", at);
    hamlet.request("DELETE", &format!("/scheduled_messages/{gone}"), &[]).ok();
    // A marker due no earlier shows the scheduler has passed that time.
    schedule(&hamlet, denmark, "marker", "marker", at.max(now() + 1));
    wait_for("the marker", Duration::from_secs(20), || {
        (!topic_messages(&hamlet, "Denmark", "marker").is_empty()).then_some(())
    });
    assert!(topic_messages(&hamlet, "Denmark", "cancelled").is_empty());
}

/// Waits until `topic` in Denmark has a message, then returns how many.
fn delivered_count(c: &Client, topic: &str) -> usize {
    wait_for(topic, Duration::from_secs(20), || {
        let n = topic_messages(c, "Denmark", topic).len();
        (n > 0).then_some(n)
    })
}

#[test]
fn a_delivery_due_while_down_happens_once_at_start_up() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    let at = now() + 2;
    schedule(&hamlet, denmark, "while down", "sent after the crash", at);
    server.kill();
    wait_until_past(at);
    server.restart();
    let hamlet = server.client(HAMLET);
    assert_eq!(delivered_count(&hamlet, "while down"), 1);
    let sent = &topic_messages(&hamlet, "Denmark", "while down")[0];
    assert!(sent["timestamp"].as_i64().unwrap() >= at);
    assert!(scheduled(&hamlet).is_empty());
    // Crash again right away, restart: replay does not send it again.
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    schedule(&hamlet, denmark, "marker", "the scheduler ran", now() + 1);
    delivered_count(&hamlet, "marker");
    assert_eq!(topic_messages(&hamlet, "Denmark", "while down").len(), 1);
}

#[test]
fn a_kill_right_after_delivery_does_not_deliver_again() {
    let mut server = TestServer::start_with(&["--snapshot-every", "1"]);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    schedule(&hamlet, denmark, "once", "exactly once", now() + 2);
    let pending = schedule(&hamlet, denmark, "pending", "still to come", now() + 3600);
    assert_eq!(delivered_count(&hamlet, "once"), 1);
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    // A marker delivered after the restart proves the start-up pass ran.
    schedule(&hamlet, denmark, "marker", "after restart", now() + 1);
    delivered_count(&hamlet, "marker");
    assert_eq!(topic_messages(&hamlet, "Denmark", "once").len(), 1);
    // What was still pending survived, unchanged.
    let left = scheduled(&hamlet);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["scheduled_message_id"], pending);
    assert_eq!(left[0]["content"], "still to come");
}

/// Every event on `queue` so far (no waiting).
fn queued(c: &Client, queue: &str) -> Vec<Value> {
    let r =
        c.get("/events", &[("queue_id", queue), ("last_event_id", "-1"), ("dont_block", "true")]);
    r.ok()["events"].as_array().unwrap().clone()
}

#[test]
fn register_and_events_follow_the_schedule_to_delivery() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark");
    let early = schedule(&hamlet, denmark, "early", "already pending", now() + 3600);
    let r = hamlet.post("/register", &[("fetch_event_types", r#"["scheduled_messages"]"#)]).ok();
    let listed = r["scheduled_messages"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["scheduled_message_id"], early);
    let queue = r["queue_id"].as_str().unwrap().to_owned();
    let r = othello.post("/register", &[]).ok();
    assert_eq!(r["scheduled_messages"], serde_json::json!([]), "only one's own");
    let othello_queue = r["queue_id"].as_str().unwrap().to_owned();

    let id = schedule(&hamlet, denmark, "evented", "soon", now() + 2);
    let events = queued(&hamlet, &queue);
    let add = events.iter().find(|e| e["type"] == "scheduled_messages").expect("an add event");
    assert_eq!(add["op"], "add");
    assert_eq!(add["scheduled_messages"][0]["scheduled_message_id"], id);
    assert_eq!(add["scheduled_messages"][0]["content"], "soon");

    // Delivery: the message event, then the removal, to the owner.
    let events = wait_for("the removal event", Duration::from_secs(20), || {
        let events = queued(&hamlet, &queue);
        events
            .iter()
            .any(|e| e["type"] == "scheduled_messages" && e["op"] == "remove")
            .then_some(events)
    });
    let remove = events.iter().find(|e| e["op"] == "remove").unwrap();
    assert_eq!(remove["scheduled_message_id"], id);
    let message = events.iter().find(|e| e["type"] == "message").expect("a message event");
    assert_eq!(message["message"]["content"], "soon", "raw: apply_markdown defaults to false");
    // Othello, a subscriber, gets the message and nothing about scheduling.
    let theirs = wait_for("othello's message event", Duration::from_secs(20), || {
        let events = queued(&othello, &othello_queue);
        events.iter().any(|e| e["type"] == "message").then_some(events)
    });
    assert!(theirs.iter().all(|e| e["type"] != "scheduled_messages"));
}
