//! Users: `GET /users/me`, `GET /users`, `GET /users/{user_id}`.

use serde_json::{json, Value};

use super::json::{self, UserOptions};
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::reply;
use crate::state::UserId;

fn user_options(call: &mut Call) -> ApiResult<UserOptions> {
    Ok(UserOptions {
        client_gravatar: call.params.bool_or("client_gravatar", true)?,
        include_custom_profile_fields: call
            .params
            .bool_or("include_custom_profile_fields", false)?,
    })
}

/// `GET /users/me`: the caller's own account.
pub fn get_me(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller();
    let options = UserOptions { client_gravatar: false, include_custom_profile_fields: true };
    let Value::Object(mut fields) = json::user(&app.state, me, me, options) else {
        unreachable!("a user is a JSON object")
    };
    let max_id = app.state.max_user_message(me.id).map_or(0, |id| id.0);
    fields.insert("max_message_id".into(), json!(max_id));
    Ok(fields)
}

/// `GET /users`: every account in the caller's realm.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let options = user_options(call)?;
    let me = call.caller();
    let members: Vec<Value> = app
        .state
        .realm_users(me.realm)
        .iter()
        .map(|u| json::user(&app.state, me, u, options))
        .collect();
    Ok(reply! { "members" => members })
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
    Ok(reply! { "user" => json::user(&app.state, me, &user, options) })
}
