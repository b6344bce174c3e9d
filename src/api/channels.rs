//! Listing channels: `GET /users/me/subscriptions`, `GET /streams`, and
//! register's `subscription` section (`subscriptions`, `unsubscribed`,
//! `never_subscribed`) and `stream` section (`streams`). The object shapes
//! live in `crate::view::channel::subscription` and
//! `crate::view::channel::stream`; who may know about which channel is
//! `access::can_see_channel`.

use serde_json::Value;

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::reply;
use crate::state::access::{can_read_channel, can_see_channel};
use crate::state::{Channel, State, User};
use crate::view::channel::Subscribers;

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
            let value = crate::view::channel::subscription(state, user, &channel, sub, include);
            Some((channel.name.to_lowercase(), value))
        })
        .collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list.into_iter().map(|(_, v)| v).collect()
}

/// Register's `subscription` section: `subscriptions`; `unsubscribed`
/// (channels the user left and may still see, with the settings they had);
/// `never_subscribed` (every other channel the user may know about).
/// Archived channels are left out, as for clients without the
/// `archived_channels` capability.
pub fn register_state_with(
    state: &State,
    user: &User,
    include: Subscribers,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    register_state_full(state, user, include, false, wants, out);
}

/// `register_state_with`, keeping archived channels for clients with the
/// `archived_channels` capability.
pub fn register_state_full(
    state: &State,
    user: &User,
    include: Subscribers,
    archived_channels: bool,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    let (with_streams, with_subscriptions) = (wants("stream"), wants("subscription"));
    if !with_streams && !with_subscriptions {
        return;
    }
    let visible = visible_channels(state, user);
    let shown = |c: &Channel| archived_channels || !c.is_archived;
    if with_streams {
        // `streams`: every channel the user may know about, as channel
        // objects (the `stream` events' register section).
        let streams: Vec<Value> = visible
            .iter()
            .filter(|c| shown(c))
            .map(|c| crate::view::channel::stream(state, user, c, Subscribers::Omit))
            .collect();
        out.insert("streams".into(), Value::from(streams));
    }
    if !with_subscriptions {
        return;
    }
    let former = state.former_subscriptions.get(&user.id).unwrap_or_default();
    let (left, never): (Vec<&Channel>, Vec<&Channel>) = visible
        .iter()
        .filter(|c| !c.subscribers.contains(&user.id) && shown(c))
        .partition(|c| former.contains_key(&c.id));
    let unsubscribed: Vec<Value> = left
        .into_iter()
        .map(|c| crate::view::channel::subscription(state, user, c, &former[&c.id], include))
        .collect();
    let never: Vec<Value> =
        never.into_iter().map(|c| crate::view::channel::stream(state, user, c, include)).collect();
    let subscribed: Vec<Value> = subscriptions(state, user, include)
        .into_iter()
        .filter(|s| archived_channels || s["is_archived"] != Value::Bool(true))
        .collect();
    out.insert("subscriptions".into(), Value::from(subscribed));
    out.insert("unsubscribed".into(), Value::from(unsubscribed));
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
        .map(|c| crate::view::channel::stream(state, me, &c, Subscribers::Omit))
        .collect();
    Ok(reply! { "streams" => streams })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn register_sections_and_archived_channels() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let guest = w.user("", "guest@t.test", Role::Guest);
        let old = w.channel("", "old", false, &[&me]).id;
        w.channel("", "mine", false, &[&me, &guest]);
        w.channel("", "theirs", false, &[]);
        w.channel("", "hidden", true, &[]);
        let names = |out: &Reply, key: &str| -> Vec<String> {
            out[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let section = |who: &User, archived: bool| {
            let mut out = Reply::new();
            register_state_full(
                &w.state,
                who,
                Subscribers::All,
                archived,
                &|t| t == "subscription",
                &mut out,
            );
            out
        };
        let out = section(&me, false);
        assert_eq!(names(&out, "subscriptions"), ["mine", "old"]);
        assert_eq!(names(&out, "never_subscribed"), ["theirs"]);
        assert_eq!(out["unsubscribed"], serde_json::json!([]));
        assert_eq!(out["subscriptions"][0]["subscribers"].as_array().unwrap().len(), 2);
        assert_eq!(names(&section(&guest, false), "never_subscribed"), Vec::<String>::new());
        w.state.channels.update(&old, |c| c.is_archived = true);
        assert_eq!(names(&section(&me, false), "subscriptions"), ["mine"]);
        assert_eq!(names(&section(&me, true), "subscriptions"), ["mine", "old"]);
        let mut out = Reply::new();
        register_state_full(&w.state, &me, Subscribers::Omit, false, &|_| false, &mut out);
        assert!(out.is_empty());
    }
}
