//! The web client's side of the transport: its embedded files at `/` and
//! `/static/web/<version>/…`, its sign-in routes (`POST /login`,
//! `POST /logout`, `GET /login/session`, `GET /login/dev_accounts`), the
//! session cookie and CSRF checks every cookie-authenticated API request
//! goes through, and CORS (`OPTIONS` pre-flights, `--cors-origin`).
//!
//! **Cookie requests.** The cookie is `HttpOnly` and `SameSite=Strict`;
//! on top of that a request carrying it is refused (403 `CSRF_FAILED`)
//! when its `Origin` names another origin, and a state-changing one
//! (anything but `GET`/`HEAD`) also when it has no `Origin` or lacks the
//! session's token in `X-CSRF-Token` (the page gets it at sign-in and from
//! `GET /login/session`). Basic-auth requests never look at the cookie.
//!
//! **Files.** `web/` is embedded by the `FILES` table. `/` serves
//! `index.html` with `{{STATIC}}` replaced by `/static/web/<version>`,
//! the version being a digest of every file, so the other files are
//! cached for a year and a new build changes their names. Each file is
//! gzip-compressed once, at first use, and served so when the client
//! accepts it and it is smaller by a tenth.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use md5::{Digest, Md5};
use serde_json::json;

use super::conn;
use super::ratelimit::{Class, Standing};
use super::response::{self, Head, Response};
use super::{Service, Session};
use crate::api::web_login::{self, COOKIE, SESSION_LIFETIME_SECS};
use crate::error::{ApiError, ApiResult};
use crate::state::web_sessions::WebSession;
use crate::state::{Realm, User};

/// Where the versioned files are served.
const STATIC_PREFIX: &str = "/static/web/";

/// What the client's pages may do: load natter's own scripts, styles and
/// images and talk to natter; no inline script, no `eval`, no plugins, no
/// framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The embedded files: name under `web/`, media type, bytes.
static FILES: &[(&str, &str, &[u8])] = &[
    ("index.html", "text/html; charset=utf-8", include_bytes!("../../web/index.html")),
    ("style.css", "text/css; charset=utf-8", include_bytes!("../../web/style.css")),
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("../../web/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_bytes!("../../web/api.js")),
    ("narrow.js", "text/javascript; charset=utf-8", include_bytes!("../../web/narrow.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_bytes!("../../web/dom.js")),
    ("render.js", "text/javascript; charset=utf-8", include_bytes!("../../web/render.js")),
    ("rules.js", "text/javascript; charset=utf-8", include_bytes!("../../web/rules.js")),
    ("favicon.svg", "image/svg+xml", include_bytes!("../../web/favicon.svg")),
];

/// One servable file, with its compressed form when that helps.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: Vec<u8>,
    gzip: Option<Vec<u8>>,
}

/// Every file, prepared once.
struct Assets {
    /// Digest of every file's name and bytes (hex, 16 characters).
    version: String,
    files: Vec<Asset>,
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut digest = Md5::new();
        for (name, _, bytes) in FILES {
            digest.update(name.as_bytes());
            digest.update((bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
        }
        let version: String =
            digest.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
        let prefix = format!("{STATIC_PREFIX}{version}");
        let files = FILES
            .iter()
            .map(|&(name, content_type, bytes)| {
                let bytes = if name == "index.html" {
                    String::from_utf8_lossy(bytes).replace("{{STATIC}}", &prefix).into_bytes()
                } else {
                    bytes.to_vec()
                };
                let gzip = gzip(&bytes).filter(|z| z.len() * 10 < bytes.len() * 9);
                Asset { name, content_type, bytes, gzip }
            })
            .collect();
        Assets { version, files }
    })
}

fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
}

/// Prepares (digests and compresses) the files at start-up, on a thread
/// of its own: compression needs more stack than a coroutine has.
pub fn prepare() {
    std::thread::spawn(|| {
        assets();
    })
    .join()
    .expect("preparing the web client's files");
}

/// Whether `path` is one of this module's (outside `/api/v1`).
pub(super) fn owns(path: &str) -> bool {
    path == "/"
        || path.starts_with(STATIC_PREFIX)
        || path == "/login"
        || path.starts_with("/login/")
        || path == "/logout"
}

/// The request headers this module reads.
pub(super) struct WebHeaders<'a> {
    /// `Cookie`.
    pub cookie: Option<&'a [u8]>,
    /// `Origin`.
    pub origin: Option<&'a [u8]>,
    /// `X-CSRF-Token`.
    pub csrf: Option<&'a [u8]>,
}

