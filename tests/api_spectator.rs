//! Logged-out spectators: `POST /register` without credentials in a realm
//! with public access (`enable_spectator_access`; the `--dev` seed turns it
//! on for the default realm, whose `general` is web-public). The queue id
//! is null and only what a spectator may see is in the reply.

use serde_json::Value;

use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test";

#[test]
fn a_spectator_registers_without_a_queue_and_sees_only_public_data() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    // Something private to leak: a message in the private channel, a
    // direct message, a draft, a starred message.
    let secret = "the ghost walks at midnight";
    hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "plot"), ("content", secret)],
        )
        .ok();
    hamlet
        .post(
            "/messages",
            &[("type", "private"), ("to", "[\"iago@natter.test\"]"), ("content", secret)],
        )
        .ok();
    hamlet
        .post(
            "/drafts",
            &[(
                "drafts",
                &format!(r#"[{{"type": "", "to": [], "topic": "", "content": "{secret}"}}]"#),
            )],
        )
        .ok();
    let r = server.anonymous().post("/register", &[]).ok();
    assert_eq!(r["queue_id"], Value::Null);
    assert_eq!(r["last_event_id"], -1);
    assert!(r["zulip_feature_level"].is_u64());
    assert_eq!(r["realm_enable_spectator_access"], true);
    assert_eq!(r["realm_name"], "Natter Dev");
    // Channels: only web-public ones, never as subscriptions.
    assert_eq!(r["subscriptions"], serde_json::json!([]));
    let never: Vec<&str> = r["never_subscribed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(never, ["general"]);
    assert_eq!(r["never_subscribed"][0]["is_web_public"], true);
    assert!(r["never_subscribed"][0].get("subscribers").is_none());
    // Messages: no personal read state.
    assert_eq!(r["max_message_id"], -1);
    assert_eq!(r["unread_msgs"]["count"], 0);
    assert_eq!(r["starred_messages"], serde_json::json!([]));
    assert_eq!(r["presences"], serde_json::json!({}));
    // Users: names, never real addresses or profile data.
    let users = r["realm_users"].as_array().unwrap();
    assert!(users.iter().any(|u| u["full_name"] == "King Hamlet"), "{users:?}");
    for u in users {
        assert_eq!(u["delivery_email"], Value::Null, "{u}");
        assert!(u.get("profile_data").is_none(), "{u}");
    }
    // No personal sections at all.
    for key in [
        "user_id",
        "delivery_email",
        "api_key",
        "drafts",
        "alert_words",
        "recent_private_conversations",
        "muted_users",
        "muted_topics",
        "user_topics",
        "user_settings",
        "scheduled_messages",
        "realm_user_groups",
    ] {
        assert!(r.get(key).is_none(), "a spectator got {key}");
    }
    let text = r.to_string();
    for hidden in [secret, "core team", "A **private** channel", "Denmark", "plot"] {
        assert!(!text.contains(hidden), "{hidden:?} leaked to a spectator");
    }
    // Fetching a subset works the same way.
    let r = server.anonymous().post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(r["queue_id"], Value::Null);
    assert!(r.get("realm_users").is_none() && r.get("never_subscribed").is_none());
    assert!(r["max_message_length"].is_u64());
    // There is no queue to poll.
    server.anonymous().get("/events", &[("queue_id", "null")]).err(401, "UNAUTHORIZED");
}

#[test]
fn spectator_register_refusals() {
    let server = TestServer::start();
    let anonymous = server.anonymous();
    for (name, value) in [
        ("client_gravatar", "true"),
        ("include_subscribers", "true"),
        ("include_subscribers", "partial"),
        ("include_subscribers", "\"partial\""),
    ] {
        let e = anonymous.post("/register", &[(name, value)]).err(400, "BAD_REQUEST");
        assert!(e["msg"].as_str().unwrap().contains(name), "{e}");
    }
    // Explicitly false is fine.
    anonymous
        .post("/register", &[("client_gravatar", "false"), ("include_subscribers", "false")])
        .ok();
    // A realm without public access wants credentials, as Zulip does.
    let lear = anonymous.with_host("lear.localhost");
    lear.post("/register", &[]).err(401, "UNAUTHORIZED");
    let settings = lear.get("/server_settings", &[]).ok();
    assert_eq!(settings["realm_web_public_access_enabled"], false);
    let settings = anonymous.get("/server_settings", &[]).ok();
    assert_eq!(settings["realm_web_public_access_enabled"], true);
    // Credentials, when sent, are checked: a bad key is not a spectator.
    anonymous.with_auth(HAMLET, "wrong").post("/register", &[]).err(401, "INVALID_API_KEY");
    // And a real user still gets a queue.
    let r = server.client(HAMLET).post("/register", &[("fetch_event_types", "[]")]).ok();
    assert!(r["queue_id"].is_string());
}

#[test]
fn realm_create_public_opens_the_realm_to_spectators() {
    let mut server = TestServer::start();
    server.stop();
    for (subdomain, public) in [("open", true), ("closed", false)] {
        let owner = format!("boss@{subdomain}.test");
        let mut args = vec!["--subdomain", subdomain, "--name", subdomain];
        args.extend(["--owner-email", &owner, "--owner-name", "Boss"]);
        if public {
            args.push("--public");
        }
        server.realm_create_ok(&args);
    }
    server.restart_with_args(vec![]);
    let open = server.anonymous().with_host("open.localhost");
    let r = open.post("/register", &[]).ok();
    assert_eq!(r["queue_id"], Value::Null);
    assert_eq!(r["realm_enable_spectator_access"], true);
    // No web-public channel yet: nothing to see, but the realm says so.
    assert_eq!(r["never_subscribed"], serde_json::json!([]));
    assert_eq!(open.get("/server_settings", &[]).ok()["realm_web_public_access_enabled"], false);
    let closed = server.anonymous().with_host("closed.localhost");
    closed.post("/register", &[]).err(401, "UNAUTHORIZED");
}

/// The narrow a spectator must send (Zulip's marker of a web-public query).
const WEB_PUBLIC: &str = r#"{"operator": "channels", "operand": "web-public"}"#;

fn narrow(terms: &[&str]) -> String {
    format!("[{}]", terms.join(","))
}

#[test]
fn spectators_read_web_public_channels_only() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let send = |to: &str, topic: &str, content: &str| {
        let r = hamlet
            .post(
                "/messages",
                &[("type", "stream"), ("to", to), ("topic", topic), ("content", content)],
            )
            .ok();
        r["id"].as_u64().unwrap()
    };
    let public_id = send("general", "open air", "for **everyone**");
    let denmark_id = send("Denmark", "members only", "not for the web");
    let private_id = send("core team", "plot", "the ghost walks");
    let dm = hamlet
        .post(
            "/messages",
            &[("type", "private"), ("to", "[\"iago@natter.test\"]"), ("content", "psst")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let anonymous = server.anonymous();
    let read = |terms: &[&str]| {
        let narrow = narrow(terms);
        anonymous
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "100"),
                    ("num_after", "0"),
                    ("narrow", &narrow),
                ],
            )
            .ok()
    };
    // Every web-public channel: general's messages, and nothing else.
    let r = read(&[WEB_PUBLIC]);
    let ids: Vec<u64> =
        r["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert!(ids.contains(&public_id), "{ids:?}");
    for hidden in [denmark_id, private_id, dm] {
        assert!(!ids.contains(&hidden), "message {hidden} leaked: {ids:?}");
    }
    assert_eq!(r["found_newest"], true);
    let mine = r["messages"].as_array().unwrap().iter().find(|m| m["id"] == public_id).unwrap();
    assert_eq!(mine["flags"], serde_json::json!(["read"]));
    assert_eq!(mine["content"], "<p>for <strong>everyone</strong></p>");
    assert!(mine["avatar_url"].is_string(), "no client_gravatar for spectators: {mine}");
    // The legacy pair syntax, a channel and a topic, and in:home (dropped).
    let r = read(&[
        r#"["streams", "web-public"]"#,
        r#"["stream", "general"]"#,
        r#"["topic", "open air"]"#,
        r#"["in", "home"]"#,
    ]);
    assert_eq!(r["messages"].as_array().unwrap().len(), 1);
    assert_eq!(r["messages"][0]["id"], public_id);
    // Search works over what they may read, and only that.
    let r = read(&[WEB_PUBLIC, r#"{"operator": "search", "operand": "ghost"}"#]);
    assert_eq!(r["messages"], serde_json::json!([]));
    // One message by id.
    let one = anonymous.get(&format!("/messages/{public_id}"), &[]).ok();
    assert_eq!(one["message"]["id"], public_id);
    assert_eq!(one["raw_content"], "for **everyone**");
    assert_eq!(one["message"]["flags"], serde_json::json!(["read"]));
    for hidden in [denmark_id, private_id, dm, 999_999] {
        let e = anonymous.get(&format!("/messages/{hidden}"), &[]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    }
    // message_ids with the web-public narrow: only the readable ones.
    let ids = format!("[{public_id},{denmark_id},{private_id},{dm}]");
    let r = anonymous
        .get("/messages", &[("message_ids", &ids), ("narrow", &narrow(&[WEB_PUBLIC]))])
        .ok();
    assert_eq!(r["messages"].as_array().unwrap().len(), 1);
    assert_eq!(r["messages"][0]["id"], public_id);
}

#[test]
fn spectator_get_messages_refusals() {
    let server = TestServer::start();
    let anonymous = server.anonymous();
    let get = |client: &crate::util::Client, narrow: Option<String>| {
        let mut params = vec![("anchor", "newest".to_owned()), ("num_before", "10".to_owned())];
        if let Some(n) = narrow {
            params.push(("narrow", n));
        }
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        client.get("/messages", &params)
    };
    let not_logged_in = "Not logged in: API authentication or user session required";
    // Without the web-public marker, or with an operator a spectator may
    // not use, the request needs credentials (Zulip's rule: a client with
    // broken credentials must not get an empty answer).
    for terms in [
        None,
        Some(narrow(&[])),
        Some(narrow(&[r#"["stream", "general"]"#])),
        Some(narrow(&[r#"{"operator": "channels", "operand": "web-public", "negated": true}"#])),
        Some(narrow(&[WEB_PUBLIC, r#"["is", "starred"]"#])),
        Some(narrow(&[WEB_PUBLIC, r#"["dm", "iago@natter.test"]"#])),
        Some(narrow(&[WEB_PUBLIC, r#"["in", "all"]"#])),
    ] {
        let e = get(&anonymous, terms.clone()).err(401, "UNAUTHORIZED");
        assert_eq!(e["msg"], not_logged_in, "{terms:?}");
    }
    // A channel that is not web-public, by name or id: private, public
    // to members only, or another realm's.
    let hamlet = server.client(HAMLET);
    let id_of = |client: &crate::util::Client, name: &str| {
        client.get("/get_stream_id", &[("stream", name)]).ok()["stream_id"].as_u64().unwrap()
    };
    let core = id_of(&hamlet, "core team");
    let lear_general =
        id_of(&server.client("king@lear.test").with_host("lear.localhost"), "general");
    for (operand, shown) in [
        ("\"core team\"".to_owned(), "core team".to_owned()),
        (core.to_string(), core.to_string()),
        ("\"Denmark\"".to_owned(), "Denmark".to_owned()),
        (lear_general.to_string(), lear_general.to_string()),
        ("\"no such channel\"".to_owned(), "no such channel".to_owned()),
    ] {
        let channel = format!(r#"{{"operator": "channel", "operand": {operand}}}"#);
        let e = get(&anonymous, Some(narrow(&[WEB_PUBLIC, &channel]))).err(400, "BAD_NARROW");
        assert_eq!(
            e["msg"],
            format!("Invalid narrow operator: unknown web-public channel {shown}")
        );
    }
    // Another channels operand.
    let public = r#"{"operator": "channels", "operand": "public"}"#;
    get(&anonymous, Some(narrow(&[WEB_PUBLIC, public]))).err(400, "BAD_NARROW");
    // A realm without spectator access wants credentials whatever the narrow.
    let lear = anonymous.with_host("lear.localhost");
    let e = get(&lear, Some(narrow(&[WEB_PUBLIC]))).err(401, "UNAUTHORIZED");
    assert_eq!(e["msg"], not_logged_in);
    lear.get("/messages/1", &[]).err(401, "UNAUTHORIZED");
    // Credentials, when sent, are checked, and a user reads as themselves.
    anonymous
        .with_auth(HAMLET, "wrong")
        .get("/messages", &[("anchor", "newest")])
        .err(401, "INVALID_API_KEY");
    hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "t"), ("content", "x")],
        )
        .ok();
    let r = get(&hamlet, Some(narrow(&[r#"["stream", "core team"]"#]))).ok();
    assert_eq!(r["messages"].as_array().unwrap().last().unwrap()["content"], "<p>x</p>");
}
