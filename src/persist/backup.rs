//! `natter backup`: a consistent copy of a data dir that a server may be
//! writing at the same time — the newest snapshot plus the log after it,
//! up to the last whole record the copy caught.
//!
//! The running server's cooperation is the discipline its files already
//! keep, so the copy needs no request to it: a snapshot file appears
//! whole (written under a temporary name, synced, renamed); log segments
//! only grow, one at a time, and a segment is deleted only once a
//! snapshot covers all of its records. So the copy opens every segment
//! first and then the newest snapshot (files it holds open stay readable
//! if the server deletes them meanwhile, and that snapshot is at least as
//! new as any whose deletions could have hit the segments), copies them,
//! and copies again while new segments appear (the one before a new one
//! is then whole, so it is copied again too). The last segment may end in
//! a record being written: the copy's recovery cuts that torn tail, and
//! the backup's seq is the last whole record. Uploaded files
//! (`uploads/`, its staging directory left out) are copied after the log:
//! a file is durable before the record naming it is logged, so every
//! record in the copy finds its file, unless the file's record was deleted
//! (and the file with it) while the copy ran — start-up then reports the
//! record's file missing. `verify` checks the copy before it is reported.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::{snapshot, snapshot_dir, verify, wal_dir};

/// What a backup holds.
#[derive(Debug)]
pub struct BackedUp {
    /// The seq the copy recovers to.
    pub seq: u64,
    /// The seq of the snapshot copied, if there was one.
    pub snapshot: Option<u64>,
    /// Log segments copied.
    pub segments: usize,
    /// Uploaded files copied.
    pub files: usize,
    /// Bytes copied.
    pub bytes: u64,
}

/// Times the copy starts over when the server deleted the snapshot it
/// was about to open (a newer one replaced it).
const ATTEMPTS: usize = 10;

/// Copies the data dir `from` (served or not) to `to`, which must not
/// exist or be empty. A copy that does not verify (the server finished a
/// snapshot and deleted a segment created during the copy before it was
/// opened) is made again.
pub fn backup(from: &Path, to: &Path) -> Result<BackedUp, String> {
    let err = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
    if !from.join("wal").is_dir() {
        return Err(format!("{} is not a natter data dir (no wal/)", from.display()));
    }
    if to.exists() && fs::read_dir(to).map_err(|e| err("cannot read", to, e))?.next().is_some() {
        return Err(format!("{} is not empty", to.display()));
    }
    let mut last = String::new();
    for _ in 0..3 {
        match copy_once(from, to) {
            Ok(done) => return Ok(done),
            Err(e) => last = e,
        }
        for dir in [wal_dir(to), snapshot_dir(to)] {
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(|e| err("cannot remove", &dir, e))?;
            }
        }
    }
    Err(last)
}

/// One attempt of `backup` into the empty `to`.
fn copy_once(from: &Path, to: &Path) -> Result<BackedUp, String> {
    let err = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
    let (to_wal, to_snapshots) = (wal_dir(to), snapshot_dir(to));
    for dir in [&to_wal, &to_snapshots] {
        fs::create_dir_all(dir).map_err(|e| err("cannot create", dir, e))?;
    }
    let mut bytes = 0;
    // Segments first, held open.
    let mut segments = open_segments(&wal_dir(from), &BTreeMap::new())?;
    let mut snapshot_seq = None;
    for attempt in 0.. {
        let newest = snapshot::list(&snapshot_dir(from))
            .map_err(|e| err("cannot list", &snapshot_dir(from), e))?
            .into_iter()
            .next();
        let Some((seq, path)) = newest else { break };
        match File::open(&path) {
            Ok(mut file) => {
                let name = path.file_name().expect("a snapshot file has a name");
                let copy = to_snapshots.join(name);
                bytes += copy_file(&mut file, &copy)?;
                snapshot_seq = Some(seq);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempt + 1 < ATTEMPTS => continue,
            Err(e) => return Err(err("cannot open", &path, e)),
        }
    }
    // Copy the segments; while new ones appear, the one before them is
    // whole now: copy it again, and the new ones.
    let mut copied: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut redo: Vec<u64> = segments.keys().copied().collect();
    loop {
        for first in &redo {
            let (name, file) = segments.get_mut(first).expect("an opened segment");
            if let Some(old) = copied.insert(*first, to_wal.join(&*name)) {
                if old != to_wal.join(&*name) {
                    fs::remove_file(&old).map_err(|e| err("cannot remove", &old, e))?;
                }
            }
            bytes += copy_file(file, &to_wal.join(&*name))?;
        }
        let newer = open_segments(&wal_dir(from), &segments)?;
        if newer.is_empty() {
            break;
        }
        redo = segments.keys().next_back().copied().into_iter().collect();
        redo.extend(newer.keys().copied());
        segments.extend(newer);
    }
    let mut files = 0;
    copy_uploads(&from.join(UPLOADS), &to.join(UPLOADS), &mut files, &mut bytes)?;
    for dir in [&to_wal, &to_snapshots, &to.to_path_buf()] {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| err("cannot sync", dir, e))?;
    }
    let verified = verify::verify(to).map_err(|p| format!("the copy does not verify: {p}"))?;
    Ok(BackedUp { seq: verified.seq, snapshot: snapshot_seq, segments: copied.len(), files, bytes })
}

