//! The JSON shapes of Zulip's resources (User, Message…), built from state
//! for one viewer: what a viewer may see (real emails, flags) is decided
//! here with `state::access`, never in the individual handlers.

use md5::{Digest, Md5};
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

use std::sync::Arc;

use super::message_edit::edit_history_json;
use super::sorted_reply;
use crate::state::access::{can_see_email, MessageView};
use crate::state::{
    Channel, ChannelId, Destination, GroupSetting, Message, Realm, Role, State, Subscription,
    SystemGroup, User, UserId,
};

/// Options that change a user's JSON.
#[derive(Clone, Copy, Debug)]
pub struct UserOptions {
    /// Leave `avatar_url` null where the client can compute a gravatar.
    pub client_gravatar: bool,
    /// Include `profile_data`.
    pub include_custom_profile_fields: bool,
}

/// The realm string Zulip's system bots belong to (`sender_realm_str`).
pub const SYSTEM_BOT_REALM: &str = "zulipinternal";

/// A `cross_realm_bots` entry of register: the User resource plus
/// `is_system_bot`.
pub fn system_bot(state: &State, viewer: &User, bot: &User, client_gravatar: bool) -> Value {
    let options = UserOptions { client_gravatar, include_custom_profile_fields: false };
    let mut out = user(state, viewer, bot, options);
    out["is_system_bot"] = json!(true);
    out
}

/// A User resource as `viewer` may see it.
pub fn user(state: &State, viewer: &User, user: &User, options: UserOptions) -> Value {
    let sees_email = can_see_email(state, viewer, user);
    let mut out = Map::new();
    out.insert("user_id".into(), json!(user.id.0));
    out.insert(
        "delivery_email".into(),
        if sees_email { json!(user.delivery_email) } else { Value::Null },
    );
    out.insert("email".into(), json!(state.api_email(user)));
    out.insert("full_name".into(), json!(user.full_name));
    out.insert("date_joined".into(), json!(iso8601(user.date_joined)));
    out.insert("is_active".into(), json!(user.is_active));
    out.insert("is_owner".into(), json!(user.role == Role::Owner));
    out.insert("is_admin".into(), json!(user.role.is_admin()));
    out.insert("is_guest".into(), json!(user.role == Role::Guest));
    out.insert("is_bot".into(), json!(user.is_bot()));
    out.insert("bot_type".into(), json!(user.bot_type.map(|t| t.code())));
    if user.is_bot() {
        out.insert("bot_owner_id".into(), json!(user.bot_owner.map(|o| o.0)));
    }
    out.insert("role".into(), json!(user.role.code()));
    out.insert("timezone".into(), json!(user.timezone));
    out.insert("avatar_url".into(), avatar_url(user, options.client_gravatar && sees_email));
    out.insert("avatar_version".into(), json!(user.avatar_version));
    if options.include_custom_profile_fields && !user.is_bot() {
        out.insert("profile_data".into(), super::profile_fields::profile_data(state, user.id));
    }
    Value::Object(out)
}

/// The avatar URL: a gravatar of the real email (natter stores no uploaded
/// avatars yet), or null when the client computes it itself.
pub fn avatar_url(user: &User, client_computes: bool) -> Value {
    avatar_url_string(user, client_computes).map_or(Value::Null, Value::String)
}

/// `avatar_url` as a string, `None` for null.
pub fn avatar_url_string(user: &User, client_computes: bool) -> Option<String> {
    if client_computes {
        return None;
    }
    let digest = Md5::digest(user.delivery_email.trim().to_lowercase().as_bytes());
    let mut url = String::with_capacity(96);
    url.push_str("https://secure.gravatar.com/avatar/");
    // Hex by table: `write!("{b:02x}")` per byte was a third of the cost.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in digest.iter() {
        url.push(char::from(HEX[usize::from(b >> 4)]));
        url.push(char::from(HEX[usize::from(b & 15)]));
    }
    let _ = std::fmt::Write::write_fmt(
        &mut url,
        format_args!("?d=identicon&version={}", user.avatar_version),
    );
    Some(url)
}

