//! Messages: `POST /messages` (send), `GET /messages/{message_id}` and
//! `DELETE /messages/{message_id}`.
//!
//! Sending checks, in order: the request's shape; the channel (visible to
//! the sender, else "does not exist"), its send permission (archived,
//! private, guests only where subscribed, `can_send_message_group`) and its
//! topic policy — or the direct recipients (active, same realm) and the
//! realm's `direct_message_permission_group`; then wildcard-mention
//! permission (`mentions.rs`). Mention flags per recipient are worked out
//! under the writer lock and carried in the mutation.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::reactions;
use super::{App, Call, Reply};
use crate::api::params::Params;
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::{Mutation, NewMessage};
use crate::reply;
use crate::send::auto_topics;
use crate::send::mentions::{self, Visible};
use crate::state::access::{self, can_see_channel, MessageView};
use crate::state::{
    Channel, ChannelId, Destination, IdKind, Members, Message, MessageId, MessageParts, Realm,
    RecipientId, State, TopicsPolicy, User, UserId,
};
use crate::view::json_text::SortedMembers;
use crate::view::message::MessageOptions;

/// Longest message content in characters (`max_message_length`).
pub const MAX_MESSAGE_LENGTH: usize = 10_000;
/// Longest topic in characters (`max_topic_length`).
pub const MAX_TOPIC_LENGTH: usize = 60;

/// The parsed `to` of a channel message.
pub(crate) enum ChannelRef {
    /// By name.
    Name(String),
    /// By id.
    Id(u64),
}

/// The parsed `to` of a direct message.
pub(super) enum UserRef {
    Id(u64),
    Email(String),
}

/// What the caller asked to send to, before it is checked against state.
pub(super) enum Target {
    Channel { channel: ChannelRef, topic: String },
    Direct(Vec<UserRef>),
}

/// `POST /messages`: send a channel or direct message.
///
/// The hot write path: parameters are read in place (`Params::raw`), the
/// caller is borrowed rather than cloned, and the reply is written as JSON
/// text (`SortedMembers`) instead of a `serde_json` map.
pub fn send(app: &App, call: &mut Call) -> ApiResult<Reply> {
    // Each check's error is kept for its turn: the order of the errors is
    // the order Zulip checks in (shape, target, then content).
    let kind =
        call.params.raw("type").map(channel_or_direct).ok_or_else(|| ApiError::missing("type"))?;
    let to = to_param(&mut call.params)?;
    let content = call
        .params
        .raw("content")
        .map(normalize_content)
        .ok_or_else(|| ApiError::missing("content"))?;
    let target = match kind? {
        Kind::Channel => {
            let topic = match call.params.raw("topic") {
                Some(topic) => Some(topic),
                None => call.params.raw("subject"),
            };
            let topic = topic.ok_or_else(|| ApiError::missing("topic"))?;
            let topic = normalize_topic_for(topic, &call.realm.settings.empty_topic_display_name)?;
            Target::Channel { channel: parse_channel_ref(to)?, topic }
        }
        Kind::Direct => Target::Direct(parse_user_refs(&to)?),
    };
    let read_by_sender = match call.params.bool("read_by_sender")? {
        Some(value) => value,
        None => default_read_by_sender(&call.client),
    };
    let content = content?;
    // Local echo: the sender's queue gets `local_id` on the message event.
    let local_echo = match (call.params.string("queue_id"), call.params.string("local_id")) {
        (Some(queue_id), Some(local_id)) => Some((queue_id, local_id)),
        _ => None,
    };
    let client = if call.client.is_empty() { Arc::from("API") } else { Arc::clone(&call.client) };
    let sender = call.caller();
    let url = super::realm::realm_url_of(app, sender.realm);
    let draft = Draft::new(&app.state, sender, target, content, read_by_sender, client, url);
    let (id, automatic) = commit_draft(app, sender, &draft, local_echo)?;
    // Members in key order, as the map's serialization would put them.
    let mut out = SortedMembers::reply(64);
    if let Some(policy) = automatic {
        out.unsigned("automatic_new_visibility_policy", policy.into());
    }
    out.unsigned("id", id.0);
    call.sorted_reply = Some(out);
    Ok(Reply::new())
}

