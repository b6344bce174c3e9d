//! `natter realm create`: make an organization and its first owner in a
//! data dir without `--dev`, so a production data dir is usable. The two
//! changes go through the ordinary write path (logged, fsynced, applied).

use crate::api::App;
use crate::entropy;
use crate::mutation::build::{self, NewUser};
use crate::mutation::rules::{check_email, check_full_name};
use crate::mutation::Mutation;
use crate::state::{Role, User};

/// Longest organization name.
const MAX_REALM_NAME: usize = 40;

/// Creates the realm served at `subdomain` and its owner; returns the owner.
/// `public` allows logged-out spectators (`enable_spectator_access`).
pub fn create(
    app: &App,
    subdomain: &str,
    name: &str,
    owner_email: &str,
    owner_name: &str,
    public: bool,
) -> Result<User, String> {
    let subdomain = subdomain.trim().to_lowercase();
    let valid_subdomain = subdomain.is_empty()
        || (subdomain.len() <= 63
            && subdomain.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !subdomain.starts_with('-')
            && !subdomain.ends_with('-'));
    if !valid_subdomain {
        return Err(format!("invalid subdomain {subdomain:?}: letters, digits and '-' only"));
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_REALM_NAME {
        return Err(format!("the organization name must have 1 to {MAX_REALM_NAME} characters"));
    }
    let email = check_email(owner_email).map_err(|e| e.msg)?;
    let full_name = check_full_name(owner_name).map_err(|e| e.msg)?;
    let now = entropy::now();
    let key = entropy::api_key();
    app.committer
        .commit(|s| {
            let mut realm = build::realm(s, &subdomain, name, now)?;
            let Mutation::CreateRealm { realm: r, .. } = &mut realm else { unreachable!() };
            r.settings.enable_spectator_access = public;
            // One record: the realm never exists without its owner.
            let new =
                NewUser { email: &email, full_name: &full_name, role: Role::Owner, bot: None };
            let Mutation::CreateUser(user) = build::user(s, r.id, &new, key, now)? else {
                unreachable!()
            };
            let owner = user.clone();
            // And the realm's system bots (Notification Bot, Welcome Bot).
            let bots = crate::mutation::build::system_bots(s, r.id, user.id.0 + 1, now);
            let parts = vec![realm, Mutation::CreateUser(user), Mutation::CreateSystemBots(bots)];
            Ok((Mutation::Batch(parts), owner))
        })
        .map_err(|e| e.msg)
}
