//! POST /messages and GET /messages/{message_id}.

use serde_json::{json, Value};

use crate::util::{user_id, Client, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; in general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; in general only
const IAGO: &str = "iago@natter.test"; // administrator
const SHIVA: &str = "shiva@natter.test"; // moderator; not in core team
const POLONIUS: &str = "polonius@natter.test"; // guest; in general only

fn send(c: &Client, params: &[(&str, &str)]) -> u64 {
    c.post("/messages", params).ok()["id"].as_u64().expect("message id")
}

fn get(c: &Client, id: u64) -> Value {
    c.get(&format!("/messages/{id}"), &[]).ok()
}

fn channel_id(server: &TestServer, name: &str) -> u64 {
    let id = send(
        &server.client(HAMLET),
        &[("type", "stream"), ("to", name), ("topic", "probe"), ("content", "x")],
    );
    get(&server.client(HAMLET), id)["message"]["stream_id"].as_u64().unwrap()
}

#[test]
fn channel_message_by_name_round_trips() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(
        &hamlet,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "greetings"),
            ("content", "Hello **world**"),
        ],
    );
    let r = get(&hamlet, id);
    let m = &r["message"];
    assert_eq!(r["raw_content"], "Hello **world**");
    assert_eq!(m["id"], id);
    assert_eq!(m["type"], "stream");
    assert_eq!(m["display_recipient"], "general");
    assert_eq!(m["subject"], "greetings");
    assert_eq!(m["content"], "<p>Hello <strong>world</strong></p>");
    assert_eq!(m["content_type"], "text/html");
    assert_eq!(m["sender_email"], HAMLET);
    assert_eq!(m["sender_full_name"], "King Hamlet");
    assert_eq!(m["sender_realm_str"], "");
    assert_eq!(m["client"], "NatterTests");
    assert_eq!(m["is_me_message"], false);
    assert_eq!(m["reactions"], json!([]));
    assert_eq!(m["submessages"], json!([]));
    assert_eq!(m["topic_links"], json!([]));
    assert!(m["timestamp"].as_i64().unwrap() > 1_600_000_000);
    assert!(m["recipient_id"].as_u64().is_some());
    assert!(m.get("edit_history").is_none() && m.get("last_edit_timestamp").is_none());
    // An API client's own message is unread for its sender (Zulip's heuristic)...
    assert_eq!(m["flags"], json!([]));
    // ...unless asked otherwise, or sent from an interactive client.
    let id2 = send(
        &hamlet,
        &[
            ("type", "channel"),
            ("to", "\"general\""),
            ("subject", "greetings"),
            ("content", "again"),
            ("read_by_sender", "true"),
        ],
    );
    assert_eq!(get(&hamlet, id2)["message"]["flags"], json!(["read"]));
    assert!(id2 > id);
    // Raw Markdown on request.
    let raw = hamlet.get(&format!("/messages/{id}"), &[("apply_markdown", "false")]).ok();
    assert_eq!(raw["message"]["content"], "Hello **world**");
    assert_eq!(raw["message"]["content_type"], "text/x-markdown");
    // A recipient sees it unread.
    assert_eq!(get(&server.client(OTHELLO), id)["message"]["flags"], json!([]));
}

