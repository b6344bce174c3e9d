//! `POST /users/me/avatar` (multipart, one image) and
//! `DELETE /users/me/avatar`; and `avatar_location`, where
//! `GET /avatar/{user_id_or_email}` redirects (`http::downloads`).
//!
//! An uploaded image becomes Zulip's two PNG squares (100 and 500 pixels),
//! stored like any upload (`crate::files`: durable before the mutation
//! recording them is committed) and served without credentials at
//! `/user_avatars/<key>`, as Zulip serves avatars. The image
//! it replaces is removed once the change is durable (a crash in between
//! leaves an orphan that start-up removes). Who may change it follows
//! Zulip: anyone, a bot for itself included, unless the realm's
//! `avatar_changes_disabled` holds, which administrators are exempt from.
//! A bot's owner and the administrators change a bot's avatar with
//! `PATCH /bots/{bot_id}` (`api::accounts::update_bot`, through `prepare`).

use std::sync::Arc;

use md5::{Digest, Md5};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::files::{self, StoreKey};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::files::Avatar;
use crate::state::{Realm, State, User, UserId};
use crate::thumbnails;

/// Largest avatar image, in MiB (register's `max_avatar_file_size_mib`).
pub const MAX_AVATAR_FILE_MIB: u64 = 5;

/// Refused when the realm disables avatar changes and `user` is not an
/// administrator (a bot changing its own avatar included, as in Zulip).
fn check_allowed(state: &State, user: &User) -> ApiResult<()> {
    if state.files.realm_settings(user.realm).avatar_changes_disabled && !user.role.is_admin() {
        return Err(ApiError::bad_request("Avatar changes are disabled in this organization."));
    }
    Ok(())
}

/// Commits `avatar` as `user`'s, then removes the images it replaced;
/// the new `avatar_url`.
fn change(app: &App, user: UserId, avatar: Option<Avatar>) -> ApiResult<Reply> {
    let replaced = app.committer.commit(|state| {
        let me = state.users.get(&user).ok_or_else(|| ApiError::bad_request("Invalid user"))?;
        check_allowed(state, &me)?;
        let replaced = state.files.avatar(user);
        Ok((Mutation::SetAvatar { user, avatar: avatar.clone().map(Box::new) }, replaced))
    })?;
    replaced_images(app, replaced);
    let me = app.state.users.get(&user).ok_or_else(|| ApiError::bad_request("Invalid user"))?;
    Ok(reply! {"avatar_url" => crate::view::user::avatar_url(&app.state, &me, false)})
}

/// Removes the images of an avatar a committed change replaced.
pub(super) fn replaced_images(app: &App, replaced: Option<Avatar>) {
    if let Some(old) = replaced {
        forget_keys(app, &[old.key, old.medium_key]);
    }
}

/// Removes the images of an avatar `prepare` stored, unless a committed
/// change records them.
pub(super) fn discard(app: &App, avatar: &Avatar) {
    if app.state.files.avatar_by_key(&avatar.key).is_none() {
        forget_keys(app, &[avatar.key.clone(), avatar.medium_key.clone()]);
    }
}

/// Removes stored images by key.
fn forget_keys(app: &App, keys: &[String]) {
    for key in keys.iter().filter_map(|k| StoreKey::parse(k)) {
        super::uploads::forget(app, key);
    }
}

/// Stages and stores `bytes` under a new key of `realm`.
pub(super) fn store_bytes(
    app: &App,
    realm: crate::state::RealmId,
    bytes: Vec<u8>,
) -> ApiResult<StoreKey> {
    let store = Arc::clone(&app.files);
    let staged = files::blocking(move || files::stage_bytes(&*store, &bytes)).map_err(|e| {
        eprintln!("natter: error: cannot stage an avatar: {e}");
        ApiError::internal()
    })?;
    super::uploads::put(app, realm, staged)
}

/// One uploaded image (PNG, GIF, JPEG or WebP) made Zulip's two squares
/// (`thumbnails::make_avatar`: bounded, so an image bomb is refused,
/// never stored) and stored under new keys of `realm`: the avatar to
/// record, not yet committed (`discard` it if the commit is refused).
pub(super) fn prepare(
    app: &App,
    realm: crate::state::RealmId,
    upload: files::Upload,
) -> ApiResult<Avatar> {
    if upload.size > MAX_AVATAR_FILE_MIB << 20 {
        return Err(ApiError::bad_request(format!(
            "Uploaded file is larger than the allowed limit of {MAX_AVATAR_FILE_MIB} MiB"
        )));
    }
    let path = upload.staged.path().to_owned();
    let made = files::blocking(move || thumbnails::make_avatar(path, thumbnails::TIME_LIMIT));
    drop(upload);
    let made = match made {
        Ok(made) => made,
        Err(thumbnails::Refused::TooLarge(..)) => {
            return Err(ApiError::bad_request("Image size exceeds limit."))
        }
        Err(_) => {
            return Err(ApiError::bad_request(
                "Could not decode image; did you upload an image file?",
            ))
        }
    };
    let (size, medium_size) = (made.small.len() as u64, made.medium.len() as u64);
    let key = store_bytes(app, realm, made.small)?;
    let medium_key = match store_bytes(app, realm, made.medium) {
        Ok(key) => key,
        Err(e) => {
            forget_keys(app, &[key.as_str().to_owned()]);
            return Err(e);
        }
    };
    Ok(Avatar {
        key: key.as_str().to_owned(),
        size,
        medium_key: medium_key.as_str().to_owned(),
        medium_size,
    })
}

/// `POST /users/me/avatar`: one image (PNG, GIF, JPEG or WebP) becomes the
/// caller's avatar, a bot's own included (`prepare`).
pub fn upload(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let mut parts = std::mem::take(&mut call.files);
    let caller = call.caller();
    check_allowed(&app.state, caller)?;
    let upload = match (parts.pop(), parts.is_empty()) {
        (Some(upload), true) => upload,
        _ => return Err(ApiError::bad_request("You must upload exactly one avatar.")),
    };
    let avatar = prepare(app, caller.realm, upload)?;
    let changed = change(app, caller.id, Some(avatar.clone()));
    if changed.is_err() {
        discard(app, &avatar);
    }
    changed
}

/// `DELETE /users/me/avatar`: the caller's avatar becomes their gravatar.
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let caller = call.caller();
    check_allowed(&app.state, caller)?;
    change(app, caller.id, None)
}

/// Where `GET /avatar/{user_id_or_email}` (and `…/medium`) redirects in
/// `realm`: the user's avatar URL, or for an unknown user the gravatar of
/// what was asked, as Zulip does.
pub fn avatar_location(state: &State, realm: &Realm, asked: &str, medium: bool) -> String {
    let found = match asked.parse::<u64>() {
        Ok(id) => state.users.get(&UserId(id)),
        Err(_) => state.user_by_email_shared(realm.id, asked).map(|u| (*u).clone()),
    };
    match found.filter(|u| u.realm == realm.id || u.is_system_bot()) {
        Some(user) if medium => crate::view::user::avatar_url_medium(state, &user),
        Some(user) => crate::view::user::avatar_url_string(state, &user, false)
            .expect("a URL when the client does not compute it"),
        None => {
            let digest = Md5::digest(asked.trim().to_lowercase().as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("https://secure.gravatar.com/avatar/{hex}?d=identicon&version=1")
        }
    }
}
