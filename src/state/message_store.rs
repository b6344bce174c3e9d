//! `MessageStore`: every message by id, in chunks of `CHUNK` consecutive
//! ids, each chunk behind an `Arc`.
//!
//! Message ids are dense and ascending (the server allocates them), so a
//! lookup is two array indexes — no hashing — and a new message lands in
//! the last chunk. The snapshot cut (`freeze`, under the commit writer
//! lock) clones one `Arc` per chunk (≈ 250 at 1M messages), never a
//! message; a later write copies only the chunk it touches (`Arc::make_mut`
//! on a chunk a frozen copy still holds: `CHUNK` pointers), so a snapshot
//! being written never doubles the store. Each message is itself an
//! `Arc<Message>`: readers and events share it, and an edit copies it only
//! while someone else still holds it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::{MessageId, RealmId};
use super::messages::Message;

/// Ids per chunk.
pub(crate) const CHUNK: usize = 4096;

/// The slots of `CHUNK` consecutive ids (only as long as the highest
/// filled slot: the newest chunk grows as messages arrive).
#[derive(Clone, Default)]
struct Chunk {
    slots: Vec<Option<Arc<Message>>>,
}

/// Every message, by id.
#[derive(Default)]
pub struct MessageStore {
    chunks: RwLock<Vec<Arc<Chunk>>>,
    len: AtomicUsize,
    /// Messages by realm (for monitoring).
    by_realm: Mutex<FxHashMap<RealmId, usize>>,
}

fn place(id: &MessageId) -> Option<(usize, usize)> {
    let id = usize::try_from(id.0).ok()?;
    Some((id / CHUNK, id % CHUNK))
}

impl MessageStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the message `id`, if present, under a read lock.
    pub fn read<R>(&self, id: &MessageId, f: impl FnOnce(&Arc<Message>) -> R) -> Option<R> {
        let (chunk, slot) = place(id)?;
        let chunks = self.chunks.read();
        chunks.get(chunk)?.slots.get(slot)?.as_ref().map(f)
    }

    /// The message `id` (a shared pointer, not a copy).
    pub fn get(&self, id: &MessageId) -> Option<Arc<Message>> {
        self.read(id, Arc::clone)
    }

    /// Whether message `id` exists.
    pub fn contains(&self, id: &MessageId) -> bool {
        self.read(id, |_| ()).is_some()
    }

    /// Inserts or replaces message `id`.
    pub fn insert(&self, id: MessageId, message: Arc<Message>) {
        let (chunk, slot) = place(&id).expect("message ids fit in memory");
        let mut chunks = self.chunks.write();
        if chunks.len() <= chunk {
            chunks.resize_with(chunk + 1, Arc::default);
        }
        let slots = &mut Arc::make_mut(&mut chunks[chunk]).slots;
        if slots.len() <= slot {
            slots.resize(slot + 1, None);
        }
        let realm = message.realm;
        if slots[slot].replace(message).is_none() {
            self.len.fetch_add(1, Ordering::AcqRel);
            *self.by_realm.lock().entry(realm).or_default() += 1;
        }
    }

    /// Removes message `id`, returning it.
    pub fn remove(&self, id: &MessageId) -> Option<Arc<Message>> {
        let (chunk, slot) = place(id)?;
        let mut chunks = self.chunks.write();
        chunks.get(chunk)?.slots.get(slot)?.as_ref()?;
        let removed = Arc::make_mut(&mut chunks[chunk]).slots[slot].take();
        self.len.fetch_sub(1, Ordering::AcqRel);
        if let Some(message) = &removed {
            if let Some(n) = self.by_realm.lock().get_mut(&message.realm) {
                *n = n.saturating_sub(1);
            }
        }
        removed
    }

    /// Runs `f` on message `id` under the write lock; `None` if absent.
    /// Change the message through `Arc::make_mut`.
    pub fn update<R>(&self, id: &MessageId, f: impl FnOnce(&mut Arc<Message>) -> R) -> Option<R> {
        let (chunk, slot) = place(id)?;
        let mut chunks = self.chunks.write();
        chunks.get(chunk)?.slots.get(slot)?.as_ref()?;
        Arc::make_mut(&mut chunks[chunk]).slots[slot].as_mut().map(f)
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of messages of each realm that has any.
    pub fn by_realm(&self) -> Vec<(RealmId, usize)> {
        let mut all: Vec<(RealmId, usize)> =
            self.by_realm.lock().iter().map(|(r, n)| (*r, *n)).collect();
        all.sort_unstable();
        all
    }

    /// The snapshot cut: the chunks as they are now, by cloning one `Arc`
    /// per chunk. Only a consistent cut while no writer runs.
    pub fn freeze(&self) -> FrozenMessages {
        FrozenMessages { chunks: self.chunks.read().clone(), len: self.len() }
    }
}

