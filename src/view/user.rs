//! The User resource and its avatar URL, as one viewer sees them: whether a
//! real address shows is decided here with `state::access`.

use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

use crate::state::access::can_see_email;
use crate::state::files::Avatar;
use crate::state::{Role, State, User};
use crate::view::time::iso8601;

/// Options that change a user's JSON.
#[derive(Clone, Copy, Debug)]
pub struct UserOptions {
    /// Leave `avatar_url` null where the client can compute a gravatar.
    pub client_gravatar: bool,
    /// Include `profile_data`.
    pub include_custom_profile_fields: bool,
}

/// The realm string Zulip's system bots belong to (`sender_realm_str`).
pub const SYSTEM_BOT_REALM: &str = "zulipinternal";

/// A `cross_realm_bots` entry of register: the User resource plus
/// `is_system_bot`.
pub fn system_bot(state: &State, viewer: &User, bot: &User, client_gravatar: bool) -> Value {
    let options = UserOptions { client_gravatar, include_custom_profile_fields: false };
    let mut out = user(state, viewer, bot, options);
    out["is_system_bot"] = json!(true);
    out
}

/// A User resource as `viewer` may see it.
pub fn user(state: &State, viewer: &User, user: &User, options: UserOptions) -> Value {
    let sees_email = can_see_email(state, viewer, user);
    let mut out = Map::new();
    out.insert("user_id".into(), json!(user.id.0));
    out.insert(
        "delivery_email".into(),
        if sees_email { json!(user.delivery_email) } else { Value::Null },
    );
    out.insert("email".into(), json!(state.api_email(user)));
    out.insert("full_name".into(), json!(user.full_name));
    out.insert("date_joined".into(), json!(iso8601(user.date_joined)));
    out.insert("is_active".into(), json!(user.is_active));
    out.insert("is_owner".into(), json!(user.role == Role::Owner));
    out.insert("is_admin".into(), json!(user.role.is_admin()));
    out.insert("is_guest".into(), json!(user.role == Role::Guest));
    out.insert("is_bot".into(), json!(user.is_bot()));
    out.insert("bot_type".into(), json!(user.bot_type.map(|t| t.code())));
    if user.is_bot() {
        out.insert("bot_owner_id".into(), json!(user.bot_owner.map(|o| o.0)));
    }
    out.insert("role".into(), json!(user.role.code()));
    out.insert("timezone".into(), json!(user.timezone));
    out.insert("avatar_url".into(), avatar_url(state, user, options.client_gravatar && sees_email));
    out.insert("avatar_version".into(), json!(user.avatar_version));
    if options.include_custom_profile_fields && !user.is_bot() {
        out.insert("profile_data".into(), crate::view::profile::profile_data(state, user.id));
    }
    Value::Object(out)
}

/// The avatar URL: the uploaded image's, else a gravatar of the real
/// email, or null where the client computes that gravatar itself.
pub fn avatar_url(state: &State, user: &User, client_computes: bool) -> Value {
    avatar_url_string(state, user, client_computes).map_or(Value::Null, Value::String)
}

/// `avatar_url` as a string, `None` for null.
pub fn avatar_url_string(state: &State, user: &User, client_computes: bool) -> Option<String> {
    match state.files.avatar(user.id) {
        Some(avatar) => Some(uploaded_avatar_url(&avatar, user.avatar_version)),
        None => gravatar_url(user, client_computes),
    }
}

/// Zulip's `avatar_source`: `U` for an uploaded image, `G` for the gravatar.
pub fn avatar_source(state: &State, user: &User) -> &'static str {
    if state.files.avatar(user.id).is_some() {
        "U"
    } else {
        "G"
    }
}

/// The URL of an uploaded avatar (served without credentials, as Zulip
/// serves `/user_avatars/`).
pub fn uploaded_avatar_url(avatar: &Avatar, version: u32) -> String {
    format!("/user_avatars/{}?version={version}", avatar.key)
}

/// `avatar_url_medium`: the medium image's URL, else as `avatar_url`.
pub fn avatar_url_medium(state: &State, user: &User) -> String {
    match state.files.avatar(user.id) {
        Some(avatar) => {
            format!("/user_avatars/{}?version={}", avatar.medium_key, user.avatar_version)
        }
        None => gravatar_url(user, false).expect("a URL when the client does not compute it"),
    }
}

/// The gravatar URL of the real email, `None` where the client computes
/// it itself.
pub fn gravatar_url(user: &User, client_computes: bool) -> Option<String> {
    if client_computes {
        return None;
    }
    let digest = Md5::digest(user.delivery_email.trim().to_lowercase().as_bytes());
    let mut url = String::with_capacity(96);
    url.push_str("https://secure.gravatar.com/avatar/");
    // Hex by table: `write!("{b:02x}")` per byte was a third of the cost.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in digest.iter() {
        url.push(char::from(HEX[usize::from(b >> 4)]));
        url.push(char::from(HEX[usize::from(b & 15)]));
    }
    let _ = std::fmt::Write::write_fmt(
        &mut url,
        format_args!("?d=identicon&version={}", user.avatar_version),
    );
    Some(url)
}

#[cfg(test)]
mod avatar_tests {
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn gravatar_urls_hash_the_trimmed_lowercased_real_email() {
        let mut w = World::new();
        let mut user = w.user("", "hamlet@natter.test", Role::Member);
        user.delivery_email = " Hamlet@Natter.TEST ".into();
        // md5("hamlet@natter.test")
        assert_eq!(
            super::avatar_url_string(&w.state, &user, false).unwrap(),
            format!(
                "https://secure.gravatar.com/avatar/29a955a77770d5073b7fcf55033f9bec?d=identicon&version={}",
                user.avatar_version
            )
        );
        assert_eq!(super::avatar_url_string(&w.state, &user, true), None);
    }
}