/// Options that change a message's JSON.
#[derive(Clone, Copy, Debug)]
pub struct MessageOptions {
    /// HTML (`true`) or Markdown source.
    pub apply_markdown: bool,
    /// Show the empty topic as `""` rather than the realm's display name.
    pub allow_empty_topic_name: bool,
    /// Leave `avatar_url` null where the client can compute a gravatar.
    pub client_gravatar: bool,
}

/// A Message resource as seen by `viewer` through `view`, as a map: the
/// reference `MessageWriter`'s bytes are checked against (every reply
/// and event writes messages with `MessageWriter`).
#[cfg(test)]
pub fn message(
    state: &State,
    realm: &Realm,
    viewer: &User,
    message: &Message,
    view: MessageView,
    options: MessageOptions,
) -> Value {
    let sender = state.users.get(&message.sender).expect("message sender exists");
    let mut out = Map::new();
    out.insert("id".into(), json!(message.id.0));
    out.insert("sender_id".into(), json!(sender.id.0));
    out.insert("sender_email".into(), json!(state.api_email(&sender)));
    out.insert("sender_full_name".into(), json!(sender.full_name));
    // System bots report Zulip's internal realm, as its cross-realm bots
    // do: clients recognise them by it.
    let sender_realm = if sender.is_system_bot() { SYSTEM_BOT_REALM } else { &realm.string_id };
    out.insert("sender_realm_str".into(), json!(sender_realm));
    out.insert(
        "avatar_url".into(),
        avatar_url(&sender, options.client_gravatar && can_see_email(state, viewer, &sender)),
    );
    out.insert("client".into(), json!(message.client));
    if options.apply_markdown {
        out.insert("content".into(), json!(message.rendered()));
        out.insert("content_type".into(), json!("text/html"));
    } else {
        out.insert("content".into(), json!(message.content()));
        out.insert("content_type".into(), json!("text/x-markdown"));
    }
    match &message.destination {
        Destination::Channel { channel, topic } => {
            let name = state.channels.read(channel, |c| c.name.clone()).unwrap_or_default();
            out.insert("type".into(), json!("stream"));
            out.insert("display_recipient".into(), json!(name));
            out.insert("stream_id".into(), json!(channel.0));
            let shown = if topic.is_empty() && !options.allow_empty_topic_name {
                realm.settings.empty_topic_display_name.as_str()
            } else {
                topic
            };
            out.insert("subject".into(), json!(shown));
        }
        Destination::Direct { participants } => {
            out.insert("type".into(), json!("private"));
            out.insert("display_recipient".into(), json!(display_recipient(state, participants)));
            out.insert("subject".into(), json!(""));
        }
    }
    out.insert("is_me_message".into(), json!(message.is_me_message));
    out.insert("reactions".into(), json!(reactions(state, message)));
    out.insert("recipient_id".into(), json!(message.recipient.0));
    out.insert("submessages".into(), json!([]));
    out.insert("timestamp".into(), json!(message.timestamp));
    out.insert("topic_links".into(), json!([]));
    out.insert("flags".into(), json!(view.flag_names()));
    if let Some(ts) = message.last_edit_timestamp() {
        out.insert("last_edit_timestamp".into(), json!(ts));
    }
    if let Some(ts) = message.last_moved_timestamp() {
        out.insert("last_moved_timestamp".into(), json!(ts));
    }
    if !message.edit_history().is_empty() && realm.settings.allow_edit_history {
        let is_channel = matches!(message.destination, Destination::Channel { .. });
        let show = |topic: &str| {
            if topic.is_empty() && is_channel && !options.allow_empty_topic_name {
                realm.settings.empty_topic_display_name.clone()
            } else {
                topic.to_owned()
            }
        };
        out.insert("edit_history".into(), json!(edit_history_json(message, &show)));
    }
    Value::Object(out)
}

/// Message resources as JSON text for one viewer: the same bytes as
/// `message` serialized, without building a map. A reply repeats a few
/// senders and channels across its messages; each one's members are
/// looked up and escaped once per writer. `GET /messages` writes every
/// reply this way (it is the most frequent read of every client).
pub struct MessageWriter<'a> {
    state: &'a State,
    realm: &'a Realm,
    viewer: &'a User,
    options: MessageOptions,
    /// A sender's `avatar_url`, `sender_email`, `sender_full_name` and
    /// `sender_realm_str` values, as JSON text (a reply can hold up to
    /// 5,000 messages from as many senders: a map, not a list).
    senders: FxHashMap<UserId, Arc<[Vec<u8>; 4]>>,
    /// A channel's name as a JSON string.
    channels: FxHashMap<ChannelId, Arc<[u8]>>,
    /// Whether to write the viewer's `flags` (a message event carries
    /// them beside the message instead).
    with_flags: bool,
}

