//! `natter-load --kind reads`: narrows and searches back to back, with
//! sends on other connections meanwhile, and p50/p99 per narrow kind.
//!
//! Each of `--connections` readers (as the users of `--readers` in
//! turn) cycles through the narrow kinds below
//! (`GET /messages`, the newest `--num-before` of the narrow), as fast as
//! replies come, until `--requests` reads are done or `--seconds` pass;
//! `--senders` connections send to `general` meanwhile, and their latency
//! is reported beside (what the readers cost everyone else). Reads the
//! server refuses with 429 (its bound on concurrent heavy reads) are
//! counted apart from errors.
//!
//! `--seed-messages N` first sends N messages as the reading user (to
//! `general`, topic `load`): most "load test message", every tenth with
//! a link, every hundredth "running late", every thousandth the rare
//! word "quasar" — the 0.1% word of the search target.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::{basic, form, request, MayClient};
use super::hist::{summary, Recorder};
use super::mix::fetch_key;

/// The options of `--kind reads`.
#[derive(Clone, Debug, clap::Args)]
pub struct ReadsArgs {
    /// Connections sending to `general` while the readers read.
    #[arg(long, default_value_t = 4)]
    pub senders: u64,
    /// Messages to send before reading (0: read what is there).
    #[arg(long, default_value_t = 0)]
    pub seed_messages: u64,
    /// Messages each read asks for before the newest.
    #[arg(long, default_value_t = 100)]
    pub num_before: u64,
    /// The other user of the `dm` narrows.
    #[arg(long, default_value = "othello@natter.test")]
    pub dm_with: String,
    /// The users who read, comma-separated, reader N as user N modulo
    /// their number (a server admits two heavy reads per user at once:
    /// more readers than twice the users meet 429s).
    #[arg(
        long,
        default_value = "hamlet@natter.test,othello@natter.test,cordelia@natter.test,\
                         iago@natter.test,desdemona@natter.test,shiva@natter.test,\
                         polonius@natter.test"
    )]
    pub readers: String,
}

