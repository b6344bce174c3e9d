//! When records become durable: the progress counters, the sync thread, and
//! the `on_durable` reports.
//!
//! Three seqs describe progress; *appended* is never behind the other two:
//!
//! - *appended*: the last record written to a segment file with `write(2)`.
//!   It is in the page cache and survives a crash of the process, not of
//!   the machine.
//! - *synced*: the last record covered by an `fdatasync`. It survives a
//!   crash of the machine.
//! - *durable*: the last record the log promises to keep, as reported by
//!   [`crate::Wal::durable_seq`], [`crate::Wal::wait_durable`] and
//!   `on_durable`. With [`SyncMode::Always`] it is *synced*; with
//!   [`SyncMode::Never`] and [`SyncMode::Interval`] the caller has chosen to
//!   accept a loss window, and it is *appended*.
//!
//! # Group commit
//!
//! With [`SyncMode::Always`] appenders never fsync. A dedicated thread
//! sleeps until something is appended or queued
//! ([`crate::Wal::append_deferred`]) beyond *synced*, writes what is
//! queued (one `write(2)` for all of it), notes *appended* as its target,
//! and calls `fdatasync` on the active segment without holding any lock,
//! so appends and queueing go on meanwhile. When it returns, every record up to the
//! target is on disk (records in segments rotated away from were flushed at
//! rotation), so the thread publishes the target as durable, wakes the
//! waiters and reports it. Whatever was appended during that fsync is the
//! next batch: one fsync serves as many writers as arrived while the
//! previous one was in flight. With [`crate::Options::gather`] set, and
//! when the previous fsync covered at least [`crate::GATHER_MIN`] records
//! (several writers are active), the thread first waits that long for
//! more: fewer, fuller syncs, each of which costs CPU; a lone writer is
//! never delayed.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::wal::{lock, Shared};
use crate::{fsync, Seq, SyncMode, GATHER_MIN};

/// The callback type of [`crate::Options::on_durable`].
pub(crate) type OnDurable = Arc<dyn Fn(Seq) + Send + Sync>;

/// [`SyncMode::Interval`] periods shorter than this are raised to it, so that
/// a zero period flushes often instead of spinning.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Progress of appended records towards the disk, and the means to wait for
/// it.
pub(crate) struct Durability {
    mode: SyncMode,
    /// One mutex for all counters, so that the sync thread can wait for
    /// "appended is ahead of synced" without missing a wake-up. It is held
    /// only to read or bump counters, never across I/O.
    progress: Mutex<Progress>,
    /// The sync thread sleeps here until there is work or shutdown.
    work: Condvar,
    /// [`Durability::wait`] sleeps here until *durable* advances.
    advanced: Condvar,
    reporter: Reporter,
}

#[derive(Debug)]
struct Progress {
    /// The last record queued by `Wal::append_deferred` (or appended):
    /// the sync thread has work while this is ahead of *synced*.
    queued: Seq,
    appended: Seq,
    synced: Seq,
    durable: Seq,
    /// Set when the `Wal` closes: the sync thread flushes what is
    /// outstanding and exits.
    shutdown: bool,
    /// Threads blocked in [`Durability::wait`], and whether the sync thread
    /// is asleep waiting for work. Waking a condition variable costs a
    /// system call even when no one waits, so appends skip it when these
    /// say no one does.
    waiters: usize,
    sync_thread_idle: bool,
}

impl Durability {
    /// Starts with everything up to `recovered` durable: recovery flushed it.
    pub(crate) fn new(mode: SyncMode, recovered: Seq, on_durable: Option<OnDurable>) -> Self {
        Durability {
            mode,
            progress: Mutex::new(Progress {
                queued: recovered,
                appended: recovered,
                synced: recovered,
                durable: recovered,
                shutdown: false,
                waiters: 0,
                sync_thread_idle: false,
            }),
            work: Condvar::new(),
            advanced: Condvar::new(),
            reporter: Reporter {
                on_durable,
                state: Mutex::new(Reports { pending: recovered, reported: recovered, busy: false }),
            },
        }
    }