#[test]
fn channel_message_by_id_and_topic_rules() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&server, "Denmark");
    let id = send(
        &hamlet,
        &[
            ("type", "stream"),
            ("to", &denmark.to_string()),
            ("topic", "castle"),
            ("content", "by id"),
        ],
    );
    assert_eq!(get(&hamlet, id)["message"]["display_recipient"], "Denmark");
    // Channel names are case-insensitive.
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "denmark"), ("topic", "castle"), ("content", "lower")],
    );
    assert_eq!(get(&hamlet, id)["message"]["stream_id"], denmark);
    // "(no topic)" is the empty topic, shown by its display name unless asked.
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "general"), ("topic", "(no topic)"), ("content", "x")],
    );
    assert_eq!(get(&hamlet, id)["message"]["subject"], "general chat");
    let r = hamlet.get(&format!("/messages/{id}"), &[("allow_empty_topic_name", "true")]).ok();
    assert_eq!(r["message"]["subject"], "");
    // Over-long topics are truncated like Zulip does.
    let long = "t".repeat(100);
    let id =
        send(&hamlet, &[("type", "stream"), ("to", "general"), ("topic", &long), ("content", "x")]);
    let subject = get(&hamlet, id)["message"]["subject"].as_str().unwrap().to_owned();
    assert_eq!(subject.chars().count(), 60);
    assert!(subject.ends_with("..."));
    // Topics may not hold control characters.
    hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "a\u{7}b"), ("content", "x")],
        )
        .err(400, "BAD_REQUEST");
}

#[test]
fn direct_messages_by_ids_and_emails() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello_id = user_id(&server, OTHELLO);
    let hamlet_id = user_id(&server, HAMLET);
    let id = send(
        &hamlet,
        &[("type", "direct"), ("to", &format!("[{othello_id}]")), ("content", "psst")],
    );
    let m = get(&hamlet, id)["message"].clone();
    assert_eq!(m["type"], "private");
    assert_eq!(m["subject"], "");
    assert!(m.get("stream_id").is_none());
    let recipients = m["display_recipient"].as_array().unwrap();
    let ids: Vec<u64> = recipients.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    let mut expected = vec![hamlet_id, othello_id];
    expected.sort();
    assert_eq!(ids, expected);
    for r in recipients {
        assert!(r["email"].is_string() && r["full_name"].is_string());
        assert_eq!(r["is_mirror_dummy"], false);
    }
    // The same conversation by emails (JSON list, and the legacy bare string)
    // shares the recipient id.
    let id2 = send(
        &hamlet,
        &[("type", "private"), ("to", &format!("[\"{OTHELLO}\"]")), ("content", "again")],
    );
    let id3 = send(&hamlet, &[("type", "private"), ("to", OTHELLO), ("content", "and again")]);
    let recipient = m["recipient_id"].clone();
    assert_eq!(get(&hamlet, id2)["message"]["recipient_id"], recipient);
    assert_eq!(get(&hamlet, id3)["message"]["recipient_id"], recipient);
    // The recipient reads it; a third party cannot, nor a guest.
    assert_eq!(get(&server.client(OTHELLO), id)["raw_content"], "psst");
    server.client(CORDELIA).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    server.client(POLONIUS).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    server.client(IAGO).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    // A group DM and a message to oneself.
    let cordelia_id = user_id(&server, CORDELIA);
    let g = send(
        &hamlet,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello_id},{cordelia_id}]")),
            ("content", "all three"),
        ],
    );
    assert_eq!(
        get(&server.client(CORDELIA), g)["message"]["display_recipient"].as_array().unwrap().len(),
        3
    );
    let me = send(
        &hamlet,
        &[("type", "direct"), ("to", &format!("[{hamlet_id}]")), ("content", "note to self")],
    );
    assert_eq!(get(&hamlet, me)["message"]["display_recipient"].as_array().unwrap().len(), 1);
}

