//! PATCH /settings (and its deprecated aliases): every setting's accepted
//! and refused values, profile fields, unknown parameters, durability.

use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test";

#[test]
fn settings_accept_allowed_values_and_report_unknown_parameters() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let ok = hamlet
        .request(
            "PATCH",
            "/settings",
            &[
                ("twenty_four_hour_time", "true"),
                ("color_scheme", "2"),
                ("web_home_view", "recent_topics"),
                ("emojiset", "text"),
                ("default_language", "de"),
                ("web_font_size_px", "14"),
                ("email_notifications_batching_period_seconds", "600"),
                ("notification_sound", "ding"),
                ("dense_mode", "true"),
                ("no_such_setting", "1"),
            ],
        )
        .ok();
    assert_eq!(
        ok["ignored_parameters_unsupported"],
        serde_json::json!(["dense_mode", "no_such_setting"])
    );
    // The deprecated aliases take the same parameters.
    for path in ["/settings/display", "/settings/notifications"] {
        let r = hamlet.request("PATCH", path, &[("enable_sounds", "false")]).ok();
        assert!(r.get("ignored_parameters_unsupported").is_none(), "{r}");
    }
    // Nothing at all is fine too.
    hamlet.request("PATCH", "/settings", &[]).ok();
}

#[test]
fn settings_refuse_wrong_types_and_values_naming_the_parameter() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let cases: &[(&str, &str)] = &[
        ("twenty_four_hour_time", "yes"),
        ("color_scheme", "4"),
        ("color_scheme", "dark"),
        ("web_mark_read_on_scroll_policy", "0"),
        ("web_channel_default_view", "5"),
        ("demote_inactive_streams", "9"),
        ("user_list_style", "0"),
        ("web_stream_unreads_count_display_policy", "4"),
        ("web_font_size_px", "100"),
        ("web_line_height_percent", "50"),
        ("email_notifications_batching_period_seconds", "5"),
        ("web_home_view", "nowhere"),
        ("web_animate_image_previews", "sometimes"),
        ("emojiset", "apple"),
        ("default_language", "klingon"),
        ("notification_sound", "air-horn"),
        ("notification_sound", "[1]"),
        ("timezone", "Mars/Olympus_Mons"),
        ("timezone", ""),
        ("receives_typing_notifications", "2"),
    ];
    for (name, value) in cases {
        let body = hamlet
            .request("PATCH", "/settings", &[(name, value), ("enable_sounds", "false")])
            .err(400, "BAD_REQUEST");
        assert_eq!(body["var_name"], *name, "{name}={value}: {body}");
        assert!(body["msg"].as_str().unwrap().contains(name), "{body}");
    }
    // Nothing was half-applied: a refused request changes nothing, so the
    // same valid change afterwards is still a change (checked via events in
    // the unit tests); here: the profile is untouched.
    let me = hamlet.get("/users/me", &[]).ok();
    assert_eq!(me["timezone"], "");
}

#[test]
fn full_name_and_timezone_change_the_profile_durably() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    hamlet
        .request(
            "PATCH",
            "/settings",
            &[("full_name", "  Prince Hamlet "), ("timezone", "Europe/Copenhagen")],
        )
        .ok();
    let me = hamlet.get("/users/me", &[]).ok();
    assert_eq!(
        (me["full_name"].as_str(), me["timezone"].as_str()),
        (Some("Prince Hamlet"), Some("Europe/Copenhagen"))
    );

    for (name, msg) in [
        ("A", "Name too short!"),
        ("x".repeat(101).as_str(), "Name too long!"),
        ("Hamlet@Elsinore", "Invalid characters in name!"),
        ("Hamlet|12", "Invalid characters in name!"),
    ] {
        let body =
            hamlet.request("PATCH", "/settings", &[("full_name", name)]).err(400, "BAD_REQUEST");
        assert_eq!(body["msg"], msg);
    }

    server.kill();
    server.restart();
    let me = server.client(HAMLET).get("/users/me", &[]).ok();
    assert_eq!(
        (me["full_name"].as_str(), me["timezone"].as_str()),
        (Some("Prince Hamlet"), Some("Europe/Copenhagen"))
    );
}

#[test]
fn settings_need_authentication() {
    let server = TestServer::start();
    server
        .anonymous()
        .request("PATCH", "/settings", &[("enable_sounds", "false")])
        .err(401, "UNAUTHORIZED");
}

/// The files in the outbox, oldest first, as text.
pub fn outbox(server: &TestServer) -> Vec<String> {
    let dir = server.data_dir().join("data").join("outbox");
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => return Vec::new(),
    };
    files.sort();
    files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// The `/api/v1/...` path of the first link in a mail.
pub fn link_path(mail: &str) -> String {
    let start = mail.find("http://").expect("a link in the mail");
    let url = mail[start..].split_whitespace().next().unwrap();
    let path = &url[url.find("/api/v1").expect("an API link")..];
    path.trim_start_matches("/api/v1").to_owned()
}