impl<'a> MessageWriter<'a> {
    pub fn new(
        state: &'a State,
        realm: &'a Realm,
        viewer: &'a User,
        options: MessageOptions,
    ) -> Self {
        MessageWriter {
            state,
            realm,
            viewer,
            options,
            // A reply's few senders without a rehash as they come.
            senders: FxHashMap::with_capacity_and_hasher(8, Default::default()),
            channels: FxHashMap::default(),
            with_flags: true,
        }
    }

    /// The same writer leaving out the `flags` member.
    pub fn without_flags(self) -> Self {
        MessageWriter { with_flags: false, ..self }
    }

    /// Appends `message` as seen through `view`, with `extra` members (JSON
    /// text, none of them one of the resource's own) where their keys sort.
    pub fn write(
        &mut self,
        out: &mut Vec<u8>,
        message: &Message,
        view: MessageView,
        extra: &[(&str, &[u8])],
    ) {
        let (state, realm, options) = (self.state, self.realm, self.options);
        let sender = self.sender(message.sender);
        let mut m = sorted_reply::Object::start(out, extra);
        m.member("avatar_url").extend_from_slice(&sender[0]);
        m.string("client", &message.client);
        if options.apply_markdown {
            m.string("content", message.rendered());
            m.member("content_type").extend_from_slice(b"\"text/html\"");
        } else {
            m.string("content", message.content());
            m.member("content_type").extend_from_slice(b"\"text/x-markdown\"");
        }
        let stream = match &message.destination {
            Destination::Channel { channel, .. } => {
                let name = self.channels.entry(*channel).or_insert_with(|| {
                    let name = state.channels.read(channel, |c| c.name.clone());
                    let mut text = Vec::new();
                    sorted_reply::string(&mut text, &name.unwrap_or_default());
                    text.into()
                });
                m.member("display_recipient").extend_from_slice(name);
                Some(channel.0)
            }
            Destination::Direct { participants } => {
                let list = display_recipient(state, participants);
                write_json(m.member("display_recipient"), &list);
                None
            }
        };
        if !message.edit_history().is_empty() && realm.settings.allow_edit_history {
            let is_channel = stream.is_some();
            let show = |topic: &str| {
                if topic.is_empty() && is_channel && !options.allow_empty_topic_name {
                    realm.settings.empty_topic_display_name.clone()
                } else {
                    topic.to_owned()
                }
            };
            write_json(m.member("edit_history"), &edit_history_json(message, &show));
        }
        if self.with_flags {
            // Flag names are plain identifiers: nothing to escape.
            let out = m.member("flags");
            out.push(b'[');
            for (i, name) in
                view.flags.name_iter().chain(view.historical.then_some("historical")).enumerate()
            {
                out.extend_from_slice(if i == 0 { b"\"" } else { b",\"" });
                out.extend_from_slice(name.as_bytes());
                out.push(b'"');
            }
            out.push(b']');
        }
        m.unsigned("id", message.id.0);
        m.boolean("is_me_message", message.is_me_message);
        if let Some(ts) = message.last_edit_timestamp() {
            write_json(m.member("last_edit_timestamp"), &ts);
        }
        if let Some(ts) = message.last_moved_timestamp() {
            write_json(m.member("last_moved_timestamp"), &ts);
        }
        if message.reactions().is_empty() {
            m.member("reactions").extend_from_slice(b"[]");
        } else {
            write_reactions(m.member("reactions"), state, message);
        }
        m.unsigned("recipient_id", message.recipient.0);
        m.member("sender_email").extend_from_slice(&sender[1]);
        m.member("sender_full_name").extend_from_slice(&sender[2]);
        m.unsigned("sender_id", message.sender.0);
        m.member("sender_realm_str").extend_from_slice(&sender[3]);
        if let Some(id) = stream {
            m.unsigned("stream_id", id);
        }
        let subject = match &message.destination {
            Destination::Channel { topic, .. }
                if topic.is_empty() && !options.allow_empty_topic_name =>
            {
                realm.settings.empty_topic_display_name.as_str()
            }
            Destination::Channel { topic, .. } => topic,
            Destination::Direct { .. } => "",
        };
        m.string("subject", subject);
        m.member("submessages").extend_from_slice(b"[]");
        write_json(m.member("timestamp"), &message.timestamp);
        m.member("topic_links").extend_from_slice(b"[]");
        m.member("type").extend_from_slice(if stream.is_some() {
            b"\"stream\""
        } else {
            b"\"private\""
        });
        m.finish();
    }

