//! User groups: `GET /user_groups`, `POST /user_groups/create`,
//! `PATCH /user_groups/{id}`, `POST /user_groups/{id}/members`,
//! `POST /user_groups/{id}/subgroups`, `GET /user_groups/{id}/members`,
//! `GET /user_groups/{id}/subgroups`, `POST /user_groups/{id}/deactivate`.
//!
//! System groups (`role:*`) follow roles and are never edited. A group is
//! managed by organization administrators and its creator (natter has no
//! per-group `can_manage_group` setting yet). Subgroup cycles are refused.

use std::collections::{BTreeSet, VecDeque};

use serde_json::Value;

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::{GroupChange, Mutation};
use crate::reply;
use crate::state::access::role_in_system_group;
use crate::state::{Group, GroupId, GroupSetting, IdKind, Role, State, User, UserId};
use crate::view::groups::group_json;

/// Longest group name.
const MAX_NAME: usize = 100;
/// Longest group description.
const MAX_DESCRIPTION: usize = 1024;

fn check_name(s: &State, me: &User, name: &str, except: Option<GroupId>) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("User group name cannot be empty."));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::bad_request(format!(
            "User group name cannot exceed {MAX_NAME} characters."
        )));
    }
    if name.starts_with("role:") {
        return Err(ApiError::bad_request("User group name cannot start with 'role:'."));
    }
    let taken = s
        .groups
        .collect_sorted(|id, g| {
            g.realm == me.realm && Some(*id) != except && g.name.eq_ignore_ascii_case(name)
        })
        .into_iter()
        .next()
        .is_some();
    if taken {
        return Err(ApiError::bad_request(format!("User group '{name}' already exists.")));
    }
    Ok(name.to_owned())
}

fn check_description(d: &str) -> ApiResult<String> {
    if d.chars().count() > MAX_DESCRIPTION {
        return Err(ApiError::bad_request("User group description is too long."));
    }
    Ok(d.trim().to_owned())
}

fn id_list(call: &mut Call, name: &str) -> ApiResult<Vec<u64>> {
    match call.params.json(name)? {
        None => Ok(Vec::new()),
        Some(v) => v
            .as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect())
            .ok_or_else(|| ApiError::invalid(name, "not a list of IDs")),
    }
}

/// Active users of the caller's realm by id.
fn users(s: &State, me: &User, ids: &[u64]) -> ApiResult<Vec<UserId>> {
    ids.iter()
        .map(|id| {
            s.account_in_realm(me.realm, UserId(*id))
                .filter(|u| u.is_active)
                .map(|u| u.id)
                .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID: {id}")))
        })
        .collect()
}

/// Groups of the caller's realm by id, not deactivated.
fn groups(s: &State, me: &User, ids: &[u64]) -> ApiResult<Vec<GroupId>> {
    ids.iter()
        .map(|id| {
            let g = s
                .groups
                .get(&GroupId(*id))
                .filter(|g| g.realm == me.realm)
                .ok_or_else(|| ApiError::bad_request(format!("Invalid user group ID: {id}")))?;
            if g.deactivated {
                return Err(ApiError::bad_request("User group is deactivated."));
            }
            Ok(g.id)
        })
        .collect()
}

/// A group of the caller's realm by path id.
fn group_by_path(app: &App, call: &Call) -> ApiResult<Group> {
    let id = call.path_id(0, "user_group_id")?;
    app.state
        .groups
        .get(&GroupId(id))
        .filter(|g| g.realm == call.caller().realm)
        .ok_or_else(|| ApiError::bad_request("Invalid user group"))
}

/// The group as the caller may change it: not a system group, and the
/// caller an administrator or its creator.
fn managed(s: &State, me: &User, id: GroupId) -> ApiResult<Group> {
    let g = s
        .groups
        .get(&id)
        .filter(|g| g.realm == me.realm)
        .ok_or_else(|| ApiError::bad_request("Invalid user group"))?;
    if g.system.is_some() {
        return Err(ApiError::bad_request(
            "Insufficient permission: system groups cannot be edited",
        ));
    }
    if !(me.role.is_admin() || (g.creator == Some(me.id) && me.role != Role::Guest)) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    Ok(g)
}

/// `GET /user_groups`: the realm's groups, system groups included
/// (deactivated ones with `include_deactivated_groups`).
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let with_deactivated = call.params.bool_or("include_deactivated_groups", false)?;
    let me = call.caller();
    let list: Vec<Value> = app
        .state
        .groups
        .collect_sorted(|_, g| g.realm == me.realm && (with_deactivated || !g.deactivated))
        .into_iter()
        .map(|(_, g)| group_json(&app.state, &g))
        .collect();
    Ok(reply! { "user_groups" => list })
}

