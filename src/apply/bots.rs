//! The `realm_bot` events (`add`, `update`, `delete`) `apply` yields when
//! a bot is created, renamed, re-owned, given a new key or avatar,
//! deactivated or reactivated. They go to those who administer the bot
//! (`state::access::administers`): the realm's administrators and its
//! owner; everyone else learns of bots only as users (`realm_user`). Role
//! changes of a bot send no `realm_bot` event, as in Zulip.

use serde_json::{json, Value};

use crate::events::{Audience, Event};
use crate::mutation::UserChange;
use crate::state::access::administers;
use crate::state::bots::BotChange;
use crate::state::{State, User, UserId};
use crate::view::bots::{bot_json, services_json};

/// Who gets a bot's `realm_bot` events: its realm's active administrators
/// and its owner.
fn managers(state: &State, bot: &User) -> Vec<UserId> {
    state.users.collect_sorted(|_, u| administers(u, bot)).into_iter().map(|(id, _)| id).collect()
}

fn event(audience: Vec<UserId>, event: Value) -> Event {
    Event::Broadcast { audience: Audience::Users(audience), event }
}

/// The `realm_bot` `add` event for a new bot (nothing for a human).
pub fn on_create(state: &State, user: &User) -> Vec<Event> {
    if !user.is_bot() {
        return Vec::new();
    }
    let bot = json!({"type": "realm_bot", "op": "add", "bot": bot_json(state, user)});
    vec![event(managers(state, user), bot)]
}

/// Applies a change of bots' services, storage or deliveries: a new
/// service is an `update` of the bot's `services` for those who
/// administer it (none when the bot is created in the same record: its
/// `add` event, after this, carries the service).
pub fn on_bot_change(state: &State, change: &BotChange) -> Vec<Event> {
    state.bots.apply(change);
    let BotChange::SetService { bot, .. } = change else { return Vec::new() };
    let Some(bot) = state.users.get(bot) else { return Vec::new() };
    let update = json!({"type": "realm_bot", "op": "update",
                        "bot": {"user_id": bot.id.0, "services": services_json(state, &bot)}});
    vec![event(managers(state, &bot), update)]
}

/// The `realm_bot` `update` of a bot's new `avatar_url` (nothing for a
/// human), as Zulip tells those who administer the bot.
pub fn on_avatar(state: &State, user: &User) -> Vec<Event> {
    if !user.is_bot() {
        return Vec::new();
    }
    let url = crate::view::user::avatar_url(state, user, false);
    let update = json!({"type": "realm_bot", "op": "update",
                        "bot": {"user_id": user.id.0, "avatar_url": url}});
    vec![event(managers(state, user), update)]
}

/// The `realm_bot` events of one applied change to `before` (the account
/// as it was; `state` already has the change).
pub fn on_change(state: &State, before: &User, change: &UserChange) -> Vec<Event> {
    if !before.is_bot() {
        return Vec::new();
    }
    let Some(after) = state.users.get(&before.id) else { return Vec::new() };
    let update = |fields: Value| {
        let mut bot = json!({"user_id": after.id.0});
        if let (Value::Object(b), Value::Object(f)) = (&mut bot, fields) {
            b.extend(f);
        }
        json!({"type": "realm_bot", "op": "update", "bot": bot})
    };
    let to_managers = |fields: Value| vec![event(managers(state, &after), update(fields))];
    match change {
        UserChange::FullName(name) => to_managers(json!({"full_name": name})),
        UserChange::Active(on) => to_managers(json!({"is_active": on})),
        UserChange::ApiKey(key) => to_managers(json!({"api_key": key})),
        UserChange::BotOwner(owner) => {
            // As Zulip: the old owner (unless an administrator) loses the
            // bot, the new one (unless an administrator) gains it whole,
            // and the administrators see the owner change.
            let mut events = Vec::new();
            let is_admin =
                |id: UserId| state.users.get(&id).is_some_and(|u| u.is_active && u.role.is_admin());
            let mut updated = managers(state, &after);
            if let Some(old) = before.bot_owner.filter(|o| o != owner && !is_admin(*o)) {
                let delete = json!({"type": "realm_bot", "op": "delete",
                                    "bot": {"user_id": after.id.0}});
                events.push(event(vec![old], delete));
                updated.retain(|u| *u != old);
            }
            if !is_admin(*owner) && before.bot_owner != Some(*owner) {
                let add = json!({"type": "realm_bot", "op": "add", "bot": bot_json(state, &after)});
                events.push(event(vec![*owner], add));
                updated.retain(|u| u != owner);
            }
            events.push(event(updated, update(json!({"owner_id": owner.0}))));
            events
        }
        UserChange::Role(_) | UserChange::Email(_) | UserChange::ProfileValue { .. } => Vec::new(),
    }
}
