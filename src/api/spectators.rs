//! Logged-out spectators reading web-public channels, as Zulip allows in a
//! realm with `enable_spectator_access`: `GET /messages` and
//! `GET /messages/{message_id}` without credentials.
//!
//! Zulip's rules, which keep a client with broken credentials from getting
//! a misleading empty answer instead of an authentication error:
//! - the realm must allow spectators, else 401 `UNAUTHORIZED` ("Not logged
//!   in: API authentication or user session required");
//! - the narrow must hold a positive `channels:web-public` (or
//!   `streams:web-public`) term, and only operators a spectator may use
//!   (channel, channels, topic, sender, has, search, near, id, with), else
//!   the same 401; a positive `in:home` is dropped first;
//! - a `channel` term must name a web-public channel of the realm, else 400
//!   `BAD_NARROW` "Invalid narrow operator: unknown web-public channel X".
//!
//! What a spectator then sees is decided by the permission engine for a
//! stand-in account with no id, no subscriptions and the guest role
//! (`state::access::spectator`): exactly the history of web-public channels.
//! Every message shows as read (flags `["read"]`), and avatars are always
//! URLs (`client_gravatar` is off: nobody's address is public to them).

use serde_json::{json, Value};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::narrow::{split_terms, Narrow};
use crate::state::access::{self, MessageView};
use crate::state::{ChannelId, Flags, MessageId, Realm, State};
use crate::view::message::MessageOptions;

/// Operators a spectator's narrow may use (Zulip's spectator-compatible
/// list), normalized: lowercase, `-` for `_`.
const SPECTATOR_OPERATORS: [&str; 11] = [
    "channel", "stream", "channels", "streams", "topic", "sender", "has", "search", "near", "id",
    "with",
];

/// Zulip's answer to a request that needs an account.
pub fn not_logged_in() -> ApiError {
    ApiError::unauthorized("Not logged in: API authentication or user session required")
}

/// Refuses spectators where the realm does not let them in.
pub fn check_realm(realm: &Realm) -> ApiResult<()> {
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    if !realm.settings.enable_spectator_access {
        return Err(not_logged_in());
    }
    Ok(())
}

/// A spectator's `narrow`, checked by Zulip's rules (module comment) and
/// parsed for the stand-in `viewer`, with the `channels:web-public` and
/// `in:home` terms taken out (what a spectator can read is web-public
/// history anyway).
pub fn narrow(
    state: &State,
    realm: &Realm,
    viewer: &crate::state::User,
    value: Option<&Value>,
) -> ApiResult<Narrow> {
    let Some(value) = value.filter(|v| !v.is_null()) else { return Err(not_logged_in()) };
    let terms = split_terms(value)?;
    let normalized = |op: &str| op.to_ascii_lowercase().replace('_', "-");
    let is_web_public = |operator: &str, operand: &Value, negated: bool| {
        matches!(operator, "channels" | "streams")
            && operand.as_str().map(str::trim) == Some("web-public")
            && !negated
    };
    let is_home = |operator: &str, operand: &Value, negated: bool| {
        operator == "in" && operand.as_str().map(str::trim) == Some("home") && !negated
    };
    // First what decides "needs credentials" (401), then the terms' own
    // errors (400), as Zulip checks them.
    let terms: Vec<(String, &Value, bool)> = terms
        .into_iter()
        .map(|(operator, operand, negated)| (normalized(operator), operand, negated))
        .filter(|(operator, operand, negated)| !is_home(operator, operand, *negated))
        .collect();
    let marked = terms.iter().any(|(o, operand, negated)| is_web_public(o, operand, *negated));
    let compatible = terms.iter().all(|(o, _, _)| SPECTATOR_OPERATORS.contains(&o.as_str()));
    if !marked || !compatible {
        return Err(not_logged_in());
    }
    let mut kept = Vec::new();
    for (operator, operand, negated) in terms {
        if is_web_public(&operator, operand, negated) {
            continue;
        }
        if matches!(operator.as_str(), "channels" | "streams") {
            // Only `channels:web-public` means something to a spectator.
            return Err(crate::narrow::bad_operator(format!(
                "unknown '{operator}' operand {operand}"
            )));
        }
        if matches!(operator.as_str(), "channel" | "stream") {
            web_public_channel(state, realm, operand)?;
        }
        kept.push(json!({ "operator": operator, "operand": operand, "negated": negated }));
    }
    Narrow::parse(state, viewer, &Value::Array(kept))
}

/// The web-public channel a `channel` operand names (by name or id).
fn web_public_channel(state: &State, realm: &Realm, operand: &Value) -> ApiResult<ChannelId> {
    let channel = match operand {
        Value::Number(n) => {
            n.as_u64().and_then(|id| state.channel_in_realm(realm.id, ChannelId(id)))
        }
        Value::String(s) => state.channel_by_name(realm.id, s.trim()).or_else(|| {
            let id = s.trim().parse::<u64>().ok()?;
            state.channel_in_realm(realm.id, ChannelId(id))
        }),
        _ => None,
    };
    let shown = operand.as_str().map_or_else(|| operand.to_string(), str::to_owned);
    match channel {
        Some(c) if c.is_web_public => Ok(c.id),
        // Private and other public channels are named back as the caller
        // wrote them: nothing about them is revealed.
        _ => Err(crate::narrow::bad_operator(format!("unknown web-public channel {shown}"))),
    }
}

/// `GET /messages/{message_id}`: one message. Without credentials, a
/// message of a web-public channel (anything else is "Invalid message(s)",
/// exactly like a nonexistent id); with them, `messages::get_one`.
pub fn get_message(app: &App, call: &mut Call) -> ApiResult<Reply> {
    if call.caller.is_some() {
        return super::messages::get_one(app, call);
    }
    check_realm(&call.realm)?;
    let id = MessageId(call.path_id(0, "message_id")?);
    let options = MessageOptions {
        apply_markdown: call.params.bool_or("apply_markdown", true)?,
        allow_empty_topic_name: call.params.bool_or("allow_empty_topic_name", false)?,
        client_gravatar: false,
    };
    let viewer = crate::state::access::spectator(&call.realm);
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let message = app.state.messages.get(&id).ok_or_else(invalid)?;
    // The stand-in reads exactly the web-public channels' history.
    access::message_view(&app.state, &viewer, &message).ok_or_else(invalid)?;
    let view = MessageView { flags: Flags::READ, historical: false };
    let reply =
        super::messages::one_message(&app.state, &call.realm, &viewer, &message, view, options);
    call.sorted_reply = Some(reply);
    Ok(Reply::new())
}
