//! Changing messages: `PATCH /messages/{message_id}` (content edits, topic
//! and channel moves) and `GET /messages/{message_id}/history`.
//!
//! Who may do what (as in Zulip):
//! - content: the author only, while the realm allows editing and within
//!   `message_content_edit_limit_seconds` (0 = no limit);
//! - topic: members of the realm's `can_move_messages_between_topics_group`
//!   (default members), within `move_messages_within_stream_limit_seconds`
//!   unless moderator or above (resolving or unresolving has no limit);
//! - channel: members of the realm's `can_move_messages_between_channels_group`
//!   (default members) or the channel's `can_move_messages_out_of_channel`,
//!   within `move_messages_between_streams_limit_seconds` unless moderator
//!   or above, to a channel they may see and post to.
//!
//! Each limit has Zulip's 20-second grace (`MOVE_LIMIT_GRACE_SECONDS`).
//!
//! `propagate_mode` takes along the topic's other messages (`change_later`:
//! from this one on; `change_all`: all). Resolving or unresolving a topic
//! (the `✔ ` prefix) is not a move: `last_moved_timestamp` stays.
//!
//! A `change_all` move (not a resolve) by someone below moderator must be
//! allowed for every message of the topic, as Zulip checks: the applicable
//! move time limit (the stricter of the two when both topic and channel
//! change, plus Zulip's 20-second grace) against each message they can see
//! in the topic; otherwise `MOVE_MESSAGES_TIME_LIMIT_EXCEEDED` says how many
//! of the newest messages they may move.
//!
//! The Notification Bot's notices (`send_notification_to_old_thread`,
//! `…_new_thread`, resolved-topic notices) are built in `move_notices.rs`
//! and logged in one `Batch` with the edit.

use serde_json::{json, Value};

use super::messages::{
    check_topic_policy, find_channel, normalize_content, normalize_topic, ChannelRef,
};
use super::reactions::visible_message;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::markdown::{self, Rendered};
use crate::mutation::{MessageEdit, Mutation, NewContent, PropagateMode};
use crate::reply;
use crate::send::mentions::{self, Visible};
use crate::send::move_notices::{self, Move};
use crate::state::access::{self, has_permission};
use crate::state::{
    ChannelId, Destination, Message, MessageId, Realm, Role, State, SystemGroup, User,
};
use crate::view::history::{html_diff, record_fields, versions};

/// The prefix of a resolved topic.
pub const RESOLVED_TOPIC_PREFIX: &str = move_notices::RESOLVED_TOPIC_PREFIX;

/// Seconds Zulip adds to the move time limits (clients offer an edit a
/// little past the limit; the request may also be slow).
pub const MOVE_LIMIT_GRACE_SECONDS: i64 = 20;

/// What a PATCH asks for, decoded.
struct Request {
    id: MessageId,
    content: Option<(String, Rendered)>,
    topic: Option<String>,
    channel: Option<ChannelId>,
    mode: PropagateMode,
    notify_old: bool,
    notify_new: bool,
    /// The realm's URL, for links in the notices.
    realm_url: String,
}

/// What a PATCH does: the edit and the Notification Bot's notices.
#[derive(Debug)]
struct Plan {
    edit: MessageEdit,
    notices: Vec<Mutation>,
}

