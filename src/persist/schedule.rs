//! When snapshots are taken and how they are written: the policy (by bytes
//! of log against the last snapshot's size, or a fixed change count), the
//! schedule's counters, and the snapshot thread's work — wait until the
//! cut's seq is durable, write the file at low priority, trim the log.
//!
//! The cut itself is taken by the committer under the writer lock it
//! already holds (`commit.rs`); everything here runs without it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use wal::Wal;

use crate::events::journal::Retention;
use crate::persist::snapshot;

/// Free space on the log's file system below which commits are refused
/// (503 `NOT_READY`, nothing applied or logged) while reads go on: room
/// for the records already in flight, a new segment's zeros and the
/// snapshot's files (a snapshot that would leave less is skipped), so
/// that the log itself never meets a full disk. A
/// write that fails there anyway is fatal like a failed fsync (the
/// mutation is applied in memory already), and nothing unacknowledged
/// survives the restart's recovery.
pub const DISK_RESERVE: u64 = 64 << 20;

use crate::state::StateImage;

/// A snapshot cut taken by a committer, for the snapshot thread to write.
pub struct Cut {
    /// The frozen state.
    pub image: StateImage,
    /// The log bytes counter at the cut.
    pub logged: u64,
}

/// Where the schedule stands: the newest snapshot, and whether one is
/// under way.
pub struct Schedule {
    /// When snapshots are due.
    pub policy: SnapshotPolicy,
    /// Seq of the newest snapshot taken (or of the recovered state).
    pub last_snapshot: AtomicU64,
    /// The committer's log bytes counter at the newest snapshot's cut.
    pub last_snapshot_logged: AtomicU64,
    /// Size in bytes of the newest snapshot file (0 if none).
    pub last_snapshot_size: AtomicU64,
    /// When the newest snapshot finished (or the process started).
    last_snapshot_done: parking_lot::Mutex<std::time::Instant>,
    /// Set from the moment a snapshot is due until the snapshot thread has
    /// written it, so that writers signal it once instead of on every commit.
    pending: AtomicBool,
    /// What the snapshots written by this process cost, for monitoring.
    pub figures: SnapshotFigures,
}

/// Snapshot figures for monitoring.
#[derive(Default)]
pub struct SnapshotFigures {
    /// Snapshots written by this process.
    pub written: AtomicU64,
    /// How long the newest one took to encode and write, in nanoseconds.
    pub last_nanos: AtomicU64,
    /// When the newest snapshot file was written, in Unix seconds (0 if
    /// there is none): the file's modification time until this process
    /// writes one.
    pub last_unix: AtomicU64,
}

impl Schedule {
    /// The schedule of a state recovered at `applied_seq`, its newest
    /// snapshot file (if any) sized from `policy.dir`.
    pub fn new(policy: SnapshotPolicy, applied_seq: u64) -> Self {
        let size = snapshot::list(&policy.dir)
            .ok()
            .and_then(|all| all.first().and_then(|(_, path)| std::fs::metadata(path).ok()));
        let written_at = size
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let size = size.map_or(0, |m| m.len());
        Schedule {
            policy,
            last_snapshot: AtomicU64::new(applied_seq),
            last_snapshot_logged: AtomicU64::new(0),
            last_snapshot_size: AtomicU64::new(size),
            last_snapshot_done: parking_lot::Mutex::new(std::time::Instant::now()),
            pending: AtomicBool::new(false),
            figures: SnapshotFigures {
                last_unix: AtomicU64::new(written_at),
                ..Default::default()
            },
        }
    }

    /// Whether to take a snapshot cut now, after the commit of `seq` with
    /// the log at `logged` bytes (under the writer lock); marks it pending
    /// if so, so that one snapshot is under way at a time.
    pub fn due(&self, seq: u64, logged: u64) -> bool {
        if self.pending.load(Ordering::Acquire) {
            return false;
        }
        let changes = seq - self.last_snapshot.load(Ordering::Acquire);
        let since_logged = logged - self.last_snapshot_logged.load(Ordering::Acquire);
        let size = self.last_snapshot_size.load(Ordering::Acquire);
        let since = || self.last_snapshot_done.lock().elapsed();
        self.policy.due(changes, since_logged, size, since)
            && !self.pending.swap(true, Ordering::AcqRel)
    }

