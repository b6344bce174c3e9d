//! Register-vs-events cases for the organization switches of Zulip's
//! later feature levels, for reminders and for widgets' submessages
//! (`verify_action.rs`'s harness). `apply_event` here is the client-side
//! rule for `reminders` events (a `submessage` event changes a message,
//! which register does not hold: `fold_submessage` is its rule for a
//! fetched message); `realm` updates are folded by
//! `verify_organization.rs`.

use serde_json::Value;

use natter::api::realm_settings;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";
const OTHELLO: &str = "othello@natter.test";

/// Whether this file folds `event` into the state.
pub fn handles(event: &Value) -> bool {
    event["type"] == "reminders" || event["type"] == "submessage"
}

/// Folds a `submessage` event into a fetched message, as a client does.
fn fold_submessage(message: &mut Value, event: &Value) {
    assert_eq!(message["id"], event["message_id"]);
    message["submessages"].as_array_mut().unwrap().push(serde_json::json!({
        "id": event["submessage_id"],
        "message_id": event["message_id"],
        "sender_id": event["sender_id"],
        "msg_type": event["msg_type"],
        "content": event["content"],
    }));
}

/// Folds a `reminders` event into a fetched state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value) {
    if event["type"] == "submessage" {
        return;
    }
    let Some(list) = state.get_mut("reminders").and_then(Value::as_array_mut) else { return };
    match event["op"].as_str().unwrap() {
        "add" => {
            list.extend(event["reminders"].as_array().unwrap().iter().cloned());
            list.sort_by_key(|r| {
                (r["scheduled_delivery_timestamp"].as_i64(), r["reminder_id"].as_u64())
            });
        }
        "remove" => list.retain(|r| r["reminder_id"] != event["reminder_id"]),
        other => panic!("reminders {other}"),
    }
}

#[test]
fn read_receipts_and_moderation_channel_settings() {
    let h = Harness::new();
    let off = Harness::act(IAGO, realm_settings::update, &[], &[("enable_read_receipts", "false")]);
    let events = h.verify_action(HAMLET, &[], off, &["realm"]);
    assert_eq!(events[0]["property"], "enable_read_receipts");
    let core = h.app.state.channel_by_name(h.user(IAGO).realm, "core team").unwrap().id.0;
    let both =
        [("enable_read_receipts", "true"), ("moderation_request_channel_id", &*core.to_string())]
            .map(|(k, v)| (k, v.to_owned()));
    let params: Vec<(&str, &str)> = both.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(IAGO, realm_settings::update, &[], &params),
        &["realm", "realm"],
    );
    assert_eq!(events[1]["value"], core);
}

#[test]
fn the_group_setting_for_wildcard_mentions_also_announces_the_old_policy() {
    let h = Harness::new();
    let realm = h.app.state.realms.get(&h.user(IAGO).realm).unwrap();
    let members = realm.system_groups.id(natter::state::SystemGroup::Members);
    let setting = format!("{{\"new\": {}}}", members.0);
    let events = h.verify_action(
        HAMLET,
        &[],
        Harness::act(
            IAGO,
            realm_settings::update,
            &[],
            &[("can_mention_many_users_group", setting.as_str())],
        ),
        &["realm", "realm"],
    );
    assert_eq!(events[0]["op"], "update_dict");
    assert_eq!(events[1]["property"], "wildcard_mention_policy");
    assert_eq!(events[1]["value"], 2);
}

