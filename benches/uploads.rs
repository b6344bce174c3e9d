//! Uploaded files without HTTP: storing an upload (the staged file fsynced
//! and renamed into the store, then its record committed) for one 10 MiB
//! file and for 1,000 small ones, and reading a 10 MiB file back from the
//! store, on a seeded dev realm. The bodies are staged outside the timing:
//! receiving them is the HTTP loop's work (`tests/api_uploads.rs` shows it
//! streams).
//!
//! Run: `cargo bench --bench uploads`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use natter::api::{uploads, App};
use natter::files::{self, StoreKey, Upload};
use natter::testkit;

fn staged(app: &App, bytes: &[u8]) -> Upload {
    Upload {
        staged: files::stage_bytes(&*app.files, bytes).expect("staging"),
        filename: "bench.bin".to_owned(),
        content_type: Some("application/octet-stream".to_owned()),
        size: bytes.len() as u64,
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let app = testkit::in_process_dev_app(dir.path(), &["--fsync", "always"]);
    let realm = app.state.realm_by_subdomain("").unwrap();
    let hamlet = app.state.user_by_email(realm.id, "hamlet@natter.test").unwrap();

    let big = vec![0x5a_u8; 10 << 20];
    let mut group = c.benchmark_group("uploads");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("store one 10 MiB file", |b| {
        b.iter_batched(
            || staged(&app, &big),
            |upload| uploads::store(&app, &hamlet, upload).expect("stored"),
            criterion::BatchSize::PerIteration,
        )
    });
    let small = vec![0x33_u8; 2048];
    group.throughput(Throughput::Elements(1000));
    group.bench_function("store 1,000 files of 2 KiB", |b| {
        b.iter_batched(
            || (0..1000).map(|_| staged(&app, &small)).collect::<Vec<_>>(),
            |batch| {
                for upload in batch {
                    uploads::store(&app, &hamlet, upload).expect("stored");
                }
            },
            criterion::BatchSize::PerIteration,
        )
    });
    let stored = uploads::store(&app, &hamlet, staged(&app, &big)).expect("stored");
    let key = StoreKey::parse(stored.store_key()).expect("a store key");
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("read one 10 MiB file", |b| {
        b.iter(|| app.files.read(&key, 0, stored.size).expect("read"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
