//! Obtaining API keys: `POST /dev_fetch_api_key` (development servers only).

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::reply;

/// `POST /dev_fetch_api_key`: the API key of any account, by email, with no
/// password. Only with `--dev`; a production server always refuses.
pub fn dev_fetch_api_key(app: &App, call: &mut Call) -> ApiResult<Reply> {
    if !app.config.dev {
        return Err(ApiError::bad_request("DevAuthBackend not enabled."));
    }
    let username = call.params.required_string("username")?;
    if call.realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let user = app
        .state
        .user_by_delivery_email(call.realm.id, &username)
        .filter(|u| !u.is_system_bot())
        .ok_or_else(ApiError::authentication_failed)?;
    if !user.is_active {
        return Err(ApiError::user_deactivated());
    }
    Ok(
        reply! { "api_key" => user.api_key, "email" => app.state.api_email(&user), "user_id" => user.id.0 },
    )
}