/// Sends `draft` as `sender` through the send path (every send rule,
/// mention flags, automatic topic follows, attachments, deliveries to
/// outgoing-webhook bots), durably: its id, and the visibility policy the
/// sender's topic got automatically, if any.
pub(super) fn commit_draft(
    app: &App,
    sender: &User,
    draft: &Draft,
    local_echo: Option<(String, String)>,
) -> ApiResult<(MessageId, Option<u8>)> {
    commit_draft_with(app, sender, draft, local_echo, &[])
}

/// `commit_draft`, logging `extra` in the message's record too (an
/// outgoing-webhook bot's answer carries the end of its delivery).
fn commit_draft_with(
    app: &App,
    sender: &User,
    draft: &Draft,
    local_echo: Option<(String, String)>,
    extra: &[Mutation],
) -> ApiResult<(MessageId, Option<u8>)> {
    let (id, outcome) = app.committer.commit(|state| {
        let new = draft.build(state, sender)?;
        let id = new.message.id;
        if let Some((queue_id, local_id)) = local_echo {
            app.hub.realtime().queues.note_local_id(id, queue_id, local_id);
        }
        let (mut parts, outcome) = with_message(state, sender, draft, &new);
        parts.extend(extra.iter().cloned());
        Ok((auto_topics::batch(Mutation::SendMessage(new), parts), (id, outcome)))
    })?;
    Ok((id, outcome.sent(app)))
}

/// What a send records beside its message, and hands on once committed.
pub(super) struct SendOutcome {
    /// The visibility policy the sender's topic got automatically.
    automatic: Option<u8>,
    /// The outgoing-webhook deliveries the message triggers.
    deliveries: Vec<crate::state::bots::Delivery>,
}

impl SendOutcome {
    /// After the commit: hands the deliveries (logged with the message)
    /// to the pool, off the request path; the automatic policy.
    pub(super) fn sent(self, app: &App) -> Option<u8> {
        app.outbox.push(self.deliveries);
        self.automatic
    }
}

/// The mutations logged with a message `sender` sends from `draft` (built
/// as `new`, under the writer lock): automatic topic follows, claimed
/// attachments, a widget's first submessage (the draft's named widget,
/// or the one its content makes) and the outgoing-webhook deliveries it
/// triggers. The one list for every way a message is sent: `POST
/// /messages`, incoming webhooks, scheduled messages falling due and
/// outgoing-webhook bots' answers (`send_as`).
pub(super) fn with_message(
    state: &State,
    sender: &User,
    draft: &Draft,
    new: &NewMessage,
) -> (Vec<Mutation>, SendOutcome) {
    let mentioned = draft.personal_mentions();
    let deliveries = crate::send::outgoing::triggered(state, sender, new, &mentioned);
    let changes = auto_topics::on_send(state, new, &mentioned);
    let automatic = changes.iter().find(|c| c.user == sender.id).map(|c| c.policy);
    let mut parts = auto_topics::policy_changes(new, &changes);
    let attachments = crate::send::attachments::claimed(state, sender, new.message.content());
    if !attachments.is_empty() {
        parts.push(Mutation::LinkAttachments { message: new.message.id, attachments });
    }
    parts.extend(crate::send::widgets::first_submessage_with(state, new, draft.widget.as_ref()));
    parts.extend(crate::send::outgoing::queue(&deliveries));
    (parts, SendOutcome { automatic, deliveries })
}

/// Where a message the server sends on someone's behalf goes.
pub enum Conversation {
    /// A channel's topic.
    Channel {
        /// The channel.
        channel: ChannelId,
        /// The topic (normalized as a sent one is).
        topic: String,
    },
    /// A direct conversation with these users (the sender may be among
    /// them).
    Direct(Vec<UserId>),
}

