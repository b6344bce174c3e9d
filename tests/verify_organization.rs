//! Register-vs-events cases for linkifiers, default channels and default
//! channel groups (`verify_action.rs`'s harness). `apply_event` here is the
//! client-side rule for this area's event types; the harness's own
//! `apply_event` hands them over.

use serde_json::{json, Value};

use natter::api::{default_streams as ds, linkifiers as lk};

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";
/// A client that reads linkifier URL templates.
const LINKIFIERS: &[(&str, &str)] =
    &[("client_capabilities", r#"{"linkifier_url_template": true}"#)];

/// Whether this file folds `event` into the state.
pub fn handles(event: &Value) -> bool {
    matches!(
        event["type"].as_str().unwrap_or(""),
        "realm_linkifiers"
            | "default_stream_groups"
            | "realm"
            | "realm_user_settings_defaults"
            | "realm_domains"
            | "channel_folder"
    )
}

/// Folds one of this area's events into a fetched state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value) {
    if event["type"] == "realm" {
        return apply_realm_event(state, event);
    }
    if event["type"] == "channel_folder" {
        return apply_folder_event(state, event);
    }
    if event["type"] == "realm_domains" {
        let Some(list) = state.get_mut("realm_domains").and_then(Value::as_array_mut) else {
            return;
        };
        match event["op"].as_str().unwrap() {
            "add" => list.push(event["realm_domain"].clone()),
            "change" => {
                let d = &event["realm_domain"];
                let entry = list.iter_mut().find(|x| x["domain"] == d["domain"]).unwrap();
                *entry = d.clone();
            }
            "remove" => list.retain(|x| x["domain"] != event["domain"]),
            other => panic!("realm_domains {other}"),
        }
        list.sort_by_key(|x| x["domain"].as_str().unwrap().to_owned());
        return;
    }
    if event["type"] == "realm_user_settings_defaults" {
        assert_eq!(event["op"], "update");
        if let Some(defaults) = state.get_mut("realm_user_settings_defaults") {
            defaults[event["property"].as_str().unwrap()] = event["value"].clone();
        }
        return;
    }
    let (key, value) = match event["type"].as_str().unwrap() {
        "realm_linkifiers" => ("realm_linkifiers", &event["realm_linkifiers"]),
        "default_stream_groups" => ("realm_default_stream_groups", &event["default_stream_groups"]),
        other => panic!("not this area's event: {other}"),
    };
    if let Some(slot) = state.get_mut(key) {
        *slot = value.clone();
    }
}

/// `channel_folder` `add`, `update` and `reorder`: register's
/// `channel_folders`, kept in display order as register lists them.
fn apply_folder_event(state: &mut Value, event: &Value) {
    let Some(list) = state.get_mut("channel_folders").and_then(Value::as_array_mut) else {
        return;
    };
    match event["op"].as_str().unwrap() {
        "add" => list.push(event["channel_folder"].clone()),
        "update" => {
            let id = &event["channel_folder_id"];
            let folder = list.iter_mut().find(|f| f["id"] == *id).unwrap();
            for (k, v) in event["data"].as_object().unwrap() {
                folder[k] = v.clone();
            }
        }
        "reorder" => {
            for (at, id) in event["order"].as_array().unwrap().iter().enumerate() {
                let folder = list.iter_mut().find(|f| f["id"] == *id).unwrap();
                folder["order"] = json!(at);
            }
        }
        other => panic!("channel_folder {other}"),
    }
    list.sort_by_key(|f| (f["order"].as_u64().unwrap(), f["id"].as_u64().unwrap()));
}

/// `realm` `update` and `update_dict`: register's `realm_<property>`.
fn apply_realm_event(state: &mut Value, event: &Value) {
    if state.get("realm_name").is_none() {
        return;
    }
    match event["op"].as_str().unwrap() {
        "update" => {
            let property = event["property"].as_str().unwrap();
            state[format!("realm_{property}")] = event["value"].clone();
            // Public access needs the setting and a web-public channel.
            if property == "enable_spectator_access" {
                let web_public = ["subscriptions", "never_subscribed"].iter().any(|list| {
                    state[*list]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|s| s["is_web_public"] == true)
                });
                state["realm_web_public_access_enabled"] =
                    json!(event["value"] == true && web_public);
            }
        }
        "update_dict" => {
            assert_eq!(event["property"], "default");
            for (k, v) in event["data"].as_object().unwrap() {
                state[format!("realm_{k}")] = v.clone();
            }
        }
        other => panic!("realm {other}"),
    }
}

