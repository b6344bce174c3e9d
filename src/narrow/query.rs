//! The `GET /messages` query engine: the messages of a narrow in an
//! anchored window, as one viewer may see them.
//!
//! Which messages to look at comes from the indexes — one message, a
//! topic, a channel or conversation (`by_recipient`), several web-public
//! channels merged, or the viewer's own delivered, unread or starred
//! messages — walked outward from the anchor in batches, so a narrow that
//! an index answers never scans unrelated messages and the shard locks are
//! held only while ids are copied out. Each candidate is then matched
//! against the narrow and checked with `state::access::message_view_with`.

use std::sync::Arc;

use super::{Is, Narrow};
use crate::state::access::{can_read_history, message_view_with, MessageView};
use crate::state::{
    ChannelId, Destination, Flags, IdKind, Message, MessageId, RecipientId, State, User, UserId,
};

/// Zulip's `LARGER_THAN_MAX_MESSAGE_ID`: the anchor meaning "newest", and
/// the `anchor` reply when nothing is unread (zulip-term compares with it).
pub const LARGER_THAN_MAX_MESSAGE_ID: u64 = 10_000_000_000_000_000;

/// Largest batch of ids copied out of an index at once.
const MAX_BATCH: usize = 4_096;

/// Where the candidates of a fetch come from, ascending by id.
#[derive(Clone, Debug)]
enum Source {
    /// One message (`id:` narrow).
    Single(MessageId),
    /// One topic of a channel whose history the caller may read.
    Topic(ChannelId, String),
    /// A channel whose history the caller may read, or a conversation.
    Recipient(RecipientId),
    /// Several channels' histories, merged by id (a spectator's
    /// web-public channels).
    Recipients(Vec<RecipientId>),
    /// The caller's delivered messages.
    User(UserId),
    /// The caller's unread messages.
    Unread(UserId),
    /// The caller's starred messages.
    Starred(UserId),
    /// Nothing can match.
    Nothing,
}

/// Candidate ids, with the caller's flags when the source knows them.
type Batch = Vec<(MessageId, Option<Flags>)>;

fn unknown(ids: Vec<MessageId>) -> Batch {
    ids.into_iter().map(|id| (id, None)).collect()
}

fn known(entries: Vec<(MessageId, Flags)>) -> Batch {
    entries.into_iter().map(|(id, f)| (id, Some(f))).collect()
}

impl Source {
    /// Up to `n` ids below `before`, newest first.
    fn before(&self, state: &State, before: MessageId, n: usize) -> Batch {
        match self {
            Source::Single(id) => unknown((*id < before).then_some(*id).into_iter().collect()),
            Source::Topic(channel, topic) => {
                unknown(state.topic_ids_before(&(*channel, topic.clone()), before, n))
            }
            Source::Recipient(r) => unknown(state.recipient_ids_before(*r, before, n)),
            Source::Recipients(rs) => {
                let mut ids: Vec<MessageId> =
                    rs.iter().flat_map(|r| state.recipient_ids_before(*r, before, n)).collect();
                ids.sort_unstable_by(|a, b| b.cmp(a));
                ids.truncate(n);
                unknown(ids)
            }
            Source::User(u) => known(state.user_entries_before(*u, before, n)),
            Source::Unread(u) => unknown(state.unread_ids_before(*u, before, n)),
            Source::Starred(u) => unknown(state.starred_ids_before(*u, before, n)),
            Source::Nothing => Vec::new(),
        }
    }

    /// Up to `n` ids from `from` up, oldest first.
    fn from(&self, state: &State, from: MessageId, n: usize) -> Batch {
        match self {
            Source::Single(id) => unknown((*id >= from).then_some(*id).into_iter().collect()),
            Source::Topic(channel, topic) => {
                unknown(state.topic_ids_from(&(*channel, topic.clone()), from, n))
            }
            Source::Recipient(r) => unknown(state.recipient_ids_from(*r, from, n)),
            Source::Recipients(rs) => {
                let mut ids: Vec<MessageId> =
                    rs.iter().flat_map(|r| state.recipient_ids_from(*r, from, n)).collect();
                ids.sort_unstable();
                ids.truncate(n);
                unknown(ids)
            }
            Source::User(u) => known(state.user_entries_from(*u, from, n)),
            Source::Unread(u) => unknown(state.unread_ids_from(*u, from, n)),
            Source::Starred(u) => unknown(state.starred_ids_from(*u, from, n)),
            Source::Nothing => Vec::new(),
        }
    }
}

