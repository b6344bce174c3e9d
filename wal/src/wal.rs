//! The log: the live directory of segments behind the public [`Wal`] handle.
//!
//! This module opens the directory (locking it, and taking the segments
//! [`crate::recovery`] hands back), appends and rotates, syncs, serves
//! replays and removes old segments. It owns the decision of when a segment
//! is sealed; what damage found on open means (a torn tail to cut, or
//! corruption to refuse) is [`crate::recovery`]'s.
//!
//! # Locks
//!
//! - [`Shared::log`] guards the segment list and the active segment. An
//!   append holds it for one `write(2)`, so appends are serialized in seq
//!   order; nothing holds it across the group-commit fsync.
//! - [`Shared::deferred`] guards the records of [`Wal::append_deferred`]
//!   not yet written; taken after the log's lock when both are held.
//! - The progress counters in [`Durability`] have their own lock, taken
//!   after the other two (never the other way round) when an append
//!   publishes its seq.
//! - [`Shared::removal`] lets one `remove_through` run at a time.

use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::durability::{self, Durability};
use crate::error::IoContext;
use crate::fs::{Fs, RealFs};
use crate::recovery::{self, Recovery};
use crate::replay::Replay;
use crate::seal::{Done, Seal};
use crate::segment::{self, Segment, SegmentRef};
use crate::stats::Stats;
use crate::{fsync, record, Error, Result};

/// A record's sequence number. The first record ever appended is seq 1, and
/// each append gets the next one; 0 means "none".
pub type Seq = u64;

/// When appended records are flushed to disk, and so what a crash of the
/// machine can lose. (A crash of the process alone loses nothing that
/// [`Wal::append`] returned: the data is in the kernel's page cache.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// A record is durable once an `fdatasync` covering it has returned.
    /// A sync thread performs the fsyncs, one batch of appends at a time
    /// (group commit). Nothing reported durable is ever lost.
    Always,
    /// The log never flushes (except to seal a full segment, on a thread of
    /// its own, and on [`Wal::sync`] and [`Wal::close`]); a record counts
    /// as durable as soon as it is appended. A machine crash loses whatever the operating
    /// system had not yet written back, typically up to about 30 seconds
    /// (less: the log starts writeback every 4 MiB, see `EARLY_WRITEBACK`).
    Never,
    /// A record counts as durable as soon as it is appended, and a sync
    /// thread flushes every given period: a machine crash loses at most the
    /// last period of appends (plus the time one fsync takes, or a seal
    /// when a segment has just filled). Periods shorter than a millisecond
    /// are raised to one millisecond.
    Interval(Duration),
}

/// How to open a log.
#[derive(Clone)]
pub struct Options {
    /// Size a segment may reach before the log starts a new one: an append
    /// that would grow the active segment past it goes to a new segment
    /// instead (a single record larger than this gets a segment of its own).
    /// Default: 64 MiB.
    pub segment_bytes: u64,
    /// When to flush. Default: [`SyncMode::Always`].
    pub sync: SyncMode,
    /// Called each time the durable seq advances, with the new durable seq:
    /// from the sync thread in [`SyncMode::Always`], from inside
    /// [`Wal::append`] in the other modes, and from [`Wal::sync`]. Calls are
    /// made one at a time with strictly increasing seqs; several advances in
    /// quick succession may be reported as one call with the newest. It is
    /// not called for records recovered by [`Wal::open`]. It may call back
    /// into the log, except for [`Wal::wait_durable`] (on the sync thread
    /// that would wait for itself); it should return quickly, and must not
    /// panic (a panic on the sync thread aborts the process). This is how code that must not
    /// block its OS thread, such as a coroutine, learns about durability.
    pub on_durable: Option<Arc<dyn Fn(Seq) + Send + Sync>>,
    /// [`SyncMode::Always`]: how long the sync thread waits for more
    /// appends before an `fdatasync`, when the previous one covered at
    /// least [`GATHER_MIN`] records (concurrent writers); a lone writer is
    /// never held back. Each sync costs CPU for its writeback, wake-ups
    /// and context switches, so under concurrency, syncing a little later
    /// with more records in it gives more throughput for a little latency.
    /// Default: zero (sync as soon as the previous one returns).
    pub gather: Duration,
    /// Where the log's files are changed and flushed. Default: [`RealFs`];
    /// tests pass a [`crate::sim::SimFs`] to inject faults and power cuts.
    pub fs: Arc<dyn Fs>,
}

/// The fewest records the previous `fdatasync` must have covered before
/// the sync thread waits [`Options::gather`] before the next.
pub const GATHER_MIN: u64 = 4;

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_bytes: 64 << 20,
            sync: SyncMode::Always,
            on_durable: None,
            gather: Duration::ZERO,
            fs: Arc::new(RealFs),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("segment_bytes", &self.segment_bytes)
            .field("sync", &self.sync)
            .field("on_durable", &self.on_durable.as_ref().map(|_| "Fn(Seq)"))
            .field("gather", &self.gather)
            .field("fs", &self.fs)
            .finish()
    }
}

