//! Replay: the logged mutations after a snapshot, applied on restart
//! without building events, and with runs of sends applied in bulk.
//!
//! A restart's log tail is mostly sends. `apply` writes a send's row into
//! each recipient's `UserMessages` at once (a shard lock, a hash lookup
//! and copy-on-write checks per recipient), adds the message to three
//! indexes (the topic lowercased into a fresh `String` each time) and
//! builds the event — ≈ 10k instructions for ten recipients, which kept
//! replay near 0.1–0.5M records/s. `Replay` takes the same steps for a
//! run of consecutive sends, but gathers what can wait: each recipient's
//! rows (written per user when the run ends, one lock for all of them)
//! and the messages themselves (indexed together by
//! `State::index_messages`, the bulk path a snapshot load uses, which
//! lowercases each distinct topic once). Everything else a send changes
//! — the id checks and claims, a channel's first message, a
//! conversation's recipient — is done at once by the very functions
//! `apply` calls (`claim_message`, `deliver`), so the two cannot drift
//! apart.
//!
//! Why waiting is sound: nothing a send reads is written by a send except
//! what is done at once. A send reads the channel's subscribers and first
//! message, the settings' alert words and mutes, and whether its id is
//! taken; it never reads rows or the indexes. A run therefore ends before
//! any other mutation (which goes through `apply` as it is, after the run
//! is written), before a send whose id is not above the run's last (so the
//! id check sees every earlier message), after `RUN` sends (memory), and at
//! `finish`. The channels' subscriber lists are read once per run: only
//! other mutations change them. The result is the state `apply` would have
//! built, byte for byte in the snapshot and equal in every derived index
//! (tests below and in `persist`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{apply, channel_subscribers, claim_message, deliver};
use crate::mutation::{Mutation, NewMessage};
use crate::state::{ChannelId, Destination, Flags, Members, Message, MessageId, State, UserId};

/// Most sends gathered before they are written (bounds the memory of the
/// pending rows and messages).
const RUN: usize = 16_384;

/// Applies logged mutations in order, as `apply` would, without events.
pub struct Replay<'s> {
    state: &'s State,
    /// Seq of the last mutation taken (applied or pending).
    seq: u64,
    /// The pending run's messages, ascending by id.
    messages: Vec<Arc<Message>>,
    /// The pending run's rows: per user, ascending by id (kept, emptied,
    /// across runs).
    rows: Vec<(UserId, Vec<(MessageId, Flags)>)>,
    /// Each user's place in `rows`.
    slots: FxHashMap<UserId, usize>,
    /// Per channel sent to in the run: whether it still has no message,
    /// its subscribers, and their places in `rows`.
    channels: FxHashMap<ChannelId, Audience>,
    /// The current send's recipients, for `State::holder_hints`.
    recipients: Vec<UserId>,
}

/// A channel's audience during a run.
struct Audience {
    first: bool,
    subscribers: Members,
    slots: Vec<usize>,
}

/// `user`'s place in `rows`, making one if needed.
fn slot_of(
    slots: &mut FxHashMap<UserId, usize>,
    rows: &mut Vec<(UserId, Vec<(MessageId, Flags)>)>,
    user: UserId,
) -> usize {
    *slots.entry(user).or_insert_with(|| {
        rows.push((user, Vec::new()));
        rows.len() - 1
    })
}

impl<'s> Replay<'s> {
    /// Replays onto `state` from its applied seq on.
    pub fn new(state: &'s State) -> Self {
        Replay {
            state,
            seq: state.applied_seq(),
            messages: Vec::new(),
            rows: Vec::new(),
            slots: FxHashMap::default(),
            channels: FxHashMap::default(),
            recipients: Vec::new(),
        }
    }

    /// Applies mutation number `seq`.
    ///
    /// # Panics
    /// As `apply`: if `seq` does not follow the last one, or the mutation
    /// contradicts the state.
    pub fn apply(&mut self, seq: u64, mutation: Mutation) {
        assert_eq!(seq, self.seq + 1, "replay: seq {seq} does not follow {}", self.seq);
        match mutation {
            Mutation::SendMessage(new) => self.send(new, &[]),
            Mutation::SendNotice { message, read_by } => self.send(message, &read_by),
            other => {
                self.flush();
                apply(self.state, seq, &other);
            }
        }
        self.seq = seq;
    }

    /// Writes whatever is pending; the state is then what `apply` would
    /// have left after the last mutation taken.
    pub fn finish(mut self) {
        self.flush();
    }

