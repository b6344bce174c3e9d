//! The write path: every durable change goes through `Committer::commit`.
//!
//! 1. Take the writer lock (one writer at a time: seq order = apply order).
//! 2. Run the caller's `build` against current state: it re-checks its
//!    preconditions and resolves ids from the counters, so two racing
//!    requests can never both claim the same name or id.
//! 3. Encode the mutation, take the next `seq`, `apply` it (collecting
//!    events) and queue the record for the log, in seq order.
//! 4. Release the lock, then hand the queued records to the log in seq
//!    order (whoever holds the append lock hands over every queued
//!    record), so the log's `write(2)` — which can wait for the disk while
//!    an fsync writes the same page back — is not paid under the writer
//!    lock. With `--fsync always` they are only queued in the log
//!    (`Wal::append_deferred`): its sync thread writes everything queued
//!    with one `write(2)` right before the `fdatasync` the writers wait
//!    for, instead of one write per commit on the request threads.
//! 5. Wait until `seq` is durable (group commit: while this writer waits,
//!    others append and share the next fsync).
//! 6. Publish the events, and only then let the handler reply.
//!
//! Nothing is acknowledged, published or snapshotted before its record is
//! durable, so applying a record before it reaches the log changes no
//! guarantee: a crash in between loses only unacknowledged changes, and
//! replay applies the same records in the same order.
//!
//! A log write error, like an fsync error, is fatal: the process aborts
//! rather than acknowledge or retry anything (PostgreSQL's "fsyncgate").

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use wal::Wal;

use crate::apply::apply;
use crate::error::ApiResult;
use crate::events::Hub;
use crate::mutation::Mutation;
use crate::persist::encode_mutation;
use crate::persist::schedule::SnapshotPolicy;
use crate::persist::schedule::{write_snapshot, Cut, Schedule};
use crate::state::State;

/// The highest durable seq, with a way for coroutines to wait for it.
///
/// A waiter parks on its own may `Blocker` (a coroutine parks without
/// blocking its worker thread, a plain OS thread on a condition variable),
/// listed with the seq it waits for; an advance takes out the waiters it
/// satisfies and unparks each once. (A may `Condvar` woke every waiter on
/// every advance, and each then took the may `Mutex` in turn to look at
/// the watermark: a convoy per sync.)
///
/// Waking a parked coroutine from an OS thread that is not a may worker
/// costs a `write(2)` to a worker's eventfd per coroutine (may's
/// `schedule_global`), and the log's sync thread, which advances the
/// watermark after each `fdatasync`, would wake every writer that shared
/// the sync that way: about one eventfd write and read per durable send.
/// So an advance made off the workers only posts to a *relay* coroutine,
/// one wake-up per sync, and the relay — on a worker, where a wake-up is a
/// push onto the worker's own run queue — wakes the waiters.
pub struct Durable {
    watermark: Arc<Watermark>,
    /// How many times durability advanced (one per fsync that covered new
    /// records), for the records-per-fsync figure.
    advances: AtomicU64,
    /// Records those advances covered.
    covered: AtomicU64,
}

/// What waiters and the relay coroutine share.
struct Watermark {
    /// The durable seq; waiters check it without the lock.
    seen: AtomicU64,
    /// The parked waiters and the seq each waits for. A waiter checks
    /// `seen` again under this lock before it lists itself, and a wake
    /// reads `seen` under it, so no wake-up is lost. Held for a push or one
    /// pass over the list, never across a park: a short spin at most, as
    /// for the state's shards.
    waiters: parking_lot::Mutex<Vec<(u64, Arc<may::sync::Blocker>)>>,
    /// Posted by an advance made off the may workers: the relay wakes.
    kick: may::sync::Semphore,
    /// Set when the `Durable` is dropped: the relay ends.
    stopped: AtomicBool,
}

