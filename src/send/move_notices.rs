//! The Notification Bot's notices about a move (`PATCH /messages/{id}`),
//! as Zulip posts them: built under the writer lock and logged in the same
//! record as the move, so a crash never keeps one without the other.
//!
//! - Resolving or unresolving a topic (only the `✔ ` prefix changes, no
//!   content or channel change) posts "@_**Name|id** has marked this topic
//!   as resolved." (or "unresolved.") to the topic. It starts read for the
//!   editor and for every subscriber except those whose
//!   `resolved_topic_notice_auto_read_policy` is `never`, or
//!   `except_followed` (the default) while they follow the topic. Undoing
//!   within `RESOLVE_UNDO_GRACE_SECONDS` of the previous notice, when that
//!   notice is still the topic's last message, deletes it instead.
//! - `send_notification_to_new_thread` (default true; not for a resolve):
//!   "This topic was moved here from #**old>topic** by @_**Name|id**." when
//!   the editor moved every message of the topic they can see and the
//!   destination had none they can see; otherwise "[A message](link) was
//!   moved here from …" or "N messages were moved here from …".
//! - `send_notification_to_old_thread` (default false): "This topic was
//!   moved to #**new>topic** by …", or "A message was moved from this topic
//!   to …" / "N messages were moved from this topic to …".
//!
//! The notices are ordinary channel messages from the realm's Notification
//! Bot, rendered by the Markdown pipeline, and start read for the editor.

use crate::markdown;
use crate::mutation::{Mutation, PropagateMode};
use crate::send::links::{escape_link_text, topic_url};
use crate::send::mentions::Visible;
use crate::state::access::message_view;
use crate::state::system_bots::SystemBot;
use crate::state::{Channel, Destination, MessageId, State, User, UserId};

/// A resolve undone within this many seconds of its notice deletes the
/// notice instead of posting another (Zulip's
/// `RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS`).
pub const RESOLVE_UNDO_GRACE_SECONDS: i64 = 60;

/// The prefix of a resolved topic.
pub const RESOLVED_TOPIC_PREFIX: &str = "✔ ";

/// Whether `old` → `new` marks the topic resolved: the new name is the old
/// one with the prefix.
pub fn resolves(old: &str, new: &str) -> bool {
    !old.starts_with(RESOLVED_TOPIC_PREFIX) && new.strip_prefix(RESOLVED_TOPIC_PREFIX) == Some(old)
}

/// Whether `old` → `new` marks the topic unresolved: the old name is the
/// new one with the prefix (repeated check marks stripped).
pub fn unresolves(old: &str, new: &str) -> bool {
    old.starts_with(RESOLVED_TOPIC_PREFIX)
        && !new.starts_with(RESOLVED_TOPIC_PREFIX)
        && old.trim_start_matches(['✔', ' ']) == new
}

/// One move, as the notices need it (checked and allowed already).
pub struct Move<'a> {
    /// Who moves.
    pub editor: &'a User,
    /// The message the request named.
    pub message: MessageId,
    /// Where the messages were.
    pub from: &'a Channel,
    /// Their topic there.
    pub from_topic: &'a str,
    /// Where they go (the same channel for a topic move).
    pub to: &'a Channel,
    /// Their new topic.
    pub to_topic: &'a str,
    /// Every message that moves, ascending.
    pub moved: &'a [MessageId],
    /// The request's propagate mode.
    pub mode: PropagateMode,
    /// The content changes too.
    pub content_edited: bool,
    /// `send_notification_to_old_thread`.
    pub notify_old: bool,
    /// `send_notification_to_new_thread`.
    pub notify_new: bool,
    /// UNIX seconds of the edit.
    pub now: i64,
    /// The realm's URL (for the link to a moved message).
    pub realm_url: &'a str,
}

impl Move<'_> {
    fn channel_edited(&self) -> bool {
        self.from.id != self.to.id
    }

    fn topic_edited(&self) -> bool {
        self.from_topic != self.to_topic
    }
}