    /// One send of a run: checks, claims and flags at once (as `apply`),
    /// its rows and its message kept for the end of the run.
    fn send(&mut self, new: NewMessage, read_by: &[UserId]) {
        let id = new.message.id;
        if self.messages.last().is_some_and(|last| last.id >= id) || self.messages.len() >= RUN {
            self.flush();
        }
        let state = self.state;
        claim_message(state, &new.message);
        let (rows, slots, recipients) = (&mut self.rows, &mut self.slots, &mut self.recipients);
        match &new.message.destination {
            Destination::Channel { channel, .. } => {
                let audience = self.channels.entry(*channel).or_insert_with(|| {
                    let (first, subscribers) = channel_subscribers(state, *channel);
                    let slots = subscribers.iter().map(|u| slot_of(slots, rows, *u)).collect();
                    Audience { first, subscribers, slots }
                });
                let known = &audience.slots;
                let row = |at: usize, user, flags| {
                    let slot = match known.get(at) {
                        Some(slot) => *slot,
                        None => slot_of(slots, rows, user),
                    };
                    rows[slot].1.push((id, flags));
                    recipients.push(user);
                };
                deliver(state, &new, read_by, audience.first, audience.subscribers.as_slice(), row);
                audience.first = false;
            }
            Destination::Direct { .. } => {
                let row = |_, user, flags| {
                    let slot = slot_of(slots, rows, user);
                    rows[slot].1.push((id, flags));
                    recipients.push(user);
                };
                deliver(state, &new, read_by, false, &[], row);
            }
        }
        // As `send_message` (a hint that no one reads before the run is
        // written); the drain empties `recipients` either way.
        state.note_holders(&new.message, recipients.drain(..));
        self.messages.push(new.message);
    }

