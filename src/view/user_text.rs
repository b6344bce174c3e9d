//! Lists of users' JSON written straight to bytes, for register's
//! `realm_users` in realms of thousands: the same objects as `crate::view::user::user`,
//! without building (and freeing) a `serde_json` map, its keys and its
//! values for every user. Building those maps was most of register's time
//! in a 10,000-user realm. The tests below check that both agree for every
//! viewer class (email visibility × `client_gravatar`, bots, profile data).

use std::collections::{BTreeMap, HashMap};

use md5::{Digest, Md5};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::state::access::can_see_email;
use crate::state::files::Avatar;
use crate::state::{profile, Role, State, User, UserId};
use crate::view::json_text::{string, unsigned, SortedMembers};
use crate::view::time::Iso8601;
use crate::view::user::uploaded_avatar_url;
use crate::view::user::UserOptions;

/// One user as `crate::view::user::user` shapes it, borrowed from the account.
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
    profile_data: Option<ProfileData<'a>>,
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
struct ProfileData<'a>(Option<&'a profile::Values>);

impl Serialize for ProfileData<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(values) = self.0 else { return s.serialize_map(Some(0))?.end() };
        let mut map = s.serialize_map(Some(values.len()))?;
        for (id, (value, rendered)) in values {
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

/// The realm-wide facts a user list is written from, read once per list
/// (or once per cut, `user_lists`), so writing never touches shared state.
pub struct ListSource<'a> {
    /// The realm's placeholder address host when it hides real addresses.
    pub placeholder_host: Option<&'a str>,
    /// The users' custom profile values (users without any are absent).
    pub profiles: &'a HashMap<UserId, profile::Values>,
    /// Uploaded avatars (users showing their gravatar are absent).
    pub avatars: &'a BTreeMap<UserId, Avatar>,
}

/// Appends `user`'s JSON object to `out`; `sees_email`: whether the viewer
/// sees this user's real address.
pub fn write_user(
    out: &mut Vec<u8>,
    source: &ListSource,
    user: &User,
    sees_email: bool,
    options: UserOptions,
) {
    let body = UserOut {
        user_id: user.id.0,
        delivery_email: sees_email.then_some(user.delivery_email.as_str()),
        email: match source.placeholder_host {
            Some(host) if !user.is_bot() => Email::Placeholder(user.id.0, host),
            _ => Email::Real(&user.email),
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
        avatar_url: match source.avatars.get(&user.id) {
            Some(avatar) => Some(uploaded_avatar_url(avatar, user.avatar_version)),
            None => crate::view::user::gravatar_url(user, options.client_gravatar && sees_email),
        },
        avatar_version: user.avatar_version,
        profile_data: (options.include_custom_profile_fields && !user.is_bot())
            .then(|| ProfileData(source.profiles.get(&user.id))),
    };
    serde_json::to_writer(&mut *out, &body).expect("users always serialize");
}

/// Writes the JSON array of `users` to `out`, each as `sees_email` says;
/// with `spans`, records where each user's object lies in `out`.
pub fn write_users<'a>(
    out: &mut Vec<u8>,
    source: &ListSource,
    users: impl Iterator<Item = &'a User>,
    sees_email: impl Fn(&User) -> bool,
    options: UserOptions,
    mut spans: Option<&mut Vec<(UserId, usize, usize)>>,
) {
    out.push(b'[');
    for (i, user) in users.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = out.len();
        write_user(out, source, user, sees_email(user), options);
        if let Some(spans) = spans.as_deref_mut() {
            spans.push((user.id, start, out.len()));
        }
    }
    out.push(b']');
}

