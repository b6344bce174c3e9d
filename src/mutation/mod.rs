//! `Mutation`: the complete list of durable changes.
//!
//! Each variant carries fully resolved inputs — new ids, timestamps, API
//! keys, rendered HTML — so that `apply` needs no clock, no randomness and
//! no I/O, and replaying the log rebuilds exactly the same state. These
//! types (with those in `state/`) are the on-disk format: changing them
//! means bumping `persist::FORMAT_VERSION`.

pub mod build;
pub mod rules;

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::state::features::FeatureChange;
use crate::state::messages::Reaction;
use crate::state::organization::OrgChange;
use crate::state::personal::PersonalChange;
use crate::state::scheduled::{ScheduledId, ScheduledMessage};
use crate::state::settings::{EmailChange, SettingsChange};
use crate::state::{
    Channel, ChannelId, Flags, Group, GroupId, GroupSetting, Message, MessageId, Realm, RealmId,
    RealmSettings, Role, Subscription, TopicsPolicy, User, UserId,
};

/// One durable change.
// The rare variants with large payloads (a realm, a channel, a personal
// change) are boxed, so that a `Mutation` is the size of a send's
// (≈ 200 bytes, not 760): replay decodes a million of them into batches
// and moves each several times. A `Box` is invisible to serde, so the
// bytes in the log and the snapshots are the same either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Mutation {
    /// A new organization with its system groups.
    CreateRealm {
        /// The realm; `system_groups` ids match `groups`.
        realm: Box<Realm>,
        /// Its role-based system groups.
        groups: Vec<Group>,
    },
    /// A new user or bot account.
    CreateUser(User),
    /// A new channel and its first subscribers.
    CreateChannel {
        /// The channel, with an empty `subscribers` set.
        channel: Box<Channel>,
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
    /// One user's personal flag changes on some messages
    /// (`POST /messages/flags`).
    UpdateFlags(FlagsChange),
    /// A user changes personal settings (`PATCH /settings`), all at once.
    UpdateSettings(SettingsChange),
    /// A user's password is set; `hash` is an argon2 PHC string computed
    /// before logging (the password itself is never logged).
    SetPassword {
        /// Whose password.
        user: UserId,
        /// Argon2id hash with its salt.
        hash: String,
    },
    /// An email change is requested; the link carries `key`.
    StartEmailChange(EmailChange),
    /// The link of a pending email change was followed.
    ConfirmEmailChange {
        /// The pending change's key.
        key: String,
    },
    /// A change to the settings area's small resources (alert words,
    /// drafts, status, mutes, topics, views, snippets, push tokens,
    /// playgrounds, invitations).
    Personal(Box<PersonalChange>),
    /// Users leave a channel.
    Unsubscribe {
        /// The channel.
        channel: ChannelId,
        /// Users subscribed now who leave.
        users: Vec<UserId>,
    },
    /// Channel properties change (one `stream` update event each).
    UpdateChannel {
        /// The channel.
        channel: ChannelId,
        /// The changes, applied in order.
        changes: Vec<ChannelChange>,
    },
    /// One user's subscription settings change.
    UpdateSubscriptions {
        /// Whose subscriptions.
        user: UserId,
        /// (channel, change) pairs, applied in order.
        changes: Vec<(ChannelId, SubscriptionChange)>,
    },
    /// Account properties change.
    UpdateUsers {
        /// (user, change) pairs, applied in order.
        changes: Vec<(UserId, UserChange)>,
    },
    /// A new user group.
    CreateGroup(Group),
    /// A user group changes.
    UpdateGroup {
        /// The group (never a system group).
        group: GroupId,
        /// The change.
        change: GroupChange,
    },
    /// A custom profile field is created or replaced.
    PutProfileField(crate::state::profile::ProfileField),
    /// A custom profile field is deleted, with every user's value for it.
    DeleteProfileField {
        /// The realm.
        realm: crate::state::RealmId,
        /// The field.
        field: u64,
    },
    /// The order of a realm's custom profile fields.
    ReorderProfileFields {
        /// The realm.
        realm: crate::state::RealmId,
        /// Every field id, in the new order.
        order: Vec<u64>,
    },
    /// Several changes logged and applied as one: all or nothing (e.g.
    /// creating channels, subscribing users and announcing them).
    Batch(Vec<Mutation>),
    /// A user schedules a message (`POST /scheduled_messages`).
    ScheduleMessage(ScheduledMessage),
    /// The owner edits a pending or failed scheduled message (`PATCH
    /// /scheduled_messages/{id}`): the whole new record, failure cleared.
    EditScheduled(ScheduledMessage),
    /// The owner deletes a scheduled message.
    DeleteScheduled {
        /// The scheduled message (existing).
        id: ScheduledId,
    },
    /// The scheduler delivers a due scheduled message: it leaves the
    /// scheduled list and `message` (with a new message id) is sent, in one
    /// record, so a crash can neither lose nor double the delivery.
    DeliverScheduled {
        /// The scheduled message (pending).
        id: ScheduledId,
        /// The message, built by the ordinary send path at delivery time.
        message: NewMessage,
    },
    /// The send rules refused a due scheduled message at delivery: it is
    /// marked failed with the reason.
    FailScheduled {
        /// The scheduled message (pending).
        id: ScheduledId,
        /// Why, as the send path's error said.
        reason: String,
    },
    /// A message's content is edited and/or messages are moved to another
    /// topic or channel.
    EditMessage(MessageEdit),
    /// A realm's system bots are created (`state::system_bots`): generic
    /// bots with no owner and no API key. No event: clients know them only
    /// from register's `cross_realm_bots`.
    CreateSystemBots(Vec<User>),
    /// A message the server posts as a system bot because of a user's
    /// action (topic-move and resolved-topic notices): delivered like any
    /// message, and already read for the recipients in `read_by`.
    SendNotice {
        /// The message (its sender is a system bot).
        message: NewMessage,
        /// Recipients whose copy starts read.
        read_by: Vec<UserId>,
    },
    /// A file was uploaded: its record. Its bytes are already stored
    /// (synced) when this is logged.
    CreateAttachment(Box<crate::state::files::Attachment>),
    /// A message references attachments its sender may claim (logged in
    /// the send's batch).
    LinkAttachments {
        /// The message.
        message: MessageId,
        /// The attachments' ids.
        attachments: Vec<u64>,
    },
    /// An attachment's owner deletes it; its bytes are removed after.
    DeleteAttachment {
        /// The attachment.
        id: u64,
    },
    /// A realm gets a custom emoji (its image already stored).
    CreateRealmEmoji(Box<crate::state::files::RealmEmoji>),
    /// A custom emoji is deactivated (kept for what already shows it).
    DeactivateRealmEmoji {
        /// The emoji.
        id: u64,
    },
    /// A realm's linkifiers or default channel groups change.
    Organization(Box<OrgChange>),
    /// A realm's name, description and settings become these
    /// (`PATCH /realm`); `apply` tells clients what changed.
    UpdateRealm(Box<RealmUpdate>),
    /// A realm's read receipts or moderation channel, or a reminder
    /// (`state::features`).
    Features(Box<FeatureChange>),
    /// A user's avatar becomes an uploaded image (already stored) or, with
    /// `None`, their gravatar; their `avatar_version` goes up by one.
    SetAvatar {
        /// Whose.
        user: UserId,
        /// The uploaded image, if any.
        avatar: Option<Box<crate::state::files::Avatar>>,
    },
    /// A realm's file settings become these (`PATCH /realm`).
    SetRealmFileSettings {
        /// Whose.
        realm: RealmId,
        /// The new settings.
        settings: Box<crate::state::files::RealmFileSettings>,
    },
    /// An image attachment gets its thumbnail (already stored; logged in
    /// the upload's batch).
    SetThumbnail {
        /// The attachment.
        attachment: u64,
        /// The thumbnail.
        thumbnail: Box<crate::state::files::Thumbnail>,
    },
    /// A bot's service or storage changes, or deliveries to
    /// outgoing-webhook bots are queued (in the record of the message that
    /// triggers them) or finished (`state::bots`).
    Bot(Box<crate::state::bots::BotChange>),
    /// A web client signs in or out (`state::web_sessions`).
    WebSession(Box<crate::state::web_sessions::SessionChange>),
    /// A submessage is added to a message (`state::widgets`): a widget's
    /// first one, logged with its message's send (no event: the message
    /// event carries it), or one a reader posts (a `submessage` event).
    AddSubmessage {
        /// The submessage (id decided by the handler).
        submessage: Box<crate::state::widgets::Submessage>,
        /// Whether its readers get a `submessage` event.
        announce: bool,
    },
    /// A channel folder is created, changed or the realm's folders are
    /// reordered (`state::folders`).
    ChannelFolder(Box<crate::state::folders::FolderChange>),
}

