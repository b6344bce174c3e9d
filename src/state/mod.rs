//! In-memory domain data and read accessors; no I/O, no HTTP, no clock, no
//! randomness.
//!
//! `State` owns every map plus `applied_seq`. Only `apply` writes to it;
//! everyone else reads through the accessors here and in `access`. The
//! snapshot form is `StateImage`: the same data as sorted vectors, so that
//! replaying the same log always yields a byte-identical snapshot.

pub mod access;
pub mod audience;
pub mod channels;
pub mod emails;
pub mod groups;
pub mod ids;
pub mod indexes;
pub mod messages;
pub mod personal;
pub mod profile;
pub mod realm;
pub mod scheduled;
pub mod settings;
pub mod shard;
pub mod users;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use channels::{Channel, ChannelPermissions, Subscription, TopicsPolicy};
pub use groups::{Group, GroupSetting};
pub use ids::{ChannelId, Counters, GroupId, IdKind, MessageId, RealmId, RecipientId, UserId};
pub use messages::{Destination, Flags, Message};
pub use realm::{EmailVisibility, Realm, RealmSettings, SystemGroup, SystemGroups};
pub use shard::Sharded;
pub use users::{BotType, Role, User};

/// All realm data of the server.
#[derive(Default)]
pub struct State {
    /// Seq of the last mutation applied; `apply` asserts continuity.
    pub(crate) applied_seq: AtomicU64,
    /// Next free ids.
    pub ids: Counters,
    /// Realms by id.
    pub realms: Sharded<RealmId, Realm>,
    /// Realm id by subdomain (`string_id`).
    pub realm_by_subdomain: Sharded<String, RealmId>,
    /// Accounts by id.
    pub users: Sharded<UserId, User>,
    /// User id by (realm, lowercased API email).
    pub user_by_email: Sharded<(RealmId, String), UserId>,
    /// User id by (realm, lowercased delivery email).
    pub user_by_delivery_email: Sharded<(RealmId, String), UserId>,
    /// Channels by id.
    pub channels: Sharded<ChannelId, Channel>,
    /// Channel id by (realm, lowercased name).
    pub channel_by_name: Sharded<(RealmId, String), ChannelId>,
    /// Each user's subscriptions.
    pub subscriptions: Sharded<UserId, BTreeMap<ChannelId, Subscription>>,
    /// Messages by id, each behind an `Arc`: the snapshot cut and readers
    /// copy a pointer, not the message; `apply` changes one through
    /// `Arc::make_mut` (copying it only while a snapshot still holds it).
    pub messages: Sharded<MessageId, Arc<Message>>,
    /// Each user's messages (those delivered to them) with their flags.
    /// `apply` writes it through `State::set_flags` / `note_flags`, which
    /// keep the derived `unread` and `starred` sets in step.
    pub user_messages: Sharded<UserId, BTreeMap<MessageId, Flags>>,
    /// Message ids per recipient (channel or conversation), ascending.
    pub by_recipient: Sharded<RecipientId, Vec<MessageId>>,
    /// Recipient id of each direct conversation, keyed by sorted participants.
    pub direct_recipients: Sharded<Vec<UserId>, RecipientId>,
    /// User groups, system groups included.
    pub groups: Sharded<GroupId, Group>,
    /// Derived (not snapshotted): message ids per (channel, lowercased
    /// topic), ascending.
    pub by_topic: Sharded<indexes::TopicKey, Vec<MessageId>>,
    /// Derived (not snapshotted): each channel's topics by lowercased name.
    pub channel_topics: Sharded<ChannelId, BTreeMap<String, indexes::TopicEntry>>,
    /// Derived (not snapshotted): each user's unread message ids (entries
    /// of `user_messages` without `READ`); `apply` keeps it in step through
    /// `State::note_flags`.
    pub unread: Sharded<UserId, std::collections::BTreeSet<MessageId>>,
    /// Derived (not snapshotted): each user's starred message ids, kept
    /// like `unread`.
    pub starred: Sharded<UserId, std::collections::BTreeSet<MessageId>>,
    /// Personal settings and the other per-user resources of that area.
    pub settings: settings::SettingsState,
    /// Custom profile fields by id.
    pub profile_fields: Sharded<u64, profile::ProfileField>,
    /// Each user's custom profile field values: field id → (value,
    /// rendered value for Markdown fields).
    pub profile_values: Sharded<UserId, profile::Values>,
    /// Configuration (not snapshotted): the email domain of placeholder
    /// addresses (`emails`), set once at start-up from the server's host.
    pub email_domain: std::sync::OnceLock<String>,
    /// Scheduled messages not yet delivered.
    pub scheduled: scheduled::Scheduled,
    /// Each user's past subscriptions (channels they left), with the
    /// settings they had: register's `unsubscribed`.
    pub former_subscriptions: Sharded<UserId, BTreeMap<ChannelId, Subscription>>,
    /// Not snapshotted: bumped by `apply` for every mutation that may
    /// change an account, profile data or a realm (everything but the
    /// message, channel and group changes `apply::keeps_users`
    /// lists), so register's per-realm user lists, cached by generation,
    /// are rebuilt exactly when they may have changed.
    pub users_generation: AtomicU64,
}

