//! The Message resource for one viewer: `MessageWriter` writes it as JSON
//! text for replies and events; `message` builds the same object as a map
//! for tests to compare against.

use rustc_hash::FxHashMap;
use serde_json::{json, Value};

use std::sync::Arc;

use crate::markdown::linkifiers::{self, Rule};
use crate::state::access::{can_see_email, MessageView};
use crate::state::{
    ChannelId, Destination, Message, MessageId, Realm, RealmId, State, User, UserId,
};
use crate::view::history::edit_history_json;
use crate::view::json_text;
use crate::view::user::{avatar_url_string, SYSTEM_BOT_REALM};

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
    let mut out = serde_json::Map::new();
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
        crate::view::user::avatar_url(
            state,
            &sender,
            options.client_gravatar && can_see_email(state, viewer, &sender),
        ),
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
    out.insert("submessages".into(), submessages(state, message.id));
    out.insert("timestamp".into(), json!(message.timestamp));
    let links = match &message.destination {
        Destination::Channel { topic, .. } => topic_links(&linkifier_rules(state, realm.id), topic),
        Destination::Direct { .. } => json!([]),
    };
    out.insert("topic_links".into(), links);
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
    /// The realm's linkifiers, read at the first channel message.
    linkifiers: Option<Vec<Rule>>,
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
            linkifiers: None,
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
        let mut m = json_text::Object::start(out, extra);
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
                    json_text::string(&mut text, &name.unwrap_or_default());
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
        match state.widgets.by_message.read(&message.id, |list| list.len()) {
            Some(_) => write_json(m.member("submessages"), &submessages(state, message.id)),
            None => m.member("submessages").extend_from_slice(b"[]"),
        }
        write_json(m.member("timestamp"), &message.timestamp);
        match &message.destination {
            Destination::Channel { topic, .. } if !topic.is_empty() => {
                let rules = self.linkifiers.get_or_insert_with(|| linkifier_rules(state, realm.id));
                write_json(m.member("topic_links"), &topic_links(rules, topic));
            }
            _ => m.member("topic_links").extend_from_slice(b"[]"),
        }
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
        write_json(&mut text[0], &avatar_url_string(state, &sender, client_computes));
        json_text::string(&mut text[1], &state.api_email(&sender));
        json_text::string(&mut text[2], &sender.full_name);
        // System bots report Zulip's internal realm, as its cross-realm
        // bots do: clients recognise them by it.
        let sender_realm = if sender.is_system_bot() { SYSTEM_BOT_REALM } else { &realm.string_id };
        json_text::string(&mut text[3], sender_realm);
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
    json_text::array(out, message.reactions(), |out, r| {
        out.extend_from_slice(b"{\"emoji_code\":");
        json_text::string(out, &r.emoji_code);
        out.extend_from_slice(b",\"emoji_name\":");
        json_text::string(out, &r.emoji_name);
        out.extend_from_slice(b",\"reaction_type\":");
        json_text::string(out, r.reaction_type.as_str());
        out.extend_from_slice(b",\"user\":{\"email\":");
        // Shared, not cloned: a `User` copy per reaction.
        match state.users.get_shared(&r.user) {
            Some(user) => {
                json_text::string(out, &state.api_email(&user));
                out.extend_from_slice(b",\"full_name\":");
                json_text::string(out, &user.full_name);
            }
            None => out.extend_from_slice(b"null,\"full_name\":null"),
        }
        out.extend_from_slice(b",\"id\":");
        json_text::unsigned(out, r.user.0);
        out.extend_from_slice(b",\"is_mirror_dummy\":false},\"user_id\":");
        json_text::unsigned(out, r.user.0);
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

/// A message's `submessages`: its widget's state, in id order.
pub fn submessages(state: &State, message: MessageId) -> Value {
    Value::Array(state.widgets.of(message).iter().map(|s| s.to_api()).collect())
}

/// A realm's linkifiers as the renderer takes them, in order.
pub fn linkifier_rules(state: &State, realm: RealmId) -> Vec<Rule> {
    let stored = state.organization.linkifiers(realm);
    stored.into_iter().map(|l| Rule { pattern: l.pattern, url_template: l.url_template }).collect()
}

/// A topic's `topic_links` (`{text, url}` objects) from the realm's
/// linkifiers, as Zulip computes them (`markdown::linkifiers::topic_links`).
pub fn topic_links(rules: &[Rule], topic: &str) -> Value {
    let links = linkifiers::topic_links(topic, rules);
    Value::Array(links.into_iter().map(|(text, url)| json!({"text": text, "url": url})).collect())
}
