//! Messages, per-user message flags, reactions and edit history.
//!
//! A `Message` is kept compact, because there are millions of them:
//! - the Markdown source and its HTML are one allocation (`content()`,
//!   `rendered()`), split at a stored offset;
//! - the topic and the client name are shared `Arc<str>`s: one copy per
//!   distinct name (`State::names` interns them when a message is stored;
//!   decoding already shares repeated names through a small per-thread
//!   cache, so a snapshot being loaded does not hold a copy per message);
//! - what most messages never have (reactions, edit history, the last
//!   edit and move times) is one `Rare` box, a null pointer until used.
//!
//! None of it changes the encoding: a `Message` is written and read as the
//! plain struct it was (`Serialize`/`Deserialize` below), so snapshots and
//! logs are unchanged. The size is pinned by a test.

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashSet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::{ChannelId, MessageId, RealmId, RecipientId, UserId};

/// Where a message was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Destination {
    /// A channel message with its topic (`""` is the empty topic).
    Channel {
        /// The channel.
        channel: ChannelId,
        /// The topic: shared by the messages of a topic once stored.
        #[serde(deserialize_with = "shared_name")]
        topic: Arc<str>,
    },
    /// A direct message; `participants` is sorted and includes the sender.
    Direct {
        /// Everyone in the conversation, sender included, ascending (a
        /// boxed slice: two words, where a `Vec` would make every
        /// `Destination` a word longer).
        participants: Box<[UserId]>,
    },
}

impl Destination {
    /// The channel and topic of a channel message.
    pub fn channel_topic(&self) -> Option<(ChannelId, &str)> {
        match self {
            Destination::Channel { channel, topic } => Some((*channel, topic)),
            Destination::Direct { .. } => None,
        }
    }
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

/// One message. The text, the rare parts and their encoding are behind
/// accessors (see the module comment); build one from `MessageParts`.
#[derive(Clone, PartialEq)]
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
    /// UNIX seconds.
    pub timestamp: i64,
    /// Name of the sending client (from the User-Agent); shared between
    /// messages once stored.
    pub client: Arc<str>,
    /// The Markdown source followed by its HTML, rendered before logging:
    /// one allocation instead of two `String`s.
    text: Box<str>,
    /// Reactions, edit history and the last edit and move times: `None`
    /// while the message has none of them (most never do).
    rare: Option<Box<Rare>>,
    /// How many bytes of `text` are the Markdown source.
    content_len: u32,
    /// A `/me` message.
    pub is_me_message: bool,
}

/// What most messages never have, out of line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Rare {
    /// Reactions in the order they were added.
    reactions: Vec<Reaction>,
    /// Edits, oldest first.
    edit_history: Vec<EditRecord>,
    /// Last content edit, UNIX seconds.
    last_edit_timestamp: Option<i64>,
    /// Last move to another channel or topic, UNIX seconds.
    last_moved_timestamp: Option<i64>,
}

/// A message as first sent, field by field (no reactions, no edits):
/// `Message::from(parts)` stores it compactly.
#[derive(Clone, Debug)]
pub struct MessageParts {
    /// Server-wide id.
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
    /// HTML.
    pub rendered_content: String,
    /// UNIX seconds.
    pub timestamp: i64,
    /// Name of the sending client.
    pub client: Arc<str>,
    /// A `/me` message.
    pub is_me_message: bool,
}

impl From<MessageParts> for Message {
    fn from(parts: MessageParts) -> Self {
        let MessageParts {
            id,
            realm,
            sender,
            recipient,
            destination,
            content,
            rendered_content,
            timestamp,
            client,
            is_me_message,
        } = parts;
        let (text, content_len) = join(content, &rendered_content);
        Message {
            id,
            realm,
            sender,
            recipient,
            destination,
            timestamp,
            client,
            text,
            rare: None,
            content_len: content_len.expect("message content is far below 4 GiB"),
            is_me_message,
        }
    }
}

/// `content` followed by `rendered` in one exactly sized allocation, and
/// the length of `content` (`None` past `u32::MAX`).
fn join(mut content: String, rendered: &str) -> (Box<str>, Option<u32>) {
    let content_len = u32::try_from(content.len()).ok();
    content.reserve_exact(rendered.len());
    content.push_str(rendered);
    (content.into_boxed_str(), content_len)
}

impl Message {
    /// The Markdown source.
    pub fn content(&self) -> &str {
        &self.text[..self.content_len as usize]
    }

    /// The HTML.
    pub fn rendered(&self) -> &str {
        &self.text[self.content_len as usize..]
    }

