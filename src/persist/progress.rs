//! Restart progress lines: what `persist::open` prints while it loads a
//! snapshot and replays the log, so an operator watching a long restart
//! sees records/s and an ETA instead of silence.
//!
//! A line is written at most once a second (the clock is read once every
//! `CHECK_EVERY` records, so counting costs nothing measurable), plus one
//! summary line per phase whatever its length. The sink is any `Write`:
//! the server passes stderr, tests a buffer, library callers a sink.

use std::io::Write;
use std::time::{Duration, Instant};

/// How many records pass between two looks at the clock.
const CHECK_EVERY: u64 = 4_096;
/// The shortest time between two progress lines.
const INTERVAL: Duration = Duration::from_secs(1);

/// Progress of one replay of `total` log records.
pub struct Replay<'a> {
    out: &'a mut dyn Write,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl<'a> Replay<'a> {
    /// Starts counting a replay of `total` records.
    pub fn new(out: &'a mut dyn Write, total: u64) -> Self {
        let now = Instant::now();
        Replay { out, total, done: 0, started: now, last_line: now }
    }

    /// Counts one applied record; prints a line if a second has passed.
    pub fn record(&mut self) {
        self.done += 1;
        if !self.done.is_multiple_of(CHECK_EVERY) {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.last_line) < INTERVAL {
            return;
        }
        self.last_line = now;
        let rate = rate(self.done, now.duration_since(self.started));
        let left = self.total.saturating_sub(self.done);
        let eta = if rate > 0.0 { left as f64 / rate } else { 0.0 };
        // Progress output is best effort: a closed stderr must not stop a restart.
        let _ = writeln!(
            self.out,
            "natter: replaying the log: {}/{} records ({:.0} records/s, ETA {:.0} s)",
            self.done, self.total, rate, eta
        );
    }

    /// Prints the summary line and returns the number of records counted.
    pub fn finish(self) -> u64 {
        let took = self.started.elapsed();
        let _ = writeln!(
            self.out,
            "natter: log replay: {} records in {:.2} s ({:.0} records/s)",
            self.done,
            took.as_secs_f64(),
            rate(self.done, took)
        );
        self.done
    }
}

/// Records per second (0 for an instant phase with nothing done).
fn rate(done: u64, took: Duration) -> f64 {
    let secs = took.as_secs_f64();
    if secs > 0.0 {
        done as f64 / secs
    } else {
        0.0
    }
}

/// Prints the summary line of a snapshot load: its size, the threads it
/// was decoded and rebuilt on, and the time spent decoding the file and
/// rebuilding the maps and indexes.
pub fn snapshot_loaded(
    out: &mut dyn Write,
    seq: u64,
    bytes: u64,
    threads: usize,
    decode: Duration,
    rebuild: Duration,
) {
    let _ = writeln!(
        out,
        "natter: loaded snapshot at seq {seq} ({:.1} MB) in {:.2} s (decode {:.2} s, rebuild {:.2} s, {threads} threads)",
        bytes as f64 / 1e6,
        (decode + rebuild).as_secs_f64(),
        decode.as_secs_f64(),
        rebuild.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_ends_with_the_summary_and_its_count() {
        let mut out = Vec::new();
        let mut replay = Replay::new(&mut out, 10_000);
        for _ in 0..10_000 {
            replay.record();
        }
        assert_eq!(replay.finish(), 10_000);
        let text = String::from_utf8(out).unwrap();
        let (last, before) =
            text.lines().collect::<Vec<_>>().split_last().map(|(l, b)| (*l, b.to_vec())).unwrap();
        assert!(last.starts_with("natter: log replay: 10000 records in "), "{text}");
        assert!(last.ends_with("records/s)"), "{text}");
        // Counting ten thousand takes far less than the one-second interval;
        // should the machine stall, any earlier line is still a progress line.
        assert!(before.iter().all(|l| l.starts_with("natter: replaying the log: ")), "{text}");
    }

    #[test]
    fn a_replay_longer_than_the_interval_prints_progress_with_an_eta() {
        let mut out = Vec::new();
        let mut replay = Replay::new(&mut out, 3 * CHECK_EVERY);
        for _ in 0..CHECK_EVERY {
            replay.record();
        }
        // Pretend the first batch took longer than the interval.
        replay.last_line -= INTERVAL;
        replay.started -= INTERVAL;
        for _ in 0..CHECK_EVERY {
            replay.record();
        }
        replay.finish();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("natter: replaying the log: 8192/12288 records ("), "{text}");
        assert!(lines[0].contains("ETA"), "{text}");
        assert!(lines[1].starts_with("natter: log replay: 8192 records"), "{text}");
    }
}