/// The mutations that post (or, for an undone resolve, delete) the
/// notices of `m`, in Zulip's order: resolve notice, new thread, old
/// thread. Empty when the realm has no Notification Bot.
pub fn notices(state: &State, m: &Move<'_>) -> Vec<Mutation> {
    let Some(bot) = state.system_bot(m.editor.realm, SystemBot::Notification) else {
        return Vec::new();
    };
    // (channel, topic, content, read by), posted in this order.
    let mut posts: Vec<(&Channel, &str, String, Vec<UserId>)> = Vec::new();
    let mut out = Vec::new();
    let user = format!("@_**{}|{}**", m.editor.full_name, m.editor.id.0);
    let resolved = resolves(m.from_topic, m.to_topic);
    let unresolved = unresolves(m.from_topic, m.to_topic);
    let resolve_only = m.topic_edited() && !m.channel_edited() && !m.content_edited;
    let moved_all = moved_all_visible(state, m);
    if resolve_only && (resolved || unresolved) {
        match undoable_notice(state, m, bot.id) {
            Some(previous) => {
                out.push(Mutation::DeleteMessages { messages: vec![previous], by: m.editor.id })
            }
            None => {
                let what = if resolved { "resolved" } else { "unresolved" };
                let content = format!("{user} has marked this topic as {what}.");
                posts.push((m.to, m.to_topic, content, resolve_readers(state, m, moved_all)));
            }
        }
    }
    let count = m.moved.len();
    let general_chat = state
        .realms
        .read(&m.editor.realm, |r| r.settings.empty_topic_display_name.clone())
        .unwrap_or_default();
    let old_location = topic_link(m.from, m.from_topic, &general_chat);
    let new_location = topic_link(m.to, m.to_topic, &general_chat);
    if m.notify_new && (m.channel_edited() || (m.topic_edited() && !resolved && !unresolved)) {
        let content = if moved_all && !has_visible_messages(state, m, m.to, m.to_topic) {
            format!("This topic was moved here from {old_location} by {user}.")
        } else if count == 1 {
            let link = message_link(m);
            format!("[A message]({link}) was moved here from {old_location} by {user}.")
        } else {
            format!("{count} messages were moved here from {old_location} by {user}.")
        };
        posts.push((m.to, m.to_topic, content, vec![m.editor.id]));
    }
    if m.notify_old {
        let content = if moved_all {
            format!("This topic was moved to {new_location} by {user}.")
        } else if count == 1 {
            format!("A message was moved from this topic to {new_location} by {user}.")
        } else {
            format!("{count} messages were moved from this topic to {new_location} by {user}.")
        };
        posts.push((m.from, m.from_topic, content, vec![m.editor.id]));
    }
    let first = state.ids.peek(crate::state::IdKind::Message);
    for (k, (channel, topic, content, read_by)) in posts.into_iter().enumerate() {
        let id = MessageId(first + k as u64);
        out.push(notice(state, &bot, m, channel, topic, content, id, read_by));
    }
    out
}

/// A notice from `bot` to `channel` > `topic`, rendered as the editor's
/// Markdown would be (their mention and the channel links resolve).
#[allow(clippy::too_many_arguments)]
fn notice(
    state: &State,
    bot: &User,
    m: &Move<'_>,
    channel: &Channel,
    topic: &str,
    content: String,
    id: MessageId,
    read_by: Vec<UserId>,
) -> Mutation {
    let rendered = markdown::render_message(&content, &Visible::new(state, m.editor));
    let destination = Destination::Channel { channel: channel.id, topic: topic.into() };
    let message = crate::send::bot_messages::posted(
        id,
        bot,
        channel.recipient,
        destination,
        content,
        rendered.html,
        m.now,
    );
    Mutation::SendNotice { message, read_by }
}

/// The ids of `channel` > `topic` (case-insensitive), ascending.
fn topic_ids(state: &State, channel: &Channel, topic: &str) -> Vec<MessageId> {
    state.topic_ids(&(channel.id, topic.to_lowercase())).iter().collect()
}

/// Whether the editor can see a message of `channel` > `topic` that does
/// not move.
fn has_visible_messages(state: &State, m: &Move<'_>, channel: &Channel, topic: &str) -> bool {
    // `moved` is ascending: a binary search keeps 10,000-message moves linear-ish.
    let moves = |id: &MessageId| m.moved.binary_search(id).is_ok();
    topic_ids(state, channel, topic).into_iter().filter(|id| !moves(id)).any(|id| {
        state
            .messages
            .get(&id)
            .is_some_and(|message| message_view(state, m.editor, &message).is_some())
    })
}

/// Whether the editor moved every message of the old topic they can see
/// (always so for `change_all`).
fn moved_all_visible(state: &State, m: &Move<'_>) -> bool {
    m.mode == PropagateMode::ChangeAll || !has_visible_messages(state, m, m.from, m.from_topic)
}

/// The previous resolve notice, if undoing now should delete it: the
/// topic's last message after the move, from the Notification Bot, a
/// resolve notice, at most `RESOLVE_UNDO_GRACE_SECONDS` old.
fn undoable_notice(state: &State, m: &Move<'_>, bot: UserId) -> Option<MessageId> {
    let last =
        topic_ids(state, m.to, m.to_topic).into_iter().chain(m.moved.iter().copied()).max()?;
    let message = state.messages.get(&last)?;
    let is_notice = message.sender == bot
        && (message.content().ends_with(" has marked this topic as resolved.")
            || message.content().ends_with(" has marked this topic as unresolved."));
    (is_notice && m.now - message.timestamp <= RESOLVE_UNDO_GRACE_SECONDS).then_some(last)
}