/// The best index for a narrow, for `viewer`.
fn source(state: &State, viewer: &User, narrow: &Narrow) -> Source {
    if let Some(id) = narrow.id() {
        return Source::Single(id);
    }
    if let Some(channel) = narrow.channel() {
        // Channel history the viewer may read comes from the channel's
        // index; otherwise only what was delivered to them counts.
        let readable = state.channels.read(&channel, |c| can_read_history(viewer, c));
        return match (readable, narrow.topic()) {
            (Some(true), Some(topic)) => Source::Topic(channel, topic.to_owned()),
            (Some(true), None) => state
                .channels
                .read(&channel, |c| Source::Recipient(c.recipient))
                .unwrap_or(Source::Nothing),
            (Some(false), _) => Source::User(viewer.id),
            (None, _) => Source::Nothing,
        };
    }
    if let Some(participants) = narrow.conversation() {
        return match state.direct_recipients.get(&participants.to_vec()) {
            Some(recipient) => Source::Recipient(recipient),
            None => Source::Nothing,
        };
    }
    if crate::state::access::is_spectator(viewer) {
        // No account: what a spectator may read is every web-public
        // channel's history.
        let recipients = state
            .channels
            .collect_sorted(|_, c| c.realm == viewer.realm && c.is_web_public)
            .into_iter()
            .map(|(_, c)| c.recipient)
            .collect();
        return Source::Recipients(recipients);
    }
    if narrow.is(Is::Starred) {
        return Source::Starred(viewer.id);
    }
    if narrow.is(Is::Unread) {
        return Source::Unread(viewer.id);
    }
    Source::User(viewer.id)
}

/// Whether reading `narrow` for `viewer` may look at many messages it
/// does not return: some term is not answered exactly by the index the
/// read walks (a search, a negation, a filter over a whole history). Such
/// reads run off the HTTP workers (`api::readers`); the others look only
/// at messages they return, or at most one.
pub fn is_heavy(state: &State, viewer: &User, narrow: &Narrow) -> bool {
    let source = source(state, viewer, narrow);
    if matches!(source, Source::Single(_) | Source::Nothing) {
        return false;
    }
    !narrow.terms.iter().all(|term| answered_by(state, &source, term))
}

/// Whether every candidate of `source` passes `term`.
fn answered_by(state: &State, source: &Source, term: &super::Term) -> bool {
    use super::Filter;
    if matches!(term.filter, Filter::Near(_) | Filter::InAll) {
        return true;
    }
    if term.negated {
        return false;
    }
    match (&term.filter, source) {
        (Filter::Channel(c), Source::Topic(channel, _)) => c == channel,
        (Filter::Channel(c), Source::Recipient(r)) => {
            state.channels.read(c, |channel| channel.recipient == *r).unwrap_or(false)
        }
        (Filter::Topic(t), Source::Topic(_, topic)) => t == topic,
        (Filter::Dm(users), Source::Recipient(r)) => {
            state.direct_recipients.get(&users.to_vec()) == Some(*r)
        }
        (Filter::Is(Is::Starred), Source::Starred(_)) => true,
        (Filter::Is(Is::Unread), Source::Unread(_)) => true,
        _ => false,
    }
}

/// Who is reading: `access::message_view_with` decides per message.
struct Viewer<'a> {
    state: &'a State,
    user: &'a User,
}

impl<'a> Viewer<'a> {
    fn new(state: &'a State, user: &'a User) -> Self {
        Viewer { state, user }
    }

    /// How `message` appears to the viewer, if at all; `known` are their
    /// stored flags when the source already had them.
    fn view_with(&self, message: &Message, known: Option<Flags>) -> Option<MessageView> {
        message_view_with(self.state, self.user, message, known)
    }
}

/// Which way a scan walks from its start.
#[derive(Clone, Copy)]
enum Direction {
    /// Ids below the start, newest first.
    Older,
    /// Ids from the start up, oldest first.
    Newer,
}

