//! The indexed reads (`query::window`) against a brute-force answer — every
//! stored message tested with `Narrow::matches` and `access::message_view`
//! — on randomised realms: sends, edits, moves between topics and
//! channels, deletions, reactions, flag changes, subscription and channel
//! permission changes; every operator alone and negated, random pairs,
//! several viewers (member, non-subscriber, guest, another realm). The
//! same answers are required while the lookup lists are not built (the
//! fallback after a restart) and once rebuilt, and the lists kept by
//! `apply` must equal the rebuilt ones entry for entry.

use serde_json::{json, Value};

use super::query::{window, Anchor, WindowBounds, LARGER_THAN_MAX_MESSAGE_ID};
use super::Narrow;
use crate::mutation::{
    ChannelChange, FlagsChange, MessageEdit, Mutation, NewContent, PropagateMode,
    SubscriptionChange,
};
use crate::state::access::{can_read_history, is_spectator, message_view};
use crate::state::messages::{Reaction, ReactionType};
use crate::state::{ChannelId, Destination, Flags, IdKind, MessageId, Role, State, User};
// Test code, like all of this module: the fixture's floor is above this one.
#[cfg(test)]
use crate::testkit::World;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const WORDS: [&str; 16] = [
    "run",
    "Running",
    "runs",
    "soup",
    "lunch",
    "the",
    "Café",
    "naïve",
    "42",
    "c++",
    "https://example.com/page",
    "[doc](/user_uploads/1/ab/doc.pdf)",
    "[pic](/user_uploads/1/cd/pic.png)",
    "**bold**",
    "connection",
    "connected",
];

const TOPICS: [&str; 5] = ["lunch", "Lunch plans", "✔ done", "running late", ""];

const CHANNELS: [&str; 3] = ["general", "secret", "web"];

fn content(rng: &mut Rng) -> String {
    let n = 1 + rng.below(5);
    (0..n).map(|_| *rng.pick(&WORDS)).collect::<Vec<_>>().join(" ")
}

/// A realm `""` with five users (the last a guest) and three channels,
/// and a realm `other` whose one user writes the same words.
struct Fixture {
    w: World,
    users: Vec<User>,
    stranger: User,
    channels: Vec<ChannelId>,
}

fn fixture() -> Fixture {
    let mut w = World::new();
    let mut users: Vec<User> =
        (0..4).map(|i| w.user("", &format!("u{i}@t.test"), Role::Member)).collect();
    users.push(w.user("", "guest@t.test", Role::Guest));
    let stranger = w.user("other", "far@o.test", Role::Member);
    let [u0, u1, u2, u3, guest] = [&users[0], &users[1], &users[2], &users[3], &users[4]];
    let channels = vec![
        w.channel("", "general", false, &[u0, u1, u2, guest]).id,
        w.channel("", "secret", true, &[u1, u2]).id,
        w.channel("", "web", false, &[u0, u3]).id,
    ];
    let far = w.channel("other", "general", false, &[&stranger]).id;
    w.post(&stranger, far, "lunch", "run soup the connection");
    Fixture { w, users, stranger, channels }
}

