//! Organization switches of Zulip's later feature levels over HTTP: read
//! receipts turned off, the moderation request channel. (Events:
//! `verify_features.rs`.)

use serde_json::json;

use crate::util::{channel_id, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const IAGO: &str = "iago@natter.test";

#[test]
fn read_receipts_can_be_turned_off_by_administrators() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let sent = iago
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "r"), ("content", "hi")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let path = format!("/messages/{sent}/read_receipts");
    hamlet.get(&path, &[]).ok();
    let e = hamlet.request("PATCH", "/realm", &[("enable_read_receipts", "false")]);
    assert_eq!(e.err(400, "BAD_REQUEST")["msg"], "Must be an organization administrator");
    iago.request("PATCH", "/realm", &[("enable_read_receipts", "maybe")]).err(400, "BAD_REQUEST");
    let reply = iago.request("PATCH", "/realm", &[("enable_read_receipts", "false")]).ok();
    assert_eq!(reply["enable_read_receipts"], json!(false));
    let e = hamlet.get(&path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Read receipts are disabled in this organization.");
    // The message check comes first, as in Zulip.
    let e = hamlet.get("/messages/999999/read_receipts", &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
    let state = hamlet.post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(state["realm_enable_read_receipts"], json!(false));
    // It survives a restart, and turns back on.
    server.stop();
    server.restart();
    let (iago, hamlet) = (server.client(IAGO), server.client(HAMLET));
    hamlet.get(&path, &[]).err(400, "BAD_REQUEST");
    iago.request("PATCH", "/realm", &[("enable_read_receipts", "true")]).ok();
    hamlet.get(&path, &[]).ok();
}

#[test]
fn the_moderation_request_channel_is_a_private_channel_or_none() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let othello = server.client(OTHELLO);
    let core = channel_id(&iago, "core team");
    let general = channel_id(&iago, "general");
    let set = |c: &crate::util::Client, id: &str| {
        c.request("PATCH", "/realm", &[("moderation_request_channel_id", id)])
    };
    let state = iago.post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(state["realm_moderation_request_channel_id"], json!(-1));
    let e = set(&iago, &general.to_string()).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Moderation request channel must be private.");
    for bad in ["999999", "-5", "x"] {
        set(&iago, bad).err(400, "BAD_REQUEST");
    }
    set(&othello, &core.to_string()).err(400, "BAD_REQUEST");
    let reply = set(&iago, &core.to_string()).ok();
    assert_eq!(reply["moderation_request_channel_id"], json!(core));
    server.stop();
    server.restart();
    let iago = server.client(IAGO);
    let state = iago.post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(state["realm_moderation_request_channel_id"], json!(core));
    let reply = set(&iago, "-1").ok();
    assert_eq!(reply["moderation_request_channel_id"], json!(-1));
}
