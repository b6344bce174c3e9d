//! The `GET /messages` query engine: the messages of a narrow in an
//! anchored window, as one viewer may see them.
//!
//! A read is served from indexes, never from a pass over every message:
//! what the viewer may read comes from one list (a message, a topic, a
//! channel's or conversation's history, several web-public channels, or
//! the viewer's own delivered messages), and every term an index answers
//! adds its list — the viewer's flag sets for `is:`, the `state::lookup`
//! lists for `sender`, `dm-including`, `is:dm`, `has:` and `search`
//! words, the recipient and topic indexes for `channel`, `topic` and
//! `dm`. The lists are intersected shortest first, leapfrog-style, from
//! the anchor outward; negated exact terms exclude by their list. Each
//! candidate is then matched against the whole narrow and checked with
//! `state::access::message_view_with`, so a list may hold more than its
//! term accepts, never less. Until the lookup lists are built after a
//! restart, their terms are left to that matching.

use std::sync::Arc;

use super::{Filter, Is, Narrow};
use crate::state::access::{can_read_history, message_view_with, MessageView};
use crate::state::user_messages::Rows;
use crate::state::{
    ChannelId, Destination, Flags, IdKind, IdSet, Message, MessageId, RecipientId, State, User,
    UserId,
};

/// Zulip's `LARGER_THAN_MAX_MESSAGE_ID`: the anchor meaning "newest", and
/// the `anchor` reply when nothing is unread (zulip-term compares with it).
pub const LARGER_THAN_MAX_MESSAGE_ID: u64 = 10_000_000_000_000_000;

/// What the viewer may read in a fetch: the first list of its plan.
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

impl Source {
    /// The source's ids, as a list to walk or test against.
    fn list(&self, state: &State) -> List {
        let rows = |user: &UserId, f: fn(&Rows) -> &IdSet| {
            state.user_messages.read(user, |m| f(m).clone()).unwrap_or_default()
        };
        match self {
            Source::Single(id) => List::one(*id),
            Source::Topic(channel, topic) => List::Set(state.topic_ids(&(*channel, topic.clone()))),
            Source::Recipient(r) => List::Set(state.by_recipient.get(r).unwrap_or_default()),
            Source::Recipients(rs) => List::Any(
                rs.iter().map(|r| state.by_recipient.get(r).unwrap_or_default()).collect(),
            ),
            Source::User(u) => List::Set(rows(u, Rows::ids)),
            Source::Unread(u) => List::Set(rows(u, Rows::unread)),
            Source::Starred(u) => List::Set(rows(u, Rows::starred)),
            Source::Nothing => List::Set(IdSet::new()),
        }
    }
}

/// Ascending ids a read walks or tests candidates against: copies of an
/// index's chunk pointers (`IdSet`), taken once per read, so no lock is
/// held while the read walks them.
#[derive(Clone, Debug)]
enum List {
    /// One set.
    Set(IdSet),
    /// The union of several sets.
    Any(Vec<IdSet>),
}

impl List {
    fn one(id: MessageId) -> List {
        let mut set = IdSet::new();
        set.insert(id);
        List::Set(set)
    }

    /// How many ids (an upper bound for a union).
    fn len(&self) -> usize {
        match self {
            List::Set(set) => set.len(),
            List::Any(sets) => sets.iter().map(IdSet::len).sum(),
        }
    }

    fn contains(&self, id: MessageId) -> bool {
        match self {
            List::Set(set) => set.contains(id),
            List::Any(sets) => sets.iter().any(|s| s.contains(id)),
        }
    }

    /// The largest id below `before`.
    fn below(&self, before: MessageId) -> Option<MessageId> {
        match self {
            List::Set(set) => set.iter_before(before).next(),
            List::Any(sets) => sets.iter().filter_map(|s| s.iter_before(before).next()).max(),
        }
    }

    /// The smallest id from `from` up.
    fn at_or_above(&self, from: MessageId) -> Option<MessageId> {
        match self {
            List::Set(set) => set.iter_from(from).next(),
            List::Any(sets) => sets.iter().filter_map(|s| s.iter_from(from).next()).min(),
        }
    }

    /// The next id of the list from `cursor` in `direction` (below it
    /// when older, from it up when newer).
    fn next(&self, cursor: MessageId, direction: Direction) -> Option<MessageId> {
        match direction {
            Direction::Older => self.below(cursor),
            Direction::Newer => self.at_or_above(cursor),
        }
    }
}

/// How a read finds its candidates: the ids in every one of `lists`
/// (shortest first) and in none of `excluded`. Each candidate is then
/// tested against the whole narrow, so a list only has to hold every
/// message its term accepts (word lists may hold more); the excluded
/// lists are exact.
struct Plan {
    lists: Vec<List>,
    excluded: Vec<List>,
}

