//! Zulip's JSON for uploaded files (`GET /attachments`, `attachment`
//! events).

use serde_json::{json, Value};

use crate::state::files::Attachment;
use crate::state::State;

/// One attachment as its owner sees it: `create_time` and each message's
/// `date_sent` in milliseconds; messages since deleted are left out.
pub fn attachment(state: &State, a: &Attachment) -> Value {
    let messages: Vec<Value> = a
        .messages
        .iter()
        .filter_map(|id| state.messages.get(id))
        .map(|m| json!({"id": m.id.0, "date_sent": m.timestamp * 1000}))
        .collect();
    json!({
        "id": a.id,
        "name": a.name,
        "path_id": a.path_id,
        "size": a.size,
        "create_time": a.create_time * 1000,
        "messages": messages,
    })
}
