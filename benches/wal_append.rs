//! Benchmarks of the write-ahead log's append path (`wal` crate).
//!
//! - `durable_append/<size>`: one writer doing `append` + `wait_durable` with
//!   `SyncMode::Always`. The latency of one durable record, dominated by one
//!   `fdatasync`.
//! - `group_commit/<threads>`: that many writers, each doing `append` +
//!   `wait_durable` in a loop. Throughput in records/s shows how well one
//!   fsync is shared by the writers that arrive while it is in flight.
//! - `never_append/<size>`: `append` alone with `SyncMode::Never`: the cost
//!   of encoding, checksumming and one `write(2)`.
//!
//! Logs live under Cargo's target tmpdir, on a real disk, so that fsyncs
//! cost what they cost (a tmpfs would make them free).

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wal::{Options, SyncMode, Wal};

const SIZES: [usize; 3] = [64, 256, 4096];
const WRITERS: [u64; 4] = [1, 4, 16, 64];

fn open(sync: SyncMode) -> (tempfile::TempDir, Wal) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("create a log directory");
    let (log, _) =
        Wal::open(dir.path(), Options { sync, ..Options::default() }).expect("open the log");
    (dir, log)
}

fn durable_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_append");
    for size in SIZES {
        let (_dir, log) = open(SyncMode::Always);
        let payload = vec![0xa5; size];
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::from_parameter(size), |b| {
            b.iter(|| {
                let seq = log.append(black_box(&payload)).expect("append");
                log.wait_durable(seq);
            })
        });
    }
    group.finish();
}

fn group_commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("group_commit");
    // One element per record: criterion reports records/s.
    group.throughput(Throughput::Elements(1));
    for writers in WRITERS {
        let (_dir, log) = open(SyncMode::Always);
        let log = Arc::new(log);
        group.bench_function(BenchmarkId::from_parameter(writers), |b| {
            b.iter_custom(|iters| {
                let per_writer = iters.div_ceil(writers);
                let start = Arc::new(Barrier::new(writers as usize + 1));
                let handles: Vec<_> = (0..writers)
                    .map(|_| {
                        let (log, start) = (Arc::clone(&log), Arc::clone(&start));
                        thread::spawn(move || {
                            let payload = [0x5a; 64];
                            start.wait();
                            for _ in 0..per_writer {
                                let seq = log.append(&payload).expect("append");
                                log.wait_durable(seq);
                            }
                        })
                    })
                    .collect();
                start.wait();
                let began = Instant::now();
                for handle in handles {
                    handle.join().expect("writer thread");
                }
                // Rounding up gave each writer the same count; scale back to
                // the `iters` records criterion asked for.
                began.elapsed().mul_f64(iters as f64 / (per_writer * writers) as f64)
            })
        });
    }
    group.finish();
}

fn never_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("never_append");
    for size in SIZES {
        let (_dir, log) = open(SyncMode::Never);
        let payload = vec![0xa5; size];
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::from_parameter(size), |b| {
            b.iter(|| log.append(black_box(&payload)).expect("append"))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = durable_append, group_commit, never_append
}
criterion_main!(benches);
