//! Who holds a row for a recent message, remembered from its send, so
//! that a reaction or an edit to it does not look at every user's rows.
//!
//! `State::message_holders` must answer "which users have this message
//! among their rows". Rows are stored per user, so without help that is one
//! membership test per user of the server: with 10,000 users, milliseconds
//! of cache misses per reaction under the writer lock, the largest cost of
//! a chat load (`natter-load --kind mix`) and quadratic in the users.
//! Reactions and edits are mostly to recent messages, whose rows were
//! nearly all written by their send; so `apply`'s send notes the
//! recipients here, and the hint stays exact by this rule: **a row added to
//! a message after its send drops the message's hint** (`row_added`, called
//! by every row-adding method of `State`). Rows removed since the send
//! are filtered out when the hint is read. A message without a hint (older
//! than the window, after a restart, or with a late row) falls back to the
//! scan; either way the answer is the same, so nothing observable depends
//! on the hint, and it is not snapshotted.
//!
//! Bounded: the newest `MAX_MESSAGES` messages and `MAX_USERS` user ids in
//! all; the oldest hints go first. Deterministic (only `apply` writes it),
//! like the rest of `State`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{MessageId, UserId};

/// Messages with a hint at most.
const MAX_MESSAGES: usize = 1 << 16;
/// Recipient ids kept in all hints at most (32 MB); a send to more than
/// an eighth of it is not noted.
const MAX_USERS: usize = 1 << 22;

/// The hints; see the module comment.
#[derive(Default)]
pub struct HolderHints {
    /// The newest message id ever noted: a row for a newer message is its
    /// send's own (no hint to drop), checked without the lock.
    newest: AtomicU64,
    inner: Mutex<Hints>,
}

#[derive(Default)]
struct Hints {
    by_message: HashMap<MessageId, Box<[UserId]>, rustc_hash::FxBuildHasher>,
    /// Noted messages, oldest first (some may have been dropped since).
    order: VecDeque<MessageId>,
    /// User ids held in `by_message`.
    users: usize,
}

impl HolderHints {
    /// Notes that `id` was just sent to exactly `recipients` (each now has
    /// a row for it, and nobody else does).
    pub fn note_send(&self, id: MessageId, recipients: impl ExactSizeIterator<Item = UserId>) {
        if recipients.len() > MAX_USERS / 8 {
            return;
        }
        let mut holders: Box<[UserId]> = recipients.collect();
        holders.sort_unstable();
        let mut inner = self.inner.lock();
        inner.users += holders.len();
        if let Some(old) = inner.by_message.insert(id, holders) {
            inner.users -= old.len();
        }
        inner.order.push_back(id);
        while inner.order.len() > MAX_MESSAGES || inner.users > MAX_USERS {
            let Some(oldest) = inner.order.pop_front() else { break };
            if let Some(old) = inner.by_message.remove(&oldest) {
                inner.users -= old.len();
            }
        }
        self.newest.fetch_max(id.0, Ordering::AcqRel);
    }

    /// A row was added for `id` (by anything but its send): its hint, if
    /// any, is no longer complete.
    pub fn row_added(&self, id: MessageId) {
        if id.0 > self.newest.load(Ordering::Acquire) {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(old) = inner.by_message.remove(&id) {
            inner.users -= old.len();
        }
    }

    /// Every user that may hold a row for `id` (its recipients at send,
    /// ascending), if it has a hint; some may have lost theirs since.
    pub fn candidates(&self, id: MessageId) -> Option<Vec<UserId>> {
        self.inner.lock().by_message.get(&id).map(|h| h.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_row_drops_the_hint_and_the_oldest_go_first() {
        let hints = HolderHints::default();
        hints.note_send(MessageId(5), [UserId(3), UserId(1)].into_iter());
        // A row for a message newer than every hint is a send's own.
        hints.row_added(MessageId(6));
        assert_eq!(hints.candidates(MessageId(5)), Some(vec![UserId(1), UserId(3)]));
        hints.row_added(MessageId(5));
        assert_eq!(hints.candidates(MessageId(5)), None);
        for i in 0..MAX_MESSAGES as u64 + 1 {
            hints.note_send(MessageId(10 + i), [UserId(1)].into_iter());
        }
        assert_eq!(hints.candidates(MessageId(10)), None, "the oldest went first");
        assert!(hints.candidates(MessageId(11)).is_some());
        assert_eq!(hints.inner.lock().users, MAX_MESSAGES);
    }
}
