//! Personal message flags: `POST /messages/flags`.
//!
//! Only the flags a user sets by hand are editable (`read`, `starred`,
//! `collapsed`); the others (`mentioned`, `has_alert_word`…) follow from
//! the content and are refused as in Zulip. Every named message must be
//! readable by the caller; one the caller may read through channel
//! history but never received gets a historical entry first.

use serde_json::Value;

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::{FlagsChange, Mutation};
use crate::reply;
use crate::state::access::message_view;
use crate::state::{Destination, Flags, MessageId, State, User};

/// Most message ids one request may name.
pub const MAX_FLAG_MESSAGES: usize = 10_000;

/// The flag an API name means, or the refusal Zulip gives.
fn editable_flag(name: &str) -> ApiResult<Flags> {
    match name {
        "read" => Ok(Flags::READ),
        "starred" => Ok(Flags::STARRED),
        "collapsed" => Ok(Flags::COLLAPSED),
        "mentioned"
        | "wildcard_mentioned"
        | "stream_wildcard_mentioned"
        | "topic_wildcard_mentioned"
        | "has_alert_word"
        | "historical"
        | "is_private"
        | "active_mobile_push_notification" => {
            Err(ApiError::bad_request(format!("Flag not editable: '{name}'")))
        }
        _ => Err(ApiError::bad_request(format!("Invalid flag: '{name}'"))),
    }
}

/// What to do with a named message the caller may not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Refuse the whole request ("Invalid message(s)").
    Refuse,
    /// Leave it out (it vanished between choosing and committing).
    Skip,
}

/// One flag change for one user, checked against current state (run it
/// under the writer lock).
pub(crate) struct Plan {
    /// The mutation's payload.
    pub change: FlagsChange,
    /// The messages processed, in request order, duplicates removed.
    pub messages: Vec<MessageId>,
    /// Channels whose messages were skipped because marking unread needs a
    /// subscription.
    pub ignored: Vec<u64>,
    /// How many of `messages` actually change.
    pub updated: usize,
}

/// Plans setting (`add`) or clearing `flag` on `ids` for `me`. Messages
/// not delivered to `me` but readable through channel history get a
/// historical entry; marking unread skips channels `me` is not subscribed
/// to (Zulip's invariant: unread messages live only in subscribed
/// channels).
pub(crate) fn plan(
    state: &State,
    me: &User,
    add: bool,
    flag: Flags,
    ids: &[MessageId],
    unreadable: Unreadable,
) -> ApiResult<Plan> {
    let mut messages: Vec<MessageId> = Vec::with_capacity(ids.len());
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    let mut historical = Vec::new();
    let mut ignored = Vec::new();
    let mut updated = 0;
    // Marking unread leaves out channels the caller is not subscribed to:
    // only that change reads their subscriptions (marking read, the
    // common one, copies no map).
    let subscribed =
        (!add && flag == Flags::READ).then(|| state.subscriptions.get(&me.id).unwrap_or_default());
    for id in ids {
        if !seen.insert(*id) {
            continue;
        }
        let readable = state.messages.get(id).and_then(|m| {
            message_view(state, me, &m)?;
            Some(m)
        });
        let message = match (readable, unreadable) {
            (Some(message), _) => message,
            (None, Unreadable::Skip) => continue,
            (None, Unreadable::Refuse) => return Err(ApiError::bad_request("Invalid message(s)")),
        };
        if let (Destination::Channel { channel, .. }, Some(subscribed)) =
            (&message.destination, &subscribed)
        {
            if !subscribed.contains_key(channel) {
                if !ignored.contains(&channel.0) {
                    ignored.push(channel.0);
                }
                continue;
            }
        }
        let current = match state.flags(me.id, *id) {
            Some(flags) => flags,
            None => {
                historical.push(*id);
                Flags::READ.with(Flags::HISTORICAL)
            }
        };
        if current.contains(flag) != add {
            updated += 1;
        }
        messages.push(*id);
    }
    let change = FlagsChange { user: me.id, add, flag, messages: messages.clone(), historical };
    Ok(Plan { change, messages, ignored, updated })
}