impl Watermark {
    /// Unparks the waiters `seen` now satisfies (each exactly once; the
    /// rest stay listed).
    fn wake(&self) {
        let ready: Vec<Arc<may::sync::Blocker>> = {
            let mut waiters = self.waiters.lock();
            let seen = self.seen.load(Ordering::Acquire);
            let mut ready = Vec::new();
            waiters.retain(|(seq, blocker)| {
                let done = *seq <= seen;
                if done {
                    ready.push(Arc::clone(blocker));
                }
                !done
            });
            ready
        };
        for blocker in ready {
            blocker.unpark();
        }
    }
}

impl Durable {
    /// Starts at `seq` (everything recovered at startup is durable), with
    /// its relay coroutine.
    pub fn new(seq: u64) -> Self {
        let watermark = Arc::new(Watermark {
            seen: AtomicU64::new(seq),
            waiters: parking_lot::Mutex::new(Vec::new()),
            kick: may::sync::Semphore::new(0),
            stopped: AtomicBool::new(false),
        });
        let relay = Arc::clone(&watermark);
        may::go!(move || loop {
            relay.kick.wait();
            // Several syncs while the relay was busy: one round covers them.
            while relay.kick.try_wait() {}
            if relay.stopped.load(Ordering::Acquire) {
                return;
            }
            relay.wake();
        });
        Durable { watermark, advances: AtomicU64::new(0), covered: AtomicU64::new(0) }
    }

    /// Starts the gathering counts from here: what the log already held
    /// (durable since it was opened) is not a sync of this process.
    fn count_from(&self, seq: u64) {
        self.advance(seq);
        self.advances.store(0, Ordering::Relaxed);
        self.covered.store(0, Ordering::Relaxed);
    }

    /// `(fsyncs that made records durable, records they covered)`.
    pub fn gathering(&self) -> (u64, u64) {
        (self.advances.load(Ordering::Relaxed), self.covered.load(Ordering::Relaxed))
    }

    /// Records that everything through `seq` is durable, and wakes the
    /// waiters it satisfies: directly on a may worker, through the relay
    /// from any other thread.
    pub fn advance(&self, seq: u64) {
        let before = self.watermark.seen.fetch_max(seq, Ordering::AcqRel);
        if seq <= before {
            return;
        }
        self.advances.fetch_add(1, Ordering::Relaxed);
        self.covered.fetch_add(seq - before, Ordering::Relaxed);
        if may::coroutine::is_coroutine() {
            self.watermark.wake();
        } else {
            self.watermark.kick.post();
        }
    }

    /// Parks until `seq` is durable.
    pub fn wait(&self, seq: u64) {
        let watermark = &*self.watermark;
        if watermark.seen.load(Ordering::Acquire) >= seq {
            return;
        }
        // Cancellation is ignored: the write is committed, and its reply
        // must not go out before it is durable.
        let blocker = Arc::new(may::sync::Blocker::new(true));
        {
            let mut waiters = watermark.waiters.lock();
            if watermark.seen.load(Ordering::Acquire) >= seq {
                return;
            }
            waiters.push((seq, Arc::clone(&blocker)));
        }
        // Only a wake that took it off the list unparks it, and only once
        // `seen` covers `seq`; the loop guards against any other return.
        while watermark.seen.load(Ordering::Acquire) < seq {
            let _ = blocker.park(None);
        }
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        self.watermark.stopped.store(true, Ordering::Release);
        self.watermark.kick.post();
    }
}

pub use crate::persist::schedule::DISK_RESERVE;

/// Log bytes between two looks at the free space while it is above
/// `DISK_RESERVE` (a `statvfs` every few hundred sends); below it, every
/// commit looks, so writes resume as soon as space returns.
const SPACE_CHECK_EVERY: u64 = 256 << 10;

/// The refusal while the disk is nearly full.
pub const DISK_FULL: &str =
    "The server's disk is full: changes are refused until space is freed; reading works";

/// Whether the log's file system has room for more commits.
struct Space {
    /// Below `DISK_RESERVE` at the last look.
    low: AtomicBool,
    /// `Shared::logged` at the last look.
    checked_at: AtomicU64,
}

/// Framing the log adds to each record (length, CRC and seq), counted with the
/// record's bytes for the snapshot schedule.
const RECORD_FRAMING: u64 = 16;

