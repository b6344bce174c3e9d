//! The channel (stream) and subscription objects for one viewer, and the
//! group-setting values they carry.

use serde_json::{json, Map, Value};

use crate::state::access::can_see_subscribers;
use crate::state::RealmId;
use crate::state::{Channel, GroupSetting, State, Subscription, SystemGroup, User};
use crate::view::groups::group_setting;

/// How much of a channel's subscriber list a channel object carries
/// (`include_subscribers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subscribers {
    /// No `subscribers` field.
    Omit,
    /// `subscribers`: every subscriber's id.
    All,
    /// `include_subscribers=partial`: `subscribers` for channels below
    /// `PARTIAL_SUBSCRIBERS_THRESHOLD`, else `partial_subscribers`.
    Partial,
}

impl Subscribers {
    /// Parses Zulip's `include_subscribers` value (`true`, `false`, `partial`).
    pub fn parse(raw: Option<&str>) -> Option<Subscribers> {
        match raw.map(str::trim) {
            None | Some("false" | "False" | "0") => Some(Subscribers::Omit),
            Some("true" | "True" | "1") => Some(Subscribers::All),
            Some("partial" | "\"partial\"") => Some(Subscribers::Partial),
            Some(_) => None,
        }
    }
}

/// Channels with fewer subscribers always get the full list under
/// `include_subscribers=partial` (Zulip's guarantee).
pub const PARTIAL_SUBSCRIBERS_THRESHOLD: usize = 250;

/// A channel counts as recently active with a message (or its creation)
/// in this many days.
const RECENTLY_ACTIVE_DAYS: i64 = 180;

/// The deprecated `stream_post_policy` derived from `can_send_message_group`:
/// 1 anyone, 2 administrators, 3 full members, 4 moderators.
fn stream_post_policy(state: &State, channel: &Channel) -> u8 {
    let GroupSetting::Group(id) = &channel.permissions.can_send_message else { return 1 };
    match state.groups.read(id, |g| g.system).flatten() {
        Some(SystemGroup::Owners | SystemGroup::Administrators) => 2,
        Some(SystemGroup::FullMembers) => 3,
        Some(SystemGroup::Moderators) => 4,
        _ => 1,
    }
}

/// Whether the channel had a message, or was created, recently.
fn is_recently_active(state: &State, channel: &Channel, now: i64) -> bool {
    let since = now - RECENTLY_ACTIVE_DAYS * 86_400;
    if channel.date_created >= since {
        return true;
    }
    let newest = state.recipient_last(channel.recipient);
    newest.and_then(|id| state.messages.read(&id, |m| m.timestamp)).is_some_and(|ts| ts >= since)
}

/// The fields shared by channel and subscription objects.
fn channel_fields(
    state: &State,
    viewer: &User,
    channel: &Channel,
    subscribers: Subscribers,
    out: &mut Map<String, Value>,
) {
    let post_policy = stream_post_policy(state, channel);
    let p = &channel.permissions;
    out.insert("stream_id".into(), json!(channel.id.0));
    out.insert("name".into(), json!(channel.name));
    out.insert("description".into(), json!(channel.description));
    out.insert("rendered_description".into(), json!(channel.rendered_description));
    out.insert("date_created".into(), json!(channel.date_created));
    out.insert("creator_id".into(), json!(channel.creator.map(|u| u.0)));
    out.insert("invite_only".into(), json!(channel.invite_only));
    out.insert("is_web_public".into(), json!(channel.is_web_public));
    out.insert("is_archived".into(), json!(channel.is_archived));
    out.insert("stream_post_policy".into(), json!(post_policy));
    out.insert("is_announcement_only".into(), json!(post_policy == 2));
    out.insert("message_retention_days".into(), json!(channel.message_retention_days));
    out.insert(
        "history_public_to_subscribers".into(),
        json!(channel.history_public_to_subscribers),
    );
    out.insert("first_message_id".into(), json!(channel.first_message_id.map(|m| m.0)));
    out.insert("folder_id".into(), json!(channel.folder_id));
    out.insert("topics_policy".into(), json!(channel.topics_policy.as_str()));
    out.insert(
        "is_recently_active".into(),
        json!(is_recently_active(state, channel, crate::entropy::now())),
    );
    out.insert("stream_weekly_traffic".into(), Value::Null);
    out.insert("subscriber_count".into(), json!(channel.subscribers.len()));
    out.insert("can_send_message_group".into(), group_setting(&p.can_send_message));
    out.insert("can_add_subscribers_group".into(), group_setting(&p.can_add_subscribers));
    out.insert("can_remove_subscribers_group".into(), group_setting(&p.can_remove_subscribers));
    out.insert("can_administer_channel_group".into(), group_setting(&p.can_administer_channel));
    out.insert("can_delete_any_message_group".into(), group_setting(&p.can_delete_any_message));
    out.insert("can_delete_own_message_group".into(), group_setting(&p.can_delete_own_message));
    out.insert(
        "can_move_messages_out_of_channel_group".into(),
        group_setting(&p.can_move_messages_out_of_channel),
    );
    if subscribers == Subscribers::Omit {
        return;
    }
    let ids: Vec<u64> = if can_see_subscribers(viewer, channel) {
        channel.subscribers.iter().map(|u| u.0).collect()
    } else {
        Vec::new()
    };
    if subscribers == Subscribers::Partial && ids.len() >= PARTIAL_SUBSCRIBERS_THRESHOLD {
        // natter does not track recent activity, so the "partial" list is
        // the whole list: a superset of what Zulip promises.
        out.insert("partial_subscribers".into(), json!(ids));
    } else {
        out.insert("subscribers".into(), json!(ids));
    }
}

