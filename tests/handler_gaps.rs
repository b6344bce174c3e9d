//! Handler-level tests (in-process, on the `verify_action` harness's dev
//! realm) for rules no endpoint can reach yet: realm settings that no
//! endpoint changes (natter has no `PATCH /realm`), so the test hands the
//! handler a `Call` whose realm has the setting changed — exactly what the
//! HTTP layer would pass once the realm row says so.

use natter::api;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test";

/// Calls `handler` as `email` with `path` segments, on the realm as
/// `edit_realm` leaves it.
fn call_with_realm(
    h: &Harness,
    email: &str,
    handler: api::Handler,
    path: &[&str],
    params: &[(&str, &str)],
    edit_realm: impl FnOnce(&mut natter::state::Realm),
) -> natter::error::ApiResult<api::Reply> {
    let mut realm = h.app.state.realm_by_subdomain("").unwrap();
    edit_realm(&mut realm);
    h.call_in(realm, email, handler, path, params)
}

/// `realm_allow_edit_history=false`: `GET /messages/{id}/history` refuses,
/// and messages no longer carry `edit_history`; with it on, both work.
#[test]
fn edit_history_follows_realm_allow_edit_history() {
    let h = Harness::new();
    let params = [("type", "stream"), ("to", "general"), ("topic", "t"), ("content", "v1")];
    let id = h.call(HAMLET, api::messages::send, &params).unwrap()["id"].as_u64().unwrap();
    let id = id.to_string();
    let keep = |_: &mut natter::state::Realm| {};
    call_with_realm(&h, HAMLET, api::message_edit::update, &[&id], &[("content", "v2")], keep)
        .unwrap();

    let history = call_with_realm(&h, HAMLET, api::message_edit::history, &[&id], &[], keep)
        .expect("history while allowed");
    assert_eq!(history["message_history"].as_array().unwrap().len(), 2);
    let message = call_with_realm(&h, HAMLET, api::messages::get_one, &[&id], &[], keep).unwrap();
    assert_eq!(message["message"]["edit_history"].as_array().unwrap().len(), 1);

    let off = |r: &mut natter::state::Realm| r.settings.allow_edit_history = false;
    let err =
        call_with_realm(&h, HAMLET, api::message_edit::history, &[&id], &[], off).unwrap_err();
    assert_eq!((err.status, err.code), (400, "BAD_REQUEST"));
    assert_eq!(err.msg, "Message edit history is disabled in this organization");
    let message = call_with_realm(&h, HAMLET, api::messages::get_one, &[&id], &[], off).unwrap();
    assert!(message["message"].get("edit_history").is_none());
    // A message the caller may not see stays "invalid", setting or not.
    let err =
        call_with_realm(&h, HAMLET, api::message_edit::history, &["999999"], &[], off).unwrap_err();
    assert_eq!(err.msg, "Invalid message(s)");
}
