//! Navigation views, saved snippets, code playgrounds and push tokens over
//! HTTP: accepted and refused values. (Events: `verify_settings.rs`.)

use serde_json::json;

use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

#[test]
fn navigation_views_crud_and_refusals() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let add = |params: &[(&str, &str)]| c.post("/navigation_views", params);
    add(&[("fragment", "  "), ("is_pinned", "true")]).err(400, "BAD_REQUEST");
    add(&[("fragment", "inbox")]).err(400, "REQUEST_VARIABLE_MISSING");
    add(&[("fragment", "inbox"), ("is_pinned", "true"), ("name", "Mine")]).err(400, "BAD_REQUEST");
    add(&[("fragment", "narrow/is/dm"), ("is_pinned", "true")]).err(400, "BAD_REQUEST");
    add(&[("fragment", "narrow/is/dm"), ("is_pinned", "true"), ("name", " ")])
        .err(400, "BAD_REQUEST");
    add(&[("fragment", &"x".repeat(256)), ("is_pinned", "true"), ("name", "x")])
        .err(400, "BAD_REQUEST");
    add(&[("fragment", "inbox"), ("is_pinned", "true")]).ok();
    add(&[("fragment", "inbox"), ("is_pinned", "false")]).err(400, "BAD_REQUEST");
    add(&[("fragment", "narrow/is/dm"), ("is_pinned", "false"), ("name", "DMs")]).ok();
    add(&[("fragment", "narrow/is/alerted"), ("is_pinned", "false"), ("name", "DMs")])
        .err(400, "BAD_REQUEST");

    let views = c.get("/navigation_views", &[]).ok()["navigation_views"].clone();
    assert_eq!(
        views,
        json!([{"fragment": "inbox", "is_pinned": true},
               {"fragment": "narrow/is/dm", "is_pinned": false, "name": "DMs"}])
    );
    let patch = |path: &str, params: &[(&str, &str)]| c.request("PATCH", path, params);
    patch("/navigation_views/recent", &[("is_pinned", "true")]).err(404, "NOT_FOUND");
    patch("/navigation_views/inbox", &[("name", "My inbox")]).err(400, "BAD_REQUEST");
    patch("/navigation_views/inbox", &[]).err(400, "BAD_REQUEST");
    patch("/navigation_views/narrow%2Fis%2Fdm", &[("name", "Direct"), ("is_pinned", "true")]).ok();
    let views = c.get("/navigation_views", &[]).ok()["navigation_views"].clone();
    assert_eq!(views[1], json!({"fragment": "narrow/is/dm", "is_pinned": true, "name": "Direct"}));
    // Views are per user.
    server.client(IAGO).request("DELETE", "/navigation_views/inbox", &[]).err(404, "NOT_FOUND");
    c.request("DELETE", "/navigation_views/inbox", &[]).ok();
    c.request("DELETE", "/navigation_views/inbox", &[]).err(404, "NOT_FOUND");
}

#[test]
fn saved_snippets_crud_and_limits() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let create = |title: &str, content: &str| {
        c.post("/saved_snippets", &[("title", title), ("content", content)])
    };
    create("", "x").err(400, "BAD_REQUEST");
    create("t", "  ").err(400, "BAD_REQUEST");
    create(&"t".repeat(61), "x").err(400, "BAD_REQUEST");
    create("t", &"x".repeat(10_001)).err(400, "BAD_REQUEST");
    c.post("/saved_snippets", &[("title", "t")]).err(400, "REQUEST_VARIABLE_MISSING");
    let id = create(&"t".repeat(60), "Hail!").ok()["saved_snippet_id"].as_u64().unwrap();
    let path = format!("/saved_snippets/{id}");
    c.request("PATCH", "/saved_snippets/999999", &[("title", "x")]).err(400, "BAD_REQUEST");
    c.request("PATCH", &path, &[]).err(400, "BAD_REQUEST");
    c.request("PATCH", &path, &[("title", "")]).err(400, "BAD_REQUEST");
    server.client(IAGO).request("PATCH", &path, &[("title", "mine")]).err(400, "BAD_REQUEST");
    c.request("PATCH", &path, &[("title", "Greeting")]).ok();
    let list = c.get("/saved_snippets", &[]).ok()["saved_snippets"].clone();
    assert_eq!(
        (list[0]["title"].as_str(), list[0]["content"].as_str()),
        (Some("Greeting"), Some("Hail!"))
    );
    assert!(list[0]["date_created"].as_i64().unwrap() > 1_600_000_000);
    server.client(IAGO).request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    c.request("DELETE", &path, &[]).ok();
    c.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
}

