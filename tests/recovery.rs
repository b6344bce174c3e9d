//! Restarts: crash (SIGKILL) and clean (SIGTERM), with and without
//! snapshots; a torn log tail is repaired; corruption refuses to start.

use std::fs;
use std::path::PathBuf;

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";

fn send(c: &Client, content: &str) -> u64 {
    let r = c.post(
        "/messages",
        &[("type", "stream"), ("to", "general"), ("topic", "durable"), ("content", content)],
    );
    r.ok()["id"].as_u64().unwrap()
}

/// Sends `n` channel messages whose contents are `content(i)`; returns
/// (id, content) pairs.
fn send_many(c: &Client, n: usize, content: impl Fn(usize) -> String) -> Vec<(u64, String)> {
    (0..n).map(content).map(|s| (send(c, &s), s)).collect()
}

/// Eight writers at once, each on its own connection, each sending `n`
/// messages whose contents are `label`, the writer and the index; returns
/// every (id, content) pair.
fn send_concurrently(server: &TestServer, n: usize, label: &str) -> Vec<(u64, String)> {
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let c = server.client(HAMLET);
                s.spawn(move || send_many(&c, n, |i| format!("{label} {w} {i}")))
            })
            .collect();
        writers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    })
}

fn assert_all_present(server: &TestServer, sent: &[(u64, String)]) {
    let c = server.client(HAMLET);
    for (id, content) in sent {
        let r = c.get(&format!("/messages/{id}"), &[]).ok();
        assert_eq!(r["raw_content"], content.as_str(), "message {id} after restart");
    }
}

fn segments(server: &TestServer) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(server.data_dir().join("data/wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn snapshots(server: &TestServer) -> Vec<PathBuf> {
    let dir = server.data_dir().join("data/snapshots");
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect()
}

#[test]
fn acknowledged_messages_survive_a_crash() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let c = server.client(HAMLET);
    let sent = send_many(&c, 25, |i| format!("crash-safe {i}"));
    let keys_before = server.accounts.clone();
    server.kill();
    server.restart();
    assert_all_present(&server, &sent);
    // Same accounts and keys after replay (keys were drawn before logging).
    for a in &keys_before {
        assert_eq!(server.account(&a.email).key, a.key);
    }
    // Ids continue after the last acknowledged one: nothing is reused.
    let next = send(&server.client(HAMLET), "after restart");
    assert!(next > sent.last().unwrap().0);
    assert!(snapshots(&server).is_empty(), "no snapshot was due");
}

#[test]
fn snapshot_plus_log_tail_survives_a_crash() {
    let mut server = TestServer::start_with(&["--snapshot-every", "10", "--segment-bytes", "4096"]);
    let c = server.client(HAMLET);
    let mut sent = send_many(&c, 60, |i| format!("snapshot {i} {}", "x".repeat(100)));
    // The snapshot thread writes in the background at the lowest CPU
    // priority: on a busy machine the first file can take a while.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while snapshots(&server).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no snapshot was written in 120 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A tail after it.
    sent.extend(send_many(&c, 5, |i| format!("tail {i}")));
    server.kill();
    server.restart();
    assert_all_present(&server, &sent);
    assert!(server.stderr().contains("log records replayed"));
    let more = send_many(&server.client(HAMLET), 5, |i| format!("more {i}"));
    server.kill();
    server.restart();
    assert_all_present(&server, &sent);
    assert_all_present(&server, &more);
}

#[test]
fn clean_shutdown_snapshots_and_restarts_without_replay() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let c = server.client(HAMLET);
    let sent = send_many(&c, 5, |i| format!("clean {i}"));
    server.stop();
    assert_eq!(snapshots(&server).len(), 1, "clean shutdown writes a snapshot");
    server.restart();
    assert!(server.stderr().contains("0 log records replayed"), "{}", server.stderr());
    assert_all_present(&server, &sent);
}

#[test]
fn a_torn_log_tail_is_cut_and_the_server_starts() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let c = server.client(HAMLET);
    let sent = send_many(&c, 5, |i| format!("before tear {i}"));
    server.kill();
    // A half-written record at the end of the last segment.
    let last = segments(&server).pop().unwrap();
    let mut bytes = fs::read(&last).unwrap();
    bytes.extend_from_slice(&[0x40, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]);
    fs::write(&last, bytes).unwrap();
    server.restart();
    assert!(server.stderr().contains("torn"), "{}", server.stderr());
    assert_all_present(&server, &sent);
    // Appends continue after the repaired end and survive another crash.
    let after = send(&server.client(HAMLET), "after repair");
    server.kill();
    server.restart();
    assert_all_present(&server, &sent);
    assert_all_present(&server, &[(after, "after repair".to_owned())]);
}

