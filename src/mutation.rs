//! `Mutation`: the complete list of durable changes.
//!
//! Each variant carries fully resolved inputs — new ids, timestamps, API
//! keys, rendered HTML — so that `apply` needs no clock, no randomness and
//! no I/O, and replaying the log rebuilds exactly the same state. These
//! types (with those in `state/`) are the on-disk format: changing them
//! means bumping `persist::FORMAT_VERSION`.

use serde::{Deserialize, Serialize};

use crate::state::settings::SettingsChange;
use crate::state::{
    Channel, ChannelId, Flags, Group, Message, MessageId, Realm, Subscription, User, UserId,
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
    /// One user's personal flag changes on some messages
    /// (`POST /messages/flags`).
    UpdateFlags(FlagsChange),
    /// A user changes personal settings (`PATCH /settings`), all at once.
    UpdateSettings(SettingsChange),
}

/// A change of one personal flag (read, starred, collapsed) for one user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlagsChange {
    /// Whose flags.
    pub user: UserId,
    /// Set (`true`) or clear the flag.
    pub add: bool,
    /// Exactly one editable flag.
    pub flag: Flags,
    /// Every message the request names (checked readable), in request
    /// order: the event lists these.
    pub messages: Vec<MessageId>,
    /// Those of `messages` not delivered to the user (readable through
    /// channel history): `apply` gives them a historical, read entry first,
    /// as Zulip creates historical UserMessage rows.
    pub historical: Vec<MessageId>,
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
}