    /// The cut marked due was written, or dropped (shutdown): the next may
    /// be due.
    pub fn done(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// Encodes and writes a cut with no lock held — `State::image` froze
    /// the copy-on-write shards and chunks, so writers meanwhile copy only
    /// what they touch. Runs on the snapshot thread, at low priority.
    pub fn write(&self, wal: &Wal, cut: Cut) {
        lower_priority(crate::priority::Priority::Idle);
        let started = std::time::Instant::now();
        let mut raised = false;
        let mut progress = || {
            if !raised && started.elapsed() >= IDLE_FOR {
                lower_priority(crate::priority::Priority::Background);
                raised = true;
            }
        };
        let size = write_snapshot(wal, &self.policy, &cut.image, &mut progress);
        self.last_snapshot_logged.store(cut.logged, Ordering::Release);
        if let Some(size) = size {
            self.last_snapshot_size.store(size, Ordering::Release);
            let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            let figures = &self.figures;
            figures.last_nanos.store(took, Ordering::Relaxed);
            figures.last_unix.store(now.map_or(0, |d| d.as_secs()), Ordering::Relaxed);
            figures.written.fetch_add(1, Ordering::Relaxed);
        }
        self.last_snapshot.store(cut.image.applied_seq, Ordering::Release);
        *self.last_snapshot_done.lock() = std::time::Instant::now();
    }
}

/// When to write snapshots.
///
/// By default (`every: None`) a snapshot is due once the log written since
/// the last one holds `log_ratio` × the last snapshot's size in bytes (and
/// at least `min_log_bytes`), and `min_interval` has passed since the last
/// one finished. So at any size a snapshot's encoding costs a bounded
/// share of the CPU (its cost grows with the state, and so does the log
/// between two snapshots), where a fixed change count made them back to
/// back at 10M messages (4.5 s to encode, one due every 0.4 s). The price
/// is a longer tail to replay at restart, bounded by
///
/// ```text
/// tail ≤ max(min_log_bytes, log_ratio × snapshot size)
///        + the log written during one snapshot's write or min_interval
/// ```
///
/// i.e. a restart replays at most about `log_ratio` times the snapshot's
/// bytes of log (plus the floor), a fixed multiple of its decode time.
/// `every: Some(n)` keeps the old rule: every `n` changes (0 = only at
/// clean shutdown).
#[derive(Clone, Debug)]
pub struct SnapshotPolicy {
    /// Where snapshot files live.
    pub dir: PathBuf,
    /// A fixed change count instead of the byte rule (0 = never, except at
    /// clean shutdown).
    pub every: Option<u64>,
    /// Log bytes since the last snapshot, as a fraction of its size.
    pub log_ratio: f64,
    /// The fewest log bytes since the last snapshot before another.
    pub min_log_bytes: u64,
    /// The least time from the end of one snapshot to the next.
    pub min_interval: std::time::Duration,
    /// The lowest seq a journaled event queue still needs the log from
    /// (`events::journal`): while it is at or below a new snapshot's seq,
    /// the previous snapshot and the log after it are kept.
    pub retention: Retention,
}

impl SnapshotPolicy {
    /// A policy of one fixed change count (0 = only at clean shutdown).
    pub fn every(dir: PathBuf, every: u64) -> Self {
        SnapshotPolicy {
            dir,
            every: Some(every),
            log_ratio: 0.0,
            min_log_bytes: 0,
            min_interval: std::time::Duration::ZERO,
            retention: Retention::default(),
        }
    }