/// An open log. `Send + Sync`: share it between threads with an `Arc`.
///
/// Dropping it stops the sync thread after a last flush of outstanding
/// appends (in `Always` and `Interval` modes); [`Wal::close`] does the same
/// and also flushes in `Never` mode.
pub struct Wal {
    shared: Arc<Shared>,
    /// `None` in `Never` mode, and once stopped.
    sync_thread: Option<JoinHandle<()>>,
    /// The log directory, opened only to hold an exclusive advisory lock
    /// (`flock`) on it for as long as the log is open. The operating system
    /// releases it when the process dies, so a crash leaves no stale lock.
    _dir_lock: File,
}

/// The state the `Wal` handle shares with its sync thread.
pub(crate) struct Shared {
    dir: PathBuf,
    /// [`Options::fs`].
    pub(crate) fs: Arc<dyn Fs>,
    segment_bytes: u64,
    log: Mutex<Log>,
    pub(crate) durability: Durability,
    /// Held for the whole of `remove_through`, so that only one thread at a
    /// time deletes segments and pops them off [`Log::sealed`].
    removal: Mutex<()>,
    /// [`Options::gather`].
    pub(crate) gather: Duration,
    /// Records handed to [`Wal::append_deferred`], not yet written.
    deferred: Mutex<Deferred>,
    /// Flush durations, commit-group sizes and bytes appended.
    pub(crate) stats: Arc<Stats>,
}

/// Records queued by [`Wal::append_deferred`], in seq order, for the sync
/// thread to write just before its next `fdatasync`.
#[derive(Default)]
struct Deferred {
    /// The payloads, back to back.
    bytes: Vec<u8>,
    /// Where each payload ends in `bytes`.
    ends: Vec<usize>,
    /// The seq the next queued record gets: one past the last queued, or
    /// past the last written when nothing is queued.
    next: Seq,
}

/// The segments, and what is needed to append.
struct Log {
    /// Segments before the active one, oldest first. Each is complete, and
    /// flushed before the segment after it gets its real name: rotation
    /// flushes it before creating the next one (`Always` mode), or `seal`
    /// does before naming it. That is what lets recovery call any damage in
    /// them corruption.
    sealed: VecDeque<SegmentRef>,
    active: Segment,
    /// In `Never` and `Interval` modes, the seal of the last sealed
    /// segment while it is in flight: the active segment is pending until
    /// it has finished (see [`crate::seal`]).
    sealing: Option<Seal>,
    /// Whether rotation seals on a thread (`Never` and `Interval` modes)
    /// instead of flushing before it returns (`Always` mode, whose sync
    /// thread rotates and must flush the old segment before any record of
    /// the new one can be durable anyway).
    seal_on_thread: bool,
    /// Reused buffer for encoding a frame, so an append does not allocate.
    frame: Vec<u8>,
    /// Set when a failed write could not be rolled back: see
    /// [`Error::Poisoned`].
    poisoned: bool,
    /// The buffers of the last deferred batch written, kept for the next.
    spare: Deferred,
    /// `Never` mode: where in the active segment the next early writeback
    /// starts (see [`EARLY_WRITEBACK`]); `None` in the other modes, whose
    /// sync thread keeps the segment's dirty pages few.
    writeback_from: Option<u64>,
    /// Whether active segments get zeros written ahead of their frames
    /// (`segment::PREALLOCATE`): in the modes with a sync thread, whose
    /// syncs then need not write the file's size.
    preallocate: bool,
    /// [`Options::fs`].
    fs: Arc<dyn Fs>,
    /// The log's figures (bytes appended), shared with [`Shared::stats`].
    stats: Arc<Stats>,
}

/// In `Never` mode nothing flushes the active segment until its seal,
/// which must then `fdatasync` a whole segment's dirty pages (on its own
/// thread, but also filling the disk's queue). So every this many bytes
/// the log asks the kernel to start writing the new part back
/// (`fsync::start_writeback`: it starts I/O, does not wait for it, and
/// promises nothing), and the seal's flush finds little left to do.
const EARLY_WRITEBACK: u64 = 4 << 20;

/// A frame buffer that grew past this is freed after use, so that one huge
/// record does not pin its size in memory.
const MAX_KEPT_FRAME_BUFFER: usize = 1 << 20;

