//! Reading records back: the [`Replay`] iterator.
//!
//! A replay works on a snapshot taken when it was created: the list of
//! segments that held the wanted records, and the last seq appended. It maps
//! one segment at a time, verifies each frame again (the disk may have
//! changed since the log was opened) and stops after the snapshot's last
//! seq, so records appended meanwhile, and any frame still being written,
//! are never looked at.

use std::io::ErrorKind;
use std::path::PathBuf;

use memmap2::Mmap;

use crate::segment::{self, SegmentRef};
use crate::{record, Error, Result, Seq, Wal};

/// Iterator over stored records, oldest first, as `(seq, payload)`; made by
/// [`Wal::replay_from`].
///
/// After yielding an error it yields nothing more.
pub struct Replay<'a> {
    wal: &'a Wal,
    /// Segments not opened yet, each with the first seq *after* it, oldest
    /// first.
    pending: std::vec::IntoIter<(SegmentRef, Seq)>,
    current: Option<Cursor>,
    /// Records before this are read (they share a segment with wanted ones)
    /// but not yielded.
    from: Seq,
    /// The seq the next frame must have.
    next_seq: Seq,
    /// The last seq appended when the replay was made: where it ends.
    last: Seq,
    failed: bool,
}

/// A position in a mapped segment.
struct Cursor {
    path: PathBuf,
    map: Mmap,
    offset: usize,
    /// The first seq of the next segment: this one holds the seqs before.
    end_seq: Seq,
}

impl<'a> Replay<'a> {
    /// A replay of the records `from..=last` found in `segments` (oldest
    /// first, the first one holding `from`).
    pub(crate) fn new(wal: &'a Wal, segments: Vec<SegmentRef>, from: Seq, last: Seq) -> Self {
        // Reading starts at the first record of the first segment, unless
        // `from` is past the end and there is nothing to read.
        let next_seq = match segments.first() {
            Some(first) if from <= last => first.first_seq,
            _ => from,
        };
        let ends: Vec<Seq> =
            segments.iter().skip(1).map(|segment| segment.first_seq).chain([last + 1]).collect();
        let pending: Vec<(SegmentRef, Seq)> = segments.into_iter().zip(ends).collect();
        Replay {
            wal,
            pending: pending.into_iter(),
            current: None,
            from,
            next_seq,
            last,
            failed: false,
        }
    }

    /// The next record, or `None` at the end of the snapshot.
    fn read_next(&mut self) -> Result<Option<(Seq, Vec<u8>)>> {
        while self.next_seq <= self.last {
            let cursor = match self.current.take() {
                Some(cursor) if self.next_seq < cursor.end_seq => cursor,
                _ => match self.pending.next() {
                    Some((segment, end_seq)) => self.open(segment, end_seq)?,
                    None => return Ok(None),
                },
            };
            let cursor = self.current.insert(cursor);
            let offset = cursor.offset;
            // Running out of bytes before `end_seq` is damage too: `decode`
            // of an empty slice is an error.
            let frame = record::decode(&cursor.map[offset..]).map_err(|_| Error::Corrupt {
                segment: cursor.path.clone(),
                offset: offset as u64,
            })?;
            if frame.seq != self.next_seq {
                return Err(Error::OutOfSequence {
                    segment: cursor.path.clone(),
                    offset: offset as u64,
                    expected: self.next_seq,
                    found: frame.seq,
                });
            }
            cursor.offset += frame.encoded_len();
            self.next_seq += 1;
            if frame.seq >= self.from {
                return Ok(Some((frame.seq, frame.payload.to_vec())));
            }
        }
        Ok(None)
    }

    fn open(&self, mut segment: SegmentRef, end_seq: Seq) -> Result<Cursor> {
        let mut mapped = segment::open_mapped(&segment.path, segment.first_seq);
        // A pending segment named by its seal since the replay was made.
        if let Err(Error::Io { source, .. }) = &mapped {
            if let Some(named) = segment::named_after_pending(&segment.path) {
                if source.kind() == ErrorKind::NotFound {
                    mapped = segment::open_mapped(&named, segment.first_seq);
                    segment.path = named;
                }
            }
        }
        match mapped {
            Ok(map) => Ok(Cursor {
                path: segment.path,
                map,
                offset: segment::HEADER_LEN as usize,
                end_seq,
            }),
            // Deleted by `remove_through` since the replay was made.
            Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                Err(Error::SeqGap {
                    requested: self.next_seq.max(self.from),
                    first_available: self.wal.oldest_seq(),
                })
            }
            Err(err) => Err(err),
        }
    }
}

impl Iterator for Replay<'_> {
    type Item = Result<(Seq, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.read_next();
        self.failed = next.is_err();
        next.transpose()
    }
}

impl std::fmt::Debug for Replay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("next_seq", &self.next_seq)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}
