//! `natter-load --kind mix`: simulated users doing what chat users do, and
//! the "supported users" figure.
//!
//! Setup (through the API, as a realm administrator of a `--dev` server):
//! every simulated user `load<N>@natter.test` is created (`POST /users`,
//! kept from earlier runs), gets its own API key (`POST
//! /dev_fetch_api_key`), and is subscribed with `--group-size` others to
//! a channel `load-<G>` of their own, like a team.
//!
//! Each active user registers an event queue (`POST /register`) and keeps
//! one long-poll `GET /events` parked on a connection of its own, and does
//! `--rate` actions a second (Poisson arrivals): send to its channel (one
//! of a few topics), read a narrow (`GET /messages`, newest 20 of a topic),
//! react to a message it received, or mark what it received as read. The
//! actions share a pool of `--connections` keep-alive connections. A
//! request's latency runs from when it was *scheduled*, so a saturated
//! server (or pool) shows up as latency instead of silently lowering the
//! rate. Message delivery — from the send being scheduled to the event
//! arriving at another member's long-poll — is reported beside.
//!
//! Everything runs on may coroutines on `--client-threads` OS threads: a
//! parked long-poll costs a small stack and a socket, not a thread.
//!
//! "Supported users" is Mattermost's measure: the most users for which the
//! p99 of all requests is under 50 ms and under 0.025% of them fail
//! (long-polls excluded: they wait by design). `--ramp-from/--ramp-to/--step`
//! measure a window per step until a step fails, then `--bisect` rounds
//! narrow it down between the last passing and the first failing count
//! (users above the count pause: they stay connected, idle).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::Value;

use super::client::{basic, form, request, MayClient};
use super::hist::{summary, Recorder, Window};

/// The mix's options (see `natter-load --help`).
#[derive(Clone, Debug, clap::Args)]
pub struct MixArgs {
    /// Simulated users of a fixed-rate run.
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// Actions per user per second (Poisson arrivals).
    #[arg(long, default_value_t = 0.2)]
    pub rate: f64,
    /// Ramp: first user count (with `--ramp-to` and `--step`).
    #[arg(long)]
    pub ramp_from: Option<usize>,
    /// Ramp: last user count.
    #[arg(long)]
    pub ramp_to: Option<usize>,
    /// Ramp: users added per step.
    #[arg(long, default_value_t = 1000)]
    pub step: usize,
    /// Bisection rounds after the ramp's first failing step.
    #[arg(long, default_value_t = 3)]
    pub bisect: u32,
    /// Seconds to let a new user count settle before measuring.
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// Seconds measured per step (or of a fixed-rate run).
    #[arg(long, default_value_t = 20)]
    pub window: u64,
    /// Users per `load-<G>` channel.
    #[arg(long, default_value_t = 20)]
    pub group_size: usize,
    /// OS threads running the client's coroutines.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Administrator that creates the simulated users (`--dev` realm).
    #[arg(long, default_value = "iago@natter.test")]
    pub admin: String,
    /// p99 bound of "supported", in milliseconds.
    #[arg(long, default_value_t = 50.0)]
    pub p99_ms: f64,
    /// Error-rate bound of "supported", in percent.
    #[arg(long, default_value_t = 0.025)]
    pub max_error_pct: f64,
}

/// Topics each channel's users talk in.
const TOPICS: usize = 5;
/// Received message ids a user remembers to react to or mark read.
const REMEMBERED: usize = 64;
/// Endpoints left out of the "supported" criteria.
const NOT_REQUESTS: [&str; 3] =
    ["GET /events (long-poll)", "delivery (send → event)", "POST /register"];

/// One simulated user.
struct User {
    index: usize,
    auth: String,
    group: usize,
    channel: String,
    /// Received, not yet marked read.
    unread: Mutex<Vec<u64>>,
    /// Received, not yet reacted to.
    unreacted: Mutex<Vec<u64>>,
    /// The event queue it long-polls, once registered: deleted when the
    /// run ends, so runs against one server leave no queues behind.
    queue: Mutex<Option<String>>,
}

