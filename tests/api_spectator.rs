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
    let data = server.data_dir().join("data");
    for (subdomain, public) in [("open", true), ("closed", false)] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_natter"));
        command
            .args(["realm", "create", "--subdomain", subdomain, "--name", subdomain])
            .args(["--owner-email", &format!("boss@{subdomain}.test"), "--owner-name", "Boss"])
            .arg("--data-dir")
            .arg(&data);
        if public {
            command.arg("--public");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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