/// Creates the public channel `Verona` (the seed's public channels are
/// all default channels) and returns its id.
fn verona(h: &Harness) -> u64 {
    let params = [("subscriptions", r#"[{"name": "Verona"}]"#)];
    h.call(IAGO, natter::api::subscriptions::subscribe, &params).unwrap();
    h.app.state.channel_by_name(h.user(IAGO).realm, "Verona").unwrap().id.0
}

fn linkifier_ids(h: &Harness) -> Vec<String> {
    let state = h.register(HAMLET, LINKIFIERS);
    state["realm_linkifiers"].as_array().unwrap().iter().map(|l| l["id"].to_string()).collect()
}

#[test]
fn linkifiers() {
    let h = Harness::new();
    let add = |pattern: &'static str, template: &'static str| {
        Harness::act(IAGO, lk::add, &[], &[("pattern", pattern), ("url_template", template)])
    };
    let events = h.verify_action(
        HAMLET,
        LINKIFIERS,
        add("#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}"),
        &["realm_linkifiers"],
    );
    assert_eq!(events[0]["realm_linkifiers"][0]["pattern"], "#(?P<id>[0-9]+)");
    h.verify_action(
        HAMLET,
        LINKIFIERS,
        add("T(?P<n>[0-9]+)", "https://tickets.test/{n}"),
        &["realm_linkifiers"],
    );
    let ids = linkifier_ids(&h);
    let first = [ids[0].as_str()];
    let edit = Harness::act(
        IAGO,
        lk::update,
        &first,
        &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", "https://tracker.test/{id}")],
    );
    h.verify_action(HAMLET, LINKIFIERS, edit, &["realm_linkifiers"]);
    let order = format!("[{},{}]", ids[1], ids[0]);
    let reorder =
        Harness::act(IAGO, lk::reorder, &[], &[("ordered_linkifier_ids", order.as_str())]);
    let events = h.verify_action(HAMLET, LINKIFIERS, reorder, &["realm_linkifiers"]);
    assert_eq!(events[0]["realm_linkifiers"][0]["pattern"], "T(?P<n>[0-9]+)");
    h.verify_action(
        HAMLET,
        LINKIFIERS,
        Harness::act(IAGO, lk::remove, &first, &[]),
        &["realm_linkifiers"],
    );
    assert_eq!(linkifier_ids(&h).len(), 1);
}

#[test]
fn clients_without_the_capability_get_no_linkifiers() {
    let h = Harness::new();
    let add = Harness::act(
        IAGO,
        lk::add,
        &[],
        &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", "https://x.test/{id}")],
    );
    h.verify_action(HAMLET, &[], add, &[]);
    let state = h.register(HAMLET, &[]);
    assert_eq!(state["realm_linkifiers"], json!([]));
    assert_eq!(state["realm_filters"], json!([]));
}

#[test]
fn default_channels() {
    let h = Harness::new();
    let id = verona(&h).to_string();
    let params = [("stream_id", id.as_str())];
    let add = Harness::act(IAGO, ds::add_default, &[], &params);
    h.verify_action(HAMLET, &[], add, &["default_streams"]);
    let remove = Harness::act(IAGO, ds::remove_default, &[], &params);
    h.verify_action(HAMLET, &[], remove, &["default_streams"]);
}

#[test]
fn default_channel_groups() {
    let h = Harness::new();
    let verona = verona(&h);
    let create = Harness::act(
        IAGO,
        ds::create_group,
        &[],
        &[
            ("group_name", "Starters"),
            ("description", "New here?"),
            ("stream_names", "[\"Verona\"]"),
        ],
    );
    let events = h.verify_action(HAMLET, &[], create, &["default_stream_groups"]);
    let group = &events[0]["default_stream_groups"][0];
    assert_eq!(group["streams"][0]["name"], "Verona");
    let id = group["id"].to_string();
    let path = [id.as_str()];
    let rename = Harness::act(IAGO, ds::update_group, &path, &[("new_group_name", "Beginners")]);
    h.verify_action(HAMLET, &[], rename, &["default_stream_groups"]);
    let remove_channel = Harness::act(
        IAGO,
        ds::update_group_channels,
        &path,
        &[("op", "remove"), ("stream_names", "[\"Verona\"]")],
    );
    h.verify_action(HAMLET, &[], remove_channel, &["default_stream_groups"]);
    let add_channel = Harness::act(
        IAGO,
        ds::update_group_channels,
        &path,
        &[("op", "add"), ("stream_names", "[\"Verona\"]")],
    );
    h.verify_action(HAMLET, &[], add_channel, &["default_stream_groups"]);
    // Archiving the channel takes it out of the group.
    let channel = verona.to_string();
    let archive = Harness::act(IAGO, natter::api::streams::archive, &[channel.as_str()], &[]);
    h.verify_action(HAMLET, &[], archive, &["default_stream_groups", "stream"]);
    h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, ds::remove_group, &path, &[]),
        &["default_stream_groups"],
    );
}

