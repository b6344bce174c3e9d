//! Scheduled messages: messages a user asked to send later.
//!
//! A scheduled message is pending until the scheduler delivers it, which
//! removes it here and sends an ordinary message with a new message id in
//! the same mutation (`Mutation::DeliverScheduled`): the log makes the pair
//! atomic, so a crash can neither lose nor double a delivery. A delivery
//! that the send rules refuse leaves it here, marked failed with the
//! reason, until its owner edits or deletes it. Scheduled ids have their
//! own counter (they are not message ids).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ids::{ChannelId, RealmId, UserId};
use super::shard::{Sharded, Values};

/// A scheduled message's id (`scheduled_message_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScheduledId(pub u64);

impl std::fmt::Display for ScheduledId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a scheduled message goes, by id only (as the API takes it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScheduledTo {
    /// A channel and topic (`""` is the empty topic).
    Channel {
        /// The channel.
        channel: ChannelId,
        /// The topic, normalized as for sending.
        topic: String,
    },
    /// Direct message recipients, ascending, without duplicates.
    Direct {
        /// The recipients as asked (the sender only when writing to
        /// oneself).
        users: Vec<UserId>,
    },
}

/// One pending (or failed) scheduled message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledMessage {
    /// Its id.
    pub id: ScheduledId,
    /// The owner's realm.
    pub realm: RealmId,
    /// The owner, who will be the sender.
    pub sender: UserId,
    /// Recipients.
    pub to: ScheduledTo,
    /// Markdown source, normalized as for sending.
    pub content: String,
    /// Rendered when scheduled or edited, for listing; delivery renders
    /// again, against the state at that time.
    pub rendered_content: String,
    /// When to send (UNIX seconds).
    pub deliver_at: i64,
    /// Whether the sent message starts read for its sender.
    pub read_by_sender: bool,
    /// The client that scheduled it (the sent message's `client`).
    pub client: String,
    /// Why delivery failed, if it did.
    pub failure: Option<String>,
}

impl ScheduledMessage {
    /// Zulip's scheduled-message object (GET, register, events).
    pub fn to_api(&self) -> Value {
        let mut value = json!({
            "scheduled_message_id": self.id.0,
            "content": self.content,
            "rendered_content": self.rendered_content,
            "scheduled_delivery_timestamp": self.deliver_at,
            "failed": self.failure.is_some(),
        });
        match &self.to {
            ScheduledTo::Channel { channel, topic } => {
                value["type"] = json!("stream");
                value["to"] = json!(channel.0);
                value["topic"] = json!(topic);
            }
            ScheduledTo::Direct { users } => {
                value["type"] = json!("private");
                value["to"] = json!(users.iter().map(|u| u.0).collect::<Vec<_>>());
            }
        }
        if let Some(why) = &self.failure {
            value["failure_message"] = json!(why);
        }
        value
    }
}

/// Every scheduled message, and the next free scheduled id.
#[derive(Default)]
pub struct Scheduled {
    /// Pending and failed scheduled messages by id.
    pub by_id: Sharded<ScheduledId, ScheduledMessage>,
    next: AtomicU64,
}

/// `Scheduled` as plain data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduledImage {
    /// The next free id.
    pub next: u64,
    /// Every scheduled message, by id.
    pub messages: Values<ScheduledId, ScheduledMessage>,
}

impl Scheduled {
    /// The id the next scheduled message gets (ids start at 1).
    pub fn peek(&self) -> ScheduledId {
        ScheduledId(self.next.load(Ordering::Acquire).max(1))
    }

    /// Records that `id` is taken (called only by `apply`).
    pub(crate) fn claim(&self, id: ScheduledId) {
        self.next.fetch_max(id.0 + 1, Ordering::AcqRel);
    }

    /// `user`'s scheduled messages, by delivery time then id.
    pub fn of_user(&self, user: UserId) -> Vec<ScheduledMessage> {
        let mut list: Vec<ScheduledMessage> = self
            .by_id
            .collect_sorted(|_, s| s.sender == user)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        list.sort_by_key(|s| (s.deliver_at, s.id));
        list
    }

    /// Pending (not failed) scheduled messages due at `now`, by delivery
    /// time then id; and the earliest delivery time still to come.
    pub fn due(&self, now: i64) -> (Vec<ScheduledId>, Option<i64>) {
        let mut due = Vec::new();
        let mut next = None::<i64>;
        for (id, s) in self.by_id.collect_sorted(|_, s| s.failure.is_none()) {
            if s.deliver_at <= now {
                due.push((s.deliver_at, id));
            } else {
                next = Some(next.map_or(s.deliver_at, |n| n.min(s.deliver_at)));
            }
        }
        due.sort();
        (due.into_iter().map(|(_, id)| id).collect(), next)
    }

    /// The snapshot cut (under the commit writer lock): the map frozen.
    pub fn image(&self) -> ScheduledImage {
        ScheduledImage {
            next: self.next.load(Ordering::Acquire),
            messages: self.by_id.freeze().into(),
        }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: ScheduledImage) -> Self {
        let scheduled = Scheduled { next: AtomicU64::new(image.next), ..Scheduled::default() };
        for s in image.messages {
            scheduled.by_id.insert(s.id, s);
        }
        scheduled
    }
}