#[test]
fn send_refuses_bad_input() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let e = c
        .post("/messages", &[("to", "general"), ("topic", "t"), ("content", "x")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "type");
    let e = c
        .post("/messages", &[("type", "stream"), ("topic", "t"), ("content", "x")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "to");
    let e = c
        .post("/messages", &[("type", "stream"), ("to", "general"), ("topic", "t")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "content");
    let e = c
        .post("/messages", &[("type", "stream"), ("to", "general"), ("content", "x")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "topic");
    c.post("/messages", &[("type", "carrier-pigeon"), ("to", "general"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post(
        "/messages",
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "   \n ")],
    )
    .err(400, "BAD_REQUEST");
    c.post(
        "/messages",
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "a\0b")],
    )
    .err(400, "BAD_REQUEST");
    c.post(
        "/messages",
        &[
            ("type", "stream"),
            ("to", "[\"general\",\"Denmark\"]"),
            ("topic", "t"),
            ("content", "x"),
        ],
    )
    .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "stream"), ("to", "{}"), ("topic", "t"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "direct"), ("to", "[]"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "direct"), ("to", "[999999]"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "direct"), ("to", "[\"ghost@natter.test\"]"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "direct"), ("to", "[true]"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    // Another realm's user is not a valid recipient.
    let king =
        server.client("king@lear.test").with_host("lear.localhost").get("/users/me", &[]).ok();
    let king_id = king["user_id"].as_u64().unwrap();
    c.post("/messages", &[("type", "direct"), ("to", &format!("[{king_id}]")), ("content", "x")])
        .err(400, "BAD_REQUEST");
    c.post("/messages", &[("type", "direct"), ("to", "[\"king@lear.test\"]"), ("content", "x")])
        .err(400, "BAD_REQUEST");
    // Over-long content is truncated, as Zulip does.
    let long = "a".repeat(12_000);
    let id = send(&c, &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", &long)]);
    let raw = get(&c, id)["raw_content"].as_str().unwrap().to_owned();
    assert_eq!(raw.chars().count(), 10_000);
    assert!(raw.ends_with("[message truncated]"));
}

#[test]
fn missing_channels_name_what_was_asked() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let e = c
        .post(
            "/messages",
            &[("type", "stream"), ("to", "atlantis"), ("topic", "t"), ("content", "x")],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream"], "atlantis");
    let e = c
        .post(
            "/messages",
            &[("type", "stream"), ("to", "424242"), ("topic", "t"), ("content", "x")],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], 424242);
    // Another realm's channel does not exist here, by id or by name.
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let lid =
        send(&lear, &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "court")]);
    let lear_general = get(&lear, lid)["message"]["stream_id"].as_u64().unwrap();
    let e = c
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", &lear_general.to_string()),
                ("topic", "t"),
                ("content", "x"),
            ],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], lear_general);
    // And its messages cannot be read from this realm.
    c.get(&format!("/messages/{lid}"), &[]).err(400, "BAD_REQUEST");
}

#[test]
fn private_channels_do_not_leak() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "core team"), ("topic", "secret"), ("content", "the plan")],
    );
    assert_eq!(get(&server.client(IAGO), id)["raw_content"], "the plan");
    // A member who is not subscribed: the channel "does not exist".
    let othello = server.client(OTHELLO);
    let e = othello
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "t"), ("content", "x")],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream"], "core team");
    othello.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    // A moderator is no different; a guest neither.
    server.client(SHIVA).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    server.client(POLONIUS).get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    let core_id = get(&hamlet, id)["message"]["stream_id"].as_u64().unwrap();
    let e = othello
        .post(
            "/messages",
            &[("type", "stream"), ("to", &core_id.to_string()), ("topic", "t"), ("content", "x")],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert!(
        !e["msg"].as_str().unwrap().contains("core team"),
        "a probe by id must not learn the name"
    );
}

#[test]
fn public_channel_history_and_guests() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "public words")],
    );
    // Cordelia is not subscribed to Denmark, but it is public: readable,
    // flagged as historical.
    let r = get(&server.client(CORDELIA), id);
    assert_eq!(r["message"]["flags"], json!(["read", "historical"]));
    // Non-subscribers may post to a public channel.
    send(
        &server.client(CORDELIA),
        &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "hi")],
    );
    // A guest sees only channels they are subscribed to.
    let polonius = server.client(POLONIUS);
    polonius.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    polonius
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "x")],
        )
        .err(400, "STREAM_DOES_NOT_EXIST");
    let g = send(
        &polonius,
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "a guest speaks")],
    );
    assert_eq!(get(&hamlet, g)["raw_content"], "a guest speaks");
}