/// A client that takes deletions as lists.
const BULK: &[(&str, &str)] = &[("client_capabilities", r#"{"bulk_message_deletion": true}"#)];

#[test]
fn deleting_a_topic() {
    let h = Harness::new();
    let general = h.app.state.channel_by_name(h.user(IAGO).realm, "general").unwrap().id.0;
    let channel = general.to_string();
    for n in 0..3 {
        let content = format!("note {n}");
        let params =
            [("type", "stream"), ("to", "general"), ("topic", "notes"), ("content", &content)];
        h.call(HAMLET, natter::api::messages::send, &params).unwrap();
    }
    // The newest message stays (register's max_message_id is not followed
    // by deletions on the client side).
    let params = [("type", "stream"), ("to", "general"), ("topic", "other"), ("content", "hi")];
    h.call(HAMLET, natter::api::messages::send, &params).unwrap();
    let delete = Harness::act(
        IAGO,
        natter::api::streams::delete_topic,
        &[channel.as_str()],
        &[("topic_name", "Notes")],
    );
    let events = h.verify_action(HAMLET, BULK, delete, &["delete_message"; 3]);
    assert_eq!(events[0]["topic"], "notes");
    // The channel's first message (the seed's welcome): the channel's
    // `first_message_id` changes.
    let delete = Harness::act(
        IAGO,
        natter::api::streams::delete_topic,
        &[channel.as_str()],
        &[("topic_name", "welcome")],
    );
    let events = h.verify_action(HAMLET, BULK, delete, &["stream", "delete_message"]);
    assert_eq!(events[0]["property"], "first_message_id");
}

#[test]
fn organization_settings() {
    let h = Harness::new();
    let rs = natter::api::realm_settings::update;
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, rs, &[], &[("name", "Elsinore"), ("description", "The **castle**")]),
        &["realm", "realm"],
    );
    assert_eq!(events[0]["property"], "name");
    let limits = [
        ("allow_message_editing", "false"),
        ("message_content_edit_limit_seconds", "\"unlimited\""),
        ("message_content_delete_limit_seconds", "3600"),
        ("move_messages_within_stream_limit_seconds", "\"unlimited\""),
        ("topics_policy", "disable_empty_topic"),
        ("allow_edit_history", "false"),
    ];
    h.verify_action(HAMLET, &[], Harness::act(IAGO, rs, &[], &limits), &["realm"; 5]);
    let moderators = h
        .app
        .state
        .realms
        .get(&h.user(IAGO).realm)
        .unwrap()
        .system_groups
        .id(natter::state::SystemGroup::Moderators);
    let setting = format!("{{\"new\": {}}}", moderators.0);
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, rs, &[], &[("can_delete_any_message_group", setting.as_str())]),
        &["realm"],
    );
    assert_eq!(events[0]["op"], "update_dict");
    h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, rs, &[], &[("enable_spectator_access", "false")]),
        &["realm"],
    );
    let owner = "desdemona@natter.test";
    h.verify_action(
        HAMLET,
        &[],
        Harness::act(owner, rs, &[], &[("message_retention_days", "30")]),
        &["realm"],
    );
}