    /// Replaces the source and its HTML.
    pub fn set_text(&mut self, content: &str, rendered: &str) {
        let (text, content_len) = join(content.to_owned(), rendered);
        self.text = text;
        self.content_len = content_len.expect("message content is far below 4 GiB");
    }

    /// The topic of a channel message.
    pub fn topic(&self) -> Option<&str> {
        self.destination.channel_topic().map(|(_, topic)| topic)
    }

    /// Reactions in the order they were added.
    pub fn reactions(&self) -> &[Reaction] {
        self.rare.as_deref().map_or(&[], |rare| &rare.reactions)
    }

    /// Adds a reaction after the others.
    pub fn add_reaction(&mut self, reaction: Reaction) {
        self.rare_mut().reactions.push(reaction);
    }

    /// Removes and returns the reaction at `index` (panics if out of range).
    pub fn remove_reaction(&mut self, index: usize) -> Reaction {
        let removed = self.rare_mut().reactions.remove(index);
        self.tidy();
        removed
    }

    /// Edits and moves, oldest first.
    pub fn edit_history(&self) -> &[EditRecord] {
        self.rare.as_deref().map_or(&[], |rare| &rare.edit_history)
    }

    /// Records an edit or move after the others.
    pub fn push_edit(&mut self, record: EditRecord) {
        self.rare_mut().edit_history.push(record);
    }

    /// Last content edit, UNIX seconds.
    pub fn last_edit_timestamp(&self) -> Option<i64> {
        self.rare.as_deref().and_then(|rare| rare.last_edit_timestamp)
    }

    /// Sets the time of the last content edit.
    pub fn set_last_edit_timestamp(&mut self, timestamp: i64) {
        self.rare_mut().last_edit_timestamp = Some(timestamp);
    }

    /// Last move to another channel or topic, UNIX seconds.
    pub fn last_moved_timestamp(&self) -> Option<i64> {
        self.rare.as_deref().and_then(|rare| rare.last_moved_timestamp)
    }

    /// Sets the time of the last move.
    pub fn set_last_moved_timestamp(&mut self, timestamp: i64) {
        self.rare_mut().last_moved_timestamp = Some(timestamp);
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Drops the rare box once it holds nothing again.
    fn tidy(&mut self) {
        if self.rare.as_deref().is_some_and(|rare| *rare == Rare::default()) {
            self.rare = None;
        }
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id)
            .field("realm", &self.realm)
            .field("sender", &self.sender)
            .field("recipient", &self.recipient)
            .field("destination", &self.destination)
            .field("content", &self.content())
            .field("rendered_content", &self.rendered())
            .field("timestamp", &self.timestamp)
            .field("client", &self.client)
            .field("is_me_message", &self.is_me_message)
            .field("reactions", &self.reactions())
            .field("edit_history", &self.edit_history())
            .field("last_edit_timestamp", &self.last_edit_timestamp())
            .field("last_moved_timestamp", &self.last_moved_timestamp())
            .finish()
    }
}

/// The encoding of a `Message`, field by field as the plain struct it
/// once was: snapshots and log records written before the compact layout
/// read the same, and new ones are byte-identical.
#[derive(Serialize)]
#[serde(rename = "Message")]
struct Encoded<'a> {
    id: MessageId,
    realm: RealmId,
    sender: UserId,
    recipient: RecipientId,
    destination: &'a Destination,
    content: &'a str,
    rendered_content: &'a str,
    timestamp: i64,
    client: &'a str,
    is_me_message: bool,
    reactions: &'a [Reaction],
    edit_history: &'a [EditRecord],
    last_edit_timestamp: Option<i64>,
    last_moved_timestamp: Option<i64>,
}

