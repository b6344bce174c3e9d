//! HTTP: natter's own connection loop (`conn.rs`) below, the `Service`
//! that answers each request above it; no domain rules.
//!
//! For each request: find the route, decode parameters (query string, then
//! a form-urlencoded or multipart body, which wins), resolve the realm from
//! the Host header, authenticate, run the handler with panics caught, and
//! build the JSON envelope. Framing, limits and time-outs are `conn.rs`'s.

pub mod alarm;
pub mod auth;
pub mod conn;
pub mod downloads;
pub mod health;
pub mod metrics;
pub mod multipart;
pub mod ratelimit;
pub mod response;
pub mod router;
mod spawn;
pub mod web;

use std::net::IpAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::api::params::Params;
use crate::api::{App, Call};
use crate::error::{ApiError, ApiResult};
use crate::state::{Realm, User};
use health::Health;
use ratelimit::{Class, Limiter, Standing};
use response::Response;
use router::{Access, Match};

/// Answers natter's API requests; one per server, shared by every
/// connection's coroutine.
#[derive(Clone)]
pub struct Service {
    /// Shared application state.
    pub app: Arc<App>,
    /// Readiness beyond the state (shutdown begun).
    pub health: Arc<Health>,
    /// The rate limits' buckets; `None` with `--rate-limit off`.
    pub limiter: Option<Arc<Limiter>>,
    /// Requests logged so far: the next one's id is one more.
    logged: Arc<AtomicU64>,
    /// `GET /metrics` and the request metrics; `None` without
    /// `--metrics-token`.
    pub metrics: Option<Arc<metrics::Metrics>>,
    /// The listener's connection counts.
    pub connections: Arc<conn::ConnFigures>,
}

/// What the request log says of a request beyond its line and reply.
#[derive(Default)]
struct Seen {
    /// The route's pattern (never the path: it may name ids).
    route: &'static str,
    /// The route's position in the routing table.
    index: Option<usize>,
    /// The authenticated caller.
    user: Option<u64>,
}

impl Service {
    /// The service for `app`, with rate limits as its configuration says.
    pub fn new(app: Arc<App>, health: Arc<Health>) -> Self {
        web::prepare();
        let limiter = app.config.rate_limits.clone().map(|rules| Arc::new(Limiter::new(rules)));
        let metrics = (app.config.metrics_token.is_some() || app.config.metrics_listen.is_some())
            .then(|| Arc::new(metrics::Metrics::new(app.config.metrics_token.clone())));
        let connections = Arc::default();
        Service { app, health, limiter, logged: Arc::default(), metrics, connections }
    }
}

/// The request line and headers natter cares about, borrowed from the
/// connection's buffer.
struct Head<'a> {
    method: &'a str,
    path: &'a str,
    query: &'a str,
    host: &'a str,
    authorization: Option<&'a [u8]>,
    /// As sent: a multipart boundary is case-sensitive.
    content_type: &'a str,
    user_agent: &'a str,
    /// The web client's headers: its cookie, `Origin`, CSRF token.
    web: web::WebHeaders<'a>,
    /// Every header, for the routes that read more than these.
    headers: &'a [httparse::Header<'a>],
}

impl conn::Handler for Service {
    type Session = Session;

    fn handle(&self, req: &conn::Request<'_>, session: &mut Session) -> Response {
        guarded(|| self.handle(req, session))
    }

