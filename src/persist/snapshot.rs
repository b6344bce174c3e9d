//! Snapshot files: a bincode `StateImage` behind a checked header, with
//! the two big parts (messages, per-user rows) framed as independently
//! decodable blocks so a restart decodes them on every core.
//!
//! Layout of `snapshots/snapshot-<seq, 20 digits>.bin` (little-endian):
//!
//! | bytes | field                                       |
//! |-------|---------------------------------------------|
//! | 8     | magic `NATSNAP\0`                           |
//! | 4     | format version (`FORMAT_VERSION`)           |
//! | 8     | seq: the last mutation included             |
//! | 8     | payload length                              |
//! | 4     | CRC32 of the payload (all of it)            |
//! | n     | payload (below)                             |
//!
//! The payload (since `FORMAT_VERSION` 8):
//!
//! 1. the `StateImage`, bincode (standard), without its `messages` and
//!    `user_messages` (skipped by its serde derive);
//! 2. the messages section: one block per message chunk of 4,096 ids
//!    (`message_store::CHUNK`) that holds any message, in id order;
//! 3. the rows section: the `(UserId, UserMessages)` entries in user
//!    order, a block per run of users holding about `ROWS_PER_BLOCK` ids.
//!
//! A section is a block count (u64), then per block its byte length
//! (u64), its item count (u64) and its bytes: the items' bincode
//! encodings, one after another. So a block is decodable alone, and a
//! reader finds every block by hopping over the lengths. The header's CRC
//! still covers the whole payload and is checked (on all cores) before
//! any block is decoded; a mismatch, a block that does not decode to
//! exactly its length and count, or messages out of order refuse the
//! file (`persist::open` then falls back to an older snapshot, as for any
//! bad snapshot).
//!
//! Writing goes tmp file → fsync → rename → fsync directory, so a crash
//! leaves either the old snapshot or the complete new one. The payload is
//! encoded straight into the file (buffered), from the image's frozen
//! shards, with its length and CRC counted on the way; the header is
//! written last, in place. Only one block at a time is held in memory
//! (its length precedes it): never a copy of the whole snapshot.

use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::state::interner::Interner;
use crate::state::message_store::{ChunkBuilder, FrozenMessages, CHUNK};
use crate::state::{Entries, MessagesImage, StateImage, UserId, UserMessages};

use super::{PersistError, FORMAT_VERSION};

const MAGIC: &[u8; 8] = b"NATSNAP\0";
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 4;
const PREFIX: &str = "snapshot-";
const SUFFIX: &str = ".bin";

fn path_for(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{seq:020}{SUFFIX}"))
}

/// Snapshot files in `dir`, newest (highest seq) first.
pub fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(seq) = name.strip_prefix(PREFIX).and_then(|n| n.strip_suffix(SUFFIX)) {
            if let Ok(seq) = seq.parse::<u64>() {
                found.push((seq, path));
            }
        }
    }
    found.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    Ok(found)
}

/// The header for a payload of `len` bytes with checksum `crc`.
fn header(seq: u64, len: u64, crc: u32) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&seq.to_le_bytes());
    out[20..28].copy_from_slice(&len.to_le_bytes());
    out[28..32].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A writer that counts and checksums what passes through it.
