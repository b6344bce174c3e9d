//! Shared names: one `Arc<str>` per distinct string, so the many messages
//! sent through the same client hold a pointer each rather than a copy of
//! its name (#7, the compact message store).
//!
//! Not snapshotted and not observable: `State::from_image` re-interns as
//! it rebuilds, and a name is the same string whichever copy holds it.
//! Names are never forgotten (there are few distinct ones).

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

/// A set of shared names.
#[derive(Default)]
pub struct Interner {
    names: Mutex<HashSet<Arc<str>>>,
}

impl Interner {
    /// The shared copy of `name` (which becomes the shared copy if new).
    pub fn intern(&self, name: &Arc<str>) -> Arc<str> {
        let mut names = self.names.lock();
        match names.get(&**name) {
            Some(shared) => Arc::clone(shared),
            None => {
                names.insert(Arc::clone(name));
                Arc::clone(name)
            }
        }
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.names.lock().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_share_one_copy() {
        let names = Interner::default();
        let a = names.intern(&Arc::from("website"));
        let b = names.intern(&Arc::from("website"));
        let c = names.intern(&Arc::from("ZulipPython"));
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &c));
        assert_eq!(names.len(), 2);
    }
}