/// The flag an API name means for `POST /messages/flags/narrow` too.
pub(crate) fn parse_change(call: &mut Call) -> ApiResult<(bool, Flags)> {
    let op = call.params.required_string("op")?;
    let add = match op.as_str() {
        "add" => true,
        "remove" => false,
        _ => return Err(ApiError::bad_request(format!("Invalid message flag operation: '{op}'"))),
    };
    let flag = editable_flag(&call.params.required_string("flag")?)?;
    Ok((add, flag))
}

/// `POST /messages/flags`: add or remove one flag on some messages.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let (add, flag) = parse_change(call)?;
    let ids = match call.params.json("messages")? {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_u64().map(MessageId))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ApiError::invalid("messages", "not a list of message IDs"))?,
        Some(_) => return Err(ApiError::invalid("messages", "not a list of message IDs")),
        None => return Err(ApiError::missing("messages")),
    };
    if ids.len() > MAX_FLAG_MESSAGES {
        return Err(ApiError::invalid("messages", "too many message IDs"));
    }
    let me = call.caller().clone();

    let (messages, mut ignored) = app.committer.commit(|state| {
        let plan = plan(state, &me, add, flag, &ids, Unreadable::Refuse)?;
        Ok((Mutation::UpdateFlags(plan.change), (plan.messages, plan.ignored)))
    })?;
    let messages: Vec<u64> = messages.iter().map(|m| m.0).collect();
    ignored.sort_unstable();
    Ok(reply! {
        "messages" => messages,
        "ignored_because_not_subscribed_channels" => ignored,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::events::{Audience, Event};
    use crate::state::Role;
    use crate::testkit::World;

    #[test]
    fn editable_flags_only() {
        assert_eq!(editable_flag("read").unwrap(), Flags::READ);
        assert_eq!(editable_flag("starred").unwrap(), Flags::STARRED);
        assert_eq!(editable_flag("collapsed").unwrap(), Flags::COLLAPSED);
        assert_eq!(editable_flag("mentioned").unwrap_err().msg, "Flag not editable: 'mentioned'");
        assert_eq!(editable_flag("nope").unwrap_err().msg, "Invalid flag: 'nope'");
    }

    #[test]
    fn apply_emits_update_message_flags_to_the_user_only() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        let m = w.post(&you, general, "t", "hi");
        let d = w.dm(&you, &[&me], "psst");
        let change = |add, flag, messages: Vec<MessageId>, historical| {
            Mutation::UpdateFlags(FlagsChange { user: me.id, add, flag, messages, historical })
        };
        let events = w.apply(change(true, Flags::READ, vec![m, d], vec![]));
        let expected = json!({
            "type": "update_message_flags", "op": "add", "operation": "add", "flag": "read",
            "messages": [m.0, d.0], "all": false,
        });
        assert_eq!(
            events,
            vec![Event::Broadcast { audience: Audience::Users(vec![me.id]), event: expected }]
        );
        assert_eq!(w.state.flags(me.id, m), Some(Flags::READ));
        // Marking unread carries the details clients rebuild unread counts from.
        let events = w.apply(change(false, Flags::READ, vec![m, d], vec![]));
        let Event::Broadcast { event, .. } = &events[0] else { panic!("{events:?}") };
        assert_eq!(event["op"], "remove");
        assert_eq!(
            event["message_details"],
            json!({
                m.0.to_string(): {"type": "stream", "stream_id": general.0, "topic": "t", "unmuted_stream_msg": true},
                d.0.to_string(): {"type": "private", "user_ids": [you.id.0]},
            })
        );
        // A historical message gets a read, historical entry plus the flag.
        let outsider = w.user("", "out@t.test", Role::Member);
        w.apply(Mutation::UpdateFlags(FlagsChange {
            user: outsider.id,
            add: true,
            flag: Flags::STARRED,
            messages: vec![m],
            historical: vec![m],
        }));
        assert_eq!(
            w.state.flags(outsider.id, m),
            Some(Flags::READ.with(Flags::HISTORICAL).with(Flags::STARRED))
        );
    }
}