/// What every coroutine shares.
struct Run {
    addr: SocketAddr,
    rate: f64,
    /// Users with index below this act; the others pause.
    active: AtomicUsize,
    /// Whether every spawned user has registered: until then nobody acts
    /// (a backlog of actions scheduled during registration would be
    /// measured as latency of the next window).
    ready: AtomicBool,
    /// Users whose queue is registered (counted once each).
    registered: AtomicUsize,
    stop: AtomicBool,
    recorder: Recorder,
    /// Idle action connections, used in turn (first in, first out), so
    /// none sits idle long enough for the server to time it out.
    pool: Mutex<std::collections::VecDeque<MayClient>>,
    /// Narrow queries by `(group, topic)`.
    narrows: Vec<Vec<String>>,
}

/// A small deterministic generator (xorshift64*), one per user.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

fn micros_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

/// Sets may's worker count; call before any coroutine runs.
pub fn configure(args: &MixArgs) {
    may::config().set_workers(args.client_threads.max(1)).set_stack_size(0x4000);
}

/// Runs the mix and prints its windows and verdict.
pub fn run(addr: SocketAddr, args: &MixArgs, connections: usize) -> Result<(), String> {
    if args.rate <= 0.0 || args.group_size == 0 || args.users == 0 || args.step == 0 {
        return Err("--rate, --users, --step and --group-size must be positive".into());
    }
    let ramp = match (args.ramp_from, args.ramp_to) {
        (Some(from), Some(to)) if from >= 1 && to >= from => Some((from, to)),
        (None, None) => None,
        _ => return Err("--ramp-from and --ramp-to go together, 1 ≤ from ≤ to".into()),
    };
    let most = ramp.map_or(args.users, |(_, to)| to);
    raise_fd_limit(most + connections + 64);
    let setup_started = Instant::now();
    let users = setup(addr, args, most)?;
    println!(
        "mix: {most} users in {} channels ready in {:.1}s",
        most.div_ceil(args.group_size),
        setup_started.elapsed().as_secs_f64()
    );
    let narrows = (0..most.div_ceil(args.group_size))
        .map(|g| {
            (0..TOPICS)
                .map(|t| {
                    let narrow = format!(
                        r#"[{{"operator":"channel","operand":"load-{g}"}},{{"operator":"topic","operand":"t{t}"}}]"#
                    );
                    form(&[
                        ("anchor", "newest"),
                        ("num_before", "20"),
                        ("num_after", "0"),
                        ("narrow", &narrow),
                    ])
                })
                .collect()
        })
        .collect();
    let run = Arc::new(Run {
        addr,
        rate: args.rate,
        active: AtomicUsize::new(0),
        registered: AtomicUsize::new(0),
        ready: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        recorder: Recorder::default(),
        pool: Mutex::new(std::collections::VecDeque::new()),
        narrows,
    });
    for _ in 0..connections {
        let c = MayClient::connect(addr, Duration::from_secs(60)).map_err(|e| e.to_string())?;
        run.pool.lock().push_back(c);
    }
    let users: Vec<Arc<User>> = users.into_iter().map(Arc::new).collect();
    let mut spawned = 0;
    let mut measure = |n: usize| -> (bool, Window) {
        if spawned < n {
            run.ready.store(false, Ordering::Release);
        }
        while spawned < n {
            spawn_user(&run, Arc::clone(&users[spawned]));
            spawned += 1;
        }
        run.active.store(n, Ordering::Release);
        // Registration is not part of the steady state: wait for it (timed
        // here, outside the measured window).
        let t = Instant::now();
        while run.registered.load(Ordering::Acquire) < spawned {
            std::thread::sleep(Duration::from_millis(50));
        }
        if t.elapsed() > Duration::from_millis(100) {
            println!(
                "mix: {spawned} users registered (waited {:.1}s for new queues)",
                t.elapsed().as_secs_f64()
            );
        }
        run.ready.store(true, Ordering::Release);
        std::thread::sleep(Duration::from_secs(args.warmup));
        run.recorder.take();
        let t = Instant::now();
        let machine = crate::watch::Watch::start();
        std::thread::sleep(Duration::from_secs(args.window));
        let window = run.recorder.take();
        let machine = machine.finish();
        let pass = report(&window, n, t.elapsed(), args);
        // What the machine did meanwhile (steal, the stall probe).
        if let Some(line) = machine.strip_prefix("; ") {
            println!("  {line}");
        }
        (pass, window)
    };
    match ramp {
        None => {
            let (pass, _) = measure(args.users);
            println!(
                "mix: {} users {} (p99 < {} ms and errors < {}%)",
                args.users,
                if pass { "supported" } else { "NOT supported" },
                args.p99_ms,
                args.max_error_pct
            );
        }
        Some((from, to)) => {
            let mut good = None;
            let mut bad = None;
            let mut n = from;
            loop {
                if measure(n).0 {
                    good = Some(n);
                } else {
                    bad = Some(n);
                    break;
                }
                if n >= to {
                    break;
                }
                n = (n + args.step).min(to);
            }
            if let (Some(mut lo), Some(mut hi)) = (good, bad) {
                for _ in 0..args.bisect {
                    let mid = lo + (hi - lo) / 2;
                    if mid == lo {
                        break;
                    }
                    if measure(mid).0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                good = Some(lo);
            }
            match (good, bad) {
                (Some(n), None) => println!(
                    "supported users: ≥ {n} (every step up to --ramp-to passed: p99 < {} ms, errors < {}%)",
                    args.p99_ms, args.max_error_pct
                ),
                (Some(n), Some(_)) => println!(
                    "supported users: {n} (p99 < {} ms and errors < {}% at {} actions/user/s)",
                    args.p99_ms, args.max_error_pct, args.rate
                ),
                (None, _) => println!("supported users: < {from} (the first step failed)"),
            }
        }
    }
    run.stop.store(true, Ordering::Release);
    delete_queues(&run, &users);
    Ok(())
}

/// Deletes the users' event queues (`DELETE /events`), as a client that
/// closes does, over the action connections: an abandoned queue would keep
/// every event sent to it until the server collects it, ten minutes on.
fn delete_queues(run: &Run, users: &[Arc<User>]) {
    let queues: Vec<(&User, String)> =
        users.iter().filter_map(|u| Some((&**u, u.queue.lock().take()?))).collect();
    let mut conns: Vec<MayClient> = run.pool.lock().drain(..).collect();
    let (mut deleted, mut failed) = (0usize, 0usize);
    for (i, (user, queue)) in queues.iter().enumerate() {
        let request =
            request("DELETE", "/api/v1/events", Some(&user.auth), &form(&[("queue_id", queue)]));
        let slot = i % conns.len().max(1);
        let mut reply = conns.get_mut(slot).map(|c| c.call(&request));
        if !matches!(reply, Some(Ok(_))) {
            // The server closed an idle connection: one more try on a new one.
            if let Ok(fresh) = MayClient::connect(run.addr, Duration::from_secs(10)) {
                match conns.get_mut(slot) {
                    Some(c) => *c = fresh,
                    None => conns.push(fresh),
                }
                reply = conns.get_mut(slot).map(|c| c.call(&request));
            }
        }
        match reply {
            Some(Ok((200, _))) => deleted += 1,
            _ => failed += 1,
        }
    }
    println!("mix: deleted {deleted} event queues ({failed} not deleted)");
}

/// Prints one window; whether it meets the "supported" criteria.
fn report(window: &Window, users: usize, elapsed: Duration, args: &MixArgs) -> bool {
    let secs = elapsed.as_secs_f64();
    println!("-- {users} users, {secs:.1}s window:");
    for (name, e) in &window.endpoints {
        println!(
            "  {name:<28} {:>8} ok {:>6} errors {:>8.0}/s  {}",
            e.latency.len(),
            e.errors,
            e.latency.len() as f64 / secs,
            summary(&e.latency)
        );
    }
    let total = window.total(&NOT_REQUESTS);
    let requests = total.latency.len() + total.errors;
    let error_pct =
        if requests == 0 { 100.0 } else { 100.0 * total.errors as f64 / requests as f64 };
    let p99 = total.latency.value_at_quantile(0.99) as f64 / 1000.0;
    // Latency runs from the scheduled time, so a slow server shows up as
    // latency; but users whose action loops never ran would not, and the
    // window would pass at a fraction of the load: such a window fails.
    let scheduled = users as f64 * args.rate;
    let carried = requests as f64 / secs >= 0.8 * scheduled;
    if !carried {
        println!(
            "  void window: {:.0} requests/s carried, {scheduled:.0}/s scheduled",
            requests as f64 / secs
        );
    }
    let pass = requests > 0 && carried && p99 < args.p99_ms && error_pct < args.max_error_pct;
    println!(
        "  {:<28} {:>8} ok {:>6} errors {:>8.0}/s  {}  => {}",
        "ALL REQUESTS",
        total.latency.len(),
        total.errors,
        requests as f64 / secs,
        summary(&total.latency),
        if pass { "pass" } else { "FAIL" }
    );
    pass
}

/// Raises the open-file limit so thousands of long-polls fit (the soft
/// limit up to the hard one; root may raise both).
fn raise_fd_limit(want: usize) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return };
    let want = want as u64;
    if soft >= want {
        return;
    }
    if setrlimit(Resource::RLIMIT_NOFILE, want, hard.max(want)).is_err() {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        eprintln!(
            "natter-load: open-file limit {hard} < {want} wanted: some connections may fail \
             (raising the hard limit needs root with CAP_SYS_RESOURCE; the server needs one \
             socket per user too)"
        );
    }
}