    /// Whether a snapshot is due, `changes` and `logged` bytes after the
    /// last one (of `size` bytes, finished `since` ago).
    pub fn due(
        &self,
        changes: u64,
        logged: u64,
        size: u64,
        since: impl Fn() -> std::time::Duration,
    ) -> bool {
        match self.every {
            Some(every) => every > 0 && changes >= every,
            None => {
                let threshold = (size as f64 * self.log_ratio) as u64;
                logged >= threshold.max(self.min_log_bytes) && since() >= self.min_interval
            }
        }
    }
}

/// How long a snapshot runs in the idle scheduling class before it is
/// raised to nice 19 (`crate::priority`).
const IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// The snapshot thread's scheduling, on Linux (elsewhere nothing).
///
/// Encoding a snapshot is seconds of CPU at millions of messages, and on a
/// small box it must yield the core to request threads when they wake
/// rather than share it with them. A snapshot starts in the idle class
/// (`SCHED_IDLE`): it runs only on a core nothing else wants, so durable
/// sends at half of the peak kept a p99 of 3.2-5.0 ms where nice 19 gave
/// 2.2-9.3 ms in the same kind of run (and the old normal priority
/// 25-111 ms). But an idle-class thread gets next to no CPU while the
/// cores are saturated, so a snapshot could stall for as long as the load
/// lasts, the log and a restart's tail growing meanwhile: after `IDLE_FOR`
/// it is raised to nice 19, which still gets ≈ 1.5% of a busy core per
/// competing thread; the next snapshot starts idle again. It holds no
/// lock a request needs while it encodes (it never takes the writer lock;
/// the cut is taken by a committer).
fn lower_priority(priority: crate::priority::Priority) {
    if !priority.apply() {
        tracing::warn!("could not lower the snapshot thread's priority");
    }
}

/// Writes one snapshot once its seq is durable in the log, then trims the
/// log; the file's size, if written. Skipped (the log keeps the changes)
/// when the free space would fall under [`DISK_RESERVE`] with a file the
/// size of the newest one and a quarter. Runs on a plain OS thread (or at
/// shutdown), never on a coroutine.
/// `progress` is called as the file is written (`snapshot::write_with`).
///
/// **Retention.** While a journaled event queue needs the log's events
/// from a seq at or below this snapshot's (`policy.retention`), the
/// previous snapshot stays and the log is trimmed only through it, so a
/// recovery can start there and derive the queue's events again; older
/// snapshots go. So at most two snapshots and the log after the older one
/// are kept: a queue needing the log from before the older one is dropped
/// at recovery (its client registers again).
pub fn write_snapshot(
    wal: &Wal,
    policy: &SnapshotPolicy,
    image: &StateImage,
    progress: &mut dyn FnMut(),
) -> Option<u64> {
    let dir = &policy.dir;
    let seq = image.applied_seq;
    if seq == 0 {
        return None;
    }
    // A snapshot must never contain a mutation the log could still lose
    // (else a machine crash leaves a log that ends before the snapshot, and
    // natter refuses to start). With `--fsync never` or `interval` a
    // record counts as durable once appended, so flush the log here, on
    // this thread, instead.
    wal.wait_durable(seq);
    if wal.sync_mode() != wal::SyncMode::Always {
        if let Err(e) = wal.sync() {
            tracing::warn!("snapshot at seq {seq} skipped: flushing the log failed: {e}");
            return None;
        }
    }
    if let Err(why) = room_for_snapshot(&**wal.fs(), dir) {
        tracing::warn!("snapshot at seq {seq} skipped: {why}");
        return None;
    }
    let retain = policy.retention.needed_from().is_some_and(|need| need <= seq);
    match snapshot::write_on(&**wal.fs(), dir, image, progress, retain) {
        Ok((path, kept)) => {
            // The log from the kept snapshot on (from the start when the
            // queues need it and no snapshot came before this one).
            let through = match (retain, kept) {
                (false, _) => Some(seq),
                (true, Some(previous)) => Some(previous),
                (true, None) => None,
            };
            if let Some(through) = through {
                if let Err(e) = wal.remove_through(through) {
                    tracing::warn!("could not trim the log through seq {through}: {e}");
                }
            }
            let size = std::fs::metadata(&path).ok().map(|m| m.len());
            tracing::info!(
                "snapshot at seq {seq} written ({} bytes, {})",
                size.unwrap_or(0),
                path.display()
            );
            size
        }
        Err(e) => {
            tracing::warn!("snapshot at seq {seq} failed: {e}");
            None
        }
    }
}

/// Whether writing a snapshot in `dir` leaves [`DISK_RESERVE`] free,
/// reckoning it a quarter larger than the newest one (the state grows
/// between two). An error reading the free space lets it go on: the
/// write itself would tell.
fn room_for_snapshot(fs: &dyn wal::Fs, dir: &std::path::Path) -> Result<(), String> {
    let newest = snapshot::list(dir).ok().and_then(|found| found.into_iter().next());
    let size = newest.and_then(|(_, path)| std::fs::metadata(path).ok()).map_or(0, |m| m.len());
    let needed = size + size / 4 + DISK_RESERVE;
    match fs.free_bytes(dir) {
        Ok(free) if free < needed => Err(format!(
            "{} MiB free under {}, {} MiB needed to keep the log's reserve",
            free >> 20,
            dir.display(),
            needed.div_ceil(1 << 20)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_that_would_eat_the_log_reserve_is_skipped() {
        use crate::mutation::Mutation;
        use crate::persist::encode_mutation;
        use crate::state::personal::PersonalChange;
        let dir = tempfile::tempdir().unwrap();
        let fs = std::sync::Arc::new(wal::sim::SimFs::new());
        let options = wal::Options { fs: fs.clone() as _, ..wal::Options::default() };
        let (wal, _) = Wal::open(dir.path().join("wal"), options).unwrap();
        let change = Mutation::personal(PersonalChange::SetAlertWords {
            user: crate::state::UserId(1),
            words: vec!["w".into()],
        });
        let seq = wal.append(&encode_mutation(&change)).unwrap();
        let mut image = crate::state::State::new().image();
        image.applied_seq = seq;
        let snapshots = dir.path().join("snapshots");
        let policy = SnapshotPolicy::every(snapshots.clone(), 0);
        // Under the reserve: skipped, and the log keeps the change.
        fs.set_free(Some(DISK_RESERVE - 1));
        assert_eq!(write_snapshot(&wal, &policy, &image, &mut || {}), None);
        assert!(snapshot::list(&snapshots).unwrap().is_empty());
        assert_eq!(wal.last_seq(), seq);
        // Room for the file and the reserve: written.
        fs.set_free(None);
        assert!(write_snapshot(&wal, &policy, &image, &mut || {}).is_some());
        assert_eq!(snapshot::list(&snapshots).unwrap().len(), 1);
    }

    #[test]
    fn the_byte_rule_weighs_log_against_the_last_snapshot() {
        let policy = SnapshotPolicy {
            dir: PathBuf::new(),
            every: None,
            log_ratio: 0.5,
            min_log_bytes: 1_000,
            min_interval: std::time::Duration::from_secs(10),
            retention: Retention::default(),
        };
        let long_ago = || std::time::Duration::from_secs(60);
        // The floor, then half of the last snapshot's size.
        assert!(!policy.due(50, 999, 0, long_ago));
        assert!(policy.due(50, 1_000, 0, long_ago));
        assert!(!policy.due(50, 4_999, 10_000, long_ago));
        assert!(policy.due(50, 5_000, 10_000, long_ago));
        // Never sooner than the interval after the last one.
        assert!(!policy.due(50, 5_000, 10_000, || std::time::Duration::from_secs(9)));
        // A fixed count ignores bytes; 0 never.
        let every = SnapshotPolicy::every(PathBuf::new(), 3);
        assert!(!every.due(2, u64::MAX, 0, long_ago) && every.due(3, 0, 0, long_ago));
        assert!(!SnapshotPolicy::every(PathBuf::new(), 0).due(u64::MAX, u64::MAX, 0, long_ago));
    }
}