impl Wal {
    /// Opens the log in `dir`, creating the directory if it is missing, and
    /// recovers it.
    ///
    /// Every segment is read and verified. Zeros after the last frame are
    /// the end of the log (appends write zeros ahead of their frames, see
    /// `segment::PREALLOCATE`), not damage. A torn tail of the last segment
    /// (the result of a crash mid-append) is cut off, with a warning on
    /// stderr, and reported in the returned [`Recovery`]; any other damage
    /// is refused with an error ([`Error::Corrupt`], [`Error::BadHeader`],
    /// [`Error::OutOfSequence`], ...) and nothing is changed. Everything
    /// recovered counts as durable. Then the sync thread starts.
    ///
    /// Only one `Wal` at a time can have a directory open, in this process
    /// or another: the directory is locked, and a second open fails with
    /// [`Error::Locked`].
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<(Wal, Recovery)> {
        let dir = dir.as_ref().to_path_buf();
        create_dir(&*opts.fs, &dir)?;
        let dir_lock = lock_dir(&dir)?;
        let (sealed, active, recovery) = recovery::recover(&opts.fs, &dir)?;
        let mut log = Log::new(sealed, active, Arc::clone(&opts.fs));
        log.seal_on_thread = opts.sync != SyncMode::Always;
        if matches!(opts.sync, SyncMode::Never) {
            log.writeback_from = Some(log.active.len);
        } else {
            log.preallocate = true;
            log.active.set_preallocate(true);
        }
        let stats = Arc::clone(&log.stats);
        let shared = Arc::new(Shared {
            durability: Durability::new(opts.sync, log.last_seq(), opts.on_durable),
            dir,
            fs: opts.fs,
            segment_bytes: opts.segment_bytes,
            deferred: Mutex::new(Deferred { next: log.last_seq() + 1, ..Deferred::default() }),
            log: Mutex::new(log),
            removal: Mutex::new(()),
            gather: opts.gather,
            stats,
        });
        let sync_thread = match opts.sync {
            SyncMode::Never => None,
            SyncMode::Always | SyncMode::Interval(_) => {
                let thread_shared = Arc::clone(&shared);
                let handle = thread::Builder::new()
                    .name("wal-sync".into())
                    .spawn(move || durability::run_sync_thread(&thread_shared))
                    .at(&shared.dir)?;
                Some(handle)
            }
        };
        Ok((Wal { shared, sync_thread, _dir_lock: dir_lock }, recovery))
    }

    /// The oldest seq still stored, or 0 if no record is stored.
    pub fn first_seq(&self) -> Seq {
        let log = self.shared.log();
        let oldest = log.oldest_seq();
        if oldest <= log.last_seq() {
            oldest
        } else {
            0
        }
    }

    /// The last seq appended, or 0 if nothing ever was. Removing segments
    /// and reopening the log do not change it.
    pub fn last_seq(&self) -> Seq {
        self.shared.log().last_seq()
    }

    /// The file system the log changes its files through
    /// ([`Options::fs`]), for files that must reach the disk with the
    /// same guarantees (and the same faults, in tests).
    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.shared.fs
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The mode the log was opened with.
    pub fn sync_mode(&self) -> SyncMode {
        self.shared.durability.mode()
    }

    /// Whether a failed write left the log refusing appends
    /// ([`Error::Poisoned`]).
    pub fn is_poisoned(&self) -> bool {
        lock(&self.shared.log).poisoned
    }

    /// The last seq that is durable (see [`SyncMode`] for what that means
    /// in each mode).
    pub fn durable_seq(&self) -> Seq {
        self.shared.durability.durable()
    }

    /// Appends a record and returns its seq.
    ///
    /// The frame is written with one `write(2)`, without an fsync: the
    /// record survives a crash of the process at once, and a crash of the
    /// machine once it is durable ([`Wal::wait_durable`],
    /// [`Options::on_durable`]). If the active segment is full, the log
    /// first rotates to a new one: in `Always` mode that costs this append
    /// a few fsyncs; in the others it creates a file and starts a thread
    /// to seal the full segment (and waits only if the seal before that
    /// one is still running, when a whole segment filled in less time than
    /// one seal takes).
    pub fn append(&self, payload: &[u8]) -> Result<Seq> {
        if self.shared.durability.mode() == SyncMode::Always {
            return self.append_many([payload]);
        }
        let (seq, advanced) = {
            let mut log = self.shared.log();
            let seq = log.append(&self.shared.dir, self.shared.segment_bytes, payload)?;
            (seq, self.shared.durability.record_appended(seq))
        };
        if advanced {
            self.shared.durability.report(seq);
        }
        Ok(seq)
    }

