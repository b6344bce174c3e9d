//! Register-vs-events cases for the settings area (`verify_action.rs`'s
//! harness): every change shows in a fresh register exactly as the events
//! said. `apply_event` here is the client-side rule for this area's event
//! types; the harness's own `apply_event` hands them over.

use serde_json::{json, Value};

use natter::api::{self, Handler, Reply};
use natter::error::ApiResult;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";

/// Whether this file folds `event` into the state.
pub fn handles(event: &Value) -> bool {
    matches!(
        event["type"].as_str().unwrap_or(""),
        "user_settings"
            | "update_display_settings"
            | "update_global_notifications"
            | "alert_words"
            | "drafts"
            | "user_status"
            | "muted_users"
            | "user_topic"
            | "muted_topics"
            | "navigation_view"
            | "saved_snippets"
            | "realm_playgrounds"
            | "invites_changed"
    )
}

/// Folds one of this area's events into a fetched state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value) {
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
            // The server's copies are gone (the spec: no drafts event).
            if event["property"] == "enable_drafts_synchronization" && event["value"] == false {
                set(state, "drafts", &json!([]));
            }
        }
        "update_display_settings" => {
            set(state, event["setting_name"].as_str().unwrap(), &event["setting"]);
        }
        "update_global_notifications" => {
            set(state, event["notification_name"].as_str().unwrap(), &event["setting"]);
        }
        "alert_words" => set(state, "alert_words", &event["alert_words"]),
        "muted_users" => set(state, "muted_users", &event["muted_users"]),
        "muted_topics" => set(state, "muted_topics", &event["muted_topics"]),
        "realm_playgrounds" => set(state, "realm_playgrounds", &event["realm_playgrounds"]),
        "invites_changed" => {}
        "drafts" => {
            let Some(list) = state.get_mut("drafts").and_then(Value::as_array_mut) else { return };
            match event["op"].as_str().unwrap() {
                "add" => list.extend(event["drafts"].as_array().unwrap().iter().cloned()),
                "update" => {
                    let d = &event["draft"];
                    list.retain(|x| x["id"] != d["id"]);
                    list.push(d.clone());
                }
                "remove" => list.retain(|x| x["id"] != event["draft_id"]),
                other => panic!("drafts {other}"),
            }
            list.sort_by_key(|d| (d["timestamp"].as_i64(), d["id"].as_u64()));
        }
        "user_status" => {
            let Some(map) = state.get_mut("user_status") else { return };
            let key = event["user_id"].to_string();
            let mut entry = json!({});
            if event["away"] == true {
                entry["away"] = json!(true);
            }
            if event["status_text"] != "" {
                entry["status_text"] = event["status_text"].clone();
            }
            if event["emoji_name"] != "" {
                for k in ["emoji_name", "emoji_code", "reaction_type"] {
                    entry[k] = event[k].clone();
                }
            }
            let map = map.as_object_mut().unwrap();
            if entry.as_object().unwrap().is_empty() {
                map.remove(&key);
            } else {
                map.insert(key, entry);
            }
        }
        "user_topic" => {
            let Some(list) = state.get_mut("user_topics").and_then(Value::as_array_mut) else {
                return;
            };
            let same = |t: &Value| {
                t["stream_id"] == event["stream_id"]
                    && t["topic_name"].as_str().unwrap().to_lowercase()
                        == event["topic_name"].as_str().unwrap().to_lowercase()
            };
            list.retain(|t| !same(t));
            if event["visibility_policy"] != 0 {
                let mut t = event.clone();
                t.as_object_mut().unwrap().remove("type");
                t.as_object_mut().unwrap().remove("id");
                list.push(t);
            }
            list.sort_by_key(|t| {
                (t["stream_id"].as_u64(), t["topic_name"].as_str().unwrap().to_lowercase())
            });
        }
        "navigation_view" => {
            let Some(list) = state.get_mut("navigation_views").and_then(Value::as_array_mut) else {
                return;
            };
            match event["op"].as_str().unwrap() {
                "add" => list.push(event["navigation_view"].clone()),
                "update" => {
                    for v in list.iter_mut().filter(|v| v["fragment"] == event["fragment"]) {
                        for (k, x) in event["data"].as_object().unwrap() {
                            v[k.as_str()] = x.clone();
                        }
                    }
                }
                "remove" => list.retain(|v| v["fragment"] != event["fragment"]),
                other => panic!("navigation_view {other}"),
            }
        }
        "saved_snippets" => {
            let Some(list) = state.get_mut("saved_snippets").and_then(Value::as_array_mut) else {
                return;
            };
            match event["op"].as_str().unwrap() {
                "add" | "update" => {
                    let s = &event["saved_snippet"];
                    list.retain(|x| x["id"] != s["id"]);
                    list.push(s.clone());
                }
                "remove" => list.retain(|x| x["id"] != event["saved_snippet_id"]),
                other => panic!("saved_snippets {other}"),
            }
            list.sort_by_key(|x| x["id"].as_u64());
        }
        other => panic!("verify_settings cannot apply {other}"),
    }
}

