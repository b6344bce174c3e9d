//! Server and realm information: `GET /server_settings`.

use serde_json::json;

use super::{App, Call, Reply};
use crate::error::ApiResult;
use crate::reply;
use crate::state::Realm;

/// The Zulip feature level whose behaviour natter implements. It rises as
/// capabilities land; clients compare it to decide what to send.
pub const FEATURE_LEVEL: u32 = 248;

/// The version string reported as `zulip_version`.
pub const VERSION: &str = concat!("10.0-natter-", env!("CARGO_PKG_VERSION"));

/// The URL of a realm: its subdomain on the external host.
pub fn realm_url(app: &App, realm: &Realm) -> String {
    if realm.string_id.is_empty() {
        format!("http://{}", app.external_host())
    } else {
        format!("http://{}.{}", realm.string_id, app.external_host())
    }
}

/// `GET /server_settings`: unauthenticated; what a client needs before
/// logging in. The Python bindings assert `zulip_version` is present.
pub fn server_settings(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let realm = &call.realm;
    let url = realm_url(app, realm);
    Ok(reply! {
        "authentication_methods" => json!({
            "password": false, "dev": app.config.dev, "email": false, "ldap": false,
            "remoteuser": false, "github": false, "azuread": false, "gitlab": false,
            "apple": false, "google": false, "saml": false, "openid connect": false,
        }),
        "external_authentication_methods" => json!([]),
        "zulip_feature_level" => FEATURE_LEVEL,
        "zulip_version" => VERSION,
        "zulip_merge_base" => VERSION,
        "push_notifications_enabled" => false,
        "is_incompatible" => false,
        "email_auth_enabled" => false,
        "require_email_format_usernames" => true,
        "realm_url" => url,
        "realm_uri" => url,
        "realm_name" => realm.name,
        "realm_icon" => format!("https://secure.gravatar.com/avatar/{}?d=identicon", realm.id),
        "realm_description" => realm.description,
        "realm_web_public_access_enabled" =>
            super::register::web_public_access_enabled(&app.state, realm),
    })
}
