//! Administering accounts and bots: `GET /users/{email}` (through
//! `users::get_one`), `PATCH /users/{user_id_or_email}`,
//! `DELETE /users/{user_id}`, `POST /users/{user_id}/reactivate`,
//! `POST /users`, `DELETE /users/me`, `POST /users/me/api_key/regenerate`,
//! `POST /bots`, `GET /bots`, `PATCH /bots/{bot_id}`,
//! `POST /bots/{bot_id}/api_key/regenerate`.
//!
//! The role rules (only owners grant or take the owner role, the last
//! owner stays one, a guest is not made an administrator in one step) are
//! checked under the writer lock, so two racing demotions cannot both pass.

use serde_json::{json, Value};
use std::collections::BTreeMap;

use super::profile_fields;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::build::{self, NewUser};
use crate::mutation::rules::{check_email, check_full_name};
use crate::mutation::{Mutation, UserChange};
use crate::reply;
use crate::state::bots::{BotChange, Interface, Service};
use crate::state::{BotType, RealmId, Role, State, User, UserId};
use crate::view::user::UserOptions;

/// Zulip's role integer.
pub fn parse_role(code: i64) -> ApiResult<Role> {
    [Role::Owner, Role::Administrator, Role::Moderator, Role::Member, Role::Guest]
        .into_iter()
        .find(|r| i64::from(r.code()) == code)
        .ok_or_else(|| ApiError::bad_request("Invalid role"))
}

fn active_owners(state: &State, realm: RealmId) -> usize {
    state
        .realm_users(realm)
        .iter()
        .filter(|u| u.is_active && !u.is_bot() && u.role == Role::Owner)
        .count()
}

/// Why `caller` may not give `target` the role `new`, or `Ok`.
fn check_role_change(state: &State, caller: &User, target: &User, new: Role) -> ApiResult<()> {
    if new == target.role {
        return Ok(());
    }
    if (new == Role::Owner || target.role == Role::Owner) && caller.role != Role::Owner {
        return Err(ApiError::bad_request("Must be an organization owner"));
    }
    if target.role == Role::Owner && active_owners(state, target.realm) <= 1 {
        return Err(ApiError::bad_request(
            "The owner permission cannot be removed from the only organization owner.",
        ));
    }
    if target.role == Role::Guest && new.is_admin() {
        return Err(ApiError::bad_request(
            "A guest cannot be made an administrator directly; make them a member first.",
        ));
    }
    Ok(())
}

/// A user of the caller's realm by the path segment: an id, else an email
/// (the real one if the caller may see it, or the API email).
fn target_by_path(app: &App, call: &Call) -> ApiResult<User> {
    // System bots are nobody's to edit.
    user_by_path(app, call)?
        .filter(|u| !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))
}

/// `target_by_path`'s look-up, system bots included.
pub(super) fn user_by_path(app: &App, call: &Call) -> ApiResult<Option<User>> {
    let segment = call.path.first().map(String::as_str).unwrap_or("");
    let me = call.caller();
    let user = match segment.parse::<u64>() {
        Ok(id) => app.state.user_in_realm(me.realm, UserId(id)),
        Err(_) => find_by_email(&app.state, me, segment),
    };
    Ok(user)
}

/// A user by email as `viewer` may address them: the API email always,
/// the real address only when `viewer` may see it.
pub fn find_by_email(state: &State, viewer: &User, email: &str) -> Option<User> {
    state.user_by_email(viewer.realm, email).or_else(|| {
        state
            .user_by_delivery_email(viewer.realm, email)
            .filter(|u| crate::state::access::can_see_email(state, viewer, u))
    })
}