/// Serializes writers and runs the write path.
pub struct Committer {
    shared: Arc<Shared>,
    durable: Arc<Durable>,
    /// The highest seq whose events are published: each commit waits for
    /// its predecessor's before publishing its own (the same parking
    /// watermark as `durable`), so events reach the queues in seq order,
    /// which their derivable ids need (`events::queue`). Mutations become
    /// durable in seq order, so the wait is short: at most the fan-out of
    /// the records one fsync covered.
    published: Durable,
    hub: Arc<Hub>,
    /// Hands a cut to the snapshot thread; `None` once shutdown has begun.
    snapshot_tick: parking_lot::Mutex<Option<std::sync::mpsc::Sender<Cut>>>,
    snapshot_thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Time commits held the writer lock, for the shutdown summary.
    held: LockTime,
    /// Of which snapshot cuts (`State::image`).
    cuts: LockTime,
    space: Space,
}

/// How long commits held the writer lock: count, total and longest, and
/// the most CPU time one (sampled) hold used (a long hold that used little
/// CPU was its thread waiting for a core, not work under the lock).
#[derive(Default)]
struct LockTime {
    commits: AtomicU64,
    total_nanos: AtomicU64,
    max_nanos: AtomicU64,
    max_cpu_nanos: AtomicU64,
}

impl LockTime {
    fn record(&self, held: std::time::Duration, cpu: u64) {
        let nanos = held.as_nanos() as u64;
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
        self.max_cpu_nanos.fetch_max(cpu, Ordering::Relaxed);
    }
}

/// One commit in this many measures the CPU time its writer-lock hold used
/// (by seq, so a sample is not biased towards any writer).
const CPU_SAMPLE: u64 = 64;

/// CPU time the calling thread has used, in nanoseconds (0 if unknown).
fn thread_cpu_nanos() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        (t.tv_sec() as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec() as u64)
    })
}

/// What the committer shares with its snapshot thread.
struct Shared {
    state: Arc<State>,
    wal: Arc<Wal>,
    /// When snapshots are due, and where the schedule stands.
    schedule: Schedule,
    /// Log bytes appended by this process (records and framing); changed
    /// only under the writer lock.
    logged: AtomicU64,
    /// The single writer lock. A may mutex: a writer waiting for it parks
    /// its coroutine instead of blocking a worker thread; the snapshot
    /// thread (a plain OS thread) takes it too, to clone a consistent cut.
    writer: may::sync::Mutex<()>,
    /// The seq the next mutation gets (changed only under the writer lock;
    /// the log must assign the same one, which `append_queued` checks).
    next_seq: AtomicU64,
    /// Applied records not yet appended to the log, in seq order.
    queued: parking_lot::Mutex<VecDeque<(u64, Vec<u8>)>>,
    /// Held while appending queued records, so they reach the log in order;
    /// it holds the batch being appended (`queued`'s spare buffer). A may
    /// mutex: a coroutine waiting for it parks.
    appender: may::sync::Mutex<VecDeque<(u64, Vec<u8>)>>,
    /// The highest seq appended to the log: a committer whose record an
    /// earlier holder of `appender` already appended skips the lock.
    appended: AtomicU64,
}

/// Aborts the process if dropped during a panic: a panic inside `apply` at
/// runtime leaves state half-changed (with its record queued for the log),
/// and the only safe continuation is a restart that replays (or refuses)
/// what the log holds.
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("natter: fatal: panic while applying a logged mutation; aborting");
            std::process::abort();
        }
    }
}

