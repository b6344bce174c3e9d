//! Read state in bulk: POST /messages/flags/narrow, /mark_all_as_read,
//! /mark_stream_as_read and /mark_topic_as_read — what they change, what
//! they refuse, and that they never touch what the caller may not see.

use serde_json::Value;

use crate::util::{channel_id, Client, TestServer};

const IAGO: &str = "iago@natter.test"; // administrator; general, Denmark, core team
const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const POLONIUS: &str = "polonius@natter.test"; // guest; general only
const KING: &str = "king@lear.test"; // owner of the other realm

fn king(server: &TestServer) -> Client {
    server.client(KING).with_host("lear.localhost")
}

fn post(c: &Client, channel: &str, topic: &str, content: &str) -> u64 {
    let params = [("type", "stream"), ("to", channel), ("topic", topic), ("content", content)];
    c.post("/messages", &params).ok()["id"].as_u64().expect("message id")
}

fn dm(c: &Client, to: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "direct"), ("to", to), ("content", content)]).ok()["id"]
        .as_u64()
        .unwrap()
}

/// The caller's flags on a message.
fn flags(c: &Client, id: u64) -> Vec<String> {
    let m = c.get(&format!("/messages/{id}"), &[]).ok();
    m["message"]["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().into()).collect()
}

fn is_read(c: &Client, id: u64) -> bool {
    flags(c, id).iter().any(|f| f == "read")
}

fn narrow_flags(c: &Client, params: &[(&str, &str)]) -> Value {
    c.post("/messages/flags/narrow", params).ok()
}

#[test]
fn flags_narrow_changes_the_window_and_counts() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let hamlet = server.client(HAMLET);
    let ids: Vec<u64> =
        (0..4).map(|i| post(&othello, "Denmark", "castle", &format!("m{i}"))).collect();
    let elsewhere = post(&othello, "Denmark", "moat", "other topic");
    let narrow =
        r#"[{"operator":"channel","operand":"Denmark"},{"operator":"topic","operand":"castle"}]"#;

    // The first two, from the oldest end.
    let r = narrow_flags(
        &hamlet,
        &[
            ("anchor", "oldest"),
            ("num_before", "0"),
            ("num_after", "2"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "read"),
        ],
    );
    assert_eq!(r["processed_count"], 2);
    assert_eq!(r["updated_count"], 2);
    assert_eq!(r["first_processed_id"], ids[0]);
    assert_eq!(r["last_processed_id"], ids[1]);
    assert_eq!(
        (r["found_oldest"].as_bool(), r["found_newest"].as_bool()),
        (Some(true), Some(false))
    );
    assert!(is_read(&hamlet, ids[0]) && is_read(&hamlet, ids[1]));
    assert!(!is_read(&hamlet, ids[2]) && !is_read(&hamlet, elsewhere));
    assert!(!is_read(&server.client(IAGO), ids[0]), "only the caller's flags change");

    // Around an anchor, including it: already-read ones are processed, not updated.
    let anchor = ids[2].to_string();
    let r = narrow_flags(
        &hamlet,
        &[
            ("anchor", &anchor),
            ("num_before", "5"),
            ("num_after", "5"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "read"),
        ],
    );
    assert_eq!((r["processed_count"].as_u64(), r["updated_count"].as_u64()), (Some(4), Some(2)));
    assert_eq!(
        (r["found_oldest"].as_bool(), r["found_newest"].as_bool()),
        (Some(true), Some(true))
    );
    assert!(ids.iter().all(|id| is_read(&hamlet, *id)));

    // include_anchor=false leaves the anchor alone; starred works the same way.
    let r = narrow_flags(
        &hamlet,
        &[
            ("anchor", &anchor),
            ("include_anchor", "false"),
            ("num_before", "0"),
            ("num_after", "0"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    assert_eq!(r["processed_count"], 0);
    assert_eq!(r["first_processed_id"], Value::Null);
    assert_eq!(r["last_processed_id"], Value::Null);
    let r = narrow_flags(
        &hamlet,
        &[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    assert_eq!((r["processed_count"].as_u64(), r["updated_count"].as_u64()), (Some(1), Some(1)));
    assert!(flags(&hamlet, ids[3]).contains(&"starred".to_owned()));
    assert!(!flags(&hamlet, ids[2]).contains(&"starred".to_owned()));

    // Removing read again.
    let r = narrow_flags(
        &hamlet,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", narrow),
            ("op", "remove"),
            ("flag", "read"),
        ],
    );
    assert_eq!((r["processed_count"].as_u64(), r["updated_count"].as_u64()), (Some(4), Some(4)));
    assert!(!is_read(&hamlet, ids[0]));
}

#[test]
fn flags_narrow_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    post(&hamlet, "general", "t", "x");
    let base = [("anchor", "newest"), ("num_before", "5"), ("num_after", "0")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut p: Vec<(&str, &str)> = base.to_vec();
        p.extend_from_slice(extra);
        p
    };
    let refuse = |params: Vec<(&str, &str)>, status, code: &str| {
        hamlet.post("/messages/flags/narrow", &params).err(status, code)
    };
    let e = refuse(with(&[("flag", "read")]), 400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'op' argument");
    let e = refuse(with(&[("op", "add")]), 400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'flag' argument");
    let e = refuse(with(&[("op", "toggle"), ("flag", "read")]), 400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message flag operation: 'toggle'");
    let e = refuse(with(&[("op", "add"), ("flag", "shiny")]), 400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid flag: 'shiny'");
    let e = refuse(with(&[("op", "add"), ("flag", "mentioned")]), 400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Flag not editable: 'mentioned'");
    let e = hamlet
        .post("/messages/flags/narrow", &[("op", "add"), ("flag", "read"), ("num_before", "1")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'anchor' argument");
    let e = hamlet
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", "newest"),
                ("num_before", "4000"),
                ("num_after", "1001"),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Too many messages requested (maximum 5000).");
    refuse(with(&[("op", "add"), ("flag", "read"), ("num_before", "-1")]), 400, "BAD_REQUEST");
    refuse(with(&[("op", "add"), ("flag", "read"), ("narrow", "{not json")]), 400, "INVALID_JSON");
    // Another realm's channel is as unknown as a nonexistent one.
    refuse(
        with(&[("op", "add"), ("flag", "read"), ("narrow", r#"[["channel","no such channel"]]"#)]),
        400,
        "BAD_NARROW",
    );
}

#[test]
fn flags_narrow_never_touches_what_the_caller_may_not_see() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    post(&othello, "general", "t", "visible to othello");
    let secret = post(&hamlet, "core team", "plans", "secret");
    let private = dm(&hamlet, "[\"iago@natter.test\"]", "just us");
    let lear = post(&king(&server), "general", "court", "lear only");
    // Othello is not in the private channel: it is unknown to him.
    othello
        .post(
            "/messages/flags/narrow",
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("narrow", r#"[["channel","core team"]]"#),
                ("op", "add"),
                ("flag", "starred"),
            ],
        )
        .err(400, "BAD_NARROW");
    // The whole history: nothing of the private channel, the direct
    // message or the other realm is processed.
    let r = narrow_flags(
        &othello,
        &[
            ("anchor", "oldest"),
            ("num_after", "1000"),
            ("narrow", "[]"),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    let first = r["first_processed_id"].as_u64().unwrap();
    let last = r["last_processed_id"].as_u64().unwrap();
    assert!(last < secret, "processed {first}..{last}, the secret is {secret}");
    let (hamlet, iago, king) = (server.client(HAMLET), server.client(IAGO), king(&server));
    for (who, id) in [(&hamlet, secret), (&hamlet, private), (&iago, private), (&king, lear)] {
        assert!(!flags(who, id).contains(&"starred".to_owned()));
    }
    // A guest stars only what he may read: the public channel he is in.
    let polonius = server.client(POLONIUS);
    let denmark = post(&othello, "Denmark", "t", "not for guests");
    let general = post(&othello, "general", "t", "for everyone");
    let r = narrow_flags(
        &polonius,
        &[
            ("anchor", &denmark.to_string()),
            ("num_before", "0"),
            ("num_after", "5"),
            ("narrow", "[]"),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    assert_eq!(r["processed_count"], 1);
    assert_eq!(r["first_processed_id"], general);
}

#[test]
fn mark_all_as_read_marks_every_unread_message_of_the_caller_only() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let hamlet = server.client(HAMLET);
    let a = post(&othello, "Denmark", "t", "one");
    let b = post(&othello, "general", "t", "two");
    let c = dm(&othello, "[\"hamlet@natter.test\"]", "three");
    let secret = post(&server.client(IAGO), "core team", "t", "four");
    let r = hamlet.post("/mark_all_as_read", &[]).ok();
    assert_eq!(r["complete"], true);
    for id in [a, b, c, secret] {
        assert!(is_read(&hamlet, id), "message {id}");
    }
    assert!(!is_read(&server.client(IAGO), a), "other users keep their unread messages");
    // Nothing unread: still a success.
    assert_eq!(hamlet.post("/mark_all_as_read", &[]).ok()["complete"], true);
    let unread = hamlet
        .get(
            "/messages",
            &[("anchor", "newest"), ("num_before", "100"), ("narrow", r#"[["is","unread"]]"#)],
        )
        .ok();
    assert_eq!(unread["messages"].as_array().unwrap().len(), 0);
}

#[test]
fn mark_stream_as_read_one_channel_only() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    let a = post(&othello, "Denmark", "t1", "one");
    let b = post(&othello, "Denmark", "t2", "two");
    let other = post(&othello, "general", "t1", "three");
    let direct = dm(&othello, "[\"hamlet@natter.test\"]", "four");
    hamlet.post("/mark_stream_as_read", &[("stream_id", &denmark.to_string())]).ok();
    assert!(is_read(&hamlet, a) && is_read(&hamlet, b));
    assert!(!is_read(&hamlet, other) && !is_read(&hamlet, direct));
    assert!(!is_read(&server.client(IAGO), a));

    // Refusals: missing, malformed, unknown, private without access,
    // another realm's channel.
    let e = hamlet.post("/mark_stream_as_read", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'stream_id' argument");
    hamlet.post("/mark_stream_as_read", &[("stream_id", "abc")]).err(400, "BAD_REQUEST");
    let e = hamlet
        .post("/mark_stream_as_read", &[("stream_id", "99999")])
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], 99999);
    let core = channel_id(&hamlet, "core team").to_string();
    othello.post("/mark_stream_as_read", &[("stream_id", &core)]).err(400, "STREAM_DOES_NOT_EXIST");
    let lear = channel_id(&king(&server), "general").to_string();
    hamlet.post("/mark_stream_as_read", &[("stream_id", &lear)]).err(400, "STREAM_DOES_NOT_EXIST");
    let denmark = denmark.to_string();
    server
        .client(POLONIUS)
        .post("/mark_stream_as_read", &[("stream_id", &denmark)])
        .err(400, "STREAM_DOES_NOT_EXIST");
}

#[test]
fn mark_topic_as_read_one_topic_only() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark").to_string();
    let a = post(&othello, "Denmark", "Castle", "one");
    let b = post(&othello, "Denmark", "castle", "two");
    let other = post(&othello, "Denmark", "moat", "three");
    let empty = post(&othello, "Denmark", "", "general chat");
    hamlet.post("/mark_topic_as_read", &[("stream_id", &denmark), ("topic_name", "CASTLE")]).ok();
    assert!(is_read(&hamlet, a) && is_read(&hamlet, b));
    assert!(!is_read(&hamlet, other) && !is_read(&hamlet, empty));
    // The realm's empty-topic display name means the empty topic.
    hamlet
        .post("/mark_topic_as_read", &[("stream_id", &denmark), ("topic_name", "general chat")])
        .ok();
    assert!(is_read(&hamlet, empty));
    assert!(!is_read(&hamlet, other));

    let e = hamlet
        .post("/mark_topic_as_read", &[("stream_id", &denmark), ("topic_name", "nowhere")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such topic 'nowhere'");
    let e = hamlet
        .post("/mark_topic_as_read", &[("stream_id", &denmark)])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'topic_name' argument");
    hamlet
        .post("/mark_topic_as_read", &[("topic_name", "moat")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    let core = channel_id(&hamlet, "core team").to_string();
    let secret = post(&hamlet, "core team", "plans", "secret");
    othello
        .post("/mark_topic_as_read", &[("stream_id", &core), ("topic_name", "plans")])
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert!(!is_read(&server.client(IAGO), secret));
    let lear = channel_id(&king(&server), "general").to_string();
    hamlet
        .post("/mark_topic_as_read", &[("stream_id", &lear), ("topic_name", "court")])
        .err(400, "STREAM_DOES_NOT_EXIST");
}

/// Every event on `queue` so far (no waiting).
fn queued(c: &Client, queue: &str) -> Vec<Value> {
    let r =
        c.get("/events", &[("queue_id", queue), ("last_event_id", "-1"), ("dont_block", "true")]);
    r.ok()["events"].as_array().unwrap().clone()
}

#[test]
fn each_emits_update_message_flags_to_the_caller_only() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark").to_string();
    let a = post(&othello, "Denmark", "t", "one");
    let b = post(&othello, "Denmark", "u", "two");
    let c = post(&othello, "general", "t", "three");
    let queue = hamlet.post("/register", &[]).ok()["queue_id"].as_str().unwrap().to_owned();
    let other = othello.post("/register", &[]).ok()["queue_id"].as_str().unwrap().to_owned();
    let narrow = r#"[["channel","Denmark"],["topic","t"]]"#;
    narrow_flags(
        &hamlet,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    hamlet.post("/mark_topic_as_read", &[("stream_id", &denmark), ("topic_name", "t")]).ok();
    hamlet.post("/mark_stream_as_read", &[("stream_id", &denmark)]).ok();
    hamlet.post("/mark_all_as_read", &[]).ok();
    let flag_events: Vec<(String, Vec<u64>)> = queued(&hamlet, &queue)
        .into_iter()
        .filter(|e| e["type"] == "update_message_flags")
        .map(|e| {
            assert_eq!(e["op"], "add");
            let ids =
                e["messages"].as_array().unwrap().iter().map(|m| m.as_u64().unwrap()).collect();
            (e["flag"].as_str().unwrap().to_owned(), ids)
        })
        .collect();
    assert_eq!(flag_events.len(), 4);
    assert_eq!(flag_events[0], ("starred".to_owned(), vec![a]));
    assert_eq!(flag_events[1], ("read".to_owned(), vec![a]));
    assert_eq!(flag_events[2], ("read".to_owned(), vec![b]));
    // Everything else still unread: c, and the seed's welcome message.
    let (flag, rest) = &flag_events[3];
    assert_eq!(flag, "read");
    assert!(rest.contains(&c) && !rest.contains(&a) && !rest.contains(&b), "{rest:?}");
    assert!(queued(&othello, &other).iter().all(|e| e["type"] != "update_message_flags"));
}

#[test]
fn flags_narrow_on_public_history_the_caller_never_received() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let cordelia = server.client("cordelia@natter.test"); // member; general only
    let id = post(&othello, "Denmark", "history", "public history");
    let denmark = channel_id(&othello, "Denmark");
    let narrow = r#"[["channel","Denmark"],["topic","history"]]"#;
    // Starring a message one never received gives it a historical entry.
    let r = narrow_flags(
        &cordelia,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("narrow", narrow),
            ("op", "add"),
            ("flag", "starred"),
        ],
    );
    assert_eq!((r["processed_count"].as_u64(), r["updated_count"].as_u64()), (Some(1), Some(1)));
    assert_eq!(r["ignored_because_not_subscribed_channels"], serde_json::json!([]));
    let f = flags(&cordelia, id);
    assert!(f.contains(&"starred".to_owned()) && f.contains(&"read".to_owned()));
    // Unread lives only in subscribed channels: marking unread is skipped.
    let r = narrow_flags(
        &cordelia,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("narrow", narrow),
            ("op", "remove"),
            ("flag", "read"),
        ],
    );
    assert_eq!((r["processed_count"].as_u64(), r["updated_count"].as_u64()), (Some(1), Some(0)));
    assert_eq!(r["ignored_because_not_subscribed_channels"], serde_json::json!([denmark]));
    assert!(is_read(&cordelia, id));
}