/// Up to `want` visible messages matching `narrow`, walking `source` from
/// `start` in `direction`. Batches grow geometrically; between batches a
/// coroutine yields, so a sparse search never monopolizes a worker.
fn scan(
    viewer: &Viewer<'_>,
    narrow: &Narrow,
    source: &Source,
    start: MessageId,
    direction: Direction,
    want: usize,
) -> Vec<(Arc<Message>, MessageView)> {
    let mut found = Vec::new();
    if want == 0 {
        return found;
    }
    let mut cursor = start;
    let mut batch = (want + 1).clamp(64, MAX_BATCH);
    loop {
        let ids = match direction {
            Direction::Older => source.before(viewer.state, cursor, batch),
            Direction::Newer => source.from(viewer.state, cursor, batch),
        };
        let state = viewer.state;
        for (id, flags) in &ids {
            // Decide under the message's shard read lock and clone only
            // hits (the closure reads other maps, never `messages`).
            let hit = state.messages.read(id, |message| {
                let view = viewer.view_with(message, *flags)?;
                let hit = narrow.matches(state, viewer.user, message, view.flags);
                hit.then(|| (message.clone(), view))
            });
            if let Some(hit) = hit.flatten() {
                found.push(hit);
                if found.len() == want {
                    return found;
                }
            }
        }
        if ids.len() < batch {
            return found;
        }
        let last = ids.last().expect("a full batch is not empty").0;
        cursor = match direction {
            Direction::Older => last,
            Direction::Newer => MessageId(last.0 + 1),
        };
        batch = (batch * 2).min(MAX_BATCH);
        if may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
        }
    }
}

/// The first unread message in the narrow, skipping muted channels unless
/// the narrow names a channel (Zulip's rule), or `None`.
fn first_unread(state: &State, viewer: &Viewer<'_>, narrow: &Narrow) -> Option<MessageId> {
    let user = viewer.user.id;
    let muted: Vec<ChannelId> = if narrow.channel().is_some() {
        Vec::new()
    } else {
        state
            .subscriptions
            .read(&user, |subs| subs.iter().filter(|(_, s)| s.is_muted).map(|(c, _)| *c).collect())
            .unwrap_or_default()
    };
    let mut cursor = MessageId(0);
    loop {
        let unread = state.unread_ids_from(user, cursor, MAX_BATCH);
        for id in &unread {
            let Some(message) = state.messages.get(id) else { continue };
            if let Destination::Channel { channel, .. } = &message.destination {
                if muted.contains(channel) {
                    continue;
                }
            }
            let Some(view) = viewer.view_with(&message, None) else { continue };
            // The set is derived: trust the flags themselves.
            if !view.flags.contains(Flags::READ)
                && narrow.matches(state, viewer.user, &message, view.flags)
            {
                return Some(*id);
            }
        }
        if unread.len() < MAX_BATCH {
            return None;
        }
        cursor = MessageId(unread.last().expect("a full batch").0 + 1);
        if may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
        }
    }
}

/// A parsed `anchor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The first unread message in the narrow (Zulip's `first_unread`).
    FirstUnread,
    /// A message id (`0` is the oldest, `LARGER_THAN_MAX_MESSAGE_ID` the newest).
    Id(u64),
}

/// Where a window is taken: `anchor`, `num_before`, `num_after` and
/// `include_anchor`, as `GET /messages` and `POST /messages/flags/narrow`
/// take them.
#[derive(Clone, Copy, Debug)]
pub struct WindowBounds {
    /// Where the window is taken.
    pub anchor: Anchor,
    /// Most messages older than the anchor.
    pub num_before: u64,
    /// Most messages newer than the anchor.
    pub num_after: u64,
    /// Whether the anchor message itself is in the window.
    pub include_anchor: bool,
}

/// The messages of one anchored window: `before` newest first, the anchor
/// message if it matched, `after` oldest first.
pub struct Window {
    /// The anchor id the window was taken around (first unread resolved).
    pub anchor: u64,
    /// Up to `num_before` messages older than the anchor, newest first.
    pub before: Vec<(Arc<Message>, MessageView)>,
    /// The anchor message, when included and visible in the narrow.
    pub at_anchor: Option<(Arc<Message>, MessageView)>,
    /// Up to `num_after` messages newer than the anchor, oldest first.
    pub after: Vec<(Arc<Message>, MessageView)>,
    /// Whether the window reaches the oldest matching message.
    pub found_oldest: bool,
    /// Whether the window reaches the newest matching message.
    pub found_newest: bool,
}

