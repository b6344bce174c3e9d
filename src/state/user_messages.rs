//! Per-user message rows and flags, stored as what they are: sets of ids.
//!
//! Zulip keeps one UserMessage row (message, user, flag bits) per
//! recipient per message, and it is its largest table. Here a user's rows
//! are `UserMessages`: the ids delivered to them (`ids`), the unread ones
//! (`read` is "not in `unread`"), and one set per other flag (starred,
//! collapsed, mentioned, the wildcard mentions, alert words, historical),
//! which are empty or small for almost everyone. Each set is an `IdSet`:
//! ascending ids in chunks of at most `2 × CHUNK`, each chunk behind an
//! `Arc`. So:
//!
//! - a send appends one id to the end of the recipient's `ids` (and
//!   `unread`). After a snapshot cut (which shares every chunk), it copies
//!   the last chunk only while that holds fewer than `SHARED_FULL_ENOUGH`
//!   ids, and otherwise starts a new chunk; cloning a whole `UserMessages`
//!   (which a copy-on-write shard does to every user in it) copies one
//!   pointer, and a user's rows are copied (chunk pointers, not ids) only
//!   when that user's rows are written;
//! - a row added in the middle (a historical row) copies one chunk, and a
//!   chunk past `2 × CHUNK` splits in two;
//! - a row costs 4 bytes (plus 4 while unread: a chunk stores its first
//!   id and 32-bit offsets), against ≈ 40 for a `BTreeMap<MessageId,
//!   Flags>` entry.
//!
//! On disk a set is its length and the gaps between successive ids
//! (bincode varints: about one byte per id in a busy realm), so the
//! snapshot never depends on where chunks happen to be split.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::id_set::IdSet;
use super::ids::MessageId;
use super::messages::Flags;

/// The flags kept as sets besides `unread`: bit `1 << (i + 1)` of `Flags`
/// for index `i` (STARRED … HISTORICAL).
const FLAG_SETS: usize = 7;

/// One user's rows: the messages delivered to them and their flags.
///
/// Behind an `Arc`, so that a clone is one pointer: the shard map that
/// holds every user's rows is copy-on-write, and the first write to a
/// shard after a snapshot cut clones the whole map. Each user's rows are
/// then copied (their sets' chunk pointers, ≈ one per 1,024 rows) only
/// when that user's rows are written, not when a neighbour's are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UserMessages(Arc<Rows>);

/// The rows themselves, read through `UserMessages`; see there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rows {
    /// Every message delivered to the user (one row each).
    ids: IdSet,
    /// The rows without `READ`.
    unread: IdSet,
    /// The rows with each other flag, by bit (see `FLAG_SETS`).
    flags: [IdSet; FLAG_SETS],
}

impl std::ops::Deref for UserMessages {
    type Target = Rows;

    fn deref(&self) -> &Rows {
        &self.0
    }
}

impl UserMessages {
    /// The rows to write: copied first if a snapshot (or anyone) still
    /// shares them.
    fn rows_mut(&mut self) -> &mut Rows {
        Arc::make_mut(&mut self.0)
    }

    /// Whether `self` and `other` are the same rows in memory, not copies.
    #[cfg(test)]
    pub(crate) fn shares_rows_with(&self, other: &UserMessages) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Sets the row for `id` to `flags`, adding the row if absent.
    pub fn set(&mut self, id: MessageId, flags: Flags) {
        self.rows_mut().set(id, flags);
    }

    /// Sets the rows of `rows` (ascending ids) as `set` would one by one;
    /// rows above every row the user has (a replayed run of sends) are
    /// appended to each set in bulk.
    pub fn set_all(&mut self, rows: &[(MessageId, Flags)]) {
        self.rows_mut().set_all(rows);
    }

    /// Adds the row for `id` with `flags` unless the user has one; whether
    /// it was added.
    pub fn insert_if_absent(&mut self, id: MessageId, flags: Flags) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.set(id, flags);
        true
    }

    /// Changes the flags of the row for `id` with `f`; the new flags, or
    /// `None` (and nothing done) if the user has no row.
    pub fn update(&mut self, id: MessageId, f: impl FnOnce(Flags) -> Flags) -> Option<Flags> {
        let old = self.get(id)?;
        let new = f(old);
        if new != old {
            self.set(id, new);
        }
        Some(new)
    }

    /// Removes the row for `id`, returning its flags.
    pub fn remove(&mut self, id: MessageId) -> Option<Flags> {
        let flags = self.get(id)?;
        let rows = self.rows_mut();
        rows.ids.remove(id);
        rows.unread.remove(id);
        for set in &mut rows.flags {
            set.remove(id);
        }
        Some(flags)
    }
}