    /// Writes the pending run: each user's rows under one lock, then the
    /// messages with their recipient and topic index entries.
    fn flush(&mut self) {
        if self.messages.is_empty() {
            return;
        }
        let state = self.state;
        // The per-user lists are kept (emptied) for the next run.
        for (user, rows) in self.rows.iter_mut().filter(|(_, rows)| !rows.is_empty()) {
            state.user_messages.upsert(*user, |mine| mine.set_all(rows));
            rows.clear();
        }
        state.index_messages(state.names.share_all(self.messages.drain(..)));
        self.channels.clear();
        // Sends never change users (`keeps_users`): no generation bump.
        state.applied_seq.store(self.seq, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::mutation::build;
    use crate::mutation::FlagsChange;
    use crate::persist::snapshot;
    use crate::state::indexes::TopicEntry;
    use crate::state::personal::PersonalChange;
    use crate::state::{IdKind, IdSet, MessageParts, RecipientId, Role, User};
    use crate::testkit::World;

    /// What replay must reproduce: the snapshot bytes, then what is not
    /// in them (the derived indexes, the seq, the id counters and the
    /// holder hints).
    #[allow(clippy::type_complexity)]
    fn everything(
        state: &State,
    ) -> (
        Vec<u8>,
        Vec<(RecipientId, IdSet)>,
        Vec<((ChannelId, String), IdSet)>,
        Vec<(ChannelId, BTreeMap<String, TopicEntry>)>,
        u64,
        Vec<u64>,
        Vec<Option<Vec<UserId>>>,
    ) {
        let topics = state
            .channel_topics
            .collect_sorted(|_, _| true)
            .into_iter()
            .map(|(channel, topics)| (channel, topics.into_iter().collect()))
            .collect();
        let kinds = [IdKind::Message, IdKind::Recipient, IdKind::User, IdKind::Channel];
        (
            snapshot::encode(&state.image()),
            state.by_recipient.collect_sorted(|_, _| true),
            state.by_topic.collect_sorted(|_, _| true),
            topics,
            state.applied_seq(),
            kinds.iter().map(|k| state.ids.peek(*k)).collect(),
            // Not observable, but a restart should know recent holders too.
            (1..state.ids.peek(IdKind::Message))
                .map(|id| state.holder_hints.candidates(MessageId(id)))
                .collect(),
        )
    }

    /// A history applied live: sends to channels (topics in several
    /// spellings of one name) and conversations, with mentions,
    /// wildcards and read-by-sender, interrupted by subscriptions, alert
    /// words, mutes, flag changes and deletions; more sends than `RUN`.
    fn history() -> World {
        let mut w = World::new();
        let realm = w.realm("");
        let people: Vec<User> =
            (0..5).map(|i| w.user("", &format!("u{i}@r.test"), Role::Member)).collect();
        let users: Vec<UserId> = people.iter().map(|u| u.id).collect();
        let members: Vec<&User> = people.iter().collect();
        let channels = [
            w.channel("", "general", false, &members[..4]),
            w.channel("", "secret", true, &members[..2]),
        ];
        let topics = ["Topic A", "topic a", "TOPIC A", "b", "Ünïcode É"];
        let mut sent = Vec::new();
        for i in 0..RUN as u64 + 600 {
            let state = &w.state;
            let sender = users[(i % 4) as usize];
            let m = match i {
                _ if i % 97 == 50 && i < 1_000 => {
                    let user = users[2 + (i / 97 % 3) as usize];
                    let secret = channels[1].id;
                    let subscribed =
                        state.channels.read(&secret, |c| c.subscribers.contains(&user)).unwrap();
                    if subscribed {
                        Mutation::Unsubscribe { channel: secret, users: vec![user] }
                    } else {
                        let sub = build::subscription(state, user, 1);
                        Mutation::Subscribe { channel: secret, subscribers: vec![(user, sub)] }
                    }
                }
                1_000 => Mutation::personal(PersonalChange::SetAlertWords {
                    user: users[1],
                    words: vec!["number 7".into()],
                }),
                2_000 => Mutation::personal(PersonalChange::SetMuted {
                    user: users[2],
                    target: users[3],
                    since: Some(5),
                }),
                _ if i % 301 == 300 => Mutation::UpdateFlags(FlagsChange {
                    user: users[0],
                    add: true,
                    flag: Flags::STARRED,
                    messages: sent.iter().rev().step_by(7).take(5).copied().collect(),
                    historical: Vec::new(),
                }),
                _ if i % 499 == 498 => {
                    let last = sent.pop().unwrap();
                    Mutation::DeleteMessages { messages: vec![last], by: users[0] }
                }
                _ => {
                    let (destination, recipient) = if i % 9 == 4 {
                        let mut participants = vec![sender, users[4]];
                        participants.sort();
                        let recipient = state
                            .direct_recipients
                            .get(&participants)
                            .unwrap_or(RecipientId(state.ids.peek(IdKind::Recipient)));
                        (Destination::Direct { participants: participants.into() }, recipient)
                    } else {
                        let channel = &channels[(i % 5 == 0) as usize];
                        let topic = topics[(i % 5) as usize];
                        (
                            Destination::Channel { channel: channel.id, topic: topic.into() },
                            channel.recipient,
                        )
                    };
                    let content = format!("number {i}");
                    let message = Message::from(MessageParts {
                        id: MessageId(state.ids.peek(IdKind::Message)),
                        realm: realm.id,
                        sender,
                        recipient,
                        destination,
                        rendered_content: format!("<p>{content}</p>"),
                        content,
                        timestamp: i as i64,
                        client: ["a", "b"][(i % 2) as usize].into(),
                        is_me_message: false,
                    });
                    sent.push(message.id);
                    Mutation::SendMessage(NewMessage {
                        message: Arc::new(message),
                        read_by_sender: i % 3 != 0,
                        mentioned: if i % 11 == 0 { vec![users[1]] } else { Vec::new() },
                        channel_wildcard: i % 13 == 0,
                        topic_wildcard: if i % 17 == 0 { vec![users[0]] } else { Vec::new() },
                    })
                }
            };
            w.apply(m);
        }
        w
    }

    #[test]
    fn replay_builds_what_apply_built_from_any_starting_point() {
        let live = history();
        let log = live.log();
        let expected = everything(&live.state);
        for cut in [0, 1_234, 4_000, log.len() - 3, log.len()] {
            let state = State::new();
            for (m, seq) in log[..cut].iter().zip(1..) {
                apply(&state, seq, m);
            }
            let mut replay = Replay::new(&state);
            for (m, seq) in log[cut..].iter().zip(cut as u64 + 1..) {
                replay.apply(seq, m.clone());
            }
            replay.finish();
            assert!(everything(&state) == expected, "replayed from {cut}: state differs");
        }
    }

    #[test]
    #[should_panic(expected = "does not follow")]
    fn a_seq_out_of_order_is_refused() {
        let state = State::new();
        let mut replay = Replay::new(&state);
        replay.apply(2, build::realm(&state, "", "R", 0).unwrap());
    }

    #[test]
    #[should_panic(expected = "exists")]
    fn a_message_id_sent_twice_in_one_run_is_refused() {
        let live = history();
        let log = live.log();
        let send = log.iter().rposition(|m| matches!(m, Mutation::SendMessage(_))).unwrap();
        let state = State::new();
        let mut replay = Replay::new(&state);
        for (m, seq) in log[..=send].iter().zip(1..) {
            replay.apply(seq, m.clone());
        }
        replay.apply(send as u64 + 2, log[send].clone());
        replay.finish();
    }
}
