//! Start-up: recover the data dir, assemble the `App`, seed in dev mode,
//! and start natter's HTTP connection loop on the listener.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, OnceLock};

use crate::api::App;
use crate::commit::{Committer, Durable};
use crate::config::Config;
use crate::entropy;
use crate::error::ApiResult;
use crate::events::journal::{self, Journal, QueueRecord, Retention, JOURNAL_FILE};
use crate::events::{Hub, Realtime};
use crate::http::{conn, Service};
use crate::mutation::Mutation;
use crate::persist;
use crate::persist::schedule::SnapshotPolicy;
use crate::seed::Credential;
use crate::state::{IdKind, State, User};

/// Coroutine stack size in words (8 bytes each): 256 KiB. may's default of
/// 32 KiB overflows on modest recursion in debug builds.
const STACK_WORDS: usize = 0x8000;

/// A running server.
pub struct Server {
    /// The bound address (the real port when asked for port 0).
    pub addr: SocketAddr,
    /// Shared application state.
    pub app: Arc<App>,
    /// Readiness: `begin_shutdown` when a signal arrives.
    pub health: Arc<crate::http::health::Health>,
    /// Dev-mode accounts (empty outside dev mode).
    pub credentials: Vec<Credential>,
    /// The `--metrics-listen` listener's bound address, if any.
    pub metrics_addr: Option<SocketAddr>,
    _listener: may::coroutine::JoinHandle<()>,
    _metrics_listener: Option<may::coroutine::JoinHandle<()>>,
}

/// Recovers the data dir and builds the application (no HTTP).
pub fn open_app(config: Config) -> Result<Arc<App>, String> {
    open_app_on(config, Arc::new(wal::RealFs))
}