fn require_admin(me: &User) -> ApiResult<()> {
    if me.role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// `PATCH /users/{user_id}` and `PATCH /users/{email}`: an administrator
/// changes `full_name`, `role`, `profile_data` or (owners) `new_email`.
pub fn update_user(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let target = target_by_path(app, call)?;
    let me = call.caller().clone();
    require_admin(&me)?;
    let mut changes = Vec::new();
    if let Some(name) = call.params.string("full_name") {
        changes.push(UserChange::FullName(check_full_name(&name)?));
    }
    let role = match call.params.int("role")? {
        Some(code) => Some(parse_role(code)?),
        None => None,
    };
    if let Some(email) = call.params.string("new_email") {
        // natter has no per-user grant of Zulip's `can_change_user_emails`:
        // organization owners hold it.
        if me.role != Role::Owner {
            return Err(ApiError::bad_request("Must be an organization owner"));
        }
        changes.push(UserChange::Email(check_email(&email)?));
    }
    if let Some(data) = call.params.json("profile_data")? {
        if target.is_bot() {
            return Err(ApiError::bad_request("Bots have no custom profile fields"));
        }
        changes.extend(profile_fields::parse_profile_data(&app.state, &target, &data)?);
    }
    app.committer.commit(|s| {
        let target =
            s.users.get(&target.id).ok_or_else(|| ApiError::bad_request("No such user"))?;
        let mut changes = changes;
        if let Some(role) = role {
            check_role_change(s, &me, &target, role)?;
            if role != target.role {
                changes.push(UserChange::Role(role));
            }
        }
        for c in &changes {
            if let UserChange::Email(email) = c {
                if s.user_by_delivery_email(target.realm, email).is_some_and(|u| u.id != target.id)
                    || s.user_by_email(target.realm, email).is_some_and(|u| u.id != target.id)
                {
                    return Err(ApiError::bad_request(format!("Email '{email}' already in use")));
                }
            }
        }
        let changes = changes.into_iter().map(|c| (target.id, c)).collect();
        Ok((Mutation::UpdateUsers { changes }, ()))
    })?;
    Ok(Reply::new())
}

/// Deactivation of `target` by `me` (checked under the writer lock): the
/// account and the bots it owns.
fn deactivation(s: &State, me: &User, target: UserId) -> ApiResult<Mutation> {
    let target = s
        .account_in_realm(me.realm, target)
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !target.is_active {
        return Err(ApiError::bad_request("User is already deactivated"));
    }
    if target.role == Role::Owner && !target.is_bot() {
        if me.role != Role::Owner {
            return Err(ApiError::bad_request("Must be an organization owner"));
        }
        if active_owners(s, target.realm) <= 1 {
            return Err(ApiError::bad_request("Cannot deactivate the only organization owner"));
        }
    }
    let mut changes = vec![(target.id, UserChange::Active(false))];
    if !target.is_bot() {
        for bot in s.realm_users(target.realm) {
            if bot.is_bot() && bot.is_active && bot.bot_owner == Some(target.id) {
                changes.push((bot.id, UserChange::Active(false)));
            }
        }
    }
    Ok(Mutation::UpdateUsers { changes })
}

/// `DELETE /users/{user_id}`: an administrator deactivates an account. Its
/// API key stops working at once (`USER_DEACTIVATED`); its bots go too.
pub fn deactivate(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = UserId(call.path_id(0, "user_id")?);
    let me = call.caller().clone();
    require_admin(&me)?;
    app.committer.commit(|s| Ok((deactivation(s, &me, id)?, ())))?;
    Ok(Reply::new())
}

/// `DELETE /users/me`: the caller deactivates their own account (never
/// the last owner).
pub fn deactivate_me(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    app.committer.commit(|s| Ok((deactivation(s, &me, me.id)?, ())))?;
    Ok(Reply::new())
}

/// `POST /users/{user_id}/reactivate`.
pub fn reactivate(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = UserId(call.path_id(0, "user_id")?);
    let me = call.caller().clone();
    require_admin(&me)?;
    app.committer.commit(|s| {
        let target = s
            .account_in_realm(me.realm, id)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if target.is_active {
            return Err(ApiError::bad_request("User is already active"));
        }
        if target.role == Role::Owner && me.role != Role::Owner {
            return Err(ApiError::bad_request("Must be an organization owner"));
        }
        Ok((Mutation::UpdateUsers { changes: vec![(id, UserChange::Active(true))] }, ()))
    })?;
    Ok(Reply::new())
}

/// `POST /users`: an administrator creates an account (`email`,
/// `full_name`, and `password`, which the new user logs in with through
/// `POST /fetch_api_key`; without one the account has only its API key).
pub fn create_user(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    require_admin(&me)?;
    let email = check_email(&call.params.required_string("email")?)?;
    let full_name = check_full_name(&call.params.required_string("full_name")?)?;
    // Hashed before the commit: argon2 is slow and runs off the coroutine.
    let hash = match call.params.string("password") {
        Some(password) => {
            super::passwords::check_new_password(&password)
                .map_err(|e| e.with("var_name", "password"))?;
            Some(super::passwords::hash_password(&password))
        }
        None => None,
    };
    let key = entropy::api_key();
    let now = entropy::now();
    let id = app.committer.commit(|s| {
        if s.user_by_email(me.realm, &email).is_some() {
            return Err(ApiError::bad_request(format!("Email '{email}' already in use")));
        }
        let new = NewUser { email: &email, full_name: &full_name, role: Role::Member, bot: None };
        let m = build::user(s, me.realm, &new, key, now)?;
        let Mutation::CreateUser(u) = &m else { unreachable!("build::user creates a user") };
        let id = u.id;
        let m = match hash {
            Some(hash) => Mutation::Batch(vec![m, Mutation::SetPassword { user: id, hash }]),
            None => m,
        };
        Ok((m, id))
    })?;
    Ok(reply! { "user_id" => id.0 })
}

/// `POST /users/me/api_key/regenerate`: a new key for the caller; the old
/// one stops working at once.
pub fn regenerate_my_key(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let key = entropy::api_key();
    let change = vec![(me.id, UserChange::ApiKey(key.clone()))];
    app.committer.commit(|_| Ok((Mutation::UpdateUsers { changes: change }, ())))?;
    Ok(reply! { "api_key" => key })
}

/// The host part of bot emails: the realm's subdomain on the server's
/// email domain (`state::emails`: the host without a port, or
/// `natter.invalid` when the host is an IP address).
fn bot_domain(app: &App, call: &Call) -> String {
    let domain = app.state.email_domain();
    if call.realm.string_id.is_empty() {
        domain.to_owned()
    } else {
        format!("{}.{domain}", call.realm.string_id)
    }
}

/// A URL parameter of an outgoing-webhook service: a JSON-encoded string
/// that is an absolute `http` or `https` URL with a host.
fn payload_url(call: &mut Call, name: &str) -> ApiResult<Option<String>> {
    let Some(value) = call.params.json(name)? else { return Ok(None) };
    let Value::String(url) = value else {
        return Err(ApiError::bad_request(format!("{name} is not a string")).with("var_name", name));
    };
    if !is_http_url(&url) {
        return Err(ApiError::bad_request(format!("{name} is not a URL")).with("var_name", name));
    }
    Ok(Some(url))
}

/// Whether `url` is an absolute `http`/`https` URL with a host.
pub fn is_http_url(url: &str) -> bool {
    let Ok(uri) = iri_string::types::UriStr::new(url) else { return false };
    let scheme = uri.scheme_str().to_ascii_lowercase();
    let host = uri.authority_components().map(|a| a.host().to_owned()).unwrap_or_default();
    (scheme == "http" || scheme == "https") && !host.is_empty()
}

/// An outgoing-webhook interface parameter (Zulip's integers).
fn interface(call: &mut Call, name: &str) -> ApiResult<Option<Interface>> {
    match call.params.int(name)? {
        None => Ok(None),
        Some(code) => Interface::from_code(code)
            .map(Some)
            .ok_or_else(|| ApiError::bad_request("Invalid interface type")),
    }
}

/// `config_data`: a JSON object of strings.
fn config_data(call: &mut Call) -> ApiResult<Option<BTreeMap<String, String>>> {
    let Some(value) = call.params.json("config_data")? else { return Ok(None) };
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request("config_data is not a dict"));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(v) => Ok((k, v)),
            _ => Err(ApiError::bad_request(format!("config_data[\"{k}\"] is not a string"))),
        })
        .collect::<ApiResult<_>>()
        .map(Some)
}

