//! GET /messages (anchors, narrows, visibility, bad input), GET
//! /users/me/{stream_id}/topics, GET /users/me/subscriptions, GET /streams
//! and POST /messages/flags.

use serde_json::{json, Value};

use crate::util::{channel_id, user_id, Client, TestServer};

const DESDEMONA: &str = "desdemona@natter.test"; // owner; general, core team
const IAGO: &str = "iago@natter.test"; // administrator; general, Denmark, core team
const SHIVA: &str = "shiva@natter.test"; // moderator; general
const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; general only
const POLONIUS: &str = "polonius@natter.test"; // guest; general only
const BOT: &str = "helper-bot@natter.test"; // bot owned by desdemona; no channels
const KING: &str = "king@lear.test"; // owner of the other realm

/// Largest-id sentinel Zulip answers when nothing is unread.
const LARGER_THAN_MAX: u64 = 10_000_000_000_000_000;

fn send(c: &Client, params: &[(&str, &str)]) -> u64 {
    c.post("/messages", params).ok()["id"].as_u64().expect("message id")
}

/// A channel message that starts read for its sender.
fn post(c: &Client, channel: &str, topic: &str, content: &str) -> u64 {
    send(
        c,
        &[
            ("type", "stream"),
            ("to", channel),
            ("topic", topic),
            ("content", content),
            ("read_by_sender", "true"),
        ],
    )
}

fn dm(c: &Client, to: &str, content: &str) -> u64 {
    send(c, &[("type", "direct"), ("to", to), ("content", content), ("read_by_sender", "true")])
}

fn fetch(c: &Client, params: &[(&str, &str)]) -> Value {
    c.get("/messages", params).ok()
}

