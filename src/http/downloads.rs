//! `GET /user_uploads/<realm_id>/<ab>/<token>/<name>`,
//! `GET /user_uploads/thumbnail/<realm_id>/<ab>/<token>/<name>/840x560.webp`
//! (an image's thumbnail) and
//! `GET /user_uploads/temporary/<token>/<name>`: an uploaded file's bytes,
//! outside `/api/v1`. Who may read it is `api::uploads::download`'s
//! question; this is the wire: HTTP Basic credentials, `Range` (one range),
//! `ETag` / `If-None-Match`, and the headers that keep an uploaded file
//! from ever running as a page of natter's origin (`nosniff`, a sandboxing
//! `Content-Security-Policy`, `attachment` for anything not on the inline
//! list).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::conn;
use super::response::{self, Head, Response};
use super::{Service, Session};
use crate::error::{ApiError, ApiResult};
use crate::files::{self, StoreKey};
use crate::thumbnails;

/// What a downloaded file may do when a browser opens it: nothing but
/// show itself (no script, no plugins, no requests elsewhere).
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

/// Serves a download request (any method: only `GET` and `HEAD` succeed).
pub(super) fn serve(
    service: &Service,
    req: &conn::Request<'_>,
    head: &super::Head<'_>,
    session: &mut Session,
) -> Response {
    match answer(service, req, head, session) {
        Ok(response) => response,
        Err(e) => response::error(&e),
    }
}

fn answer(
    service: &Service,
    req: &conn::Request<'_>,
    head: &super::Head<'_>,
    session: &mut Session,
) -> ApiResult<Response> {
    let app = &*service.app;
    if head.method != "GET" && head.method != "HEAD" {
        return Err(ApiError::method_not_allowed(head.method));
    }
    let missing = || ApiError::not_found("This file does not exist or has been deleted.");
    let raw = head.path.strip_prefix("/user_uploads/").ok_or_else(missing)?;
    let path = percent_encoding::percent_decode_str(raw).decode_utf8().map_err(|_| missing())?;
    if path.contains('\0') || path.len() > 1024 {
        return Err(missing());
    }
    let generation = app.state.users_generation.load(Ordering::Acquire);
    let realm = session.realm(generation, head.host, || service.realm_for_host(head.host))?;
    let caller = match (path.starts_with("temporary/"), head.authorization) {
        (false, Some(authorization)) => Some(session.caller(authorization, || {
            super::auth::authenticate(&app.state, &realm, Some(authorization))
        })?),
        // The web client's session cookie (an image in a message).
        (false, None) => {
            super::web::cookie_caller(service, &realm, head.method, head.host, &head.web)?
        }
        _ => None,
    };
    // A thumbnail (`thumbnail/<path_id>/840x560.webp`) is readable by
    // whoever may read its original.
    let thumbnail = path
        .strip_prefix("thumbnail/")
        .and_then(|rest| rest.strip_suffix(thumbnails::FILE_NAME))
        .and_then(|rest| rest.strip_suffix('/'));
    let asked = thumbnail.unwrap_or(&path);
    let attachment = match crate::api::uploads::download(app, &realm, caller.as_deref(), asked) {
        Ok(attachment) => attachment,
        // A file that exists but is not for a caller without credentials:
        // Zulip's 403 for an `<img>`, its login redirect for anything else
        // (a browser's page, an API client, curl).
        Err(e) if caller.is_none() && e.status == 403 => {
            let accept = head.headers.iter().find(|h| h.name.eq_ignore_ascii_case("accept"));
            if accept.is_some_and(|h| prefers_image(h.value)) {
                return Err(e);
            }
            return Ok(to_login(head.path));
        }
        Err(e) => return Err(e),
    };
    // A thumbnail not made yet (it is made after the upload's reply) is
    // served as its original until it is.
    let made = match thumbnail {
        Some(_) => {
            let thumbnail = app.state.files.thumbnail(attachment.id).ok_or_else(missing)?;
            Some(thumbnail).filter(|t| t.is_made())
        }
        None => None,
    };
    let file = match made {
        Some(thumbnail) => Served {
            key: StoreKey::parse(&thumbnail.key).ok_or_else(missing)?,
            name: thumbnails::FILE_NAME.to_owned(),
            content_type: "image/webp".to_owned(),
            size: thumbnail.size,
            cache: "private, max-age=86400",
        },
        None => Served {
            key: StoreKey::parse(attachment.store_key()).ok_or_else(missing)?,
            name: attachment.name,
            content_type: attachment.content_type,
            size: attachment.size,
            // The original standing in for a thumbnail is checked again
            // on each use: the thumbnail replaces it once made.
            cache: if thumbnail.is_some() { "private, no-cache" } else { "private, max-age=86400" },
        },
    };
    bytes(service, req, file)
}