    /// The last durable seq.
    pub(crate) fn durable(&self) -> Seq {
        lock(&self.progress).durable
    }

    /// When records are flushed.
    pub(crate) fn mode(&self) -> SyncMode {
        self.mode
    }

    /// Notes that records through `seq` are queued for the sync thread to
    /// write ([`SyncMode::Always`]), and wakes it if it sleeps.
    pub(crate) fn record_queued(&self, seq: Seq) {
        let mut progress = lock(&self.progress);
        progress.queued = progress.queued.max(seq);
        if progress.sync_thread_idle {
            self.work.notify_one();
        }
    }

    /// Notes that `seq` has been written. Called with the log's lock held,
    /// which keeps *appended* increasing.
    ///
    /// Returns whether *durable* advanced too (it does in `Never` and
    /// `Interval` modes); if so the caller must [`report`](Self::report) it
    /// once it has released the log's lock.
    pub(crate) fn record_appended(&self, seq: Seq) -> bool {
        let mut progress = lock(&self.progress);
        progress.appended = seq;
        progress.queued = progress.queued.max(seq);
        match self.mode {
            SyncMode::Always => {
                if progress.sync_thread_idle {
                    self.work.notify_one();
                }
                false
            }
            SyncMode::Never | SyncMode::Interval(_) => {
                progress.durable = seq;
                if progress.waiters > 0 {
                    self.advanced.notify_all();
                }
                true
            }
        }
    }

    /// Notes that an fsync made everything up to `seq` durable, wakes the
    /// waiters and reports, if that advanced *durable*. `count` is told
    /// how many records became durable that were not before, under the
    /// lock, before any waiter wakes.
    pub(crate) fn record_synced(&self, seq: Seq, count: impl FnOnce(u64)) {
        let newly = {
            let mut progress = lock(&self.progress);
            progress.synced = progress.synced.max(seq);
            let newly = seq.saturating_sub(progress.durable);
            // Counted before any waiter wakes, so a writer that saw its
            // record durable also sees the flush in the figures.
            count(newly);
            if newly > 0 {
                progress.durable = seq;
                if progress.waiters > 0 {
                    self.advanced.notify_all();
                }
            }
            newly
        };
        if newly > 0 {
            self.report(seq);
        }
    }

    /// Tells `on_durable` that everything up to `seq` is durable.
    pub(crate) fn report(&self, seq: Seq) {
        self.reporter.report(seq);
    }

    /// Blocks until *durable* reaches `seq`.
    pub(crate) fn wait(&self, seq: Seq) {
        let mut progress = lock(&self.progress);
        progress.waiters += 1;
        while progress.durable < seq {
            progress = self.advanced.wait(progress).unwrap_or_else(PoisonError::into_inner);
        }
        progress.waiters -= 1;
    }

    /// Asks the sync thread to flush what is outstanding and exit.
    pub(crate) fn shutdown(&self) {
        lock(&self.progress).shutdown = true;
        self.work.notify_all();
    }
}

/// The sync thread's body: runs until [`Durability::shutdown`].
pub(crate) fn run_sync_thread(shared: &Shared) {
    // If anything in here panics (an `on_durable` callback, most likely),
    // the waiters would wait forever for records that may or may not be on
    // disk; a restart is the only clean way on.
    let _abort = AbortOnPanic;
    // The gather's sleep (`Options::gather`, ~100 µs) would otherwise end
    // up to the default 50 µs timer slack late, and every durable writer
    // waits through it.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_timerslack(1_000);
    match shared.durability.mode {
        SyncMode::Always => group_commit(shared),
        SyncMode::Interval(period) => sync_periodically(shared, period.max(MIN_INTERVAL)),
        SyncMode::Never => {}
    }
}

