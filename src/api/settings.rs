//! Personal settings: `PATCH /settings` (and its deprecated aliases
//! `PATCH /settings/display`, `PATCH /settings/notifications`), and the
//! settings sections of `POST /register`.
//!
//! Every setting of `state::settings::SETTINGS` is accepted with its type
//! and allowed values checked; `full_name` and `timezone` change the
//! `User`; `new_password` (with the right `old_password`) is stored as an
//! argon2 hash; `email` starts a confirmation through the outbox. Anything else the request carries is reported back in
//! `ignored_parameters_unsupported` (the removed `dense_mode` included).

use std::str::FromStr;

use serde_json::{json, Map, Value};

use super::passwords::{
    check_new_password, hash_password, outbox, verify_password, MAX_PASSWORD_BYTES,
};
use super::realm::realm_url;
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::rules::{check_full_name, valid_email};
use crate::mutation::Mutation;
use crate::state::settings::{
    Allowed, DefaultValue, EmailChange, Legacy, SettingValue, SettingsChange, EMOJISETS,
    NOTIFICATION_SOUNDS, SETTINGS,
};
use crate::state::{State, User};

/// `PATCH /settings`: change the caller's settings. All parameters are
/// optional; a request that changes nothing commits nothing.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let full_name = match call.params.string("full_name") {
        Some(name) => Some(check_full_name(&name)?),
        None => None,
    };
    let timezone = match call.params.string("timezone") {
        Some(tz) => Some(check_timezone(&tz)?),
        None => None,
    };
    let mut settings = Vec::new();
    for def in SETTINGS {
        if let Some(value) = setting_param(call, def.name, def.default, def.allowed)? {
            settings.push((def.name.to_owned(), value));
        }
    }
    let new_password = call.params.string("new_password");
    let old_password = call.params.string("old_password");
    let email = call.params.string("email");
    if let Some(password) = &new_password {
        check_new_password(password)?;
    }
    let email = match email {
        Some(e) if e.trim().eq_ignore_ascii_case(&me.delivery_email) => None,
        Some(e) => Some(check_new_email(app, &me, e.trim())?),
        None => None,
    };
    // Password first (as Zulip does); a wrong old password changes nothing.
    if let Some(password) = new_password {
        change_password(app, &me, old_password.as_deref(), &password)?;
    }
    let mut reply = Reply::new();
    if let Some(new_email) = email {
        start_email_change(app, &me, &new_email)?;
        reply.insert(
            "account_email".into(),
            json!("Check your email for a confirmation link to change your address."),
        );
    }
    // Only what differs from the current values is changed (and announced).
    let build = |state: &State| -> ApiResult<SettingsChange> {
        let user = state.user_in_realm(me.realm, me.id).ok_or_else(ApiError::invalid_api_key)?;
        let current = state.settings.of(me.id);
        Ok(SettingsChange {
            user: me.id,
            full_name: full_name.clone().filter(|n| *n != user.full_name),
            timezone: timezone.clone().filter(|t| *t != user.timezone),
            settings: settings.iter().filter(|(n, v)| current.get(n) != *v).cloned().collect(),
        })
    };
    if build(&app.state)?.is_empty() {
        return Ok(reply);
    }
    let change = app.committer.commit(|state| {
        let change = build(state)?;
        Ok((Mutation::UpdateSettings(change.clone()), change))
    })?;
    let presence = change.settings.iter().find(|(name, _)| name == "presence_enabled");
    if let Some((_, value)) = presence {
        super::presence::presence_enabled_changed(app, &me, *value == SettingValue::Bool(true));
    }
    Ok(reply)
}

/// How long an email-change link works (Zulip: one day).
const EMAIL_CHANGE_VALIDITY_SECONDS: i64 = 24 * 3600;

fn check_new_email(app: &App, me: &User, email: &str) -> ApiResult<String> {
    if me.is_bot() {
        return Err(ApiError::bad_request("Bots cannot change their email address"));
    }
    if !valid_email(email) {
        return Err(ApiError::invalid("email", "not a valid email address"));
    }
    if app.state.user_by_delivery_email(me.realm, email).is_some() {
        return Err(ApiError::bad_request(format!("Email '{email}' already in use"))
            .with("var_name", "email"));
    }
    Ok(email.to_owned())
}

