//! Unauthenticated endpoints, authentication, routing and HTTP framing.

use std::io::Write;
use std::net::TcpStream;

use crate::util::{read_response, TestServer};

const HAMLET: &str = "hamlet@natter.test";

#[test]
fn server_settings_is_public_and_names_the_realm() {
    let server = TestServer::start();
    let s = server.anonymous().get("/server_settings", &[]).ok();
    assert!(s["zulip_version"].as_str().is_some_and(|v| !v.is_empty()));
    assert!(s["zulip_feature_level"].as_u64().unwrap() >= 106);
    assert_eq!(s["zulip_feature_level"], natter::api::realm::FEATURE_LEVEL);
    assert_eq!(s["zulip_version"], natter::api::realm::VERSION);
    assert_eq!(s["realm_name"], "Natter Dev");
    assert_eq!(s["authentication_methods"]["dev"], true);
    // Password login through POST /fetch_api_key, by email address.
    assert_eq!(s["authentication_methods"]["password"], true);
    assert_eq!(s["authentication_methods"]["email"], true);
    assert_eq!(s["email_auth_enabled"], true);
    assert_eq!(s["require_email_format_usernames"], true);
    assert_eq!(s["realm_url"], format!("http://{}", server.addr));
    // A bad Authorization header must not break the public endpoint.
    let bad = server.anonymous().with_auth("nobody@x", "nope");
    assert_eq!(bad.get("/server_settings", &[]).ok()["realm_name"], "Natter Dev");
    // The realm is chosen by Host subdomain.
    let lear = server.anonymous().with_host("lear.localhost:9991");
    assert_eq!(lear.get("/server_settings", &[]).ok()["realm_name"], "Lear & Co.");
    let none = server.anonymous().with_host("atlantis.localhost");
    none.get("/server_settings", &[]).err(404, "NONEXISTENT_SUBDOMAIN");
}

#[test]
fn dev_fetch_api_key_returns_keys_in_dev_mode_only() {
    let mut server = TestServer::start();
    let hamlet = server.account(HAMLET);
    let anon = server.anonymous();
    let r = anon.post("/dev_fetch_api_key", &[("username", HAMLET)]).ok();
    assert_eq!(r["api_key"], hamlet.key.as_str());
    assert_eq!(r["email"], HAMLET);
    assert!(r["user_id"].as_u64().is_some());
    // Case-insensitive email; the key works for an authenticated call.
    let r = anon.post("/dev_fetch_api_key", &[("username", "HAMLET@natter.test")]).ok();
    let key = r["api_key"].as_str().unwrap();
    anon.with_auth(HAMLET, key).get("/users/me", &[]).ok();

    let e = anon.post("/dev_fetch_api_key", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["var_name"], "username");
    anon.post("/dev_fetch_api_key", &[("username", "ghost@natter.test")])
        .err(401, "AUTHENTICATION_FAILED");
    // A lear account is not in the default realm.
    anon.post("/dev_fetch_api_key", &[("username", "king@lear.test")])
        .err(401, "AUTHENTICATION_FAILED");
    let lear = anon.with_host("lear.localhost");
    lear.post("/dev_fetch_api_key", &[("username", "king@lear.test")]).ok();

    // The same data dir without --dev: the endpoint refuses.
    server.stop();
    server.restart_with_args(vec![]);
    let e = server
        .anonymous()
        .post("/dev_fetch_api_key", &[("username", HAMLET)])
        .err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("not enabled"));
    // Existing keys keep working.
    server.client(HAMLET).get("/users/me", &[]).ok();
    // Without --dev, password login is the one advertised method.
    let s = server.anonymous().get("/server_settings", &[]).ok();
    assert_eq!(s["authentication_methods"]["dev"], false);
    assert_eq!(s["authentication_methods"]["password"], true);
    assert_eq!(s["email_auth_enabled"], true);
}

