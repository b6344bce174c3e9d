//! Uploaded files: `POST /user_uploads`, `GET /user_uploads/{realm_id}/…`
//! (a temporary download URL), `GET /attachments`,
//! `DELETE /attachments/{attachment_id}`; and the access check of the
//! download route outside `/api/v1` (`download`).
//!
//! An upload's bytes are made durable in the file store (`crate::files`)
//! before the mutation recording the attachment is committed; if the
//! commit is refused, the stored file is removed again (and a crash in
//! between leaves an orphan that start-up removes).

use std::sync::Arc;

use super::{App, Call, Reply};
use crate::config::UploadLimits;
use crate::error::{ApiError, ApiResult};
use crate::files::{self, StoreKey, Upload};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::files::Attachment;
use crate::state::{access, Realm, State, User};

/// Refused when an upload would take `user` or their realm past a quota.
fn check_quota(state: &State, limits: &UploadLimits, user: &User, size: u64) -> ApiResult<()> {
    if let Some(quota) = limits.realm_quota {
        if state.files.used_by_realm(user.realm).saturating_add(size) > quota {
            return Err(ApiError::bad_request(
                "Upload would exceed your organization's upload quota.",
            ));
        }
    }
    if let Some(quota) = limits.user_quota {
        if state.files.used_by_user(user.id).saturating_add(size) > quota {
            return Err(ApiError::bad_request("Upload would exceed your upload quota."));
        }
    }
    Ok(())
}

/// Makes a staged file durable in the store under a new key of `realm`.
pub(super) fn put(
    app: &App,
    realm: crate::state::RealmId,
    staged: files::Staged,
) -> ApiResult<StoreKey> {
    let key = StoreKey::random(realm.0);
    let (store, at) = (Arc::clone(&app.files), key.clone());
    files::blocking(move || store.put(staged, &at)).map_err(|e| {
        tracing::error!("cannot store an upload: {e}");
        ApiError::internal()
    })?;
    Ok(key)
}

/// Removes a stored file whose record was not committed.
pub(super) fn forget(app: &App, key: StoreKey) {
    let store = Arc::clone(&app.files);
    if let Err(e) = files::blocking(move || store.delete(&key)) {
        tracing::warn!("cannot remove an uncommitted upload: {e}");
    }
}

/// Stores `upload` and records it as `owner`'s attachment; its `path_id`.
pub fn store(app: &App, owner: &User, upload: Upload) -> ApiResult<Attachment> {
    let limits = app.config.uploads;
    if upload.size > limits.max_file_bytes() {
        return Err(ApiError::file_too_large(limits.max_file_mib));
    }
    check_quota(&app.state, &limits, owner, upload.size)?;
    let name = files::sanitize_name(&upload.filename);
    let content_type = files::content_type(upload.content_type.as_deref(), &name);
    let key = put(app, owner.realm, upload.staged)?;
    let record = Attachment {
        id: 0,
        realm: owner.realm,
        owner: owner.id,
        path_id: format!("{}/{name}", key.as_str()),
        name,
        size: upload.size,
        content_type,
        create_time: crate::entropy::now(),
        messages: Vec::new(),
    };
    let committed = app.committer.commit(|state| {
        // Again under the writer lock: uploads running side by side.
        check_quota(state, &limits, owner, record.size)?;
        let attachment = Attachment { id: state.files.next_id(), ..record };
        Ok((Mutation::CreateAttachment(Box::new(attachment.clone())), attachment))
    });
    if committed.is_err() {
        forget(app, key);
    }
    committed
}

/// `POST /user_uploads`: one file, multipart → `uri`, `url`, `filename`.
pub fn upload(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let mut parts = std::mem::take(&mut call.files);
    let upload = match parts.len() {
        0 => return Err(ApiError::bad_request("You must specify a file to upload")),
        1 => parts.pop().expect("one part"),
        _ => return Err(ApiError::bad_request("You may only upload one file at a time")),
    };
    let attachment = store(app, call.caller(), upload)?;
    let url = format!("/user_uploads/{}", attachment.path_id);
    Ok(reply! {"uri" => url, "url" => url, "filename" => attachment.name})
}

/// The attachment a download path (`<realm_id>/<ab>/<token>/<name>`)
/// names, if `user` may read it; "does not exist" otherwise, alike for
/// missing, foreign and private files.
pub fn readable(state: &State, user: &User, path_id: &str) -> ApiResult<Attachment> {
    let missing = || ApiError::not_found("This file does not exist or has been deleted.");
    let attachment = state.files.by_path(path_id).ok_or_else(missing)?;
    if !access::can_read_attachment(state, user, &attachment) {
        return Err(missing());
    }
    Ok(attachment)
}

/// The attachment a download request names: by a temporary URL's token
/// (`temporary/<token>/<name>`), or for the authenticated `caller` of
/// `realm`.
pub fn download(
    app: &App,
    realm: &Realm,
    caller: Option<&User>,
    path: &str,
) -> ApiResult<Attachment> {
    let missing = || ApiError::not_found("This file does not exist or has been deleted.");
    if let Some(rest) = path.strip_prefix("temporary/") {
        let (token, name) = rest.split_once('/').ok_or_else(missing)?;
        let id = app.temporary_urls.resolve(token).ok_or_else(missing)?;
        let attachment = app.state.files.get(id).ok_or_else(missing)?;
        if attachment.realm != realm.id || attachment.name != name {
            return Err(missing());
        }
        return Ok(attachment);
    }
    let caller = caller.ok_or_else(|| {
        ApiError::unauthorized("Not logged in: API authentication or user session required")
    })?;
    readable(&app.state, caller, path)
}

/// `GET /user_uploads/{realm_id}/{ab}/{token}/{filename}`: a temporary
/// URL (valid for a minute) that downloads the file without credentials.
pub fn temporary_url(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let path_id = call.path.join("/");
    let attachment = readable(&app.state, call.caller(), &path_id)?;
    let token = app.temporary_urls.issue(attachment.id);
    Ok(reply! {"url" => format!("/user_uploads/temporary/{token}/{}", attachment.name)})
}

/// `GET /attachments`: the caller's uploaded files and the bytes they use.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let caller = call.caller();
    let state = &app.state;
    let attachments: Vec<serde_json::Value> = state
        .files
        .owned_by(caller.id)
        .iter()
        .map(|a| crate::view::files::attachment(state, a))
        .collect();
    Ok(reply! {
        "attachments" => attachments,
        "upload_space_used" => state.files.used_by_user(caller.id),
    })
}

/// `DELETE /attachments/{attachment_id}`: the owner deletes a file; its
/// bytes are removed once the deletion is durable.
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "attachment_id")?;
    let caller = call.caller();
    let removed = app.committer.commit(|state| {
        let attachment = state
            .files
            .get(id)
            .filter(|a| a.owner == caller.id)
            .ok_or_else(|| ApiError::bad_request("Invalid attachment"))?;
        Ok((Mutation::DeleteAttachment { id }, attachment))
    })?;
    if let Some(key) = StoreKey::parse(removed.store_key()) {
        forget(app, key);
    }
    Ok(Reply::new())
}