/// The uploaded files' directory of a data dir, and its staging directory
/// (bodies being received: never part of a backup).
const UPLOADS: &str = "uploads";
const UPLOADS_STAGING: &str = "tmp";

/// Copies the uploaded files below `from` (if any) to `to`, each synced,
/// and each directory synced after its files; a file deleted while the
/// copy runs is left out.
fn copy_uploads(from: &Path, to: &Path, files: &mut usize, bytes: &mut u64) -> Result<(), String> {
    let err = |what: &str, path: &Path, e: io::Error| format!("{what} {}: {e}", path.display());
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(err("cannot read", from, e)),
    };
    fs::create_dir_all(to).map_err(|e| err("cannot create", to, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| err("cannot read", from, e))?;
        let (path, name) = (entry.path(), entry.file_name());
        let kind = entry.file_type().map_err(|e| err("cannot read", &path, e))?;
        if kind.is_dir() {
            if !(to.file_name() == Some(UPLOADS.as_ref()) && name == UPLOADS_STAGING) {
                copy_uploads(&path, &to.join(&name), files, bytes)?;
            }
        } else if kind.is_file() {
            match File::open(&path) {
                Ok(mut file) => {
                    *bytes += copy_file(&mut file, &to.join(&name))?;
                    *files += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(err("cannot open", &path, e)),
            }
        }
    }
    File::open(to).and_then(|d| d.sync_all()).map_err(|e| err("cannot sync", to, e))
}

/// Opens the log segments in `wal` that are not in `known` (by first
/// seq), or whose pending segment got its real name since: first seq →
/// (file name, open file). A segment deleted before it was opened is
/// left out (a snapshot covers it).
fn open_segments(
    wal: &Path,
    known: &BTreeMap<u64, (String, File)>,
) -> Result<BTreeMap<u64, (String, File)>, String> {
    let mut found: BTreeMap<u64, (String, File)> = BTreeMap::new();
    let entries = fs::read_dir(wal).map_err(|e| format!("cannot list {}: {e}", wal.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", wal.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(first) = segment_first_seq(&name) else { continue };
        if known.get(&first).is_some_and(|(known, _)| *known == name || !known.ends_with(PENDING)) {
            continue;
        }
        let better = match found.get(&first) {
            Some((other, _)) => other.ends_with(PENDING),
            None => true,
        };
        if !better {
            continue;
        }
        match File::open(entry.path()) {
            Ok(file) => {
                found.insert(first, (name, file));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot open {}: {e}", entry.path().display())),
        }
    }
    Ok(found)
}

const PENDING: &str = ".pending";

/// The first seq a segment file name (`<20 digits>.wal`, or with
/// `.pending`) names.
fn segment_first_seq(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(PENDING).unwrap_or(name).strip_suffix(".wal")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Copies what `from` holds now, from its start, to a new file `to`,
/// synced; the bytes copied.
fn copy_file(from: &mut File, to: &Path) -> Result<u64, String> {
    use std::io::Seek;
    from.rewind().map_err(|e| format!("cannot read {}: {e}", to.display()))?;
    let mut out = File::create(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let n =
        io::copy(from, &mut out).map_err(|e| format!("cannot copy to {}: {e}", to.display()))?;
    out.sync_all().map_err(|e| format!("cannot sync {}: {e}", to.display()))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names() {
        assert_eq!(segment_first_seq("00000000000000000017.wal"), Some(17));
        assert_eq!(segment_first_seq("00000000000000000017.wal.pending"), Some(17));
        assert_eq!(segment_first_seq("00000000000000000017.wal.tmp"), None);
        assert_eq!(segment_first_seq("17.wal"), None);
        assert_eq!(segment_first_seq("LOCK"), None);
    }
}
