//! Lists of users' JSON written straight to bytes, for register's
//! `realm_users` in realms of thousands: the same objects as `json::user`,
//! without building (and freeing) a `serde_json` map, its keys and its
//! values for every user. Building those maps was most of register's time
//! in a 10,000-user realm. The tests below check that both agree for every
//! viewer class (email visibility × `client_gravatar`, bots, profile data).

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::json::{avatar_url_string, Iso8601, UserOptions};
use crate::state::access::can_see_email;
use crate::state::{profile, Role, State, User};

/// One user as `json::user` shapes it, borrowed from the account.
#[derive(serde::Serialize)]
struct UserOut<'a> {
    user_id: u64,
    delivery_email: Option<&'a str>,
    email: Email<'a>,
    full_name: &'a str,
    date_joined: Date,
    is_active: bool,
    is_owner: bool,
    is_admin: bool,
    is_guest: bool,
    is_bot: bool,
    bot_type: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bot_owner_id: Option<Option<u64>>,
    role: u16,
    timezone: &'a str,
    avatar_url: Option<String>,
    avatar_version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile_data: Option<ProfileData>,
}

/// `email`: the API address, or the realm's placeholder, written in place.
enum Email<'a> {
    Real(&'a str),
    Placeholder(u64, &'a str),
}

impl Serialize for Email<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Email::Real(email) => s.serialize_str(email),
            Email::Placeholder(id, host) => s.collect_str(&format_args!("user{id}@{host}")),
        }
    }
}

/// `date_joined`, written in place.
struct Date(i64);

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Iso8601(self.0))
    }
}

/// `profile_data`: `{"<field id>": {"value": …, "rendered_value"?: …}}`.
struct ProfileData(profile::Values);

impl Serialize for ProfileData {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (id, (value, rendered)) in &self.0 {
            map.serialize_entry(&id.to_string(), &FieldValue { value, rendered })?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct FieldValue<'a> {
    value: &'a String,
    #[serde(rename = "rendered_value", skip_serializing_if = "Option::is_none")]
    rendered: &'a Option<String>,
}

/// The JSON array of `users` (all of one realm) as `viewer` sees them
/// (`None`: a logged-out spectator, who never sees a real address).
pub fn users_array<'a>(
    state: &State,
    viewer: Option<&User>,
    users: impl ExactSizeIterator<Item = &'a User>,
    options: UserOptions,
) -> String {
    // About 350 bytes a user: sized once, so a big list is never copied
    // while it grows.
    let mut out = Vec::with_capacity(64 + users.len() * 400);
    // The realm's placeholder host, read once (every user is of one realm).
    let mut placeholder_host: Option<Option<String>> = None;
    out.push(b'[');
    for (i, user) in users.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let sees_email = viewer.is_some_and(|v| can_see_email(state, v, user));
        let body = UserOut {
            user_id: user.id.0,
            delivery_email: sees_email.then_some(user.delivery_email.as_str()),
            email: if user.is_bot() {
                Email::Real(&user.email)
            } else {
                match placeholder_host.get_or_insert_with(|| state.placeholder_host(user.realm)) {
                    Some(host) => Email::Placeholder(user.id.0, host),
                    None => Email::Real(&user.email),
                }
            },
            full_name: &user.full_name,
            date_joined: Date(user.date_joined),
            is_active: user.is_active,
            is_owner: user.role == Role::Owner,
            is_admin: user.role.is_admin(),
            is_guest: user.role == Role::Guest,
            is_bot: user.is_bot(),
            bot_type: user.bot_type.map(|t| t.code()),
            bot_owner_id: user.is_bot().then(|| user.bot_owner.map(|o| o.0)),
            role: user.role.code(),
            timezone: &user.timezone,
            avatar_url: avatar_url_string(user, options.client_gravatar && sees_email),
            avatar_version: user.avatar_version,
            profile_data: (options.include_custom_profile_fields && !user.is_bot())
                .then(|| ProfileData(state.profile_values.get(&user.id).unwrap_or_default())),
        };
        serde_json::to_writer(&mut out, &body).expect("users always serialize");
    }
    out.push(b']');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::json;
    use crate::apply::apply;
    use crate::seed::{self, NewUser};
    use crate::state::{BotType, EmailVisibility, UserId};

    /// A realm with every kind of account: roles, a bot, a deactivated
    /// user, custom profile values (one with a rendered form).
    fn realm() -> (State, Vec<User>) {
        let state = State::new();
        apply(&state, 1, &seed::realm(&state, "", "T", 0).unwrap());
        let realm = state.realm_by_subdomain("").unwrap();
        let roles = [Role::Owner, Role::Administrator, Role::Moderator, Role::Member, Role::Guest];
        let mut seq = 2;
        for (i, role) in roles.iter().enumerate() {
            let email = format!("u{i}@t.test");
            let new = NewUser { email: &email, full_name: "Ü \"q\"", role: *role, bot: None };
            apply(
                &state,
                seq,
                &seed::user(&state, realm.id, &new, "k".repeat(32), 86_400).unwrap(),
            );
            seq += 1;
        }
        let new = NewUser {
            email: "bot@t.test",
            full_name: "Bot",
            role: Role::Member,
            bot: Some((BotType::Generic, UserId(1))),
        };
        apply(&state, seq, &seed::user(&state, realm.id, &new, "b".repeat(32), 0).unwrap());
        let users = state.realm_users(realm.id);
        state.users.update(&users[3].id, |u| u.is_active = false);
        let mut values = profile::Values::new();
        values.insert(1, ("x".into(), None));
        values.insert(12, ("**y**".into(), Some("<p><strong>y</strong></p>".into())));
        state.profile_values.insert(users[2].id, values);
        let users = state.realm_users(realm.id);
        (state, users)
    }

    #[test]
    fn the_bytes_match_json_user_for_every_viewer_class() {
        let (state, users) = realm();
        let realm = users[0].realm;
        for visibility in [
            EmailVisibility::Everyone,
            EmailVisibility::Members,
            EmailVisibility::Moderators,
            EmailVisibility::Admins,
            EmailVisibility::Nobody,
        ] {
            state.realms.update(&realm, |r| r.settings.email_address_visibility = visibility);
            for viewer in &users {
                for client_gravatar in [false, true] {
                    for include_custom_profile_fields in [false, true] {
                        let options =
                            UserOptions { client_gravatar, include_custom_profile_fields };
                        let raw = users_array(&state, Some(viewer), users.iter(), options);
                        let got: Value = serde_json::from_str(&raw).unwrap();
                        let want: Vec<Value> =
                            users.iter().map(|u| json::user(&state, viewer, u, options)).collect();
                        assert_eq!(got, Value::Array(want), "{visibility:?} {options:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn spectators_see_no_real_address_and_no_profile_data() {
        let (state, users) = realm();
        let options = UserOptions { client_gravatar: false, include_custom_profile_fields: false };
        let raw = users_array(&state, None, users.iter(), options);
        let got: Value = serde_json::from_str(&raw).unwrap();
        for user in got.as_array().unwrap() {
            assert_eq!(user["delivery_email"], Value::Null, "{user}");
            assert!(user.get("profile_data").is_none());
            assert!(user["avatar_url"].is_string());
        }
        assert_eq!(users_array(&state, None, [].iter(), options), "[]");
    }
}