impl WebHeaders<'_> {
    /// The session cookie's value, if sent.
    pub fn session_token(&self) -> Option<&str> {
        let cookies = std::str::from_utf8(self.cookie?).ok()?;
        cookies.split(';').find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then_some(value)
        })
    }

    fn origin(&self) -> Option<&str> {
        self.origin.map(|o| std::str::from_utf8(o).unwrap_or("null"))
    }
}

/// Whether `origin` is the origin the request was sent to (`host`).
fn same_origin(origin: &str, host: &str) -> bool {
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|rest| !host.is_empty() && rest.eq_ignore_ascii_case(host))
}

fn csrf_failed(why: &str) -> ApiError {
    ApiError::forbidden_code("CSRF_FAILED", format!("CSRF error: {why}"))
}

/// The Origin rule: a cross-origin `Origin` is always refused; a
/// state-changing request must say its origin.
fn check_origin(method: &str, host: &str, web: &WebHeaders) -> ApiResult<()> {
    match web.origin() {
        Some(origin) if !same_origin(origin, host) => Err(csrf_failed("Origin is not this site")),
        None if !is_safe(method) => Err(csrf_failed("Origin header missing")),
        _ => Ok(()),
    }
}

fn is_safe(method: &str) -> bool {
    matches!(method, "GET" | "HEAD")
}

/// The account a request's session cookie authenticates as, with the
/// Origin and CSRF-token checks; `None` when it sends no cookie.
pub(super) fn cookie_caller(
    service: &Service,
    realm: &Realm,
    method: &str,
    host: &str,
    web: &WebHeaders,
) -> ApiResult<Option<Arc<User>>> {
    Ok(cookie_session(service, realm, method, host, web)?.map(|(user, _)| user))
}

/// `cookie_caller`, with the session.
fn cookie_session(
    service: &Service,
    realm: &Realm,
    method: &str,
    host: &str,
    web: &WebHeaders,
) -> ApiResult<Option<(Arc<User>, WebSession)>> {
    let Some(token) = web.session_token() else { return Ok(None) };
    check_origin(method, host, web)?;
    let (user, session) = web_login::authenticate(&service.app, realm, token)?;
    if !is_safe(method) {
        let sent = web.csrf.unwrap_or_default();
        if !super::auth::constant_time_eq(sent, session.csrf_token.as_bytes()) {
            return Err(csrf_failed(if sent.is_empty() {
                "CSRF token missing"
            } else {
                "CSRF token incorrect"
            }));
        }
    }
    Ok(Some((user, session)))
}

/// The pattern of the static files' paths in the request log and
/// metrics (a file's name carries the build's version: never a label).
const STATIC_ROUTE: &str = "/static/web/{version}/{file}";

/// This module's routes, as the request log and the metrics name them;
/// in the metrics' tables they follow the API's routes
/// ([`super::router::ROUTES`]).
pub(super) const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("HEAD", "/"),
    ("GET", STATIC_ROUTE),
    ("HEAD", STATIC_ROUTE),
    ("POST", "/login"),
    ("POST", "/logout"),
    ("GET", "/login/session"),
    ("HEAD", "/login/session"),
    ("GET", "/login/dev_accounts"),
    ("HEAD", "/login/dev_accounts"),
];

/// Notes the route of a request for one of this module's paths in `seen`
/// (none, like an API path no route has, for an unknown path or method).
fn note_route(method: &str, path: &str, seen: &mut super::Seen) {
    let pattern = match path {
        "/" | "/login" | "/logout" | "/login/session" | "/login/dev_accounts" => path,
        _ if path.starts_with(STATIC_PREFIX) => STATIC_ROUTE,
        _ => return,
    };
    if let Some(i) = ROUTES.iter().position(|&(m, p)| m == method && p == pattern) {
        seen.route = ROUTES[i].1;
        seen.index = Some(super::router::ROUTES.len() + i);
    }
}

