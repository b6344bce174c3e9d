//! A realm's linkifiers and default channel groups as Zulip shows them
//! (the same to every member of the realm).

use serde_json::{json, Value};

use super::channel::default_stream;
use crate::state::organization::{DefaultStreamGroup, Linkifier};
use crate::state::{RealmId, State};

/// Zulip's linkifier object.
pub fn linkifier_json(l: &Linkifier) -> Value {
    json!({ "id": l.id, "pattern": l.pattern, "url_template": l.url_template })
}

/// A realm's linkifiers, in the order they apply.
pub fn linkifiers_json(state: &State, realm: RealmId) -> Value {
    let list = state.organization.linkifiers(realm);
    Value::Array(list.iter().map(linkifier_json).collect())
}

/// The `realm_linkifiers` event: the whole list.
pub fn linkifiers_event(state: &State, realm: RealmId) -> Value {
    json!({ "type": "realm_linkifiers", "realm_linkifiers": linkifiers_json(state, realm) })
}

/// Zulip's default channel group object: its channels by name.
pub fn stream_group_json(state: &State, group: &DefaultStreamGroup) -> Value {
    let mut channels: Vec<_> =
        group.channels.iter().filter_map(|id| state.channels.get(id)).collect();
    channels.sort_by_key(|c| c.name.to_lowercase());
    json!({
        "id": group.id,
        "name": group.name,
        "description": group.description,
        "streams": channels.iter().map(default_stream).collect::<Vec<_>>(),
    })
}

/// A realm's default channel groups, by id.
pub fn stream_groups_json(state: &State, realm: RealmId) -> Value {
    let groups = state.organization.of(realm).stream_groups;
    Value::Array(groups.iter().map(|g| stream_group_json(state, g)).collect())
}

/// The `default_stream_groups` event: the whole list.
pub fn stream_groups_event(state: &State, realm: RealmId) -> Value {
    json!({ "type": "default_stream_groups",
            "default_stream_groups": stream_groups_json(state, realm) })
}