    /// Upload routes stream their bodies to the file store's staging
    /// directory, up to the upload limit — for a caller whose credentials
    /// are good: anyone else's body gets the small limit, and the 401 (or
    /// 413) that follows.
    fn spool(
        &self,
        method: &str,
        target: &str,
        headers: &[httparse::Header],
    ) -> Option<conn::Spool> {
        let path = target.split('?').next().unwrap_or("");
        let path = path.strip_prefix("/api/v1")?.trim_end_matches('/');
        if !router::is_upload(method, path) {
            return None;
        }
        let header = |name: &str| {
            headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
        };
        // A `PATCH` carries a file only in a multipart body; a form body
        // is read as any other request's.
        let media_type = header_text(header("content-type")).split(';').next().unwrap_or("");
        if method != "POST" && !media_type.trim().eq_ignore_ascii_case("multipart/form-data") {
            return None;
        }
        let host = header_text(header("host"));
        let realm = self.realm_for_host(host).ok()?;
        match header("authorization") {
            Some(authorization) => {
                auth::authenticate(&self.app.state, &realm, Some(authorization)).ok()?;
            }
            None => {
                let web = web::WebHeaders {
                    cookie: header("cookie"),
                    origin: header("origin"),
                    csrf: header("x-csrf-token"),
                };
                web::cookie_caller(self, &realm, method, host, &web).ok()??;
            }
        }
        let uploads = &self.app.config.uploads;
        Some(conn::Spool {
            dir: self.app.files.staging().to_owned(),
            limit: uploads.max_body_bytes(),
            too_large: response::error(&ApiError::file_too_large(uploads.max_file_mib)),
        })
    }
}

/// What a connection remembers between its requests: the realm its `Host`
/// header named and the account its `Authorization` header authenticated
/// as, both shared with the state. Clients send the same two headers on
/// every request of a connection, so the second request on resolves them
/// with two byte comparisons instead of a realm lookup, a base64 decode,
/// an e-mail lookup and a key comparison.
///
/// Valid only while `State::users_generation` is what it was before they
/// were read: `apply` bumps it after every mutation that may change an
/// account or a realm (a new key, a deactivation, an e-mail or role
/// change…), so the first request after such a change resolves both
/// afresh. Only successes are kept, and only for the connection that sent
/// them: a header is never compared with another client's.
///
/// It also keeps the client name its `User-Agent` gave (compared the same
/// way) and the buffers of its last request's parameters, so that a
/// request allocates neither.
#[derive(Default)]
pub struct Session {
    /// The users generation the realm and account were read at.
    generation: u64,
    /// The `Host` header `realm` was resolved from.
    host: Vec<u8>,
    realm: Option<Arc<Realm>>,
    /// The `Authorization` header `caller` authenticated with, for `realm`.
    authorization: Vec<u8>,
    caller: Option<Arc<User>>,
    /// The `User-Agent` header `client` was read from.
    user_agent: Vec<u8>,
    /// Its client name, shared with each call (and each message sent).
    client: Option<Arc<str>>,
    /// The last request's parameters, emptied (`Params::reuse`): their
    /// buffers serve the next request.
    params: Params,
}

impl Session {
    /// The realm of `host`, remembered or resolved with `resolve`.
    fn realm(
        &mut self,
        generation: u64,
        host: &str,
        resolve: impl FnOnce() -> ApiResult<Arc<Realm>>,
    ) -> ApiResult<Arc<Realm>> {
        if let Some(realm) = &self.realm {
            if self.generation == generation && self.host == host.as_bytes() {
                return Ok(Arc::clone(realm));
            }
        }
        // Forget everything first: an error leaves nothing behind.
        self.realm = None;
        self.caller = None;
        let realm = resolve()?;
        self.generation = generation;
        self.host.clear();
        self.host.extend_from_slice(host.as_bytes());
        self.realm = Some(Arc::clone(&realm));
        Ok(realm)
    }

    /// The account `authorization` authenticates as in the realm `realm`
    /// just returned, remembered or resolved with `resolve`.
    fn caller(
        &mut self,
        authorization: &[u8],
        resolve: impl FnOnce() -> ApiResult<Arc<User>>,
    ) -> ApiResult<Arc<User>> {
        if let Some(caller) = &self.caller {
            if self.authorization == authorization {
                return Ok(Arc::clone(caller));
            }
        }
        self.caller = None;
        let caller = resolve()?;
        self.authorization.clear();
        self.authorization.extend_from_slice(authorization);
        self.caller = Some(Arc::clone(&caller));
        Ok(caller)
    }

