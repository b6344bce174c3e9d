//! What the machine itself did while a run was measured, so that a
//! latency tail can be told apart from the server's own work:
//!
//! - the CPU time of the whole machine by kind, from `/proc/stat`: on a
//!   virtual machine *steal* is time the host ran something else while
//!   this machine's CPUs had work;
//! - a probe thread that sleeps 1 ms at a time at real-time priority and
//!   notes how late it wakes. A real-time thread preempts every ordinary
//!   one as soon as it is due, so waking milliseconds late means the
//!   virtual CPU itself was not running (or, without real-time priority,
//!   that the box was that busy).
//!
//! Linux only; elsewhere [`Watch::start`] watches nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use natter::http::conn::clock_time;

/// How late a wake-up of the probe counts as a stall.
pub const STALL: Duration = Duration::from_millis(5);

/// The probe's sleep.
const NAP: Duration = Duration::from_millis(1);

/// Cumulative CPU time of all CPUs by kind, in clock ticks (the `cpu` line
/// of `/proc/stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub busy: u64,
    pub softirq: u64,
    pub idle: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Parses the aggregate `cpu` line of `/proc/stat`: user nice system
    /// idle iowait irq softirq steal (guest time is already in user).
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> =
            line.split_whitespace().skip(1).map(|v| v.parse().ok()).collect::<Option<_>>()?;
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        if f.len() < 4 {
            return None;
        }
        Some(CpuTimes {
            busy: at(0) + at(1) + at(2) + at(5),
            softirq: at(6),
            idle: at(3) + at(4),
            steal: at(7),
        })
    }

    fn read() -> Option<CpuTimes> {
        CpuTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            busy: self.busy.saturating_sub(earlier.busy),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            idle: self.idle.saturating_sub(earlier.idle),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }

    /// Each kind's share of the total, in percent.
    fn shares(self) -> Option<[f64; 4]> {
        let total = self.busy + self.softirq + self.idle + self.steal;
        let pct = |v: u64| 100.0 * v as f64 / total as f64;
        (total > 0).then(|| [pct(self.busy), pct(self.softirq), pct(self.idle), pct(self.steal)])
    }
}

/// Late wake-ups of the probe.
#[derive(Clone, Copy, Debug, Default)]
struct Stalls {
    count: u64,
    longest: Duration,
    /// When the longest one began (wall clock), to line it up with the
    /// slowest request's send time.
    longest_at: Option<SystemTime>,
    /// Steal of all CPUs (ms) in the probe's window around the longest
    /// stall (`WINDOW` naps; `/proc/stat` counts in 10 ms ticks).
    longest_steal_ms: Option<u64>,
    realtime: bool,
}

/// Naps between two looks at `/proc/stat` in the probe.
const WINDOW: u32 = 50;

/// A running watch; [`Watch::finish`] stops it and describes what it saw.
pub struct Watch {
    cpu: Option<CpuTimes>,
    stop: Arc<AtomicBool>,
    probe: Option<JoinHandle<Stalls>>,
}

impl Watch {
    pub fn start() -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let probe = cfg!(target_os = "linux")
            .then(|| {
                std::thread::Builder::new().name("stall-probe".into()).spawn(move || probe(&flag))
            })
            .and_then(Result::ok);
        Watch { cpu: CpuTimes::read(), stop, probe }
    }

    /// What was seen, to append to a result line: `; box: busy …%,
    /// softirq …%, idle …%, steal …%; a real-time 1 ms sleeper woke ≥ 5 ms
    /// late N times (longest …)`; empty when nothing was watched.
    pub fn finish(self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        let stalls = self.probe.and_then(|p| p.join().ok());
        let cpu = self.cpu.zip(CpuTimes::read()).and_then(|(a, b)| b.since(a).shares());
        describe(cpu, stalls)
    }
}

