//! In-memory domain data and read accessors; no I/O, no HTTP, no clock, no
//! randomness.
//!
//! `State` owns every map plus `applied_seq`. Only `apply` writes to it;
//! everyone else reads through the accessors here and in `access`. The
//! snapshot form is `StateImage`: the same data, encoded as key-sorted
//! vectors so that replaying the same log always yields a byte-identical
//! snapshot. `State::image` takes it without copying the data: it freezes
//! the copy-on-write shards and message chunks (`shard`, `message_store`,
//! `user_messages`), a few thousand pointer copies whatever the size.

pub mod access;
pub mod audience;
pub mod bots;
pub mod channels;
pub mod emails;
pub mod features;
pub mod files;
pub mod folders;
pub mod groups;
pub mod holders;
pub mod id_set;
pub mod ids;
pub mod indexes;
pub mod interner;
pub mod lookup;
pub mod members;
pub mod message_store;
pub mod messages;
pub mod organization;
pub mod personal;
pub mod profile;
pub mod realm;
pub mod rebuild;
pub mod scheduled;
pub mod settings;
pub mod shard;
pub mod system_bots;
pub mod user_messages;
pub mod users;
pub mod web_sessions;
pub mod widgets;
pub mod words;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use channels::{Channel, ChannelPermissions, Subscription, TopicsPolicy};
pub use groups::{Group, GroupSetting, SystemGroup, SystemGroups};
pub use id_set::IdSet;
pub use ids::{ChannelId, Counters, GroupId, IdKind, MessageId, RealmId, RecipientId, UserId};
pub use members::Members;
pub use message_store::{MessageStore, MessagesImage};
pub use messages::{Destination, Flags, Message, MessageParts};
pub use realm::{EmailVisibility, Realm, RealmSettings};
pub use shard::{Entries, Sharded, Shared, Values};
pub use user_messages::UserMessages;
pub use users::{BotType, Role, User};

/// All realm data of the server.
#[derive(Default)]
pub struct State {
    /// Seq of the last mutation applied; `apply` asserts continuity.
    pub(crate) applied_seq: AtomicU64,
    /// Next free ids.
    pub ids: Counters,
    /// Realms by id, each shared (`Arc`): a request holds its realm
    /// without copying it.
    pub realms: Shared<RealmId, Realm>,
    /// Realm id by subdomain (`string_id`).
    pub realm_by_subdomain: Sharded<String, RealmId>,
    /// Accounts by id, each shared (`Arc`): a request holds its caller
    /// without copying the account.
    pub users: Shared<UserId, User>,
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
    /// Messages by id, in `Arc`-shared chunks of ids, each message behind
    /// an `Arc`: the snapshot cut and readers copy pointers, not messages;
    /// `apply` changes one through `Arc::make_mut` (copying it only while
    /// someone still holds it).
    pub messages: MessageStore,
    /// Each user's messages (those delivered to them) with their flags, as
    /// id sets (`user_messages`): the unread and starred sets are part of
    /// it. `apply` writes it through `State::set_flags` and the other
    /// row methods in `indexes`.
    pub user_messages: Sharded<UserId, UserMessages>,
    /// Derived (not snapshotted): message ids per recipient (channel or
    /// conversation), ascending, in chunks (`indexes`).
    pub by_recipient: Sharded<RecipientId, IdSet>,
    /// Recipient id of each direct conversation, keyed by sorted participants.
    pub direct_recipients: Sharded<Vec<UserId>, RecipientId>,
    /// User groups, system groups included.
    pub groups: Sharded<GroupId, Group>,
    /// Derived (not snapshotted): message ids per (channel, lowercased
    /// topic), ascending, in chunks (`indexes`).
    pub by_topic: Sharded<indexes::TopicKey, IdSet>,
    /// Derived (not snapshotted): each channel's topics by lowercased name
    /// (a hash map: a busy channel has thousands, and a send looks one up;
    /// no reader depends on their order).
    pub channel_topics: Sharded<ChannelId, rustc_hash::FxHashMap<String, indexes::TopicEntry>>,
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
    /// Each realm's linkifiers and default channel groups.
    pub organization: organization::OrgState,
    /// Not snapshotted: the shared copies of stored messages' client names
    /// and topics.
    pub names: interner::Interner,
    /// Not snapshotted: bumped by `apply` for every mutation that may
    /// change an account, profile data or a realm (everything but the
    /// message, channel and group changes `apply::keeps_users`
    /// lists), so register's per-realm user lists, cached by generation,
    /// are rebuilt exactly when they may have changed.
    pub users_generation: AtomicU64,
    /// Not snapshotted: who holds a row for each recent message, noted at
    /// its send and read from the rows after recovery (`holders`), so
    /// `message_holders` need not test every user's rows.
    pub holder_hints: holders::HolderHints,
    /// Uploaded files' records (`files`).
    pub files: files::Files,
    /// Derived (not snapshotted): message ids by sender, direct
    /// participant, `has:` feature and word stem (`lookup`).
    pub lookup: lookup::Lookup,
    /// Read receipts and moderation settings of each realm, reminders.
    pub features: features::FeatureState,
    /// Outgoing-webhook services, bot storage and unfinished deliveries.
    pub bots: bots::BotState,
    /// The web client's signed-in sessions (`web_sessions`).
    pub web_sessions: web_sessions::WebSessions,
    /// Messages' submessages (polls, to-do lists).
    pub widgets: widgets::WidgetState,
    /// Channel folders (`folders`).
    pub folders: folders::FolderState,
}