/// The JSON array of `users` (all of one realm) as `viewer` sees them
/// (`None`: a logged-out spectator, who never sees a real address), read
/// from live state. Register uses the cached lists of `user_lists`.
pub fn users_array<'a>(
    state: &State,
    viewer: Option<&User>,
    users: impl ExactSizeIterator<Item = &'a User>,
    options: UserOptions,
) -> String {
    let mut users = users.peekable();
    // Every user is of one realm: its settings are read once.
    let host = users.peek().and_then(|u| state.placeholder_host(u.realm));
    let mut profiles = HashMap::new();
    let listed: Vec<&User> = users.collect();
    for user in &listed {
        if let Some(v) = state.profile_values.get(&user.id) {
            profiles.insert(user.id, v);
        }
    }
    let avatars = state.files.avatars();
    let source =
        ListSource { placeholder_host: host.as_deref(), profiles: &profiles, avatars: &avatars };
    // About 350 bytes a user: sized once, so a big list is never copied
    // while it grows.
    let mut out = Vec::with_capacity(64 + listed.len() * 400);
    let sees = |user: &User| viewer.is_some_and(|v| can_see_email(state, v, user));
    write_users(&mut out, &source, listed.into_iter(), sees, options, None);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `user`'s members as `viewer` sees them, exactly as `crate::view::user::user`'s map
/// serializes them (key order included), appended to `out` without
/// building the map: `GET /users/me` and `GET /users/{id}` (the map was
/// most of their instructions).
pub fn write_user_members(
    out: &mut SortedMembers,
    state: &State,
    viewer: &User,
    user: &User,
    options: UserOptions,
) {
    let sees_email = can_see_email(state, viewer, user);
    // Keys in byte order, as a `BTreeMap` keeps them.
    let avatar = out.member("avatar_url");
    if let Some(uploaded) = state.files.avatar(user.id) {
        string(avatar, &uploaded_avatar_url(&uploaded, user.avatar_version));
    } else if options.client_gravatar && sees_email {
        avatar.extend_from_slice(b"null");
    } else {
        write_avatar_url(avatar, user);
    }
    out.unsigned("avatar_version", u64::from(user.avatar_version));
    if user.is_bot() {
        match user.bot_owner {
            Some(owner) => out.unsigned("bot_owner_id", owner.0),
            None => out.null("bot_owner_id"),
        }
    }
    match user.bot_type {
        Some(t) => out.unsigned("bot_type", u64::from(t.code())),
        None => out.null("bot_type"),
    }
    let date = out.member("date_joined");
    date.push(b'"');
    Iso8601(user.date_joined).write_to(date);
    date.push(b'"');
    if sees_email {
        out.string("delivery_email", &user.delivery_email);
    } else {
        out.null("delivery_email");
    }
    match state.placeholder_host(user.realm).filter(|_| !user.is_bot()) {
        Some(host) => out.string("email", &format!("user{}@{host}", user.id.0)),
        None => out.string("email", &user.email),
    }
    out.string("full_name", &user.full_name);
    out.boolean("is_active", user.is_active);
    out.boolean("is_admin", user.role.is_admin());
    out.boolean("is_bot", user.is_bot());
    out.boolean("is_guest", user.role == Role::Guest);
    out.boolean("is_owner", user.role == Role::Owner);
    if options.include_custom_profile_fields && !user.is_bot() {
        let data = out.member("profile_data");
        let written =
            state.profile_values.read(&user.id, |values| write_profile_data(data, values));
        if written.is_none() {
            data.extend_from_slice(b"{}");
        }
    }
    out.unsigned("role", u64::from(user.role.code()));
    out.string("timezone", &user.timezone);
    out.unsigned("user_id", user.id.0);
}

/// `profile_data` as `profile_fields::profile_data`'s map serializes it:
/// field ids as string keys in string order, and in each value
/// `rendered_value` (when present) before `value`.
fn write_profile_data(out: &mut Vec<u8>, values: &profile::Values) {
    let mut keyed: Vec<(String, &(String, Option<String>))> =
        values.iter().map(|(id, v)| (id.to_string(), v)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.push(b'{');
    for (i, (id, (value, rendered))) in keyed.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, id);
        out.push(b':');
        out.push(b'{');
        if let Some(rendered) = rendered {
            out.extend_from_slice(b"\"rendered_value\":");
            string(out, rendered);
            out.push(b',');
        }
        out.extend_from_slice(b"\"value\":");
        string(out, value);
        out.push(b'}');
    }
    out.push(b'}');
}