/// Sends `content` as `sender` to `to` through the send path
/// `POST /messages` takes (`Draft`, `commit_draft`: the same send rules,
/// mentions, automatic topic follows, attachments, events and
/// outgoing-webhook triggers), with the `client` name given, logging
/// `extra` in the same record: an outgoing-webhook bot's answer, with the
/// end of the delivery that brought it, and the message's widget:
/// `widget` (a checked `widget_content`) or the one its content makes.
/// Blocks on the write path: for an OS thread or a handler. A bot's
/// message triggers no outgoing-webhook bot (`send::outgoing::triggered`).
pub fn send_as(
    app: &App,
    sender: &User,
    to: Conversation,
    content: &str,
    client: &str,
    extra: Vec<Mutation>,
    widget: Option<&serde_json::Value>,
) -> ApiResult<MessageId> {
    let content = normalize_content(content)?;
    let target = match to {
        Conversation::Channel { channel, topic } => {
            let empty = app
                .state
                .realms
                .read(&sender.realm, |r| r.settings.empty_topic_display_name.clone())
                .unwrap_or_default();
            let topic = normalize_topic_for(&topic, &empty)?;
            Target::Channel { channel: ChannelRef::Id(channel.0), topic }
        }
        Conversation::Direct(users) => {
            Target::Direct(users.into_iter().map(|u| UserRef::Id(u.0)).collect())
        }
    };
    let url = super::realm::realm_url_of(app, sender.realm);
    let draft = Draft::new(&app.state, sender, target, content, true, client, url)
        .with_widget(widget.cloned());
    let (id, _) = commit_draft_with(app, sender, &draft, None, &extra)?;
    Ok(id)
}

/// `to`, as `Params::json_or_string` reads it, without trying to parse a
/// bare channel name (`to=general`, the common case) as JSON first: text
/// starting with a letter other than `t`, `f` or `n` (`true`, `false`,
/// `null`) is never JSON, so it is the string itself.
fn to_param(params: &mut Params) -> ApiResult<Value> {
    let bare = match params.raw("to") {
        None => return Err(ApiError::missing("to")),
        Some(raw) => raw
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic() && !matches!(b, b't' | b'f' | b'n'))
            .then(|| raw.to_owned()),
    };
    match bare {
        Some(name) => Ok(Value::String(name)),
        None => params.json_or_string("to")?.ok_or_else(|| ApiError::missing("to")),
    }
}

/// What `type` asks for.
enum Kind {
    Channel,
    Direct,
}

/// `type`: `stream` / `channel`, or `direct` / `private`.
fn channel_or_direct(kind: &str) -> ApiResult<Kind> {
    match kind {
        "stream" | "channel" => Ok(Kind::Channel),
        "direct" | "private" => Ok(Kind::Direct),
        _ => Err(ApiError::bad_request("Invalid message type")),
    }
}

/// A message about to be sent: everything non-deterministic (time,
/// rendering) decided before the writer lock. Mentions resolve to what the
/// sender may see.
pub(super) struct Draft {
    target: Target,
    content: String,
    rendered: markdown::Rendered,
    timestamp: i64,
    is_me_message: bool,
    /// Shared with the message built (an `Arc` clone, not a copy per build).
    client: Arc<str>,
    read_by_sender: bool,
    /// The widget its sender named (a checked `widget_content`), if any:
    /// else the one its content makes, if any.
    widget: Option<Value>,
}

impl Draft {
    /// Renders `content` (already normalized) for `sender`, stamped now.
    pub(super) fn new(
        state: &State,
        sender: &User,
        target: Target,
        content: String,
        read_by_sender: bool,
        client: impl Into<Arc<str>>,
        realm_url: Option<String>,
    ) -> Draft {
        let visible = Visible::new(state, sender).with_realm_url(realm_url);
        let rendered = markdown::render_message(&content, &visible);
        Draft {
            target,
            is_me_message: markdown::is_me_message(&content),
            content,
            rendered,
            timestamp: entropy::now(),
            client: client.into(),
            read_by_sender,
            widget: None,
        }
    }

    /// The draft, its message to be `widget` (a checked `widget_content`)
    /// if given.
    pub(super) fn with_widget(mut self, widget: Option<Value>) -> Draft {
        self.widget = widget;
        self
    }

    /// The ids of the users the content mentions by name (not silently).
    pub(super) fn personal_mentions(&self) -> Vec<u64> {
        self.rendered.mentions.users.iter().copied().collect()
    }

    /// The rendered HTML.
    pub(super) fn html(&self) -> &str {
        &self.rendered.html
    }