/// `PATCH /messages/{message_id}`: edit content, move to a topic or channel.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let content = call.params.string("content");
    let topic = match call.params.string("topic") {
        Some(topic) => Some(topic),
        None => call.params.string("subject"),
    };
    let channel = call.params.int("stream_id")?;
    let mode = match call.params.string("propagate_mode") {
        None => PropagateMode::ChangeOne,
        Some(mode) => PropagateMode::parse(&mode)
            .ok_or_else(|| ApiError::invalid("propagate_mode", "not a propagate mode"))?,
    };
    // Zulip's defaults: tell the new place, not the old one.
    let notify_old = call.params.bool_or("send_notification_to_old_thread", false)?;
    let notify_new = call.params.bool_or("send_notification_to_new_thread", true)?;
    if content.is_none() && topic.is_none() && channel.is_none() {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    let topic = topic.map(|t| normalize_topic(&t, call)).transpose()?;
    let editor = call.caller().clone();
    let content = match content {
        // Zulip keeps an emptied message as "(deleted)".
        Some(c) if c.trim().is_empty() => Some("(deleted)".to_owned()),
        Some(c) => Some(normalize_content(&c)?),
        None => None,
    };
    let url = Some(super::realm::realm_url(app, &call.realm));
    let content = content.map(|c| {
        let visible = Visible::new(&app.state, &editor).with_realm_url(url.clone());
        let rendered = markdown::render_message(&c, &visible);
        (c, rendered)
    });
    let channel = match channel {
        Some(id) if id < 0 => return Err(ApiError::invalid("stream_id", "not a channel ID")),
        Some(id) => Some(ChannelId(id as u64)),
        None => None,
    };
    let realm_url = super::realm::realm_url(app, &call.realm);
    let request = Request { id, content, topic, channel, mode, notify_old, notify_new, realm_url };
    let now = entropy::now();
    // Nothing to change (the same topic, the same channel, the same
    // content) succeeds without writing anything.
    if plan(&app.state, &editor, &request, now)?.is_none() {
        return Ok(reply! { "detached_uploads" => Vec::<Value>::new() });
    }
    app.committer.commit(|state| match plan(state, &editor, &request, now)? {
        // The notices, and the uploads new content links, go in the edit's
        // record: all of it or nothing.
        Some(Plan { edit, notices }) => {
            let linked = edit.content.as_ref().map_or_else(Vec::new, |c| {
                crate::send::attachments::claimed(state, &editor, &c.content)
            });
            let message = edit.message;
            let mut parts = vec![Mutation::EditMessage(edit)];
            parts.extend(notices);
            if !linked.is_empty() {
                parts.push(Mutation::LinkAttachments { message, attachments: linked });
            }
            match parts.len() {
                1 => Ok((parts.pop().expect("one part"), ())),
                _ => Ok((Mutation::Batch(parts), ())),
            }
        }
        None => Err(ApiError::bad_request("Nothing to change")),
    })?;
    Ok(reply! { "detached_uploads" => Vec::<Value>::new() })
}

