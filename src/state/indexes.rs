//! Derived read indexes — message ids per (channel, topic) and each
//! channel's topic list — maintained by `State::index_message` (so by
//! `apply` and by `State::from_image`) and never snapshotted: a restart
//! rebuilds them from the messages. Also the accessors of each user's
//! rows (`user_messages`), whose unread and starred sets are part of the
//! rows themselves.
//!
//! Topics compare case-insensitively (as in Zulip), so the index key is the
//! lowercased topic; `TopicEntry::name` keeps the spelling of the newest
//! message for display.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ids::{ChannelId, MessageId, RecipientId, UserId};
use super::{Destination, Flags, Message, State};

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

/// Inserts `id` into an ascending id vector (appending in the usual case).
pub(crate) fn insert_sorted(ids: &mut Vec<MessageId>, id: MessageId) {
    match ids.last() {
        None => ids.push(id),
        Some(last) if *last < id => ids.push(id),
        Some(_) => {
            if let Err(pos) = ids.binary_search(&id) {
                ids.insert(pos, id);
            }
        }
    }
}

/// Removes `id` from an ascending id vector, if present.
pub(crate) fn remove_sorted(ids: &mut Vec<MessageId>, id: MessageId) {
    if let Ok(pos) = ids.binary_search(&id) {
        ids.remove(pos);
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
        let key = topic.to_lowercase();
        self.by_topic.upsert((*channel, key.clone()), |ids| insert_sorted(ids, message.id));
        self.channel_topics.upsert(*channel, |topics| {
            let entry = topics
                .entry(key)
                .or_insert_with(|| TopicEntry { name: topic.to_string(), max_id: message.id });
            if message.id >= entry.max_id {
                entry.max_id = message.id;
                entry.name.replace_range(.., topic);
            }
        });
    }

    /// Inserts messages given in ascending id order (a snapshot's) with
    /// their recipient and topic index entries, as `index_message` would
    /// one by one, but in bulk: each id list is built locally and stored
    /// once, and each distinct topic is lowercased once (restart speed).
    /// Their names are shared beforehand (`Interner::share_all`).
    pub(crate) fn index_messages(&self, messages: impl IntoIterator<Item = Arc<Message>>) {
        let mut by_recipient: HashMap<RecipientId, Vec<MessageId>> = HashMap::new();
        let mut by_channel: HashMap<ChannelId, HashMap<String, (Vec<MessageId>, TopicEntry)>> =
            HashMap::new();
        let mut lowered: HashMap<String, String> = HashMap::new();
        for message in messages {
            insert_sorted(by_recipient.entry(message.recipient).or_default(), message.id);
            if let Destination::Channel { channel, topic } = &message.destination {
                let lower = match lowered.get(&**topic) {
                    Some(lower) => lower,
                    None => {
                        lowered.entry(topic.to_string()).or_insert_with(|| topic.to_lowercase())
                    }
                };
                let topics = by_channel.entry(*channel).or_default();
                let entry = match topics.get_mut(lower.as_str()) {
                    Some(entry) => entry,
                    None => topics.entry(lower.clone()).or_insert_with(|| {
                        (Vec::new(), TopicEntry { name: topic.to_string(), max_id: message.id })
                    }),
                };
                insert_sorted(&mut entry.0, message.id);
                if message.id >= entry.1.max_id {
                    entry.1.max_id = message.id;
                    entry.1.name.replace_range(.., topic);
                }
            }
            self.messages.insert(message.id, message);
        }
        for (recipient, ids) in by_recipient {
            self.by_recipient.upsert(recipient, |mine| {
                for id in ids {
                    insert_sorted(mine, id);
                }
            });
        }
        for (channel, topics) in by_channel {
            for (lower, (ids, entry)) in topics {
                self.by_topic.upsert((channel, lower.clone()), |mine| {
                    for id in ids {
                        insert_sorted(mine, id);
                    }
                });
                self.channel_topics.upsert(channel, |all| {
                    let slot = all.entry(lower).or_insert_with(|| entry.clone());
                    if entry.max_id >= slot.max_id {
                        *slot = entry;
                    }
                });
            }
        }
    }

    /// Removes a channel message from the topic indexes (for a later edit,
    /// move or delete: call before changing the message's destination,
    /// then `index_topic` with the new one).
    pub fn unindex_topic(&self, message: &Message) {
        let Destination::Channel { channel, topic } = &message.destination else { return };
        let key = (*channel, topic.to_lowercase());
        let newest = self.by_topic.update(&key, |ids| {
            remove_sorted(ids, message.id);
            ids.last().copied()
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
        self.by_topic
            .read(key, |ids| {
                let end = ids.partition_point(|id| *id < before);
                ids[end.saturating_sub(n)..end].iter().rev().copied().collect()
            })
            .unwrap_or_default()
    }

    /// Up to `n` ids of the topic from `from` (inclusive) up, oldest first.
    pub fn topic_ids_from(&self, key: &TopicKey, from: MessageId, n: usize) -> Vec<MessageId> {
        self.by_topic
            .read(key, |ids| {
                let start = ids.partition_point(|id| *id < from);
                ids[start..(start + n).min(ids.len())].to_vec()
            })
            .unwrap_or_default()
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
            .read(&recipient, |ids| {
                let end = ids.partition_point(|id| *id < before);
                ids[end.saturating_sub(n)..end].iter().rev().copied().collect()
            })
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
            .read(&recipient, |ids| {
                let start = ids.partition_point(|id| *id < from);
                ids[start..(start + n).min(ids.len())].to_vec()
            })
            .unwrap_or_default()
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
                    entry.max_id = ids.into_iter().rev().find(|id| self.messages.contains(id))?;
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
        self.by_recipient
            .update(&message.recipient, |ids| {
                remove_sorted(ids, message.id);
                ids.first().copied()
            })
            .flatten()
    }

    /// Sets `user`'s flags on `id`, adding the row if absent: the way for
    /// `apply` code to write `user_messages`.
    pub fn set_flags(&self, user: UserId, id: MessageId, flags: Flags) {
        self.user_messages.upsert(user, |m| m.set(id, flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_vectors_stay_sorted() {
        let mut ids = Vec::new();
        for i in [1, 2, 5, 3, 9, 4, 5] {
            insert_sorted(&mut ids, MessageId(i));
        }
        assert_eq!(ids, [1, 2, 3, 4, 5, 9].map(MessageId));
        remove_sorted(&mut ids, MessageId(4));
        remove_sorted(&mut ids, MessageId(7));
        assert_eq!(ids, [1, 2, 3, 5, 9].map(MessageId));
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
        assert_eq!(rebuilt.by_topic.get(&(general, "lunch".into())), Some(vec![a, c]));
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
        w.state.by_topic.upsert((general, "t".into()), |ids| ids.push(MessageId(999)));
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
