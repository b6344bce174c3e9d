//! `Sharded<K, V>`: a hash map split across several `parking_lot` locks.
//!
//! Readers and the single writer (`apply`) touch one shard at a time, so a
//! long read of one user's data never blocks another user's request. Every
//! critical section is a few map operations: no I/O, no waiting, no
//! allocation-heavy work. That is what makes a thread-blocking lock
//! acceptable inside may coroutines (may's rule is "no blocking calls"; a
//! lock held for nanoseconds by another worker is not one).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash};

use parking_lot::RwLock;

/// Number of shards. A power of two larger than any realistic worker count.
const SHARDS: usize = 64;

/// A hash map split into `SHARDS` independently locked parts.
pub struct Sharded<K, V> {
    /// One lock per shard; a key always lives in shard `hash(key) % SHARDS`.
    shards: Box<[RwLock<HashMap<K, V>>]>,
}

impl<K: Hash + Eq + Ord + Clone, V: Clone> Sharded<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Sharded { shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect() }
    }

    fn shard(&self, key: &K) -> &RwLock<HashMap<K, V>> {
        // A fixed (unkeyed) hasher: shard placement must not depend on the
        // process, so that nothing observable ever does.
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        &self.shards[(hash as usize) % SHARDS]
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
        self.shard(&key).write().insert(key, value);
    }

    /// Runs `f` on the value of `key` under a write lock; `None` if absent.
    pub fn update<R>(&self, key: &K, f: impl FnOnce(&mut V) -> R) -> Option<R> {
        self.shard(key).write().get_mut(key).map(f)
    }

    /// Runs `f` on the value of `key`, inserting `V::default()` first if absent.
    pub fn upsert<R>(&self, key: K, f: impl FnOnce(&mut V) -> R) -> R
    where
        V: Default,
    {
        let mut shard = self.shard(&key).write();
        f(shard.entry(key).or_default())
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &K) -> Option<V> {
        self.shard(key).write().remove(key)
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
}