/// `open_app`, with the log and snapshots changing their files through
/// `fs` (tests pass a `wal::sim::SimFs`).
pub fn open_app_on(config: Config, fs: Arc<dyn wal::Fs>) -> Result<Arc<App>, String> {
    // Before `Durable::new` spawns the first coroutine: an app opened
    // in-process (tests, benches) runs on the server's stack size too, not
    // may's default 32 KiB, which debug builds overflow.
    may::config().set_stack_size(STACK_WORDS);
    let durable = Arc::new(Durable::new(0));
    let on_durable = Arc::clone(&durable);
    let options = wal::Options {
        segment_bytes: config.segment_bytes,
        sync: config.fsync.sync_mode(),
        on_durable: Some(Arc::new(move |seq| on_durable.advance(seq))),
        gather: config.commit_gather,
        fs: Arc::clone(&fs),
    };
    let recovering = std::time::Instant::now();
    // The journaled event queues, and the log they need (`events::journal`).
    let journal_path = config.data_dir.join(JOURNAL_FILE);
    let journaled = match journal::read(&journal_path) {
        Ok((queues, torn)) => {
            if torn > 0 {
                tracing::warn!("cut a torn tail of {torn} bytes off {}", journal_path.display());
            }
            queues
        }
        Err(e) => {
            tracing::warn!("cannot read {}: {e}; event queues are lost", journal_path.display());
            Vec::new()
        }
    };
    let need = journaled.iter().map(QueueRecord::need_seq).min();
    let (state, wal, report) = persist::open_resuming(
        &config.data_dir,
        options,
        &mut crate::logging::ProgressLines::default(),
        need,
    )
    .map_err(|e| format!("cannot open data dir {}: {e}", config.data_dir.display()))?;
    if let Some(torn) = &report.torn_tail {
        tracing::warn!(
            "recovered: cut a torn log tail of {} bytes at {} offset {}",
            torn.discarded_bytes,
            torn.segment.display(),
            torn.offset
        );
    }
    let state = Arc::new(state);
    let hub = Arc::new(Hub::new());
    let realtime = Arc::new(Realtime::new(Arc::clone(&state), config.queues.clone()));
    realtime.queues.set_published(state.applied_seq());
    let retention = resume_queues(&config, &fs, &wal, &report, journaled, &hub, &realtime)?;
    let recovery = recovering.elapsed();
    durable.advance(wal.durable_seq().max(state.applied_seq()));
    tracing::info!(
        "recovered state at seq {} (snapshot {}, {} log records replayed)",
        state.applied_seq(),
        report.snapshot_seq.map_or("none".to_owned(), |s| s.to_string()),
        report.replayed + report.events_from.map_or(0, |from| state.applied_seq() + 1 - from)
    );
    spawn_queue_ticker(&realtime);
    // Only now is every logged record applied (the queues' replay included).
    let store = crate::files::LocalStore::open_on(&config.data_dir, Arc::clone(&fs))
        .map_err(|e| format!("cannot open the file store in {}: {e}", config.data_dir.display()))?;
    let reconciled = crate::files::reconcile(&store, &state)
        .map_err(|e| format!("cannot read the file store: {e}"))?;
    if !reconciled.orphans_removed.is_empty() {
        tracing::info!(
            "removed {} uploaded files no record names (an upload cut short by a stop)",
            reconciled.orphans_removed.len()
        );
    }
    for (id, path) in &reconciled.missing {
        tracing::warn!(
            "file {id} ({path}) is recorded but its bytes are missing from {}",
            config.data_dir.join("uploads").display()
        );
    }
    if !state.lookup.ready() {
        // The sender, feature and word lists are derived: built from the
        // messages while requests are served (reads scan until then).
        let state = Arc::clone(&state);
        std::thread::Builder::new()
            .name("natter-lookup".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                state.build_lookup();
                tracing::info!(
                    "lookup lists built over {} messages in {:?}",
                    state.messages.len(),
                    started.elapsed()
                );
            })
            .map_err(|e| format!("cannot start the lookup build: {e}"))?;
    }
    let policy = SnapshotPolicy {
        dir: persist::snapshot_dir(&config.data_dir),
        every: config.snapshots.every,
        log_ratio: config.snapshots.log_ratio,
        min_log_bytes: config.snapshots.min_log_bytes,
        min_interval: config.snapshots.min_interval,
        retention,
    };
    let committer =
        Committer::new(Arc::clone(&state), Arc::new(wal), durable, Arc::clone(&hub), policy);
    let readers = crate::api::readers::Readers::start(config.max_heavy_reads);
    let app = Arc::new(App {
        state,
        readers,
        committer,
        hub,
        config,
        bound: OnceLock::new(),
        files: Arc::new(store),
        temporary_urls: Default::default(),
        recovery,
        outbox: Default::default(),
        _data_dir_lock: report.lock,
    });
    // Realms from before system bots existed get theirs now.
    ensure_system_bots(&app).map_err(|e| format!("creating the system bots failed: {}", e.msg))?;
    Ok(app)
}

/// Restores the journaled event queues at start-up: each queue whose log
/// is still there is attached, the log's tail after the recovered state
/// is applied with its events delivered to them (`events_from`), the
/// events their clients acknowledged are dropped, and the journal is
/// written afresh from the queues now live. Returns the retention the
/// snapshots must keep for them.
fn resume_queues(
    config: &Config,
    fs: &Arc<dyn wal::Fs>,
    wal: &wal::Wal,
    report: &persist::OpenReport,
    journaled: Vec<QueueRecord>,
    hub: &Arc<Hub>,
    realtime: &Arc<Realtime>,
) -> Result<Retention, String> {
    let state = &realtime.state;
    let reparse = |user, narrow: &serde_json::Value| {
        let user = state.users.get(&user).filter(|u| u.is_active)?;
        crate::narrow::Narrow::parse(state, &user, narrow).ok()
    };
    let (mut restored, mut lost) = (0, 0);
    for record in journaled {
        // A queue needing records the recovered state already holds (the
        // snapshot it needed is gone: past the retention bound) cannot be
        // served; its client registers again.
        if record.need_seq() > report.base_seq && realtime.queues.restore(record, &reparse) {
            restored += 1;
        } else {
            lost += 1;
        }
    }
    hub.attach(Arc::clone(realtime));
    if let Some(from) = report.events_from {
        // The log's tail, applied as the committer applied it, each
        // mutation's events delivered in seq order (the same ids).
        persist::replay_log(wal, from, |seq, mutation| {
            let events = crate::apply::apply(state, seq, &mutation);
            hub.publish_committed(seq, events);
        })
        .map_err(|e| format!("cannot replay the log for the event queues: {e}"))?;
    }
    realtime.queues.drop_acknowledged();
    if restored + lost > 0 {
        tracing::info!(
            "restored {restored} event queues from {JOURNAL_FILE} ({lost} could not be resumed)"
        );
    }
    let retention = Retention::default();
    match Journal::create(Arc::clone(fs), &config.data_dir, &realtime.queues, retention.clone()) {
        Ok(journal) => *realtime.journal.lock() = Some(journal),
        Err(e) => tracing::warn!(
            "cannot write {JOURNAL_FILE}: {e}; event queues will not survive a crash"
        ),
    }
    Ok(retention)
}

