//! Register-vs-events cases for uploaded files: an upload, a message that
//! links it, and its deletion each tell the owner with an `attachment`
//! event, and none changes what register returns.

use serde_json::Value;

use natter::api::params::Params;
use natter::api::{self, Call};
use natter::files::{self, Upload};

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

/// `POST /user_uploads` as `email` with one staged file.
fn upload(h: &Harness, email: &str, name: &str, bytes: &[u8]) -> Value {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let staged = files::stage_bytes(&*h.app.files, bytes).unwrap();
    let mut call = Call {
        realm: realm.into(),
        caller: Some(h.user(email).into()),
        params: Params::default(),
        path: Vec::new(),
        client: "test".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: vec![Upload {
            staged,
            filename: name.to_owned(),
            content_type: None,
            size: bytes.len() as u64,
        }],
    };
    Value::Object(api::uploads::upload(&h.app, &mut call).unwrap())
}

#[test]
fn upload_link_and_delete() {
    let h = Harness::new();
    let params = [("fetch_event_types", r#"["message", "realm_user", "subscription"]"#)];
    let mut url = String::new();
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| url = upload(h, HAMLET, "a.txt", b"abc")["url"].as_str().unwrap().to_owned(),
        &["attachment"],
    );
    assert_eq!(events[0]["op"], "add");
    assert_eq!(events[0]["upload_space_used"], 3);
    assert_eq!(events[0]["attachment"]["name"], "a.txt");
    assert_eq!(events[0]["attachment"]["messages"], serde_json::json!([]));
    let content = format!("[a]({url})");
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| {
            h.call(
                HAMLET,
                api::messages::send,
                &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", &content)],
            )
            .unwrap();
        },
        // Sending also follows the topic (the sender's automatic policy).
        &["message", "muted_topics", "user_topic", "attachment"],
    );
    let linked = &events[3];
    assert_eq!(linked["op"], "update");
    assert_eq!(linked["attachment"]["messages"].as_array().unwrap().len(), 1);
    let id = linked["attachment"]["id"].as_u64().unwrap().to_string();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| {
            h.call_in(realm, HAMLET, api::uploads::delete, &[&id], &[]).unwrap();
        },
        &["attachment"],
    );
    assert_eq!(events[0]["op"], "remove");
    assert_eq!(events[0]["upload_space_used"], 0);
}

/// `POST /realm/emoji/{name}` as `email` with one staged image.
fn add_emoji(h: &Harness, email: &str, name: &str, bytes: &[u8]) -> natter::error::ApiResult<()> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let staged = files::stage_bytes(&*h.app.files, bytes).unwrap();
    let mut call = Call {
        realm: realm.into(),
        caller: Some(h.user(email).into()),
        params: Params::default(),
        path: vec![name.to_owned()],
        client: "test".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: vec![Upload {
            staged,
            filename: "e.png".to_owned(),
            content_type: Some("image/png".to_owned()),
            size: bytes.len() as u64,
        }],
    };
    api::emoji::add(&h.app, &mut call).map(drop)
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 11, 73, 68, 65, 84, 120, 156, 99, 96, 0, 2, 0, 0, 5, 0, 1,
    122, 94, 171, 63, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

#[test]
fn custom_emoji_added_and_deactivated() {
    let h = Harness::new();
    let params = [("fetch_event_types", r#"["realm_emoji"]"#)];
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| add_emoji(h, "iago@natter.test", "party_parrot", PNG).unwrap(),
        &["realm_emoji"],
    );
    let dict = events[0]["realm_emoji"].as_object().unwrap();
    assert_eq!(dict.len(), 1);
    let (id, emoji) = dict.iter().next().unwrap();
    assert_eq!(emoji["id"], id.as_str());
    assert_eq!(emoji["name"], "party_parrot");
    assert_eq!(emoji["deactivated"], false);
    assert!(emoji["source_url"].as_str().unwrap().starts_with("/user_avatars/"));
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| {
            h.call_in(realm, "iago@natter.test", api::emoji::deactivate, &["party_parrot"], &[])
                .unwrap();
        },
        &["realm_emoji"],
    );
    assert_eq!(events[0]["realm_emoji"][id.as_str()]["deactivated"], true);
}