    /// Appends several records, in order, and returns the seq of the last
    /// (the first gets [`Wal::last_seq`] + 1); with none, appends nothing
    /// and returns [`Wal::last_seq`].
    ///
    /// The frames go to the file with one `write(2)` (one per segment when
    /// they fill the active one), where [`Wal::append`] for each would make
    /// a system call per record: a group-committing caller hands over
    /// every record queued since its last append at once. Durability and
    /// failures are as for [`Wal::append`]; a failed write appends none of
    /// the frames of that write.
    pub fn append_many<'a>(&self, payloads: impl IntoIterator<Item = &'a [u8]>) -> Result<Seq> {
        if self.shared.durability.mode() == SyncMode::Always {
            return self.shared.append_after_deferred(payloads);
        }
        let (seq, advanced) = {
            let mut log = self.shared.log();
            let before = log.last_seq();
            let seq = log.append_many(&self.shared.dir, self.shared.segment_bytes, payloads)?;
            (seq, seq > before && self.shared.durability.record_appended(seq))
        };
        if advanced {
            self.shared.durability.report(seq);
        }
        Ok(seq)
    }

    /// Queues records, in order, for the sync thread to write just before
    /// its next `fdatasync`, and returns the seq of the last (as
    /// [`Wal::append_many`] numbers them; with none, the last seq queued
    /// or written). In [`SyncMode::Always`] only; in the other modes this
    /// is [`Wal::append_many`].
    ///
    /// The caller makes no system call: the sync thread writes every
    /// record queued since its last sync with one `write(2)` and then
    /// flushes them, so a group commit of N writers costs one write, not N.
    /// The records are not in the file, nor counted by [`Wal::last_seq`]
    /// or seen by a replay, until the sync thread (or [`Wal::sync`], or an
    /// [`Wal::append`], which writes what is queued first) has written
    /// them; wait with [`Wal::wait_durable`] or [`Options::on_durable`] as
    /// usual. A failed write of queued records is fatal, like a failed
    /// fsync: the writers have nothing to retry, and the process aborts.
    pub fn append_deferred<'a>(&self, payloads: impl IntoIterator<Item = &'a [u8]>) -> Result<Seq> {
        if self.shared.durability.mode() != SyncMode::Always {
            return self.append_many(payloads);
        }
        let last = self.shared.queue(payloads);
        self.shared.durability.record_queued(last);
        Ok(last)
    }

    /// The log's figures since it was opened: flush durations, how many
    /// records each flush made durable, bytes appended.
    pub fn stats(&self) -> Arc<Stats> {
        Arc::clone(&self.shared.stats)
    }

    /// Blocks the calling OS thread until `seq` is durable. `seq` should
    /// have been returned by [`Wal::append`]: waiting for a seq that is
    /// never appended waits forever.
    pub fn wait_durable(&self, seq: Seq) {
        self.shared.durability.wait(seq);
    }

    /// Flushes everything appended so far to disk before returning, in any
    /// [`SyncMode`].
    pub fn sync(&self) -> Result<()> {
        let (target, flush) = {
            let log = self.shared.log_written()?;
            (log.last_seq(), log.flush_target())
        };
        let (file, path) = flush.once_sealed();
        let started = std::time::Instant::now();
        fsync::data(&*self.shared.fs, &file, &path);
        let stats = &self.shared.stats;
        self.shared
            .durability
            .record_synced(target, |newly| stats.synced(started.elapsed(), newly));
        Ok(())
    }

    /// Reads the stored records with seqs from `from` on, in order.
    ///
    /// `from == 0` means "from the oldest stored record". The replay covers
    /// the records appended before this call. If `from` names a record that
    /// [`Wal::remove_through`] deleted, this fails with [`Error::SeqGap`];
    /// so does the replay itself if a concurrent `remove_through` deletes a
    /// segment before the replay reaches it.
    pub fn replay_from(&self, from: Seq) -> Result<Replay<'_>> {
        let log = self.shared.log();
        let oldest = log.oldest_seq();
        if from != 0 && from < oldest {
            return Err(Error::SeqGap { requested: from, first_available: oldest });
        }
        let from = from.max(oldest);
        // Skip the segments that end before `from`.
        let mut segments: Vec<SegmentRef> = log.sealed.iter().cloned().collect();
        segments.push(log.active.to_ref());
        let start = segments.partition_point(|segment| segment.first_seq <= from).saturating_sub(1);
        segments.drain(..start);
        Ok(Replay::new(self, segments, from, log.last_seq()))
    }

    /// Deletes the segments all of whose records have seqs up to `seq`,
    /// oldest first; never the active segment. Seqs are unaffected: the
    /// next append continues after [`Wal::last_seq`].
    pub fn remove_through(&self, seq: Seq) -> Result<()> {
        let _one_at_a_time = lock(&self.shared.removal);
        let doomed = self.shared.log().sealed_through(seq);
        // One at a time, oldest first, each deletion flushed before the
        // next: whatever a crash or an error interrupts, the segments left
        // on disk are still contiguous.
        for path in doomed {
            self.shared.fs.remove_file(&path).at(&path)?;
            fsync::dir(&*self.shared.fs, &self.shared.dir)?;
            self.shared.log().sealed.pop_front();
        }
        Ok(())
    }

    /// Flushes everything appended, stops the sync thread and closes the
    /// log.
    ///
    /// The zeros written ahead of the active segment's frames are cut off,
    /// so a closed log's files end with their last frames.
    pub fn close(mut self) -> Result<()> {
        self.sync()?;
        self.stop_sync_thread();
        let mut log = self.shared.log();
        log.finish_seal(true)?;
        log.active.trim()?;
        fsync::all(&*self.shared.fs, &log.active.file, &log.active.path);
        Ok(())
    }

    /// The oldest seq a replay could start from: the first seq of the oldest
    /// segment (one past the last seq if no record is stored).
    pub(crate) fn oldest_seq(&self) -> Seq {
        self.shared.log().oldest_seq()
    }

    fn stop_sync_thread(&mut self) {
        self.shared.durability.shutdown();
        let Some(handle) = self.sync_thread.take() else {
            return;
        };
        // If the last handle is dropped by the sync thread itself (inside
        // `on_durable`), it cannot wait for itself; it exits on its own once
        // the callback returns.
        if handle.thread().id() != thread::current().id() && handle.join().is_err() {
            tracing::warn!("the sync thread panicked");
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.stop_sync_thread();
        // A seal still running would rename a file in a directory whose
        // lock is about to be released.
        let _ = self.shared.log().finish_seal(true);
    }
}