impl Plan {
    /// The plan for `narrow` read by `viewer`: the source's list (what
    /// the viewer may read) and one list per term an index answers.
    fn new(state: &State, viewer: &User, narrow: &Narrow) -> Plan {
        let mut lists = vec![source(state, viewer, narrow).list(state)];
        let mut excluded = Vec::new();
        let channel = narrow.channel();
        for term in &narrow.terms {
            if term.filter == Filter::InHome {
                // Not in a muted channel: excluded by the muted channels'
                // lists (negated: only those).
                let muted = muted_channels(state, viewer);
                match term.negated {
                    false => excluded.extend(muted.into_iter().map(List::Set)),
                    true => lists.push(List::Any(muted)),
                }
                continue;
            }
            let exact = !matches!(term.filter, Filter::Search(_));
            let found = term_lists(state, viewer, channel, &term.filter);
            match (term.negated, exact) {
                (false, _) => lists.extend(found),
                (true, true) => excluded.extend(found),
                (true, false) => {}
            }
        }
        lists.sort_by_key(List::len);
        Plan { lists, excluded }
    }

    /// The next candidate from `cursor` in `direction`: the lists are
    /// intersected leapfrog-style (each jumps to the largest / smallest
    /// id not past the others'), so the walk costs a search per step of
    /// the shortest list, not a pass over the longest.
    fn next(&self, mut cursor: MessageId, direction: Direction) -> Option<MessageId> {
        loop {
            let mut x = self.lists[0].next(cursor, direction)?;
            let mut agreed = 1;
            let mut i = 1 % self.lists.len();
            while agreed < self.lists.len() {
                let y = match direction {
                    Direction::Older => self.lists[i].below(MessageId(x.0 + 1))?,
                    Direction::Newer => self.lists[i].at_or_above(x)?,
                };
                if y == x {
                    agreed += 1;
                } else {
                    x = y;
                    agreed = 1;
                }
                i = (i + 1) % self.lists.len();
            }
            let Some(excluding) = self.excluded.iter().find(|l| l.contains(x)) else {
                return Some(x);
            };
            cursor = match direction {
                Direction::Older => x,
                Direction::Newer => MessageId(x.0 + 1),
            };
            if let (List::Set(first), List::Set(excluding)) = (&self.lists[0], excluding) {
                // A list minus another (a channel minus its busiest
                // sender): walk the shortest list and the excluded one
                // together past the ids they share, a step each, instead
                // of a search per excluded id. No skipped id can be in
                // the answer; the other lists are intersected from there.
                let y = first_not_in(first, excluding, x, direction)?;
                cursor = match direction {
                    Direction::Older => MessageId(y.0 + 1),
                    Direction::Newer => y,
                };
            }
        }
    }
}

/// The first id of `set` past `x` in `direction` that `excluding` lacks.
fn first_not_in(
    set: &IdSet,
    excluding: &IdSet,
    x: MessageId,
    direction: Direction,
) -> Option<MessageId> {
    match direction {
        Direction::Older => {
            let mut excluded = excluding.iter_before(x).peekable();
            set.iter_before(x).find(|id| {
                while excluded.next_if(|e| e > id).is_some() {}
                excluded.peek() != Some(id)
            })
        }
        Direction::Newer => {
            let from = MessageId(x.0 + 1);
            let mut excluded = excluding.iter_from(from).peekable();
            set.iter_from(from).find(|id| {
                while excluded.next_if(|e| e < id).is_some() {}
                excluded.peek() != Some(id)
            })
        }
    }
}

/// The message lists of the channels `viewer` has muted.
fn muted_channels(state: &State, viewer: &User) -> Vec<IdSet> {
    let muted: Vec<ChannelId> = state
        .subscriptions
        .read(&viewer.id, |subs| subs.iter().filter(|(_, s)| s.is_muted).map(|(c, _)| *c).collect())
        .unwrap_or_default();
    muted
        .iter()
        .filter_map(|c| state.channels.read(c, |c| c.recipient))
        .map(|r| state.by_recipient.get(&r).unwrap_or_default())
        .collect()
}

