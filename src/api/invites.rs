//! Invitations: `POST /invites`, `GET /invites`, `DELETE /invites/{id}`,
//! `POST /invites/{id}/resend`, `POST /invites/multiuse`,
//! `DELETE /invites/multiuse/{id}`, and the registration endpoints the
//! mailed link leads to: `GET /registration/{key}` (what the invitation is)
//! and `POST /registration/{key}` (create the account, joining the
//! invitation's channels and groups).
//!
//! No mail leaves the machine: each invitation is a file in the outbox (and
//! a line in the log) with its link. The link's key is the credential; an
//! expired, revoked or used link is refused.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::passwords::{check_new_password, hash_password, outbox};
use super::personal::commit_change;
use super::realm::realm_url;

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::rules::{check_full_name, valid_email};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access::{can_see_channel, has_permission};
use crate::state::personal::{Invite, InviteStatus, LocalIdKind, PersonalChange};
use crate::state::{ChannelId, GroupId, IdKind, Realm, Role, State, User, UserId};

/// Default validity of an invitation (Zulip's `INVITATION_LINK_VALIDITY_MINUTES`).
pub const DEFAULT_VALIDITY_MINUTES: i64 = 14_400;
/// Longest validity accepted (ten years).
pub const MAX_VALIDITY_MINUTES: i64 = 10 * 365 * 24 * 60;
/// Longest custom welcome text.
pub const MAX_WELCOME_TEXT_LENGTH: usize = 8000;
/// Invitations a realm may send per day.
pub const DAILY_LIMIT: usize = 100;
/// Most addresses in one request.
pub const MAX_ADDRESSES: usize = 100;

fn role_from_code(code: i64) -> Option<Role> {
    Some(match code {
        100 => Role::Owner,
        200 => Role::Administrator,
        300 => Role::Moderator,
        400 => Role::Member,
        600 => Role::Guest,
        _ => return None,
    })
}

/// What both invitation kinds take.
struct Common {
    expires_in: Option<i64>,
    role: Role,
    channels: Vec<ChannelId>,
    groups: Vec<GroupId>,
    include_default: bool,
    welcome: Option<String>,
}

