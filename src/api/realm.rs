//! Server and realm information: `GET /server_settings`.

use serde_json::json;

use super::{App, Call, Reply};
use crate::error::ApiResult;
use crate::reply;
use crate::state::{Realm, RealmId};

/// The Zulip feature level whose behaviour natter implements. It rises as
/// capabilities land; clients compare it to decide what to send. 419: every
/// change the spec's Versioning table lists up to it is implemented, the
/// last being the `simplified_presence_events` capability; channel folders
/// (389 to 418) and `POST /channels/create` (417) are in too. 420 (an
/// E2EE push test notification) is not: natter sends no push
/// notifications. The one place it is set: `/server_settings` and
/// `/register` read it.
pub const FEATURE_LEVEL: u32 = 419;

/// The version string reported as `zulip_version` (feature level 419 is a
/// Zulip 11.0 level).
pub const VERSION: &str = concat!("11.0-natter-", env!("CARGO_PKG_VERSION"));

/// The URL of a realm: its subdomain on the external host.
pub fn realm_url(app: &App, realm: &Realm) -> String {
    if realm.string_id.is_empty() {
        format!("http://{}", app.external_host())
    } else {
        format!("http://{}.{}", realm.string_id, app.external_host())
    }
}

/// The URL of realm `id`, if it exists (what the Markdown resolver of a
/// send needs).
pub fn realm_url_of(app: &App, id: RealmId) -> Option<String> {
    app.state.realms.get(&id).map(|realm| realm_url(app, &realm))
}

/// `GET /server_settings`: unauthenticated; what a client needs before
/// logging in. The Python bindings assert `zulip_version` is present.
pub fn server_settings(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let realm = &call.realm;
    let url = realm_url(app, realm);
    Ok(reply! {
        // Password login (`POST /fetch_api_key` with the account's email
        // address) works in every realm; zulip-term's interactive login
        // reads `email_auth_enabled` and `require_email_format_usernames`.
        "authentication_methods" => json!({
            "password": true, "dev": app.config.dev, "email": true, "ldap": false,
            "remoteuser": false, "github": false, "azuread": false, "gitlab": false,
            "apple": false, "google": false, "saml": false, "openid connect": false,
        }),
        "external_authentication_methods" => json!([]),
        "zulip_feature_level" => FEATURE_LEVEL,
        "zulip_version" => VERSION,
        "zulip_merge_base" => VERSION,
        "push_notifications_enabled" => false,
        "is_incompatible" => false,
        "email_auth_enabled" => true,
        "require_email_format_usernames" => true,
        "realm_url" => url,
        "realm_uri" => url,
        "realm_name" => realm.name,
        "realm_icon" => format!("https://secure.gravatar.com/avatar/{}?d=identicon", realm.id),
        "realm_description" => realm.description,
        "realm_web_public_access_enabled" =>
            crate::state::access::web_public_access_enabled(&app.state, realm),
    })
}
