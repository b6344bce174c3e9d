//! Success and error envelopes, serialized to bytes with their status, and
//! the bytes of a response head on the wire.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::api::{RawFields, Reply};
use crate::config::WireLimits;
use crate::error::ApiError;
use crate::view::json_text::SortedMembers;

/// A finished response: status and JSON body.
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Serialized JSON, or a file's bytes (`head` then says so).
    pub body: Vec<u8>,
    /// For a body that is not JSON (a downloaded file, a redirect, the
    /// metrics): its media type and extra headers.
    pub head: Option<Box<Head>>,
    /// The rate limit the request was counted against, sent as Zulip's
    /// `X-RateLimit-*` headers (and `Retry-After` once it is hit).
    pub rate: Option<RateHeaders>,
}

/// The head of a response that is not JSON.
#[derive(Debug, Default)]
pub struct Head {
    /// `Content-Type`.
    pub content_type: String,
    /// Further headers, written as given (names and values are the
    /// server's own: no request text reaches them unchecked).
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    /// A JSON response with no rate-limit headers.
    pub fn json(status: u16, body: Vec<u8>) -> Response {
        Response { status, body, head: None, rate: None }
    }
}

/// Zulip's rate-limit headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
/// `X-RateLimit-Reset` (Unix time in seconds when the budget is whole
/// again) and, on a 429, `Retry-After` (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateHeaders {
    /// Requests per window.
    pub limit: u32,
    /// Requests left now.
    pub remaining: u32,
    /// When the budget is whole again, in Unix seconds.
    pub reset: u64,
    /// Whole seconds to wait before the next request can pass (429 only).
    pub retry_after: Option<u64>,
}

/// `{"result":"success","msg":"",…fields}` plus the ignored parameters.
pub fn success(fields: Reply, ignored: Vec<String>) -> Response {
    success_with(fields, RawFields::new(), ignored)
}

/// `success`, plus fields the handler serialized itself (`Call::raw_fields`),
/// appended to the object as they are.
pub fn success_with(mut fields: Reply, raw: RawFields, ignored: Vec<String>) -> Response {
    fields.insert("result".into(), "success".into());
    fields.insert("msg".into(), "".into());
    if !ignored.is_empty() {
        fields.insert("ignored_parameters_unsupported".into(), ignored.into());
    }
    debug_assert!(raw.iter().all(|(k, _)| !fields.contains_key(k)), "a field named twice");
    let extra: usize = raw.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut body = Vec::with_capacity(4096 + extra);
    serde_json::to_writer(&mut body, &Value::Object(fields)).expect("json");
    // `fields` always has `result`, so the object is `{…}` with content:
    // drop the closing brace, append `,"key":<raw>` pairs, close it again.
    body.pop();
    for (key, value) in &raw {
        body.push(b',');
        serde_json::to_writer(&mut body, key).expect("json");
        body.push(b':');
        body.extend_from_slice(value.as_bytes());
    }
    body.push(b'}');
    Response::json(200, body)
}

/// `success` for a reply the handler wrote as text (`Call::sorted_reply`):
/// the envelope's members in key order among the handler's, the same
/// bytes as `success` of the equivalent map.
pub fn success_sorted(members: SortedMembers, ignored: Vec<String>) -> Response {
    let ignored_json = (!ignored.is_empty())
        .then(|| serde_json::to_vec(&ignored).expect("a list of strings serializes"));
    Response::json(200, members.into_success_body(ignored_json))
}

/// The Zulip error envelope with the error's status.
pub fn error(e: &ApiError) -> Response {
    Response::json(e.status, serde_json::to_vec(&e.body()).expect("json"))
}

/// A wire-level refusal: Zulip's generic `BAD_REQUEST` code with the status
/// that says what was wrong.
fn wire_error(status: u16, msg: String) -> ApiError {
    ApiError { status, code: "BAD_REQUEST", msg, extra: Vec::new() }
}

/// 400: a request that is not HTTP/1.x as natter reads it.
pub fn malformed(why: &str) -> ApiError {
    wire_error(400, format!("Malformed HTTP request: {why}"))
}

/// 413: a body over `--max-body-bytes`.
pub fn body_too_large(limits: &WireLimits) -> ApiError {
    wire_error(413, format!("Request body larger than {} bytes", limits.max_body_bytes))
}

/// 411: an upload sent chunked (its size must be known up front).
pub fn length_required() -> ApiError {
    wire_error(411, "Uploads must be sent with a Content-Length".into())
}

/// 416: a `Range` that starts past the end of the file.
pub fn range_not_satisfiable() -> ApiError {
    wire_error(416, "Requested range not satisfiable".into())
}

