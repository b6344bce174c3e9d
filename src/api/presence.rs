//! Presence: `POST /users/me/presence`, `GET /realm/presence`, `GET
//! /users/{user_id_or_email}/presence`. The store is ephemeral
//! (`events::presence`); changes reach other clients as `presence` events.

use serde_json::json;

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::events::Event;

/// `POST /users/me/presence`: record the caller as active or idle (unless
/// they hide their presence), and return the realm's presences (unless
/// `ping_only`).
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
    // A user who hides their presence (`presence_enabled` off, the apps'
    // "invisible mode") is not recorded, as in Zulip: to others they went
    // offline when they hid it (`presence_enabled_changed`).
    if app.state.settings.of(me.id).bool("presence_enabled") {
        let report = realtime.presence.report(me.id, active, now);
        if report.notify {
            app.hub.publish(vec![Event::Presence {
                realm: me.realm,
                user: me.id,
                presence: report.now,
                server_timestamp: now,
            }]);
        }
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

/// After the caller's `presence_enabled` changed: as Zulip does, turning
/// it off makes them offline to everyone at once (a presence older than
/// the offline threshold, announced), and turning it on makes them active
/// now (announced).
pub fn presence_enabled_changed(app: &App, me: &crate::state::User, enabled: bool) {
    let now = entropy::now();
    let presence = &app.hub.realtime().presence;
    let now_presence =
        if enabled { presence.report(me.id, true, now).now } else { presence.hide(me.id, now) };
    app.hub.publish(vec![Event::Presence {
        realm: me.realm,
        user: me.id,
        presence: now_presence,
        server_timestamp: now,
    }]);
}

/// Zulip's default window of presence history, in days.
const HISTORY_DAYS: i64 = 14;

/// `GET /realm/presence`: every active human of the caller's realm seen in
/// the last 14 days, in the legacy email-keyed form (as Zulip answers this
/// route), with `server_timestamp`.
pub fn realm_presence(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller();
    let now = entropy::now();
    // Active humans: bots have no presence, deactivated users none to show.
    let mut users = app.state.realm_users(me.realm);
    users.retain(|u| u.is_active && !u.is_bot());
    let since = now.saturating_sub(HISTORY_DAYS * 86_400);
    let mut out = Reply::new();
    out.insert("presences".into(), app.hub.realtime().presence.render(&users, since, 0, false));
    out.insert("server_timestamp".into(), json!(now));
    Ok(out)
}

/// `GET /users/{user_id_or_email}/presence`: one user's presence, as
/// Zulip gives it — per client and `aggregated`, each `{status,
/// timestamp}`, the aggregate `offline` once the user has not reported for
/// the offline threshold. Bots have none; a user never seen since the
/// server started has none either (an error, as in Zulip).
pub fn user_presence(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let asked = call.path.first().cloned().unwrap_or_default();
    let target = super::accounts::user_by_path(app, call)?
        .filter(|u| u.is_active)
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if target.is_bot() {
        return Err(ApiError::bad_request("Presence is not supported for bot users."));
    }
    let presence = app
        .hub
        .realtime()
        .presence
        .get(target.id)
        .ok_or_else(|| ApiError::bad_request(format!("No presence data for {asked}")))?;
    let (status, timestamp) = presence.legacy_status();
    let offline = entropy::now() - timestamp > crate::events::presence::OFFLINE_THRESHOLD_SECS;
    let aggregated = if offline { "offline" } else { status };
    Ok(crate::reply! { "presence" => json!({
        "website": {"status": status, "timestamp": timestamp},
        "aggregated": {"status": aggregated, "timestamp": timestamp},
    }) })
}
