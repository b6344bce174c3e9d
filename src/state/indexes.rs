//! Derived read indexes — message ids per recipient (channel or
//! conversation), per (channel, topic), and each channel's topic list —
//! maintained by `State::index_message` (so by `apply` and by
//! `State::from_image`) and never snapshotted: a restart rebuilds them
//! from the messages. Also the accessors of each user's rows
//! (`user_messages`), whose unread and starred sets are part of the rows
//! themselves.
//!
//! The id lists are `IdSet`s (`user_messages`): ascending ids in chunks of
//! about a thousand, not one flat `Vec`. A busy channel's list holds
//! millions of ids; as a `Vec` it doubled by reallocating and copying
//! (80 MB at 10M messages, with the page faults of a fresh 160 MB block)
//! under the commit writer lock, the longest stall of a send at that size.
//! A chunked list appends into its last chunk and at most pushes one
//! pointer, whatever its length; reads by anchor find the chunk by binary
//! search, then the id within it.
//!
//! Topics compare case-insensitively (as in Zulip), so the index key is the
//! lowercased topic; `TopicEntry::name` keeps the spelling of the newest
//! message for display.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use super::ids::{ChannelId, MessageId, RecipientId, UserId};
use super::{Destination, Flags, IdSet, Message, State};

/// One topic of a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicEntry {
    /// The topic as the newest message spells it.
    pub name: String,
    /// The newest message in the topic.
    pub max_id: MessageId,
}

/// Key of `State::by_topic`: the channel and the lowercased topic.
pub type TopicKey = (ChannelId, String);

/// Adds the ids of `more` to `mine`: `more` itself when `mine` is empty
/// (a restart's rebuild, built locally in ascending order), appended when
/// all above `mine`'s (a replayed run of sends).
fn merge(mine: &mut IdSet, more: IdSet) {
    if mine.is_empty() {
        *mine = more;
    } else if more.first().is_some_and(|first| mine.last().is_some_and(|last| first > last)) {
        mine.append(more.iter());
    } else {
        for id in more.iter() {
            mine.insert(id);
        }
    }
}

impl State {
    /// Sets `user`'s flags on `id` to `flags` if the user has a row for
    /// it (nothing otherwise). Kept from when unread and starred were
    /// separate indexes to keep in step; the row is now the only copy.
    pub fn note_flags(&self, user: UserId, id: MessageId, flags: Flags) {
        self.user_messages.update(&user, |m| m.update(id, |_| flags));
    }

    /// Changes `user`'s flags on `id` with `f`; the new flags, or `None`
    /// if the user has no row for it.
    pub fn update_flags(
        &self,
        user: UserId,
        id: MessageId,
        f: impl FnOnce(Flags) -> Flags,
    ) -> Option<Flags> {
        self.user_messages.update(&user, |m| m.update(id, f)).flatten()
    }

    /// Adds a row for `user` on `id` with `flags` unless there is one
    /// (a historical row, a message moved into the user's channel).
    pub fn add_row(&self, user: UserId, id: MessageId, flags: Flags) -> bool {
        self.holder_hints.row_added(id);
        self.user_messages.upsert(user, |m| m.insert_if_absent(id, flags))
    }

    /// Removes `user`'s row for `id`, returning its flags.
    pub fn remove_row(&self, user: UserId, id: MessageId) -> Option<Flags> {
        self.user_messages.update(&user, |m| m.remove(id)).flatten()
    }

