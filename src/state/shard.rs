//! `Sharded<K, V>`: a hash map split across several `parking_lot` locks.
//!
//! Readers and the single writer (`apply`) touch one shard at a time, so a
//! long read of one user's data never blocks another user's request. Every
//! critical section is a few map operations: no I/O, no waiting, no
//! allocation-heavy work. That is what makes a thread-blocking lock
//! acceptable inside may coroutines (may's rule is "no blocking calls"; a
//! lock held for nanoseconds by another worker is not one).
//!
//! Each shard's map sits behind an `Arc`, copy-on-write: `freeze` (the
//! snapshot cut, under the commit writer lock) clones only the 64 `Arc`s,
//! and the first write to a shard while a frozen copy still holds it
//! clones that one shard's map (`Arc::make_mut`); with no frozen copy
//! alive, writes change the map in place as before. Values that are large
//! and written often (per-user message flags) are themselves cheap to
//! clone, so a shard copy is shallow. `Entries` and `Values` are the
//! snapshot form of a map: frozen shards when taken from live state,
//! plain vectors when decoded; both encode the same bytes, key-sorted.
//!
//! Keys are hashed with FxHash (`rustc-hash`): unkeyed, so shard placement
//! never depends on the process, and a multiply or two per key where
//! SipHash cost ≈ 12% of a send's instructions. The shard is picked from
//! the same hash the shard's map uses, re-mixed by one multiply so that the
//! keys of one shard still spread over all of its map's buckets. Nothing
//! observable depends on map order (snapshots and listings sort by key), and
//! keys come from `apply`, not from callers choosing colliding values.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxBuildHasher;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of shards. A power of two larger than any realistic worker count.
const SHARDS: usize = 64;
const _: () = assert!(SHARDS.is_power_of_two());

/// A shard's map.
type Map<K, V> = HashMap<K, V, FxBuildHasher>;

/// One shard: a lock around a copy-on-write map.
type Shard<K, V> = RwLock<Arc<Map<K, V>>>;

/// A hash map split into `SHARDS` independently locked parts.
pub struct Sharded<K, V> {
    /// One lock per shard; a key always lives in shard `hash(key) % SHARDS`.
    shards: Box<[Shard<K, V>]>,
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> Sharded<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Sharded { shards: (0..SHARDS).map(|_| RwLock::new(Arc::default())).collect() }
    }

    fn shard(&self, key: &K) -> &Shard<K, V> {
        &self.shards[shard_index(key)]
    }

    /// Runs `f` on the value of `key`, if present, under a read lock.
    pub fn read<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        self.shard(key).read().get(key).map(f)
    }

    /// A clone of the value of `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.read(key, V::clone)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &K) -> bool {
        self.shard(key).read().contains_key(key)
    }

    /// Inserts or replaces the value of `key`.
    pub fn insert(&self, key: K, value: V) {
        Arc::make_mut(&mut self.shard(&key).write()).insert(key, value);
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &K) -> Option<V> {
        let mut shard = self.shard(key).write();
        // Absent keys must not copy a frozen shard.
        if !shard.contains_key(key) {
            return None;
        }
        Arc::make_mut(&mut shard).remove(key)
    }

    /// Runs `f` on the value of `key` under a write lock; `None` if absent.
    pub fn update<R>(&self, key: &K, f: impl FnOnce(&mut V) -> R) -> Option<R> {
        let mut shard = self.shard(key).write();
        if let Some(map) = Arc::get_mut(&mut shard) {
            // No frozen copy holds the shard: the usual case.
            return map.get_mut(key).map(f);
        }
        if !shard.contains_key(key) {
            return None;
        }
        Arc::make_mut(&mut shard).get_mut(key).map(f)
    }

    /// Runs `f` on the value of `key`, inserting `V::default()` first if absent.
    pub fn upsert<R>(&self, key: K, f: impl FnOnce(&mut V) -> R) -> R
    where
        V: Default,
    {
        let mut shard = self.shard(&key).write();
        f(Arc::make_mut(&mut shard).entry(key).or_default())
    }

    /// Number of entries (sums the shards; not an atomic cut).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Clones of the entries accepted by `keep`, sorted by key. Locks one
    /// shard at a time, so it is only a consistent cut while no writer runs.
    pub fn collect_sorted(&self, mut keep: impl FnMut(&K, &V) -> bool) -> Vec<(K, V)> {
        let mut all: Vec<(K, V)> = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.read();
            all.extend(
                shard.iter().filter(|(k, v)| keep(k, v)).map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The snapshot cut: every shard's map as it is now, by cloning its
    /// `Arc` (64 pointer copies, whatever the size). Only a consistent cut
    /// while no writer runs; later writes copy the shards they touch.
    pub fn freeze(&self) -> Frozen<K, V> {
        Frozen { shards: self.shards.iter().map(|s| Arc::clone(&s.read())).collect() }
    }
}

/// A `Sharded` map whose values each sit behind an `Arc`: `get_shared`
/// hands out the value itself (a reference count, not a copy), for values
/// that every request reads (the caller's account, the realm). Writes go
/// through `Arc::make_mut`: in place when nobody else holds the value,
/// otherwise on a copy, so a request keeps seeing the value it was given.
/// The rest of the API is `Sharded`'s, in terms of the values themselves.
pub struct Shared<K, V> {
    map: Sharded<K, Arc<V>>,
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> Shared<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Shared { map: Sharded::new() }
    }

    /// Runs `f` on the value of `key`, if present, under a read lock.
    pub fn read<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        self.map.read(key, |v| f(v))
    }

    /// A clone of the value of `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.map.read(key, |v| V::clone(v))
    }

    /// The value of `key` itself, shared.
    pub fn get_shared(&self, key: &K) -> Option<Arc<V>> {
        self.map.get(key)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains(key)
    }

    /// Inserts or replaces the value of `key`.
    pub fn insert(&self, key: K, value: V) {
        self.map.insert(key, Arc::new(value));
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &K) -> Option<V> {
        self.map.remove(key).map(Arc::unwrap_or_clone)
    }

    /// Runs `f` on the value of `key` under a write lock (on a copy if a
    /// reader still holds the value); `None` if absent.
    pub fn update<R>(&self, key: &K, f: impl FnOnce(&mut V) -> R) -> Option<R> {
        self.map.update(key, |v| f(Arc::make_mut(v)))
    }

    /// Number of entries (sums the shards; not an atomic cut).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Clones of the entries accepted by `keep`, sorted by key (see
    /// `Sharded::collect_sorted`).
    pub fn collect_sorted(&self, mut keep: impl FnMut(&K, &V) -> bool) -> Vec<(K, V)> {
        let shared = self.map.collect_sorted(|k, v| keep(k, v));
        shared.into_iter().map(|(k, v)| (k, Arc::unwrap_or_clone(v))).collect()
    }

    /// The snapshot cut (see `Sharded::freeze`): pointer copies only.
    pub fn freeze(&self) -> Frozen<K, Arc<V>> {
        self.map.freeze()
    }
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> Default for Shared<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> FromIterator<(K, V)> for Shared<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let map = Shared::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

