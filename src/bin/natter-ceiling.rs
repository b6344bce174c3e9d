//! `natter-ceiling`: the two servers of the HTTP ceiling comparison, in one
//! process on the same may scheduler: bare `may_minihttp` (its own loop, a
//! hello-world service) and natter's own connection loop (`http::conn`),
//! both answering every request with the same fixed JSON. Measure them
//! together with `natter-load --kind fixed --versus`:
//!
//! ```text
//! natter-ceiling &    # prints both addresses
//! natter-load --kind fixed --connections 64 --requests 300000 \
//!     --addr <natter loop> --versus <may_minihttp>
//! ```
//!
//! The difference between the two is the cost of natter's loop (limits,
//! time-outs, chunked bodies…) over may_minihttp's. Loopback only; it
//! exits by itself after `--seconds`.
//!
//! With `--log-dir DIR` a third server runs: the *durable* ceiling, natter's
//! loop answering the same fixed JSON only once a record of a send's size
//! for the request is on disk — natter's write-ahead log with its group
//! commit (`--fsync always`, the same gather) and durability relay, and no
//! application work. Measured against bare may_minihttp it is what the
//! log's syncs alone cost on this machine; natter's durable sends against
//! it are what natter's own work costs on top (`scripts/ceiling.sh
//! durable`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use may_minihttp::{HttpServer, HttpService, Request, Response as RawResponse};

use natter::commit::Durable;
use natter::config::WireLimits;
use natter::http::conn::{self, Handler};
use natter::http::response::Response;

/// The reply both servers send.
const FIXED: &str = r#"{"result":"success","msg":"","message":"Hello, World!"}"#;

/// Both ceiling servers on loopback ports; exits after `--seconds`.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// may worker threads (shared by both servers).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Exit after this many seconds.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Also run the durable ceiling, its log in this directory (created;
    /// it must not hold a log already).
    #[arg(long)]
    log_dir: Option<std::path::PathBuf>,
    /// The durable ceiling's gather before a sync, in microseconds
    /// (natter's `--commit-gather-us`).
    #[arg(long, default_value_t = 100)]
    gather_us: u64,
}

/// Bare may_minihttp: the fixed JSON for any request, nothing else.
#[derive(Clone)]
struct Bare;

impl HttpService for Bare {
    fn call(&mut self, req: Request, rsp: &mut RawResponse) -> io::Result<()> {
        // Consume any body (the reader drains it when dropped), so a POST
        // of the same request natter is sent leaves the connection in step.
        drop(req.body());
        rsp.header("Content-Type: application/json");
        rsp.body(FIXED);
        Ok(())
    }
}

/// natter's loop with a handler that answers the fixed JSON.
struct Fixed;

impl Handler for Fixed {
    type Session = ();

    fn handle(&self, _req: &conn::Request<'_>, _: &mut ()) -> Response {
        Response::json(200, FIXED.as_bytes().to_vec())
    }
}

/// The payload logged per request by the durable ceiling: what natter logs
/// for one of `natter-load`'s sends is 97 bytes with its 16-byte frame.
const RECORD_BYTES: usize = 81;

/// natter's loop answering the fixed JSON once a record is durable.
struct DurableFixed {
    wal: wal::Wal,
    durable: Arc<Durable>,
}

impl Handler for DurableFixed {
    type Session = ();

    fn handle(&self, _req: &conn::Request<'_>, _: &mut ()) -> Response {
        let record = [b'r'; RECORD_BYTES];
        match self.wal.append_deferred([&record[..]]) {
            Ok(seq) => self.durable.wait(seq),
            Err(e) => {
                eprintln!("natter-ceiling: fatal: cannot append to the log: {e}");
                std::process::abort();
            }
        }
        Response::json(200, FIXED.as_bytes().to_vec())
    }
}

/// Opens the durable ceiling's log in `dir` (`--fsync always`, with the
/// durability relay natter uses) and starts its server on loopback.
fn durable_ceiling(
    dir: &std::path::Path,
    gather_us: u64,
) -> Result<(SocketAddr, may::coroutine::JoinHandle<()>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let durable = Arc::new(Durable::new(0));
    let on_durable = Arc::clone(&durable);
    let options = wal::Options {
        sync: wal::SyncMode::Always,
        gather: Duration::from_micros(gather_us),
        on_durable: Some(Arc::new(move |seq| on_durable.advance(seq))),
        ..wal::Options::default()
    };
    let (wal, _) = wal::Wal::open(dir, options).map_err(|e| format!("log: {e}"))?;
    if wal.last_seq() != 0 {
        return Err(format!("{}: holds a log already; give an empty directory", dir.display()));
    }
    let listener = natter::server::bind("127.0.0.1:0".parse().expect("address"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = conn::serve(
        listener,
        Arc::new(DurableFixed { wal, durable }),
        WireLimits::default(),
        Arc::default(),
    )
    .map_err(|e| format!("durable ceiling: {e}"))?;
    Ok((addr, server))
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("natter-ceiling: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    if args.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    may::config().set_workers(args.workers).set_stack_size(0x8000);
    let loopback: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let listener = natter::server::bind(loopback)?;
    let natter_addr = listener.local_addr().map_err(|e| e.to_string())?;
    let _natter = conn::serve(listener, Arc::new(Fixed), WireLimits::default(), Arc::default())
        .map_err(|e| format!("natter loop: {e}"))?;
    // may_minihttp binds itself and does not report its port: find a free
    // one first.
    let probe = std::net::TcpListener::bind(loopback).map_err(|e| e.to_string())?;
    let bare_addr = probe.local_addr().map_err(|e| e.to_string())?;
    drop(probe);
    let _bare = HttpServer(Bare).start(bare_addr).map_err(|e| format!("may_minihttp: {e}"))?;
    println!("natter-ceiling: natter loop http://{natter_addr}");
    println!("natter-ceiling: may_minihttp http://{bare_addr}");
    let _durable = match &args.log_dir {
        Some(dir) => {
            let (addr, server) = durable_ceiling(dir, args.gather_us)?;
            println!("natter-ceiling: durable http://{addr}");
            Some(server)
        }
        None => None,
    };
    println!(
        "natter-ceiling: try: natter-load --kind fixed --connections 64 --requests 300000 --addr {natter_addr} --versus {bare_addr}"
    );
    std::thread::sleep(Duration::from_secs(args.seconds));
    Ok(())
}