/// `State` as key-sorted data: the snapshot format. Taken from live state
/// (`State::image`) it holds frozen shards and chunks shared with the
/// state; decoded from a file it holds plain vectors. Both encode the same
/// bytes: each map as a `Vec` of its entries (or values) in key order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StateImage {
    /// Seq of the last mutation included.
    pub applied_seq: u64,
    /// Next free ids.
    pub ids: ids::CountersImage,
    /// Every realm.
    pub realms: Values<RealmId, Realm>,
    /// Every account.
    pub users: Values<UserId, User>,
    /// Every channel.
    pub channels: Values<ChannelId, Channel>,
    /// Subscriptions per user.
    pub subscriptions: Entries<UserId, BTreeMap<ChannelId, Subscription>>,
    /// Every message, by id. Not in the image's own encoding: the
    /// snapshot writes it as blocks after it (`persist::snapshot`).
    #[serde(skip)]
    pub messages: MessagesImage,
    /// Each user's rows and flags; written as blocks like `messages`.
    #[serde(skip)]
    pub user_messages: Entries<UserId, UserMessages>,
    /// Direct conversation recipients.
    pub direct_recipients: Entries<Vec<UserId>, RecipientId>,
    /// Every group.
    pub groups: Values<GroupId, Group>,
    /// Personal settings and the other per-user resources of that area.
    pub settings: settings::SettingsImage,
    /// Every custom profile field.
    pub profile_fields: Values<u64, profile::ProfileField>,
    /// Custom profile field values per user.
    pub profile_values: Entries<UserId, profile::Values>,
    /// Scheduled messages not yet delivered.
    pub scheduled: scheduled::ScheduledImage,
    /// Past subscriptions per user.
    pub former_subscriptions: Entries<UserId, BTreeMap<ChannelId, Subscription>>,
    /// Uploaded files' records; written as a block of its own after the
    /// rows (`persist::snapshot`), absent from older snapshots.
    #[serde(skip)]
    pub files: files::FilesImage,
    /// Linkifiers and default channel groups. Not in the image's own
    /// encoding: the snapshot writes it after the image, in the same
    /// block (`persist::snapshot`), so older snapshots without it load.
    #[serde(skip)]
    pub organization: organization::OrgImage,
    /// Realm features and reminders (`features`). Not in the image's own
    /// encoding: written after `organization` in the same block, so
    /// older snapshots without it load.
    #[serde(skip)]
    pub features: features::FeaturesImage,
    /// Bots' services, storage and unfinished deliveries: written after
    /// `features`, in the same block (`persist::snapshot`), so older
    /// snapshots without it load.
    #[serde(skip)]
    pub bots: bots::BotsImage,
    /// The web client's sessions; written after `features`, in the
    /// same block, absent from older snapshots.
    #[serde(skip)]
    pub web_sessions: web_sessions::WebSessionsImage,
    /// Messages' submessages (`widgets`). Not in the image's own
    /// encoding: written after `features` in the same block, so older
    /// snapshots without it load.
    #[serde(skip)]
    pub widgets: widgets::WidgetsImage,
    /// Channel folders (`folders`). Not in the image's own encoding:
    /// written after `widgets` in the same block, so older snapshots
    /// without it load.
    #[serde(skip)]
    pub folders: folders::FoldersImage,
}

