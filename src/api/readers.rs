//! Reads off the HTTP workers: pools of reader OS threads at low priority.
//!
//! A narrow that no index answers exactly (a `search`, a sparse filter
//! over a user's whole history) may look at millions of messages, and even
//! an indexed window of 100 messages is a few hundred microseconds of JSON.
//! Run on an HTTP worker, that work would hold every connection sharing
//! the worker's thread, sends included, and share the cores with them as
//! an equal. Instead the handler hands the read to `Readers`: the job goes
//! to a reader thread while the calling coroutine parks on a may channel,
//! so the worker keeps serving its other connections. Reader threads run
//! at nice 19 (`crate::priority::Priority::Background`): when the workers
//! want the cores they get them, and reads take what is left (about 1.5%
//! of a busy core each, all of an idle one). A server that is not
//! saturated answers reads as fast as before; a saturated one keeps its
//! writes' latency and slows its reads.
//!
//! Two lanes of `READER_THREADS` threads each (a `priority::Pool`; long
//! loops in a read call `priority::breathe`):
//! - **heavy** (`Readers::run`): reads no index answers within
//!   `--light-read-candidates`. Admission is bounded, never an unbounded
//!   queue: at most `MAX_PER_USER` heavy reads of one user and
//!   `max_total` in all are in the lane (running or waiting for a
//!   thread) at once; past either bound the caller gets Zulip's
//!   rate-limit error (429 `RATE_LIMIT_HIT`, with `retry-after`).
//! - **light** (`Readers::run_light`): every other read. Each is short, and
//!   each connection has at most one in flight, so this lane needs no
//!   bound; having its own threads, it never waits behind a heavy read.
//!
//! `NATTER_READ_GATE` (tests only): a directory. A heavy-lane thread then
//! announces each job by creating `started-<n>` there and holds it until
//! a file named `release` appears, so a test can prove that other requests
//! complete while a heavy read is still in progress.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::ApiError;
use crate::priority::{Pool, Priority};
use crate::state::UserId;

/// Reader OS threads per lane (the machines natter targets have few
/// cores; more threads would only take CPU from the HTTP workers).
pub const READER_THREADS: usize = 2;
/// Most heavy reads of one user in the pool at once.
pub const MAX_PER_USER: usize = 2;
/// Default for `--max-heavy-reads`: most heavy reads in the pool at once.
pub const DEFAULT_MAX_TOTAL: usize = 16;
/// Seconds a refused caller is told to wait (`retry-after`).
const RETRY_AFTER_SECS: f64 = 1.0;

/// The two lanes and the heavy lane's admission counts.
pub struct Readers {
    heavy: Lane,
    light: Lane,
    admitted: Arc<Admitted>,
}

/// One lane: `READER_THREADS` threads at nice 19.
struct Lane {
    pool: Pool,
}

impl Lane {
    /// Starts the lane's threads, named `natter-<name>-<i>`; with a
    /// `gate`, each holds every job there first (tests).
    fn start(name: &str, gate: Option<Arc<PathBuf>>) -> Lane {
        let hold = gate.map(|dir| -> Arc<dyn Fn(u64) + Send + Sync> {
            Arc::new(move |n| hold_at_gate(&dir, n))
        });
        Lane { pool: Pool::start(name, READER_THREADS, Priority::Background, hold) }
    }

    /// Runs `read` on one of the lane's threads and returns its result
    /// (an internal error if it panicked); a coroutine caller parks until
    /// it is done. `ticket` is dropped before the caller wakes.
    fn run<T: Send + 'static>(
        &self,
        ticket: Option<Ticket>,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let value = self.pool.run(move || {
            let _ticket = ticket;
            read()
        });
        value.ok_or_else(ApiError::internal)
    }
}

/// Heavy reads in the pool, in total and per user.
struct Admitted {
    max_total: usize,
    total: AtomicUsize,
    /// Held only to bump or drop one count, never across a wait.
    per_user: parking_lot::Mutex<HashMap<UserId, usize>>,
}

