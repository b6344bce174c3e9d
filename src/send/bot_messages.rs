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

/// The Notification Bot's direct message `content` to `owner` about one of
/// their bots (an incoming webhook that named a missing channel), if the
/// realm has the bot and the owner is active.
pub fn to_bot_owner(state: &State, owner: &User, content: String, now: i64) -> Option<Mutation> {
    let bot = state.system_bot(owner.realm, SystemBot::Notification)?;
    if !owner.is_active {
        return None;
    }
    let html = markdown::render_message(&content, &Visible::new(state, &bot)).html;
    Some(direct(state, &mut Next::of(state), &bot, owner.id, content, html, now))
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