impl Committer {
    /// Wraps recovered state and its open log.
    pub fn new(
        state: Arc<State>,
        wal: Arc<Wal>,
        durable: Arc<Durable>,
        hub: Arc<Hub>,
        policy: SnapshotPolicy,
    ) -> Self {
        let logged = wal.last_seq();
        durable.count_from(wal.durable_seq());
        let published = Durable::new(state.applied_seq());
        let shared = Arc::new(Shared {
            schedule: Schedule::new(policy, state.applied_seq()),
            logged: AtomicU64::new(0),
            state,
            writer: may::sync::Mutex::new(()),
            next_seq: AtomicU64::new(logged + 1),
            wal,
            queued: parking_lot::Mutex::new(VecDeque::new()),
            appender: may::sync::Mutex::new(VecDeque::new()),
            appended: AtomicU64::new(logged),
        });
        let (tick, ticks) = std::sync::mpsc::channel::<Cut>();
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("natter-snapshot".into())
            .spawn(move || {
                for cut in ticks {
                    thread_shared.schedule.write(&thread_shared.wal, cut);
                    thread_shared.schedule.done();
                }
            })
            .expect("spawn snapshot thread");
        Committer {
            shared,
            durable,
            published,
            hub,
            snapshot_tick: parking_lot::Mutex::new(Some(tick)),
            snapshot_thread: parking_lot::Mutex::new(Some(handle)),
            held: LockTime::default(),
            cuts: LockTime::default(),
            space: Space { low: AtomicBool::new(false), checked_at: AtomicU64::new(0) },
        }
        .with_space_checked()
    }

    /// Looks at the free space once at start.
    fn with_space_checked(self) -> Self {
        self.look_at_space(0);
        self
    }

    /// Whether a commit may go on: the free space was above
    /// `DISK_RESERVE` at the last look, taken again if it is due or was
    /// below. An error reading it lets the commit go on (the log's own
    /// write would tell).
    fn room_for_writes(&self) -> bool {
        let logged = self.shared.logged.load(Ordering::Relaxed);
        let due = logged >= self.space.checked_at.load(Ordering::Relaxed) + SPACE_CHECK_EVERY;
        if !due && !self.space.low.load(Ordering::Relaxed) {
            return true;
        }
        self.look_at_space(logged)
    }

    fn look_at_space(&self, logged: u64) -> bool {
        self.space.checked_at.store(logged, Ordering::Relaxed);
        let wal = &self.shared.wal;
        let low = wal.fs().free_bytes(wal.dir()).is_ok_and(|free| free < DISK_RESERVE);
        let was = self.space.low.swap(low, Ordering::Relaxed);
        if low && !was {
            tracing::error!(
                "less than {} MiB free under {}: refusing changes until space is freed",
                DISK_RESERVE >> 20,
                wal.dir().display()
            );
        } else if was && !low {
            tracing::info!(
                "{} MiB or more free again under {}: taking changes again",
                DISK_RESERVE >> 20,
                wal.dir().display()
            );
        }
        !low
    }

    /// The state this committer writes to.
    pub fn state(&self) -> &Arc<State> {
        &self.shared.state
    }

    /// Runs the write path for the mutation `build` returns; the reply value
    /// `T` is handed back once the mutation is durable and published.
    pub fn commit<T>(
        &self,
        build: impl FnOnce(&State) -> ApiResult<(Mutation, T)>,
    ) -> ApiResult<T> {
        let shared = &*self.shared;
        if !self.room_for_writes() {
            return Err(crate::error::ApiError::not_ready(DISK_FULL));
        }
        let writer = shared.writer.lock().expect("writer lock poisoned");
        let locked = std::time::Instant::now();
        let seq = shared.next_seq.load(Ordering::Relaxed);
        // The thread's CPU clock is a system call (no vDSO), two per
        // commit under the writer lock: read it for one commit in
        // `CPU_SAMPLE` only.
        let cpu = seq.is_multiple_of(CPU_SAMPLE).then(thread_cpu_nanos);
        let (mutation, reply) = build(&shared.state)?;
        let record = encode_mutation(&mutation);
        shared.next_seq.store(seq + 1, Ordering::Relaxed);
        let guard = AbortOnPanic;
        let events = apply(&shared.state, seq, &mutation);
        drop(guard);
        let logged = shared.logged.load(Ordering::Relaxed) + record.len() as u64 + RECORD_FRAMING;
        shared.logged.store(logged, Ordering::Relaxed);
        shared.queued.lock().push_back((seq, record));
        // The cut, if a snapshot is due, under the lock already held: it
        // copies a few thousand pointers (`State::image`), and the snapshot
        // thread never takes the writer lock, so its low priority cannot
        // hold writers up.
        let cut = shared.schedule.due(seq, logged).then(|| {
            let (started, cpu) = (std::time::Instant::now(), thread_cpu_nanos());
            let image = shared.state.image();
            self.cuts.record(started.elapsed(), thread_cpu_nanos().saturating_sub(cpu));
            Cut { image, logged }
        });
        drop(writer);
        let cpu = cpu.map_or(0, |cpu| thread_cpu_nanos().saturating_sub(cpu));
        self.held.record(locked.elapsed(), cpu);
        shared.append_queued(seq);
        if let Some(cut) = cut {
            match self.snapshot_tick.lock().as_ref() {
                Some(tick) if tick.send(cut).is_ok() => {}
                // Shutdown has begun; it writes the final snapshot.
                _ => shared.schedule.done(),
            }
        }
        self.durable.wait(seq);
        self.published.wait(seq - 1);
        self.hub.publish_committed(seq, events);
        self.published.advance(seq);
        Ok(reply)
    }

