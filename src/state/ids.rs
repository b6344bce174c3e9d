//! Newtype ids and the counters that allocate them.
//!
//! Ids are server-wide (like Zulip's): a message id is unique across every
//! realm in the data dir, so an id alone never identifies a row in the wrong
//! realm by accident — but every lookup still checks the realm.
//!
//! A handler reads the next id with `Counters::peek` while holding the
//! commit writer lock, puts it into the `Mutation`, and `apply` advances the
//! counter past it. So ids are decided before logging and replay gives the
//! same ids.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

id_type! {
    /// An organization.
    RealmId,
    /// A user or bot account.
    UserId,
    /// A channel (Zulip's "stream").
    ChannelId,
    /// A message.
    MessageId,
    /// A user group, system groups included.
    GroupId,
    /// A set of recipients: one channel, or one set of direct-message participants.
    RecipientId,
}

/// What kind of id to allocate.
#[derive(Clone, Copy, Debug)]
pub enum IdKind {
    /// `RealmId`.
    Realm,
    /// `UserId`.
    User,
    /// `ChannelId`.
    Channel,
    /// `MessageId`.
    Message,
    /// `GroupId`.
    Group,
    /// `RecipientId`.
    Recipient,
}

/// The next free value of each id kind. Atomics only so that readers can
/// peek without a lock; they are written solely by `apply`.
#[derive(Debug, Default)]
pub struct Counters {
    next: [AtomicU64; 6],
}

/// Plain-value form of `Counters`, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CountersImage(pub [u64; 6]);

impl Counters {
    /// The id the next object of this kind gets (ids start at 1).
    pub fn peek(&self, kind: IdKind) -> u64 {
        self.next[kind as usize].load(Ordering::Acquire).max(1)
    }

    /// The `n` ids starting at `peek(kind)`.
    pub fn peek_many(&self, kind: IdKind, n: usize) -> Vec<u64> {
        let first = self.peek(kind);
        (first..first + n as u64).collect()
    }

    /// Records that `id` is taken (called only by `apply`).
    pub fn claim(&self, kind: IdKind, id: u64) {
        self.next[kind as usize].fetch_max(id + 1, Ordering::AcqRel);
    }

    /// Plain copy for a snapshot.
    pub fn image(&self) -> CountersImage {
        CountersImage(std::array::from_fn(|i| self.next[i].load(Ordering::Acquire)))
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: &CountersImage) -> Self {
        Counters { next: std::array::from_fn(|i| AtomicU64::new(image.0[i])) }
    }
}
