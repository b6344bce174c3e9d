//! Resident memory of a restarted state against the same state built by
//! `apply` (a restart used to hold ≈ 150 B per message more).
//!
//! `restart_memory build N DIR` applies N short messages from 10 users
//! (as `benches/snapshot.rs` does), prints the RSS the live state added
//! and writes a snapshot into DIR; `restart_memory load DIR` loads it as
//! a restart does (`persist::open`) and prints the RSS after each step;
//! `restart_memory time DIR THREADS` times decoding and rebuilding it on
//! THREADS threads (wall and CPU time); `restart_memory replay N DIR`
//! logs N messages into DIR and times replaying them (records/s);
//! `restart_memory replay-cost N` decodes N messages' log records, then
//! applies them one by one (`apply`, the live path) and replays them
//! (`Replay`, a restart's), each in a function of its own, for
//! callgrind's inclusive counts per record (`decode_records`,
//! `apply_records`, `replay_records`; see docs/PERFORMANCE.md, "### replay").
//! Run both with `cargo run --release --example restart_memory -- …`;
//! each in its own process, so neither sees the other's freed memory.

use natter::apply::apply;

use natter::persist::{self, snapshot};
use natter::state::State;
use natter::testkit;

fn build(messages: u64, users: u64) -> State {
    testkit::bench_state(messages, users, &mut |_| ())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb = |b: u64| b as f64 / 1e6;
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["build", n, dir] => {
            let n: u64 = n.parse().expect("a message count");
            let before = testkit::resident_bytes();
            let state = build(n, 10);
            let live = testkit::resident_bytes() - before;
            println!("live state built by apply: {:.0} MB = {} B per message", mb(live), live / n);
            let dir = std::path::Path::new(dir);
            snapshot::write(&persist::snapshot_dir(dir), &state.image()).unwrap();
        }
        ["time", dir, threads] => {
            // Decode and rebuild times on a given number of threads.
            let threads: usize = threads.parse().expect("a thread count");
            let (_, path) = snapshot::list(&persist::snapshot_dir(std::path::Path::new(dir)))
                .unwrap()
                .remove(0);
            let cpu = || {
                let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
                let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split(' ').collect();
                let ticks =
                    |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
                (ticks(11) + ticks(12)) as f64 / 100.0
            };
            let (started, cpu0) = (std::time::Instant::now(), cpu());
            let image = snapshot::read(&path, threads).unwrap();
            let (decoded, cpu1) = (started.elapsed(), cpu());
            let state = State::from_image_on(image, threads);
            let (rebuilt, cpu2) = (started.elapsed() - decoded, cpu());
            println!(
                "{threads} threads: decode {decoded:.2?} ({:.2} s CPU), rebuild {rebuilt:.2?} \
                 ({:.2} s CPU), {} messages",
                cpu1 - cpu0,
                cpu2 - cpu1,
                state.messages.len()
            );
        }
        ["replay", n, dir] => {
            // The log replay of a restart (`persist::open`: a reader thread
            // decoding ahead of `apply`) against decode + apply in turn.
            let n: u64 = n.parse().expect("a message count");
            let mut records = Vec::new();
            drop(testkit::bench_state(n, 10, &mut |m| records.push(persist::encode_mutation(m))));
            let never = wal::Options { sync: wal::SyncMode::Never, ..Default::default() };
            let dir = std::path::Path::new(dir);
            {
                let (wal, _) = wal::Wal::open(persist::wal_dir(dir), never.clone()).unwrap();
                records.iter().for_each(|r| {
                    wal.append(r).unwrap();
                });
                wal.close().unwrap();
            }
            for _ in 0..2 {
                let started = std::time::Instant::now();
                let state = State::new();
                for (i, record) in records.iter().enumerate() {
                    let seq = i as u64 + 1;
                    apply(&state, seq, &persist::decode_mutation(seq, record).unwrap());
                }
                let took = started.elapsed().as_secs_f64();
                println!("decode + apply in turn: {:.0} records/s", records.len() as f64 / took);
                let started = std::time::Instant::now();
                let (state, _wal, _) = persist::open(dir, never.clone()).unwrap();
                let took = started.elapsed().as_secs_f64();
                assert_eq!(state.messages.len() as u64, n);
                println!(
                    "persist::open (reader thread): {:.0} records/s",
                    records.len() as f64 / took
                );
            }
        }
        ["replay-cost", n] => {
            let n: u64 = n.parse().expect("a message count");
            let mut records = Vec::new();
            drop(testkit::bench_state(n, 10, &mut |m| records.push(persist::encode_mutation(m))));
            let mutations = decode_records(&records);
            let live = apply_records(&mutations);
            let replayed = replay_records(mutations);
            assert_eq!(live.messages.len(), replayed.messages.len());
            println!("{} records replayed, {} messages", records.len(), replayed.messages.len());
        }
        ["load", dir] => {
            // What `persist::open` does with the newest snapshot, step by step.
            let before = testkit::resident_bytes();
            let step = |what: &str| {
                println!("{what}: RSS +{:.0} MB", mb(testkit::resident_bytes() - before))
            };
            let (_, path) = snapshot::list(&persist::snapshot_dir(std::path::Path::new(dir)))
                .unwrap()
                .remove(0);
            let started = std::time::Instant::now();
            let image = snapshot::read(&path, snapshot::threads()).unwrap();
            let decoded = started.elapsed();
            step("decoded (the file read a block at a time)");
            let state = State::from_image(image);
            let rebuilt = started.elapsed() - decoded;
            step("rebuilt");
            std::thread::sleep(std::time::Duration::from_secs(1));
            let n = state.messages.len().max(1) as u64;
            let loaded = testkit::resident_bytes() - before;
            println!(
                "restarted state (decode {decoded:.2?}, rebuild {rebuilt:.2?}), a second later: \
                 {:.0} MB = {} B per message",
                mb(loaded),
                loaded / n
            );
        }
        _ => eprintln!(
            "usage: restart_memory build N DIR | load DIR | time DIR THREADS | replay N DIR \
             | replay-cost N"
        ),
    }
}

/// Every record decoded (callgrind: this function's inclusive count).
#[inline(never)]
fn decode_records(records: &[Vec<u8>]) -> Vec<natter::mutation::Mutation> {
    let seqs = 1u64..;
    records.iter().zip(seqs).map(|(r, seq)| persist::decode_mutation(seq, r).unwrap()).collect()
}

/// Every mutation applied to a fresh state one by one, as `commit` does.
#[inline(never)]
fn apply_records(mutations: &[natter::mutation::Mutation]) -> State {
    let state = State::new();
    for (mutation, seq) in mutations.iter().zip(1u64..) {
        apply(&state, seq, mutation);
    }
    state
}

/// Every mutation replayed onto a fresh state, as a restart does.
#[inline(never)]
fn replay_records(mutations: Vec<natter::mutation::Mutation>) -> State {
    let state = State::new();
    let mut replay = natter::apply::replay::Replay::new(&state);
    for (mutation, seq) in mutations.into_iter().zip(1u64..) {
        replay.apply(seq, mutation);
    }
    replay.finish();
    state
}