/// Whether an `Accept` header prefers `image/png` to `text/html` (as an
/// `<img>`'s request does; `*/*` alone prefers the page, as in Zulip).
fn prefers_image(accept: &[u8]) -> bool {
    let accept = String::from_utf8_lossy(accept);
    // The quality the header gives `kind/sub`: the most specific range
    // that matches it wins.
    let quality = |kind: &str, sub: &str| -> f32 {
        let mut best: Option<(u8, f32)> = None;
        for range in accept.split(',') {
            let mut params = range.split(';');
            let media = params.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = params
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let specificity = match media.split_once('/') {
                Some((k, s)) if k == kind && s == sub => 2,
                Some((k, "*")) if k == kind => 1,
                Some(("*", "*")) => 0,
                _ => continue,
            };
            if best.is_none_or(|(b, _)| specificity > b) {
                best = Some((specificity, q));
            }
        }
        best.map_or(0.0, |(_, q)| q)
    };
    let image = quality("image", "png");
    image > 0.0 && image > quality("text", "html")
}

/// Zulip's answer to a caller without credentials asking for a file they
/// may not read: a redirect to the login page (natter's is the web
/// client's front page), the file's path kept as `next`.
fn to_login(path: &str) -> Response {
    let next = percent_encoding::utf8_percent_encode(path, percent_encoding::NON_ALPHANUMERIC);
    Response {
        status: 302,
        body: Vec::new(),
        head: Some(Box::new(Head {
            content_type: "text/plain".to_owned(),
            headers: vec![("Location", format!("/?next={next}"))],
        })),
        rate: None,
    }
}

/// A stored file about to be served.
struct Served {
    key: StoreKey,
    name: String,
    content_type: String,
    size: u64,
    cache: &'static str,
}

/// `GET /user_avatars/<key>`: a custom emoji's or an uploaded avatar's
/// image, without credentials (as Zulip serves them), for the realm the
/// host names.
pub(super) fn serve_emoji(
    service: &Service,
    req: &conn::Request<'_>,
    head: &super::Head<'_>,
    session: &mut Session,
) -> Response {
    let mut answer = || -> ApiResult<Response> {
        let app = &*service.app;
        if head.method != "GET" && head.method != "HEAD" {
            return Err(ApiError::method_not_allowed(head.method));
        }
        let missing = || ApiError::not_found("This file does not exist or has been deleted.");
        let key = head.path.strip_prefix("/user_avatars/").and_then(StoreKey::parse);
        let key = key.ok_or_else(missing)?;
        let generation = app.state.users_generation.load(Ordering::Acquire);
        let realm = session.realm(generation, head.host, || service.realm_for_host(head.host))?;
        let state = &app.state;
        let file = if let Some(emoji) = state.files.emoji_by_key(key.as_str()) {
            if emoji.realm != realm.id {
                return Err(missing());
            }
            Served {
                key,
                name: emoji.name,
                content_type: emoji.content_type,
                size: emoji.size,
                cache: "public, max-age=86400",
            }
        } else {
            let (user, avatar) = state.files.avatar_by_key(key.as_str()).ok_or_else(missing)?;
            let owner = state.users.get(&user).ok_or_else(missing)?;
            if owner.realm != realm.id {
                return Err(missing());
            }
            let size = avatar.size_of(key.as_str()).ok_or_else(missing)?;
            Served {
                key,
                name: "avatar.png".to_owned(),
                content_type: "image/png".to_owned(),
                size,
                cache: "public, max-age=86400",
            }
        };
        bytes(service, req, file)
    };
    answer().unwrap_or_else(|e| response::error(&e))
}

