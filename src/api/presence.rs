//! Presence: `POST /users/me/presence`. The store is ephemeral
//! (`events::presence`); changes reach other clients as `presence` events.

use serde_json::json;

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::events::Event;

/// `POST /users/me/presence`: record the caller as active or idle, and
/// return the realm's presences (unless `ping_only`).
pub fn update_presence(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let status = call.params.required_string("status")?;
    let active = match status.as_str() {
        "active" => true,
        "idle" => false,
        _ => return Err(ApiError::invalid("status", "must be active or idle")),
    };
    let ping_only = call.params.bool_or("ping_only", false)?;
    // Clients report whether the user touched the keyboard; natter's
    // model keeps only the status, as Zulip's does.
    let _new_user_input = call.params.bool_or("new_user_input", false)?;
    let slim_presence = call.params.bool_or("slim_presence", false)?;
    let last_update_id = match call.params.int("last_update_id")? {
        Some(id) if id < -1 => {
            return Err(ApiError::invalid("last_update_id", "must be -1 or more"))
        }
        other => other,
    };
    let history_limit_days = match call.params.int("history_limit_days")? {
        Some(d) if d < 0 => {
            return Err(ApiError::invalid("history_limit_days", "must not be negative"))
        }
        other => other.unwrap_or(14),
    };
    let me = call.caller().clone();
    let now = entropy::now();
    let realtime = app.hub.realtime();
    let report = realtime.presence.report(me.id, active, now);
    if report.notify {
        app.hub.publish(vec![Event::Presence {
            realm: me.realm,
            user: me.id,
            presence: report.now,
            server_timestamp: now,
        }]);
    }
    let mut out = Reply::new();
    if ping_only {
        return Ok(out);
    }
    let users = app.state.realm_users(me.realm);
    let since = now.saturating_sub(history_limit_days.saturating_mul(86_400));
    // With last_update_id the client wants the modern, id-keyed form and
    // only what changed after that id.
    let (after, slim) = match last_update_id {
        Some(id) => (id.max(0) as u64, true),
        None => (0, slim_presence),
    };
    out.insert("presences".into(), realtime.presence.render(&users, since, after, slim));
    out.insert("server_timestamp".into(), json!(now));
    out.insert("zephyr_mirror_active".into(), json!(false));
    if last_update_id.is_some() {
        out.insert("presence_last_update_id".into(), json!(realtime.presence.last_update_id()));
    }
    Ok(out)
}
