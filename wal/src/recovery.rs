//! Recovery on open: reading every segment of a log directory back and
//! deciding what the damage found in it means.
//!
//! This module owns the recovery policy (the crate's docs, "Recovery" and
//! "Pending segments", state it as guarantees):
//!
//! - **What is cut.** A torn tail of the last segment, meaning an invalid
//!   frame that no valid frame follows, is what a crash mid-append leaves:
//!   it is truncated, with a warning, and reported in [`Recovery`]. A last
//!   segment too short to hold its header is re-created empty. Zeros after
//!   the last frame are the end of the log, not damage
//!   ([`segment::scan`] reads them so).
//! - **What is Corrupt.** Any damage in a segment before the last (sealed
//!   segments were flushed whole before the next one was named, so no crash
//!   explains it), and damage followed by a valid frame anywhere, are
//!   [`Error::Corrupt`]; a segment that does not start where the one before
//!   it ends is [`Error::OutOfSequence`]. These are refused, changing
//!   nothing.
//! - **Pending segments.** A `.wal.pending` segment after the last named one
//!   is kept (sealed and named, as the seal thread would have, then
//!   recovered as the last segment) only if the segment before it is whole;
//!   otherwise, or if its header never reached the disk, it is deleted and
//!   reported in [`Recovery::discarded`]. One anywhere else, or a second
//!   one, is [`Error::StrayPending`].
//!
//! [`crate::segment`] supplies the facts (a [`Scan`] of each segment);
//! [`crate::wal`] takes the repaired segments as its live log.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::IoContext;
use crate::fs::Fs;
use crate::segment::{self, Scan, Segment, SegmentRef};
use crate::{fsync, seal, Error, Result, Seq};

/// What [`Wal::open`](crate::Wal::open) repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The torn tail cut off the last segment, if there was one.
    pub truncated: Option<TornTail>,
    /// A pending segment deleted whole (its `offset` is 0): the segment
    /// before it had not reached the disk complete, so the records in it
    /// could not follow. Only a machine crash in
    /// [`SyncMode::Never`](crate::SyncMode::Never) or
    /// [`SyncMode::Interval`](crate::SyncMode::Interval) leaves this behind
    /// (see the crate's docs).
    pub discarded: Option<TornTail>,
}

/// Bytes at the end of the last segment that did not form a complete, valid
/// frame (the write of the last record was interrupted by a crash), and
/// were removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file.
    pub segment: PathBuf,
    /// Where the removed bytes started: the new length of the file.
    pub offset: u64,
    /// How many bytes were removed.
    pub discarded_bytes: u64,
}

/// Reads every segment in `dir` and returns the log ready for appending:
/// the sealed segments, oldest first, and the active one, with what was
/// repaired. Cuts a torn tail of the last segment, and keeps or deletes a
/// pending one. Creates the first segment of an empty log.
pub(crate) fn recover(
    fs: &Arc<dyn Fs>,
    dir: &Path,
) -> Result<(VecDeque<SegmentRef>, Segment, Recovery)> {
    let segment::Listing { named: mut segments, pending } = segment::list(&**fs, dir)?;
    if let Some(second) = pending.get(1) {
        return Err(stray(second, "a log has at most one pending segment"));
    }
    let pending = pending.into_iter().next();
    let Some(last) = segments.pop() else {
        if let Some(pending) = pending {
            return Err(stray(&pending, "no named segment comes before it"));
        }
        return Ok((VecDeque::new(), Segment::create(fs, dir, 1)?, Recovery::default()));
    };
    if let Some(pending) = pending.as_ref().filter(|p| p.first_seq <= last.first_seq) {
        return Err(stray(pending, "it does not come after the last named segment"));
    }
    let mut next_first_seq = None;
    for segment in &segments {
        check_follows(segment, next_first_seq)?;
        let scan = segment::scan(&segment.path, segment.first_seq)?;
        if let Some(damage) = scan.damage {
            // Sealed segments were flushed whole before the next one was
            // created, so no crash explains this.
            return Err(Error::Corrupt { segment: segment.path.clone(), offset: damage.offset });
        }
        next_first_seq = Some(segment.first_seq + scan.records);
    }
    check_follows(&last, next_first_seq)?;
    let (mut active, truncated) = recover_last(fs, dir, last)?;
    let mut recovery = Recovery { truncated, discarded: None };
    let mut sealed: VecDeque<SegmentRef> = segments.into();
    if let Some(pending) = pending {
        // Its records can follow only if the segment before it reached the
        // disk whole: its seal had flushed it, or only the process crashed.
        let whole = recovery.truncated.is_none() && active.next_seq() == pending.first_seq;
        match if whole { check_pending(&**fs, dir, &pending)? } else { None } {
            Some((scan, truncated)) => {
                // Seal it as the seal thread would have, then open the
                // pending segment as the last one.
                active.trim()?;
                let file = fs.open_write(&pending.path).at(&pending.path)?;
                let named = segment::named_path(dir, pending.first_seq);
                let (sealed_file, sealed_path) = (&active.file, &active.path);
                seal::seal(&**fs, dir, (sealed_file, sealed_path), (&file, &pending.path), &named)?;
                sealed.push_back(active.to_ref());
                active = Segment::reopen(fs, named, &scan)?;
                recovery.truncated = truncated;
            }
            None => recovery.discarded = Some(discard_pending(&**fs, dir, pending)?),
        }
    }
    Ok((sealed, active, recovery))
}

