//! Request bytes as a connection receives them: the head, its framing
//! (Content-Length, chunked), then the body's request variables (query
//! string, form or multipart), request after request (pipelining).
#![no_main]

use libfuzzer_sys::fuzz_target;
use natter::config::WireLimits;

fuzz_target!(|data: &[u8]| {
    let limits = WireLimits { max_body_bytes: 64 * 1024, ..WireLimits::default() };
    let mut rest = data;
    while let Ok(Some(request)) = natter::http::conn::decode_request(rest, &limits) {
        assert!(request.len > 0 && request.len <= rest.len());
        assert!(request.body.len() <= limits.max_body_bytes);
        let (_, query) = request.target.split_once('?').unwrap_or((&request.target, ""));
        let content_type = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
            .unwrap_or_default();
        let _ = natter::http::decode_params(query, &content_type, &request.body);
        rest = &rest[request.len..];
    }
});