impl fmt::Debug for Wal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.shared.dir)
            .field("first_seq", &self.first_seq())
            .field("last_seq", &self.last_seq())
            .field("durable_seq", &self.durable_seq())
            .finish()
    }
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// The log's lock, after writing the deferred records.
    fn log_written(&self) -> Result<MutexGuard<'_, Log>> {
        let mut log = self.log();
        self.write_deferred(&mut log)?;
        Ok(log)
    }

    /// Queues records for `write_deferred`; the seq of the last queued.
    /// In [`SyncMode::Always`] every record is numbered here, so seqs
    /// follow the queue's order.
    fn queue<'a>(&self, payloads: impl IntoIterator<Item = &'a [u8]>) -> Seq {
        let mut deferred = lock(&self.deferred);
        for payload in payloads {
            deferred.bytes.extend_from_slice(payload);
            let end = deferred.bytes.len();
            deferred.ends.push(end);
            deferred.next += 1;
        }
        deferred.next - 1
    }

    /// Writes every deferred record to the log (one `write(2)` unless the
    /// segment fills) and publishes them as appended; returns the last seq
    /// written. Called with the log's lock held, which keeps seq order.
    fn write_deferred(&self, log: &mut Log) -> Result<Seq> {
        let mut batch = std::mem::take(&mut log.spare);
        {
            let mut deferred = lock(&self.deferred);
            if deferred.ends.is_empty() {
                return Ok(log.last_seq());
            }
            std::mem::swap(&mut batch.bytes, &mut deferred.bytes);
            std::mem::swap(&mut batch.ends, &mut deferred.ends);
            batch.next = deferred.next;
        }
        let expected = batch.next - 1;
        let mut start = 0;
        let payloads = batch.ends.iter().map(|&end| {
            let payload = &batch.bytes[start..end];
            start = end;
            payload
        });
        let written = log.append_many(&self.dir, self.segment_bytes, payloads)?;
        // Every record of this mode is numbered by `queue`.
        assert_eq!(written, expected, "wal: deferred records numbered out of order");
        batch.bytes.clear();
        batch.ends.clear();
        log.spare = batch;
        if self.durability.record_appended(written) {
            self.durability.report(written);
        }
        Ok(written)
    }

    /// [`Wal::append_many`] in [`SyncMode::Always`]: behind whatever is
    /// deferred, which is written first (a failure there is fatal, as on
    /// the sync thread: those writers cannot be told). These records are
    /// then written directly, with the queue locked so that nothing is
    /// numbered meanwhile: a failure is the caller's error, and numbering
    /// goes on from what reached the file.
    fn append_after_deferred<'a>(
        &self,
        payloads: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Seq> {
        let mut log = self.log();
        let mut deferred = loop {
            let deferred = lock(&self.deferred);
            if deferred.ends.is_empty() {
                break deferred;
            }
            drop(deferred);
            if let Err(err) = self.write_deferred(&mut log) {
                deferred_write_failed(&self.dir, &err);
            }
        };
        let before = log.last_seq();
        let written = log.append_many(&self.dir, self.segment_bytes, payloads);
        let last = log.last_seq();
        deferred.next = last + 1;
        drop(deferred);
        if last > before && self.durability.record_appended(last) {
            self.durability.report(last);
        }
        written
    }

    /// The active segment's file, for the sync thread to flush without
    /// holding the log's lock, once a seal in flight has finished.
    pub(crate) fn active_file(&self) -> (Arc<File>, PathBuf) {
        let flush = self.log().flush_target();
        flush.once_sealed()
    }

    /// For the sync thread: writes the deferred records, and returns the
    /// last seq written with the active segment's file, to flush without
    /// holding the log's lock. A failed write aborts the process (see
    /// [`Wal::append_deferred`]).
    pub(crate) fn write_for_sync(&self) -> (Seq, Arc<File>, PathBuf) {
        let log = match self.log_written() {
            Ok(log) => log,
            Err(err) => deferred_write_failed(&self.dir, &err),
        };
        (log.last_seq(), Arc::clone(&log.active.file), log.active.path.clone())
    }
}