/// One random change to the realm.
fn step(f: &mut Fixture, rng: &mut Rng) {
    let ids: Vec<MessageId> = (1..f.w.state.ids.peek(IdKind::Message))
        .map(MessageId)
        .filter(|id| f.w.state.messages.get(id).is_some_and(|m| m.realm == f.users[0].realm))
        .collect();
    let user = f.users[rng.below(f.users.len())].clone();
    let roll = rng.below(100);
    if ids.is_empty() || roll < 35 {
        let channel = *rng.pick(&f.channels);
        let topic = *rng.pick(&TOPICS);
        let text = content(rng);
        let mentioned: Vec<User> = f.users.iter().filter(|_| rng.chance(15)).cloned().collect();
        let mentioned: Vec<&User> = mentioned.iter().collect();
        f.w.post_mentioning(&user, channel, topic, &text, &mentioned);
        return;
    }
    if roll < 45 {
        let to = f.users[rng.below(f.users.len())].clone();
        let text = content(rng);
        f.w.dm(&user, &[&to], &text);
        return;
    }
    let id = *rng.pick(&ids);
    let message = f.w.message(id);
    match roll {
        45..=54 => {
            let text = content(rng);
            let channel_message = matches!(message.destination, Destination::Channel { .. });
            let new_topic = (channel_message && rng.chance(40)).then(|| rng.pick(&TOPICS));
            let new_channel = (channel_message && rng.chance(30)).then(|| *rng.pick(&f.channels));
            let moves = new_topic.is_some() || new_channel.is_some();
            f.w.apply(Mutation::EditMessage(MessageEdit {
                message: id,
                editor: message.sender,
                timestamp: 2_000_000,
                content: (!moves || rng.chance(70)).then(|| NewContent {
                    rendered: crate::markdown::render(&text),
                    content: text,
                    is_me_message: false,
                    mentioned: f.users.iter().filter(|_| rng.chance(15)).map(|u| u.id).collect(),
                    channel_wildcard: false,
                    topic_wildcard: Vec::new(),
                }),
                topic: new_topic.map(|t| t.to_string()),
                channel: new_channel,
                moved: if moves { vec![id] } else { Vec::new() },
                counts_as_move: true,
                propagate_mode: PropagateMode::ChangeOne,
            }));
        }
        55..=62 => {
            f.w.apply(Mutation::DeleteMessages { messages: vec![id], by: message.sender });
        }
        63..=72 => {
            let code = *rng.pick(&["1f419", "1f389"]);
            let mine =
                message.reactions().iter().any(|r| r.user == user.id && r.emoji_code == code);
            let reaction = Reaction {
                emoji_name: "octopus".into(),
                emoji_code: code.into(),
                reaction_type: ReactionType::Unicode,
                user: user.id,
            };
            if mine {
                f.w.apply(Mutation::RemoveReaction { message: id, reaction });
            } else if message_view(&f.w.state, &user, &message).is_some() {
                f.w.apply(Mutation::AddReaction { message: id, reaction });
            }
        }
        73..=84 => {
            let flag = *rng.pick(&[Flags::READ, Flags::STARRED, Flags::HAS_ALERT_WORD]);
            f.w.apply(Mutation::UpdateFlags(FlagsChange {
                user: user.id,
                add: rng.chance(50),
                flag,
                messages: vec![id],
                historical: Vec::new(),
            }));
        }
        85..=88 => {
            let channel = *rng.pick(&f.channels);
            let subscribed =
                f.w.state.channels.read(&channel, |c| c.subscribers.contains(&user.id)).unwrap();
            if subscribed {
                f.w.apply(Mutation::UpdateSubscriptions {
                    user: user.id,
                    changes: vec![(channel, SubscriptionChange::Muted(rng.chance(50)))],
                });
            }
        }
        89..=93 => {
            let channel = *rng.pick(&f.channels);
            let subscribed =
                f.w.state.channels.read(&channel, |c| c.subscribers.contains(&user.id)).unwrap();
            if subscribed {
                f.w.apply(Mutation::Unsubscribe { channel, users: vec![user.id] });
            } else {
                f.w.subscribe(channel, &[&user]);
            }
        }
        _ => {
            let channel = *rng.pick(&f.channels);
            let invite_only = rng.chance(50);
            f.w.apply(Mutation::UpdateChannel {
                channel,
                changes: vec![ChannelChange::Access {
                    invite_only,
                    history_public_to_subscribers: !invite_only || rng.chance(50),
                    is_web_public: !invite_only && rng.chance(50),
                }],
            });
        }
    }
}

