//! HTTP Basic authentication (`email:api_key`) → the calling `User`.

use std::sync::Arc;

use base64::Engine;

use crate::error::{ApiError, ApiResult};
use crate::state::User;
use crate::state::{Realm, State};

/// Authenticates a request to `realm` from its `Authorization` header.
pub fn authenticate(state: &State, realm: &Realm, header: Option<&[u8]>) -> ApiResult<Arc<User>> {
    let header = header.ok_or_else(|| {
        ApiError::unauthorized("Not logged in: API authentication or user session required")
    })?;
    let credentials = parse_basic(header)
        .ok_or_else(|| ApiError::unauthorized("Invalid authorization header for basic auth"))?;
    let (email, key) = credentials.parts();
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let user = state.user_by_email_shared(realm.id, email);
    // Compare against something even when the user is unknown, so the
    // timing does not tell which emails exist.
    let expected = user.as_ref().map_or("", |u| u.api_key.as_str());
    let key_matches = constant_time_eq(expected.as_bytes(), key.as_bytes());
    match user {
        Some(user) if key_matches && !expected.is_empty() => {
            if user.is_active {
                Ok(user)
            } else {
                Err(ApiError::user_deactivated())
            }
        }
        _ => Err(ApiError::invalid_api_key()),
    }
}

/// The email of HTTP Basic credentials, if the header holds some.
pub fn basic_email(header: &[u8]) -> Option<String> {
    let credentials = parse_basic(header)?;
    Some(credentials.parts().0.to_owned())
}

/// Decoded `email:key` credentials, split without copying either part.
#[derive(Debug, PartialEq)]
struct Credentials {
    decoded: String,
    colon: usize,
}

impl Credentials {
    fn parts(&self) -> (&str, &str) {
        (&self.decoded[..self.colon], &self.decoded[self.colon + 1..])
    }
}

/// `Basic base64(email:key)` → the decoded credentials.
fn parse_basic(header: &[u8]) -> Option<Credentials> {
    let header = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let colon = decoded.find(':')?;
    Some(Credentials { decoded, colon })
}

/// Equality whose running time depends only on the lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= x ^ y;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_header_parsing() {
        // The example from the zulip client docs: bot@example.com / KEY123.
        let parsed = parse_basic(b"Basic Ym90QGV4YW1wbGUuY29tOktFWTEyMw==").unwrap();
        assert_eq!(parsed.parts(), ("bot@example.com", "KEY123"));
        assert_eq!(parse_basic(b"Bearer abc"), None);
        assert_eq!(parse_basic(b"Basic !!!"), None);
        assert_eq!(parse_basic(b"Basic bm9jb2xvbg=="), None); // "nocolon"
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}

#[cfg(test)]
mod state_tests {
    use super::*;
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn deactivated_users_and_realms_are_refused() {
        let mut w = World::new();
        let user = w.user("", "a@t.test", Role::Member);
        let realm = w.realm("");
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("a@t.test:{}", user.api_key))
        );
        assert!(authenticate(&w.state, &realm, Some(header.as_bytes())).is_ok());
        w.deactivate(&user);
        let e = authenticate(&w.state, &realm, Some(header.as_bytes())).unwrap_err();
        assert_eq!((e.status, e.code), (401, "USER_DEACTIVATED"));
        let closed = Realm { deactivated: true, ..realm };
        let e = authenticate(&w.state, &closed, Some(header.as_bytes())).unwrap_err();
        assert_eq!((e.status, e.code), (401, "REALM_DEACTIVATED"));
    }
}