#[test]
fn corruption_in_the_middle_refuses_to_start() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let c = server.client(HAMLET);
    for i in 0..10 {
        send(&c, &format!("message {i} {}", "y".repeat(200)));
    }
    server.kill();
    let last = segments(&server).pop().unwrap();
    let mut bytes = fs::read(&last).unwrap();
    // The middle of the frames: after a kill the file also holds the zeros
    // the log writes ahead of them.
    let frames_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    let middle = frames_end / 2;
    bytes[middle] ^= 0xff;
    fs::write(&last, bytes).unwrap();
    let stderr = server.start_expecting_failure();
    assert!(stderr.to_lowercase().contains("corrupt"), "{stderr}");
}

#[test]
fn a_second_server_on_the_same_data_dir_refuses_to_start() {
    let mut server = TestServer::start();
    let other = std::process::Command::new(env!("CARGO_BIN_EXE_natter"))
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(server.data_dir().join("data"))
        .output()
        .expect("run natter");
    assert!(!other.status.success());
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(stderr.contains("another natter process"), "{stderr}");
    // The first one is unaffected, and after it stops the dir is free.
    server.client(HAMLET).get("/users/me", &[]).ok();
    server.stop();
    server.restart();
    server.client(HAMLET).get("/users/me", &[]).ok();
}

#[test]
fn every_fsync_mode_keeps_data_across_a_clean_restart() {
    for mode in ["never", "interval:5", "always"] {
        let mut server = TestServer::start_with(&["--fsync", mode]);
        let sent = send_many(&server.client(HAMLET), 3, |i| format!("{mode} {i}"));
        server.stop();
        server.restart();
        assert_all_present(&server, &sent);
    }
}

/// Without `--fsync always` a reply still waits for its record's `write(2)`
/// (only the flush to disk is skipped), so a crash of the process — not of
/// the machine — loses nothing acknowledged, even with writers batching
/// each other's records into one write.
#[test]
fn without_fsync_acknowledged_sends_survive_a_process_crash() {
    for mode in ["never", "interval:60000"] {
        let mut server = TestServer::start_with(&["--fsync", mode, "--snapshot-every", "0"]);
        let sent = send_concurrently(&server, 15, &format!("{mode} crash"));
        server.kill();
        server.restart();
        assert_all_present(&server, &sent);
    }
}

/// Group commit with its gathering off (`--commit-gather-us 0`) and at a
/// long wait: writers sending at once all get their messages kept.
#[test]
fn concurrent_durable_sends_survive_a_restart_with_any_gathering() {
    for gather in ["0", "2000"] {
        let mut server = TestServer::start_with(&["--commit-gather-us", gather]);
        let sent = send_concurrently(&server, 10, &format!("gather {gather}"));
        server.stop();
        server.restart();
        assert_all_present(&server, &sent);
    }
}

#[test]
fn bad_options_are_refused_with_a_message() {
    for (args, expected) in [
        (&["--fsync", "sometimes"][..], "--fsync"),
        (&["--fsync", "interval:0"][..], "--fsync"),
        (&["--segment-bytes", "10"][..], "--segment-bytes"),
        (&["--workers", "0"][..], "--workers"),
        (&["--max-heavy-reads", "0"][..], "--max-heavy-reads"),
        (&["--commit-gather-us", "soon"][..], "--commit-gather-us"),
        (&["--listen", "not-an-address"][..], "--listen"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_natter"))
            .args(["--data-dir", dir.path().to_str().unwrap()])
            .args(args)
            .output()
            .expect("run natter");
        assert!(!out.status.success(), "{args:?} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// A restart that replays log records says how many and how fast (the
/// progress lines of `persist::progress`; the once-a-second lines need
/// more records than a test sends).
#[test]
fn a_restart_prints_the_replay_summary() {
    let mut server = TestServer::start_with(&["--snapshot-every", "0"]);
    let c = server.client(HAMLET);
    send_many(&c, 30, |i| format!("progress {i}"));
    server.kill();
    server.restart();
    let stderr = server.stderr();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("natter: log replay: "))
        .unwrap_or_else(|| panic!("no replay summary in {stderr}"));
    let count: u64 = line["natter: log replay: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no record count in {line}"));
    assert!(count >= 30, "{line}");
    assert!(line.ends_with("records/s)"), "{line}");
}
