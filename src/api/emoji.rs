//! Custom emoji: `GET /realm/emoji`, `POST /realm/emoji/{emoji_name}`
//! (multipart, one image), `DELETE /realm/emoji/{emoji_name}` (deactivates).
//!
//! Who may add one follows the realm's `can_add_custom_emoji_group`
//! (`PATCH /realm`; Zulip's default, members: not guests); deactivating is
//! for administrators and the emoji's author. The image is decoded and
//! made Zulip's 64-pixel square (an animated GIF keeps its frames, each
//! fit in that square), stored (`crate::files`) before the emoji is
//! recorded, and served without credentials at its `source_url`
//! (`/user_avatars/<key>`), as Zulip serves emoji.

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::files;
use crate::markdown::emoji as builtin;
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access;
use crate::state::files::RealmEmoji;
use crate::thumbnails;

/// Largest emoji image, in MiB (register's `max_emoji_file_size_mib`).
pub const MAX_EMOJI_FILE_MIB: u64 = 5;

/// Longest emoji name, in characters.
const MAX_NAME_CHARS: usize = 60;

/// Zulip's emoji name rule: lowercase letters, digits, and single spaces,
/// dashes or underscores between them.
fn check_name(name: &str) -> ApiResult<()> {
    if name.is_empty() {
        return Err(ApiError::bad_request("Emoji name is missing"));
    }
    let allowed =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ' ' | '-' | '_');
    if !name.chars().all(allowed) {
        return Err(ApiError::bad_request(
            "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.",
        ));
    }
    if !name.ends_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(ApiError::bad_request("Emoji names must end with either a letter or digit."));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::bad_request(format!(
            "Emoji name is too long (at most {MAX_NAME_CHARS} characters)"
        )));
    }
    Ok(())
}

/// The media type of an image natter accepts as an emoji, from its first
/// bytes: PNG, GIF, JPEG or WebP.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The media type of an uploaded image, from its first bytes (`None`
/// when it is not one natter accepts).
pub(super) fn uploaded_image_type(upload: &files::Upload) -> ApiResult<Option<&'static str>> {
    let path = upload.staged.path().to_owned();
    let head = files::blocking(move || {
        use std::io::Read;
        let mut head = Vec::new();
        std::fs::File::open(path).and_then(|f| f.take(16).read_to_end(&mut head)).map(|_| head)
    })
    .map_err(|e| {
        eprintln!("natter: error: reading an uploaded image: {e}");
        ApiError::internal()
    })?;
    Ok(image_type(&head))
}

/// The uploaded image as an emoji's (`thumbnails::make_emoji`: Zulip's
/// 64-pixel square, decoded on an OS thread within the thumbnails'
/// bounds, so a decompression bomb is refused, never stored).
fn emoji_image(upload: &files::Upload) -> ApiResult<thumbnails::Emoji> {
    let path = upload.staged.path().to_owned();
    match files::blocking(move || thumbnails::make_emoji(path, thumbnails::TIME_LIMIT)) {
        Ok(made) => Ok(made),
        Err(thumbnails::Refused::NotAnImage) => Err(ApiError::bad_request("Invalid image format")),
        Err(thumbnails::Refused::TooLarge(..)) => {
            Err(ApiError::bad_request("Image size exceeds limit."))
        }
        Err(_) => {
            Err(ApiError::bad_request("Could not decode image; did you upload an image file?"))
        }
    }
}

/// `GET /realm/emoji`: the realm's custom emoji, deactivated ones included.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! {"emoji" => crate::view::files::realm_emoji(&app.state, call.realm.id)})
}

/// `POST /realm/emoji/{emoji_name}`: adds a custom emoji from one image.
pub fn add(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = call.path.first().cloned().unwrap_or_default();
    let mut parts = std::mem::take(&mut call.files);
    let caller = call.caller();
    check_name(&name)?;
    if !access::can_add_custom_emoji(&app.state, caller) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let is_admin = caller.role.is_admin();
    if !is_admin && builtin::code_for_name(&name.replace(' ', "_")).is_some() {
        return Err(ApiError::bad_request("Only administrators can override default emoji."));
    }
    let upload = match parts.len() {
        0 => return Err(ApiError::bad_request("You must upload exactly one file.")),
        1 => parts.pop().expect("one part"),
        _ => return Err(ApiError::bad_request("You must upload exactly one file.")),
    };
    if upload.size > MAX_EMOJI_FILE_MIB << 20 {
        return Err(ApiError::bad_request(format!(
            "Uploaded file is larger than the allowed limit of {MAX_EMOJI_FILE_MIB} MiB"
        )));
    }
    if uploaded_image_type(&upload)?.is_none() {
        return Err(ApiError::bad_request("Invalid image format"));
    }
    if app.state.files.active_emoji(caller.realm, &name).is_some() {
        return Err(ApiError::bad_request("A custom emoji with this name already exists."));
    }
    let made = emoji_image(&upload)?;
    drop(upload);
    let (content_type, size) = (made.content_type, made.bytes.len() as u64);
    let key = super::avatars::store_bytes(app, caller.realm, made.bytes)?;
    let committed = app.committer.commit(|state| {
        // Again under the writer lock: the setting may have changed.
        if !access::can_add_custom_emoji(state, caller) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        if state.files.active_emoji(caller.realm, &name).is_some() {
            return Err(ApiError::bad_request("A custom emoji with this name already exists."));
        }
        let emoji = RealmEmoji {
            id: state.files.next_emoji_id(),
            realm: caller.realm,
            name: name.clone(),
            author: caller.id,
            key: key.as_str().to_owned(),
            content_type: content_type.to_owned(),
            size,
            deactivated: false,
        };
        Ok((Mutation::CreateRealmEmoji(Box::new(emoji)), ()))
    });
    if committed.is_err() {
        super::uploads::forget(app, key);
    }
    committed.map(|()| Reply::new())
}

/// `DELETE /realm/emoji/{emoji_name}`: deactivates a custom emoji
/// (administrators and its author).
pub fn deactivate(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = call.path.first().cloned().unwrap_or_default();
    let caller = call.caller();
    app.committer.commit(|state| {
        let emoji = state
            .files
            .active_emoji(caller.realm, &name)
            .ok_or_else(|| ApiError::bad_request(format!("Emoji '{name}' does not exist")))?;
        let is_admin = caller.role.is_admin();
        if !is_admin && emoji.author != caller.id {
            return Err(ApiError::bad_request(
                "Must be an organization administrator or emoji author",
            ));
        }
        Ok((Mutation::DeactivateRealmEmoji { id: emoji.id }, ()))
    })?;
    Ok(Reply::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_images() {
        for ok in ["party", "party_parrot", "a-b c", "x1", "9"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Party", "a!", "a_", "a ", "é", "a/b", "../x"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name(&"a".repeat(61)).is_err());
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"<svg xmlns=..."), None);
        assert_eq!(image_type(b""), None);
    }
}