/// The whole new name, description and settings of a realm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealmUpdate {
    /// Which realm.
    pub realm: RealmId,
    /// Its name.
    pub name: String,
    /// Its description (Markdown).
    pub description: String,
    /// Its settings.
    pub settings: RealmSettings,
}

impl Mutation {
    /// A personal change, boxed (`Mutation::Personal`).
    pub fn personal(change: PersonalChange) -> Mutation {
        Mutation::Personal(Box::new(change))
    }

    /// An organization change, boxed (`Mutation::Organization`).
    pub fn organization(change: OrgChange) -> Mutation {
        Mutation::Organization(Box::new(change))
    }

    /// A change of the features area, boxed (`Mutation::Features`).
    pub fn features(change: FeatureChange) -> Mutation {
        Mutation::Features(Box::new(change))
    }
}

/// One change to a channel's properties.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ChannelChange {
    /// A new name.
    Name(String),
    /// A new description with its rendering.
    Description {
        /// Markdown.
        source: String,
        /// HTML.
        rendered: String,
    },
    /// Privacy settings, changed together (Zulip sends them in one event).
    Access {
        /// Private channel.
        invite_only: bool,
        /// New subscribers see earlier messages.
        history_public_to_subscribers: bool,
        /// Readable by spectators.
        is_web_public: bool,
    },
    /// Default channel for new users.
    Default(bool),
    /// `None` inherits the realm setting; `Some(-1)` keeps forever.
    Retention(Option<i32>),
    /// Archived or unarchived.
    Archived(bool),
    /// Channel folder.
    Folder(Option<u64>),
    /// Empty-topic policy.
    TopicsPolicy(TopicsPolicy),
    /// A group-setting permission.
    Permission(ChannelPermission, GroupSetting),
}

