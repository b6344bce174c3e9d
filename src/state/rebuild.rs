//! Restart's rebuild of the derived message indexes (message ids per
//! recipient and per (channel, lowercased topic), each channel's topics)
//! from a snapshot's message chunks, on every core.
//!
//! The chunks are split into one contiguous run per thread, and the
//! rebuild makes two passes over them. The first counts, per thread, the
//! ids of each recipient and of each (channel, topic as spelled); then
//! every final id list is allocated once at its exact length and cut into
//! one slice per thread; the second pass has each thread write its ids
//! into its slices. So no list grows by doubling and nothing is copied
//! on the way, and every list comes out ascending, as the runs are; a
//! topic spelled several ways is sorted once in place. Each list then
//! becomes the index's `IdSet` (its one transient copy). A topic is lowercased once per spelling. The messages
//! are not copied: the chunks move into the store as they are. No I/O, no
//! clock: the same result whatever the number of threads.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::indexes::TopicEntry;
use super::message_store::FrozenMessages;
use super::{
    ChannelId, Destination, Message, MessageId, MessageStore, RealmId, RecipientId, State,
};

/// What one thread counted in its run of chunks.
#[derive(Default)]
struct Counts<'a> {
    recipients: FxHashMap<RecipientId, usize>,
    /// By (channel, topic as spelled): how many ids, the newest, and the
    /// first copy of the name met.
    topics: FxHashMap<(ChannelId, &'a str), (usize, MessageId, &'a Arc<str>)>,
    /// Every distinct client name (by pointer) met, in order.
    clients: Vec<&'a Arc<str>>,
    /// Messages by realm.
    realms: FxHashMap<RealmId, usize>,
}

impl<'a> Counts<'a> {
    fn add(&mut self, message: &'a Message) {
        *self.recipients.entry(message.recipient).or_default() += 1;
        *self.realms.entry(message.realm).or_default() += 1;
        if let Destination::Channel { channel, topic } = &message.destination {
            let count = self.topics.entry((*channel, &**topic)).or_insert((0, message.id, topic));
            (count.0, count.1) = (count.0 + 1, message.id);
        }
        if self.clients.last().is_none_or(|last| !Arc::ptr_eq(last, &message.client)) {
            self.clients.push(&message.client);
        }
    }
}

/// One thread's slices of the final lists, filled by its second pass.
#[derive(Default)]
struct Slices<'a, 'm> {
    recipients: FxHashMap<RecipientId, &'a mut [MessageId]>,
    topics: FxHashMap<(ChannelId, &'m str), &'a mut [MessageId]>,
}

/// Writes `id` at the front of `slot` and moves the slot past it.
fn put(slot: &mut &mut [MessageId], id: MessageId) {
    let (first, rest) = std::mem::take(slot).split_first_mut().expect("counted");
    *first = id;
    *slot = rest;
}

/// One lowercased topic: its final list and its spellings.
struct Topic<'m> {
    ids: Vec<MessageId>,
    /// The spelling of its newest message, and that id.
    name: &'m str,
    max_id: MessageId,
    spellings: usize,
    /// Its ids, counted.
    total: usize,
}

impl State {
    /// Moves a snapshot's messages into the store and rebuilds their
    /// recipient and topic indexes and the client names' interning, on
    /// `threads` threads.
    pub(crate) fn index_frozen(&mut self, frozen: FrozenMessages, threads: usize) {
        let parts = frozen.parts();
        let threads = threads.clamp(1, parts.max(1));
        let run = |t: usize| (parts * t / threads, parts * (t + 1) / threads);
        let counts: Vec<Counts<'_>> = std::thread::scope(|scope| {
            let frozen = &frozen;
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    scope.spawn(move || {
                        let (from, to) = run(t);
                        let mut counts = Counts::default();
                        frozen.iter_chunks(from, to).for_each(|m| counts.add(m));
                        counts
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("an index thread panicked")).collect()
        });

        // Every final list at its exact length.
        let mut totals: FxHashMap<RecipientId, usize> = FxHashMap::default();
        for (recipient, n) in counts.iter().flat_map(|c| &c.recipients) {
            *totals.entry(*recipient).or_default() += n;
        }
        let mut recipients: FxHashMap<RecipientId, Vec<MessageId>> =
            totals.into_iter().map(|(r, n)| (r, vec![MessageId(0); n])).collect();
        let mut lowered: FxHashMap<&str, String> = FxHashMap::default();
        let mut topics: FxHashMap<(ChannelId, String), Topic<'_>> = FxHashMap::default();
        let mut spelled: FxHashMap<(ChannelId, &str), String> = FxHashMap::default();
        for ((channel, spelling), (n, newest, _)) in counts.iter().flat_map(|c| &c.topics) {
            let lower = lowered.entry(spelling).or_insert_with(|| spelling.to_lowercase()).clone();
            let topic = topics.entry((*channel, lower.clone())).or_insert_with(|| Topic {
                ids: Vec::new(),
                name: spelling,
                max_id: *newest,
                spellings: 0,
                total: 0,
            });
            topic.total += n;
            if *newest > topic.max_id {
                (topic.name, topic.max_id) = (spelling, *newest);
            }
            spelled.insert((*channel, spelling), lower);
        }
        for topic in topics.values_mut() {
            topic.ids = vec![MessageId(0); topic.total];
        }