    /// Checks every send rule against current state (call it under the
    /// writer lock) and builds the message with the next free id.
    pub(super) fn build(&self, state: &State, sender: &User) -> ApiResult<NewMessage> {
        let resolved = resolve_target(state, sender, &self.target)?;
        let notify = mentions::notify(
            state,
            sender,
            &resolved.destination,
            &resolved.recipients,
            &self.rendered.mentions,
        )?;
        let message = Message::from(MessageParts {
            id: MessageId(state.ids.peek(IdKind::Message)),
            realm: sender.realm,
            sender: sender.id,
            recipient: resolved.recipient,
            destination: resolved.destination,
            content: with_room_for(&self.content, self.rendered.html.len()),
            rendered_content: self.rendered.html.clone(),
            timestamp: self.timestamp,
            client: state.names.shared(&self.client).unwrap_or_else(|| Arc::clone(&self.client)),
            is_me_message: self.is_me_message,
        });
        Ok(NewMessage {
            message: Arc::new(message),
            read_by_sender: self.read_by_sender,
            mentioned: notify.mentioned,
            channel_wildcard: notify.channel_wildcard,
            topic_wildcard: notify.topic_wildcard,
        })
    }
}

/// A copy of `text` with room for `more` bytes: the message stores its
/// source and HTML in one allocation, so the source's copy is made that
/// size at once instead of growing (and being copied again) there.
fn with_room_for(text: &str, more: usize) -> String {
    let mut out = String::with_capacity(text.len() + more);
    out.push_str(text);
    out
}

/// Where a message goes, checked against state.
#[derive(Debug)]
struct Resolved {
    destination: Destination,
    recipient: RecipientId,
    /// Who it is delivered to (channel subscribers and the sender, or the
    /// direct participants).
    recipients: Recipients,
}

/// A message's recipients, in delivery order: a channel's subscribers as
/// the channel holds them (shared, not copied) when the sender is among
/// them, or a list of their own.
#[derive(Debug)]
enum Recipients {
    Subscribers(Members),
    Listed(Vec<UserId>),
}

impl std::ops::Deref for Recipients {
    type Target = [UserId];

    fn deref(&self) -> &[UserId] {
        match self {
            Recipients::Subscribers(members) => members.as_slice(),
            Recipients::Listed(ids) => ids,
        }
    }
}

/// Checks the target against current state (under the writer lock): the
/// channel, its send permission and topic policy; or the direct
/// recipients and the realm's direct-message permission.
fn resolve_target(state: &State, sender: &User, target: &Target) -> ApiResult<Resolved> {
    match target {
        Target::Channel { channel: by, topic } => {
            // Checked and collected under the channel's shard read lock:
            // no copy of the channel (its subscriber set can be large),
            // and this runs under the writer lock.
            let realm_policy = state
                .realms
                .read(&sender.realm, |r| r.settings.topics_policy)
                .unwrap_or(TopicsPolicy::AllowEmptyTopic);
            let not_found = || match by {
                ChannelRef::Name(name) => ApiError::no_channel_named(name),
                ChannelRef::Id(id) => ApiError::no_channel_id(*id),
            };
            let id = match by {
                ChannelRef::Name(name) => {
                    state.channel_by_name.get(&(sender.realm, name.to_lowercase()))
                }
                ChannelRef::Id(id) => Some(ChannelId(*id)),
            }
            .ok_or_else(not_found)?;
            let resolve = |channel: &Channel| -> ApiResult<Resolved> {
                if channel.realm != sender.realm || !can_see_channel(sender, channel) {
                    return Err(not_found());
                }
                if access::send_refusal(state, sender, channel).is_some() {
                    return Err(ApiError::bad_request(format!(
                        "Not authorized to send to channel '{}'",
                        channel.name
                    )));
                }
                check_topic_policy(channel, realm_policy, topic)?;
                let recipients = if channel.subscribers.contains(&sender.id) {
                    Recipients::Subscribers(channel.subscribers.shared())
                } else {
                    let mut listed = Vec::with_capacity(channel.subscribers.len() + 1);
                    listed.extend(channel.subscribers.iter().copied());
                    listed.push(sender.id);
                    Recipients::Listed(listed)
                };
                // The topic's shared copy when there is one, so that
                // storing the message copies neither it nor the message.
                let topic = state.names.shared(topic).unwrap_or_else(|| topic.as_str().into());
                let destination = Destination::Channel { channel: channel.id, topic };
                Ok(Resolved { destination, recipient: channel.recipient, recipients })
            };
            state.channels.read(&id, resolve).unwrap_or_else(|| Err(not_found()))
        }
        Target::Direct(refs) => {
            let mut participants = BTreeSet::from([sender.id]);
            let mut others = Vec::new();
            for r in refs {
                let user = match r {
                    UserRef::Id(id) => state
                        .user_in_realm(sender.realm, UserId(*id))
                        .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?,
                    UserRef::Email(email) => state
                        .user_by_email(sender.realm, email)
                        .or_else(|| state.user_by_delivery_email(sender.realm, email))
                        .ok_or_else(|| ApiError::bad_request(format!("Invalid email '{email}'")))?,
                };
                if !user.is_active {
                    return Err(ApiError::bad_request(format!(
                        "'{}' is no longer using Zulip.",
                        user.email
                    )));
                }
                if participants.insert(user.id) {
                    others.push(user);
                }
            }
            others.retain(|u| u.id != sender.id);
            if !access::may_send_direct(state, sender, &others) {
                return Err(ApiError::bad_request(
                    "You do not have permission to send direct messages to this recipient.",
                ));
            }
            let participants: Vec<UserId> = participants.into_iter().collect();
            let recipient = state
                .direct_recipients
                .get(&participants)
                .unwrap_or_else(|| RecipientId(state.ids.peek(IdKind::Recipient)));
            Ok(Resolved {
                recipients: Recipients::Listed(participants.clone()),
                destination: Destination::Direct { participants: participants.into() },
                recipient,
            })
        }
    }
}