/// How often the queue ticker brings the journal up to date.
const JOURNAL_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The event queues' clock, a plain OS thread that sleeps: heartbeats for
/// long-polls parked for the heartbeat interval, collection of idle
/// queues (polls also check expiry, so collection only frees memory), and
/// about once a second the journal's sync (one write and one `fdatasync`
/// if any queue was registered, acknowledged or gone since the last).
fn spawn_queue_ticker(realtime: &Arc<Realtime>) {
    let weak = Arc::downgrade(realtime);
    let period = realtime.queues.tick_period();
    let nap = period.min(JOURNAL_EVERY);
    std::thread::Builder::new()
        .name("natter-queue-tick".into())
        .spawn(move || {
            let mut next_tick = std::time::Instant::now() + period;
            loop {
                std::thread::sleep(nap);
                let Some(realtime) = weak.upgrade() else { return };
                let now = std::time::Instant::now();
                if now >= next_tick {
                    realtime.queues.tick();
                    next_tick = now + period;
                }
                let mut journal = realtime.journal.lock();
                if let Some(Err(e)) = journal.as_mut().map(|j| j.sync(&realtime.queues)) {
                    tracing::warn!("cannot write {JOURNAL_FILE}: {e}; rewriting it next");
                }
            }
        })
        .expect("spawn queue ticker");
}

/// Clean shutdown: the final snapshot (after which nothing commits), then
/// the journal rewritten with every live queue's unacknowledged events, so
/// clients resume them after the restart without the log.
pub fn shutdown(app: &App) {
    tracing::info!("{}", app.committer.summary());
    app.committer.shutdown();
    let realtime = app.hub.realtime();
    realtime.queues.collect_expired();
    // Taken: the ticker writes nothing after this.
    let journal = realtime.journal.lock().take();
    if let Some(mut journal) = journal {
        match journal.compact(&realtime.queues, true) {
            Ok(()) => tracing::info!("saved {} event queues", realtime.queues.len()),
            Err(e) => tracing::warn!("could not save event queues: {e}"),
        }
    }
}

/// Opens the data dir, seeds it in dev mode, and starts serving.
pub fn start(config: Config) -> Result<Server, String> {
    // (`open_app` sets the coroutine stack size.)
    may::config().set_workers(config.workers);
    let requested = resolve_listen(&config.listen)?;
    let app = open_app(config)?;
    let credentials = if app.config.dev {
        let credentials = crate::seed::seed_dev(&app)
            .map_err(|e| format!("seeding the dev realm failed: {}", e.msg))?;
        ensure_system_bots(&app)
            .map_err(|e| format!("creating the system bots failed: {}", e.msg))?;
        credentials
    } else {
        Vec::new()
    };
    // Deliveries that fell due while the server was down go out now.
    crate::scheduler::start(Arc::clone(&app));
    // Thumbnails not made before a stop are made now.
    crate::scheduler::start_thumbnails(Arc::clone(&app));
    // Deliveries to outgoing-webhook bots left unfinished go out now.
    crate::outgoing::start(&app);
    if app.state.realm_by_subdomain("").is_none() && !app.config.dev {
        tracing::warn!("no realm exists yet; start once with --dev to seed one");
    }
    let listener = bind(requested)?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let _ = app.bound.set(addr.to_string());
    let _ =
        app.state.email_domain.set(crate::state::emails::email_domain_of_host(app.external_host()));
    let health = Arc::new(crate::http::health::Health::default());
    let service = Arc::new(Service::new(Arc::clone(&app), Arc::clone(&health)));
    let mut limits = app.config.wire.clone();
    limits.max_connections = fit_connection_cap(limits.max_connections);
    let metrics_addr = match &app.config.metrics_listen {
        Some(address) => {
            let listener = bind(resolve_listen(address)?)?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            let only = Arc::new(crate::http::metrics::MetricsOnly(Arc::clone(&service)));
            let limits = crate::config::WireLimits { max_connections: 64, ..limits.clone() };
            let handle = conn::serve(listener, only, limits, Arc::default())
                .map_err(|e| format!("cannot start the metrics listener: {e}"))?;
            Some((addr, handle))
        }
        None => None,
    };
    let connections = Arc::clone(&service.connections);
    let handle = conn::serve(listener, service, limits, connections)
        .map_err(|e| format!("cannot start the HTTP listener: {e}"))?;
    let (metrics_addr, metrics_handle) = metrics_addr.unzip();
    Ok(Server {
        addr,
        app,
        health,
        credentials,
        metrics_addr,
        _listener: handle,
        _metrics_listener: metrics_handle,
    })
}

