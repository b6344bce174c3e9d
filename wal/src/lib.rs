//! A checksummed, segmented, append-only log of sequenced byte records, with
//! group commit.
//!
//! Records are opaque byte strings. Each gets the next sequence number
//! ([`Seq`], starting at 1) when it is appended; the log stores them in
//! order, tells when they are durable, reads them back after a restart, and
//! deletes old ones a whole segment at a time. It knows nothing about what
//! the bytes mean.
//!
//! ```
//! use wal::{Options, Wal};
//!
//! let dir = tempfile::tempdir()?;
//! let (log, recovery) = Wal::open(dir.path(), Options::default())?;
//! assert_eq!(recovery.truncated, None);
//!
//! let seq = log.append(b"hello")?;
//! log.wait_durable(seq); // on disk now: survives a power cut
//! log.append(b"world")?;
//! log.close()?;
//!
//! let (log, _) = Wal::open(dir.path(), Options::default())?;
//! let records: Vec<(u64, Vec<u8>)> = log.replay_from(1)?.collect::<Result<_, _>>()?;
//! assert_eq!(records, [(1, b"hello".to_vec()), (2, b"world".to_vec())]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # On-disk format (version 1)
//!
//! All integers are little-endian. CRC-32 is the IEEE polynomial as in zlib
//! and gzip (the `crc32fast` crate).
//!
//! ## Directory
//!
//! A log is a directory of *segment* files. A segment is named after the seq
//! of its first record, as twenty decimal digits, zero-padded, plus `.wal`:
//! `00000000000000000001.wal`. Twenty digits hold any `u64`, so sorting the
//! names as strings sorts the segments by seq. The segments hold contiguous
//! seq ranges: each starts right after the last record of the one before it.
//! The last segment is the *active* one, the only one written to.
//!
//! A segment is created as `<name>.wal.tmp`, its header written and flushed,
//! then renamed to `<name>.wal` and the directory flushed. A leftover
//! `.wal.tmp` file is an interrupted creation and is deleted on open. Other
//! files in the directory are ignored.
//!
//! **Pending segments.** In [`SyncMode::Never`] and [`SyncMode::Interval`],
//! the segment after a full one starts as `<name>.wal.pending`, without a
//! flush, and appends go into it at once; a thread flushes the full segment,
//! then the pending one, renames it to `<name>.wal` and flushes the
//! directory. There is at most one pending segment, and it is the last.
//! On open, a pending segment is kept (named, and then recovered like any
//! last segment) only if the segment before it is whole: no torn tail, and
//! its last record is the one just before the pending segment's first. If
//! not, or if its header is missing or all zeros, it is deleted: the machine
//! crashed before the seal, and the records in it cannot follow the ones
//! kept. A pending segment with no named segment before it, or before the
//! last named one, or a second one, is refused.
//!
//! ## Segment header (24 bytes)
//!
//! | offset | size | field                                                |
//! |-------:|-----:|------------------------------------------------------|
//! |      0 |    8 | magic: the ASCII bytes `NATTRWAL`                    |
//! |      8 |    4 | format version, `u32`: 1                             |
//! |     12 |    8 | first seq, `u64`: the seq the segment's first record has (or will have); equal to the file name's |
//! |     20 |    4 | CRC-32 of bytes 0..20                                |
//!
//! The header makes a segment self-describing even when it holds no record:
//! an empty active segment whose first seq is N means the last seq appended
//! is N - 1, which is how the log remembers its position after every older
//! segment was removed.
//!
//! ## Frames
//!
//! After the header come frames, one per record, back to back, in seq
//! order:
//!
//! | offset | size | field                                                 |
//! |-------:|-----:|-------------------------------------------------------|
//! |      0 |    4 | payload length in bytes, `u32`                        |
//! |      4 |    4 | CRC-32 of the length field, the seq field and the payload, in that order |
//! |      8 |    8 | seq, `u64` (never 0)                                  |
//! |     16 |  len | payload                                               |
//!
//! The CRC covers everything in the frame but itself. A frame whose bytes
//! were zeroed, cut short, shifted, or mixed with another frame fails it
//! (except with probability about 2<sup>-32</sup>), and a frame copied to
//! the wrong place fails the seq check that follows.
//!
//! **Zero-filled tails.** A frame header of sixteen zero bytes is never
//! valid (its CRC field would have to equal the CRC of a zero length and
//! seq, which is not zero, and seq 0 is never used), so zeros are never
//! read as a frame. Zeros from after the last frame to the end of a
//! segment are the end of the log: in the modes with a sync thread the log
//! writes zeros ahead of its frames, up to the next MiB, so that the
//! `fdatasync` after an append writes only data, not the file's new size
//! (about half the time per sync); and a machine crash while a file grows
//! may leave the new size recorded but not the data. Rotation and
//! [`Wal::close`] cut the zeros off, so a sealed segment ends with its last
//! frame.
//!
//! # Guarantees
//!
//! - **Order.** Seqs are contiguous: every append gets the last seq plus
//!   one, across segments, removals and restarts.
//! - **Process crash.** A record is written with one `write(2)` before
//!   [`Wal::append`] returns (a batch with one per segment it fills, before
//!   [`Wal::append_many`] returns), so it survives a crash of the process
//!   at once.
//! - **Machine crash.** A record survives a crash of the machine once it is
//!   *durable*. What durable means depends on the [`SyncMode`]:
//!   - [`SyncMode::Always`] (the default): durable means flushed by
//!     `fdatasync`, so nothing reported durable is lost. A sync thread
//!     flushes continuously, one batch of appends per fsync (*group
//!     commit*): writers that append while one fsync is in flight share the
//!     next one, so throughput grows with the number of writers while each
//!     waits about one to two fsyncs.
//!   - [`SyncMode::Interval`]`(d)`: durable as soon as appended; the sync
//!     thread flushes every `d`. A machine crash loses at most about `d` of
//!     appends.
//!   - [`SyncMode::Never`]: durable as soon as appended; the log flushes
//!     only to seal a full segment (on a thread of its own) and on
//!     [`Wal::sync`] / [`Wal::close`] (it asks the kernel to start writing
//!     back every 4 MiB, so that a seal's flush is short; that promises
//!     nothing). A machine crash loses whatever the operating system had
//!     not written back.
//!
//!   Callers learn about durability by blocking in [`Wal::wait_durable`],
//!   polling [`Wal::durable_seq`], or being called back through
//!   [`Options::on_durable`].
//! - **Sealed segments are whole.** A segment is flushed before the one
//!   after it gets its real name, in every mode: in [`SyncMode::Always`]
//!   before the new segment is created, in the other modes by the seal
//!   thread (see *Pending segments* above), so the appender that fills a
//!   segment never waits for a disk busy with other writes. So only the last
//!   named segment, and a pending one after it, can be torn by a crash.
//! - **Failed fsync.** If an fsync fails, the process prints why and
//!   aborts. After a failed fsync, Linux may already have dropped the data
//!   it could not write, and a retry would report success for lost writes
//!   (PostgreSQL's "fsyncgate"); restarting and recovering from what is on
//!   disk is the only safe course.
//!
//! # Recovery
//!
//! [`Wal::open`] reads and verifies every frame of every segment:
//!
//! - **Zeros to the end of the file** after the last valid frame are the
//!   end of the log (see above): kept, without a warning.
//! - A **torn tail**, meaning an invalid frame in the *last* segment after
//!   which no valid frame follows (checked at every byte offset), is what a
//!   crash in the middle of an append leaves. It is cut off, the file is
//!   flushed, a warning goes to stderr, and [`Recovery::truncated`] says
//!   what was removed. A last segment too short to hold its header is
//!   treated the same way and re-created with a fresh header: it holds no
//!   records, and its name says which seq it starts at.
//! - **Any other damage** is refused, changing nothing: an invalid frame in
//!   an earlier segment, or one followed by a valid frame, is
//!   [`Error::Corrupt`] with the segment and the frame's offset; a bad
//!   header is [`Error::BadHeader`] or [`Error::UnsupportedVersion`]; a
//!   valid frame or segment whose seq does not follow its predecessor is
//!   [`Error::OutOfSequence`]. These are not crash damage, and repairing
//!   them would silently drop records written after them.
//!
//! Everything recovered is flushed and counts as durable, and appends
//! continue at the repaired end.
//!
//! # File system
//!
//! Every change the log makes to its files, and every flush, goes through
//! [`Options::fs`], a [`Fs`]: [`RealFs`] (the system calls) by default.
//! [`sim::SimFs`] is a simulated file system for tests: it injects `EIO`,
//! `ENOSPC` and short writes, and cuts the power at any call, dropping
//! whatever was not flushed (file data, and directory entries whose
//! directory was not flushed).
//!
//! # Limits
//!
//! A log directory is used by one [`Wal`] at a time: [`Wal::open`] takes an
//! exclusive advisory lock (`flock`) on the directory and fails with
//! [`Error::Locked`] while another `Wal`, in any process, holds it. A payload
//! can be at most `u32::MAX` bytes.

#![deny(missing_docs)]

mod check;
mod durability;
mod error;
mod fs;
mod fsync;
mod record;
mod recovery;
mod replay;
mod seal;
mod segment;
pub mod sim;
mod stats;
mod wal;

pub use check::{check, Checked};
pub use error::{Error, Result};
pub use fs::{Fs, RealFs};
pub use recovery::{Recovery, TornTail};
pub use replay::Replay;
pub use stats::{Histogram, HistogramFigures, Stats};
pub use wal::{Options, Seq, SyncMode, Wal, GATHER_MIN};
