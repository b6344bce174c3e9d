//! Markdown rendering (`markdown::render_message`), as the send path runs
//! it: a typical chat message with a mention, an emoji, a link and code;
//! and an adversarial one (deep nesting, runs of unclosed delimiters, many
//! mentions) of the same 10,000-character maximum size.
//!
//! Run: `cargo bench --bench markdown`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use natter::markdown::{render_message, Resolver};

/// A realm with a few names, like the send handler's resolver answers.
struct Names;

impl Resolver for Names {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name.eq_ignore_ascii_case("King Hamlet")).then(|| (12, "King Hamlet".into()))
    }
    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        (id == 12).then(|| (12, "King Hamlet".into()))
    }
    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name == "backend").then(|| (30, "backend".into()))
    }
    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name.eq_ignore_ascii_case("Denmark")).then(|| (9, "Denmark".into()))
    }
}

const TYPICAL: &str = "@**King Hamlet** the build on #**Denmark>ci** is green again :tada: — \
see https://example.com/builds/1234 for the log.\n\n\
The fix was a **one-line** change:\n\n```rust\nlet limit = config.limit.max(1);\n```\n\n\
> was it the cache?\n\nNo, the `limit` was zero. Thanks @*backend*!";

fn adversarial() -> String {
    let mut s = String::new();
    s.push_str(&">".repeat(1000));
    s.push_str(" deep\n\n");
    s.push_str(&"- ".repeat(500));
    s.push_str("list\n\n");
    s.push_str(&"@**".repeat(500));
    s.push_str(&"[*_`".repeat(300));
    s.push_str(&"@**King Hamlet** :smile: ".repeat(150));
    s.push_str(&"```spoiler\n".repeat(20));
    s.truncate(10_000);
    s
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("markdown");
    group.throughput(Throughput::Bytes(TYPICAL.len() as u64));
    group.bench_function("typical", |b| b.iter(|| render_message(TYPICAL, &Names)));
    let hostile = adversarial();
    group.throughput(Throughput::Bytes(hostile.len() as u64));
    group.bench_function("adversarial_10k", |b| b.iter(|| render_message(&hostile, &Names)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