#[test]
fn passwords_are_set_with_the_old_one_and_log_in_through_fetch_api_key() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let anon = server.anonymous();
    let login = |pw: &str| anon.post("/fetch_api_key", &[("username", HAMLET), ("password", pw)]);
    // No password yet: nothing logs in.
    login("").err(401, "AUTHENTICATION_FAILED");
    // A dev account without a password sets one with an empty old password.
    let short =
        hamlet.request("PATCH", "/settings", &[("old_password", ""), ("new_password", "abc")]);
    assert_eq!(short.err(400, "BAD_REQUEST")["var_name"], "new_password");
    hamlet
        .request("PATCH", "/settings", &[("new_password", "to be or not")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    hamlet
        .request("PATCH", "/settings", &[("old_password", ""), ("new_password", "to be or not")])
        .ok();

    let key = server.account(HAMLET).key;
    let ok = login("to be or not").ok();
    assert_eq!((ok["api_key"].as_str(), ok["email"].as_str()), (Some(key.as_str()), Some(HAMLET)));
    assert!(ok["user_id"].as_u64().is_some());
    login("to be or NOT").err(401, "AUTHENTICATION_FAILED");
    anon.post(
        "/fetch_api_key",
        &[("username", "nobody@natter.test"), ("password", "to be or not")],
    )
    .err(401, "AUTHENTICATION_FAILED");
    anon.post("/fetch_api_key", &[("username", HAMLET)]).err(400, "REQUEST_VARIABLE_MISSING");
    // Another account's password is not this one's.
    anon.post("/fetch_api_key", &[("username", "iago@natter.test"), ("password", "to be or not")])
        .err(401, "AUTHENTICATION_FAILED");

    // Now the old password is required and checked.
    let wrong =
        hamlet.request("PATCH", "/settings", &[("old_password", ""), ("new_password", "nunnery!")]);
    assert_eq!(wrong.err(400, "BAD_REQUEST")["msg"], "Wrong password!");
    hamlet
        .request(
            "PATCH",
            "/settings",
            &[("old_password", "to be or not"), ("new_password", "nunnery!")],
        )
        .ok();
    login("to be or not").err(401, "AUTHENTICATION_FAILED");
    login("nunnery!").ok();

    // Only a hash reaches the disk.
    let mut found = false;
    for entry in walk(&server.data_dir().join("data")) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!contains(&bytes, b"nunnery!"), "plain password in {}", entry.display());
        found |= contains(&bytes, b"$argon2id$");
    }
    assert!(found, "an argon2 hash is logged");
    server.kill();
    server.restart();
    server
        .anonymous()
        .post("/fetch_api_key", &[("username", HAMLET), ("password", "nunnery!")])
        .ok();
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn email_changes_only_when_the_mailed_link_is_followed() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    for (bad, code) in [
        ("not-an-email", "BAD_REQUEST"),
        ("a b@x.test", "BAD_REQUEST"),
        ("iago@natter.test", "BAD_REQUEST"),
    ] {
        let body = hamlet.request("PATCH", "/settings", &[("email", bad)]).err(400, code);
        assert_eq!(body["var_name"], "email", "{bad}");
    }
    server
        .client("helper-bot@natter.test")
        .request("PATCH", "/settings", &[("email", "bot2@natter.test")])
        .err(400, "BAD_REQUEST");
    assert!(outbox(&server).is_empty());

    let r = hamlet.request("PATCH", "/settings", &[("email", "prince@elsinore.test")]).ok();
    assert!(r["account_email"].as_str().is_some());
    // Not changed yet.
    assert_eq!(hamlet.get("/users/me", &[]).ok()["delivery_email"], HAMLET);
    let mails = outbox(&server);
    assert_eq!(mails.len(), 1);
    assert!(mails[0].starts_with("To: prince@elsinore.test\n"), "{}", mails[0]);
    assert!(server.stderr().contains("mail to prince@elsinore.test"));
    let path = link_path(&mails[0]);

    server.anonymous().get("/confirm_email_change/nonsense", &[]).err(400, "BAD_REQUEST");
    let done = server.anonymous().get(&path, &[]).ok();
    assert_eq!(done["email"], "prince@elsinore.test");
    // Used: refused the second time.
    server.anonymous().get(&path, &[]).err(400, "BAD_REQUEST");
    // The old address no longer authenticates; the new one does, same key.
    hamlet.get("/users/me", &[]).err(401, "INVALID_API_KEY");
    let key = server.account(HAMLET).key;
    let prince = hamlet.with_auth("prince@elsinore.test", &key);
    let me = prince.get("/users/me", &[]).ok();
    assert_eq!(
        (me["email"].as_str(), me["delivery_email"].as_str()),
        (Some("prince@elsinore.test"), Some("prince@elsinore.test"))
    );
    // Another realm cannot follow this realm's link.
    prince.request("PATCH", "/settings", &[("email", "h2@elsinore.test")]).ok();
    let path = link_path(&outbox(&server)[1]);
    server.anonymous().with_host("lear.localhost").get(&path, &[]).err(400, "BAD_REQUEST");
    server.anonymous().get(&path, &[]).ok();
}

