//! Real-time benchmarks, in-process (over HTTP they would mostly measure
//! the loopback):
//! - `fanout`: one channel message to 10,000 subscribers, each with a
//!   long-poll parked on its queue (a may coroutine each); the time from
//!   the send until the last poll has returned with the event.
//! - `register`: `POST /register` (every section) for a user of a realm
//!   with 10,000 users; and the first register after a user changed, which
//!   copies the realm's accounts and writes their JSON again (the others
//!   share the cached lists, `api::user_lists`); and, of that first
//!   register, the time the users' cut holds the writer lock, copied under
//!   it (as before) and only frozen under it (as now).
//!
//! Run: `cargo bench --bench realtime -- --warm-up-time 1 --measurement-time 3`

use std::collections::BTreeSet;

use natter::mutation::build;
use natter::testkit;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

use natter::api::params::Params;
use natter::api::{events, messages, register, App, Call};
use natter::events::queue::QueueOptions;
use natter::mutation::{Mutation, UserChange};
use natter::state::{Role, Subscription, User, UserId};

const USERS: usize = 10_000;

/// CPU time used by the whole process so far (user + system), so that the
/// figures can be read on a shared, oversubscribed box where wall time
/// mostly measures waiting for a core.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 (1-based; 12 and 13 after the ')').
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// A dev realm grown to `USERS` extra members, all subscribed to general.
fn app(dir: &std::path::Path) -> Arc<App> {
    let app = testkit::in_process_dev_app(dir, &["--max-queues-per-user", "1000000"]);
    let realm = app.state.realm_by_subdomain("").unwrap();
    let mut ids = Vec::with_capacity(USERS);
    for i in 0..USERS {
        let email = format!("user{i}@natter.test");
        let new =
            build::NewUser { email: &email, full_name: &email, role: Role::Member, bot: None };
        let id = app
            .committer
            .commit(|s| {
                let m = build::user(s, realm.id, &new, format!("{i:032}"), 0)?;
                let Mutation::CreateUser(u) = &m else { unreachable!() };
                let id = u.id;
                Ok((m, id))
            })
            .unwrap();
        ids.push(id);
    }
    let general = app.state.channel_by_name(realm.id, "general").unwrap().id;
    app.committer
        .commit(|_| {
            let subscribers =
                ids.iter().map(|u| (*u, Subscription::new("#76ce90".into()))).collect();
            Ok((Mutation::Subscribe { channel: general, subscribers }, ()))
        })
        .unwrap();
    app
}