/// A write of deferred records failed: their writers wait for a
/// durability that cannot come, and cannot be told; only a restart
/// (recovery reads what is there) is safe.
fn deferred_write_failed(dir: &Path, err: &Error) -> ! {
    eprintln!("wal: fatal: cannot write queued records to {}: {err}", dir.display());
    std::process::abort();
}

/// The active segment, to flush without holding the log's lock, and the
/// seal it waits for if it is pending.
struct FlushTarget {
    file: Arc<File>,
    path: PathBuf,
    seal: Option<Arc<Done>>,
}

impl FlushTarget {
    /// The file, once a pending one is named: the records in a pending
    /// segment survive a crash only once the segment before it is flushed
    /// and the pending one named.
    fn once_sealed(self) -> (Arc<File>, PathBuf) {
        if let Some(seal) = self.seal {
            seal.wait();
        }
        (self.file, self.path)
    }
}

impl Log {
    fn new(sealed: VecDeque<SegmentRef>, active: Segment, fs: Arc<dyn Fs>) -> Log {
        Log {
            fs,
            sealed,
            active,
            frame: Vec::new(),
            spare: Deferred::default(),
            poisoned: false,
            writeback_from: None,
            preallocate: false,
            sealing: None,
            seal_on_thread: false,
            stats: Arc::default(),
        }
    }

    fn last_seq(&self) -> Seq {
        self.active.next_seq() - 1
    }

    fn flush_target(&self) -> FlushTarget {
        FlushTarget {
            file: Arc::clone(&self.active.file),
            path: self.active.path.clone(),
            seal: self.sealing.as_ref().map(Seal::done),
        }
    }

    fn oldest_seq(&self) -> Seq {
        self.sealed.front().map_or(self.active.first_seq, |segment| segment.first_seq)
    }

    fn append(&mut self, dir: &Path, segment_bytes: u64, payload: &[u8]) -> Result<Seq> {
        if self.poisoned {
            return Err(Error::Poisoned);
        }
        self.finish_seal(false)?;
        let seq = self.active.next_seq();
        self.frame.clear();
        record::encode(seq, payload, &mut self.frame)?;
        let full = self.active.len + self.frame.len() as u64 > segment_bytes;
        if full && self.active.records > 0 {
            self.rotate(dir)?;
        }
        let written = self.active.append(&self.frame);
        let bytes = self.frame.len() as u64;
        if self.frame.capacity() > MAX_KEPT_FRAME_BUFFER {
            self.frame = Vec::new();
        }
        match written {
            Ok(()) => {
                self.stats.appended(bytes);
                self.write_back_early();
                Ok(seq)
            }
            Err(Error::Poisoned) => {
                self.poisoned = true;
                Err(Error::Poisoned)
            }
            Err(err) => Err(err),
        }
    }

    fn append_many<'a>(
        &mut self,
        dir: &Path,
        segment_bytes: u64,
        payloads: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Seq> {
        if self.poisoned {
            return Err(Error::Poisoned);
        }
        self.finish_seal(false)?;
        self.frame.clear();
        // Frames encoded but not yet written, and their count.
        let mut pending = 0u64;
        for payload in payloads {
            let seq = self.active.next_seq() + pending;
            let start = self.frame.len();
            record::encode(seq, payload, &mut self.frame)?;
            let len = (self.frame.len() - start) as u64;
            let full = self.active.len + start as u64 + len > segment_bytes;
            if full && self.active.records + pending > 0 {
                // Write what fits before this frame, then rotate: the new
                // segment starts at this frame's seq.
                let tail = self.frame.split_off(start);
                self.write_frames(pending)?;
                self.rotate(dir)?;
                self.frame = tail;
                pending = 0;
            }
            pending += 1;
        }
        self.write_frames(pending)?;
        Ok(self.last_seq())
    }

    /// Writes the `count` frames in `self.frame` to the active segment.
    fn write_frames(&mut self, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let written = self.active.append_frames(&self.frame, count);
        let bytes = self.frame.len() as u64;
        self.frame.clear();
        if self.frame.capacity() > MAX_KEPT_FRAME_BUFFER {
            self.frame = Vec::new();
        }
        match written {
            Ok(()) => {
                self.stats.appended(bytes);
                self.write_back_early();
                Ok(())
            }
            Err(Error::Poisoned) => {
                self.poisoned = true;
                Err(Error::Poisoned)
            }
            Err(err) => Err(err),
        }
    }

    /// `Never` mode: starts writeback of the active segment's newest
    /// `EARLY_WRITEBACK` bytes once there are that many. A failure here is
    /// ignored: it is only advice, and a write error still surfaces at the
    /// rotation's or the close's `fdatasync`, which is fatal.
    fn write_back_early(&mut self) {
        let Some(from) = self.writeback_from else { return };
        let len = self.active.len;
        if len >= from + EARLY_WRITEBACK {
            fsync::start_writeback(&self.active.file, from, len - from);
            self.writeback_from = Some(len);
        }
    }

