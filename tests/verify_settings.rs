//! Register-vs-events cases for the settings area (`verify_action.rs`'s
//! harness): every change shows in a fresh register exactly as the events
//! said. `apply_event` here is the client-side rule for this area's event
//! types; the harness's own `apply_event` hands them over.

use serde_json::{json, Value};

use natter::api::{self, Call, Handler, Reply};
use natter::error::ApiResult;
use natter::http::request::Params;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";

/// Whether this file folds `event` into the state.
pub fn handles(event: &Value) -> bool {
    match event["type"].as_str().unwrap_or("") {
        "user_settings" | "update_display_settings" | "update_global_notifications" => true,
        "realm_user" => event["op"] == "update",
        _ => false,
    }
}

/// Folds one of this area's events into a fetched state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value, me: u64) {
    let set = |state: &mut Value, key: &str, value: &Value| {
        if let Some(slot) = state.get_mut(key) {
            *slot = value.clone();
        }
    };
    match event["type"].as_str().unwrap() {
        "user_settings" => {
            assert_eq!(event["op"], "update");
            if let Some(settings) = state.get_mut("user_settings") {
                set(settings, event["property"].as_str().unwrap(), &event["value"]);
            }
        }
        "update_display_settings" => {
            set(state, event["setting_name"].as_str().unwrap(), &event["setting"]);
        }
        "update_global_notifications" => {
            set(state, event["notification_name"].as_str().unwrap(), &event["setting"]);
        }
        "realm_user" => {
            let person = &event["person"];
            let id = person["user_id"].as_u64().unwrap();
            let users = state.get_mut("realm_users").and_then(Value::as_array_mut);
            for user in users.into_iter().flatten() {
                if user["user_id"] != id {
                    continue;
                }
                for (k, v) in person.as_object().unwrap() {
                    let key = if k == "new_email" { "email" } else { k.as_str() };
                    user[key] = v.clone();
                }
            }
            if id == me {
                for (k, v) in person.as_object().unwrap() {
                    let key = if k == "new_email" { "email" } else { k.as_str() };
                    if key != "user_id" {
                        set(state, key, v);
                    }
                }
            }
        }
        other => panic!("verify_settings cannot apply {other}"),
    }
}

/// Calls a handler as `email` with path arguments.
fn call_path(
    h: &Harness,
    email: &str,
    handler: Handler,
    path: &[&str],
    params: &[(&str, &str)],
) -> ApiResult<Reply> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let caller = Some(h.user(email));
    let params = Params::from_pairs(params.iter().copied());
    let path = path.iter().map(|s| s.to_string()).collect();
    let mut call = Call { realm, caller, params, path, client: "test".into() };
    handler(&h.app, &mut call)
}

fn patch(params: &'static [(&'static str, &'static str)]) -> impl FnOnce(&Harness) {
    move |h: &Harness| {
        h.call(HAMLET, api::settings::update, params).unwrap();
    }
}

const NO_CAPS: &[(&str, &str)] = &[];
const MODERN: &[(&str, &str)] = &[("client_capabilities", r#"{"user_settings_object": true}"#)];

#[test]
fn display_and_notification_settings() {
    let h = Harness::new();
    for params in [NO_CAPS, MODERN] {
        let events = h.verify_action(
            HAMLET,
            params,
            patch(&[("twenty_four_hour_time", "true"), ("web_home_view", "recent_topics")]),
            &["user_settings", "update_display_settings", "user_settings"],
        );
        assert_eq!(events[0]["property"], "twenty_four_hour_time");
        assert_eq!(events[1]["setting_name"], "twenty_four_hour_time");
        assert_eq!(events[1]["user"], HAMLET);
        h.verify_action(
            HAMLET,
            params,
            patch(&[("twenty_four_hour_time", "false"), ("web_home_view", "inbox")]),
            &["user_settings", "update_display_settings", "user_settings"],
        );
    }
    let events = h.verify_action(
        HAMLET,
        NO_CAPS,
        patch(&[("enable_sounds", "false"), ("notification_sound", "ding")]),
        &[
            "user_settings",
            "update_global_notifications",
            "user_settings",
            "update_global_notifications",
        ],
    );
    // In the order of the settings table.
    assert_eq!(events[1]["notification_name"], "notification_sound");
    assert_eq!(events[3]["notification_name"], "enable_sounds");
    let events = h.verify_action(
        HAMLET,
        NO_CAPS,
        patch(&[("default_language", "fr")]),
        &["user_settings", "update_display_settings"],
    );
    assert_eq!(events[0]["language_name"], "français");
    // Same values again: nothing changes, nothing is sent.
    h.verify_action(HAMLET, NO_CAPS, patch(&[("default_language", "fr")]), &[]);
    // Another user's settings are not announced to this queue.
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        patch(&[("enable_sounds", "true"), ("color_scheme", "3")]),
        &[],
    );
}

#[test]
fn profile_changes_reach_the_realm() {
    let h = Harness::new();
    // The user's own queue: realm_user + settings events.
    let events = h.verify_action(
        HAMLET,
        NO_CAPS,
        patch(&[("full_name", "Prince Hamlet"), ("timezone", "Europe/Copenhagen")]),
        &["realm_user", "realm_user", "user_settings", "update_display_settings"],
    );
    assert_eq!(
        events[0]["person"],
        json!({"user_id": h.user(HAMLET).id.0, "full_name": "Prince Hamlet"})
    );
    // Someone else's queue: only realm_user.
    h.verify_action(OTHELLO, NO_CAPS, patch(&[("full_name", "Hamlet, Prince")]), &["realm_user"]);
}

#[test]
fn email_change_confirmation() {
    let h = Harness::new();
    h.call(HAMLET, api::settings::update, &[("email", "prince@elsinore.test")]).unwrap();
    let key = h
        .app
        .state
        .settings
        .email_changes
        .collect_sorted(|_, _| true)
        .pop()
        .expect("a pending change")
        .0;
    let confirm = move |h: &Harness| {
        call_path(h, OTHELLO, api::settings::confirm_email_change, &[&key], &[]).unwrap();
    };
    h.verify_action(OTHELLO, NO_CAPS, confirm, &["realm_user", "realm_user"]);
}
