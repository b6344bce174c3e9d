//! Channel folders: `GET /channel_folders`, `POST /channel_folders/create`,
//! `PATCH /channel_folders/{channel_folder_id}` and `PATCH /channel_folders`
//! (the order), with register's `channel_folders` and the `channel_folder`
//! events. Everyone in the realm sees the folders; administrators manage
//! them. A channel joins a folder by its `folder_id` (at creation, or by
//! `PATCH /streams/{stream_id}`).

use serde_json::{json, Value};

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::Mutation;
use crate::reply;
use crate::state::folders::{ChannelFolder, FolderChange};
use crate::state::{RealmId, State, User};
use crate::view::channel::folder;

/// Longest folder name in characters (`max_channel_folder_name_length`).
pub const MAX_NAME_LENGTH: usize = 60;
/// Longest folder description (`max_channel_folder_description_length`).
pub const MAX_DESCRIPTION_LENGTH: usize = 1024;

fn folders_json(state: &State, realm: RealmId, include_archived: bool) -> Value {
    let folders = state.folders.of(realm);
    Value::Array(
        folders.iter().filter(|f| include_archived || !f.is_archived).map(folder).collect(),
    )
}

/// Register's `channel_folders` (archived ones included: channels may
/// still name them) and the length limits.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("channel_folders") || wants("channel_folder") {
        out.insert("channel_folders".into(), folders_json(&app.state, user.realm, true));
    }
    if wants("realm") {
        out.insert("max_channel_folder_name_length".into(), json!(MAX_NAME_LENGTH));
        out.insert("max_channel_folder_description_length".into(), json!(MAX_DESCRIPTION_LENGTH));
    }
}

/// `GET /channel_folders`: `include_archived` (default false).
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let include_archived = call.params.bool_or("include_archived", false)?;
    Ok(reply! { "channel_folders" => folders_json(&app.state, call.realm.id, include_archived) })
}

fn require_admin(call: &Call) -> ApiResult<()> {
    if call.caller().role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

fn unknown_folder() -> ApiError {
    ApiError::bad_request("Invalid channel folder ID")
}

/// A folder `realm` has, for a channel's `folder_id`.
pub fn check_folder(state: &State, realm: RealmId, id: u64) -> ApiResult<()> {
    state.folders.get(realm, id).map(|_| ()).ok_or_else(unknown_folder)
}

/// A channel's `folder_id` parameter: `None` when absent, `Some(None)`
/// for null (no folder), `Some(Some(id))` for a folder.
pub fn folder_param(call: &mut Call) -> ApiResult<Option<Option<u64>>> {
    Ok(match call.params.json_or_string("folder_id")? {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => {
            Some(Some(n.as_u64().ok_or_else(|| ApiError::invalid("folder_id", "not an ID"))?))
        }
        Some(_) => return Err(ApiError::invalid("folder_id", "not an ID")),
    })
}

/// A checked folder name (trimmed, non-empty, printable, short).
fn check_name(raw: &str) -> ApiResult<String> {
    if raw.chars().count() > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "name is too long (limit: {MAX_NAME_LENGTH} characters)"
        )));
    }
    let name = raw.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Channel folder name can't be empty."));
    }
    if let Some(at) = raw.chars().position(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "Invalid character in channel folder name, at position {}.",
            at + 1
        )));
    }
    Ok(name.to_owned())
}

/// A checked description and its rendering (empty renders to nothing).
fn check_description(raw: &str) -> ApiResult<(String, String)> {
    if raw.chars().count() > MAX_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "description is too long (limit: {MAX_DESCRIPTION_LENGTH} characters)"
        )));
    }
    let source = raw.trim().to_owned();
    let rendered = if source.is_empty() { String::new() } else { markdown::render(&source) };
    Ok((source, rendered))
}

fn name_taken(state: &State, realm: RealmId, name: &str, except: Option<u64>) -> ApiResult<()> {
    match state.folders.by_name(realm, name) {
        Some(f) if Some(f.id) != except => {
            Err(ApiError::bad_request("Channel folder name already in use"))
        }
        _ => Ok(()),
    }
}

/// `POST /channel_folders/create` (administrators): `name`,
/// `description` (default empty). Replies `channel_folder_id`.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let raw_name = call.params.required_string("name")?;
    let raw_description = call.params.string("description").unwrap_or_default();
    require_admin(call)?;
    let name = check_name(&raw_name)?;
    let (description, rendered_description) = check_description(&raw_description)?;
    let realm = call.realm.id;
    let creator = call.caller().id;
    let now = entropy::now();
    let id = app.committer.commit(|s| {
        name_taken(s, realm, &name, None)?;
        let id = s.folders.peek();
        let created = ChannelFolder {
            id,
            realm,
            name,
            description,
            rendered_description,
            creator: Some(creator),
            date_created: now,
            is_archived: false,
            order: id,
        };
        Ok((Mutation::ChannelFolder(Box::new(FolderChange::Create(created))), id))
    })?;
    Ok(reply! { "channel_folder_id" => id })
}

/// `PATCH /channel_folders/{channel_folder_id}` (administrators): `name`,
/// `description`, `is_archived`. A folder that holds channels (archived
/// ones too) cannot be archived.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "channel_folder_id")?;
    let raw_name = call.params.string("name");
    let raw_description = call.params.string("description");
    let is_archived = call.params.bool("is_archived")?;
    require_admin(call)?;
    let name = raw_name.as_deref().map(check_name).transpose()?;
    let description = raw_description.as_deref().map(check_description).transpose()?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        let current = s.folders.get(realm, id).ok_or_else(unknown_folder)?;
        let name = name.filter(|n| *n != current.name);
        if let Some(name) = &name {
            name_taken(s, realm, name, Some(id))?;
        }
        let description = description.filter(|(d, _)| *d != current.description);
        let is_archived = is_archived.filter(|a| *a != current.is_archived);
        if is_archived == Some(true) {
            let empty = s
                .channels
                .collect_sorted(|_, c| c.realm == realm && c.folder_id == Some(id))
                .is_empty();
            if !empty {
                return Err(ApiError::bad_request(
                    "You need to remove all the channels from this folder to archive it.",
                ));
            }
        }
        if name.is_none() && description.is_none() && is_archived.is_none() {
            return Ok((Mutation::Batch(Vec::new()), ()));
        }
        let change = FolderChange::Update { realm, id, name, description, is_archived };
        Ok((Mutation::ChannelFolder(Box::new(change)), ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /channel_folders` (administrators): `order`, every folder's id
/// once, the first shown first.
pub fn reorder(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let raw = call.params.json("order")?.ok_or_else(|| ApiError::missing("order"))?;
    let order: Vec<u64> = raw
        .as_array()
        .and_then(|ids| ids.iter().map(Value::as_u64).collect())
        .ok_or_else(|| ApiError::invalid("order", "not a list of channel folder ids"))?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        let mut existing: Vec<u64> = s.folders.of(realm).iter().map(|f| f.id).collect();
        existing.sort_unstable();
        let mut given = order.clone();
        given.sort_unstable();
        if existing != given {
            return Err(ApiError::bad_request("Invalid order mapping."));
        }
        Ok((Mutation::ChannelFolder(Box::new(FolderChange::Reorder { realm, order })), ()))
    })?;
    Ok(Reply::new())
}
