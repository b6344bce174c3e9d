//! Uploaded files: `POST /user_uploads`, `GET /user_uploads/{realm_id}/…`
//! (a temporary download URL), `GET /attachments`,
//! `DELETE /attachments/{attachment_id}`; and the access check of the
//! download route outside `/api/v1` (`download`).
//!
//! Files no message references are deleted by the scheduler after a grace
//! period (`reclaim_unclaimed`).
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
use crate::state::files::{Attachment, Thumbnail};
use crate::state::{access, Realm, State, User};
use crate::thumbnails;

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
    // An image's header is read now (no pixel decoded): one natter can
    // thumbnail gets its thumbnail's record, the WebP itself made after
    // the reply (`make_thumbnail`); anything else (not an image, a
    // decompression bomb) is never previewed.
    let path = upload.staged.path().to_owned();
    let inspected = files::blocking(move || thumbnails::inspect(&path));
    let thumbnail = match inspected {
        Ok((width, height, content_type)) => Some(Thumbnail {
            key: String::new(),
            size: 0,
            width,
            height,
            content_type: content_type.to_owned(),
        }),
        Err(thumbnails::Refused::NotAnImage) => None,
        Err(why) => {
            tracing::info!("no thumbnail for an upload: {why:?}");
            None
        }
    };
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
        let created = Mutation::CreateAttachment(Box::new(attachment.clone()));
        let mutation = match &thumbnail {
            Some(pending) => Mutation::Batch(vec![
                created,
                Mutation::SetThumbnail {
                    attachment: attachment.id,
                    thumbnail: Box::new(pending.clone()),
                },
            ]),
            None => created,
        };
        Ok((mutation, attachment))
    });
    if committed.is_err() {
        forget(app, key);
    }
    committed
}

/// Makes the thumbnail of attachment `id` whose record says it is still
/// to be made (`store`), stores it and records it; run off the request
/// path (`scheduler::start_thumbnails`), after the upload's reply. An
/// image `thumbnails::make` refuses (undecodable, too slow) keeps its
/// record as it is: its thumbnail's URL goes on serving the original,
/// which is no bomb (its header was read before it was accepted).
pub fn make_thumbnail(app: &App, id: u64) {
    let state = &app.state;
    let (Some(attachment), Some(pending)) = (state.files.get(id), state.files.thumbnail(id)) else {
        return;
    };
    if pending.is_made() {
        return;
    }
    let Some(original) = StoreKey::parse(attachment.store_key()) else { return };
    let store = Arc::clone(&app.files);
    let size = attachment.size;
    // The original, read back into a staged file the decoder opens.
    let staged = files::blocking(move || {
        let bytes = store.read(&original, 0, size)?;
        files::stage_bytes(&*store, &bytes)
    });
    let staged = match staged {
        Ok(staged) => staged,
        Err(e) => {
            tracing::error!("cannot read upload {id} to thumbnail it: {e}");
            return;
        }
    };
    let path = staged.path().to_owned();
    let made = files::blocking(move || thumbnails::make(path, thumbnails::TIME_LIMIT));
    drop(staged);
    let made = match made {
        Ok(made) => made,
        Err(why) => {
            tracing::info!("no thumbnail for upload {id}: {why:?}");
            return;
        }
    };
    let store = Arc::clone(&app.files);
    let webp = made.webp;
    let size = webp.len() as u64;
    let staged = match files::blocking(move || files::stage_bytes(&*store, &webp)) {
        Ok(staged) => staged,
        Err(e) => {
            tracing::error!("cannot stage a thumbnail: {e}");
            return;
        }
    };
    let Ok(key) = put(app, attachment.realm, staged) else { return };
    let thumbnail = Thumbnail { key: key.as_str().to_owned(), size, ..pending };
    let committed = app.committer.commit(|state| {
        // Under the writer lock: the attachment may be gone meanwhile.
        let still = state.files.get(id).is_some()
            && state.files.thumbnail(id).is_some_and(|t| !t.is_made());
        if !still {
            return Err(ApiError::bad_request("Invalid attachment"));
        }
        let set = Mutation::SetThumbnail { attachment: id, thumbnail: Box::new(thumbnail.clone()) };
        Ok((set, ()))
    });
    if committed.is_err() {
        forget(app, key);
    }
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

/// Zulip's refusal of a file that exists but that a caller without
/// credentials may not read (403).
pub fn not_authorized() -> ApiError {
    ApiError::forbidden_code("UNAUTHORIZED", "You are not authorized to view this file.")
}

/// The attachment a download request names: by a temporary URL's token
/// (`temporary/<token>/<name>`), for the authenticated `caller` of
/// `realm`, or without credentials when a message of one of the realm's
/// web-public channels references it (as Zulip serves such files).
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
    let Some(caller) = caller else {
        // Without credentials: only a file a web-public channel shows; a
        // file of the realm that is not is refused as Zulip refuses it
        // (`http::downloads` turns this into its login redirect).
        let attachment = app.state.files.by_path(path).filter(|a| a.realm == realm.id);
        let attachment = attachment.ok_or_else(missing)?;
        if !access::spectator_can_read_attachment(&app.state, realm, &attachment) {
            return Err(not_authorized());
        }
        return Ok(attachment);
    };
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
        Ok((Mutation::DeleteAttachment { id }, (attachment, state.files.thumbnail(id))))
    })?;
    forget_files(app, removed);
    Ok(Reply::new())
}

/// Removes a deleted attachment's bytes and its thumbnail's.
fn forget_files(app: &App, (attachment, thumbnail): (Attachment, Option<Thumbnail>)) {
    let keys = std::iter::once(attachment.store_key().to_owned()).chain(thumbnail.map(|t| t.key));
    for key in keys.filter_map(|k| StoreKey::parse(&k)) {
        forget(app, key);
    }
}

/// Whether attachment `a` is unclaimed at `now` (Zulip's rule): uploaded
/// more than `grace` seconds ago, and neither a message nor a scheduled
/// message references it (a deleted message no longer does).
pub fn is_unclaimed(state: &State, a: &Attachment, now: i64, grace: u64) -> bool {
    let old_enough = a.create_time.saturating_add(i64::try_from(grace).unwrap_or(i64::MAX)) <= now;
    old_enough
        && !a.messages.iter().any(|id| state.messages.get(id).is_some())
        && state
            .scheduled
            .by_id
            .collect_sorted(|_, s| s.realm == a.realm && s.content.contains(&a.path_id))
            .is_empty()
}

/// Deletes every unclaimed attachment (`is_unclaimed`) at `now`, each by
/// its own `DeleteAttachment` (checked again under the writer lock), its
/// bytes removed once that is durable; how many. Run by the scheduler.
pub fn reclaim_unclaimed(app: &App, now: i64) -> usize {
    let grace = app.config.uploads.unclaimed_grace_secs;
    let state = &app.state;
    let candidates: Vec<u64> = state
        .files
        .all()
        .into_iter()
        .filter(|a| is_unclaimed(state, a, now, grace))
        .map(|a| a.id)
        .collect();
    let mut reclaimed = 0;
    for id in candidates {
        let removed = app.committer.commit(|state| {
            let attachment = state
                .files
                .get(id)
                .filter(|a| is_unclaimed(state, a, now, grace))
                .ok_or_else(|| ApiError::bad_request("Invalid attachment"))?;
            Ok((Mutation::DeleteAttachment { id }, (attachment, state.files.thumbnail(id))))
        });
        // Refused: claimed or deleted meanwhile.
        let Ok(removed) = removed else { continue };
        forget_files(app, removed);
        reclaimed += 1;
    }
    reclaimed
}