/// Creates (or finds) `count` users with their keys and channels.
fn setup(addr: SocketAddr, args: &MixArgs, count: usize) -> Result<Vec<User>, String> {
    let timeout = Duration::from_secs(60);
    let mut admin = MayClient::connect(addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let key = fetch_key(&mut admin, &args.admin)?;
    let admin_auth = basic(&args.admin, &key);
    // Creating accounts is one durable commit each: do it from many
    // coroutines at once so group commit can share the fsyncs.
    let workers = 32.min(count);
    let results: Arc<Mutex<Vec<Option<String>>>> = Arc::new(Mutex::new(vec![None; count]));
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (results, failure, admin_auth) =
                (Arc::clone(&results), Arc::clone(&failure), admin_auth.clone());
            may::go!(move || {
                let work = || -> Result<(), String> {
                    let mut c = MayClient::connect(addr, timeout).map_err(|e| e.to_string())?;
                    for i in (w..count).step_by(workers) {
                        let email = format!("load{i}@natter.test");
                        let name = format!("Load User {i}");
                        let body = form(&[("email", &email), ("full_name", &name)]);
                        let (status, reply) = c
                            .call(&request("POST", "/api/v1/users", Some(&admin_auth), &body))
                            .map_err(|e| e.to_string())?;
                        let msg = json(&reply)["msg"].as_str().unwrap_or("").to_owned();
                        if status != 200 && !msg.contains("already in use") {
                            return Err(format!("creating {email}: {status} {msg}"));
                        }
                        let key = fetch_key(&mut c, &email)?;
                        results.lock()[i] = Some(basic(&email, &key));
                    }
                    Ok(())
                };
                if let Err(e) = work() {
                    *failure.lock() = Some(e);
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    if let Some(e) = failure.lock().take() {
        return Err(e);
    }
    // One channel per group, its members subscribed by the administrator.
    for g in 0..count.div_ceil(args.group_size) {
        let members: Vec<String> = (g * args.group_size..((g + 1) * args.group_size).min(count))
            .map(|i| format!("\"load{i}@natter.test\""))
            .collect();
        let subs = format!(r#"[{{"name":"load-{g}"}}]"#);
        let principals = format!("[{}]", members.join(","));
        let body = form(&[("subscriptions", &subs), ("principals", &principals)]);
        let (status, reply) = admin
            .call(&request("POST", "/api/v1/users/me/subscriptions", Some(&admin_auth), &body))
            .map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!(
                "subscribing group {g}: {status} {}",
                String::from_utf8_lossy(&reply)
            ));
        }
    }
    let results = std::mem::take(&mut *results.lock());
    Ok(results
        .into_iter()
        .enumerate()
        .map(|(index, r)| User {
            index,
            auth: r.expect("every user was set up"),
            group: index / args.group_size,
            channel: format!("load-{}", index / args.group_size),
            unread: Mutex::new(Vec::new()),
            unreacted: Mutex::new(Vec::new()),
            queue: Mutex::new(None),
        })
        .collect())
}

/// `POST /dev_fetch_api_key` for `email`.
pub fn fetch_key(c: &mut MayClient, email: &str) -> Result<String, String> {
    let body = form(&[("username", email)]);
    let (status, reply) = c
        .call(&request("POST", "/api/v1/dev_fetch_api_key", None, &body))
        .map_err(|e| format!("dev_fetch_api_key: {e}"))?;
    json(&reply)["api_key"]
        .as_str()
        .map(str::to_owned)
        .ok_or(format!("dev_fetch_api_key for {email} failed ({status}); is the server --dev?"))
}

/// Starts a user's long-poll and action coroutines.
fn spawn_user(run: &Arc<Run>, user: Arc<User>) {
    let (r, u) = (Arc::clone(run), Arc::clone(&user));
    may::go!(move || poll_events(&r, &u));
    let r = Arc::clone(run);
    may::go!(move || act(&r, &user));
}

/// A queue's `GET /events` request, written once but for `last_event_id`:
/// a long-poll per delivery, so the client spends its share of the box on
/// reading events rather than on formatting and URL-encoding the same
/// request again (the same bytes as `request` of the `form` query).
struct EventsRequest {
    /// Up to the `last_event_id` value.
    head: Vec<u8>,
    /// From the end of the query on.
    tail: Vec<u8>,
}

impl EventsRequest {
    fn new(queue: &str, auth: &str) -> Self {
        let query = form(&[("queue_id", queue), ("last_event_id", "")]);
        let whole = request("GET", &format!("/api/v1/events?{query}"), Some(auth), "");
        let split = "GET /api/v1/events?".len() + query.len();
        EventsRequest { head: whole[..split].to_vec(), tail: whole[split..].to_vec() }
    }

    fn bytes(&self, last: i64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + 20 + self.tail.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(last.to_string().as_bytes());
        out.extend_from_slice(&self.tail);
        out
    }
}

/// Registers a queue and long-polls it until the run stops, noting the
/// messages received.
fn poll_events(run: &Run, user: &User) {
    let rec = &run.recorder;
    let mut first = true;
    let mut rng = Rng(0x9E37_79B9 ^ ((user.index as u64 + 1) * 0x1000_0001));
    'register: while !run.stop.load(Ordering::Acquire) {
        let conn = MayClient::connect(run.addr, Duration::from_secs(120));
        let Ok(mut conn) = conn else {
            rec.error("POST /register");
            may::coroutine::sleep(Duration::from_millis(500 + rng.next() % 1000));
            continue;
        };
        let body = form(&[
            ("event_types", r#"["message"]"#),
            ("fetch_event_types", r#"["message"]"#),
            ("apply_markdown", "true"),
        ]);
        let t = Instant::now();
        let reply = conn.call(&request("POST", "/api/v1/register", Some(&user.auth), &body));
        let (queue, mut last) = match reply {
            Ok((200, body)) => {
                rec.ok("POST /register", t.elapsed());
                let v = json(&body);
                match (v["queue_id"].as_str(), v["last_event_id"].as_i64()) {
                    (Some(q), Some(l)) => {
                        if std::mem::take(&mut first) {
                            run.registered.fetch_add(1, Ordering::AcqRel);
                        }
                        *user.queue.lock() = Some(q.to_owned());
                        (q.to_owned(), l)
                    }
                    _ => {
                        rec.error("POST /register");
                        continue;
                    }
                }
            }
            _ => {
                rec.error("POST /register");
                may::coroutine::sleep(Duration::from_millis(500 + rng.next() % 1000));
                continue;
            }
        };
        let polls = EventsRequest::new(&queue, &user.auth);
        while !run.stop.load(Ordering::Acquire) {
            let t = Instant::now();
            match conn.call(&polls.bytes(last)) {
                Ok((200, body)) => {
                    rec.ok("GET /events (long-poll)", t.elapsed());
                    let now = micros_now();
                    // Only the members the mix uses are decoded (the rest
                    // is skipped, not built): the client shares the box's
                    // CPU with the server it measures.
                    let Ok(polled) = serde_json::from_slice::<Polled<'_>>(&body) else {
                        rec.error("GET /events (long-poll)");
                        continue 'register;
                    };
                    for event in polled.events {
                        last = last.max(event.id);
                        let Some(message) = event.message.filter(|_| event.kind == "message")
                        else {
                            continue;
                        };
                        if let Some(sent) = sent_at(&message.content) {
                            rec.ok(
                                "delivery (send → event)",
                                Duration::from_micros(now.saturating_sub(sent)),
                            );
                        }
                        remember(&user.unread, message.id);
                        remember(&user.unreacted, message.id);
                    }
                }
                Ok((400, _)) => {
                    // The queue is gone (garbage-collected): register again.
                    rec.error("GET /events (long-poll)");
                    continue 'register;
                }
                _ => {
                    rec.error("GET /events (long-poll)");
                    continue 'register;
                }
            }
        }
    }
}

/// What the mix reads of a `GET /events` reply.
#[derive(serde::Deserialize)]
struct Polled<'a> {
    #[serde(borrow)]
    events: Vec<PolledEvent<'a>>,
}

#[derive(serde::Deserialize)]
struct PolledEvent<'a> {
    id: i64,
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    message: Option<PolledMessage<'a>>,
}

#[derive(serde::Deserialize)]
struct PolledMessage<'a> {
    id: u64,
    #[serde(borrow)]
    content: std::borrow::Cow<'a, str>,
}

