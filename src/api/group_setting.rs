//! Decoding group-setting values (Zulip's "group-setting value": a group
//! id, or `{direct_members, direct_subgroups}`) from request parameters,
//! checked against the caller's realm.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::state::{GroupId, GroupSetting, Realm, State, SystemGroup, UserId};

/// A group-setting value named `name`, checked: groups of the realm that
/// are not deactivated, active users of the realm. An anonymous value of
/// exactly one group and no users is that group, and an empty one is
/// `role:nobody`, as Zulip stores them.
pub fn parse(state: &State, realm: &Realm, name: &str, value: &Value) -> ApiResult<GroupSetting> {
    let group = |id: &Value| -> ApiResult<GroupId> {
        let id = id.as_u64().ok_or_else(|| ApiError::invalid(name, "not a group ID"))?;
        let g = state
            .groups
            .get(&GroupId(id))
            .filter(|g| g.realm == realm.id)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid user group ID: {id}")))?;
        if g.deactivated {
            return Err(ApiError::bad_request("User group is deactivated."));
        }
        if g.system == Some(SystemGroup::Internet) {
            return Err(ApiError::bad_request(format!(
                "'{}' setting cannot be set to 'role:internet' group.",
                name
            )));
        }
        Ok(g.id)
    };
    match value {
        Value::Number(_) => Ok(GroupSetting::Group(group(value)?)),
        Value::Object(map) => {
            let list = |key: &str| -> ApiResult<Vec<Value>> {
                match map.get(key) {
                    None => Ok(Vec::new()),
                    Some(Value::Array(items)) => Ok(items.clone()),
                    Some(_) => Err(ApiError::invalid(name, &format!("{key} is not a list"))),
                }
            };
            let mut members = BTreeSet::new();
            for item in list("direct_members")? {
                let id = item.as_u64().ok_or_else(|| ApiError::invalid(name, "not a user ID"))?;
                let user = state
                    .account_in_realm(realm.id, UserId(id))
                    .filter(|u| u.is_active)
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID: {id}")))?;
                members.insert(user.id);
            }
            let mut subgroups = BTreeSet::new();
            for item in list("direct_subgroups")? {
                subgroups.insert(group(&item)?);
            }
            if map.keys().any(|k| k != "direct_members" && k != "direct_subgroups") {
                return Err(ApiError::invalid(name, "unexpected key"));
            }
            Ok(match (members.len(), subgroups.len()) {
                (0, 0) => GroupSetting::Group(realm.system_groups.id(SystemGroup::Nobody)),
                (0, 1) => GroupSetting::Group(*subgroups.first().expect("one subgroup")),
                _ => {
                    GroupSetting::Anonymous { direct_members: members, direct_subgroups: subgroups }
                }
            })
        }
        _ => Err(ApiError::invalid(name, "not a group ID or {direct_members, direct_subgroups}")),
    }
}