/// Checks `old_password` and stores the argon2 hash of `new_password`,
/// hashed before logging. An account with no password yet (seeded, or
/// created by an administrator) may set one only on a `--dev` server,
/// with `old_password` empty.
fn change_password(app: &App, me: &User, old: Option<&str>, new: &str) -> ApiResult<()> {
    let old = old.ok_or_else(|| ApiError::missing("old_password"))?;
    let wrong = || ApiError::bad_request("Wrong password!").with("var_name", "old_password");
    match app.state.settings.passwords.get(&me.id) {
        Some(hash) => {
            if old.len() > MAX_PASSWORD_BYTES || !verify_password(old, &hash) {
                return Err(wrong());
            }
        }
        None if app.config.dev && old.is_empty() => {}
        None => return Err(wrong()),
    }
    let hash = hash_password(new);
    let user = me.id;
    app.committer.commit(|state| {
        state.users.get(&user).ok_or_else(ApiError::invalid_api_key)?;
        Ok((Mutation::SetPassword { user, hash }, ()))
    })
}

/// Records the pending change, then mails the link to the new address.
fn start_email_change(app: &App, me: &User, new_email: &str) -> ApiResult<()> {
    let key = crate::entropy::api_key();
    let change = EmailChange {
        key: key.clone(),
        user: me.id,
        new_email: new_email.to_owned(),
        expires: crate::entropy::now() + EMAIL_CHANGE_VALIDITY_SECONDS,
    };
    app.committer.commit(|state| {
        if state.user_by_delivery_email(me.realm, new_email).is_some() {
            return Err(ApiError::bad_request(format!("Email '{new_email}' already in use")));
        }
        Ok((Mutation::StartEmailChange(change), ()))
    })?;
    let realm = app.state.realms.get(&me.realm).ok_or_else(ApiError::internal)?;
    let link = format!("{}/api/v1/confirm_email_change/{key}", realm_url(app, &realm));
    let body = format!(
        "{} asked to change the email address of their account in {} to this one.\n\n\
         To confirm, follow this link within a day:\n{link}\n",
        me.full_name, realm.name
    );
    outbox::send(app, new_email, "Confirm your new email address", &body).map_err(|e| {
        tracing::error!("writing to the outbox: {e}");
        ApiError::internal()
    })?;
    Ok(())
}

/// `GET /confirm_email_change/{key}` (no authentication: the link is the
/// credential): applies a pending email change. An unknown, used or
/// expired link is refused.
pub fn confirm_email_change(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let key = call.path.first().cloned().unwrap_or_default();
    let now = crate::entropy::now();
    let invalid = || ApiError::bad_request("Invalid or expired confirmation link");
    let realm = call.realm.id;
    let user = app.committer.commit(|state| {
        let change = state.settings.email_changes.get(&key).ok_or_else(invalid)?;
        let user = state.user_in_realm(realm, change.user).ok_or_else(invalid)?;
        if change.expires < now || !user.is_active {
            return Err(invalid());
        }
        if state.user_by_delivery_email(realm, &change.new_email).is_some() {
            return Err(ApiError::bad_request(format!(
                "Email '{}' already in use",
                change.new_email
            )));
        }
        Ok((Mutation::ConfirmEmailChange { key: key.clone() }, user.id))
    })?;
    let user = app.state.users.get(&user).ok_or_else(ApiError::internal)?;
    Ok(crate::reply! { "email" => user.delivery_email, "user_id" => user.id.0 })
}

/// One table setting from the request, typed and checked, if present.
pub(super) fn setting_param(
    call: &mut Call,
    name: &str,
    default: DefaultValue,
    allowed: Allowed,
) -> ApiResult<Option<SettingValue>> {
    let value = match default {
        DefaultValue::B(_) => call.params.bool(name)?.map(SettingValue::Bool),
        DefaultValue::I(_) => call.params.int(name)?.map(SettingValue::Int),
        DefaultValue::S(_) => match call.params.json_or_string(name)? {
            None => None,
            Some(Value::String(s)) => Some(SettingValue::Str(s)),
            Some(_) => return Err(ApiError::invalid(name, "not a string")),
        },
    };
    let ok = match (&value, allowed) {
        (None, _) | (Some(_), Allowed::Any) => true,
        (Some(SettingValue::Int(i)), Allowed::Ints(v)) => v.contains(i),
        (Some(SettingValue::Int(i)), Allowed::Range(lo, hi)) => (lo..=hi).contains(i),
        (Some(SettingValue::Str(s)), Allowed::Strs(v)) => v.contains(&s.as_str()),
        _ => false,
    };
    if !ok {
        let why = match allowed {
            Allowed::Range(lo, hi) => format!("must be between {lo} and {hi}"),
            Allowed::Ints(v) => format!("must be one of {v:?}"),
            Allowed::Strs(v) if v.len() <= 8 => format!("must be one of {v:?}"),
            _ => "not an allowed value".to_owned(),
        };
        return Err(ApiError::invalid(name, &why));
    }
    Ok(value)
}