/// The shard `key` lives in.
fn shard_index<K: Hash>(key: &K) -> usize {
    // A fixed (unkeyed) hasher: shard placement must not depend on the
    // process, so that nothing observable ever does. The map takes its
    // bucket from the hash's low bits and its tag from the top seven; the
    // shard comes from the top bits of the hash times an odd constant,
    // which depend on every bit of it.
    let hash = FxBuildHasher.hash_one(key);
    let mixed = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> (64 - SHARDS.trailing_zeros())) as usize
}

/// A `Sharded` map as it was when frozen; immutable and shared.
pub struct Frozen<K, V> {
    shards: Vec<Arc<Map<K, V>>>,
}

impl<K, V> Clone for Frozen<K, V> {
    fn clone(&self) -> Self {
        Frozen { shards: self.shards.clone() }
    }
}

impl<K: Ord, V> Frozen<K, V> {
    /// Every entry, sorted by key (pointers into the frozen shards).
    pub fn sorted(&self) -> Vec<(&K, &V)> {
        let mut all: Vec<(&K, &V)> = self.shards.iter().flat_map(|s| s.iter()).collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Hash + Eq, V> Frozen<K, V> {
    /// The value of `key` as it was when frozen (no lock: nothing changes).
    pub fn get(&self, key: &K) -> Option<&V> {
        self.shards.get(shard_index(key))?.get(key)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.shards.iter().flat_map(|s| s.iter())
    }
}

impl<K, V> Frozen<K, V> {
    /// How many shared pointers the cut copied (one per shard).
    pub fn parts(&self) -> usize {
        self.shards.len()
    }
}

impl<K, V> Entries<K, V> {
    /// How many shared pointers the cut copied (0 when decoded).
    pub fn parts(&self) -> usize {
        match self {
            Entries::Frozen(f) => f.parts(),
            Entries::Decoded(_) => 0,
        }
    }
}

impl<K, V> Values<K, V> {
    /// How many shared pointers the cut copied (0 when decoded).
    pub fn parts(&self) -> usize {
        match self {
            Values::Frozen(f) => f.parts(),
            Values::Shared(f) => f.parts(),
            Values::Decoded(_) => 0,
        }
    }
}

/// A map in snapshot form, encoded as its `(key, value)` pairs in key
/// order (bincode: the same bytes as a `Vec<(K, V)>`).
pub enum Entries<K, V> {
    /// Taken from live state by `Sharded::freeze`.
    Frozen(Frozen<K, V>),
    /// Decoded from a snapshot file, in key order.
    Decoded(Vec<(K, V)>),
}

/// A map in snapshot form encoded as its values only, in key order (the
/// key is a field of the value): the same bytes as a `Vec<V>`.
pub enum Values<K, V> {
    /// Taken from live state by `Sharded::freeze`.
    Frozen(Frozen<K, V>),
    /// Taken from live state by `Shared::freeze`.
    Shared(Frozen<K, Arc<V>>),
    /// Decoded from a snapshot file, in key order.
    Decoded(Vec<V>),
}

impl<K, V> From<Frozen<K, V>> for Entries<K, V> {
    fn from(frozen: Frozen<K, V>) -> Self {
        Entries::Frozen(frozen)
    }
}

impl<K, V> From<Frozen<K, V>> for Values<K, V> {
    fn from(frozen: Frozen<K, V>) -> Self {
        Values::Frozen(frozen)
    }
}

impl<K, V> From<Frozen<K, Arc<V>>> for Values<K, V> {
    fn from(frozen: Frozen<K, Arc<V>>) -> Self {
        Values::Shared(frozen)
    }
}

impl<K, V> Default for Entries<K, V> {
    fn default() -> Self {
        Entries::Decoded(Vec::new())
    }
}

impl<K, V> Default for Values<K, V> {
    fn default() -> Self {
        Values::Decoded(Vec::new())
    }
}

impl<K: Clone, V: Clone> Clone for Entries<K, V> {
    fn clone(&self) -> Self {
        match self {
            Entries::Frozen(f) => Entries::Frozen(f.clone()),
            Entries::Decoded(v) => Entries::Decoded(v.clone()),
        }
    }
}

impl<K: Clone, V: Clone> Clone for Values<K, V> {
    fn clone(&self) -> Self {
        match self {
            Values::Frozen(f) => Values::Frozen(f.clone()),
            Values::Shared(f) => Values::Shared(f.clone()),
            Values::Decoded(v) => Values::Decoded(v.clone()),
        }
    }
}

impl<K: Ord, V> Entries<K, V> {
    /// The entries in key order, borrowed.
    pub fn sorted(&self) -> Vec<(&K, &V)> {
        match self {
            Entries::Frozen(f) => f.sorted(),
            Entries::Decoded(v) => v.iter().map(|(k, v)| (k, v)).collect(),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            Entries::Frozen(f) => f.len(),
            Entries::Decoded(v) => v.len(),
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Ord, V> Values<K, V> {
    /// The values in key order, borrowed.
    pub fn sorted(&self) -> Vec<&V> {
        match self {
            Values::Frozen(f) => f.sorted().into_iter().map(|(_, v)| v).collect(),
            Values::Shared(f) => f.sorted().into_iter().map(|(_, v)| &**v).collect(),
            Values::Decoded(v) => v.iter().collect(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Frozen(f) => f.len(),
            Values::Shared(f) => f.len(),
            Values::Decoded(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Ord + Clone, V: Clone> IntoIterator for Entries<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Entries::Frozen(f) => {
                f.sorted().into_iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>()
            }
            Entries::Decoded(v) => v,
        }
        .into_iter()
    }
}

impl<K: Ord, V: Clone> IntoIterator for Values<K, V> {
    type Item = V;
    type IntoIter = std::vec::IntoIter<V>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Values::Frozen(f) => f.sorted().into_iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
            Values::Shared(f) => {
                f.sorted().into_iter().map(|(_, v)| V::clone(v)).collect::<Vec<_>>()
            }
            Values::Decoded(v) => v,
        }
        .into_iter()
    }
}

impl<K: Ord + Serialize, V: Serialize> Serialize for Entries<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let sorted = self.sorted();
        let mut seq = serializer.serialize_seq(Some(sorted.len()))?;
        for entry in sorted {
            seq.serialize_element(&entry)?;
        }
        seq.end()
    }
}

impl<K: Ord, V: Serialize> Serialize for Values<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let sorted = self.sorted();
        let mut seq = serializer.serialize_seq(Some(sorted.len()))?;
        for value in sorted {
            seq.serialize_element(value)?;
        }
        seq.end()
    }
}

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Entries<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Entries::Decoded)
    }
}

