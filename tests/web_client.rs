//! The web client's transport: its embedded files at `/` (ETag, gzip,
//! cache lifetimes, the Content-Security-Policy), `OPTIONS` and
//! `--cors-origin`, and the session cookie — sign-in, use of the API with
//! the cookie, and every refusal: no cookie, another origin, a missing or
//! wrong CSRF token, a session ended by sign-out or by a new key or
//! password, another realm's host; sessions survive a restart.

use std::collections::HashMap;
use std::io::{Read, Write};

use serde_json::Value;

use crate::util::{basic_auth, connect, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

/// A response read byte for byte (any media type).
struct Raw {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    #[track_caller]
    fn ok(&self) -> Value {
        let json = self.json();
        assert_eq!((self.status, &json["result"]), (200, &Value::from("success")), "{json}");
        json
    }

    #[track_caller]
    fn err(&self, status: u16, code: &str) -> Value {
        let json = self.json();
        assert_eq!((self.status, json["code"].as_str()), (status, Some(code)), "{json}");
        json
    }
}

/// Sends one request to `host` on a new connection.
fn send(addr: &str, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Raw {
    let mut stream = connect(addr);
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\n");
    let has_host = headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host"));
    if has_host {
        head = format!("{method} {target} HTTP/1.1\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed before a response");
        buf.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = HashMap::new();
    for (name, value) in text.lines().skip(1).filter_map(|l| l.split_once(':')) {
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_owned();
        headers
            .entry(name)
            .and_modify(|v: &mut String| {
                v.push_str(", ");
                v.push_str(&value)
            })
            .or_insert(value);
    }
    let len = headers.get("content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    Raw { status, headers, body }
}

/// A signed-in browser: its cookie header and CSRF token.
#[derive(Clone)]
struct Browser {
    addr: String,
    origin: String,
    cookie: String,
    csrf: String,
}

impl Browser {
    fn sign_in(server: &TestServer, email: &str) -> Browser {
        let origin = format!("http://{}", server.addr);
        let body = format!("username={}", email.replace('@', "%40"));
        let r = send(&server.addr, "POST", "/login", &[("Origin", &origin)], &body);
        let json = r.ok();
        let set_cookie = r.header("set-cookie").expect("a cookie").to_owned();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set_cookie.contains(attribute), "{set_cookie}");
        }
        assert!(!set_cookie.contains("Secure"), "plain HTTP without --secure-cookies");
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        assert!(cookie.starts_with("natter_session=") && cookie.len() > 40, "{cookie}");
        assert_eq!(json["email"], email);
        let csrf = json["csrf_token"].as_str().unwrap().to_owned();
        Browser { addr: server.addr.clone(), origin, cookie, csrf }
    }

    /// `GET /api/v1<path>` as the page does it (no Origin: same-origin GET).
    fn get(&self, path: &str) -> Raw {
        send(&self.addr, "GET", &format!("/api/v1{path}"), &[("Cookie", &self.cookie)], "")
    }

    /// A state-changing API call with the cookie, the Origin and the token.
    fn post(&self, path: &str, body: &str) -> Raw {
        let headers =
            [("Cookie", &*self.cookie), ("Origin", &*self.origin), ("X-CSRF-Token", &*self.csrf)];
        send(&self.addr, "POST", &format!("/api/v1{path}"), &headers, body)
    }
}

#[test]
fn the_page_and_its_files_are_served_with_cache_headers() {
    let server = TestServer::start();
    let addr = &server.addr;
    let page = send(addr, "GET", "/", &[], "");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self';") && !csp.contains("unsafe"), "{csp}");
    let html = String::from_utf8(page.body.clone()).unwrap();
    let end = html.find("/app.js\"").expect("the script") + "/app.js".len();
    let script = &html[html[..end].rfind('"').unwrap() + 1..end];
    assert!(script.starts_with("/static/web/"), "{script}");

    // The script: compressed when asked, cached for a year, revalidated
    // by its ETag.
    let gz = send(addr, "GET", script, &[("Accept-Encoding", "gzip, br")], "");
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert_eq!(gz.header("cache-control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(gz.header("content-type"), Some("text/javascript; charset=utf-8"));
    let plain = send(addr, "GET", script, &[], "");
    assert_eq!(plain.header("content-encoding"), None);
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..]).read_to_end(&mut unzipped).unwrap();
    assert_eq!(unzipped, plain.body);
    assert!(gz.body.len() < plain.body.len());
    let refused = send(addr, "GET", script, &[("Accept-Encoding", "gzip;q=0")], "");
    assert_eq!(refused.header("content-encoding"), None);
    let etag = gz.header("etag").unwrap();
    assert_ne!(Some(etag), plain.header("etag"), "each encoding has its own tag");
    let again =
        send(addr, "GET", script, &[("Accept-Encoding", "gzip"), ("If-None-Match", etag)], "");
    assert_eq!((again.status, again.body.len()), (304, 0));
    let page_etag = page.header("etag").unwrap();
    assert_eq!(send(addr, "GET", "/", &[("If-None-Match", page_etag)], "").status, 304);

    // An older version's name still gets the file, not cached for long.
    let old = script.replacen("/static/web/", "/static/web/0000", 1);
    let stale = send(addr, "GET", &old, &[], "");
    assert_eq!((stale.status, stale.header("cache-control")), (200, Some("no-cache")));
    send(addr, "GET", "/static/web/nope/app.js.map", &[], "").err(404, "NOT_FOUND");
    send(addr, "GET", "/static/web/", &[], "").err(404, "NOT_FOUND");
    send(addr, "POST", "/", &[], "x=1").err(405, "METHOD_NOT_ALLOWED");
    send(addr, "GET", "/nope", &[], "").err(404, "NOT_FOUND");
}

#[test]
fn preflights_are_answered_and_cors_is_opt_in() {
    let mut server = TestServer::start();
    let hamlet = server.account(HAMLET);
    let basic = basic_auth(HAMLET, &hamlet.key);
    let origin = [("Origin", "http://app.test"), ("Access-Control-Request-Method", "POST")];
    let pre = send(&server.addr, "OPTIONS", "/api/v1/messages", &origin, "");
    assert_eq!(pre.status, 204);
    assert_eq!(pre.header("allow"), Some("GET, POST, OPTIONS"));
    assert_eq!(pre.header("access-control-allow-origin"), None, "off by default");
    send(&server.addr, "OPTIONS", "/api/v1/nope", &origin, "").err(404, "NOT_FOUND");
    let me =
        send(&server.addr, "GET", "/api/v1/users/me", &[("Authorization", &basic), origin[0]], "");
    assert_eq!((me.status, me.header("access-control-allow-origin")), (200, None));

    server.stop();
    let args: Vec<String> = vec!["--dev".into(), "--cors-origin".into(), "http://app.test".into()];
    server.restart_with_args(args);
    let pre = send(&server.addr, "OPTIONS", "/api/v1/messages", &origin, "");
    assert_eq!(pre.status, 204);
    assert_eq!(pre.header("access-control-allow-origin"), Some("http://app.test"));
    assert_eq!(pre.header("access-control-allow-methods"), Some("GET, POST"));
    assert!(pre.header("access-control-allow-headers").unwrap().contains("Authorization"));
    assert_eq!(pre.header("access-control-allow-credentials"), None, "never with cookies");
    let me =
        send(&server.addr, "GET", "/api/v1/users/me", &[("Authorization", &basic), origin[0]], "");
    assert_eq!(me.header("access-control-allow-origin"), Some("http://app.test"));
    let other = [("Authorization", &*basic), ("Origin", "http://evil.test")];
    let me = send(&server.addr, "GET", "/api/v1/users/me", &other, "");
    assert_eq!((me.status, me.header("access-control-allow-origin")), (200, None));
    // The cookie never works cross-origin, even from the allowed origin.
    let browser = Browser::sign_in(&server, HAMLET);
    let cross = [("Cookie", &*browser.cookie), origin[0], ("X-CSRF-Token", &*browser.csrf)];
    send(&server.addr, "GET", "/api/v1/users/me", &cross, "").err(403, "CSRF_FAILED");
}

#[test]
fn a_signed_in_browser_uses_the_api_with_its_cookie() {
    let server = TestServer::start();
    let browser = Browser::sign_in(&server, HAMLET);
    let me = browser.get("/users/me");
    assert_eq!(me.ok()["email"], HAMLET);
    assert_eq!(me.header("cache-control"), Some("no-store"));
    let sent = browser.post("/messages", "type=stream&to=Denmark&topic=web&content=from+a+browser");
    let id = sent.ok()["id"].as_u64().unwrap();
    let fetched = browser.get(&format!("/messages/{id}"));
    assert_eq!(fetched.ok()["message"]["content"], "<p>from a browser</p>");
    // The page asks again after a reload: the same token.
    let session = send(&server.addr, "GET", "/login/session", &[("Cookie", &browser.cookie)], "");
    assert_eq!(session.ok()["csrf_token"], browser.csrf.as_str());
    // Development sign-in lists the accounts to pick.
    let accounts = send(&server.addr, "GET", "/login/dev_accounts", &[], "").ok();
    let emails: Vec<&str> = accounts["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["email"].as_str())
        .collect();
    assert!(emails.contains(&HAMLET) && emails.contains(&IAGO), "{emails:?}");
    // A Basic-auth client is unaffected by a cookie it happens to send.
    let hamlet = server.account(HAMLET);
    let basic = basic_auth(HAMLET, &hamlet.key);
    let both = [("Authorization", &*basic), ("Cookie", "natter_session=stale")];
    let r = send(
        &server.addr,
        "POST",
        "/api/v1/messages",
        &both,
        "type=stream&to=Denmark&topic=web&content=basic",
    );
    r.ok();
}

#[test]
fn cookie_requests_are_refused_without_origin_and_token() {
    let server = TestServer::start();
    let addr = &server.addr;
    let browser = Browser::sign_in(&server, HAMLET);
    let body = "type=stream&to=Denmark&topic=web&content=forged";
    let (cookie, origin, csrf) = (&*browser.cookie, &*browser.origin, &*browser.csrf);
    let post = |headers: &[(&str, &str)]| send(addr, "POST", "/api/v1/messages", headers, body);

    // No cookie at all: not signed in, and no password dialog asked for
    // by a page's request.
    let none = post(&[("Origin", origin)]);
    none.err(401, "UNAUTHORIZED");
    let unknown =
        post(&[("Cookie", "natter_session=made-up"), ("Origin", origin), ("X-CSRF-Token", csrf)]);
    unknown.err(401, "UNAUTHORIZED");
    assert_eq!(unknown.header("www-authenticate"), None);
    // Another origin, on a write and on a read.
    let evil = "http://evil.test";
    post(&[("Cookie", cookie), ("Origin", evil), ("X-CSRF-Token", csrf)]).err(403, "CSRF_FAILED");
    let read = [("Cookie", cookie), ("Origin", evil)];
    send(addr, "GET", "/api/v1/users/me", &read, "").err(403, "CSRF_FAILED");
    send(addr, "GET", "/login/session", &read, "").err(403, "CSRF_FAILED");
    // A write without Origin, without the token, with a wrong token.
    post(&[("Cookie", cookie), ("X-CSRF-Token", csrf)]).err(403, "CSRF_FAILED");
    let missing = post(&[("Cookie", cookie), ("Origin", origin)]).err(403, "CSRF_FAILED");
    assert!(missing["msg"].as_str().unwrap().contains("missing"), "{missing}");
    let wrong = "x".repeat(csrf.len());
    post(&[("Cookie", cookie), ("Origin", origin), ("X-CSRF-Token", &wrong)])
        .err(403, "CSRF_FAILED");
    // Another account's token does not do either.
    let iago = Browser::sign_in(&server, IAGO);
    post(&[("Cookie", cookie), ("Origin", origin), ("X-CSRF-Token", &iago.csrf)])
        .err(403, "CSRF_FAILED");
    // Another realm's host: the cookie is not that realm's.
    let lear = [("Host", "lear.localhost"), ("Cookie", cookie)];
    send(addr, "GET", "/api/v1/users/me", &lear, "").err(401, "UNAUTHORIZED");
    // None of them sent anything.
    let hamlet = server.client(HAMLET);
    let narrow = r#"[{"operator":"search","operand":"forged"}]"#;
    let found = hamlet.get(
        "/messages",
        &[("anchor", "newest"), ("num_before", "10"), ("num_after", "0"), ("narrow", narrow)],
    );
    assert_eq!(found.ok()["messages"].as_array().unwrap().len(), 0);
    // Uploads and sign-out follow the same rules.
    let upload = [("Cookie", cookie), ("Origin", origin)];
    send(addr, "POST", "/api/v1/user_uploads", &upload, "x=1").err(403, "CSRF_FAILED");
    send(addr, "POST", "/logout", &[("Cookie", cookie), ("Origin", origin)], "")
        .err(403, "CSRF_FAILED");
    assert_eq!(browser.get("/users/me").ok()["email"], HAMLET, "still signed in");
}

#[test]
fn sign_in_is_same_origin_and_checks_passwords() {
    let server = TestServer::start_with(&["--rate-limit", "on"]);
    let addr = &server.addr;
    let origin = format!("http://{addr}");
    server
        .client(IAGO)
        .post(
            "/users",
            &[("email", "horatio@natter.test"), ("full_name", "Horatio"), ("password", "friend1")],
        )
        .ok();
    let login = |headers: &[(&str, &str)], body: &str| send(addr, "POST", "/login", headers, body);
    let with_origin = [("Origin", origin.as_str())];
    login(&[], "username=horatio%40natter.test&password=friend1").err(403, "CSRF_FAILED");
    login(&[("Origin", "http://evil.test")], "username=horatio%40natter.test&password=friend1")
        .err(403, "CSRF_FAILED");
    login(&with_origin, "username=horatio%40natter.test&password=wrong1")
        .err(401, "AUTHENTICATION_FAILED");
    login(&with_origin, "password=friend1").err(400, "REQUEST_VARIABLE_MISSING");
    let r = login(&with_origin, "username=horatio%40natter.test&password=friend1");
    assert_eq!(r.ok()["email"], "horatio@natter.test");
    assert_eq!(send(addr, "GET", "/login", &[], "").status, 405);
    // Failures block the account, as for POST /fetch_api_key.
    for _ in 0..5 {
        login(&with_origin, "username=horatio%40natter.test&password=wrong1");
    }
    login(&with_origin, "username=horatio%40natter.test&password=friend1")
        .err(429, "RATE_LIMIT_HIT");
}

#[test]
fn sign_out_and_new_credentials_end_sessions() {
    let server = TestServer::start();
    let addr = &server.addr;
    // Sign-out: the cookie is cleared and no longer works anywhere.
    let browser = Browser::sign_in(&server, HAMLET);
    let headers = [
        ("Cookie", &*browser.cookie),
        ("Origin", &*browser.origin),
        ("X-CSRF-Token", &*browser.csrf),
    ];
    let out = send(addr, "POST", "/logout", &headers, "");
    out.ok();
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    browser.get("/users/me").err(401, "UNAUTHORIZED");
    send(addr, "GET", "/login/session", &[("Cookie", &browser.cookie)], "")
        .err(401, "UNAUTHORIZED");
    send(addr, "POST", "/logout", &headers, "").err(401, "UNAUTHORIZED");

    // A new API key ends the account's sessions, not others'.
    let browser = Browser::sign_in(&server, HAMLET);
    let other = Browser::sign_in(&server, IAGO);
    browser.post("/users/me/api_key/regenerate", "").ok();
    browser.get("/users/me").err(401, "UNAUTHORIZED");
    assert_eq!(other.get("/users/me").ok()["email"], IAGO);

    // So does a new password.
    server
        .client(IAGO)
        .post(
            "/users",
            &[("email", "horatio@natter.test"), ("full_name", "Horatio"), ("password", "friend1")],
        )
        .ok();
    let origin = [("Origin", other.origin.as_str())];
    let r =
        send(addr, "POST", "/login", &origin, "username=horatio%40natter.test&password=friend1");
    r.ok();
    let cookie = r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let csrf = r.json()["csrf_token"].as_str().unwrap().to_owned();
    let horatio = Browser { addr: addr.clone(), origin: other.origin.clone(), cookie, csrf };
    assert_eq!(horatio.get("/users/me").ok()["email"], "horatio@natter.test");
    let change = "old_password=friend1&new_password=friend2";
    let patch = [
        ("Cookie", &*horatio.cookie),
        ("Origin", &*horatio.origin),
        ("X-CSRF-Token", &*horatio.csrf),
    ];
    send(addr, "PATCH", "/api/v1/settings", &patch, change).ok();
    horatio.get("/users/me").err(401, "UNAUTHORIZED");
}

#[test]
fn sessions_survive_restarts() {
    let mut server = TestServer::start();
    let browser = Browser::sign_in(&server, HAMLET);
    let ended = Browser::sign_in(&server, IAGO);
    let headers =
        [("Cookie", &*ended.cookie), ("Origin", &*ended.origin), ("X-CSRF-Token", &*ended.csrf)];
    send(&server.addr, "POST", "/logout", &headers, "").ok();
    // From the log (a crash), then from a snapshot (a clean stop).
    for clean in [false, true] {
        if clean {
            server.stop();
        } else {
            server.kill();
        }
        server.restart();
        let browser = Browser {
            addr: server.addr.clone(),
            origin: format!("http://{}", server.addr),
            ..browser.clone()
        };
        assert_eq!(browser.get("/users/me").ok()["email"], HAMLET);
        browser.post("/messages", "type=stream&to=Denmark&topic=web&content=after+restart").ok();
        let ended = Browser { addr: server.addr.clone(), ..ended.clone() };
        ended.get("/users/me").err(401, "UNAUTHORIZED");
    }
    // Without --dev: no development sign-in, a password is required; the
    // session made by one still stands.
    server.stop();
    server.restart_with_args(Vec::new());
    let addr = &server.addr;
    send(addr, "GET", "/login/dev_accounts", &[], "").err(404, "NOT_FOUND");
    let origin = format!("http://{addr}");
    let r = send(addr, "POST", "/login", &[("Origin", &origin)], "username=hamlet%40natter.test");
    r.err(400, "REQUEST_VARIABLE_MISSING");
    let browser = Browser { addr: addr.clone(), origin, ..browser };
    assert_eq!(browser.get("/users/me").ok()["email"], HAMLET);
}

/// The page, its files and the sign-in routes are in the request log and
/// the metrics like the API's routes: by route pattern (a static file's
/// versioned name never makes a label of its own), status and caller.
#[test]
fn web_paths_are_logged_and_counted_by_route() {
    let token = "a-metrics-token-of-some-length";
    let mut server = TestServer::start_with(&[
        "--metrics-token",
        token,
        "--log-filter",
        "info",
        "--log-format",
        "json",
    ]);
    let addr = server.addr.clone();
    let page = send(&addr, "GET", "/", &[], "");
    assert_eq!(page.status, 200);
    let html = String::from_utf8(page.body).unwrap();
    let end = html.find("/app.js\"").expect("the script") + "/app.js".len();
    let script = &html[html[..end].rfind('"').unwrap() + 1..end];
    assert_eq!(send(&addr, "GET", script, &[], "").status, 200);
    let old = script.replacen("/static/web/", "/static/web/0000", 1);
    assert_eq!(send(&addr, "GET", &old, &[], "").status, 200);
    send(&addr, "GET", "/login/session", &[], "").err(401, "UNAUTHORIZED");
    let browser = Browser::sign_in(&server, HAMLET);
    send(&addr, "GET", "/login/session", &[("Cookie", &browser.cookie)], "").ok();
    send(&addr, "GET", "/login/nope", &[], "").err(404, "NOT_FOUND");

    let auth = format!("Bearer {token}");
    let metrics = send(&addr, "GET", "/metrics", &[("Authorization", &auth)], "");
    assert_eq!(metrics.status, 200);
    let body = String::from_utf8(metrics.body).unwrap();
    let sample = |name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
            .parse()
            .unwrap()
    };
    let count = |method: &str, route: &str, status: u16| {
        sample(&format!(
            "natter_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}}"
        ))
    };
    assert_eq!(count("GET", "/", 200), 1.0);
    assert_eq!(count("GET", "/static/web/{version}/{file}", 200), 2.0);
    assert_eq!(count("GET", "/login/session", 401), 1.0);
    assert_eq!(count("GET", "/login/session", 200), 1.0);
    assert_eq!(count("POST", "/login", 200), 1.0);
    assert_eq!(count("GET", "-", 404), 1.0);
    assert_eq!(sample("natter_http_request_duration_seconds_count{route=\"/login/session\"}"), 2.0);
    assert!(!body.contains("/static/web/0000"), "no label per file name:\n{body}");

    let hamlet = crate::util::user_id(&server, HAMLET);
    server.stop();
    let log = server.stderr();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["route"].is_string())
        .collect();
    let line = |method: &str, route: &str, status: u16| {
        lines
            .iter()
            .find(|l| l["method"] == method && l["route"] == route && l["status"] == status)
            .unwrap_or_else(|| panic!("no {method} {route} {status} line in:\n{log}"))
    };
    assert!(line("GET", "/", 200)["user"].is_null());
    line("GET", "/static/web/{version}/{file}", 200);
    assert!(line("GET", "/login/session", 401)["user"].is_null());
    assert_eq!(line("GET", "/login/session", 200)["user"], hamlet);
    assert_eq!(line("POST", "/login", 200)["user"], hamlet);
    assert!(!log.contains(&browser.cookie["natter_session=".len()..]), "no session token logged");
    assert!(!log.contains(&browser.csrf), "no CSRF token logged");
}
