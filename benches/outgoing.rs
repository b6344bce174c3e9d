//! Outgoing-webhook deliveries, in-process, in two parts:
//!
//! 1. throughput: 10,000 sends that each mention a bot whose server (a
//!    local receiver on keep-alive connections) answers at once; the time
//!    from the first send until the receiver has had every delivery and
//!    the state has none unfinished, as deliveries per second, with the
//!    senders' latencies;
//! 2. isolation: the latency of 10,000 sends that each trigger a delivery
//!    (half to a bot whose server answers after 2 s, half to one where
//!    nothing listens), beside the same number of sends that trigger
//!    nothing. The delivery pool works off the request path, so the two
//!    latency distributions should match: a bot's slowness must not reach
//!    its senders.
//!
//! Run: `cargo bench --bench outgoing` (NATTER_BENCH_DELIVERIES changes
//! the count).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use natter::api::params::Params;
use natter::api::{accounts, messages, App, Call};
use natter::state::User;
use natter::testkit;

fn call(app: &App, user: &User, params: &[(&str, &str)]) -> Call {
    let realm = app.state.realm_by_subdomain("").unwrap();
    Call {
        realm: realm.into(),
        caller: Some(user.clone().into()),
        params: Params::from_pairs(params.iter().copied()),
        path: Vec::new(),
        client: "bench".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: Vec::new(),
    }
}

/// A bot server that answers every request after `delay`, one thread per
/// connection.
fn slow_bot(delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                std::thread::sleep(delay);
                let body = r#"{"response_not_required": true}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

/// A bot server that answers every request at once, keeping connections
/// open for the next request (as the delivery pool's client does);
/// `received` counts the requests.
fn fast_bot(received: Arc<AtomicUsize>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let received = Arc::clone(&received);
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                let body = r#"{"response_not_required": true}"#;
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut request = vec![0; length];
                    if reader.read_exact(&mut request).is_err() {
                        return;
                    }
                    received.fetch_add(1, Ordering::SeqCst);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if writer.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn create_bot(app: &App, owner: &User, short: &str, url: &str) -> String {
    let url = serde_json::to_string(url).unwrap();
    let name = format!("{short} bot");
    let p = [
        ("full_name", name.as_str()),
        ("short_name", short),
        ("bot_type", "3"),
        ("payload_url", &url),
    ];
    accounts::create_bot(app, &mut call(app, owner, &p)).expect("create the bot");
    name
}

/// Sends `n` channel messages with `content(i)`; returns each send's time.
fn sends(app: &App, sender: &User, n: usize, content: impl Fn(usize) -> String) -> Vec<Duration> {
    (0..n)
        .map(|i| {
            let content = content(i);
            let p =
                [("type", "stream"), ("to", "Denmark"), ("topic", "bench"), ("content", &content)];
            let start = Instant::now();
            messages::send(app, &mut call(app, sender, &p)).expect("send");
            start.elapsed()
        })
        .collect()
}

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{name}: {} sends, p50 {:?}, p99 {:?}, max {:?}",
        times.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn main() {
    let n: usize = std::env::var("NATTER_BENCH_DELIVERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    may::config().set_workers(2);
    let dir = tempfile::tempdir().unwrap();
    let app: Arc<App> = testkit::in_process_dev_app(
        dir.path(),
        &["--outgoing-webhook-allow", "127.0.0.1", "--outgoing-webhook-timeout", "1"],
    );
    natter::outgoing::start(&app);
    let hamlet = app
        .state
        .user_by_email(app.state.realm_by_subdomain("").unwrap().id, "hamlet@natter.test")
        .unwrap();
    let slow = create_bot(&app, &hamlet, "slow", &slow_bot(Duration::from_secs(2)));
    let dead_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let dead = create_bot(&app, &hamlet, "dead", &format!("http://{dead_port}/"));

    // 1. Throughput to a receiver that answers at once.
    let received = Arc::new(AtomicUsize::new(0));
    let fast = create_bot(&app, &hamlet, "fast", &fast_bot(Arc::clone(&received)));
    let start = Instant::now();
    summary("triggering a fast bot", sends(&app, &hamlet, n, |i| format!("@**{fast}** {i}")));
    while received.load(Ordering::SeqCst) < n || !app.state.bots.pending().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = start.elapsed();
    println!(
        "{n} deliveries to a local receiver: {took:?} from the first send to the last \
         delivery's end, {:.0} deliveries/s",
        n as f64 / took.as_secs_f64()
    );

    // 2. Senders' latency beside slow and dead bots.
    summary("no trigger", sends(&app, &hamlet, n, |i| format!("plain message {i}")));
    let triggering = sends(&app, &hamlet, n, |i| {
        let bot = if i % 2 == 0 { &slow } else { &dead };
        format!("@**{bot}** message {i}")
    });
    summary("triggering slow and dead bots", triggering);
    println!("deliveries still waiting in the outbox: {}", app.outbox.len());
}