fn ids(reply: &Value) -> Vec<u64> {
    reply["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

/// Ids in `narrow` (JSON text) for `c`, newest window of 1000.
fn narrowed(c: &Client, narrow: &str) -> Vec<u64> {
    ids(&fetch(c, &[("anchor", "newest"), ("num_before", "1000"), ("narrow", narrow)]))
}

fn flags(c: &Client, op: &str, flag: &str, messages: &[u64]) -> Value {
    let list = serde_json::to_string(messages).unwrap();
    c.post("/messages/flags", &[("op", op), ("flag", flag), ("messages", &list)]).ok()
}

#[test]
fn every_anchor_form() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let narrow = r#"[["stream","Denmark"],["topic","anchors"]]"#;
    let m: Vec<u64> =
        (0..6).map(|i| post(&hamlet, "Denmark", "anchors", &format!("m{i}"))).collect();
    let get = |params: &[(&str, &str)]| {
        let mut all = vec![("narrow", narrow)];
        all.extend_from_slice(params);
        fetch(&othello, &all)
    };

    let r = get(&[("anchor", "newest"), ("num_before", "2"), ("num_after", "2")]);
    assert_eq!(ids(&r), m[4..]);
    assert_eq!(r["anchor"], LARGER_THAN_MAX);
    assert_eq!((r["found_newest"].clone(), r["found_oldest"].clone()), (json!(true), json!(false)));
    assert_eq!(r["found_anchor"], false);
    assert_eq!(r["history_limited"], false);

    let r = get(&[("anchor", "oldest"), ("num_before", "2"), ("num_after", "2")]);
    assert_eq!(ids(&r), m[..2]);
    assert_eq!(r["anchor"], 0);
    assert_eq!((r["found_newest"].clone(), r["found_oldest"].clone()), (json!(false), json!(true)));

    let a = m[3].to_string();
    let r = get(&[("anchor", &a), ("num_before", "1"), ("num_after", "1")]);
    assert_eq!(ids(&r), m[2..5]);
    assert_eq!(r["found_anchor"], true);
    assert_eq!(r["anchor"], m[3]);
    let r = get(&[
        ("anchor", &a),
        ("num_before", "1"),
        ("num_after", "1"),
        ("include_anchor", "false"),
    ]);
    assert_eq!(ids(&r), [m[2], m[4]]);
    assert_eq!(r["found_anchor"], false);
    // Everything: both ends found.
    let r = get(&[("anchor", &a), ("num_before", "10"), ("num_after", "10")]);
    assert_eq!(ids(&r), m);
    assert_eq!((r["found_newest"].clone(), r["found_oldest"].clone()), (json!(true), json!(true)));

    // zulip-term's search anchor: an integer above every id means newest.
    let r = get(&[("anchor", "10000000000"), ("num_before", "3"), ("num_after", "0")]);
    assert_eq!(ids(&r), m[3..]);
    assert_eq!(r["found_newest"], true);
    // A negative anchor is the oldest.
    assert_eq!(ids(&get(&[("anchor", "-5"), ("num_after", "1")])), m[..1]);

    // first_unread: everything is unread for othello; then mark some read.
    let r = get(&[("anchor", "first_unread"), ("num_before", "1"), ("num_after", "1")]);
    assert_eq!(r["anchor"], m[0]);
    assert_eq!(ids(&r), m[..2]);
    flags(&othello, "add", "read", &m[..3]);
    let r = get(&[("anchor", "first_unread"), ("num_before", "1"), ("num_after", "1")]);
    assert_eq!(r["anchor"], m[3]);
    assert_eq!(ids(&r), m[2..5]);
    let first = r["messages"][1].clone();
    assert_eq!(first["id"], m[3]);
    assert!(!first["flags"].as_array().unwrap().contains(&json!("read")));
    // zulip-term's start-up call: anchor=0 with use_first_unread_anchor.
    let r = get(&[
        ("anchor", "0"),
        ("use_first_unread_anchor", "true"),
        ("num_before", "30"),
        ("num_after", "10"),
    ]);
    assert_eq!(r["anchor"], m[3]);
    // Nothing unread: Zulip's sentinel, and the newest messages.
    flags(&othello, "add", "read", &m);
    let r = get(&[("anchor", "first_unread"), ("num_before", "2"), ("num_after", "2")]);
    assert_eq!(r["anchor"], LARGER_THAN_MAX);
    assert_eq!(ids(&r), m[4..]);
    assert_eq!(r["found_newest"], true);
}

#[test]
fn every_operator_and_negation_in_both_syntaxes() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let general = channel_id(&hamlet, "general");
    let othello_id = user_id(&server, OTHELLO);
    let hamlet_id = user_id(&server, HAMLET);
    let cordelia_id = user_id(&server, CORDELIA);

    let lunch = post(&othello, "Denmark", "Lunch", "soup at **noon**");
    let lunch2 = post(&hamlet, "Denmark", "lunch", "bread and Soup");
    let resolved = post(&othello, "Denmark", "✔ fixed", "see <https://example.com/page>");
    let image = post(&othello, "general", "pics", "![cat](https://example.com/cat.png)");
    let upload = post(&othello, "general", "files", "[doc](/user_uploads/1/ab/doc.pdf)");
    let direct = dm(&othello, &format!("[{hamlet_id}]"), "psst hamlet");
    let group = dm(&othello, &format!("[{hamlet_id}, {cordelia_id}]"), "hi both");
    let own = dm(&hamlet, &format!("[{hamlet_id}]"), "note to self");

    let check = |narrow: Value, want: &[u64]| {
        let got: Vec<u64> =
            narrowed(&hamlet, &narrow.to_string()).into_iter().filter(|id| *id >= lunch).collect();
        assert_eq!(got, want, "narrow {narrow}");
    };
    check(json!([]), &[lunch, lunch2, resolved, image, upload, direct, group, own]);
    check(json!([["stream", "Denmark"]]), &[lunch, lunch2, resolved]);
    check(json!([{"operator": "channel", "operand": "denmark"}]), &[lunch, lunch2, resolved]);
    check(json!([["channel", general]]), &[image, upload]);
    check(
        json!([{"operator": "stream", "operand": "Denmark", "negated": true}]),
        &[image, upload, direct, group, own],
    );
    check(json!([["stream", "Denmark"], ["topic", "LUNCH"]]), &[lunch, lunch2]);
    check(
        json!([{"operator": "topic", "operand": "lunch", "negated": true}, {"operator": "stream", "operand": "Denmark"}]),
        &[resolved],
    );
    // zulip-term's conversation narrow: emails joined by ", ", self left out.
    check(json!([["pm_with", OTHELLO]]), &[direct]);
    check(json!([["pm-with", format!("{OTHELLO}, {CORDELIA}")]]), &[group]);
    check(json!([{"operator": "dm", "operand": [othello_id, cordelia_id]}]), &[group]);
    check(json!([["dm", [hamlet_id]]]), &[own]);
    check(json!([["dm-including", cordelia_id]]), &[group]);
    check(json!([["dm-including", OTHELLO]]), &[direct, group]);
    check(json!([["sender", OTHELLO]]), &[lunch, resolved, image, upload, direct, group]);
    check(json!([{"operator": "sender", "operand": othello_id, "negated": true}]), &[lunch2, own]);
    check(json!([["is", "private"]]), &[direct, group, own]);
    check(
        json!([{"operator": "is", "operand": "dm", "negated": true}]),
        &[lunch, lunch2, resolved, image, upload],
    );
    check(json!([["is", "resolved"]]), &[resolved]);
    // Zulip renders an image as a link to it, so an image message has a link too.
    check(json!([["has", "link"]]), &[resolved, image, upload]);
    check(json!([["has", "image"]]), &[image]);
    check(json!([["has", "attachment"]]), &[upload]);
    check(json!([["id", lunch2]]), &[lunch2]);
    check(
        json!([{"operator": "id", "operand": lunch2.to_string(), "negated": true}, ["stream", "Denmark"]]),
        &[lunch, resolved],
    );
    check(json!([["stream", "Denmark"], ["near", lunch2]]), &[lunch, lunch2, resolved]);
    check(json!([["search", "SOUP"]]), &[lunch, lunch2]);
    check(json!([["search", "soup noon"]]), &[lunch]);
    check(json!([["search", "\"bread and\""]]), &[lunch2]);
    check(json!([["search", "fixed"]]), &[resolved]);
    check(
        json!([{"operator": "search", "operand": "soup", "negated": true}, ["stream", "Denmark"]]),
        &[resolved],
    );
    // Personal flags.
    check(json!([["is", "mentioned"]]), &[]);
    check(json!([["is", "starred"]]), &[]);
    flags(&hamlet, "add", "starred", &[lunch, group]);
    check(json!([["is", "starred"]]), &[lunch, group]);
    check(
        json!([{"operator": "is", "operand": "starred", "negated": true}, ["is", "dm"]]),
        &[direct, own],
    );
    // Hamlet's own sends start read; othello's are unread for him.
    check(json!([["is", "unread"]]), &[lunch, resolved, image, upload, direct, group]);
    flags(&hamlet, "add", "read", &[lunch, image]);
    check(json!([["is", "unread"], ["stream", "Denmark"]]), &[resolved]);
    check(json!([{"operator": "is", "operand": "unread", "negated": true}, ["is", "dm"]]), &[own]);
    // Combined: a topic narrow with a search and a sender.
    check(
        json!([["stream", "Denmark"], ["topic", "lunch"], ["sender", HAMLET], ["search", "soup"]]),
        &[lunch2],
    );
}