/// `State` as plain sorted data: the snapshot format.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StateImage {
    /// Seq of the last mutation included.
    pub applied_seq: u64,
    /// Next free ids.
    pub ids: ids::CountersImage,
    /// Every realm.
    pub realms: Vec<Realm>,
    /// Every account.
    pub users: Vec<User>,
    /// Every channel.
    pub channels: Vec<Channel>,
    /// Subscriptions per user.
    pub subscriptions: Vec<(UserId, BTreeMap<ChannelId, Subscription>)>,
    /// Every message (an `Arc` encodes as the message itself).
    pub messages: Vec<Arc<Message>>,
    /// Flags per user and message.
    pub user_messages: Vec<(UserId, BTreeMap<MessageId, Flags>)>,
    /// Direct conversation recipients.
    pub direct_recipients: Vec<(Vec<UserId>, RecipientId)>,
    /// Every group.
    pub groups: Vec<Group>,
    /// Personal settings and the other per-user resources of that area.
    pub settings: settings::SettingsImage,
    /// Every custom profile field.
    pub profile_fields: Vec<profile::ProfileField>,
    /// Custom profile field values per user.
    pub profile_values: Vec<(UserId, profile::Values)>,
    /// Scheduled messages not yet delivered.
    pub scheduled: scheduled::ScheduledImage,
    /// Past subscriptions per user.
    pub former_subscriptions: Vec<(UserId, BTreeMap<ChannelId, Subscription>)>,
}

fn values<K: std::hash::Hash + Eq + Ord + Clone, V: Clone>(map: &Sharded<K, V>) -> Vec<V> {
    map.collect_sorted(|_, _| true).into_iter().map(|(_, v)| v).collect()
}

impl State {
    /// An empty state (nothing applied).
    pub fn new() -> Self {
        Self::default()
    }

    /// Seq of the last applied mutation (0 = none).
    pub fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    /// A plain copy. Only a consistent cut while no mutation is applied, so
    /// callers hold the commit writer lock.
    pub fn image(&self) -> StateImage {
        StateImage {
            applied_seq: self.applied_seq(),
            ids: self.ids.image(),
            realms: values(&self.realms),
            users: values(&self.users),
            channels: values(&self.channels),
            subscriptions: self.subscriptions.collect_sorted(|_, _| true),
            messages: values(&self.messages),
            user_messages: self.user_messages.collect_sorted(|_, _| true),
            direct_recipients: self.direct_recipients.collect_sorted(|_, _| true),
            groups: values(&self.groups),
            settings: self.settings.image(),
            profile_fields: values(&self.profile_fields),
            profile_values: self.profile_values.collect_sorted(|_, _| true),
            scheduled: self.scheduled.image(),
            former_subscriptions: self.former_subscriptions.collect_sorted(|_, _| true),
        }
    }

