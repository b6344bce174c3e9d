//! The system bots' direct messages (`state::system_bots`), each logged in
//! the same record as the change that causes it, so a crash never keeps
//! one without the other. A realm without its system bots sends nothing.
//!
//! When an invited user joins (`POST /registration/{key}`), as Zulip:
//! - to the inviter, when the invitation has `notify_referrer_on_join` and
//!   the inviter is still active, from the Notification Bot:
//!   "@_**Name|id** accepted your invitation to join Zulip!";
//! - to the new user, when the invitation carries a non-empty
//!   `welcome_message_custom_text`, from the Welcome Bot: that text (a
//!   separate message, as Zulip sends the custom text apart from its
//!   generic onboarding message, which natter does not send).
//!
//! When an incoming webhook names a channel that does not exist, the
//! Notification Bot tells the webhook bot's owner (`to_bot_owner`).
//!
//! When a scheduled message cannot be delivered, the Notification Bot tells
//! its (active) owner why, in Zulip's words: "The message you scheduled for
//! <time:…> was not sent because of the following error:", the reason
//! quoted, and a link to the scheduled messages. natter's Markdown has no
//! global-time syntax, so the time is rendered here as Zulip renders it
//! (`<time datetime="…">…</time>`).
//!
//! A reminder (`POST /reminders`) is written when it is created, in
//! Zulip's words ("You requested a reminder for …", the note quoted, then
//! the message's sender silently mentioned, a link to the message and
//! its content in a quote block, or "sent a poll" / "sent a todo list"),
//! and delivered by the Notification Bot to its owner when due. The link
//! to a channel message is the Markdown link Zulip falls back to
//! (`[#channel > topic @ 💬](…/near/id)`), which natter's Markdown
//! renders, rather than Zulip's `#**channel>topic@id**` syntax.

use crate::markdown::{self, Resolver};
use crate::mutation::{Mutation, NewMessage};
use crate::send::mentions::Visible;
use crate::state::personal::Invite;
use crate::state::system_bots::SystemBot;
use crate::state::{
    Destination, IdKind, Message, MessageId, MessageParts, RecipientId, State, User, UserId,
};

/// The messages for `user` (being created in the same record) joining
/// through `invite`.
pub fn on_join(state: &State, invite: &Invite, user: &User, now: i64) -> Vec<Mutation> {
    let mut out: Vec<(User, UserId, String)> = Vec::new();
    let referrer = state.users.get(&invite.inviter).filter(|u| u.is_active && !u.is_bot());
    let notification_bot = state.system_bot(user.realm, SystemBot::Notification);
    if let (true, Some(referrer), Some(bot)) =
        (invite.notify_referrer_on_join, referrer, notification_bot)
    {
        let text = format!(
            "@_**{}|{}** accepted your invitation to join Zulip!",
            user.full_name, user.id.0
        );
        out.push((bot, referrer.id, text));
    }
    let welcome = invite.welcome_message_custom_text.as_deref().map(str::trim);
    if let (Some(text), Some(bot)) =
        (welcome.filter(|t| !t.is_empty()), state.system_bot(user.realm, SystemBot::Welcome))
    {
        out.push((bot, user.id, text.to_owned()));
    }
    let mut next = Next::of(state);
    out.into_iter()
        .map(|(bot, to, content)| {
            let resolver = Joining { visible: Visible::new(state, &bot), user };
            let html = markdown::render_message(&content, &resolver).html;
            direct(state, &mut next, &bot, to, content, html, now)
        })
        .collect()
}

