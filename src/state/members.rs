//! A channel's subscribers: ascending user ids in one shared vector.
//!
//! Every send to a channel reads the whole set twice under the writer lock
//! (the draft's recipients, for mentions; then `apply`'s rows), and
//! cloning a `Channel` clones it. As a `BTreeSet` each of those walked the
//! tree node by node and copied the ids into a new vector; here a reader
//! takes a pointer copy ([`Members::shared`]) or borrows the slice. A
//! change copies the vector only while someone else holds it (a snapshot
//! cut, an in-flight send), and shifts its tail otherwise: subscriptions
//! change rarely, sends are the hot path.
//!
//! On disk it is what the `BTreeSet` was: a sequence of ids, ascending.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::UserId;

/// Ascending, distinct user ids; see the module docs.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Members(Arc<Vec<UserId>>);

impl Members {
    /// No members.
    pub fn new() -> Self {
        Members::default()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `id` is a member.
    pub fn contains(&self, id: &UserId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    /// The members, ascending.
    pub fn iter(&self) -> std::slice::Iter<'_, UserId> {
        self.0.iter()
    }

    /// The members as a slice, ascending.
    pub fn as_slice(&self) -> &[UserId] {
        &self.0
    }

    /// The same members, sharing this set's vector (a pointer copy).
    pub fn shared(&self) -> Members {
        self.clone()
    }

    /// Adds `id`; whether it was new.
    pub fn insert(&mut self, id: UserId) -> bool {
        match self.0.binary_search(&id) {
            Ok(_) => false,
            Err(at) => {
                Arc::make_mut(&mut self.0).insert(at, id);
                true
            }
        }
    }

    /// Removes `id`; whether it was a member.
    pub fn remove(&mut self, id: &UserId) -> bool {
        match self.0.binary_search(id) {
            Ok(at) => {
                Arc::make_mut(&mut self.0).remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Adds every id of `ids` (in any order, repeats allowed): the new ids
    /// sorted, then one merge with the members (linear in both), not one
    /// shift per id nor a sort of the whole.
    pub fn extend(&mut self, ids: impl IntoIterator<Item = UserId>) {
        let mut new: Vec<UserId> = ids.into_iter().collect();
        new.sort_unstable();
        new.dedup();
        new.retain(|id| !self.contains(id));
        if new.is_empty() {
            return;
        }
        let mut merged = Vec::with_capacity(self.0.len() + new.len());
        let (mut old, mut added) = (self.0.iter().peekable(), new.into_iter().peekable());
        while let (Some(a), Some(b)) = (old.peek(), added.peek()) {
            if **a < *b {
                merged.push(**a);
                old.next();
            } else {
                merged.push(*b);
                added.next();
            }
        }
        merged.extend(old.copied());
        merged.extend(added);
        self.0 = Arc::new(merged);
    }

    /// Removes every member.
    pub fn clear(&mut self) {
        if !self.0.is_empty() {
            self.0 = Arc::default();
        }
    }
}

impl FromIterator<UserId> for Members {
    fn from_iter<I: IntoIterator<Item = UserId>>(ids: I) -> Self {
        let mut members = Members::new();
        members.extend(ids);
        members
    }
}

impl<'a> IntoIterator for &'a Members {
    type Item = &'a UserId;
    type IntoIter = std::slice::Iter<'a, UserId>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Members {
    /// Any order and repeats are accepted, as a `BTreeSet` accepted them.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ids = Vec::<UserId>::deserialize(deserializer)?;
        Ok(ids.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Random inserts and removals agree with a `BTreeSet` at every step.
    #[test]
    fn behaves_as_a_btree_set() {
        let mut members = Members::new();
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = UserId(x % 64);
            match x % 5 {
                0 | 1 => assert_eq!(members.insert(id), model.insert(id), "step {step}"),
                2 => assert_eq!(members.remove(&id), model.remove(&id), "step {step}"),
                3 => {
                    let more = [id, UserId((x >> 8) % 64), id];
                    members.extend(more);
                    model.extend(more);
                }
                _ => assert_eq!(members.contains(&id), model.contains(&id), "step {step}"),
            }
            assert!(members.iter().eq(model.iter()), "step {step}");
            assert_eq!(members.len(), model.len());
        }
        members.clear();
        assert!(members.is_empty());
    }

    /// A change to one copy leaves a shared copy as it was.
    #[test]
    fn a_shared_copy_keeps_its_members() {
        let mut members: Members = [UserId(3), UserId(1)].into_iter().collect();
        let before = members.shared();
        members.insert(UserId(2));
        members.remove(&UserId(3));
        assert_eq!(before.as_slice(), &[UserId(1), UserId(3)]);
        assert_eq!(members.as_slice(), &[UserId(1), UserId(2)]);
    }

    /// The encoding is the `BTreeSet`'s, both ways; decoding sorts and
    /// drops repeats.
    #[test]
    fn encodes_as_a_btree_set() {
        let config = bincode::config::standard();
        let set: BTreeSet<UserId> = [UserId(9), UserId(2), UserId(5)].into_iter().collect();
        let members: Members = set.iter().copied().collect();
        let ours = bincode::serde::encode_to_vec(&members, config).unwrap();
        assert_eq!(ours, bincode::serde::encode_to_vec(&set, config).unwrap());
        let unsorted =
            bincode::serde::encode_to_vec(vec![UserId(5), UserId(2), UserId(5)], config).unwrap();
        let (decoded, _): (Members, usize) =
            bincode::serde::decode_from_slice(&unsorted, config).unwrap();
        assert_eq!(decoded.as_slice(), &[UserId(2), UserId(5)]);
    }
}
