//! Who holds a row for a recent message, remembered from its send, so
//! that a reaction or an edit to it does not look at every user's rows.
//!
//! `State::message_holders` must answer "which users have this message
//! among their rows". Rows are stored per user, so without help that is one
//! membership test per user of the server: with 10,000 users, milliseconds
//! of cache misses per reaction under the writer lock, the largest cost of
//! a chat load (`natter-load --kind mix`) and quadratic in the users.
//! Reactions and edits are mostly to recent messages, whose rows were
//! nearly all written by their send; so `apply`'s send of a channel
//! message notes the recipients here (a direct message's holders are its
//! participants, asked without a hint), and the hint stays exact by this
//! rule: **a row added to
//! a message after its send drops the message's hint** (`row_added`, called
//! by every row-adding method of `State`). Rows removed since the send
//! are filtered out when the hint is read. A message without a hint (older
//! than the window, or with a late row) falls back to the scan; either way
//! the answer is the same, so nothing observable depends on the hint, and
//! it is not snapshotted: once recovery has rebuilt the state, `rebuild`
//! reads the newest messages' hints from the rows themselves.
//!
//! Bounded: the newest `MAX_MESSAGES` messages and `MAX_USERS` user ids in
//! all; the oldest hints go first. Deterministic (only `apply` and
//! recovery write it), like the rest of `State`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{IdSet, MessageId, UserId};

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
    /// The rings' whole size at once, on first use: growing them by
    /// doubling copied up to 32 MB under the writer lock (a 4-25 ms send).
    /// Pages untouched stay unallocated.
    fn reserve(&mut self) {
        if self.users.capacity() == 0 {
            self.users.reserve_exact(MAX_USERS + MAX_USERS / 8);
            self.messages.reserve_exact(MAX_MESSAGES + 1);
        }
    }

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
        inner.reserve();
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

    /// Replaces every hint with hints read from the rows: each of the
    /// newest messages (ids from `next_id − MAX_MESSAGES` up) gets the
    /// users who hold a row for it now, as if it had just been sent to
    /// them, as many of the newest as the rings hold. Run once recovery has
    /// rebuilt the state: hints are not snapshotted, and without this a
    /// reaction, edit or deletion of any message sent before a restart
    /// would test every user's rows until new sends had filled the window
    /// again. `rows` lists every user's delivered ids; it is walked twice
    /// (each user's tail above the window only): once to count each
    /// message's holders, once to place them. Only ids `hinted` accepts
    /// get a hint (channel messages: a direct message's holders are its
    /// participants, and it is not noted at its send either).
    pub fn rebuild<'a, I>(
        &self,
        next_id: u64,
        rows: impl Fn() -> I,
        hinted: impl Fn(MessageId) -> bool,
    ) where
        I: Iterator<Item = (UserId, &'a IdSet)>,
    {
        self.rebuild_within(next_id, rows, hinted, MAX_MESSAGES, MAX_USERS);
    }

    /// `rebuild` with the rings' bounds as parameters (smaller in tests).
    fn rebuild_within<'a, I>(
        &self,
        next_id: u64,
        rows: impl Fn() -> I,
        hinted: impl Fn(MessageId) -> bool,
        max_messages: usize,
        max_users: usize,
    ) where
        I: Iterator<Item = (UserId, &'a IdSet)>,
    {
        let lowest = next_id.saturating_sub(max_messages as u64);
        // Which ids of the window get a hint, asked once each.
        let wanted: Vec<bool> = (lowest..next_id).map(|id| hinted(MessageId(id))).collect();
        let mut counts = vec![0u32; (next_id - lowest) as usize];
        for (_, ids) in rows() {
            for id in ids.iter_from(MessageId(lowest)) {
                let at = (id.0 - lowest) as usize;
                if let (Some(count), Some(true)) = (counts.get_mut(at), wanted.get(at)) {
                    *count += 1;
                }
            }
        }
        // The newest messages whose holders fit the ring together; the
        // window ends below a message `note_send` would not note either.
        let (mut from, mut total) = (counts.len(), 0usize);
        while let Some(&count) = from.checked_sub(1).and_then(|at| counts.get(at)) {
            let count = count as usize;
            if count > max_users / 8 || total + count > max_users {
                break;
            }
            total += count;
            from -= 1;
        }
        let cut = lowest + from as u64;
        let counts = &counts[from..];
        // Where each message's holders start in the ring, and how many of
        // them are placed so far.
        let mut next: Vec<usize> = counts
            .iter()
            .scan(0usize, |start, count| {
                let at = *start;
                *start += *count as usize;
                Some(at)
            })
            .collect();
        let mut inner = self.inner.lock();
        *inner = Hints::default();
        if total == 0 {
            return;
        }
        inner.reserve();
        inner.users.resize(total, UserId(0));
        let placed = inner.users.make_contiguous();
        for (user, ids) in rows() {
            for id in ids.iter_from(MessageId(cut)) {
                if wanted.get((id.0 - lowest) as usize) != Some(&true) {
                    continue;
                }
                if let Some(at) = next.get_mut((id.0 - cut) as usize) {
                    placed[*at] = user;
                    *at += 1;
                }
            }
        }
        let mut start = 0u64;
        for (offset, count) in counts.iter().enumerate() {
            if *count == 0 {
                continue;
            }
            let id = MessageId(cut + offset as u64);
            inner.messages.push_back(Noted { id, start, len: *count, dropped: false });
            start += u64::from(*count);
        }
        if let Some(last) = inner.messages.back() {
            self.newest.fetch_max(last.id.0, Ordering::AcqRel);
        }
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

    /// Hints read from rows: each message in the window gets exactly the
    /// users whose rows hold it; one nobody holds gets none, nor do ids
    /// below the window; what was hinted before is gone.
    #[test]
    fn rebuilt_hints_are_the_holders_of_the_newest_messages() {
        let ids = |list: &[u64]| {
            let mut set = IdSet::new();
            for id in list {
                set.insert(MessageId(*id));
            }
            set
        };
        let next_id = MAX_MESSAGES as u64 + 10;
        let old = 5; // below the window
        let (a, b, c) = (next_id - 3, next_id - 2, next_id - 1);
        let rows = [
            (UserId(7), ids(&[old, a, c])),
            (UserId(2), ids(&[a, c])),
            (UserId(9), ids(&[old, c])),
        ];
        let hints = HolderHints::default();
        hints.note_send(MessageId(1), [UserId(1)].into_iter());
        hints.rebuild(next_id, || rows.iter().map(|(user, set)| (*user, set)), |_| true);
        assert_eq!(hints.candidates(MessageId(a)), Some(vec![UserId(2), UserId(7)]));
        assert_eq!(hints.candidates(MessageId(b)), None, "no holder, no hint");
        assert_eq!(hints.candidates(MessageId(c)), Some(vec![UserId(2), UserId(7), UserId(9)]));
        assert_eq!(hints.candidates(MessageId(old)), None, "below the window");
        assert_eq!(hints.candidates(MessageId(1)), None, "replaced");
        // Ids the caller does not want hinted (direct messages) get none,
        // and take no place from the others.
        let rows = [(UserId(9), ids(&[c])), (UserId(7), ids(&[a])), (UserId(2), ids(&[a, c]))];
        let some = HolderHints::default();
        some.rebuild(next_id, || rows.iter().map(|(user, set)| (*user, set)), |id| id.0 != a);
        assert_eq!(some.candidates(MessageId(a)), None);
        assert_eq!(some.candidates(MessageId(c)), Some(vec![UserId(2), UserId(9)]));
        assert_eq!(some.inner.lock().users.len(), 2);
        // Later rows and sends behave as after any send.
        hints.row_added(MessageId(a));
        assert_eq!(hints.candidates(MessageId(a)), None);
        hints.note_send(MessageId(next_id), [UserId(4)].into_iter());
        assert_eq!(hints.candidates(MessageId(next_id)), Some(vec![UserId(4)]));
        assert!(hints.candidates(MessageId(c)).is_some());
    }

    /// The window holds as many of the newest messages as the users ring
    /// does, and stops below one with more holders than a send notes.
    #[test]
    fn a_rebuild_keeps_the_newest_messages_that_fit() {
        // Messages 1..=40, two holders each but message 3 with thirty.
        let holders_of = |id: u64| if id == 3 { 30 } else { 2 };
        let rows: Vec<(UserId, IdSet)> = (0..30)
            .map(|user| {
                let mut set = IdSet::new();
                for id in (1..=40).filter(|id| user < holders_of(*id)) {
                    set.insert(MessageId(id));
                }
                (UserId(user), set)
            })
            .collect();
        let hinted = |max_messages, max_users| {
            let hints = HolderHints::default();
            let iter = || rows.iter().map(|(user, set)| (*user, set));
            hints.rebuild_within(41, iter, |_| true, max_messages, max_users);
            (1..=40).filter(|id| hints.candidates(MessageId(*id)).is_some()).collect::<Vec<_>>()
        };
        assert_eq!(hinted(64, 1000), (1..=40).collect::<Vec<_>>(), "all of them");
        assert_eq!(hinted(4, 1000), vec![37, 38, 39, 40], "the newest four ids");
        assert_eq!(hinted(64, 20), (31..=40).collect::<Vec<_>>(), "ten pairs fill twenty");
        assert_eq!(hinted(64, 200), (4..=40).collect::<Vec<_>>(), "30 > 200 / 8 stops at 3");
    }
}