/// `GET /avatar/<user_id or email>` and `…/medium`: a redirect to the
/// user's avatar (`api::avatars::avatar_location`), the request's query
/// kept. Credentials as for downloads; without them only a realm open to
/// spectators answers, and only by user id, as in Zulip.
pub(super) fn serve_avatar(
    service: &Service,
    head: &super::Head<'_>,
    session: &mut Session,
) -> Response {
    let mut answer = || -> ApiResult<Response> {
        let app = &*service.app;
        if head.method != "GET" && head.method != "HEAD" {
            return Err(ApiError::method_not_allowed(head.method));
        }
        let missing = || ApiError::not_found("Not Found");
        let raw = head.path.strip_prefix("/avatar/").ok_or_else(missing)?;
        let (raw, medium) = match raw.strip_suffix("/medium") {
            Some(raw) => (raw, true),
            None => (raw, false),
        };
        let asked =
            percent_encoding::percent_decode_str(raw).decode_utf8().map_err(|_| missing())?;
        if asked.is_empty() || asked.contains(['/', '\0']) || asked.len() > 254 {
            return Err(missing());
        }
        let generation = app.state.users_generation.load(Ordering::Acquire);
        let realm = session.realm(generation, head.host, || service.realm_for_host(head.host))?;
        let login =
            || ApiError::unauthorized("Not logged in: API authentication or user session required");
        match head.authorization {
            Some(authorization) => {
                session.caller(authorization, || {
                    super::auth::authenticate(&app.state, &realm, Some(authorization))
                })?;
            }
            None if realm.settings.enable_spectator_access && asked.parse::<u64>().is_ok() => {}
            None => return Err(login()),
        }
        let mut location = crate::api::avatars::avatar_location(&app.state, &realm, &asked, medium);
        if !head.query.is_empty() {
            location.push(if location.contains('?') { '&' } else { '?' });
            location.push_str(head.query);
        }
        Ok(Response {
            status: 302,
            body: Vec::new(),
            head: Some(Box::new(Head {
                content_type: "text/plain".to_owned(),
                headers: vec![("Location", location)],
            })),
            rate: None,
        })
    };
    answer().unwrap_or_else(|e| response::error(&e))
}

/// The reply for a file: `If-None-Match`, `Range`, and the safe headers.
fn bytes(service: &Service, req: &conn::Request<'_>, file: Served) -> ApiResult<Response> {
    let app = &*service.app;
    let missing = || ApiError::not_found("This file does not exist or has been deleted.");
    let Served { key, name, content_type, size, cache } = file;
    let etag = format!("\"{}\"", key.as_str().rsplit('/').next().unwrap_or(""));
    let mut headers = vec![
        ("ETag", etag.clone()),
        ("Cache-Control", cache.to_owned()),
        ("X-Content-Type-Options", "nosniff".to_owned()),
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY.to_owned()),
    ];
    if req.header("if-none-match").is_some_and(|v| matches_etag(v, &etag)) {
        return Ok(with_head(304, Vec::new(), &content_type, headers));
    }
    headers.push(("Accept-Ranges", "bytes".to_owned()));
    headers.push(("Content-Disposition", disposition(&name, &content_type)));
    let (status, start, len) = match byte_range(req.header("range"), size) {
        Range::Whole => (200, 0, size),
        Range::Part(start, end) => {
            headers.push(("Content-Range", format!("bytes {start}-{end}/{size}")));
            (206, start, end - start + 1)
        }
        Range::Unsatisfiable => {
            let mut reply = response::error(&response::range_not_satisfiable());
            reply.head = Some(Box::new(Head {
                content_type: "application/json".to_owned(),
                headers: vec![("Content-Range", format!("bytes */{size}"))],
            }));
            return Ok(reply);
        }
    };
    let store = Arc::clone(&app.files);
    let key_text = key.as_str().to_owned();
    let bytes = files::blocking(move || store.read(&key, start, len)).map_err(|e| {
        tracing::error!("cannot read the stored file {}: {e}", key_text);
        missing()
    })?;
    Ok(with_head(status, bytes, &content_type, headers))
}