    /// Rebuilds the maps and every derived index from a snapshot.
    pub fn from_image(image: StateImage) -> Self {
        let state = State {
            applied_seq: AtomicU64::new(image.applied_seq),
            ids: Counters::from_image(&image.ids),
            subscriptions: image.subscriptions.into_iter().collect(),
            unread: image
                .user_messages
                .iter()
                .map(|(user, mine)| (*user, indexes::unread_of(mine)))
                .filter(|(_, unread)| !unread.is_empty())
                .collect(),
            starred: image
                .user_messages
                .iter()
                .map(|(user, mine)| (*user, indexes::starred_of(mine)))
                .filter(|(_, starred)| !starred.is_empty())
                .collect(),
            user_messages: image.user_messages.into_iter().collect(),
            direct_recipients: image.direct_recipients.into_iter().collect(),
            settings: settings::SettingsState::from_image(image.settings),
            profile_fields: image.profile_fields.into_iter().map(|f| (f.id, f)).collect(),
            profile_values: image.profile_values.into_iter().collect(),
            scheduled: scheduled::Scheduled::from_image(image.scheduled),
            former_subscriptions: image.former_subscriptions.into_iter().collect(),
            ..State::default()
        };
        for realm in image.realms {
            state.index_realm(realm);
        }
        for user in image.users {
            state.index_user(user);
        }
        for channel in image.channels {
            state.index_channel(channel);
        }
        for message in image.messages {
            state.index_message(message);
        }
        for group in image.groups {
            state.groups.insert(group.id, group);
        }
        state
    }

    /// Inserts a realm and its subdomain index entry.
    pub(crate) fn index_realm(&self, realm: Realm) {
        self.realm_by_subdomain.insert(realm.string_id.to_lowercase(), realm.id);
        self.realms.insert(realm.id, realm);
    }

    /// Inserts a user and its email index entries.
    pub(crate) fn index_user(&self, user: User) {
        self.user_by_email.insert((user.realm, user.email.to_lowercase()), user.id);
        self.user_by_delivery_email
            .insert((user.realm, user.delivery_email.to_lowercase()), user.id);
        self.users.insert(user.id, user);
    }

    /// Inserts a channel and its name index entry.
    pub(crate) fn index_channel(&self, channel: Channel) {
        self.channel_by_name.insert((channel.realm, channel.name.to_lowercase()), channel.id);
        self.channels.insert(channel.id, channel);
    }

    /// Inserts a message and adds it to the recipient and topic indexes.
    pub(crate) fn index_message(&self, message: Arc<Message>) {
        self.by_recipient.upsert(message.recipient, |ids| indexes::insert_sorted(ids, message.id));
        self.index_topic(&message);
        self.messages.insert(message.id, message);
    }

    /// The realm served at `subdomain`, if any.
    pub fn realm_by_subdomain(&self, subdomain: &str) -> Option<Realm> {
        let id = self.realm_by_subdomain.get(&subdomain.to_lowercase())?;
        self.realms.get(&id)
    }

    /// A user of `realm` by API email (case-insensitive), also by placeholder.
    pub fn user_by_email(&self, realm: RealmId, email: &str) -> Option<User> {
        match self.user_by_email.get(&(realm, email.to_lowercase())) {
            Some(id) => self.users.get(&id),
            // Where real addresses are hidden, the placeholder names the user.
            None => self.user_by_placeholder(realm, email),
        }
    }

    /// A user of `realm` by real email (case-insensitive).
    pub fn user_by_delivery_email(&self, realm: RealmId, email: &str) -> Option<User> {
        let id = self.user_by_delivery_email.get(&(realm, email.to_lowercase()))?;
        self.users.get(&id)
    }

    /// A user of `realm` by id; `None` for other realms' users.
    pub fn user_in_realm(&self, realm: RealmId, id: UserId) -> Option<User> {
        self.users.get(&id).filter(|u| u.realm == realm)
    }

    /// Every account of `realm`, by id.
    pub fn realm_users(&self, realm: RealmId) -> Vec<User> {
        self.users.collect_sorted(|_, u| u.realm == realm).into_iter().map(|(_, u)| u).collect()
    }

    /// A channel of `realm` by id; `None` for other realms' channels.
    pub fn channel_in_realm(&self, realm: RealmId, id: ChannelId) -> Option<Channel> {
        self.channels.get(&id).filter(|c| c.realm == realm)
    }

    /// A channel of `realm` by name (case-insensitive).
    pub fn channel_by_name(&self, realm: RealmId, name: &str) -> Option<Channel> {
        let id = self.channel_by_name.get(&(realm, name.to_lowercase()))?;
        self.channels.get(&id)
    }

    /// The caller's flags on a message, if it was delivered to them.
    pub fn flags(&self, user: UserId, message: MessageId) -> Option<Flags> {
        self.user_messages.read(&user, |m| m.get(&message).copied()).flatten()
    }
}