/// Calls a handler as `email` with path arguments (through the harness's
/// `call_in`, which also reads replies written as text).
fn call_path(
    h: &Harness,
    email: &str,
    handler: Handler,
    path: &[&str],
    params: &[(&str, &str)],
) -> ApiResult<Reply> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    h.call_in(realm, email, handler, path, params)
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
    let events = h.verify_action(
        HAMLET,
        NO_CAPS,
        patch(&[("twenty_four_hour_time", "true"), ("web_home_view", "recent_topics")]),
        &["user_settings", "update_display_settings", "user_settings"],
    );
    assert_eq!(events[0]["property"], "twenty_four_hour_time");
    assert_eq!(events[1]["setting_name"], "twenty_four_hour_time");
    assert_eq!(events[1]["user"], HAMLET);
    // With user_settings_object: the modern events only.
    h.verify_action(
        HAMLET,
        MODERN,
        patch(&[("twenty_four_hour_time", "false"), ("web_home_view", "inbox")]),
        &["user_settings", "user_settings"],
    );
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

use natter::api::personal as p;

#[test]
fn alert_words() {
    let h = Harness::new();
    let e = h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            p::add_alert_words,
            &[],
            &[("alert_words", r#"["Yorick", " skull ", ""]"#)],
        ),
        &["alert_words"],
    );
    assert_eq!(e[0]["alert_words"], json!(["Yorick", "skull"]));
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, p::remove_alert_words, &[], &[("alert_words", r#"["YORICK"]"#)]),
        &["alert_words"],
    );
    assert_eq!(h.register(HAMLET, NO_CAPS)["alert_words"], json!(["skull"]));
}

#[test]
fn drafts() {
    let h = Harness::new();
    let othello = h.user(OTHELLO).id.0;
    let general = h.app.state.channel_by_name(h.user(HAMLET).realm, "general").unwrap().id.0;
    let drafts = format!(
        r#"[{{"type":"stream","to":[{general}],"topic":"plans","content":"the play","timestamp":1000}},
            {{"type":"private","to":[{othello}],"content":"hi","timestamp":2000}},
            {{"type":"","to":[],"topic":"","content":"idea","timestamp":1500.7}}]"#
    );
    let params = [("drafts", drafts.as_str())];
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, p::create_drafts, &[], &params),
        &["drafts"],
    );
    let first = h.register(HAMLET, NO_CAPS)["drafts"][0]["id"].as_u64().unwrap().to_string();
    let path = [first.as_str()];
    let path = &path[..];
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            p::edit_draft,
            path,
            &[("draft", r#"{"type":"","content":"later","timestamp":3000}"#)],
        ),
        &["drafts"],
    );
    h.verify_action(HAMLET, NO_CAPS, Harness::act(HAMLET, p::delete_draft, path, &[]), &["drafts"]);
    assert_eq!(h.register(HAMLET, NO_CAPS)["drafts"].as_array().unwrap().len(), 2);
    // Turning synchronization off deletes them, with no drafts event.
    h.verify_action(
        HAMLET,
        NO_CAPS,
        patch(&[("enable_drafts_synchronization", "false")]),
        &["user_settings", "update_display_settings"],
    );
    assert_eq!(h.register(HAMLET, NO_CAPS)["drafts"], json!([]));
    h.call(HAMLET, api::settings::update, &[("enable_drafts_synchronization", "true")]).unwrap();
    assert_eq!(h.register(HAMLET, NO_CAPS)["drafts"], json!([]));
}

#[test]
fn user_status() {
    let h = Harness::new();
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        Harness::act(
            HAMLET,
            p::set_status,
            &[],
            &[("status_text", "at the castle"), ("emoji_name", "castle"), ("emoji_code", "1f3f0")],
        ),
        &["user_status"],
    );
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        Harness::act(HAMLET, p::set_status, &[], &[("away", "true")]),
        &["user_status"],
    );
    let state = h.register(OTHELLO, NO_CAPS);
    let hamlet = h.user(HAMLET).id.0.to_string();
    assert_eq!(
        state["user_status"][&hamlet],
        json!({"away": true, "status_text": "at the castle", "emoji_name": "castle",
               "emoji_code": "1f3f0", "reaction_type": "unicode_emoji"})
    );
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        Harness::act(
            HAMLET,
            p::set_status,
            &[],
            &[("status_text", ""), ("emoji_name", ""), ("away", "false")],
        ),
        &["user_status"],
    );
    assert!(h.register(OTHELLO, NO_CAPS)["user_status"].get(&hamlet).is_none());
}

#[test]
fn muted_users() {
    let h = Harness::new();
    let othello = h.user(OTHELLO).id.0.to_string();
    let path = [othello.as_str()];
    let path = &path[..];
    let e = h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, p::mute_user, path, &[]),
        &["muted_users"],
    );
    assert_eq!(e[0]["muted_users"][0]["id"].to_string(), othello);
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, p::unmute_user, path, &[]),
        &["muted_users"],
    );
    assert_eq!(h.register(HAMLET, NO_CAPS)["muted_users"], json!([]));
}

