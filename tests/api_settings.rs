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