/// `POST /users/me/avatar` as `email` with one staged image.
fn upload_avatar(h: &Harness, email: &str, bytes: &[u8]) -> natter::error::ApiResult<Value> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let staged = files::stage_bytes(&*h.app.files, bytes).unwrap();
    let mut call = Call {
        realm: realm.into(),
        caller: Some(h.user(email).into()),
        params: Params::default(),
        path: Vec::new(),
        client: "test".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: vec![Upload {
            staged,
            filename: "me.png".to_owned(),
            content_type: Some("image/png".to_owned()),
            size: bytes.len() as u64,
        }],
    };
    api::avatars::upload(&h.app, &mut call).map(Value::Object)
}

/// `PATCH /bots/{bot_id}` as `email` with one staged image.
fn bot_avatar(h: &Harness, email: &str, bot: u64, bytes: &[u8]) -> natter::error::ApiResult<()> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let staged = files::stage_bytes(&*h.app.files, bytes).unwrap();
    let mut call = Call {
        realm: realm.into(),
        caller: Some(h.user(email).into()),
        params: Params::default(),
        path: vec![bot.to_string()],
        client: "test".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: vec![Upload {
            staged,
            filename: "bot.png".to_owned(),
            content_type: Some("image/png".to_owned()),
            size: bytes.len() as u64,
        }],
    };
    api::accounts::update_bot(&h.app, &mut call).map(drop)
}

