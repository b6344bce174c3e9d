//! What Zulip's later feature levels added, kept beside `Realm` and the
//! older areas (like `organization.rs`) so that their encodings stay as
//! they were: a realm's read-receipt switch and moderation request
//! channel (`RealmFeatures`), users' message reminders (`Reminder`), and
//! the tokens of channels' email-gateway addresses.
//! `FeatureChange` is the one mutation type that changes them
//! (`Mutation::Features`); the snapshot carries this area after the
//! organization part (format 11).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::ids::{ChannelId, MessageId, RealmId, UserId};
use super::shard::{Entries, Sharded, Values};

/// A realm's settings of this area (Zulip's defaults when never set).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmFeatures {
    /// `enable_read_receipts`: whether `GET /messages/{id}/read_receipts`
    /// answers at all (each user's `send_read_receipts` still decides).
    pub enable_read_receipts: bool,
    /// `moderation_request_channel_id`: where message reports go; `None`
    /// refuses reports.
    pub moderation_request_channel: Option<ChannelId>,
}

impl Default for RealmFeatures {
    fn default() -> Self {
        RealmFeatures { enable_read_receipts: true, moderation_request_channel: None }
    }
}

/// A reminder: the Notification Bot will send `content` to `owner` at
/// `deliver_at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    /// Its id (`reminder_id`), its own counter.
    pub id: u64,
    /// The owner's realm.
    pub realm: RealmId,
    /// Who asked, and who will receive it.
    pub owner: UserId,
    /// The message it is about (`reminder_target_message_id`).
    pub message: MessageId,
    /// The reminder's text, written when it was created.
    pub content: String,
    /// Its HTML, rendered when it was created (delivery renders again).
    pub rendered_content: String,
    /// When to send (UNIX seconds).
    pub deliver_at: i64,
}

impl Reminder {
    /// Zulip's reminder object (`GET /reminders`, register, events).
    pub fn to_api(&self) -> serde_json::Value {
        serde_json::json!({
            "reminder_id": self.id,
            "type": "private",
            "to": [self.owner.0],
            "content": self.content,
            "rendered_content": self.rendered_content,
            "scheduled_delivery_timestamp": self.deliver_at,
            "failed": false,
            "reminder_target_message_id": self.message.0,
        })
    }
}

/// Every change of this area.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeatureChange {
    /// A realm's settings of this area are replaced.
    SetRealm {
        /// Whose.
        realm: RealmId,
        /// The new settings.
        features: RealmFeatures,
    },
    /// A reminder is created (id decided by the handler).
    AddReminder(Reminder),
    /// A reminder is deleted or (with its message in the same batch)
    /// delivered.
    RemoveReminder {
        /// Which.
        id: u64,
    },
    /// A channel's email address token for a sender is created (on the
    /// first request for it, as Zulip does).
    AddEmailToken {
        /// The channel.
        channel: ChannelId,
        /// Who its messages would appear from (`None`: the email gateway).
        sender: Option<UserId>,
        /// The random token.
        token: String,
    },
}

/// Key of a channel email address token: the channel and the sender.
pub type EmailTokenKey = (ChannelId, Option<UserId>);

/// This area's data. One field of `State`.
#[derive(Default)]
pub struct FeatureState {
    /// Realms whose settings were ever changed.
    pub realms: Sharded<RealmId, RealmFeatures>,
    /// Pending reminders by id.
    pub reminders: Sharded<u64, Reminder>,
    /// The next free reminder id.
    next_reminder: AtomicU64,
    /// Channels' email address tokens, by channel and sender.
    pub email_tokens: Sharded<EmailTokenKey, String>,
}

/// `FeatureState` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeaturesImage {
    /// Each realm's settings.
    pub realms: Entries<RealmId, RealmFeatures>,
    /// Pending reminders, by id.
    pub reminders: Values<u64, Reminder>,
    /// The next free reminder id.
    pub next_reminder: u64,
    /// Channels' email address tokens.
    pub email_tokens: Entries<EmailTokenKey, String>,
}

impl FeaturesImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        self.realms.parts() + self.reminders.parts() + self.email_tokens.parts()
    }
}

impl FeatureState {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> FeaturesImage {
        FeaturesImage {
            realms: self.realms.freeze().into(),
            reminders: self.reminders.freeze().into(),
            next_reminder: self.next_reminder.load(Ordering::Acquire),
            email_tokens: self.email_tokens.freeze().into(),
        }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: FeaturesImage) -> Self {
        let state = FeatureState {
            realms: image.realms.into_iter().collect(),
            next_reminder: AtomicU64::new(image.next_reminder),
            email_tokens: image.email_tokens.into_iter().collect(),
            ..FeatureState::default()
        };
        for reminder in image.reminders {
            state.reminders.insert(reminder.id, reminder);
        }
        state
    }

    /// A realm's settings of this area.
    pub fn of(&self, realm: RealmId) -> RealmFeatures {
        self.realms.get(&realm).unwrap_or_default()
    }

    /// The id the next reminder gets (ids start at 1).
    pub fn peek_reminder(&self) -> u64 {
        self.next_reminder.load(Ordering::Acquire).max(1)
    }

    /// Records that reminder `id` is taken (apply only).
    pub(crate) fn claim_reminder(&self, id: u64) {
        self.next_reminder.fetch_max(id + 1, Ordering::AcqRel);
    }

    /// `user`'s reminders, by delivery time then id.
    pub fn reminders_of(&self, user: UserId) -> Vec<Reminder> {
        let mut list: Vec<Reminder> = self
            .reminders
            .collect_sorted(|_, r| r.owner == user)
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        list.sort_by_key(|r| (r.deliver_at, r.id));
        list
    }

    /// Reminders due at `now`, by delivery time then id; and the earliest
    /// delivery time still to come.
    pub fn due(&self, now: i64) -> (Vec<u64>, Option<i64>) {
        let mut due = Vec::new();
        let mut next = None::<i64>;
        for (id, r) in self.reminders.collect_sorted(|_, _| true) {
            if r.deliver_at <= now {
                due.push((r.deliver_at, id));
            } else {
                next = Some(next.map_or(r.deliver_at, |n| n.min(r.deliver_at)));
            }
        }
        due.sort();
        (due.into_iter().map(|(_, id)| id).collect(), next)
    }
}