/// `POST /user_groups/create`: `name`, `description`, `members`, `subgroups`.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    if me.role == Role::Guest {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let name = call.params.required_string("name")?;
    let description = check_description(&call.params.string("description").unwrap_or_default())?;
    let members = id_list(call, "members")?;
    let subgroups = id_list(call, "subgroups")?;
    let now = entropy::now();
    let id = app.committer.commit(|s| {
        let name = check_name(s, &me, &name, None)?;
        let group = Group {
            id: GroupId(s.ids.peek(IdKind::Group)),
            realm: me.realm,
            name,
            description,
            system: None,
            direct_members: users(s, &me, &members)?.into_iter().collect(),
            direct_subgroups: groups(s, &me, &subgroups)?.into_iter().collect(),
            deactivated: false,
            date_created: Some(now),
            creator: Some(me.id),
        };
        let id = group.id;
        Ok((Mutation::CreateGroup(group), id))
    })?;
    Ok(reply! { "group_id" => id.0 })
}

/// `PATCH /user_groups/{id}`: `name`, `description`.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = group_by_path(app, call)?.id;
    let me = call.caller().clone();
    let name = call.params.string("name");
    let description =
        call.params.string("description").map(|d| check_description(&d)).transpose()?;
    if name.is_none() && description.is_none() {
        return Err(ApiError::bad_request("No new data supplied"));
    }
    app.committer.commit(|s| {
        let g = managed(s, &me, id)?;
        let name = name.as_deref().map(|n| check_name(s, &me, n, Some(g.id))).transpose()?;
        Ok((
            Mutation::UpdateGroup { group: id, change: GroupChange::Info { name, description } },
            (),
        ))
    })?;
    Ok(Reply::new())
}

/// The `add` and `delete` id lists of a membership or subgroup change; at
/// least one must name something.
fn add_and_delete(call: &mut Call) -> ApiResult<(Vec<u64>, Vec<u64>)> {
    let add = id_list(call, "add")?;
    let delete = id_list(call, "delete")?;
    if add.is_empty() && delete.is_empty() {
        return Err(ApiError::bad_request(
            "Nothing to do. Specify at least one of 'add' or 'delete'.",
        ));
    }
    Ok((add, delete))
}

/// `POST /user_groups/{id}/members`: `add`, `delete` (user ids).
pub fn update_members(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = group_by_path(app, call)?.id;
    let me = call.caller().clone();
    let (add, delete) = add_and_delete(call)?;
    app.committer.commit(|s| {
        let g = managed(s, &me, id)?;
        let add = users(s, &me, &add)?;
        if let Some(u) = add.iter().find(|u| g.direct_members.contains(u)) {
            return Err(ApiError::bad_request(format!(
                "User {u} is already a member of this group"
            )));
        }
        let remove: Vec<UserId> = delete.iter().map(|u| UserId(*u)).collect();
        if let Some(u) = remove.iter().find(|u| !g.direct_members.contains(u)) {
            return Err(ApiError::bad_request(format!(
                "There is no member '{u}' in this user group"
            )));
        }
        let change = GroupChange::Members { add, remove };
        Ok((Mutation::UpdateGroup { group: id, change }, ()))
    })?;
    Ok(Reply::new())
}

/// Every group reachable from `start` through subgroups (`start` included).
fn reachable(s: &State, start: GroupId) -> BTreeSet<GroupId> {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([start]);
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(g) = s.groups.get(&id) {
            queue.extend(g.direct_subgroups.iter().copied());
        }
    }
    seen
}

/// `POST /user_groups/{id}/subgroups`: `add`, `delete` (group ids); a
/// change that would make a cycle is refused.
pub fn update_subgroups(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = group_by_path(app, call)?.id;
    let me = call.caller().clone();
    let (add, delete) = add_and_delete(call)?;
    app.committer.commit(|s| {
        let g = managed(s, &me, id)?;
        let add = groups(s, &me, &add)?;
        for sub in &add {
            if g.direct_subgroups.contains(sub) {
                return Err(ApiError::bad_request(format!("User group {sub} is already a subgroup of this group.")));
            }
            if reachable(s, *sub).contains(&id) {
                return Err(ApiError::bad_request(format!(
                    "User group {sub} is already a supergroup of this group; adding it would make a cycle."
                )));
            }
        }
        let remove: Vec<GroupId> = delete.iter().map(|g| GroupId(*g)).collect();
        if let Some(sub) = remove.iter().find(|sub| !g.direct_subgroups.contains(sub)) {
            return Err(ApiError::bad_request(format!("User group {sub} is not a subgroup of this group.")));
        }
        let change = GroupChange::Subgroups { add, remove };
        Ok((Mutation::UpdateGroup { group: id, change }, ()))
    })?;
    Ok(Reply::new())
}

