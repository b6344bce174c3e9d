//! The web client's sign-in, behind its session cookie: `POST /login`,
//! `POST /logout`, `GET /login/session` and `GET /login/dev_accounts`
//! (served outside `/api/v1` by `http::web`, which owns the cookie and the
//! CSRF checks; this file owns who may sign in and what a session is).
//!
//! A session is a `state::web_sessions` record under a random token (the
//! cookie's value), created and removed through the log, so a restart
//! keeps it. It ends at sign-out, after `SESSION_LIFETIME_SECS`, and as
//! soon as the account's API key or password changes.

use std::sync::Arc;

use super::App;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::state::web_sessions::{SessionChange, WebSession};
use crate::state::{Realm, User};

/// The session cookie's name.
pub const COOKIE: &str = "natter_session";

/// How long a session lasts (Zulip's two weeks).
pub const SESSION_LIFETIME_SECS: i64 = 14 * 24 * 3600;

/// Characters of a session token (alphanumeric: 256 bits and more).
const TOKEN_LEN: usize = 48;

/// A new sign-in.
pub struct SignedIn {
    /// The cookie's value.
    pub token: String,
    /// The session (its CSRF token for the page).
    pub session: WebSession,
    /// The account.
    pub user: User,
}

/// `POST /login` with `username` and `password`: `POST /fetch_api_key`'s
/// rules; with `--dev`, `username` alone signs in to any account (the
/// development log-in).
pub fn sign_in(
    app: &App,
    realm: &Realm,
    username: &str,
    password: Option<&str>,
) -> ApiResult<SignedIn> {
    let user = match password {
        Some(password) => super::passwords::password_login(app, realm, username, password)?,
        None if app.config.dev => dev_account(app, realm, username)?,
        None => return Err(ApiError::missing("password")),
    };
    open(app, user)
}

/// The account a development sign-in names.
fn dev_account(app: &App, realm: &Realm, username: &str) -> ApiResult<User> {
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let user = app
        .state
        .user_by_delivery_email(realm.id, username.trim())
        .filter(|u| !u.is_bot())
        .ok_or_else(ApiError::authentication_failed)?;
    if !user.is_active {
        return Err(ApiError::user_deactivated());
    }
    Ok(user)
}

/// Logs a new session for `user`.
fn open(app: &App, user: User) -> ApiResult<SignedIn> {
    let token = crate::entropy::token(TOKEN_LEN, ALPHANUMERIC);
    let session = WebSession {
        user: user.id,
        realm: user.realm,
        csrf_token: crate::entropy::api_key(),
        api_key: user.api_key.clone(),
        password_hash: app.state.settings.passwords.get(&user.id),
        created: crate::entropy::now(),
    };
    let change = SessionChange::Open { token: token.clone(), session: session.clone() };
    app.committer.commit(|_| Ok((Mutation::WebSession(Box::new(change)), ())))?;
    Ok(SignedIn { token, session, user })
}

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The account a session cookie signs in as on `realm`'s host. Refused
/// (401) when the session is unknown, ended, stale (a new key or
/// password, or older than its lifetime) or of another realm.
pub fn authenticate(app: &App, realm: &Realm, token: &str) -> ApiResult<(Arc<User>, WebSession)> {
    let signed_out =
        || ApiError::unauthorized("Not logged in: API authentication or user session required");
    let session = app.state.web_sessions.get(token).ok_or_else(signed_out)?;
    if session.realm != realm.id {
        return Err(signed_out());
    }
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let user = app.state.users.get_shared(&session.user).ok_or_else(signed_out)?;
    let password = app.state.settings.passwords.get(&user.id);
    let expired = crate::entropy::now() - session.created > SESSION_LIFETIME_SECS;
    if expired || !session.is_current(&user.api_key, password.as_deref()) {
        return Err(signed_out());
    }
    if !user.is_active {
        return Err(ApiError::user_deactivated());
    }
    Ok((user, session))
}

/// `POST /logout`: ends the session of `token` (nothing to do if it is
/// already gone).
pub fn sign_out(app: &App, token: &str) -> ApiResult<()> {
    if app.state.web_sessions.get(token).is_none() {
        return Ok(());
    }
    let change = SessionChange::Close { token: token.to_owned() };
    app.committer.commit(|_| Ok((Mutation::WebSession(Box::new(change)), ())))
}

/// `GET /login/dev_accounts` (only with `--dev`): the accounts a
/// development sign-in may pick, as `(email, full name)`, humans only,
/// administrators first, then by name.
pub fn dev_accounts(app: &App, realm: &Realm) -> ApiResult<Vec<(String, String)>> {
    if !app.config.dev {
        return Err(ApiError::not_found("Development sign-in is not enabled."));
    }
    let mut users: Vec<User> = app
        .state
        .realm_users(realm.id)
        .into_iter()
        .filter(|u| u.is_active && !u.is_bot())
        .collect();
    users.sort_by_cached_key(|u| (!u.role.is_admin(), u.full_name.clone()));
    Ok(users.into_iter().map(|u| (u.delivery_email, u.full_name)).collect())
}