    /// Runs `read` on a consistent cut of the state: under the writer lock,
    /// so no mutation is half-applied and `applied_seq` (passed to `read`)
    /// names exactly what the cut contains. Returns once that seq is
    /// durable, so nothing read can still be lost. `POST /register` uses it
    /// to create a queue and fetch the state with no event missed or
    /// applied twice. `read` must not block or commit.
    pub fn read_consistent<T>(&self, read: impl FnOnce(&State, u64) -> T) -> T {
        let shared = &*self.shared;
        let (seq, out) = {
            let _writer = shared.writer.lock().expect("writer lock poisoned");
            let seq = shared.state.applied_seq();
            (seq, read(&shared.state, seq))
        };
        self.durable.wait(seq);
        out
    }

    /// One line on the commit path since start: commits, time under the
    /// writer lock (mean and longest, excluding refused builds), and how
    /// many records each fsync made durable (group commit's gathering).
    pub fn summary(&self) -> String {
        let commits = self.held.commits.load(Ordering::Relaxed);
        let total = self.held.total_nanos.load(Ordering::Relaxed);
        let max = self.held.max_nanos.load(Ordering::Relaxed);
        let (fsyncs, records) = self.durable.gathering();
        let max_cpu = self.held.max_cpu_nanos.load(Ordering::Relaxed);
        let cuts = self.cuts.commits.load(Ordering::Relaxed);
        let cut_max = self.cuts.max_nanos.load(Ordering::Relaxed);
        let cut_cpu = self.cuts.max_cpu_nanos.load(Ordering::Relaxed);
        let us = |nanos: u64| nanos as f64 / 1000.0;
        format!(
            "commit path: {commits} commits, writer lock held {:.1} µs on average, {:.1} µs at most (the most CPU a sampled hold used: {:.1} µs); {fsyncs} log syncs made {records} records durable ({:.1} per sync); {cuts} snapshot cuts, the longest {:.1} µs ({:.1} µs of CPU at most)",
            us(total) / commits.max(1) as f64,
            us(max),
            us(max_cpu),
            records as f64 / fsyncs.max(1) as f64,
            us(cut_max),
            us(cut_cpu),
        )
    }

    /// Commits so far, and the time they held the writer lock in all.
    pub fn lock_figures(&self) -> (u64, std::time::Duration) {
        let commits = self.held.commits.load(Ordering::Relaxed);
        (commits, std::time::Duration::from_nanos(self.held.total_nanos.load(Ordering::Relaxed)))
    }

    /// The log's flush and commit-group figures.
    pub fn log_stats(&self) -> Arc<wal::Stats> {
        self.shared.wal.stats()
    }

    /// The snapshot figures: `(snapshots written by this process, the
    /// newest one's duration, its size in bytes, when the newest file was
    /// written in Unix seconds or 0)`.
    pub fn snapshot_figures(&self) -> (u64, std::time::Duration, u64, u64) {
        let schedule = &self.shared.schedule;
        let f = &schedule.figures;
        (
            f.written.load(Ordering::Relaxed),
            std::time::Duration::from_nanos(f.last_nanos.load(Ordering::Relaxed)),
            schedule.last_snapshot_size.load(Ordering::Relaxed),
            f.last_unix.load(Ordering::Relaxed),
        )
    }

