//! Narrows answered by the lookup lists and the word index, and what the
//! lists cost in memory. `NATTER_BENCH_MESSAGES` short messages (default
//! 200,000; "hello number N", so every message adds a word of its own —
//! the worst case for the vocabulary) from `NATTER_BENCH_USERS` users
//! (default 10), as `testkit::bench_state` builds them; every thousandth
//! message is edited to hold the rare word "quasar".
//!
//! Memory: the state is restarted (`State::from_image`, lists not built),
//! then `State::build_lookup` runs; the lists' bytes counted from their
//! shapes (`Lookup::estimated_bytes`) and the resident memory the build
//! added are printed per message with the lists' entry counts — the
//! index's cost per short message.
//!
//! Run: `cargo bench --bench lookup -- --warm-up-time 1 --measurement-time 3`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

use natter::apply::apply;
use natter::mutation::{MessageEdit, Mutation, NewContent, PropagateMode};
use natter::narrow::query::{window, Anchor, WindowBounds, LARGER_THAN_MAX_MESSAGE_ID};
use natter::narrow::Narrow;
use natter::state::{IdKind, MessageId, State};
use natter::testkit;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let messages = env("NATTER_BENCH_MESSAGES", 200_000);
    let users = env("NATTER_BENCH_USERS", 10).max(1);
    let started = Instant::now();
    let state = testkit::bench_state(messages, users, &mut |_| {});
    // Message i of the sends has id `first + i`.
    let first = state.ids.peek(IdKind::Message) - messages;
    for i in (999..messages).step_by(1_000) {
        let id = MessageId(first + i);
        let Some(message) = state.messages.get(&id) else { continue };
        let content = format!("quasar number {i}");
        let edit = Mutation::EditMessage(MessageEdit {
            message: id,
            editor: message.sender,
            timestamp: 1_800_000_000,
            content: Some(NewContent {
                rendered: format!("<p>{content}</p>"),
                content,
                is_me_message: false,
                mentioned: vec![],
                channel_wildcard: false,
                topic_wildcard: vec![],
            }),
            topic: None,
            channel: None,
            moved: vec![],
            counts_as_move: false,
            propagate_mode: PropagateMode::ChangeOne,
        });
        apply(&state, state.applied_seq() + 1, &edit);
    }
    eprintln!("built {messages} messages in {:.1?}", started.elapsed());

    // The lists' memory: a restarted state before and after the build.
    // (The built state stays alive meanwhile: memory it freed would be
    // reused by the build and hide its cost.)
    let restarted = State::from_image(state.image());
    let before = testkit::resident_bytes();
    let built = Instant::now();
    restarted.build_lookup();
    let added = testkit::resident_bytes().saturating_sub(before);
    let (lists, ids) = restarted.lookup.sizes();
    let counted = restarted.lookup.estimated_bytes();
    eprintln!(
        "lookup lists built in {:.1?}: {lists} lists holding {ids} ids; counted from their \
         shapes {} B per message; resident memory added ≈ {} B per message (a floor: the build \
         reuses memory the restart freed)",
        built.elapsed(),
        counted / messages.max(1) as usize,
        added / messages.max(1),
    );
    drop(state);
    let state = Arc::new(restarted);
    let realm = state.realm_by_subdomain("").unwrap();
    let viewer = state.user_by_email(realm.id, "user0@b.test").unwrap();

    let mut group = c.benchmark_group(format!("narrow/{}k", messages / 1_000));
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    for (name, narrow) in [
        ("search 0.1%", json!([["search", "quasar"]])),
        ("search absent", json!([["search", "zyzzyvas"]])),
        ("search common", json!([["search", "hello"]])),
        ("sender", json!([["sender", "user1@b.test"]])),
        ("channel+sender", json!([["channel", "other"], ["sender", "user3@b.test"]])),
        (
            "channel-sender",
            json!([["channel", "other"], {"operator": "sender", "operand": "user3@b.test", "negated": true}]),
        ),
        (
            "topic+search",
            json!([["channel", "general"], ["topic", "topic 7"], ["search", "hello"]]),
        ),
    ] {
        let narrow = Narrow::parse(&state, &viewer, &narrow).unwrap();
        let bounds = WindowBounds {
            anchor: Anchor::Id(LARGER_THAN_MAX_MESSAGE_ID),
            num_before: 100,
            num_after: 0,
            include_anchor: false,
        };
        group.bench_function(name, |b| {
            b.iter(|| window(&state, &viewer, &narrow, bounds).before.len())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