/// 431: more headers than `--max-headers`.
pub fn too_many_headers(limits: &WireLimits) -> ApiError {
    wire_error(431, format!("More than {} request headers", limits.max_headers))
}

/// 431: a request head over `--max-head-bytes`.
pub fn head_too_large(limits: &WireLimits) -> ApiError {
    wire_error(431, format!("Request head larger than {} bytes", limits.max_head_bytes))
}

/// 408: a started request stopped arriving.
pub fn request_timeout() -> ApiError {
    wire_error(408, "The request was not received in time".into())
}

/// 501: a transfer coding other than `chunked`.
pub fn not_implemented_coding() -> ApiError {
    wire_error(501, "Only the chunked transfer coding is supported".into())
}

/// 503: the connection cap (`--max-connections`) is reached.
pub fn too_many_connections() -> ApiError {
    wire_error(503, "Too many open connections; try again shortly".into())
}

/// The reason phrase for a status.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// Appends the status line and headers of `reply` to `out`.
pub fn write_head(out: &mut Vec<u8>, reply: &Response, keep_alive: bool, http10: bool) {
    let mut digits = itoa_buf();
    if reply.status == 200 {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(itoa(&mut digits, reply.status as u64));
        out.push(b' ');
        out.extend_from_slice(reason(reply.status).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Server: natter\r\nDate: ");
    append_date(out);
    match &reply.head {
        None => out.extend_from_slice(b"\r\nContent-Type: application/json"),
        Some(head) => {
            out.extend_from_slice(b"\r\nContent-Type: ");
            out.extend_from_slice(head.content_type.as_bytes());
            for (name, value) in &head.headers {
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value.as_bytes());
            }
        }
    }
    if reply.status != 304 {
        out.extend_from_slice(b"\r\nContent-Length: ");
        out.extend_from_slice(itoa(&mut digits, reply.body.len() as u64));
    }
    out.extend_from_slice(b"\r\n");
    // Only to API clients: a web client's 401 (its replies have a head)
    // must not open the browser's password dialog.
    if reply.status == 401 && reply.head.is_none() {
        out.extend_from_slice(b"WWW-Authenticate: Basic realm=\"zulip\"\r\n");
    }
    if let Some(rate) = &reply.rate {
        let mut header = |name: &[u8], value: u64| {
            out.extend_from_slice(name);
            out.extend_from_slice(itoa(&mut digits, value));
            out.extend_from_slice(b"\r\n");
        };
        header(b"X-RateLimit-Limit: ", rate.limit.into());
        header(b"X-RateLimit-Remaining: ", rate.remaining.into());
        header(b"X-RateLimit-Reset: ", rate.reset);
        if let Some(after) = rate.retry_after {
            header(b"Retry-After: ", after);
        }
    }
    if reply.status == 429 && reply.rate.as_ref().and_then(|r| r.retry_after).is_none() {
        // A 429 the rate limiter did not time (the reader pool's bounds,
        // `api::readers`) still says when to retry, as its body does.
        out.extend_from_slice(b"Retry-After: 1\r\n");
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

/// Decimal digits of `n`, written into the end of `buf`.
fn itoa(buf: &mut [u8; 20], mut n: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

thread_local! {
    /// The formatted `Date` of the current second, per worker thread.
    static DATE: RefCell<(u64, [u8; 29])> = const { RefCell::new((u64::MAX, [0; 29])) };
}

/// Appends the current time as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
/// formatted once per second per thread.
fn append_date(out: &mut Vec<u8>) {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != secs {
            let text = httpdate::fmt_http_date(now);
            if text.len() == 29 {
                cached.1.copy_from_slice(text.as_bytes());
                cached.0 = secs;
            }
        }
        out.extend_from_slice(&cached.1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_on_the_wire() {
        let mut out = Vec::new();
        let reply = Response::json(401, b"{}".to_vec());
        write_head(&mut out, &reply, false, false);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\nServer: natter\r\nDate: "));
        assert!(text.contains(" GMT\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"));
        assert!(text.contains("WWW-Authenticate: Basic realm=\"zulip\"\r\n"));
        assert!(text.ends_with("Connection: close\r\n\r\n"));
        let mut out = Vec::new();
        write_head(&mut out, &Response::json(429, b"{}".to_vec()), true, false);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(text.contains("\r\nRetry-After: 1\r\n") && !text.contains("WWW-Authenticate"));
        let mut out = Vec::new();
        write_head(&mut out, &Response::json(200, vec![b' '; 1234]), true, true);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Content-Length: 1234\r\n"));
        assert!(text.ends_with("Connection: keep-alive\r\n\r\n"));
        let mut d = itoa_buf();
        assert_eq!(itoa(&mut d, 0), b"0");
        assert_eq!(itoa(&mut d, u64::MAX), u64::MAX.to_string().as_bytes());
    }
}