    /// Whether commits can go on: the log takes appends and shutdown has
    /// not begun.
    pub fn accepting(&self) -> bool {
        !self.shared.wal.is_poisoned() && self.snapshot_tick.lock().is_some()
    }

    /// Clean shutdown: stops the snapshot thread, then takes a final
    /// snapshot under the writer lock and keeps the lock, so no commit can
    /// follow it.
    pub fn shutdown(&self) {
        // The thread takes the writer lock itself: join it before holding it.
        drop(self.snapshot_tick.lock().take());
        if let Some(handle) = self.snapshot_thread.lock().take() {
            let _ = handle.join();
        }
        let writer = self.shared.writer.lock().expect("writer lock poisoned");
        let image = self.shared.state.image();
        write_snapshot(&self.shared.wal, &self.shared.schedule.policy, &image, &mut || {});
        // Never released: the process exits after a clean shutdown.
        std::mem::forget(writer);
    }
}

impl Shared {
    /// Hands every queued record to the log (`Wal::append_deferred`), in
    /// seq order, unless `seq` is already there; returns once the log
    /// holds `seq` (written, or queued for its sync thread to write).
    fn append_queued(&self, seq: u64) {
        if self.appended.load(Ordering::Acquire) >= seq {
            return;
        }
        // Without `--fsync always` the holder writes the batch itself, one
        // `write(2)` each: a turn of the run queue first lets the writers
        // ready on this worker queue their records, so one write carries
        // them all (at the peak, nearly one write per send before).
        if self.wal.sync_mode() != wal::SyncMode::Always && may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
            if self.appended.load(Ordering::Acquire) >= seq {
                return;
            }
        }
        let mut batch = self.appender.lock().expect("append lock poisoned");
        // Everything queued so far, in one write: with group commit the
        // records of the writers that arrived meanwhile are here too, and
        // one system call for them all is cheaper than one each. The queue
        // and the batch swap buffers, so neither allocates once warm.
        std::mem::swap(&mut *batch, &mut *self.queued.lock());
        let Some(&(last, _)) = batch.back() else { return };
        // With `--fsync always` the log's sync thread writes them, just
        // before the sync this writer waits for anyway.
        match self.wal.append_deferred(batch.iter().map(|(_, record)| record.as_slice())) {
            Ok(logged) if logged == last => self.appended.store(last, Ordering::Release),
            Ok(logged) => {
                eprintln!("natter: fatal: the log numbered record {last} as {logged}; aborting");
                std::process::abort();
            }
            Err(e) => {
                eprintln!("natter: fatal: cannot append to the write-ahead log: {e}");
                std::process::abort();
            }
        }
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use crate::mutation::build;

    fn committer(dir: &std::path::Path, every: u64) -> Committer {
        committer_with(dir, SnapshotPolicy::every(crate::persist::snapshot_dir(dir), every))
    }

    fn committer_with(dir: &std::path::Path, policy: SnapshotPolicy) -> Committer {
        let durable = Arc::new(Durable::new(0));
        let on_durable = Arc::clone(&durable);
        let options = wal::Options {
            on_durable: Some(Arc::new(move |seq| on_durable.advance(seq))),
            ..wal::Options::default()
        };
        let (state, wal, _report) = crate::persist::open(dir, options).unwrap();
        Committer::new(Arc::new(state), Arc::new(wal), durable, Arc::new(Hub::new()), policy)
    }