    /// The client name (Zulip's `client`: the first token of the
    /// `User-Agent`), remembered while the header stays the same.
    fn client(&mut self, user_agent: &str) -> Arc<str> {
        match &self.client {
            Some(client) if self.user_agent == user_agent.as_bytes() => Arc::clone(client),
            _ => {
                let client: Arc<str> = user_agent.split(['/', ' ']).next().unwrap_or("").into();
                self.user_agent.clear();
                self.user_agent.extend_from_slice(user_agent.as_bytes());
                self.client = Some(Arc::clone(&client));
                client
            }
        }
    }
}

impl Service {
    fn handle(&self, req: &conn::Request<'_>, session: &mut Session) -> Response {
        let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
        // The four headers natter reads, in one pass (the first of each
        // name counts, as `Request::header` finds it).
        let mut found: [Option<&[u8]>; 7] = [None; 7];
        for h in req.headers {
            let slot = match h.name.len() {
                4 if h.name.eq_ignore_ascii_case("host") => 0,
                13 if h.name.eq_ignore_ascii_case("authorization") => 1,
                12 if h.name.eq_ignore_ascii_case("content-type") => 2,
                10 if h.name.eq_ignore_ascii_case("user-agent") => 3,
                6 if h.name.eq_ignore_ascii_case("cookie") => 4,
                6 if h.name.eq_ignore_ascii_case("origin") => 5,
                12 if h.name.eq_ignore_ascii_case("x-csrf-token") => 6,
                _ => continue,
            };
            found[slot].get_or_insert(h.value);
        }
        if let Some(reply) = health::answer(&self.app, &self.health, req.method, path) {
            return reply;
        }
        if let (metrics::PATH, Some(metrics)) = (path, &self.metrics) {
            if metrics.on_main_listener() {
                return metrics.answer(self, found[1]);
            }
        }
        // Outside `/api/v1`: Zulip's emoji data, unauthenticated and
        // without the JSON envelope; uploaded files and custom emoji images
        // (`downloads`), below.
        if path == crate::view::emoji::EMOJI_DATA_PATH && matches!(req.method, "GET" | "HEAD") {
            return Response::json(200, crate::view::emoji::emoji_data().to_vec());
        }
        // Counted for the drain at shutdown (before looking whether it has
        // begun: the drain then sees this request), except long-polls,
        // which may wait for a heartbeat and are cut (their queues are
        // saved).
        let _in_flight =
            (req.method != "GET" || path != "/api/v1/events").then(|| self.health.enter());
        if self.health.shutting_down() {
            return response::error(&ApiError::not_ready("Shutting down"));
        }
        let head = Head {
            method: req.method,
            path,
            query,
            host: header_text(found[0]),
            authorization: found[1],
            content_type: header_text(found[2]),
            user_agent: header_text(found[3]),
            web: web::WebHeaders { cookie: found[4], origin: found[5], csrf: found[6] },
            headers: req.headers,
        };
        // The request log costs this one check while it is filtered out.
        let logged = tracing::enabled!(target: "natter::request", tracing::Level::INFO);
        let started = (logged || self.metrics.is_some()).then(Instant::now);
        let mut seen = Seen::default();
        if web::owns(head.path) {
            let reply = web::serve(self, req, &head, session, &mut seen);
            return self.record(req.method, &seen, reply, started, logged);
        }
        if req.method == "OPTIONS" {
            if let Some(api_path) = head.path.strip_prefix("/api/v1") {
                return web::preflight(self, &head, api_path);
            }
        }
        if head.path.starts_with("/user_uploads/") {
            return downloads::serve(self, req, &head, session);
        }
        if head.path.starts_with("/user_avatars/") {
            return downloads::serve_emoji(self, req, &head, session);
        }
        if head.path.starts_with("/avatar/") {
            return downloads::serve_avatar(self, &head, session);
        }
        let mut standing = None;
        let dispatched = self.dispatch(
            &head,
            req.body,
            req.spooled,
            req.peer,
            session,
            (&mut standing, &mut seen),
        );
        let mut reply = match dispatched {
            Ok((fields, raw, ignored, Some(sorted))) => {
                debug_assert!(fields.is_empty() && raw.is_empty(), "a reply written twice");
                response::success_sorted(sorted, ignored)
            }
            Ok((fields, raw, ignored, None)) => response::success_with(fields, raw, ignored),
            Err(e) => response::error(&e),
        };
        reply.rate = standing.map(|s: Standing| s.headers());
        if head.authorization.is_none() && head.web.session_token().is_some() {
            web::mark_cookie_reply(&mut reply);
        }
        web::grant_cors(self, &head, &mut reply);
        self.record(req.method, &seen, reply, started, logged)
    }

