//! Creating the system bots (`state::system_bots`): the accounts for a new
//! realm, and the start-up step that gives every existing realm the ones
//! it lacks, so data dirs from before system bots existed get them through
//! the ordinary write path (one logged `CreateSystemBots` record).

use crate::api::App;
use crate::entropy;
use crate::error::ApiResult;
use crate::mutation::Mutation;
use crate::state::system_bots::SystemBot;
use crate::state::{BotType, IdKind, RealmId, Role, State, User, UserId};

/// The system-bot accounts `realm` lacks, with ids from `first_id` on.
/// A bot whose reserved address another account already holds is left
/// out (that realm then posts no notices).
pub fn missing(state: &State, realm: RealmId, first_id: u64, now: i64) -> Vec<User> {
    SystemBot::ALL
        .into_iter()
        .filter(|kind| state.user_by_delivery_email(realm, kind.email()).is_none())
        .enumerate()
        .map(|(k, kind)| User {
            id: UserId(first_id + k as u64),
            realm,
            email: kind.email().to_owned(),
            delivery_email: kind.email().to_owned(),
            full_name: kind.full_name().to_owned(),
            role: Role::Member,
            is_active: true,
            bot_type: Some(BotType::Generic),
            bot_owner: None,
            // No key: API authentication refuses an empty key.
            api_key: String::new(),
            date_joined: now,
            timezone: String::new(),
            avatar_version: 1,
        })
        .collect()
}

/// Gives every realm the system bots it lacks (at start-up, before
/// serving); writes nothing when none is missing.
pub fn ensure(app: &App) -> ApiResult<()> {
    let now = entropy::now();
    let build = |s: &State| {
        let mut bots: Vec<User> = Vec::new();
        let realms = s.realms.collect_sorted(|_, _| true);
        for (id, _) in realms {
            let first = s.ids.peek(IdKind::User) + bots.len() as u64;
            bots.extend(missing(s, id, first, now));
        }
        bots
    };
    if build(&app.state).is_empty() {
        return Ok(());
    }
    app.committer.commit(|s| Ok((Mutation::CreateSystemBots(build(s)), ())))
}