/// Verifies a pending segment that follows a whole last segment, as
/// [`recover_last`] does the last segment, and cuts off its torn tail; the
/// scan and the tail cut off (reported under the segment's real name, which
/// it is about to get). `None` if its header never reached the disk: then
/// nothing in it can be read.
fn check_pending(
    fs: &dyn Fs,
    dir: &Path,
    pending: &SegmentRef,
) -> Result<Option<(Scan, Option<TornTail>)>> {
    if !segment::has_header(&pending.path, pending.first_seq)? {
        return Ok(None);
    }
    let scan = segment::scan(&pending.path, pending.first_seq)?;
    let torn = match scan.damage {
        None => None,
        Some(damage) if damage.followed_by_valid_frame => {
            return Err(Error::Corrupt { segment: pending.path.clone(), offset: damage.offset });
        }
        Some(damage) => {
            let discarded_bytes = scan.file_len - damage.offset;
            warn_torn(&pending.path, damage.offset, discarded_bytes, damage.invalid.describe());
            segment::truncate(fs, &pending.path, damage.offset)?;
            let segment = segment::named_path(dir, pending.first_seq);
            Some(TornTail { segment, offset: damage.offset, discarded_bytes })
        }
    };
    Ok(Some((scan, torn)))
}

/// Deletes a pending segment that cannot follow the segment before it.
fn discard_pending(fs: &dyn Fs, dir: &Path, pending: SegmentRef) -> Result<TornTail> {
    let len = std::fs::metadata(&pending.path).at(&pending.path)?.len();
    tracing::warn!(
        "{}: discarding a pending segment ({len} bytes, seqs from {} on): the \
         segment before it did not reach the disk whole (a machine crash before its seal)",
        pending.path.display(),
        pending.first_seq,
    );
    fs.remove_file(&pending.path).at(&pending.path)?;
    fsync::dir(fs, dir)?;
    Ok(TornTail { segment: pending.path, offset: 0, discarded_bytes: len })
}

fn stray(pending: &SegmentRef, reason: &'static str) -> Error {
    Error::StrayPending { segment: pending.path.clone(), reason }
}

/// Verifies that `segment` starts right after the segments before it.
fn check_follows(segment: &SegmentRef, expected: Option<Seq>) -> Result<()> {
    match expected {
        Some(expected) if expected != segment.first_seq => Err(Error::OutOfSequence {
            segment: segment.path.clone(),
            offset: 0,
            expected,
            found: segment.first_seq,
        }),
        _ => Ok(()),
    }
}

/// Recovers the last segment: the only place a crash can leave a torn tail.
fn recover_last(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    last: SegmentRef,
) -> Result<(Segment, Option<TornTail>)> {
    let len = std::fs::metadata(&last.path).at(&last.path)?.len();
    if len < segment::HEADER_LEN {
        // `Segment::create` renames a segment into place only once its header
        // is on disk, so this crate never leaves a short header behind. If
        // one turns up anyway (a copy taken mid-creation, a file system that
        // reorders), it holds no frames, and since its name says which seq
        // it starts at, re-creating it loses nothing.
        warn_torn(&last.path, 0, len, "incomplete segment header");
        let active = Segment::create(fs, dir, last.first_seq)?;
        let torn = TornTail { segment: last.path, offset: 0, discarded_bytes: len };
        return Ok((active, Some(torn)));
    }
    let scan = segment::scan(&last.path, last.first_seq)?;
    let torn = match scan.damage {
        None => None,
        Some(damage) if damage.followed_by_valid_frame => {
            return Err(Error::Corrupt { segment: last.path, offset: damage.offset });
        }
        Some(damage) => {
            let discarded_bytes = scan.file_len - damage.offset;
            warn_torn(&last.path, damage.offset, discarded_bytes, damage.invalid.describe());
            segment::truncate(&**fs, &last.path, damage.offset)?;
            Some(TornTail { segment: last.path.clone(), offset: damage.offset, discarded_bytes })
        }
    };
    Ok((Segment::reopen(fs, last.path, &scan)?, torn))
}

fn warn_torn(path: &Path, offset: u64, discarded: u64, what: &str) {
    tracing::warn!(
        "{}: torn tail at offset {offset} ({what}); discarding {discarded} bytes",
        path.display()
    );
}