/// A channel the sender may know about; otherwise "does not exist", so a
/// private channel's existence is not revealed to outsiders.
pub(super) fn find_channel(state: &State, sender: &User, r: &ChannelRef) -> ApiResult<Channel> {
    match r {
        ChannelRef::Name(name) => state
            .channel_by_name(sender.realm, name)
            .filter(|c| can_see_channel(sender, c))
            .ok_or_else(|| ApiError::no_channel_named(name)),
        ChannelRef::Id(id) => state
            .channel_in_realm(sender.realm, ChannelId(*id))
            .filter(|c| can_see_channel(sender, c))
            .ok_or_else(|| ApiError::no_channel_id(*id)),
    }
}

/// The channel's `topics_policy` decides on the empty topic; `inherit`
/// follows the organization's policy.
pub(super) fn check_topic_policy(
    channel: &Channel,
    realm_policy: TopicsPolicy,
    topic: &str,
) -> ApiResult<()> {
    let policy = match channel.topics_policy {
        TopicsPolicy::Inherit => realm_policy,
        policy => policy,
    };
    match (policy, topic.is_empty()) {
        (TopicsPolicy::DisableEmptyTopic, true) => Err(ApiError::bad_request(
            "Sending messages to the general chat is not allowed in this channel.",
        )),
        (TopicsPolicy::EmptyTopicOnly, false) => {
            Err(ApiError::bad_request("Only the general chat topic is allowed in this channel."))
        }
        _ => Ok(()),
    }
}

/// `to` for a channel message: a name, an id, or a one-element list of
/// either. A name with nothing to trim is kept, not copied.
fn parse_channel_ref(to: Value) -> ApiResult<ChannelRef> {
    match to {
        Value::String(name) if name.trim().is_empty() => {
            Err(ApiError::bad_request("Channel name can't be empty"))
        }
        Value::String(name) if name.trim().len() == name.len() => Ok(ChannelRef::Name(name)),
        Value::String(name) => Ok(ChannelRef::Name(name.trim().to_owned())),
        Value::Number(n) => {
            n.as_u64().map(ChannelRef::Id).ok_or_else(|| ApiError::invalid("to", "not a channel"))
        }
        Value::Array(mut items) if items.len() == 1 => parse_channel_ref(items.swap_remove(0)),
        Value::Array(_) => Err(ApiError::bad_request("Cannot send to multiple channels")),
        _ => Err(ApiError::invalid("to", "not a channel name or ID")),
    }
}