    /// The sender's members (see `senders`), looked up on first use.
    fn sender(&mut self, id: UserId) -> Arc<[Vec<u8>; 4]> {
        if let Some(text) = self.senders.get(&id) {
            return Arc::clone(text);
        }
        let (state, realm, viewer) = (self.state, self.realm, self.viewer);
        let sender = state.users.get_shared(&id).expect("message sender exists");
        let mut text: [Vec<u8>; 4] = Default::default();
        let client_computes = self.options.client_gravatar && can_see_email(state, viewer, &sender);
        write_json(&mut text[0], &avatar_url_string(&sender, client_computes));
        sorted_reply::string(&mut text[1], &state.api_email(&sender));
        sorted_reply::string(&mut text[2], &sender.full_name);
        // System bots report Zulip's internal realm, as its cross-realm
        // bots do: clients recognise them by it.
        let sender_realm = if sender.is_system_bot() { SYSTEM_BOT_REALM } else { &realm.string_id };
        sorted_reply::string(&mut text[3], sender_realm);
        let text = Arc::new(text);
        self.senders.insert(id, Arc::clone(&text));
        text
    }
}

/// Appends `value` as serde_json writes it.
fn write_json(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    serde_json::to_writer(out, value).expect("writing to a Vec cannot fail");
}

/// `display_recipient` of a direct message: every participant.
fn display_recipient(state: &State, participants: &[UserId]) -> Vec<Value> {
    participants
        .iter()
        .filter_map(|id| state.users.get_shared(id))
        .map(|u| {
            json!({"id": u.id.0, "email": state.api_email(&u), "full_name": u.full_name, "is_mirror_dummy": false})
        })
        .collect()
}

/// A message's reactions, each with both `user_id` and the deprecated
/// `user` object, written straight to text: the bytes serde_json writes
/// for `reactions` below (the test reference), whose derived serializer
/// took a third of a reacted message's instructions.
fn write_reactions(out: &mut Vec<u8>, state: &State, message: &Message) {
    sorted_reply::array(out, message.reactions(), |out, r| {
        out.extend_from_slice(b"{\"emoji_code\":");
        sorted_reply::string(out, &r.emoji_code);
        out.extend_from_slice(b",\"emoji_name\":");
        sorted_reply::string(out, &r.emoji_name);
        out.extend_from_slice(b",\"reaction_type\":");
        sorted_reply::string(out, r.reaction_type.as_str());
        out.extend_from_slice(b",\"user\":{\"email\":");
        // Shared, not cloned: a `User` copy per reaction.
        match state.users.get_shared(&r.user) {
            Some(user) => {
                sorted_reply::string(out, &state.api_email(&user));
                out.extend_from_slice(b",\"full_name\":");
                sorted_reply::string(out, &user.full_name);
            }
            None => out.extend_from_slice(b"null,\"full_name\":null"),
        }
        out.extend_from_slice(b",\"id\":");
        sorted_reply::unsigned(out, r.user.0);
        out.extend_from_slice(b",\"is_mirror_dummy\":false},\"user_id\":");
        sorted_reply::unsigned(out, r.user.0);
        out.push(b'}');
    });
}

/// Reactions with both `user_id` and the deprecated `user` object.
#[cfg(test)]
fn reactions<'a>(state: &State, message: &'a Message) -> Vec<ReactionJson<'a>> {
    message
        .reactions()
        .iter()
        .map(|r| {
            // Shared, not cloned: a `User` copy per reaction.
            let user = state.users.get_shared(&r.user);
            ReactionJson {
                emoji_code: &r.emoji_code,
                emoji_name: &r.emoji_name,
                reaction_type: r.reaction_type.as_str(),
                user: ReactionUser {
                    email: user.as_ref().map(|u| state.api_email(u)),
                    full_name: user.as_ref().map(|u| u.full_name.clone()),
                    id: r.user.0,
                    is_mirror_dummy: false,
                },
                user_id: r.user.0,
            }
        })
        .collect()
}