    /// Seals the active segment and starts a new one after it.
    ///
    /// The old segment is flushed before the new one carries its real name,
    /// so that a named segment followed by another is always complete on
    /// disk, in every mode. Without that, a machine crash could leave a torn
    /// tail in a segment that is no longer the last one, indistinguishable
    /// from corruption. It costs an fsync per `segment_bytes` of log: here,
    /// in `Always` mode; on a seal thread in the others, whose appends
    /// go on meanwhile into the new segment under its pending name (see
    /// [`crate::seal`]). A seal still in flight from the previous rotation
    /// is waited for first, so at most one segment is pending.
    /// The zeros written ahead of its frames are cut off first (and the
    /// flush is a full `fsync`, for the new size): a sealed segment ends
    /// with its last frame.
    fn rotate(&mut self, dir: &Path) -> Result<()> {
        self.finish_seal(true)?;
        self.active.trim()?;
        let first_seq = self.active.next_seq();
        let mut next = if self.seal_on_thread {
            let next = Segment::create_pending(&self.fs, dir, first_seq)?;
            let sealed = (Arc::clone(&self.active.file), self.active.path.clone());
            let pending = (Arc::clone(&next.file), next.path.clone());
            let named = segment::named_path(dir, first_seq);
            match Seal::start(Arc::clone(&self.fs), dir, sealed, pending, named) {
                Ok(seal) => self.sealing = Some(seal),
                Err(err) => {
                    let _ = self.fs.remove_file(&next.path);
                    return Err(err);
                }
            }
            next
        } else {
            fsync::all(&*self.fs, &self.active.file, &self.active.path);
            Segment::create(&self.fs, dir, first_seq)?
        };
        next.set_preallocate(self.preallocate);
        let sealed = std::mem::replace(&mut self.active, next);
        if self.writeback_from.is_some() {
            self.writeback_from = Some(self.active.len);
        }
        self.sealed.push_back(sealed.to_ref());
        Ok(())
    }

    /// Takes in the seal in flight, if it has finished or `wait` says to
    /// wait for it: the active segment then has its real name. A failed
    /// seal leaves the active segment pending, and the log refuses
    /// further appends ([`Error::Poisoned`]): rotating again would make a
    /// second pending segment.
    fn finish_seal(&mut self, wait: bool) -> Result<()> {
        match &self.sealing {
            Some(seal) if wait || seal.finished() => {}
            _ => return Ok(()),
        }
        let Some(seal) = self.sealing.take() else { return Ok(()) };
        let (pending, named) = (seal.pending.clone(), seal.named.clone());
        match seal.join() {
            Ok(()) => {
                debug_assert_eq!(self.active.path, pending);
                self.active.path = named;
                Ok(())
            }
            Err(err) => {
                tracing::error!(
                    "sealing the segment before {} failed ({err}); refusing further \
                     appends",
                    pending.display()
                );
                self.poisoned = true;
                Err(err)
            }
        }
    }

    /// The sealed segments whose records all have seqs up to `seq`, oldest
    /// first; never one whose seal is in flight (until the pending segment
    /// after it is named, recovery needs it to judge that one).
    fn sealed_through(&self, seq: Seq) -> Vec<PathBuf> {
        let next_firsts =
            self.sealed.iter().skip(1).map(|s| s.first_seq).chain([self.active.first_seq]);
        let settled = self.sealed.len() - usize::from(self.sealing.is_some());
        self.sealed
            .iter()
            .take(settled)
            .zip(next_firsts)
            .take_while(|&(_, next_first)| next_first - 1 <= seq)
            .map(|(segment, _)| segment.path.clone())
            .collect()
    }
}

/// Creates the log directory if it is missing, and flushes its parent so the
/// new directory's entry survives a crash.
fn create_dir(fs: &dyn Fs, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs.create_dir_all(dir).at(dir)?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fsync::dir(fs, parent),
        _ => fsync::dir(fs, Path::new(".")),
    }
}

/// Takes the exclusive lock on the log directory that keeps other `Wal`s
/// out: two logs appending to the same segments would interleave frames.
fn lock_dir(dir: &Path) -> Result<File> {
    let lock = File::open(dir).at(dir)?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(TryLockError::WouldBlock) => Err(Error::Locked { dir: dir.to_path_buf() }),
        Err(TryLockError::Error(err)) => Err(Error::io(dir, err)),
    }
}