struct Summing<W> {
    inner: W,
    len: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Encodes `image` into `out` as a complete snapshot file (header then
/// payload). `out` must be at its start; the header is written first as a
/// placeholder and then again, filled in, once the payload is counted.
/// Bincode's many small writes go to a 1 MiB buffer, so the length and
/// CRC are counted over large blocks.
pub fn encode_into<W: Write + Seek>(image: &StateImage, out: W) -> io::Result<W> {
    let mut out = out;
    out.write_all(&[0u8; HEADER_LEN])?;
    let summing = Summing { inner: out, len: 0, crc: crc32fast::Hasher::new() };
    let mut buffered = BufWriter::with_capacity(1 << 20, summing);
    encode_payload(image, &mut buffered)?;
    let Summing { inner: mut out, len, crc } = buffered.into_inner().map_err(|e| e.into_error())?;
    out.seek(SeekFrom::Start(0))?;
    out.write_all(&header(image.applied_seq, len, crc.finalize()))?;
    out.seek(SeekFrom::End(0))?;
    Ok(out)
}

/// The ids a block of rows holds, about: big enough that a block's
/// framing is noise, small enough that many users' rows spread over the
/// threads.
const ROWS_PER_BLOCK: usize = 1 << 16;

/// The payload: the image without its big parts, then the two sections.
fn encode_payload(image: &StateImage, out: &mut impl Write) -> io::Result<()> {
    encode_one(image, out)?;
    let mut block = Vec::new();
    match &image.messages {
        MessagesImage::Frozen(frozen) => {
            write_section(out, &mut block, frozen.blocks().count(), frozen.blocks())?
        }
        MessagesImage::Decoded(messages) => {
            let chunk = |m: &Arc<crate::state::Message>| m.id.0 / CHUNK as u64;
            let blocks = || messages.chunk_by(|a, b| chunk(a) == chunk(b)).map(|b| b.iter());
            write_section(out, &mut block, blocks().count(), blocks())?
        }
    }
    let rows = image.user_messages.sorted();
    let mut runs = Vec::new();
    let (mut from, mut weight) = (0, 0);
    for (i, (_, mine)) in rows.iter().enumerate() {
        weight += 1 + mine.len() + mine.unread().len();
        if weight >= ROWS_PER_BLOCK || i + 1 == rows.len() {
            runs.push(&rows[from..=i]);
            (from, weight) = (i + 1, 0);
        }
    }
    write_section(out, &mut block, runs.len(), runs.iter().map(|run| run.iter()))
}

/// One value, bincode (standard), into `out`.
fn encode_one<T: Serialize + ?Sized>(value: &T, out: &mut impl Write) -> io::Result<()> {
    bincode::serde::encode_into_std_write(value, out, bincode::config::standard())
        .map(drop)
        .map_err(|e| match e {
            bincode::error::EncodeError::Io { inner, .. } => inner,
            other => io::Error::other(other.to_string()),
        })
}

/// A section of `count` blocks: each encoded into `block` (reused), then
/// written behind its length and item count.
fn write_section<B, T>(
    out: &mut impl Write,
    block: &mut Vec<u8>,
    count: usize,
    blocks: impl Iterator<Item = B>,
) -> io::Result<()>
where
    B: Iterator<Item = T>,
    T: Serialize,
{
    out.write_all(&(count as u64).to_le_bytes())?;
    let mut written = 0;
    for items in blocks {
        block.clear();
        let mut n = 0u64;
        for item in items {
            encode_one(&item, block)?;
            n += 1;
        }
        out.write_all(&(block.len() as u64).to_le_bytes())?;
        out.write_all(&n.to_le_bytes())?;
        out.write_all(block)?;
        written += 1;
    }
    assert_eq!(written, count, "a section's block count is known before its blocks");
    Ok(())
}

/// Encodes an image into the snapshot byte format, in memory (tests and
/// benches; `write` streams to the file instead).
pub fn encode(image: &StateImage) -> Vec<u8> {
    encode_into(image, io::Cursor::new(Vec::new())).expect("memory writes never fail").into_inner()
}

/// How many threads a restart decodes on.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Decodes and verifies snapshot bytes, on every core (`threads`).
pub fn decode(bytes: &[u8], path: &Path) -> Result<StateImage, PersistError> {
    decode_on(bytes, path, threads())
}

/// `decode` on `threads` threads (at least one: the caller's).
pub fn decode_on(bytes: &[u8], path: &Path, threads: usize) -> Result<StateImage, PersistError> {
    let bad = |why: &str| PersistError::BadSnapshot { path: path.to_owned(), why: why.to_owned() };
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(bad("not a snapshot file (bad magic)"));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != FORMAT_VERSION {
        return Err(bad(&format!("format version {version}, this build reads {FORMAT_VERSION}")));
    }
    let seq = u64_at(12);
    let len = u64_at(20);
    let crc = u32_at(28);
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(bad("truncated payload"));
    }
    let threads = threads.max(1);
    if parallel_crc(payload, threads) != crc {
        return Err(bad("checksum mismatch"));
    }
    let (mut image, head): (StateImage, usize) =
        bincode::serde::decode_from_slice(payload, bincode::config::standard())
            .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
    if image.applied_seq != seq {
        return Err(bad("header seq does not match payload"));
    }
    let mut at = head;
    let messages = section(payload, &mut at).ok_or_else(|| bad("bad messages section"))?;
    let rows = section(payload, &mut at).ok_or_else(|| bad("bad rows section"))?;
    if at != payload.len() {
        return Err(bad("bytes after the last section"));
    }
    // Rows first: a block of one busy user's rows is the longest job.
    let jobs: Vec<Job> =
        rows.into_iter().map(Job::Rows).chain(messages.into_iter().map(Job::Messages)).collect();
    let names = Interner::default();
    let done = run_parallel(&jobs, threads, |job| job.decode(&names));
    let mut chunks = Vec::new();
    let mut entries: Vec<(UserId, UserMessages)> = Vec::new();
    for result in done {
        match result.map_err(|why| bad(&format!("undecodable block: {why}")))? {
            Decoded::Rows(mut run) => entries.append(&mut run),
            Decoded::Messages(chunk) => chunks.push(chunk),
        }
    }
    if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err(bad("rows out of user order"));
    }
    let frozen =
        FrozenMessages::from_builders(chunks).ok_or_else(|| bad("messages out of order"))?;
    image.messages = MessagesImage::Frozen(frozen);
    image.user_messages = Entries::Decoded(entries);
    Ok(image)
}