impl StateImage {
    /// How many shared pointers the cut copied (shards and chunks): what
    /// `State::image` costs under the writer lock. Independent of the
    /// number of users, and of messages but for one per 4,096.
    pub fn parts(&self) -> usize {
        let messages = match &self.messages {
            MessagesImage::Frozen(f) => f.parts(),
            MessagesImage::Decoded(_) => 0,
        };
        self.realms.parts()
            + self.users.parts()
            + self.channels.parts()
            + self.subscriptions.parts()
            + messages
            + self.user_messages.parts()
            + self.direct_recipients.parts()
            + self.groups.parts()
            + self.settings.parts()
            + self.profile_fields.parts()
            + self.profile_values.parts()
            + self.scheduled.messages.parts()
            + self.former_subscriptions.parts()
            + self.organization.parts()
            + self.features.parts()
            + self.bots.parts()
            + self.web_sessions.parts()
            + self.widgets.parts()
            + self.folders.parts()
    }
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

    /// The snapshot cut: every snapshotted map frozen (its shards' or
    /// chunks' `Arc`s cloned; no entry is copied, nothing is sorted). Only
    /// a consistent cut while no mutation is applied, so callers hold the
    /// commit writer lock; encoding it (`persist::snapshot`) needs no lock.
    pub fn image(&self) -> StateImage {
        StateImage {
            applied_seq: self.applied_seq(),
            ids: self.ids.image(),
            realms: self.realms.freeze().into(),
            users: self.users.freeze().into(),
            channels: self.channels.freeze().into(),
            subscriptions: self.subscriptions.freeze().into(),
            messages: MessagesImage::Frozen(self.messages.freeze()),
            user_messages: self.user_messages.freeze().into(),
            direct_recipients: self.direct_recipients.freeze().into(),
            groups: self.groups.freeze().into(),
            settings: self.settings.image(),
            profile_fields: self.profile_fields.freeze().into(),
            profile_values: self.profile_values.freeze().into(),
            scheduled: self.scheduled.image(),
            former_subscriptions: self.former_subscriptions.freeze().into(),
            files: self.files.image(),
            organization: self.organization.image(),
            features: self.features.image(),
            bots: self.bots.image(),
            web_sessions: self.web_sessions.image(),
            widgets: self.widgets.image(),
            folders: self.folders.image(),
        }
    }

    /// Rebuilds the maps and every derived index from a snapshot.
    pub fn from_image(image: StateImage) -> Self {
        Self::from_image_on(image, rebuild::threads())
    }

