//! Event queues across kill -9: a client long-polling its queue while
//! another sends, the server killed (SIGKILL) at several points — one of
//! them right after a snapshot, so recovery starts from the snapshot kept
//! before it — and restarted on the same data dir; the client resumes the
//! same `queue_id` from its last event id. Its stream of message events
//! must be the committed history: every acknowledged send exactly once, in
//! order, ids increasing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{basic_auth, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";

/// One request on its own connection; `None` if the server is not there
/// (killed before or while answering).
fn call(
    addr: &str,
    auth: &str,
    method: &str,
    path: &str,
    params: &[(&str, &str)],
) -> Option<(u16, Value)> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        form.append_pair(k, v);
    }
    let form = form.finish();
    let (target, body) = match method {
        "GET" => (format!("/api/v1{path}?{form}"), String::new()),
        _ => (format!("/api/v1{path}"), form),
    };
    let request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\n\
         Connection: close\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).ok()?;
    let reply = String::from_utf8(reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).ok()?))
}

/// Waits until `done` holds, failing the test past `limit`.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The newest snapshot's seq in the data dir (0 if none).
fn newest_snapshot(data: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(data.join("snapshots")) else { return 0 };
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("snapshot-")?.strip_suffix(".bin")?.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// What the polling client has seen.
#[derive(Default)]
struct Seen {
    /// The newest event id (acknowledged with the next poll).
    last: i64,
    /// Every message event: (event id, message id).
    messages: Vec<(i64, u64)>,
}

/// How a round ends: after this many acknowledged sends, or right after
/// the next snapshot is written.
enum KillAt {
    Sends(usize),
    NextSnapshot,
}

#[test]
fn a_queue_resumes_after_kill_9_with_every_committed_event_once_in_order() {
    let mut server = TestServer::start_with(&[
        "--heartbeat-secs",
        "1",
        "--snapshot-log-ratio",
        "0.001",
        "--snapshot-min-log-mib",
        "0",
        "--snapshot-min-interval-secs",
        "1",
    ]);
    let data = server.data_dir().join("data");
    let (hamlet, othello) = (server.account(HAMLET), server.account(OTHELLO));
    let (hamlet, othello) =
        (basic_auth(&hamlet.email, &hamlet.key), basic_auth(&othello.email, &othello.key));
    let (status, registered) =
        call(&server.addr, &othello, "POST", "/register", &[("event_types", r#"["message"]"#)])
            .unwrap();
    assert_eq!(status, 200, "{registered}");
    let queue = registered["queue_id"].as_str().unwrap().to_owned();
    let seen =
        Mutex::new(Seen { last: registered["last_event_id"].as_i64().unwrap(), ..Seen::default() });
    // A queue registered in the last unjournaled second is not expected to
    // survive: wait until the journal names it.
    wait_until("the journal holds the queue", Duration::from_secs(10), || {
        std::fs::read(data.join("event-queues.log"))
            .is_ok_and(|bytes| bytes.windows(queue.len()).any(|w| w == queue.as_bytes()))
    });
    let acked = Mutex::new(Vec::<u64>::new());
    let rounds = [KillAt::Sends(40), KillAt::NextSnapshot, KillAt::Sends(150), KillAt::Sends(5)];
    for (round, kill_at) in rounds.iter().enumerate() {
        let addr = server.addr.clone();
        let stop = AtomicBool::new(false);
        let snapshot_before = newest_snapshot(&data);
        let sent_before = acked.lock().unwrap().len();
        std::thread::scope(|s| {
            // The sender: until the server is gone.
            s.spawn(|| {
                for i in 0.. {
                    let content = format!("round {round} message {i}");
                    let params = [
                        ("type", "stream"),
                        ("to", "general"),
                        ("topic", "crash"),
                        ("content", content.as_str()),
                    ];
                    match call(&addr, &hamlet, "POST", "/messages", &params) {
                        Some((200, r)) => acked.lock().unwrap().push(r["id"].as_u64().unwrap()),
                        _ => return,
                    }
                }
            });
            // The poller: long-polls, acknowledging what it got, until the
            // server is gone (or the test is done with it).
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let last = seen.lock().unwrap().last.to_string();
                    let params = [("queue_id", queue.as_str()), ("last_event_id", last.as_str())];
                    let Some((status, r)) = call(&addr, &othello, "GET", "/events", &params) else {
                        return;
                    };
                    assert_eq!(status, 200, "round {round}: the queue is resumed: {r}");
                    let mut seen = seen.lock().unwrap();
                    for event in r["events"].as_array().unwrap() {
                        let id = event["id"].as_i64().unwrap();
                        assert!(id > seen.last, "event ids increase: {id} after {}", seen.last);
                        seen.last = id;
                        if event["type"] == "message" {
                            seen.messages.push((id, event["message"]["id"].as_u64().unwrap()));
                        }
                    }
                }
            });
            match kill_at {
                KillAt::Sends(n) => wait_until("enough sends", Duration::from_secs(60), || {
                    acked.lock().unwrap().len() >= sent_before + n
                }),
                KillAt::NextSnapshot => wait_until("a snapshot", Duration::from_secs(60), || {
                    newest_snapshot(&data) > snapshot_before
                }),
            }
            server.kill();
            stop.store(true, Ordering::Relaxed);
        });
        server.restart();
        assert!(
            !server.stderr().contains("could not be resumed")
                || server.stderr().contains("(0 could not"),
            "{}",
            server.stderr()
        );
    }
    // The last round: poll until the last acknowledged send has arrived.
    let addr = server.addr.clone();
    let last_sent = *acked.lock().unwrap().last().unwrap();
    wait_until("every acknowledged send is received", Duration::from_secs(30), || {
        let last = seen.lock().unwrap().last.to_string();
        let params = [("queue_id", queue.as_str()), ("last_event_id", last.as_str())];
        let (status, r) = call(&addr, &othello, "GET", "/events", &params).unwrap();
        assert_eq!(status, 200, "{r}");
        let mut seen = seen.lock().unwrap();
        for event in r["events"].as_array().unwrap() {
            let id = event["id"].as_i64().unwrap();
            assert!(id > seen.last);
            seen.last = id;
            if event["type"] == "message" {
                seen.messages.push((id, event["message"]["id"].as_u64().unwrap()));
            }
        }
        seen.messages.last().is_some_and(|&(_, m)| m >= last_sent)
    });
    // The committed history of the topic, as the server reads it now.
    let narrow =
        r#"[{"operator":"channel","operand":"general"},{"operator":"topic","operand":"crash"}]"#;
    let params = [
        ("anchor", "oldest"),
        ("num_before", "0"),
        ("num_after", "5000"),
        ("narrow", narrow),
        ("apply_markdown", "false"),
    ];
    let (status, history) = call(&addr, &hamlet, "GET", "/messages", &params).unwrap();
    assert_eq!(status, 200, "{history}");
    let committed: Vec<u64> =
        history["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    let seen = seen.into_inner().unwrap();
    let received: Vec<u64> = seen.messages.iter().map(|&(_, m)| m).collect();
    assert_eq!(received, committed, "the received stream is the committed history, once each");
    let acked = acked.into_inner().unwrap();
    assert!(acked.iter().all(|id| committed.binary_search(id).is_ok()), "every acknowledged send");
    assert!(acked.len() >= 195, "{} sends", acked.len());
    // The server committed ids in seq order: event ids follow message ids.
    assert!(seen.messages.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));

    // A clean stop with the queue live: at most two snapshots (the one
    // before the final one kept while the queue needed it), which
    // `natter verify` and `natter backup` take as they are; the queue
    // resumes after it too.
    server.stop();
    let snapshots = std::fs::read_dir(data.join("snapshots")).unwrap().count();
    assert!((1..=2).contains(&snapshots), "{snapshots} snapshot files");
    let natter = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_natter")).args(args).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let verified = natter(&["verify".as_ref(), "--data-dir".as_ref(), data.as_os_str()]);
    assert!(verified.lines().last().is_some_and(|l| l.starts_with("ok: ")), "{verified}");
    assert!(verified.contains(&format!("snapshots: {snapshots} checked")), "{verified}");
    let copy = server.data_dir().join("copy");
    let backup = natter(&[
        "backup".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        "--to".as_ref(),
        copy.as_os_str(),
    ]);
    assert!(backup.lines().last().is_some_and(|l| l.starts_with("backup: ")), "{backup}");
    server.restart();
    let last = seen.last.to_string();
    let params =
        [("queue_id", queue.as_str()), ("last_event_id", last.as_str()), ("dont_block", "true")];
    let (status, r) = call(&server.addr, &othello, "GET", "/events", &params).unwrap();
    assert_eq!(status, 200, "{r}");
}
