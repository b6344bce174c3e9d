//! `IdSet`: a set of message ids kept as what it mostly is, ascending ids
//! appended at the end. Ids live in chunks of at most `2 × CHUNK` (a base
//! and 32-bit offsets: 4 bytes an id), each chunk behind an `Arc`, so a
//! clone copies chunk pointers and a write copies one chunk; after a
//! snapshot cut, appending starts a new chunk instead of copying a shared
//! one that is full enough. On disk a set is its length and the gaps
//! between successive ids (bincode varints), so the bytes never depend on
//! where chunks happen to be split.

use std::sync::Arc;

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::MessageId;

/// The chunk size a set fills before it starts a new chunk.
const CHUNK: usize = 1024;

/// A last chunk with at least this many ids that someone else shares (a
/// snapshot cut holds every chunk) is left as it is: an id above it starts
/// a new chunk instead of copying it. After a cut, the first send to each
/// recipient would otherwise copy its last chunks (up to 4 KB each for the
/// rows and the unread set, and as much again when the copy grows): for a
/// send to a thousand users, megabytes of fresh memory under the writer
/// lock. Below it the copy is small, and every chunk but the last keeps at
/// least this many ids.
const SHARED_FULL_ENOUGH: usize = CHUNK / 4;

/// Up to `2 × CHUNK` ascending ids: a base and 32-bit offsets from it
/// (4 bytes an id), never empty.
#[derive(Clone)]
struct Chunk {
    base: u64,
    offsets: Vec<u32>,
}

impl Chunk {
    /// Whether an id above every id of the set may go into this chunk,
    /// the set's last (see `SHARED_FULL_ENOUGH`).
    fn open_for_append(this: &Arc<Chunk>) -> bool {
        let len = this.len();
        len < CHUNK && (len < SHARED_FULL_ENOUGH || Arc::strong_count(this) == 1)
    }

    fn single(id: MessageId) -> Self {
        let mut offsets = Vec::with_capacity(16);
        offsets.push(0);
        Chunk { base: id.0, offsets }
    }

    fn at(&self, i: usize) -> MessageId {
        MessageId(self.base + u64::from(self.offsets[i]))
    }

    fn first(&self) -> MessageId {
        self.at(0)
    }

    fn last(&self) -> MessageId {
        self.at(self.offsets.len() - 1)
    }

    fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The offset of `id`, if it fits.
    fn offset(&self, id: MessageId) -> Option<u32> {
        id.0.checked_sub(self.base).and_then(|d| u32::try_from(d).ok())
    }

    /// Like `slice::binary_search`, for an id.
    fn find(&self, id: MessageId) -> Result<usize, usize> {
        if id.0 < self.base {
            return Err(0);
        }
        match self.offset(id) {
            Some(offset) => self.offsets.binary_search(&offset),
            None => Err(self.offsets.len()),
        }
    }

    /// How many ids are below `id`.
    fn below(&self, id: MessageId) -> usize {
        self.find(id).unwrap_or_else(|i| i)
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = MessageId> + '_ {
        self.offsets.iter().map(|o| MessageId(self.base + u64::from(*o)))
    }

    fn range(&self, from: usize, to: usize) -> impl DoubleEndedIterator<Item = MessageId> + '_ {
        self.offsets[from..to].iter().map(|o| MessageId(self.base + u64::from(*o)))
    }
}