/// One reaction as a message object carries it (the test reference of
/// `write_reactions`), serialized straight to
/// text (a `serde_json::Value` tree made about twenty allocations per
/// reaction, most of a reacted message's JSON). The members are in the
/// alphabetical order a `Value` object writes them in.
#[cfg(test)]
#[derive(serde::Serialize)]
struct ReactionJson<'a> {
    emoji_code: &'a str,
    emoji_name: &'a str,
    reaction_type: &'static str,
    user: ReactionUser,
    user_id: u64,
}

/// The deprecated `user` object of a reaction.
#[cfg(test)]
#[derive(serde::Serialize)]
struct ReactionUser {
    email: Option<String>,
    full_name: Option<String>,
    id: u64,
    is_mirror_dummy: bool,
}

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

/// A group-setting value: a group id, or `{direct_members, direct_subgroups}`.
pub fn group_setting(setting: &GroupSetting) -> Value {
    match setting {
        GroupSetting::Group(id) => json!(id.0),
        GroupSetting::Anonymous { direct_members, direct_subgroups } => json!({
            "direct_members": direct_members.iter().map(|u| u.0).collect::<Vec<_>>(),
            "direct_subgroups": direct_subgroups.iter().map(|g| g.0).collect::<Vec<_>>(),
        }),
    }
}

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

/// Whether `viewer` may see who is subscribed to `channel`.
pub fn can_see_subscribers(viewer: &User, channel: &Channel) -> bool {
    viewer.realm == channel.realm
        && (channel.subscribers.contains(&viewer.id)
            || viewer.role.is_admin()
            || (!channel.invite_only && viewer.role != Role::Guest))
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

/// UNIX seconds → `YYYY-MM-DDTHH:MM:SS+00:00` (proleptic Gregorian, UTC).
pub fn iso8601(secs: i64) -> String {
    Iso8601(secs).to_string()
}

/// `iso8601` as a `Display`, to write a date without allocating.
pub struct Iso8601(pub i64);

impl Iso8601 {
    /// (year, month, day, hour, minute, second) in UTC.
    fn parts(&self) -> (i64, i64, i64, i64, i64, i64) {
        let secs = self.0;
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
    }

    /// Appends the same text as `Display` to `out`, digit by digit: the
    /// formatting machinery was a few thousand instructions per date.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let (year, month, day, hour, minute, second) = self.parts();
        if !(0..=9999).contains(&year) {
            use std::io::Write;
            let _ = write!(out, "{self}");
            return;
        }
        let two = |out: &mut Vec<u8>, n: i64| {
            out.push(b'0' + (n / 10) as u8);
            out.push(b'0' + (n % 10) as u8);
        };
        two(out, year / 100);
        two(out, year % 100);
        out.push(b'-');
        two(out, month);
        out.push(b'-');
        two(out, day);
        out.push(b'T');
        two(out, hour);
        out.push(b':');
        two(out, minute);
        out.push(b':');
        two(out, second);
        out.extend_from_slice(b"+00:00");
    }
}

impl std::fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (year, month, day, hour, minute, second) = self.parts();
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}+00:00")
    }
}

#[cfg(test)]
mod tests {
    use super::{iso8601, normalize_color, Subscribers};

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

    #[test]
    fn formats_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20+00:00");
    }
}

#[cfg(test)]
mod avatar_tests {
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn gravatar_urls_hash_the_trimmed_lowercased_real_email() {
        let mut w = World::new();
        let mut user = w.user("", "hamlet@natter.test", Role::Member);
        user.delivery_email = " Hamlet@Natter.TEST ".into();
        // md5("hamlet@natter.test")
        assert_eq!(
            super::avatar_url_string(&user, false).unwrap(),
            format!(
                "https://secure.gravatar.com/avatar/29a955a77770d5073b7fcf55033f9bec?d=identicon&version={}",
                user.avatar_version
            )
        );
        assert_eq!(super::avatar_url_string(&user, true), None);
    }
}
