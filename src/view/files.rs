//! Zulip's JSON for uploaded files (`GET /attachments`, `attachment`
//! events).

use serde_json::{json, Value};

use crate::state::files::{Attachment, RealmFileSettings};
use crate::state::{Realm, RealmId, State, SystemGroup};
use crate::view::realm::Announce;

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

/// A realm's file settings as register's `realm_<property>` and
/// `PATCH /realm`'s events show them.
pub fn settings(realm: &Realm, s: &RealmFileSettings) -> Vec<(&'static str, Value, Announce)> {
    let emoji = realm.group_setting(&s.can_add_custom_emoji_group, SystemGroup::Members);
    vec![
        ("avatar_changes_disabled", json!(s.avatar_changes_disabled), Announce::Update),
        (
            "can_add_custom_emoji_group",
            crate::view::groups::group_setting(&emoji),
            Announce::UpdateDict,
        ),
    ]
}

/// The `realm` events that take a client from `before` to `after`.
pub fn settings_changes(
    realm: &Realm,
    before: &RealmFileSettings,
    after: &RealmFileSettings,
) -> Vec<Value> {
    settings(realm, before)
        .into_iter()
        .zip(settings(realm, after))
        .filter(|((_, old, _), (_, new, _))| old != new)
        .map(|(_, (property, value, announce))| {
            crate::view::realm::announce(property, value, announce)
        })
        .collect()
}