#[test]
fn typing_checks_its_parameters() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let ids = user_ids(&server);
    let othello = ids["othello@natter.test"].to_string();
    let to = format!("[{othello}]");
    hamlet.post("/typing", &[("op", "start"), ("to", &to)]).ok();
    hamlet.post("/typing", &[("op", "stop"), ("type", "direct"), ("to", &to)]).ok();
    let general = general_id(&server).to_string();
    for kind in ["stream", "channel"] {
        hamlet
            .post(
                "/typing",
                &[("op", "start"), ("type", kind), ("stream_id", &general), ("topic", "t")],
            )
            .ok();
    }
    hamlet
        .post(
            "/typing",
            &[
                ("op", "start"),
                ("type", "stream"),
                ("stream_id", &general),
                ("topic", "(no topic)"),
            ],
        )
        .ok();

    let missing = hamlet.post("/typing", &[("op", "start"), ("type", "channel"), ("topic", "t")]);
    let body = missing.err(400, "BAD_REQUEST");
    assert!(body["msg"].as_str().unwrap().to_lowercase().contains("channel id"), "{body}");
    let refusals: &[&[(&str, &str)]] = &[
        &[("op", "start"), ("type", "private"), ("to", &to)],
        &[("op", "begin"), ("to", &to)],
        &[("op", "start"), ("to", "[]")],
        &[("op", "start"), ("to", "[999999]")],
        &[("op", "start"), ("to", "[\"x\"]")],
        &[("op", "start"), ("type", "stream"), ("stream_id", "999999"), ("topic", "t")],
        &[("op", "start"), ("type", "stream"), ("stream_id", "x"), ("topic", "t")],
    ];
    for params in refusals {
        hamlet.post("/typing", params).err(400, "BAD_REQUEST");
    }
    hamlet.post("/typing", &[("op", "start")]).err(400, "REQUEST_VARIABLE_MISSING");
    hamlet.post("/typing", &[("op", "start"), ("to", "nope")]).err(400, "INVALID_JSON");
    hamlet
        .post("/typing", &[("op", "start"), ("type", "stream"), ("stream_id", &general)])
        .err(400, "REQUEST_VARIABLE_MISSING");
    // A private channel the caller is not in is as good as missing.
    let core = channel_id(&server, "core team").to_string();
    server
        .client("othello@natter.test")
        .post(
            "/typing",
            &[("op", "start"), ("type", "stream"), ("stream_id", &core), ("topic", "t")],
        )
        .err(400, "BAD_REQUEST");
    // Another realm's users are unknown.
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    lear.post("/typing", &[("op", "start"), ("to", &to)]).err(400, "BAD_REQUEST");
}

/// User ids by email (the caller's realm).
pub fn user_ids(server: &TestServer) -> std::collections::HashMap<String, u64> {
    let members = server.client(HAMLET).get("/users", &[]).ok();
    members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["email"].as_str().unwrap().to_owned(), m["user_id"].as_u64().unwrap()))
        .collect()
}

/// The id of a seeded channel of the default realm: the welcome message is
/// in "general", and the seed creates general, Denmark, core team in turn.
pub fn channel_id(server: &TestServer, name: &str) -> u64 {
    let hamlet = server.client(HAMLET);
    let welcome = hamlet.get("/users/me", &[]).ok()["max_message_id"].as_u64().unwrap();
    let message = hamlet.get(&format!("/messages/{welcome}"), &[]).ok();
    let general = message["message"]["stream_id"].as_u64().expect("welcome is a channel message");
    let order = ["general", "Denmark", "core team"];
    general + order.iter().position(|n| *n == name).expect("a seeded channel") as u64
}

/// The id of the seeded channel "general".
pub fn general_id(server: &TestServer) -> u64 {
    channel_id(server, "general")
}

#[test]
fn register_has_what_zulip_term_reads() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    hamlet.request("PATCH", "/settings", &[("twenty_four_hour_time", "true")]).ok();
    // zulip-term 0.7.0's register: no client_capabilities.
    let fetch = r#"["realm","presence","subscription","message","starred_messages","update_message_flags","muted_topics","realm_user","realm_user_groups","update_global_notifications","update_display_settings","user_settings","realm_emoji","zulip_version"]"#;
    let r = hamlet
        .post(
            "/register",
            &[
                ("event_types", r#"["message","typing","user_settings"]"#),
                ("fetch_event_types", fetch),
            ],
        )
        .ok();
    assert_eq!(r["twenty_four_hour_time"], true);
    assert_eq!(r["pm_content_in_desktop_notifications"], true);
    assert_eq!(r["user_settings"]["send_private_typing_notifications"], true);
    assert_eq!(r["user_settings"]["twenty_four_hour_time"], true);
    assert_eq!(r["muted_topics"], serde_json::json!([]));
    assert!(r.get("alert_words").is_none(), "only what was asked for");
    // A modern client gets the object only.
    let r = hamlet
        .post(
            "/register",
            &[
                ("fetch_event_types", fetch),
                ("client_capabilities", r#"{"user_settings_object": true}"#),
            ],
        )
        .ok();
    assert!(r.get("twenty_four_hour_time").is_none());
    assert_eq!(r["user_settings"]["twenty_four_hour_time"], true);
}