/// The group-commit loop of [`SyncMode::Always`]; see the module docs.
fn group_commit(shared: &Shared) {
    let durability = &shared.durability;
    // Records the previous fsync covered.
    let mut last_batch = 0;
    loop {
        let synced = {
            let mut progress = lock(&durability.progress);
            while progress.queued <= progress.synced && !progress.shutdown {
                progress.sync_thread_idle = true;
                progress = durability.work.wait(progress).unwrap_or_else(PoisonError::into_inner);
                progress.sync_thread_idle = false;
            }
            if progress.queued <= progress.synced {
                return; // shut down, and nothing is left to flush
            }
            progress.synced
        };
        if !shared.gather.is_zero() && last_batch >= GATHER_MIN {
            // Concurrent writers: let the ones on their way queue too.
            thread::sleep(shared.gather);
        }
        // Write what `Wal::append_deferred` queued; its writers wait for
        // this sync. A failed write cannot be reported to them, and their
        // records may or may not be in the file: as with a failed fsync,
        // only a restart (recovery reads what is there) is safe.
        // The file is taken with the target: every record up to it is in
        // this file or in a segment that rotation already flushed.
        let (target, file, path) = shared.write_for_sync();
        last_batch = target - synced;
        let started = Instant::now();
        fsync::data(&*shared.fs, &file, &path);
        durability.record_synced(target, |newly| shared.stats.synced(started.elapsed(), newly));
    }
}

/// The loop of [`SyncMode::Interval`]: flushes every `period` if anything
/// was appended since the last flush, and once more at shutdown.
fn sync_periodically(shared: &Shared, period: Duration) {
    let durability = &shared.durability;
    loop {
        let deadline = Instant::now() + period;
        let (target, pending, shutdown) = {
            let mut progress = lock(&durability.progress);
            while !progress.shutdown {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                    break;
                };
                progress = match durability.work.wait_timeout(progress, left) {
                    Ok((progress, _)) => progress,
                    Err(poisoned) => poisoned.into_inner().0,
                };
            }
            (progress.appended, progress.appended > progress.synced, progress.shutdown)
        };
        if pending {
            let (file, path) = shared.active_file();
            let started = Instant::now();
            fsync::data(&*shared.fs, &file, &path);
            durability.record_synced(target, |newly| shared.stats.synced(started.elapsed(), newly));
        }
        if shutdown {
            return;
        }
    }
}

/// Calls `on_durable` with strictly increasing seqs, one call at a time,
/// never with a lock held.
///
/// Durability can advance on two threads at nearly the same time (two
/// appenders in `Never` mode; the sync thread and a caller of `sync`). If
/// both called the callback, the smaller seq could arrive last; and a lock
/// held around the callback would deadlock a callback that calls back into
/// the log. So the first thread to report becomes *the* reporter: it calls
/// `on_durable` until nothing newer is pending, while any other thread just
/// leaves its seq as pending and returns. A burst of advances may therefore
/// be reported as one call with the newest seq.
struct Reporter {
    on_durable: Option<OnDurable>,
    state: Mutex<Reports>,
}

struct Reports {
    /// The newest durable seq anyone asked to report.
    pending: Seq,
    /// The last seq passed to `on_durable`.
    reported: Seq,
    /// Whether some thread is currently calling `on_durable`.
    busy: bool,
}

impl Reporter {
    fn report(&self, seq: Seq) {
        let Some(on_durable) = &self.on_durable else {
            return;
        };
        let mut reports = lock(&self.state);
        reports.pending = reports.pending.max(seq);
        if reports.busy {
            return; // the busy thread will report it
        }
        reports.busy = true;
        // A panicking callback must not leave `busy` set forever.
        let _unwind = ClearBusyOnUnwind(&self.state);
        while reports.reported < reports.pending {
            let seq = reports.pending;
            reports.reported = seq;
            drop(reports);
            on_durable(seq);
            reports = lock(&self.state);
        }
        reports.busy = false;
    }
}

/// Resets [`Reports::busy`] if dropped during a panic. Only the callback can
/// panic in [`Reporter::report`], and it runs without the lock held.
struct ClearBusyOnUnwind<'a>(&'a Mutex<Reports>);

impl Drop for ClearBusyOnUnwind<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            lock(self.0).busy = false;
        }
    }
}

/// Aborts the process if dropped during a panic.
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!("wal: fatal: the sync thread panicked (in on_durable?); aborting");
            std::process::abort();
        }
    }
}
