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
//! The payload (since `FORMAT_VERSION` 8) is made of blocks, each framed
//! as its byte length (u64), its item count (u64; not for the first
//! block), its CRC32 (u32) and its bytes:
//!
//! 1. one block: the `StateImage`, bincode (standard), without its
//!    `messages`, `user_messages`, `files` and `organization` (skipped by
//!    its serde derive), then (since version 10) its `organization`,
//!    then (since version 11) its `features`, then (since version 12)
//!    its `bots`, then (since version 13) its `web_sessions`, then
//!    (since version 14) its `widgets` (messages' submessages), then
//!    (since version 16) its `folders` (channel folders), then
//!    (since version 17) the failed tries of the unfinished outgoing-
//!    webhook deliveries (`bots.failed`);
//! 2. the messages section: a block count (u64), then one block per
//!    message chunk of 4,096 ids (`message_store::CHUNK`) that holds any
//!    message, its items the messages in id order;
//! 3. the rows section: a block count, then blocks of `(UserId,
//!    UserMessages)` entries in user order, a block per run of users
//!    holding about `ROWS_PER_BLOCK` ids;
//! 4. (since `FORMAT_VERSION` 9) one block: the uploaded files' records
//!    (`FilesImage`), framed as the image's, then (since version 11) its
//!    `extra` part (avatars, realms' file settings). A version 8 file has
//!    none and reads with no attachments.
//!
//! An item is its bincode encoding; a block's items follow one another.
//! So a block is decodable alone, and a reader finds every block by
//! hopping over the lengths. A restart (`read`) decodes the blocks on
//! every core, each thread reading the next block from the file into its
//! own buffer, checking the block's CRC and decoding it straight into a
//! message chunk: the file is never in memory whole. The header's CRC
//! still covers the whole payload (combined from the blocks' and the
//! framing's); any mismatch, a block that does not decode to exactly its
//! length and count, or messages out of order refuse the file
//! (`persist::open` then falls back to an older snapshot, as for any bad
//! snapshot).
//!
//! Writing goes tmp file → fsync → rename → fsync directory, so a crash
//! leaves either the old snapshot or the complete new one. The payload is
//! encoded straight into the file (buffered), from the image's frozen
//! shards, with its length and CRC counted on the way; the header is
//! written last, in place. Only one block at a time is held in memory
//! (its length and CRC precede it): never a copy of the whole snapshot.

use std::fs::{self, File};

use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use wal::Fs;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::state::interner::Interner;
use crate::state::message_store::{ChunkBuilder, FrozenMessages, CHUNK};
use crate::state::{Entries, MessagesImage, StateImage, UserId, UserMessages};

use super::{PersistError, FORMAT_VERSION};

/// The last format with no files block: still read.
const FORMAT_WITHOUT_FILES: u32 = 8;

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

/// The last format version before the organization part (linkifiers,
/// default channel groups, …) followed the image: those files are read
/// with that part empty.
const FORMAT_WITHOUT_ORGANIZATION: u32 = 9;

/// The last format version before the features part (read receipts,
/// reminders, …) followed the organization part: those files are read
/// with that part empty.
const FORMAT_WITHOUT_FEATURES: u32 = 10;
/// The last format version whose files block ends with the `FilesImage`
/// (no avatars or realm file settings after it): read with those empty.
const FORMAT_WITHOUT_AVATARS: u32 = 10;

/// The last format version before the bots part (services, storage,
/// unfinished deliveries) followed the features part: those files are
/// read with no bot data.
const FORMAT_WITHOUT_BOTS: u32 = 11;

/// The last format version before the web client's sessions followed the
/// bots part: those files are read with no one signed in.
const FORMAT_WITHOUT_WEB_SESSIONS: u32 = 12;

/// The last format version before the widgets part (submessages)
/// followed the web sessions part: those files are read with no submessages.
const FORMAT_WITHOUT_WIDGETS: u32 = 13;

/// The last format version before the channel folders part followed the
/// widgets part: those files are read with no folders.
const FORMAT_WITHOUT_FOLDERS: u32 = 15;

/// The last format version before the failed tries of unfinished
/// outgoing-webhook deliveries followed the channel folders part: those files are
/// read with every unfinished delivery at its first try.
const FORMAT_WITHOUT_DELIVERY_TRIES: u32 = 16;

/// The ids a block of rows holds, about: big enough that a block's
/// framing is noise, small enough that many users' rows spread over the
/// threads.
const ROWS_PER_BLOCK: usize = 1 << 16;

