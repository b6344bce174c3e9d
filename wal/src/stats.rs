//! Figures about the log's flushes, kept with relaxed atomics so that
//! recording one costs a few uncontended increments: how long each
//! `fdatasync` took, how many records each made durable (the size of a
//! commit group), and how many bytes were appended. A monitoring layer
//! reads them with [`Wal::stats`](crate::Wal::stats).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A histogram with fixed upper bounds, recorded without locks.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, and one past the last (`+Inf`).
    counts: Box<[AtomicU64]>,
    /// The sum of the observed values, in millionths of their unit.
    sum_micros: AtomicU64,
}

/// What a [`Histogram`] holds at one moment, in Prometheus' shape.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramFigures {
    /// The sum of the observed values.
    pub sum: f64,
    /// How many values were observed.
    pub count: u64,
    /// `(upper bound, observations at or below it)`, cumulative, the last
    /// bound being `f64::INFINITY`.
    pub buckets: Vec<(f64, u64)>,
}

impl Histogram {
    /// An empty histogram with these upper bounds (increasing).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    /// Counts one observation of `value`.
    pub fn observe(&self, value: f64) {
        let slot = self.bounds.iter().position(|&b| value <= b).unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        // Saturating float-to-int conversion: a negative value adds 0.
        self.sum_micros.fetch_add((value * 1e6) as u64, Ordering::Relaxed);
    }

    /// The counts so far. Taken while others record, the figures may be
    /// off by the observations in flight, never more.
    pub fn figures(&self) -> HistogramFigures {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            buckets.push((self.bounds.get(i).copied().unwrap_or(f64::INFINITY), cumulative));
        }
        HistogramFigures {
            sum: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            count: cumulative,
            buckets,
        }
    }
}

/// Flush durations, in seconds: 50 µs to about 1.6 s, doubling.
const SYNC_SECONDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_2, 0.000_4, 0.000_8, 0.001_6, 0.003_2, 0.006_4, 0.012_8, 0.025_6,
    0.051_2, 0.102_4, 0.204_8, 0.409_6, 0.819_2, 1.638_4,
];

/// Records made durable by one flush: 1 to 4,096, doubling.
const GROUP_RECORDS: &[f64] =
    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0];

/// The log's figures since it was opened.
#[derive(Debug)]
pub struct Stats {
    /// Duration of each `fdatasync` of a segment, in seconds.
    pub sync_seconds: Histogram,
    /// Records each flush made durable that no earlier flush had: the
    /// size of each commit group.
    pub group_records: Histogram,
    appended_bytes: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            sync_seconds: Histogram::new(SYNC_SECONDS),
            group_records: Histogram::new(GROUP_RECORDS),
            appended_bytes: AtomicU64::new(0),
        }
    }
}

impl Stats {
    /// Counts one flush that took `took` and covered `records` new ones.
    pub(crate) fn synced(&self, took: Duration, records: u64) {
        self.sync_seconds.observe(took.as_secs_f64());
        if records > 0 {
            self.group_records.observe(records as f64);
        }
    }

    /// Counts `bytes` of frames written to segments.
    pub(crate) fn appended(&self, bytes: u64) {
        self.appended_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes of frames (headers included) appended since the log opened.
    pub fn appended_bytes(&self) -> u64 {
        self.appended_bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_end_at_infinity() {
        let h = Histogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.0, 1.5, 3.0, 4.0] {
            h.observe(v);
        }
        let f = h.figures();
        assert_eq!(f.count, 5);
        assert_eq!(f.buckets, vec![(1.0, 2), (2.0, 3), (f64::INFINITY, 5)]);
        assert!((f.sum - 10.0).abs() < 1e-9, "{}", f.sum);
    }

    #[test]
    fn a_log_counts_its_flushes_groups_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = crate::Wal::open(dir.path(), crate::Options::default()).unwrap();
        let seq = log.append_deferred([&b"one"[..], b"two", b"three"]).unwrap();
        log.wait_durable(seq);
        let stats = log.stats();
        let groups = stats.group_records.figures();
        assert!(groups.count >= 1, "{groups:?}");
        assert_eq!(groups.sum, 3.0, "every record counted in exactly one group");
        assert!(stats.sync_seconds.figures().count >= groups.count);
        let frames = stats.appended_bytes();
        assert!(frames > 11, "payloads plus frame headers: {frames}");
    }
}