/// An IANA zone name known to the time-zone database (`chrono-tz`), links
/// such as `US/Eastern` included; case must match.
pub fn check_timezone(raw: &str) -> ApiResult<String> {
    match chrono_tz::Tz::from_str(raw) {
        Ok(_) => Ok(raw.to_owned()),
        Err(_) => Err(ApiError::invalid("timezone", "not a recognized IANA time zone")),
    }
}

/// `emojiset_choices`, as register and Zulip's web app read it.
pub(super) fn emojiset_choices() -> Value {
    let text = |key: &str| match key {
        "google" => "Google",
        "twitter" => "Twitter",
        _ => "Plain text",
    };
    Value::Array(EMOJISETS.iter().map(|k| json!({ "key": k, "text": text(k) })).collect())
}

/// The settings sections of `POST /register`, for clients that do not send
/// the `user_settings_object` capability — zulip-term 0.7.0 sends no
/// capabilities at all and needs the legacy top-level fields. Same as
/// `register_state_with(…, false, …)`.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    register_state_with(app, user, wants, false, out);
}

/// The settings sections of `POST /register`:
/// - `user_settings` (every setting, `timezone`, `emojiset_choices`,
///   `available_notification_sounds`) when `user_settings` is fetched;
/// - the legacy top-level display settings when `update_display_settings`
///   is fetched and the notification settings when
///   `update_global_notifications` is fetched — only for clients without
///   the `user_settings_object` capability (`user_settings_object` false),
///   as Zulip does.
pub fn register_state_with(
    app: &App,
    user: &User,
    wants: &dyn Fn(&str) -> bool,
    user_settings_object: bool,
    out: &mut Reply,
) {
    settings_sections(&app.state, user, wants, user_settings_object, out);
}

