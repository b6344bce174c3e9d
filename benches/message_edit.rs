//! Moving a whole topic: `PATCH /messages/{id}` with
//! `propagate_mode=change_all` over a 10,000-message topic, through the
//! handler and the commit path (`--fsync never`, so the log's fsync does
//! not hide the work). Each iteration renames the topic back and forth.
//!
//! Run: `cargo bench --bench message_edit`

use std::sync::Arc;

use natter::testkit;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use natter::api::params::Params;
use natter::api::{message_edit, messages, App, Call};

const TOPIC_SIZE: usize = 10_000;

fn app(dir: &std::path::Path) -> Arc<App> {
    testkit::in_process_dev_app(dir, &[])
}

fn call(app: &App, pairs: &[(&str, &str)], path: Vec<String>) -> Call {
    let realm = app.state.realm_by_subdomain("").unwrap();
    let caller = app.state.user_by_email(realm.id, "hamlet@natter.test");
    Call {
        realm: realm.into(),
        caller: caller.map(Into::into),
        params: Params::from_pairs(pairs.iter().copied()),
        path,
        client: "bench".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let mut first = None;
    for i in 0..TOPIC_SIZE {
        let content = format!("message {i} of a long topic");
        let pairs = [("type", "stream"), ("to", "general"), ("topic", "t0"), ("content", &content)];
        let mut send = call(&app, &pairs, Vec::new());
        messages::send(&app, &mut send).expect("send");
        let reply = send.sorted_reply.expect("send writes its reply as text").to_map();
        first.get_or_insert(reply["id"].as_u64().unwrap());
    }
    let id = first.unwrap().to_string();
    let mut group = c.benchmark_group("message_edit");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(TOPIC_SIZE as u64));
    let mut n = 0u64;
    group.bench_function("change_all, 10k-message topic", |b| {
        b.iter(|| {
            n += 1;
            let topic = format!("t{n}");
            let pairs = [("topic", topic.as_str()), ("propagate_mode", "change_all")];
            message_edit::update(&app, &mut call(&app, &pairs, vec![id.clone()])).expect("move")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
