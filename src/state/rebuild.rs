//! Restart's rebuild of the derived message indexes (message ids per
//! recipient and per (channel, lowercased topic), each channel's topics)
//! from a snapshot's message chunks, on every core.
//!
//! The chunks are split into one contiguous run per thread; each thread
//! builds its own id lists for its run (ascending, since the run is), and
//! the lists are then joined in run order — so every list comes out
//! ascending and exactly sized, as `index_message` one by one would
//! leave it but without its doublings. A topic is lowercased once per
//! spelling. The messages are not copied: the chunks move into the store
//! as they are. No I/O, no clock: the same result whatever the number of
//! threads.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::indexes::TopicEntry;
use super::message_store::FrozenMessages;
use super::{ChannelId, Destination, Message, MessageId, MessageStore, RecipientId, State};

/// What one thread found in its run of chunks.
#[derive(Default)]
struct Run<'a> {
    by_recipient: FxHashMap<RecipientId, Vec<MessageId>>,
    /// By (channel, topic as spelled): the ids, ascending.
    topics: FxHashMap<(ChannelId, &'a str), Vec<MessageId>>,
    /// Every distinct client name (by pointer) met, in order.
    clients: Vec<&'a Arc<str>>,
}

impl<'a> Run<'a> {
    fn add(&mut self, message: &'a Message) {
        self.by_recipient.entry(message.recipient).or_default().push(message.id);
        if let Destination::Channel { channel, topic } = &message.destination {
            self.topics.entry((*channel, &**topic)).or_default().push(message.id);
        }
        if self.clients.last().is_none_or(|last| !Arc::ptr_eq(last, &message.client)) {
            self.clients.push(&message.client);
        }
    }
}

/// One topic being joined: its ids and the spelling of its newest message.
struct Topic<'a> {
    ids: Vec<MessageId>,
    name: &'a str,
    /// The newest id, whose spelling `name` is.
    max_id: MessageId,
    /// Whether two spellings' ids were appended (then they need sorting).
    mixed: bool,
}

impl State {
    /// Moves a snapshot's messages into the store and rebuilds their
    /// recipient and topic indexes and the client names' interning, on
    /// `threads` threads.
    pub(crate) fn index_frozen(&mut self, frozen: FrozenMessages, threads: usize) {
        let parts = frozen.parts();
        let threads = threads.clamp(1, parts.max(1));
        let mut runs: Vec<Run<'_>> = std::thread::scope(|scope| {
            let frozen = &frozen;
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (from, to) = (parts * t / threads, parts * (t + 1) / threads);
                    scope.spawn(move || {
                        let mut run = Run::default();
                        frozen.iter_chunks(from, to).for_each(|m| run.add(m));
                        run
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("an index thread panicked")).collect()
        });

        // Recipients: the runs' lists joined in run order.
        let mut by_recipient: FxHashMap<RecipientId, Vec<Vec<MessageId>>> = FxHashMap::default();
        for run in &mut runs {
            for (recipient, ids) in run.by_recipient.drain() {
                by_recipient.entry(recipient).or_default().push(ids);
            }
        }
        for (recipient, lists) in by_recipient {
            self.by_recipient.insert(recipient, join(lists).into_iter().collect());
        }

        // Topics: spellings grouped by their lowercased key.
        let mut lowered: FxHashMap<&str, String> = FxHashMap::default();
        let mut topics: FxHashMap<(ChannelId, String), Topic<'_>> = FxHashMap::default();
        for run in &mut runs {
            for ((channel, spelled), ids) in run.topics.drain() {
                let lower = lowered.entry(spelled).or_insert_with(|| spelled.to_lowercase());
                let newest = *ids.last().expect("a topic list has an id");
                match topics.get_mut(&(channel, lower.clone())) {
                    None => {
                        let topic = Topic { ids, name: spelled, max_id: newest, mixed: false };
                        topics.insert((channel, lower.clone()), topic);
                    }
                    Some(topic) => {
                        let before = *topic.ids.last().expect("a topic list has an id");
                        if newest > topic.max_id {
                            (topic.name, topic.max_id) = (spelled, newest);
                        }
                        topic.mixed |= ids[0] < before;
                        topic.ids.extend_from_slice(&ids);
                    }
                }
            }
        }
        for ((channel, lower), mut topic) in topics {
            if topic.mixed {
                topic.ids.sort_unstable();
            }
            let entry = TopicEntry { name: topic.name.to_owned(), max_id: topic.max_id };
            self.channel_topics.upsert(channel, |all| {
                all.insert(lower.clone(), entry);
            });
            self.by_topic.insert((channel, lower), topic.ids.into_iter().collect());
        }

        // Client names: decoding shared one copy per name, which becomes
        // the interned one; a message holding another copy (an image not
        // decoded by `persist::snapshot`) is pointed at it below.
        let mut stray = Vec::new();
        for run in &runs {
            for client in &run.clients {
                let shared = self.names.intern(client);
                if !Arc::ptr_eq(&shared, client) {
                    stray.push(shared);
                }
            }
        }
        drop(runs);
        self.messages = MessageStore::from_frozen(frozen);
        if !stray.is_empty() {
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

/// Joins id lists given in ascending order into one exactly sized list.
fn join(mut lists: Vec<Vec<MessageId>>) -> Vec<MessageId> {
    if lists.len() == 1 {
        let mut only = lists.pop().expect("one list");
        only.shrink_to_fit();
        return only;
    }
    let mut all = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    for list in lists {
        all.extend_from_slice(&list);
    }
    all
}

/// How many threads a restart rebuilds on: every core.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