/// `POST /bots`: create a bot owned by the caller: generic, incoming
/// webhook, or outgoing webhook (with `payload_url`, `interface_type`,
/// `service_name`, `config_data`). Embedded bots are refused: natter runs
/// no bot code in-process.
pub fn create_bot(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    if me.role == Role::Guest || me.is_bot() {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let full_name = check_full_name(&call.params.required_string("full_name")?)?;
    let short = call.params.required_string("short_name")?;
    let short = short.trim().to_lowercase();
    if short.is_empty()
        || !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(ApiError::bad_request("Invalid bot short name"));
    }
    let bot_type = match call.params.int("bot_type")?.unwrap_or(1) {
        1 => BotType::Generic,
        2 => BotType::IncomingWebhook,
        3 => BotType::OutgoingWebhook,
        4 => {
            return Err(ApiError::bad_request(
                "Embedded bots are not supported: natter runs no bot code in-process; \
                 use an outgoing webhook bot with zulip-botserver instead",
            ))
        }
        _ => return Err(ApiError::bad_request("Invalid bot type")),
    };
    let service = if bot_type == BotType::OutgoingWebhook {
        let base_url =
            payload_url(call, "payload_url")?.ok_or_else(|| ApiError::missing("payload_url"))?;
        let interface = interface(call, "interface_type")?.unwrap_or(Interface::Generic);
        let name = call.params.string("service_name").unwrap_or_else(|| short.clone());
        let config = config_data(call)?.unwrap_or_default();
        let token = entropy::api_key();
        Some(Service { name, base_url, interface, token, config })
    } else {
        None
    };
    let email = check_email(&format!("{short}-bot@{}", bot_domain(app, call)))?;
    let key = entropy::api_key();
    let now = entropy::now();
    let user = app.committer.commit(|s| {
        if s.user_by_email(me.realm, &email).is_some()
            || s.user_by_delivery_email(me.realm, &email).is_some()
        {
            return Err(ApiError::bad_request("Username already in use"));
        }
        let name_taken = s
            .realm_users(me.realm)
            .iter()
            .any(|u| u.is_bot() && u.is_active && u.full_name.eq_ignore_ascii_case(&full_name));
        if name_taken {
            return Err(ApiError::bad_request("Name is already in use!"));
        }
        let new = NewUser {
            email: &email,
            full_name: &full_name,
            role: Role::Member,
            bot: Some((bot_type, me.id)),
        };
        let m = build::user(s, me.realm, &new, key, now)?;
        let Mutation::CreateUser(u) = &m else { unreachable!("build::user creates a user") };
        let u = u.clone();
        // The service first, so that the bot's `realm_bot` `add` event
        // carries it.
        let m = match &service {
            Some(service) => Mutation::Batch(vec![
                Mutation::Bot(Box::new(BotChange::SetService {
                    bot: u.id,
                    service: service.clone(),
                })),
                m,
            ]),
            None => m,
        };
        Ok((m, u))
    })?;
    Ok(reply! {
        "user_id" => user.id.0,
        "api_key" => user.api_key,
        "email" => user.email,
        "avatar_url" => crate::view::user::avatar_url(&app.state, &user, false),
        "default_sending_stream" => Value::Null,
        "default_events_register_stream" => Value::Null,
        "default_all_public_streams" => false,
    })
}

