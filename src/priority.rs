//! Scheduling classes for natter's background OS threads, on Linux
//! (elsewhere nothing).
//!
//! The HTTP workers run at the process's own priority. Work that must
//! yield the cores to them when they want them — encoding a snapshot,
//! answering a heavy read — runs in a lower class, so a busy box serves
//! sends first and the rest with what is left.

/// A thread's scheduling class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// `SCHED_IDLE`: runs only on a core nothing else wants (next to no
    /// CPU while the cores are saturated).
    Idle,
    /// Nice 19 in the normal class: about 1.5% of a busy core against
    /// each competing normal thread, all of an idle one.
    Background,
}

impl Priority {
    /// Puts the calling thread in this class; false if the system refused
    /// (the thread keeps its priority).
    pub fn apply(self) -> bool {
        #[cfg(target_os = "linux")]
        {
            use thread_priority::{
                set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
                ThreadPriority, ThreadSchedulePolicy,
            };
            let policy = match self {
                Priority::Idle => NormalThreadSchedulePolicy::Idle,
                Priority::Background => NormalThreadSchedulePolicy::Other,
            };
            let policy = ThreadSchedulePolicy::Normal(policy);
            set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, policy).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = self;
            true
        }
    }
}

/// How long a background thread computes before it offers the core to
/// waiting threads (`breathe`).
const BREATH: std::time::Duration = std::time::Duration::from_micros(25);

thread_local! {
    /// On a background thread (`Pool`): when it last offered its core.
    static LAST_BREATH: std::cell::Cell<Option<std::time::Instant>> =
        const { std::cell::Cell::new(None) };
}

/// On a pool's background thread, every `BREATH` of work: gives the core
/// to any thread waiting for it (`sched_yield`); elsewhere nothing. Long
/// loops of work that runs in the background call it as they go.
///
/// Why: a thread at nice 19 that the OS is running is not preempted at
/// once when a worker wakes. Linux's scheduler (EEVDF, with
/// `RUN_TO_PARITY`) lets the running thread finish its time slice first,
/// and on a kernel ticking at 250 Hz without forced preemption that can be
/// milliseconds, in which a send that is ready waits for a read. Offering
/// the core every 25 µs bounds that wait; a yield with nobody waiting
/// returns at once, and a nice-19 thread that yields goes behind the
/// normal-priority threads that want the core, not behind everything.
/// True when it offered the core.
pub fn breathe() -> bool {
    LAST_BREATH.with(|last| {
        let Some(at) = last.get() else { return false };
        if at.elapsed() < BREATH {
            return false;
        }
        std::thread::yield_now();
        last.set(Some(std::time::Instant::now()));
        true
    })
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A fixed set of OS threads in one scheduling class, taking jobs from one
/// queue: the coroutine (or thread) that hands a job in parks on a may
/// channel until the job's result comes back, so its worker thread serves
/// other coroutines meanwhile.
pub struct Pool {
    jobs: std::sync::Mutex<std::sync::mpsc::Sender<Job>>,
}

impl Pool {
    /// Starts `threads` threads named `natter-<name>-<i>` in class
    /// `priority`; `before_each`, when given, runs on the thread before
    /// each job with the job's number (the reads' test gate).
    pub fn start(
        name: &str,
        threads: usize,
        priority: Priority,
        before_each: Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>,
    ) -> Pool {
        use std::sync::atomic::{AtomicU64, Ordering};
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let started = std::sync::Arc::new(AtomicU64::new(0));
        for i in 0..threads.max(1) {
            let rx = std::sync::Arc::clone(&rx);
            let before_each = before_each.clone();
            let started = std::sync::Arc::clone(&started);
            std::thread::Builder::new()
                .name(format!("natter-{name}-{i}"))
                .spawn(move || {
                    if !priority.apply() {
                        tracing::warn!("could not lower the priority of a {priority:?} thread");
                    }
                    LAST_BREATH.with(|last| last.set(Some(std::time::Instant::now())));
                    loop {
                        // Plain OS threads: a std lock and a blocking
                        // receive are what they are for.
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        if let Some(hook) = &before_each {
                            hook(started.fetch_add(1, Ordering::SeqCst));
                        }
                        LAST_BREATH.with(|last| last.set(Some(std::time::Instant::now())));
                        job();
                    }
                })
                .expect("spawn a pool thread");
        }
        Pool { jobs: std::sync::Mutex::new(tx) }
    }

    /// Runs `job` on one of the pool's threads and returns its result
    /// (`None` if it panicked or the pool is gone); a coroutine caller
    /// parks until it is done.
    pub fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = may::sync::mpsc::channel();
        let job: Job = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = tx.send(result.ok());
        });
        let sent = match self.jobs.lock() {
            Ok(jobs) => jobs.send(job).is_ok(),
            Err(_) => false,
        };
        if !sent {
            return None;
        }
        rx.recv().ok().flatten()
    }
}

/// The calling thread's nice value and scheduling policy (proc(5)).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn nice_and_policy() -> (i64, i64) {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The fields after the command's closing parenthesis start at
    // field 3 (proc(5)): nice is field 19, the policy field 41.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    (fields[19 - 3].parse().unwrap(), fields[41 - 3].parse().unwrap())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pool_threads_breathe_every_25_us_and_others_never() {
        let spin = |d: std::time::Duration| {
            let start = std::time::Instant::now();
            while start.elapsed() < d {}
        };
        spin(BREATH * 2);
        assert!(!breathe(), "a thread outside a pool never yields");
        let pool = Pool::start("breathing", 1, Priority::Background, None);
        let due = pool
            .run(move || {
                spin(BREATH * 2);
                breathe()
            })
            .unwrap();
        assert!(due, "a pool thread that worked a breath offers its core");
        assert_eq!(pool.run(|| 6 * 7), Some(42));
        assert_eq!(pool.run(|| -> u8 { panic!("boom") }), None, "a panic is None");
        assert_eq!(pool.run(nice_and_policy), Some((19, 0)));
    }

    #[test]
    fn background_is_nice_19_and_idle_is_sched_idle() {
        std::thread::spawn(|| {
            assert!(Priority::Background.apply());
            assert_eq!(nice_and_policy(), (19, 0), "SCHED_OTHER at nice 19");
            assert!(Priority::Idle.apply());
            assert_eq!(nice_and_policy().1, 5, "SCHED_IDLE");
        })
        .join()
        .unwrap();
    }
}