/// Who gets the resolve notice as read: everyone the channel delivers it
/// to, except humans whose `resolved_topic_notice_auto_read_policy` keeps
/// it unread (`never`, or `except_followed` while following the topic);
/// the editor always.
fn resolve_readers(state: &State, m: &Move<'_>, moved_all: bool) -> Vec<UserId> {
    // Zulip looks at who followed the original topic when the whole topic
    // moved, else at the destination's followers.
    let followed_topic = if moved_all { m.from_topic } else { m.to_topic };
    let key = (m.to.id, followed_topic.to_lowercase());
    let follows = |user: UserId| {
        state.settings.user_topics.read(&user, |t| t.get(&key).map(|t| t.policy)).flatten()
            == Some(FOLLOWED)
    };
    let keeps_unread = |user: UserId| {
        let Some(account) = state.users.get(&user) else { return false };
        if account.is_bot() || !account.is_active {
            return false;
        }
        let policy = state.settings.of(user).get("resolved_topic_notice_auto_read_policy");
        match policy {
            crate::state::settings::SettingValue::Str(p) if p == "never" => true,
            crate::state::settings::SettingValue::Str(p) if p == "except_followed" => follows(user),
            _ => false,
        }
    };
    let mut readers: Vec<UserId> =
        m.to.subscribers
            .iter()
            .copied()
            .filter(|u| *u == m.editor.id || !keeps_unread(*u))
            .collect();
    if !readers.contains(&m.editor.id) {
        readers.push(m.editor.id);
    }
    readers
}

/// The topic-visibility policy value of a followed topic.
const FOLLOWED: u8 = 3;

/// Zulip's link syntax for a channel's topic: `#**channel>topic**`, or a
/// Markdown link where the names would break that syntax, or for the
/// empty topic (shown as the realm's `general_chat` name).
pub fn topic_link(channel: &Channel, topic: &str, general_chat: &str) -> String {
    if topic.is_empty() || breaks_link_syntax(&channel.name) || breaks_link_syntax(topic) {
        let shown = if topic.is_empty() { general_chat } else { topic };
        format!(
            "[#{} > {}]({})",
            escape_link_text(&channel.name),
            escape_link_text(shown),
            topic_url(channel, topic)
        )
    } else {
        format!("#**{}>{}**", channel.name, topic)
    }
}

/// The absolute link to the named message in its new place.
fn message_link(m: &Move<'_>) -> String {
    format!("{}/{}/near/{}", m.realm_url, topic_url(m.to, m.to_topic), m.message.0)
}

/// Characters that end or confuse `#**…>…**` (as Zulip's check): `*`,
/// a backtick, `>`, `$$`, or an HTML entity.
fn breaks_link_syntax(name: &str) -> bool {
    if name.contains(['*', '`', '>']) || name.contains("$$") {
        return true;
    }
    name.match_indices('&').any(|(i, _)| {
        let rest = &name[i + 1..];
        let letters = rest.bytes().take_while(u8::is_ascii_lowercase).count();
        letters > 0 && rest.as_bytes().get(letters) == Some(&b';')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_toggles_follow_zulips_rule() {
        assert!(resolves("bug", "✔ bug"));
        assert!(!resolves("✔ bug", "✔ ✔ bug"));
        assert!(!resolves("bug", "✔ other"));
        assert!(unresolves("✔ bug", "bug"));
        assert!(unresolves("✔ ✔ bug", "bug"));
        assert!(!unresolves("bug", "✔ bug"));
        assert!(!unresolves("✔ bug", "other"));
    }

    #[test]
    fn topic_links_fall_back_to_markdown_links() {
        let mut w = crate::testkit::World::new();
        let plain = w.channel("", "Denmark", false, &[]);
        let starry = w.channel("", "a*b", false, &[]);
        assert_eq!(topic_link(&plain, "plans", "general chat"), "#**Denmark>plans**");
        let id = plain.id.0;
        assert_eq!(
            topic_link(&plain, "", "general chat"),
            format!("[#Denmark > general chat](#narrow/channel/{id}-Denmark/topic/)")
        );
        let id = starry.id.0;
        assert_eq!(
            topic_link(&starry, "x > y", "general chat"),
            format!("[#a&#42;b > x &gt; y](#narrow/channel/{id}-a.2Ab/topic/x.20.3E.20y)")
        );
    }

    #[test]
    fn names_that_break_the_link_syntax_get_a_markdown_link() {
        assert!(!breaks_link_syntax("plans for v1.0"));
        assert!(breaks_link_syntax("a*b"));
        assert!(breaks_link_syntax("x > y"));
        assert!(breaks_link_syntax("cost $$"));
        assert!(breaks_link_syntax("a &amp; b"));
        assert!(!breaks_link_syntax("a & b"));
        assert_eq!(escape_link_text("a*b>c"), "a&#42;b&gt;c");
    }
}
