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
//! leaves either the old snapshot or the complete new one.

use std::fs::{self, File};
use std::io::{self, Write};
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

/// Encodes an image into the snapshot byte format.
pub fn encode(image: &StateImage) -> Vec<u8> {
    let payload = bincode::serde::encode_to_vec(image, bincode::config::standard())
        .expect("state image always encodes");
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&image.applied_seq.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
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
        let mut file = File::create(&tmp_path)?;
        file.write_all(&encode(image))?;
        file.sync_all()?;
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