    /// Counts an answered request in the metrics and writes its line in
    /// the request log (each when on: `started` is set for either).
    fn record(
        &self,
        method: &str,
        seen: &Seen,
        reply: Response,
        started: Option<Instant>,
        logged: bool,
    ) -> Response {
        if let Some(started) = started {
            let seconds = started.elapsed().as_secs_f64();
            if let Some(metrics) = &self.metrics {
                metrics.observe(method, seen.index, reply.status, seconds);
            }
            if logged {
                self.log(method, seen, &reply, seconds);
            }
        }
        reply
    }

    /// The request's line in the log: method, route pattern, status,
    /// duration, user id, request id, reply bytes.
    fn log(&self, method: &str, seen: &Seen, reply: &Response, seconds: f64) {
        let id = self.logged.fetch_add(1, Ordering::Relaxed) + 1;
        let route = if seen.route.is_empty() { "-" } else { seen.route };
        tracing::info!(
            target: "natter::request",
            method,
            route,
            status = reply.status,
            ms = seconds * 1000.0,
            user = seen.user,
            id,
            bytes = reply.body.len(),
            "request"
        );
    }

    /// Routes, authenticates, counts against the rate limits (`standing`:
    /// where the caller stands with the bucket that counted it) and runs
    /// the handler.
    fn dispatch(
        &self,
        head: &Head,
        body: &[u8],
        spooled: Option<&crate::files::Staged>,
        peer: Option<IpAddr>,
        session: &mut Session,
        (standing, seen): (&mut Option<Standing>, &mut Seen),
    ) -> ApiResult<Dispatched> {
        let app = &*self.app;
        let Some(api_path) = head.path.strip_prefix("/api/v1") else {
            return Err(ApiError::no_such_endpoint());
        };
        let (route, path_args) = match router::find(head.method, api_path) {
            Match::Found(route, args) => {
                seen.route = route.pattern;
                seen.index = Some(router::index_of(route));
                (route, args)
            }
            Match::WrongMethod => return Err(ApiError::method_not_allowed(head.method)),
            Match::NotFound => return Err(ApiError::no_such_endpoint()),
        };
        let mut params = std::mem::take(&mut session.params);
        params.reuse();
        if route.pattern == WEBHOOK_ROUTE {
            webhook_params(&mut params, head, body)?;
        } else {
            request_params(&mut params, head.query, head.content_type, body)?;
        }
        let files = match spooled {
            Some(staged) => {
                let parts = spooled_parts(app, head.content_type, staged)?;
                params.add_pairs(parts.fields);
                parts.files
            }
            None => Vec::new(),
        };
        // Read before the realm and account (`Session`).
        let generation = app.state.users_generation.load(Ordering::Acquire);
        let realm = session.realm(generation, head.host, || self.realm_for_host(head.host))?;
        let limiter = self.limiter.as_deref();
        let class = limiter.map(|_| Class::of(head.method, route.pattern));
        // A log-in attempt: its own budget per IP, and none while failed
        // attempts block the account or the IP.
        let login = match (limiter, class) {
            (Some(limiter), Some(Class::Auth)) => {
                let username = params.raw("username").map(str::to_owned);
                if let Some(ip) = peer {
                    count(standing, limiter.ip(Class::Auth, ip))?;
                }
                let account = username.as_deref().map(|u| (realm.id.0, u.trim()));
                if let Some(blocked) = limiter.failures_blocked(account, peer) {
                    return Err(refuse(standing, blocked));
                }
                Some((limiter, username))
            }
            _ => None,
        };
        let caller = match (route.access, head.authorization) {
            (Access::Public, _) => None,
            // The web client: its session cookie, same-origin only.
            (Access::User | Access::Optional, None) if head.web.session_token().is_some() => {
                web::cookie_caller(self, &realm, head.method, head.host, &head.web)?
            }
            (Access::Optional, None) => None,
            (Access::User, None) => Some(auth::authenticate(&app.state, &realm, None)?),
            (Access::User | Access::Optional, Some(authorization)) => {
                Some(session.caller(authorization, || {
                    let Some(limiter) = limiter else {
                        return auth::authenticate(&app.state, &realm, Some(authorization));
                    };
                    let email = auth::basic_email(authorization);
                    let account = email.as_deref().map(|e| (realm.id.0, e));
                    if let Some(blocked) = limiter.failures_blocked(account, peer) {
                        return Err(refuse(standing, blocked));
                    }
                    let result = auth::authenticate(&app.state, &realm, Some(authorization));
                    if matches!(&result, Err(e) if e.code == "INVALID_API_KEY") {
                        limiter.failed(account, peer);
                    }
                    result
                })?)
            }
        };
        seen.user = caller.as_ref().map(|u| u.id.0);
        if let (Some(limiter), Some(class)) = (limiter, class.filter(|&c| c != Class::Poll)) {
            let by = |class| match (&caller, peer) {
                (Some(user), _) => Some(limiter.user(class, user.id.0)),
                (None, Some(ip)) => Some(limiter.ip(class, ip)),
                (None, None) => None,
            };
            if let Some(api) = by(Class::Api) {
                count(standing, api)?;
            }
            if class == Class::Signup {
                if let Some(signup) = by(Class::Signup) {
                    count(standing, signup)?;
                }
            }
        }
        let mut call = Call {
            realm,
            caller,
            params,
            path: path_args,
            client: session.client(head.user_agent),
            raw_fields: Vec::new(),
            sorted_reply: None,
            files,
        };
        let fields = (route.handler)(app, &mut call);
        if let (Some((limiter, username)), Err(e)) = (login, &fields) {
            if e.code == "AUTHENTICATION_FAILED" {
                limiter.failed(username.as_deref().map(|u| (call.realm.id.0, u.trim())), peer);
            }
        }
        let unused = fields.as_ref().map_or_else(|_| Vec::new(), |_| call.params.unused());
        session.params = call.params;
        Ok((fields?, call.raw_fields, unused, call.sorted_reply))
    }

