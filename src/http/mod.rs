//! Transport only: may_minihttp in, bytes out; no domain rules.
//!
//! For each request: check the framing (Content-Length, no chunked bodies,
//! size limit), read the body, find the route, decode parameters, resolve
//! the realm from the Host header, authenticate, run the handler with
//! panics caught, and write the JSON envelope.

pub mod auth;
pub mod request;
pub mod response;
pub mod router;

use std::io::{self, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use may_minihttp::{HttpService, Request, Response as RawResponse};

use crate::api::{App, Call};
use crate::error::{ApiError, ApiResult};
use crate::state::Realm;
use request::Params;
use response::Response;
use router::{Access, Match};

/// The may_minihttp service: one clone per connection, sharing the `App`.
#[derive(Clone)]
pub struct Service {
    /// Shared application state.
    pub app: Arc<App>,
}

/// The request line and headers natter cares about, copied out of the
/// connection buffer.
struct Head {
    method: String,
    path: String,
    query: String,
    host: String,
    authorization: Option<Vec<u8>>,
    content_type: String,
    user_agent: String,
}

impl HttpService for Service {
    fn call(&mut self, req: Request, rsp: &mut RawResponse) -> io::Result<()> {
        let response = guarded(|| self.handle(req));
        rsp.status_code(response.status as usize, response::reason(response.status));
        rsp.header("Content-Type: application/json");
        if response.status == 401 {
            rsp.header("WWW-Authenticate: Basic realm=\"zulip\"");
        }
        rsp.body_vec(response.body);
        Ok(())
    }
}

impl Service {
    fn handle(&self, req: Request) -> Response {
        let limit = self.app.config.max_body_bytes;
        let mut head = Head {
            method: req.method().to_owned(),
            path: String::new(),
            query: String::new(),
            host: String::new(),
            authorization: None,
            content_type: String::new(),
            user_agent: String::new(),
        };
        let target = req.path();
        match target.split_once('?') {
            Some((p, q)) => (head.path, head.query) = (p.to_owned(), q.to_owned()),
            None => head.path = target.to_owned(),
        }
        let mut content_length: Option<&[u8]> = None;
        let mut chunked = false;
        for h in req.headers() {
            let name = h.name;
            if name.eq_ignore_ascii_case("host") {
                head.host = String::from_utf8_lossy(h.value).into_owned();
            } else if name.eq_ignore_ascii_case("authorization") {
                head.authorization = Some(h.value.to_vec());
            } else if name.eq_ignore_ascii_case("content-type") {
                head.content_type = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            } else if name.eq_ignore_ascii_case("user-agent") {
                head.user_agent = String::from_utf8_lossy(h.value).into_owned();
            } else if name.eq_ignore_ascii_case("content-length") {
                content_length = Some(h.value);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = true;
            }
        }
        if chunked {
            // may_minihttp cannot read chunked bodies; refuse rather than
            // misparse the chunks as the next request.
            return response::error(&ApiError::length_required());
        }
        // may_minihttp's body() unwraps the Content-Length parse: check first.
        let length = match content_length {
            None => 0,
            Some(raw) => match parse_content_length(raw) {
                Some(n) => n,
                None => {
                    return response::error(&ApiError::bad_request("Invalid Content-Length header"))
                }
            },
        };
        let body_reader = req.body();
        if length > limit {
            // Dropping the reader drains the body, keeping the connection in sync.
            drop(body_reader);
            return response::error(&ApiError::payload_too_large(limit));
        }
        let mut body = Vec::with_capacity(length);
        if let Err(e) = body_reader.take(length as u64).read_to_end(&mut body) {
            eprintln!("natter: warning: reading request body: {e}");
            return response::error(&ApiError::bad_request("Could not read the request body"));
        }
        if body.len() != length {
            return response::error(&ApiError::bad_request(
                "Request body shorter than Content-Length",
            ));
        }
        match self.dispatch(&head, &body) {
            Ok((fields, ignored)) => response::success(fields, ignored),
            Err(e) => response::error(&e),
        }
    }

    fn dispatch(&self, head: &Head, body: &[u8]) -> ApiResult<(crate::api::Reply, Vec<String>)> {
        let app = &*self.app;
        let Some(api_path) = head.path.strip_prefix("/api/v1") else {
            return Err(ApiError::no_such_endpoint());
        };
        let (route, path_args) = match router::find(&head.method, api_path) {
            Match::Found(route, args) => (route, args),
            Match::WrongMethod => return Err(ApiError::method_not_allowed(&head.method)),
            Match::NotFound => return Err(ApiError::no_such_endpoint()),
        };
        let mut params = Params::default();
        params.add_urlencoded(head.query.as_bytes());
        if !body.is_empty() {
            if head.content_type.is_empty()
                || head.content_type.starts_with("application/x-www-form-urlencoded")
            {
                params.add_urlencoded(body);
            } else {
                return Err(ApiError::bad_request(format!(
                    "Unsupported Content-Type '{}': send application/x-www-form-urlencoded",
                    head.content_type
                )));
            }
        }
        let realm = self.realm_for_host(&head.host)?;
        let caller = match route.access {
            Access::Public => None,
            Access::User => {
                Some(auth::authenticate(&app.state, &realm, head.authorization.as_deref())?)
            }
        };
        let client = head.user_agent.split(['/', ' ']).next().unwrap_or("").to_owned();
        let mut call = Call { realm, caller, params, path: path_args, client };
        let fields = (route.handler)(app, &mut call)?;
        Ok((fields, call.params.unused()))
    }

    /// The realm a Host header names: `<subdomain>.<host>` for a realm's
    /// subdomain, otherwise the realm on the bare host (subdomain `""`).
    fn realm_for_host(&self, host: &str) -> ApiResult<Realm> {
        let state = &self.app.state;
        let name = strip_port(host).to_ascii_lowercase();
        let base = strip_port(self.app.external_host()).to_ascii_lowercase();
        let subdomain =
            if name == base || name.parse::<std::net::IpAddr>().is_ok() || name == "localhost" {
                ""
            } else if let Some(sub) = name.strip_suffix(&format!(".{base}")) {
                sub
            } else {
                name.strip_suffix(".localhost").unwrap_or_default()
            };
        state.realm_by_subdomain(subdomain).ok_or_else(|| ApiError::no_such_realm(host))
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split(']').next().map(|h| h.trim_start_matches('[')).unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// A Content-Length value: ASCII digits only (no sign, no spaces inside).
fn parse_content_length(raw: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(raw).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
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
            eprintln!("natter: error: handler panicked: {what}");
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

    #[test]
    fn content_length_must_be_digits() {
        assert_eq!(parse_content_length(b"12"), Some(12));
        assert_eq!(parse_content_length(b" 7 "), Some(7));
        for bad in [&b"abc"[..], b"-1", b"", b"1 2", b"+3", b"99999999999999999999999"] {
            assert_eq!(parse_content_length(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ports_are_stripped_from_hosts() {
        assert_eq!(strip_port("lear.localhost:9991"), "lear.localhost");
        assert_eq!(strip_port("example.com"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "::1");
    }
}