/// The payload: the image without its big parts, then the two sections.
fn encode_payload(image: &StateImage, out: &mut impl Write) -> io::Result<()> {
    let mut block = Vec::new();
    encode_one(image, &mut block)?;
    encode_one(&image.organization, &mut block)?;
    encode_one(&image.features, &mut block)?;
    encode_one(&image.bots, &mut block)?;
    encode_one(&image.web_sessions, &mut block)?;
    encode_one(&image.widgets, &mut block)?;
    encode_one(&image.folders, &mut block)?;
    encode_one(&image.bots.failed, &mut block)?;
    write_block(out, &block, None)?;
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
    write_section(out, &mut block, runs.len(), runs.iter().map(|run| run.iter()))?;
    block.clear();
    encode_one(&image.files, &mut block)?;
    encode_one(&image.files.extra, &mut block)?;
    write_block(out, &block, None)
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
        write_block(out, block, Some(n))?;
        written += 1;
    }
    assert_eq!(written, count, "a section's block count is known before its blocks");
    Ok(())
}

/// A block: its byte length, its item count (`None` for the image's own
/// block, which has none), its CRC32 and its bytes.
fn write_block(out: &mut impl Write, block: &[u8], items: Option<u64>) -> io::Result<()> {
    out.write_all(&(block.len() as u64).to_le_bytes())?;
    if let Some(items) = items {
        out.write_all(&items.to_le_bytes())?;
    }
    out.write_all(&crc32fast::hash(block).to_le_bytes())?;
    out.write_all(block)
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

/// Where a snapshot is decoded from: its file (a restart: each block is
/// read when a thread decodes it, into that thread's buffer, so the file
/// is never in memory whole) or bytes already in memory.
pub trait Source: Sync {
    /// The total length in bytes.
    fn size(&self) -> u64;
    /// Bytes `at..at + len`, read into `buffer` if need be; an error if
    /// they run past the end.
    fn bytes<'b>(&'b self, at: u64, len: u64, buffer: &'b mut Vec<u8>) -> io::Result<&'b [u8]>;
}

fn past_the_end() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "past the end of the snapshot")
}

impl Source for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn bytes<'b>(&'b self, at: u64, len: u64, _: &'b mut Vec<u8>) -> io::Result<&'b [u8]> {
        let end = at.checked_add(len).ok_or_else(past_the_end)?;
        let range = usize::try_from(at).ok().zip(usize::try_from(end).ok());
        range.and_then(|(at, end)| self.get(at..end)).ok_or_else(past_the_end)
    }
}

impl Source for File {
    fn size(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }

    fn bytes<'b>(&'b self, at: u64, len: u64, buffer: &'b mut Vec<u8>) -> io::Result<&'b [u8]> {
        use std::os::unix::fs::FileExt;
        if at.checked_add(len).is_none_or(|end| end > self.size()) {
            return Err(past_the_end());
        }
        buffer.clear();
        buffer.resize(usize::try_from(len).map_err(|_| past_the_end())?, 0);
        self.read_exact_at(buffer, at)?;
        Ok(buffer)
    }
}

/// Decodes and verifies snapshot bytes, on every core (`threads`).
pub fn decode(bytes: &[u8], path: &Path) -> Result<StateImage, PersistError> {
    decode_from(bytes, path, threads())
}

/// `decode` on `threads` threads (at least one: the caller's).
pub fn decode_on(bytes: &[u8], path: &Path, threads: usize) -> Result<StateImage, PersistError> {
    decode_from(bytes, path, threads)
}

/// Reads, verifies and decodes the snapshot file at `path` on `threads`
/// threads, a block at a time: memory holds the decoded state and one
/// block per thread, never the whole file.
pub fn read(path: &Path, threads: usize) -> Result<StateImage, PersistError> {
    decode_from(&File::open(path)?, path, threads)
}

