//! `Mutation`: the complete list of durable changes.
//!
//! Each variant carries fully resolved inputs — new ids, timestamps, API
//! keys, rendered HTML — so that `apply` needs no clock, no randomness and
//! no I/O, and replaying the log rebuilds exactly the same state. These
//! types (with those in `state/`) are the on-disk format: changing them
//! means bumping `persist::FORMAT_VERSION`.

use serde::{Deserialize, Serialize};

use crate::state::messages::Reaction;
use crate::state::{
    Channel, ChannelId, Group, Message, MessageId, Realm, Subscription, User, UserId,
};

/// One durable change.
// Mutations are built one at a time and moved once into the log and
// `apply`; boxing the larger variants would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Mutation {
    /// A new organization with its system groups.
    CreateRealm {
        /// The realm; `system_groups` ids match `groups`.
        realm: Realm,
        /// Its role-based system groups.
        groups: Vec<Group>,
    },
    /// A new user or bot account.
    CreateUser(User),
    /// A new channel and its first subscribers.
    CreateChannel {
        /// The channel, with an empty `subscribers` set.
        channel: Channel,
        /// Initial subscriptions.
        subscribers: Vec<(UserId, Subscription)>,
    },
    /// Users subscribe to an existing channel.
    Subscribe {
        /// The channel.
        channel: ChannelId,
        /// New subscriptions (users not yet subscribed).
        subscribers: Vec<(UserId, Subscription)>,
    },
    /// A message is sent.
    SendMessage(NewMessage),
    /// A user reacts to a message (not already reacted with that emoji).
    AddReaction {
        /// The message.
        message: MessageId,
        /// The reaction, with its user.
        reaction: Reaction,
    },
    /// A user takes back a reaction (matched by user, type and code).
    RemoveReaction {
        /// The message.
        message: MessageId,
        /// The reaction, with its user.
        reaction: Reaction,
    },
    /// Messages are deleted, with their flags and reactions.
    DeleteMessages {
        /// The messages (existing, one realm).
        messages: Vec<MessageId>,
        /// Who deletes them (told even without a row for them).
        by: UserId,
    },
    /// A message's content is edited and/or messages are moved to another
    /// topic or channel.
    EditMessage(MessageEdit),
}

/// One `PATCH /messages/{id}`, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageEdit {
    /// The message the request names.
    pub message: MessageId,
    /// Who edits.
    pub editor: UserId,
    /// UNIX seconds.
    pub timestamp: i64,
    /// New content of `message`, if it changes.
    pub content: Option<NewContent>,
    /// New topic of every message in `moved`, if it changes.
    pub topic: Option<String>,
    /// New channel of every message in `moved`, if it changes.
    pub channel: Option<ChannelId>,
    /// Messages whose topic or channel changes (`message` among them when
    /// anything moves), ascending.
    pub moved: Vec<MessageId>,
    /// False when the only change is resolving or unresolving the topic
    /// (then `last_moved_timestamp` stays).
    pub counts_as_move: bool,
    /// The request's `propagate_mode`, echoed in the event.
    pub propagate_mode: PropagateMode,
}

/// New content for an edited message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewContent {
    /// Markdown.
    pub content: String,
    /// Its HTML.
    pub rendered: String,
    /// A `/me` message.
    pub is_me_message: bool,
    /// Users now mentioned personally or through a group.
    pub mentioned: Vec<UserId>,
    /// Whether a channel wildcard now mentions every recipient.
    pub channel_wildcard: bool,
    /// Recipients a topic wildcard now mentions.
    pub topic_wildcard: Vec<UserId>,
}

/// Which messages of a topic a move takes along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropagateMode {
    /// Only the named message.
    ChangeOne,
    /// It and every later message of the topic.
    ChangeLater,
    /// Every message of the topic.
    ChangeAll,
}

impl PropagateMode {
    /// Zulip's name.
    pub fn as_str(self) -> &'static str {
        match self {
            PropagateMode::ChangeOne => "change_one",
            PropagateMode::ChangeLater => "change_later",
            PropagateMode::ChangeAll => "change_all",
        }
    }

    /// The mode Zulip calls `name`.
    pub fn parse(name: &str) -> Option<PropagateMode> {
        match name {
            "change_one" => Some(PropagateMode::ChangeOne),
            "change_later" => Some(PropagateMode::ChangeLater),
            "change_all" => Some(PropagateMode::ChangeAll),
            _ => None,
        }
    }
}

/// A message being sent, with everything `apply` needs to deliver it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// The message, id and rendering included, with no reactions or edits.
    pub message: Message,
    /// Whether the sender's copy starts as read.
    pub read_by_sender: bool,
    /// Users mentioned personally (or through a group) in the content.
    pub mentioned: Vec<UserId>,
    /// A channel wildcard (`@**all**`…) mentions every recipient.
    pub channel_wildcard: bool,
    /// Recipients a topic wildcard (`@**topic**`) mentions.
    pub topic_wildcard: Vec<UserId>,
}