/// A set of message ids, ascending, in `Arc`-shared copy-on-write chunks.
#[derive(Clone, Default)]
pub struct IdSet {
    /// Non-empty chunks, ascending and disjoint.
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

/// Equal when the ids are, however they are chunked.
impl PartialEq for IdSet {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for IdSet {}

impl std::fmt::Debug for IdSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl IdSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index of the first chunk whose last id is ≥ `id` (`chunks.len()`
    /// if `id` is above every id).
    fn locate(&self, id: MessageId) -> usize {
        self.chunks.partition_point(|c| c.last() < id)
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: MessageId) -> bool {
        let at = self.locate(id);
        self.chunks.get(at).is_some_and(|c| c.find(id).is_ok())
    }

    /// Adds `id`; whether it was new.
    pub fn insert(&mut self, id: MessageId) -> bool {
        // Above every id: the common case (a new message), an append
        // without a search.
        if self.last().is_none_or(|last| last < id) {
            match self.chunks.last_mut() {
                Some(last) if Chunk::open_for_append(last) => match last.offset(id) {
                    Some(offset) => Arc::make_mut(last).offsets.push(offset),
                    None => self.chunks.push(Arc::new(Chunk::single(id))),
                },
                _ => self.chunks.push(Arc::new(Chunk::single(id))),
            }
            self.len += 1;
            return true;
        }
        let at = self.locate(id);
        let Err(pos) = self.chunks[at].find(id) else { return false };
        let chunk = &self.chunks[at];
        if id < chunk.first() && chunk.last().0 - id.0 > u64::from(u32::MAX) {
            // Too far below this chunk to share its base.
            self.chunks.insert(at, Arc::new(Chunk::single(id)));
            self.len += 1;
            return true;
        }
        let chunk = Arc::make_mut(&mut self.chunks[at]);
        if id.0 < chunk.base {
            let shift = (chunk.base - id.0) as u32;
            chunk.offsets.iter_mut().for_each(|o| *o += shift);
            chunk.base = id.0;
        }
        let offset = chunk.offset(id).expect("within the chunk's span");
        chunk.offsets.insert(pos, offset);
        if chunk.len() > 2 * CHUNK {
            let mut tail = Chunk { base: chunk.base, offsets: chunk.offsets.split_off(CHUNK) };
            let shift = tail.offsets[0];
            tail.offsets.iter_mut().for_each(|o| *o -= shift);
            tail.base += u64::from(shift);
            self.chunks.insert(at + 1, Arc::new(tail));
        }
        self.len += 1;
        true
    }

    /// Adds `ids`, which must be ascending and above every id in the set
    /// (a run of new messages): the same chunks as inserting them one by
    /// one, with the copy-on-write check once per chunk, not per id.
    ///
    /// # Panics
    /// If an id is not above the one before it.
    pub fn append(&mut self, ids: impl IntoIterator<Item = MessageId>) {
        let mut last = self.last();
        let mut ids = ids.into_iter().peekable();
        while let Some(&id) = ids.peek() {
            assert!(last.is_none_or(|last| last < id), "IdSet::append: {id} is not above {last:?}");
            let room = match self.chunks.last() {
                Some(chunk) if Chunk::open_for_append(chunk) => {
                    chunk.offset(id).map(|_| CHUNK - chunk.len())
                }
                _ => None,
            };
            let Some(room) = room else {
                // A new chunk, as `insert` starts one.
                self.chunks.push(Arc::new(Chunk::single(id)));
                self.len += 1;
                last = Some(id);
                ids.next();
                continue;
            };
            let chunk = Arc::make_mut(self.chunks.last_mut().expect("a chunk with room"));
            let mut added = 0;
            while added < room {
                let Some(&id) = ids.peek() else { break };
                if last.is_some_and(|last| last >= id) {
                    break;
                }
                let Some(offset) = chunk.offset(id) else { break };
                chunk.offsets.push(offset);
                last = Some(id);
                added += 1;
                ids.next();
            }
            self.len += added;
        }
    }

    /// Removes `id`; whether it was there.
    pub fn remove(&mut self, id: MessageId) -> bool {
        if self.last().is_none_or(|last| last < id) {
            return false;
        }
        let at = self.locate(id);
        let Some(Ok(pos)) = self.chunks.get(at).map(|c| c.find(id)) else {
            return false;
        };
        let chunk = Arc::make_mut(&mut self.chunks[at]);
        chunk.offsets.remove(pos);
        if chunk.offsets.is_empty() {
            self.chunks.remove(at);
        }
        self.len -= 1;
        true
    }

    /// Sets or clears `id`.
    pub fn set(&mut self, id: MessageId, on: bool) {
        if on {
            self.insert(id);
        } else {
            self.remove(id);
        }
    }

    /// The lowest id.
    pub fn first(&self) -> Option<MessageId> {
        self.chunks.first().map(|c| c.first())
    }

    /// The highest id.
    pub fn last(&self) -> Option<MessageId> {
        self.chunks.last().map(|c| c.last())
    }

    /// Every id, ascending.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = MessageId> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// The ids ≥ `from`, ascending.
    pub fn iter_from(&self, from: MessageId) -> impl Iterator<Item = MessageId> + '_ {
        let at = self.locate(from);
        let skip = self.chunks.get(at).map_or(0, |c| c.below(from));
        self.chunks[at..]
            .iter()
            .enumerate()
            .flat_map(move |(i, c)| c.range(if i == 0 { skip } else { 0 }, c.len()))
    }

