//! Users: `GET /users/me`, `GET /users`, `GET /users/{user_id}`.

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::state::{State, User, UserId};
use crate::view::json_text;
use crate::view::json_text::SortedMembers;
use crate::view::user::UserOptions;
use crate::view::user_text;

fn user_options(call: &mut Call) -> ApiResult<UserOptions> {
    Ok(UserOptions {
        client_gravatar: call.params.bool_or("client_gravatar", true)?,
        include_custom_profile_fields: call
            .params
            .bool_or("include_custom_profile_fields", false)?,
    })
}

/// `GET /users/me`: the caller's own account.
///
/// Written straight to JSON text (`user_text::write_user_members`): the
/// same bytes as `crate::view::user::user` plus `max_message_id` in a map, without
/// building one (tests below compare the two).
pub fn get_me(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller();
    call.sorted_reply = Some(me_reply(&app.state, me));
    Ok(Reply::new())
}

/// `GET /users/me`'s reply: `max_message_id` given first, so that it is
/// written in its place among the user's members and the reply is its
/// body as it stands.
fn me_reply(state: &State, me: &User) -> SortedMembers {
    let options = UserOptions { client_gravatar: false, include_custom_profile_fields: true };
    let mut reply = SortedMembers::reply(512);
    let max_id = state.max_user_message(me.id).map_or(0, |id| id.0);
    let mut max = Vec::with_capacity(20);
    json_text::unsigned(&mut max, max_id);
    reply.insert("max_message_id", max);
    user_text::write_user_members(&mut reply, state, me, me, options);
    reply
}

/// `GET /users`: every account in the caller's realm.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let options = user_options(call)?;
    let me = call.caller();
    let users = app.state.realm_users(me.realm);
    // Each user's object as `crate::view::user::user`'s map serializes it, written
    // straight into the reply (`user_text::write_user_members`).
    let mut reply = SortedMembers::reply(2 + users.len() * 420);
    let mut members = SortedMembers::with_capacity(512);
    json_text::array(reply.member("members"), users.iter(), |list, user| {
        members.clear();
        user_text::write_user_members(&mut members, &app.state, me, user, options);
        members.write_object(list, &[]);
    });
    call.sorted_reply = Some(reply);
    Ok(Reply::new())
}

