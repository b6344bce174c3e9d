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

/// The realm's who-may-create settings decide who creates which channels
/// (members by default; web-public: moderators, where spectators are
/// allowed).
#[test]
fn channel_creation_follows_the_realm_who_may_create_settings() {
    use natter::state::{GroupSetting, Realm, SystemGroup};
    let h = Harness::new();
    let create = |email: &str, name: &str, extra: &[(&str, &str)], edit: &dyn Fn(&mut Realm)| {
        let subs = format!(r#"[{{"name": "{name}"}}]"#);
        let mut params = vec![("subscriptions", subs.as_str())];
        params.extend_from_slice(extra);
        call_with_realm(&h, email, api::subscriptions::subscribe, &[], &params, |r| edit(r))
    };
    let admins_only = |which: fn(&mut Realm) -> &mut Option<GroupSetting>| {
        move |r: &mut Realm| {
            let admins = GroupSetting::Group(r.system_groups.id(SystemGroup::Administrators));
            *which(r) = Some(admins);
        }
    };
    let public = admins_only(|r| &mut r.settings.can_create_public_channel_group);
    let private = admins_only(|r| &mut r.settings.can_create_private_channel_group);
    let unchanged = |_: &mut Realm| {};

    // Defaults: a member creates public and private channels.
    create(HAMLET, "p1", &[], &unchanged).unwrap();
    create(HAMLET, "q1", &[("invite_only", "true")], &unchanged).unwrap();
    // Restricted to administrators: the member is refused, an admin is not.
    let e = create(HAMLET, "p2", &[], &public).unwrap_err();
    assert_eq!(e.msg, "Insufficient permission to create channels");
    create("iago@natter.test", "p2", &[], &public).unwrap();
    // The private setting does not govern public channels, and back.
    create(HAMLET, "p3", &[], &private).unwrap();
    let e = create(HAMLET, "q2", &[("invite_only", "true")], &private).unwrap_err();
    assert_eq!(e.msg, "Insufficient permission to create private channels");
    // Web-public: members once the realm's group says so.
    let members_web = |r: &mut Realm| {
        let members = GroupSetting::Group(r.system_groups.id(SystemGroup::Members));
        r.settings.can_create_web_public_channel_group = Some(members);
    };
    let e = create(HAMLET, "w1", &[("is_web_public", "true")], &unchanged).unwrap_err();
    assert_eq!(e.msg, "Insufficient permission to create web-public channels");
    create(HAMLET, "w1", &[("is_web_public", "true")], &members_web).unwrap();
}