#[test]
fn authentication_failures_are_401_json() {
    let server = TestServer::start();
    let hamlet = server.account(HAMLET);
    let anon = server.anonymous();
    anon.get("/users/me", &[]).err(401, "UNAUTHORIZED");
    anon.with_auth(HAMLET, "wrongwrongwrongwrongwrongwrong12")
        .get("/users/me", &[])
        .err(401, "INVALID_API_KEY");
    anon.with_auth("ghost@natter.test", &hamlet.key)
        .get("/users/me", &[])
        .err(401, "INVALID_API_KEY");
    anon.with_auth(HAMLET, "").get("/users/me", &[]).err(401, "INVALID_API_KEY");
    // Another realm's credentials do not work on this realm's host...
    let king = server.account("king@lear.test");
    anon.with_auth(&king.email, &king.key).get("/users/me", &[]).err(401, "INVALID_API_KEY");
    // ...but do on their own.
    let me = anon
        .with_auth(&king.email, &king.key)
        .with_host("lear.localhost")
        .get("/users/me", &[])
        .ok();
    assert_eq!(me["email"], "king@lear.test");
    // Malformed headers.
    for header in ["Bearer abc", "Basic !!!notbase64", "Basic bm9jb2xvbg=="] {
        let req = format!(
            "GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\nAuthorization: {header}\r\nContent-Length: 0\r\n\r\n"
        );
        anon.raw(req.as_bytes()).err(401, "UNAUTHORIZED");
    }
}

#[test]
fn unknown_routes_and_methods_get_json_errors() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    c.get("/no/such/endpoint", &[]).err(404, "NOT_FOUND");
    c.request("DELETE", "/server_settings", &[]).err(405, "METHOD_NOT_ALLOWED");
    let r = c.raw(b"GET /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    r.err(404, "NOT_FOUND");
    c.get("/users/notanumber", &[]).err(400, "BAD_REQUEST");
}

#[test]
fn unknown_parameters_are_reported_as_ignored() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let r = c.get("/users", &[("dont_block", "true"), ("client_gravatar", "false")]).ok();
    assert_eq!(r["ignored_parameters_unsupported"], serde_json::json!(["dont_block"]));
    let r = c.get("/users", &[("client_gravatar", "false")]).ok();
    assert!(r.get("ignored_parameters_unsupported").is_none());
}

#[test]
fn bad_parameter_values_are_400() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let e = c.get("/users", &[("client_gravatar", "maybe")]).err(400, "BAD_REQUEST");
    assert_eq!(e["var_name"], "client_gravatar");
    let e = c
        .post("/messages", &[("type", "direct"), ("to", "[1,"), ("content", "x")])
        .err(400, "INVALID_JSON");
    assert_eq!(e["var_name"], "to");
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let e = c
        .post("/messages", &[("type", "direct"), ("to", &deep), ("content", "x")])
        .err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("nested"));
}

#[test]
fn http_framing_errors_do_not_crash_or_hang() {
    let server = TestServer::start();
    let c = server.anonymous();
    // A Content-Length that is not a number: 400.
    let r =
        c.raw(b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    r.err(400, "BAD_REQUEST");
    let r =
        c.raw(b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n");
    r.err(400, "BAD_REQUEST");
    // Over the body limit (1 MiB by default): refused, and the connection
    // stays usable for the next request.
    let big = vec![b'a'; 2 * 1024 * 1024];
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    let head = format!(
        "POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        big.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&big).unwrap();
    read_response(&mut stream).err(413, "BAD_REQUEST");
    stream
        .write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut stream).ok()["realm_name"], "Natter Dev");
    // Unsupported body type.
    let r = c.raw(
        b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    );
    r.err(400, "BAD_REQUEST");
    // The server is still healthy.
    c.get("/server_settings", &[]).ok();
}

#[test]
fn post_parameters_may_come_in_the_query_string() {
    let server = TestServer::start();
    let anon = server.anonymous();
    // Parameters in the query string of a POST count as well.
    let r = anon.raw(
        format!("POST /api/v1/dev_fetch_api_key?username={HAMLET} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(r.ok()["email"], HAMLET);
}

#[test]
fn a_body_cut_short_is_never_acted_on() {
    // The client promises 200 bytes, sends a complete-looking form, then
    // closes. The server drops such a connection without a reply; what
    // matters is that the truncated request changes nothing.
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let before = hamlet.get("/users/me", &[]).ok()["max_message_id"].clone();
    let (email, key) = hamlet.auth.clone().unwrap();
    let token = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{email}:{key}"),
    );
    let body = "type=stream&to=general&topic=t&content=cut";
    let head = format!(
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {token}\r\nContent-Length: 200\r\n\r\n"
    );
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut rest).expect("closed, not hung");
    assert_eq!(hamlet.get("/users/me", &[]).ok()["max_message_id"], before);
}
