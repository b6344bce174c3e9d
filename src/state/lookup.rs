//! Derived lists that answer the narrow operators the recipient and topic
//! indexes (`indexes`) and each user's flag sets (`user_messages`) do
//! not: message ids by sender, each user's direct messages, each realm's
//! messages with a link, an image, an attachment or a reaction, and each
//! realm's messages by word stem (`words`) for `search`.
//!
//! Never snapshotted, never logged. `apply` keeps them current through
//! `add` / `remove` / `replace` — after the message itself changed in
//! `State::messages` — and a restart rebuilds them from the messages in
//! the background (`State::build_lookup`), `pending` until done: readers
//! then walk the other indexes and test each message instead.
//!
//! Exact, not approximate: a message is in a list if and only if its
//! current text, reactions and participants put it there, so a reader may
//! use a list to exclude (a negated term) as well as to include. The
//! background build keeps that while `apply` runs: it adds each message
//! under the message's shard read lock, so a change `apply` makes to that
//! message lands either wholly before (the build sees the new message) or
//! wholly after (`apply`'s hook removes what the build added).
//!
//! Word lists are keyed by a 64-bit hash of (realm, stem) rather than the
//! stem's text: eight bytes a key instead of a string, and a list holding
//! one id (most words are rare) is that id, not a chunked set. Two stems
//! with one hash would share a list — a superset of each, which readers
//! only ever use to find candidates, testing every candidate against the
//! narrow itself; negated `search` terms never exclude by a word list.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};

use rustc_hash::{FxHashSet, FxHasher};

use super::ids::{MessageId, RealmId, UserId};
use super::messages::{Destination, Message};
use super::words;
use super::{IdSet, Sharded};

/// A content feature `has:` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// A link in the rendered content.
    Link,
    /// An inline image, or a link to an uploaded image.
    Image,
    /// A link to an uploaded file.
    Attachment,
    /// At least one emoji reaction.
    Reaction,
}

impl Feature {
    /// Every feature.
    pub const ALL: [Feature; 4] =
        [Feature::Link, Feature::Image, Feature::Attachment, Feature::Reaction];

    /// Whether `message` has the feature now.
    pub fn of(self, message: &Message) -> bool {
        let rendered = message.rendered();
        match self {
            Feature::Link => rendered.contains("<a "),
            Feature::Image => {
                rendered.contains("<img ")
                    || rendered.contains("message_inline_image")
                    || links_uploaded_image(rendered)
            }
            Feature::Attachment => rendered.contains("/user_uploads/"),
            Feature::Reaction => !message.reactions().is_empty(),
        }
    }
}

/// Whether rendered HTML links an uploaded file whose name is an image's
/// (`/user_uploads/…/<name>.png` and the like, up to the link's quote).
fn links_uploaded_image(rendered: &str) -> bool {
    const IMAGE_EXTENSIONS: [&str; 6] = [".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif"];
    rendered.match_indices("/user_uploads/").any(|(at, _)| {
        let rest = &rendered[at..];
        let end = rest.find(['"', '\'', '<', '>', ' ', '?', '#']).unwrap_or(rest.len());
        let link = rest[..end].to_ascii_lowercase();
        IMAGE_EXTENSIONS.iter().any(|ext| link.ends_with(ext))
    })
}

/// The key of a stem's word list in `realm`.
pub fn word_key(realm: RealmId, stem: &str) -> u64 {
    let mut h = FxHasher::default();
    realm.hash(&mut h);
    stem.hash(&mut h);
    h.finish()
}

/// The distinct stems of a message's content and topic (what its word
/// lists are).
pub fn message_stems(message: &Message) -> FxHashSet<String> {
    let mut stems: FxHashSet<String> =
        words::search_words(message.content()).map(|(_, w)| words::stem(w)).collect();
    if let Destination::Channel { topic, .. } = &message.destination {
        stems.extend(words::search_words(topic).map(|(_, w)| words::stem(w)));
    }
    stems
}