        // Each list cut into the threads' slices, in run order.
        let mut slices: Vec<Slices<'_, '_>> = (0..threads).map(|_| Slices::default()).collect();
        for (recipient, list) in recipients.iter_mut() {
            let mut rest = list.as_mut_slice();
            for (t, mine) in slices.iter_mut().enumerate() {
                let n = counts[t].recipients.get(recipient).copied().unwrap_or(0);
                let (piece, after) = rest.split_at_mut(n);
                mine.recipients.insert(*recipient, piece);
                rest = after;
            }
        }
        let mut by_lower: FxHashMap<(ChannelId, &str), Vec<&str>> = FxHashMap::default();
        for ((channel, spelling), lower) in &spelled {
            by_lower.entry((*channel, lower.as_str())).or_default().push(spelling);
        }
        for ((channel, lower), topic) in topics.iter_mut() {
            let spellings = &by_lower[&(*channel, lower.as_str())];
            topic.spellings = spellings.len();
            let mut rest = topic.ids.as_mut_slice();
            for (t, mine) in slices.iter_mut().enumerate() {
                for spelling in spellings {
                    let n = counts[t].topics.get(&(*channel, *spelling)).map_or(0, |c| c.0);
                    let (piece, after) = rest.split_at_mut(n);
                    mine.topics.insert((*channel, spelling), piece);
                    rest = after;
                }
            }
        }

        // The second pass: each thread writes its ids into its slices.
        std::thread::scope(|scope| {
            let frozen = &frozen;
            for (t, mut mine) in slices.into_iter().enumerate() {
                scope.spawn(move || {
                    let (from, to) = run(t);
                    for message in frozen.iter_chunks(from, to) {
                        let slot = mine.recipients.get_mut(&message.recipient).expect("counted");
                        put(slot, message.id);
                        if let Destination::Channel { channel, topic } = &message.destination {
                            let slot = mine.topics.get_mut(&(*channel, &**topic)).expect("counted");
                            put(slot, message.id);
                        }
                    }
                });
            }
        });

        // The indexes are `IdSet`s: built from the ascending lists (each
        // list then freed: the one transient copy of the rebuild).
        for (recipient, list) in recipients {
            self.by_recipient.insert(recipient, list.into_iter().collect());
        }
        for ((channel, lower), mut topic) in topics {
            if topic.spellings > 1 {
                topic.ids.sort_unstable();
            }
            let entry = TopicEntry { name: topic.name.to_owned(), max_id: topic.max_id };
            self.channel_topics.upsert(channel, |all| {
                all.insert(lower.clone(), entry);
            });
            self.by_topic.insert((channel, lower), topic.ids.into_iter().collect());
        }

        // Topics: decoding shared a copy per name and thread; one of them
        // becomes the interned one, so the next message to a topic shares
        // it instead of storing a copy of its own.
        for (_, _, name) in counts.iter().flat_map(|c| c.topics.values()) {
            self.names.intern(name);
        }
        // Client names: decoding shared one copy per name, which becomes
        // the interned one; a message holding another copy (an image not
        // decoded by `persist::snapshot`) is pointed at it below.
        let mut stray = false;
        for client in counts.iter().flat_map(|c| &c.clients) {
            stray |= !Arc::ptr_eq(&self.names.intern(client), client);
        }
        let mut realms: FxHashMap<RealmId, usize> = FxHashMap::default();
        for (realm, n) in counts.iter().flat_map(|c| &c.realms) {
            *realms.entry(*realm).or_default() += n;
        }
        drop(counts);
        self.messages = MessageStore::from_frozen(frozen, realms);
        if stray {
            self.reintern_clients();
        }
    }

    /// Points every message's client name at the interned copy (slow: a
    /// pass over every message; only for images whose messages hold
    /// copies of equal names).
    fn reintern_clients(&self) {
        let frozen = self.messages.freeze();
        let ids: Vec<MessageId> = frozen.iter_chunks(0, frozen.parts()).map(|m| m.id).collect();
        drop(frozen);
        for id in ids {
            self.messages.update(&id, |message| {
                let shared = self.names.intern(&message.client);
                if !Arc::ptr_eq(&shared, &message.client) {
                    Arc::make_mut(message).client = shared;
                }
            });
        }
    }
}

/// How many threads a restart rebuilds on: every core.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::snapshot;
    use crate::state::{Role, User};
    use crate::testkit::World;

    /// After a restart a topic's name is interned: the next message to it
    /// shares the stored messages' copy rather than keeping its own.
    #[test]
    fn a_restart_interns_the_topics_it_decodes() {
        let mut live = World::new();
        let members: Vec<User> =
            (0..3).map(|i| live.user("", &format!("u{i}@t.test"), Role::Member)).collect();
        let general = live.channel("", "general", false, &members.iter().collect::<Vec<_>>()).id;
        for i in 0..300 {
            live.post(&members[i % 3], general, &format!("topic {}", i % 100), "hello");
        }
        let bytes = snapshot::encode(&live.state.image());
        let image = snapshot::decode(&bytes, std::path::Path::new("test")).unwrap();
        let restarted = State::from_image(image);
        let frozen = restarted.messages.freeze();
        // Per topic: does the interned copy belong to a stored message?
        let mut shared: FxHashMap<String, bool> = FxHashMap::default();
        for message in frozen.iter_chunks(0, frozen.parts()) {
            if let Destination::Channel { topic, .. } = &message.destination {
                let interned = restarted.names.intern_str(topic);
                *shared.entry(topic.to_string()).or_default() |= Arc::ptr_eq(&interned, topic);
            }
        }
        let topics = shared.len();
        assert!(shared.values().all(|&s| s), "topics not interned: {shared:?}");
        assert_eq!(topics, 100, "every topic of the channel's messages");
    }
}
