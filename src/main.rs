//! The `natter` binary: parse the command line, open the data dir, serve
//! until SIGINT/SIGTERM, then shut down cleanly (final snapshot).

use clap::Parser;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use natter::config::Cli;
use natter::server;

fn main() {
    let config = match Cli::parse().resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("natter: {e}");
            std::process::exit(2);
        }
    };
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
    // Tests and scripts wait for this exact line.
    println!("natter: listening on http://{}", server.addr);
    if let Some(signal) = signals.forever().next() {
        eprintln!("natter: signal {signal}: shutting down");
    }
    server::shutdown(&server.app);
    eprintln!("natter: clean shutdown complete");
    std::process::exit(0);
}