/// The Notification Bot's message to the owner of a scheduled message that
/// failed with `reason`, if the realm has the bot and the owner is active.
pub fn scheduled_failure(
    state: &State,
    owner: &User,
    deliver_at: i64,
    reason: &str,
    now: i64,
) -> Option<Mutation> {
    let bot = state.system_bot(owner.realm, SystemBot::Notification)?;
    if !owner.is_active {
        return None;
    }
    // Zulip writes the time as Python prints an aware datetime.
    let iso = crate::view::time::iso8601(deliver_at);
    let shown = iso.replacen('T', " ", 1);
    let quoted: String = reason.lines().map(|l| format!("> {l}\n")).collect();
    let template = |time: &str| {
        format!(
            "The message you scheduled for {time}  was not sent because of the following \
             error:\n\n{quoted}\n[View scheduled messages](#scheduled)"
        )
    };
    let content = template(&format!("<time:{shown}>"));
    // Rendered with a placeholder where the time goes, then the time
    // element Zulip's Markdown makes of `<time:…>`.
    const PLACEHOLDER: &str = "NATTERTIMEPLACEHOLDER";
    let visible = Visible::new(state, &bot);
    let html = markdown::render_message(&template(PLACEHOLDER), &visible).html;
    let utc = iso.strip_suffix("+00:00").map_or(iso.clone(), |t| format!("{t}Z"));
    let element = format!("<time datetime=\"{utc}\">{}</time>", markdown::escape_html(&shown));
    let html = html.replacen(PLACEHOLDER, &element, 1);
    Some(direct(state, &mut Next::of(state), &bot, owner.id, content, html, now))
}

/// Longest reminder note, in characters (Zulip's
/// `MAX_REMINDER_NOTE_LENGTH`).
pub const MAX_REMINDER_NOTE_LENGTH: usize = 1000;

/// The text of `owner`'s reminder about `message` (which they may read),
/// with an optional `note` (already trimmed), for a realm served at
/// `realm_url`; at most `max_length` characters (the quoted message is
/// cut to fit).
pub fn reminder_content(
    state: &State,
    realm_url: &str,
    message: &Message,
    note: Option<&str>,
    max_length: usize,
) -> String {
    let noted = |text: String| match note {
        Some(note) => format!("{text}. Note:\n > {note}"),
        None => format!("{text}."),
    };
    let (mut content, link) = match message_link(state, realm_url, message) {
        (Some(pretty), url) => (noted(format!("You requested a reminder for {pretty}")), url),
        (None, url) => {
            (noted("You requested a reminder for the following direct message".into()), url)
        }
    };
    let mention = silent_mention(state, message.sender);
    content.push_str("\n\n");
    let text = message.content();
    let widget = state.widgets.widget_type(message.id);
    if widget.as_deref() == Some("poll") {
        content.push_str(&format!("{mention} [sent]({link}) a poll."));
    } else if widget.as_deref() == Some("todo") {
        content.push_str(&format!("{mention} [sent]({link}) a todo list."));
    } else {
        content.push_str(&format!("{mention} [said]({link}):\n"));
        let fence = unused_fence(text);
        let frame = content.chars().count() + 2 * fence.len() + "quote\n\n".len();
        let room = max_length.saturating_sub(frame);
        content.push_str(&format!("{fence}quote\n{}\n{fence}", truncate(text, room)));
    }
    content
}

/// The absolute link to `message`, and for a channel message the
/// Markdown link Zulip falls back to for it (`[#channel > topic @ 💬](…)`).
fn message_link(state: &State, realm_url: &str, message: &Message) -> (Option<String>, String) {
    match &message.destination {
        Destination::Channel { channel, topic } => {
            let channel = state.channels.get(channel).expect("a stored message's channel");
            let url = format!(
                "{realm_url}/{}/near/{}",
                crate::send::links::topic_url(&channel, topic),
                message.id.0
            );
            let escape = crate::send::links::escape_link_text;
            let pretty = format!("[#{} > {} @ 💬]({url})", escape(&channel.name), escape(topic));
            (Some(pretty), url)
        }
        Destination::Direct { participants } => {
            let ids: Vec<String> = participants.iter().map(|u| u.0.to_string()).collect();
            (None, format!("{realm_url}/#narrow/dm/{}/near/{}", ids.join(","), message.id.0))
        }
    }
}

/// Zulip's silent mention of a user: `@_**Name|id**`.
fn silent_mention(state: &State, user: UserId) -> String {
    let name = state.users.get(&user).map(|u| u.full_name).unwrap_or_default();
    format!("@_**{}|{}**", name, user.0)
}

/// Zulip's kinds of message report (`server_report_message_types`): key
/// and name, in Zulip's order.
pub const REPORT_TYPES: [(&str, &str); 5] = [
    ("spam", "Spam"),
    ("harassment", "Harassment"),
    ("inappropriate", "Inappropriate content"),
    ("norms", "Violates community norms"),
    ("other", "Other reason"),
];