#[test]
fn settings_for_new_users() {
    let h = Harness::new();
    let set = Harness::act(
        IAGO,
        natter::api::realm_settings::update_user_defaults,
        &[],
        &[
            ("twenty_four_hour_time", "true"),
            ("emojiset", "text"),
            ("starred_message_counts", "true"),
        ],
    );
    // `starred_message_counts` is already true: two changes.
    let events = h.verify_action(HAMLET, &[], set, &["realm_user_settings_defaults"; 2]);
    assert_eq!(events[0]["property"], "twenty_four_hour_time");
    let state = h.register(HAMLET, &[]);
    assert_eq!(state["realm_user_settings_defaults"]["emojiset"], "text");
    assert!(state["realm_user_settings_defaults"].get("default_language").is_none());
}

#[test]
fn email_domains() {
    let h = Harness::new();
    let d = natter::api::realm_domains::add;
    let add =
        Harness::act(IAGO, d, &[], &[("domain", "Elsinore.DK"), ("allow_subdomains", "true")]);
    let events = h.verify_action(HAMLET, &[], add, &["realm_domains"]);
    assert_eq!(events[0]["realm_domain"]["domain"], "elsinore.dk");
    let change = Harness::act(
        IAGO,
        natter::api::realm_domains::update,
        &["elsinore.dk"],
        &[("allow_subdomains", "false")],
    );
    h.verify_action(HAMLET, &[], change, &["realm_domains"]);
    let remove = Harness::act(IAGO, natter::api::realm_domains::remove, &["elsinore.dk"], &[]);
    h.verify_action(HAMLET, &[], remove, &["realm_domains"]);
}

#[test]
fn channel_folders() {
    let h = Harness::new();
    let cf = natter::api::channel_folders::create;
    let create = |name: &'static str| {
        Harness::act(IAGO, cf, &[], &[("name", name), ("description", "For **work**")])
    };
    let events = h.verify_action(HAMLET, &[], create("Frontend"), &["channel_folder"]);
    assert_eq!(events[0]["op"], "add");
    let front = events[0]["channel_folder"]["id"].to_string();
    let events = h.verify_action(HAMLET, &[], create("Backend"), &["channel_folder"]);
    let back = events[0]["channel_folder"]["id"].to_string();
    let update = natter::api::channel_folders::update;
    let path = [front.as_str()];
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, update, &path, &[("name", "Web"), ("description", "")]),
        &["channel_folder"],
    );
    assert_eq!(
        events[0]["data"],
        json!({"name": "Web", "description": "",
                                         "rendered_description": ""})
    );
    let order = format!("[{back},{front}]");
    let reorder = natter::api::channel_folders::reorder;
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, reorder, &[], &[("order", order.as_str())]),
        &["channel_folder"],
    );
    assert_eq!(events[0]["op"], "reorder");
    // A channel joins a folder, leaves it; the folder is archived.
    let id = verona(&h).to_string();
    let streams = natter::api::streams::update;
    let stream = [id.as_str()];
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, streams, &stream, &[("folder_id", front.as_str())]),
        &["stream"],
    );
    assert_eq!(events[0]["property"], "folder_id");
    h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, streams, &stream, &[("folder_id", "null")]),
        &["stream"],
    );
    h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, update, &path, &[("is_archived", "true")]),
        &["channel_folder"],
    );
    let state = h.register(HAMLET, &[]);
    assert_eq!(state["channel_folders"][1]["is_archived"], true);
    assert_eq!(state["max_channel_folder_name_length"], 60);
}

#[test]
fn channels_create() {
    let h = Harness::new();
    let folder = natter::api::channel_folders::create;
    h.call(IAGO, folder, &[("name", "Venice")]).unwrap();
    let folder_id = h.register(HAMLET, &[])["channel_folders"][0]["id"].to_string();
    let hamlet = h.user(HAMLET).id.0.to_string();
    let subscribers = format!("[{hamlet}]");
    let create = natter::api::subscriptions::create;
    let params = [
        ("name", "Rialto"),
        ("subscribers", subscribers.as_str()),
        ("folder_id", folder_id.as_str()),
        ("announce", "true"),
    ];
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, create, &[], &params),
        &["stream", "subscription", "message"],
    );
    assert_eq!(events[0]["streams"][0]["folder_id"].to_string(), folder_id);
    // A private one, without Hamlet: he hears nothing of it.
    let params = [("name", "Secret"), ("subscribers", "[]"), ("invite_only", "true")];
    h.verify_action(HAMLET, &[], Harness::act(IAGO, create, &[], &params), &[]);
}