#[test]
fn reminders_added_deleted_and_delivered() {
    let h = Harness::new();
    let denmark = [("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "later")];
    let sent = h.call(IAGO, natter::api::messages::send, &denmark).unwrap()["id"].clone();
    let sent = sent.to_string();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let at = (now.as_secs() + 3600).to_string();
    let params = [("message_id", sent.as_str()), ("scheduled_delivery_timestamp", at.as_str())];
    let create = Harness::act(HAMLET, natter::api::reminders::create, &[], &params);
    let events = h.verify_action(HAMLET, &[], create, &["reminders"]);
    let id = events[0]["reminders"][0]["reminder_id"].as_u64().unwrap();
    let delete = Harness::act(HAMLET, natter::api::reminders::delete, &[&id.to_string()], &[]);
    h.verify_action(HAMLET, &[], delete, &["reminders"]);
    let create = Harness::act(HAMLET, natter::api::reminders::create, &[], &params);
    let events = h.verify_action(HAMLET, &[], create, &["reminders"]);
    let id = events[0]["reminders"][0]["reminder_id"].as_u64().unwrap();
    let due = at.parse::<i64>().unwrap();
    let deliver = move |h: &Harness| assert!(natter::api::reminders::deliver(&h.app, id, due));
    let events = h.verify_action(HAMLET, &[], deliver, &["message", "reminders"]);
    assert_eq!(events[0]["message"]["sender_email"], "notification-bot@zulip.com");
    // Delivered once: the reminder is gone.
    assert!(!natter::api::reminders::deliver(&h.app, id, due));
    // Other users hear nothing of a reminder.
    let create = Harness::act(HAMLET, natter::api::reminders::create, &[], &params);
    h.verify_action(IAGO, &[], create, &[]);
}

#[test]
fn a_report_is_a_message_to_the_moderators() {
    let h = Harness::new();
    let core = h.app.state.channel_by_name(h.user(IAGO).realm, "core team").unwrap().id.0;
    let core = core.to_string();
    let set = [("moderation_request_channel_id", core.as_str())];
    h.call(IAGO, realm_settings::update, &set).unwrap();
    let denmark = [("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "rude")];
    let sent = h.call(IAGO, natter::api::messages::send, &denmark).unwrap()["id"].to_string();
    let report = [("report_type", "harassment")];
    let act = Harness::act(OTHELLO, natter::api::reports::report, &[&sent], &report);
    let events = h.verify_action(HAMLET, &[], act, &["message"]);
    assert_eq!(events[0]["message"]["subject"], "Iago moderation");
    // Othello, the reporter, is not a moderator: he hears nothing.
    let act = Harness::act(OTHELLO, natter::api::reports::report, &[&sent], &report);
    h.verify_action(OTHELLO, &[], act, &[]);
}

#[test]
fn hiding_presence_makes_a_user_offline_to_others() {
    let h = Harness::new();
    let active = [("status", "active")];
    h.call(OTHELLO, natter::api::presence::update_presence, &active).unwrap();
    let settings = natter::api::settings::update;
    let hide = Harness::act(OTHELLO, settings, &[], &[("presence_enabled", "false")]);
    let events = h.verify_action(HAMLET, &[], hide, &["presence"]);
    let status = &events[0]["presence"]["website"];
    assert_eq!(status["status"], "active");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let offline = natter::events::presence::OFFLINE_THRESHOLD_SECS;
    assert!(status["timestamp"].as_i64().unwrap() < now.as_secs() as i64 - offline);
    // Reports while hidden reach nobody; showing it again makes them active.
    let report = Harness::act(OTHELLO, natter::api::presence::update_presence, &[], &active);
    h.verify_action(HAMLET, &[], report, &[]);
    let slim = [
        ("slim_presence", "true"),
        ("client_capabilities", r#"{"simplified_presence_events": true}"#),
    ];
    let show = Harness::act(OTHELLO, settings, &[], &[("presence_enabled", "true")]);
    h.verify_action(HAMLET, &slim, show, &["presence"]);
}

/// One message as `email` fetches it.
fn fetch_message(h: &Harness, email: &str, id: &str) -> Value {
    let params = [("anchor", id), ("num_before", "0"), ("num_after", "0")];
    let reply = h.call(email, natter::api::reading::get_messages, &params).unwrap();
    reply["messages"][0].clone()
}

#[test]
fn a_poll_is_a_widget_and_its_votes_reach_every_reader() {
    let h = Harness::new();
    let poll = [("type", "stream"), ("to", "Denmark"), ("topic", "lunch")];
    let poll = [&poll[..], &[("content", "/poll Lunch?\n- Pizza\n- Soup")]].concat();
    let send = Harness::act(IAGO, natter::api::messages::send, &[], &poll);
    let events = h.verify_action(HAMLET, &[], send, &["message"]);
    let message = &events[0]["message"];
    let first = &message["submessages"][0];
    assert_eq!(message["submessages"].as_array().unwrap().len(), 1);
    assert_eq!(first["sender_id"], h.user(IAGO).id.0);
    assert_eq!(first["msg_type"], "widget");
    let widget: Value = serde_json::from_str(first["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        widget,
        serde_json::json!({"widget_type": "poll",
            "extra_data": {"question": "Lunch?", "options": ["Pizza", "Soup"]}})
    );
    let id = message["id"].to_string();

    let mut before = fetch_message(&h, HAMLET, &id);
    assert_eq!(before["submessages"], message["submessages"]);
    let vote = r#"{"type":"vote","key":"canned,0","vote":1}"#;
    let params = [("message_id", id.as_str()), ("msg_type", "widget"), ("content", vote)];
    let act = Harness::act(HAMLET, natter::api::submessages::add, &[], &params);
    let events = h.verify_action(HAMLET, &[], act, &["submessage"]);
    assert_eq!(events[0]["content"], vote);
    assert_eq!(events[0]["sender_id"], h.user(HAMLET).id.0);
    fold_submessage(&mut before, &events[0]);
    assert_eq!(before, fetch_message(&h, HAMLET, &id));
    // The poll's author hears of it too.
    let act = Harness::act(HAMLET, natter::api::submessages::add, &[], &params);
    h.verify_action(IAGO, &[], act, &["submessage"]);
}