#[test]
fn get_message_refusals() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let e = c.get("/messages/999999", &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
    c.get("/messages/abc", &[]).err(400, "BAD_REQUEST");
    c.get("/messages/1", &[("apply_markdown", "sometimes")]).err(400, "BAD_REQUEST");
}

#[test]
fn markdown_is_rendered_safely() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let id = send(
        &c,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "t"),
            ("content", "<img src=x onerror=alert(1)> [a](javascript:alert(1))"),
        ],
    );
    let html = get(&c, id)["message"]["content"].as_str().unwrap().to_owned();
    assert!(!html.contains("<img"), "{html}");
    // A refused link stays as the text typed, as in Zulip: never a link.
    assert_eq!(
        html, "<p>&lt;img src=x onerror=alert(1)&gt; [a](javascript:alert(1))</p>",
        "{html}"
    );
    let me = send(
        &c,
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "/me waves")],
    );
    assert_eq!(get(&c, me)["message"]["is_me_message"], true);
}

fn flags(c: &Client, id: u64) -> Value {
    get(c, id)["message"]["flags"].clone()
}

#[test]
fn mentions_render_and_set_flags() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let othello_id = user_id(&server, OTHELLO);
    let content =
        "@**Othello, the Moor of Venice** see #**core team** and #**Denmark>castle** :smile:";
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", content)],
    );
    let html = get(&hamlet, id)["message"]["content"].as_str().unwrap().to_owned();
    assert!(
        html.contains(&format!(
            "<span class=\"user-mention\" data-user-id=\"{othello_id}\">@Othello, the Moor of Venice</span>"
        )),
        "{html}"
    );
    assert!(html.contains("class=\"stream\"") && html.contains(">#core team</a>"), "{html}");
    assert!(html.contains("class=\"stream-topic\"") && html.contains("/topic/castle\""), "{html}");
    assert!(html.contains("class=\"emoji emoji-1f642\""), "{html}");
    assert_eq!(flags(&othello, id), json!(["mentioned"]));
    assert_eq!(flags(&server.client(IAGO), id), json!([]));
    // Othello cannot see "core team": his link to it stays text.
    let id = send(
        &othello,
        &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "#**core team**")],
    );
    assert_eq!(get(&othello, id)["message"]["content"], "<p>#<strong>core team</strong></p>");
    // A silent mention and a mention in code set no flag.
    let id = send(
        &hamlet,
        &[
            ("type", "stream"),
            ("to", "Denmark"),
            ("topic", "t"),
            ("content", "@_**Othello, the Moor of Venice** `@**Othello, the Moor of Venice**`"),
        ],
    );
    assert_eq!(flags(&othello, id), json!([]));
    // In a direct message too.
    let id = send(
        &hamlet,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello_id}]")),
            ("content", &format!("@**Othello, the Moor of Venice|{othello_id}**")),
        ],
    );
    assert_eq!(flags(&othello, id), json!(["mentioned"]));
}

#[test]
fn wildcard_mentions_flag_the_channel_or_the_topic() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let cordelia = server.client(CORDELIA);
    // The general channel has 7 subscribers (at most 15: anyone may).
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "@**all** hear ye")],
    );
    assert_eq!(flags(&othello, id), json!(["stream_wildcard_mentioned", "wildcard_mentioned"]));
    assert_eq!(flags(&cordelia, id), json!(["stream_wildcard_mentioned", "wildcard_mentioned"]));
    // A topic wildcard reaches those who took part in the topic.
    send(
        &othello,
        &[("type", "stream"), ("to", "general"), ("topic", "plans"), ("content", "me first")],
    );
    let id = send(
        &hamlet,
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "plans"),
            ("content", "@**topic** ping"),
        ],
    );
    assert_eq!(flags(&othello, id), json!(["topic_wildcard_mentioned", "wildcard_mentioned"]));
    assert_eq!(flags(&cordelia, id), json!([]));
    // Silent wildcards notify nobody.
    let id = send(
        &hamlet,
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "@_**everyone**")],
    );
    assert_eq!(flags(&othello, id), json!([]));
}