/// `Encoded`, decoded.
#[derive(Deserialize)]
#[serde(rename = "Message")]
struct Decoded {
    id: MessageId,
    realm: RealmId,
    sender: UserId,
    recipient: RecipientId,
    destination: Destination,
    content: String,
    rendered_content: String,
    timestamp: i64,
    #[serde(deserialize_with = "shared_name")]
    client: Arc<str>,
    is_me_message: bool,
    reactions: Vec<Reaction>,
    edit_history: Vec<EditRecord>,
    last_edit_timestamp: Option<i64>,
    last_moved_timestamp: Option<i64>,
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Encoded {
            id: self.id,
            realm: self.realm,
            sender: self.sender,
            recipient: self.recipient,
            destination: &self.destination,
            content: self.content(),
            rendered_content: self.rendered(),
            timestamp: self.timestamp,
            client: &self.client,
            is_me_message: self.is_me_message,
            reactions: self.reactions(),
            edit_history: self.edit_history(),
            last_edit_timestamp: self.last_edit_timestamp(),
            last_moved_timestamp: self.last_moved_timestamp(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let d = Decoded::deserialize(deserializer)?;
        let (text, content_len) = join(d.content, &d.rendered_content);
        let content_len = content_len
            .ok_or_else(|| serde::de::Error::custom("message content longer than 4 GiB"))?;
        let rare = Rare {
            reactions: d.reactions,
            edit_history: d.edit_history,
            last_edit_timestamp: d.last_edit_timestamp,
            last_moved_timestamp: d.last_moved_timestamp,
        };
        Ok(Message {
            id: d.id,
            realm: d.realm,
            sender: d.sender,
            recipient: d.recipient,
            destination: d.destination,
            timestamp: d.timestamp,
            client: d.client,
            text,
            rare: (rare != Rare::default()).then(|| Box::new(rare)),
            content_len,
            is_me_message: d.is_me_message,
        })
    }
}

/// How many names one thread's decode cache holds before it starts over.
const DECODED_NAMES: usize = 16_384;

thread_local! {
    /// Topics and client names decoded recently on this thread, so that
    /// decoding a snapshot's million messages makes one `Arc<str>` per
    /// distinct name rather than one per message, without a lock.
    /// `State::names` then adopts these copies as the shared ones. A
    /// lookup never yields, so a may coroutine cannot move threads in the
    /// middle of one; and any copy of a name is as good as another.
    static DECODED: RefCell<FxHashSet<Arc<str>>> = RefCell::new(FxHashSet::default());
}

/// The copy of `name` this thread decoded last, or a new one.
fn decoded_name(name: &str) -> Arc<str> {
    DECODED.with(|cell| {
        let mut names = cell.borrow_mut();
        if let Some(shared) = names.get(name) {
            return Arc::clone(shared);
        }
        if names.len() >= DECODED_NAMES {
            names.clear();
        }
        let shared: Arc<str> = Arc::from(name);
        names.insert(Arc::clone(&shared));
        shared
    })
}

/// Decodes a string as a shared name (`decoded_name`).
fn shared_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Arc<str>, D::Error> {
    struct Name;
    impl serde::de::Visitor<'_> for Name {
        type Value = Arc<str>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Arc<str>, E> {
            Ok(decoded_name(name))
        }
    }
    deserializer.deserialize_str(Name)
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
        self.name_iter().collect()
    }

    /// `names` without collecting them.
    pub fn name_iter(self) -> impl Iterator<Item = &'static str> {
        let wildcard = self.contains(Flags::STREAM_WILDCARD_MENTIONED)
            || self.contains(Flags::TOPIC_WILDCARD_MENTIONED);
        Flags::NAMES
            .iter()
            .filter(move |(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .chain(wildcard.then_some("wildcard_mentioned"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Message` as it was before the compact layout: the shape
    /// every snapshot and log record holds.
    #[derive(Serialize, Deserialize)]
    #[serde(rename = "Message")]
    struct Plain {
        id: MessageId,
        realm: RealmId,
        sender: UserId,
        recipient: RecipientId,
        destination: PlainDestination,
        content: String,
        rendered_content: String,
        timestamp: i64,
        client: String,
        is_me_message: bool,
        reactions: Vec<Reaction>,
        edit_history: Vec<EditRecord>,
        last_edit_timestamp: Option<i64>,
        last_moved_timestamp: Option<i64>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename = "Destination")]
    enum PlainDestination {
        Channel { channel: ChannelId, topic: String },
        Direct { participants: Vec<UserId> },
    }

    fn parts(destination: Destination) -> MessageParts {
        MessageParts {
            id: MessageId(7),
            realm: RealmId(1),
            sender: UserId(2),
            recipient: RecipientId(3),
            destination,
            content: "hello **there**".into(),
            rendered_content: "<p>hello <strong>there</strong></p>".into(),
            timestamp: 1_700_000_000,
            client: "website".into(),
            is_me_message: false,
        }
    }

    fn plain(m: &Message) -> Plain {
        Plain {
            id: m.id,
            realm: m.realm,
            sender: m.sender,
            recipient: m.recipient,
            destination: match &m.destination {
                Destination::Channel { channel, topic } => {
                    PlainDestination::Channel { channel: *channel, topic: topic.to_string() }
                }
                Destination::Direct { participants } => {
                    PlainDestination::Direct { participants: participants.to_vec() }
                }
            },
            content: m.content().into(),
            rendered_content: m.rendered().into(),
            timestamp: m.timestamp,
            client: m.client.to_string(),
            is_me_message: m.is_me_message,
            reactions: m.reactions().to_vec(),
            edit_history: m.edit_history().to_vec(),
            last_edit_timestamp: m.last_edit_timestamp(),
            last_moved_timestamp: m.last_moved_timestamp(),
        }
    }

    /// A fresh message, and one with every rare part set.
    fn samples() -> Vec<Message> {
        let fresh = Message::from(parts(Destination::Channel {
            channel: ChannelId(4),
            topic: "lunch".into(),
        }));
        let mut busy = Message::from(parts(Destination::Direct {
            participants: vec![UserId(2), UserId(5)].into(),
        }));
        busy.add_reaction(Reaction {
            emoji_name: "smile".into(),
            emoji_code: "1f642".into(),
            reaction_type: ReactionType::Unicode,
            user: UserId(5),
        });
        busy.push_edit(EditRecord {
            user: UserId(2),
            timestamp: 1_700_000_100,
            prev_content: Some((busy.content().into(), busy.rendered().into())),
            prev_topic: None,
            prev_channel: None,
        });
        busy.set_text("héllo", "<p>héllo</p>");
        busy.set_last_edit_timestamp(1_700_000_100);
        busy.set_last_moved_timestamp(1_700_000_200);
        busy.is_me_message = true;
        vec![fresh, busy]
    }

    #[test]
    fn text_and_rare_parts_read_back_as_written() {
        let [fresh, busy] = <[Message; 2]>::try_from(samples()).unwrap();
        assert_eq!(fresh.content(), "hello **there**");
        assert_eq!(fresh.rendered(), "<p>hello <strong>there</strong></p>");
        assert_eq!(fresh.topic(), Some("lunch"));
        assert!(fresh.rare.is_none(), "no box until something rare happens");
        assert_eq!((busy.content(), busy.rendered()), ("héllo", "<p>héllo</p>"));
        assert_eq!(busy.topic(), None);
        assert_eq!(busy.edit_history()[0].prev_content.as_ref().unwrap().0, "hello **there**");
        assert_eq!(
            (busy.last_edit_timestamp(), busy.last_moved_timestamp()),
            (Some(1_700_000_100), Some(1_700_000_200))
        );
        // Removing the only reaction of a message with nothing else rare
        // drops the box again.
        let mut reacted = fresh.clone();
        reacted.add_reaction(busy.reactions()[0].clone());
        assert!(reacted.rare.is_some() && reacted != fresh);
        assert_eq!(reacted.remove_reaction(0).emoji_name, "smile");
        assert!(reacted.rare.is_none());
        assert_eq!(reacted, fresh);
    }

    /// The compact layout writes exactly the bytes the plain struct wrote,
    /// and reads them back: snapshots and logs are unchanged.
    #[test]
    fn encodes_as_the_plain_struct_did() {
        let config = bincode::config::standard();
        for message in samples() {
            let bytes = bincode::serde::encode_to_vec(&message, config).unwrap();
            assert_eq!(bytes, bincode::serde::encode_to_vec(plain(&message), config).unwrap());
            let (back, _): (Message, usize) =
                bincode::serde::decode_from_slice(&bytes, config).unwrap();
            assert_eq!(back, message);
            assert_eq!(back.rare.is_some(), message.rare.is_some());
            // And through a self-describing format (field names, not order).
            let json = serde_json::to_string(&message).unwrap();
            assert_eq!(json, serde_json::to_string(&plain(&message)).unwrap());
            assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
        }
    }

    /// Decoding many messages of a few topics makes one copy per topic
    /// and client name, not one per message.
    #[test]
    fn decoding_shares_repeated_names() {
        let config = bincode::config::standard();
        let message = &samples()[0];
        let bytes = bincode::serde::encode_to_vec(vec![message; 3], config).unwrap();
        let (back, _): (Vec<Message>, usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        let topic = |m: &Message| match &m.destination {
            Destination::Channel { topic, .. } => Arc::clone(topic),
            Destination::Direct { .. } => unreachable!(),
        };
        assert!(Arc::ptr_eq(&topic(&back[0]), &topic(&back[2])));
        assert!(Arc::ptr_eq(&back[0].client, &back[1].client));
    }

    /// Millions of messages are stored: a field added carelessly costs a
    /// size class of the allocator per message. `Arc<Message>` adds two
    /// counters (16 B), so 112 B here is 128 B allocated (mimalloc's size
    /// class), where the layout before the compaction took 208 → 224 B.
    #[test]
    fn a_message_stays_small() {
        assert_eq!(std::mem::size_of::<Destination>(), 24);
        assert_eq!(std::mem::size_of::<Message>(), 112);
    }
}