/// Every single term, as `[operator, operand]`.
fn terms(f: &Fixture, rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for name in CHANNELS {
        out.push(json!(["channel", name]));
    }
    for topic in TOPICS {
        out.push(json!(["topic", topic]));
    }
    for user in &f.users {
        out.push(json!(["sender", user.id.0]));
        out.push(json!(["dm", [user.id.0]]));
        out.push(json!(["dm-including", user.id.0]));
    }
    for is in ["dm", "starred", "mentioned", "unread", "resolved", "alerted"] {
        out.push(json!(["is", is]));
    }
    for has in ["link", "image", "attachment", "reaction"] {
        out.push(json!(["has", has]));
    }
    for search in ["run", "RUNNING", "connect", "soup lunch", "\"run soup\"", "café", "42", "c"] {
        out.push(json!(["search", search]));
    }
    for _ in 0..3 {
        let id = 1 + rng.below(f.w.state.ids.peek(IdKind::Message) as usize);
        out.push(json!(["id", id]));
        out.push(json!(["near", id]));
    }
    out.push(json!(["in", "home"]));
    out.push(json!(["in", "all"]));
    out
}

fn term(pair: &Value, negated: bool) -> Value {
    json!({"operator": pair[0], "operand": pair[1], "negated": negated})
}

/// The narrow's messages as `viewer` may read them, by testing every
/// stored message: the ones `matches` accepts that the viewer may see,
/// among those a read without a named channel covers (the viewer's own,
/// or a spectator's web-public channels).
fn brute_force(state: &State, viewer: &User, narrow: &Narrow) -> Vec<MessageId> {
    let history =
        narrow.channel().and_then(|c| state.channels.read(&c, |c| can_read_history(viewer, c)));
    (1..state.ids.peek(IdKind::Message))
        .map(MessageId)
        .filter_map(|id| state.messages.get(&id))
        .filter(|m| {
            let Some(view) = message_view(state, viewer, m) else { return false };
            let covered = if narrow.id().is_some() || narrow.conversation().is_some() {
                true
            } else if narrow.channel().is_some() {
                history == Some(true) || state.flags(viewer.id, m.id).is_some()
            } else if is_spectator(viewer) {
                true
            } else {
                state.flags(viewer.id, m.id).is_some()
            };
            covered && narrow.matches(state, viewer, m, view.flags)
        })
        .map(|m| m.id)
        .collect()
}

/// The window read of `narrow` agrees with the brute-force answer: all
/// of it from the newest, and a small window around a middle anchor.
fn check(state: &State, viewer: &User, narrow: &Narrow, anchor: u64, what: &str) {
    let expected = brute_force(state, viewer, narrow);
    let all = window(
        state,
        viewer,
        narrow,
        WindowBounds {
            anchor: Anchor::Id(LARGER_THAN_MAX_MESSAGE_ID),
            num_before: 100_000,
            num_after: 0,
            include_anchor: true,
        },
    );
    let got: Vec<MessageId> = all.before.iter().rev().map(|(m, _)| m.id).collect();
    assert_eq!(got, expected, "{what}");
    assert!(all.found_oldest && all.found_newest, "{what}");

    let around = window(
        state,
        viewer,
        narrow,
        WindowBounds {
            anchor: Anchor::Id(anchor),
            num_before: 3,
            num_after: 3,
            include_anchor: true,
        },
    );
    let older: Vec<MessageId> = expected.iter().copied().filter(|id| id.0 < anchor).collect();
    let newer: Vec<MessageId> = expected.iter().copied().filter(|id| id.0 > anchor).collect();
    let before: Vec<MessageId> = around.before.iter().map(|(m, _)| m.id).collect();
    let after: Vec<MessageId> = around.after.iter().map(|(m, _)| m.id).collect();
    assert_eq!(before, older.iter().rev().take(3).copied().collect::<Vec<_>>(), "{what} before");
    assert_eq!(after, newer.iter().take(3).copied().collect::<Vec<_>>(), "{what} after");
    assert_eq!(around.found_oldest, older.len() <= 3, "{what}");
    assert_eq!(around.found_newest, newer.len() <= 3, "{what}");
    let at = around.at_anchor.map(|(m, _)| m.id);
    assert_eq!(at, expected.iter().copied().find(|id| id.0 == anchor), "{what} at anchor");

    // The first unread message of the narrow, outside muted channels
    // unless the narrow names a channel.
    let muted = |id: &MessageId| {
        let message = state.messages.get(id).unwrap();
        let Destination::Channel { channel, .. } = &message.destination else { return false };
        narrow.channel().is_none()
            && state
                .subscriptions
                .read(&viewer.id, |s| s.get(channel).is_some_and(|s| s.is_muted))
                .unwrap_or(false)
    };
    let unread = expected.iter().copied().find(|id| {
        let message = state.messages.get(id).unwrap();
        !muted(id) && !message_view(state, viewer, &message).unwrap().flags.contains(Flags::READ)
    });
    let first = window(
        state,
        viewer,
        narrow,
        WindowBounds {
            anchor: Anchor::FirstUnread,
            num_before: 0,
            num_after: 0,
            include_anchor: true,
        },
    );
    assert_eq!(first.anchor, unread.map_or(LARGER_THAN_MAX_MESSAGE_ID, |id| id.0), "{what} unread");
}

