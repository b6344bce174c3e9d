//! Checking a log directory without changing it: every segment's header
//! and every frame's checksum and seq, in order, handing each record to
//! the caller (`natter verify` replays them). Unlike recovery it repairs
//! nothing and removes nothing, so it may look at a copy or at the
//! directory of a stopped log.

use std::path::{Path, PathBuf};

use crate::segment::{self, SegmentRef, HEADER_LEN};
use crate::{record, Error, Result, Seq, TornTail};

/// What [`check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The segments read, oldest first: file, first seq, records.
    pub segments: Vec<(PathBuf, Seq, u64)>,
    /// The last record's seq: one before the seq the next record would get
    /// (0 for a new log).
    pub last_seq: Seq,
    /// A torn tail at the end of the last segment (what a crash
    /// mid-append leaves): recovery would cut it off.
    pub torn_tail: Option<TornTail>,
}

impl Checked {
    /// The first record's seq, if the log holds any.
    pub fn first_seq(&self) -> Option<Seq> {
        self.segments.iter().find(|s| s.2 > 0).map(|s| s.1)
    }
}

/// Reads every segment of the log in `dir` (a missing directory is an
/// empty log) and calls `each(segment, offset, seq, payload)` for each
/// valid record in order; `each` returning false stops the reading.
///
/// Errors: damage anywhere but a torn tail of the last segment is
/// [`Error::Corrupt`] (segment and offset); a segment that does not start
/// where the one before it ends (one is missing) is
/// [`Error::OutOfSequence`]; a bad header is [`Error::BadHeader`].
pub fn check(dir: &Path, mut each: impl FnMut(&Path, u64, Seq, &[u8]) -> bool) -> Result<Checked> {
    let mut checked = Checked::default();
    if !dir.exists() {
        return Ok(checked);
    }
    let listing = segment::list_with(dir, None)?;
    let mut segments: Vec<SegmentRef> = listing.named;
    if let Some(pending) = listing.pending.into_iter().next() {
        segments.push(pending);
    }
    let count = segments.len();
    let mut next: Option<Seq> = None;
    for (i, segment) in segments.into_iter().enumerate() {
        let last = i + 1 == count;
        if let Some(expected) = next.filter(|&e| e != segment.first_seq) {
            return Err(Error::OutOfSequence {
                segment: segment.path,
                offset: 0,
                expected,
                found: segment.first_seq,
            });
        }
        let len = std::fs::metadata(&segment.path).map_err(|e| Error::io(&segment.path, e))?.len();
        if last && len < HEADER_LEN {
            let torn = TornTail { segment: segment.path.clone(), offset: 0, discarded_bytes: len };
            checked.torn_tail = Some(torn);
            checked.segments.push((segment.path, segment.first_seq, 0));
            break;
        }
        let scan = segment::scan(&segment.path, segment.first_seq)?;
        if let Some(damage) = scan.damage {
            if !last || damage.followed_by_valid_frame {
                return Err(Error::Corrupt { segment: segment.path, offset: damage.offset });
            }
            checked.torn_tail = Some(TornTail {
                segment: segment.path.clone(),
                offset: damage.offset,
                discarded_bytes: scan.file_len - damage.offset,
            });
        }
        let map = segment::open_mapped(&segment.path, segment.first_seq)?;
        let mut offset = HEADER_LEN as usize;
        for _ in 0..scan.records {
            let frame = record::decode(&map[offset..]).map_err(|_| Error::Corrupt {
                segment: segment.path.clone(),
                offset: offset as u64,
            })?;
            if !each(&segment.path, offset as u64, frame.seq, frame.payload) {
                return Ok(checked);
            }
            offset += frame.encoded_len();
        }
        next = Some(segment.first_seq + scan.records);
        checked.last_seq = checked.last_seq.max(segment.first_seq + scan.records - 1);
        checked.segments.push((segment.path, segment.first_seq, scan.records));
    }
    Ok(checked)
}
