//! `apply` for the personal-settings area: settings, passwords, and the
//! per-user resources stored in `state::settings`. Deterministic like the
//! rest of `apply`; the events are Zulip's JSON as `Event::Broadcast`.

use serde_json::{json, Value};

use crate::events::{Audience, Event};
use crate::state::settings::{language_name, setting_def, Legacy, SettingsChange};
use crate::state::{State, UserId};

/// An event for the user's own queues only.
pub(super) fn to_user(user: UserId, event: Value) -> Event {
    Event::Broadcast { audience: Audience::Users(vec![user]), event }
}

/// `PATCH /settings`: profile fields on `User`, table settings in the
/// overrides map. Events: `realm_user` updates for name and time zone (to
/// the realm), `user_settings` updates plus the legacy
/// `update_display_settings` / `update_global_notifications` (to the user;
/// event queues drop the legacy ones for clients with `user_settings_object`).
pub(super) fn update_settings(state: &State, change: &SettingsChange) -> Vec<Event> {
    let user = state
        .users
        .update(&change.user, |u| {
            if let Some(name) = &change.full_name {
                u.full_name = name.clone();
            }
            if let Some(tz) = &change.timezone {
                u.timezone = tz.clone();
            }
            u.clone()
        })
        .unwrap_or_else(|| panic!("apply: no user {}", change.user));
    let mut events = Vec::new();
    let realm_user = |person: Value| Event::Broadcast {
        audience: Audience::Realm(user.realm),
        event: json!({ "type": "realm_user", "op": "update", "person": person }),
    };
    if let Some(name) = &change.full_name {
        events.push(realm_user(json!({ "user_id": user.id.0, "full_name": name })));
    }
    if let Some(tz) = &change.timezone {
        events.push(realm_user(json!({ "user_id": user.id.0, "timezone": tz })));
        events.extend(setting_events(user.id, &user.email, "timezone", json!(tz), Legacy::Display));
    }
    if !change.settings.is_empty() {
        state.settings.user_settings.upsert(user.id, |s| {
            for (name, value) in &change.settings {
                let default = setting_def(name)
                    .unwrap_or_else(|| panic!("apply: no setting {name}"))
                    .default
                    .value();
                if *value == default {
                    s.overrides.remove(name);
                } else {
                    s.overrides.insert(name.clone(), value.clone());
                }
            }
        });
    }
    for (name, value) in &change.settings {
        let legacy = setting_def(name).map_or(Legacy::None, |d| d.legacy);
        events.extend(setting_events(user.id, &user.email, name, value.to_json(), legacy));
    }
    events
}

/// The modern event and, for settings in a legacy group, the legacy one.
fn setting_events(
    user: UserId,
    email: &str,
    name: &str,
    value: Value,
    legacy: Legacy,
) -> Vec<Event> {
    let language =
        (name == "default_language").then(|| value.as_str().and_then(language_name)).flatten();
    let mut modern = json!({ "type": "user_settings", "op": "update", "property": name,
                             "value": value.clone() });
    let mut events = Vec::new();
    match legacy {
        Legacy::None => {}
        Legacy::Display => {
            let mut e = json!({ "type": "update_display_settings", "user": email,
                                "setting_name": name, "setting": value });
            if let Some(lang) = language {
                e["language_name"] = json!(lang);
            }
            events.push(to_user(user, e));
        }
        Legacy::Notification => events.push(to_user(
            user,
            json!({ "type": "update_global_notifications", "user": email,
                    "notification_name": name, "setting": value }),
        )),
    }
    if let Some(lang) = language {
        modern["language_name"] = json!(lang);
    }
    events.insert(0, to_user(user, modern));
    events
}
