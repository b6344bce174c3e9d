//! Uploaded files: the record of each attachment (who uploaded it, its
//! name, size and type, where it is stored, which messages reference it).
//! The bytes are in the file store (`crate::files`), never here.
//!
//! An attachment's `path_id` is `<realm_id>/<ab>/<token>/<name>`: `ab` and
//! `token` are random (chosen by the server), `name` the sanitised display
//! name. Its bytes are stored under the key `<realm_id>/<ab>/<token>`, so
//! nothing the client sends reaches a stored file's path.
//!
//! Held in one copy-on-write map: the snapshot cut clones an `Arc`, and the
//! first write after it copies the map (attachments are far fewer than
//! messages).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::groups::GroupSetting;
use super::ids::{MessageId, RealmId, UserId};

/// One uploaded file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// Its id (`GET /attachments`' `id`).
    pub id: u64,
    /// The uploader's realm.
    pub realm: RealmId,
    /// The uploader, who owns it.
    pub owner: UserId,
    /// `<realm_id>/<ab>/<token>/<name>`: the URL is `/user_uploads/<path_id>`.
    pub path_id: String,
    /// The sanitised display name (the last segment of `path_id`).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// The media type the server serves it with.
    pub content_type: String,
    /// Upload time, UNIX seconds.
    pub create_time: i64,
    /// Messages that reference it and were allowed to claim it, ascending
    /// (some may since have been deleted: readers check).
    pub messages: Vec<MessageId>,
}

impl Attachment {
    /// The store key of its bytes: `path_id` without the display name.
    pub fn store_key(&self) -> &str {
        self.path_id.rsplit_once('/').map_or(&self.path_id, |(key, _)| key)
    }
}

/// A custom emoji of a realm (its image is in the file store).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmEmoji {
    /// Its id (the `emoji_code` of a `realm_emoji` reaction).
    pub id: u64,
    /// The realm.
    pub realm: RealmId,
    /// Its name (`:name:`).
    pub name: String,
    /// Who added it.
    pub author: UserId,
    /// The store key of its image.
    pub key: String,
    /// The image's media type.
    pub content_type: String,
    /// The image's size in bytes.
    pub size: u64,
    /// Deactivated emoji stay listed (old messages and reactions show them)
    /// but cannot be used.
    pub deactivated: bool,
}

/// A user's uploaded avatar image (a user without one shows their
/// gravatar).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Avatar {
    /// The store key of the image (a PNG of 100 × 100 pixels).
    pub key: String,
    /// The image's size in bytes.
    pub size: u64,
    /// The store key of the medium image (a PNG of 500 × 500 pixels).
    pub medium_key: String,
    /// Its size in bytes.
    pub medium_size: u64,
}

impl Avatar {
    /// The size of the image stored at `key` (either of the two), if it
    /// is one of this avatar's.
    pub fn size_of(&self, key: &str) -> Option<u64> {
        if key == self.key {
            Some(self.size)
        } else if key == self.medium_key {
            Some(self.medium_size)
        } else {
            None
        }
    }
}

/// The thumbnail of an uploaded image (a WebP, `crate::thumbnails`).
/// Recorded with the upload from the image's header (its dimensions and
/// type), and again once the WebP is made after the upload's reply; until
/// then `key` is empty and the thumbnail's URL serves the original.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thumbnail {
    /// The store key of the WebP; empty while it is not made yet.
    pub key: String,
    /// The WebP's size in bytes.
    pub size: u64,
    /// The original image's width in pixels.
    pub width: u32,
    /// The original image's height in pixels.
    pub height: u32,
    /// The original's media type, from its bytes.
    pub content_type: String,
}

impl Thumbnail {
    /// Whether the WebP is made and stored.
    pub fn is_made(&self) -> bool {
        !self.key.is_empty()
    }
}

/// A realm's settings about files, where they differ from Zulip's
/// defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmFileSettings {
    /// Zulip's `avatar_changes_disabled`: members other than
    /// administrators may not change their avatar.
    pub avatar_changes_disabled: bool,
    /// Who may add custom emoji; `None` = Zulip's default, `role:members`.
    pub can_add_custom_emoji_group: Option<GroupSetting>,
}

