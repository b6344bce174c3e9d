//! Custom profile fields as Zulip shows them.

use serde_json::{json, Map, Value};

use crate::state::{RealmId, State, UserId};

/// The external account services Zulip knows (an external-account field's
/// `subtype`, besides `custom`): subtype, the text administrators pick it
/// by, the field's name, its hint, and the profile URL pattern.
pub const DEFAULT_EXTERNAL_ACCOUNTS: [(&str, &str, &str, &str, &str); 2] = [
    ("twitter", "Twitter", "Twitter username", "", "https://twitter.com/%(username)s"),
    ("github", "GitHub", "GitHub username", "", "https://github.com/%(username)s"),
];

/// Register's `realm_default_external_accounts`: subtype →
/// `{name, text, hint, url_pattern}`.
pub fn default_external_accounts() -> Value {
    let accounts: Map<String, Value> = DEFAULT_EXTERNAL_ACCOUNTS
        .iter()
        .map(|(subtype, text, name, hint, url_pattern)| {
            let account =
                json!({"name": name, "text": text, "hint": hint, "url_pattern": url_pattern});
            ((*subtype).to_owned(), account)
        })
        .collect();
    Value::Object(accounts)
}

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
