//! Operating natter: health and readiness, rate limits, `natter verify`.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{basic_auth, connect, Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const IAGO: &str = "iago@natter.test";

/// A reply with its headers (lowercased names).
struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    json: Value,
}

/// Reads one reply from `stream`.
fn read_reply(stream: &mut impl Read) -> Reply {
    read_reply_to(stream, "GET")
}

/// Reads one reply to a `method` request (a HEAD's has no body).
fn read_reply_to(stream: &mut impl Read, method: &str) -> Reply {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).expect("read"), 1, "closed before a reply");
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if method == "HEAD" {
        return Reply { status, headers, json: Value::Null };
    }
    let len: usize = headers["content-length"].parse().unwrap();
    let mut body = vec![0; len];
    stream.read_exact(&mut body).unwrap();
    Reply { status, headers, json: serde_json::from_slice(&body).unwrap() }
}

/// One request on a fresh connection: `target` as given (not under
/// `/api/v1`), with optional `Authorization` and a form body.
fn request(addr: &str, method: &str, target: &str, auth: Option<&str>, body: &str) -> Reply {
    let mut stream = connect(addr);
    send(&mut stream, addr, method, target, auth, body);
    read_reply_to(&mut stream, method)
}

fn send(
    stream: &mut impl Write,
    addr: &str,
    method: &str,
    target: &str,
    auth: Option<&str>,
    body: &str,
) {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\n");
    if let Some(auth) = auth {
        head.push_str(&format!("Authorization: {auth}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
}

fn key_of(server: &TestServer, email: &str) -> String {
    basic_auth(email, &server.account(email).key)
}

#[test]
fn health_and_readiness_answer_outside_the_api() {
    let server = TestServer::start();
    let alive = request(&server.addr, "GET", "/health", None, "");
    assert_eq!(alive.status, 200);
    assert_eq!(alive.json["status"], "alive");
    let ready = request(&server.addr, "GET", "/health/ready", None, "");
    assert_eq!(ready.status, 200, "{}", ready.json);
    assert_eq!(ready.json["status"], "ready");
    assert!(ready.json["seq"].as_u64().unwrap() > 0, "the seeded state is recovered");
    let head = request(&server.addr, "HEAD", "/health", None, "");
    assert_eq!(head.status, 200);
    let wrong = request(&server.addr, "POST", "/health/ready", None, "");
    assert_eq!((wrong.status, wrong.json["code"].as_str()), (405, Some("METHOD_NOT_ALLOWED")));
    // Not under /api/v1, and nothing else is outside it.
    let api = request(&server.addr, "GET", "/api/v1/health", None, "");
    assert_eq!(api.status, 404);
    let other = request(&server.addr, "GET", "/healthz", None, "");
    assert_eq!(other.status, 404);
}

/// The real defaults (200 requests a minute per user): the first 200
/// requests pass with the headers counting down, and a burst runs into a
/// 429 shaped as Zulip's; another user is not affected.
#[test]
fn the_default_limit_per_user_is_zulips_200_a_minute() {
    let server = TestServer::start_with(&["--rate-limit", "on"]);
    let auth = key_of(&server, HAMLET);
    let mut stream = connect(&server.addr);
    let mut refused = None;
    for i in 0..1000 {
        send(&mut stream, &server.addr, "GET", "/api/v1/users/me", Some(&auth), "");
        let reply = read_reply(&mut stream);
        assert_eq!(reply.headers["x-ratelimit-limit"], "200");
        if reply.status == 429 {
            refused = Some((i, reply));
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.json);
        if i == 0 {
            assert_eq!(reply.headers["x-ratelimit-remaining"], "199");
        }
    }
    let (at, reply) = refused.expect("a burst of 1000 requests is limited");
    // A full bucket holds 200 (a refill during the burst only adds).
    assert!(at >= 200, "refused after {at} requests");
    assert_eq!(reply.json["result"], "error");
    assert_eq!(reply.json["code"], "RATE_LIMIT_HIT");
    assert_eq!(reply.json["msg"], "API usage exceeded rate limit");
    let after = reply.json["retry-after"].as_f64().unwrap();
    // One request's worth of a 200/60 s bucket: at most 0.3 s.
    assert!(after > 0.0 && after <= 0.3, "retry-after {after}");
    assert_eq!(reply.headers["retry-after"], "1");
    assert_eq!(reply.headers["x-ratelimit-remaining"], "0");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let reset: u64 = reply.headers["x-ratelimit-reset"].parse().unwrap();
    assert!(reset > now && reset <= now + 61, "reset {reset} now {now}");
    let othello =
        request(&server.addr, "GET", "/api/v1/users/me", Some(&key_of(&server, OTHELLO)), "");
    assert_eq!(othello.status, 200);
    assert_eq!(othello.headers["x-ratelimit-remaining"], "199");
}

/// Wrong passwords and wrong API keys: five per account (Zulip's
/// `authenticate_by_username`), after which even the right key is refused
/// for a while; other accounts are not affected.
#[test]
fn failed_credentials_are_limited_per_account() {
    let server = TestServer::start_with(&["--rate-limit", "on"]);
    let body = "username=hamlet%40natter.test&password=guess";
    for _ in 0..5 {
        let r = request(&server.addr, "POST", "/api/v1/fetch_api_key", None, body);
        assert_eq!((r.status, r.json["code"].as_str()), (401, Some("AUTHENTICATION_FAILED")));
    }
    let r = request(&server.addr, "POST", "/api/v1/fetch_api_key", None, body);
    assert_eq!((r.status, r.json["code"].as_str()), (429, Some("RATE_LIMIT_HIT")), "{}", r.json);
    assert!(r.headers.contains_key("retry-after"));
    // The account is blocked for its API key too.
    let right = key_of(&server, HAMLET);
    let r = request(&server.addr, "GET", "/api/v1/users/me", Some(&right), "");
    assert_eq!(r.status, 429, "{}", r.json);
    // Guessing another account's key: five 401s, then 429 even for the
    // right key.
    let wrong = basic_auth(OTHELLO, "not-the-key");
    for _ in 0..5 {
        let r = request(&server.addr, "GET", "/api/v1/users/me", Some(&wrong), "");
        assert_eq!((r.status, r.json["code"].as_str()), (401, Some("INVALID_API_KEY")));
    }
    let r = request(&server.addr, "GET", "/api/v1/users/me", Some(&key_of(&server, OTHELLO)), "");
    assert_eq!((r.status, r.json["code"].as_str()), (429, Some("RATE_LIMIT_HIT")));
    // A third account from the same address is fine (per-IP failures: 30).
    let r = request(&server.addr, "GET", "/api/v1/users/me", Some(&key_of(&server, IAGO)), "");
    assert_eq!(r.status, 200, "{}", r.json);
}

/// Log-in attempts per IP, even with a different account each time, and
/// unauthenticated requests per IP.
#[test]
fn log_in_attempts_and_anonymous_requests_are_limited_per_ip() {
    let server = TestServer::start_with(&["--rate-limit", "auth-by-ip=3/600,api-by-ip=5/600"]);
    for email in ["hamlet", "othello", "iago"] {
        let body = format!("username={email}%40natter.test");
        let r = request(&server.addr, "POST", "/api/v1/dev_fetch_api_key", None, &body);
        assert_eq!(r.status, 200, "{}", r.json);
    }
    let body = "username=cordelia%40natter.test";
    let r = request(&server.addr, "POST", "/api/v1/dev_fetch_api_key", None, body);
    assert_eq!((r.status, r.json["code"].as_str()), (429, Some("RATE_LIMIT_HIT")));
    assert_eq!(r.headers["x-ratelimit-limit"], "3");
    // Anonymous requests: api-by-ip counted the three log-ins too.
    let anon = Client { addr: server.addr.clone(), auth: None, host: None };
    anon.get("/server_settings", &[]).ok();
    anon.get("/server_settings", &[]).ok();
    anon.get("/server_settings", &[]).err(429, "RATE_LIMIT_HIT");
    // An authenticated user has their own budget.
    server.client(HAMLET).get("/users/me", &[]).ok();
}

#[test]
fn invitations_have_a_budget_of_their_own() {
    let server = TestServer::start_with(&["--rate-limit", "signup=2/3600"]);
    let iago = server.client(IAGO);
    let invite = |to: &str| iago.post("/invites", &[("invitee_emails", to), ("stream_ids", "[]")]);
    invite("a@elsinore.test").ok();
    invite("b@elsinore.test").ok();
    invite("c@elsinore.test").err(429, "RATE_LIMIT_HIT");
    // Other requests of the same user still pass.
    iago.get("/users/me", &[]).ok();
}

#[test]
fn rate_limits_off_sends_no_headers_and_bad_specs_are_refused() {
    let server = TestServer::start();
    let r = request(&server.addr, "GET", "/api/v1/users/me", Some(&key_of(&server, HAMLET)), "");
    assert_eq!(r.status, 200);
    assert!(!r.headers.contains_key("x-ratelimit-limit"), "{:?}", r.headers);
    let out = Command::new(env!("CARGO_BIN_EXE_natter"))
        .args(["--rate-limit", "api-by-user=0/60", "--data-dir"])
        .arg(server.data_dir().join("never"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rate-limit"));
}

// --- natter verify ---

/// `natter verify` on `dir`: exit code and stdout.
fn verify(dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_natter"))
        .arg("verify")
        .arg("--data-dir")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap(), stdout)
}

fn send_messages(c: &Client, n: usize) {
    for i in 0..n {
        let content = format!("message {i} {}", "x".repeat(200));
        c.post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "verify"), ("content", &content)],
        )
        .ok();
    }
}

/// A server's data dir after a crash, with a log of several small segments
/// and no snapshot; the segments, oldest first.
fn crashed_with_segments() -> (TestServer, PathBuf, Vec<PathBuf>) {
    let mut server = TestServer::start_with(&["--segment-bytes", "4096", "--snapshot-every", "0"]);
    send_messages(&server.client(HAMLET), 60);
    server.kill();
    let data = server.data_dir().join("data");
    let mut segments: Vec<PathBuf> =
        fs::read_dir(data.join("wal")).unwrap().map(|e| e.unwrap().path()).collect();
    segments.sort();
    assert!(segments.len() >= 4, "{segments:?}");
    (server, data, segments)
}

#[test]
fn verify_passes_a_good_data_dir() {
    let (mut server, data, _) = crashed_with_segments();
    let (code, out) = verify(&data);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok: "), "{out}");
    assert!(out.contains("snapshots: 0 checked"), "{out}");
    // After a clean shutdown: a snapshot, checked too.
    server.restart();
    server.stop();
    let (code, out) = verify(&data);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("snapshots: 1 checked"), "{out}");
    // verify changed nothing: the server starts on it.
    server.restart();
    server.client(HAMLET).get("/users/me", &[]).ok();
}