/// A bot's new avatar, set by its owner or by the bot itself, reaches
/// everyone as `realm_user` and those who administer the bot as
/// `realm_bot`, and folds into `realm_users` and `realm_bots`.
#[test]
fn bot_avatar_changes() {
    let h = Harness::new();
    let bot = h.user("helper-bot@natter.test");
    let owner = h.app.state.users.get(&bot.bot_owner.unwrap()).unwrap().email.clone();
    let params = [("fetch_event_types", r#"["realm_user", "realm_bot"]"#)];
    for viewer in [owner.as_str(), IAGO] {
        let events = h.verify_action(
            viewer,
            &params,
            |h| bot_avatar(h, &owner, bot.id.0, &crate::api_uploads::png(30, 30)).unwrap(),
            &["realm_user", "realm_bot"],
        );
        let url = events[1]["bot"]["avatar_url"].as_str().unwrap();
        assert!(url.starts_with("/user_avatars/"), "{url}");
        assert_eq!(events[0]["person"]["avatar_url"], url);
        let events = h.verify_action(
            viewer,
            &params,
            |h| {
                upload_avatar(h, "helper-bot@natter.test", &crate::api_uploads::png(20, 20))
                    .unwrap();
            },
            &["realm_user", "realm_bot"],
        );
        assert_eq!(events[1]["bot"]["user_id"], bot.id.0);
    }
    // Someone who does not administer the bot sees only the user change.
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| bot_avatar(h, IAGO, bot.id.0, &crate::api_uploads::png(30, 30)).unwrap(),
        &["realm_user"],
    );
    assert_eq!(events[0]["person"]["user_id"], bot.id.0);
}

/// An avatar upload and its removal reach every user as Zulip's
/// `realm_user` update, and fold into the user list (with and without
/// `client_gravatar`) and the uploader's own avatar fields.
#[test]
fn avatar_changes() {
    let h = Harness::new();
    for (email, client_gravatar) in [(HAMLET, "true"), ("othello@natter.test", "false")] {
        let params =
            [("fetch_event_types", r#"["realm_user"]"#), ("client_gravatar", client_gravatar)];
        let events = h.verify_action(
            email,
            &params,
            |h| {
                upload_avatar(h, HAMLET, &crate::api_uploads::png(30, 30)).unwrap();
            },
            &["realm_user"],
        );
        let person = &events[0]["person"];
        assert_eq!(person["avatar_source"], "U");
        assert!(person["avatar_url"].as_str().unwrap().starts_with("/user_avatars/"));
        let realm = h.app.state.realm_by_subdomain("").unwrap();
        let events = h.verify_action(
            email,
            &params,
            |h| {
                h.call_in(realm, HAMLET, api::avatars::delete, &[], &[]).unwrap();
            },
            &["realm_user"],
        );
        let person = &events[0]["person"];
        assert_eq!(person["avatar_source"], "G");
        assert!(person["avatar_url"].as_str().unwrap().contains("gravatar.com"));
    }
}

/// `avatar_changes_disabled` and `can_add_custom_emoji_group` through
/// `PATCH /realm`: `realm` events that register agrees with.
#[test]
fn realm_file_settings() {
    let h = Harness::new();
    let update = api::realm_settings::update;
    let disable = Harness::act(IAGO, update, &[], &[("avatar_changes_disabled", "true")]);
    let events = h.verify_action(HAMLET, &[], disable, &["realm"]);
    assert_eq!(events[0]["property"], "avatar_changes_disabled");
    assert_eq!(events[0]["value"], true);
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let admins = realm.system_groups.id(natter::state::SystemGroup::Administrators).0;
    let value = format!(r#"{{"new": {admins}}}"#);
    let admins_only = Harness::act(IAGO, update, &[], &[("can_add_custom_emoji_group", &value)]);
    let events = h.verify_action(HAMLET, &[], admins_only, &["realm"]);
    assert_eq!(events[0]["op"], "update_dict");
    assert_eq!(events[0]["data"]["can_add_custom_emoji_group"], admins);
    // Both at once, with another setting: one change, three events.
    let both = Harness::act(
        IAGO,
        update,
        &[],
        &[
            ("avatar_changes_disabled", "false"),
            (
                "can_add_custom_emoji_group",
                r#"{"new": {"direct_members": [], "direct_subgroups": []}}"#,
            ),
            ("allow_edit_history", "false"),
        ],
    );
    h.verify_action(HAMLET, &[], both, &["realm", "realm", "realm"]);
}

/// Unclaimed files are deleted after the grace period (Zulip's rule: no
/// message and no scheduled message references them; a deleted message
/// no longer does), each telling its owner with an `attachment` remove;
/// referenced ones stay.
#[test]
fn unclaimed_files_are_reclaimed() {
    let h = Harness::new();
    let url = |v: Value| v["url"].as_str().unwrap().to_owned();
    let unsent = url(upload(&h, HAMLET, "unsent.txt", b"a"));
    let sent = url(upload(&h, HAMLET, "sent.txt", b"b"));
    let deleted = url(upload(&h, HAMLET, "deleted.txt", b"c"));
    let scheduled = url(upload(&h, HAMLET, "scheduled.txt", b"d"));
    let send = |content: &str| {
        let params = [("type", "stream"), ("to", "general"), ("topic", "t"), ("content", content)];
        h.call(HAMLET, api::messages::send, &params).unwrap()["id"].as_u64().unwrap()
    };
    send(&format!("[b]({sent})"));
    let gone = send(&format!("[c]({deleted})")).to_string();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    h.call_in(realm.clone(), IAGO, api::messages::delete, &[&gone], &[]).unwrap();
    let general = h.app.state.channel_by_name(realm.id, "general").unwrap().id.0.to_string();
    let at = (natter::entropy::now() + 3600).to_string();
    let content = format!("[d]({scheduled})");
    let params = [
        ("type", "stream"),
        ("to", general.as_str()),
        ("topic", "later"),
        ("content", content.as_str()),
        ("scheduled_delivery_timestamp", at.as_str()),
    ];
    h.call(HAMLET, api::scheduled::create, &params).unwrap();
    let path = |url: &str| url.trim_start_matches("/user_uploads/").to_owned();
    let attachment = |url: &str| h.app.state.files.by_path(&path(url));
    let records: Vec<_> = [&unsent, &sent, &deleted, &scheduled]
        .into_iter()
        .map(|u| attachment(u).unwrap())
        .collect();
    // Within the grace period nothing goes.
    let grace = h.app.config.uploads.unclaimed_grace_secs as i64;
    let now = natter::entropy::now();
    assert_eq!(api::uploads::reclaim_unclaimed(&h.app, now), 0);
    let params = [("fetch_event_types", r#"["message", "realm_user", "subscription"]"#)];
    let events = h.verify_action(
        HAMLET,
        &params,
        |h| assert_eq!(api::uploads::reclaim_unclaimed(&h.app, now + grace), 2),
        &["attachment", "attachment"],
    );
    assert!(events.iter().all(|e| e["op"] == "remove"));
    for (record, kept) in records.iter().zip([false, true, false, true]) {
        assert_eq!(attachment(&format!("/user_uploads/{}", record.path_id)).is_some(), kept);
        assert_eq!(files::is_stored(&*h.app.files, record), kept, "{}", record.name);
    }
}