/// One admitted read: gives its place back when dropped (also when the
/// job panicked or its caller went away).
struct Ticket {
    admitted: Arc<Admitted>,
    user: Option<UserId>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(user) = self.user {
            let mut per_user = self.admitted.per_user.lock();
            if let Some(n) = per_user.get_mut(&user) {
                *n -= 1;
                if *n == 0 {
                    per_user.remove(&user);
                }
            }
        }
        self.admitted.total.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Zulip's rate-limit error: 429 `RATE_LIMIT_HIT` with `retry-after`
/// (the transport adds the `Retry-After` header to a 429 the rate limiter
/// did not time).
pub fn rate_limited() -> ApiError {
    ApiError::rate_limited(RETRY_AFTER_SECS)
}

impl Readers {
    /// Starts the reader threads; at most `max_total` heavy reads are
    /// admitted at once.
    pub fn start(max_total: usize) -> Readers {
        let gate = std::env::var_os("NATTER_READ_GATE").map(PathBuf::from).map(Arc::new);
        Readers {
            heavy: Lane::start("reader", gate),
            light: Lane::start("light-reader", None),
            admitted: Arc::new(Admitted {
                max_total: max_total.max(1),
                total: AtomicUsize::new(0),
                per_user: parking_lot::Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Admits one heavy read for `user` (`None`: a spectator, bounded by
    /// the total only), or refuses with the rate-limit error.
    fn admit(&self, user: Option<UserId>) -> Result<Ticket, ApiError> {
        let admitted = &self.admitted;
        let claimed = admitted.total.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < admitted.max_total).then_some(n + 1)
        });
        if claimed.is_err() {
            return Err(rate_limited());
        }
        // From here the ticket owns the total's place: dropping it on a
        // refusal below gives it back.
        let mut ticket = Ticket { admitted: Arc::clone(admitted), user: None };
        if let Some(user) = user {
            let mut per_user = admitted.per_user.lock();
            let n = per_user.entry(user).or_insert(0);
            if *n >= MAX_PER_USER {
                return Err(rate_limited());
            }
            *n += 1;
            ticket.user = Some(user);
        }
        Ok(ticket)
    }

    /// Runs the heavy read `read` on a heavy-lane thread for `user` and
    /// returns its result; a coroutine caller parks until it is done.
    /// Refused with the rate-limit error past the bounds.
    pub fn run<T: Send + 'static>(
        &self,
        user: Option<UserId>,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let ticket = self.admit(user)?;
        self.heavy.run(Some(ticket), read)
    }

    /// Runs the light read `read` on a light-lane thread and returns its
    /// result; a coroutine caller parks until it is done. Never refused.
    pub fn run_light<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        self.light.run(None, read)
    }

    /// Heavy reads in their lane now (running or waiting for a thread).
    pub fn in_flight(&self) -> usize {
        self.admitted.total.load(Ordering::Acquire)
    }
}

/// Announces job `n` in `dir` and waits there until `dir/release` exists
/// (a reader thread, not a coroutine: it may sleep).
fn hold_at_gate(dir: &std::path::Path, n: u64) {
    let _ = std::fs::write(dir.join(format!("started-{n}")), b"");
    while !dir.join("release").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_run_and_return_their_result() {
        let readers = Readers::start(4);
        assert_eq!(readers.run(Some(UserId(1)), || 6 * 7).unwrap(), 42);
        assert_eq!(readers.in_flight(), 0);
        assert_eq!(readers.run_light(|| "light").unwrap(), "light");
        #[cfg(target_os = "linux")]
        {
            let nice = |r: &Readers, heavy: bool| match heavy {
                true => r.run(None, crate::priority::nice_and_policy).unwrap(),
                false => r.run_light(crate::priority::nice_and_policy).unwrap(),
            };
            assert_eq!(nice(&readers, true), (19, 0), "heavy reads at nice 19");
            assert_eq!(nice(&readers, false), (19, 0), "light reads at nice 19");
        }
        assert_eq!(readers.run_light(|| -> u8 { panic!("boom") }).unwrap_err().status, 500);
        // A read that panics is an internal error, and gives its place back.
        let e = readers.run(None, || -> u8 { panic!("boom") }).unwrap_err();
        assert_eq!(e.status, 500);
        assert_eq!(readers.in_flight(), 0);
    }

    #[test]
    fn admission_is_bounded_per_user_and_in_total() {
        let readers = Readers::start(3);
        let me = Some(UserId(1));
        let tickets: Vec<Ticket> = (0..MAX_PER_USER).map(|_| readers.admit(me).unwrap()).collect();
        let e = readers.admit(me).map(drop).unwrap_err();
        assert_eq!((e.status, e.code), (429, "RATE_LIMIT_HIT"));
        assert!(e.extra.iter().any(|(k, _)| *k == "retry-after"));
        // The refusal gave its total's place back: another user gets it.
        let other = readers.admit(Some(UserId(2))).unwrap();
        assert_eq!(readers.in_flight(), 3);
        assert_eq!(readers.admit(Some(UserId(3))).map(drop).unwrap_err().status, 429);
        assert_eq!(readers.admit(None).map(drop).unwrap_err().status, 429);
        drop(other);
        drop(tickets);
        assert_eq!(readers.in_flight(), 0);
        assert!(readers.admitted.per_user.lock().is_empty());
        assert!(readers.admit(me).is_ok());
    }
}
