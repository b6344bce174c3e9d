//! Messages, per-user message flags, reactions and edit history.
//!
//! A `Message` is kept compact (#7): what most messages never have
//! (reactions, edit history) is a `Rare` list, one pointer when empty,
//! and the client name is shared (`State::intern`) by every message sent
//! through the same client. Neither changes the encoding.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::{ChannelId, MessageId, RealmId, RecipientId, UserId};

/// Where a message was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Destination {
    /// A channel message with its topic (`""` is the empty topic).
    Channel {
        /// The channel.
        channel: ChannelId,
        /// The topic.
        topic: String,
    },
    /// A direct message; `participants` is sorted and includes the sender.
    Direct {
        /// Everyone in the conversation, sender included, ascending.
        participants: Vec<UserId>,
    },
}

/// The namespace of an emoji reaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReactionType {
    /// `unicode_emoji`: code is dash-separated hex codepoints.
    Unicode,
    /// `realm_emoji`: code is the custom emoji id.
    Realm,
    /// `zulip_extra_emoji`: code is the name.
    ZulipExtra,
}

impl ReactionType {
    /// Zulip's name for the namespace.
    pub fn as_str(self) -> &'static str {
        match self {
            ReactionType::Unicode => "unicode_emoji",
            ReactionType::Realm => "realm_emoji",
            ReactionType::ZulipExtra => "zulip_extra_emoji",
        }
    }

    /// The namespace Zulip calls `name`.
    pub fn parse(name: &str) -> Option<ReactionType> {
        match name {
            "unicode_emoji" => Some(ReactionType::Unicode),
            "realm_emoji" => Some(ReactionType::Realm),
            "zulip_extra_emoji" => Some(ReactionType::ZulipExtra),
            _ => None,
        }
    }
}

/// One user's emoji reaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reaction {
    /// Human-readable name.
    pub emoji_name: String,
    /// Code within the namespace.
    pub emoji_code: String,
    /// Namespace.
    pub reaction_type: ReactionType,
    /// Who reacted.
    pub user: UserId,
}

/// One edit or move, stored newest last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditRecord {
    /// Editor.
    pub user: UserId,
    /// UNIX seconds.
    pub timestamp: i64,
    /// Content before the edit (markdown, HTML), if content changed.
    pub prev_content: Option<(String, String)>,
    /// Topic before the edit, if the topic changed.
    pub prev_topic: Option<String>,
    /// Channel before the edit, if the channel changed.
    pub prev_channel: Option<ChannelId>,
}

/// One message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Server-wide id; display order.
    pub id: MessageId,
    /// The sender's realm.
    pub realm: RealmId,
    /// Author.
    pub sender: UserId,
    /// Channel's or conversation's recipient id.
    pub recipient: RecipientId,
    /// Channel + topic, or the direct participants.
    pub destination: Destination,
    /// Markdown source.
    pub content: String,
    /// HTML, rendered before logging.
    pub rendered_content: String,
    /// UNIX seconds.
    pub timestamp: i64,
    /// Name of the sending client (from the User-Agent); shared between
    /// messages once stored.
    pub client: Arc<str>,
    /// A `/me` message.
    pub is_me_message: bool,
    /// Reactions in the order they were added.
    pub reactions: Rare<Reaction>,
    /// Edits, oldest first.
    pub edit_history: Rare<EditRecord>,
    /// Last content edit, UNIX seconds.
    pub last_edit_timestamp: Option<i64>,
    /// Last move to another channel or topic, UNIX seconds.
    pub last_moved_timestamp: Option<i64>,
}

/// A list that most messages leave empty: one pointer (null when empty)
/// instead of a `Vec`'s three words. Reads go through `Deref` to a slice;
/// encodes exactly as a `Vec<T>`.
#[derive(Clone, PartialEq, Eq)]
// A boxed `Vec` on purpose: a thin pointer, and pushes stay amortized.
#[allow(clippy::box_collection)]
pub struct Rare<T>(Option<Box<Vec<T>>>);

impl<T> Rare<T> {
    /// An empty list.
    pub fn new() -> Self {
        Rare(None)
    }

    /// Appends `value`.
    pub fn push(&mut self, value: T) {
        self.0.get_or_insert_with(Box::default).push(value);
    }

    /// Removes and returns the element at `index` (panics if out of range).
    pub fn remove(&mut self, index: usize) -> T {
        let list = self.0.as_mut().expect("remove from an empty list");
        let value = list.remove(index);
        if list.is_empty() {
            self.0 = None;
        }
        value
    }
}

impl<T> Default for Rare<T> {
    fn default() -> Self {
        Rare(None)
    }
}

impl<T> std::ops::Deref for Rare<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl<T> From<Vec<T>> for Rare<T> {
    fn from(list: Vec<T>) -> Self {
        Rare((!list.is_empty()).then(|| Box::new(list)))
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Rare<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Rare<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Serialize> Serialize for Rare<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Rare<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Rare::from)
    }
}

/// A user's flags on one message, as a bit set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags(pub u32);

impl Flags {
    /// The user has read it.
    pub const READ: Flags = Flags(1);
    /// Starred.
    pub const STARRED: Flags = Flags(1 << 1);
    /// Collapsed in the UI.
    pub const COLLAPSED: Flags = Flags(1 << 2);
    /// The user was @-mentioned personally or via a group.
    pub const MENTIONED: Flags = Flags(1 << 3);
    /// `@**all**`-style channel wildcard.
    pub const STREAM_WILDCARD_MENTIONED: Flags = Flags(1 << 4);
    /// `@**topic**` wildcard.
    pub const TOPIC_WILDCARD_MENTIONED: Flags = Flags(1 << 5);
    /// Contains one of the user's alert words.
    pub const HAS_ALERT_WORD: Flags = Flags(1 << 6);
    /// Not delivered when sent: the user's entry was created later, when
    /// they flagged a message they could read through channel history.
    /// Not in `names` (`MessageView` reports it as `historical`).
    pub const HISTORICAL: Flags = Flags(1 << 7);

    const NAMES: [(Flags, &'static str); 7] = [
        (Flags::READ, "read"),
        (Flags::STARRED, "starred"),
        (Flags::COLLAPSED, "collapsed"),
        (Flags::MENTIONED, "mentioned"),
        (Flags::STREAM_WILDCARD_MENTIONED, "stream_wildcard_mentioned"),
        (Flags::TOPIC_WILDCARD_MENTIONED, "topic_wildcard_mentioned"),
        (Flags::HAS_ALERT_WORD, "has_alert_word"),
    ];

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union.
    pub fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// These flags minus those of `other`.
    pub fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }

    /// `other` set or cleared.
    pub fn set(self, other: Flags, on: bool) -> Flags {
        if on {
            self.with(other)
        } else {
            self.without(other)
        }
    }

    /// Zulip's flag names, including the deprecated `wildcard_mentioned`.
    pub fn names(self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> =
            Flags::NAMES.iter().filter(|(f, _)| self.contains(*f)).map(|(_, n)| *n).collect();
        if self.contains(Flags::STREAM_WILDCARD_MENTIONED)
            || self.contains(Flags::TOPIC_WILDCARD_MENTIONED)
        {
            names.push("wildcard_mentioned");
        }
        names
    }
}
