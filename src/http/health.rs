//! `GET /health` (the process answers) and `GET /health/ready` (it should
//! get traffic): for load balancers and service managers, outside
//! `/api/v1` and without credentials.

use std::sync::atomic::{AtomicBool, Ordering};

use super::response::{self, Response};
use crate::api::App;
use crate::error::ApiError;

/// What readiness knows beyond the `App`: whether shutdown has begun.
#[derive(Debug, Default)]
pub struct Health {
    shutting_down: AtomicBool,
}

impl Health {
    /// From now on, readiness answers 503 (a signal arrived).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
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