    /// The realm a Host header names: `<subdomain>.<host>` for a realm's
    /// subdomain, otherwise the realm on the bare host (subdomain `""`).
    fn realm_for_host(&self, host: &str) -> ApiResult<Arc<Realm>> {
        let state = &self.app.state;
        let name = strip_port(host);
        let base = strip_port(self.app.external_host());
        // `<sub>.<suffix>` matched case-insensitively without allocating:
        // the length of `<sub>` (the byte before the suffix is an ASCII
        // `.`, so slicing there is on a char boundary).
        let strip_suffix = |name: &str, suffix: &str| -> Option<usize> {
            let at = name.len().checked_sub(suffix.len() + 1)?;
            let bytes = name.as_bytes();
            (bytes[at] == b'.' && bytes[at + 1..].eq_ignore_ascii_case(suffix.as_bytes()))
                .then_some(at)
        };
        let subdomain = if name.eq_ignore_ascii_case(base)
            || name.eq_ignore_ascii_case("localhost")
            || name.parse::<std::net::IpAddr>().is_ok()
        {
            ""
        } else if let Some(at) = strip_suffix(name, base) {
            &name[..at]
        } else {
            strip_suffix(name, "localhost").map_or("", |at| &name[..at])
        };
        // `realm_by_subdomain` compares lowercased.
        state.realm_by_subdomain_shared(subdomain).ok_or_else(|| ApiError::no_such_realm(host))
    }
}

