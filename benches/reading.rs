//! The read path without HTTP: `GET /messages` against a `State` holding
//! 1,000,000 messages, built by applying mutations directly (no log).
//!
//! Run: `cargo bench --bench reading -- --warm-up-time 1 --measurement-time 3`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use natter::api::params::Params;
use natter::api::reading::{get_messages_for, register_state_with};
use natter::api::Reply;
use natter::apply::apply;
use natter::mutation::build::{self, NewChannel, NewUser};
use natter::mutation::{Mutation, NewMessage};
use natter::state::{Realm, Role, State, User};
use natter::testkit;

const MESSAGES: u64 = 1_000_000;
const TOPICS: u64 = 1_000;

/// A realm with a reader and a sender, two channels, and `MESSAGES`
/// messages: nine in ten in `general` over `TOPICS` topics, the rest in
/// `other`. The reader has read everything but the last 100.
fn build() -> (State, Realm, User) {
    let state = State::new();
    let mut seq = 0;
    let mut step = |m: Mutation| {
        seq += 1;
        apply(&state, seq, &m);
    };
    step(build::realm(&state, "", "Bench", 0).unwrap());
    let realm = state.realm_by_subdomain("").unwrap();
    for email in ["reader@b.test", "sender@b.test"] {
        let new = NewUser { email, full_name: email, role: Role::Member, bot: None };
        step(build::user(&state, realm.id, &new, String::new(), 0).unwrap());
    }
    let reader = state.user_by_email(realm.id, "reader@b.test").unwrap();
    let sender = state.user_by_email(realm.id, "sender@b.test").unwrap();
    for name in ["general", "other"] {
        let new = NewChannel {
            name,
            description: "",
            invite_only: false,
            creator: None,
            subscribers: &[reader.id, sender.id],
        };
        step(build::channel(&state, &realm, &new, 0).unwrap());
    }
    let general = state.channel_by_name(realm.id, "general").unwrap();
    let other = state.channel_by_name(realm.id, "other").unwrap();
    for i in 0..MESSAGES {
        let message = testkit::bench_message(&state, i, TOPICS, &general, &other, sender.id);
        // The reader "sends" (so it starts read) all but the last 100.
        let read = i < MESSAGES - 100;
        let mut message = message;
        if read {
            message.sender = reader.id;
        }
        step(Mutation::SendMessage(NewMessage {
            message: std::sync::Arc::new(message),
            read_by_sender: true,
            mentioned: vec![],
            channel_wildcard: false,
            topic_wildcard: vec![],
        }));
    }
    (state, realm, reader)
}

fn bench(c: &mut Criterion) {
    let started = std::time::Instant::now();
    let (state, realm, reader) = build();
    eprintln!("built {MESSAGES} messages in {:.1?}", started.elapsed());
    let mut group = c.benchmark_group("get_messages/1M");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut run = |name: &str, pairs: &[(&str, &str)]| {
        // Check once that the case returns what it should.
        let reply = get_messages_for(
            &state,
            &realm,
            &reader,
            &mut Params::from_pairs(pairs.iter().copied()),
        )
        .expect("get_messages")
        .to_map();
        let n = reply["messages"].as_array().unwrap().len();
        assert!(n > 0, "{name}: no messages");
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut params = Params::from_pairs(pairs.iter().copied());
                get_messages_for(&state, &realm, &reader, &mut params).unwrap()
            })
        });
    };
    let topic = r#"[["stream","general"],["topic","topic 500"]]"#;
    run(
        "topic narrow, newest 50",
        &[("anchor", "newest"), ("num_before", "50"), ("narrow", topic)],
    );
    run(
        "topic narrow, mid-history anchor 30/10",
        &[("anchor", "500000"), ("num_before", "30"), ("num_after", "10"), ("narrow", topic)],
    );
    run(
        "channel narrow, newest 50",
        &[("anchor", "newest"), ("num_before", "50"), ("narrow", r#"[["stream","general"]]"#)],
    );
    run("all messages, newest 50", &[("anchor", "newest"), ("num_before", "50"), ("narrow", "[]")]);
    run(
        "zulip-term start-up: first unread, 30/10",
        &[
            ("anchor", "0"),
            ("use_first_unread_anchor", "true"),
            ("num_before", "30"),
            ("num_after", "10"),
            ("narrow", "[]"),
        ],
    );
    run(
        "search in a topic, newest 20",
        &[
            ("anchor", "newest"),
            ("num_before", "20"),
            ("narrow", r#"[["stream","general"],["topic","topic 7"],["search","number"]]"#),
        ],
    );
    run(
        "is:unread, newest 50",
        &[("anchor", "newest"), ("num_before", "50"), ("narrow", r#"[["is","unread"]]"#)],
    );
    group.bench_function("register sections: max_message_id, unread_msgs, starred", |b| {
        b.iter(|| {
            let mut out = Reply::new();
            register_state_with(&state, &reader, false, &|_| true, &mut out);
            assert_eq!(out["unread_msgs"]["count"], 100);
            out
        })
    });
    group.finish();

    // The worst case: a word in no message, over every delivered message.
    let mut slow = c.benchmark_group("get_messages/1M full scan");
    slow.sample_size(10).measurement_time(Duration::from_secs(3));
    slow.bench_function("search miss over all messages", |b| {
        b.iter(|| {
            let pairs = [
                ("anchor", "newest"),
                ("num_before", "20"),
                ("narrow", r#"[["search","absent"]]"#),
            ];
            let r = get_messages_for(&state, &realm, &reader, &mut Params::from_pairs(pairs))
                .unwrap()
                .to_map();
            assert_eq!(r["found_oldest"], true);
            r
        })
    });
    slow.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
