//! Latency recording for the mix: one HDR histogram per endpoint
//! (`hdrhistogram`, microseconds, 3 significant digits) plus error counts,
//! collected in windows (a ramp step or a fixed run) that are swapped out
//! and reported whole.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Longest latency a histogram tracks exactly (longer ones are clamped).
const MAX_MICROS: u64 = 300_000_000;

/// One endpoint's figures in a window.
pub struct Endpoint {
    pub latency: Histogram<u64>,
    pub errors: u64,
}

impl Endpoint {
    fn new() -> Self {
        Endpoint {
            latency: Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("histogram bounds"),
            errors: 0,
        }
    }
}

/// The figures of one window, by endpoint name.
#[derive(Default)]
pub struct Window {
    pub endpoints: BTreeMap<&'static str, Endpoint>,
}

impl Window {
    /// Every request endpoint together (not `excluded` ones).
    pub fn total(&self, excluded: &[&str]) -> Endpoint {
        let mut all = Endpoint::new();
        for (name, e) in &self.endpoints {
            if !excluded.contains(name) {
                all.latency.add(&e.latency).expect("same bounds");
                all.errors += e.errors;
            }
        }
        all
    }
}

/// Windows shared by every simulated user.
#[derive(Default)]
pub struct Recorder {
    window: Mutex<Window>,
}

impl Recorder {
    /// Records one successful request of `endpoint`.
    pub fn ok(&self, endpoint: &'static str, latency: Duration) {
        let micros = (latency.as_micros() as u64).clamp(1, MAX_MICROS);
        let mut w = self.window.lock();
        let e = w.endpoints.entry(endpoint).or_insert_with(Endpoint::new);
        e.latency.record(micros).expect("clamped into bounds");
    }

    /// Records one failed request of `endpoint`.
    pub fn error(&self, endpoint: &'static str) {
        self.window.lock().endpoints.entry(endpoint).or_insert_with(Endpoint::new).errors += 1;
    }

    /// Ends the current window and starts an empty one.
    pub fn take(&self) -> Window {
        std::mem::take(&mut *self.window.lock())
    }
}

/// `p50 p90 p99 p99.9 max` of a histogram, in milliseconds.
pub fn summary(h: &Histogram<u64>) -> String {
    let ms = |v: u64| v as f64 / 1000.0;
    format!(
        "p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms",
        ms(h.value_at_quantile(0.5)),
        ms(h.value_at_quantile(0.9)),
        ms(h.value_at_quantile(0.99)),
        ms(h.value_at_quantile(0.999)),
        ms(h.max()),
    )
}
