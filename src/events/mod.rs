//! Ephemeral client delivery: the events `apply` yields, and the hub that
//! hands them to listeners and event queues once their mutation is durable.
//!
//! Events are never logged; they are rebuilt from mutations. `queue` holds
//! the per-client event queues (register / long-poll), `fanout` turns each
//! `Event` into Zulip JSON per queue, `presence` is the ephemeral presence
//! store.
//!
//! Adding an event for a new change: give `apply` an `Event` to return
//! (a `Broadcast` when every recipient sees the same JSON, else a new
//! variant at the end of the enum plus its arm in `fanout::deliver`), and
//! a case in `tests/verify_action.rs`.

pub mod fanout;
pub mod journal;
pub mod presence;
pub mod queue;

use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::config::QueueConfig;
use crate::state::{ChannelId, Flags, MessageId, RealmId, State, UserId};

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
    /// A user's presence changed (ephemeral: published directly, never
    /// logged). Rendered per queue: id-keyed for clients with
    /// `simplified_presence_events`, legacy per-client otherwise.
    Presence {
        /// The user's realm.
        realm: RealmId,
        /// Whose presence.
        user: UserId,
        /// The presence after the change.
        presence: presence::UserPresence,
        /// When the server recorded it (UNIX seconds).
        server_timestamp: i64,
    },
    /// A user was deactivated: their event queues end at once (a parked
    /// long-poll wakes and, like later polls, finds no queue), so nothing
    /// more reaches a deactivated account.
    QueuesEnd {
        /// The deactivated user.
        user: UserId,
    },
    /// A channel became visible to these users (made public or
    /// web-public): a `stream` `create` for them, rendered per viewer
    /// (subscriber lists as their queue asked).
    ChannelVisible {
        /// The channel.
        channel: ChannelId,
        /// Who can see it now and could not before.
        users: Vec<UserId>,
    },
}

/// A listener handed out by `Hub::subscribe_where`: the sender half of
/// may's channel (a coroutine waiting on the receiver parks without
/// blocking its thread) and which events it wants.
struct Listener {
    tx: may::sync::mpsc::Sender<Arc<Event>>,
    /// Events this listener receives; the others are never sent to it, so
    /// a send it does not care about costs it no wake-up.
    wants: fn(&Event) -> bool,
}

/// Fans published events out to listeners and event queues.
#[derive(Default)]
pub struct Hub {
    /// Held only to push into channels (non-blocking), never across a wait.
    listeners: Mutex<Vec<Listener>>,
    /// The event queues and presence, attached once at start-up (they
    /// render events from state, which exists only after recovery).
    realtime: OnceLock<Arc<Realtime>>,
}

/// The ephemeral real-time side of the server: event queues and presence.
pub struct Realtime {
    /// Realm data, read to render events per queue.
    pub state: Arc<State>,
    /// Every live event queue.
    pub queues: queue::Queues,
    /// Who is online.
    pub presence: presence::Presences,
    /// Register's user lists, cached per realm and users generation.
    pub user_lists: crate::view::user_lists::UserLists,
    /// The queues' journal, once recovery wrote it; written by the queue
    /// ticker (and taken by a clean shutdown). Never touched by a request.
    pub journal: Mutex<Option<journal::Journal>>,
}

impl Realtime {
    /// Queues and presence over `state`.
    pub fn new(state: Arc<State>, config: QueueConfig) -> Self {
        Realtime {
            state,
            queues: queue::Queues::new(config),
            presence: presence::Presences::default(),
            user_lists: crate::view::user_lists::UserLists::default(),
            journal: Mutex::new(None),
        }
    }
}

impl Hub {
    /// A hub with no listeners.
    pub fn new() -> Self {
        Self::default()
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> may::sync::mpsc::Receiver<Arc<Event>> {
        self.subscribe_where(|_| true)
    }

    /// A receiver of the events published from now on that `wants`
    /// accepts. A thread that cares about a few kinds of event (the
    /// scheduler) subscribes this way, so every other event — each
    /// message sent — wakes nothing.
    pub fn subscribe_where(
        &self,
        wants: fn(&Event) -> bool,
    ) -> may::sync::mpsc::Receiver<Arc<Event>> {
        let (tx, rx) = may::sync::mpsc::channel();
        self.listeners.lock().push(Listener { tx, wants });
        rx
    }

    /// Attaches the event queues (once, at start-up).
    pub fn attach(&self, realtime: Arc<Realtime>) {
        assert!(self.realtime.set(realtime).is_ok(), "Hub::attach called twice");
    }

    /// The event queues and presence.
    ///
    /// # Panics
    /// If `attach` was never called (only bare unit-test hubs lack them).
    pub fn realtime(&self) -> &Arc<Realtime> {
        self.realtime.get().expect("event queues not attached to the hub")
    }

    /// Delivers ephemeral events (typing, presence: never logged) to every
    /// live listener and queue.
    pub fn publish(&self, events: Vec<Event>) {
        self.publish_at(None, events);
    }

    /// Delivers the events of durable mutation `seq`; queues registered
    /// with that mutation already in their fetched state skip them. The
    /// caller publishes mutations in seq order, each once (the committer
    /// does): an event's queue id is derived from its seq.
    pub fn publish_committed(&self, seq: u64, events: Vec<Event>) {
        self.publish_at(Some(seq), events);
    }

    fn publish_at(&self, seq: Option<u64>, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        if let Some(realtime) = self.realtime.get() {
            // The events of one mutation reach a queue with no other
            // event between them (`Queues::delivering`).
            let _delivering = realtime.queues.delivering();
            if let Some(seq) = seq {
                realtime.queues.set_published(seq);
            }
            for event in &events {
                fanout::deliver(realtime, seq, event);
            }
        }
        let mut listeners = self.listeners.lock();
        for event in events {
            if !listeners.iter().any(|l| (l.wants)(&event)) {
                continue;
            }
            let event = Arc::new(event);
            listeners.retain(|l| !(l.wants)(&event) || l.tx.send(Arc::clone(&event)).is_ok());
        }
    }
}