/// Locks a mutex, ignoring poisoning.
///
/// The crate never runs code that can panic while holding one of its locks
/// (callbacks run unlocked), so a poisoned lock still guards consistent data;
/// and `Drop` must not panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log whose last append (the third of three 20-byte records in
    /// 100-byte segments) rotated, with the seal that started left as the
    /// log keeps it until its next append.
    fn just_rotated(sync: SyncMode) -> (tempfile::TempDir, Wal) {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { segment_bytes: 100, sync, ..Options::default() };
        let (wal, _) = Wal::open(dir.path(), opts).unwrap();
        for seq in 1..=3u8 {
            wal.append(&[seq; 20]).unwrap();
        }
        assert_eq!(wal.shared.log().sealed.len(), 1);
        (dir, wal)
    }

    fn pending_path(dir: &Path) -> PathBuf {
        dir.join("00000000000000000003.wal.pending")
    }

    /// `Never` and `Interval` modes seal on a thread: the new segment is
    /// pending until the seal has finished, then named; `Always` mode
    /// flushes before it names the new segment and has no seal.
    #[test]
    fn rotation_seals_on_a_thread_unless_every_append_is_synced() {
        let modes =
            [SyncMode::Never, SyncMode::Interval(Duration::from_secs(60)), SyncMode::Always];
        for sync in modes {
            let (dir, wal) = just_rotated(sync);
            let named = dir.path().join(segment::file_name(3));
            let seal = wal.shared.log().sealing.as_ref().map(Seal::done);
            assert_eq!(seal.is_some(), sync != SyncMode::Always, "{sync:?}");
            if let Some(seal) = seal {
                assert_eq!(wal.shared.log().active.path, pending_path(dir.path()));
                seal.wait();
                assert!(named.exists() && !pending_path(dir.path()).exists());
                // Taken in by the next append.
                wal.append(b"four").unwrap();
                assert!(wal.shared.log().sealing.is_none());
            }
            assert_eq!(wal.shared.log().active.path, named, "{sync:?}");
            wal.close().unwrap();
        }
    }

    /// A replay made while the active segment was pending finds it under
    /// its real name once the seal has renamed it.
    #[test]
    fn a_replay_follows_a_pending_segment_to_its_name() {
        let (dir, wal) = just_rotated(SyncMode::Never);
        let replay = wal.replay_from(1).unwrap();
        wal.shared.log().sealing.as_ref().unwrap().done().wait();
        assert!(!pending_path(dir.path()).exists());
        let records: Vec<(Seq, Vec<u8>)> = replay.map(Result::unwrap).collect();
        let expected: Vec<(Seq, Vec<u8>)> = (1..=3u8).map(|s| (s as Seq, vec![s; 20])).collect();
        assert_eq!(records, expected);
    }

    /// The segment whose seal is in flight stays until the seal is taken
    /// in: recovery needs it to judge the pending segment after it.
    #[test]
    fn removal_keeps_a_segment_whose_seal_is_in_flight() {
        let (dir, wal) = just_rotated(SyncMode::Never);
        let first = dir.path().join(segment::file_name(1));
        wal.remove_through(2).unwrap();
        assert!(first.exists());
        assert_eq!(wal.first_seq(), 1);
        wal.shared.log().sealing.as_ref().unwrap().done().wait();
        wal.append(b"four").unwrap();
        wal.remove_through(2).unwrap();
        assert!(!first.exists());
        assert_eq!(wal.first_seq(), 3);
    }

    /// `sync` returns only once the pending segment's records would
    /// survive a machine crash: the seal has finished.
    #[test]
    fn sync_waits_for_the_seal_in_flight() {
        let (dir, wal) = just_rotated(SyncMode::Never);
        wal.sync().unwrap();
        assert!(wal.shared.log().sealing.as_ref().unwrap().finished());
        assert!(dir.path().join(segment::file_name(3)).exists());
    }

    /// The early-writeback mark: only in `Never` mode, moved on once every
    /// `EARLY_WRITEBACK` bytes, and back to the start of a new segment on
    /// rotation.
    #[test]
    fn never_mode_starts_writeback_every_few_mib() {
        let payload = vec![7u8; 64 << 10];
        for (sync, early) in [(SyncMode::Never, true), (SyncMode::Always, false)] {
            let dir = tempfile::tempdir().unwrap();
            let opts = Options { segment_bytes: 16 << 20, sync, ..Options::default() };
            let (wal, _) = Wal::open(dir.path(), opts).unwrap();
            let mark = |wal: &Wal| wal.shared.log().writeback_from;
            assert_eq!(mark(&wal).is_some(), early);
            let start = mark(&wal);
            let mut moves = 0;
            let mut last = start;
            // 20 MiB: more than one segment of 16 MiB.
            for _ in 0..320 {
                wal.append(&payload).unwrap();
                if mark(&wal) != last {
                    moves += 1;
                    last = mark(&wal);
                }
            }
            if early {
                // 4 per segment, plus the reset at the rotation.
                assert!((4..=6).contains(&moves), "{moves} moves");
                assert!(last.unwrap() < 8 << 20, "reset to the new segment: {last:?}");
            } else {
                assert_eq!(moves, 0);
            }
            wal.close().unwrap();
        }
    }
}