/// The narrow kinds read, by label; `{me}` and `{dm}` are the reading
/// user's and `--dm-with`'s emails.
const KINDS: [(&str, &str); 14] = [
    ("channel", r#"[["channel","general"]]"#),
    ("channel+topic", r#"[["channel","general"],["topic","load"]]"#),
    ("sender", r#"[["sender","{me}"]]"#),
    ("dm", r#"[["dm","{dm}"]]"#),
    ("is:mentioned", r#"[["is","mentioned"]]"#),
    ("is:starred", r#"[["is","starred"]]"#),
    ("is:unread", r#"[["is","unread"]]"#),
    ("has:link", r#"[["has","link"]]"#),
    ("search (0.1%)", r#"[["search","quasar"]]"#),
    ("search (stem)", r#"[["search","run"]]"#),
    ("search (absent)", r#"[["search","zyzzyvas"]]"#),
    ("channel+search", r#"[["channel","general"],["search","quasar"]]"#),
    ("sender+has:link", r#"[["sender","{me}"],["has","link"]]"#),
    (
        "channel-sender",
        r#"[["channel","general"],{"operator":"sender","operand":"{dm}","negated":true}]"#,
    ),
];

/// One reader's requests: a label and the request bytes per narrow kind.
type Reads = Vec<(&'static str, Vec<u8>)>;

/// The label of the sends measured beside.
const SENDS: &str = "send (during reads)";

/// The content of seeded message `i`.
fn seed_content(i: u64) -> String {
    match i {
        i if i % 1000 == 999 => format!("quasar sighting {i}"),
        i if i % 100 == 99 => format!("running late {i}"),
        i if i % 10 == 9 => format!("see https://example.com/{i}"),
        i => format!("load test message {i}"),
    }
}

/// Runs the reads (seeding and sending as `auth`'s user) and prints the
/// figures.
pub fn run(
    addr: SocketAddr,
    args: &ReadsArgs,
    auth: &str,
    connections: u64,
    requests: u64,
    deadline: Instant,
) -> Result<(), String> {
    let timeout = Duration::from_secs(30);
    let send = |content: &str| {
        let body =
            form(&[("type", "stream"), ("to", "general"), ("topic", "load"), ("content", content)]);
        request("POST", "/api/v1/messages", Some(auth), &body)
    };
    if args.seed_messages > 0 {
        let mut c = MayClient::connect(addr, timeout).map_err(|e| format!("connect: {e}"))?;
        for i in 0..args.seed_messages {
            match c.call(&send(&seed_content(i))) {
                Ok((200, _)) => {}
                Ok((status, _)) => return Err(format!("seeding message {i}: HTTP {status}")),
                Err(e) => return Err(format!("seeding message {i}: {e}")),
            }
        }
        println!("seeded {} messages", args.seed_messages);
    }
    // Each reading user's requests, one per narrow kind.
    let mut setup = MayClient::connect(addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let mut users: Vec<Arc<Reads>> = Vec::new();
    for reader in args.readers.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let auth = basic(reader, &fetch_key(&mut setup, reader)?);
        let reads = KINDS
            .iter()
            .map(|(label, narrow)| {
                let narrow = narrow.replace("{me}", reader).replace("{dm}", &args.dm_with);
                let num_before = args.num_before.to_string();
                let query = form(&[
                    ("anchor", "newest"),
                    ("num_before", &num_before),
                    ("num_after", "0"),
                    ("narrow", &narrow),
                ]);
                (*label, request("GET", &format!("/api/v1/messages?{query}"), Some(&auth), ""))
            })
            .collect();
        users.push(Arc::new(reads));
    }
    if users.is_empty() {
        return Err("--readers names nobody".into());
    }
    let recorder = Arc::new(Recorder::default());
    let remaining = Arc::new(AtomicU64::new(requests));
    let limited = Arc::new(AtomicU64::new(0));
    let reading = Arc::new(AtomicU64::new(connections));
    let started = Instant::now();
    let readers: Vec<_> = (0..connections)
        .map(|i| {
            let (reads, recorder, remaining, limited, reading) = (
                Arc::clone(&users[i as usize % users.len()]),
                Arc::clone(&recorder),
                Arc::clone(&remaining),
                Arc::clone(&limited),
                Arc::clone(&reading),
            );
            may::go!(move || {
                let mut next = i as usize;
                if let Ok(mut conn) = MayClient::connect(addr, timeout) {
                    while Instant::now() < deadline
                        && remaining
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                            .is_ok()
                    {
                        let (label, template) = &reads[next % reads.len()];
                        next += 1;
                        let t = Instant::now();
                        match conn.call(template) {
                            Ok((200, _)) => recorder.ok(label, t.elapsed()),
                            Ok((429, _)) => {
                                limited.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => recorder.error(label),
                            Err(_) => {
                                recorder.error(label);
                                match MayClient::connect(addr, timeout) {
                                    Ok(c) => conn = c,
                                    Err(_) => break,
                                }
                            }
                        }
                    }
                }
                reading.fetch_sub(1, Ordering::AcqRel);
            })
        })
        .collect();
    let senders: Vec<_> = (0..args.senders)
        .map(|i| {
            let (recorder, reading) = (Arc::clone(&recorder), Arc::clone(&reading));
            let template = send(&format!("sent while reading {i}"));
            may::go!(move || {
                let Ok(mut conn) = MayClient::connect(addr, timeout) else { return };
                while reading.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
                    let t = Instant::now();
                    match conn.call(&template) {
                        Ok((200, _)) => recorder.ok(SENDS, t.elapsed()),
                        _ => recorder.error(SENDS),
                    }
                }
            })
        })
        .collect();
    for handle in readers.into_iter().chain(senders) {
        let _ = handle.join();
    }
    let elapsed = started.elapsed();
    let window = recorder.take();
    let reads_done: u64 = window
        .endpoints
        .iter()
        .filter(|(name, _)| **name != SENDS)
        .map(|(_, e)| e.latency.len())
        .sum();
    println!(
        "reads x{connections}: {reads_done} ok, {} rate-limited (429) in {:.2}s = {:.0} reads/s",
        limited.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
        reads_done as f64 / elapsed.as_secs_f64().max(1e-9),
    );
    let mut errors = 0;
    for (label, _) in KINDS.iter().chain([&(SENDS, "")]) {
        let Some(e) = window.endpoints.get(label) else { continue };
        errors += e.errors;
        println!(
            "  {label:<20} {:>7} ok {:>4} errors  {}",
            e.latency.len(),
            e.errors,
            summary(&e.latency)
        );
    }
    if let Some(sends) = window.endpoints.get(SENDS) {
        println!(
            "  sends: {:.0}/s beside the reads",
            sends.latency.len() as f64 / elapsed.as_secs_f64().max(1e-9)
        );
    }
    if errors > 0 {
        return Err(format!("{errors} requests failed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_messages_have_the_rare_word_one_in_a_thousand() {
        let rare = (0..10_000).filter(|i| seed_content(*i).contains("quasar")).count();
        assert_eq!(rare, 10);
        assert!(seed_content(9).contains("https://"));
    }
}
