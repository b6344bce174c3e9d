//! The write path without HTTP: `POST /messages` handler → commit (log
//! append, apply, durability wait, publish), on a seeded dev realm.
//!
//! Run: `cargo bench --bench commit_path`

use std::sync::Arc;

use natter::testkit;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use natter::api::params::Params;
use natter::api::{messages, App, Call};

fn app(fsync: &str, dir: &std::path::Path) -> Arc<App> {
    testkit::in_process_dev_app(dir, &["--fsync", fsync])
}

fn send(app: &App, i: u64) {
    let realm = app.state.realm_by_subdomain("").unwrap();
    let caller = app.state.user_by_email(realm.id, "hamlet@natter.test");
    let content = format!("message number {i} with **some** markdown");
    let params = Params::from_pairs([
        ("type", "stream"),
        ("to", "general"),
        ("topic", "bench"),
        ("content", content.as_str()),
    ]);
    let mut call = Call {
        realm: realm.into(),
        caller: caller.map(Into::into),
        params,
        path: Vec::new(),
        client: "bench".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: Vec::new(),
    };
    messages::send(app, &mut call).expect("send");
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("commit_path/send_message");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(1));
    for fsync in ["never", "always"] {
        let dir = tempfile::tempdir().unwrap();
        let app = app(fsync, dir.path());
        let mut i = 0;
        group.bench_function(format!("1 writer, fsync={fsync}"), |b| {
            b.iter(|| {
                i += 1;
                send(&app, i)
            })
        });
    }
    // Group commit: many writers share each fdatasync.
    for writers in [4u64, 16, 64] {
        let dir = tempfile::tempdir().unwrap();
        let app = app("always", dir.path());
        group.throughput(Throughput::Elements(writers));
        group.bench_function(format!("{writers} writers, fsync=always"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for w in 0..writers {
                        let app = &app;
                        s.spawn(move || {
                            for i in 0..iters {
                                send(app, w * 1_000_000 + i);
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