/// The ids of one word: one id inline (most words), or a chunked set.
#[derive(Clone, Debug)]
pub enum Postings {
    /// Exactly one message.
    One(MessageId),
    /// Any number (possibly none).
    Many(IdSet),
}

impl Default for Postings {
    fn default() -> Self {
        Postings::Many(IdSet::new())
    }
}

impl Postings {
    fn insert(&mut self, id: MessageId) {
        match self {
            Postings::Many(set) if set.is_empty() => *self = Postings::One(id),
            Postings::Many(set) => {
                set.insert(id);
            }
            Postings::One(one) if *one == id => {}
            Postings::One(one) => {
                let mut set = IdSet::new();
                set.insert(*one);
                set.insert(id);
                *self = Postings::Many(set);
            }
        }
    }

    /// Removes `id`; whether the list is now empty.
    fn remove(&mut self, id: MessageId) -> bool {
        match self {
            Postings::One(one) => *one == id,
            Postings::Many(set) => {
                set.remove(id);
                set.is_empty()
            }
        }
    }

    /// The ids as a set.
    pub fn to_set(&self) -> IdSet {
        match self {
            Postings::One(id) => {
                let mut set = IdSet::new();
                set.insert(*id);
                set
            }
            Postings::Many(set) => set.clone(),
        }
    }
}

/// The lists; see the module comment.
#[derive(Default)]
pub struct Lookup {
    /// Set while the lists do not cover every stored message (after a
    /// restart, until `State::build_lookup` ends).
    pending: AtomicBool,
    /// Message ids by sender.
    by_sender: Sharded<UserId, IdSet>,
    /// Direct message ids by participant.
    direct: Sharded<UserId, IdSet>,
    /// Message ids by realm and `has:` feature.
    features: Sharded<(RealmId, Feature), IdSet>,
    /// Message ids by `word_key(realm, stem)`.
    words: Sharded<u64, Postings>,
}

impl Lookup {
    /// Whether the lists cover every stored message.
    pub fn ready(&self) -> bool {
        !self.pending.load(Ordering::Acquire)
    }

    /// Marks the lists as not covering every message (messages were
    /// stored in bulk without them).
    pub(crate) fn mark_pending(&self) {
        self.pending.store(true, Ordering::Release);
    }

