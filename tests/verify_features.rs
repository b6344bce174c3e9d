//! Register-vs-events cases for the organization switches of Zulip's
//! later feature levels and for reminders (`verify_action.rs`'s harness).
//! `apply_event` here is the client-side rule for `reminders` events;
//! `realm` updates are folded by `verify_organization.rs`.

use serde_json::Value;

use natter::api::realm_settings;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

/// Whether this file folds `event` into the state.
pub fn handles(event: &Value) -> bool {
    event["type"] == "reminders"
}

/// Folds a `reminders` event into a fetched state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value) {
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