/// `GET /users/{user_id}` (and `GET /users/{email}`): one account of the
/// caller's realm.
pub fn get_one(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let options = user_options(call)?;
    if call.path.first().is_some_and(|p| p.parse::<u64>().is_err()) {
        return super::accounts::user_by_path_email(app, call, options);
    }
    let id = UserId(call.path_id(0, "user_id")?);
    let me = call.caller();
    let user = app
        .state
        .user_in_realm(me.realm, id)
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if user.is_system_bot() {
        // Rare: the Notification and Welcome Bots, marked as Zulip marks
        // its cross-realm bots.
        let bot = crate::view::user::system_bot(&app.state, me, &user, options.client_gravatar);
        call.raw_fields.push(("user".into(), bot.to_string()));
        return Ok(Reply::new());
    }
    // `user` sorts after `msg` and `result`: appended, it is where the
    // map would have put it.
    let mut members = SortedMembers::with_capacity(512);
    user_text::write_user_members(&mut members, &app.state, me, &user, options);
    let mut text = Vec::with_capacity(512);
    members.write_object(&mut text, &[]);
    let text = String::from_utf8(text).expect("JSON text is UTF-8");
    call.raw_fields.push(("user".into(), text));
    Ok(Reply::new())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::http::response;
    use crate::state::{profile, EmailVisibility, User};
    use crate::view::user_text::tests::realm;

    /// `GET /users/me`'s reply as it was built before: `crate::view::user::user`'s map
    /// plus `max_message_id`, through the ordinary envelope.
    fn me_through_a_map(state: &crate::state::State, me: &User, ignored: &[String]) -> Vec<u8> {
        let options = UserOptions { client_gravatar: false, include_custom_profile_fields: true };
        let Value::Object(mut fields) = crate::view::user::user(state, me, me, options) else {
            unreachable!()
        };
        let max_id = state.max_user_message(me.id).map_or(0, |id| id.0);
        fields.insert("max_message_id".into(), serde_json::json!(max_id));
        response::success(fields, ignored.to_vec()).body
    }

    fn me_written(state: &crate::state::State, me: &User, ignored: &[String]) -> Vec<u8> {
        response::success_sorted(me_reply(state, me), ignored.to_vec()).body
    }

    /// The same object staged (not a `reply`), `max_message_id` given
    /// last: merged in by `write_object` with the envelope.
    fn me_staged(state: &crate::state::State, me: &User, ignored: &[String]) -> Vec<u8> {
        let options = UserOptions { client_gravatar: false, include_custom_profile_fields: true };
        let mut members = SortedMembers::default();
        user_text::write_user_members(&mut members, state, me, me, options);
        let max_id = state.max_user_message(me.id).map_or(0, |id| id.0);
        members.insert("max_message_id", max_id.to_string().into_bytes());
        response::success_sorted(members, ignored.to_vec()).body
    }

    /// The realm of `view::user_text`'s tests, plus what changes the bytes: field
    /// ids that sort differently as strings ("12" < "3"), a real address
    /// with capitals and non-ASCII (the gravatar hash lowercases it), and
    /// characters JSON escapes.
    fn varied_realm() -> (crate::state::State, Vec<User>) {
        let (w, users) = realm();
        let state = w.state;
        let mut values = profile::Values::new();
        values.insert(3, ("three \"q\" \u{1}".into(), None));
        values.insert(12, ("**y**".into(), Some("<p><strong>y</strong></p>".into())));
        values.insert(100, ("".into(), None));
        state.profile_values.insert(users[4].id, values);
        state.users.update(&users[1].id, |u| {
            u.delivery_email = " Ådmin@T.Test ".into();
            u.timezone = "Europe/Zürich".into();
            u.full_name = "tab\there \\ </script>".into();
        });
        let realm = users[0].realm;
        let users = state.realm_users(realm);
        (state, users)
    }

    #[test]
    fn get_me_writes_the_bytes_the_map_gave_for_every_kind_of_account() {
        let (state, users) = varied_realm();
        let realm = users[0].realm;
        let kinds = users.iter().map(|u| (u.role, u.is_bot(), u.is_active)).collect::<Vec<_>>();
        assert!(kinds.iter().any(|k| k.1), "a bot");
        assert!(kinds.iter().any(|k| !k.2), "a deactivated account");
        for visibility in EmailVisibility::ALL {
            state.realms.update(&realm, |r| r.settings.email_address_visibility = visibility);
            for me in &users {
                for ignored in [vec![], vec!["apply_markdown".to_owned(), "zzz".to_owned()]] {
                    let want = me_through_a_map(&state, me, &ignored);
                    for got in [me_written(&state, me, &ignored), me_staged(&state, me, &ignored)] {
                        assert_eq!(
                            String::from_utf8(got).unwrap(),
                            String::from_utf8(want.clone()).unwrap(),
                            "{visibility:?} user {}",
                            me.id
                        );
                    }
                }
            }
        }
    }

    /// Another user's object (`GET /users/{id}`) is `crate::view::user::user`'s map's
    /// bytes too, for every viewer, target and option.
    #[test]
    fn one_user_writes_the_bytes_the_map_gave_for_every_viewer() {
        let (state, users) = varied_realm();
        let realm = users[0].realm;
        for visibility in [EmailVisibility::Everyone, EmailVisibility::Admins] {
            state.realms.update(&realm, |r| r.settings.email_address_visibility = visibility);
            for viewer in &users {
                for user in &users {
                    for (client_gravatar, include_custom_profile_fields) in
                        [(false, false), (false, true), (true, false), (true, true)]
                    {
                        let options =
                            UserOptions { client_gravatar, include_custom_profile_fields };
                        let want = serde_json::to_string(&crate::view::user::user(
                            &state, viewer, user, options,
                        ))
                        .unwrap();
                        let mut members = SortedMembers::default();
                        user_text::write_user_members(&mut members, &state, viewer, user, options);
                        let mut got = Vec::new();
                        members.write_object(&mut got, &[]);
                        assert_eq!(String::from_utf8(got).unwrap(), want);
                    }
                }
            }
        }
    }
}
