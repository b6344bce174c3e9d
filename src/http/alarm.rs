//! Time-outs for connections waiting for bytes, without a timer per read.
//!
//! A connection that has answered a request waits for the next one with
//! may's `WaitIo::wait_io` (park until the socket's next readiness event)
//! and then reads, instead of reading first: that first read would almost
//! always find nothing (the client is still reading the reply) and cost a
//! system call, and a read that parks with a time-out set adds a timer to
//! may's timer list and removes it again — both for every request.
//!
//! `wait_io` has no time-out, so each connection has an [`Alarm`]: before
//! it parks it sets its deadline, and one sweeper coroutine per listener
//! wakes every connection whose deadline has passed, [`TICK`]-ish late at
//! most. A woken connection finds no bytes, sees the time, and times out
//! as before (408 for a stalled request, a silent close when idle).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use may::io::{WaitIo, WaitIoWaker};
use may::net::TcpStream;

/// The longest the sweeper sleeps between two looks; a time-out fires at
/// most about this late (and never early).
pub const TICK: Duration = Duration::from_millis(50);

/// A deadline no one has set.
const UNSET: u64 = u64::MAX;

/// The alarms of one listener's connections, and the clock they count on.
pub struct Alarms {
    origin: Instant,
    slots: parking_lot::Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    alarms: Vec<Option<Arc<Alarm>>>,
    free: Vec<usize>,
}

/// One connection's deadline, and the means to wake its coroutine.
struct Alarm {
    /// Milliseconds since `Alarms::origin`; `UNSET` when not waiting.
    due: AtomicU64,
    waker: WaitIoWaker,
}

/// A connection's alarm; unregistered when dropped.
pub struct AlarmSlot {
    alarms: Arc<Alarms>,
    index: usize,
    alarm: Arc<Alarm>,
}

impl Alarms {
    /// An empty set with its sweeper coroutine, which ends once the last
    /// `Arc` (the accept loop's and the connections') is gone.
    pub fn start() -> Arc<Alarms> {
        let alarms = Arc::new(Alarms { origin: Instant::now(), slots: Default::default() });
        let weak: Weak<Alarms> = Arc::downgrade(&alarms);
        let sweeper = may::coroutine::Builder::new().name("natter-alarms".into());
        let spawned = super::spawn::spawn_co(sweeper, move || loop {
            may::coroutine::sleep(TICK);
            match weak.upgrade() {
                Some(alarms) => alarms.sweep(),
                None => return,
            }
        });
        if let Err(e) = spawned {
            // Without it a stalled or idle connection is never timed out.
            eprintln!("natter: fatal: cannot start the connection time-out sweeper: {e}");
            std::process::abort();
        }
        alarms
    }

    /// Gives `stream`'s connection an alarm.
    pub fn register(self: &Arc<Self>, stream: &TcpStream) -> AlarmSlot {
        let alarm = Arc::new(Alarm { due: AtomicU64::new(UNSET), waker: stream.waker() });
        let mut slots = self.slots.lock();
        let index = match slots.free.pop() {
            Some(index) => {
                slots.alarms[index] = Some(Arc::clone(&alarm));
                index
            }
            None => {
                slots.alarms.push(Some(Arc::clone(&alarm)));
                slots.alarms.len() - 1
            }
        };
        AlarmSlot { alarms: Arc::clone(self), index, alarm }
    }

    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// Wakes every connection whose deadline has passed.
    fn sweep(&self) {
        let now = self.now_ms();
        let slots = self.slots.lock();
        for alarm in slots.alarms.iter().flatten() {
            if alarm.due.load(Ordering::Relaxed) <= now {
                alarm.waker.wakeup();
            }
        }
    }
}

impl AlarmSlot {
    /// Parks the coroutine until `stream` (the socket this slot was
    /// registered for) has a readiness event or `deadline` has passed;
    /// which one, the caller finds out by reading and looking at the time.
    pub fn wait(&self, stream: &TcpStream, deadline: Instant) {
        // Rounded up: woken at or after the deadline, never a tick early.
        let due = deadline.saturating_duration_since(self.alarms.origin).as_micros().div_ceil(1000)
            as u64;
        self.alarm.due.store(due, Ordering::Relaxed);
        stream.wait_io();
        self.alarm.due.store(UNSET, Ordering::Relaxed);
    }
}

impl Drop for AlarmSlot {
    fn drop(&mut self) {
        let mut slots = self.alarms.slots.lock();
        slots.alarms[self.index] = None;
        slots.free.push(self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_a_due_alarm_wakes_its_waiter() {
        may::config().set_stack_size(0x8000);
        let listener = may::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let alarms = Alarms::start();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let first = alarms.register(&stream);
        let second = alarms.register(&stream);
        assert_eq!((first.index, second.index), (0, 1));
        drop(first);
        let third = alarms.register(&stream);
        assert_eq!(third.index, 0, "a freed slot is reused");
        drop((second, third));

        // Nothing ever arrives on the socket: only the alarm can end the wait.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let waiter = Arc::clone(&alarms);
        let started = Instant::now();
        super::super::spawn::spawn_co(may::coroutine::Builder::new(), move || {
            let slot = waiter.register(&stream);
            let deadline = Instant::now() + Duration::from_millis(120);
            // Readiness events (the socket is writable) end a wait early
            // too; only the alarm can end the last one.
            while Instant::now() < deadline {
                slot.wait(&stream, deadline);
            }
            done_tx.send(Instant::now()).unwrap();
        })
        .unwrap();
        let woke = done_rx.recv_timeout(Duration::from_secs(30)).expect("never woken");
        let waited = woke - started;
        assert!(waited >= Duration::from_millis(120), "woken early: {waited:?}");
    }
}