fn with_head(
    status: u16,
    body: Vec<u8>,
    content_type: &str,
    headers: Vec<(&'static str, String)>,
) -> Response {
    Response {
        status,
        body,
        head: Some(Box::new(Head { content_type: content_type.to_owned(), headers })),
        rate: None,
    }
}

/// `inline` for the allow-listed media types, `attachment` for the rest,
/// with the (sanitised) name percent-encoded.
fn disposition(name: &str, content_type: &str) -> String {
    let kind = if files::is_inline(content_type) { "inline" } else { "attachment" };
    let name = percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
    format!("{kind}; filename*=UTF-8''{name}")
}

/// Whether an `If-None-Match` value names `etag` (or is `*`).
fn matches_etag(value: &[u8], etag: &str) -> bool {
    let Ok(value) = std::str::from_utf8(value) else { return false };
    value.split(',').map(|t| t.trim().trim_start_matches("W/")).any(|t| t == "*" || t == etag)
}

/// What a `Range` header asks of a file of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum Range {
    /// No usable range (absent, another unit, several ranges, bad
    /// syntax): the whole file.
    Whole,
    /// Bytes `start..=end`.
    Part(u64, u64),
    /// A range that starts past the end: 416.
    Unsatisfiable,
}

fn byte_range(header: Option<&[u8]>, size: u64) -> Range {
    let Some(spec) = header.and_then(|v| std::str::from_utf8(v).ok()) else { return Range::Whole };
    let Some(spec) = spec.trim().strip_prefix("bytes=") else { return Range::Whole };
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((from, to)) = spec.trim().split_once('-') else { return Range::Whole };
    let number = |t: &str| {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u64>().ok())?
    };
    match (from.trim(), to.trim()) {
        ("", suffix) => match number(suffix) {
            Some(0) => Range::Unsatisfiable,
            Some(_) if size == 0 => Range::Unsatisfiable,
            Some(n) => Range::Part(size.saturating_sub(n), size - 1),
            None => Range::Whole,
        },
        (start, end) => {
            let Some(start) = number(start) else { return Range::Whole };
            let end = match end {
                "" => size.saturating_sub(1),
                end => match number(end) {
                    Some(end) if end >= start => end.min(size.saturating_sub(1)),
                    _ => return Range::Whole,
                },
            };
            if start >= size {
                Range::Unsatisfiable
            } else {
                Range::Part(start, end)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_accept_header_prefers() {
        let chrome_img = b"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
        assert!(prefers_image(chrome_img));
        assert!(prefers_image(b"image/png"));
        assert!(prefers_image(b"text/html;q=0.5, image/png"));
        let page = b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(!prefers_image(page));
        assert!(!prefers_image(b"*/*"));
        assert!(!prefers_image(b"application/json"));
        assert!(!prefers_image(b"image/png;q=0, */*"));
        assert!(!prefers_image(b""));
    }

    #[test]
    fn ranges() {
        let r = |h: &str| byte_range(Some(h.as_bytes()), 100);
        assert_eq!(byte_range(None, 100), Range::Whole);
        assert_eq!(r("bytes=0-9"), Range::Part(0, 9));
        assert_eq!(r("bytes=90-"), Range::Part(90, 99));
        assert_eq!(r("bytes=90-500"), Range::Part(90, 99));
        assert_eq!(r("bytes=-10"), Range::Part(90, 99));
        assert_eq!(r("bytes=-500"), Range::Part(0, 99));
        assert_eq!(r("bytes=100-"), Range::Unsatisfiable);
        assert_eq!(r("bytes=-0"), Range::Unsatisfiable);
        assert_eq!(r("bytes=5-2"), Range::Whole);
        assert_eq!(r("bytes=0-1,5-6"), Range::Whole);
        assert_eq!(r("items=0-1"), Range::Whole);
        assert_eq!(r("bytes=x-1"), Range::Whole);
        assert_eq!(byte_range(Some(b"bytes=0-"), 0), Range::Unsatisfiable);
    }

    #[test]
    fn etags_and_dispositions() {
        assert!(matches_etag(b"\"abc\"", "\"abc\""));
        assert!(matches_etag(b"W/\"x\", \"abc\"", "\"abc\""));
        assert!(matches_etag(b"*", "\"abc\""));
        assert!(!matches_etag(b"\"abd\"", "\"abc\""));
        assert_eq!(
            disposition("résumé.png", "image/png"),
            "inline; filename*=UTF-8''r%C3%A9sum%C3%A9%2Epng"
        );
        assert!(disposition("x.svg", "image/svg+xml").starts_with("attachment; "));
    }
}
