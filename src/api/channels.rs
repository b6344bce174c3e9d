//! Listing channels: `GET /users/me/subscriptions`, `GET /streams`, and
//! register's `subscription` section (`subscriptions`, `unsubscribed`,
//! `never_subscribed`). The object shapes live in `json::subscription` and
//! `json::stream`; who may know about which channel is
//! `access::can_see_channel`.

use serde_json::Value;

use super::json::{self, Subscribers};
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::reply;
use crate::state::access::{can_read_channel, can_see_channel};
use crate::state::{Channel, State, User};

/// Every channel of `user`'s realm they may know about, sorted by name.
fn visible_channels(state: &State, user: &User) -> Vec<Channel> {
    let mut channels: Vec<Channel> = state
        .channels
        .collect_sorted(|_, c| can_see_channel(user, c))
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    channels.sort_by_key(|c| c.name.to_lowercase());
    channels
}

/// `user`'s subscription objects, sorted by channel name.
pub fn subscriptions(state: &State, user: &User, include: Subscribers) -> Vec<Value> {
    let subs = state.subscriptions.get(&user.id).unwrap_or_default();
    let mut list: Vec<(String, Value)> = subs
        .iter()
        .filter_map(|(id, sub)| {
            let channel = state.channel_in_realm(user.realm, *id)?;
            let value = json::subscription(state, user, &channel, sub, include);
            Some((channel.name.to_lowercase(), value))
        })
        .collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list.into_iter().map(|(_, v)| v).collect()
}

/// Register's `subscription` section: `subscriptions`; `unsubscribed`
/// (natter keeps no record of past subscriptions yet, so it is empty);
/// `never_subscribed` (every other channel the user may know about).
pub fn register_state_with(
    state: &State,
    user: &User,
    include: Subscribers,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    if !wants("subscription") {
        return;
    }
    let never: Vec<Value> = visible_channels(state, user)
        .iter()
        .filter(|c| !c.subscribers.contains(&user.id))
        .map(|c| json::stream(state, user, c, include))
        .collect();
    out.insert("subscriptions".into(), Value::from(subscriptions(state, user, include)));
    out.insert("unsubscribed".into(), Value::Array(Vec::new()));
    out.insert("never_subscribed".into(), Value::from(never));
}

/// `register_state` in the shape every area offers (no subscriber lists).
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    register_state_with(&app.state, user, Subscribers::Omit, wants, out);
}

/// `GET /users/me/subscriptions`: the caller's subscriptions.
pub fn get_subscriptions(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let raw = call.params.raw("include_subscribers").map(str::to_owned);
    let include = Subscribers::parse(raw.as_deref())
        .ok_or_else(|| ApiError::invalid("include_subscribers", "not a boolean or 'partial'"))?;
    let me = call.caller();
    Ok(reply! { "subscriptions" => subscriptions(&app.state, me, include) })
}

/// `GET /streams`: channels picked by the `include_*` options, sorted by
/// name. Each option adds a set; only channels the caller may know about
/// are ever listed.
pub fn get_streams(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let p = &mut call.params;
    let include_public = p.bool_or("include_public", true)?;
    let include_web_public = p.bool_or("include_web_public", false)?;
    let include_subscribed = p.bool_or("include_subscribed", true)?;
    let include_all = p.bool_or("include_all", false)?;
    let include_all_active = p.bool_or("include_all_active", false)?;
    let include_default = p.bool_or("include_default", false)?;
    let include_owner_subscribed = p.bool_or("include_owner_subscribed", false)?;
    let include_can_access_content = p.bool_or("include_can_access_content", false)?;
    let exclude_archived = p.bool_or("exclude_archived", true)?;
    let me = call.caller();
    if include_all_active && !me.role.is_admin() {
        return Err(ApiError::bad_request("User not authorized for this query"));
    }
    let state = &app.state;
    let owner = match (include_owner_subscribed, me.bot_owner) {
        (true, Some(owner)) if me.is_bot() => state.user_in_realm(me.realm, owner),
        _ => None,
    };
    let streams: Vec<Value> = visible_channels(state, me)
        .into_iter()
        .filter(|c| !(exclude_archived && c.is_archived))
        .filter(|c| {
            include_all
                || include_all_active
                || (include_public && !c.invite_only)
                || (include_web_public && c.is_web_public)
                || (include_subscribed && c.subscribers.contains(&me.id))
                || (include_default && c.is_default)
                || (include_can_access_content && can_read_channel(me, c))
                || owner.as_ref().is_some_and(|o| c.subscribers.contains(&o.id))
        })
        .map(|c| json::stream(state, me, &c, Subscribers::Omit))
        .collect();
    Ok(reply! { "streams" => streams })
}