impl MessageStore {
    /// A store holding the chunks of a frozen or decoded cut (no message
    /// is copied; chunks still shared with a live store copy on write),
    /// with `by_realm` its messages counted by realm.
    pub fn from_frozen(frozen: FrozenMessages, by_realm: FxHashMap<RealmId, usize>) -> Self {
        MessageStore {
            chunks: RwLock::new(frozen.chunks),
            len: AtomicUsize::new(frozen.len),
            by_realm: Mutex::new(by_realm),
        }
    }
}

/// One chunk being filled, in ascending id order, by a snapshot decoder
/// (`persist::snapshot`): the chunk is built in place, with no list of
/// all messages in between.
#[derive(Default)]
pub struct ChunkBuilder {
    number: Option<usize>,
    slots: Vec<Option<Arc<Message>>>,
    len: usize,
}

impl ChunkBuilder {
    /// Adds the next message; `false` (and nothing added) unless its id
    /// is above the previous one and in the same chunk.
    pub fn push(&mut self, message: Arc<Message>) -> bool {
        let Some((number, slot)) = place(&message.id) else { return false };
        match self.number {
            None => {
                self.number = Some(number);
                self.slots.reserve_exact(CHUNK);
            }
            Some(n) if n != number || slot < self.slots.len() => return false,
            Some(_) => {}
        }
        self.slots.resize(slot, None);
        self.slots.push(Some(message));
        self.len += 1;
        true
    }
}

impl FrozenMessages {
    /// Assembles decoded chunks, given in ascending chunk order; `None` if
    /// two name the same chunk or are out of order. Empty builders are
    /// skipped.
    pub fn from_builders(builders: impl IntoIterator<Item = ChunkBuilder>) -> Option<Self> {
        let mut chunks: Vec<Arc<Chunk>> = Vec::new();
        let mut len = 0;
        for mut builder in builders {
            let Some(number) = builder.number else { continue };
            if number < chunks.len() {
                return None;
            }
            chunks.resize_with(number, Arc::default);
            builder.slots.shrink_to_fit();
            len += builder.len;
            chunks.push(Arc::new(Chunk { slots: builder.slots }));
        }
        Some(FrozenMessages { chunks, len })
    }

    /// The messages chunk by chunk, each in id order (the snapshot's
    /// blocks), skipping empty chunks.
    pub fn blocks(&self) -> impl Iterator<Item = impl Iterator<Item = &Arc<Message>> + '_> + '_ {
        self.chunks
            .iter()
            .filter(|c| c.slots.iter().any(Option::is_some))
            .map(|c| c.slots.iter().flatten())
    }

    /// The messages of chunks `from..to` (of `parts()`), in id order: a
    /// share of the store for one thread of the restart's index rebuild.
    pub fn iter_chunks(&self, from: usize, to: usize) -> impl Iterator<Item = &Arc<Message>> + '_ {
        self.chunks[from..to].iter().flat_map(|c| c.slots.iter().flatten())
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl FromIterator<Arc<Message>> for MessageStore {
    fn from_iter<I: IntoIterator<Item = Arc<Message>>>(iter: I) -> Self {
        let store = MessageStore::new();
        for message in iter {
            store.insert(message.id, message);
        }
        store
    }
}

/// The messages as they were when frozen; immutable and shared.
#[derive(Clone)]
pub struct FrozenMessages {
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

impl FrozenMessages {
    /// Every message, ascending by id.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Message>> + '_ {
        self.chunks.iter().flat_map(|c| c.slots.iter().flatten())
    }