/// Longest explanation of a report, in characters (Zulip's
/// `MAX_REPORT_MESSAGE_EXPLANATION_LENGTH`).
pub const MAX_REPORT_EXPLANATION_LENGTH: usize = 1000;

/// The Notification Bot's report of `message` by `reporter` to the realm's
/// moderation request channel, in Zulip's words: who reported whose
/// message (and to whom, for a direct message) when, the reason and
/// explanation quoted, and the message in a spoiler block; in the topic
/// "<sender> moderation" (the empty topic in an empty-topic-only
/// channel). `None` when the realm has no such bot or channel.
#[allow(clippy::too_many_arguments)]
pub fn report(
    state: &State,
    realm_url: &str,
    reporter: &User,
    message: &Message,
    report_type: &str,
    description: &str,
    max_length: usize,
    now: i64,
) -> Option<Mutation> {
    let bot = state.system_bot(reporter.realm, SystemBot::Notification)?;
    let channel = state.features.of(reporter.realm).moderation_request_channel?;
    let channel = state.channels.get(&channel)?;
    let reason = REPORT_TYPES.iter().find(|(key, _)| *key == report_type)?.1;
    let reported = silent_mention(state, message.sender);
    let reporting = silent_mention(state, reporter.id);
    let to_whom = match &message.destination {
        Destination::Channel { .. } => String::new(),
        Destination::Direct { participants } if participants.len() <= 2 => {
            if message.sender != reporter.id {
                String::new()
            } else {
                // Reporting one's own direct message: say to whom.
                let other = participants.iter().find(|u| **u != reporter.id);
                format!(" to {}", silent_mention(state, *other.unwrap_or(&reporter.id)))
            }
        }
        Destination::Direct { participants } => {
            let others: Vec<String> = participants
                .iter()
                .filter(|u| **u != message.sender)
                .map(|u| silent_mention(state, *u))
                .collect();
            format!(" to {}", mentions_for_display(&others))
        }
    };
    let (pretty, url) = message_link(state, realm_url, message);
    let original = match pretty {
        Some(pretty) => format!("Original message at {pretty}"),
        None => format!("[Original message]({url})"),
    };
    let room = max_length.saturating_sub(MAX_REPORT_EXPLANATION_LENGTH + 500);
    let quoted = truncate(message.content(), room);
    let fence = unused_fence(&quoted);
    let template = |time: &str| {
        format!(
            "{reporting} reported a message sent by {reported}{to_whom} at {time}.\n\
             ```quote\n**{reason}**. {description}\n```\n\n\
             {fence} spoiler {original}\n{quoted}\n{fence}\n"
        )
    };
    let (content, html) = with_global_time(state, &bot, template, message.timestamp);
    let topic = if channel.topics_policy == crate::state::TopicsPolicy::EmptyTopicOnly {
        String::new()
    } else {
        let sender = state.users.get(&message.sender).map(|u| u.full_name).unwrap_or_default();
        format!("{sender} moderation")
    };
    let destination = Destination::Channel { channel: channel.id, topic: topic.into() };
    let id = MessageId(state.ids.peek(IdKind::Message));
    Some(Mutation::SendMessage(posted(
        id,
        &bot,
        channel.recipient,
        destination,
        content,
        html,
        now,
    )))
}