/// File descriptors kept free of client connections: log segments,
/// snapshots, the listener, stdio, may's event loop, and connections being
/// refused with a 503.
const RESERVED_FDS: u64 = 256;

/// Raises the open-file limit so `wanted` connections fit, as servers do,
/// and returns the connection cap that fits under it: past the limit
/// `accept` would fail and new clients would wait unanswered instead of
/// getting the cap's 503. The hard limit is raised too when the process
/// may (root with `CAP_SYS_RESOURCE`: one parked long-poll per online user
/// is one socket each, so 20,000 users need more than the common 20,000
/// or 65,536); otherwise the soft limit goes up to the hard one.
fn fit_connection_cap(wanted: usize) -> usize {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((mut soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return wanted };
    let need = u64::try_from(wanted).unwrap_or(u64::MAX).saturating_add(RESERVED_FDS);
    if soft < need && hard < need && setrlimit(Resource::RLIMIT_NOFILE, need, need).is_ok() {
        soft = need;
    } else if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        soft = hard;
    }
    let room = usize::try_from(soft.saturating_sub(RESERVED_FDS)).unwrap_or(usize::MAX).max(1);
    if wanted > room {
        tracing::warn!(
            "--max-connections {wanted} lowered to {room}: the open-file \
             limit is {soft} (raising the hard limit needs root with CAP_SYS_RESOURCE: \
             ulimit -Hn, prlimit --nofile)"
        );
        return room;
    }
    wanted
}

/// Binds `requested`. may's listener sets `SO_REUSEPORT`, which would let a
/// second process share a port silently; a plain std bind first makes a
/// port in use an error (and finds a free port for port 0).
pub fn bind(requested: SocketAddr) -> Result<may::net::TcpListener, String> {
    for _ in 0..100 {
        let probe = TcpListener::bind(requested)
            .map_err(|e| format!("cannot listen on {requested}: {e}"))?;
        let addr = probe.local_addr().map_err(|e| e.to_string())?;
        drop(probe);
        match may::net::TcpListener::bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && requested.port() == 0 => {
                continue
            }
            Err(e) => return Err(format!("cannot listen on {addr}: {e}")),
        }
    }
    Err(format!("no free port found for {requested}"))
}

/// The `--listen` value as a socket address, checked before anything else.
fn resolve_listen(listen: &str) -> Result<SocketAddr, String> {
    listen
        .to_socket_addrs()
        .map_err(|e| format!("bad --listen address {listen:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("--listen {listen:?} resolves to no address"))
}

/// Gives every realm the system bots it lacks (at start-up, before
/// serving); writes nothing when none is missing.
pub fn ensure_system_bots(app: &App) -> ApiResult<()> {
    let now = entropy::now();
    let build = |s: &State| {
        let mut bots: Vec<User> = Vec::new();
        let realms = s.realms.collect_sorted(|_, _| true);
        for (id, _) in realms {
            let first = s.ids.peek(IdKind::User) + bots.len() as u64;
            bots.extend(crate::mutation::build::system_bots(s, id, first, now));
        }
        bots
    };
    if build(&app.state).is_empty() {
        return Ok(());
    }
    app.committer.commit(|s| Ok((Mutation::CreateSystemBots(build(s)), ())))
}
