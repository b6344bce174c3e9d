//! Read state in bulk: `POST /messages/flags/narrow`, `POST
//! /mark_all_as_read`, `POST /mark_stream_as_read` and the deprecated
//! `POST /mark_topic_as_read`; and who has read a message, `GET
//! /messages/{message_id}/read_receipts`.
//!
//! Each is a personal flag change through the same path as `POST
//! /messages/flags` (`flags::plan` → `Mutation::UpdateFlags` → one
//! `update_message_flags` event to the caller). Which messages to touch is
//! read without the writer lock — the narrow endpoint takes the same
//! anchored window as `GET /messages` (`narrow::query::window`); the mark-as-read
//! endpoints walk the caller's own unread messages, in a channel they may
//! read — and `flags::plan` re-checks every message under the lock. Large
//! sets are committed in batches of `flags::MAX_FLAG_MESSAGES`, each batch
//! atomic; long walks yield between chunks.

use super::flags::{self, Unreadable, MAX_FLAG_MESSAGES};
use super::reading::{self, Window};
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::narrow::Narrow;
use crate::reply;
use crate::state::access::can_read_channel;
use crate::state::{Channel, ChannelId, Destination, Flags, MessageId, State, User};

/// `POST /messages/flags/narrow`: add or remove one flag on the messages of
/// an anchored window in a narrow (Zulip's "update personal message flags
/// for narrow").
pub fn flags_narrow(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let bounds = reading::window_bounds(&mut call.params)?;
    let (add, flag) = flags::parse_change(call)?;
    let me = call.caller().clone();
    let narrow = match call.params.json("narrow")? {
        Some(value) => Narrow::parse(&app.state, &me, &value)?,
        None => Narrow::default(),
    };
    // The window is read without the writer lock (scanning a sparse
    // narrow may take a while, and it yields); `plan` re-checks each
    // message under the lock.
    let Window { before, at_anchor, after, found_oldest, found_newest, .. } =
        crate::narrow::query::window(&app.state, &me, &narrow, bounds);
    let ids: Vec<MessageId> =
        before.iter().rev().chain(&at_anchor).chain(&after).map(|(m, _)| m.id).collect();
    let plan = app.committer.commit(|state| {
        let plan = flags::plan(state, &me, add, flag, &ids, Unreadable::Skip)?;
        Ok((Mutation::UpdateFlags(plan.change.clone()), plan))
    })?;
    let mut ignored = plan.ignored;
    ignored.sort_unstable();
    Ok(reply! {
        "processed_count" => ids.len(),
        "updated_count" => plan.updated,
        "first_processed_id" => ids.first().map(|m| m.0),
        "last_processed_id" => ids.last().map(|m| m.0),
        "found_oldest" => found_oldest,
        "found_newest" => found_newest,
        "ignored_because_not_subscribed_channels" => ignored,
    })
}

/// `POST /mark_all_as_read`: every unread message of the caller.
pub fn mark_all_as_read(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    mark_read(app, &me, |_, _| true)?;
    Ok(reply! { "complete" => true })
}

/// `POST /mark_stream_as_read`: the caller's unread messages in a channel
/// they may read.
pub fn mark_stream_as_read(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = channel_param(call)?;
    let me = call.caller().clone();
    let channel = readable_channel(&app.state, &me, id)?;
    mark_read(app, &me, |state, message| {
        state.messages.read(&message, |m| {
            matches!(&m.destination, Destination::Channel { channel: c, .. } if *c == channel.id)
        }) == Some(true)
    })?;
    Ok(reply! {})
}

/// `POST /mark_topic_as_read` (deprecated): the caller's unread messages in
/// one topic (case-insensitive; the realm's empty-topic display name means
/// the empty topic). A topic with no message delivered to the caller is
/// refused, as in Zulip.
pub fn mark_topic_as_read(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = channel_param(call)?;
    let topic = call.required_topic("topic_name")?;
    let me = call.caller().clone();
    let channel = readable_channel(&app.state, &me, id)?;
    let key = (channel.id, topic.to_lowercase());
    if !delivered_in_topic(&app.state, &me, &key) {
        return Err(ApiError::bad_request(format!("No such topic '{topic}'")));
    }
    mark_read(app, &me, |state, message| {
        state.messages.read(&message, |m| match &m.destination {
            Destination::Channel { channel: c, topic: t } => {
                *c == channel.id && t.to_lowercase() == key.1
            }
            Destination::Direct { .. } => false,
        }) == Some(true)
    })?;
    Ok(reply! {})
}

/// Whether any message of the topic was delivered to `me` (Zulip's test
/// for "the topic exists" here). Walks the topic index in batches.
fn delivered_in_topic(state: &State, me: &User, key: &(ChannelId, String)) -> bool {
    let mut cursor = MessageId(0);
    loop {
        let ids = state.topic_ids_from(key, cursor, BATCH);
        if ids.iter().any(|m| state.flags(me.id, *m).is_some()) {
            return true;
        }
        match ids.last() {
            Some(last) if ids.len() == BATCH => cursor = MessageId(last.0 + 1),
            _ => return false,
        }
        yield_now();
    }
}

