//! Restart and snapshot costs at a realistic size: the consistent cut taken
//! under the writer lock (`State::image`), encoding and writing a snapshot
//! file, decoding it and rebuilding `State`, and replaying log records
//! (`Replay`, as a restart does; and through `apply` one at a time, as
//! live sends are applied). The state is built by applying mutations directly (no
//! HTTP, no log): `NATTER_BENCH_MESSAGES` short messages (default 200,000)
//! from `NATTER_BENCH_USERS` users (default 10) who are all subscribed to
//! the two channels, so every message has one flag entry per user.
//!
//! Run: `cargo bench --bench snapshot -- --warm-up-time 1 --measurement-time 3`
//! (`NATTER_BENCH_MESSAGES=1000000` for the 1M rows of docs/PERFORMANCE.md;
//! `NATTER_BENCH_USERS=20000 NATTER_BENCH_MESSAGES=5000` for the first rows
//! after a cut in a big realm; `NATTER_BENCH_ROWS` for the rows of the one
//! user of "first row after the cut").
//! It also prints the resident memory the built state added, per message.

use std::time::{Duration, Instant};

use natter::testkit;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use natter::apply::apply;
use natter::apply::replay::Replay;
use natter::persist::{self, decode_mutation, encode_mutation, snapshot};
use natter::state::{Flags, MessageId, State, UserId, UserMessages};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The state after `messages` sends, and every mutation as a log record.
fn build(messages: u64, users: u64) -> (State, Vec<Vec<u8>>) {
    let mut log = Vec::new();
    let state = testkit::bench_state(messages, users, &mut |m| log.push(encode_mutation(m)));
    (state, log)
}