/// Every single term (plain and negated) and `pairs` random pairs of
/// them, for every viewer.
fn check_all(f: &Fixture, state: &State, rng: &mut Rng, pairs: usize) -> usize {
    let singles = terms(f, rng);
    let mut narrows: Vec<Value> = vec![json!([])];
    for t in &singles {
        narrows.push(json!([term(t, false)]));
        narrows.push(json!([term(t, true)]));
    }
    for _ in 0..pairs {
        let (a, b) = (rng.pick(&singles), rng.pick(&singles));
        narrows.push(json!([term(a, rng.chance(25)), term(b, rng.chance(25))]));
    }
    // A channel with each term: the terms a channel's indexes answer
    // (topics, resolved topics) meet the channel's own list.
    for t in &singles {
        let channel = json!(["channel", *rng.pick(&CHANNELS)]);
        narrows.push(json!([term(&channel, false), term(t, rng.chance(30))]));
    }
    let newest = state.ids.peek(IdKind::Message);
    let mut checked = 0;
    let viewers: Vec<&User> = f.users.iter().chain([&f.stranger]).collect();
    for viewer in viewers {
        let viewer = state.users.get(&viewer.id).unwrap();
        for value in &narrows {
            // Terms naming what the viewer may not know are refused at
            // parse: nothing to read.
            let Ok(narrow) = Narrow::parse(state, &viewer, value) else { continue };
            let anchor = 1 + rng.below(newest as usize) as u64;
            check(state, &viewer, &narrow, anchor, &format!("{} {value}", viewer.email));
            checked += 1;
        }
    }
    checked
}

#[test]
fn indexed_reads_equal_a_scan_of_every_message() {
    for seed in [1_u64, 7, 2026] {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut f = fixture();
        let mut checked = 0;
        for round in 0..4 {
            for _ in 0..60 {
                step(&mut f, &mut rng);
            }
            assert!(f.w.state.lookup.ready());
            checked += check_all(&f, &f.w.state, &mut rng, 60);
            if round == 3 {
                // After a restart: first without the lookup lists (reads
                // test each candidate), then with them rebuilt — equal to
                // the ones apply kept, list for list.
                let rebuilt = State::from_image(f.w.state.image());
                assert!(!rebuilt.lookup.ready());
                checked += check_all(&f, &rebuilt, &mut rng, 20);
                rebuilt.build_lookup_on(3);
                assert!(rebuilt.lookup.ready());
                assert_eq!(rebuilt.lookup.entries(), f.w.state.lookup.entries(), "seed {seed}");
                checked += check_all(&f, &rebuilt, &mut rng, 20);
            }
        }
        assert!(checked > 1_000, "seed {seed}: {checked} reads checked");
    }
}
