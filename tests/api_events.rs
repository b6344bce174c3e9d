//! POST /register, GET /events, DELETE /events, POST /users/me/presence:
//! queues, long-polls, delivery rules, limits, restart survival.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; general only
const POLONIUS: &str = "polonius@natter.test"; // guest; general only

/// Registers and returns (queue_id, full reply).
pub fn register(c: &Client, params: &[(&str, &str)]) -> (String, Value) {
    let r = c.post("/register", params).ok();
    (r["queue_id"].as_str().expect("queue_id").to_owned(), r)
}

/// Every queued event after `last`, without waiting.
pub fn events(c: &Client, queue: &str, last: i64) -> Vec<Value> {
    let r = c
        .get(
            "/events",
            &[("queue_id", queue), ("last_event_id", &last.to_string()), ("dont_block", "true")],
        )
        .ok();
    r["events"].as_array().expect("events").clone()
}

fn send(c: &Client, to: &str, topic: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", topic), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

fn messages_only(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "message").collect()
}

#[test]
fn register_returns_the_always_present_fields_and_only_fetched_sections() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (queue, r) = register(&hamlet, &[("fetch_event_types", r#"["message"]"#)]);
    assert!(!queue.is_empty());
    // Just below the slot of the next mutation's events (`seq × 1024`).
    let last = r["last_event_id"].as_i64().unwrap();
    assert!(last >= -1 && (last + 1) % 1024 == 0, "{last}");
    assert!(r["zulip_feature_level"].as_u64().unwrap() >= 185);
    assert_eq!(r["zulip_feature_level"], natter::api::realm::FEATURE_LEVEL);
    assert!(r["zulip_version"].is_string() && r["zulip_merge_base"].is_string());
    assert!(r["max_message_id"].as_i64().unwrap() >= 1, "the seed's welcome message");
    for absent in ["realm_users", "realm_name", "presences", "starred_messages", "drafts"] {
        assert!(r.get(absent).is_none(), "{absent} was not fetched: {r}");
    }
    // fetch_event_types defaults to event_types; unknown names are ignored.
    let (_, r) = register(&hamlet, &[("event_types", r#"["presence","zulip_version"]"#)]);
    assert!(r["presences"].is_object());
    assert!(r.get("realm_users").is_none() && r.get("max_message_id").is_none());
    // Neither: everything.
    let (_, r) = register(&hamlet, &[]);
    for present in [
        "realm_users",
        "realm_name",
        "presences",
        "starred_messages",
        "max_message_id",
        "realm_user_groups",
        "recent_private_conversations",
        "muted_topics",
        "max_stream_name_length",
        "server_typing_started_wait_period_milliseconds",
    ] {
        assert!(r.get(present).is_some(), "{present} missing");
    }
    assert_eq!(r["realm_message_content_edit_limit_seconds"], 0, "an integer, never null");
    assert_eq!(r["user_id"], hamlet.get("/users/me", &[]).ok()["user_id"]);
    assert_eq!(r["email"], HAMLET);
    let groups = r["realm_user_groups"].as_array().unwrap();
    let members = groups.iter().find(|g| g["name"] == "role:members").unwrap();
    assert!(members["members"].as_array().unwrap().contains(&r["user_id"]));
    assert!(r["realm_users"].as_array().unwrap().iter().any(|u| u["email"] == OTHELLO));
}

#[test]
fn every_register_parameter_refuses_bad_values() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    for (name, value) in [
        ("apply_markdown", "maybe"),
        ("client_gravatar", "2"),
        ("slim_presence", "x"),
        ("all_public_streams", "[]"),
        ("include_subscribers", "sometimes"),
        ("include_subscribers", "3"),
        ("presence_history_limit_days", "-1"),
        ("presence_history_limit_days", "week"),
        ("event_types", r#"["message", 3]"#),
        ("event_types", r#"{"a": 1}"#),
        ("fetch_event_types", "message"),
        ("client_capabilities", "[1]"),
        ("client_capabilities", r#"{"empty_topic_name": "yes"}"#),
        ("narrow", r#"{"stream": "x"}"#),
    ] {
        let e = hamlet.post("/register", &[(name, value)]);
        let body = e.err(400, if value == "message" { "INVALID_JSON" } else { "BAD_REQUEST" });
        assert_eq!(body["var_name"], name, "{name}={value}");
    }
    // The lear realm has no public access (the default dev realm has; see
    // api_spectator.rs).
    assert_eq!(server.anonymous().with_host("lear.localhost").post("/register", &[]).status, 401);
    // Accepted forms.
    for value in ["true", "false", "partial", "\"partial\""] {
        hamlet.post("/register", &[("include_subscribers", value)]).ok();
    }
    let r =
        hamlet.post("/register", &[("client_capabilities", r#"{"future_capability": true}"#)]).ok();
    assert!(r["queue_id"].is_string(), "unknown capabilities are ignored");
}

#[test]
fn message_events_reach_every_recipient_queue_with_flags_and_rendering() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let cordelia = server.client(CORDELIA);
    let (h_raw, registered) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let (h_html, _) =
        register(&hamlet, &[("event_types", r#"["message"]"#), ("apply_markdown", "true")]);
    let (o, _) = register(&othello, &[("event_types", r#"["message"]"#)]);
    let (c, _) = register(&cordelia, &[("event_types", r#"["message"]"#)]);
    let (c_public, _) =
        register(&cordelia, &[("event_types", r#"["message"]"#), ("all_public_streams", "true")]);
    let id = send(&hamlet, "Denmark", "castle", "to **be**");
    let private = send(&hamlet, "core team", "plots", "secret");

    let raw = events(&hamlet, &h_raw, -1);
    assert_eq!(raw.len(), 2, "the sender's own queue gets both: {raw:?}");
    let (first, last) =
        (raw[0]["id"].as_i64().unwrap(), registered["last_event_id"].as_i64().unwrap());
    assert!(first > last && first % 1024 == 0, "the first event of its mutation: {first}");
    assert!(raw[1]["id"].as_i64().unwrap() >= first + 1024, "the next mutation's slot");
    assert_eq!(raw[0]["message"]["id"], id);
    assert_eq!(raw[0]["message"]["content"], "to **be**", "register's default is Markdown");
    assert_eq!(raw[0]["message"]["content_type"], "text/x-markdown");
    assert!(raw[0]["flags"].is_array() && raw[0]["message"].get("flags").is_none());
    let html = events(&hamlet, &h_html, -1);
    assert_eq!(html[0]["message"]["content"], "<p>to <strong>be</strong></p>");
    assert_eq!(html[0]["message"]["display_recipient"], "Denmark");
    assert_eq!(html[0]["message"]["subject"], "castle");

    let got = events(&othello, &o, -1);
    assert_eq!(got.len(), 1, "not the private channel: {got:?}");
    assert_eq!(got[0]["message"]["id"], id);
    assert_eq!(got[0]["flags"], json!([]), "unread for a recipient");
    assert!(events(&cordelia, &c, -1).is_empty(), "Cordelia is not in Denmark");
    let public = events(&cordelia, &c_public, -1);
    assert_eq!(public.len(), 1, "all_public_streams: Denmark, never core team: {public:?}");
    assert_eq!(public[0]["message"]["id"], id);
    assert!(private > id);
}

#[test]
fn event_types_filter_what_a_queue_receives() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (q, _) = register(&hamlet, &[("event_types", r#"["presence"]"#)]);
    send(&hamlet, "general", "t", "hello");
    assert!(messages_only(&events(&hamlet, &q, -1)).is_empty());
}

#[test]
fn local_id_comes_back_as_local_message_id_to_the_sending_queue_only() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (q1, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let (q2, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    hamlet
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "t"),
                ("content", "echo"),
                ("queue_id", &q1),
                ("local_id", "17.01"),
            ],
        )
        .ok();
    let echoed = &events(&hamlet, &q1, -1)[0];
    assert_eq!(echoed["local_message_id"], "17.01");
    assert!(echoed.get("local_id").is_none(), "Zulip's key only: {echoed}");
    assert!(events(&hamlet, &q2, -1)[0].get("local_message_id").is_none());
}

#[test]
fn a_parked_long_poll_wakes_on_a_new_event() {
    let server = TestServer::start_with(&["--heartbeat-secs", "60"]);
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let (q, _) = register(&othello, &[("event_types", r#"["message"]"#)]);
    let poll = {
        let othello = othello.clone();
        let q = q.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let r = othello.get("/events", &[("queue_id", &q), ("last_event_id", "-1")]).ok();
            (r, start.elapsed())
        })
    };
    let id = send(&hamlet, "general", "wake", "up");
    let (r, waited) = poll.join().unwrap();
    assert!(waited < Duration::from_secs(60), "answered by the event, not a heartbeat");
    let events = r["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["message"]["id"], id);
    assert_eq!(r["queue_id"], q);
}

#[test]
fn an_idle_long_poll_gets_a_heartbeat_with_an_id() {
    let server = TestServer::start_with(&["--heartbeat-secs", "1"]);
    let hamlet = server.client(HAMLET);
    let (q, registered) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let last = registered["last_event_id"].as_i64().unwrap();
    let r = hamlet.get("/events", &[("queue_id", &q), ("last_event_id", &last.to_string())]).ok();
    assert_eq!(r["events"], json!([{"type": "heartbeat", "id": last + 1}]));
    // Acknowledged, it is gone; the next heartbeat has the next id.
    let acked = (last + 1).to_string();
    let r = hamlet.get("/events", &[("queue_id", &q), ("last_event_id", &acked)]).ok();
    assert_eq!(r["events"], json!([{"type": "heartbeat", "id": last + 2}]));
}

/// `--slow-request-ms`: a long-poll that waits for its heartbeat (≥ 1 s)
/// is logged with its method and path, never its query; a quick request
/// is not.
#[test]
fn slow_requests_are_logged_when_asked_for() {
    let server = TestServer::start_with(&["--heartbeat-secs", "1", "--slow-request-ms", "900"]);
    let hamlet = server.client(HAMLET);
    let (q, registered) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let r = hamlet.get("/events", &[("queue_id", &q), ("last_event_id", "-1")]).ok();
    let id = registered["last_event_id"].as_i64().unwrap() + 1;
    assert_eq!(r["events"], json!([{"type": "heartbeat", "id": id}]));
    hamlet.get("/users/me", &[]).ok();
    let log = server.stderr();
    let slow: Vec<&str> = log.lines().filter(|l| l.contains("slow request")).collect();
    assert_eq!(slow.len(), 1, "{log}");
    assert!(
        slow[0].starts_with("natter: warning: slow request: GET /api/v1/events took "),
        "{log}"
    );
    assert!(slow[0].ends_with(" UTC)") && !slow[0].contains(&q), "{log}");
    // Off by default: the same long-poll logs nothing.
    let quiet = TestServer::start_with(&["--heartbeat-secs", "1"]);
    let hamlet = quiet.client(HAMLET);
    let (q, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    hamlet.get("/events", &[("queue_id", &q), ("last_event_id", "-1")]).ok();
    assert!(!quiet.stderr().contains("slow request"), "{}", quiet.stderr());
}

#[track_caller]
fn assert_bad_queue(c: &Client, method: &str, queue: &str) {
    let body = c.request(method, "/events", &[("queue_id", queue)]).err(400, "BAD_EVENT_QUEUE_ID");
    assert_eq!(body["msg"], format!("Bad event queue id: {queue}"));
    assert_eq!(body["queue_id"], queue);
}

#[test]
fn unknown_foreign_and_deleted_queues_are_refused() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let (q, _) = register(&hamlet, &[]);
    assert_bad_queue(&hamlet, "GET", "1700000000:nope");
    assert_bad_queue(&othello, "GET", &q);
    assert_bad_queue(&othello, "DELETE", &q);
    hamlet.get("/events", &[("queue_id", &q), ("dont_block", "true")]).ok();
    hamlet.request("DELETE", "/events", &[("queue_id", &q)]).ok();
    assert_bad_queue(&hamlet, "GET", &q);
    assert_bad_queue(&hamlet, "DELETE", &q);
    hamlet.get("/events", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    hamlet.get("/events", &[("queue_id", &q), ("last_event_id", "x")]).err(400, "BAD_REQUEST");
    hamlet.get("/events", &[("queue_id", &q), ("dont_block", "x")]).err(400, "BAD_REQUEST");
    hamlet.request("DELETE", "/events", &[]).err(400, "REQUEST_VARIABLE_MISSING");
}

#[test]
fn queues_expire_after_the_configured_idle_time() {
    let server = TestServer::start_with(&["--event-queue-timeout-secs", "1"]);
    let hamlet = server.client(HAMLET);
    let (q, _) = register(&hamlet, &[]);
    hamlet.get("/events", &[("queue_id", &q), ("dont_block", "true")]).ok();
    std::thread::sleep(Duration::from_millis(2500));
    assert_bad_queue(&hamlet, "GET", &q);
}

#[test]
fn queue_count_and_length_are_bounded() {
    let server = TestServer::start_with(&["--max-queues-per-user", "2", "--max-queue-events", "2"]);
    let hamlet = server.client(HAMLET);
    let (a, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let (b, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let e = hamlet.post("/register", &[]).err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("Too many event queues"), "{e}");
    hamlet.request("DELETE", "/events", &[("queue_id", &b)]).ok();
    register(&hamlet, &[]);
    for i in 0..3 {
        send(&hamlet, "general", "flood", &format!("m{i}"));
    }
    assert_bad_queue(&hamlet, "GET", &a);
}

#[test]
fn queues_survive_a_clean_restart_with_exactly_the_unacknowledged_events() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (q, _) = register(&hamlet, &[("event_types", r#"["message"]"#)]);
    let first = send(&hamlet, "general", "t", "one");
    let second = send(&hamlet, "general", "t", "two");
    let got = events(&hamlet, &q, -1);
    assert_eq!(got.len(), 2);
    let ids: Vec<i64> = got.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    server.stop();
    server.restart();
    let hamlet = server.client(HAMLET);
    let got = events(&hamlet, &q, ids[0]);
    assert_eq!(got.len(), 1, "only the unacknowledged event: {got:?}");
    assert_eq!(
        (got[0]["id"].as_i64(), got[0]["message"]["id"].as_u64()),
        (Some(ids[1]), Some(second))
    );
    assert!(first < second);
    let third = send(&hamlet, "general", "t", "three");
    let got = events(&hamlet, &q, ids[1]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["message"]["id"].as_u64(), Some(third));
    let third_id = got[0]["id"].as_i64().unwrap();
    assert!(third_id > ids[1]);
    // A crash too: the journal written at start-up names the queue, and
    // the unacknowledged event comes back from the log with its id.
    server.kill();
    server.restart();
    let got = events(&server.client(HAMLET), &q, ids[1]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0]["id"].as_i64(), got[0]["message"]["id"].as_u64()),
        (Some(third_id), Some(third))
    );
}

#[test]
fn presence_reports_answer_with_presences_and_notify_others() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let (legacy, _) = register(&othello, &[("event_types", r#"["presence"]"#)]);
    let (modern, _) = register(
        &othello,
        &[
            ("event_types", r#"["presence"]"#),
            ("client_capabilities", r#"{"simplified_presence_events": true}"#),
        ],
    );
    let r =
        hamlet.post("/users/me/presence", &[("status", "active"), ("new_user_input", "true")]).ok();
    let mine = &r["presences"][HAMLET];
    assert_eq!(mine["aggregated"]["status"], "active");
    assert!(r["server_timestamp"].is_number());
    let hamlet_id = r["presences"].as_object().map(|_| ()).and(Some(()));
    assert!(hamlet_id.is_some());
    let got = events(&othello, &legacy, -1);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["email"], HAMLET);
    assert_eq!(got[0]["presence"]["website"]["status"], "active");
    let got = events(&othello, &modern, -1);
    let (uid, entry) = got[0]["presences"].as_object().unwrap().iter().next().unwrap();
    assert!(uid.parse::<u64>().is_ok());
    assert!(entry["active_timestamp"].is_number() && entry["idle_timestamp"].is_number());
    // Slim and last_update_id forms; ping_only answers without presences.
    let r =
        hamlet.post("/users/me/presence", &[("status", "idle"), ("slim_presence", "true")]).ok();
    assert!(r["presences"].as_object().unwrap().keys().all(|k| k.parse::<u64>().is_ok()));
    let r = hamlet.post("/users/me/presence", &[("status", "idle"), ("last_update_id", "-1")]).ok();
    assert!(r["presence_last_update_id"].as_u64().unwrap() >= 3);
    let r = hamlet.post("/users/me/presence", &[("status", "active"), ("ping_only", "true")]).ok();
    assert!(r.get("presences").is_none());
    // Register shows it, in both shapes.
    let (_, r) = register(&othello, &[("fetch_event_types", r#"["presence"]"#)]);
    assert!(r["presences"][HAMLET]["aggregated"].is_object());
    let (_, r) =
        register(&othello, &[("fetch_event_types", r#"["presence"]"#), ("slim_presence", "true")]);
    assert!(r["presences"].as_object().unwrap().keys().all(|k| k.parse::<u64>().is_ok()));
    // Refusals.
    hamlet.post("/users/me/presence", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    for (name, value) in [
        ("status", "away"),
        ("ping_only", "x"),
        ("new_user_input", "x"),
        ("last_update_id", "-5"),
        ("history_limit_days", "-1"),
    ] {
        let mut params = vec![("status", "active"), (name, value)];
        if name == "status" {
            params.remove(0);
        }
        let e = hamlet.post("/users/me/presence", &params).err(400, "BAD_REQUEST");
        assert_eq!(e["var_name"], name);
    }
    // A guest sees presences too; another realm's user does not.
    let (_, r) = register(&server.client(POLONIUS), &[("fetch_event_types", r#"["presence"]"#)]);
    assert!(r["presences"].get(HAMLET).is_some());
    let lear = server.client("king@lear.test").with_host(&format!("lear.{}", server.addr));
    let (_, r) = register(&lear, &[("fetch_event_types", r#"["presence"]"#)]);
    assert!(r["presences"].get(HAMLET).is_none());
}

#[test]
fn narrowed_queues_get_only_matching_messages() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (q, _) = register(
        &hamlet,
        &[("event_types", r#"["message"]"#), ("narrow", r#"[["stream", "Denmark"]]"#)],
    );
    let (dict, _) = register(
        &hamlet,
        &[
            ("event_types", r#"["message"]"#),
            ("narrow", r#"[{"operator": "stream", "operand": "Denmark", "negated": true}]"#),
        ],
    );
    send(&hamlet, "general", "t", "elsewhere");
    let id = send(&hamlet, "Denmark", "t", "here");
    let got = events(&hamlet, &q, -1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["message"]["id"], id);
    let got = events(&hamlet, &dict, -1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["message"]["display_recipient"], "general");
    // A private channel the caller cannot see is as unknown as a missing one.
    let cordelia = server.client(CORDELIA);
    for narrow in [r#"[["stream", "core team"]]"#, r#"[["stream", "nowhere"]]"#] {
        let e = cordelia.post("/register", &[("narrow", narrow)]).err(400, "BAD_NARROW");
        assert_eq!(e["var_name"], "narrow");
    }
}

#[test]
fn register_includes_subscriptions_and_unreads() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let id = send(&hamlet, "Denmark", "t", "unread for othello");
    let (_, r) = register(&othello, &[("include_subscribers", "true")]);
    let subs = r["subscriptions"].as_array().unwrap();
    let denmark = subs.iter().find(|s| s["name"] == "Denmark").unwrap();
    assert!(denmark["subscribers"].as_array().unwrap().len() >= 3);
    assert!(denmark["color"].as_str().unwrap().starts_with('#'));
    assert_eq!(denmark["in_home_view"], true);
    assert!(r["never_subscribed"].as_array().unwrap().iter().all(|s| s["name"] != "core team"));
    let unread = &r["unread_msgs"];
    let topic = unread["streams"].as_array().unwrap().iter().find(|s| s["topic"] == "t").unwrap();
    assert_eq!(topic["unread_message_ids"], json!([id]));
    assert_eq!(r["max_message_id"], id);
}

#[test]
fn client_gravatar_decides_the_avatar_url_in_message_events() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let (computes, _) = register(&othello, &[("event_types", r#"["message"]"#)]);
    let (needs_url, _) =
        register(&othello, &[("event_types", r#"["message"]"#), ("client_gravatar", "false")]);
    send(&hamlet, "general", "t", "avatar");
    assert!(events(&othello, &computes, -1)[0]["message"]["avatar_url"].is_null());
    let url = &events(&othello, &needs_url, -1)[0]["message"]["avatar_url"];
    assert!(url.as_str().is_some_and(|u| u.starts_with("https://")), "{url}");
}

/// Committed events reach every queue in commit order, with ids derived
/// from their seq: concurrent senders' messages arrive in message-id order
/// (ids are taken under the writer lock, in seq order), each event in its
/// own mutation's slot of 1024 ids.
#[test]
fn concurrent_commits_reach_a_queue_in_commit_order() {
    const SENDERS: usize = 3;
    const EACH: usize = 15;
    let server = TestServer::start_with(&["--heartbeat-secs", "60"]);
    let othello = server.client(OTHELLO);
    let (q, registered) = register(&othello, &[("event_types", r#"["message"]"#)]);
    let senders: Vec<_> = [HAMLET, CORDELIA, OTHELLO]
        .into_iter()
        .take(SENDERS)
        .map(|who| {
            let c = server.client(who);
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|i| send(&c, "general", "order", &format!("m{i}")))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut last = registered["last_event_id"].as_i64().unwrap();
    let mut got: Vec<Value> = Vec::new();
    while got.len() < SENDERS * EACH {
        let r =
            othello.get("/events", &[("queue_id", &q), ("last_event_id", &last.to_string())]).ok();
        for event in r["events"].as_array().unwrap() {
            last = event["id"].as_i64().unwrap();
            if event["type"] == "message" {
                got.push(event.clone());
            }
        }
    }
    let mut sent: Vec<u64> = senders.into_iter().flat_map(|s| s.join().unwrap()).collect();
    sent.sort_unstable();
    let ids: Vec<i64> = got.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    let messages: Vec<u64> = got.iter().map(|e| e["message"]["id"].as_u64().unwrap()).collect();
    assert_eq!(messages, sent, "every message once, in commit order");
    assert!(ids.windows(2).all(|w| w[0] / 1024 < w[1] / 1024), "one slot each, rising: {ids:?}");
    assert!(ids.iter().all(|id| id % 1024 == 0), "each its mutation's first event: {ids:?}");
}