/// `to` for a direct message: a list of ids or of emails (also a single id,
/// or a comma-separated email string, as older clients send).
fn parse_user_refs(to: &Value) -> ApiResult<Vec<UserRef>> {
    let refs: Vec<UserRef> = match to {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Number(n) => n.as_u64().map(UserRef::Id),
                Value::String(s) => Some(UserRef::Email(s.trim().to_owned())),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ApiError::invalid("to", "not a list of user IDs or emails"))?,
        Value::Number(n) => {
            vec![UserRef::Id(n.as_u64().ok_or_else(|| ApiError::invalid("to", "not a user ID"))?)]
        }
        Value::String(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| UserRef::Email(s.to_owned()))
            .collect(),
        _ => return Err(ApiError::invalid("to", "not a list of user IDs or emails")),
    };
    if refs.is_empty() {
        return Err(ApiError::bad_request("Message must have recipients"));
    }
    Ok(refs)
}

/// `POST /messages/render`: `content` rendered as a message from the caller
/// would be (mentions, channel links and emoji resolved as the caller may
/// see them), without sending anything: `{"rendered": html}`. Content is
/// truncated past `MAX_MESSAGE_LENGTH` as a send truncates it; empty
/// content renders as nothing.
pub fn render(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let content = call.params.required_string("content")?;
    if content.contains('\0') {
        return Err(ApiError::bad_request("Message must not contain null bytes"));
    }
    let rendered = if content.trim().is_empty() {
        String::new()
    } else {
        let content = normalize_content(&content)?;
        let url = Some(super::realm::realm_url(app, &call.realm));
        let visible = Visible::new(&app.state, call.caller()).with_realm_url(url);
        markdown::render_message(&content, &visible).html
    };
    Ok(crate::reply! { "rendered" => rendered })
}

/// Trims trailing whitespace, refuses empty or NUL-bearing content, and
/// truncates past `MAX_MESSAGE_LENGTH` characters the way Zulip does.
pub(super) fn normalize_content(content: &str) -> ApiResult<String> {
    let content = content.trim_end();
    if content.trim().is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    if content.contains('\0') {
        return Err(ApiError::bad_request("Message must not contain null bytes"));
    }
    const MARK: &str = "\n[message truncated]";
    if content.chars().count() > MAX_MESSAGE_LENGTH {
        let keep: String =
            content.chars().take(MAX_MESSAGE_LENGTH - MARK.chars().count()).collect();
        return Ok(keep + MARK);
    }
    Ok(content.to_owned())
}

/// Trims the topic, maps `(no topic)` and the realm's empty-topic display
/// name to the empty topic, refuses control characters, and truncates past
/// `MAX_TOPIC_LENGTH` characters with an ellipsis.
pub(super) fn normalize_topic(topic: &str, call: &Call) -> ApiResult<String> {
    normalize_topic_for(topic, &call.realm.settings.empty_topic_display_name)
}

/// `normalize_topic` given the realm's empty-topic display name.
pub(super) fn normalize_topic_for(
    topic: &str,
    empty_topic_display_name: &str,
) -> ApiResult<String> {
    let topic = topic.trim();
    if topic == "(no topic)" || topic == empty_topic_display_name {
        return Ok(String::new());
    }
    if topic.chars().any(|c| c.is_control()) {
        return Err(ApiError::bad_request("Invalid character in topic"));
    }
    if topic.chars().count() > MAX_TOPIC_LENGTH {
        let keep: String = topic.chars().take(MAX_TOPIC_LENGTH - 3).collect();
        return Ok(keep + "...");
    }
    Ok(topic.to_owned())
}

/// Zulip's heuristic when `read_by_sender` is omitted: messages from
/// interactive clients start read for their sender; messages an
/// integration sends with the user's key do not.
pub(super) fn default_read_by_sender(client: &str) -> bool {
    const INTERACTIVE: [&str; 10] = [
        "website",
        "zulipandroid",
        "zulipios",
        "zulipdesktop",
        "zulipmobile",
        "zulipelectron",
        "zulipterminal",
        "snipe",
        "ios",
        "android",
    ];
    const DESKTOP_APP: &[u8] = b"desktop app";
    INTERACTIVE.iter().any(|name| client.eq_ignore_ascii_case(name))
        || client.as_bytes().windows(DESKTOP_APP.len()).any(|w| w.eq_ignore_ascii_case(DESKTOP_APP))
}