#[test]
fn verify_finds_a_flipped_byte_in_a_segment() {
    let (_server, data, segments) = crashed_with_segments();
    let victim = &segments[1];
    let mut bytes = fs::read(victim).unwrap();
    // Inside the first frame (the segment header is 24 bytes).
    bytes[24 + 30] ^= 0x40;
    fs::write(victim, &bytes).unwrap();
    let (code, out) = verify(&data);
    assert_eq!(code, 1, "{out}");
    let name = victim.file_name().unwrap().to_str().unwrap();
    assert!(out.contains(name) && out.contains("at offset 24"), "{out}");
}

#[test]
fn verify_finds_a_missing_segment() {
    let (_server, data, segments) = crashed_with_segments();
    fs::remove_file(&segments[1]).unwrap();
    let (code, out) = verify(&data);
    assert_eq!(code, 1, "{out}");
    // Named: the segment after the gap, which does not start where the
    // one before it ends.
    let after = segments[2].file_name().unwrap().to_str().unwrap();
    assert!(out.contains(after), "{out}");
    // The first segment gone: the log no longer starts at seq 1.
    let (_server, data, segments) = crashed_with_segments();
    fs::remove_file(&segments[0]).unwrap();
    let (code, out) = verify(&data);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("missing"), "{out}");
}