/// A channel object (`GET /streams`, register's `never_subscribed` and
/// `unsubscribed`) as `viewer` may see it.
pub fn stream(state: &State, viewer: &User, channel: &Channel, subscribers: Subscribers) -> Value {
    let mut out = Map::new();
    channel_fields(state, viewer, channel, subscribers, &mut out);
    out.insert("is_default".into(), json!(channel.is_default));
    Value::Object(out)
}

/// A subscription object (register's `subscriptions`, `GET
/// /users/me/subscriptions`): the channel plus `viewer`'s settings for
/// it, with the deprecated fields old clients still read
/// (`in_home_view`, `email_address`, `stream_post_policy`,
/// `is_announcement_only`).
pub fn subscription(
    state: &State,
    viewer: &User,
    channel: &Channel,
    sub: &Subscription,
    subscribers: Subscribers,
) -> Value {
    let mut out = Map::new();
    channel_fields(state, viewer, channel, subscribers, &mut out);
    out.insert("color".into(), json!(normalize_color(&sub.color)));
    out.insert("is_muted".into(), json!(sub.is_muted));
    out.insert("in_home_view".into(), json!(!sub.is_muted));
    out.insert("pin_to_top".into(), json!(sub.pin_to_top));
    out.insert("desktop_notifications".into(), json!(sub.desktop_notifications));
    out.insert("email_notifications".into(), json!(sub.email_notifications));
    out.insert("push_notifications".into(), json!(sub.push_notifications));
    out.insert("audible_notifications".into(), json!(sub.audible_notifications));
    out.insert("wildcard_mentions_notify".into(), json!(sub.wildcard_mentions_notify));
    // Zulip dropped the channel email gateway address from this object;
    // zulip-term 0.7.0 still reads the key.
    out.insert("email_address".into(), json!(""));
    Value::Object(out)
}

/// A colour as `#rrggbb` (lowercase); `#rgb` is expanded and anything else
/// becomes a neutral grey, so no client ever chokes on a stored value.
pub fn normalize_color(color: &str) -> String {
    let hex = color.strip_prefix('#').unwrap_or("");
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return "#c2c2c2".to_owned();
    }
    match hex.len() {
        6 => format!("#{}", hex.to_ascii_lowercase()),
        3 => hex.chars().fold(String::from("#"), |mut s, c| {
            let c = c.to_ascii_lowercase();
            s.push(c);
            s.push(c);
            s
        }),
        _ => "#c2c2c2".to_owned(),
    }
}

/// The default channels of a realm, as in register's `realm_default_streams`.
pub fn default_streams(state: &State, realm: RealmId) -> Value {
    let list: Vec<Value> = state
        .channels
        .collect_sorted(|_, c| c.realm == realm && c.is_default && !c.is_archived)
        .into_iter()
        .map(|(_, c)| default_stream(&c))
        .collect();
    Value::Array(list)
}

/// A channel as the default-channel lists show it (`realm_default_streams`,
/// the `streams` of a default channel group): its basic fields, without
/// permissions or subscription data.
pub fn default_stream(c: &Channel) -> Value {
    json!({"stream_id": c.id.0, "name": c.name, "description": c.description,
           "rendered_description": c.rendered_description, "invite_only": c.invite_only,
           "is_web_public": c.is_web_public, "is_archived": c.is_archived,
           "history_public_to_subscribers": c.history_public_to_subscribers,
           "date_created": c.date_created, "creator_id": c.creator.map(|u| u.0),
           "message_retention_days": c.message_retention_days,
           "topics_policy": c.topics_policy.as_str(), "folder_id": c.folder_id})
}

/// Zulip's channel folder object.
pub fn folder(f: &crate::state::folders::ChannelFolder) -> Value {
    json!({
        "id": f.id,
        "name": f.name,
        "description": f.description,
        "rendered_description": f.rendered_description,
        "order": f.order,
        "date_created": f.date_created,
        "creator_id": f.creator.map(|u| u.0),
        "is_archived": f.is_archived,
    })
}

#[cfg(test)]
mod tests {
    use super::{normalize_color, Subscribers};

    #[test]
    fn colors_are_always_rrggbb() {
        assert_eq!(normalize_color("#76CE90"), "#76ce90");
        assert_eq!(normalize_color("#abc"), "#aabbcc");
        assert_eq!(normalize_color("red"), "#c2c2c2");
        assert_eq!(normalize_color("#12345"), "#c2c2c2");
        assert_eq!(normalize_color("#ggg"), "#c2c2c2");
    }

    #[test]
    fn include_subscribers_values() {
        assert_eq!(Subscribers::parse(None), Some(Subscribers::Omit));
        assert_eq!(Subscribers::parse(Some("false")), Some(Subscribers::Omit));
        assert_eq!(Subscribers::parse(Some("true")), Some(Subscribers::All));
        assert_eq!(Subscribers::parse(Some("partial")), Some(Subscribers::Partial));
        assert_eq!(Subscribers::parse(Some("\"partial\"")), Some(Subscribers::Partial));
        assert_eq!(Subscribers::parse(Some("maybe")), None);
    }
}
