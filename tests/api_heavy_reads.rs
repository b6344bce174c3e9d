//! Heavy reads (narrows no index answers exactly, such as `search`) run on
//! the reader pool, never on an HTTP worker: other requests on the same
//! one-worker server complete while such a read is held in progress, and
//! past the per-user or total bound a read is refused with 429
//! `RATE_LIMIT_HIT`. The server's `NATTER_READ_GATE` holds every heavy
//! read on its reader thread (after announcing it as `started-<n>`) until
//! the test creates `release`.

use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Client, Response, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const CORDELIA: &str = "cordelia@natter.test";

fn gated_server(gate: &Path, extra: &[&str]) -> TestServer {
    // Every read an index does not answer exactly goes to the pool, how
    // few candidates it has (the dev realm is small).
    let mut args = vec!["--light-read-candidates", "0"];
    args.extend_from_slice(extra);
    gated_server_with(gate, &args)
}

fn gated_server_with(gate: &Path, args: &[&str]) -> TestServer {
    let gate = gate.to_str().expect("utf-8 path");
    TestServer::start_with_env(args, &[("NATTER_READ_GATE", gate)])
}

/// A search for `word` on its own connection and thread.
fn search(server: &TestServer, who: &str, word: &str) -> JoinHandle<Response> {
    let client = server.client(who);
    let narrow = format!(r#"[["search","{word}"]]"#);
    std::thread::spawn(move || {
        client.get(
            "/messages",
            &[("anchor", "newest"), ("num_before", "20"), ("num_after", "0"), ("narrow", &narrow)],
        )
    })
}

/// Waits until the gate has announced `n` heavy reads (a condition, not a
/// duration: the deadline only turns a regression into a failure rather
/// than a hang).
fn wait_started(gate: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while (0..n).any(|i| !gate.join(format!("started-{i}")).exists()) {
        assert!(Instant::now() < deadline, "{n} heavy reads never reached a reader thread");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn release(gate: &Path) {
    std::fs::write(gate.join("release"), b"").unwrap();
}

fn ids(reply: &Value) -> Vec<u64> {
    reply["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

fn post(c: &Client, content: &str) -> u64 {
    let params = [("type", "stream"), ("to", "general"), ("topic", "gate"), ("content", content)];
    c.post("/messages", &params).ok()["id"].as_u64().unwrap()
}

#[test]
fn a_held_search_does_not_delay_a_send_on_a_one_worker_server() {
    let gate = tempfile::tempdir().unwrap();
    let server = gated_server(gate.path(), &["--workers", "1"]);
    let reader = search(&server, HAMLET, "raised");
    wait_started(gate.path(), 1);
    // The search is on a reader thread and cannot finish before `release`:
    // a send, a light read and a register on other connections of the
    // only worker complete meanwhile.
    let othello = server.client(OTHELLO);
    let sent = post(&othello, "raising the portcullis");
    let light = othello.get(
        "/messages",
        &[("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["stream","general"]]"#)],
    );
    assert!(ids(&light.ok()).contains(&sent));
    othello.post("/register", &[]).ok();
    assert!(!reader.is_finished(), "the held search answered before its release");
    release(gate.path());
    // It ran after the send, so it finds the message sent while it waited
    // ("raised" and "raising" share their stem), marked.
    let found = reader.join().unwrap().ok();
    assert_eq!(ids(&found), [sent]);
    let marked = found["messages"][0]["match_content"].as_str().unwrap();
    assert!(marked.contains("<span class=\"highlight\">raising</span>"), "{marked}");
}

#[test]
fn a_search_with_few_candidates_is_light() {
    let gate = tempfile::tempdir().unwrap();
    let server =
        gated_server_with(gate.path(), &["--workers", "1", "--light-read-candidates", "3"]);
    let hamlet = server.client(HAMLET);
    // A fresh server's word lists cover every message from the first
    // (only a restart builds them, in the background).
    // An absent word has no candidates: a light read, answered at once,
    // though the gate holds every read of the heavy lane.
    let absent = search(&server, HAMLET, "zyzzyva").join().unwrap().ok();
    assert!(ids(&absent).is_empty());
    let sent: Vec<u64> = (0..3).map(|i| post(&hamlet, &format!("zyzzyva number {i}"))).collect();
    let rare = search(&server, HAMLET, "zyzzyva").join().unwrap().ok();
    assert_eq!(ids(&rare), sent);
    assert!(!gate.path().join("started-0").exists(), "a light search reached the heavy lane");
    // A fourth makes the word's list longer than the bound: heavy.
    let fourth = post(&hamlet, "zyzzyva again");
    let reader = search(&server, HAMLET, "zyzzyva");
    wait_started(gate.path(), 1);
    release(gate.path());
    let mut all = sent.clone();
    all.push(fourth);
    assert_eq!(ids(&reader.join().unwrap().ok()), all);
}

#[test]
fn heavy_reads_past_the_per_user_bound_are_rate_limited() {
    let gate = tempfile::tempdir().unwrap();
    let server = gated_server(gate.path(), &[]);
    let held: Vec<_> = (0..2).map(|_| search(&server, HAMLET, "anything")).collect();
    wait_started(gate.path(), 2);
    let hamlet = server.client(HAMLET);
    let narrow = [("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["search","x"]]"#)];
    let refused = hamlet.get("/messages", &narrow).err(429, "RATE_LIMIT_HIT");
    assert_eq!(refused["retry-after"].as_f64(), Some(1.0));
    assert_eq!(refused["msg"], "API usage exceeded rate limit");
    // A light read of the same user is not a heavy one: served at once.
    let light =
        [("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["stream","general"]]"#)];
    hamlet.get("/messages", &light).ok();
    // Another user's heavy read is admitted; it waits for a reader thread.
    let other = search(&server, OTHELLO, "anything");
    release(gate.path());
    for reader in held.into_iter().chain([other]) {
        reader.join().unwrap().ok();
    }
    // The places were given back.
    hamlet.get("/messages", &narrow).ok();
}

#[test]
fn heavy_reads_past_the_total_bound_are_rate_limited() {
    let gate = tempfile::tempdir().unwrap();
    let server = gated_server(gate.path(), &["--max-heavy-reads", "2"]);
    let held = [search(&server, HAMLET, "anything"), search(&server, OTHELLO, "anything")];
    wait_started(gate.path(), 2);
    let cordelia = server.client(CORDELIA);
    let narrow = [("anchor", "newest"), ("num_before", "5"), ("narrow", r#"[["is","mentioned"]]"#)];
    cordelia.get("/messages", &narrow).err(429, "RATE_LIMIT_HIT");
    release(gate.path());
    for reader in held {
        reader.join().unwrap().ok();
    }
    cordelia.get("/messages", &narrow).ok();
}