/// Records where the caller stands; a refusal if the bucket was empty.
fn count(standing: &mut Option<Standing>, now: Standing) -> ApiResult<()> {
    match now.retry_after {
        Some(_) => Err(refuse(standing, now)),
        None => {
            *standing = Some(now);
            Ok(())
        }
    }
}

/// The 429 for `blocked`, whose headers the reply carries.
fn refuse(standing: &mut Option<Standing>, blocked: Standing) -> ApiError {
    *standing = Some(blocked);
    blocked.error()
}

/// A handler's success: its fields, its pre-serialized fields, the
/// parameters it did not read, and its reply written as text if it did.
type Dispatched = (
    crate::api::Reply,
    crate::api::RawFields,
    Vec<String>,
    Option<crate::view::json_text::SortedMembers>,
);

/// The request variables of a query string and a body of `content_type`,
/// decoded as for every request. Not API: the fuzz targets' entry point.
#[doc(hidden)]
pub fn decode_params(query: &str, content_type: &str, body: &[u8]) -> ApiResult<Params> {
    let mut params = Params::default();
    request_params(&mut params, query, content_type, body)?;
    Ok(params)
}

/// Request variables as Zulip reads them, for every method: the query
/// string, then the body (form-urlencoded or multipart text parts), which
/// wins when both name a variable. A body of another type is refused.
fn request_params(
    params: &mut Params,
    query: &str,
    content_type: &str,
    body: &[u8],
) -> ApiResult<()> {
    params.add_urlencoded(query.as_bytes());
    if !body.is_empty() {
        // The media type is case-insensitive; its parameters (a boundary)
        // are not, so the header is passed on as sent.
        let media_type = content_type.split(';').next().unwrap_or("").trim();
        let is = |name: &str| media_type.eq_ignore_ascii_case(name);
        match media_type {
            _ if media_type.is_empty() || is("application/x-www-form-urlencoded") => {
                params.add_urlencoded(body)
            }
            _ if is("multipart/form-data") => {
                let fields = multipart::text_fields(content_type, body).map_err(|why| {
                    ApiError::bad_request(format!("Malformed multipart/form-data body: {why}"))
                })?;
                params.add_pairs(fields);
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "Unsupported Content-Type '{content_type}': send \
                     application/x-www-form-urlencoded or multipart/form-data"
                )))
            }
        }
    }
    Ok(())
}

/// The incoming webhooks' route, whose handler reads the raw body and
/// headers.
const WEBHOOK_ROUTE: &str = "/external/{integration}";

/// A webhook request's variables: the query string and a form body as
/// usual; any other body (JSON, as most services send) is kept raw, with
/// the headers (the event type is often a header).
fn webhook_params(params: &mut Params, head: &Head, body: &[u8]) -> ApiResult<()> {
    let media_type = head.content_type.split(';').next().unwrap_or("").trim();
    let form = media_type.eq_ignore_ascii_case("application/x-www-form-urlencoded")
        || media_type.eq_ignore_ascii_case("multipart/form-data");
    let raw_body = if form {
        request_params(params, head.query, head.content_type, body)?;
        Vec::new()
    } else {
        params.add_urlencoded(head.query.as_bytes());
        body.to_vec()
    };
    let headers = head
        .headers
        .iter()
        .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    params.set_payload(crate::api::params::Payload { body: raw_body, headers });
    Ok(())
}

/// The text fields and staged file parts of an upload route's body,
/// read on a thread of its own.
fn spooled_parts(
    app: &App,
    content_type: &str,
    staged: &crate::files::Staged,
) -> ApiResult<multipart::SpooledParts> {
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if !media_type.eq_ignore_ascii_case("multipart/form-data") {
        return Err(ApiError::bad_request("You must specify a file to upload"));
    }
    let (content_type, body) = (content_type.to_owned(), staged.path().to_owned());
    let staging = app.files.staging().to_owned();
    let limits = app.config.uploads;
    crate::files::blocking(move || {
        multipart::spooled_parts(&content_type, &body, &staging, limits.max_file_bytes())
    })
    .map_err(|e| match e {
        multipart::PartsError::FileTooLarge => ApiError::file_too_large(limits.max_file_mib),
        multipart::PartsError::Malformed(why) => {
            ApiError::bad_request(format!("Malformed multipart/form-data body: {why}"))
        }
        multipart::PartsError::Io(e) => {
            tracing::error!("reading an upload's body: {e}");
            ApiError::internal()
        }
    })
}