#[test]
fn verify_finds_a_truncated_snapshot() {
    let mut server = TestServer::start();
    send_messages(&server.client(HAMLET), 5);
    server.stop();
    let data = server.data_dir().join("data");
    let snapshot = fs::read_dir(data.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "bin"))
        .unwrap();
    let len = fs::metadata(&snapshot).unwrap().len();
    fs::OpenOptions::new().write(true).open(&snapshot).unwrap().set_len(len / 2).unwrap();
    let (code, out) = verify(&data);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(snapshot.file_name().unwrap().to_str().unwrap()), "{out}");
    // And a data dir that is not there.
    let (code, out) = verify(&data.join("nowhere"));
    assert_eq!(code, 1, "{out}");
}

// --- natter backup ---

/// Channel messages sent in topic `topic` as the restored server shows
/// them, oldest first.
fn contents_in_topic(c: &Client, topic: &str) -> Vec<String> {
    let narrow = format!(r#"[["channel","general"],["topic","{topic}"]]"#);
    let r = c
        .get(
            "/messages",
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "5000"),
                ("narrow", &narrow),
            ],
        )
        .ok();
    r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// A backup of a server taken while one writer sends without pause (and
/// snapshots cut and delete segments) restores to exactly the state at
/// the backup's seq: the messages acknowledged before it began, then a
/// prefix of those sent during it, in order, and nothing else.
/// `natter backup --data-dir from --to to`.
fn run_backup(from: &Path, to: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_natter"))
        .arg("backup")
        .arg("--data-dir")
        .arg(from)
        .arg("--to")
        .arg(to)
        .output()
        .unwrap()
}