/// Answers a request for one of this module's paths (`owns`), noting its
/// route and signed-in user in `seen` for the request log and metrics.
pub(super) fn serve(
    service: &Service,
    req: &conn::Request<'_>,
    head: &super::Head<'_>,
    session: &mut Session,
    seen: &mut super::Seen,
) -> Response {
    note_route(head.method, head.path, seen);
    let mut standing = None;
    let mut reply = match route(service, req, head, session, &mut standing, seen) {
        Ok(reply) => reply,
        Err(e) => json_reply(response::error(&e), Vec::new()),
    };
    reply.rate = standing.map(|s: Standing| s.headers());
    reply
}

fn route(
    service: &Service,
    req: &conn::Request<'_>,
    head: &super::Head<'_>,
    session: &mut Session,
    standing: &mut Option<Standing>,
    seen: &mut super::Seen,
) -> ApiResult<Response> {
    let path = head.path;
    let method = head.method;
    if path == "/" || path.starts_with(STATIC_PREFIX) {
        if !is_safe(method) {
            return Err(ApiError::method_not_allowed(method));
        }
        return file(req, path);
    }
    let generation = service.app.state.users_generation.load(Ordering::Acquire);
    let realm = session.realm(generation, head.host, || service.realm_for_host(head.host))?;
    match (method, path) {
        ("POST", "/login") => {
            login(service, head, &realm, (req.body, req.peer), (standing, &mut seen.user))
        }
        ("POST", "/logout") => logout(service, head, &realm),
        ("GET" | "HEAD", "/login/session") => {
            let (user, csrf) = signed_in(service, head, &realm)?;
            seen.user = Some(user.id.0);
            Ok(signed_in_reply(&user, &csrf, None))
        }
        ("GET" | "HEAD", "/login/dev_accounts") => {
            let accounts = web_login::dev_accounts(&service.app, &realm)?;
            let accounts: Vec<_> = accounts
                .into_iter()
                .map(|(email, full_name)| json!({ "email": email, "full_name": full_name }))
                .collect();
            Ok(success(json!({ "accounts": accounts }), Vec::new()))
        }
        (_, "/login" | "/logout" | "/login/session" | "/login/dev_accounts") => {
            Err(ApiError::method_not_allowed(method))
        }
        _ => Err(ApiError::no_such_endpoint()),
    }
}

/// The session a `GET /login/session` or `POST /logout` names, checked.
fn signed_in(
    service: &Service,
    head: &super::Head<'_>,
    realm: &Realm,
) -> ApiResult<(Arc<User>, String)> {
    let (user, session) = cookie_session(service, realm, head.method, head.host, &head.web)?
        .ok_or_else(|| {
            ApiError::unauthorized("Not logged in: API authentication or user session required")
        })?;
    Ok((user, session.csrf_token))
}

/// `POST /login`: `username` and `password` (or, with `--dev`, `username`
/// alone) → the session cookie and the page's CSRF token. Counted like
/// `POST /fetch_api_key`: per IP, and blocked while failures block the
/// account or the IP.
fn login(
    service: &Service,
    head: &super::Head<'_>,
    realm: &Realm,
    (body, peer): (&[u8], Option<IpAddr>),
    (standing, seen_user): (&mut Option<Standing>, &mut Option<u64>),
) -> ApiResult<Response> {
    // A cross-site page must not sign a browser in to an account of its
    // choosing: same-origin only.
    match head.web.origin() {
        Some(origin) if same_origin(origin, head.host) => {}
        Some(_) => return Err(csrf_failed("Origin is not this site")),
        None => return Err(csrf_failed("Origin header missing")),
    }
    let mut params = crate::api::params::Params::default();
    super::request_params(&mut params, head.query, head.content_type, body)?;
    let username = params.required_string("username")?;
    let password = params.string("password");
    let account = Some((realm.id.0, username.trim()));
    let limiter = service.limiter.as_deref();
    if let Some(limiter) = limiter {
        if let Some(ip) = peer {
            super::count(standing, limiter.ip(Class::Auth, ip))?;
        }
        if let Some(blocked) = limiter.failures_blocked(account, peer) {
            return Err(super::refuse(standing, blocked));
        }
    }
    let signed_in = web_login::sign_in(&service.app, realm, &username, password.as_deref())
        .inspect_err(|e| {
            if let (Some(limiter), "AUTHENTICATION_FAILED") = (limiter, e.code) {
                limiter.failed(account, peer);
            }
        })?;
    let secure = if service.app.config.secure_cookies { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE}={}; Path=/; Max-Age={SESSION_LIFETIME_SECS}; HttpOnly; SameSite=Strict{secure}",
        signed_in.token
    );
    let user = Arc::new(signed_in.user);
    *seen_user = Some(user.id.0);
    Ok(signed_in_reply(&user, &signed_in.session.csrf_token, Some(cookie)))
}

