//! `apply` for the personal-settings area: settings, passwords, and the
//! per-user resources stored in `state::settings`. Deterministic like the
//! rest of `apply`; the events are Zulip's JSON as `Event::Broadcast`.

use serde_json::{json, Value};

use crate::events::{Audience, Event};
use crate::state::access::can_see_email;
use crate::state::settings::{
    language_name, setting_def, EmailChange, Legacy, SettingValue, SettingsChange,
};
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
    // Turning draft synchronization off deletes the stored drafts (no event:
    // clients keep their local copies).
    if change
        .settings
        .iter()
        .any(|(n, v)| n == "enable_drafts_synchronization" && *v == SettingValue::Bool(false))
    {
        state.settings.drafts.remove(&user.id);
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

/// Stores a password hash. No event: nothing a client shows changes.
pub(super) fn set_password(state: &State, user: UserId, hash: &str) -> Vec<Event> {
    assert!(state.users.contains(&user), "apply: no user {user}");
    state.settings.passwords.insert(user, hash.to_owned());
    Vec::new()
}

/// Records a pending email change (replacing the user's earlier one).
pub(super) fn start_email_change(state: &State, change: &EmailChange) -> Vec<Event> {
    assert!(state.users.contains(&change.user), "apply: no user {}", change.user);
    let stale: Vec<String> = state
        .settings
        .email_changes
        .collect_sorted(|_, c| c.user == change.user)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for key in stale {
        state.settings.email_changes.remove(&key);
    }
    state.settings.email_changes.insert(change.key.clone(), change.clone());
    Vec::new()
}

/// Follows a confirmation link: the real address changes (and the API
/// address with it, where it was the real one). `realm_user` events: the
/// new real address to those allowed to see it, the API address to all.
pub(super) fn confirm_email_change(state: &State, key: &str) -> Vec<Event> {
    let change = state
        .settings
        .email_changes
        .remove(&key.to_owned())
        .unwrap_or_else(|| panic!("apply: no pending email change {key}"));
    let old = state.users.get(&change.user).unwrap_or_else(|| panic!("apply: no user"));
    let api_email_follows = old.email == old.delivery_email;
    state.user_by_delivery_email.remove(&(old.realm, old.delivery_email.to_lowercase()));
    if api_email_follows {
        state.user_by_email.remove(&(old.realm, old.email.to_lowercase()));
    }
    let user = state
        .users
        .update(&change.user, |u| {
            u.delivery_email = change.new_email.clone();
            if api_email_follows {
                u.email = change.new_email.clone();
            }
            u.clone()
        })
        .expect("user present");
    state.index_user(user.clone());
    let viewers: Vec<UserId> = state
        .realm_users(user.realm)
        .into_iter()
        .filter(|v| can_see_email(state, v, &user))
        .map(|v| v.id)
        .collect();
    let mut events = vec![Event::Broadcast {
        audience: Audience::Users(viewers),
        event: json!({ "type": "realm_user", "op": "update",
                       "person": { "user_id": user.id.0, "delivery_email": user.delivery_email } }),
    }];
    if api_email_follows {
        events.push(Event::Broadcast {
            audience: Audience::Realm(user.realm),
            event: json!({ "type": "realm_user", "op": "update",
                           "person": { "user_id": user.id.0, "new_email": user.email } }),
        });
    }
    events
}