/// A stopped server whose data dir is gone: where a backup is restored.
fn stopped_server_without_data() -> (TestServer, PathBuf) {
    let mut server = TestServer::start();
    server.kill();
    let target = server.data_dir().join("data");
    fs::remove_dir_all(&target).unwrap();
    (server, target)
}

#[test]
fn a_backup_under_continuous_sends_restores_to_its_seq() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let server = TestServer::start_with(&["--segment-bytes", "4096", "--snapshot-every", "40"]);
    // Where the copy goes: the data dir of a second server, not running.
    let (mut restored, target) = stopped_server_without_data();

    let stop = AtomicBool::new(false);
    let acked = AtomicUsize::new(0);
    let (sent, before, output) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let c = server.client(HAMLET);
            let mut sent = Vec::new();
            while !stop.load(Ordering::Acquire) {
                let content = format!("backup {}", sent.len());
                c.post(
                    "/messages",
                    &[
                        ("type", "stream"),
                        ("to", "general"),
                        ("topic", "backup"),
                        ("content", &content),
                    ],
                )
                .ok();
                sent.push(format!("<p>{content}</p>"));
                acked.store(sent.len(), Ordering::Release);
            }
            sent
        });
        while acked.load(Ordering::Acquire) < 60 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let before = acked.load(Ordering::Acquire);
        let output = run_backup(&server.data_dir().join("data"), &target);
        // The writer goes on after the copy too.
        let after = acked.load(Ordering::Acquire);
        while acked.load(Ordering::Acquire) < after + 20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, Ordering::Release);
        (writer.join().unwrap(), before, output)
    });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let seq: u64 = stdout
        .split(" at seq ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no seq in {stdout:?}"));

    // Restore: start natter on the copy (with the first server's keys).
    restored.accounts = server.accounts.clone();
    restored.restart();
    let ready = request(&restored.addr, "GET", "/health/ready", None, "");
    assert_eq!(ready.json["seq"], seq, "the restored server is at the backup's seq");
    let got = contents_in_topic(&restored.client(HAMLET), "backup");
    assert!(got.len() >= before, "{} restored, {before} acknowledged before the backup", got.len());
    assert!(got.len() < sent.len(), "{} restored of {} sent", got.len(), sent.len());
    assert_eq!(got, sent[..got.len()], "the restored messages are the first ones sent, in order");
    // The original goes on, unaffected, with every message.
    assert_eq!(contents_in_topic(&server.client(HAMLET), "backup"), sent);
}

