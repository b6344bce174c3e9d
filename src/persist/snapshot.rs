//! Snapshot files: a bincode `StateImage` behind a checked header.
//!
//! Layout of `snapshots/snapshot-<seq, 20 digits>.bin` (little-endian):
//!
//! | bytes | field                                       |
//! |-------|---------------------------------------------|
//! | 8     | magic `NATSNAP\0`                           |
//! | 4     | format version (`FORMAT_VERSION`)           |
//! | 8     | seq: the last mutation included             |
//! | 8     | payload length                              |
//! | 4     | CRC32 of the payload                        |
//! | n     | payload: `StateImage`, bincode (standard)   |
//!
//! Writing goes tmp file → fsync → rename → fsync directory, so a crash
//! leaves either the old snapshot or the complete new one. The payload is
//! encoded straight into the file (buffered), from the image's frozen
//! shards, with its length and CRC counted on the way; the header is
//! written last, in place: no copy of the whole snapshot is ever in memory.

use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::state::StateImage;

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
    bincode::serde::encode_into_std_write(image, &mut buffered, bincode::config::standard())
        .map_err(|e| match e {
            bincode::error::EncodeError::Io { inner, .. } => inner,
            other => io::Error::other(other.to_string()),
        })?;
    let Summing { inner: mut out, len, crc } = buffered.into_inner().map_err(|e| e.into_error())?;
    out.seek(SeekFrom::Start(0))?;
    out.write_all(&header(image.applied_seq, len, crc.finalize()))?;
    out.seek(SeekFrom::End(0))?;
    Ok(out)
}

/// Encodes an image into the snapshot byte format, in memory (tests and
/// benches; `write` streams to the file instead).
pub fn encode(image: &StateImage) -> Vec<u8> {
    encode_into(image, io::Cursor::new(Vec::new())).expect("memory writes never fail").into_inner()
}

/// Decodes and verifies snapshot bytes.
pub fn decode(bytes: &[u8], path: &Path) -> Result<StateImage, PersistError> {
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
    if crc32fast::hash(payload) != crc {
        return Err(bad("checksum mismatch"));
    }
    let (image, _): (StateImage, usize) =
        bincode::serde::decode_from_slice(payload, bincode::config::standard())
            .map_err(|e| bad(&format!("undecodable payload: {e}")))?;
    if image.applied_seq != seq {
        return Err(bad("header seq does not match payload"));
    }
    Ok(image)
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