/// A header's value as text; `""` if absent or not UTF-8.
fn header_text(value: Option<&[u8]>) -> &str {
    value.and_then(|v| std::str::from_utf8(v).ok()).unwrap_or("")
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split(']').next().map(|h| h.trim_start_matches('[')).unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// Runs a request with panics caught: a bug in one handler answers JSON 500
/// (and is logged) instead of dropping the connection.
fn guarded(handle: impl FnOnce() -> Response) -> Response {
    match catch_unwind(AssertUnwindSafe(handle)) {
        Ok(response) => response,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!("handler panicked: {what}");
            response::error(&ApiError::internal())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_handler_becomes_a_json_500() {
        let r = guarded(|| panic!("boom"));
        assert_eq!(r.status, 500);
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["result"], "error");
        assert_eq!(body["code"], "INTERNAL_SERVER_ERROR");
        assert!(!body["msg"].as_str().unwrap().contains("boom"), "no internals leak");
        assert_eq!(guarded(|| response::error(&ApiError::bad_request("x"))).status, 400);
    }

    /// `request_params` into fresh parameters.
    fn request_params(query: &str, content_type: &str, body: &[u8]) -> ApiResult<Params> {
        let mut params = Params::default();
        super::request_params(&mut params, query, content_type, body).map(|()| params)
    }

    #[test]
    fn variables_come_from_query_and_body_and_the_body_wins() {
        let mut p = request_params("a=q&b=q", "", b"b=body&c=body").unwrap();
        assert_eq!(p.string("a").as_deref(), Some("q"));
        assert_eq!(p.string("b").as_deref(), Some("body"));
        assert_eq!(p.string("c").as_deref(), Some("body"));
        let form = "application/x-www-form-urlencoded; charset=UTF-8";
        assert_eq!(request_params("x=1", form, b"x=2").unwrap().string("x").as_deref(), Some("2"));
        let multipart = b"--XY\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\nm\r\n\
--XY\r\nContent-Disposition: form-data; name=\"b_file\"; filename=\"f\"\r\n\r\nfile\r\n--XY--\r\n";
        let mut p = request_params("b=q", "multipart/form-data; boundary=XY", multipart).unwrap();
        assert_eq!(p.string("b").as_deref(), Some("m"));
        assert!(p.unused().is_empty(), "a file part is not a variable: {:?}", p.unused());
        let e =
            request_params("", "multipart/form-data; boundary=XY", b"--XY\r\nbroken").unwrap_err();
        assert_eq!((e.status, e.code), (400, "BAD_REQUEST"));
        let e = request_params("", "application/json", b"{}").unwrap_err();
        assert!(e.msg.contains("Unsupported Content-Type"));
        // No body: any content type is fine (query only).
        assert!(request_params("a=1", "application/json", b"").is_ok());
    }

    /// A connection's client name follows its `User-Agent`: shared while
    /// the header repeats, read afresh when it changes.
    #[test]
    fn the_client_name_is_remembered_per_user_agent() {
        let mut session = Session::default();
        let first = session.client("ZulipPython/0.9.0 (Linux)");
        assert_eq!(&*first, "ZulipPython");
        assert!(Arc::ptr_eq(&first, &session.client("ZulipPython/0.9.0 (Linux)")));
        assert_eq!(&*session.client("curl/8.5.0"), "curl");
        assert_eq!(&*session.client(""), "");
        assert_eq!(&*session.client("ZulipTerminal/0.7"), "ZulipTerminal");
    }

    #[test]
    fn ports_are_stripped_from_hosts() {
        assert_eq!(strip_port("lear.localhost:9991"), "lear.localhost");
        assert_eq!(strip_port("example.com"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "::1");
    }
}