/// A bot as `GET /bots` lists it.
fn bot_json(state: &State, bot: &User) -> Value {
    let owner = bot.bot_owner.and_then(|o| state.users.get(&o));
    json!({
        "user_id": bot.id.0,
        "username": bot.email,
        "email": bot.email,
        "full_name": bot.full_name,
        "api_key": bot.api_key,
        "avatar_url": crate::view::user::avatar_url(state, bot, false),
        "bot_type": bot.bot_type.map(|t| t.code()),
        "is_active": bot.is_active,
        "owner_id": bot.bot_owner.map(|o| o.0),
        "owner": owner.map(|o| state.api_email(&o)),
        "default_sending_stream": Value::Null,
        "default_events_register_stream": Value::Null,
        "default_all_public_streams": false,
        "services": crate::view::bots::services_json(state, bot),
    })
}

/// `GET /bots`: the caller's bots (every bot of the realm for
/// administrators), with their API keys.
pub fn list_bots(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller();
    let bots: Vec<Value> = app
        .state
        .realm_users(me.realm)
        .iter()
        .filter(|u| u.is_bot() && (me.role.is_admin() || u.bot_owner == Some(me.id)))
        .map(|b| bot_json(&app.state, b))
        .collect();
    Ok(reply! { "bots" => bots })
}

