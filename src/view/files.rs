//! Zulip's JSON for uploaded files (`GET /attachments`, `attachment`
//! events).

use serde_json::{json, Value};

use crate::state::files::Attachment;
use crate::state::{RealmId, State};

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

/// A realm's custom emoji as Zulip's `realm_emoji` dict: id (as text) →
/// `id`, `name`, `source_url`, `still_url`, `deactivated`, `author_id`.
pub fn realm_emoji(state: &State, realm: RealmId) -> Value {
    let mut dict = serde_json::Map::new();
    for emoji in state.files.realm_emoji(realm) {
        dict.insert(
            emoji.id.to_string(),
            json!({
                "id": emoji.id.to_string(),
                "name": emoji.name,
                "source_url": format!("/user_avatars/{}", emoji.key),
                "still_url": null,
                "deactivated": emoji.deactivated,
                "author_id": emoji.author.0,
            }),
        );
    }
    Value::Object(dict)
}