/// The group-setting permissions of a channel, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChannelPermission {
    /// `can_send_message_group`.
    SendMessage,
    /// `can_add_subscribers_group`.
    AddSubscribers,
    /// `can_remove_subscribers_group`.
    RemoveSubscribers,
    /// `can_administer_channel_group`.
    AdministerChannel,
    /// `can_delete_any_message_group`.
    DeleteAnyMessage,
    /// `can_delete_own_message_group`.
    DeleteOwnMessage,
    /// `can_move_messages_out_of_channel_group`.
    MoveMessagesOutOfChannel,
}

impl ChannelPermission {
    /// Every permission, in Zulip's parameter order.
    pub const ALL: [ChannelPermission; 7] = [
        ChannelPermission::AddSubscribers,
        ChannelPermission::RemoveSubscribers,
        ChannelPermission::AdministerChannel,
        ChannelPermission::DeleteAnyMessage,
        ChannelPermission::DeleteOwnMessage,
        ChannelPermission::MoveMessagesOutOfChannel,
        ChannelPermission::SendMessage,
    ];

    /// Zulip's parameter and property name.
    pub fn name(self) -> &'static str {
        match self {
            ChannelPermission::SendMessage => "can_send_message_group",
            ChannelPermission::AddSubscribers => "can_add_subscribers_group",
            ChannelPermission::RemoveSubscribers => "can_remove_subscribers_group",
            ChannelPermission::AdministerChannel => "can_administer_channel_group",
            ChannelPermission::DeleteAnyMessage => "can_delete_any_message_group",
            ChannelPermission::DeleteOwnMessage => "can_delete_own_message_group",
            ChannelPermission::MoveMessagesOutOfChannel => "can_move_messages_out_of_channel_group",
        }
    }

    /// The setting's slot in a channel's permissions.
    pub fn slot(self, p: &mut crate::state::ChannelPermissions) -> &mut GroupSetting {
        match self {
            ChannelPermission::SendMessage => &mut p.can_send_message,
            ChannelPermission::AddSubscribers => &mut p.can_add_subscribers,
            ChannelPermission::RemoveSubscribers => &mut p.can_remove_subscribers,
            ChannelPermission::AdministerChannel => &mut p.can_administer_channel,
            ChannelPermission::DeleteAnyMessage => &mut p.can_delete_any_message,
            ChannelPermission::DeleteOwnMessage => &mut p.can_delete_own_message,
            ChannelPermission::MoveMessagesOutOfChannel => &mut p.can_move_messages_out_of_channel,
        }
    }
}