impl Rows {
    /// Every message delivered to the user.
    pub fn ids(&self) -> &IdSet {
        &self.ids
    }

    /// The unread ones.
    pub fn unread(&self) -> &IdSet {
        &self.unread
    }

    /// The starred ones.
    pub fn starred(&self) -> &IdSet {
        &self.flags[0]
    }

    /// The rows with `flag`: one of the flags kept as a set (STARRED …
    /// HISTORICAL; unread rows are `unread`).
    pub fn flagged(&self, flag: Flags) -> &IdSet {
        let bit = flag.0.trailing_zeros() as usize;
        assert!(flag.0.is_power_of_two() && (1..=FLAG_SETS).contains(&bit), "one kept flag");
        &self.flags[bit - 1]
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the user has no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The flags of the row for `id`, if the user has one.
    pub fn get(&self, id: MessageId) -> Option<Flags> {
        if !self.ids.contains(id) {
            return None;
        }
        Some(self.flags_of(id))
    }

    /// The flags of a row known to exist.
    fn flags_of(&self, id: MessageId) -> Flags {
        let mut flags = Flags((!self.unread.contains(id)) as u32);
        for (i, set) in self.flags.iter().enumerate() {
            if !set.is_empty() && set.contains(id) {
                flags = flags.with(Flags(1 << (i + 1)));
            }
        }
        flags
    }

    /// Up to `n` rows below `before`, newest first, with their flags.
    pub fn entries_before(&self, before: MessageId, n: usize) -> Vec<(MessageId, Flags)> {
        self.ids.iter_before(before).take(n).map(|id| (id, self.flags_of(id))).collect()
    }

    /// Up to `n` rows from `from` up, oldest first, with their flags.
    pub fn entries_from(&self, from: MessageId, n: usize) -> Vec<(MessageId, Flags)> {
        self.ids.iter_from(from).take(n).map(|id| (id, self.flags_of(id))).collect()
    }

    /// How many chunks (shared pointers) the sets hold.
    pub fn parts(&self) -> usize {
        self.ids.parts() + self.unread.parts() + self.flags.iter().map(IdSet::parts).sum::<usize>()
    }

    fn set(&mut self, id: MessageId, flags: Flags) {
        // Every set holds only rows of `ids`: a new row is in none of them,
        // so only the flags it has need a write (a send sets one or two).
        let new = self.ids.insert(id);
        let unread = !flags.contains(Flags::READ);
        if unread || !new {
            self.unread.set(id, unread);
        }
        for (i, set) in self.flags.iter_mut().enumerate() {
            let on = flags.contains(Flags(1 << (i + 1)));
            if on || !new {
                set.set(id, on);
            }
        }
    }

    fn set_all(&mut self, rows: &[(MessageId, Flags)]) {
        let ascending = rows.windows(2).all(|w| w[0].0 < w[1].0);
        let above = match (rows.first(), self.ids.last()) {
            (Some((first, _)), Some(last)) => *first > last,
            _ => true,
        };
        if !(ascending && above) {
            for (id, flags) in rows {
                self.set(*id, *flags);
            }
            return;
        }
        // New rows: each set gets the ids that have its flag (see `set`).
        self.ids.append(rows.iter().map(|(id, _)| *id));
        let unread =
            |(id, flags): &(MessageId, Flags)| (!flags.contains(Flags::READ)).then_some(*id);
        self.unread.append(rows.iter().filter_map(unread));
        let any = rows.iter().fold(0, |any, (_, flags)| any | flags.0);
        for (i, set) in self.flags.iter_mut().enumerate() {
            let bit = Flags(1 << (i + 1));
            if any & bit.0 != 0 {
                set.append(rows.iter().filter(|(_, f)| f.contains(bit)).map(|(id, _)| *id));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_all_matches_set_one_by_one() {
        let flags = [Flags::READ, Flags::default(), Flags::MENTIONED, Flags(0x81), Flags(0x7f)];
        let row = |i: u64| (MessageId(i), flags[(i % 5) as usize]);
        let (mut bulk, mut single) = (UserMessages::default(), UserMessages::default());
        // New rows in bulk, then rows that are not all new or not ascending.
        let batches: [Vec<(MessageId, Flags)>; 4] = [
            (1..=2_100).map(row).collect(),
            (2_101..=2_200).map(row).collect(),
            vec![row(5), (MessageId(3_000), Flags::READ)],
            vec![(MessageId(4_000), Flags::STARRED), row(3_500)],
        ];
        for batch in &batches {
            bulk.set_all(batch);
            for (id, f) in batch {
                single.set(*id, *f);
            }
            assert_eq!(bulk, single);
        }
        assert_eq!(bulk.get(MessageId(3_500)), single.get(MessageId(3_500)));
    }

    /// A clone of a user's rows (what copying a shard's map after a
    /// snapshot cut makes of every user in it) is one pointer; a write
    /// copies the rows on the writer's side only, and reads see through.
    #[test]
    fn rows_are_shared_until_written() {
        let mut rows = UserMessages::default();
        rows.set_all(&(1..=3_000).map(|i| (MessageId(i), Flags::default())).collect::<Vec<_>>());
        let frozen = rows.clone();
        assert!(rows.shares_rows_with(&frozen));
        // Reads, and writes that change nothing, copy nothing.
        assert_eq!(rows.get(MessageId(7)), Some(Flags::default()));
        assert!(!rows.insert_if_absent(MessageId(7), Flags::READ));
        assert_eq!(rows.update(MessageId(8), |f| f), Some(Flags::default()));
        assert_eq!(rows.remove(MessageId(9_999)), None);
        assert!(rows.shares_rows_with(&frozen));
        rows.set(MessageId(7), Flags::READ);
        assert!(!rows.shares_rows_with(&frozen));
        assert_eq!(frozen.get(MessageId(7)), Some(Flags::default()));
        assert_eq!((rows.unread().len(), frozen.unread().len()), (2_999, 3_000));
    }

    #[test]
    fn rows_keep_every_flag() {
        let mut mine = UserMessages::default();
        let all = [
            Flags::READ,
            Flags::STARRED,
            Flags::COLLAPSED,
            Flags::MENTIONED,
            Flags::STREAM_WILDCARD_MENTIONED,
            Flags::TOPIC_WILDCARD_MENTIONED,
            Flags::HAS_ALERT_WORD,
            Flags::HISTORICAL,
        ];
        for (i, flag) in all.iter().enumerate() {
            mine.set(MessageId(i as u64 + 1), *flag);
        }
        mine.set(MessageId(20), Flags::default());
        for (i, flag) in all.iter().enumerate() {
            assert_eq!(mine.get(MessageId(i as u64 + 1)), Some(*flag));
        }
        assert_eq!(mine.get(MessageId(20)), Some(Flags::default()));
        assert_eq!(mine.get(MessageId(21)), None);
        assert_eq!(mine.unread().len(), 8, "all but the read one");
        assert_eq!(mine.update(MessageId(2), |f| f.with(Flags::READ)), Some(Flags(3)));
        assert_eq!(mine.update(MessageId(99), |f| f), None);
        assert!(!mine.insert_if_absent(MessageId(2), Flags::default()));
        assert!(mine.insert_if_absent(MessageId(15), Flags::READ.with(Flags::HISTORICAL)));
        assert_eq!(mine.remove(MessageId(2)), Some(Flags(3)));
        assert!(!mine.starred().contains(MessageId(2)));
        assert_eq!(
            mine.entries_before(MessageId(15), 2),
            [(MessageId(8), Flags::HISTORICAL)]
                .into_iter()
                .chain([(MessageId(7), Flags::HAS_ALERT_WORD)])
                .collect::<Vec<_>>()
        );
        let from = mine.entries_from(MessageId(15), 5);
        assert_eq!(from, [(MessageId(15), Flags(0x81)), (MessageId(20), Flags::default())]);
        let config = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(&mine, config).unwrap();
        let (back, _): (UserMessages, usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, mine);
    }
}
