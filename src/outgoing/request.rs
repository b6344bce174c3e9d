//! The bodies natter posts to outgoing-webhook bots, as Zulip posts them.
//!
//! Generic interface: JSON `{bot_email, bot_full_name, data, message,
//! token, trigger}`, `data` the message's Markdown and `message` the
//! message as `GET /messages` shows it to the bot with raw `content` (plus
//! `rendered_content`). Slack-compatible interface: a form body with
//! Slack's outgoing-webhook fields.

use serde_json::{json, Value};

use crate::state::access::{message_view, MessageView};
use crate::state::bots::{Delivery, Service};
use crate::state::{Destination, Flags, Message, Realm, State, User};
use crate::view::message::{MessageOptions, MessageWriter};

/// What one delivery posts: everything read from the state first.
pub struct Parts<'a> {
    /// The state.
    pub state: &'a State,
    /// The message's realm.
    pub realm: &'a Realm,
    /// The bot.
    pub bot: &'a User,
    /// Its service.
    pub service: &'a Service,
    /// The message.
    pub message: &'a Message,
    /// The delivery.
    pub delivery: &'a Delivery,
    /// The realm's host (Slack's `team_domain`).
    pub host: &'a str,
}

/// The message as the bot sees it in `GET /messages` with
/// `apply_markdown=false`, plus `rendered_content`.
pub fn message_json(parts: &Parts<'_>) -> Value {
    let options = MessageOptions {
        apply_markdown: false,
        allow_empty_topic_name: true,
        client_gravatar: false,
    };
    let view = message_view(parts.state, parts.bot, parts.message)
        .unwrap_or(MessageView { flags: Flags::READ, historical: true });
    let mut rendered = Vec::new();
    crate::view::json_text::string(&mut rendered, parts.message.rendered());
    let mut out = Vec::new();
    MessageWriter::new(parts.state, parts.realm, parts.bot, options).write(
        &mut out,
        parts.message,
        view,
        &[("rendered_content", &rendered)],
    );
    serde_json::from_slice(&out).unwrap_or(Value::Null)
}

/// The generic interface's JSON body.
pub fn generic(parts: &Parts<'_>) -> Vec<u8> {
    let body = json!({
        "bot_email": parts.bot.email,
        "bot_full_name": parts.bot.full_name,
        "data": parts.message.content(),
        "message": message_json(parts),
        "token": parts.service.token,
        "trigger": parts.delivery.trigger.as_str(),
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The Slack-compatible interface's form body (channel messages only:
/// Slack's outgoing webhooks know no direct messages).
pub fn slack(parts: &Parts<'_>) -> Vec<u8> {
    let m = parts.message;
    let sender = parts.state.users.get(&m.sender);
    let (channel_id, channel_name) = match &m.destination {
        Destination::Channel { channel, .. } => {
            let name = parts.state.channels.read(channel, |c| c.name.clone()).unwrap_or_default();
            (channel.0, name)
        }
        Destination::Direct { .. } => (0, String::new()),
    };
    let timestamp = m.timestamp.to_string();
    let fields = [
        ("token", parts.service.token.clone()),
        ("team_id", format!("T{}", parts.realm.id.0)),
        ("team_domain", parts.host.to_owned()),
        ("channel_id", format!("C{channel_id}")),
        ("channel_name", channel_name),
        ("thread_ts", timestamp.clone()),
        ("timestamp", timestamp),
        ("user_id", format!("U{}", m.sender.0)),
        ("user_name", sender.map(|s| s.full_name.clone()).unwrap_or_default()),
        ("text", m.content().to_owned()),
        ("trigger_word", parts.delivery.trigger.as_str().to_owned()),
        ("service_id", parts.bot.id.0.to_string()),
    ];
    form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish().into_bytes()
}