#[test]
fn a_backup_refuses_a_non_empty_target_and_a_non_data_dir() {
    let server = TestServer::start();
    let data = server.data_dir().join("data");
    let run = run_backup;
    let out = run(&data, server.data_dir());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
    let out = run(&server.data_dir().join("nowhere"), &server.data_dir().join("copy"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a natter data dir"));
    // A good one verifies.
    let copy = server.data_dir().join("copy");
    let out = run(&data, &copy);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(verify(&copy).0, 0);
}

/// A backup carries the uploaded files: restored, a message's attachment
/// downloads with the same bytes.
#[test]
fn a_backup_carries_the_uploaded_files() {
    let server = TestServer::start();
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
    let url = crate::api_uploads::upload(
        &server,
        HAMLET,
        "notes.bin",
        "application/octet-stream",
        &bytes,
    );
    let (mut restored, target) = stopped_server_without_data();
    let out = run_backup(&server.data_dir().join("data"), &target);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" 1 uploaded files"), "{out:?}");
    assert!(!target.join("uploads").join("tmp").exists(), "the staging directory is left out");
    restored.restart();
    let key = restored.account(HAMLET).key;
    let d = crate::api_uploads::download(&restored, &url, Some((HAMLET, &key)), &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.body, bytes);
}

// --- logs ---

/// A run's log with the request lines on: one line per request with its
/// route pattern, status and caller, and never an API key, a password or
/// message content — not even the keys of failed attempts.
#[test]
fn the_log_has_a_line_per_request_and_no_secrets() {
    for format in ["text", "json"] {
        let mut server = TestServer::start_with(&["--log-filter", "info", "--log-format", format]);
        let hamlet = server.client(HAMLET);
        let secret = "the-content-nobody-may-log";
        hamlet
            .post(
                "/messages",
                &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", secret)],
            )
            .ok();
        let id = crate::util::user_id(&server, HAMLET);
        hamlet.get("/users/me", &[]).ok();
        server
            .anonymous()
            .post("/fetch_api_key", &[("username", HAMLET), ("password", "hunter2-password")]);
        server.anonymous().post("/dev_fetch_api_key", &[("username", OTHELLO)]).ok();
        hamlet
            .with_auth(HAMLET, "a-wrong-key-guess")
            .get("/users/me", &[])
            .err(401, "INVALID_API_KEY");
        server.stop();
        let log = server.stderr();
        for account in &server.accounts {
            assert!(
                !log.contains(&account.key),
                "{format}: the key of {} is in the log",
                account.email
            );
        }
        for secret in [secret, "hunter2-password", "a-wrong-key-guess", "Basic "] {
            assert!(!log.contains(secret), "{format}: {secret:?} in the log:\n{log}");
        }
        let requests: Vec<&str> = log.lines().filter(|l| l.contains("request")).collect();
        let sends: Vec<&&str> = requests.iter().filter(|l| l.contains("/messages")).collect();
        assert_eq!(sends.len(), 1, "{format}: {log}");
        let send = sends[0];
        if format == "json" {
            for line in log.lines() {
                let _: Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            }
            let send: Value = serde_json::from_str(send).unwrap();
            assert_eq!(send["method"], "POST");
            assert_eq!(send["route"], "/messages");
            assert_eq!(send["status"], 200);
            assert_eq!(send["user"], id);
            assert!(send["ms"].as_f64().unwrap() > 0.0 && send["bytes"].as_u64().unwrap() > 0);
            assert!(send["id"].as_u64().unwrap() >= 1);
        } else {
            assert!(send.starts_with("natter: request "), "{send}");
            for field in ["POST", "route=\"/messages\"", "status=200", &format!("user={id}")] {
                assert!(send.contains(field), "{field} missing from {send}");
            }
            assert!(log.contains("natter: clean shutdown complete"), "{log}");
        }
        // The refused key: a 401 line without a user.
        assert!(
            requests.iter().any(|l| l.contains("401") && !l.contains("user")),
            "{format}: {log}"
        );
    }
}

