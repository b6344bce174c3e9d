//! `natter-load`: a bounded HTTP load generator for a natter (or Zulip)
//! server on this machine. Each connection is a may coroutine with one
//! keep-alive socket (on `--client-threads` OS threads); it stops after `--requests` requests or `--seconds`, whichever
//! comes first, and prints throughput and latency percentiles.
//!
//! ```text
//! natter --dev --fsync always --rate-limit off &
//! natter-load --connections 64 --requests 20000 --kind send
//! ```
//!
//! `--kind fixed --versus ADDR` is the ceiling comparison: the same fixed
//! request against two servers (from `natter-ceiling`: natter's own HTTP
//! loop and bare may_minihttp, both answering the same fixed JSON), in
//! alternating rounds with the same connection count, and the ratio of
//! their throughputs.
//!
//! `--kind mix` simulates users (`natter_load/mix.rs`): a realistic action
//! mix with a long-poll each, fixed-rate or ramped, HDR percentiles per
//! endpoint, and the "supported users" figure.
//!
//! `--kind reads` reads narrows of every kind and searches back to back
//! (`natter_load/reads.rs`) while `--senders` connections send, and
//! prints p50/p99 per narrow kind and the sends' figures beside.
//!
//! Only loopback targets are accepted: load is never sent to another host.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use natter::http::conn::clock_time;

use base64::Engine;
use clap::{Parser, ValueEnum};
use client::{request, MayClient};

#[path = "natter_load/client.rs"]
mod client;
#[path = "natter_load/hist.rs"]
mod hist;
#[path = "natter_load/mix.rs"]
mod mix;
#[path = "natter_load/reads.rs"]
mod reads;
#[path = "natter_load/watch.rs"]
mod watch;

/// Load generator for natter's HTTP API (loopback targets only).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Server address (host:port), on this machine.
    #[arg(long, default_value = "127.0.0.1:9991")]
    addr: String,
    /// Account to send as.
    #[arg(long, default_value = "hamlet@natter.test")]
    email: String,
    /// Its API key; fetched with POST /dev_fetch_api_key when omitted.
    #[arg(long)]
    key: Option<String>,
    /// Concurrent keep-alive connections (one thread each).
    #[arg(long, default_value_t = 16)]
    connections: u64,
    /// Total requests across all connections.
    #[arg(long, default_value_t = 10_000)]
    requests: u64,
    /// Stop after this many seconds even if requests remain.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// What each request does.
    #[arg(long, value_enum, default_value_t = Kind::Send)]
    kind: Kind,
    /// A second server to measure with the same requests, in alternating
    /// rounds; prints the ratio `--addr` / `--versus`.
    #[arg(long)]
    versus: Option<String>,
    /// Rounds per server with `--versus` (requests are split evenly).
    #[arg(long, default_value_t = 3)]
    rounds: u64,
    /// Fixed-request kinds: send at most this many requests a second in
    /// all (open loop, spread over the connections); latency then counts
    /// from when each request was due. 0 = as fast as replies come.
    #[arg(long, default_value_t = 0)]
    rate_limit: u64,
    /// Options of `--kind mix`.
    #[command(flatten)]
    mix: mix::MixArgs,
    /// Options of `--kind reads`.
    #[command(flatten)]
    reads: reads::ReadsArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Kind {
    /// POST /messages to the `general` channel.
    Send,
    /// GET /messages/{id} of one message sent first.
    Read,
    /// GET /server_settings (no auth, no state change).
    Settings,
    /// GET /fixed with no auth: for `natter-ceiling`'s fixed-JSON servers.
    Fixed,
    /// GET /users/me.
    Me,
    /// Simulated users doing a realistic mix (see `--users`, `--rate`,
    /// `--ramp-from`); `--connections` is their shared pool.
    Mix,
    /// Narrows and searches of every kind back to back on
    /// `--connections` readers, `--senders` sending meanwhile; p50/p99
    /// per narrow kind (`natter_load/reads.rs`).
    Reads,
}

fn json_field(body: &[u8], field: &str) -> Option<serde_json::Value> {
    serde_json::from_slice::<serde_json::Value>(body).ok()?.get(field).cloned()
}

fn main() {
    // No transparent huge pages here either (see natter's main): a 2 MB
    // first-touch zeroing in the client would count as server latency.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("natter-load: {e}");
        std::process::exit(1);
    }
}

