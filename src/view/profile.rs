//! Custom profile fields as Zulip shows them.

use serde_json::{json, Map, Value};

use crate::state::{RealmId, State, UserId};

/// A realm's custom profile fields, in order, as Zulip shows them.
pub fn profile_fields_json(state: &State, realm: RealmId) -> Value {
    let fields = state.realm_profile_fields(realm);
    Value::Array(
        fields
            .iter()
            .map(|f| {
                json!({"id": f.id, "type": f.field_type.code(), "order": f.order,
                       "name": f.name, "hint": f.hint, "field_data": f.field_data,
                       "display_in_profile_summary": f.display_in_profile_summary,
                       "required": f.required, "editable_by_user": f.editable_by_user})
            })
            .collect(),
    )
}

/// A user's `profile_data` object (field id → `{value, rendered_value?}`).
pub fn profile_data(state: &State, user: UserId) -> Value {
    let values = state.profile_values.get(&user).unwrap_or_default();
    let mut out = Map::new();
    for (id, (value, rendered)) in values {
        let mut v = json!({ "value": value });
        if let Some(r) = rendered {
            v["rendered_value"] = json!(r);
        }
        out.insert(id.to_string(), v);
    }
    Value::Object(out)
}