fn call(app: &App, user: &User, params: &[(&str, &str)]) -> Call {
    let realm = app.state.realm_by_subdomain("").unwrap();
    let params = Params::from_pairs(params.iter().copied());
    Call {
        realm: realm.into(),
        caller: Some(user.clone().into()),
        params,
        path: Vec::new(),
        client: "bench".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    may::config().set_workers(2);
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let realm = app.state.realm_by_subdomain("").unwrap();
    let users: Vec<UserId> = app
        .state
        .realm_users(realm.id)
        .into_iter()
        .filter(|u| u.email.starts_with("user"))
        .map(|u| u.id)
        .collect();
    let queues = &app.hub.realtime().queues;
    let options = QueueOptions {
        event_types: Some(BTreeSet::from(["message".to_owned()])),
        apply_markdown: true,
        client_gravatar: true,
        ..QueueOptions::default()
    };
    let seq = app.state.applied_seq();
    let polls: Arc<Vec<(String, UserId, AtomicI64)>> = Arc::new(
        users
            .iter()
            .map(|u| {
                let id = queues.create(*u, realm.id, options.clone(), seq).unwrap();
                (id, *u, AtomicI64::new(-1))
            })
            .collect(),
    );
    let hamlet = app.state.user_by_email(realm.id, "hamlet@natter.test").unwrap();

    let mut group = c.benchmark_group("realtime");
    group.sample_size(10);
    // One long-lived poller coroutine per queue, like a client's long-poll
    // connection: poll, count down, poll again. The last one to return
    // wakes the bench thread (a std channel: sending never blocks).
    let (done, returned) = std::sync::mpsc::channel::<()>();
    let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for i in 0..polls.len() {
        let (app, polls, done) = (Arc::clone(&app), Arc::clone(&polls), done.clone());
        let remaining = Arc::clone(&remaining);
        may::go!(move || loop {
            let (id, user, last) = &polls[i];
            // The events' JSON text, as GET /events splices it into its reply.
            let Ok(got) = app.hub.realtime().queues.poll_json(
                id,
                *user,
                Some(last.load(Ordering::Relaxed)),
                false,
            ) else {
                return;
            };
            if let Some(newest) = got.newest {
                last.store(newest, Ordering::Relaxed);
            }
            if remaining.fetch_sub(1, Ordering::AcqRel) == 1 && done.send(()).is_err() {
                return;
            }
        });
    }
    group.bench_function("fanout: 1 channel message to 10,000 parked long-polls", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut cpu = Duration::ZERO;
            for _ in 0..iters {
                while app.hub.realtime().queues.parked() < polls.len() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let params =
                    [("type", "stream"), ("to", "general"), ("topic", "fan"), ("content", "out")];
                remaining.store(polls.len(), Ordering::Release);
                let (start, cpu_start) = (Instant::now(), process_cpu());
                // Sent from a coroutine, as the HTTP handler would be.
                let (sender, user) = (Arc::clone(&app), hamlet.clone());
                may::go!(move || {
                    messages::send(&sender, &mut call(&sender, &user, &params)).unwrap();
                });
                returned.recv().unwrap();
                total += start.elapsed();
                cpu += process_cpu().saturating_sub(cpu_start);
            }
            let cpu = cpu / iters as u32;
            eprintln!(
                "fanout: {iters} iterations, {cpu:?} process CPU each (wall {:?})",
                total / iters as u32
            );
            total
        })
    });
    let (cpu, wall) = (process_cpu(), Instant::now());
    for _ in 0..20 {
        let queue = register_to_bytes(&app, &hamlet);
        events::delete_queue(&app, &mut call(&app, &hamlet, &[("queue_id", &queue)])).unwrap();
    }
    eprintln!(
        "register: {:?} process CPU each (wall {:?})",
        process_cpu().saturating_sub(cpu) / 20,
        wall.elapsed() / 20
    );
    group.bench_function("register: every section, 10,000-user realm", |b| {
        b.iter(|| {
            let queue = register_to_bytes(&app, &hamlet);
            events::delete_queue(&app, &mut call(&app, &hamlet, &[("queue_id", &queue)])).unwrap();
        })
    });
    // The first register after a change to some user: the realm's accounts
    // are copied again (after the writer lock) and this viewer class's lists
    // written again (every later register until the next such change
    // shares them, as in the bench above).
    let mut renamed = 0u64;
    group.bench_function("register: first after a user change, 10,000-user realm", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                renamed += 1;
                let name = format!("Renamed {renamed}");
                let change = vec![(users[0], UserChange::FullName(name))];
                app.committer
                    .commit(|_| Ok((Mutation::UpdateUsers { changes: change }, ())))
                    .unwrap();
                let start = Instant::now();
                let queue = register_to_bytes(&app, &hamlet);
                total += start.elapsed();
                events::delete_queue(&app, &mut call(&app, &hamlet, &[("queue_id", &queue)]))
                    .unwrap();
            }
            total
        })
    });
    // The part of that first register held under the writer lock for the
    // users: before, the whole copy of the realm's accounts
    // (`UserLists::cut`); now only freezing their shards
    // (`UserLists::pending`), the copy following after the lock. Each
    // iteration renames a user first, so no cut is cached.
    let lists = &app.hub.realtime().user_lists;
    for (name, frozen_only) in [
        ("register's user cut under the writer lock, copied there (before)", false),
        ("register's user cut under the writer lock, frozen only (now)", true),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut held = Duration::ZERO;
                for _ in 0..iters {
                    renamed += 1;
                    let change =
                        vec![(users[0], UserChange::FullName(format!("Renamed {renamed}")))];
                    app.committer
                        .commit(|_| Ok((Mutation::UpdateUsers { changes: change }, ())))
                        .unwrap();
                    let (took, cut) = app.committer.read_consistent(|state, _| {
                        let start = Instant::now();
                        let pending = lists.pending(state, realm.id);
                        let cut =
                            if frozen_only { Err(pending) } else { Ok(pending.finish(lists)) };
                        (start.elapsed(), cut)
                    });
                    held += took;
                    let cut = cut.unwrap_or_else(|pending| pending.finish(lists));
                    assert!(cut.users.len() >= USERS);
                }
                held
            })
        });
    }
    group.finish();
}

/// One register, through to the reply's JSON bytes as the HTTP layer sends
/// them (building the reply and serializing it are both part of the cost);
/// returns the new queue's id.
fn register_to_bytes(app: &App, user: &User) -> String {
    let mut call = call(app, user, &[]);
    let reply = register::register(app, &mut call).unwrap();
    let queue = reply["queue_id"].as_str().unwrap().to_owned();
    let body = natter::http::response::success_with(reply, call.raw_fields, Vec::new()).body;
    assert!(body.len() > 1_000_000, "10,000 users are in the reply");
    queue
}

criterion_group!(benches, bench);
criterion_main!(benches);