/// CRC32 of `bytes`, its parts hashed on `threads` threads and combined.
fn parallel_crc(bytes: &[u8], threads: usize) -> u32 {
    let part = bytes.len().div_ceil(threads).max(1 << 20);
    let parts: Vec<&[u8]> = bytes.chunks(part).collect();
    let hashers = run_parallel(&parts, threads, |part| {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(part);
        hasher
    });
    let mut all = crc32fast::Hasher::new();
    for hasher in &hashers {
        all.combine(hasher);
    }
    all.finalize()
}

/// One block of a section: its bytes and item count.
struct Block<'a> {
    bytes: &'a [u8],
    items: u64,
}

/// The blocks of the section at `*at`, which moves past it; `None` if
/// the framing runs past the end.
fn section<'a>(payload: &'a [u8], at: &mut usize) -> Option<Vec<Block<'a>>> {
    fn take<'a>(payload: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
        let bytes = payload.get(*at..at.checked_add(n)?)?;
        *at += n;
        Some(bytes)
    }
    fn u64_next(payload: &[u8], at: &mut usize) -> Option<u64> {
        take(payload, at, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    let count = u64_next(payload, at)?;
    let mut blocks = Vec::new();
    for _ in 0..count {
        let len = usize::try_from(u64_next(payload, at)?).ok()?;
        let items = u64_next(payload, at)?;
        blocks.push(Block { bytes: take(payload, at, len)?, items });
    }
    Some(blocks)
}

/// A block to decode.
enum Job<'a> {
    Messages(Block<'a>),
    Rows(Block<'a>),
}

/// What a block decodes to.
enum Decoded {
    Messages(ChunkBuilder),
    Rows(Vec<(UserId, UserMessages)>),
}

impl Job<'_> {
    fn decode(&self, names: &Interner) -> Result<Decoded, String> {
        match self {
            Job::Messages(block) => {
                let mut chunk = ChunkBuilder::default();
                let mut client: Option<Arc<str>> = None;
                decode_items(block, |mut message: crate::state::Message| {
                    share_client(&mut message.client, &mut client, names);
                    chunk.push(Arc::new(message)).then_some(()).ok_or("messages out of order")
                })?;
                Ok(Decoded::Messages(chunk))
            }
            Job::Rows(block) => {
                let mut rows = Vec::new();
                decode_items(block, |entry| {
                    rows.push(entry);
                    Ok(())
                })?;
                Ok(Decoded::Rows(rows))
            }
        }
    }
}

/// Decodes a block's items one by one into `each`; the block must hold
/// exactly its count of items and nothing more.
fn decode_items<T: serde::de::DeserializeOwned>(
    block: &Block<'_>,
    mut each: impl FnMut(T) -> Result<(), &'static str>,
) -> Result<(), String> {
    let mut at = 0;
    for _ in 0..block.items {
        let (item, n): (T, usize) =
            bincode::serde::decode_from_slice(&block.bytes[at..], bincode::config::standard())
                .map_err(|e| e.to_string())?;
        at += n;
        each(item)?;
    }
    if at != block.bytes.len() {
        return Err("block longer than its items".into());
    }
    Ok(())
}

/// Points a decoded message's client name at the copy shared by every
/// message decoded with it (the run's previous one, else `names`'), so
/// each decoded name is freed at once rather than after the rebuild
/// interns it (restart memory).
fn share_client(client: &mut Arc<str>, last: &mut Option<Arc<str>>, names: &Interner) {
    match last {
        Some(shared) if **shared == **client => *client = Arc::clone(shared),
        _ => {
            let shared = names.intern(client);
            *client = Arc::clone(&shared);
            *last = Some(shared);
        }
    }
}

/// `f` on every job, on `threads` threads (the caller's and scoped
/// ones) taking the next job as they finish one; the results in job
/// order.
fn run_parallel<J: Sync, R: Send>(
    jobs: &[J],
    threads: usize,
    f: impl Fn(&J) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else { return done };
            done.push((i, f(job)));
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.min(jobs.len())).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for helper in helpers {
            all.extend(helper.join().expect("a decode thread panicked"));
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Writes a snapshot durably and removes older snapshot files.
pub fn write(dir: &Path, image: &StateImage) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let seq = image.applied_seq;
    let final_path = path_for(dir, seq);
    let tmp_path = dir.join(format!("{PREFIX}{seq:020}.tmp"));
    {
        encode_into(image, File::create(&tmp_path)?)?.sync_all()?;
    }
    fs::rename(&tmp_path, &final_path)?;
    File::open(dir)?.sync_all()?;
    for (old_seq, old_path) in list(dir)? {
        if old_seq < seq {
            fs::remove_file(old_path)?;
        }
    }
    Ok(final_path)
}
