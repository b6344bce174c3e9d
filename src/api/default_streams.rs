//! Default channels and default channel groups, for administrators:
//! `POST /default_streams`, `DELETE /default_streams`,
//! `POST /default_stream_groups/create`,
//! `PATCH /default_stream_groups/{group_id}`,
//! `PATCH /default_stream_groups/{group_id}/streams` and
//! `DELETE /default_stream_groups/{group_id}`, with register's
//! `realm_default_stream_groups`.
//!
//! A default channel is a channel flag (`ChannelChange::Default`, the
//! `default_streams` event); a group is the realm's organization data
//! (`OrgChange`, the `default_stream_groups` event). Every member sees
//! both lists, so only public channels may be in either; a channel that
//! is archived or made private leaves the groups (`apply`).

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::{ChannelChange, Mutation};
use crate::state::access::can_see_channel;
use crate::state::organization::{DefaultStreamGroup, OrgChange, OrgIdKind};
use crate::state::{Channel, ChannelId, RealmId, State, User};
use crate::view::organization::stream_groups_json;

/// Longest default channel group name, in characters (Zulip's).
pub const MAX_GROUP_NAME_LENGTH: usize = 60;
/// Longest group description, in characters (Zulip's).
pub const MAX_GROUP_DESCRIPTION_LENGTH: usize = 1024;

/// Register's `default_stream_groups` section.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("default_stream_groups") {
        out.insert(
            "realm_default_stream_groups".into(),
            stream_groups_json(&app.state, user.realm),
        );
    }
}

fn require_admin(call: &Call) -> ApiResult<()> {
    if call.caller().role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// The channel a `stream_id` parameter names, as the caller may see it.
fn channel_param(app: &App, call: &mut Call) -> ApiResult<Channel> {
    let id = call.params.int("stream_id")?.ok_or_else(|| ApiError::missing("stream_id"))?;
    let id = u64::try_from(id).map_err(|_| ApiError::bad_request("Invalid channel ID"))?;
    app.state
        .channel_in_realm(call.realm.id, ChannelId(id))
        .filter(|c| can_see_channel(call.caller(), c))
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))
}

/// `POST /default_streams`: `stream_id` becomes a default channel.
pub fn add_default(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = channel_param(app, call)?.id;
    require_admin(call)?;
    set_default(app, id, true)
}

/// `DELETE /default_streams`: `stream_id` stops being a default channel.
pub fn remove_default(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = channel_param(app, call)?.id;
    require_admin(call)?;
    set_default(app, id, false)
}

fn set_default(app: &App, id: ChannelId, on: bool) -> ApiResult<Reply> {
    let check = |s: &State| -> ApiResult<bool> {
        let channel = s.channels.get(&id).ok_or_else(|| ApiError::no_channel_id(id.0))?;
        if on && channel.invite_only {
            return Err(ApiError::bad_request("Private channels cannot be made default."));
        }
        if on && channel.is_archived {
            return Err(ApiError::bad_request("Archived channels cannot be made default."));
        }
        Ok(channel.is_default != on)
    };
    // Nothing to change: nothing logged.
    if !check(&app.state)? {
        return Ok(Reply::new());
    }
    app.committer.commit(|s| {
        let changes = if check(s)? { vec![ChannelChange::Default(on)] } else { Vec::new() };
        Ok((Mutation::UpdateChannel { channel: id, changes }, ()))
    })?;
    Ok(Reply::new())
}

/// A group name, checked.
fn check_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Invalid default channel group name ''"));
    }
    if name.chars().count() > MAX_GROUP_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Default channel group name too long (limit: {MAX_GROUP_NAME_LENGTH} characters)"
        )));
    }
    if name.contains('\0') {
        return Err(ApiError::bad_request(format!(
            "Default channel group name '{name}' contains NULL (0x00) characters."
        )));
    }
    Ok(name.to_owned())
}

fn check_description(description: &str) -> ApiResult<String> {
    if description.chars().count() > MAX_GROUP_DESCRIPTION_LENGTH {
        return Err(ApiError::invalid("description", "too long"));
    }
    Ok(description.to_owned())
}

/// The `stream_names` parameter: channel names of the realm the caller
/// may see (else "Invalid channel name").
fn channel_names(app: &App, call: &mut Call) -> ApiResult<Vec<ChannelId>> {
    let raw = call.params.json("stream_names")?.ok_or_else(|| ApiError::missing("stream_names"))?;
    let names: Vec<String> = raw
        .as_array()
        .and_then(|l| l.iter().map(|n| n.as_str().map(str::to_owned)).collect())
        .ok_or_else(|| ApiError::invalid("stream_names", "not a list of channel names"))?;
    let me = call.caller();
    names
        .iter()
        .map(|name| {
            app.state
                .channel_by_name(me.realm, name.trim())
                .filter(|c| can_see_channel(me, c))
                .map(|c| c.id)
                .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
        })
        .collect()
}