/// The window `GET /messages` and `POST /messages/flags/narrow` work on.
pub fn window(state: &State, me: &User, narrow: &Narrow, bounds: WindowBounds) -> Window {
    let WindowBounds { anchor, num_before, num_after, include_anchor } = bounds;
    let viewer = Viewer::new(state, me);
    let anchor = match anchor {
        Anchor::Id(id) => id,
        Anchor::FirstUnread => {
            first_unread(state, &viewer, narrow).map_or(LARGER_THAN_MAX_MESSAGE_ID, |m| m.0)
        }
    };
    let newest_id = state.ids.peek(IdKind::Message).saturating_sub(1);
    let anchored_to_left = anchor == 0;
    let anchored_to_right = anchor > newest_id;

    let source = source(state, me, narrow);
    // One more than asked for in each direction tells whether the window
    // reaches the oldest / newest matching message.
    let mut before = if anchored_to_left {
        Vec::new()
    } else {
        scan(&viewer, narrow, &source, MessageId(anchor), Direction::Older, num_before as usize + 1)
    };
    let mut after = if anchored_to_right {
        Vec::new()
    } else {
        scan(
            &viewer,
            narrow,
            &source,
            MessageId(anchor.saturating_add(1)),
            Direction::Newer,
            num_after as usize + 1,
        )
    };
    let found_oldest = anchored_to_left || before.len() <= num_before as usize;
    let found_newest = anchored_to_right || after.len() <= num_after as usize;
    before.truncate(num_before as usize);
    after.truncate(num_after as usize);
    let at_anchor = if include_anchor && !anchored_to_left && !anchored_to_right {
        scan(
            &viewer,
            narrow,
            &Source::Single(MessageId(anchor)),
            MessageId(anchor),
            Direction::Newer,
            1,
        )
        .into_iter()
        .find(|(m, _)| m.id.0 == anchor)
    } else {
        None
    };
    Window { anchor, before, at_anchor, after, found_oldest, found_newest }
}

/// The messages among `ids` (ascending) that match `narrow` and that `me`
/// may see, ascending.
pub fn by_ids(
    state: &State,
    me: &User,
    narrow: &Narrow,
    ids: &[MessageId],
) -> Vec<(Arc<Message>, MessageView)> {
    let viewer = Viewer::new(state, me);
    ids.iter()
        .flat_map(|id| scan(&viewer, narrow, &Source::Single(*id), *id, Direction::Newer, 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn narrows_an_index_answers_exactly_are_light() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        let vault = w.channel("", "vault", true, &[&you]).id;
        w.post(&you, general, "lunch", "soup");
        w.post(&you, vault, "plans", "gold");
        w.dm(&you, &[&me], "psst");
        let heavy = |narrow: serde_json::Value| {
            let n = Narrow::parse(&w.state, &me, &narrow).unwrap();
            is_heavy(&w.state, &me, &n)
        };
        for light in [
            json!([]),
            json!([["stream", "general"]]),
            json!([["stream", "general"], ["topic", "LUNCH"]]),
            json!([["dm", "you@t.test"]]),
            json!([["is", "starred"]]),
            json!([["is", "unread"], ["near", 5]]),
            json!([["id", 1], ["search", "soup"]]),
            json!([["dm", "you@t.test"], ["in", "all"]]),
        ] {
            assert!(!heavy(light.clone()), "{light}");
        }
        for scan in [
            json!([["search", "soup"]]),
            json!([["stream", "general"], ["search", "soup"]]),
            json!([{"operator": "stream", "operand": "general", "negated": true}]),
            json!([["sender", "you@t.test"]]),
            json!([["is", "mentioned"]]),
            json!([["is", "starred"], ["is", "unread"]]),
            json!([["has", "link"]]),
            json!([["stream", "general"], ["topic", "lunch"], ["sender", "you@t.test"]]),
        ] {
            assert!(heavy(scan.clone()), "{scan}");
        }
        // A subscriber reads a private channel from its index: light.
        let narrow = Narrow::parse(&w.state, &you, &json!([["stream", vault.0]])).unwrap();
        assert!(!is_heavy(&w.state, &you, &narrow));
    }
}