/// Checks the request against state and works out the edit; `None` if it
/// changes nothing.
fn plan(state: &State, editor: &User, req: &Request, now: i64) -> ApiResult<Option<Plan>> {
    let message = visible_message(state, editor, req.id)?;
    let realm = state
        .realms
        .get(&editor.realm)
        .ok_or_else(|| ApiError::bad_request("Invalid message(s)"))?;
    let settings = &realm.settings;
    let age = now.saturating_sub(message.timestamp);
    let content = req.content.as_ref().filter(|(c, _)| *c != message.content());
    if req.content.is_some() {
        if message.sender != editor.id {
            return Err(ApiError::bad_request("You don't have permission to edit this message"));
        }
        if !settings.allow_message_editing {
            return Err(ApiError::bad_request("Your organization has turned off message editing"));
        }
        let limit = settings.message_content_edit_limit_seconds;
        if limit > 0 && age > i64::from(limit) {
            return Err(ApiError::bad_request(
                "The time limit for editing this message has passed",
            ));
        }
        if req.channel.is_some() {
            return Err(ApiError::bad_request(
                "Cannot change message content while changing channel",
            ));
        }
    }
    // (from, from topic, to, to topic) of a move.
    let mut place: Option<(crate::state::Channel, String, crate::state::Channel, String)> = None;
    let (moved, new_topic, new_channel, counts_as_move) = match &message.destination {
        Destination::Direct { .. } => {
            if req.topic.is_some() {
                return Err(ApiError::bad_request("Direct messages cannot have topics."));
            }
            if req.channel.is_some() {
                return Err(ApiError::bad_request("Direct messages cannot be moved to channels."));
            }
            (Vec::new(), None, None, false)
        }
        Destination::Channel { channel, topic } => {
            let new_topic = req.topic.clone().filter(|t| **t != **topic);
            let new_channel = req.channel.filter(|c| c != channel);
            let moderator = editor.role <= Role::Moderator;
            if new_topic.is_some() {
                let may = realm_setting(
                    &realm,
                    &settings.can_move_messages_between_topics_group,
                    SystemGroup::Members,
                );
                if !has_permission(state, editor, &may) {
                    return Err(ApiError::bad_request(
                        "You don't have permission to edit this message",
                    ));
                }
                // Resolving or unresolving has no time limit (as in Zulip).
                let resolving = new_channel.is_none()
                    && new_topic.as_deref().is_some_and(|new| is_resolve_toggle(topic, new));
                if !moderator
                    && !resolving
                    && over(age, settings.move_messages_within_stream_limit_seconds)
                {
                    return Err(ApiError::bad_request(
                        "The time limit for editing this message's topic has passed",
                    ));
                }
            }
            let target = match new_channel {
                None => None,
                Some(id) => {
                    let from = state.channels.get(channel).expect("message's channel exists");
                    let may = realm_setting(
                        &realm,
                        &settings.can_move_messages_between_channels_group,
                        SystemGroup::Members,
                    );
                    if !has_permission(state, editor, &may)
                        && !has_permission(
                            state,
                            editor,
                            &from.permissions.can_move_messages_out_of_channel,
                        )
                    {
                        return Err(ApiError::bad_request(
                            "You don't have permission to move this message",
                        ));
                    }
                    if !moderator && over(age, settings.move_messages_between_streams_limit_seconds)
                    {
                        return Err(ApiError::bad_request(
                            "The time limit for editing this message's channel has passed",
                        ));
                    }
                    let to = find_channel(state, editor, &ChannelRef::Id(id.0))?;
                    if access::send_refusal(state, editor, &to).is_some() {
                        return Err(ApiError::bad_request(format!(
                            "Not authorized to send to channel '{}'",
                            to.name
                        )));
                    }
                    Some(to)
                }
            };
            if new_topic.is_none() && target.is_none() {
                (Vec::new(), None, None, false)
            } else {
                let dest_topic = new_topic.clone().unwrap_or_else(|| topic.to_string());
                let dest = target.clone().unwrap_or_else(|| {
                    state.channels.get(channel).expect("message's channel exists")
                });
                check_topic_policy(&dest, settings.topics_policy, &dest_topic)?;
                let moved = topic_messages(state, &message, *channel, topic, req.mode);
                let resolve_only = target.is_none()
                    && new_topic.as_deref().is_some_and(|new| is_resolve_toggle(topic, new));
                let from = state.channels.get(channel).expect("message's channel exists");
                if req.mode == PropagateMode::ChangeAll && !moderator && !resolve_only {
                    let limit = |changes: bool, limit: Option<u32>| {
                        limit.filter(|_| changes).map(|l| i64::from(l) + MOVE_LIMIT_GRACE_SECONDS)
                    };
                    let deadline = [
                        limit(
                            new_topic.is_some(),
                            settings.move_messages_within_stream_limit_seconds,
                        ),
                        limit(
                            target.is_some(),
                            settings.move_messages_between_streams_limit_seconds,
                        ),
                    ]
                    .into_iter()
                    .flatten()
                    .min();
                    if let Some(deadline) = deadline {
                        check_topic_age(state, editor, &from, topic, deadline, now)?;
                    }
                }
                place = Some((from, topic.to_string(), dest, dest_topic));
                (moved, new_topic, target.map(|c| c.id), !resolve_only)
            }
        }
    };
    let content = match content {
        None => None,
        Some((text, rendered)) => {
            let recipients = state.message_holders(&message);
            let notify = mentions::notify(
                state,
                editor,
                &message.destination,
                &recipients,
                &rendered.mentions,
            )?;
            Some(NewContent {
                content: text.clone(),
                rendered: rendered.html.clone(),
                is_me_message: markdown::is_me_message(text),
                mentioned: notify.mentioned,
                channel_wildcard: notify.channel_wildcard,
                topic_wildcard: notify.topic_wildcard,
            })
        }
    };
    if content.is_none() && moved.is_empty() {
        return Ok(None);
    }
    let notices = match &place {
        Some((from, from_topic, to, to_topic)) if !moved.is_empty() => {
            let m = Move {
                editor,
                message: message.id,
                from,
                from_topic,
                to,
                to_topic,
                moved: &moved,
                mode: req.mode,
                content_edited: content.is_some(),
                notify_old: req.notify_old,
                notify_new: req.notify_new,
                now,
                realm_url: &req.realm_url,
            };
            let mut companions = move_notices::notices(state, &m);
            if req.mode == PropagateMode::ChangeAll {
                companions.extend(crate::send::auto_topics::policies_follow_a_move(
                    state, from.id, from_topic, to, to_topic, now,
                ));
            }
            companions
        }
        _ => Vec::new(),
    };
    let edit = MessageEdit {
        message: message.id,
        editor: editor.id,
        timestamp: now,
        content,
        topic: new_topic,
        channel: new_channel,
        moved,
        counts_as_move,
        propagate_mode: req.mode,
    };
    Ok(Some(Plan { edit, notices }))
}

