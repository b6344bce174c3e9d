//! `GET /health` (the process answers) and `GET /health/ready` (it should
//! get traffic): for load balancers and service managers, outside
//! `/api/v1` and without credentials.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::response::{self, Response};
use crate::api::App;
use crate::error::ApiError;

/// What readiness knows beyond the `App`: whether shutdown has begun,
/// and the requests being answered (for the drain before it).
#[derive(Debug, Default)]
pub struct Health {
    shutting_down: AtomicBool,
    in_flight: AtomicUsize,
}

/// A request being answered, counted until dropped.
pub struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Health {
    /// Counts a request as in flight until the guard is dropped. (Sequentially
    /// consistent with `begin_shutdown` and `drain`: a request either sees
    /// shutdown begun or is counted by the drain.)
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(&self.in_flight)
    }

    /// Requests being answered now (long-polls aside).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Waits (an OS thread's sleep: called from `main`, never from a
    /// coroutine) until no request is in flight or `bound` has passed;
    /// the requests still in flight then.
    pub fn drain(&self, bound: Duration) -> usize {
        let until = Instant::now() + bound;
        loop {
            let left = self.in_flight.load(Ordering::SeqCst);
            if left == 0 || Instant::now() >= until {
                return left;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// From now on, readiness answers 503 (a signal arrived).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }
}

/// The reply to `path` if it is a health route (`None` otherwise).
///
/// - `/health`: 200 while the process serves HTTP at all.
/// - `/health/ready`: 200 with the recovered seq once the data dir is
///   recovered (the listener opens only then), while the log takes
///   appends and shutdown has not begun; otherwise 503 `NOT_READY`.
pub fn answer(app: &App, health: &Health, method: &str, path: &str) -> Option<Response> {
    let ready = match path {
        "/health" => false,
        "/health/ready" => true,
        _ => return None,
    };
    if method != "GET" && method != "HEAD" {
        return Some(response::error(&ApiError::method_not_allowed(method)));
    }
    let mut fields = crate::api::Reply::new();
    if !ready {
        fields.insert("status".into(), "alive".into());
        return Some(response::success(fields, Vec::new()));
    }
    let refusal = if health.shutting_down() {
        "Shutting down"
    } else if !app.committer.accepting() {
        "The log does not take writes"
    } else {
        fields.insert("status".into(), "ready".into());
        fields.insert("seq".into(), app.state.applied_seq().into());
        return Some(response::success(fields, Vec::new()));
    };
    Some(response::error(&ApiError::not_ready(refusal)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drain_waits_for_requests_in_flight_up_to_its_bound() {
        let health = Health::default();
        assert_eq!(health.drain(Duration::from_secs(60)), 0, "nothing in flight: at once");
        let first = health.enter();
        let second = health.enter();
        assert_eq!(health.drain(Duration::from_millis(20)), 2, "the bound ends the wait");
        drop(first);
        std::thread::scope(|s| {
            s.spawn(|| drop(second));
            assert_eq!(health.drain(Duration::from_secs(600)), 0);
        });
        assert!(!health.shutting_down());
        health.begin_shutdown();
        assert!(health.shutting_down());
    }
}