/// `POST /logout`: ends the cookie's session and clears the cookie.
fn logout(service: &Service, head: &super::Head<'_>, realm: &Realm) -> ApiResult<Response> {
    signed_in(service, head, realm)?;
    if let Some(token) = head.web.session_token() {
        web_login::sign_out(&service.app, token)?;
    }
    let secure = if service.app.config.secure_cookies { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict{secure}");
    Ok(success(json!({}), vec![("Set-Cookie", cookie)]))
}

fn signed_in_reply(user: &User, csrf_token: &str, cookie: Option<String>) -> Response {
    let body = json!({
        "user_id": user.id.0,
        "email": user.email,
        "full_name": user.full_name,
        "csrf_token": csrf_token,
    });
    success(body, cookie.map(|c| ("Set-Cookie", c)).into_iter().collect())
}

/// `{"result":"success","msg":"",…fields}` with `headers`.
fn success(fields: serde_json::Value, headers: Vec<(&'static str, String)>) -> Response {
    let serde_json::Value::Object(fields) = fields else { unreachable!("an object") };
    json_reply(response::success(fields, Vec::new()), headers)
}

/// A JSON reply of this module: never cached, never asking for Basic
/// credentials (a 401 here must not open the browser's password dialog).
fn json_reply(mut reply: Response, mut headers: Vec<(&'static str, String)>) -> Response {
    headers.push(("Cache-Control", "no-store".to_owned()));
    headers.push(("X-Content-Type-Options", "nosniff".to_owned()));
    reply.head = Some(Box::new(Head { content_type: "application/json".to_owned(), headers }));
    reply
}

/// The headers of a cookie-authenticated API reply (`json_reply`'s).
pub(super) fn mark_cookie_reply(reply: &mut Response) {
    if reply.head.is_none() {
        let taken = std::mem::replace(reply, Response::json(0, Vec::new()));
        *reply = json_reply(taken, Vec::new());
    }
}

/// `GET /` or `GET /static/web/<version>/<name>`.
fn file(req: &conn::Request<'_>, path: &str) -> ApiResult<Response> {
    let assets = assets();
    let missing = || ApiError::not_found("No such file");
    let (name, cache) = if path == "/" {
        ("index.html", "no-cache")
    } else {
        let rest = &path[STATIC_PREFIX.len()..];
        let (version, name) = rest.split_once('/').ok_or_else(missing)?;
        // An old page may still ask for an older version: it gets today's
        // file, not cached for long.
        let cache = if version == assets.version {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        (name, cache)
    };
    let asset = assets.files.iter().find(|a| a.name == name).ok_or_else(missing)?;
    let accepts_gzip = req.header("accept-encoding").is_some_and(|v| {
        std::str::from_utf8(v).is_ok_and(|v| {
            v.split(',').any(|coding| {
                let mut parts = coding.split(';');
                let name = parts.next().unwrap_or("").trim();
                let refused = parts.any(|p| p.trim().replace(' ', "") == "q=0");
                name.eq_ignore_ascii_case("gzip") && !refused
            })
        })
    });
    let gzip = asset.gzip.as_ref().filter(|_| accepts_gzip);
    let etag =
        format!("\"{}-{}{}\"", assets.version, asset.name, if gzip.is_some() { "-gz" } else { "" });
    let mut headers = vec![
        ("ETag", etag.clone()),
        ("Cache-Control", cache.to_owned()),
        ("X-Content-Type-Options", "nosniff".to_owned()),
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY.to_owned()),
        ("Referrer-Policy", "same-origin".to_owned()),
        ("X-Frame-Options", "DENY".to_owned()),
    ];
    if asset.gzip.is_some() {
        headers.push(("Vary", "Accept-Encoding".to_owned()));
    }
    let not_modified = req.header("if-none-match").is_some_and(|v| {
        std::str::from_utf8(v).is_ok_and(|v| {
            v.split(',').map(|t| t.trim().trim_start_matches("W/")).any(|t| t == etag || t == "*")
        })
    });
    let (status, body) = match (not_modified, gzip) {
        (true, _) => (304, Vec::new()),
        (false, Some(gzip)) => {
            headers.push(("Content-Encoding", "gzip".to_owned()));
            (200, gzip.clone())
        }
        (false, None) => (200, asset.bytes.clone()),
    };
    Ok(Response {
        status,
        body,
        head: Some(Box::new(Head { content_type: asset.content_type.to_owned(), headers })),
        rate: None,
    })
}

/// `OPTIONS` on an API path: the methods its route answers (`Allow`),
/// and, for the `--cors-origin` origin, the CORS grant.
pub(super) fn preflight(service: &Service, head: &super::Head<'_>, api_path: &str) -> Response {
    let methods = super::router::methods(api_path);
    if methods.is_empty() {
        return response::error(&ApiError::no_such_endpoint());
    }
    let allow = methods.join(", ");
    let mut headers = vec![("Allow", format!("{allow}, OPTIONS"))];
    if let Some(origin) = cors_origin(service, head) {
        headers.extend([
            ("Access-Control-Allow-Origin", origin.to_owned()),
            ("Access-Control-Allow-Methods", allow),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type".to_owned()),
            ("Access-Control-Max-Age", "600".to_owned()),
            ("Vary", "Origin".to_owned()),
        ]);
    }
    Response {
        status: 204,
        body: Vec::new(),
        head: Some(Box::new(Head { content_type: "text/plain".to_owned(), headers })),
        rate: None,
    }
}

/// The request's `Origin` if it is the `--cors-origin` one.
fn cors_origin<'a>(service: &'a Service, head: &super::Head<'_>) -> Option<&'a str> {
    let allowed = service.app.config.cors_origin.as_deref()?;
    let origin = head.web.origin()?;
    origin.eq_ignore_ascii_case(allowed).then_some(allowed)
}

/// Adds the CORS grant to an API reply for the `--cors-origin` origin.
pub(super) fn grant_cors(service: &Service, head: &super::Head<'_>, reply: &mut Response) {
    let Some(origin) = cors_origin(service, head) else { return };
    let grant = [
        ("Access-Control-Allow-Origin", origin.to_owned()),
        (
            "Access-Control-Expose-Headers",
            "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After".to_owned(),
        ),
        ("Vary", "Origin".to_owned()),
    ];
    match &mut reply.head {
        Some(h) => h.headers.extend(grant),
        None => {
            reply.head = Some(Box::new(Head {
                content_type: "application/json".to_owned(),
                headers: grant.into(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_web_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(name, ..)| (*name).to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "web/ and the FILES table differ");
    }

    #[test]
    fn origins_are_compared_with_the_host() {
        assert!(same_origin("http://127.0.0.1:9991", "127.0.0.1:9991"));
        assert!(same_origin("https://Chat.Example.com", "chat.example.com"));
        assert!(!same_origin("http://127.0.0.1:9992", "127.0.0.1:9991"));
        assert!(!same_origin("null", "127.0.0.1:9991"));
        assert!(!same_origin("http://evil.test", ""));
        assert!(!same_origin("http://a.test.evil", "a.test"));
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let web =
            |cookie: &'static [u8]| WebHeaders { cookie: Some(cookie), origin: None, csrf: None };
        assert_eq!(web(b"a=1; natter_session=XYZ; b=2").session_token(), Some("XYZ"));
        assert_eq!(web(b"natter_session=").session_token(), None);
        assert_eq!(web(b"xnatter_session=1").session_token(), None);
    }

    #[test]
    fn the_index_names_the_versioned_files_and_compresses() {
        let assets = assets();
        let index = assets.files.iter().find(|a| a.name == "index.html").unwrap();
        let text = String::from_utf8(index.bytes.clone()).unwrap();
        assert!(text.contains(&format!("/static/web/{}/app.js", assets.version)));
        assert!(!text.contains("{{STATIC}}"));
        assert!(!text.contains("<script>"), "no inline script");
        let app = assets.files.iter().find(|a| a.name == "app.js").unwrap();
        assert!(app.gzip.as_ref().is_some_and(|z| z.len() < app.bytes.len() / 2));
    }
}