/// Names joined as Zulip lists them: "a", "a and b", "a, b, and c".
fn mentions_for_display(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// A message whose text holds a global time (`<time:…>`, Zulip's
/// `datetime_to_global_time`) for `at`: the content with it, and the HTML
/// with the element Zulip's Markdown makes of it (natter's Markdown has
/// no global-time syntax, so it is rendered around a placeholder).
fn with_global_time(
    state: &State,
    bot: &User,
    template: impl Fn(&str) -> String,
    at: i64,
) -> (String, String) {
    const PLACEHOLDER: &str = "NATTERTIMEPLACEHOLDER";
    let iso = crate::view::time::iso8601(at);
    let content = template(&format!("<time:{iso}>"));
    let html = markdown::render_message(&template(PLACEHOLDER), &Visible::new(state, bot)).html;
    let utc = iso.strip_suffix("+00:00").map_or(iso.clone(), |t| format!("{t}Z"));
    let element = format!("<time datetime=\"{utc}\">{}</time>", markdown::escape_html(&iso));
    (content, html.replacen(PLACEHOLDER, &element, 1))
}

/// A run of backticks longer than any in `text` (at least three).
fn unused_fence(text: &str) -> String {
    let mut longest = 0;
    for line in text.lines() {
        let run = line.trim_start().bytes().take_while(|b| *b == b'`').count();
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// `text` cut to at most `max` characters, ending with Zulip's
/// "[message truncated]" marker when cut.
fn truncate(text: &str, max: usize) -> String {
    const MARK: &str = "\n[message truncated]";
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(MARK.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(MARK);
    out
}

/// The Notification Bot's message delivering a reminder's `content` to
/// its owner, rendered now; `None` when the realm has no such bot or the
/// owner is no longer active.
pub fn reminder(state: &State, owner: &User, content: &str, now: i64) -> Option<Mutation> {
    let bot = state.system_bot(owner.realm, SystemBot::Notification)?;
    if !owner.is_active {
        return None;
    }
    let html = render_as_notification_bot(state, &bot, content);
    Some(direct(state, &mut Next::of(state), &bot, owner.id, content.to_owned(), html, now))
}

/// `content` rendered as `bot` sees the realm.
pub fn render_as_notification_bot(state: &State, bot: &User, content: &str) -> String {
    markdown::render_message(content, &Visible::new(state, bot)).html
}

/// The Notification Bot's direct message `content` to `owner` about one of
/// their bots (an incoming webhook that named a missing channel), if the
/// realm has the bot and the owner is active.
pub fn to_bot_owner(state: &State, owner: &User, content: &str, now: i64) -> Option<Mutation> {
    let bot = state.system_bot(owner.realm, SystemBot::Notification)?;
    if !owner.is_active {
        return None;
    }
    let html = render_as_notification_bot(state, &bot, content);
    Some(direct(state, &mut Next::of(state), &bot, owner.id, content.to_owned(), html, now))
}

/// The next free message and recipient ids while building several
/// messages for one record.
struct Next {
    message: u64,
    recipient: u64,
}

impl Next {
    fn of(state: &State) -> Next {
        Next {
            message: state.ids.peek(IdKind::Message),
            recipient: state.ids.peek(IdKind::Recipient),
        }
    }
}

/// A direct message from `bot` to `to`, already rendered.
fn direct(
    state: &State,
    next: &mut Next,
    bot: &User,
    to: UserId,
    content: String,
    html: String,
    now: i64,
) -> Mutation {
    let mut participants = vec![bot.id, to];
    participants.sort();
    let recipient = state.direct_recipients.get(&participants).unwrap_or_else(|| {
        next.recipient += 1;
        RecipientId(next.recipient - 1)
    });
    next.message += 1;
    let destination = Destination::Direct { participants: participants.into() };
    let id = MessageId(next.message - 1);
    Mutation::SendMessage(posted(id, bot, recipient, destination, content, html, now))
}

/// The bot's view of the realm plus the account being created (not in
/// state yet), so the inviter's notice can mention it.
struct Joining<'a> {
    visible: Visible<'a>,
    user: &'a User,
}

impl Resolver for Joining<'_> {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        self.visible.user_by_name(name)
    }

    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        if id == self.user.id.0 {
            return Some((id, self.user.full_name.clone()));
        }
        self.visible.user_by_id(id)
    }

    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        self.visible.group_by_name(name)
    }

    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        self.visible.channel_by_name(name)
    }
}

/// A message the server posts as `sender` (a system bot, or the acting
/// user where a realm has none) because of some change: already rendered,
/// client "Internal", read by its sender, delivered as any message.
pub fn posted(
    id: MessageId,
    sender: &User,
    recipient: RecipientId,
    destination: Destination,
    content: String,
    html: String,
    now: i64,
) -> NewMessage {
    let message = Message::from(MessageParts {
        id,
        realm: sender.realm,
        sender: sender.id,
        recipient,
        destination,
        content,
        rendered_content: html,
        timestamp: now,
        client: "Internal".into(),
        is_me_message: false,
    });
    NewMessage {
        message: std::sync::Arc::new(message),
        read_by_sender: true,
        mentioned: Vec::new(),
        channel_wildcard: false,
        topic_wildcard: Vec::new(),
    }
}
