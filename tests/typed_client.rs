//! natter's replies read the way a strict, typed client reads them: the
//! official mobile app (Flutter) decodes `POST /register`, `GET /messages`
//! and every event into typed models, and one missing required field, a
//! `null` where it wants a value or a string where it wants a number fails
//! the whole decode — for register, the account does not load.
//!
//! The required fields are data, in one place (`SCHEMAS`): per object,
//! each field the app requires and its JSON type, taken from Zulip's API
//! documentation of the register response, the message object and the
//! event payloads, checked against the app's models. `Opt` marks a field
//! the app accepts absent or `null`; anything else must be present with
//! its type. Fields the app ignores are not listed.
//!
//! The test registers with the app's own parameters, reads `GET
//! /messages`, then drives actions that make natter emit its event types
//! and checks every event received against its entry.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::util::{user_id, Client, TestServer};

const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const IAGO: &str = "iago@natter.test"; // administrator

/// A JSON type as the app decodes it.
#[derive(Debug)]
enum T {
    Int,
    Str,
    Bool,
    /// A string of the form `#rrggbb` (lowercase), the app's colour parse.
    Color,
    /// An absolute `http(s)` URL.
    Url,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// One of these integers.
    IntIn(&'static [i64]),
    /// An integer no smaller than this.
    AtLeast(i64),
    /// A group-setting value: a group id, or `{direct_members,
    /// direct_subgroups}`.
    GroupSetting,
    /// May be absent or `null`; otherwise of the inner type.
    Opt(&'static T),
    List(&'static T),
    /// An object with string keys.
    Map(&'static T),
    /// An object whose keys are integers (user ids, field ids).
    IntMap(&'static T),
    /// An object described by the named schema.
    Obj(&'static str),
    /// Any value, `null` too (a setting's value, whose type depends on
    /// its name); it must be present.
    Any,
}

use T::*;

type Fields = &'static [(&'static str, T)];

/// Every object the app decodes, by name: its required fields.
static SCHEMAS: &[(&str, Fields)] = &[
    (
        "register",
        &[
            ("queue_id", Opt(&Str)),
            ("last_event_id", Int),
            ("zulip_feature_level", Int),
            ("zulip_version", Str),
            ("zulip_merge_base", Str),
            ("alert_words", List(&Str)),
            ("custom_profile_fields", List(&Obj("custom_profile_field"))),
            ("max_stream_name_length", Int),
            ("max_topic_length", Int),
            ("server_presence_ping_interval_seconds", Int),
            ("server_presence_offline_threshold_seconds", Int),
            ("server_typing_started_expiry_period_milliseconds", Opt(&Int)),
            ("server_typing_stopped_wait_period_milliseconds", Opt(&Int)),
            ("server_typing_started_wait_period_milliseconds", Opt(&Int)),
            ("muted_users", List(&Obj("muted_user"))),
            ("presences", IntMap(&Obj("presence_slim"))),
            ("realm_emoji", Map(&Obj("realm_emoji"))),
            ("realm_user_groups", List(&Obj("user_group"))),
            ("recent_private_conversations", List(&Obj("recent_dm"))),
            ("saved_snippets", Opt(&List(&Obj("saved_snippet")))),
            ("subscriptions", List(&Obj("subscription"))),
            ("unread_msgs", Obj("unread_msgs")),
            ("starred_messages", List(&Int)),
            ("streams", List(&Obj("stream"))),
            ("channel_folders", Opt(&List(&Obj("channel_folder")))),
            ("user_status", IntMap(&Obj("user_status"))),
            ("user_settings", Obj("user_settings")),
            ("user_topics", List(&Obj("user_topic"))),
            ("realm_can_delete_any_message_group", Opt(&GroupSetting)),
            ("realm_can_delete_own_message_group", Opt(&GroupSetting)),
            ("realm_delete_own_message_policy", Opt(&IntIn(&[1, 2, 3, 4, 5]))),
            ("realm_wildcard_mention_policy", IntIn(&[1, 2, 3, 5, 6, 7])),
            ("realm_topics_policy", Opt(&Str)),
            ("realm_mandatory_topics", Opt(&Bool)),
            ("realm_name", Str),
            ("realm_waiting_period_threshold", Int),
            ("realm_message_content_delete_limit_seconds", Opt(&Int)),
            ("realm_allow_message_editing", Bool),
            ("realm_message_content_edit_limit_seconds", Opt(&Int)),
            ("realm_enable_read_receipts", Bool),
            ("realm_icon_url", Str),
            ("realm_presence_disabled", Bool),
            ("realm_default_external_accounts", Map(&Obj("external_account"))),
            ("max_file_upload_size_mib", Int),
            ("server_emoji_data_url", Url),
            ("event_queue_longpoll_timeout_seconds", Int),
            ("realm_moderation_request_channel_id", Opt(&Int)),
            ("realm_empty_topic_display_name", Opt(&Str)),
            ("realm_users", List(&Obj("user"))),
            ("realm_non_active_users", List(&Obj("user"))),
            ("cross_realm_bots", List(&Obj("user"))),
        ],
    ),
    (
        "user",
        &[
            ("user_id", Int),
            ("delivery_email", Opt(&Str)),
            ("email", Str),
            ("full_name", Str),
            ("date_joined", Str),
            // The app fills in `is_active` when register's lists omit it.
            ("is_active", Opt(&Bool)),
            ("is_bot", Bool),
            ("bot_type", Opt(&Int)),
            ("bot_owner_id", Opt(&Int)),
            ("role", IntIn(&[100, 200, 300, 400, 600])),
            ("timezone", Str),
            ("avatar_url", Opt(&Str)),
            ("avatar_version", Int),
            ("profile_data", Opt(&IntMap(&Obj("profile_value")))),
            ("is_system_bot", Opt(&Bool)),
        ],
    ),
    ("profile_value", &[("value", Str), ("rendered_value", Opt(&Str))]),
    (
        // What the app reads before it logs in.
        "server_settings",
        &[
            ("authentication_methods", Obj("authentication_methods")),
            ("external_authentication_methods", List(&Map(&Any))),
            ("zulip_feature_level", AtLeast(371)),
            ("zulip_version", Str),
            ("zulip_merge_base", Str),
            ("push_notifications_enabled", Bool),
            ("is_incompatible", Bool),
            ("email_auth_enabled", Bool),
            ("require_email_format_usernames", Bool),
            ("realm_uri", Url),
            ("realm_name", Str),
            ("realm_icon", Str),
            ("realm_description", Str),
            ("realm_web_public_access_enabled", Bool),
        ],
    ),
    ("authentication_methods", &[("ldap", Bool)]),
    (
        "update_presence",
        &[
            ("presence_last_update_id", Opt(&Int)),
            ("server_timestamp", Opt(&Int)),
            ("presences", Opt(&IntMap(&Obj("presence_slim")))),
        ],
    ),
    (
        "custom_profile_field",
        &[
            ("id", Int),
            ("type", Int),
            ("order", Int),
            ("name", Str),
            ("hint", Str),
            ("field_data", Str),
            ("display_in_profile_summary", Opt(&Bool)),
        ],
    ),
    ("muted_user", &[("id", Int)]),
    ("presence_slim", &[("active_timestamp", Int), ("idle_timestamp", Int)]),
    (
        "realm_emoji",
        &[
            ("id", Str),
            ("name", Str),
            ("source_url", Str),
            ("still_url", Opt(&Str)),
            ("deactivated", Bool),
            ("author_id", Opt(&Int)),
        ],
    ),
    (
        "user_group",
        &[
            ("id", Int),
            ("members", List(&Int)),
            ("direct_subgroup_ids", List(&Int)),
            ("name", Str),
            ("description", Str),
            ("is_system_group", Bool),
            ("deactivated", Opt(&Bool)),
        ],
    ),
    ("recent_dm", &[("max_message_id", Int), ("user_ids", List(&Int))]),
    ("saved_snippet", &[("id", Int), ("title", Str), ("content", Str), ("date_created", Int)]),
    (
        "stream",
        &[
            ("stream_id", Int),
            ("name", Str),
            ("is_archived", Opt(&Bool)),
            ("description", Str),
            ("rendered_description", Str),
            ("date_created", Int),
            ("first_message_id", Opt(&Int)),
            ("invite_only", Bool),
            ("is_web_public", Bool),
            ("history_public_to_subscribers", Bool),
            ("message_retention_days", Opt(&Int)),
            (
                "topics_policy",
                Opt(&OneOf(&[
                    "inherit",
                    "allow_empty_topic",
                    "disable_empty_topic",
                    "empty_topic_only",
                ])),
            ),
            ("stream_post_policy", Opt(&IntIn(&[1, 2, 3, 4]))),
            ("folder_id", Opt(&Int)),
            ("can_add_subscribers_group", Opt(&GroupSetting)),
            ("can_delete_any_message_group", Opt(&GroupSetting)),
            ("can_delete_own_message_group", Opt(&GroupSetting)),
            ("can_send_message_group", Opt(&GroupSetting)),
            ("can_subscribe_group", Opt(&GroupSetting)),
            ("is_recently_active", Opt(&Bool)),
            ("stream_weekly_traffic", Opt(&Int)),
        ],
    ),
    (
        // A channel's fields (`stream`) and the user's settings for it.
        "subscription",
        &[
            ("stream_id", Int),
            ("name", Str),
            ("description", Str),
            ("rendered_description", Str),
            ("date_created", Int),
            ("first_message_id", Opt(&Int)),
            ("invite_only", Bool),
            ("is_web_public", Bool),
            ("history_public_to_subscribers", Bool),
            ("message_retention_days", Opt(&Int)),
            ("stream_weekly_traffic", Opt(&Int)),
            ("desktop_notifications", Opt(&Bool)),
            ("email_notifications", Opt(&Bool)),
            ("wildcard_mentions_notify", Opt(&Bool)),
            ("push_notifications", Opt(&Bool)),
            ("audible_notifications", Opt(&Bool)),
            ("pin_to_top", Bool),
            ("is_muted", Bool),
            ("color", Color),
        ],
    ),
    (
        "unread_msgs",
        &[
            ("count", Int),
            ("pms", List(&Obj("unread_dm"))),
            ("streams", List(&Obj("unread_channel"))),
            ("huddles", List(&Obj("unread_huddle"))),
            ("mentions", List(&Int)),
            ("old_unreads_missing", Bool),
        ],
    ),
    ("unread_dm", &[("other_user_id", Int), ("unread_message_ids", List(&Int))]),
    ("unread_channel", &[("topic", Str), ("stream_id", Int), ("unread_message_ids", List(&Int))]),
    ("unread_huddle", &[("user_ids_string", Str), ("unread_message_ids", List(&Int))]),
    (
        "user_status",
        &[
            ("status_text", Opt(&Str)),
            ("emoji_name", Opt(&Str)),
            ("emoji_code", Opt(&Str)),
            ("reaction_type", Opt(&Str)),
        ],
    ),
    (
        "user_settings",
        &[
            ("twenty_four_hour_time", Opt(&Bool)),
            ("starred_message_counts", Bool),
            ("display_emoji_reaction_users", Bool),
            ("emojiset", Str),
            ("web_inbox_show_channel_folders", Opt(&Bool)),
            ("presence_enabled", Bool),
        ],
    ),
    (
        "user_topic",
        &[
            ("stream_id", Int),
            ("topic_name", Str),
            ("last_updated", Int),
            ("visibility_policy", IntIn(&[0, 1, 2, 3])),
        ],
    ),
    ("external_account", &[("name", Str), ("text", Str), ("hint", Str), ("url_pattern", Str)]),
    (
        "get_messages",
        &[
            ("anchor", Int),
            ("found_newest", Bool),
            ("found_oldest", Bool),
            ("found_anchor", Bool),
            ("history_limited", Bool),
            ("messages", List(&Obj("message"))),
        ],
    ),
    (
        // Both kinds; `message_stream` / `message_dm` add what each has.
        "message",
        &[
            ("client", Str),
            ("content", Str),
            ("content_type", Str),
            ("id", Int),
            ("is_me_message", Bool),
            ("last_edit_timestamp", Opt(&Int)),
            ("reactions", List(&Obj("reaction"))),
            ("sender_email", Str),
            ("sender_full_name", Str),
            ("sender_id", Int),
            ("sender_realm_str", Str),
            ("timestamp", Int),
            ("flags", List(&Str)),
            ("match_content", Opt(&Str)),
            ("match_subject", Opt(&Str)),
            ("submessages", Opt(&List(&Obj("submessage")))),
            ("type", OneOf(&["stream", "private"])),
        ],
    ),
    ("message_stream", &[("stream_id", Int), ("subject", Str), ("display_recipient", Str)]),
    ("message_dm", &[("display_recipient", List(&Obj("dm_recipient")))]),
    ("dm_recipient", &[("id", Int)]),
    (
        "submessage",
        &[
            ("id", Int),
            ("message_id", Int),
            ("sender_id", Int),
            ("msg_type", Str),
            ("content", Str),
        ],
    ),
    (
        "reaction",
        &[
            ("emoji_name", Str),
            ("emoji_code", Str),
            ("reaction_type", OneOf(&["unicode_emoji", "realm_emoji", "zulip_extra_emoji"])),
            ("user_id", Int),
        ],
    ),
    (
        "presence_client",
        &[
            ("client", Str),
            ("status", OneOf(&["active", "idle"])),
            ("timestamp", Int),
            ("pushable", Bool),
        ],
    ),
    ("typing_sender", &[("user_id", Int)]),
    ("typing_recipient", &[("user_id", Int)]),
    (
        "flags_detail",
        &[
            ("type", OneOf(&["stream", "private"])),
            ("mentioned", Opt(&Bool)),
            ("user_ids", Opt(&List(&Int))),
            ("stream_id", Opt(&Int)),
            ("topic", Opt(&Str)),
        ],
    ),
    // Events, by `type` or `type:op`. Every event also needs `id` (an
    // integer) and `type`, checked for all.
    ("event:message", &[("message", Obj("message")), ("flags", List(&Str))]),
    (
        "event:update_message",
        &[
            ("user_id", Opt(&Int)),
            ("rendering_only", Bool),
            ("message_id", Int),
            ("message_ids", List(&Int)),
            ("flags", List(&Str)),
            ("edit_timestamp", Int),
            ("orig_content", Opt(&Str)),
            ("orig_rendered_content", Opt(&Str)),
            ("content", Opt(&Str)),
            ("rendered_content", Opt(&Str)),
            ("is_me_message", Opt(&Bool)),
        ],
    ),
    (
        "event:delete_message",
        &[
            ("message_ids", List(&Int)),
            ("message_type", OneOf(&["stream", "private"])),
            ("stream_id", Opt(&Int)),
            ("topic", Opt(&Str)),
        ],
    ),
    ("event:update_message_flags:add", &[("flag", Str), ("messages", List(&Int)), ("all", Bool)]),
    (
        "event:update_message_flags:remove",
        &[
            ("flag", Str),
            ("messages", List(&Int)),
            ("message_details", Opt(&IntMap(&Obj("flags_detail")))),
        ],
    ),
    (
        "event:reaction",
        &[
            ("op", OneOf(&["add", "remove"])),
            ("emoji_name", Str),
            ("emoji_code", Str),
            ("reaction_type", OneOf(&["unicode_emoji", "realm_emoji", "zulip_extra_emoji"])),
            ("user_id", Int),
            ("message_id", Int),
        ],
    ),
    (
        "event:typing",
        &[
            ("op", OneOf(&["start", "stop"])),
            ("message_type", OneOf(&["stream", "direct"])),
            ("sender", Obj("typing_sender")),
            ("recipients", Opt(&List(&Obj("typing_recipient")))),
            ("stream_id", Opt(&Int)),
            ("topic", Opt(&Str)),
        ],
    ),
    (
        "event:presence",
        &[("user_id", Int), ("server_timestamp", Int), ("presence", Map(&Obj("presence_client")))],
    ),
    ("event:heartbeat", &[]),
    ("event:alert_words", &[("alert_words", List(&Str))]),
    ("event:user_settings:update", &[("property", Str), ("value", Any)]),
    ("event:custom_profile_fields", &[("fields", List(&Obj("custom_profile_field")))]),
    ("event:user_group:add", &[("group", Obj("user_group"))]),
    ("event:user_group:update", &[("group_id", Int), ("data", Map(&Any))]),
    ("event:user_group:add_members", &[("group_id", Int), ("user_ids", List(&Int))]),
    ("event:user_group:remove_members", &[("group_id", Int), ("user_ids", List(&Int))]),
    ("event:user_group:add_subgroups", &[("group_id", Int), ("direct_subgroup_ids", List(&Int))]),
    (
        "event:user_group:remove_subgroups",
        &[("group_id", Int), ("direct_subgroup_ids", List(&Int))],
    ),
    ("event:user_group:remove", &[("group_id", Int)]),
    ("event:realm_user:add", &[("person", Obj("user"))]),
    ("event:realm_user:remove", &[("person", Obj("typing_sender"))]),
    ("event:realm_user:update", &[("person", Obj("typing_sender"))]),
    ("event:saved_snippets:add", &[("saved_snippet", Obj("saved_snippet"))]),
    ("event:saved_snippets:update", &[("saved_snippet", Obj("saved_snippet"))]),
    ("event:saved_snippets:remove", &[("saved_snippet_id", Int)]),
    ("event:stream:create", &[("streams", List(&Obj("stream")))]),
    ("event:stream:delete", &[("stream_ids", List(&Int))]),
    (
        "event:stream:update",
        &[
            ("stream_id", Int),
            ("name", Str),
            ("property", Str),
            ("value", Any),
            ("rendered_description", Opt(&Str)),
            ("history_public_to_subscribers", Opt(&Bool)),
            ("is_web_public", Opt(&Bool)),
        ],
    ),
    ("event:subscription:add", &[("subscriptions", List(&Obj("subscription")))]),
    ("event:subscription:remove", &[("subscriptions", List(&Obj("dm_recipient_stream")))]),
    ("event:subscription:update", &[("stream_id", Int), ("property", Str), ("value", Any)]),
    ("event:subscription:peer_add", &[("stream_ids", List(&Int)), ("user_ids", List(&Int))]),
    ("event:subscription:peer_remove", &[("stream_ids", List(&Int)), ("user_ids", List(&Int))]),
    ("dm_recipient_stream", &[("stream_id", Int)]),
    (
        "event:user_status",
        &[
            ("user_id", Int),
            ("status_text", Opt(&Str)),
            ("emoji_name", Opt(&Str)),
            ("emoji_code", Opt(&Str)),
            ("reaction_type", Opt(&Str)),
        ],
    ),
    (
        "event:user_topic",
        &[
            ("stream_id", Int),
            ("topic_name", Str),
            ("last_updated", Int),
            ("visibility_policy", IntIn(&[0, 1, 2, 3])),
        ],
    ),
    ("event:muted_users", &[("muted_users", List(&Obj("muted_user")))]),
    // Event types the app does not decode (it keeps them as unexpected
    // events): their required fields from Zulip's documentation.
    ("event:drafts:add", &[("drafts", List(&Map(&Any)))]),
    ("event:drafts:update", &[("draft", Map(&Any))]),
    ("event:drafts:remove", &[("draft_id", Int)]),
    ("event:default_streams", &[("default_streams", List(&Map(&Any)))]),
    ("event:realm_bot:add", &[("bot", Map(&Any))]),
    ("event:realm_bot:update", &[("bot", Map(&Any))]),
    ("event:realm_bot:delete", &[("bot", Map(&Any))]),
    ("event:scheduled_messages:add", &[("scheduled_messages", List(&Map(&Any)))]),
    ("event:scheduled_messages:update", &[("scheduled_message", Map(&Any))]),
    ("event:scheduled_messages:remove", &[("scheduled_message_id", Int)]),
    ("event:reminders:add", &[("reminders", List(&Map(&Any)))]),
    ("event:reminders:remove", &[("reminder_id", Int)]),
    ("event:navigation_view:add", &[("navigation_view", Map(&Any))]),
    ("event:navigation_view:update", &[("fragment", Str), ("data", Map(&Any))]),
    ("event:navigation_view:remove", &[("fragment", Str)]),
    ("event:realm_playgrounds", &[("realm_playgrounds", List(&Map(&Any)))]),
    ("event:muted_topics", &[("muted_topics", List(&List(&Any)))]),
    ("event:invites_changed", &[]),
    (
        "event:submessage",
        &[
            ("msg_type", Str),
            ("content", Str),
            ("message_id", Int),
            ("sender_id", Int),
            ("submessage_id", Int),
        ],
    ),
    ("event:channel_folder:add", &[("channel_folder", Obj("channel_folder"))]),
    ("event:channel_folder:update", &[("channel_folder_id", Int), ("data", Map(&Any))]),
    ("event:channel_folder:reorder", &[("order", List(&Int))]),
    (
        "channel_folder",
        &[
            ("id", Int),
            ("name", Str),
            ("description", Str),
            ("rendered_description", Str),
            ("order", Int),
            ("date_created", Int),
            ("creator_id", Opt(&Int)),
            ("is_archived", Bool),
        ],
    ),
    (
        "event:typing_edit_message",
        &[
            ("op", OneOf(&["start", "stop"])),
            ("sender_id", Int),
            ("message_id", Int),
            ("recipient", Obj("edit_typing_recipient")),
        ],
    ),
    (
        "edit_typing_recipient",
        &[
            ("type", OneOf(&["channel", "direct"])),
            ("channel_id", Opt(&Int)),
            ("topic", Opt(&Str)),
            ("user_ids", Opt(&List(&Int))),
        ],
    ),
];

fn schema(name: &str) -> Fields {
    SCHEMAS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no schema named {name}")).1
}

/// Checks `value` against `ty`; every problem is pushed with its path.
fn check(path: &str, value: Option<&Value>, ty: &T, problems: &mut Vec<String>) {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        // `Any` takes `null` (a value whose type depends on a name) but
        // must be there.
        let allowed = match ty {
            Opt(_) => true,
            Any => value.is_some(),
            _ => false,
        };
        if !allowed {
            let what = if value.is_some() { "null" } else { "missing" };
            problems.push(format!("{path}: {what}, the app requires {ty:?}"));
        }
        return;
    };
    let mut wrong = |expected: &str| problems.push(format!("{path}: {value} is not {expected}"));
    match ty {
        Int => {
            if !value.is_i64() {
                wrong("an integer")
            }
        }
        Str => {
            if !value.is_string() {
                wrong("a string")
            }
        }
        Bool => {
            if !value.is_boolean() {
                wrong("a boolean")
            }
        }
        Color => {
            let ok = value.as_str().is_some_and(|s| {
                s.len() == 7
                    && s.starts_with('#')
                    && s[1..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
            if !ok {
                wrong("a #rrggbb colour")
            }
        }
        Url => {
            let ok = value.as_str().is_some_and(|s| {
                (s.starts_with("http://") || s.starts_with("https://")) && s.len() > 8
            });
            if !ok {
                wrong("an absolute URL")
            }
        }
        OneOf(allowed) => {
            if !value.as_str().is_some_and(|s| allowed.contains(&s)) {
                wrong(&format!("one of {allowed:?}"))
            }
        }
        IntIn(allowed) => {
            if !value.as_i64().is_some_and(|i| allowed.contains(&i)) {
                wrong(&format!("one of {allowed:?}"))
            }
        }
        AtLeast(min) => {
            if value.as_i64().is_none_or(|i| i < *min) {
                wrong(&format!("an integer of at least {min}"))
            }
        }
        GroupSetting => match value {
            Value::Number(n) if n.is_i64() => {}
            Value::Object(_) => {
                for key in ["direct_members", "direct_subgroups"] {
                    check(&format!("{path}.{key}"), value.get(key), &List(&Int), problems);
                }
            }
            _ => wrong("a group-setting value"),
        },
        Opt(inner) => check(path, Some(value), inner, problems),
        List(inner) => match value.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    check(&format!("{path}[{i}]"), Some(item), inner, problems);
                }
            }
            None => wrong("a list"),
        },
        Map(inner) | IntMap(inner) => match value.as_object() {
            Some(map) => {
                for (key, item) in map {
                    if matches!(ty, IntMap(_)) && key.parse::<i64>().is_err() {
                        problems.push(format!("{path}: key {key:?} is not an integer"));
                    }
                    check(&format!("{path}.{key}"), Some(item), inner, problems);
                }
            }
            None => wrong("an object"),
        },
        Obj(name) => check_object(path, value, name, problems),
        Any => {}
    }
}

fn check_object(path: &str, value: &Value, name: &str, problems: &mut Vec<String>) {
    if !value.is_object() {
        problems.push(format!("{path}: {value} is not an object ({name})"));
        return;
    }
    for (field, ty) in schema(name) {
        check(&format!("{path}.{field}"), value.get(*field), ty, problems);
    }
    // A message's own fields by kind.
    if name == "message" {
        let kind = if value["type"] == "stream" { "message_stream" } else { "message_dm" };
        check_object(path, value, kind, problems);
    }
}

/// Checks an event against its entry (`event:<type>:<op>`, else
/// `event:<type>`); an event type with no entry is a problem too.
fn check_event(event: &Value, problems: &mut Vec<String>) {
    let kind = event["type"].as_str().unwrap_or("?");
    let path = format!("event {kind}");
    check(&format!("{path}.id"), event.get("id"), &Int, problems);
    let with_op = event["op"].as_str().map(|op| format!("event:{kind}:{op}"));
    let name = with_op
        .filter(|n| SCHEMAS.iter().any(|(s, _)| s == n))
        .unwrap_or_else(|| format!("event:{kind}"));
    if !SCHEMAS.iter().any(|(s, _)| *s == name) {
        problems.push(format!("{path}: no required-field entry for {name}: {event}"));
        return;
    }
    if kind == "message" {
        // The app reads the event's `flags` as the message's own.
        let mut event = event.clone();
        event["message"]["flags"] = event["flags"].clone();
        return check_object(&path, &event, &name, problems);
    }
    check_object(&path, event, &name, problems);
}

#[track_caller]
fn assert_no_problems(what: &str, problems: Vec<String>) {
    assert!(problems.is_empty(), "{what} fails a strict decode:\n{}", problems.join("\n"));
}

/// The mobile app's register parameters.
const APP_REGISTER: [(&str, &str); 4] = [
    ("apply_markdown", "true"),
    ("client_gravatar", "false"),
    ("slim_presence", "true"),
    (
        "client_capabilities",
        r#"{"notification_settings_null": true, "bulk_message_deletion": true,
            "user_avatar_url_field_optional": true, "stream_typing_notifications": true,
            "user_settings_object": true, "include_deactivated_groups": true,
            "empty_topic_name": true, "individual_emoji_changes": true}"#,
    ),
];

fn app_register(c: &Client) -> Value {
    c.post("/register", &APP_REGISTER).ok()
}

#[test]
fn register_and_messages_decode_as_the_mobile_app_decodes_them() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    // Some state worth decoding: unread channel and direct messages, a
    // group direct message, a reaction, a starred message, a status.
    let hamlet_id = user_id(&server, HAMLET).to_string();
    let iago_id = user_id(&server, IAGO).to_string();
    othello
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{hamlet_id}]")), ("content", "hi")],
        )
        .ok();
    othello
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{hamlet_id},{iago_id}]")), ("content", "all")],
        )
        .ok();
    let sent = othello
        .post(
            "/messages",
            &[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "t"),
                ("content", "@**King Hamlet** x"),
            ],
        )
        .ok()["id"]
        .as_u64()
        .unwrap()
        .to_string();
    hamlet.post(&format!("/messages/{sent}/reactions"), &[("emoji_name", "smile")]).ok();
    hamlet
        .post(
            "/messages/flags",
            &[("messages", &format!("[{sent}]")), ("op", "add"), ("flag", "starred")],
        )
        .ok();
    othello.post("/users/me/status", &[("status_text", "away"), ("emoji_name", "car")]).ok();
    hamlet.post("/users/me/presence", &[("status", "active")]).ok();

    // Before logging in: the server's settings (the app refuses a
    // feature level under 371, its oldest supported server).
    let settings = server.anonymous().get("/server_settings", &[]).ok();
    let mut problems = Vec::new();
    check_object("server_settings", &settings, "server_settings", &mut problems);
    assert_no_problems("GET /server_settings", problems);
    // The app's presence report.
    let report = hamlet
        .post(
            "/users/me/presence",
            &[("status", "active"), ("new_user_input", "true"), ("slim_presence", "true")],
        )
        .ok();
    let mut problems = Vec::new();
    check_object("presence", &report, "update_presence", &mut problems);
    assert_no_problems("POST /users/me/presence", problems);
    assert!(!report["presences"].as_object().unwrap().is_empty());

    let r = app_register(&hamlet);
    let mut problems = Vec::new();
    check_object("register", &r, "register", &mut problems);
    assert_no_problems("POST /register", problems);
    // Not vacuous: the lists the schemas walk are filled.
    for key in ["realm_users", "subscriptions", "streams", "realm_user_groups"] {
        assert!(!r[key].as_array().unwrap().is_empty(), "{key}");
    }
    assert!(!r["unread_msgs"]["pms"].as_array().unwrap().is_empty());
    assert!(!r["unread_msgs"]["huddles"].as_array().unwrap().is_empty());

    let messages = hamlet
        .get(
            "/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("apply_markdown", "true"),
                ("client_gravatar", "false"),
            ],
        )
        .ok();
    let mut problems = Vec::new();
    check_object("GET /messages", &messages, "get_messages", &mut problems);
    assert_no_problems("GET /messages", problems);
    let kinds: BTreeSet<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["type"].as_str())
        .collect();
    assert_eq!(kinds, BTreeSet::from(["private", "stream"]));
}