/// What the files block of a snapshot carries after the `FilesImage`
/// (since `FORMAT_VERSION` 11): avatars, the realms' file settings and
/// the thumbnails of images.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesExtra {
    /// Uploaded avatars, by user.
    pub avatars: Arc<BTreeMap<UserId, Avatar>>,
    /// Realms' file settings that differ from the defaults.
    pub realms: Arc<BTreeMap<RealmId, RealmFileSettings>>,
    /// Thumbnails of image attachments, by attachment id.
    pub thumbnails: Arc<BTreeMap<u64, Thumbnail>>,
}

/// The attachments of every realm.
#[derive(Default)]
pub struct Files {
    inner: RwLock<Inner>,
}

#[derive(Clone, Default)]
struct Inner {
    /// By id.
    by_id: Arc<BTreeMap<u64, Attachment>>,
    /// Derived: id by `path_id`.
    by_path: HashMap<String, u64>,
    /// The next free attachment id.
    next_id: u64,
    /// Custom emoji by id.
    emoji: Arc<BTreeMap<u64, RealmEmoji>>,
    /// The next free custom emoji id.
    next_emoji_id: u64,
    /// Avatars and realm settings.
    extra: FilesExtra,
}

/// The snapshot form of `Files`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesImage {
    /// The next free attachment id.
    pub next_id: u64,
    /// Every attachment, by id.
    pub attachments: Arc<BTreeMap<u64, Attachment>>,
    /// The next free custom emoji id.
    pub next_emoji_id: u64,
    /// Every custom emoji, by id.
    pub emoji: Arc<BTreeMap<u64, RealmEmoji>>,
    /// Encoded after the image, in the same block (`persist::snapshot`).
    #[serde(skip)]
    pub extra: FilesExtra,
}

impl Files {
    /// The id the next attachment gets (ids start at 1).
    pub fn next_id(&self) -> u64 {
        self.inner.read().next_id.max(1)
    }

    /// The attachment with this id.
    pub fn get(&self, id: u64) -> Option<Attachment> {
        self.inner.read().by_id.get(&id).cloned()
    }

    /// The attachment at this `path_id`.
    pub fn by_path(&self, path_id: &str) -> Option<Attachment> {
        let inner = self.inner.read();
        inner.by_path.get(path_id).and_then(|id| inner.by_id.get(id)).cloned()
    }

    /// Every attachment, by id.
    pub fn all(&self) -> Vec<Attachment> {
        self.inner.read().by_id.values().cloned().collect()
    }

    /// A user's attachments, by id.
    pub fn owned_by(&self, owner: UserId) -> Vec<Attachment> {
        self.inner.read().by_id.values().filter(|a| a.owner == owner).cloned().collect()
    }

    /// Bytes stored for a user's attachments.
    pub fn used_by_user(&self, owner: UserId) -> u64 {
        self.inner.read().by_id.values().filter(|a| a.owner == owner).map(|a| a.size).sum()
    }

    /// Bytes stored for a realm's attachments.
    pub fn used_by_realm(&self, realm: RealmId) -> u64 {
        self.inner.read().by_id.values().filter(|a| a.realm == realm).map(|a| a.size).sum()
    }

    /// Every recorded store key (start-up reconciliation), each with its
    /// attachment's id (`None` for a custom emoji's or an avatar's image).
    pub fn store_keys(&self) -> Vec<(Option<u64>, String)> {
        let inner = self.inner.read();
        let attachments = inner.by_id.values().map(|a| (Some(a.id), a.store_key().to_owned()));
        let emoji = inner.emoji.values().map(|e| (None, e.key.clone()));
        let avatars = inner
            .extra
            .avatars
            .values()
            .flat_map(|a| [(None, a.key.clone()), (None, a.medium_key.clone())]);
        let thumbnails = inner
            .extra
            .thumbnails
            .iter()
            .filter(|(_, t)| t.is_made())
            .map(|(id, t)| (Some(*id), t.key.clone()));
        attachments.chain(emoji).chain(avatars).chain(thumbnails).collect()
    }

    /// The id the next custom emoji gets (ids start at 1).
    pub fn next_emoji_id(&self) -> u64 {
        self.inner.read().next_emoji_id.max(1)
    }

    /// A realm's custom emoji, deactivated ones included, by id.
    pub fn realm_emoji(&self, realm: RealmId) -> Vec<RealmEmoji> {
        self.inner.read().emoji.values().filter(|e| e.realm == realm).cloned().collect()
    }