    /// Up to `n` of `user`'s unread ids from `from` up, ascending.
    pub fn unread_ids_from(&self, user: UserId, from: MessageId, n: usize) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.unread().iter_from(from).take(n).collect())
            .unwrap_or_default()
    }

    /// Up to `n` of `user`'s unread ids below `before`, newest first.
    pub fn unread_ids_before(&self, user: UserId, before: MessageId, n: usize) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.unread().iter_before(before).take(n).collect())
            .unwrap_or_default()
    }

    /// Every unread id of `user`, ascending.
    pub fn unread_ids(&self, user: UserId) -> Vec<MessageId> {
        self.user_messages.read(&user, |m| m.unread().iter().collect()).unwrap_or_default()
    }

    /// Up to `n` of `user`'s starred ids from `from` up, ascending.
    pub fn starred_ids_from(&self, user: UserId, from: MessageId, n: usize) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.starred().iter_from(from).take(n).collect())
            .unwrap_or_default()
    }

    /// Up to `n` of `user`'s starred ids below `before`, newest first.
    pub fn starred_ids_before(&self, user: UserId, before: MessageId, n: usize) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.starred().iter_before(before).take(n).collect())
            .unwrap_or_default()
    }

    /// Every starred id of `user`, ascending.
    pub fn starred_ids(&self, user: UserId) -> Vec<MessageId> {
        self.user_messages.read(&user, |m| m.starred().iter().collect()).unwrap_or_default()
    }

    /// Every message id delivered to `user`, ascending.
    pub fn user_message_ids(&self, user: UserId) -> Vec<MessageId> {
        self.user_messages.read(&user, |m| m.ids().iter().collect()).unwrap_or_default()
    }

    /// The newest message delivered to `user`.
    pub fn max_user_message(&self, user: UserId) -> Option<MessageId> {
        self.user_messages.read(&user, |m| m.ids().last()).flatten()
    }

    /// Adds a channel message to the topic indexes.
    pub(crate) fn index_topic(&self, message: &Message) {
        let Destination::Channel { channel, topic } = &message.destination else { return };
        // One lowercased key, copied only for a topic's first message.
        let key = (*channel, topic.to_lowercase());
        if self.by_topic.update(&key, |ids| ids.insert(message.id)).is_none() {
            self.by_topic.upsert(key.clone(), |ids| ids.insert(message.id));
        }
        self.channel_topics.upsert(*channel, |topics| match topics.get_mut(key.1.as_str()) {
            Some(entry) => {
                if message.id >= entry.max_id {
                    entry.max_id = message.id;
                    if entry.name != **topic {
                        entry.name.replace_range(.., topic);
                    }
                }
            }
            None => {
                topics.insert(key.1, TopicEntry { name: topic.to_string(), max_id: message.id });
            }
        });
    }

    /// Inserts messages given in ascending id order (a snapshot's, or a
    /// replayed run of sends) with their recipient and topic index
    /// entries, as `index_message` would one by one, but in bulk: each id
    /// list is built locally and added once, each distinct spelling of a
    /// topic is lowercased once, and each channel's topic list is written
    /// once. Their names are shared beforehand (`Interner::share_all`).
    pub(crate) fn index_messages(&self, messages: impl IntoIterator<Item = Arc<Message>>) {
        /// One topic of the batch: its ids, and its newest message and
        /// that message's spelling.
        struct Topic {
            channel: ChannelId,
            key: String,
            ids: IdSet,
            max_id: MessageId,
            name: Arc<str>,
        }
        let mut by_recipient: FxHashMap<RecipientId, IdSet> = FxHashMap::default();
        let mut topics: Vec<Topic> = Vec::new();
        // Topic by spelling (names are shared, so a hit costs a hash of
        // the text and one comparison) and by lowercased key.
        let mut spelled: FxHashMap<(ChannelId, Arc<str>), usize> = FxHashMap::default();
        let mut keyed: FxHashMap<(ChannelId, String), usize> = FxHashMap::default();
        for message in messages {
            by_recipient.entry(message.recipient).or_default().insert(message.id);
            if let Destination::Channel { channel, topic } = &message.destination {
                let at = match spelled.get(&(*channel, Arc::clone(topic))) {
                    Some(at) => *at,
                    None => {
                        let key = (*channel, topic.to_lowercase());
                        let at = *keyed.entry(key).or_insert_with_key(|(channel, key)| {
                            topics.push(Topic {
                                channel: *channel,
                                key: key.clone(),
                                ids: IdSet::new(),
                                max_id: message.id,
                                name: Arc::clone(topic),
                            });
                            topics.len() - 1
                        });
                        spelled.insert((*channel, Arc::clone(topic)), at);
                        at
                    }
                };
                let entry = &mut topics[at];
                entry.ids.insert(message.id);
                if message.id >= entry.max_id {
                    entry.max_id = message.id;
                    if entry.name != *topic {
                        entry.name = Arc::clone(topic);
                    }
                }
            }
            self.messages.insert(message.id, message);
        }
        // Stored without their lookup entries: `build_lookup` adds them.
        self.lookup.mark_pending();
        for (recipient, ids) in by_recipient {
            self.by_recipient.upsert(recipient, |mine| merge(mine, ids));
        }
        // Each channel's topic list once (topics sorted by channel, the
        // batch's order within one).
        topics.sort_by_key(|t| t.channel);
        for group in topics.chunk_by_mut(|a, b| a.channel == b.channel) {
            for topic in group.iter_mut() {
                let ids = std::mem::take(&mut topic.ids);
                self.by_topic.upsert((topic.channel, topic.key.clone()), |mine| merge(mine, ids));
            }
            self.channel_topics.upsert(group[0].channel, |all| {
                for topic in group.iter_mut() {
                    let entry = TopicEntry { name: topic.name.to_string(), max_id: topic.max_id };
                    match all.get_mut(topic.key.as_str()) {
                        Some(slot) => {
                            if entry.max_id >= slot.max_id {
                                *slot = entry;
                            }
                        }
                        None => {
                            all.insert(std::mem::take(&mut topic.key), entry);
                        }
                    }
                }
            });
        }
    }

    /// Removes a channel message from the topic indexes (for a later edit,
    /// move or delete: call before changing the message's destination,
    /// then `index_topic` with the new one).
    pub fn unindex_topic(&self, message: &Message) {
        let Destination::Channel { channel, topic } = &message.destination else { return };
        let key = (*channel, topic.to_lowercase());
        let newest = self.by_topic.update(&key, |ids| {
            ids.remove(message.id);
            ids.last()
        });
        let newest = newest.flatten();
        self.channel_topics.update(channel, |topics| match newest {
            None => {
                topics.remove(&key.1);
            }
            Some(max_id) => {
                if let Some(entry) = topics.get_mut(&key.1) {
                    entry.max_id = max_id;
                }
            }
        });
    }

    /// Up to `n` ids of the topic below `before` (exclusive), newest first.
    pub fn topic_ids_before(&self, key: &TopicKey, before: MessageId, n: usize) -> Vec<MessageId> {
        self.by_topic.read(key, |ids| ids.iter_before(before).take(n).collect()).unwrap_or_default()
    }

    /// Up to `n` ids of the topic from `from` (inclusive) up, oldest first.
    pub fn topic_ids_from(&self, key: &TopicKey, from: MessageId, n: usize) -> Vec<MessageId> {
        self.by_topic.read(key, |ids| ids.iter_from(from).take(n).collect()).unwrap_or_default()
    }

    /// Up to `n` ids of a recipient (channel or conversation) below
    /// `before` (exclusive), newest first.
    pub fn recipient_ids_before(
        &self,
        recipient: super::RecipientId,
        before: MessageId,
        n: usize,
    ) -> Vec<MessageId> {
        self.by_recipient
            .read(&recipient, |ids| ids.iter_before(before).take(n).collect())
            .unwrap_or_default()
    }

    /// Up to `n` ids of a recipient from `from` (inclusive) up, oldest first.
    pub fn recipient_ids_from(
        &self,
        recipient: super::RecipientId,
        from: MessageId,
        n: usize,
    ) -> Vec<MessageId> {
        self.by_recipient
            .read(&recipient, |ids| ids.iter_from(from).take(n).collect())
            .unwrap_or_default()
    }

    /// The newest message id of a recipient (channel or conversation).
    pub fn recipient_last(&self, recipient: RecipientId) -> Option<MessageId> {
        self.by_recipient.read(&recipient, IdSet::last).flatten()
    }

    /// The oldest message id of a recipient (channel or conversation).
    pub fn recipient_first(&self, recipient: RecipientId) -> Option<MessageId> {
        self.by_recipient.read(&recipient, IdSet::first).flatten()
    }

    /// The ids of a topic (a copy of the chunk pointers, not of the ids:
    /// iterate it with `IdSet::iter`, `iter_from`, `iter_before`).
    pub fn topic_ids(&self, key: &TopicKey) -> IdSet {
        self.by_topic.get(key).unwrap_or_default()
    }

    /// Up to `n` messages delivered to `user` below `before` (exclusive),
    /// newest first, with the user's flags.
    pub fn user_entries_before(
        &self,
        user: super::UserId,
        before: MessageId,
        n: usize,
    ) -> Vec<(MessageId, Flags)> {
        self.user_messages.read(&user, |m| m.entries_before(before, n)).unwrap_or_default()
    }

    /// Up to `n` messages delivered to `user` from `from` (inclusive) up,
    /// oldest first, with the user's flags.
    pub fn user_entries_from(
        &self,
        user: super::UserId,
        from: MessageId,
        n: usize,
    ) -> Vec<(MessageId, Flags)> {
        self.user_messages.read(&user, |m| m.entries_from(from, n)).unwrap_or_default()
    }

    /// The topics of a channel, newest first. An entry whose newest
    /// message is gone (deleted by code that did not call
    /// `unindex_topic`) falls back to the newest message still present,
    /// or is left out.
    pub fn channel_topic_list(&self, channel: ChannelId) -> Vec<TopicEntry> {
        let entries: Vec<(String, TopicEntry)> = self
            .channel_topics
            .read(&channel, |t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let mut topics: Vec<TopicEntry> = entries
            .into_iter()
            .filter_map(|(key, mut entry)| {
                if !self.messages.contains(&entry.max_id) {
                    let ids = self.by_topic.get(&(channel, key)).unwrap_or_default();
                    entry.max_id = ids.iter().rev().find(|id| self.messages.contains(id))?;
                }
                Some(entry)
            })
            .collect();
        topics.sort_by_key(|t| std::cmp::Reverse(t.max_id));
        topics
    }

    /// Removes a deleted message from `messages` and from every index
    /// (recipient, topic, the holders' rows; call with the users who held
    /// it). Returns the recipient's oldest remaining message, if any.
    pub fn unindex_message(&self, message: &Message, holders: &[UserId]) -> Option<MessageId> {
        self.unindex_topic(message);
        for user in holders {
            self.remove_row(*user, message.id);
        }
        self.messages.remove(&message.id);
        self.lookup.remove(message);
        self.by_recipient
            .update(&message.recipient, |ids| {
                ids.remove(message.id);
                ids.first()
            })
            .flatten()
    }

    /// Sets `user`'s flags on `id`, adding the row if absent: the way for
    /// `apply` code to write `user_messages`.
    pub fn set_flags(&self, user: UserId, id: MessageId, flags: Flags) {
        // A send's own rows come before its hint; any later one drops it.
        self.holder_hints.row_added(id);
        self.user_messages.upsert(user, |m| m.set(id, flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_id_list_is_chunked_and_read_by_anchor_both_ways() {
        let state = State::new();
        let recipient = RecipientId(7);
        let key: TopicKey = (ChannelId(1), "t".into());
        let mut model: Vec<MessageId> = (1..=5_000).map(|i| MessageId(i * 3)).collect();
        for id in &model {
            state.by_recipient.upsert(recipient, |ids| ids.insert(*id));
            state.by_topic.upsert(key.clone(), |ids| ids.insert(*id));
        }
        // Appends fill chunks of about a thousand: no flat vector to regrow.
        let list = state.by_recipient.get(&recipient).unwrap();
        assert_eq!((list.len(), list.parts()), (5_000, 5));
        // A copy taken before more appends shares the chunks and keeps its ids.
        state.by_recipient.upsert(recipient, |ids| ids.insert(MessageId(20_000)));
        model.push(MessageId(20_000));
        assert_eq!(list.len(), 5_000);
        assert_eq!(state.recipient_last(recipient), Some(MessageId(20_000)));
        assert_eq!(state.recipient_first(recipient), Some(MessageId(3)));
        // A middle removal, then reads around anchors across chunk edges.
        state.by_recipient.update(&recipient, |ids| ids.remove(MessageId(3 * 1024)));
        model.retain(|id| *id != MessageId(3 * 1024));
        for anchor in
            [0, 1, 3, 4, 3 * 1023, 3 * 1024, 3 * 1025, 7_000, 15_000, 19_999, 20_000, 30_000]
        {
            let anchor = MessageId(anchor);
            for n in [0, 1, 2, 50, 2_000] {
                let before: Vec<MessageId> =
                    model.iter().rev().filter(|id| **id < anchor).take(n).copied().collect();
                let from: Vec<MessageId> =
                    model.iter().filter(|id| **id >= anchor).take(n).copied().collect();
                assert_eq!(state.recipient_ids_before(recipient, anchor, n), before, "{anchor:?}");
                assert_eq!(state.recipient_ids_from(recipient, anchor, n), from, "{anchor:?}");
            }
        }
        let topic = state.topic_ids(&key);
        assert_eq!(topic.iter().next_back(), Some(MessageId(15_000)));
        assert_eq!(
            state.topic_ids_before(&key, MessageId(10), 5),
            [MessageId(9), MessageId(6), MessageId(3)]
        );
        assert_eq!(state.topic_ids_from(&key, MessageId(14_998), 5), [MessageId(15_000)]);
        assert!(state.topic_ids(&(ChannelId(1), "other".into())).is_empty());
        assert_eq!(state.recipient_last(RecipientId(8)), None);
        assert!(state.recipient_ids_before(RecipientId(8), MessageId(10), 5).is_empty());
    }

    #[test]
    fn a_rebuild_merges_into_lists_that_already_hold_ids() {
        let mut mine: IdSet = [2, 9].map(MessageId).into_iter().collect();
        merge(&mut mine, [1, 5, 12].map(MessageId).into_iter().collect());
        assert_eq!(mine.iter().collect::<Vec<_>>(), [1, 2, 5, 9, 12].map(MessageId));
        let mut empty = IdSet::new();
        merge(&mut empty, (1..=3_000).map(MessageId).collect());
        assert_eq!((empty.len(), empty.parts()), (3_000, 3));
    }

    #[test]
    fn derived_indexes_are_rebuilt_from_a_snapshot() {
        use crate::mutation::{FlagsChange, Mutation};
        use crate::state::Role;
        use crate::testkit::World;
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        let a = w.post(&you, general, "Lunch", "1");
        w.post(&you, general, "dinner", "2");
        let c = w.post(&me, general, "lunch", "3");
        w.dm(&you, &[&me], "4");
        w.apply(Mutation::UpdateFlags(FlagsChange {
            user: me.id,
            add: true,
            flag: Flags::READ,
            messages: vec![a],
            historical: vec![],
        }));
        w.apply(Mutation::UpdateFlags(FlagsChange {
            user: you.id,
            add: true,
            flag: Flags::STARRED,
            messages: vec![a, c],
            historical: vec![],
        }));
        let rebuilt = State::from_image(w.state.image());
        let all = |s: &State| {
            (
                s.by_topic.collect_sorted(|_, _| true),
                s.channel_topics.collect_sorted(|_, _| true),
                s.user_messages.collect_sorted(|_, _| true),
                s.by_recipient.collect_sorted(|_, _| true),
            )
        };
        assert_eq!(all(&rebuilt), all(&w.state));
        assert_eq!(
            rebuilt.topic_ids(&(general, "lunch".into())).iter().collect::<Vec<_>>(),
            [a, c]
        );
        let topics = rebuilt.channel_topic_list(general);
        assert_eq!(topics[0], TopicEntry { name: "lunch".into(), max_id: c });
        assert_eq!(rebuilt.unread_ids(me.id).len(), 2, "dinner and the direct message");
        assert_eq!(rebuilt.unread_ids(you.id), vec![c]);
        assert_eq!(rebuilt.starred_ids(you.id), [a, c]);
    }

    #[test]
    fn topic_list_survives_stale_entries() {
        use crate::state::Role;
        use crate::testkit::World;
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me]).id;
        let a = w.post(&me, general, "t", "1");
        let b = w.post(&me, general, "u", "2");
        // A newest id that no longer exists: the newest present one is used.
        w.state.channel_topics.upsert(general, |t| t.get_mut("t").unwrap().max_id = MessageId(999));
        w.state.by_topic.upsert((general, "t".into()), |ids| ids.insert(MessageId(999)));
        let list = w.state.channel_topic_list(general);
        assert_eq!(
            list,
            [
                TopicEntry { name: "u".into(), max_id: b },
                TopicEntry { name: "t".into(), max_id: a }
            ]
        );
        // Unindexing removes the topic once it is empty.
        let message = w.state.messages.get(&b).unwrap();
        w.state.unindex_message(&message, &[me.id]);
        assert_eq!(
            w.state.channel_topic_list(general),
            [TopicEntry { name: "t".into(), max_id: a }]
        );
    }
}