/// A loopback socket address from `--addr`/`--versus`.
fn loopback(addr: &str) -> Result<SocketAddr, String> {
    let addr = addr
        .to_socket_addrs()
        .map_err(|e| format!("bad address {addr}: {e}"))?
        .next()
        .ok_or(format!("{addr} resolves to nothing"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("refusing to load {addr}: only loopback targets are allowed"));
    }
    Ok(addr)
}

/// The result of one measured run.
struct Stats {
    latencies: Vec<Duration>,
    errors: u64,
    elapsed: Duration,
    /// When the slowest request was sent (wall clock), to line it up with
    /// other records of the same moment (a stall probe, the kernel log).
    slowest_sent: Option<SystemTime>,
    /// What the machine did meanwhile (`watch::Watch::finish`).
    machine: String,
}

impl Stats {
    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn print(&mut self, label: &str, connections: u64) {
        self.latencies.sort();
        let latencies = &self.latencies;
        let pct = |p: f64| -> Duration {
            if latencies.is_empty() {
                return Duration::ZERO;
            }
            latencies[((latencies.len() - 1) as f64 * p).round() as usize]
        };
        let sent = self.slowest_sent.map(|at| format!(" (sent at {} UTC)", clock_time(at)));
        println!(
            "{label} x{connections}: {} ok, {} errors in {:.2}s = {:.0} req/s; latency p50 {:?} p90 {:?} p99 {:?} max {:?}{}{}",
            latencies.len(),
            self.errors,
            self.elapsed.as_secs_f64(),
            self.rate(),
            pct(0.5),
            pct(0.9),
            pct(0.99),
            pct(1.0),
            sent.unwrap_or_default(),
            self.machine,
        );
    }
}

