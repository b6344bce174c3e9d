//! The system bots' direct messages when an invited user joins
//! (`POST /registration/{key}`), as Zulip sends them:
//!
//! - to the inviter, when the invitation has `notify_referrer_on_join` and
//!   the inviter is still active, from the Notification Bot:
//!   "@_**Name|id** accepted your invitation to join Zulip!";
//! - to the new user, when the invitation carries a non-empty
//!   `welcome_message_custom_text`, from the Welcome Bot: that text (a
//!   separate message, as Zulip sends the custom text apart from its
//!   generic onboarding message, which natter does not send).
//!
//! They are logged in the same record as the account, so a crash never
//! creates one without the other. A realm without its system bots sends
//! nothing.

use super::mentions::Visible;
use crate::markdown::{self, Resolver};
use crate::mutation::{Mutation, NewMessage};
use crate::state::personal::Invite;
use crate::state::system_bots::SystemBot;
use crate::state::{Destination, IdKind, Message, MessageId, RecipientId, State, User, UserId};

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
    let first_id = state.ids.peek(IdKind::Message);
    let mut next_recipient = state.ids.peek(IdKind::Recipient);
    out.into_iter()
        .enumerate()
        .map(|(k, (bot, to, content))| {
            let mut participants = vec![bot.id, to];
            participants.sort();
            let recipient = state.direct_recipients.get(&participants).unwrap_or_else(|| {
                next_recipient += 1;
                RecipientId(next_recipient - 1)
            });
            let resolver = Joining { visible: Visible::new(state, &bot), user };
            let rendered = markdown::render_message(&content, &resolver);
            let message = Message {
                id: MessageId(first_id + k as u64),
                realm: user.realm,
                sender: bot.id,
                recipient,
                destination: Destination::Direct { participants },
                content,
                rendered_content: rendered.html,
                timestamp: now,
                client: "Internal".into(),
                is_me_message: false,
                reactions: Default::default(),
                edit_history: Default::default(),
                last_edit_timestamp: None,
                last_moved_timestamp: None,
            };
            Mutation::SendMessage(NewMessage {
                message,
                read_by_sender: true,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            })
        })
        .collect()
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
