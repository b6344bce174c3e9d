//! User groups as Zulip shows them.

use serde_json::{json, Value};

use crate::state::access::role_in_system_group;
use crate::state::{Group, GroupSetting, State, User};

/// A user group as Zulip's `realm_user_groups` entries and `user_group`
/// events show it.
pub fn group_json(state: &State, group: &Group) -> Value {
    group_json_among(group, &state.realm_users(group.realm))
}

/// `group_json` with a system group's members taken from `users`, the
/// realm's accounts (register reads them from its cut of the realm).
pub fn group_json_among(group: &Group, users: &[User]) -> Value {
    let members: Vec<u64> = match group.system {
        Some(system) => users
            .iter()
            .filter(|u| u.is_active && role_in_system_group(u.role, system))
            .map(|u| u.id.0)
            .collect(),
        None => group.direct_members.iter().map(|u| u.0).collect(),
    };
    json!({
        "id": group.id.0,
        "name": group.name,
        "description": group.description,
        "members": members,
        "direct_subgroup_ids": group.direct_subgroups.iter().map(|g| g.0).collect::<Vec<_>>(),
        "is_system_group": group.system.is_some(),
        "date_created": group.date_created,
        "creator_id": group.creator.map(|u| u.0),
        "deactivated": group.deactivated,
    })
}

/// A group-setting value: a group id, or `{direct_members, direct_subgroups}`.
pub fn group_setting(setting: &GroupSetting) -> Value {
    match setting {
        GroupSetting::Group(id) => json!(id.0),
        GroupSetting::Anonymous { direct_members, direct_subgroups } => json!({
            "direct_members": direct_members.iter().map(|u| u.0).collect::<Vec<_>>(),
            "direct_subgroups": direct_subgroups.iter().map(|g| g.0).collect::<Vec<_>>(),
        }),
    }
}