    /// How many shared pointers the cut copied (one per chunk).
    pub fn parts(&self) -> usize {
        self.chunks.len()
    }
}

/// The messages in snapshot form, encoded as the messages in id order
/// (the same bytes as a `Vec<Message>`).
#[derive(Clone)]
pub enum MessagesImage {
    /// Taken from live state by `MessageStore::freeze`.
    Frozen(FrozenMessages),
    /// Decoded from a snapshot file.
    Decoded(Vec<Arc<Message>>),
}

impl Default for MessagesImage {
    fn default() -> Self {
        MessagesImage::Decoded(Vec::new())
    }
}

impl MessagesImage {
    /// Every message in id order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = &Arc<Message>> + '_> {
        match self {
            MessagesImage::Frozen(f) => Box::new(f.iter()),
            MessagesImage::Decoded(v) => Box::new(v.iter()),
        }
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        match self {
            MessagesImage::Frozen(f) => f.len,
            MessagesImage::Decoded(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IntoIterator for MessagesImage {
    type Item = Arc<Message>;
    type IntoIter = std::vec::IntoIter<Arc<Message>>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            MessagesImage::Frozen(f) => f.iter().cloned().collect::<Vec<_>>().into_iter(),
            MessagesImage::Decoded(v) => v.into_iter(),
        }
    }
}

impl Serialize for MessagesImage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for message in self.iter() {
            seq.serialize_element(&**message)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for MessagesImage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(MessagesImage::Decoded)
    }
}

impl PartialEq for MessagesImage {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl std::fmt::Debug for MessagesImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Destination, MessageParts, RealmId, RecipientId, UserId};

    fn message(id: u64) -> Arc<Message> {
        Arc::new(Message::from(MessageParts {
            id: MessageId(id),
            realm: RealmId(1),
            sender: UserId(1),
            recipient: RecipientId(1),
            destination: Destination::Direct { participants: vec![UserId(1)].into() },
            content: format!("m{id}"),
            rendered_content: String::new(),
            timestamp: 0,
            client: "".into(),
            is_me_message: false,
        }))
    }

    #[test]
    fn lookups_inserts_removals_and_frozen_cuts() {
        let store: MessageStore = (1..=10_000).map(message).collect();
        assert_eq!(store.len(), 10_000);
        assert_eq!(store.get(&MessageId(4096)).unwrap().content(), "m4096");
        assert!(!store.contains(&MessageId(0)));
        assert!(!store.contains(&MessageId(10_001)));
        assert!(!store.contains(&MessageId(u64::MAX)));
        let frozen = store.freeze();
        assert_eq!(frozen.parts(), 3, "one pointer per chunk of {CHUNK}");
        // Writes after the cut leave it as it was.
        store.remove(&MessageId(5));
        store.update(&MessageId(6), |m| Arc::make_mut(m).set_text("edited", ""));
        store.insert(MessageId(20_000), message(20_000));
        assert_eq!(store.remove(&MessageId(5)), None);
        assert_eq!(store.len(), 10_000);
        assert_eq!(store.get(&MessageId(6)).unwrap().content(), "edited");
        let image = MessagesImage::Frozen(frozen);
        assert_eq!(image.len(), 10_000);
        let ids: Vec<u64> = image.iter().map(|m| m.id.0).collect();
        assert_eq!(ids, (1..=10_000).collect::<Vec<_>>());
        assert_eq!(image.iter().nth(5).unwrap().content(), "m6");
        // Frozen and decoded forms encode the same bytes as a plain vector.
        let config = bincode::config::standard();
        let plain: Vec<Message> = (1..=10_000).map(|i| (*message(i)).clone()).collect();
        let bytes = bincode::serde::encode_to_vec(&image, config).unwrap();
        assert_eq!(bytes, bincode::serde::encode_to_vec(&plain, config).unwrap());
        let (back, _): (MessagesImage, usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, image);
    }
}