    #[test]
    fn events_are_published_once_durable_and_refusals_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = committer(dir.path(), 0);
        let events = c.hub.subscribe();
        c.commit(|s| Ok((build::realm(s, "", "T", 0)?, ()))).unwrap();
        assert!(events.try_recv().is_err(), "creating a realm announces nothing");
        let realm = c.state().realm_by_subdomain("").unwrap();
        let new = build::NewUser {
            email: "a@t.test",
            full_name: "A",
            role: crate::state::Role::Owner,
            bot: None,
        };
        c.commit(|s| Ok((build::user(s, realm.id, &new, "k".repeat(32), 0)?, ()))).unwrap();
        // commit returned, so the record is durable and the event is out.
        assert!(c.shared.wal.durable_seq() >= 2);
        let event = events.try_recv().expect("event published before commit returned");
        assert!(matches!(*event, Event::RealmUserAdd { .. }));
        // A refused build logs and applies nothing.
        let err =
            c.commit(|s| Ok((build::user(s, realm.id, &new, "k".repeat(32), 0)?, ()))).unwrap_err();
        assert_eq!(err.code, "BAD_REQUEST");
        assert_eq!((c.shared.wal.last_seq(), c.state().applied_seq()), (2, 2));
        assert!(events.try_recv().is_err());
        // The summary counts the two commits (not the refusal), and every
        // logged record was made durable by some sync.
        assert!(c.summary().starts_with("commit path: 2 commits, "), "{}", c.summary());
        let (syncs, records) = c.durable.gathering();
        assert!((1..=2).contains(&syncs) && records == 2, "{syncs} syncs, {records} records");
    }

    #[test]
    fn snapshots_are_taken_every_n_records_and_trim_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let c = committer(dir.path(), 3);
        c.commit(|s| Ok((build::realm(s, "", "T", 0)?, ()))).unwrap();
        let realm = c.state().realm_by_subdomain("").unwrap();
        for i in 0..5 {
            let email = format!("u{i}@t.test");
            let new = build::NewUser {
                email: &email,
                full_name: "U",
                role: crate::state::Role::Member,
                bot: None,
            };
            c.commit(|s| Ok((build::user(s, realm.id, &new, "k".repeat(32), 0)?, ()))).unwrap();
        }
        c.shutdown();
        let snapshots =
            crate::persist::snapshot::list(&crate::persist::snapshot_dir(dir.path())).unwrap();
        assert_eq!(
            snapshots.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
            vec![6],
            "only the newest is kept"
        );
        drop(c);
        let (state, _, report) = crate::persist::open(dir.path(), wal::Options::default()).unwrap();
        assert_eq!((report.snapshot_seq, report.replayed), (Some(6), 0));
        assert_eq!(state.realm_users(realm.id).len(), 5);
    }

    #[test]
    fn snapshots_by_bytes_are_cut_by_committers_and_sized_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let policy = SnapshotPolicy {
            dir: crate::persist::snapshot_dir(dir.path()),
            every: None,
            log_ratio: 1.0,
            min_log_bytes: 1,
            min_interval: std::time::Duration::ZERO,
            retention: Default::default(),
        };
        let c = committer_with(dir.path(), policy);
        // Nothing is snapshotted yet, so the first commit is due at once.
        c.commit(|s| Ok((build::realm(s, "", "T", 0)?, ()))).unwrap();
        // Stop the snapshot thread once it has written what it was handed.
        drop(c.snapshot_tick.lock().take());
        c.snapshot_thread.lock().take().unwrap().join().unwrap();
        let shared = &c.shared;
        assert_eq!(shared.schedule.last_snapshot.load(Ordering::Acquire), 1);
        let files = crate::persist::snapshot::list(&shared.schedule.policy.dir).unwrap();
        let size = std::fs::metadata(&files[0].1).unwrap().len();
        assert!(size > 0);
        assert_eq!(shared.schedule.last_snapshot_size.load(Ordering::Acquire), size);
        let cut = shared.schedule.last_snapshot_logged.load(Ordering::Acquire);
        assert_eq!(cut, shared.logged.load(Ordering::Acquire), "the cut was at the commit");
        // The next is due once as many log bytes as the snapshot has.
        assert!(!shared.schedule.due(2, cut + size - 1));
        assert!(shared.schedule.due(2, cut + size));
        assert!(!shared.schedule.due(3, cut + 2 * size), "one at a time");
    }
}

#[cfg(test)]
mod crash_sweep;
