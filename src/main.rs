//! The `natter` binary: parse the command line, open the data dir, serve
//! until SIGINT/SIGTERM, then shut down cleanly (final snapshot).

use clap::Parser;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use natter::config::{Cli, Command, Config, RealmCommand};
use natter::server;

fn main() {
    // No transparent huge pages for this process. The allocator asks for
    // them, and each first touch of a huge page zeroes 2 MB at once: on
    // this project's machine 5-7 ms stalls, under the writer lock when a
    // send grew the store (`examples`-style timing of 300k sends: longest
    // 5-7 ms with them, under 1 ms without, same throughput). Latency-bound
    // servers commonly turn them off (Redis, MongoDB advise it).
    #[cfg(target_os = "linux")]
    if let Err(err) = nix::sys::prctl::set_thp_disable(true) {
        eprintln!("natter: warning: could not turn transparent huge pages off: {err}");
    }
    let mut cli = Cli::parse();
    let logged = natter::logging::Format::parse(&cli.log_format)
        .and_then(|format| natter::logging::init(format, cli.log_filter.as_deref()));
    if let Err(e) = logged {
        eprintln!("natter: {e}");
        std::process::exit(2);
    }
    let command = cli.command.take();
    let config = match cli.resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("natter: {e}");
            std::process::exit(2);
        }
    };
    match command {
        Some(Command::Realm { action }) => std::process::exit(realm_command(config, action)),
        Some(Command::Verify) => std::process::exit(verify_command(&config)),
        Some(Command::Backup { to }) => {
            match natter::persist::backup::backup(&config.data_dir, &to) {
                Ok(done) => {
                    let snapshot = done.snapshot.map_or("none".to_owned(), |s| s.to_string());
                    println!(
                        "backup: {} at seq {} (snapshot {snapshot}, {} log segments, {} uploaded \
                         files, {} bytes)",
                        to.display(),
                        done.seq,
                        done.segments,
                        done.files,
                        done.bytes
                    );
                    std::process::exit(0)
                }
                Err(e) => {
                    eprintln!("natter: backup: {e}");
                    std::process::exit(1)
                }
            }
        }
        None => {}
    }
    let mut signals = Signals::new([SIGINT, SIGTERM]).expect("install signal handlers");
    let server = match server::start(config) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("natter: error: {e}");
            std::process::exit(1);
        }
    };
    if !server.credentials.is_empty() {
        println!("Development accounts (log in with email + API key, HTTP Basic):");
        for c in &server.credentials {
            let realm = if c.realm.is_empty() { "(default)".to_owned() } else { c.realm.clone() };
            println!("  {:<10} {:<14} {:<26} {}", realm, c.role, c.email, c.api_key);
        }
        println!(
            "Try: curl -u {}:{} http://{}/api/v1/users/me",
            server.credentials[0].email, server.credentials[0].api_key, server.addr
        );
    }
    if let Some(addr) = server.metrics_addr {
        println!("natter: metrics on http://{addr}/metrics");
    }
    // Tests and scripts wait for this exact line.
    println!("natter: listening on http://{}", server.addr);
    if let Some(signal) = signals.forever().next() {
        tracing::info!("signal {signal}: shutting down (a second signal exits at once)");
    }
    server.health.begin_shutdown();
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            tracing::warn!("signal {signal} again: exiting at once, without a final snapshot");
            std::process::exit(1);
        }
    });
    let left = server.health.drain(server.app.config.shutdown_grace);
    if left > 0 {
        tracing::warn!(
            "{left} requests still in flight after {} s; shutting down without them",
            server.app.config.shutdown_grace.as_secs()
        );
    }
    server::shutdown(&server.app);
    tracing::info!("clean shutdown complete");
    std::process::exit(0);
}

/// `natter verify`: 0 if the data dir is sound, 1 with the first problem.
fn verify_command(config: &Config) -> i32 {
    match natter::persist::verify::verify(&config.data_dir) {
        Ok(v) => {
            let snapshot = v
                .snapshots
                .first()
                .map_or("none".to_owned(), |(seq, path)| format!("seq {seq}, {}", path.display()));
            println!("snapshots: {} checked (newest: {snapshot})", v.snapshots.len());
            println!("log: {} segments, {} records checked", v.segments, v.records);
            println!("replayed: {} records after the snapshot", v.replayed);
            if let Some(torn) = &v.torn_tail {
                println!(
                    "note: a torn tail of {} bytes at {} offset {} (a crash mid-append, or a \
                     server still appending); the next start cuts it off",
                    torn.discarded_bytes,
                    torn.segment.display(),
                    torn.offset
                );
            }
            println!("ok: {} recovers to seq {}", config.data_dir.display(), v.seq);
            0
        }
        Err(problem) => {
            println!("error: {problem}");
            1
        }
    }
}

/// `natter realm create …`: prints the owner's credentials.
fn realm_command(config: Config, action: RealmCommand) -> i32 {
    let RealmCommand::Create { subdomain, name, owner_email, owner_name, public } = action;
    let app = match server::open_app(config) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("natter: error: {e}");
            return 1;
        }
    };
    let result =
        natter::realm_create::create(&app, &subdomain, &name, &owner_email, &owner_name, public);
    app.committer.shutdown();
    match result {
        Ok(owner) => {
            let realm = if subdomain.is_empty() { "(bare host)" } else { subdomain.as_str() };
            println!("Created realm {realm:?} ({name}) with owner {}", owner.email);
            println!("email:   {}", owner.email);
            println!("api_key: {}", owner.api_key);
            0
        }
        Err(e) => {
            eprintln!("natter: realm create: {e}");
            1
        }
    }
}