    /// Marks the lists as covering every message.
    pub(crate) fn mark_ready(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// Adds a stored message to every list it belongs in.
    pub fn add(&self, message: &Message) {
        let id = message.id;
        self.by_sender.upsert(message.sender, |ids| ids.insert(id));
        if let Destination::Direct { participants } = &message.destination {
            for user in participants.iter() {
                self.direct.upsert(*user, |ids| ids.insert(id));
            }
        }
        for feature in Feature::ALL {
            if feature.of(message) {
                self.features.upsert((message.realm, feature), |ids| ids.insert(id));
            }
        }
        for stem in message_stems(message) {
            self.words.upsert(word_key(message.realm, &stem), |p| p.insert(id));
        }
    }

    /// Removes a message (as it was when added) from every list.
    pub fn remove(&self, message: &Message) {
        let id = message.id;
        self.by_sender.update(&message.sender, |ids| ids.remove(id));
        if let Destination::Direct { participants } = &message.destination {
            for user in participants.iter() {
                self.direct.update(user, |ids| ids.remove(id));
            }
        }
        for feature in Feature::ALL {
            self.features.update(&(message.realm, feature), |ids| ids.remove(id));
        }
        self.remove_words(message);
    }

    fn remove_words(&self, message: &Message) {
        for stem in message_stems(message) {
            let key = word_key(message.realm, &stem);
            if self.words.update(&key, |p| p.remove(message.id)) == Some(true) {
                self.words.remove(&key);
            }
        }
    }

    /// A stored message changed from `old` to `new` (an edit, a move, a
    /// reaction).
    pub fn replace(&self, old: &Message, new: &Message) {
        let id = new.id;
        for feature in Feature::ALL {
            let key = (new.realm, feature);
            match (feature.of(old), feature.of(new)) {
                (false, true) => self.features.upsert(key, |ids| ids.insert(id)),
                (true, false) => self.features.update(&key, |ids| ids.remove(id)).unwrap_or(false),
                _ => false,
            };
        }
        let same_text = old.content() == new.content()
            && old.destination.channel_topic().map(|(_, t)| t)
                == new.destination.channel_topic().map(|(_, t)| t);
        if !same_text {
            self.remove_words(old);
            for stem in message_stems(new) {
                self.words.upsert(word_key(new.realm, &stem), |p| p.insert(id));
            }
        }
    }

    /// The messages `sender` sent.
    pub fn sent_by(&self, sender: UserId) -> IdSet {
        self.by_sender.get(&sender).unwrap_or_default()
    }

    /// The direct messages `user` takes part in.
    pub fn direct_of(&self, user: UserId) -> IdSet {
        self.direct.get(&user).unwrap_or_default()
    }

    /// The messages of `realm` with `feature`.
    pub fn with_feature(&self, realm: RealmId, feature: Feature) -> IdSet {
        self.features.get(&(realm, feature)).unwrap_or_default()
    }

    /// The messages of `realm` whose content or topic has a word with
    /// this stem (a superset: see the module comment).
    pub fn with_stem(&self, realm: RealmId, stem: &str) -> IdSet {
        self.words.read(&word_key(realm, stem), Postings::to_set).unwrap_or_default()
    }

    /// How many lists there are and how many ids they hold in all.
    pub fn sizes(&self) -> (usize, usize) {
        let entries = self.entries();
        (entries.len(), entries.iter().map(|(_, ids)| ids.len()).sum())
    }

    /// The bytes the lists take, counted from their shapes: each map
    /// entry at the hash table's fullest (7/8) plus its control byte, and
    /// each set's heap (`IdSet::heap_bytes`). Allocator overhead is not
    /// counted.
    pub fn estimated_bytes(&self) -> usize {
        fn table<K, V>(entries: usize) -> usize {
            entries * (std::mem::size_of::<(K, V)>() + 1) * 8 / 7
        }
        let mut bytes = 0;
        let sets = |map: &Sharded<_, IdSet>| -> (usize, usize) {
            let all = map.collect_sorted(|_, _| true);
            (all.len(), all.iter().map(|(_, s)| s.heap_bytes()).sum())
        };
        let (n, heap) = sets(&self.by_sender);
        bytes += table::<UserId, IdSet>(n) + heap;
        let (n, heap) = sets(&self.direct);
        bytes += table::<UserId, IdSet>(n) + heap;
        let all = self.features.collect_sorted(|_, _| true);
        bytes += table::<(RealmId, Feature), IdSet>(all.len());
        bytes += all.iter().map(|(_, s)| s.heap_bytes()).sum::<usize>();
        let all = self.words.collect_sorted(|_, _| true);
        bytes += table::<u64, Postings>(all.len());
        for (_, postings) in &all {
            if let Postings::Many(set) = postings {
                bytes += set.heap_bytes();
            }
        }
        bytes
    }

    /// Every non-empty list, named, with its ids, in a fixed order: what
    /// tests compare a rebuilt `Lookup` with.
    pub fn entries(&self) -> Vec<(String, Vec<MessageId>)> {
        let mut out = Vec::new();
        let mut add = |name: String, set: &IdSet| {
            if !set.is_empty() {
                out.push((name, set.iter().collect()));
            }
        };
        for (user, set) in self.by_sender.collect_sorted(|_, _| true) {
            add(format!("sender {user}"), &set);
        }
        for (user, set) in self.direct.collect_sorted(|_, _| true) {
            add(format!("direct {user}"), &set);
        }
        for ((realm, feature), set) in self.features.collect_sorted(|_, _| true) {
            add(format!("{feature:?} in {realm}"), &set);
        }
        for (key, postings) in self.words.collect_sorted(|_, _| true) {
            add(format!("word {key:x}"), &postings.to_set());
        }
        out
    }
}