    /// A realm's active custom emoji called `name`.
    pub fn active_emoji(&self, realm: RealmId, name: &str) -> Option<RealmEmoji> {
        let inner = self.inner.read();
        inner.emoji.values().find(|e| e.realm == realm && !e.deactivated && e.name == name).cloned()
    }

    /// The custom emoji with this id.
    pub fn emoji(&self, id: u64) -> Option<RealmEmoji> {
        self.inner.read().emoji.get(&id).cloned()
    }

    /// The custom emoji whose image has this store key.
    pub fn emoji_by_key(&self, key: &str) -> Option<RealmEmoji> {
        self.inner.read().emoji.values().find(|e| e.key == key).cloned()
    }

    /// A user's uploaded avatar, if any.
    pub fn avatar(&self, user: UserId) -> Option<Avatar> {
        let inner = self.inner.read();
        if inner.extra.avatars.is_empty() {
            return None;
        }
        inner.extra.avatars.get(&user).cloned()
    }

    /// Every uploaded avatar, by user (shared: a later change copies).
    pub fn avatars(&self) -> Arc<BTreeMap<UserId, Avatar>> {
        Arc::clone(&self.inner.read().extra.avatars)
    }

    /// The user one of whose avatar images has this store key.
    pub fn avatar_by_key(&self, key: &str) -> Option<(UserId, Avatar)> {
        let inner = self.inner.read();
        let found = inner.extra.avatars.iter().find(|(_, a)| a.size_of(key).is_some());
        found.map(|(u, a)| (*u, a.clone()))
    }

    /// Sets (or, with `None`, removes) a user's avatar (`apply` only); the
    /// one it replaces.
    pub fn set_avatar(&self, user: UserId, avatar: Option<Avatar>) -> Option<Avatar> {
        let mut inner = self.inner.write();
        let avatars = Arc::make_mut(&mut inner.extra.avatars);
        match avatar {
            Some(avatar) => avatars.insert(user, avatar),
            None => avatars.remove(&user),
        }
    }

    /// The thumbnail of attachment `id`, if it has one.
    pub fn thumbnail(&self, id: u64) -> Option<Thumbnail> {
        let inner = self.inner.read();
        if inner.extra.thumbnails.is_empty() {
            return None;
        }
        inner.extra.thumbnails.get(&id).cloned()
    }

    /// The attachments after `after` (ids in order) whose thumbnail is
    /// recorded but not made yet.
    pub fn thumbnails_to_make(&self, after: u64) -> Vec<u64> {
        let inner = self.inner.read();
        let pending = inner.extra.thumbnails.range(after.saturating_add(1)..);
        pending.filter(|(_, t)| !t.is_made()).map(|(id, _)| *id).collect()
    }

    /// Records the thumbnail of attachment `id` (`apply` only).
    pub fn set_thumbnail(&self, id: u64, thumbnail: Thumbnail) {
        let mut inner = self.inner.write();
        assert!(inner.by_id.contains_key(&id), "apply: no attachment {id}");
        Arc::make_mut(&mut inner.extra.thumbnails).insert(id, thumbnail);
    }

    /// A realm's file settings.
    pub fn realm_settings(&self, realm: RealmId) -> RealmFileSettings {
        self.inner.read().extra.realms.get(&realm).cloned().unwrap_or_default()
    }

    /// Replaces a realm's file settings (`apply` only).
    pub fn set_realm_settings(&self, realm: RealmId, settings: RealmFileSettings) {
        let mut inner = self.inner.write();
        let realms = Arc::make_mut(&mut inner.extra.realms);
        if settings == RealmFileSettings::default() {
            realms.remove(&realm);
        } else {
            realms.insert(realm, settings);
        }
    }

    /// Records a new custom emoji (`apply` only).
    pub fn insert_emoji(&self, emoji: RealmEmoji) {
        let mut inner = self.inner.write();
        assert!(!inner.emoji.contains_key(&emoji.id), "apply: emoji {} exists", emoji.id);
        inner.next_emoji_id = inner.next_emoji_id.max(emoji.id + 1);
        Arc::make_mut(&mut inner.emoji).insert(emoji.id, emoji);
    }

    /// Deactivates a custom emoji (`apply` only); its realm.
    pub fn deactivate_emoji(&self, id: u64) -> Option<RealmId> {
        let mut inner = self.inner.write();
        let emoji = Arc::make_mut(&mut inner.emoji).get_mut(&id)?;
        emoji.deactivated = true;
        Some(emoji.realm)
    }