/// Members of `group`: direct ones, or (recursively) through subgroups;
/// system groups' members follow roles.
fn members_of(s: &State, group: &Group, direct_only: bool) -> BTreeSet<UserId> {
    let ids = if direct_only { BTreeSet::from([group.id]) } else { reachable(s, group.id) };
    let mut out = BTreeSet::new();
    let realm_users = s.realm_users(group.realm);
    for id in ids {
        let Some(g) = s.groups.get(&id).filter(|g| g.realm == group.realm) else { continue };
        match g.system {
            Some(kind) => out.extend(
                realm_users
                    .iter()
                    .filter(|u| u.is_active && role_in_system_group(u.role, kind))
                    .map(|u| u.id),
            ),
            None => out.extend(g.direct_members.iter().copied()),
        }
    }
    out
}

/// `GET /user_groups/{id}/members`: `direct_member_only` (default false).
pub fn get_members(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let group = group_by_path(app, call)?;
    let direct = call.params.bool_or("direct_member_only", false)?;
    let ids: Vec<u64> = members_of(&app.state, &group, direct).into_iter().map(|u| u.0).collect();
    Ok(reply! { "members" => ids })
}

/// `GET /user_groups/{id}/members/{user_id}`: whether a user is in the
/// group (through subgroups too, unless `direct_member_only`). The user
/// must be an active human of the caller's realm, as Zulip requires.
pub fn is_member(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let group = group_by_path(app, call)?;
    let user = UserId(call.path_id(1, "user_id")?);
    let direct = call.params.bool_or("direct_member_only", false)?;
    let target = app
        .state
        .user_in_realm(call.caller().realm, user)
        .filter(|u| !u.is_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !target.is_active {
        return Err(ApiError::bad_request("User is deactivated"));
    }
    let member = members_of(&app.state, &group, direct).contains(&target.id);
    Ok(reply! { "is_user_group_member" => member })
}

/// `GET /user_groups/{id}/subgroups`: `direct_subgroup_only` (default false).
pub fn get_subgroups(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let group = group_by_path(app, call)?;
    let direct = call.params.bool_or("direct_subgroup_only", false)?;
    let ids: Vec<u64> = if direct {
        group.direct_subgroups.iter().map(|g| g.0).collect()
    } else {
        reachable(&app.state, group.id)
            .into_iter()
            .filter(|g| *g != group.id)
            .map(|g| g.0)
            .collect()
    };
    Ok(reply! { "subgroups" => ids })
}

/// Whether a group-setting value names `group`.
fn setting_uses(setting: &GroupSetting, group: GroupId) -> bool {
    match setting {
        GroupSetting::Group(id) => *id == group,
        GroupSetting::Anonymous { direct_subgroups, .. } => direct_subgroups.contains(&group),
    }
}

/// `POST /user_groups/{id}/deactivate`: refused while a channel permission
/// or an active group uses it.
pub fn deactivate(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = group_by_path(app, call)?.id;
    let me = call.caller().clone();
    app.committer.commit(|s| {
        let g = managed(s, &me, id)?;
        if g.deactivated {
            return Err(ApiError::bad_request("User group is already deactivated."));
        }
        let in_setting =
            s.channels.collect_sorted(|_, c| c.realm == me.realm).into_iter().any(|(_, c)| {
                let p = &c.permissions;
                [
                    &p.can_send_message,
                    &p.can_add_subscribers,
                    &p.can_remove_subscribers,
                    &p.can_administer_channel,
                    &p.can_delete_any_message,
                    &p.can_delete_own_message,
                    &p.can_move_messages_out_of_channel,
                ]
                .into_iter()
                .any(|setting| setting_uses(setting, id))
            });
        let as_subgroup = s
            .groups
            .collect_sorted(|_, other| {
                other.realm == me.realm
                    && !other.deactivated
                    && other.direct_subgroups.contains(&id)
            })
            .into_iter()
            .next()
            .is_some();
        if in_setting || as_subgroup {
            return Err(ApiError::bad_request("Cannot deactivate user group in use."));
        }
        Ok((Mutation::UpdateGroup { group: id, change: GroupChange::Deactivate }, ()))
    })?;
    Ok(Reply::new())
}
