//! Start-up: recover the data dir, assemble the `App`, seed in dev mode,
//! and start natter's HTTP connection loop on the listener.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, OnceLock};

use crate::api::App;
use crate::commit::{Committer, Durable};
use crate::config::Config;
use crate::entropy;
use crate::error::ApiResult;
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
    let (state, wal, report) = persist::open_reporting(
        &config.data_dir,
        options,
        &mut crate::logging::ProgressLines::default(),
    )
    .map_err(|e| format!("cannot open data dir {}: {e}", config.data_dir.display()))?;
    let recovery = recovering.elapsed();
    durable.advance(wal.durable_seq().max(state.applied_seq()));
    if let Some(torn) = &report.torn_tail {
        tracing::warn!(
            "recovered: cut a torn log tail of {} bytes at {} offset {}",
            torn.discarded_bytes,
            torn.segment.display(),
            torn.offset
        );
    }
    tracing::info!(
        "recovered state at seq {} (snapshot {}, {} log records replayed)",
        state.applied_seq(),
        report.snapshot_seq.map_or("none".to_owned(), |s| s.to_string()),
        report.replayed
    );
    let store = crate::files::LocalStore::open_on(&config.data_dir, fs)
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
    let state = Arc::new(state);
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
    let hub = Arc::new(Hub::new());
    let realtime = Arc::new(Realtime::new(Arc::clone(&state), config.queues.clone()));
    let reparse = |user, narrow: &serde_json::Value| {
        let user = state.users.get(&user).filter(|u| u.is_active)?;
        crate::narrow::Narrow::parse(&state, &user, narrow).ok()
    };
    match realtime.queues.load(&config.data_dir, &reparse) {
        Ok(0) => {}
        Ok(n) => tracing::info!("restored {n} event queues saved at the last clean shutdown"),
        Err(e) => tracing::warn!("could not restore saved event queues: {e}"),
    }
    hub.attach(Arc::clone(&realtime));
    spawn_queue_collector(&realtime);
    let policy = SnapshotPolicy {
        dir: persist::snapshot_dir(&config.data_dir),
        every: config.snapshots.every,
        log_ratio: config.snapshots.log_ratio,
        min_log_bytes: config.snapshots.min_log_bytes,
        min_interval: config.snapshots.min_interval,
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

/// The event queues' clock, a plain OS thread that sleeps: heartbeats for
/// long-polls parked for the heartbeat interval, and collection of idle
/// queues (polls also check expiry, so collection only frees memory).
fn spawn_queue_collector(realtime: &Arc<Realtime>) {
    let weak = Arc::downgrade(realtime);
    let period = realtime.queues.tick_period();
    std::thread::Builder::new()
        .name("natter-queue-tick".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            match weak.upgrade() {
                Some(realtime) => realtime.queues.tick(),
                None => return,
            }
        })
        .expect("spawn queue ticker");
}

/// Clean shutdown: the final snapshot (after which nothing commits), then
/// the live event queues, so clients resume them after the restart.
pub fn shutdown(app: &App) {
    tracing::info!("{}", app.committer.summary());
    app.committer.shutdown();
    match app.hub.realtime().queues.save(&app.config.data_dir) {
        Ok(n) => tracing::info!("saved {n} event queues"),
        Err(e) => tracing::warn!("could not save event queues: {e}"),
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