/// A bot the caller may manage: its owner or an administrator.
fn managed_bot(app: &App, call: &Call) -> ApiResult<User> {
    let id = UserId(call.path_id(0, "bot_id")?);
    let me = call.caller();
    let bot = app
        .state
        .account_in_realm(me.realm, id)
        .filter(User::is_bot)
        .ok_or_else(|| ApiError::bad_request("No such bot"))?;
    if !(me.role.is_admin() || bot.bot_owner == Some(me.id)) {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    Ok(bot)
}

/// `PATCH /bots/{bot_id}`: `full_name`, `bot_owner_id` (an active human
/// of the realm), `role` (administrators; the usual role rules), for an
/// outgoing-webhook bot `service_payload_url`, `service_interface` (with
/// it) and `config_data`, and a new avatar as one file part of a
/// multipart body (`avatars::prepare`), all in one committed change.
pub fn update_bot(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let bot = managed_bot(app, call)?;
    let me = call.caller().clone();
    let mut changes = Vec::new();
    if let Some(name) = call.params.string("full_name") {
        changes.push(UserChange::FullName(check_full_name(&name)?));
    }
    if let Some(owner) = call.params.int("bot_owner_id")? {
        let owner = u64::try_from(owner)
            .ok()
            .and_then(|o| app.state.user_in_realm(me.realm, UserId(o)))
            .filter(|o| o.is_active && !o.is_bot())
            .ok_or_else(|| ApiError::bad_request("Failed to change owner, no such user"))?;
        changes.push(UserChange::BotOwner(owner.id));
    }
    let role = match call.params.int("role")? {
        Some(code) => Some(parse_role(code)?),
        None => None,
    };
    if role.is_some() {
        require_admin(&me)?;
    }
    let url = payload_url(call, "service_payload_url")?;
    let interface = interface(call, "service_interface")?;
    let config = config_data(call)?;
    let service_change = url.is_some() || interface.is_some() || config.is_some();
    if service_change && bot.bot_type != Some(BotType::OutgoingWebhook) {
        return Err(ApiError::bad_request("This bot has no outgoing webhook service"));
    }
    // A file part is the bot's new avatar (made and stored before the
    // change that records it is committed).
    let mut files = std::mem::take(&mut call.files);
    let avatar = match (files.pop(), files.is_empty()) {
        (None, _) => None,
        (Some(upload), true) => Some(super::avatars::prepare(app, me.realm, upload)?),
        (Some(_), false) => {
            return Err(ApiError::bad_request("You may only upload one file at a time"))
        }
    };
    let committed = app.committer.commit(|s| {
        let bot = s.users.get(&bot.id).ok_or_else(|| ApiError::bad_request("No such bot"))?;
        // Again under the writer lock: the owner may have changed.
        if !(me.role.is_admin() || bot.bot_owner == Some(me.id)) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        let mut changes = changes;
        if let Some(role) = role {
            check_role_change(s, &me, &bot, role)?;
            if role != bot.role {
                changes.push(UserChange::Role(role));
            }
        }
        let users =
            Mutation::UpdateUsers { changes: changes.into_iter().map(|c| (bot.id, c)).collect() };
        let service = s.bots.services.get(&bot.id).filter(|_| service_change).map(|old| {
            let service = Service {
                base_url: url.clone().unwrap_or(old.base_url.clone()),
                interface: interface.unwrap_or(old.interface),
                config: config.clone().unwrap_or(old.config.clone()),
                ..old
            };
            Mutation::Bot(Box::new(BotChange::SetService { bot: bot.id, service }))
        });
        let replaced = avatar.as_ref().and_then(|_| s.files.avatar(bot.id));
        let avatar =
            avatar.clone().map(|a| Mutation::SetAvatar { user: bot.id, avatar: Some(Box::new(a)) });
        let mutations: Vec<Mutation> =
            [Some(users), service, avatar].into_iter().flatten().collect();
        let mutation = match <[Mutation; 1]>::try_from(mutations) {
            Ok([one]) => one,
            Err(many) => Mutation::Batch(many),
        };
        Ok((mutation, replaced))
    });
    match committed {
        Ok(replaced) => super::avatars::replaced_images(app, replaced),
        Err(e) => {
            if let Some(avatar) = &avatar {
                super::avatars::discard(app, avatar);
            }
            return Err(e);
        }
    }
    Ok(Reply::new())
}

/// `DELETE /bots/{bot_id}`: the bot's owner or an administrator
/// deactivates it (its key stops at once; `realm_user` and `realm_bot`
/// updates of `is_active`, as for any deactivation).
pub fn deactivate_bot(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let bot = managed_bot(app, call)?;
    let me = call.caller().clone();
    app.committer.commit(|s| {
        // Re-checked under the lock: the owner may have changed.
        let current = s.account_in_realm(me.realm, bot.id).filter(User::is_bot);
        let current = current.ok_or_else(|| ApiError::bad_request("No such bot"))?;
        if !(me.role.is_admin() || current.bot_owner == Some(me.id)) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        Ok((deactivation(s, &me, bot.id)?, ()))
    })?;
    Ok(Reply::new())
}

/// `POST /bots/{bot_id}/api_key/regenerate`: a new key for a bot the
/// caller manages; the old one stops working at once.
pub fn regenerate_bot_key(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let bot = managed_bot(app, call)?;
    let key = entropy::api_key();
    let change = vec![(bot.id, UserChange::ApiKey(key.clone()))];
    app.committer.commit(|_| Ok((Mutation::UpdateUsers { changes: change }, ())))?;
    Ok(reply! { "api_key" => key })
}

/// `GET /users/{email}`: `users::get_one` resolves a non-numeric path
/// segment here.
pub fn user_by_path_email(app: &App, call: &Call, options: UserOptions) -> ApiResult<Reply> {
    let user = user_by_path(app, call)?.ok_or_else(|| ApiError::bad_request("No such user"))?;
    Ok(reply! { "user" => crate::view::user::user(&app.state, call.caller(), &user, options) })
}