/// `register_state_with` on a bare `State` (what it reads; unit-testable).
pub fn settings_sections(
    state: &State,
    user: &User,
    wants: &dyn Fn(&str) -> bool,
    user_settings_object: bool,
    out: &mut Reply,
) {
    let settings = state.settings.of(user.id);
    let timezone = state.users.read(&user.id, |u| u.timezone.clone()).unwrap_or_default();
    let sounds = json!(NOTIFICATION_SOUNDS);
    if wants("user_settings") {
        let mut object = Map::new();
        for def in SETTINGS {
            object.insert(def.name.to_owned(), settings.get(def.name).to_json());
        }
        object.insert("timezone".into(), json!(timezone));
        object.insert("emojiset_choices".into(), emojiset_choices());
        object.insert("available_notification_sounds".into(), sounds.clone());
        out.insert("user_settings".into(), Value::Object(object));
    }
    if user_settings_object {
        return;
    }
    if wants("update_display_settings") {
        for def in SETTINGS.iter().filter(|d| d.legacy == Legacy::Display) {
            out.insert(def.name.to_owned(), settings.get(def.name).to_json());
        }
        out.insert("timezone".into(), json!(timezone));
        out.insert("emojiset_choices".into(), emojiset_choices());
    }
    if wants("update_global_notifications") {
        for def in SETTINGS.iter().filter(|d| d.legacy == Legacy::Notification) {
            out.insert(def.name.to_owned(), settings.get(def.name).to_json());
        }
        out.insert("available_notification_sounds".into(), sounds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::events::{Audience, Event};
    use crate::state::settings::SettingsChange;
    use crate::state::Role;
    use crate::testkit::World;

    /// A world with one user, a@x.test.
    fn one_user() -> (World, User) {
        let mut w = World::new();
        let user = w.user("", "a@x.test", Role::Member);
        (w, user)
    }

    fn sections(state: &State, user: &User, uso: bool, wants: &[&str]) -> Reply {
        let mut out = Reply::new();
        settings_sections(state, user, &|w| wants.contains(&w), uso, &mut out);
        out
    }

    #[test]
    fn register_has_defaults_for_a_user_with_no_settings() {
        let (w, user) = one_user();
        let all = ["user_settings", "update_display_settings", "update_global_notifications"];
        let out = sections(&w.state, &user, false, &all);
        let us = &out["user_settings"];
        for def in SETTINGS {
            assert_eq!(us[def.name], def.default.value().to_json(), "{}", def.name);
        }
        assert_eq!(us["send_private_typing_notifications"], true);
        assert_eq!(out["twenty_four_hour_time"], false);
        assert_eq!(out["pm_content_in_desktop_notifications"], true);
        assert_eq!(out["timezone"], "");
        assert!(out["emojiset_choices"].as_array().is_some_and(|c| c.len() == 3));
        // With the capability, only the modern object.
        let modern = sections(&w.state, &user, true, &all);
        assert!(modern.contains_key("user_settings"));
        assert!(!modern.contains_key("twenty_four_hour_time"));
        // Nothing asked, nothing given.
        assert!(sections(&w.state, &user, false, &["message"]).is_empty());
    }

    #[test]
    fn changes_show_in_register_and_as_events() {
        let (mut w, user) = one_user();
        let change = SettingsChange {
            user: user.id,
            full_name: Some("Ann B".into()),
            timezone: Some("Europe/Paris".into()),
            settings: vec![
                ("twenty_four_hour_time".into(), SettingValue::Bool(true)),
                ("default_language".into(), SettingValue::Str("de".into())),
                ("enable_sounds".into(), SettingValue::Bool(false)),
                ("web_home_view".into(), SettingValue::Str("recent_topics".into())),
            ],
        };
        let events = w.apply(Mutation::UpdateSettings(change));
        let json: Vec<(&Audience, &Value)> = events
            .iter()
            .map(|e| match e {
                Event::Broadcast { audience, event } => (audience, event),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        let find = |t: &str, key: &str, name: &str| {
            json.iter()
                .find(|(_, e)| e["type"] == t && e[key] == name)
                .unwrap_or_else(|| panic!("no {t} event for {name}: {json:?}"))
        };
        let (aud, e) = find("realm_user", "op", "update");
        assert_eq!(**aud, Audience::Realm(user.realm));
        assert_eq!(e["person"], json!({ "user_id": user.id.0, "full_name": "Ann B" }));
        let (aud, e) = find("user_settings", "property", "twenty_four_hour_time");
        assert_eq!(**aud, Audience::Users(vec![user.id]));
        assert_eq!((e["op"].as_str(), e["value"].as_bool()), (Some("update"), Some(true)));
        let (_, e) = find("update_display_settings", "setting_name", "twenty_four_hour_time");
        assert_eq!((e["user"].as_str(), e["setting"].as_bool()), (Some("a@x.test"), Some(true)));
        let (_, e) = find("update_display_settings", "setting_name", "default_language");
        assert_eq!(e["language_name"], "Deutsch");
        let (_, e) = find("user_settings", "property", "default_language");
        assert_eq!(e["language_name"], "Deutsch");
        let (_, e) = find("update_global_notifications", "notification_name", "enable_sounds");
        assert_eq!(e["setting"], false);
        find("user_settings", "property", "timezone");
        find("update_display_settings", "setting_name", "timezone");
        // web_home_view has no legacy group: modern event only.
        find("user_settings", "property", "web_home_view");
        assert!(!json.iter().any(|(_, e)| e["setting_name"] == "web_home_view"));

        // A fresh register agrees with what the events said.
        let user = w.state.users.get(&user.id).unwrap();
        let all = ["user_settings", "update_display_settings", "update_global_notifications"];
        let out = sections(&w.state, &user, false, &all);
        assert_eq!(out["user_settings"]["twenty_four_hour_time"], true);
        assert_eq!(out["user_settings"]["web_home_view"], "recent_topics");
        assert_eq!(out["user_settings"]["timezone"], "Europe/Paris");
        assert_eq!(out["twenty_four_hour_time"], true);
        assert_eq!(out["enable_sounds"], false);
        assert_eq!(out["default_language"], "de");
        assert_eq!(user.full_name, "Ann B");

        // Setting a value back to its default drops the override.
        let back = SettingsChange {
            user: user.id,
            full_name: None,
            timezone: None,
            settings: vec![("enable_sounds".into(), SettingValue::Bool(true))],
        };
        w.apply(Mutation::UpdateSettings(back));
        let overrides = w.state.settings.of(user.id).overrides;
        assert!(!overrides.contains_key("enable_sounds"));
        assert!(overrides.contains_key("twenty_four_hour_time"));
    }

    #[test]
    fn timezones_come_from_the_tz_database() {
        for ok in ["Europe/Berlin", "America/Argentina/Buenos_Aires", "UTC", "US/Eastern"] {
            assert!(check_timezone(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Mars/Olympus", "europe/berlin", "Europe/Berlin "] {
            assert_eq!(check_timezone(bad).unwrap_err().code, "BAD_REQUEST", "{bad:?}");
        }
    }
}