/// Decodes and verifies a snapshot from `source`. Every block (the
/// image's own and each section's) is checked against its CRC before it
/// is decoded; the header's CRC of the whole payload, combined from the
/// blocks' and the framing's, is checked before the image is returned.
pub fn decode_from<S: Source + ?Sized>(
    source: &S,
    path: &Path,
    threads: usize,
) -> Result<StateImage, PersistError> {
    let bad = |why: &str| PersistError::BadSnapshot { path: path.to_owned(), why: why.to_owned() };
    let mut buffer = Vec::new();
    let header = match source.bytes(0, HEADER_LEN as u64, &mut buffer) {
        Ok(header) if &header[..8] == MAGIC => header,
        _ => return Err(bad("not a snapshot file (bad magic)")),
    };
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if !(FORMAT_WITHOUT_FILES..=FORMAT_VERSION).contains(&version) {
        return Err(bad(&format!("format version {version}, this build reads {FORMAT_VERSION}")));
    }
    let (seq, len, crc) = (u64_at(12), u64_at(20), u32_at(28));
    if source.size() - HEADER_LEN as u64 != len {
        return Err(bad("truncated payload"));
    }

    // The framing: every block's place, and the CRC of the bytes between.
    let mut frame = Framing { source, at: HEADER_LEN as u64, pieces: Vec::new() };
    let head = frame.block(false).map_err(|_| bad("bad image block"))?;
    let mut sections = [Vec::new(), Vec::new()];
    for (section, name) in sections.iter_mut().zip(["messages", "rows"]) {
        let framing = |_| bad(&format!("bad {name} section"));
        let count = frame.u64().map_err(framing)?;
        for _ in 0..count {
            section.push(frame.block(true).map_err(framing)?);
        }
    }
    let files = if version == FORMAT_WITHOUT_FILES {
        None
    } else {
        Some(frame.block(false).map_err(|_| bad("bad files block"))?)
    };
    if frame.at != source.size() {
        return Err(bad("bytes after the last section"));
    }

    let (mut image, head_crc) = {
        let bytes = source.bytes(head.at, head.len, &mut buffer)?;
        let crc = block_crc(bytes, &head).map_err(|why| bad(&why))?;
        let (mut image, mut used): (StateImage, usize) =
            super::decode_bounded(bytes).map_err(|e| bad(&format!("undecodable payload: {e}")))?;
        if version > FORMAT_WITHOUT_ORGANIZATION {
            let (organization, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.organization = organization;
            used += more;
        }
        if version > FORMAT_WITHOUT_FEATURES {
            let (features, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.features = features;
            used += more;
        }
        if version > FORMAT_WITHOUT_BOTS {
            let (bots, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.bots = bots;
            used += more;
        }
        if version > FORMAT_WITHOUT_WEB_SESSIONS {
            let (web_sessions, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.web_sessions = web_sessions;
            used += more;
        }
        if version > FORMAT_WITHOUT_WIDGETS {
            let (widgets, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.widgets = widgets;
            used += more;
        }
        if version > FORMAT_WITHOUT_FOLDERS {
            let (folders, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.folders = folders;
            used += more;
        }
        if version > FORMAT_WITHOUT_DELIVERY_TRIES {
            let (failed, more) = super::decode_bounded(&bytes[used..])
                .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
            image.bots.failed = failed;
            used += more;
        }
        if used != bytes.len() {
            return Err(bad("undecodable payload: image block longer than the image"));
        }
        (image, crc)
    };
    if image.applied_seq != seq {
        return Err(bad("header seq does not match payload"));
    }

    // Rows first: a block of one busy user's rows is the longest job.
    let [messages, rows] = sections;
    let jobs: Vec<(Kind, Block)> = rows
        .into_iter()
        .map(|b| (Kind::Rows, b))
        .chain(messages.into_iter().map(|b| (Kind::Messages, b)))
        .collect();
    let names = Interner::default();
    let done = run_parallel(&jobs, threads.max(1), |buffer, (kind, block)| {
        let bytes = source.bytes(block.at, block.len, buffer).map_err(|e| e.to_string())?;
        let crc = block_crc(bytes, block)?;
        kind.decode(bytes, block.items, &names).map(|decoded| (crc, decoded))
    });

    let mut crcs = vec![head_crc];
    let mut chunks = Vec::new();
    let mut entries: Vec<(UserId, UserMessages)> = Vec::new();
    let mut failure = None;
    for result in done {
        match result {
            Ok((crc, Decoded::Rows(mut run))) => {
                crcs.push(crc);
                entries.append(&mut run);
            }
            Ok((crc, Decoded::Messages(chunk))) => {
                crcs.push(crc);
                chunks.push(chunk);
            }
            // A checksum failure explains any other: report it first.
            Err(why) if why.contains("checksum") => return Err(bad(&why)),
            Err(why) => failure = failure.or(Some(why)),
        }
    }
    if let Some(why) = failure {
        return Err(bad(&format!("undecodable block: {why}")));
    }
    // The whole payload's CRC: the framing's pieces and the blocks' in
    // file order (the jobs ran rows first; `crcs` is head, rows, messages).
    let rows_count = jobs.iter().filter(|(k, _)| matches!(k, Kind::Rows)).count();
    let mut by_place = vec![crcs[0].clone()];
    by_place.extend(crcs[1 + rows_count..].iter().cloned());
    by_place.extend(crcs[1..1 + rows_count].iter().cloned());
    if let Some(block) = &files {
        let bytes = source.bytes(block.at, block.len, &mut buffer)?;
        by_place.push(block_crc(bytes, block).map_err(|why| bad(&why))?);
        let undecodable =
            |e: bincode::error::DecodeError| bad(&format!("undecodable files block: {e}"));
        let (mut decoded, mut used): (crate::state::files::FilesImage, usize) =
            super::decode_bounded(bytes).map_err(undecodable)?;
        if version > FORMAT_WITHOUT_AVATARS {
            let (extra, more) = super::decode_bounded(&bytes[used..]).map_err(undecodable)?;
            decoded.extra = extra;
            used += more;
        }
        if used != bytes.len() {
            return Err(bad("undecodable files block: longer than its records"));
        }
        image.files = decoded;
    }
    let mut all = crc32fast::Hasher::new();
    let mut blocks = by_place.iter();
    for piece in &frame.pieces {
        match piece {
            Piece::Framing(hasher) => all.combine(hasher),
            Piece::Block => all.combine(blocks.next().expect("one crc per block")),
        }
    }
    if all.finalize() != crc {
        return Err(bad("checksum mismatch"));
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

/// The CRC of a block's bytes, checked against its frame's.
fn block_crc(bytes: &[u8], block: &Block) -> Result<crc32fast::Hasher, String> {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(bytes);
    if hasher.clone().finalize() != block.crc {
        return Err("checksum mismatch in a block".into());
    }
    Ok(hasher)
}

/// A block's place in the file, its item count and its CRC.
struct Block {
    at: u64,
    len: u64,
    items: u64,
    crc: u32,
}

/// The payload in file order, for the whole-payload CRC: framing bytes
/// (hashed as they are read) and blocks (hashed by their decoders).
enum Piece {
    Framing(crc32fast::Hasher),
    Block,
}

/// A walk over the framing of a snapshot, reading only the lengths.
struct Framing<'s, S: ?Sized> {
    source: &'s S,
    at: u64,
    pieces: Vec<Piece>,
}

impl<S: Source + ?Sized> Framing<'_, S> {
    /// `n` framing bytes, hashed into the pieces.
    fn take(&mut self, n: u64) -> io::Result<Vec<u8>> {
        let mut buffer = Vec::new();
        let bytes = self.source.bytes(self.at, n, &mut buffer)?.to_vec();
        self.at += n;
        match self.pieces.last_mut() {
            Some(Piece::Framing(hasher)) => hasher.update(&bytes),
            _ => {
                let mut hasher = crc32fast::Hasher::new();
                hasher.update(&bytes);
                self.pieces.push(Piece::Framing(hasher));
            }
        }
        Ok(bytes)
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// A block's frame; its bytes are skipped (the decoders read them).
    fn block(&mut self, counted: bool) -> io::Result<Block> {
        let len = self.u64()?;
        let items = if counted { self.u64()? } else { 0 };
        let crc = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        let at = self.at;
        self.at = at
            .checked_add(len)
            .filter(|end| *end <= self.source.size())
            .ok_or_else(past_the_end)?;
        self.pieces.push(Piece::Block);
        Ok(Block { at, len, items, crc })
    }
}

/// What a block holds.
enum Kind {
    Messages,
    Rows,
}

/// What a block decodes to.
enum Decoded {
    Messages(ChunkBuilder),
    Rows(Vec<(UserId, UserMessages)>),
}

impl Kind {
    fn decode(&self, bytes: &[u8], items: u64, names: &Interner) -> Result<Decoded, String> {
        match self {
            Kind::Messages => {
                let mut chunk = ChunkBuilder::default();
                let mut client: Option<Arc<str>> = None;
                decode_items(bytes, items, |mut message: crate::state::Message| {
                    share_client(&mut message.client, &mut client, names);
                    chunk.push(Arc::new(message)).then_some(()).ok_or("messages out of order")
                })?;
                Ok(Decoded::Messages(chunk))
            }
            Kind::Rows => {
                let mut rows = Vec::new();
                decode_items(bytes, items, |entry| {
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
    bytes: &[u8],
    items: u64,
    mut each: impl FnMut(T) -> Result<(), &'static str>,
) -> Result<(), String> {
    let mut at = 0;
    for _ in 0..items {
        let (item, n): (T, usize) =
            super::decode_bounded(&bytes[at..]).map_err(|e| e.to_string())?;
        at += n;
        each(item)?;
    }
    if at != bytes.len() {
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
/// ones) taking the next job as they finish one, each with a buffer of
/// its own; the results in job order.
fn run_parallel<J: Sync, R: Send>(
    jobs: &[J],
    threads: usize,
    f: impl Fn(&mut Vec<u8>, &J) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut buffer = Vec::new();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else { return done };
            done.push((i, f(&mut buffer, job)));
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

/// How much of a snapshot is written between two `fdatasync`s of it.
const SYNC_EVERY: u64 = 1 << 20;

/// The snapshot file, synced every `SYNC_EVERY` bytes as it is written:
/// the disk then never holds a whole snapshot's worth of dirty pages, so
/// the log's own syncs (a durable send waits for one) queue behind a MiB
/// at most rather than behind the whole file's final flush (4 MiB before:
/// about 1 ms of this disk per sync, where a log sync is ≈ 0.1 ms).
/// `progress` is called after each of those syncs.
/// Every write and flush goes through the file-system seam (`wal::Fs`),
/// as positioned writes from `at`.
struct Trickle<'p> {
    fs: &'p dyn Fs,
    file: File,
    path: &'p Path,
    /// Where the next write goes.
    at: u64,
    /// The end of what was written.
    end: u64,
    unsynced: u64,
    progress: &'p mut dyn FnMut(),
}

impl Write for Trickle<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.fs.write_at(&self.file, self.path, buf, self.at)?;
        self.at += buf.len() as u64;
        self.end = self.end.max(self.at);
        self.unsynced += buf.len() as u64;
        if self.unsynced >= SYNC_EVERY {
            self.fs.sync_data(&self.file, self.path)?;
            self.unsynced = 0;
            (self.progress)();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Trickle<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let from = |base: u64, delta: i64| {
            base.checked_add_signed(delta)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek out of range"))
        };
        self.at = match to {
            SeekFrom::Start(at) => at,
            SeekFrom::End(delta) => from(self.end, delta)?,
            SeekFrom::Current(delta) => from(self.at, delta)?,
        };
        Ok(self.at)
    }
}

/// Writes a snapshot durably and removes older snapshot files.
pub fn write(dir: &Path, image: &StateImage) -> io::Result<PathBuf> {
    write_with(dir, image, &mut || {})
}

/// `write`, calling `progress` after every `SYNC_EVERY` bytes written (the
/// snapshot thread changes its own priority there).
pub fn write_with(
    dir: &Path,
    image: &StateImage,
    progress: &mut dyn FnMut(),
) -> io::Result<PathBuf> {
    write_on(&wal::RealFs, dir, image, progress, false).map(|(path, _)| path)
}

/// `write_with`, changing and flushing files through `fs`. With
/// `keep_previous`, the newest older snapshot is kept (the event queues'
/// recovery may need to start from it) and only those before it are
/// removed; returns the new file and the seq of the snapshot kept, if any.
pub fn write_on(
    fs: &dyn Fs,
    dir: &Path,
    image: &StateImage,
    progress: &mut dyn FnMut(),
    keep_previous: bool,
) -> io::Result<(PathBuf, Option<u64>)> {
    fs.create_dir_all(dir)?;
    let seq = image.applied_seq;
    let final_path = path_for(dir, seq);
    let tmp_path = dir.join(format!("{PREFIX}{seq:020}.tmp"));
    let written = fs.create(&tmp_path).and_then(|file| {
        let out = Trickle { fs, file, path: &tmp_path, at: 0, end: 0, unsynced: 0, progress };
        let out = encode_into(image, out)?;
        fs.sync_all(&out.file, &tmp_path)
    });
    if let Err(err) = written.and_then(|()| fs.rename(&tmp_path, &final_path)) {
        // A full disk, most likely: the partial file would keep its
        // space until the next snapshot of this seq.
        let _ = fs.remove_file(&tmp_path);
        return Err(err);
    }
    fs.sync_dir(dir)?;
    let mut kept = None;
    for (old_seq, old_path) in list(dir)? {
        if old_seq >= seq {
            continue;
        }
        if keep_previous && kept.is_none() {
            kept = Some(old_seq);
            continue;
        }
        fs.remove_file(&old_path)?;
    }
    Ok((final_path, kept))
}