impl<'de, K, V: Deserialize<'de>> Deserialize<'de> for Values<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Values::Decoded)
    }
}

impl<K: Ord, V: PartialEq> PartialEq for Entries<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

impl<K: Ord, V: PartialEq> PartialEq for Values<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

impl<K: Ord + fmt::Debug, V: fmt::Debug> fmt::Debug for Entries<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.sorted()).finish()
    }
}

impl<K: Ord, V: fmt::Debug> fmt::Debug for Values<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.sorted()).finish()
    }
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> Default for Sharded<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> FromIterator<(K, V)> for Sharded<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let map = Sharded::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_update_and_sorted_collect() {
        let map: Sharded<u64, String> = Sharded::new();
        for i in (0..200).rev() {
            map.insert(i, format!("v{i}"));
        }
        map.update(&7, |v| v.push('!'));
        assert_eq!(map.get(&7).as_deref(), Some("v7!"));
        assert_eq!(map.len(), 200);
        let all = map.collect_sorted(|_, _| true);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(map.update(&999, |_| ()).is_none());
    }

    #[test]
    fn sequential_ids_and_similar_strings_spread_over_the_shards() {
        let ids: Sharded<u64, ()> = (0..6400).map(|i| (i, ())).collect();
        let per_shard: Vec<usize> = ids.shards.iter().map(|s| s.read().len()).collect();
        assert!(per_shard.iter().all(|&n| (50..=150).contains(&n)), "{per_shard:?}");
        let emails: Sharded<(u64, String), ()> =
            (0..6400).map(|i| ((2, format!("load{i}@natter.test")), ())).collect();
        let per_shard: Vec<usize> = emails.shards.iter().map(|s| s.read().len()).collect();
        assert!(per_shard.iter().all(|&n| (50..=150).contains(&n)), "{per_shard:?}");
    }

    #[test]
    fn a_frozen_cut_keeps_its_contents_while_writes_go_on() {
        let map: Sharded<u64, String> = (0..100).map(|i| (i, format!("v{i}"))).collect();
        let frozen = map.freeze();
        assert_eq!(frozen.parts(), SHARDS);
        map.update(&1, |v| v.push('!'));
        map.insert(500, "new".into());
        map.remove(&2);
        assert!(map.update(&999, |_| ()).is_none());
        assert_eq!(map.get(&1).as_deref(), Some("v1!"));
        let cut = Entries::from(frozen);
        assert_eq!(cut.len(), 100);
        let sorted = cut.sorted();
        assert_eq!(sorted[1], (&1, &"v1".to_owned()));
        assert_eq!(sorted[2], (&2, &"v2".to_owned()));
        // Frozen and decoded forms encode the same bytes as a plain vector.
        let config = bincode::config::standard();
        let plain: Vec<(u64, String)> = (0..100).map(|i| (i, format!("v{i}"))).collect();
        let bytes = bincode::serde::encode_to_vec(&cut, config).unwrap();
        assert_eq!(bytes, bincode::serde::encode_to_vec(&plain, config).unwrap());
        let (back, _): (Entries<u64, String>, usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, cut);
        // Lookups in the frozen map see it as it was.
        let frozen = map.freeze();
        map.insert(1, "changed".into());
        assert_eq!(frozen.get(&1).map(String::as_str), Some("v1!"));
        assert_eq!(frozen.get(&2), None);
        assert_eq!(frozen.get(&500).map(String::as_str), Some("new"));
        assert_eq!(frozen.iter().count(), map.len());
        let values = Values::from(map.freeze());
        let plain: Vec<String> = map.collect_sorted(|_, _| true).into_iter().map(|e| e.1).collect();
        assert_eq!(
            bincode::serde::encode_to_vec(&values, config).unwrap(),
            bincode::serde::encode_to_vec(&plain, config).unwrap()
        );
    }

    #[test]
    fn shared_values_are_handed_out_and_copied_on_write() {
        let map: Shared<u64, String> = (0..100).map(|i| (i, format!("v{i}"))).collect();
        let held = map.get_shared(&7).unwrap();
        map.update(&7, |v| v.push('!'));
        // The holder keeps the value it was given; the map has the new one.
        assert_eq!(held.as_str(), "v7");
        assert_eq!(map.get(&7).as_deref(), Some("v7!"));
        drop(held);
        let alone = map.get_shared(&8).unwrap();
        let before = Arc::as_ptr(&alone);
        drop(alone);
        map.update(&8, |v| v.push('?'));
        assert_eq!(Arc::as_ptr(&map.get_shared(&8).unwrap()), before, "written in place");
        assert!(map.update(&999, |_| ()).is_none());
        assert_eq!(map.remove(&9).as_deref(), Some("v9"));
        assert_eq!(map.len(), 99);
        // Its snapshot form encodes the same bytes as the values in key order.
        let config = bincode::config::standard();
        let values: Values<u64, String> = map.freeze().into();
        let plain: Vec<String> = map.collect_sorted(|_, _| true).into_iter().map(|e| e.1).collect();
        assert_eq!(values.len(), plain.len());
        assert_eq!(
            bincode::serde::encode_to_vec(&values, config).unwrap(),
            bincode::serde::encode_to_vec(&plain, config).unwrap()
        );
        assert_eq!(values.into_iter().collect::<Vec<_>>(), plain);
    }
}