#[test]
fn private_channels_and_other_realms_never_leak() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA);
    let shiva = server.client(SHIVA);
    let king = server.client(KING).with_host("lear.localhost");
    let secret = post(&hamlet, "core team", "plans", "secret soup");
    let public = post(&hamlet, "general", "plans", "public soup");
    let court = post(&king, "general", "plans", "court soup");
    let core_team = channel_id(&server.client(IAGO), "core team");
    let lear_general = channel_id(&king, "general");

    // A member not subscribed to the private channel: not in any narrow,
    // and naming the channel is "unknown channel", by name or id.
    assert_eq!(narrowed(&cordelia, "[]").last(), Some(&public));
    assert!(!narrowed(&cordelia, r#"[["search","soup"]]"#).contains(&secret));
    for narrow in [r#"[["stream","core team"]]"#.to_owned(), format!(r#"[["stream",{core_team}]]"#)]
    {
        let e = cordelia
            .get("/messages", &[("anchor", "newest"), ("narrow", &narrow)])
            .err(400, "BAD_NARROW");
        assert!(e["msg"].as_str().unwrap().contains("narrow"));
    }
    assert_eq!(narrowed(&cordelia, &format!(r#"[["id",{secret}]]"#)), Vec::<u64>::new());
    // A moderator is no better off; a subscriber sees it.
    assert!(narrowed(&shiva, "[]").iter().all(|id| *id != secret));
    assert_eq!(narrowed(&hamlet, r#"[["stream","core team"],["topic","plans"]]"#), [secret]);
    // An administrator who is subscribed reads it too.
    assert_eq!(narrowed(&server.client(IAGO), r#"[["stream","core team"]]"#).last(), Some(&secret));

    // Another realm: its channel and messages do not exist for us, ours
    // not for it, whatever the narrow.
    let e = hamlet
        .get(
            "/messages",
            &[("anchor", "newest"), ("narrow", &format!(r#"[["stream",{lear_general}]]"#))],
        )
        .err(400, "BAD_NARROW");
    assert_eq!(e["var_name"], "narrow");
    assert_eq!(narrowed(&hamlet, &format!(r#"[["id",{court}]]"#)), Vec::<u64>::new());
    hamlet
        .get("/messages", &[("anchor", "newest"), ("narrow", &format!(r#"[["dm","{KING}"]]"#))])
        .err(400, "BAD_NARROW");
    assert!(!narrowed(&hamlet, r#"[["search","court"]]"#).contains(&court));
    assert_eq!(narrowed(&king, r#"[["search","soup"]]"#), [court]);
    assert_eq!(narrowed(&king, &format!(r#"[["id",{public}]]"#)), Vec::<u64>::new());
    assert_eq!(
        server.client(KING).with_host("lear.localhost").get("/users/me/0/topics", &[]).status,
        400
    );
}

#[test]
fn channel_history_is_readable_and_flaggable_by_non_subscribers() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA); // not in Denmark
    let polonius = server.client(POLONIUS); // guest, not in Denmark
    let m = post(&hamlet, "Denmark", "history", "old news");
    let r = fetch(
        &cordelia,
        &[("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["stream","Denmark"]]"#)],
    );
    let message = r["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(message["id"], m);
    assert_eq!(message["flags"], json!(["read", "historical"]));
    // Not in the combined feed: it was never delivered to her.
    assert!(!narrowed(&cordelia, "[]").contains(&m));
    // Starring a historical message gives her an entry, still historical.
    flags(&cordelia, "add", "starred", &[m]);
    let r =
        fetch(&cordelia, &[("anchor", &m.to_string()), ("narrow", r#"[["stream","Denmark"]]"#)]);
    let mut got: Vec<String> = r["messages"][0]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    got.sort();
    assert_eq!(got, ["historical", "read", "starred"]);
    assert_eq!(narrowed(&cordelia, r#"[["is","starred"]]"#), [m]);
    // A guest may not read channels he is not in: unknown channel, and the
    // message is invalid for flags.
    polonius
        .get("/messages", &[("anchor", "newest"), ("narrow", r#"[["stream","Denmark"]]"#)])
        .err(400, "BAD_NARROW");
    let list = format!("[{m}]");
    let e = polonius
        .post("/messages/flags", &[("op", "add"), ("flag", "starred"), ("messages", &list)])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
    // Marking a message of an unsubscribed channel unread is skipped.
    let denmark = channel_id(&hamlet, "Denmark");
    let r = cordelia
        .post("/messages/flags", &[("op", "remove"), ("flag", "read"), ("messages", &list)])
        .ok();
    assert_eq!(r["messages"], json!([]));
    assert_eq!(r["ignored_because_not_subscribed_channels"], json!([denmark]));
}

#[test]
fn bad_requests_name_their_parameter() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let bad = |params: &[(&str, &str)], code: &str| -> Value {
        hamlet.get("/messages", params).err(400, code)
    };
    let e = bad(&[("anchor", "sideways")], "BAD_REQUEST");
    assert_eq!(e["var_name"], "anchor");
    let e = bad(&[("num_before", "1")], "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "anchor");
    let e = bad(&[("anchor", "newest"), ("num_before", "-1")], "BAD_REQUEST");
    assert_eq!(e["var_name"], "num_before");
    let e = bad(&[("anchor", "newest"), ("num_after", "x")], "BAD_REQUEST");
    assert_eq!(e["var_name"], "num_after");
    let e =
        bad(&[("anchor", "newest"), ("num_before", "4000"), ("num_after", "1001")], "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("5000"));
    let e = bad(&[("anchor", "newest"), ("narrow", "[[\"stream\"")], "INVALID_JSON");
    assert_eq!(e["var_name"], "narrow");
    for narrow in [
        r#"{"stream":"general"}"#,
        r#"[["stream"]]"#,
        r#"[{"operand":"x"}]"#,
        r#"[{"operator":"is","operand":"unread","negated":"no"}]"#,
    ] {
        let e = bad(&[("anchor", "newest"), ("narrow", narrow)], "BAD_REQUEST");
        assert_eq!(e["var_name"], "narrow", "{narrow}");
    }
    for narrow in [
        r#"[["bogus","x"]]"#,
        r#"[["is","nothing"]]"#,
        r#"[["has","nothing"]]"#,
        r#"[["stream","nope"]]"#,
        r#"[["sender","nobody@natter.test"]]"#,
        r#"[["id","abc"]]"#,
        r#"[["dm",[]]]"#,
    ] {
        let e = bad(&[("anchor", "newest"), ("narrow", narrow)], "BAD_NARROW");
        assert_eq!(e["var_name"], "narrow", "{narrow}");
    }
    let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
    bad(&[("anchor", "newest"), ("narrow", &deep)], "BAD_REQUEST");
    let many = format!("[{}]", vec![r#"["is","unread"]"#; 40].join(","));
    bad(&[("anchor", "newest"), ("narrow", &many)], "BAD_REQUEST");
    let e = bad(&[("anchor", "newest"), ("apply_markdown", "maybe")], "BAD_REQUEST");
    assert_eq!(e["var_name"], "apply_markdown");
    // At the limit it works; Markdown source on request.
    let m = post(&hamlet, "general", "md", "**bold**");
    let r = fetch(
        &hamlet,
        &[("anchor", "newest"), ("num_before", "5000"), ("apply_markdown", "false")],
    );
    let last = r["messages"].as_array().unwrap().last().unwrap();
    assert_eq!((last["id"].as_u64(), last["content"].as_str()), (Some(m), Some("**bold**")));
    assert_eq!(last["content_type"], "text/x-markdown");
    // message_ids: exactly those the caller may read, no anchor fields.
    let secret = post(&hamlet, "core team", "x", "secret");
    let list = format!("[{secret}, {m}, 999999, {m}]");
    let r = fetch(&server.client(CORDELIA), &[("message_ids", &list)]);
    assert_eq!(ids(&r), [m]);
    assert!(r.get("anchor").is_none() && r.get("found_newest").is_none());
    assert_eq!(ids(&fetch(&hamlet, &[("message_ids", &list)])), [m, secret]);
    let r = fetch(&hamlet, &[("message_ids", &list), ("narrow", r#"[["stream","general"]]"#)]);
    assert_eq!(ids(&r), [m]);
    let e = bad(&[("message_ids", &list), ("anchor", "newest")], "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("message_ids"));
    let e = bad(&[("message_ids", "[\"x\"]")], "BAD_REQUEST");
    assert_eq!(e["var_name"], "message_ids");
    // Unauthenticated: refused.
    server.anonymous().get("/messages", &[("anchor", "newest")]).err(401, "UNAUTHORIZED");
}

#[test]
fn topics_most_recent_first_for_readers_only() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA);
    let a = post(&hamlet, "Denmark", "alpha", "1");
    let b = post(&hamlet, "Denmark", "beta", "2");
    let a2 = post(&hamlet, "Denmark", "Alpha", "3");
    let denmark = channel_id(&hamlet, "Denmark");
    let core_team = channel_id(&hamlet, "core team");
    let path = format!("/users/me/{denmark}/topics");
    let r = hamlet.get(&path, &[]).ok();
    assert_eq!(
        r["topics"],
        json!([{"name": "Alpha", "max_id": a2}, {"name": "beta", "max_id": b}])
    );
    assert!(a < b);
    // A member outside a public channel reads its history, so its topics.
    assert_eq!(cordelia.get(&path, &[]).ok()["topics"], r["topics"]);
    // A private channel she is not in does not exist for her.
    post(&hamlet, "core team", "plans", "x");
    let e = cordelia
        .get(&format!("/users/me/{core_team}/topics"), &[])
        .err(400, "STREAM_DOES_NOT_EXIST");
    assert_eq!(e["stream_id"], core_team);
    assert_eq!(
        hamlet.get(&format!("/users/me/{core_team}/topics"), &[]).ok()["topics"][0]["name"],
        "plans"
    );
    hamlet.get("/users/me/999999/topics", &[]).err(400, "STREAM_DOES_NOT_EXIST");
    hamlet.get("/users/me/abc/topics", &[]).err(400, "BAD_REQUEST");
    // The seed's welcome message: the empty-topic display name is not used
    // for a named topic.
    let general = channel_id(&hamlet, "general");
    let r = hamlet.get(&format!("/users/me/{general}/topics"), &[]).ok();
    assert_eq!(r["topics"][0]["name"], "welcome");
}

#[test]
fn subscriptions_and_streams_with_their_options() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let names = |r: &Value, key: &str| -> Vec<String> {
        r[key].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect()
    };

    let r = hamlet.get("/users/me/subscriptions", &[]).ok();
    assert_eq!(names(&r, "subscriptions"), ["core team", "Denmark", "general"]);
    let core = &r["subscriptions"][0];
    for key in [
        "stream_id",
        "name",
        "description",
        "rendered_description",
        "date_created",
        "creator_id",
        "invite_only",
        "desktop_notifications",
        "email_notifications",
        "wildcard_mentions_notify",
        "push_notifications",
        "audible_notifications",
        "pin_to_top",
        "is_muted",
        "in_home_view",
        "is_announcement_only",
        "is_web_public",
        "color",
        "stream_post_policy",
        "message_retention_days",
        "history_public_to_subscribers",
        "first_message_id",
        "folder_id",
        "topics_policy",
        "is_recently_active",
        "stream_weekly_traffic",
        "email_address",
        "can_add_subscribers_group",
        "can_remove_subscribers_group",
        "can_administer_channel_group",
        "can_send_message_group",
    ] {
        assert!(core.get(key).is_some(), "subscription lacks {key}: {core}");
    }
    assert_eq!(core["invite_only"], true);
    assert_eq!(core["in_home_view"], true);
    assert_eq!(core["is_muted"], false);
    assert_eq!(core["stream_post_policy"], 1);
    assert_eq!(core["email_address"], "");
    assert_eq!(core["rendered_description"], "<p>A <strong>private</strong> channel.</p>");
    let color = core["color"].as_str().unwrap();
    assert!(
        color.len() == 7
            && color.starts_with('#')
            && color[1..].chars().all(|c| c.is_ascii_hexdigit())
    );
    assert!(core.get("subscribers").is_none());
    let r = hamlet.get("/users/me/subscriptions", &[("include_subscribers", "true")]).ok();
    let mut subs: Vec<u64> =
        serde_json::from_value(r["subscriptions"][0]["subscribers"].clone()).unwrap();
    subs.sort();
    let mut want =
        vec![user_id(&server, DESDEMONA), user_id(&server, IAGO), user_id(&server, HAMLET)];
    want.sort();
    assert_eq!(subs, want);
    hamlet
        .get("/users/me/subscriptions", &[("include_subscribers", "sometimes")])
        .err(400, "BAD_REQUEST");
    assert_eq!(
        names(&server.client(BOT).get("/users/me/subscriptions", &[]).ok(), "subscriptions"),
        Vec::<String>::new()
    );

    let streams = |who: &str, params: &[(&str, &str)]| {
        names(&server.client(who).get("/streams", params).ok(), "streams")
    };
    // Defaults: public channels plus subscribed ones.
    assert_eq!(streams(HAMLET, &[]), ["core team", "Denmark", "general"]);
    assert_eq!(streams(CORDELIA, &[]), ["Denmark", "general"]);
    assert_eq!(streams(POLONIUS, &[]), ["general"], "a guest sees only his channels");
    assert_eq!(streams(CORDELIA, &[("include_public", "false")]), ["general"]);
    assert_eq!(
        streams(HAMLET, &[("include_public", "false"), ("include_subscribed", "false")]),
        Vec::<String>::new()
    );
    assert_eq!(
        streams(
            CORDELIA,
            &[
                ("include_public", "false"),
                ("include_subscribed", "false"),
                ("include_default", "true")
            ]
        ),
        ["Denmark", "general"]
    );
    assert_eq!(
        streams(CORDELIA, &[("include_public", "false"), ("include_can_access_content", "true")]),
        ["Denmark", "general"]
    );
    assert_eq!(
        streams(CORDELIA, &[("include_web_public", "true"), ("include_public", "false")]),
        ["general"]
    );
    // include_all: everything the caller may know about; administrators
    // know private channels.
    assert_eq!(streams(SHIVA, &[("include_all", "true")]), ["Denmark", "general"]);
    assert_eq!(streams(DESDEMONA, &[("include_all", "true")]), ["core team", "Denmark", "general"]);
    assert_eq!(
        streams(IAGO, &[("include_all_active", "true")]),
        ["core team", "Denmark", "general"]
    );
    let e = server
        .client(CORDELIA)
        .get("/streams", &[("include_all_active", "true")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "User not authorized for this query");
    server
        .client(CORDELIA)
        .get("/streams", &[("include_public", "perhaps")])
        .err(400, "BAD_REQUEST");
    // A bot may list its owner's channels it may know about.
    assert_eq!(
        streams(BOT, &[("include_public", "false"), ("include_owner_subscribed", "true")]),
        ["general"]
    );
    let general = &server.client(HAMLET).get("/streams", &[]).ok()["streams"][2];
    assert_eq!(general["name"], "general");
    assert_eq!(general["is_default"], true);
    assert!(general.get("color").is_none() && general.get("subscribers").is_none());
    // The other realm lists its own channels only.
    let lear = server
        .client(KING)
        .with_host("lear.localhost")
        .get("/streams", &[("include_all", "true")])
        .ok();
    assert_eq!(names(&lear, "streams"), ["general"]);
    assert_ne!(lear["streams"][0]["stream_id"], general["stream_id"]);
}

#[test]
fn flags_add_remove_and_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let m1 = post(&othello, "Denmark", "f", "one");
    let m2 = post(&othello, "Denmark", "f", "two");
    let secret = post(&hamlet, "core team", "f", "secret");
    let court = post(&server.client(KING).with_host("lear.localhost"), "general", "f", "court");
    let flags_of = |id: u64| -> Vec<Value> {
        let r = hamlet.get(&format!("/messages/{id}"), &[]).ok();
        r["message"]["flags"].as_array().unwrap().clone()
    };
    assert_eq!(flags_of(m1), Vec::<Value>::new());

    let r = flags(&hamlet, "add", "read", &[m1, m2, m1]);
    assert_eq!(r["messages"], json!([m1, m2]));
    assert_eq!(flags_of(m1), [json!("read")]);
    flags(&hamlet, "add", "starred", &[m2]);
    assert_eq!(flags_of(m2), [json!("read"), json!("starred")]);
    flags(&hamlet, "remove", "read", &[m2]);
    assert_eq!(flags_of(m2), [json!("starred")]);
    flags(&hamlet, "add", "collapsed", &[m2]);
    flags(&hamlet, "remove", "starred", &[m2]);
    assert_eq!(flags_of(m2), [json!("collapsed")]);
    // Idempotent, and an empty list is fine.
    flags(&hamlet, "remove", "starred", &[m2]);
    assert_eq!(flags(&hamlet, "add", "read", &[])["messages"], json!([]));
    // zulip-term sends the list as JSON text; bare single ids are refused.
    let post_flags = |who: &Client, params: &[(&str, &str)]| who.post("/messages/flags", params);
    let refused = |params: &[(&str, &str)], code: &str| post_flags(&hamlet, params).err(400, code);
    let list = format!("[{m1}]");
    assert_eq!(
        refused(&[("op", "toggle"), ("flag", "read"), ("messages", &list)], "BAD_REQUEST")["msg"],
        "Invalid message flag operation: 'toggle'"
    );
    assert_eq!(
        refused(&[("op", "add"), ("flag", "shiny"), ("messages", &list)], "BAD_REQUEST")["msg"],
        "Invalid flag: 'shiny'"
    );
    for flag in ["mentioned", "wildcard_mentioned", "has_alert_word", "historical"] {
        let e = refused(&[("op", "add"), ("flag", flag), ("messages", &list)], "BAD_REQUEST");
        assert_eq!(e["msg"], format!("Flag not editable: '{flag}'"));
    }
    refused(&[("flag", "read"), ("messages", &list)], "REQUEST_VARIABLE_MISSING");
    refused(&[("op", "add"), ("messages", &list)], "REQUEST_VARIABLE_MISSING");
    refused(&[("op", "add"), ("flag", "read")], "REQUEST_VARIABLE_MISSING");
    refused(&[("op", "add"), ("flag", "read"), ("messages", "[\"a\"]")], "BAD_REQUEST");
    refused(&[("op", "add"), ("flag", "read"), ("messages", "{\"a\":1}")], "BAD_REQUEST");
    refused(&[("op", "add"), ("flag", "read"), ("messages", "[1,")], "INVALID_JSON");
    // Messages the caller may not see: nothing changes, not even the others.
    let cordelia = server.client(CORDELIA);
    for hidden in [secret, court, 999_999] {
        let list = format!("[{m1}, {hidden}]");
        let e = post_flags(&cordelia, &[("op", "add"), ("flag", "starred"), ("messages", &list)])
            .err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid message(s)");
    }
    let r = cordelia.get(&format!("/messages/{m1}"), &[]).ok();
    assert!(!r["message"]["flags"].as_array().unwrap().contains(&json!("starred")));
    // Flags survive a restart (they are logged).
    let mut server = server;
    server.stop();
    server.restart();
    let hamlet = server.client(HAMLET);
    let r = hamlet.get(&format!("/messages/{m2}"), &[]).ok();
    assert_eq!(r["message"]["flags"], json!(["collapsed"]));
    assert_eq!(narrowed(&hamlet, r#"[["is","starred"]]"#), Vec::<u64>::new());
}

#[test]
fn search_hits_are_highlighted_and_matches_narrow_checks_ids() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let soup = post(&othello, "Denmark", "Soup <plans>", "hot **soup** today");
    let bread = post(&othello, "Denmark", "bread", "just bread");
    let secret = post(&hamlet, "core team", "soup", "secret soup");

    let r = fetch(
        &hamlet,
        &[("anchor", "newest"), ("num_before", "10"), ("narrow", r#"[["search","soup"]]"#)],
    );
    assert_eq!(ids(&r), [soup, secret]);
    let first = &r["messages"][0];
    assert_eq!(
        first["match_content"],
        r#"<p>hot <strong><span class="highlight">soup</span></strong> today</p>"#
    );
    assert_eq!(first["match_subject"], r#"<span class="highlight">Soup</span> &lt;plans&gt;"#);
    // No search term, no match fields.
    let r = fetch(
        &hamlet,
        &[("anchor", "newest"), ("num_before", "10"), ("narrow", r#"[["stream","Denmark"]]"#)],
    );
    assert!(r["messages"][0].get("match_content").is_none());

    let list = format!("[{soup}, {bread}, {secret}, 999999]");
    let check = |who: &Client, narrow: &str| -> Value {
        who.get("/messages/matches_narrow", &[("msg_ids", &list), ("narrow", narrow)]).ok()
            ["messages"]
            .clone()
    };
    let got = check(&hamlet, r#"[{"operator":"search","operand":"soup"}]"#);
    let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "{got}");
    assert_eq!(
        got[soup.to_string()]["match_subject"],
        r#"<span class="highlight">Soup</span> &lt;plans&gt;"#
    );
    assert!(got.get(secret.to_string()).is_some());
    let got = check(&hamlet, r#"[["has","link"]]"#);
    assert_eq!(got, json!({}));
    let got = check(&hamlet, r#"[["stream","Denmark"]]"#);
    assert_eq!(got[bread.to_string()]["match_content"], "<p>just bread</p>");
    assert_eq!(got[bread.to_string()]["match_subject"], "bread");
    // Cordelia never received these (and may not read core team at all).
    assert_eq!(check(&server.client(CORDELIA), r#"[["search","soup"]]"#), json!({}));
    let e = hamlet
        .get("/messages/matches_narrow", &[("msg_ids", &list)])
        .err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "narrow");
    hamlet
        .get("/messages/matches_narrow", &[("narrow", "[]")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    hamlet
        .get("/messages/matches_narrow", &[("msg_ids", "5"), ("narrow", "[]")])
        .err(400, "BAD_REQUEST");
    hamlet
        .get("/messages/matches_narrow", &[("msg_ids", &list), ("narrow", r#"[["bogus","x"]]"#)])
        .err(400, "BAD_NARROW");
}

/// `with:<id>`: the narrow follows the message to wherever it lives now;
/// a message the caller cannot read (or that does not exist) leaves the
/// narrow as given, and bad `with` terms are refused.
#[test]
fn with_follows_a_message_to_its_current_conversation() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let first = post(&hamlet, "Denmark", "old place", "one");
    let second = post(&hamlet, "Denmark", "old place", "two");
    let patch = [("topic", "new place"), ("propagate_mode", "change_all")];
    hamlet.request("PATCH", &format!("/messages/{first}"), &patch).ok();
    let old = r#"[["channel","Denmark"],["topic","old place"]]"#;
    assert_eq!(narrowed(&hamlet, old), Vec::<u64>::new());
    let with = format!(
        r#"[{{"operator":"channel","operand":"Denmark"}},{{"operator":"topic","operand":"old place"}},{{"operator":"with","operand":{first}}}]"#
    );
    // Both messages, then the Notification Bot's notice of the move.
    let followed = narrowed(&hamlet, &with);
    assert_eq!((&followed[..2], followed.len()), (&[first, second][..], 3));
    // A stale channel name is replaced too, and other terms still filter.
    let renamed =
        format!(r#"[["channel","no such channel"],["with","{second}"],["sender","{OTHELLO}"]]"#);
    assert_eq!(narrowed(&hamlet, &renamed), Vec::<u64>::new());

    // A direct message: the narrow becomes its conversation.
    let private = dm(&hamlet, &format!("[\"{OTHELLO}\"]"), "between us");
    let othello = server.client(OTHELLO);
    let to_dm = format!(r#"[["channel","general"],["with",{private}]]"#);
    assert_eq!(narrowed(&othello, &to_dm), vec![private]);

    // Cordelia cannot read the DM: the narrow stays as given.
    let cordelia = server.client(CORDELIA);
    let general = post(&cordelia, "general", "hi", "visible");
    assert!(narrowed(&cordelia, &to_dm).contains(&general));
    assert!(!narrowed(&cordelia, &to_dm).contains(&private));
    // A private channel's message the caller does not see: no leak.
    let secret = post(&hamlet, "core team", "secret", "hidden");
    let probe = format!(r#"[["channel","general"],["with",{secret}]]"#);
    let seen = narrowed(&cordelia, &probe);
    assert!(seen.contains(&general) && !seen.contains(&secret));
    // No such message: unchanged.
    let missing = r#"[["channel","general"],["with",999999]]"#;
    assert!(narrowed(&cordelia, missing).contains(&general));

    // Refusals.
    let twice = format!(r#"[["with",{first}],["with",{second}]]"#);
    let e = hamlet
        .get("/messages", &[("anchor", "newest"), ("num_before", "5"), ("narrow", &twice)])
        .err(400, "BAD_NARROW");
    assert_eq!(e["msg"], "Invalid narrow operator combination: Duplicate 'with' operators.");
    let not_an_id = r#"[["with","the first one"]]"#;
    hamlet
        .get("/messages", &[("anchor", "newest"), ("num_before", "5"), ("narrow", not_an_id)])
        .err(400, "BAD_NARROW");
}

/// `search` by English stem, by the current text only (an edit drops the
/// old words), within what the caller may read — before and after a crash,
/// when the word index is rebuilt from the recovered messages.
#[test]
fn search_finds_stems_of_the_current_text_through_a_crash() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let late = post(&hamlet, "general", "plans", "We are running late");
    let secret = post(&hamlet, "core team", "plans", "running in secret");
    let search = |c: &Client, words: &str| {
        let narrow = json!([["search", words]]).to_string();
        fetch(c, &[("anchor", "newest"), ("num_before", "10"), ("narrow", &narrow)])
    };
    let cordelia = server.client(CORDELIA);
    assert_eq!(ids(&search(&cordelia, "RUNS")), [late], "a stem; never the private channel");
    assert_eq!(ids(&search(&hamlet, "run")), [late, secret]);
    hamlet.request("PATCH", &format!("/messages/{late}"), &[("content", "We walked home")]).ok();
    assert!(ids(&search(&cordelia, "running")).is_empty(), "the old text is not found");
    let walked = search(&cordelia, "walking");
    assert_eq!(ids(&walked), [late]);
    assert_eq!(
        walked["messages"][0]["match_content"],
        r#"<p>We <span class="highlight">walked</span> home</p>"#
    );

    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA);
    assert_eq!(ids(&search(&cordelia, "walk")), [late]);
    assert!(ids(&search(&cordelia, "run")).is_empty());
    // A phrase is its words in order; stop words ("in") are not searched.
    assert_eq!(ids(&search(&hamlet, "\"run in secret\"")), [secret], "a phrase");
    assert!(ids(&search(&hamlet, "\"secret in run\"")).is_empty());
    assert!(ids(&search(&hamlet, "in")).is_empty(), "only a stop word: nothing");
}
