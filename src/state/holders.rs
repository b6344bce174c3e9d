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

use std::collections::VecDeque;
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

/// Two rings, so that noting a send allocates nothing once they are
/// warm (it runs for every send, replay included): the noted messages
/// in ascending id order (found by binary search), and their recipients
/// end to end.
#[derive(Default)]
struct Hints {
    messages: VecDeque<Noted>,
    users: VecDeque<UserId>,
    /// The position of `users[0]` counted from the first id ever noted.
    base: u64,
}

struct Noted {
    id: MessageId,
    /// Position of its first recipient, counted like `Hints::base`.
    start: u64,
    len: u32,
    /// A row was added later: no longer a hint (its ids stay in the ring
    /// until it is evicted).
    dropped: bool,
}

impl Hints {
    fn find(&self, id: MessageId) -> Option<usize> {
        self.messages.binary_search_by(|n| n.id.cmp(&id)).ok()
    }
}

impl HolderHints {
    /// Notes that `id` was just sent to exactly `recipients` (each now has
    /// a row for it, and nobody else does).
    pub fn note_send(&self, id: MessageId, recipients: impl ExactSizeIterator<Item = UserId>) {
        let len = recipients.len();
        if len > MAX_USERS / 8 {
            return;
        }
        let mut inner = self.inner.lock();
        // Ids are handed out ascending; anything else is simply not noted.
        if inner.messages.back().is_some_and(|n| n.id >= id) {
            return;
        }
        if inner.users.capacity() == 0 {
            // The rings' whole size at once, on first use: growing them
            // by doubling copied up to 32 MB under the writer lock (a
            // 4-25 ms send). Pages untouched stay unallocated.
            inner.users.reserve_exact(MAX_USERS + MAX_USERS / 8);
            inner.messages.reserve_exact(MAX_MESSAGES + 1);
        }
        let start = inner.base + inner.users.len() as u64;
        inner.users.extend(recipients);
        inner.messages.push_back(Noted { id, start, len: len as u32, dropped: false });
        while inner.messages.len() > MAX_MESSAGES || inner.users.len() > MAX_USERS {
            let Some(oldest) = inner.messages.pop_front() else { break };
            inner.users.drain(..oldest.len as usize);
            inner.base += u64::from(oldest.len);
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
        if let Some(at) = inner.find(id) {
            inner.messages[at].dropped = true;
        }
    }

    /// Every user that may hold a row for `id` (its recipients at send,
    /// ascending), if it has a hint; some may have lost theirs since.
    pub fn candidates(&self, id: MessageId) -> Option<Vec<UserId>> {
        let inner = self.inner.lock();
        let noted = &inner.messages[inner.find(id)?];
        if noted.dropped {
            return None;
        }
        let from = (noted.start - inner.base) as usize;
        let mut users: Vec<UserId> =
            inner.users.range(from..from + noted.len as usize).copied().collect();
        drop(inner);
        users.sort_unstable();
        Some(users)
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
        assert_eq!(hints.inner.lock().users.len(), MAX_MESSAGES);
        // Noted out of order: not a hint.
        hints.note_send(MessageId(7), [UserId(2)].into_iter());
        assert_eq!(hints.candidates(MessageId(7)), None);
    }
}
