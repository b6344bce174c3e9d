//! A realm's organization settings as Zulip shows them: one table of
//! (property, value, kind) that register's `realm` section (as
//! `realm_<property>`) and `PATCH /realm`'s events (`realm` `update` /
//! `update_dict`) both read, so the two always agree.

use serde_json::{json, Value};

use super::groups::group_setting;
use crate::state::features::RealmFeatures;
use crate::state::{GroupSetting, Realm, SystemGroup};

/// How a property's change is announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    /// `{"type": "realm", "op": "update", "property", "value"}`.
    Update,
    /// A group setting: `{"type": "realm", "op": "update_dict", "property":
    /// "default", "data": {property: value}}`.
    UpdateDict,
}

/// Every organization setting `PATCH /realm` changes, with its value.
pub fn settings(realm: &Realm) -> Vec<(&'static str, Value, Announce)> {
    use Announce::{Update, UpdateDict};
    let s = &realm.settings;
    let group = |value, default| group_setting(&realm.group_setting(value, default));
    vec![
        ("name", json!(realm.name), Update),
        ("description", json!(realm.description), Update),
        ("allow_message_editing", json!(s.allow_message_editing), Update),
        // An integer, never null: zulip-term compares it with `> 0`.
        ("message_content_edit_limit_seconds", json!(s.message_content_edit_limit_seconds), Update),
        ("allow_edit_history", json!(s.allow_edit_history), Update),
        ("message_retention_days", json!(s.message_retention_days.unwrap_or(-1)), Update),
        (
            "message_content_delete_limit_seconds",
            json!(s.message_content_delete_limit_seconds),
            Update,
        ),
        (
            "move_messages_within_stream_limit_seconds",
            json!(s.move_messages_within_stream_limit_seconds),
            Update,
        ),
        (
            "move_messages_between_streams_limit_seconds",
            json!(s.move_messages_between_streams_limit_seconds),
            Update,
        ),
        ("topics_policy", json!(s.topics_policy.as_str()), Update),
        ("enable_spectator_access", json!(s.enable_spectator_access), Update),
        (
            "can_mention_many_users_group",
            group(&s.can_mention_many_users_group, SystemGroup::Administrators),
            UpdateDict,
        ),
        (
            "direct_message_permission_group",
            group(&s.direct_message_permission_group, SystemGroup::Everyone),
            UpdateDict,
        ),
        (
            "can_delete_any_message_group",
            group(&s.can_delete_any_message_group, SystemGroup::Administrators),
            UpdateDict,
        ),
        (
            "can_delete_own_message_group",
            group(&s.can_delete_own_message_group, SystemGroup::Everyone),
            UpdateDict,
        ),
        (
            "can_move_messages_between_topics_group",
            group(&s.can_move_messages_between_topics_group, SystemGroup::Members),
            UpdateDict,
        ),
        (
            "can_move_messages_between_channels_group",
            group(&s.can_move_messages_between_channels_group, SystemGroup::Members),
            UpdateDict,
        ),
        (
            "can_create_public_channel_group",
            group(&s.can_create_public_channel_group, SystemGroup::Members),
            UpdateDict,
        ),
        (
            "can_create_private_channel_group",
            group(&s.can_create_private_channel_group, SystemGroup::Members),
            UpdateDict,
        ),
        (
            "can_create_web_public_channel_group",
            group(&s.can_create_web_public_channel_group, SystemGroup::Moderators),
            UpdateDict,
        ),
    ]
}

/// The events that take a client from `before` to `after`, in the
/// table's order.
pub fn changes(before: &Realm, after: &Realm) -> Vec<Value> {
    settings(before)
        .into_iter()
        .zip(settings(after))
        .filter(|((_, old, _), (_, new, _))| old != new)
        .flat_map(|(_, (property, value, how))| {
            let mut events = vec![announce(property, value, how)];
            // Zulip still announces the deprecated policy this group
            // setting replaced, for clients that read only that.
            if property == "can_mention_many_users_group" {
                events.push(json!({ "type": "realm", "op": "update",
                                    "property": "wildcard_mention_policy",
                                    "value": wildcard_mention_policy(after) }));
            }
            events
        })
        .collect()
}

/// The `realm` event announcing that `property` is now `value`.
pub fn announce(property: &str, value: Value, how: Announce) -> Value {
    match how {
        Announce::Update => {
            json!({ "type": "realm", "op": "update", "property": property, "value": value })
        }
        Announce::UpdateDict => json!({ "type": "realm", "op": "update_dict",
                                        "property": "default", "data": { property: value } }),
    }
}
/// Zulip's deprecated `wildcard_mention_policy` value for the realm's
/// `can_mention_many_users_group`: 1 everyone, 2 members, 3 full members,
/// 5 administrators, 6 nobody, 7 moderators. Owners and groups the old
/// policy cannot name read as administrators (5), the nearest it has.
pub fn wildcard_mention_policy(realm: &Realm) -> u8 {
    let setting = realm
        .group_setting(&realm.settings.can_mention_many_users_group, SystemGroup::Administrators);
    let GroupSetting::Group(group) = setting else { return 5 };
    let kind = SystemGroup::ALL.into_iter().find(|kind| realm.system_groups.id(*kind) == group);
    match kind {
        Some(SystemGroup::Everyone | SystemGroup::Internet) => 1,
        Some(SystemGroup::Members) => 2,
        Some(SystemGroup::FullMembers) => 3,
        Some(SystemGroup::Nobody) => 6,
        Some(SystemGroup::Moderators) => 7,
        _ => 5,
    }
}

/// `moderation_request_channel_id` as Zulip shows it: -1 when unset.
pub fn moderation_channel_value(features: &RealmFeatures) -> Value {
    json!(features.moderation_request_channel.map_or(-1, |c| c.0 as i64))
}