    /// Records a new attachment (`apply` only).
    pub fn insert(&self, attachment: Attachment) {
        let mut inner = self.inner.write();
        assert!(
            !inner.by_id.contains_key(&attachment.id),
            "apply: attachment {} exists",
            attachment.id
        );
        inner.next_id = inner.next_id.max(attachment.id + 1);
        inner.by_path.insert(attachment.path_id.clone(), attachment.id);
        Arc::make_mut(&mut inner.by_id).insert(attachment.id, attachment);
    }

    /// Removes an attachment and its thumbnail (`apply` only).
    pub fn remove(&self, id: u64) -> Option<Attachment> {
        let mut inner = self.inner.write();
        let removed = Arc::make_mut(&mut inner.by_id).remove(&id)?;
        inner.by_path.remove(&removed.path_id);
        if inner.extra.thumbnails.contains_key(&id) {
            Arc::make_mut(&mut inner.extra.thumbnails).remove(&id);
        }
        Some(removed)
    }

    /// Notes that `message` references attachment `id` (`apply` only);
    /// the attachment as it now is.
    pub fn link(&self, id: u64, message: MessageId) -> Option<Attachment> {
        let mut inner = self.inner.write();
        let attachment = Arc::make_mut(&mut inner.by_id).get_mut(&id)?;
        if let Err(at) = attachment.messages.binary_search(&message) {
            attachment.messages.insert(at, message);
        }
        Some(attachment.clone())
    }

    /// The snapshot cut: shares the map.
    pub fn image(&self) -> FilesImage {
        let inner = self.inner.read();
        FilesImage {
            next_id: inner.next_id,
            attachments: Arc::clone(&inner.by_id),
            next_emoji_id: inner.next_emoji_id,
            emoji: Arc::clone(&inner.emoji),
            extra: inner.extra.clone(),
        }
    }

    /// Rebuilt from a snapshot.
    pub fn from_image(image: FilesImage) -> Self {
        let by_path = image.attachments.values().map(|a| (a.path_id.clone(), a.id)).collect();
        Files {
            inner: RwLock::new(Inner {
                by_id: image.attachments,
                by_path,
                next_id: image.next_id,
                emoji: image.emoji,
                next_emoji_id: image.next_emoji_id,
                extra: image.extra,
            }),
        }
    }
}

impl FilesImage {
    /// Whether it holds nothing (a state with no upload yet).
    pub fn is_empty(&self) -> bool {
        self.next_id == 0
            && self.attachments.is_empty()
            && self.next_emoji_id == 0
            && self.emoji.is_empty()
            && self.extra == FilesExtra::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(id: u64, owner: u64) -> Attachment {
        Attachment {
            id,
            realm: RealmId(1),
            owner: UserId(owner),
            path_id: format!("1/ab/token{id}/f.txt"),
            name: "f.txt".into(),
            size: 10 * id,
            content_type: "text/plain".into(),
            create_time: 0,
            messages: Vec::new(),
        }
    }

    #[test]
    fn records_links_and_images() {
        let files = Files::default();
        assert_eq!(files.next_id(), 1);
        files.insert(attachment(1, 7));
        files.insert(attachment(2, 8));
        assert_eq!(files.next_id(), 3);
        assert_eq!(files.by_path("1/ab/token2/f.txt").unwrap().id, 2);
        assert_eq!(files.get(1).unwrap().store_key(), "1/ab/token1");
        let cut = files.image();
        files.link(1, MessageId(5));
        files.link(1, MessageId(3));
        files.link(1, MessageId(5));
        assert_eq!(files.get(1).unwrap().messages, vec![MessageId(3), MessageId(5)]);
        assert!(cut.attachments[&1].messages.is_empty(), "the cut is not changed");
        assert_eq!(files.used_by_user(UserId(8)), 20);
        assert_eq!(files.used_by_realm(RealmId(1)), 30);
        files.remove(2);
        assert!(files.by_path("1/ab/token2/f.txt").is_none());
        let back = Files::from_image(files.image());
        assert_eq!(back.image(), files.image());
        assert_eq!(back.by_path("1/ab/token1/f.txt").unwrap().messages.len(), 2);
        assert_eq!(back.next_id(), 3, "ids are not reused");
    }
}