/// Reads and checks the parameters both kinds share.
fn common_params(app: &App, call: &mut Call, me: &User) -> ApiResult<Common> {
    if me.role == Role::Guest || me.is_bot() {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let expires_in = match call.params.raw("invite_expires_in_minutes").map(str::trim) {
        None => Some(DEFAULT_VALIDITY_MINUTES),
        Some("null") => None,
        Some(raw) => {
            let minutes: i64 = raw
                .parse()
                .map_err(|_| ApiError::invalid("invite_expires_in_minutes", "not an integer"))?;
            if !(1..=MAX_VALIDITY_MINUTES).contains(&minutes) {
                return Err(ApiError::invalid("invite_expires_in_minutes", "out of range"));
            }
            Some(minutes)
        }
    };
    let role = match call.params.int("invite_as")? {
        None => Role::Member,
        Some(code) => {
            role_from_code(code).ok_or_else(|| ApiError::invalid("invite_as", "not a role"))?
        }
    };
    // Equal or stricter restrictions than the inviter's own role.
    if role < me.role {
        return Err(ApiError::bad_request("Insufficient permission"));
    }
    let ids = |call: &mut Call, name: &str| -> ApiResult<Option<Vec<u64>>> {
        let Some(v) = call.params.json(name)? else { return Ok(None) };
        v.as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            .map(Some)
            .ok_or_else(|| ApiError::invalid(name, "not a list of IDs"))
    };
    let channel_ids = ids(call, "stream_ids")?.ok_or_else(|| ApiError::missing("stream_ids"))?;
    let group_ids = ids(call, "group_ids")?.unwrap_or_default();
    let include_default = call.params.bool_or("include_realm_default_subscriptions", false)?;
    let welcome = match call.params.raw("welcome_message_custom_text") {
        None | Some("null") => None,
        Some(text) => Some(text.to_owned()),
    };
    if welcome.as_ref().is_some_and(|t| t.chars().count() > MAX_WELCOME_TEXT_LENGTH) {
        return Err(ApiError::invalid(
            "welcome_message_custom_text",
            "longer than 8000 characters",
        ));
    }
    // Only administrators may set it; everyone else's invitations use the
    // organization default.
    let welcome = welcome.filter(|_| me.role.is_admin());
    let state = &app.state;
    let mut channels = Vec::new();
    for id in channel_ids {
        let channel = state
            .channel_in_realm(me.realm, ChannelId(id))
            .filter(|c| can_see_channel(me, c) && !c.is_archived)
            .ok_or_else(|| {
                ApiError::bad_request(format!("Invalid channel ID {id}. No invites were sent."))
            })?;
        let may_add = channel.is_default
            || me.role.is_admin()
            || has_permission(state, me, &channel.permissions.can_add_subscribers);
        if !may_add {
            return Err(ApiError::bad_request(format!(
                "You do not have permission to subscribe other users to channel {id}. \
                 No invites were sent."
            )));
        }
        if !channels.contains(&channel.id) {
            channels.push(channel.id);
        }
    }
    let mut groups = Vec::new();
    for id in group_ids {
        let group = state
            .groups
            .get(&GroupId(id))
            .filter(|g| g.realm == me.realm && g.system.is_none() && !g.deactivated)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid user group ID {id}")))?;
        if !me.role.is_admin() && !group.direct_members.contains(&me.id) {
            return Err(ApiError::bad_request(format!(
                "Insufficient permission to add users to user group {id}"
            )));
        }
        if !groups.contains(&group.id) {
            groups.push(group.id);
        }
    }
    Ok(Common { expires_in, role, channels, groups, include_default, welcome })
}

fn registration_link(app: &App, realm: &Realm, key: &str) -> String {
    format!("{}/api/v1/registration/{key}", realm_url(app, realm))
}

fn mail_invitation(app: &App, realm: &Realm, inviter: &User, invite: &Invite) -> ApiResult<()> {
    let Some(email) = &invite.email else { return Ok(()) };
    let expiry = match invite.expires {
        Some(t) => format!("It can be used until {} (UNIX time).", t),
        None => "It does not expire.".to_owned(),
    };
    let body = format!(
        "{} invited you to join {}.\n\nCreate your account by POSTing full_name and password \
         to this link:\n{}\n\n{expiry}\n",
        inviter.full_name,
        realm.name,
        registration_link(app, realm, &invite.key)
    );
    let subject = format!("{} invited you to {}", inviter.full_name, realm.name);
    outbox::send(app, email, &subject, &body).map(|_| ()).map_err(|e| {
        tracing::error!("writing to the outbox: {e}");
        ApiError::internal()
    })
}

/// Addresses in `invitee_emails`: split on commas and newlines, trimmed,
/// duplicates (case-insensitively) dropped.
pub fn split_addresses(raw: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    raw.split([',', '\n'])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .filter(|a| seen.insert(a.to_lowercase()))
        .map(str::to_owned)
        .collect()
}

fn sent_today(state: &State, realm: crate::state::RealmId, now: i64) -> usize {
    state
        .settings
        .invites
        .collect_sorted(|_, i| i.realm == realm && i.email.is_some() && now - i.invited < 86_400)
        .len()
}

/// `POST /invites`: invite addresses (see the module doc). Addresses that
/// already have an account are skipped and reported in an
/// `INVITATION_FAILED` error; if any address is malformed, nothing is sent.
pub fn send_invites(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let raw = call.params.required_string("invitee_emails")?;
    let notify = call.params.bool_or("notify_referrer_on_join", true)?;
    let me = call.caller().clone();
    let common = common_params(app, call, &me)?;
    let addresses = split_addresses(&raw);
    if addresses.is_empty() {
        return Err(ApiError::bad_request("You must specify at least one email address."));
    }
    if addresses.len() > MAX_ADDRESSES {
        return Err(ApiError::bad_request(format!(
            "You can invite at most {MAX_ADDRESSES} addresses at once."
        )));
    }
    let failed = |errors: Vec<Value>, sent: bool, daily: bool, msg: &str| ApiError {
        status: 400,
        code: "INVITATION_FAILED",
        msg: msg.to_owned(),
        extra: vec![
            ("errors", Value::Array(errors)),
            ("sent_invitations", json!(sent)),
            ("daily_limit_reached", json!(daily)),
            ("license_limit_reached", json!(false)),
        ],
    };
    let invalid: Vec<Value> = addresses
        .iter()
        .filter(|a| !valid_email(a))
        .map(|a| json!([a, "Invalid address.", false]))
        .collect();
    if !invalid.is_empty() {
        return Err(failed(
            invalid,
            false,
            false,
            "Some emails did not validate, so we didn't send any invitations.",
        ));
    }
    let now = entropy::now();
    let expires = common.expires_in.map(|m| now + m * 60);
    let keys: Vec<String> = addresses.iter().map(|_| entropy::api_key()).collect();
    let (created, skipped) = app.committer.commit(|state| {
        let mut skipped = Vec::new();
        let mut to_invite = Vec::new();
        for address in &addresses {
            match state.user_by_delivery_email(me.realm, address) {
                Some(u) if u.is_active => {
                    skipped.push(json!([address, "Already has an account.", false]))
                }
                Some(_) => skipped.push(json!([address, "Account has been deactivated.", true])),
                None => to_invite.push(address.clone()),
            }
        }
        if to_invite.is_empty() {
            return Err(failed(skipped.clone(), false, false, "We weren't able to invite anyone."));
        }
        if sent_today(state, me.realm, now) + to_invite.len() > DAILY_LIMIT {
            return Err(failed(
                Vec::new(),
                false,
                true,
                "To protect users, this organization can send only a limited number of \
                 invitations a day. No invites were sent.",
            ));
        }
        let ids = state.settings.peek_ids(LocalIdKind::Invite, to_invite.len());
        let invites: Vec<Invite> = to_invite
            .into_iter()
            .zip(ids)
            .zip(&keys)
            .map(|((email, id), key)| Invite {
                id,
                realm: me.realm,
                inviter: me.id,
                email: Some(email),
                role: common.role,
                channels: common.channels.clone(),
                groups: common.groups.clone(),
                include_realm_default_subscriptions: common.include_default,
                notify_referrer_on_join: notify,
                welcome_message_custom_text: common.welcome.clone(),
                invited: now,
                expires,
                key: key.clone(),
                status: InviteStatus::Pending,
            })
            .collect();
        Ok((Mutation::personal(PersonalChange::CreateInvites(invites.clone())), (invites, skipped)))
    })?;
    for invite in &created {
        mail_invitation(app, &call.realm, &me, invite)?;
    }
    if !skipped.is_empty() {
        return Err(failed(
            skipped,
            true,
            false,
            "Some of those addresses are already using Zulip, so we didn't send them an \
             invitation. We did send invitations to everyone else!",
        ));
    }
    Ok(Reply::new())
}

/// `POST /invites/multiuse` (administrators): a reusable link → `invite_link`.
pub fn create_multiuse(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    if !me.role.is_admin() {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    let common = common_params(app, call, &me)?;
    let now = entropy::now();
    let key = entropy::api_key();
    let link = registration_link(app, &call.realm, &key);
    app.committer.commit(|state| {
        let invite = Invite {
            id: state.settings.peek_id(LocalIdKind::Invite),
            realm: me.realm,
            inviter: me.id,
            email: None,
            role: common.role,
            channels: common.channels,
            groups: common.groups,
            include_realm_default_subscriptions: common.include_default,
            notify_referrer_on_join: false,
            welcome_message_custom_text: common.welcome,
            invited: now,
            expires: common.expires_in.map(|m| now + m * 60),
            key,
            status: InviteStatus::Pending,
        };
        Ok((Mutation::personal(PersonalChange::CreateInvites(vec![invite])), ()))
    })?;
    Ok(reply! { "invite_link" => link })
}

fn is_live(invite: &Invite, now: i64) -> bool {
    invite.status == InviteStatus::Pending && invite.expires.is_none_or(|t| t > now)
}

/// `GET /invites`: live invitations — all of the realm's for
/// administrators, one's own otherwise.
pub fn list_invites(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let now = entropy::now();
    let invites = app.state.settings.invites.collect_sorted(|_, i| {
        i.realm == me.realm && is_live(i, now) && (me.role.is_admin() || i.inviter == me.id)
    });
    let list: Vec<Value> = invites
        .into_iter()
        .map(|(_, i)| {
            let mut v = json!({
                "id": i.id, "invited_by_user_id": i.inviter.0, "invited": i.invited,
                "expiry_date": i.expires, "email": i.email, "invited_as": i.role.code(),
                "is_multiuse": i.email.is_none(),
                "notify_referrer_on_join": i.notify_referrer_on_join,
            });
            if i.email.is_none() {
                v["link_url"] = json!(registration_link(app, &call.realm, &i.key));
            }
            v
        })
        .collect();
    Ok(reply! { "invites" => list })
}

/// A live invitation of the caller's realm the caller may manage.
fn managed_invite(
    state: &State,
    me: &User,
    id: u64,
    multiuse: bool,
    now: i64,
) -> ApiResult<Invite> {
    let missing = || ApiError::bad_request("No such invitation");
    let invite = state
        .settings
        .invites
        .get(&id)
        .filter(|i| i.realm == me.realm && is_live(i, now) && i.email.is_none() == multiuse)
        .ok_or_else(missing)?;
    if !me.role.is_admin() && invite.inviter != me.id {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    Ok(invite)
}

fn revoke(app: &App, call: &mut Call, multiuse: bool) -> ApiResult<Reply> {
    let id = call.path_id(0, "invite_id")?;
    let me = call.caller().clone();
    let now = entropy::now();
    commit_change(app, |state| {
        managed_invite(state, &me, id, multiuse, now)?;
        Ok(PersonalChange::RevokeInvite { id })
    })?;
    Ok(Reply::new())
}

/// `DELETE /invites/{invite_id}`: revoke an email invitation.
pub fn revoke_invite(app: &App, call: &mut Call) -> ApiResult<Reply> {
    revoke(app, call, false)
}

/// `DELETE /invites/multiuse/{invite_id}`: revoke a reusable link.
pub fn revoke_multiuse(app: &App, call: &mut Call) -> ApiResult<Reply> {
    revoke(app, call, true)
}

/// `POST /invites/{invite_id}/resend`: mail it again, valid again for as
/// long as it was at first.
pub fn resend_invite(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "invite_id")?;
    let me = call.caller().clone();
    let now = entropy::now();
    let invite = app.committer.commit(|state| {
        let invite = managed_invite(state, &me, id, false, now)?;
        let expires = invite.expires.map(|t| now + (t - invite.invited));
        let change = PersonalChange::ResendInvite { id, invited: now, expires };
        Ok((Mutation::personal(change), Invite { invited: now, expires, ..invite }))
    })?;
    let inviter = app.state.users.get(&invite.inviter).unwrap_or(me);
    mail_invitation(app, &call.realm, &inviter, &invite)?;
    Ok(Reply::new())
}

fn invite_by_key(state: &State, realm: &Realm, key: &str, now: i64) -> ApiResult<Invite> {
    state
        .settings
        .invite_by_key
        .get(&key.to_owned())
        .and_then(|id| state.settings.invites.get(&id))
        .filter(|i| i.realm == realm.id && is_live(i, now))
        .ok_or_else(|| ApiError::bad_request("Invalid or expired invitation link"))
}

/// `GET /registration/{key}` (no authentication: the link is the
/// credential): what the invitation offers.
pub fn show_registration(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let key = call.path.first().cloned().unwrap_or_default();
    let invite = invite_by_key(&app.state, &call.realm, &key, entropy::now())?;
    let inviter = app.state.users.read(&invite.inviter, |u| u.full_name.clone());
    Ok(reply! {
        "email" => invite.email, "realm_name" => call.realm.name, "invited_by" => inviter,
        "invite_as" => invite.role.code(), "expiry_date" => invite.expires,
        "welcome_message_custom_text" => invite.welcome_message_custom_text,
    })
}

/// `POST /registration/{key}`: `full_name`, `password` (and `email` for a
/// reusable link) → the new account's `user_id`, `email` and `api_key`.
pub fn register_invitee(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let key = call.path.first().cloned().unwrap_or_default();
    let full_name = check_full_name(&call.params.required_string("full_name")?)?;
    let password = call.params.required_string("password")?;
    let email_param = call.params.string("email");
    let now = entropy::now();
    let realm = call.realm.clone();
    let invite = invite_by_key(&app.state, &realm, &key, now)?;
    let email = match (&invite.email, email_param) {
        (Some(email), _) => email.clone(),
        (None, Some(email)) if valid_email(email.trim()) => email.trim().to_owned(),
        (None, Some(_)) => return Err(ApiError::invalid("email", "not a valid email address")),
        (None, None) => return Err(ApiError::missing("email")),
    };
    check_new_password(&password)
        .map_err(|e| ApiError { extra: vec![("var_name", json!("password"))], ..e })?;
    let password_hash = hash_password(&password);
    let api_key = entropy::api_key();
    let (user_id, email) = app.committer.commit(|state| {
        // Checked again under the lock: the link may have been used meanwhile.
        let invite = invite_by_key(state, &realm, &key, now)?;
        if state.user_by_delivery_email(realm.id, &email).is_some() {
            return Err(ApiError::bad_request(format!("Email '{email}' already in use")));
        }
        let id = UserId(state.ids.peek(IdKind::User));
        let user = User {
            id,
            realm: realm.id,
            email: email.clone(),
            delivery_email: email.clone(),
            full_name: full_name.clone(),
            role: invite.role,
            is_active: true,
            bot_type: None,
            bot_owner: None,
            api_key: api_key.clone(),
            date_joined: now,
            timezone: String::new(),
            avatar_version: 1,
        };
        let mut channels: Vec<ChannelId> = invite.channels.clone();
        if invite.include_realm_default_subscriptions {
            let defaults =
                state.channels.collect_sorted(|_, c| c.realm == realm.id && c.is_default);
            channels.extend(defaults.into_iter().map(|(id, _)| id));
        }
        let mut seen = BTreeSet::new();
        let channels: Vec<(ChannelId, String)> = channels
            .into_iter()
            .filter(|c| seen.insert(*c))
            .filter(|c| state.channels.read(c, |ch| !ch.is_archived) == Some(true))
            .enumerate()
            .map(|(i, c)| (c, crate::mutation::build::subscription(state, id, i).color))
            .collect();
        let groups: Vec<GroupId> = invite
            .groups
            .iter()
            .copied()
            .filter(|g| state.groups.read(g, |g| !g.deactivated) == Some(true))
            .collect();
        // The system bots' messages (the inviter's notice, the welcome
        // text) go in the same record as the account.
        let messages = crate::send::bot_messages::on_join(state, &invite, &user, now);
        let change =
            PersonalChange::AcceptInvite { id: invite.id, user, password_hash, channels, groups };
        let mutation = if messages.is_empty() {
            Mutation::personal(change)
        } else {
            let mut parts = vec![Mutation::personal(change)];
            parts.extend(messages);
            Mutation::Batch(parts)
        };
        Ok((mutation, (id, email.clone())))
    })?;
    Ok(reply! { "user_id" => user_id.0, "email" => email, "api_key" => api_key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_on_commas_and_newlines() {
        assert_eq!(
            split_addresses(" a@x.test,b@x.test\nc@x.test ,, A@X.test\n"),
            vec!["a@x.test", "b@x.test", "c@x.test"]
        );
        assert!(split_addresses(" , \n").is_empty());
    }

    #[test]
    fn liveness_follows_status_and_expiry() {
        let invite = Invite {
            id: 1,
            realm: crate::state::RealmId(1),
            inviter: UserId(1),
            email: Some("a@x.test".into()),
            role: Role::Member,
            channels: vec![],
            groups: vec![],
            include_realm_default_subscriptions: false,
            notify_referrer_on_join: true,
            welcome_message_custom_text: None,
            invited: 100,
            expires: Some(200),
            key: "k".into(),
            status: InviteStatus::Pending,
        };
        assert!(is_live(&invite, 199));
        assert!(!is_live(&invite, 200), "expired");
        assert!(is_live(&Invite { expires: None, ..invite.clone() }, i64::MAX));
        assert!(!is_live(&Invite { status: InviteStatus::Used, ..invite.clone() }, 150));
        assert!(!is_live(&Invite { status: InviteStatus::Revoked, ..invite }, 150));
    }

    #[test]
    fn roles_by_code() {
        for code in [100, 200, 300, 400, 600] {
            assert_eq!(role_from_code(code).map(Role::code), Some(code as u16));
        }
        assert_eq!(role_from_code(500), None);
    }
}
