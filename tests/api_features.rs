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

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn send(c: &crate::util::Client, to: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", "plans"), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

#[test]
fn reminders_are_listed_deleted_and_refused_as_zulip_does() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let iago = server.client(IAGO);
    let message = send(&iago, "Denmark", "the **plan**").to_string();
    let at = (now() + 3600).to_string();
    let remind = |c: &crate::util::Client, params: &[(&str, &str)]| c.post("/reminders", params);
    // Refusals: missing parameters, a past time, a note too long, a message
    // the caller cannot read (a private channel's, or none).
    remind(&hamlet, &[("scheduled_delivery_timestamp", &at)]).err(400, "REQUEST_VARIABLE_MISSING");
    remind(&hamlet, &[("message_id", &message)]).err(400, "REQUEST_VARIABLE_MISSING");
    let past = (now() - 10).to_string();
    let e = remind(&hamlet, &[("message_id", &message), ("scheduled_delivery_timestamp", &past)])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Scheduled delivery time must be in the future.");
    let long = "n".repeat(1001);
    let e = remind(
        &hamlet,
        &[("message_id", &message), ("scheduled_delivery_timestamp", &at), ("note", &long)],
    )
    .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Maximum reminder note length: 1000 characters");
    let secret = send(&iago, "core team", "secret").to_string();
    for id in [secret.as_str(), "999999", "-1"] {
        let e = remind(&othello, &[("message_id", id), ("scheduled_delivery_timestamp", &at)])
            .err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    }
    // Created, listed in Zulip's shape, only to its owner.
    let id = remind(
        &hamlet,
        &[
            ("message_id", &message),
            ("scheduled_delivery_timestamp", &at),
            ("note", "bring cake\n"),
        ],
    )
    .ok()["reminder_id"]
        .as_u64()
        .unwrap();
    let list = hamlet.get("/reminders", &[]).ok()["reminders"].clone();
    assert_eq!(list.as_array().unwrap().len(), 1);
    let r = &list[0];
    assert_eq!(r["reminder_id"], id);
    assert_eq!(r["type"], "private");
    assert_eq!(r["to"], json!([crate::util::user_id(&server, HAMLET)]));
    assert_eq!(r["reminder_target_message_id"].to_string(), message);
    assert_eq!(r["scheduled_delivery_timestamp"].to_string(), at);
    assert_eq!(r["failed"], false);
    let content = r["content"].as_str().unwrap();
    assert!(
        content.starts_with("You requested a reminder for [#Denmark > plans @ 💬]("),
        "{content}"
    );
    assert!(content.contains(". Note:\n > bring cake\n\n@_**Iago|"), "{content}");
    assert!(content.ends_with("```quote\nthe **plan**\n```"), "{content}");
    assert!(r["rendered_content"].as_str().unwrap().contains("<blockquote>"), "{r}");
    assert_eq!(othello.get("/reminders", &[]).ok()["reminders"], json!([]));
    let state = hamlet.post("/register", &[("fetch_event_types", r#"["reminders"]"#)]).ok();
    assert_eq!(state["reminders"], list);
    // Someone else's reminder, like an unknown one, does not exist.
    let path = format!("/reminders/{id}");
    let e = othello.request("DELETE", &path, &[]).err(404, "NOT_FOUND");
    assert_eq!(e["msg"], "Reminder does not exist");
    othello.request("DELETE", "/reminders/999", &[]).err(404, "NOT_FOUND");
    hamlet.request("DELETE", "/reminders/x", &[]).err(400, "BAD_REQUEST");
    hamlet.request("DELETE", &path, &[]).ok();
    assert_eq!(hamlet.get("/reminders", &[]).ok()["reminders"], json!([]));
    hamlet.request("DELETE", &path, &[]).err(404, "NOT_FOUND");
}

#[test]
fn a_reminder_is_delivered_by_the_notification_bot_and_survives_a_restart() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let message = send(&hamlet, "Denmark", "remember me").to_string();
    let far = (now() + 3600).to_string();
    let kept = hamlet
        .post("/reminders", &[("message_id", &message), ("scheduled_delivery_timestamp", &far)])
        .ok()["reminder_id"]
        .clone();
    server.stop();
    server.restart();
    let hamlet = server.client(HAMLET);
    let list = hamlet.get("/reminders", &[]).ok()["reminders"].clone();
    assert_eq!(list[0]["reminder_id"], kept, "kept across a restart");
    let soon = (now() + 1).to_string();
    hamlet
        .post("/reminders", &[("message_id", &message), ("scheduled_delivery_timestamp", &soon)])
        .ok();
    let narrow = r#"[["is","dm"]]"#;
    let start = std::time::Instant::now();
    let delivered = loop {
        let dms = hamlet
            .get("/messages", &[("anchor", "newest"), ("num_before", "5"), ("narrow", narrow)])
            .ok();
        let found = dms["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["content"].as_str().unwrap().contains("You requested a reminder"));
        if let Some(m) = found {
            break m.clone();
        }
        assert!(start.elapsed().as_secs() < 20, "no reminder delivered");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(delivered["sender_email"], "notification-bot@zulip.com");
    assert!(delivered["content"].as_str().unwrap().contains("remember me"), "{delivered}");
    // Delivered reminders leave the list; the later one stays.
    let list = hamlet.get("/reminders", &[]).ok()["reminders"].clone();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["reminder_id"], kept);
}

/// Makes the private "core team" the moderation request channel.
fn moderation_channel(server: &TestServer) {
    let iago = server.client(IAGO);
    let core = channel_id(&iago, "core team").to_string();
    iago.request("PATCH", "/realm", &[("moderation_request_channel_id", &core)]).ok();
}

fn reports(c: &crate::util::Client) -> Vec<serde_json::Value> {
    let narrow = r#"[["channel","core team"]]"#;
    let r = c.get("/messages", &[("anchor", "newest"), ("num_before", "20"), ("narrow", narrow)]);
    let list = r.ok()["messages"].as_array().unwrap().clone();
    list.into_iter().filter(|m| m["sender_email"] == "notification-bot@zulip.com").collect()
}

#[test]
fn reports_reach_the_moderation_channel_in_zulips_words() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let types = othello.post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    let keys: Vec<&str> = types["server_report_message_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["spam", "harassment", "inappropriate", "norms", "other"]);
    assert_eq!(types["server_report_message_types"][2]["name"], "Inappropriate content");
    let bad = send(&hamlet, "Denmark", "buy my **stuff**");
    let path = format!("/messages/{bad}/report");
    // Without a moderation request channel, reports are refused.
    let e = othello.post(&path, &[("report_type", "spam")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Message reporting is not enabled in this organization.");
    moderation_channel(&server);
    othello.post(&path, &[("report_type", "spam"), ("description", "adverts again")]).ok();
    let got = reports(&hamlet);
    assert_eq!(got.len(), 1);
    let report = &got[0];
    assert_eq!(report["subject"], "King Hamlet moderation");
    let othello_id = crate::util::user_id(&server, OTHELLO);
    let hamlet_id = crate::util::user_id(&server, HAMLET);
    let content = report["content"].as_str().unwrap();
    assert!(content.contains(&format!("data-user-id=\"{othello_id}\"")), "{content}");
    assert!(content.contains("reported a message sent by"), "{content}");
    assert!(content.contains("<time datetime=\""), "{content}");
    assert!(content.contains("<strong>Spam</strong>. adverts again"), "{content}");
    assert!(content.contains("spoiler-block"), "{content}");
    // Othello is not in the channel: he sees no report.
    othello.get(&format!("/messages/{}", report["id"]), &[]).err(400, "BAD_REQUEST");
    // His own direct message to Hamlet: the report names the recipient.
    let dm = othello
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{hamlet_id}]")), ("content", "oops")],
        )
        .ok()["id"]
        .clone();
    othello
        .post(
            &format!("/messages/{dm}/report"),
            &[("report_type", "other"), ("description", "mine")],
        )
        .ok();
    let raw = hamlet
        .get(&format!("/messages/{}", reports(&hamlet)[1]["id"]), &[("apply_markdown", "false")])
        .ok();
    let text = raw["message"]["content"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "@_**Othello, the Moor of Venice|{othello_id}** reported a message sent by \
             @_**Othello, the Moor of Venice|{othello_id}** to @_**King Hamlet|{hamlet_id}** at <time:"
        )),
        "{text}"
    );
    assert!(text.contains("**Other reason**. mine"), "{text}");
    assert!(text.contains("[Original message]("), "{text}");
    assert!(text.contains("``` spoiler [Original message]("), "{text}");
    assert!(text.ends_with("\noops\n```\n"), "{text}");
}

#[test]
fn report_refusals() {
    let server = TestServer::start();
    moderation_channel(&server);
    let iago = server.client(IAGO);
    let othello = server.client(OTHELLO);
    let public = send(&iago, "Denmark", "fine");
    let secret = send(&iago, "core team", "secret");
    let path = format!("/messages/{public}/report");
    othello.post(&path, &[]).err(400, "REQUEST_VARIABLE_MISSING");
    let e = othello.post(&path, &[("report_type", "rude")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid report_type");
    let e = othello.post(&path, &[("report_type", "other")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "An explanation is required.");
    let long = "x".repeat(1001);
    othello.post(&path, &[("report_type", "spam"), ("description", &long)]).err(400, "BAD_REQUEST");
    for unreadable in [secret.to_string(), "999999".to_owned()] {
        let e = othello
            .post(&format!("/messages/{unreadable}/report"), &[("report_type", "spam")])
            .err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    }
    server.anonymous().post(&path, &[("report_type", "spam")]).err(401, "UNAUTHORIZED");
    // Nothing reached the channel.
    assert!(reports(&iago).is_empty());
}

#[test]
fn a_channels_email_address_is_zulips_form_and_stays_the_same() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let core = channel_id(&hamlet, "core team");
    let denmark = channel_id(&hamlet, "Denmark");
    let path = format!("/streams/{core}/email_address");
    let email = hamlet.get(&path, &[]).ok()["email"].as_str().unwrap().to_owned();
    let (local, host) = email.split_once('@').unwrap();
    assert_eq!(host, "127.0.0.1");
    let parts: Vec<&str> = local.split('.').collect();
    assert_eq!(parts.len(), 3, "{email}");
    assert_eq!(parts[0], "core-team");
    assert_eq!(parts[1].len(), 32);
    assert!(parts[1].bytes().all(|b| b.is_ascii_hexdigit()), "{email}");
    assert_eq!(parts[2], "show-sender");
    // The same address again, and after a restart; another per sender.
    assert_eq!(hamlet.get(&path, &[]).ok()["email"], email.as_str());
    let me = crate::util::user_id(&server, HAMLET).to_string();
    let own = hamlet.get(&path, &[("sender_id", &me)]).ok()["email"].clone();
    assert_ne!(own, email.as_str());
    server.stop();
    server.restart();
    let hamlet = server.client(HAMLET);
    assert_eq!(hamlet.get(&path, &[]).ok()["email"], email.as_str());
    assert_eq!(hamlet.get(&path, &[("sender_id", &me)]).ok()["email"], own);
    // Refusals: a private channel the caller is not in, an unknown one,
    // a sender who is neither the caller nor a bot they manage.
    let othello = server.client(OTHELLO);
    let e = othello.get(&path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid channel ID");
    othello.get("/streams/999999/email_address", &[]).err(400, "BAD_REQUEST");
    let denmark_path = format!("/streams/{denmark}/email_address");
    othello.get(&denmark_path, &[]).ok();
    let e = othello.get(&denmark_path, &[("sender_id", &me)]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such bot");
    othello.get(&denmark_path, &[("sender_id", "x")]).err(400, "BAD_REQUEST");
}

#[test]
fn topic_links_come_from_the_realms_linkifiers() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let template = "https://tracker.test/{id}";
    iago.post("/realm/filters", &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", template)]).ok();
    let id = hamlet
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "Denmark"),
                ("topic", "fix #12 see https://x.test/a"),
                ("content", "on it"),
            ],
        )
        .ok()["id"]
        .clone();
    let got = hamlet.get(&format!("/messages/{id}"), &[]).ok();
    let expected = json!([
        {"text": "#12", "url": "https://tracker.test/12"},
        {"text": "https://x.test/a", "url": "https://x.test/a"},
    ]);
    assert_eq!(got["message"]["topic_links"], expected);
    let narrow = r#"[["channel","Denmark"]]"#;
    let list = hamlet
        .get("/messages", &[("anchor", "newest"), ("num_before", "1"), ("narrow", narrow)])
        .ok();
    assert_eq!(list["messages"][0]["topic_links"], expected);
    // Direct messages and topics without matches have none.
    let dm = hamlet.post("/messages", &[("type", "direct"), ("to", IAGO), ("content", "#12")]).ok()
        ["id"]
        .clone();
    assert_eq!(
        hamlet.get(&format!("/messages/{dm}"), &[]).ok()["message"]["topic_links"],
        json!([])
    );
    // A moved topic's event carries the new topic's links.
    hamlet.request("PATCH", &format!("/messages/{id}"), &[("topic", "now #7")]).ok();
    let moved = hamlet.get(&format!("/messages/{id}"), &[]).ok();
    assert_eq!(
        moved["message"]["topic_links"],
        json!([{"text": "#7", "url": "https://tracker.test/7"}])
    );
}