/// The lists of the messages `filter` accepts as `viewer` sees them
/// (none when no index answers it: the candidates are then tested
/// alone). `channel` is the narrow's channel, which a topic needs.
fn term_lists(
    state: &State,
    viewer: &User,
    channel: Option<ChannelId>,
    filter: &Filter,
) -> Vec<List> {
    let flagged = |flags: &[Flags]| {
        let sets = state
            .user_messages
            .read(&viewer.id, |m| flags.iter().map(|f| m.flagged(*f).clone()).collect())
            .unwrap_or_default();
        vec![List::Any(sets)]
    };
    let rows = |f: fn(&Rows) -> &IdSet| {
        vec![List::Set(state.user_messages.read(&viewer.id, |m| f(m).clone()).unwrap_or_default())]
    };
    let recipient = |r: Option<RecipientId>| {
        vec![List::Set(r.and_then(|r| state.by_recipient.get(&r)).unwrap_or_default())]
    };
    let lookup = &state.lookup;
    let ready = lookup.ready();
    match filter {
        Filter::Channel(c) => recipient(state.channels.read(c, |c| c.recipient)),
        Filter::Topic(topic) => match channel {
            Some(c) => vec![List::Set(state.topic_ids(&(c, topic.clone())))],
            None => Vec::new(),
        },
        Filter::Dm(users) => recipient(state.direct_recipients.get(&users.to_vec())),
        Filter::Id(id) => vec![List::one(*id)],
        Filter::Is(Is::Starred) => rows(Rows::starred),
        Filter::Is(Is::Unread) => rows(Rows::unread),
        Filter::Is(Is::Alerted) => flagged(&[Flags::HAS_ALERT_WORD]),
        Filter::Is(Is::Mentioned) => flagged(&[
            Flags::MENTIONED,
            Flags::STREAM_WILDCARD_MENTIONED,
            Flags::TOPIC_WILDCARD_MENTIONED,
        ]),
        Filter::Is(Is::Resolved) => match channel {
            // The channel's resolved topics (a topic key is lowercased,
            // which keeps the mark).
            Some(c) => {
                let keys: Vec<String> = state
                    .channel_topics
                    .read(&c, |topics| {
                        topics.keys().filter(|k| super::is_resolved_topic(k)).cloned().collect()
                    })
                    .unwrap_or_default();
                vec![List::Any(keys.into_iter().map(|k| state.topic_ids(&(c, k))).collect())]
            }
            None => Vec::new(),
        },
        Filter::Is(Is::Dm) if ready => vec![List::Set(lookup.direct_of(viewer.id))],
        Filter::DmIncluding(user) if ready => vec![List::Set(lookup.direct_of(*user))],
        Filter::Sender(user) if ready => vec![List::Set(lookup.sent_by(*user))],
        Filter::Has(has) if ready => {
            vec![List::Set(lookup.with_feature(viewer.realm, has.feature()))]
        }
        // A search with no word left (only stop words or punctuation)
        // matches nothing: its list is empty.
        Filter::Search(terms) if ready && terms.is_empty() => vec![List::Set(IdSet::new())],
        Filter::Search(terms) if ready => terms
            .iter()
            .flatten()
            .map(|stem| List::Set(lookup.with_stem(viewer.realm, stem)))
            .collect(),
        _ => Vec::new(),
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
/// read walks (a search, a negation, a filter over a whole history), and
/// the shortest list of its plan holds more than `light_up_to`
/// candidates (0: any count is heavy). Such reads run off the HTTP
/// workers (`api::readers`); the others look only at messages they
/// return, at most one, or at most `light_up_to` candidates (a search
/// for a rare or absent word).
pub fn is_heavy(state: &State, viewer: &User, narrow: &Narrow, light_up_to: usize) -> bool {
    let source = source(state, viewer, narrow);
    if matches!(source, Source::Single(_) | Source::Nothing) {
        return false;
    }
    if narrow.terms.iter().all(|term| answered_by(state, &source, term)) {
        return false;
    }
    light_up_to == 0 || Plan::new(state, viewer, narrow).lists[0].len() > light_up_to
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

    /// How `message` appears to the viewer, if at all.
    fn view(&self, message: &Message) -> Option<MessageView> {
        message_view_with(self.state, self.user, message, None)
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

/// Steps of a walk between two yields of a coroutine.
const YIELD_EVERY: usize = 1_024;

/// Up to `want` visible messages matching `narrow`, walking `plan` from
/// `start` in `direction`. A coroutine yields every `YIELD_EVERY`
/// candidates, so a sparse search never monopolizes a worker.
fn scan(
    viewer: &Viewer<'_>,
    narrow: &Narrow,
    plan: &Plan,
    start: MessageId,
    direction: Direction,
    want: usize,
) -> Vec<(Arc<Message>, MessageView)> {
    let mut found = Vec::new();
    if want == 0 {
        return found;
    }
    let state = viewer.state;
    let mut cursor = start;
    let mut steps = 0;
    while let Some(id) = plan.next(cursor, direction) {
        // Decide under the message's shard read lock and clone only hits
        // (the closure reads other maps, never `messages`).
        let hit = state.messages.read(&id, |message| {
            let view = viewer.view(message)?;
            let hit = narrow.matches(state, viewer.user, message, view.flags);
            hit.then(|| (message.clone(), view))
        });
        if let Some(hit) = hit.flatten() {
            found.push(hit);
            if found.len() == want {
                break;
            }
        }
        cursor = match direction {
            Direction::Older => id,
            Direction::Newer => MessageId(id.0 + 1),
        };
        steps += 1;
        if steps % YIELD_EVERY == 0 && may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
        }
        crate::priority::breathe();
    }
    found
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
    let mut plan = Plan::new(state, viewer.user, narrow);
    plan.lists.push(Source::Unread(user).list(state));
    plan.lists.sort_by_key(List::len);
    let mut cursor = MessageId(0);
    let mut steps = 0;
    while let Some(id) = plan.next(cursor, Direction::Newer) {
        cursor = MessageId(id.0 + 1);
        steps += 1;
        if steps % YIELD_EVERY == 0 && may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
        }
        crate::priority::breathe();
        let Some(message) = state.messages.get(&id) else { continue };
        if let Destination::Channel { channel, .. } = &message.destination {
            if muted.contains(channel) {
                continue;
            }
        }
        let Some(view) = viewer.view(&message) else { continue };
        // The set is derived: trust the flags themselves.
        if !view.flags.contains(Flags::READ)
            && narrow.matches(state, viewer.user, &message, view.flags)
        {
            return Some(id);
        }
    }
    None
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

    let plan = Plan::new(state, me, narrow);
    // One more than asked for in each direction tells whether the window
    // reaches the oldest / newest matching message.
    let mut before = if anchored_to_left {
        Vec::new()
    } else {
        scan(&viewer, narrow, &plan, MessageId(anchor), Direction::Older, num_before as usize + 1)
    };
    let mut after = if anchored_to_right {
        Vec::new()
    } else {
        scan(
            &viewer,
            narrow,
            &plan,
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
        let anchor = MessageId(anchor);
        (plan.next(anchor, Direction::Newer) == Some(anchor))
            .then(|| single(&viewer, narrow, anchor))
            .flatten()
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
    ids.iter().filter_map(|id| single(&viewer, narrow, *id)).collect()
}

/// Message `id`, if the viewer may see it and it matches `narrow`.
fn single(
    viewer: &Viewer<'_>,
    narrow: &Narrow,
    id: MessageId,
) -> Option<(Arc<Message>, MessageView)> {
    let state = viewer.state;
    state
        .messages
        .read(&id, |message| {
            let view = viewer.view(message)?;
            narrow.matches(state, viewer.user, message, view.flags).then(|| (message.clone(), view))
        })
        .flatten()
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
            is_heavy(&w.state, &me, &n, 0)
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
        assert!(!is_heavy(&w.state, &you, &narrow, 0));
    }

    #[test]
    fn reads_testing_few_candidates_are_light() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        for i in 0..6 {
            w.post(&you, general, "lunch", if i == 0 { "rare soup" } else { "common bread" });
        }
        let heavy = |narrow: serde_json::Value, light_up_to: usize| {
            let n = Narrow::parse(&w.state, &me, &narrow).unwrap();
            is_heavy(&w.state, &me, &n, light_up_to)
        };
        // An absent word and a rare one have short word lists.
        assert!(!heavy(json!([["search", "absent"]]), 1));
        assert!(!heavy(json!([["search", "soup"]]), 1));
        // A common word's list is longer than the bound, and a negated
        // search adds no list: the whole history is tested.
        assert!(heavy(json!([["search", "bread"]]), 4));
        assert!(!heavy(json!([["search", "bread"]]), 5));
        assert!(heavy(json!([{"operator": "search", "operand": "soup", "negated": true}]), 5));
        assert!(!heavy(json!([{"operator": "search", "operand": "soup", "negated": true}]), 6));
        // 0: every read an index does not answer exactly is heavy.
        assert!(heavy(json!([["search", "absent"]]), 0));
    }

    #[test]
    fn a_list_minus_another_is_walked_together() {
        // Long shared runs (a channel's busiest sender), with gaps.
        let ids = |f: fn(u64) -> bool| {
            let mut set = IdSet::new();
            set.append((1..6000).filter(|i| f(*i)).map(MessageId));
            set
        };
        let set = ids(|i| i % 7 != 0);
        let excluding = ids(|i| !(2500..2510).contains(&i) && i % 3000 != 0);
        let older = |x: u64| {
            (1..x).rev().find(|i| set.contains(MessageId(*i)) && !excluding.contains(MessageId(*i)))
        };
        let newer = |x: u64| {
            (x + 1..7000)
                .find(|i| set.contains(MessageId(*i)) && !excluding.contains(MessageId(*i)))
        };
        for x in [1, 2, 2499, 2505, 2510, 2999, 3000, 3001, 5000, 5999, 6500] {
            let x_id = MessageId(x);
            assert_eq!(
                first_not_in(&set, &excluding, x_id, Direction::Older).map(|m| m.0),
                older(x),
                "older from {x}"
            );
            assert_eq!(
                first_not_in(&set, &excluding, x_id, Direction::Newer).map(|m| m.0),
                newer(x),
                "newer from {x}"
            );
        }
    }
}