fn remember(ids: &Mutex<Vec<u64>>, id: u64) {
    let mut ids = ids.lock();
    if ids.len() >= REMEMBERED {
        ids.remove(0);
    }
    ids.push(id);
}

/// The `stamp <micros>` a load message carries.
fn sent_at(content: &str) -> Option<u64> {
    let at = content.find("stamp ")? + "stamp ".len();
    let digits: String = content[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The user's action loop: `rate` Poisson arrivals a second.
fn act(run: &Run, user: &User) {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ ((user.index as u64 + 7) * 0x9E37_79B9));
    let mut next = Instant::now() + interval(&mut rng, run.rate);
    while !run.stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if next > now {
            may::coroutine::sleep(next - now);
        }
        let scheduled = next;
        next += interval(&mut rng, run.rate);
        if user.index >= run.active.load(Ordering::Acquire) || !run.ready.load(Ordering::Acquire) {
            next = Instant::now() + interval(&mut rng, run.rate);
            continue;
        }
        let topic = (rng.next() % TOPICS as u64) as usize;
        let roll = rng.next() % 100;
        let (endpoint, req): (&'static str, Vec<u8>) = if roll < 25 {
            let stamp = micros_now();
            let body = form(&[
                ("type", "stream"),
                ("to", &user.channel),
                ("topic", &format!("t{topic}")),
                ("content", &format!("hello from load user {} stamp {stamp}", user.index)),
            ]);
            ("POST /messages", request("POST", "/api/v1/messages", Some(&user.auth), &body))
        } else if let Some(id) = (roll < 40).then(|| user.unreacted.lock().pop()).flatten() {
            let body = form(&[("emoji_name", "thumbs_up")]);
            let path = format!("/api/v1/messages/{id}/reactions");
            ("POST /messages/{id}/reactions", request("POST", &path, Some(&user.auth), &body))
        } else if roll < 60 && !user.unread.lock().is_empty() {
            let ids = std::mem::take(&mut *user.unread.lock());
            let list =
                format!("[{}]", ids.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
            let body = form(&[("op", "add"), ("flag", "read"), ("messages", &list)]);
            (
                "POST /messages/flags",
                request("POST", "/api/v1/messages/flags", Some(&user.auth), &body),
            )
        } else {
            let path = format!("/api/v1/messages?{}", run.narrows[user.group][topic]);
            ("GET /messages (narrow)", request("GET", &path, Some(&user.auth), ""))
        };
        let conn = run.pool.lock().pop_front();
        let fresh = || MayClient::connect(run.addr, Duration::from_secs(60));
        let mut conn = match conn.map_or_else(fresh, Ok) {
            Ok(c) => c,
            Err(_) => {
                run.recorder.error(endpoint);
                continue;
            }
        };
        let mut reply = conn.call(&req);
        // The server closed this connection before reading the request
        // (idle time-out): send it once more on a new connection.
        if matches!(&reply, Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted) {
            if let Ok(c) = fresh() {
                conn = c;
                reply = conn.call(&req);
            }
        }
        match reply {
            Ok((200, _)) => {
                run.recorder.ok(endpoint, scheduled.elapsed());
                run.pool.lock().push_back(conn);
            }
            Ok((status, body)) => {
                // The first few refusals are shown: they point at a bug.
                static SHOWN: AtomicUsize = AtomicUsize::new(0);
                if SHOWN.fetch_add(1, Ordering::Relaxed) < 10 {
                    eprintln!("{endpoint}: {status} {}", String::from_utf8_lossy(&body));
                }
                run.recorder.error(endpoint);
                run.pool.lock().push_back(conn);
            }
            // A broken connection is dropped (and shown); the next request
            // opens a new one.
            Err(e) => {
                static SHOWN: AtomicUsize = AtomicUsize::new(0);
                if SHOWN.fetch_add(1, Ordering::Relaxed) < 10 {
                    eprintln!("{endpoint}: {e}");
                }
                run.recorder.error(endpoint);
            }
        }
    }
}

/// An exponentially distributed gap with mean `1 / rate` seconds.
fn interval(rng: &mut Rng, rate: f64) -> Duration {
    Duration::from_secs_f64(-rng.unit().ln() / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request written once is the request `request` writes each time,
    /// for any `last_event_id` and a queue id that needs encoding.
    #[test]
    fn an_events_request_is_written_as_request_writes_it() {
        let (queue, auth) = ("1700000000:12 &x=é", "bG9hZDE6a2V5");
        let polls = EventsRequest::new(queue, auth);
        for last in [-1, 0, 7, 123_456_789, i64::MAX] {
            let query = form(&[("queue_id", queue), ("last_event_id", &last.to_string())]);
            let path = format!("/api/v1/events?{query}");
            assert_eq!(polls.bytes(last), request("GET", &path, Some(auth), ""), "{last}");
        }
    }
}