fn bench(c: &mut Criterion) {
    let messages = env("NATTER_BENCH_MESSAGES", 200_000);
    let users = env("NATTER_BENCH_USERS", 10).max(1);
    let started = Instant::now();
    let rss_before = testkit::resident_bytes();
    let (state, log) = build(messages, users);
    // The records kept for the replay bench are not state: subtract their
    // bytes plus ≈ 40 B each of `Vec` header and allocator overhead.
    let log_bytes: usize = log.iter().map(|r| r.len() + 40).sum();
    let state_bytes =
        testkit::resident_bytes().saturating_sub(rss_before).saturating_sub(log_bytes as u64);
    eprintln!(
        "built {messages} messages from {users} users ({} records) in {:.1?}; \
         resident memory of the state ≈ {} MB = {} B per message \
         (the kept log records, ≈ {} MB, subtracted)",
        log.len(),
        started.elapsed(),
        state_bytes / 1_000_000,
        state_bytes / messages.max(1),
        log_bytes / 1_000_000,
    );
    let label = |what: &str| format!("{what}/{}k msgs x {users} users", messages / 1_000);
    let mut group = c.benchmark_group("snapshot");
    group.sample_size(10).measurement_time(Duration::from_secs(3));

    // What `Shared::snapshot` does while it holds the writer lock.
    group.bench_function(label("image (under the writer lock)"), |b| {
        b.iter_batched(|| (), |()| state.image(), BatchSize::PerIteration)
    });
    // Right after a cut, one new row for every 20th user (what the first
    // send to a channel of 5% of the users writes under the writer lock):
    // the copy-on-write of what the cut shares — the map of each shard
    // such a user lives in, and that user's rows and last chunks.
    let realm = state.realm_by_subdomain("").unwrap();
    let members: Vec<UserId> = (0..users)
        .step_by(20)
        .map(|i| state.user_by_email(realm.id, &format!("user{i}@b.test")).unwrap().id)
        .collect();
    let mut next = MessageId(u64::MAX / 2);
    group.bench_function(label("first rows after the cut, every 20th user"), |b| {
        b.iter_batched(
            || state.image(),
            |image| {
                next = MessageId(next.0 + 1);
                for user in &members {
                    state.set_flags(*user, next, Flags::default());
                }
                image
            },
            BatchSize::PerIteration,
        )
    });
    let image = state.image();
    group.bench_function(label("encode"), |b| b.iter(|| snapshot::encode(&image)));
    let dir = tempfile::tempdir().unwrap();
    group.bench_function(label("write file (encode + fsync)"), |b| {
        b.iter(|| snapshot::write(dir.path(), &image).unwrap())
    });
    let bytes = snapshot::encode(&image);
    eprintln!("snapshot file: {} bytes", bytes.len());
    let path = std::path::Path::new("bench");
    group.bench_function(label("decode"), |b| {
        b.iter_batched(|| (), |()| snapshot::decode(&bytes, path).unwrap(), BatchSize::PerIteration)
    });
    // Each run gets a freshly decoded image, as a restart does: a clone
    // would share every message with the original, and interning would
    // then copy each one.
    group.bench_function(label("from_image (rebuild maps and indexes)"), |b| {
        b.iter_batched(
            || snapshot::decode(&bytes, path).unwrap(),
            State::from_image,
            BatchSize::PerIteration,
        )
    });
    drop((image, bytes));

    group.throughput(Throughput::Elements(log.len() as u64));
    // A restart's replay on one thread: decode, then `Replay` (runs of
    // sends in bulk, no events).
    group.bench_function(label("replay (decode + apply every record)"), |b| {
        b.iter_batched(
            State::new,
            |fresh| {
                let mut replay = Replay::new(&fresh);
                for (i, record) in log.iter().enumerate() {
                    let seq = i as u64 + 1;
                    replay.apply(seq, decode_mutation(seq, record).unwrap());
                }
                replay.finish();
                fresh
            },
            BatchSize::PerIteration,
        )
    });
    // The same records through `apply` one at a time, as `commit` applies
    // live sends (events built): what a send costs under the writer lock.
    group.bench_function(label("live apply (decode + apply, events built)"), |b| {
        b.iter_batched(
            State::new,
            |fresh| {
                for (i, record) in log.iter().enumerate() {
                    let seq = i as u64 + 1;
                    apply(&fresh, seq, &decode_mutation(seq, record).unwrap());
                }
                fresh
            },
            BatchSize::PerIteration,
        )
    });
    // The restart path itself: `persist::open` on a data dir holding only
    // the log (records read, checked and decoded on a thread of their own,
    // applied on this one). The opened state is dropped outside the
    // timing (with `iter`, freeing its messages was timed too).
    let data = tempfile::tempdir().unwrap();
    {
        let never = wal::Options { sync: wal::SyncMode::Never, ..Default::default() };
        let (wal, _) = wal::Wal::open(persist::wal_dir(data.path()), never).unwrap();
        for record in &log {
            wal.append(record).unwrap();
        }
        wal.close().unwrap();
    }
    group.bench_function(
        label("open: replay the log (read thread, two decode threads, apply)"),
        |b| b.iter_with_large_drop(|| persist::open(data.path(), Default::default()).unwrap().0),
    );
    group.finish();
}

/// After a cut, the first new row of a user who already has many (each
/// message of a busy realm, 10M of them, is a row of nearly everyone):
/// the copy-on-write of that user's rows, whose chunk lists the cut
/// shares. Set by set, it copies one pointer per chunk of ids.
/// `NATTER_BENCH_ROWS` rows (default 4,000,000), all unread.
fn rows_after_cut(c: &mut Criterion) {
    let count = env("NATTER_BENCH_ROWS", 4_000_000);
    let rows: Vec<(MessageId, Flags)> =
        (1..=count).map(|i| (MessageId(i * 3), Flags::default())).collect();
    let mut user = UserMessages::default();
    user.set_all(&rows);
    let mut next = MessageId(count * 3);
    let mut group = c.benchmark_group("snapshot");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let name = format!("first row after the cut/one user with {}k rows", count / 1_000);
    group.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            let mut took = Duration::ZERO;
            for _ in 0..iterations {
                let cut = user.clone();
                next = MessageId(next.0 + 1);
                let started = Instant::now();
                user.set(next, Flags::default());
                took += started.elapsed();
                drop(cut);
            }
            took
        })
    });
    group.finish();
}

criterion_group!(benches, bench, rows_after_cut);
criterion_main!(benches);
