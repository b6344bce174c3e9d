//! Channel folders: named groups of a realm's channels that clients show
//! together in their sidebars (a channel's `folder_id`). Administrators
//! create, rename, describe, archive and reorder them; everyone in the
//! realm sees them. `FolderChange` is the one mutation type of this area
//! (`Mutation::ChannelFolder`); the snapshot carries it after the widgets
//! part (format 16).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::ids::{RealmId, UserId};

/// One channel folder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelFolder {
    /// Id, unique per server.
    pub id: u64,
    /// The realm it belongs to.
    pub realm: RealmId,
    /// Name, unique in the realm (case-insensitively).
    pub name: String,
    /// Description (Markdown source).
    pub description: String,
    /// The description rendered to HTML.
    pub rendered_description: String,
    /// Who created it.
    pub creator: Option<UserId>,
    /// When, in seconds since the epoch.
    pub date_created: i64,
    /// Archived folders are hidden from `GET /channel_folders` by default.
    pub is_archived: bool,
    /// Display position: lower first (its id at creation, its index in
    /// the list after a reorder, as in Zulip).
    pub order: u64,
}

/// Every change this area makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FolderChange {
    /// A folder is created (id decided by the handler).
    Create(ChannelFolder),
    /// A folder's name, description or archived state changes; `None`
    /// leaves that part as it is.
    Update {
        /// Whose.
        realm: RealmId,
        /// Which.
        id: u64,
        /// The new name.
        name: Option<String>,
        /// The new description and its rendering.
        description: Option<(String, String)>,
        /// Archived or not.
        is_archived: Option<bool>,
    },
    /// The realm's folders take these positions (every folder's id, once).
    Reorder {
        /// Whose.
        realm: RealmId,
        /// The ids, first shown first.
        order: Vec<u64>,
    },
}

/// Each realm's folders, by id (realms with none are absent).
type Folders = BTreeMap<RealmId, Vec<ChannelFolder>>;

/// This area's data. One field of `State`. Folders are few and rarely
/// changed: one map behind one lock, copied on write, so the snapshot cut
/// copies one pointer.
#[derive(Default)]
pub struct FolderState {
    /// The folders; a change replaces the map (`Arc::make_mut`).
    by_realm: RwLock<Arc<Folders>>,
    /// The next free folder id.
    next_id: AtomicU64,
}

/// `FolderState` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FoldersImage {
    /// Each realm's folders.
    pub by_realm: Arc<Folders>,
    /// The next free folder id.
    pub next_id: u64,
}

impl FoldersImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        1
    }
}

impl FolderState {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> FoldersImage {
        FoldersImage {
            by_realm: self.by_realm.read().clone(),
            next_id: self.next_id.load(Ordering::Acquire),
        }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: FoldersImage) -> Self {
        FolderState {
            by_realm: RwLock::new(image.by_realm),
            next_id: AtomicU64::new(image.next_id),
        }
    }

    /// The id the next folder gets (ids start at 1).
    pub fn peek(&self) -> u64 {
        self.next_id.load(Ordering::Acquire).max(1)
    }

    /// A realm's folders in display order (`order`, then id).
    pub fn of(&self, realm: RealmId) -> Vec<ChannelFolder> {
        let mut folders = self.by_realm.read().get(&realm).cloned().unwrap_or_default();
        folders.sort_by_key(|f| (f.order, f.id));
        folders
    }

    /// One folder of `realm`.
    pub fn get(&self, realm: RealmId, id: u64) -> Option<ChannelFolder> {
        self.by_realm.read().get(&realm)?.iter().find(|f| f.id == id).cloned()
    }

    /// The folder of `realm` named `name` (case-insensitively).
    pub fn by_name(&self, realm: RealmId, name: &str) -> Option<ChannelFolder> {
        let wanted = name.to_lowercase();
        let folders = self.by_realm.read();
        folders.get(&realm)?.iter().find(|f| f.name.to_lowercase() == wanted).cloned()
    }

    /// Applies one change (apply only). Panics on a change the handler
    /// should have refused: apply is deterministic over checked input.
    pub(crate) fn apply(&self, change: &FolderChange) {
        let mut guard = self.by_realm.write();
        let all = Arc::make_mut(&mut guard);
        fn list<'a>(all: &'a mut Folders, realm: &RealmId) -> &'a mut Vec<ChannelFolder> {
            all.get_mut(realm).unwrap_or_else(|| panic!("apply: no folders in realm {realm}"))
        }
        match change {
            FolderChange::Create(folder) => {
                self.next_id.fetch_max(folder.id + 1, Ordering::AcqRel);
                all.entry(folder.realm).or_default().push(folder.clone());
            }
            FolderChange::Update { realm, id, name, description, is_archived } => {
                let folder = list(all, realm).iter_mut().find(|f| f.id == *id);
                let folder = folder.unwrap_or_else(|| panic!("apply: no folder {id}"));
                if let Some(name) = name {
                    folder.name = name.clone();
                }
                if let Some((source, rendered)) = description {
                    folder.description = source.clone();
                    folder.rendered_description = rendered.clone();
                }
                if let Some(archived) = is_archived {
                    folder.is_archived = *archived;
                }
            }
            FolderChange::Reorder { realm, order } => {
                let folders = list(all, realm);
                assert_eq!(order.len(), folders.len(), "apply: reorder needs every folder");
                for folder in folders.iter_mut() {
                    let at = order.iter().position(|id| *id == folder.id);
                    let at = at.unwrap_or_else(|| panic!("apply: {} unplaced", folder.id));
                    folder.order = at as u64;
                }
            }
        }
    }
}