/// `gravatar_url(user, false)` as a JSON string, written in place.
fn write_avatar_url(out: &mut Vec<u8>, user: &User) {
    let digest = gravatar_digest(user.delivery_email.trim());
    out.extend_from_slice(b"\"https://secure.gravatar.com/avatar/");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in digest.iter() {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
    // Nothing here needs escaping in JSON.
    out.extend_from_slice(b"?d=identicon&version=");
    unsigned(out, u64::from(user.avatar_version));
    out.push(b'"');
}

/// Entries of each worker thread's gravatar cache (direct-mapped by a
/// hash of the address).
const GRAVATAR_SLOTS: usize = 64;

/// A cached address and the MD5 of its lowercased form.
type Gravatar = (String, [u8; 16]);

thread_local! {
    /// The MD5 of recently written addresses, per worker thread: the same
    /// few accounts' objects are written over and over (every `GET
    /// /users/me` writes its caller's), and the digest was ≈ 5% of such a
    /// request. An entry is used only for the very same address.
    static GRAVATARS: std::cell::RefCell<Vec<Option<Gravatar>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The MD5 of the lowercased address, as gravatar URLs carry it.
fn gravatar_digest(email: &str) -> [u8; 16] {
    use std::hash::BuildHasher;
    let slot = rustc_hash::FxBuildHasher.hash_one(email) as usize % GRAVATAR_SLOTS;
    // No yield can happen in here, so a thread-local is safe on may.
    GRAVATARS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(Some((cached, digest))) = cache.get(slot) {
            if cached == email {
                return *digest;
            }
        }
        // Lowercasing allocates only when there is something to lowercase.
        let digest: [u8; 16] = if email.bytes().any(|b| !b.is_ascii() || b.is_ascii_uppercase()) {
            Md5::digest(email.to_lowercase().as_bytes())
        } else {
            Md5::digest(email.as_bytes())
        }
        .into();
        if cache.is_empty() {
            cache.resize(GRAVATAR_SLOTS, None);
        }
        match &mut cache[slot] {
            Some((cached, cached_digest)) => {
                cached.clear();
                cached.push_str(email);
                *cached_digest = digest;
            }
            empty => *empty = Some((email.to_owned(), digest)),
        }
        digest
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::Value;

    use super::*;
    use crate::mutation::build::NewUser;
    use crate::mutation::{Mutation, UserChange};
    use crate::state::EmailVisibility;
    use crate::testkit::World;

    /// A realm with every kind of account: roles (named with a quote and
    /// non-ASCII letters, joined a day after the epoch), a bot, a
    /// deactivated user, custom profile values (one with a rendered form).
    pub(crate) fn realm() -> (World, Vec<User>) {
        let mut w = World::new();
        let roles = [Role::Owner, Role::Administrator, Role::Moderator, Role::Member, Role::Guest];
        let mut users: Vec<User> = Vec::new();
        for (i, role) in roles.into_iter().enumerate() {
            let email = format!("u{i}@t.test");
            let new = NewUser { email: &email, full_name: "Ü \"q\"", role, bot: None };
            users.push(w.add_user("", &new, 86_400));
        }
        w.bot("bot@t.test", &users[0]);
        w.deactivate(&users[3]);
        let value = |field, value: &str, rendered: Option<&str>| {
            let value = Some((value.to_owned(), rendered.map(str::to_owned)));
            (users[2].id, UserChange::ProfileValue { field, value })
        };
        let changes =
            vec![value(1, "x", None), value(12, "**y**", Some("<p><strong>y</strong></p>"))];
        w.apply(Mutation::UpdateUsers { changes });
        let users = w.state.realm_users(users[0].realm);
        (w, users)
    }

    #[test]
    fn the_bytes_match_json_user_for_every_viewer_class() {
        let (w, users) = realm();
        let realm = users[0].realm;
        for visibility in EmailVisibility::ALL {
            w.state.realms.update(&realm, |r| r.settings.email_address_visibility = visibility);
            for viewer in &users {
                for client_gravatar in [false, true] {
                    for include_custom_profile_fields in [false, true] {
                        let options =
                            UserOptions { client_gravatar, include_custom_profile_fields };
                        let raw = users_array(&w.state, Some(viewer), users.iter(), options);
                        let got: Value = serde_json::from_str(&raw).unwrap();
                        let want: Vec<Value> = users
                            .iter()
                            .map(|u| crate::view::user::user(&w.state, viewer, u, options))
                            .collect();
                        assert_eq!(got, Value::Array(want), "{visibility:?} {options:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn dates_written_by_hand_equal_their_display() {
        let mut secs = -86_400 * 366 * 3000;
        while secs < 86_400 * 366 * 9000 {
            let mut out = Vec::new();
            Iso8601(secs).write_to(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), Iso8601(secs).to_string(), "{secs}");
            secs += 7_777_777;
        }
        for secs in [0, -1, 59, 86_399, 86_400, 951_782_400, 1_700_000_000, 253_402_300_799] {
            let mut out = Vec::new();
            Iso8601(secs).write_to(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), Iso8601(secs).to_string(), "{secs}");
        }
    }

    #[test]
    fn spectators_see_no_real_address_and_no_profile_data() {
        let (w, users) = realm();
        let options = UserOptions { client_gravatar: false, include_custom_profile_fields: false };
        let raw = users_array(&w.state, None, users.iter(), options);
        let got: Value = serde_json::from_str(&raw).unwrap();
        for user in got.as_array().unwrap() {
            assert_eq!(user["delivery_email"], Value::Null, "{user}");
            assert!(user.get("profile_data").is_none());
            assert!(user["avatar_url"].is_string());
        }
        assert_eq!(users_array(&w.state, None, [].iter(), options), "[]");
    }

    #[test]
    fn cached_gravatar_digests_are_each_addresses_own() {
        let fresh = |email: &str| -> [u8; 16] { Md5::digest(email.to_lowercase()).into() };
        // Enough addresses to share slots, each asked twice, plus the
        // empty one (whose slot may still be unfilled).
        let emails: Vec<String> = (0..200).map(|i| format!("User{i}@Example.test")).collect();
        for _ in 0..2 {
            for email in emails.iter().map(String::as_str).chain(["", "ÄÖ@x.test"]) {
                assert_eq!(gravatar_digest(email), fresh(email), "{email}");
            }
        }
    }
}