/// Zulip's check of a `change_all` move against the time limit: every
/// message of the topic the editor can see (all of it where they may read
/// the channel's history, else the ones delivered to them) must be younger
/// than `deadline` seconds.
fn check_topic_age(
    state: &State,
    editor: &User,
    channel: &crate::state::Channel,
    topic: &str,
    deadline: i64,
    now: i64,
) -> ApiResult<()> {
    let ids = state.topic_ids(&(channel.id, topic.to_lowercase()));
    let whole_history = access::can_read_history(editor, channel);
    let mut seen: Vec<(i64, MessageId)> = ids
        .iter()
        .filter(|id| whole_history || state.flags(editor.id, *id).is_some())
        .filter_map(|id| state.messages.read(&id, |m| (m.timestamp, id)))
        .collect();
    let total = seen.len();
    seen.retain(|(sent, _)| now.saturating_sub(*sent) < deadline);
    seen.sort();
    match seen.first() {
        Some(_) if seen.len() == total => Ok(()),
        first => Err(ApiError::move_time_limit(first.map(|(_, id)| *id), total, seen.len())),
    }
}

fn realm_setting(
    realm: &Realm,
    value: &Option<crate::state::GroupSetting>,
    default: SystemGroup,
) -> crate::state::GroupSetting {
    realm.group_setting(value, default)
}

/// Past a move time limit (with Zulip's grace).
fn over(age: i64, limit: Option<u32>) -> bool {
    limit.is_some_and(|limit| age > i64::from(limit) + MOVE_LIMIT_GRACE_SECONDS)
}

/// Whether going from `old` to `new` only adds or removes the resolved
/// prefix.
fn is_resolve_toggle(old: &str, new: &str) -> bool {
    move_notices::resolves(old, new) || move_notices::unresolves(old, new)
}

/// The messages a move takes along: the topic's messages (topics compare
/// case-insensitively), all of them, or from `message` on, or just it.
fn topic_messages(
    state: &State,
    message: &Message,
    channel: ChannelId,
    topic: &str,
    mode: PropagateMode,
) -> Vec<MessageId> {
    if mode == PropagateMode::ChangeOne {
        return vec![message.id];
    }
    // The topic's own index: not a scan of the whole channel.
    let ids = state.topic_ids(&(channel, topic.to_lowercase()));
    let from = match mode {
        PropagateMode::ChangeAll => MessageId(0),
        _ => message.id,
    };
    ids.iter_from(from).filter(|id| state.messages.contains(id)).collect()
}