#[test]
fn topic_visibility() {
    let h = Harness::new();
    let general = h.app.state.channel_by_name(h.user(HAMLET).realm, "general").unwrap().id.0;
    let general = general.to_string();
    let set = |topic: &str, policy: &str| {
        let params =
            [("stream_id", general.as_str()), ("topic", topic), ("visibility_policy", policy)];
        Harness::act(HAMLET, p::update_user_topic, &[], &params)
    };
    let e = h.verify_action(HAMLET, NO_CAPS, set("Ghosts", "1"), &["muted_topics", "user_topic"]);
    assert_eq!(e[0]["muted_topics"], json!([["general", "Ghosts", e[1]["last_updated"]]]));
    h.verify_action(HAMLET, NO_CAPS, set("plays", "3"), &["muted_topics", "user_topic"]);
    h.verify_action(HAMLET, NO_CAPS, set("ghosts", "0"), &["muted_topics", "user_topic"]);
    h.verify_action(HAMLET, NO_CAPS, set("plays", "3"), &[]);
    let legacy = &[("stream", "general"), ("topic", "duels"), ("op", "add")];
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, p::mute_topic_legacy, &[], legacy),
        &["muted_topics", "user_topic"],
    );
    let state = h.register(HAMLET, NO_CAPS);
    assert_eq!(state["user_topics"].as_array().unwrap().len(), 2);
    assert_eq!(state["muted_topics"].as_array().unwrap().len(), 1);
}

use natter::api::resources as r;

#[test]
fn navigation_views() {
    let h = Harness::new();
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            r::add_navigation_view,
            &[],
            &[("fragment", "inbox"), ("is_pinned", "false")],
        ),
        &["navigation_view"],
    );
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            r::add_navigation_view,
            &[],
            &[("fragment", "narrow/channel/9-plays"), ("is_pinned", "true"), ("name", "Plays")],
        ),
        &["navigation_view"],
    );
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            r::update_navigation_view,
            &["narrow/channel/9-plays"],
            &[("name", "Stage")],
        ),
        &["navigation_view"],
    );
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, r::update_navigation_view, &["inbox"], &[("is_pinned", "true")]),
        &["navigation_view"],
    );
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, r::remove_navigation_view, &["inbox"], &[]),
        &["navigation_view"],
    );
    assert_eq!(
        h.register(HAMLET, NO_CAPS)["navigation_views"],
        json!([{"fragment": "narrow/channel/9-plays", "is_pinned": true, "name": "Stage"}])
    );
}

#[test]
fn saved_snippets() {
    let h = Harness::new();
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(
            HAMLET,
            r::create_saved_snippet,
            &[],
            &[("title", "Greeting"), ("content", "Hail!")],
        ),
        &["saved_snippets"],
    );
    let id = h.register(HAMLET, NO_CAPS)["saved_snippets"][0]["id"].to_string();
    let path = [id.as_str()];
    let path = &path[..];
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, r::edit_saved_snippet, path, &[("content", "All hail!")]),
        &["saved_snippets"],
    );
    h.verify_action(
        HAMLET,
        NO_CAPS,
        Harness::act(HAMLET, r::delete_saved_snippet, path, &[]),
        &["saved_snippets"],
    );
}

#[test]
fn code_playgrounds() {
    let h = Harness::new();
    let add = &[
        ("name", "Rust playground"),
        ("pygments_language", "Rust"),
        ("url_template", "https://play.rust-lang.org/?code={code}"),
    ];
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        Harness::act("iago@natter.test", r::add_playground, &[], add),
        &["realm_playgrounds"],
    );
    let id = h.register(OTHELLO, NO_CAPS)["realm_playgrounds"][0]["id"].to_string();
    let path = [id.as_str()];
    let path = &path[..];
    h.verify_action(
        OTHELLO,
        NO_CAPS,
        Harness::act("iago@natter.test", r::remove_playground, path, &[]),
        &["realm_playgrounds"],
    );
}

use natter::api::invites as inv;

#[test]
fn invitations_and_registration() {
    let h = Harness::new();
    let send = Harness::act(
        "iago@natter.test",
        inv::send_invites,
        &[],
        &[
            ("invitee_emails", "ophelia@elsinore.test"),
            ("stream_ids", "[]"),
            ("include_realm_default_subscriptions", "true"),
        ],
    );
    // Administrators hear that invitations changed; members do not.
    h.verify_action("iago@natter.test", NO_CAPS, send, &["invites_changed"]);
    let key = h.app.state.settings.invites.collect_sorted(|_, _| true).pop().unwrap().1.key;
    let path = [key.as_str()];
    let path = &path[..];
    let join = Harness::act(
        HAMLET,
        inv::register_invitee,
        path,
        &[("full_name", "Ophelia"), ("password", "rosemary")],
    );
    // A member sees the new user arrive (and join the default channels).
    let events = h.verify_action(
        OTHELLO,
        &[("include_subscribers", "true")],
        join,
        &[
            "realm_user",
            "user_group",
            "user_group",
            "user_group",
            "user_group",
            "subscription",
            "subscription",
        ],
    );
    assert_eq!(events[0]["person"]["full_name"], "Ophelia");
}