fn describe(cpu: Option<[f64; 4]>, stalls: Option<Stalls>) -> String {
    let mut parts = Vec::new();
    if let Some([busy, softirq, idle, steal]) = cpu {
        parts.push(format!(
            "busy {busy:.1}%, softirq {softirq:.1}%, idle {idle:.1}%, steal {steal:.1}%"
        ));
    }
    if let Some(s) = stalls {
        let kind = if s.realtime { "real-time" } else { "ordinary-priority" };
        let at = s.longest_at.map(|at| format!(" at {} UTC", clock_time(at))).unwrap_or_default();
        let steal = s
            .longest_steal_ms
            .map(|ms| format!(", {ms} ms of steal around it"))
            .unwrap_or_default();
        parts.push(format!(
            "a {kind} 1 ms sleeper woke ≥ {} ms late {} times (longest {:.1} ms{at}{steal})",
            STALL.as_millis(),
            s.count,
            s.longest.as_secs_f64() * 1e3
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("; box: {}", parts.join("; "))
}

/// The probe thread's body: naps until `stop`, noting late wake-ups.
fn probe(stop: &AtomicBool) -> Stalls {
    let mut stalls = Stalls { realtime: make_realtime(), ..Stalls::default() };
    // The steal count at the start of the current window, and whether the
    // longest stall so far fell in it.
    let (mut window_steal, mut longest_in_window) = (CpuTimes::read().map(|c| c.steal), false);
    let mut naps = 0;
    while !stop.load(Ordering::Relaxed) {
        let (before, wall) = (Instant::now(), SystemTime::now());
        std::thread::sleep(NAP);
        let late = before.elapsed().saturating_sub(NAP);
        if late >= STALL {
            stalls.count += 1;
            if late > stalls.longest {
                (stalls.longest, stalls.longest_at) = (late, Some(wall));
                longest_in_window = true;
            }
        }
        naps += 1;
        if naps % WINDOW == 0 || stop.load(Ordering::Relaxed) {
            let steal = CpuTimes::read().map(|c| c.steal);
            if longest_in_window {
                stalls.longest_steal_ms =
                    window_steal.zip(steal).map(|(a, b)| b.saturating_sub(a) * TICK_MS);
            }
            (window_steal, longest_in_window) = (steal, false);
        }
    }
    stalls
}

/// Milliseconds per `/proc/stat` tick (USER_HZ is 100 on Linux).
const TICK_MS: u64 = 10;

/// Puts the calling thread in the FIFO real-time class; false if not
/// allowed (then the probe also sees ordinary run-queue waits).
fn make_realtime() -> bool {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
            ThreadPriority, ThreadSchedulePolicy,
        };
        let Ok(value) = 50u8.try_into() else { return false };
        let policy = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
        set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(value),
            policy,
        )
        .is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_is_read_by_kind() {
        let stat = "cpu  10 1 5 100 3 2 4 7 0 0\ncpu0 5 0 2 50 1 1 2 3 0 0\nintr 1 2\n";
        let cpu = CpuTimes::parse(stat).unwrap();
        assert_eq!(cpu, CpuTimes { busy: 18, softirq: 4, idle: 103, steal: 7 });
        let later = CpuTimes { busy: 38, softirq: 14, idle: 153, steal: 27 };
        let [busy, softirq, idle, steal] = later.since(cpu).shares().unwrap();
        assert_eq!((busy, softirq, idle, steal), (20.0, 10.0, 50.0, 20.0));
    }

    #[test]
    fn a_short_or_missing_cpu_line_is_not_read() {
        assert_eq!(CpuTimes::parse("cpu0 1 2 3 4\n"), None);
        assert_eq!(CpuTimes::parse("cpu  1 2\n"), None);
        assert_eq!(CpuTimes::parse("cpu  1 x 3 4\n"), None);
        assert_eq!(CpuTimes::default().shares(), None);
    }

    #[test]
    fn the_description_names_what_was_seen() {
        let stalls = Stalls {
            count: 3,
            longest: Duration::from_micros(7_260),
            longest_at: Some(SystemTime::UNIX_EPOCH + Duration::from_millis(45_296_789)),
            longest_steal_ms: Some(20),
            realtime: true,
        };
        let text = describe(Some([50.0, 10.0, 35.0, 5.0]), Some(stalls));
        assert_eq!(
            text,
            "; box: busy 50.0%, softirq 10.0%, idle 35.0%, steal 5.0%; \
             a real-time 1 ms sleeper woke ≥ 5 ms late 3 times \
             (longest 7.3 ms at 12:34:56.789 UTC, 20 ms of steal around it)"
        );
        assert_eq!(describe(None, None), "");
    }
}
