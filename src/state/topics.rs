//! Derived read indexes: message ids per (channel, topic) and each
//! channel's topic list. They are maintained by `State::index_message`
//! (so by `apply` and by `State::from_image`) and never snapshotted: a
//! restart rebuilds them from the messages.
//!
//! Topics compare case-insensitively (as in Zulip), so the index key is the
//! lowercased topic; `TopicEntry::name` keeps the spelling of the newest
//! message for display.

use serde::{Deserialize, Serialize};

use super::ids::{ChannelId, MessageId};
use super::{Destination, Message, State};

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
    /// Adds a channel message to the topic indexes.
    pub(crate) fn index_topic(&self, message: &Message) {
        let Destination::Channel { channel, topic } = &message.destination else { return };
        let key = topic.to_lowercase();
        self.by_topic.upsert((*channel, key.clone()), |ids| insert_sorted(ids, message.id));
        self.channel_topics.upsert(*channel, |topics| {
            let entry = topics
                .entry(key)
                .or_insert_with(|| TopicEntry { name: topic.clone(), max_id: message.id });
            if message.id >= entry.max_id {
                entry.max_id = message.id;
                entry.name.clone_from(topic);
            }
        });
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

    /// Up to `n` ids of messages delivered to `user` below `before`
    /// (exclusive), newest first.
    pub fn user_ids_before(
        &self,
        user: super::UserId,
        before: MessageId,
        n: usize,
    ) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.range(..before).rev().take(n).map(|(id, _)| *id).collect())
            .unwrap_or_default()
    }

    /// Up to `n` ids of messages delivered to `user` from `from`
    /// (inclusive) up, oldest first.
    pub fn user_ids_from(&self, user: super::UserId, from: MessageId, n: usize) -> Vec<MessageId> {
        self.user_messages
            .read(&user, |m| m.range(from..).take(n).map(|(id, _)| *id).collect())
            .unwrap_or_default()
    }

    /// The topics of a channel, newest first.
    pub fn channel_topic_list(&self, channel: ChannelId) -> Vec<TopicEntry> {
        let mut topics: Vec<TopicEntry> = self
            .channel_topics
            .read(&channel, |t| t.values().cloned().collect())
            .unwrap_or_default();
        topics.sort_by_key(|t| std::cmp::Reverse(t.max_id));
        topics
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
}
