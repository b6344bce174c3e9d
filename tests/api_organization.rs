//! Linkifiers, default channels and default channel groups over HTTP:
//! who may change them, accepted and refused values, linkifiers in sent
//! messages, durability. (Events: `verify_organization.rs`.)

use serde_json::json;

use crate::util::{channel_id, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

const ISSUES: &str = "https://github.com/zulip/zulip/issues/{id}";

/// Creates the public channel `Verona` (not a default channel: the seed's
/// public channels all are) and returns its id.
fn verona(c: &crate::util::Client) -> u64 {
    c.post("/users/me/subscriptions", &[("subscriptions", r#"[{"name": "Verona"}]"#)]).ok();
    channel_id(c, "Verona")
}

#[test]
fn linkifiers_are_for_administrators_with_valid_patterns_and_templates() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let add = |c: &crate::util::Client, pattern: &str, template: &str| {
        c.post("/realm/filters", &[("pattern", pattern), ("url_template", template)])
    };
    add(&hamlet, "#(?P<id>[0-9]+)", ISSUES).err(400, "BAD_REQUEST");
    for (pattern, template) in [
        ("(unclosed", "https://x.test/"),
        ("", "https://x.test/"),
        ("(?<=a)b", "https://x.test/"),
        ("#(?P<id>[0-9]+)", "https://x.test/{other}"),
        ("#(?P<id>[0-9]+)", "https://x.test/{id"),
        ("#(?P<id>[0-9]+)", "javascript:alert({id})"),
    ] {
        let body = add(&iago, pattern, template).err(400, "BAD_REQUEST");
        assert!(body["var_name"].is_string(), "{body}");
    }
    iago.post("/realm/filters", &[("pattern", "x")]).err(400, "REQUEST_VARIABLE_MISSING");
    let first = add(&iago, "#(?P<id>[0-9]+)", ISSUES).ok()["id"].as_u64().unwrap();
    add(&iago, "#(?P<id>[0-9]+)", "https://other.test/{id}").err(400, "BAD_REQUEST");
    let second = add(&iago, "JIRA-(?P<n>[0-9]+)", "https://jira.test/browse/{n}").ok()["id"]
        .as_u64()
        .unwrap();
    // Every member may read them, in order.
    let list = hamlet.get("/realm/linkifiers", &[]).ok()["linkifiers"].clone();
    assert_eq!(
        list,
        json!([{"id": first, "pattern": "#(?P<id>[0-9]+)", "url_template": ISSUES},
               {"id": second, "pattern": "JIRA-(?P<n>[0-9]+)",
                "url_template": "https://jira.test/browse/{n}"}])
    );

    // Edits keep the place; refusals change nothing.
    let path = format!("/realm/filters/{first}");
    let patch = |c: &crate::util::Client, path: &str, pattern: &str, template: &str| {
        c.request("PATCH", path, &[("pattern", pattern), ("url_template", template)])
    };
    patch(&hamlet, &path, "#(?P<id>[0-9]+)", "https://x.test/{id}").err(400, "BAD_REQUEST");
    patch(&iago, "/realm/filters/999999", "#(?P<id>[0-9]+)", ISSUES).err(400, "BAD_REQUEST");
    patch(&iago, &path, "JIRA-(?P<n>[0-9]+)", "https://x.test/{n}").err(400, "BAD_REQUEST");
    patch(&iago, &path, "#(?P<id>[0-9]+)", "https://x.test/{nope}").err(400, "BAD_REQUEST");
    patch(&iago, &path, "#(?P<id>[0-9]+)", "https://tracker.test/{id}").ok();
    let list = hamlet.get("/realm/linkifiers", &[]).ok()["linkifiers"].clone();
    assert_eq!(list[0]["url_template"], "https://tracker.test/{id}");

    // Reordering names every linkifier exactly once.
    let reorder = |c: &crate::util::Client, ids: &str| {
        c.request("PATCH", "/realm/linkifiers", &[("ordered_linkifier_ids", ids)])
    };
    reorder(&hamlet, &format!("[{second},{first}]")).err(400, "BAD_REQUEST");
    reorder(&iago, &format!("[{second}]")).err(400, "BAD_REQUEST");
    reorder(&iago, &format!("[{second},{second}]")).err(400, "BAD_REQUEST");
    reorder(&iago, &format!("[{second},{first},999]")).err(400, "BAD_REQUEST");
    reorder(&iago, "not json").err(400, "INVALID_JSON");
    reorder(&iago, "[\"a\"]").err(400, "BAD_REQUEST");
    iago.request("PATCH", "/realm/linkifiers", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    reorder(&iago, &format!("[{second},{first}]")).ok();

    // Another realm neither sees nor changes them.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    assert_eq!(king.get("/realm/linkifiers", &[]).ok()["linkifiers"], json!([]));
    king.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");

    // Durable (through the final snapshot), order included.
    server.stop();
    server.restart();
    let iago = server.client(IAGO);
    let list = iago.get("/realm/linkifiers", &[]).ok()["linkifiers"].clone();
    let ids: Vec<u64> =
        list.as_array().unwrap().iter().map(|l| l["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![second, first]);
    server.client(HAMLET).request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", &path, &[]).ok();
    iago.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(iago.get("/realm/linkifiers", &[]).ok()["linkifiers"].as_array().unwrap().len(), 1);
}

#[test]
fn sent_messages_are_linkified_outside_code_and_links() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    iago.post("/realm/filters", &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", ISSUES)]).ok();
    let hamlet = server.client(HAMLET);
    let send = |content: &str| {
        let id = hamlet
            .post(
                "/messages",
                &[("type", "stream"), ("to", "general"), ("topic", "bugs"), ("content", content)],
            )
            .ok()["id"]
            .as_u64()
            .unwrap();
        let reply = hamlet.get(&format!("/messages/{id}"), &[("apply_markdown", "true")]).ok();
        reply["message"]["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        send("Fixed #123 at last"),
        "<p>Fixed <a href=\"https://github.com/zulip/zulip/issues/123\">#123</a> at last</p>"
    );
    assert_eq!(
        send("`#123` and [#9](https://x.test)"),
        "<p><code>#123</code> and <a href=\"https://x.test\">#9</a></p>"
    );
    assert_eq!(send("no#5 here"), "<p>no#5 here</p>");
    // Another realm's messages are not linkified by this realm's rules.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    let id = king
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "see #7")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let got = king.get(&format!("/messages/{id}"), &[("apply_markdown", "true")]).ok();
    assert_eq!(got["message"]["content"], "<p>see #7</p>");
}

#[test]
fn default_channels_are_public_and_set_by_administrators() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let denmark = verona(&iago).to_string();
    let core = channel_id(&iago, "core team").to_string();
    let defaults = |c: &crate::util::Client| {
        let state = c.post("/register", &[("fetch_event_types", "[\"default_streams\"]")]).ok();
        state["realm_default_streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let before = defaults(&hamlet);
    assert!(!before.contains(&"Verona".to_owned()));
    hamlet.post("/default_streams", &[("stream_id", &denmark)]).err(400, "BAD_REQUEST");
    iago.post("/default_streams", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    iago.post("/default_streams", &[("stream_id", "999999")]).err(400, "BAD_REQUEST");
    iago.post("/default_streams", &[("stream_id", "x")]).err(400, "BAD_REQUEST");
    let body = iago.post("/default_streams", &[("stream_id", &core)]).err(400, "BAD_REQUEST");
    assert_eq!(body["msg"], "Private channels cannot be made default.");
    // Another realm's channel is not found.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    king.post("/default_streams", &[("stream_id", &denmark)]).err(400, "BAD_REQUEST");
    iago.post("/default_streams", &[("stream_id", &denmark)]).ok();
    iago.post("/default_streams", &[("stream_id", &denmark)]).ok();
    assert!(defaults(&hamlet).contains(&"Verona".to_owned()));
    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    assert!(defaults(&iago).contains(&"Verona".to_owned()));
    server
        .client(HAMLET)
        .request("DELETE", "/default_streams", &[("stream_id", &denmark)])
        .err(400, "BAD_REQUEST");
    iago.request("DELETE", "/default_streams", &[("stream_id", &denmark)]).ok();
    assert_eq!(defaults(&iago), before);
}

#[test]
fn default_channel_groups_crud_and_refusals() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    verona(&iago);
    let create = |c: &crate::util::Client, name: &str, names: &str| {
        c.post(
            "/default_stream_groups/create",
            &[("group_name", name), ("description", "For newcomers"), ("stream_names", names)],
        )
    };
    create(&hamlet, "Starters", "[\"Verona\"]").err(400, "BAD_REQUEST");
    create(&iago, "", "[\"Verona\"]").err(400, "BAD_REQUEST");
    create(&iago, &"n".repeat(61), "[\"Verona\"]").err(400, "BAD_REQUEST");
    create(&iago, "Starters", "[\"Nowhere\"]").err(400, "BAD_REQUEST");
    create(&iago, "Starters", "[\"core team\"]").err(400, "BAD_REQUEST");
    create(&iago, "Starters", "[\"Verona\", \"Verona\"]").err(400, "BAD_REQUEST");
    create(&iago, "Starters", "Verona").err(400, "INVALID_JSON");
    iago.post("/default_stream_groups/create", &[("group_name", "x")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    // `general` is a default channel in the seed: not in a group.
    let body = create(&iago, "Starters", "[\"general\"]").err(400, "BAD_REQUEST");
    assert_eq!(body["msg"], "'general' is a default channel and cannot be added to 'Starters'");
    create(&iago, "Starters", "[\"Verona\"]").ok();
    create(&iago, "starters", "[]").err(400, "BAD_REQUEST");
    create(&iago, "Empty", "[]").ok();

    let groups = |c: &crate::util::Client| {
        let state =
            c.post("/register", &[("fetch_event_types", "[\"default_stream_groups\"]")]).ok();
        state["realm_default_stream_groups"].clone()
    };
    let list = groups(&hamlet);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["name"], "Starters");
    assert_eq!(list[0]["description"], "For newcomers");
    assert_eq!(list[0]["streams"][0]["name"], "Verona");
    let id = list[0]["id"].as_u64().unwrap();
    let empty = list[1]["id"].as_u64().unwrap();
    let path = format!("/default_stream_groups/{id}");

    // Name and description.
    let patch = |c: &crate::util::Client, path: &str, params: &[(&str, &str)]| {
        c.request("PATCH", path, params)
    };
    patch(&hamlet, &path, &[("new_description", "x")]).err(400, "BAD_REQUEST");
    patch(&iago, &path, &[]).err(400, "BAD_REQUEST");
    patch(&iago, &path, &[("new_group_name", "Starters")]).err(400, "BAD_REQUEST");
    patch(&iago, &path, &[("new_group_name", "EMPTY")]).err(400, "BAD_REQUEST");
    patch(&iago, "/default_stream_groups/999999", &[("new_description", "x")])
        .err(400, "BAD_REQUEST");
    patch(&iago, &path, &[("new_group_name", "Beginners"), ("new_description", "Start here")]).ok();

    // Channels.
    let channels = format!("{path}/streams");
    let op = |c: &crate::util::Client, op: &str, names: &str| {
        c.request("PATCH", &channels, &[("op", op), ("stream_names", names)])
    };
    op(&hamlet, "remove", "[\"Verona\"]").err(400, "BAD_REQUEST");
    op(&iago, "toggle", "[\"Verona\"]").err(400, "BAD_REQUEST");
    op(&iago, "add", "[\"Verona\"]").err(400, "BAD_REQUEST");
    op(&iago, "add", "[\"core team\"]").err(400, "BAD_REQUEST");
    op(&iago, "remove", "[\"general\"]").err(400, "BAD_REQUEST");
    op(&iago, "remove", "[\"Verona\"]").ok();
    op(&iago, "add", "[\"Verona\"]").ok();

    // Another realm's administrator cannot reach the group.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    king.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(groups(&king), json!([]));

    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    let list = groups(&iago);
    assert_eq!(list[0]["name"], "Beginners");
    assert_eq!(list[0]["description"], "Start here");
    assert_eq!(list[0]["streams"][0]["name"], "Verona");
    server.client(HAMLET).request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", &path, &[]).ok();
    iago.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    let list = groups(&iago);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], empty);
}

#[test]
fn an_archived_or_private_channel_leaves_the_groups() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let id = verona(&iago);
    iago.post(
        "/default_stream_groups/create",
        &[("group_name", "G"), ("description", ""), ("stream_names", "[\"Verona\"]")],
    )
    .ok();
    iago.request("PATCH", &format!("/streams/{id}"), &[("is_private", "true")]).ok();
    let state = server
        .client(HAMLET)
        .post("/register", &[("fetch_event_types", "[\"default_stream_groups\"]")])
        .ok();
    assert_eq!(state["realm_default_stream_groups"][0]["streams"], json!([]));
}

#[test]
fn deleting_a_topic_is_for_administrators_and_spares_other_topics() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let send = |c: &crate::util::Client, to: &str, topic: &str| {
        c.post("/messages", &[("type", "stream"), ("to", to), ("topic", topic), ("content", "x")])
            .ok()["id"]
            .as_u64()
            .unwrap()
    };
    let doomed: Vec<u64> = (0..3).map(|_| send(&hamlet, "general", "Doomed")).collect();
    let kept = send(&hamlet, "general", "kept");
    let general = channel_id(&iago, "general");
    let path = format!("/streams/{general}/delete_topic");
    hamlet.post(&path, &[("topic_name", "doomed")]).err(400, "BAD_REQUEST");
    iago.post(&path, &[]).err(400, "REQUEST_VARIABLE_MISSING");
    iago.post("/streams/999999/delete_topic", &[("topic_name", "doomed")])
        .err(400, "STREAM_DOES_NOT_EXIST");
    // Another realm's administrator cannot reach the channel.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    king.post(&path, &[("topic_name", "doomed")]).err(400, "STREAM_DOES_NOT_EXIST");
    // Topics match case-insensitively.
    let reply = iago.post(&path, &[("topic_name", "doomed")]).ok();
    assert_eq!(reply["complete"], true);
    for id in &doomed {
        hamlet.get(&format!("/messages/{id}"), &[]).err(400, "BAD_REQUEST");
    }
    hamlet.get(&format!("/messages/{kept}"), &[]).ok();
    // Nothing left: still complete.
    assert_eq!(iago.post(&path, &[("topic_name", "doomed")]).ok()["complete"], true);

    // A private channel an administrator is not in does not exist for them.
    let desdemona = server.client("desdemona@natter.test");
    let core = channel_id(&desdemona, "core team");
    let secret = send(&desdemona, "core team", "secret");
    iago.request("DELETE", "/users/me/subscriptions", &[("subscriptions", r#"["core team"]"#)])
        .ok();
    iago.post(&format!("/streams/{core}/delete_topic"), &[("topic_name", "secret")])
        .err(400, "STREAM_DOES_NOT_EXIST");
    desdemona.get(&format!("/messages/{secret}"), &[]).ok();

    server.kill();
    server.restart();
    server.client(HAMLET).get(&format!("/messages/{}", doomed[0]), &[]).err(400, "BAD_REQUEST");
    server.client(HAMLET).get(&format!("/messages/{kept}"), &[]).ok();
}

#[test]
fn organization_settings_are_for_administrators_and_some_for_owners() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let owner = server.client("desdemona@natter.test");
    let patch =
        |c: &crate::util::Client, params: &[(&str, &str)]| c.request("PATCH", "/realm", params);
    let body = patch(&hamlet, &[("name", "Mine")]).err(400, "BAD_REQUEST");
    assert_eq!(body["msg"], "Must be an organization administrator");
    for (name, value) in [
        ("name", " "),
        ("name", &"n".repeat(41)),
        ("description", &"d".repeat(1001)),
        ("allow_message_editing", "maybe"),
        ("message_content_edit_limit_seconds", "0"),
        ("message_content_edit_limit_seconds", "\"forever\""),
        ("message_content_delete_limit_seconds", "-5"),
        ("move_messages_between_streams_limit_seconds", "[]"),
        ("topics_policy", "empty_topic_only"),
        ("topics_policy", "sometimes"),
        ("message_retention_days", "0"),
        ("can_delete_any_message_group", "{\"old\": 1}"),
        ("can_delete_any_message_group", "7"),
        ("can_delete_any_message_group", "{\"new\": 999999}"),
    ] {
        let body = patch(&iago, &[(name, value)]).err(400, "BAD_REQUEST");
        assert!(body["msg"].is_string(), "{name}={value}: {body}");
    }
    // Owners only.
    let body = patch(&iago, &[("message_retention_days", "30")]).err(400, "BAD_REQUEST");
    assert_eq!(body["msg"], "Must be an organization owner");
    let groups = iago.get("/user_groups", &[]).ok()["user_groups"].clone();
    let group_id = |name: &str| {
        groups.as_array().unwrap().iter().find(|g| g["name"] == name).unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let admins = group_id("role:administrators");
    let members = group_id("role:members");
    let web_public = format!("{{\"new\": {admins}}}");
    patch(&iago, &[("can_create_web_public_channel_group", &web_public)]).err(400, "BAD_REQUEST");
    // A stale `old` is refused; nothing is half-applied.
    let stale = format!("{{\"new\": {members}, \"old\": {members}}}");
    patch(&iago, &[("name", "Elsinore"), ("can_delete_any_message_group", &stale)])
        .err(400, "BAD_REQUEST");
    let realm =
        |c: &crate::util::Client| c.post("/register", &[("fetch_event_types", "[\"realm\"]")]).ok();
    assert_ne!(realm(&hamlet)["realm_name"], "Elsinore");

    // Accepted: the reply names what changed.
    let reply = patch(&iago, &[("name", "Elsinore"), ("allow_message_editing", "false")]).ok();
    assert_eq!(reply["name"], "Elsinore");
    assert_eq!(reply["allow_message_editing"], false);
    patch(
        &owner,
        &[("message_retention_days", "30"), ("can_create_web_public_channel_group", &web_public)],
    )
    .ok();
    // The setting takes effect: editing is off.
    let id = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "a")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    hamlet
        .request("PATCH", &format!("/messages/{id}"), &[("content", "b")])
        .err(400, "BAD_REQUEST");
    // Another realm is untouched.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    assert_ne!(realm(&king)["realm_name"], "Elsinore");

    server.kill();
    server.restart();
    let state = realm(&server.client(HAMLET));
    assert_eq!(state["realm_name"], "Elsinore");
    assert_eq!(state["realm_allow_message_editing"], false);
    assert_eq!(state["realm_message_retention_days"], 30);
    assert_eq!(state["realm_can_create_web_public_channel_group"], admins);
}

#[test]
fn new_users_start_with_the_realm_defaults() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let path = "/realm/user_settings_defaults";
    hamlet.request("PATCH", path, &[("twenty_four_hour_time", "true")]).err(400, "BAD_REQUEST");
    for (name, value) in [
        ("twenty_four_hour_time", "sometimes"),
        ("web_font_size_px", "99"),
        ("emojiset", "comic"),
        ("color_scheme", "\"dark\""),
    ] {
        let body = iago.request("PATCH", path, &[(name, value)]).err(400, "BAD_REQUEST");
        assert_eq!(body["var_name"], name);
    }
    // Not a realm default: left unread, and said so.
    let reply = iago.request("PATCH", path, &[("default_language", "de")]).ok();
    assert_eq!(reply["ignored_parameters_unsupported"], json!(["default_language"]));
    iago.request("PATCH", path, &[("twenty_four_hour_time", "true"), ("emojiset", "text")]).ok();
    let settings = |c: &crate::util::Client| {
        c.post("/register", &[("fetch_event_types", "[\"user_settings\"]")]).ok()["user_settings"]
            .clone()
    };
    // Existing accounts keep theirs.
    assert_eq!(settings(&hamlet)["twenty_four_hour_time"], false);
    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    iago.post(
        "/users",
        &[("email", "horatio@natter.test"), ("full_name", "Horatio"), ("password", "friend1")],
    )
    .ok();
    let key = server
        .anonymous()
        .post("/fetch_api_key", &[("username", "horatio@natter.test"), ("password", "friend1")])
        .ok()["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let horatio = server.anonymous().with_auth("horatio@natter.test", &key);
    let mine = settings(&horatio);
    assert_eq!(mine["twenty_four_hour_time"], true);
    assert_eq!(mine["emojiset"], "text");
    assert_eq!(mine["color_scheme"], 1);
    // Another realm's new users are not affected.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    let state =
        king.post("/register", &[("fetch_event_types", "[\"realm_user_settings_defaults\"]")]).ok();
    assert_eq!(state["realm_user_settings_defaults"]["twenty_four_hour_time"], false);
}

#[test]
fn email_domains_are_listed_for_members_and_changed_by_administrators() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    hamlet.post("/realm/domains", &[("domain", "elsinore.dk")]).err(400, "BAD_REQUEST");
    for bad in ["", "localhost", ".dk", "elsinore.", "bad_domain.dk", "-x.dk", "a..dk"] {
        let body = iago.post("/realm/domains", &[("domain", bad)]).err(400, "BAD_REQUEST");
        assert!(body["msg"].as_str().unwrap().starts_with("Invalid domain"), "{bad}: {body}");
    }
    iago.post("/realm/domains", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    iago.post("/realm/domains", &[("domain", "Elsinore.dk")]).ok();
    iago.post("/realm/domains", &[("domain", "elsinore.dk")]).err(400, "BAD_REQUEST");
    iago.post("/realm/domains", &[("domain", "court.dk"), ("allow_subdomains", "true")]).ok();
    assert_eq!(
        hamlet.get("/realm/domains", &[]).ok()["domains"],
        json!([{"domain": "court.dk", "allow_subdomains": true},
               {"domain": "elsinore.dk", "allow_subdomains": false}])
    );
    let path = "/realm/domains/elsinore.dk";
    hamlet.request("PATCH", path, &[("allow_subdomains", "true")]).err(400, "BAD_REQUEST");
    iago.request("PATCH", path, &[]).err(400, "REQUEST_VARIABLE_MISSING");
    iago.request("PATCH", "/realm/domains/nowhere.dk", &[("allow_subdomains", "true")])
        .err(400, "BAD_REQUEST");
    iago.request("PATCH", path, &[("allow_subdomains", "true")]).ok();
    // Another realm neither sees nor changes them.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    assert_eq!(king.get("/realm/domains", &[]).ok()["domains"], json!([]));
    king.request("DELETE", path, &[]).err(400, "BAD_REQUEST");
    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    let list = iago.get("/realm/domains", &[]).ok()["domains"].clone();
    assert_eq!(list[1], json!({"domain": "elsinore.dk", "allow_subdomains": true}));
    server.client(HAMLET).request("DELETE", path, &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", path, &[]).ok();
    iago.request("DELETE", path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(iago.get("/realm/domains", &[]).ok()["domains"].as_array().unwrap().len(), 1);
}
