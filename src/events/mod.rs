//! Ephemeral client delivery: the events `apply` yields, and the hub that
//! hands them to listeners once their mutation is durable.
//!
//! Events are never logged; they are rebuilt from mutations. Per-client
//! event queues (register / long-poll) are built on `Hub::subscribe`.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::state::{ChannelId, Flags, MessageId, RealmId, UserId};

/// Who receives an event whose JSON is the same for every recipient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Audience {
    /// Exactly these users (every queue of each).
    Users(Vec<UserId>),
    /// Every user of the realm.
    Realm(RealmId),
}

/// Something that happened, with who should hear about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A message was sent; each recipient with their flags on it.
    Message {
        /// The new message.
        message: MessageId,
        /// Every user it was delivered to, with their flags.
        recipients: Vec<(UserId, Flags)>,
    },
    /// A user account was created.
    RealmUserAdd {
        /// The realm.
        realm: RealmId,
        /// The new user.
        user: UserId,
    },
    /// A channel was created.
    ChannelCreate {
        /// The realm.
        realm: RealmId,
        /// The new channel.
        channel: ChannelId,
    },
    /// Users were subscribed to a channel.
    SubscriptionAdd {
        /// The channel.
        channel: ChannelId,
        /// Who was subscribed.
        users: Vec<UserId>,
    },
    /// An event whose Zulip JSON does not depend on who receives it (a
    /// settings change, a draft, a typing notification…): `event` is the
    /// object clients see, `type` included, without `id` (each queue adds
    /// its own). Events that differ per recipient (messages, users under
    /// email visibility) get their own variant instead.
    Broadcast {
        /// Who receives it.
        audience: Audience,
        /// Zulip's event object, minus `id`.
        event: serde_json::Value,
    },
}

/// A sender half handed out by `Hub::subscribe`. may's channel, so a
/// coroutine waiting on the receiver parks without blocking its thread.
type Listener = may::sync::mpsc::Sender<Arc<Event>>;

/// Fans published events out to listeners.
#[derive(Default)]
pub struct Hub {
    /// Held only to push into channels (non-blocking), never across a wait.
    listeners: Mutex<Vec<Listener>>,
}

impl Hub {
    /// A hub with no listeners.
    pub fn new() -> Self {
        Self::default()
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> may::sync::mpsc::Receiver<Arc<Event>> {
        let (tx, rx) = may::sync::mpsc::channel();
        self.listeners.lock().push(tx);
        rx
    }

    /// Delivers events (of durable mutations only) to every live listener;
    /// listeners whose receiver is gone are dropped.
    pub fn publish(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let mut listeners = self.listeners.lock();
        for event in events {
            let event = Arc::new(event);
            listeners.retain(|l| l.send(Arc::clone(&event)).is_ok());
        }
    }
}
