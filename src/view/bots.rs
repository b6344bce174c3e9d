//! Bots as those who administer them see them (the realm's administrators,
//! and each bot's owner): the entries of register's `realm_bots` and of the
//! `realm_bot` events.

use serde_json::{json, Value};

use crate::state::{State, User};

/// A bot as `realm_bots` entries and `realm_bot` `add` events show it.
pub fn bot_json(state: &State, bot: &User) -> Value {
    json!({
        "user_id": bot.id.0,
        "email": bot.email,
        "full_name": bot.full_name,
        "bot_type": bot.bot_type.map(|t| t.code()),
        "is_active": bot.is_active,
        "api_key": bot.api_key,
        "default_sending_stream": Value::Null,
        "default_events_register_stream": Value::Null,
        "default_all_public_streams": false,
        "avatar_url": crate::view::user::avatar_url(state, bot, false),
        "owner_id": bot.bot_owner.map(|o| o.0),
        "services": services_json(state, bot),
    })
}

/// A bot's `services`: an outgoing-webhook bot's one service as
/// `{base_url, interface, token}`, else none.
pub fn services_json(state: &State, bot: &User) -> Value {
    match state.bots.services.get(&bot.id) {
        Some(s) => json!([{
            "base_url": s.base_url,
            "interface": s.interface.code(),
            "token": s.token,
        }]),
        None => json!([]),
    }
}