    /// The ids < `before`, descending.
    pub fn iter_before(&self, before: MessageId) -> impl Iterator<Item = MessageId> + '_ {
        let end = self.chunks.partition_point(|c| c.first() < before);
        let keep = match end {
            0 => 0,
            _ => self.chunks[end - 1].below(before),
        };
        self.chunks[..end]
            .iter()
            .rev()
            .enumerate()
            .flat_map(move |(i, c)| c.range(0, if i == 0 { keep } else { c.len() }).rev())
    }

    /// How many chunks (shared pointers) the set holds.
    pub fn parts(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes the set holds on the heap (its chunk pointers, and each
    /// chunk with its reference counts and offsets), for memory
    /// accounting: a shared chunk counts in every set holding it.
    pub fn heap_bytes(&self) -> usize {
        let chunk = 2 * std::mem::size_of::<usize>() + std::mem::size_of::<Chunk>();
        self.chunks.capacity() * std::mem::size_of::<Arc<Chunk>>()
            + self.chunks.iter().map(|c| chunk + c.offsets.capacity() * 4).sum::<usize>()
    }
}

impl FromIterator<MessageId> for IdSet {
    /// Collects ids given in ascending order (others are inserted one by one).
    fn from_iter<I: IntoIterator<Item = MessageId>>(iter: I) -> Self {
        let mut set = IdSet::new();
        for id in iter {
            set.insert(id);
        }
        set
    }
}

impl Serialize for IdSet {
    /// The length, then each id as the gap from the previous one (the
    /// first from 0): small varints, independent of the chunking.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len))?;
        let mut previous = 0;
        for id in self.iter() {
            seq.serialize_element(&(id.0 - previous))?;
            previous = id.0;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for IdSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Gaps;
        impl<'de> Visitor<'de> for Gaps {
            type Value = IdSet;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of positive id gaps")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IdSet, A::Error> {
                let mut set = IdSet::new();
                let mut previous = 0u64;
                while let Some(gap) = seq.next_element::<u64>()? {
                    let id = match previous.checked_add(gap) {
                        Some(id) if gap > 0 => id,
                        _ => return Err(serde::de::Error::custom("ids not strictly ascending")),
                    };
                    // Ascending: always an append, into full-size chunks.
                    set.insert(MessageId(id));
                    previous = id;
                }
                Ok(set)
            }
        }
        deserializer.deserialize_seq(Gaps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(set: &IdSet) -> Vec<u64> {
        set.iter().map(|id| id.0).collect()
    }

    #[test]
    fn a_set_stays_sorted_across_chunks_and_splits() {
        let mut set = IdSet::new();
        let mut model = std::collections::BTreeSet::new();
        for i in (0..5_000).map(|i| i * 4 + 10) {
            assert!(set.insert(MessageId(i)));
            model.insert(i);
        }
        assert_eq!(set.parts(), 5, "appends fill chunks of {CHUNK}");
        // Middle inserts until chunks split.
        for i in 0..1_500 {
            for id in [i * 4 + 11, i * 4 + 12] {
                assert!(set.insert(MessageId(id)));
                model.insert(id);
            }
        }
        assert!(!set.insert(MessageId(11)));
        assert!(set.parts() > 5, "a chunk past twice the size splits");
        assert_eq!(ids(&set), model.iter().copied().collect::<Vec<_>>());
        assert_eq!(set.len(), model.len());
        assert!(set.contains(MessageId(12)) && !set.contains(MessageId(13)));
        assert!(!set.contains(MessageId(1_000_000)));
        // Ranges in both directions, across chunk boundaries.
        for at in [0, 9, 10, 11, 2_999, 4_100, 4_107, 6_010, 19_999, 20_006, 30_000] {
            let from: Vec<u64> = set.iter_from(MessageId(at)).map(|i| i.0).collect();
            assert_eq!(from, model.range(at..).copied().collect::<Vec<_>>(), "from {at}");
            let before: Vec<u64> = set.iter_before(MessageId(at)).map(|i| i.0).collect();
            assert_eq!(before, model.range(..at).rev().copied().collect::<Vec<_>>(), "before {at}");
        }
        // Removing everything leaves no chunks.
        for id in model {
            assert!(set.remove(MessageId(id)));
        }
        assert!(!set.remove(MessageId(10)));
        assert_eq!((set.len(), set.parts()), (0, 0));
    }

    #[test]
    fn appending_builds_the_chunks_inserting_does() {
        let far = u64::from(u32::MAX) + 10;
        let runs: [Vec<u64>; 4] = [
            (1..=3_000).map(|i| i * 2).collect(),
            vec![6_001, 6_002, far, far + 5],
            (0..2_500).map(|i| far + 10 + i).collect(),
            vec![],
        ];
        let (mut appended, mut inserted) = (IdSet::new(), IdSet::new());
        for run in &runs {
            appended.append(run.iter().copied().map(MessageId));
            for id in run {
                inserted.insert(MessageId(*id));
            }
            assert_eq!(appended, inserted);
            assert_eq!(appended.len(), inserted.len());
            let sizes = |s: &IdSet| s.chunks.iter().map(|c| (c.base, c.len())).collect::<Vec<_>>();
            assert_eq!(sizes(&appended), sizes(&inserted));
        }
        // A frozen copy keeps its ids while the set appends.
        let frozen = appended.clone();
        appended.append([far * 2, far * 2 + 1].map(MessageId));
        assert_eq!(frozen.len() + 2, appended.len());
        assert_eq!(frozen.last(), inserted.last());
    }

    #[test]
    #[should_panic(expected = "is not above")]
    fn appending_below_the_last_id_is_refused() {
        let mut set: IdSet = [5, 9].map(MessageId).into_iter().collect();
        set.append([7].map(MessageId));
    }

    #[test]
    fn ids_too_far_apart_for_one_chunk_get_their_own() {
        let far = u64::from(u32::MAX) + 10;
        let mut set: IdSet = [5, 6, far, far + 1].map(MessageId).into_iter().collect();
        assert_eq!(set.parts(), 2);
        // Below a chunk's base: it is rebased if the span fits, else split.
        assert!(set.insert(MessageId(far - 3)));
        assert!(set.insert(MessageId(3)));
        assert!(set.insert(MessageId(9)));
        assert!(set.insert(MessageId(far * 3)));
        assert_eq!(ids(&set), [3, 5, 6, 9, far - 3, far, far + 1, far * 3]);
        assert!(set.contains(MessageId(far - 3)) && !set.contains(MessageId(far - 2)));
        assert!(set.remove(MessageId(far)) && !set.contains(MessageId(far)));
        let before: Vec<u64> = set.iter_before(MessageId(far + 1)).map(|i| i.0).collect();
        assert_eq!(before, [far - 3, 9, 6, 5, 3]);
    }

    #[test]
    fn a_clone_shares_chunks_until_one_side_writes() {
        let mut set: IdSet = (1..=3_000).map(MessageId).collect();
        let frozen = set.clone();
        set.insert(MessageId(5_000));
        set.remove(MessageId(1));
        assert_eq!(frozen.len(), 3_000);
        assert!(frozen.contains(MessageId(1)) && !frozen.contains(MessageId(5_000)));
        // Only the touched chunk was copied; the new id started a chunk of
        // its own rather than copy the shared last one (952 ids).
        let shared =
            set.chunks.iter().filter(|c| frozen.chunks.iter().any(|f| Arc::ptr_eq(c, f))).count();
        assert_eq!(shared, 2, "the middle and the last chunk are still shared");
        assert_eq!(set.parts(), 4);
    }

    /// Appending above a shared last chunk starts a new chunk once the
    /// last one holds `SHARED_FULL_ENOUGH` ids; below that it copies it.
    /// Unshared, it fills up to `CHUNK` as before. `append` and `insert`
    /// agree.
    #[test]
    fn appending_after_a_cut_copies_only_small_last_chunks() {
        for bulk in [false, true] {
            let add = |set: &mut IdSet, ids: std::ops::RangeInclusive<u64>| {
                if bulk {
                    set.append(ids.map(MessageId));
                } else {
                    ids.for_each(|id| {
                        set.insert(MessageId(id));
                    });
                }
            };
            let mut set = IdSet::new();
            add(&mut set, 1..=(SHARED_FULL_ENOUGH as u64 - 1));
            let frozen = set.clone();
            add(&mut set, 1_000..=1_000);
            assert_eq!((set.parts(), frozen.parts()), (1, 1), "a small chunk is copied");
            assert!(!Arc::ptr_eq(&set.chunks[0], &frozen.chunks[0]));

            add(&mut set, 1_001..=1_100);
            let frozen = set.clone();
            add(&mut set, 2_000..=2_010);
            assert_eq!(set.parts(), 2, "a new chunk after a shared one of {}", frozen.len());
            assert!(Arc::ptr_eq(&set.chunks[0], &frozen.chunks[0]));
            drop(frozen);
            add(&mut set, 2_011..=2_020);
            assert_eq!(set.parts(), 2, "unshared: filled as before");
            let ids: Vec<u64> = set.iter().map(|id| id.0).collect();
            let expected: Vec<u64> =
                (1..SHARED_FULL_ENOUGH as u64).chain(1_000..=1_100).chain(2_000..=2_020).collect();
            assert_eq!(ids, expected, "bulk {bulk}");
        }
    }

    /// Random inserts, appends and removals, with clones taken now and
    /// then (as snapshot cuts share every chunk) and kept a while, against
    /// a `BTreeSet`: every read answers the same, and every clone still
    /// holds what it held when taken.
    #[test]
    fn random_changes_with_clones_match_a_btree_set() {
        use std::collections::BTreeSet;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..10 {
            let mut set = IdSet::new();
            let mut model = BTreeSet::new();
            let mut frozen: Vec<(IdSet, BTreeSet<u64>)> = Vec::new();
            let mut top = 1u64;
            for _ in 0..3_000 {
                match next(100) {
                    // Mostly new ids above every other, singly or in runs.
                    0..=49 | 97.. => {
                        top += 1 + next(3);
                        set.insert(MessageId(top));
                        model.insert(top);
                    }
                    50..=59 => {
                        let run: Vec<u64> = (0..next(400)).map(|i| top + 1 + 2 * i).collect();
                        top = run.last().copied().unwrap_or(top);
                        set.append(run.iter().map(|&id| MessageId(id)));
                        model.extend(run);
                    }
                    60..=74 => {
                        let id = 1 + next(top);
                        assert_eq!(set.insert(MessageId(id)), model.insert(id), "insert {id}");
                    }
                    75..=94 => {
                        let id = 1 + next(top + 1);
                        assert_eq!(set.remove(MessageId(id)), model.remove(&id), "remove {id}");
                    }
                    _ => {
                        frozen.push((set.clone(), model.clone()));
                        if frozen.len() > 3 {
                            frozen.remove(0);
                        }
                    }
                }
                assert_eq!(set.len(), model.len());
            }
            let at = 1 + next(top + 1);
            assert_eq!(ids(&set), model.iter().copied().collect::<Vec<_>>(), "round {round}");
            assert_eq!(set.first().map(|id| id.0), model.first().copied());
            assert_eq!(set.last().map(|id| id.0), model.last().copied());
            assert_eq!(set.contains(MessageId(at)), model.contains(&at));
            let from: Vec<u64> = set.iter_from(MessageId(at)).map(|id| id.0).collect();
            assert_eq!(from, model.range(at..).copied().collect::<Vec<_>>());
            let before: Vec<u64> = set.iter_before(MessageId(at)).map(|id| id.0).collect();
            assert_eq!(before, model.range(..at).rev().copied().collect::<Vec<_>>());
            for (old, old_model) in &frozen {
                assert_eq!(ids(old), old_model.iter().copied().collect::<Vec<_>>());
            }
            // Chunks stay non-empty, ascending, disjoint and bounded.
            for pair in set.chunks.windows(2) {
                assert!(pair[0].last() < pair[1].first());
            }
            assert!(set.chunks.iter().all(|c| (1..=2 * CHUNK).contains(&c.len())));
        }
    }

    #[test]
    fn sets_encode_as_gaps_and_refuse_disorder() {
        let config = bincode::config::standard();
        let set: IdSet = [3, 4, 10, 300].map(MessageId).into_iter().collect();
        let bytes = bincode::serde::encode_to_vec(&set, config).unwrap();
        assert_eq!(bytes, [4, 3, 1, 6, 251, 34, 1]);
        let (back, _): (IdSet, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, set);
        let repeated = [2u8, 3, 0];
        assert!(bincode::serde::decode_from_slice::<IdSet, _>(&repeated, config).is_err());
    }
}