/// Lets other coroutines run between batches of a long walk.
fn yield_now() {
    if may::coroutine::is_coroutine() {
        may::coroutine::yield_now();
    }
}

/// The required `stream_id` parameter.
fn channel_param(call: &mut Call) -> ApiResult<ChannelId> {
    match call.params.int("stream_id")? {
        Some(id) if id >= 0 => Ok(ChannelId(id as u64)),
        Some(_) => Err(ApiError::invalid("stream_id", "not a channel ID")),
        None => Err(ApiError::missing("stream_id")),
    }
}

/// A channel of the caller's realm whose messages they may read; anything
/// else "does not exist".
fn readable_channel(state: &State, me: &User, id: ChannelId) -> ApiResult<Channel> {
    state
        .channel_in_realm(me.realm, id)
        .filter(|c| can_read_channel(me, c))
        .ok_or_else(|| ApiError::no_channel_id(id.0))
}

/// Marks read the caller's unread messages that `select` picks, in
/// batches of at most `MAX_FLAG_MESSAGES`. Each batch is chosen without the
/// writer lock (a message read meanwhile is simply not updated again) and
/// committed atomically; `plan` re-checks each message under the lock.
fn mark_read(app: &App, me: &User, select: impl Fn(&State, MessageId) -> bool) -> ApiResult<()> {
    let mut cursor = MessageId(0);
    loop {
        let (ids, next) = unread_batch(&app.state, me, cursor, &select);
        if !ids.is_empty() {
            app.committer.commit(|state| {
                let plan = flags::plan(state, me, true, Flags::READ, &ids, Unreadable::Skip)?;
                Ok((Mutation::UpdateFlags(plan.change), ()))
            })?;
        }
        match next {
            Some(next) => cursor = next,
            None => return Ok(()),
        }
    }
}

/// Ids copied out of an index under one shard lock at a time.
const BATCH: usize = 4_096;

/// Up to `MAX_FLAG_MESSAGES` of `me`'s unread messages from `from` up that
/// `select` picks, and where the next batch starts (`None` when this is
/// the last). Copies the user's unread ids out in small chunks, so no
/// shard lock is held for long, and yields between chunks.
fn unread_batch(
    state: &State,
    me: &User,
    from: MessageId,
    select: &impl Fn(&State, MessageId) -> bool,
) -> (Vec<MessageId>, Option<MessageId>) {
    let mut picked = Vec::new();
    let mut cursor = from;
    loop {
        let chunk: Vec<MessageId> = state
            .user_messages
            .read(&me.id, |m| m.unread().iter_from(cursor).take(BATCH).collect())
            .unwrap_or_default();
        for id in &chunk {
            if picked.len() == MAX_FLAG_MESSAGES {
                return (picked, Some(*id));
            }
            if select(state, *id) {
                picked.push(*id);
            }
        }
        match chunk.last() {
            Some(last) if chunk.len() == BATCH => cursor = MessageId(last.0 + 1),
            _ => return (picked, None),
        }
        yield_now();
    }
}

/// `GET /messages/{message_id}/read_receipts`: the ids of the users who
/// have read a message the caller may see, as far as they share it
/// (`access::read_receipts`), in a realm with `enable_read_receipts`
/// (Zulip's error otherwise, after the message check); each user's
/// `send_read_receipts` decides for them.
pub fn read_receipts(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let me = call.caller();
    let message = super::reactions::visible_message(&app.state, me, id)?;
    if !app.state.features.of(call.realm.id).enable_read_receipts {
        return Err(ApiError::bad_request("Read receipts are disabled in this organization."));
    }
    let readers = crate::state::access::read_receipts(&app.state, me, &message);
    let ids: Vec<u64> = readers.into_iter().map(|u| u.0).collect();
    Ok(reply! { "user_ids" => ids })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn unread_batches_cover_everything_once_and_skip_what_is_not_picked() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        let other = w.channel("", "other", false, &[&me, &you]).id;
        let n = MAX_FLAG_MESSAGES + 5;
        let ids: Vec<MessageId> =
            (0..n).map(|i| w.post(&you, general, "t", &i.to_string())).collect();
        let elsewhere = w.post(&you, other, "t", "not picked");
        let in_general = |state: &State, id: MessageId| {
            state.messages.read(&id, |m| {
                matches!(&m.destination, Destination::Channel { channel, .. } if *channel == general)
            }) == Some(true)
        };
        let (first, next) = unread_batch(&w.state, &me, MessageId(0), &in_general);
        assert_eq!(first, ids[..MAX_FLAG_MESSAGES]);
        let next = next.expect("a second batch");
        let (second, last) = unread_batch(&w.state, &me, next, &in_general);
        assert_eq!(second, ids[MAX_FLAG_MESSAGES..]);
        assert_eq!(last, None);
        assert!(!second.contains(&elsewhere));
    }
}