/// By default the request lines are off, the lifecycle events on.
#[test]
fn the_default_log_has_lifecycle_events_but_no_request_lines() {
    let mut server = TestServer::start();
    server.client(HAMLET).get("/users/me", &[]).ok();
    server.stop();
    let log = server.stderr();
    assert!(log.contains("natter: recovered state at seq"), "{log}");
    assert!(log.contains("natter: snapshot at seq"), "{log}");
    assert!(!log.lines().any(|l| l.starts_with("natter: request")), "{log}");
}

// --- metrics ---

const METRICS_TOKEN: &str = "a-metrics-token-of-some-length";

#[test]
fn metrics_need_their_token_and_count_requests_by_route_and_status() {
    let server = TestServer::start_with(&["--metrics-token", METRICS_TOKEN]);
    let hamlet = server.client(HAMLET);
    hamlet.get("/users/me", &[]).ok();
    hamlet.get("/users/me", &[]).ok();
    server.anonymous().get("/users/me", &[]).err(401, "UNAUTHORIZED");
    for auth in
        [None, Some("Bearer wrong-token-of-some-length".to_owned()), Some(key_of(&server, HAMLET))]
    {
        let r = request(&server.addr, "GET", "/metrics", auth.as_deref(), "");
        assert_eq!((r.status, r.json["code"].as_str()), (401, Some("UNAUTHORIZED")), "{auth:?}");
    }
    let mut stream = connect(&server.addr);
    let head = format!(
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {METRICS_TOKEN}\r\nConnection: close\r\n\r\n",
        server.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    let sample = |name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
            .parse()
            .unwrap()
    };
    let ok = r#"natter_http_requests_total{method="GET",route="/users/me",status="200"}"#;
    let refused = r#"natter_http_requests_total{method="GET",route="/users/me",status="401"}"#;
    assert_eq!(sample(ok), 2.0);
    assert_eq!(sample(refused), 1.0);
    assert_eq!(sample(r#"natter_http_request_duration_seconds_count{route="/users/me"}"#), 3.0);
    assert!(body.contains("# TYPE natter_http_requests_total counter"), "{body}");
    assert!(sample("natter_users") > 0.0 && sample("natter_realms") >= 1.0);
    assert!(sample("natter_process_resident_memory_bytes") > 0.0);
    assert!(sample("natter_applied_seq") > 0.0);
    assert!(!body.contains(&server.account(HAMLET).key), "no secrets in metrics");
}

/// Reads `GET /metrics` from the `--metrics-listen` address.
fn scrape(addr: &str) -> String {
    let mut stream = connect(addr);
    let head = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_owned()
}

/// The value of the sample `name` (with its labels) in `body`.
fn sample_of(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
        .parse()
        .unwrap()
}

#[test]
fn the_metrics_listener_serves_metrics_alone_and_without_a_token() {
    let server =
        TestServer::start_with(&["--metrics-listen", "127.0.0.1:0", "--snapshot-every", "3"]);
    let metrics = server.metrics_addr.clone().expect("the metrics address is printed");
    // Without --metrics-token the main listener has no metrics route.
    let main = request(&server.addr, "GET", "/metrics", None, "");
    assert_eq!(main.status, 404);
    // The metrics listener serves nothing else.
    let hamlet_key = key_of(&server, HAMLET);
    for target in ["/api/v1/users/me", "/health", "/"] {
        let r = request(&metrics, "GET", target, Some(&hamlet_key), "");
        assert_eq!((r.status, r.json["code"].as_str()), (404, Some("NOT_FOUND")), "{target}");
    }
    let posted = request(&metrics, "POST", "/metrics", None, "");
    assert_eq!(posted.status, 404);

    let hamlet = server.client(HAMLET);
    let queue = hamlet.post("/register", &[("event_types", r#"["message"]"#)]).ok();
    assert!(queue["queue_id"].is_string());
    let before = scrape(&metrics);
    send_messages(&hamlet, 4);
    let body = scrape(&metrics);
    let grew = |name: &str| sample_of(&body, name) > sample_of(&before, name);
    // Each send is a commit made durable by a flush of the log.
    assert!(grew("natter_log_fsync_duration_seconds_count"), "{body}");
    assert!(grew("natter_log_commit_group_records_sum"), "{body}");
    assert!(grew("natter_log_appended_bytes_total"), "{body}");
    assert!(grew("natter_events_queued_total"), "the registered queue got the messages");
    let group = sample_of(&body, "natter_log_commit_group_records_sum")
        - sample_of(&before, "natter_log_commit_group_records_sum");
    assert!(group >= 4.0, "4 sends are at least 4 records: {group}");
    assert!(sample_of(&body, r#"natter_log_fsync_duration_seconds_bucket{le="+Inf"}"#) > 0.0);
    // Per realm: the seeded realms' users, and the messages just sent.
    let root_users = sample_of(&body, r#"natter_realm_users{realm=""}"#);
    let lear_users = sample_of(&body, r#"natter_realm_users{realm="lear"}"#);
    assert_eq!(root_users + lear_users, sample_of(&body, "natter_users"));
    let sent = sample_of(&body, r#"natter_realm_messages{realm=""}"#)
        - sample_of(&before, r#"natter_realm_messages{realm=""}"#);
    assert_eq!(sent, 4.0);
    assert!(sample_of(&body, "natter_connections_accepted_total") >= 1.0);
    assert_eq!(sample_of(&body, "natter_connections_refused_total"), 0.0);
    assert!(sample_of(&body, "natter_recovery_seconds") >= 0.0);
    // With a snapshot every 3 changes, one was written since start.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let body = loop {
        let body = scrape(&metrics);
        if sample_of(&body, "natter_snapshots_written_total") >= 1.0 {
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "no snapshot was written: {body}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(sample_of(&body, "natter_snapshot_size_bytes") > 0.0);
    assert!(sample_of(&body, "natter_snapshot_timestamp_seconds") > 1.6e9);
    assert!(sample_of(&body, "natter_snapshot_duration_seconds") > 0.0);
}

#[test]
fn refused_connections_are_counted() {
    let server =
        TestServer::start_with(&["--metrics-listen", "127.0.0.1:0", "--max-connections", "1"]);
    let metrics = server.metrics_addr.clone().unwrap();
    let held = connect(&server.addr);
    // The first connection is open: wait until the server counts it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sample_of(&scrape(&metrics), "natter_connections_open") < 1.0 {
        assert!(std::time::Instant::now() < deadline, "the connection was never counted");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let refused = request(&server.addr, "GET", "/health", None, "");
    assert_eq!(refused.status, 503);
    let body = scrape(&metrics);
    assert_eq!(sample_of(&body, "natter_connections_refused_total"), 1.0);
    drop(held);
}

#[test]
fn metrics_are_off_by_default_and_a_short_token_is_refused() {
    let server = TestServer::start();
    let r = request(&server.addr, "GET", "/metrics", Some(&format!("Bearer {METRICS_TOKEN}")), "");
    assert_eq!(r.status, 404);
    let out = Command::new(env!("CARGO_BIN_EXE_natter"))
        .args(["--metrics-token", "short", "--data-dir"])
        .arg(server.data_dir().join("never"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metrics-token"));
}

/// Long-polls are not counted: a busy realm's client polls as fast as
/// events arrive.
#[test]
fn event_polls_are_not_rate_limited() {
    let server = TestServer::start_with(&["--rate-limit", "api-by-user=3/600"]);
    let hamlet = server.client(HAMLET);
    let queue = hamlet.post("/register", &[("event_types", r#"["message"]"#)]).ok();
    let queue = queue["queue_id"].as_str().unwrap().to_owned();
    for _ in 0..6 {
        hamlet
            .get(
                "/events",
                &[("queue_id", &queue), ("last_event_id", "-1"), ("dont_block", "true")],
            )
            .ok();
    }
    hamlet.get("/users/me", &[]).ok();
    hamlet.get("/users/me", &[]).ok();
    hamlet.get("/users/me", &[]).err(429, "RATE_LIMIT_HIT");
}

// --- shutdown ---

/// A server whose heavy reads wait at `gate` (`NATTER_READ_GATE`) until a
/// `release` file appears there.
fn gated(gate: &Path, extra: &[&str]) -> TestServer {
    // Every search goes to the reader pool, however few candidates.
    let mut args = vec!["--light-read-candidates", "0"];
    args.extend_from_slice(extra);
    TestServer::start_with_env(&args, &[("NATTER_READ_GATE", gate.to_str().unwrap())])
}

/// A search (a heavy read) on its own connection and thread.
fn held_search(server: &TestServer) -> std::thread::JoinHandle<crate::util::Response> {
    let client = server.client(HAMLET);
    std::thread::spawn(move || {
        client.get(
            "/messages",
            &[("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["search","verify"]]"#)],
        )
    })
}

/// Waits for a condition (the deadline turns a regression into a failure
/// rather than a hang).
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn shutting_down(server: &TestServer) -> bool {
    request(&server.addr, "GET", "/health/ready", None, "").status == 503
}

#[test]
fn sigterm_drains_requests_in_flight_then_snapshots_and_exits_0() {
    let gate = tempfile::tempdir().unwrap();
    let mut server = gated(gate.path(), &["--shutdown-grace-secs", "120"]);
    let hamlet = server.client(HAMLET);
    send_messages(&hamlet, 3);
    let reader = held_search(&server);
    wait_for("the search reached a reader thread", || gate.path().join("started-0").exists());
    server.signal("TERM");
    wait_for("readiness turned 503", || shutting_down(&server));
    // New requests are refused while the one in flight finishes.
    let refused = server.client(OTHELLO).get("/users/me", &[]);
    assert_eq!(refused.status, 503, "{}", refused.json);
    assert!(!reader.is_finished(), "the held read answered before its release");
    std::fs::write(gate.path().join("release"), b"").unwrap();
    let reply = reader.join().unwrap();
    assert_eq!(reply.status, 200, "the request in flight was answered: {}", reply.json);
    let status = server.wait_exit(std::time::Duration::from_secs(120)).expect("natter exited");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    let log = server.stderr();
    assert!(log.contains("clean shutdown complete"), "{log}");
    assert!(!log.contains("still in flight"), "the read finished within the grace: {log}");
    let snapshots = fs::read_dir(server.data_dir().join("data").join("snapshots")).unwrap();
    assert!(snapshots.count() >= 1, "the final snapshot was written");
    server.restart();
    assert_eq!(contents_in_topic(&server.client(HAMLET), "verify").len(), 3);
}

#[test]
fn a_second_signal_exits_at_once_without_waiting_for_requests() {
    let gate = tempfile::tempdir().unwrap();
    let mut server = gated(gate.path(), &["--shutdown-grace-secs", "600"]);
    let hamlet = server.client(HAMLET);
    send_messages(&hamlet, 2);
    let _reader = held_search(&server);
    wait_for("the search reached a reader thread", || gate.path().join("started-0").exists());
    server.signal("TERM");
    wait_for("readiness turned 503", || shutting_down(&server));
    // The read is never released: only the second signal can end this.
    server.signal("INT");
    let status = server.wait_exit(std::time::Duration::from_secs(120)).expect("natter exited");
    assert_eq!(status.code(), Some(1), "{}", server.stderr());
    let log = server.stderr();
    assert!(log.contains("exiting at once"), "{log}");
    assert!(!log.contains("clean shutdown complete"), "{log}");
    // What was acknowledged is in the log: a restart recovers it.
    server.restart();
    assert_eq!(contents_in_topic(&server.client(HAMLET), "verify").len(), 2);
}