/// `GET /messages/{message_id}/history`: every version, oldest first.
pub fn history(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let allow_empty = call.params.bool_or("allow_empty_topic_name", false)?;
    let me = call.caller();
    let message = visible_message(&app.state, me, id)?;
    if !call.realm.settings.allow_edit_history {
        return Err(ApiError::bad_request("Message edit history is disabled in this organization"));
    }
    let display = call.realm.settings.empty_topic_display_name.clone();
    let show = |topic: &str| {
        if topic.is_empty()
            && !allow_empty
            && matches!(message.destination, Destination::Channel { .. })
        {
            display.clone()
        } else {
            topic.to_owned()
        }
    };
    let versions = versions(&message);
    let original = &versions[0];
    let mut out = vec![json!({
        "topic": show(&original.topic),
        "content": original.content,
        "rendered_content": original.rendered,
        "timestamp": message.timestamp,
        "user_id": message.sender.0,
    })];
    for (k, record) in message.edit_history().iter().enumerate() {
        let (before, after) = (&versions[k], &versions[k + 1]);
        let mut fields = record_fields(record, after, &show);
        fields.insert("topic".into(), json!(show(&after.topic)));
        fields.insert("content".into(), json!(after.content));
        fields.insert("rendered_content".into(), json!(after.rendered));
        if record.prev_content.is_some() {
            fields.insert(
                "content_html_diff".into(),
                json!(html_diff(&before.rendered, &after.rendered)),
            );
        }
        out.push(Value::Object(fields));
    }
    Ok(reply! { "message_history" => out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::system_bots::SystemBot;
    use crate::testkit::World;

    /// A realm with its system bots, a member and a moderator in `pub`,
    /// and three messages in `pub` > `t` (sent at 1000 + id).
    fn move_world() -> (World, User, User, crate::state::Channel, Vec<MessageId>) {
        let mut w = World::new();
        w.system_bots("");
        let member = w.user("", "m@t.test", Role::Member);
        let moderator = w.user("", "mod@t.test", Role::Moderator);
        let channel = w.channel("", "pub", false, &[&member, &moderator]);
        let ids = (0..3).map(|k| w.post(&member, channel.id, "t", &format!("{k}"))).collect();
        (w, member, moderator, channel, ids)
    }

    fn request(id: MessageId, topic: Option<&str>, mode: PropagateMode) -> Request {
        Request {
            id,
            content: None,
            topic: topic.map(str::to_owned),
            channel: None,
            mode,
            notify_old: false,
            notify_new: true,
            realm_url: "http://t.test".into(),
        }
    }

    fn sent(w: &World, id: MessageId) -> i64 {
        w.state.messages.get(&id).unwrap().timestamp
    }

    #[test]
    fn change_all_moves_check_every_message_against_the_time_limit() {
        let (w, member, moderator, _, ids) = move_world();
        let limit = 7 * 24 * 3600 + MOVE_LIMIT_GRACE_SECONDS;
        // The oldest message is exactly at the limit, the others inside it.
        let now = sent(&w, ids[0]) + limit;
        let all = request(ids[2], Some("u"), PropagateMode::ChangeAll);
        let e = plan(&w.state, &member, &all, now).unwrap_err();
        assert_eq!((e.status, e.code), (400, "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED"));
        assert_eq!(
            e.msg,
            "You only have permission to move the 2/3 most recent messages in this topic."
        );
        assert_eq!(
            e.extra,
            vec![
                ("first_message_id_allowed_to_move", json!(ids[1].0)),
                ("total_messages_in_topic", json!(3)),
                ("total_messages_allowed_to_move", json!(2)),
            ]
        );
        // One second earlier every message may move.
        let planned = plan(&w.state, &member, &all, now - 1).unwrap().unwrap();
        assert_eq!(planned.edit.moved, ids);
        // Moderators are not limited; nor are other modes, nor resolving.
        assert!(plan(&w.state, &moderator, &all, now).unwrap().is_some());
        let later = request(ids[2], Some("u"), PropagateMode::ChangeLater);
        assert_eq!(plan(&w.state, &member, &later, now).unwrap().unwrap().edit.moved, [ids[2]]);
        let resolve = request(ids[2], Some("✔ t"), PropagateMode::ChangeAll);
        assert!(plan(&w.state, &member, &resolve, now).unwrap().is_some());
        // The named message itself past the limit: the per-message check,
        // which resolving is exempt from.
        let late = sent(&w, ids[2]) + limit + 1;
        let e = plan(&w.state, &member, &all, late).unwrap_err();
        assert_eq!(e.msg, "The time limit for editing this message's topic has passed");
        assert!(plan(&w.state, &member, &resolve, late).unwrap().is_some());
    }

    /// The text of the notice a plan posts (its only one).
    fn notice_text(notices: &[Mutation]) -> String {
        match notices {
            [Mutation::SendNotice { message, .. }] => message.message.content().to_owned(),
            other => panic!("expected one notice, got {other:?}"),
        }
    }

    #[test]
    fn resolve_notices_and_their_undo() {
        let (mut w, member, _, _, ids) = move_world();
        let now = sent(&w, ids[2]) + 10;
        let resolve = request(ids[0], Some("✔ t"), PropagateMode::ChangeAll);
        let planned = plan(&w.state, &member, &resolve, now).unwrap().unwrap();
        let by = format!("@_**m@t.test|{}**", member.id.0);
        assert_eq!(
            notice_text(&planned.notices),
            format!("{by} has marked this topic as resolved.")
        );
        let mut parts = vec![Mutation::EditMessage(planned.edit)];
        parts.extend(planned.notices);
        w.apply(Mutation::Batch(parts));
        let notice = MessageId(w.state.ids.peek(crate::state::IdKind::Message) - 1);
        let bot = w.state.system_bot(member.realm, SystemBot::Notification).unwrap();
        assert_eq!(w.state.messages.get(&notice).unwrap().sender, bot.id);
        // Unresolving within the grace period deletes that notice…
        let unresolve = request(ids[0], Some("t"), PropagateMode::ChangeAll);
        let soon = plan(&w.state, &member, &unresolve, now + 60).unwrap().unwrap();
        assert_eq!(
            soon.notices,
            vec![Mutation::DeleteMessages { messages: vec![notice], by: member.id }]
        );
        // …and later posts the "unresolved" notice.
        let late = plan(&w.state, &member, &unresolve, now + 61).unwrap().unwrap();
        assert_eq!(
            notice_text(&late.notices),
            format!("{by} has marked this topic as unresolved.")
        );
        // A move that is no resolve never deletes it.
        let elsewhere = request(ids[0], Some("other"), PropagateMode::ChangeAll);
        let moved = plan(&w.state, &member, &elsewhere, now + 1).unwrap().unwrap();
        assert!(
            notice_text(&moved.notices).starts_with("This topic was moved here from #**pub>✔ t**")
        );
    }

    #[test]
    fn resolving_is_not_moving() {
        assert!(is_resolve_toggle("bug", "✔ bug"));
        assert!(is_resolve_toggle("✔ bug", "bug"));
        assert!(!is_resolve_toggle("bug", "✔ other"));
        assert!(!is_resolve_toggle("bug", "feature"));
    }

    /// Two members in a public channel, a third member outside it, and a
    /// private channel with only the first; one message from the first.
    fn world() -> (World, Vec<User>, std::sync::Arc<Message>, ChannelId) {
        let mut w = World::new();
        let users: Vec<User> =
            ["a", "b", "c"].map(|n| w.user("", &format!("{n}@t.test"), Role::Member)).into();
        let public = w.channel("", "pub", false, &[&users[0], &users[1]]);
        let private = w.channel("", "priv", true, &[&users[0]]);
        let id = w.post(&users[0], public.id, "t", "x");
        let message = w.message(id);
        (w, users, message, private.id)
    }

    #[test]
    fn update_message_events_carry_zulips_fields() {
        use crate::events::{Audience, Event};
        let (mut w, users, message, _) = world();
        let at = message.timestamp + 100;
        let Destination::Channel { channel, .. } = message.destination else { unreachable!() };
        let edit = MessageEdit {
            message: message.id,
            editor: users[0].id,
            timestamp: at,
            content: Some(NewContent {
                content: "y".into(),
                rendered: "<p>y</p>".into(),
                is_me_message: false,
                mentioned: vec![users[1].id],
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            }),
            topic: Some("u".into()),
            channel: None,
            moved: vec![message.id],
            counts_as_move: true,
            propagate_mode: PropagateMode::ChangeAll,
        };
        let events = w.apply(Mutation::EditMessage(edit));
        let base = json!({
            "type": "update_message", "user_id": users[0].id.0, "edit_timestamp": at,
            "message_id": message.id.0, "message_ids": [message.id.0], "rendering_only": false,
            "orig_content": "x", "orig_rendered_content": "<p>x</p>", "content": "y",
            "rendered_content": "<p>y</p>", "is_me_message": false,
            "stream_id": channel.0, "stream_name": "pub", "propagate_mode": "change_all",
            "orig_subject": "t", "subject": "u", "topic_links": [],
        });
        let with_flags = |flags: Value| {
            let mut e = base.clone();
            e["flags"] = flags;
            e
        };
        assert_eq!(
            events,
            vec![
                Event::Broadcast {
                    audience: Audience::Users(vec![users[1].id]),
                    event: with_flags(json!(["mentioned"])),
                },
                Event::Broadcast {
                    audience: Audience::Users(vec![users[0].id]),
                    event: with_flags(json!(["read"])),
                },
            ]
        );
        let m = w.state.messages.get(&message.id).unwrap();
        assert_eq!((m.last_edit_timestamp(), m.last_moved_timestamp()), (Some(at), Some(at)));
        let v = versions(&m);
        assert_eq!((v[0].content.as_str(), v[0].topic.as_str()), ("x", "t"));
        assert_eq!((v[1].content.as_str(), v[1].topic.as_str()), ("y", "u"));
    }

    #[test]
    fn moving_into_a_private_channel_deletes_it_for_outsiders() {
        use crate::events::{Audience, Event};
        let (mut w, users, message, private) = world();
        let at = message.timestamp + 100;
        let edit = MessageEdit {
            message: message.id,
            editor: users[0].id,
            timestamp: at,
            content: None,
            topic: None,
            channel: Some(private),
            moved: vec![message.id],
            counts_as_move: true,
            propagate_mode: PropagateMode::ChangeOne,
        };
        let events = w.apply(Mutation::EditMessage(edit));
        let Event::Broadcast { audience, event } = &events[0] else { panic!() };
        assert_eq!(audience, &Audience::Users(vec![users[1].id]));
        assert_eq!(event["type"], "delete_message");
        assert_eq!(event["message_ids"], json!([message.id.0]));
        let Event::Broadcast { audience, event } = &events[1] else { panic!() };
        assert_eq!(audience, &Audience::Users(vec![users[0].id]));
        assert_eq!(event["new_stream_id"], private.0);
        assert!(w.state.flags(users[1].id, message.id).is_none());
        assert!(w.state.flags(users[0].id, message.id).is_some());
        let recipient = w.state.channels.read(&private, |c| c.recipient).unwrap();
        assert_eq!(
            w.state.by_recipient.get(&recipient).unwrap().iter().collect::<Vec<_>>(),
            [message.id]
        );
        assert_eq!(w.state.channels.get(&private).unwrap().first_message_id, Some(message.id));
    }
}
