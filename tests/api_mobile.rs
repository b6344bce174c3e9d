//! What the official mobile app needs to load an account: register's
//! fields it requires (`streams`, `realm_wildcard_mention_policy`,
//! `realm_enable_read_receipts`, `realm_default_external_accounts`,
//! `server_emoji_data_url`) and the emoji data document it then fetches.

use serde_json::{json, Value};

use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const POLONIUS: &str = "polonius@natter.test"; // guest; general only

#[test]
fn register_carries_the_fields_the_mobile_app_requires() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let r = hamlet.post("/register", &[]).ok();
    assert_eq!(r["realm_wildcard_mention_policy"], json!(5), "administrators, Zulip's default");
    assert_eq!(r["realm_enable_read_receipts"], json!(true));
    assert_eq!(
        r["realm_default_external_accounts"]["github"],
        json!({"name": "GitHub username", "text": "GitHub", "hint": "",
               "url_pattern": "https://github.com/%(username)s"})
    );
    assert!(r["realm_default_external_accounts"]["twitter"].is_object());
    let url = r["server_emoji_data_url"].as_str().unwrap();
    assert!(url.starts_with(r["realm_url"].as_str().unwrap()), "{url}");
    // `streams`: every channel the caller may know about, without
    // subscriber lists; a guest sees only what is theirs.
    let names = |r: &Value| -> Vec<String> {
        r["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().into())
            .collect()
    };
    let all = names(&r);
    assert!(all.contains(&"general".to_owned()) && all.contains(&"Denmark".to_owned()), "{all:?}");
    assert!(r["streams"][0].get("subscribers").is_none());
    let guest = server.client(POLONIUS).post("/register", &[]).ok();
    assert_eq!(names(&guest), ["general"]);
    // Only with the `stream` section.
    let r = hamlet.post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert!(r.get("streams").is_none() && r.get("server_emoji_data_url").is_some());
    let r = hamlet.post("/register", &[("fetch_event_types", r#"["stream"]"#)]).ok();
    assert_eq!(names(&r), all);
}

#[test]
fn the_emoji_data_document_is_served_without_credentials() {
    let server = TestServer::start();
    let r = server.client(HAMLET).post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    let url = r["server_emoji_data_url"].as_str().unwrap();
    let path = &url[url.find("/static/").expect("a path under /static/")..];
    let anonymous = server.anonymous();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", anonymous.addr);
    let doc = anonymous.raw(request.as_bytes());
    assert_eq!(doc.status, 200, "{}", doc.body);
    // The document itself, not a success envelope.
    assert!(doc.json.get("result").is_none());
    let names = &doc.json["code_to_names"];
    assert_eq!(names["1f44d"], json!(["+1", "thumbs_up", "like"]));
    assert_eq!(names["1f642"][0], "smile");
    // Names from Zulip's own table, aliases after the canonical name.
    assert_eq!(names["1fabf"], json!(["goose", "fowl", "honk", "silly"]));
    assert_eq!(names["1f1f9-1f1f7"], json!(["flag_türkiye", "flag_turkiye"]));
    assert!(names.as_object().unwrap().len() > 1000);
    // Another method on that path is not a document.
    let post =
        format!("POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n", anonymous.addr);
    assert_eq!(anonymous.raw(post.as_bytes()).status, 404);
}

#[test]
fn render_previews_a_message_as_the_caller_would_send_it() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello_id = crate::util::user_id(&server, "othello@natter.test");
    let content = "**bold** @**Othello, the Moor of Venice** #**core team** :smile:";
    let r = hamlet.post("/messages/render", &[("content", content)]).ok();
    let html = r["rendered"].as_str().unwrap();
    assert!(html.starts_with("<p><strong>bold</strong>"), "{html}");
    assert!(html.contains(&format!("data-user-id=\"{othello_id}\"")), "{html}");
    assert!(html.contains(">#core team</a>") && html.contains("emoji-1f642"), "{html}");
    // Rendered for the caller: a channel Othello cannot see stays text.
    let r = server
        .client("othello@natter.test")
        .post("/messages/render", &[("content", "#**core team**")]);
    assert_eq!(r.ok()["rendered"], "<p>#<strong>core team</strong></p>");
    // Nothing is sent.
    let newest = hamlet
        .get("/messages", &[("anchor", "newest"), ("num_before", "1"), ("num_after", "0")])
        .ok();
    assert!(!newest["messages"][0]["content"].as_str().unwrap().contains("bold"));
    // Empty content renders as nothing; content is required; NUL refused.
    assert_eq!(hamlet.post("/messages/render", &[("content", "  ")]).ok()["rendered"], "");
    let e = hamlet.post("/messages/render", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "content");
    hamlet.post("/messages/render", &[("content", "a\0b")]).err(400, "BAD_REQUEST");
    // Credentials are needed.
    server.anonymous().post("/messages/render", &[("content", "x")]).err(401, "UNAUTHORIZED");
}

#[test]
fn a_literal_path_is_never_taken_for_an_id() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    // `/messages/render` and `/messages/flags` are not message ids.
    for (method, path) in
        [("GET", "/messages/render"), ("PATCH", "/messages/render"), ("GET", "/messages/flags")]
    {
        let r = hamlet.request(method, path, &[]);
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
        assert_eq!(r.json["result"], "error");
    }
}

#[test]
fn read_receipts_list_who_read_a_message_and_shares_it() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client("othello@natter.test");
    let iago = server.client("iago@natter.test");
    let cordelia = server.client("cordelia@natter.test");
    let polonius = server.client(POLONIUS);
    let id_of = |email: &str| crate::util::user_id(&server, email);
    let sent = othello
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "r"), ("content", "read me")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let path = format!("/messages/{sent}/read_receipts");
    let read = |c: &crate::util::Client| {
        c.post(
            "/messages/flags",
            &[("messages", &format!("[{sent}]")), ("op", "add"), ("flag", "read")],
        )
        .ok();
    };
    let receipts = |c: &crate::util::Client| -> Vec<u64> {
        let r = c.get(&path, &[]).ok();
        r["user_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
    };
    // Nobody but the sender has read it, and the sender is never listed.
    assert_eq!(receipts(&hamlet), Vec::<u64>::new());
    for c in [&hamlet, &iago, &cordelia, &polonius] {
        read(c);
    }
    let mut all = vec![
        id_of(HAMLET),
        id_of("iago@natter.test"),
        id_of("cordelia@natter.test"),
        id_of(POLONIUS),
    ];
    all.sort();
    assert_eq!(receipts(&hamlet), all);
    // A user who does not share read receipts is left out.
    polonius.request("PATCH", "/settings", &[("send_read_receipts", "false")]).ok();
    all.retain(|u| *u != id_of(POLONIUS));
    assert_eq!(receipts(&hamlet), all);
    // Users the caller muted, and users who muted the caller, are left out
    // for the caller only.
    hamlet.post(&format!("/users/me/muted_users/{}", id_of("iago@natter.test")), &[]).ok();
    cordelia.post(&format!("/users/me/muted_users/{}", id_of(HAMLET)), &[]).ok();
    assert_eq!(receipts(&hamlet), vec![id_of(HAMLET)]);
    assert_eq!(receipts(&othello), all);
}