/// The event types the scenario below must make natter emit (and the app
/// must decode): the test fails if one goes missing. `heartbeat` and
/// `invites_changed` are checked below (they need a waiting poll and an
/// administrator); the legacy settings events go only to clients without
/// `user_settings_object`, which the app is not.
const EMITTED: &[&str] = &[
    "message",
    "channel_folder",
    "update_message",
    "delete_message",
    "update_message_flags",
    "reaction",
    "typing",
    "typing_edit_message",
    "submessage",
    "presence",
    "alert_words",
    "user_settings",
    "user_status",
    "user_topic",
    "muted_users",
    "saved_snippets",
    "drafts",
    "subscription",
    "stream",
    "user_group",
    "realm_user",
    "custom_profile_fields",
    "realm_bot",
    "scheduled_messages",
    "reminders",
    "navigation_view",
    "realm_playgrounds",
    "default_streams",
    "muted_topics",
];

#[test]
fn every_event_decodes_as_the_mobile_app_decodes_it() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let iago = server.client(IAGO);
    let hamlet_id = user_id(&server, HAMLET).to_string();
    let othello_id = user_id(&server, OTHELLO).to_string();
    let r = app_register(&hamlet);
    let queue = r["queue_id"].as_str().unwrap().to_owned();

    // Messages: sent, received, edited, reacted to, flagged, deleted.
    let send = |c: &Client, topic: &str, content: &str| -> String {
        c.post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", topic), ("content", content)],
        )
        .ok()["id"]
            .as_u64()
            .unwrap()
            .to_string()
    };
    let mine = send(&hamlet, "typed", "first");
    let theirs = send(&othello, "typed", "second");
    othello
        .post(
            "/messages",
            &[("type", "direct"), ("to", &format!("[{hamlet_id}]")), ("content", "dm")],
        )
        .ok();
    hamlet.request("PATCH", &format!("/messages/{mine}"), &[("content", "first, edited")]).ok();
    hamlet.request("PATCH", &format!("/messages/{mine}"), &[("topic", "moved")]).ok();
    hamlet.post(&format!("/messages/{theirs}/reactions"), &[("emoji_name", "smile")]).ok();
    hamlet
        .request("DELETE", &format!("/messages/{theirs}/reactions"), &[("emoji_name", "smile")])
        .ok();
    for op in ["add", "remove"] {
        hamlet
            .post(
                "/messages/flags",
                &[("messages", &format!("[{theirs}]")), ("op", op), ("flag", "read")],
            )
            .ok();
    }
    hamlet.request("DELETE", &format!("/messages/{mine}"), &[]).ok();
    // A poll and a vote: a widget's submessages.
    let poll = send(&othello, "typed", "/poll Tea?\nYes\nNo");
    let vote = r#"{"type":"vote","key":"canned,0","vote":1}"#;
    hamlet
        .post("/submessage", &[("message_id", &poll), ("msg_type", "widget"), ("content", vote)])
        .ok();
    // Typing, both kinds; presence.
    othello.post("/typing", &[("op", "start"), ("to", &format!("[{hamlet_id}]"))]).ok();
    let general = crate::util::channel_id(&othello, "general").to_string();
    othello
        .post(
            "/typing",
            &[("op", "start"), ("type", "stream"), ("stream_id", &general), ("topic", "typed")],
        )
        .ok();
    othello.post("/users/me/presence", &[("status", "active")]).ok();
    othello.post(&format!("/messages/{theirs}/typing"), &[("op", "start")]).ok();
    // Personal settings and resources.
    hamlet.post("/users/me/alert_words", &[("alert_words", r#"["natter"]"#)]).ok();
    hamlet.request("PATCH", "/settings", &[("starred_message_counts", "false")]).ok();
    othello.post("/users/me/status", &[("status_text", "out")]).ok();
    hamlet
        .post(
            "/user_topics",
            &[("stream_id", &general), ("topic", "typed"), ("visibility_policy", "1")],
        )
        .ok();
    hamlet.post(&format!("/users/me/muted_users/{othello_id}"), &[]).ok();
    let snippet = hamlet.post("/saved_snippets", &[("title", "t"), ("content", "c")]).ok();
    let snippet = snippet["saved_snippet_id"].to_string();
    hamlet.request("PATCH", &format!("/saved_snippets/{snippet}"), &[("title", "u")]).ok();
    hamlet.request("DELETE", &format!("/saved_snippets/{snippet}"), &[]).ok();
    let drafts = hamlet
        .post("/drafts", &[("drafts", r#"[{"type": "", "to": [], "topic": "", "content": "d"}]"#)])
        .ok();
    let draft = drafts["ids"][0].to_string();
    hamlet
        .request(
            "PATCH",
            &format!("/drafts/{draft}"),
            &[("draft", r#"{"type": "", "to": [], "topic": "", "content": "e"}"#)],
        )
        .ok();
    hamlet.request("DELETE", &format!("/drafts/{draft}"), &[]).ok();
    // Channels and subscriptions.
    hamlet
        .post("/users/me/subscriptions", &[("subscriptions", r#"[{"name": "typed channel"}]"#)])
        .ok();
    let typed = crate::util::channel_id(&hamlet, "typed channel").to_string();
    hamlet
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "typed channel"}]"#),
                ("principals", &format!("[{othello_id}]")),
            ],
        )
        .ok();
    hamlet
        .post(
            "/users/me/subscriptions/properties",
            &[(
                "subscription_data",
                &format!(r#"[{{"stream_id": {typed}, "property": "pin_to_top", "value": true}}]"#),
            )],
        )
        .ok();
    hamlet.request("PATCH", &format!("/streams/{typed}"), &[("description", "typed")]).ok();
    othello
        .request("DELETE", "/users/me/subscriptions", &[("subscriptions", r#"["typed channel"]"#)])
        .ok();
    hamlet
        .request("DELETE", "/users/me/subscriptions", &[("subscriptions", r#"["typed channel"]"#)])
        .ok();
    // Groups, users, profile fields.
    let group = hamlet
        .post(
            "/user_groups/create",
            &[("name", "typed"), ("description", "d"), ("members", &format!("[{hamlet_id}]"))],
        )
        .ok()["group_id"]
        .to_string();
    hamlet
        .post(&format!("/user_groups/{group}/members"), &[("add", &format!("[{othello_id}]"))])
        .ok();
    hamlet
        .post(&format!("/user_groups/{group}/members"), &[("delete", &format!("[{othello_id}]"))])
        .ok();
    hamlet.request("PATCH", &format!("/user_groups/{group}"), &[("description", "e")]).ok();
    iago.request("PATCH", &format!("/users/{othello_id}"), &[("full_name", "Othello Typed")]).ok();
    iago.post("/realm/profile_fields", &[("name", "Typed"), ("field_type", "1")]).ok();
    iago.post("/users", &[("email", "typed@natter.test"), ("full_name", "Typed User")]).ok();
    // Bots, scheduled messages, views, playgrounds, default channels.
    hamlet
        .post("/bots", &[("full_name", "Typed Bot"), ("short_name", "typed"), ("bot_type", "1")])
        .ok();
    let later =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
            + 3600)
            .to_string();
    hamlet
        .post(
            "/scheduled_messages",
            &[
                ("type", "stream"),
                ("to", &general),
                ("topic", "t"),
                ("content", "later"),
                ("scheduled_delivery_timestamp", &later),
            ],
        )
        .ok();
    let about = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", &general), ("topic", "t"), ("content", "remind me")],
        )
        .ok()["id"]
        .to_string();
    let reminder = hamlet
        .post("/reminders", &[("message_id", &about), ("scheduled_delivery_timestamp", &later)])
        .ok()["reminder_id"]
        .to_string();
    hamlet.request("DELETE", &format!("/reminders/{reminder}"), &[]).ok();
    hamlet
        .post("/navigation_views", &[("fragment", "narrow/is/starred"), ("is_pinned", "true")])
        .ok();
    iago.post(
        "/realm/playgrounds",
        &[
            ("name", "Typed"),
            ("pygments_language", "Rust"),
            ("url_template", "https://play.example/?c={code}"),
        ],
    )
    .ok();
    let folder = iago.post("/channel_folders/create", &[("name", "Typed")]).ok();
    let folder = folder["channel_folder_id"].to_string();
    iago.request("PATCH", &format!("/channel_folders/{folder}"), &[("description", "t")]).ok();
    iago.request("PATCH", "/channel_folders", &[("order", &format!("[{folder}]"))]).ok();
    let denmark = crate::util::channel_id(&iago, "Denmark").to_string();
    for default in ["false", "true"] {
        iago.request("PATCH", &format!("/streams/{denmark}"), &[("is_default_stream", default)])
            .ok();
    }

    let mut last = -1;
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    loop {
        let r = hamlet
            .get(
                "/events",
                &[
                    ("queue_id", &queue),
                    ("last_event_id", &last.to_string()),
                    ("dont_block", "true"),
                ],
            )
            .ok();
        let events = r["events"].as_array().unwrap();
        if events.is_empty() {
            break;
        }
        for event in events {
            check_event(event, &mut problems);
            seen.insert(event["type"].as_str().unwrap_or("?").to_owned());
            last = last.max(event["id"].as_i64().unwrap());
        }
    }
    assert_no_problems("the events", problems);
    let missing: Vec<&&str> = EMITTED.iter().filter(|t| !seen.contains(**t)).collect();
    assert!(missing.is_empty(), "the scenario emitted no {missing:?} event (saw {seen:?})");
}

/// The event types that reach only some queues: `invites_changed`
/// (administrators) and `heartbeat` (a poll that waited).
#[test]
fn administrator_and_heartbeat_events_decode_too() {
    let server = TestServer::start_with(&["--heartbeat-secs", "1"]);
    let iago = server.client(IAGO);
    let queue = app_register(&iago)["queue_id"].as_str().unwrap().to_owned();
    let general = crate::util::channel_id(&iago, "general").to_string();
    iago.post(
        "/invites",
        &[("invitee_emails", "typed@example.test"), ("stream_ids", &format!("[{general}]"))],
    )
    .ok();
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    let mut last = -1;
    // Without `dont_block`: once the invitation's events are taken, the
    // next poll waits for its heartbeat.
    for _ in 0..10 {
        if seen.iter().any(|t| t == "heartbeat") {
            break;
        }
        let r =
            iago.get("/events", &[("queue_id", &queue), ("last_event_id", &last.to_string())]).ok();
        for event in r["events"].as_array().unwrap() {
            check_event(event, &mut problems);
            seen.push(event["type"].as_str().unwrap_or("?").to_owned());
            last = last.max(event["id"].as_i64().unwrap());
        }
    }
    assert_no_problems("the events", problems);
    assert!(seen.iter().any(|t| t == "invites_changed"), "{seen:?}");
    assert!(seen.iter().any(|t| t == "heartbeat"), "{seen:?}");
}

#[test]
fn the_checker_refuses_what_a_strict_client_refuses() {
    let mut problems = Vec::new();
    let good = json!({"max_message_id": 3, "user_ids": [1, 2]});
    check_object("x", &good, "recent_dm", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    for bad in [
        json!({"user_ids": [1]}),
        json!({"max_message_id": null, "user_ids": [1]}),
        json!({"max_message_id": "3", "user_ids": [1]}),
        json!({"max_message_id": 3, "user_ids": ["1"]}),
    ] {
        let mut problems = Vec::new();
        check_object("x", &bad, "recent_dm", &mut problems);
        assert_eq!(problems.len(), 1, "{bad}: {problems:?}");
    }
    let mut problems = Vec::new();
    check("c", Some(&json!("#FFF")), &Color, &mut problems);
    check("k", Some(&json!({"x": 1})), &IntMap(&Int), &mut problems);
    check_event(&json!({"type": "no_such_event", "id": 1}), &mut problems);
    assert_eq!(problems.len(), 3, "{problems:?}");
}