/// `requests` copies of `template` over `connections` keep-alive
/// connections (one may coroutine each, on `--client-threads` threads),
/// stopping at `deadline`.
fn measure(
    addr: SocketAddr,
    template: &[u8],
    connections: u64,
    requests: u64,
    deadline: Instant,
    rate_limit: u64,
) -> Stats {
    // With a rate limit, each connection sends one request per `gap`,
    // staggered, and a late reply does not delay the schedule.
    let gap =
        (rate_limit > 0).then(|| Duration::from_secs_f64(connections as f64 / rate_limit as f64));
    let remaining = Arc::new(AtomicU64::new(requests));
    let errors = Arc::new(AtomicU64::new(0));
    let watch = watch::Watch::start();
    let started = Instant::now();
    let timeout = Duration::from_secs(30);
    let handles: Vec<_> = (0..connections)
        .map(|i| {
            let (template, remaining, errors) =
                (template.to_vec(), Arc::clone(&remaining), Arc::clone(&errors));
            may::go!(move || -> (Vec<Duration>, Option<(Duration, SystemTime)>) {
                let mut latencies = Vec::new();
                let mut slowest: Option<(Duration, SystemTime)> = None;
                let mut due = gap.map(|g| started + g.mul_f64(i as f64 / connections as f64));
                let Ok(mut conn) = MayClient::connect(addr, timeout) else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    return (latencies, slowest);
                };
                while Instant::now() < deadline
                    && remaining
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                        .is_ok()
                {
                    let mut t = Instant::now();
                    if let (Some(at), Some(gap)) = (due.as_mut(), gap) {
                        if *at > t {
                            may::coroutine::sleep(*at - t);
                        }
                        t = *at;
                        *at += gap;
                    }
                    let sent = SystemTime::now();
                    match conn.call(&template) {
                        Ok((200, _)) => {
                            let took = t.elapsed();
                            if slowest.is_none_or(|(longest, _)| took > longest) {
                                slowest = Some((took, sent));
                            }
                            latencies.push(took);
                        }
                        Ok(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            match MayClient::connect(addr, timeout) {
                                Ok(c) => conn = c,
                                Err(_) => break,
                            }
                        }
                    }
                }
                (latencies, slowest)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut slowest = Vec::new();
    for (mine, my_slowest) in handles.into_iter().map(|h| h.join().unwrap_or_default()) {
        latencies.extend(mine);
        slowest.extend(my_slowest);
    }
    let elapsed = started.elapsed();
    Stats {
        latencies,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
        slowest_sent: slowest.into_iter().max_by_key(|(took, _)| *took).map(|(_, sent)| sent),
        machine: watch.finish(),
    }
}

fn run(args: &Args) -> Result<(), String> {
    let addr = loopback(&args.addr)?;
    let versus = args.versus.as_deref().map(loopback).transpose()?;
    if args.connections == 0 || args.requests == 0 || args.rounds == 0 {
        return Err("--connections, --requests and --rounds must be at least 1".into());
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    mix::configure(&args.mix);
    if let Kind::Mix = args.kind {
        return mix::run(addr, &args.mix, args.connections as usize);
    }
    if let Kind::Fixed = args.kind {
        let template = request("GET", "/fixed", None, "");
        let Some(versus) = versus else {
            measure(addr, &template, args.connections, args.requests, deadline, args.rate_limit)
                .print("Fixed", args.connections);
            return Ok(());
        };
        return compare(args, addr, versus, &template, deadline);
    }
    let mut setup = MayClient::connect(addr, Duration::from_secs(30))
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let key = match &args.key {
        Some(key) => key.clone(),
        None if matches!(args.kind, Kind::Settings) => String::new(),
        None => {
            let body = format!("username={}", args.email);
            let (status, reply) = setup
                .call(&request("POST", "/api/v1/dev_fetch_api_key", None, &body))
                .map_err(|e| e.to_string())?;
            json_field(&reply, "api_key")
                .and_then(|k| k.as_str().map(str::to_owned))
                .ok_or(format!("dev_fetch_api_key failed ({status}); pass --key"))?
        }
    };
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{key}", args.email));
    if let Kind::Reads = args.kind {
        let (connections, requests) = (args.connections, args.requests);
        return reads::run(addr, &args.reads, &auth, connections, requests, deadline);
    }
    let send = request(
        "POST",
        "/api/v1/messages",
        Some(&auth),
        "type=stream&to=general&topic=load&content=load+test+message",
    );
    let template = match args.kind {
        Kind::Send => send,
        Kind::Read => {
            let (status, reply) = setup.call(&send).map_err(|e| e.to_string())?;
            let id = json_field(&reply, "id")
                .ok_or(format!("sending the message to read failed ({status})"))?;
            request("GET", &format!("/api/v1/messages/{id}"), Some(&auth), "")
        }
        Kind::Settings => request("GET", "/api/v1/server_settings", None, ""),
        Kind::Me => request("GET", "/api/v1/users/me", Some(&auth), ""),
        Kind::Fixed | Kind::Mix | Kind::Reads => unreachable!("handled above"),
    };
    if let Some(versus) = versus {
        return compare(args, addr, versus, &template, deadline);
    }
    measure(addr, &template, args.connections, args.requests, deadline, args.rate_limit)
        .print(&format!("{:?}", args.kind), args.connections);
    Ok(())
}

/// The same load against `addr` and `versus` in alternating rounds (so
/// both see the same machine conditions), then the throughput ratio.
fn compare(
    args: &Args,
    addr: SocketAddr,
    versus: SocketAddr,
    template: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let per_round = (args.requests / args.rounds).max(1);
    let mut totals = [(0usize, 0u64, Duration::ZERO), (0usize, 0u64, Duration::ZERO)];
    for round in 0..args.rounds {
        // Alternate which goes first, so neither always gets a warm start.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let target = if which == 0 { addr } else { versus };
            let mut stats =
                measure(target, template, args.connections, per_round, deadline, args.rate_limit);
            let label = format!("round {} {target}", round + 1);
            stats.print(&label, args.connections);
            totals[which].0 += stats.latencies.len();
            totals[which].1 += stats.errors;
            totals[which].2 += stats.elapsed;
        }
    }
    let rate = |t: &(usize, u64, Duration)| t.0 as f64 / t.2.as_secs_f64().max(1e-9);
    let (a, b) = (rate(&totals[0]), rate(&totals[1]));
    println!("{addr}: {a:.0} req/s ({} errors)", totals[0].1);
    println!("{versus}: {b:.0} req/s ({} errors)", totals[1].1);
    println!("ratio {addr} / {versus} = {:.1}%", 100.0 * a / b.max(1e-9));
    if totals[0].1 + totals[1].1 > 0 {
        return Err("some requests failed".into());
    }
    Ok(())
}