/// The realm's group `id`, or Zulip's error.
fn group(state: &State, realm: RealmId, id: u64) -> ApiResult<DefaultStreamGroup> {
    state.organization.of(realm).stream_groups.into_iter().find(|g| g.id == id).ok_or_else(|| {
        ApiError::bad_request(format!("Default channel group with id '{id}' does not exist."))
    })
}

fn name_taken(state: &State, realm: RealmId, name: &str) -> ApiResult<()> {
    let groups = state.organization.of(realm).stream_groups;
    if groups.iter().any(|g| g.name.to_lowercase() == name.to_lowercase()) {
        return Err(ApiError::bad_request(format!(
            "Default channel group '{name}' already exists"
        )));
    }
    Ok(())
}

/// Channels that may join `group`: public, active, not default channels,
/// not in it already.
fn check_additions(
    state: &State,
    group: &DefaultStreamGroup,
    adding: &[ChannelId],
) -> ApiResult<()> {
    for (i, id) in adding.iter().enumerate() {
        let channel = state.channels.get(id).ok_or_else(|| ApiError::no_channel_id(id.0))?;
        if group.channels.contains(id) || adding[..i].contains(id) {
            return Err(ApiError::bad_request(format!(
                "Channel '{}' is already present in default channel group '{}'",
                channel.name, group.name
            )));
        }
        if channel.is_default {
            return Err(ApiError::bad_request(format!(
                "'{}' is a default channel and cannot be added to '{}'",
                channel.name, group.name
            )));
        }
        if channel.invite_only || channel.is_archived {
            return Err(ApiError::bad_request(format!(
                "Only active public channels can be added to default channel groups: '{}'",
                channel.name
            )));
        }
    }
    Ok(())
}

/// `POST /default_stream_groups/create`: `group_name`, `description`,
/// `stream_names`.
pub fn create_group(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = check_name(&call.params.required_string("group_name")?)?;
    let description = check_description(&call.params.required_string("description")?)?;
    let channels = channel_names(app, call)?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        name_taken(s, realm, &name)?;
        let id = s.organization.peek_id(OrgIdKind::StreamGroup);
        let empty = DefaultStreamGroup {
            id,
            name: name.clone(),
            description: description.clone(),
            channels: Vec::new(),
        };
        check_additions(s, &empty, &channels)?;
        let group = DefaultStreamGroup { channels: channels.clone(), ..empty };
        Ok((Mutation::organization(OrgChange::PutStreamGroup { realm, group }), ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /default_stream_groups/{group_id}`: `new_group_name`,
/// `new_description`.
pub fn update_group(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "group_id")?;
    let new_name = call.params.string("new_group_name").map(|n| check_name(&n)).transpose()?;
    let new_description =
        call.params.string("new_description").map(|d| check_description(&d)).transpose()?;
    require_admin(call)?;
    if new_name.is_none() && new_description.is_none() {
        return Err(ApiError::bad_request(
            "You must pass at least one of new_description or new_group_name.",
        ));
    }
    let realm = call.realm.id;
    app.committer.commit(|s| {
        let mut group = group(s, realm, id)?;
        if let Some(name) = &new_name {
            if *name == group.name {
                return Err(ApiError::bad_request(format!(
                    "This default channel group is already named '{name}'."
                )));
            }
            if name.to_lowercase() != group.name.to_lowercase() {
                name_taken(s, realm, name)?;
            }
            group.name = name.clone();
        }
        if let Some(description) = &new_description {
            group.description = description.clone();
        }
        Ok((Mutation::organization(OrgChange::PutStreamGroup { realm, group }), ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /default_stream_groups/{group_id}/streams`: `op` (`add` or
/// `remove`), `stream_names`.
pub fn update_group_channels(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "group_id")?;
    let op = call.params.required_string("op")?;
    if op != "add" && op != "remove" {
        return Err(ApiError::bad_request(
            "Invalid value for 'op'. Specify one of 'add' or 'remove'.",
        ));
    }
    let channels = channel_names(app, call)?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        let mut group = group(s, realm, id)?;
        if op == "add" {
            check_additions(s, &group, &channels)?;
            group.channels.extend(&channels);
        } else {
            for c in &channels {
                if !group.channels.contains(c) {
                    let name = s.channels.read(c, |c| c.name.clone()).unwrap_or_default();
                    return Err(ApiError::bad_request(format!(
                        "Channel '{name}' is not present in default channel group '{}'",
                        group.name
                    )));
                }
            }
            group.channels.retain(|c| !channels.contains(c));
        }
        Ok((Mutation::organization(OrgChange::PutStreamGroup { realm, group }), ()))
    })?;
    Ok(Reply::new())
}

/// `DELETE /default_stream_groups/{group_id}`.
pub fn remove_group(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "group_id")?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        group(s, realm, id)?;
        Ok((Mutation::organization(OrgChange::RemoveStreamGroup { realm, id }), ()))
    })?;
    Ok(Reply::new())
}
