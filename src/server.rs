//! Start-up: recover the data dir, assemble the `App`, seed in dev mode,
//! and start the HTTP listener.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, OnceLock};

use may_minihttp::HttpServer;

use crate::api::App;
use crate::commit::{Committer, Durable, SnapshotPolicy};
use crate::config::Config;
use crate::events::{Hub, Realtime};
use crate::http::Service;
use crate::persist;
use crate::seed::{self, Credential};

/// Coroutine stack size in words (8 bytes each): 256 KiB. may's default of
/// 32 KiB overflows on modest recursion in debug builds.
const STACK_WORDS: usize = 0x8000;

/// A running server.
pub struct Server {
    /// The bound address (the real port when asked for port 0).
    pub addr: SocketAddr,
    /// Shared application state.
    pub app: Arc<App>,
    /// Dev-mode accounts (empty outside dev mode).
    pub credentials: Vec<Credential>,
    _listener: may::coroutine::JoinHandle<()>,
}

/// Recovers the data dir and builds the application (no HTTP).
pub fn open_app(config: Config) -> Result<Arc<App>, String> {
    let durable = Arc::new(Durable::new(0));
    let on_durable = Arc::clone(&durable);
    let options = wal::Options {
        segment_bytes: config.segment_bytes,
        sync: config.fsync.sync_mode(),
        on_durable: Some(Arc::new(move |seq| on_durable.advance(seq))),
    };
    let (state, wal, report) = persist::open(&config.data_dir, options)
        .map_err(|e| format!("cannot open data dir {}: {e}", config.data_dir.display()))?;
    durable.advance(wal.durable_seq().max(state.applied_seq()));
    if let Some(torn) = &report.torn_tail {
        eprintln!(
            "natter: recovered: cut a torn log tail of {} bytes at {} offset {}",
            torn.discarded_bytes,
            torn.segment.display(),
            torn.offset
        );
    }
    eprintln!(
        "natter: recovered state at seq {} (snapshot {}, {} log records replayed)",
        state.applied_seq(),
        report.snapshot_seq.map_or("none".to_owned(), |s| s.to_string()),
        report.replayed
    );
    let state = Arc::new(state);
    let hub = Arc::new(Hub::new());
    let realtime = Arc::new(Realtime::new(Arc::clone(&state), config.queues.clone()));
    let reparse = |user, narrow: &serde_json::Value| {
        let user = state.users.get(&user).filter(|u| u.is_active)?;
        crate::narrow::Narrow::parse(&state, &user, narrow).ok()
    };
    match realtime.queues.load(&config.data_dir, &reparse) {
        Ok(0) => {}
        Ok(n) => eprintln!("natter: restored {n} event queues saved at the last clean shutdown"),
        Err(e) => eprintln!("natter: warning: could not restore saved event queues: {e}"),
    }
    hub.attach(Arc::clone(&realtime));
    spawn_queue_collector(&realtime);
    let policy = SnapshotPolicy {
        dir: persist::snapshot_dir(&config.data_dir),
        every: config.snapshot_every,
    };
    let committer =
        Committer::new(Arc::clone(&state), Arc::new(wal), durable, Arc::clone(&hub), policy);
    Ok(Arc::new(App {
        state,
        committer,
        hub,
        config,
        bound: OnceLock::new(),
        _data_dir_lock: report.lock,
    }))
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
    app.committer.shutdown();
    match app.hub.realtime().queues.save(&app.config.data_dir) {
        Ok(n) => eprintln!("natter: saved {n} event queues"),
        Err(e) => eprintln!("natter: warning: could not save event queues: {e}"),
    }
}

/// Opens the data dir, seeds it in dev mode, and starts serving.
pub fn start(config: Config) -> Result<Server, String> {
    may::config().set_workers(config.workers).set_stack_size(STACK_WORDS);
    let requested = resolve_listen(&config.listen)?;
    let app = open_app(config)?;
    let credentials = if app.config.dev {
        seed::seed_dev(&app).map_err(|e| format!("seeding the dev realm failed: {}", e.msg))?
    } else {
        Vec::new()
    };
    if app.state.realm_by_subdomain("").is_none() && !app.config.dev {
        eprintln!("natter: warning: no realm exists yet; start once with --dev to seed one");
    }
    let service = Service { app: Arc::clone(&app) };
    let (addr, listener) = bind(requested, service)?;
    let _ = app.bound.set(addr.to_string());
    Ok(Server { addr, app, credentials, _listener: listener })
}

/// Binds may_minihttp to `listen`. may_minihttp binds internally and does
/// not report the address, so for port 0 a free port is found with a std
/// listener first; if another process takes it in between, try again.
fn bind(
    requested: SocketAddr,
    service: Service,
) -> Result<(SocketAddr, may::coroutine::JoinHandle<()>), String> {
    for _ in 0..100 {
        let addr = if requested.port() == 0 {
            let probe = TcpListener::bind(requested)
                .map_err(|e| format!("cannot bind {requested}: {e}"))?;
            probe.local_addr().map_err(|e| e.to_string())?
        } else {
            requested
        };
        match HttpServer(service.clone()).start(addr) {
            Ok(handle) => return Ok((addr, handle)),
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