#[test]
fn read_receipts_refuse_messages_the_caller_cannot_see() {
    let server = TestServer::start();
    let iago = server.client("iago@natter.test");
    let othello = server.client("othello@natter.test");
    // "core team" is private: Othello is not in it.
    let hidden = iago
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "r"), ("content", "secret")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let e = othello.get(&format!("/messages/{hidden}/read_receipts"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
    othello.get("/messages/999999/read_receipts", &[]).err(400, "BAD_REQUEST");
    othello.get("/messages/abc/read_receipts", &[]).err(400, "BAD_REQUEST");
    server
        .anonymous()
        .get(&format!("/messages/{hidden}/read_receipts"), &[])
        .err(401, "UNAUTHORIZED");
    // The members of the channel may ask.
    iago.get(&format!("/messages/{hidden}/read_receipts"), &[]).ok();
}

#[test]
fn presence_of_the_realm_and_of_one_user() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client("othello@natter.test");
    let hamlet_id = crate::util::user_id(&server, HAMLET);
    hamlet.post("/users/me/presence", &[("status", "active")]).ok();
    // The realm's presences, in the legacy email-keyed form.
    let r = othello.get("/realm/presence", &[]).ok();
    let presences = r["presences"].as_object().unwrap();
    assert_eq!(presences.keys().collect::<Vec<_>>(), [HAMLET], "only users seen");
    assert_eq!(presences[HAMLET]["aggregated"]["status"], "active");
    assert!(r["server_timestamp"].as_i64().unwrap() > 0);
    // One user, by id or by email.
    for key in [hamlet_id.to_string(), HAMLET.to_owned()] {
        let p = othello.get(&format!("/users/{key}/presence"), &[]).ok();
        assert_eq!(p["presence"]["aggregated"]["status"], "active", "{p}");
        assert_eq!(p["presence"]["website"]["status"], "active", "{p}");
        assert!(p["presence"]["website"].get("client").is_none(), "{p}");
    }
    // Refusals: never seen, a bot, nobody, another realm's user, a
    // deactivated user.
    let e = othello.get("/users/cordelia@natter.test/presence", &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No presence data for cordelia@natter.test");
    let bot = crate::util::user_id(&server, "helper-bot@natter.test");
    let e = othello.get(&format!("/users/{bot}/presence"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Presence is not supported for bot users.");
    for nobody in ["999999", "nobody@natter.test", "king@lear.test"] {
        let e = othello.get(&format!("/users/{nobody}/presence"), &[]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "No such user", "{nobody}");
    }
    let iago = server.client("iago@natter.test");
    iago.request("DELETE", &format!("/users/{hamlet_id}"), &[]).ok();
    let e = othello.get(&format!("/users/{hamlet_id}/presence"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
    assert_eq!(othello.get("/realm/presence", &[]).ok()["presences"], json!({}));
    server.anonymous().get("/realm/presence", &[]).err(401, "UNAUTHORIZED");
}

#[test]
fn group_membership_of_one_user() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let id = |email: &str| crate::util::user_id(&server, email);
    let create = |name: &str, members: &[u64]| -> u64 {
        hamlet
            .post(
                "/user_groups/create",
                &[("name", name), ("description", "d"), ("members", &json!(members).to_string())],
            )
            .ok()["group_id"]
            .as_u64()
            .unwrap()
    };
    let inner = create("inner", &[id("othello@natter.test")]);
    let outer = create("outer", &[id(HAMLET)]);
    hamlet.post(&format!("/user_groups/{outer}/subgroups"), &[("add", &format!("[{inner}]"))]).ok();
    let member = |group: u64, user: u64, direct: &str| -> Value {
        hamlet
            .get(&format!("/user_groups/{group}/members/{user}"), &[("direct_member_only", direct)])
            .ok()["is_user_group_member"]
            .clone()
    };
    let othello = id("othello@natter.test");
    assert_eq!(member(outer, othello, "false"), json!(true), "through the subgroup");
    assert_eq!(member(outer, othello, "true"), json!(false));
    assert_eq!(member(outer, id(HAMLET), "true"), json!(true));
    assert_eq!(member(inner, id("cordelia@natter.test"), "false"), json!(false));
    // System groups follow roles.
    let groups = hamlet.get("/user_groups", &[]).ok();
    let members_group = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "role:members")
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    assert_eq!(member(members_group, id(HAMLET), "false"), json!(true));
    assert_eq!(member(members_group, id(POLONIUS), "false"), json!(false));
    // Refusals: no such group (or another realm's), no such user, a bot,
    // a deactivated user, a bad parameter.
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let lear_groups = lear.get("/user_groups", &[]).ok();
    let king = lear.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    let lear_group = lear_groups["user_groups"][0]["id"].as_u64().unwrap();
    for group in [999_999, lear_group] {
        let e = hamlet
            .get(&format!("/user_groups/{group}/members/{othello}"), &[])
            .err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Invalid user group");
    }
    let bot = id("helper-bot@natter.test");
    for user in [999_999, bot, king] {
        let e = hamlet
            .get(&format!("/user_groups/{outer}/members/{user}"), &[])
            .err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "No such user", "{user}");
    }
    server.client("iago@natter.test").request("DELETE", &format!("/users/{othello}"), &[]).ok();
    let e =
        hamlet.get(&format!("/user_groups/{outer}/members/{othello}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "User is deactivated");
    hamlet
        .get(
            &format!("/user_groups/{outer}/members/{}", id(HAMLET)),
            &[("direct_member_only", "maybe")],
        )
        .err(400, "BAD_REQUEST");
}

#[test]
fn deleting_a_bot_deactivates_it_for_its_owner_or_an_administrator() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let created = hamlet
        .post("/bots", &[("full_name", "Yorick"), ("short_name", "yorick"), ("bot_type", "1")])
        .ok();
    let bot = created["user_id"].as_u64().unwrap();
    let bot_email = created["email"].as_str().unwrap().to_owned();
    let key = created["api_key"].as_str().unwrap().to_owned();
    let as_bot = hamlet.with_auth(&bot_email, &key);
    as_bot.get("/users/me", &[]).ok();
    // Refusals: another member's bot, a human, nobody, another realm's.
    let othello = server.client("othello@natter.test");
    let e = othello.request("DELETE", &format!("/bots/{bot}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    let human = crate::util::user_id(&server, "othello@natter.test");
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let king = lear.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    for id in [human, 999_999, king] {
        let e = hamlet.request("DELETE", &format!("/bots/{id}"), &[]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "No such bot", "{id}");
    }
    lear.request("DELETE", &format!("/bots/{bot}"), &[]).err(400, "BAD_REQUEST");
    as_bot.get("/users/me", &[]).ok();
    // The owner deletes it: deactivated, its key refused.
    hamlet.request("DELETE", &format!("/bots/{bot}"), &[]).ok();
    let listed = hamlet.get("/bots", &[]).ok();
    let entry = listed["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == bot).cloned();
    assert!(entry.is_none_or(|b| b["is_active"] == false), "{listed}");
    as_bot.get("/users/me", &[]).err(401, "USER_DEACTIVATED");
    let e = hamlet.request("DELETE", &format!("/bots/{bot}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "User is already deactivated");
    // An administrator may delete anyone's bot.
    server.client("iago@natter.test").post(&format!("/users/{bot}/reactivate"), &[]).ok();
    server.client("iago@natter.test").request("DELETE", &format!("/bots/{bot}"), &[]).ok();
    as_bot.get("/users/me", &[]).err(401, "USER_DEACTIVATED");
}

#[test]
fn typing_while_editing_reaches_whoever_would_hear_of_the_edit() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client("othello@natter.test");
    let cordelia = server.client("cordelia@natter.test");
    let id = |email: &str| crate::util::user_id(&server, email);
    let only_typing = [("event_types", r#"["typing_edit_message"]"#)];
    let (othello_q, _) = crate::api_events::register(&othello, &only_typing);
    let (cordelia_q, _) = crate::api_events::register(&cordelia, &only_typing);
    cordelia.request("PATCH", "/settings", &[("receives_typing_notifications", "false")]).ok();
    let sent = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "edit"), ("content", "x")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    hamlet.post(&format!("/messages/{sent}/typing"), &[("op", "start")]).ok();
    let events = crate::api_events::events(&othello, &othello_q, -1);
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    let seen = e["id"].as_i64().unwrap();
    assert_eq!(
        (e["type"].as_str(), e["op"].as_str()),
        (Some("typing_edit_message"), Some("start"))
    );
    assert_eq!(e["sender_id"], id(HAMLET));
    assert_eq!(e["message_id"], sent);
    let general = crate::util::channel_id(&hamlet, "general");
    assert_eq!(e["recipient"], json!({"type": "channel", "channel_id": general, "topic": "edit"}));
    assert!(crate::api_events::events(&cordelia, &cordelia_q, -1).is_empty(), "opted out");
    // A direct message: its participants who receive typing notifications.
    let dm = othello
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{}]", id(HAMLET))), ("content", "dm")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    othello.post(&format!("/messages/{dm}/typing"), &[("op", "stop")]).ok();
    let events = crate::api_events::events(&othello, &othello_q, seen);
    let mut users = vec![id(HAMLET), id("othello@natter.test")];
    users.sort();
    assert_eq!(events[0]["recipient"], json!({"type": "direct", "user_ids": users}));
    assert_eq!(events[0]["op"], "stop");
    // Refusals: a message the caller cannot see, a bad op, typing
    // notifications turned off, no credentials.
    let iago = server.client("iago@natter.test");
    let hidden = iago
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "t"), ("content", "s")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let e = othello
        .post(&format!("/messages/{hidden}/typing"), &[("op", "start")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid message(s)");
    othello.post("/messages/999999/typing", &[("op", "start")]).err(400, "BAD_REQUEST");
    hamlet.post(&format!("/messages/{sent}/typing"), &[("op", "typing")]).err(400, "BAD_REQUEST");
    hamlet.post(&format!("/messages/{sent}/typing"), &[]).err(400, "REQUEST_VARIABLE_MISSING");
    hamlet.request("PATCH", "/settings", &[("send_stream_typing_notifications", "false")]).ok();
    let e = hamlet
        .post(&format!("/messages/{sent}/typing"), &[("op", "start")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "User has disabled typing notifications for channel messages");
    server
        .anonymous()
        .post(&format!("/messages/{sent}/typing"), &[("op", "start")])
        .err(401, "UNAUTHORIZED");
}

#[test]
fn a_user_hiding_their_presence_goes_offline_and_is_not_recorded() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client("othello@natter.test");
    hamlet.post("/users/me/presence", &[("status", "active")]).ok();
    let (queue, _) = crate::api_events::register(&othello, &[("event_types", r#"["presence"]"#)]);
    hamlet.request("PATCH", "/settings", &[("presence_enabled", "false")]).ok();
    // The reply still lists the others' presences.
    othello.post("/users/me/presence", &[("status", "active")]).ok();
    let r = hamlet.post("/users/me/presence", &[("status", "active")]).ok();
    assert!(r["presences"].get("othello@natter.test").is_some(), "{r}");
    // Others hear once that Hamlet went offline (a presence older than the
    // offline threshold, as Zulip sends), and nothing of his reports.
    let events = crate::api_events::events(&othello, &queue, -1);
    let hamlet_id = crate::util::user_id(&server, HAMLET);
    let his: Vec<_> = events.iter().filter(|e| e["user_id"] == hamlet_id).collect();
    assert_eq!(his.len(), 1, "{events:?}");
    let shown = &his[0]["presence"]["website"];
    let threshold = his[0]["server_timestamp"].as_i64().unwrap() - 140;
    assert!(shown["timestamp"].as_i64().unwrap() < threshold, "{events:?}");
    let realm = othello.get("/realm/presence", &[]).ok();
    let aggregated = |p: &serde_json::Value| p["aggregated"]["status"].clone();
    assert!(realm["presences"][HAMLET]["aggregated"]["timestamp"].as_i64().unwrap() < threshold);
    let one = othello.get(&format!("/users/{HAMLET}/presence"), &[]).ok();
    assert_eq!(aggregated(&one["presence"]), "offline");
    // Shown again, he is active at once.
    hamlet.request("PATCH", "/settings", &[("presence_enabled", "true")]).ok();
    assert_eq!(
        othello.get(&format!("/users/{HAMLET}/presence"), &[]).ok()["presence"]["aggregated"]
            ["status"],
        "active"
    );
}