#[test]
fn playgrounds_are_for_administrators_with_valid_templates() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let add = |c: &crate::util::Client, name: &str, lang: &str, template: &str| {
        c.post(
            "/realm/playgrounds",
            &[("name", name), ("pygments_language", lang), ("url_template", template)],
        )
    };
    let good = "https://play.rust-lang.org/?edition=2021&code={code}";
    add(&server.client(HAMLET), "Rust", "Rust", good).err(400, "BAD_REQUEST");
    for (name, lang, template) in [
        ("", "Rust", good),
        ("Rust", "", good),
        ("Rust", "Ru$t", good),
        ("Rust", "Rust", "https://play.rust-lang.org/"),
        ("Rust", "Rust", "https://x.test/{lang}?c={code}"),
        ("Rust", "Rust", "https://x.test/{code"),
        ("Rust", "Rust", "javascript:{code}"),
    ] {
        let body = add(&iago, name, lang, template).err(400, "BAD_REQUEST");
        assert!(body["var_name"].is_string(), "{body}");
    }
    iago.post("/realm/playgrounds", &[("name", "x")]).err(400, "REQUEST_VARIABLE_MISSING");
    let id = add(&iago, "Rust", "Rust", good).ok()["id"].as_u64().unwrap();
    add(&iago, "Rust", "Rust", good).err(400, "BAD_REQUEST");
    add(&iago, "Rust (nightly)", "Rust", good).ok();
    let path = format!("/realm/playgrounds/{id}");
    server.client(HAMLET).request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    // Another realm's administrator cannot remove it.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    king.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", &path, &[]).ok();
    iago.request("DELETE", &path, &[]).err(400, "BAD_REQUEST");
}

#[test]
fn push_tokens_are_checked_and_stored_durably() {
    let mut server = TestServer::start();
    let c = server.client(HAMLET);
    let apns = "/users/me/apns_device_token";
    let android = "/users/me/android_gcm_reg_id";
    c.post(apns, &[("token", "abcdef01")]).err(400, "REQUEST_VARIABLE_MISSING");
    c.post(apns, &[("token", ""), ("appid", "org.zulip.Zulip")]).err(400, "BAD_REQUEST");
    c.post(apns, &[("token", "xyz"), ("appid", "org.zulip.Zulip")]).err(400, "BAD_REQUEST");
    c.post(apns, &[("token", &"a".repeat(4097)), ("appid", "org.zulip.Zulip")])
        .err(400, "BAD_REQUEST");
    c.post(apns, &[("token", "abcdef01"), ("appid", "bad app id!")]).err(400, "BAD_REQUEST");
    c.post(apns, &[("token", "abcdef01"), ("appid", "org.zulip.Zulip")]).ok();
    c.post(android, &[("token", "")]).err(400, "BAD_REQUEST");
    c.post(android, &[("token", "has space")]).err(400, "BAD_REQUEST");
    c.post(android, &[("token", "fcm:token_1")]).ok();
    c.request("DELETE", android, &[("token", "other")]).err(400, "BAD_REQUEST");
    // Tokens are per kind and per user.
    c.request("DELETE", android, &[("token", "abcdef01")]).err(400, "BAD_REQUEST");
    server.client(IAGO).request("DELETE", apns, &[("token", "abcdef01")]).err(400, "BAD_REQUEST");

    server.kill();
    server.restart();
    let c = server.client(HAMLET);
    c.request("DELETE", apns, &[("token", "abcdef01")]).ok();
    c.request("DELETE", apns, &[("token", "abcdef01")]).err(400, "BAD_REQUEST");
    c.request("DELETE", android, &[("token", "fcm:token_1")]).ok();
}