/// `GET /messages/{message_id}`: one message the caller may read.
pub fn get_one(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let options = MessageOptions {
        apply_markdown: call.params.bool_or("apply_markdown", true)?,
        allow_empty_topic_name: call.params.bool_or("allow_empty_topic_name", false)?,
        client_gravatar: false,
    };
    let me = call.caller();
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let message = app.state.messages.get(&id).ok_or_else(invalid)?;
    let view = access::message_view(&app.state, me, &message).ok_or_else(invalid)?;
    call.sorted_reply = Some(one_message(&app.state, &call.realm, me, &message, view, options));
    Ok(Reply::new())
}

/// The reply of `GET /messages/{message_id}` (a spectator's too): the
/// message as `viewer` sees it, and its `raw_content`; written straight to
/// JSON text, as `GET /messages` is.
pub(super) fn one_message(
    state: &State,
    realm: &Realm,
    viewer: &User,
    message: &Message,
    view: MessageView,
    options: MessageOptions,
) -> SortedMembers {
    let mut reply = SortedMembers::reply(1024);
    let mut writer = crate::view::message::MessageWriter::new(state, realm, viewer, options);
    writer.write(reply.member("message"), message, view, &[]);
    reply.string("raw_content", message.content());
    reply
}

/// `DELETE /messages/{message_id}`: delete a message (see
/// `access::delete_refusal` for who may).
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let user = call.caller().clone();
    let now = entropy::now();
    app.committer.commit(|state| {
        let message = reactions::visible_message(state, &user, id)?;
        if let Some(why) = access::delete_refusal(state, &user, &message, now) {
            return Err(ApiError::bad_request(why));
        }
        Ok((Mutation::DeleteMessages { messages: vec![id], by: user.id }, ()))
    })?;
    Ok(reply! {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::build::NewChannel;
    use crate::state::Role;
    use crate::testkit::World;

    /// A public channel with this topics policy.
    fn channel(policy: TopicsPolicy) -> Channel {
        let channel = World::new().channel("", "c", false, &[]);
        Channel { topics_policy: policy, ..channel }
    }

    #[test]
    fn topics_policy_decides_on_the_empty_topic() {
        let inherit = TopicsPolicy::AllowEmptyTopic;
        let allowed =
            |policy, topic: &str| check_topic_policy(&channel(policy), inherit, topic).is_ok();
        assert!(allowed(TopicsPolicy::Inherit, "") && allowed(TopicsPolicy::Inherit, "t"));
        let strict = TopicsPolicy::DisableEmptyTopic;
        assert!(check_topic_policy(&channel(TopicsPolicy::Inherit), strict, "").is_err());
        assert!(check_topic_policy(&channel(TopicsPolicy::Inherit), strict, "t").is_ok());
        assert!(allowed(TopicsPolicy::AllowEmptyTopic, ""));
        assert!(!allowed(TopicsPolicy::DisableEmptyTopic, ""));
        assert!(allowed(TopicsPolicy::DisableEmptyTopic, "t"));
        assert!(allowed(TopicsPolicy::EmptyTopicOnly, ""));
        assert!(!allowed(TopicsPolicy::EmptyTopicOnly, "t"));
    }

    #[test]
    fn to_reads_as_json_or_string_does() {
        let cases = [
            "general",
            "Denmark",
            "general,x",
            "[1]",
            "[\"general\"]",
            "\"general\"",
            "5",
            " 5",
            "true",
            "false",
            "null",
            "nope",
            "tea",
            "{\"a\":1}",
            "[1,",
            "",
            "é",
            "hamlet@natter.test",
        ];
        for case in cases {
            let slow = Params::from_pairs([("to", case)]).json_or_string("to");
            let fast = to_param(&mut Params::from_pairs([("to", case)]));
            match (slow, fast) {
                (Ok(slow), Ok(fast)) => assert_eq!(slow, Some(fast), "{case:?}"),
                (Err(slow), Err(fast)) => assert_eq!(slow.msg, fast.msg, "{case:?}"),
                (slow, fast) => panic!("{case:?}: {slow:?} against {fast:?}"),
            }
        }
        let e = to_param(&mut Params::default()).unwrap_err();
        assert_eq!(e.msg, ApiError::missing("to").msg);
    }

    #[test]
    fn read_by_sender_heuristic() {
        assert!(default_read_by_sender("ZulipTerminal"));
        assert!(default_read_by_sender("website"));
        assert!(default_read_by_sender("Zulip Desktop App"));
        assert!(!default_read_by_sender("ZulipPython"));
        assert!(!default_read_by_sender(""));
    }

    /// A realm: owner, member, a bot owned by the member, a deactivated
    /// member; a public channel with the owner and member.
    fn send_world() -> (World, Vec<User>) {
        let mut w = World::new();
        let owner = w.user("", "o@t.test", Role::Owner);
        let member = w.user("", "m@t.test", Role::Member);
        let bot = w.bot("b@t.test", &member);
        let gone = w.user("", "d@t.test", Role::Member);
        let gone = w.deactivate(&gone);
        let new = NewChannel {
            name: "c",
            description: "",
            invite_only: false,
            creator: Some(owner.id),
            subscribers: &[owner.id, member.id],
        };
        w.add_channel("", &new);
        (w, vec![owner, member, bot, gone])
    }

    fn direct(to: &[&User]) -> Target {
        Target::Direct(to.iter().map(|u| UserRef::Id(u.id.0)).collect())
    }

    #[test]
    fn direct_message_refusals() {
        let (w, users) = send_world();
        let (owner, member, bot, gone) = (&users[0], &users[1], &users[2], &users[3]);
        assert!(resolve_target(&w.state, member, &direct(&[owner])).is_ok());
        let e = resolve_target(&w.state, member, &direct(&[gone])).unwrap_err();
        assert_eq!(e.msg, "'d@t.test' is no longer using Zulip.");
        // Only administrators may take part: a member alone is refused,
        // except towards a bot or an administrator, or to themselves.
        let mut realm = w.state.realm_by_subdomain("").unwrap();
        realm.settings.direct_message_permission_group = Some(crate::state::GroupSetting::Group(
            realm.system_groups.id(crate::state::SystemGroup::Administrators),
        ));
        w.state.realms.insert(realm.id, realm);
        let other = User { id: crate::state::UserId(gone.id.0), is_active: true, ..gone.clone() };
        w.state.users.insert(other.id, other.clone());
        let e = resolve_target(&w.state, member, &direct(&[&other])).unwrap_err();
        assert_eq!(e.msg, "You do not have permission to send direct messages to this recipient.");
        assert!(resolve_target(&w.state, member, &direct(&[bot])).is_ok());
        assert!(resolve_target(&w.state, member, &direct(&[owner])).is_ok());
        assert!(resolve_target(&w.state, member, &direct(&[member])).is_ok());
    }

    /// A message built for a topic and client already stored holds their
    /// shared copies, so storing it keeps the very message the log
    /// recorded: no copy of it (nor of its names) per send.
    #[test]
    fn a_message_is_stored_as_built_with_the_shared_names() {
        let (mut w, users) = send_world();
        let member = &users[1];
        let topic = |m: &Message| match &m.destination {
            Destination::Channel { topic, .. } => Arc::clone(topic),
            Destination::Direct { .. } => unreachable!(),
        };
        let mut built = Vec::new();
        for _ in 0..2 {
            let target =
                Target::Channel { channel: ChannelRef::Name("c".into()), topic: "lunch".into() };
            // A new `Arc` for the client each time, as each connection has.
            let client: Arc<str> = Arc::from("ZulipPython");
            let draft = Draft::new(&w.state, member, target, "hi".into(), false, client, None);
            let new = draft.build(&w.state, member).unwrap();
            let message = Arc::clone(&new.message);
            w.apply(Mutation::SendMessage(new));
            let stored = w.state.messages.read(&message.id, Arc::clone).unwrap();
            assert!(Arc::ptr_eq(&stored, &message), "the stored message is the one built");
            built.push(message);
        }
        assert!(Arc::ptr_eq(&built[0].client, &built[1].client));
        assert!(Arc::ptr_eq(&topic(&built[0]), &topic(&built[1])));
    }

    #[test]
    fn archived_channels_refuse() {
        let (w, users) = send_world();
        let target = Target::Channel { channel: ChannelRef::Name("c".into()), topic: "t".into() };
        assert!(resolve_target(&w.state, &users[1], &target).is_ok());
        let channel = w.state.channel_by_name(users[1].realm, "c").unwrap();
        w.state.channels.update(&channel.id, |c| c.is_archived = true);
        let e = resolve_target(&w.state, &users[1], &target).unwrap_err();
        assert_eq!(e.msg, "Not authorized to send to channel 'c'");
    }
}