    /// `from_image`, rebuilding the message indexes on `threads` threads.
    pub fn from_image_on(image: StateImage, threads: usize) -> Self {
        let mut state = State {
            applied_seq: AtomicU64::new(image.applied_seq),
            ids: Counters::from_image(&image.ids),
            subscriptions: image.subscriptions.into_iter().collect(),
            user_messages: image.user_messages.into_iter().collect(),
            direct_recipients: image.direct_recipients.into_iter().collect(),
            settings: settings::SettingsState::from_image(image.settings),
            profile_fields: image.profile_fields.into_iter().map(|f| (f.id, f)).collect(),
            profile_values: image.profile_values.into_iter().collect(),
            scheduled: scheduled::Scheduled::from_image(image.scheduled),
            former_subscriptions: image.former_subscriptions.into_iter().collect(),
            files: files::Files::from_image(image.files),
            organization: organization::OrgState::from_image(image.organization),
            features: features::FeatureState::from_image(image.features),
            bots: bots::BotState::from_image(image.bots),
            web_sessions: web_sessions::WebSessions::from_image(image.web_sessions),
            widgets: widgets::WidgetState::from_image(image.widgets),
            folders: folders::FolderState::from_image(image.folders),
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
        // The lookup lists are built after start-up (`build_lookup`).
        state.lookup.mark_pending();
        match image.messages {
            MessagesImage::Frozen(frozen) => state.index_frozen(frozen, threads),
            MessagesImage::Decoded(messages) => {
                state.index_messages(state.names.share_all(messages))
            }
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
    pub(crate) fn index_message(&self, mut message: Arc<Message>) {
        self.names.share(&mut message);
        self.by_recipient.upsert(message.recipient, |ids| ids.insert(message.id));
        self.index_topic(&message);
        self.messages.insert(message.id, Arc::clone(&message));
        self.lookup.add(&message);
    }

    /// Adds every stored message to the lookup lists and marks them
    /// ready: after a restart, on a thread of its own while requests are
    /// served (`lookup` says why a message changed meanwhile is still
    /// listed exactly). A pass over every message; the cost is the
    /// tokenizing and stemming of each text.
    pub fn build_lookup(&self) {
        // Half the cores: the server is answering requests meanwhile.
        self.build_lookup_on((rebuild::threads() / 2).max(1));
    }

    /// `build_lookup` on `threads` threads, each adding a contiguous run
    /// of ids (the lists take ids in any order).
    pub fn build_lookup_on(&self, threads: usize) {
        // Every id below the next one now: later messages are added by
        // `apply` as they are sent.
        let end = self.ids.peek(IdKind::Message);
        let threads = (threads.max(1) as u64).min(end);
        let run = |t: u64| 1 + (end - 1) * t / threads..1 + (end - 1) * (t + 1) / threads;
        std::thread::scope(|scope| {
            for t in 0..threads {
                let ids = run(t);
                scope.spawn(move || {
                    for id in ids {
                        // Under the message's read lock: see `lookup`.
                        self.messages.read(&MessageId(id), |message| self.lookup.add(message));
                    }
                });
            }
        });
        self.lookup.mark_ready();
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

    /// Every account of `realm`, by id; the system bots (which clients see
    /// as cross-realm bots, `system_bots.rs`) are not among them.
    pub fn realm_users(&self, realm: RealmId) -> Vec<User> {
        self.users
            .collect_sorted(|_, u| u.realm == realm && !u.is_system_bot())
            .into_iter()
            .map(|(_, u)| u)
            .collect()
    }

    /// The custom profile fields of `realm`, in display order.
    pub fn realm_profile_fields(&self, realm: RealmId) -> Vec<profile::ProfileField> {
        let mut fields: Vec<profile::ProfileField> = self
            .profile_fields
            .collect_sorted(|_, f| f.realm == realm)
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        fields.sort_by_key(|f| (f.order, f.id));
        fields
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

    /// The id of a channel of `realm` by name (case-insensitive), without
    /// copying the channel.
    pub fn channel_id_by_name(&self, realm: RealmId, name: &str) -> Option<ChannelId> {
        let id = self.channel_by_name.get(&(realm, name.to_lowercase()))?;
        self.channels.contains(&id).then_some(id)
    }

    /// The caller's flags on a message, if it was delivered to them.
    pub fn flags(&self, user: UserId, message: MessageId) -> Option<Flags> {
        self.user_messages.read(&user, |m| m.get(message)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` short direct messages between two users, inserted straight into
    /// the message store and the rows (an `apply` per message would take
    /// minutes in a debug build; the cut only looks at these two maps'
    /// shapes anyway).
    fn with_messages(n: u64) -> State {
        let state = State::new();
        let (a, b) = (UserId(1), UserId(2));
        for i in 1..=n {
            let id = MessageId(i);
            let message = Message::from(MessageParts {
                id,
                realm: RealmId(1),
                sender: a,
                recipient: RecipientId(1),
                destination: Destination::Direct { participants: vec![a, b].into() },
                content: String::new(),
                rendered_content: String::new(),
                timestamp: i as i64,
                client: "".into(),
                is_me_message: false,
            });
            state.messages.insert(id, Arc::new(message));
            state.set_flags(a, id, Flags::READ);
            state.set_flags(b, id, Flags::default());
        }
        state.applied_seq.store(n, Ordering::Release);
        state
    }

    /// #7: a snapshot must not hold the writer lock for time that grows
    /// with the data. `State::image` is exactly what the snapshot thread
    /// does under the lock; at 1M messages (2M rows) it must copy only
    /// pointers — shards and chunks — and no message or row, and stay far
    /// under a generous bound even on a loaded debug build.
    #[test]
    fn the_snapshot_cut_at_a_million_messages_copies_pointers_not_data() {
        let small = with_messages(1_000);
        let big = with_messages(1_000_000);
        let (small_parts, big_parts) = (small.image().parts(), big.image().parts());
        // Only the message chunks grow with the messages: one per 4,096.
        assert!(big_parts - small_parts <= 1_000_000 / 4_096 + 1, "{small_parts} → {big_parts}");
        // A constant per sharded map (its shards), plus the chunks.
        assert!(big_parts < 2_600, "{big_parts} pointers copied at 1M messages");

        // No message is copied, nor even pointed to one by one.
        let probe = big.messages.get(&MessageId(500_000)).unwrap();
        let held = Arc::strong_count(&probe);
        let mut cuts = Vec::new();
        let image = (0..3)
            .map(|_| {
                let started = std::time::Instant::now();
                let image = big.image();
                cuts.push(started.elapsed());
                image
            })
            .last()
            .unwrap();
        assert_eq!(Arc::strong_count(&probe), held);
        // The fastest of three, so one preemption on a shared box cannot
        // fail it; the cut itself takes microseconds.
        let fastest = cuts.iter().min().unwrap();
        assert!(fastest.as_millis() < 50, "the cut took {fastest:?} at 1M messages");

        // Writes after the cut go on, copy-on-write, and leave it intact.
        let (a, b) = (UserId(1), UserId(2));
        big.set_flags(b, MessageId(10), Flags::READ.with(Flags::STARRED));
        big.remove_row(a, MessageId(11));
        big.messages.remove(&MessageId(12));
        let MessagesImage::Frozen(frozen) = &image.messages else { unreachable!() };
        assert_eq!(image.messages.len(), 1_000_000);
        assert_eq!(frozen.iter().nth(11).map(|m| m.id), Some(MessageId(12)));
        let rows = image.user_messages.sorted();
        assert_eq!(rows[0].1.get(MessageId(11)), Some(Flags::READ));
        assert_eq!(rows[1].1.get(MessageId(10)), Some(Flags::default()));
        assert_eq!(rows[1].1.unread().len(), 1_000_000);
        assert_eq!(big.flags(b, MessageId(10)), Some(Flags::READ.with(Flags::STARRED)));
        assert_eq!(big.flags(a, MessageId(11)), None);
    }

    /// After a cut, the first write to a shard copies the shard's map, but
    /// not the rows of the other users in it: each keeps sharing its rows
    /// with the image until its own rows are written (then only the
    /// writer's rows are copied, and its full last chunks are left shared:
    /// `user_messages`).
    #[test]
    fn a_write_after_the_cut_copies_only_the_writers_rows() {
        let state = State::new();
        let users: Vec<UserId> = (1..=300).map(UserId).collect();
        for (i, user) in users.iter().enumerate() {
            for id in 1..=50 {
                state.set_flags(*user, MessageId(id + i as u64), Flags::default());
            }
        }
        let image = state.image();
        let Entries::Frozen(frozen) = &image.user_messages else { unreachable!() };
        let shared = |user: &UserId| {
            let before = frozen.get(user).unwrap();
            state.user_messages.read(user, |now| now.shares_rows_with(before)).unwrap()
        };
        assert!(users.iter().all(shared));
        // One write to each of a few users: every shard they live in is
        // copied (300 users over 64 shards: every one of them has others).
        let written = [UserId(1), UserId(77), UserId(150), UserId(299)];
        for user in written {
            state.set_flags(user, MessageId(10_000), Flags::READ);
        }
        for user in &users {
            assert_eq!(shared(user), !written.contains(user), "{user:?}");
        }
        assert_eq!(state.flags(UserId(2), MessageId(2)), Some(Flags::default()));
        assert_eq!(frozen.get(&UserId(1)).unwrap().get(MessageId(10_000)), None);
    }
}
