//! Alert words, drafts, user status, muted users and topic visibility:
//! accepted and refused values of every parameter over HTTP. (Their events
//! and register sections: `verify_settings.rs`.)

use serde_json::json;

use crate::api_settings::{channel_id, user_ids};
use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";

#[test]
fn alert_words_and_the_has_alert_word_flag() {
    let server = TestServer::start();
    let othello = server.client(OTHELLO);
    let r =
        othello.post("/users/me/alert_words", &[("alert_words", r#"["Yorick", "yorick", " "]"#)]);
    assert_eq!(r.ok()["alert_words"], json!(["Yorick"]));
    assert_eq!(othello.get("/users/me/alert_words", &[]).ok()["alert_words"], json!(["Yorick"]));
    othello.post("/users/me/alert_words", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    othello.post("/users/me/alert_words", &[("alert_words", "Yorick")]).err(400, "INVALID_JSON");
    othello.post("/users/me/alert_words", &[("alert_words", "[1]")]).err(400, "BAD_REQUEST");
    let long = format!("[\"{}\"]", "x".repeat(101));
    othello.post("/users/me/alert_words", &[("alert_words", &long)]).err(400, "BAD_REQUEST");

    let send = |content: &str| {
        let r = server.client(HAMLET).post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", content)],
        );
        r.ok()["id"].as_u64().unwrap()
    };
    let flags = |email: &str, id: u64| {
        let m = server.client(email).get(&format!("/messages/{id}"), &[]).ok();
        m["message"]["flags"].as_array().unwrap().clone()
    };
    let hit = send("Alas, poor YORICK!");
    let miss = send("Yoricks everywhere");
    assert!(flags(OTHELLO, hit).contains(&json!("has_alert_word")));
    assert!(!flags(OTHELLO, miss).contains(&json!("has_alert_word")));
    assert!(!flags(HAMLET, hit).contains(&json!("has_alert_word")), "not for others");

    let r = othello.request("DELETE", "/users/me/alert_words", &[("alert_words", r#"["YORICK"]"#)]);
    assert_eq!(r.ok()["alert_words"], json!([]));
    let after = send("poor Yorick");
    assert!(!flags(OTHELLO, after).contains(&json!("has_alert_word")));
}

#[test]
fn drafts_refuse_bad_drafts() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let general = channel_id(&server, "general");
    let core = channel_id(&server, "core team");
    let othello = user_ids(&server)[OTHELLO];
    let ok = format!(r#"[{{"type":"stream","to":[{general}],"topic":"t","content":"c"}}]"#);
    let ids = hamlet.post("/drafts", &[("drafts", &ok)]).ok()["ids"].clone();
    let id = ids[0].as_u64().unwrap();
    let got = hamlet.get("/drafts", &[]).ok();
    assert_eq!(got["count"], 1);
    assert_eq!(got["drafts"][0]["to"], json!([general]));
    assert!(got["drafts"][0]["timestamp"].as_i64().unwrap() > 1_600_000_000);

    let bad = [
        r#"[{"type":"nope","to":[],"content":"c"}]"#.to_owned(),
        format!(r#"[{{"type":"stream","to":[{general},{general}],"topic":"t","content":"c"}}]"#),
        r#"[{"type":"stream","to":[999999],"topic":"t","content":"c"}]"#.to_owned(),
        r#"[{"type":"private","to":[999999],"content":"c"}]"#.to_owned(),
        format!(r#"[{{"type":"private","to":[{othello}],"topic":"x","content":"c"}}]"#),
        format!(r#"[{{"type":"","to":[{othello}],"content":"c"}}]"#),
        r#"[{"type":"","to":[],"content":"c","timestamp":-5}]"#.to_owned(),
        r#"[{"type":"","to":[]}]"#.to_owned(),
        r#"[{"type":"","to":[],"content":"c","color":"red"}]"#.to_owned(),
        r#"[{"type":"","to":"x","content":"c"}]"#.to_owned(),
        r#"["draft"]"#.to_owned(),
        r#"{"type":""}"#.to_owned(),
        format!(r#"[{{"type":"","to":[],"content":"{}"}}]"#, "x".repeat(10_001)),
    ];
    for b in &bad {
        hamlet.post("/drafts", &[("drafts", b)]).err(400, "BAD_REQUEST");
    }
    // A private channel the caller is not subscribed to.
    let secret = format!(r#"[{{"type":"stream","to":[{core}],"topic":"t","content":"c"}}]"#);
    server.client(OTHELLO).post("/drafts", &[("drafts", &secret)]).err(400, "BAD_REQUEST");
    hamlet.post("/drafts", &[]).err(400, "REQUEST_VARIABLE_MISSING");

    let edit = r#"{"type":"","to":[],"content":"new"}"#;
    hamlet.request("PATCH", "/drafts/999999", &[("draft", edit)]).err(404, "NOT_FOUND");
    hamlet.request("DELETE", "/drafts/999999", &[]).err(404, "NOT_FOUND");
    // Another user's draft id is "not found" for them.
    let path = format!("/drafts/{id}");
    server.client(OTHELLO).request("PATCH", &path, &[("draft", edit)]).err(404, "NOT_FOUND");
    server.client(OTHELLO).request("DELETE", &path, &[]).err(404, "NOT_FOUND");
    hamlet.request("PATCH", &path, &[("draft", r#"{"type":"x"}"#)]).err(400, "BAD_REQUEST");
    hamlet.request("PATCH", &path, &[("draft", edit)]).ok();
    assert_eq!(hamlet.get("/drafts", &[]).ok()["drafts"][0]["content"], "new");
    hamlet.request("DELETE", &path, &[]).ok();
    hamlet.request("DELETE", &path, &[]).err(404, "NOT_FOUND");

    hamlet.request("PATCH", "/settings", &[("enable_drafts_synchronization", "false")]).ok();
    hamlet.get("/drafts", &[]).err(400, "BAD_REQUEST");
    hamlet.post("/drafts", &[("drafts", &ok)]).err(400, "BAD_REQUEST");
}

#[test]
fn status_checks_its_fields() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    hamlet.post("/users/me/status", &[]).err(400, "BAD_REQUEST");
    let long = "x".repeat(61);
    hamlet.post("/users/me/status", &[("status_text", &long)]).err(400, "BAD_REQUEST");
    // No code: unknown names are refused, a type that is not the name's too.
    hamlet.post("/users/me/status", &[("emoji_name", "no_such_emoji")]).err(400, "BAD_REQUEST");
    hamlet
        .post("/users/me/status", &[("emoji_name", "smile"), ("reaction_type", "realm_emoji")])
        .err(400, "BAD_REQUEST");
    for (code, kind) in [("zzz", "unicode_emoji"), ("1f600", "gif"), ("1", "realm_emoji")] {
        hamlet
            .post(
                "/users/me/status",
                &[("emoji_name", "smile"), ("emoji_code", code), ("reaction_type", kind)],
            )
            .err(400, "BAD_REQUEST");
    }
    hamlet.post("/users/me/status", &[("away", "maybe")]).err(400, "BAD_REQUEST");
    hamlet
        .post(
            "/users/me/status",
            &[("status_text", " reading "), ("emoji_name", "book"), ("emoji_code", "1f4d6")],
        )
        .ok();
    let me = user_ids(&server)[HAMLET];
    let status = server.client(OTHELLO).get(&format!("/users/{me}/status"), &[]).ok();
    assert_eq!(
        status["status"],
        json!({"status_text": "reading", "emoji_name": "book", "emoji_code": "1f4d6",
               "reaction_type": "unicode_emoji"})
    );
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    lear.get(&format!("/users/{me}/status"), &[]).err(400, "BAD_REQUEST");
    // By name only, the code comes from the emoji table reactions use.
    hamlet.post("/users/me/status", &[("emoji_name", "smile")]).ok();
    let status = server.client(OTHELLO).get(&format!("/users/{me}/status"), &[]).ok();
    assert_eq!(status["status"]["emoji_code"], "1f642");
    assert_eq!(status["status"]["reaction_type"], "unicode_emoji");
    hamlet.post("/users/me/status", &[("emoji_name", "zulip")]).ok();
    let status = server.client(OTHELLO).get(&format!("/users/{me}/status"), &[]).ok();
    assert_eq!(status["status"]["emoji_code"], "zulip");
    assert_eq!(status["status"]["reaction_type"], "zulip_extra_emoji");
}

#[test]
fn muting_users() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let ids = user_ids(&server);
    let (me, othello) = (ids[HAMLET], ids[OTHELLO]);
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let king = lear.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    let path = |id: u64| format!("/users/me/muted_users/{id}");
    hamlet.post(&path(me), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&path(999_999), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&path(king), &[]).err(400, "BAD_REQUEST");
    hamlet.post("/users/me/muted_users/x", &[]).err(400, "BAD_REQUEST");
    hamlet.request("DELETE", &path(othello), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&path(othello), &[]).ok();
    // Messages from a muted user arrive read.
    let sent = server
        .client(OTHELLO)
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{me}]")), ("content", "Desdemona?")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let m = hamlet.get(&format!("/messages/{sent}"), &[]).ok();
    assert!(m["message"]["flags"].as_array().unwrap().contains(&json!("read")), "{m}");
    let again = hamlet.post(&path(othello), &[]).err(400, "BAD_REQUEST");
    assert_eq!(again["msg"], "User already muted");
    hamlet.request("DELETE", &path(othello), &[]).ok();
    let sent = server
        .client(OTHELLO)
        .post("/messages", &[("type", "direct"), ("to", &format!("[{me}]")), ("content", "Hello?")])
        .ok()["id"]
        .as_u64()
        .unwrap();
    let m = hamlet.get(&format!("/messages/{sent}"), &[]).ok();
    assert!(!m["message"]["flags"].as_array().unwrap().contains(&json!("read")), "{m}");
    let gone = hamlet.request("DELETE", &path(othello), &[]).err(400, "BAD_REQUEST");
    assert_eq!(gone["msg"], "User is not muted");
}

#[test]
fn topic_visibility_checks() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let general = channel_id(&server, "general").to_string();
    let core = channel_id(&server, "core team").to_string();
    let set = |c: &crate::util::Client, stream: &str, policy: &str| {
        c.post(
            "/user_topics",
            &[("stream_id", stream), ("topic", "t"), ("visibility_policy", policy)],
        )
    };
    for policy in ["0", "1", "2", "3"] {
        set(&hamlet, &general, policy).ok();
    }
    set(&hamlet, &general, "4").err(400, "BAD_REQUEST");
    set(&hamlet, &general, "-1").err(400, "BAD_REQUEST");
    set(&hamlet, "999999", "1").err(400, "BAD_REQUEST");
    set(&server.client(OTHELLO), &core, "1").err(400, "BAD_REQUEST");
    set(&server.client("polonius@natter.test"), &channel_id(&server, "Denmark").to_string(), "1")
        .err(400, "BAD_REQUEST");
    hamlet
        .post("/user_topics", &[("stream_id", &general), ("topic", "t")])
        .err(400, "REQUEST_VARIABLE_MISSING");

    let legacy = |params: &[(&str, &str)]| {
        hamlet.request("PATCH", "/users/me/subscriptions/muted_topics", params)
    };
    legacy(&[("stream", "general"), ("topic", "x"), ("op", "add")]).ok();
    let r = legacy(&[("stream_id", &general), ("topic", "x"), ("op", "add")]);
    assert_eq!(r.err(400, "BAD_REQUEST")["msg"], "Topic already muted");
    legacy(&[("stream", "general"), ("topic", "X"), ("op", "remove")]).ok();
    let r = legacy(&[("stream", "general"), ("topic", "x"), ("op", "remove")]);
    assert_eq!(r.err(400, "BAD_REQUEST")["msg"], "Topic is not muted");
    legacy(&[("stream", "general"), ("topic", "x"), ("op", "toggle")]).err(400, "BAD_REQUEST");
    legacy(&[("topic", "x"), ("op", "add")]).err(400, "BAD_REQUEST");
    legacy(&[("stream", "general"), ("stream_id", &general), ("topic", "x"), ("op", "add")])
        .err(400, "BAD_REQUEST");
    legacy(&[("stream", "nowhere"), ("topic", "x"), ("op", "add")])
        .err(400, "STREAM_DOES_NOT_EXIST");
}