/// One change to one subscription's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SubscriptionChange {
    /// `#rrggbb`.
    Color(String),
    /// Muted (also reported as the inverse `in_home_view`).
    Muted(bool),
    /// Pinned.
    PinToTop(bool),
    /// A notification setting; `None` inherits.
    Notification(NotificationSetting, Option<bool>),
}

/// The per-subscription notification settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NotificationSetting {
    /// `desktop_notifications`.
    Desktop,
    /// `email_notifications`.
    Email,
    /// `push_notifications`.
    Push,
    /// `audible_notifications`.
    Audible,
    /// `wildcard_mentions_notify`.
    WildcardMentions,
}

impl NotificationSetting {
    /// Every setting with its Zulip property name.
    pub const ALL: [(NotificationSetting, &'static str); 5] = [
        (NotificationSetting::Desktop, "desktop_notifications"),
        (NotificationSetting::Email, "email_notifications"),
        (NotificationSetting::Push, "push_notifications"),
        (NotificationSetting::Audible, "audible_notifications"),
        (NotificationSetting::WildcardMentions, "wildcard_mentions_notify"),
    ];

    /// The setting's slot in a subscription.
    pub fn slot(self, s: &mut Subscription) -> &mut Option<bool> {
        match self {
            NotificationSetting::Desktop => &mut s.desktop_notifications,
            NotificationSetting::Email => &mut s.email_notifications,
            NotificationSetting::Push => &mut s.push_notifications,
            NotificationSetting::Audible => &mut s.audible_notifications,
            NotificationSetting::WildcardMentions => &mut s.wildcard_mentions_notify,
        }
    }
}

/// One change to an account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UserChange {
    /// Display name.
    FullName(String),
    /// Organization role.
    Role(Role),
    /// A new address (API and real email).
    Email(String),
    /// Deactivated (`false`) or reactivated (`true`).
    Active(bool),
    /// A new API key (the old one stops working).
    ApiKey(String),
    /// A bot's new owner.
    BotOwner(UserId),
    /// A custom profile field's value; `None` clears it.
    ProfileValue {
        /// Field id.
        field: u64,
        /// New value (the field's JSON-ish text form) and its rendering.
        value: Option<(String, Option<String>)>,
    },
}

/// One change to a user group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum GroupChange {
    /// New name and/or description.
    Info {
        /// New name.
        name: Option<String>,
        /// New description.
        description: Option<String>,
    },
    /// Direct members added and removed.
    Members {
        /// Added.
        add: Vec<UserId>,
        /// Removed.
        remove: Vec<UserId>,
    },
    /// Direct subgroups added and removed.
    Subgroups {
        /// Added.
        add: Vec<GroupId>,
        /// Removed.
        remove: Vec<GroupId>,
    },
    /// Deactivated.
    Deactivate,
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
    /// The message, id and rendering included, with no reactions or edits;
    /// shared with the state once applied (not copied there). Encoded as
    /// the message itself (serde's `rc`): the log's bytes are those of a
    /// plain `Message`.
    pub message: Arc<Message>,
    /// Whether the sender's copy starts as read.
    pub read_by_sender: bool,
    /// Users mentioned personally (or through a group) in the content.
    pub mentioned: Vec<UserId>,
    /// A channel wildcard (`@**all**`…) mentions every recipient.
    pub channel_wildcard: bool,
    /// Recipients a topic wildcard (`@**topic**`) mentions.
    pub topic_wildcard: Vec<UserId>,
}
