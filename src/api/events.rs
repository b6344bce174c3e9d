//! Event queues over HTTP: `GET /events` (long-poll) and `DELETE /events`.
//! Queues are created by `POST /register` (`register.rs`).

use serde_json::json;

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::events::queue::QueueError;
use crate::view::json_text::SortedMembers;

/// 400 `BAD_EVENT_QUEUE_ID`. The lowercase "id" in the message matters:
/// zulip-term 0.7.0 re-registers only when `msg` starts with
/// "Bad event queue id:".
pub fn bad_queue(queue_id: &str) -> ApiError {
    ApiError {
        status: 400,
        code: "BAD_EVENT_QUEUE_ID",
        msg: format!("Bad event queue id: {queue_id}"),
        extra: vec![("queue_id", json!(queue_id))],
    }
}

/// `GET /events`: the queue's events after `last_event_id`; parks until one
/// arrives (or a heartbeat is due) unless `dont_block`.
pub fn get_events(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let user = call.caller().id;
    let last_event_id = call.params.int("last_event_id")?;
    let dont_block = call.params.bool_or("dont_block", false)?;
    // Borrowed, not copied: this is the most frequent request of all.
    let queue_id = call.params.raw("queue_id").ok_or_else(|| ApiError::missing("queue_id"))?;
    let polled = app
        .hub
        .realtime()
        .queues
        .poll_json(queue_id, user, last_event_id, dont_block)
        .map_err(|_| bad_queue(queue_id))?;
    // Written as text in key order (`SortedMembers`), the most frequent
    // reply of all (one per event delivered): the events are JSON text
    // already (`queue::Queued`) and go in as they are, and no map of the
    // reply is built, allocated and freed.
    let mut out = SortedMembers::reply(polled.json.len() + queue_id.len() + 32);
    out.member("events").extend_from_slice(polled.json.as_bytes());
    out.string("queue_id", queue_id);
    call.sorted_reply = Some(out);
    Ok(Reply::new())
}

/// `DELETE /events`: delete one of the caller's queues.
pub fn delete_queue(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let queue_id = call.params.required_string("queue_id")?;
    let user = call.caller().id;
    app.hub.realtime().queues.delete(&queue_id, user).map_err(|e| match e {
        QueueError::BadQueue | QueueError::TooManyQueues(_) => bad_queue(&queue_id),
    })?;
    Ok(Reply::new())
}
