//! Scheduled messages: `POST /scheduled_messages`, `GET
//! /scheduled_messages`, `PATCH` and `DELETE /scheduled_messages/{id}`, the
//! `scheduled_messages` register section, and `deliver_due`, which the
//! scheduler (`crate::scheduler`) calls to send what has fallen due.
//!
//! Recipients are ids only (a channel id, or user ids). Scheduling and
//! editing check every send rule now, through the same `messages::Draft`
//! the send path uses; delivery checks them again against the state at
//! that time, and a refusal marks the scheduled message failed with the
//! reason instead of sending. Only the owner sees or changes a scheduled
//! message: anyone else's id, like an unknown one, is "does not exist".

use serde_json::Value;

use super::messages::{self, ChannelRef, Draft, Target, UserRef};
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::send::auto_topics;
use crate::state::scheduled::{ScheduledId, ScheduledMessage, ScheduledTo};
use crate::state::{ChannelId, State, User, UserId};

/// Latest delivery time accepted (the last second of year 9999, as far as
/// Zulip's datetimes go).
const MAX_TIMESTAMP: i64 = 253_402_300_799;

fn not_found() -> ApiError {
    ApiError::not_found("Scheduled message does not exist")
}

fn in_the_past() -> ApiError {
    ApiError::bad_request("Scheduled delivery time must be in the future.")
}

/// `type`: `true` for a channel message.
fn parse_kind(kind: &str) -> ApiResult<bool> {
    match kind {
        "stream" | "channel" => Ok(true),
        "direct" | "private" => Ok(false),
        _ => Err(ApiError::bad_request("Invalid message type")),
    }
}

/// `to` of a channel message: one channel id (also as a one-element list).
fn parse_channel_id(to: &Value) -> ApiResult<ChannelId> {
    match to {
        Value::Number(n) => {
            n.as_u64().map(ChannelId).ok_or_else(|| ApiError::invalid("to", "not a channel ID"))
        }
        Value::Array(items) if items.len() == 1 => parse_channel_id(&items[0]),
        _ => Err(ApiError::invalid("to", "not a channel ID")),
    }
}

/// `to` of a direct message: user ids (a list, or one id), deduplicated.
fn parse_user_ids(to: &Value) -> ApiResult<Vec<UserId>> {
    let invalid = || ApiError::invalid("to", "not a list of user IDs");
    let mut ids: Vec<UserId> = match to {
        Value::Number(n) => vec![UserId(n.as_u64().ok_or_else(invalid)?)],
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_u64().map(UserId))
            .collect::<Option<_>>()
            .ok_or_else(invalid)?,
        _ => return Err(invalid()),
    };
    if ids.is_empty() {
        return Err(ApiError::bad_request("Message must have recipients"));
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The `scheduled_delivery_timestamp` parameter, if given, checked to lie
/// in the future.
pub(crate) fn parse_time(call: &mut Call, now: i64) -> ApiResult<Option<i64>> {
    match call.params.int("scheduled_delivery_timestamp")? {
        None => Ok(None),
        Some(t) if t <= now => Err(in_the_past()),
        Some(t) if t > MAX_TIMESTAMP => {
            Err(ApiError::invalid("scheduled_delivery_timestamp", "out of range"))
        }
        Some(t) => Ok(Some(t)),
    }
}

/// The send path's view of where a scheduled message goes.
fn target(to: &ScheduledTo) -> Target {
    match to {
        ScheduledTo::Channel { channel, topic } => {
            Target::Channel { channel: ChannelRef::Id(channel.0), topic: topic.clone() }
        }
        ScheduledTo::Direct { users } => {
            Target::Direct(users.iter().map(|u| UserRef::Id(u.0)).collect())
        }
    }
}

/// Zulip's default for `read_by_sender` on a scheduled message: as for
/// sending, except that a message to oneself alone starts unread.
fn default_read_by_sender(client: &str, sender: &User, to: &ScheduledTo) -> bool {
    let to_self = matches!(to, ScheduledTo::Direct { users } if users == &[sender.id]);
    messages::default_read_by_sender(client) && !to_self
}

fn client_name(call: &Call) -> String {
    if call.client.is_empty() {
        "API".to_owned()
    } else {
        call.client.to_string()
    }
}

/// A draft of `s` as it would be sent now, for checking the send rules
/// (and, at delivery, for sending).
fn draft(app: &App, sender: &User, s: &ScheduledMessage) -> Draft {
    let url = super::realm::realm_url_of(app, sender.realm);
    let (content, client) = (s.content.clone(), s.client.clone());
    Draft::new(&app.state, sender, target(&s.to), content, s.read_by_sender, client, url)
}

/// `POST /scheduled_messages`: schedule a message.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let now = entropy::now();
    let channel = parse_kind(&call.params.required_string("type")?)?;
    let to_raw = call.params.json_or_string("to")?.ok_or_else(|| ApiError::missing("to"))?;
    let content = call.params.required_string("content")?;
    let to = if channel {
        let topic = call.params.string("topic").ok_or_else(|| ApiError::missing("topic"))?;
        let topic = messages::normalize_topic(&topic, call)?;
        ScheduledTo::Channel { channel: parse_channel_id(&to_raw)?, topic }
    } else {
        ScheduledTo::Direct { users: parse_user_ids(&to_raw)? }
    };
    let content = messages::normalize_content(&content)?;
    let deliver_at =
        parse_time(call, now)?.ok_or_else(|| ApiError::missing("scheduled_delivery_timestamp"))?;
    let sender = call.caller().clone();
    let client = client_name(call);
    let read_by_sender = match call.params.bool("read_by_sender")? {
        Some(value) => value,
        None => default_read_by_sender(&client, &sender, &to),
    };
    let mut s = ScheduledMessage {
        id: ScheduledId(0), // decided under the writer lock
        realm: sender.realm,
        sender: sender.id,
        to,
        content,
        rendered_content: String::new(),
        deliver_at,
        read_by_sender,
        client,
        failure: None,
    };
    let draft = draft(app, &sender, &s);
    s.rendered_content = draft.html().to_owned();
    let id = app.committer.commit(|state| {
        // Every rule of sending applies now (and again at delivery).
        draft.build(state, &sender)?;
        let id = state.scheduled.peek();
        Ok((Mutation::ScheduleMessage(ScheduledMessage { id, ..s }), id))
    })?;
    Ok(reply! { "scheduled_message_id" => id.0 })
}

/// `GET /scheduled_messages`: the caller's pending and failed scheduled
/// messages, by delivery time.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "scheduled_messages" => listing(&app.state, call.caller().id) })
}

fn listing(state: &State, user: UserId) -> Vec<Value> {
    state.scheduled.of_user(user).iter().map(ScheduledMessage::to_api).collect()
}

/// The caller's scheduled message `id`; anyone else's is "does not exist".
fn owned(state: &State, me: &User, id: ScheduledId) -> ApiResult<ScheduledMessage> {
    state.scheduled.by_id.get(&id).filter(|s| s.sender == me.id).ok_or_else(not_found)
}

/// `PATCH /scheduled_messages/{scheduled_message_id}`: change the type and
/// recipients, topic, content or delivery time. Changing the type needs
/// `to` (and a `topic` for a channel); a topic alone keeps the channel.
/// A failed one may be edited to try again (its time must then be in the
/// future).
pub fn edit(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = ScheduledId(call.path_id(0, "scheduled_message_id")?);
    let now = entropy::now();
    let kind = call.params.string("type").map(|k| parse_kind(&k)).transpose()?;
    let to_raw = call.params.json_or_string("to")?;
    let topic = call.params.string("topic");
    let content = call.params.string("content");
    let deliver_at = parse_time(call, now)?;
    if kind.is_none()
        && to_raw.is_none()
        && topic.is_none()
        && content.is_none()
        && deliver_at.is_none()
    {
        return Err(ApiError::bad_request("Nothing to change"));
    }
    if kind.is_some() && to_raw.is_none() {
        return Err(ApiError::bad_request(
            "Recipient required when updating type of scheduled message.",
        ));
    }
    let topic = topic.map(|t| messages::normalize_topic(&t, call)).transpose()?;
    let content = content.map(|c| messages::normalize_content(&c)).transpose()?;
    let me = call.caller().clone();

    let old = owned(&app.state, &me, id)?;
    let mut new = old.clone();
    let channel = kind.unwrap_or(matches!(old.to, ScheduledTo::Channel { .. }));
    new.to = match (channel, &old.to) {
        (true, old_to) => {
            let channel = match (&to_raw, old_to) {
                (Some(raw), _) => parse_channel_id(raw)?,
                (None, ScheduledTo::Channel { channel, .. }) => *channel,
                (None, ScheduledTo::Direct { .. }) => {
                    return Err(ApiError::bad_request(
                        "Recipient required when updating type of scheduled message.",
                    ))
                }
            };
            let topic = match (topic, old_to) {
                (Some(topic), _) => topic,
                (None, ScheduledTo::Channel { topic, .. }) => topic.clone(),
                (None, ScheduledTo::Direct { .. }) => {
                    return Err(ApiError::bad_request(
                        "Topic required when updating scheduled message type to channel.",
                    ))
                }
            };
            ScheduledTo::Channel { channel, topic }
        }
        (false, old_to) => match &to_raw {
            Some(raw) => ScheduledTo::Direct { users: parse_user_ids(raw)? },
            None => old_to.clone(),
        },
    };
    if let Some(content) = content {
        new.content = content;
    }
    if let Some(t) = deliver_at {
        new.deliver_at = t;
    } else if new.deliver_at <= now {
        // A failed one (or one about to go) needs a new time to try again.
        return Err(in_the_past());
    }
    new.failure = None;
    let draft = draft(app, &me, &new);
    new.rendered_content = draft.html().to_owned();
    app.committer.commit(|state| {
        let current = owned(state, &me, id)?;
        if current != old {
            // Changed (or delivered) since it was read: start over.
            return Err(ApiError::bad_request(
                "The scheduled message changed meanwhile; try again.",
            ));
        }
        draft.build(state, &me)?;
        Ok((Mutation::EditScheduled(new), ()))
    })?;
    Ok(reply! {})
}

/// `DELETE /scheduled_messages/{scheduled_message_id}`.
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = ScheduledId(call.path_id(0, "scheduled_message_id")?);
    let me = call.caller().clone();
    app.committer.commit(|state| {
        owned(state, &me, id)?;
        Ok((Mutation::DeleteScheduled { id }, ()))
    })?;
    Ok(reply! {})
}

/// Register section `scheduled_messages` (fetch type `scheduled_messages`):
/// the user's pending and failed scheduled messages, by delivery time.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("scheduled_messages") {
        out.insert("scheduled_messages".into(), Value::from(listing(&app.state, user.id)));
    }
}

/// What one delivery attempt did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Sent as this message.
    Sent(crate::state::MessageId),
    /// Refused by the send rules; marked failed with this reason.
    Failed(String),
    /// No longer due (deleted, edited to later, or already delivered).
    Gone,
}

/// Delivers scheduled message `id` if it is still due at `now`: one
/// commit that either sends it (through the send path, every rule checked
/// against current state) and removes it, or marks it failed. Never
/// returns an error: the outcome is recorded either way.
pub fn deliver(app: &App, id: ScheduledId, now: i64) -> Delivery {
    let Some(s) = app.state.scheduled.by_id.get(&id) else { return Delivery::Gone };
    let sender = app.state.users.get(&s.sender);
    let draft = sender.as_ref().map(|u| draft(app, u, &s));
    let outcome = app.committer.commit(|state| {
        let current = state.scheduled.by_id.get(&id);
        let still_due = |c: &ScheduledMessage| c.failure.is_none() && c.deliver_at <= now;
        if current.as_ref() != Some(&s) || !still_due(&s) {
            // Changed since read: the scheduler looks again.
            return Err(ApiError::not_found("gone"));
        }
        let sent = match (state.users.get(&s.sender), &draft) {
            (Some(user), Some(draft)) if user.is_active => {
                draft.build(state, &user).map(|message| (message, user, draft))
            }
            _ => Err(ApiError::bad_request("The sender's account is deactivated.")),
        };
        Ok(match sent {
            Ok((message, sender, draft)) => {
                // Everything a sent message logs with it, bots' deliveries
                // included: the one list `POST /messages` uses.
                let (parts, outcome) = messages::with_message(state, &sender, draft, &message);
                let out = (Delivery::Sent(message.message.id), Some(outcome));
                (auto_topics::batch(Mutation::DeliverScheduled { id, message }, parts), out)
            }
            Err(e) => {
                let out = (Delivery::Failed(e.msg.clone()), None);
                // The Notification Bot tells the owner, in the same record.
                let owner = state.users.get(&s.sender);
                let notice = owner.and_then(|owner| {
                    crate::send::bot_messages::scheduled_failure(
                        state,
                        &owner,
                        s.deliver_at,
                        &e.msg,
                        now,
                    )
                });
                let failed = Mutation::FailScheduled { id, reason: e.msg };
                match notice {
                    Some(notice) => (Mutation::Batch(vec![failed, notice]), out),
                    None => (failed, out),
                }
            }
        })
    });
    match outcome {
        Ok((delivery, sent)) => {
            if let Some(sent) = sent {
                sent.sent(app);
            }
            delivery
        }
        Err(_) => Delivery::Gone,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::params::Params;
    use crate::events::{Audience, Event};
    use crate::mutation::build::{self, NewUser};
    use crate::state::system_bots::SystemBot;
    use crate::state::{Role, Subscription};

    struct Fixture {
        app: std::sync::Arc<App>,
        _dir: tempfile::TempDir,
    }

    /// The seeded dev realm with its system bots, served in process.
    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::testkit::in_process_dev_app(dir.path(), &[]);
        Fixture { app, _dir: dir }
    }

    fn user(app: &App, email: &str) -> User {
        let realm = app.state.realm_by_subdomain("").unwrap();
        app.state.user_by_email(realm.id, email).unwrap()
    }

    fn call(app: &App, who: &User, path: Vec<String>, params: &[(&str, &str)]) -> Call {
        Call {
            realm: app.state.realms.get(&who.realm).unwrap().into(),
            caller: Some(who.clone().into()),
            params: Params::from_pairs(params.iter().copied()),
            path,
            client: "test".into(),
            raw_fields: Vec::new(),
            sorted_reply: None,
            files: Vec::new(),
        }
    }

    /// Every broadcast event received so far, as (audience, JSON).
    fn broadcasts(rx: &may::sync::mpsc::Receiver<std::sync::Arc<Event>>) -> Vec<(Audience, Value)> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .filter_map(|e| match &*e {
                Event::Broadcast { audience, event } => Some((audience.clone(), event.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_delivery_the_rules_refuse_is_marked_failed_and_can_be_retried() {
        let f = fixture();
        let app = &*f.app;
        let hamlet = user(app, "hamlet@natter.test");
        let denmark = app.state.channel_by_name(hamlet.realm, "Denmark").unwrap();
        let events = app.hub.subscribe();
        let at = entropy::now() + 100;
        let (to, at_s) = (denmark.id.0.to_string(), at.to_string());
        let params = [
            ("type", "stream"),
            ("to", to.as_str()),
            ("topic", "all hands"),
            ("content", "@**all** meeting"),
            ("scheduled_delivery_timestamp", at_s.as_str()),
        ];
        let reply = create(app, &mut call(app, &hamlet, vec![], &params)).unwrap();
        let id = ScheduledId(reply["scheduled_message_id"].as_u64().unwrap());
        assert_eq!(deliver(app, id, at - 1), Delivery::Gone, "not due yet");

        // The channel grows past the wildcard threshold before delivery.
        let realm = app.state.realm_by_subdomain("").unwrap();
        for i in 0..16 {
            let email = format!("extra{i}@natter.test");
            let new = NewUser { email: &email, full_name: "Extra", role: Role::Member, bot: None };
            app.committer
                .commit(|s| Ok((build::user(s, realm.id, &new, entropy::api_key(), 0)?, ())))
                .unwrap();
            let extra = user(app, &email);
            let sub = Subscription::new("#76ce90".into());
            app.committer
                .commit(|_| {
                    let m = Mutation::Subscribe {
                        channel: denmark.id,
                        subscribers: vec![(extra.id, sub)],
                    };
                    Ok((m, ()))
                })
                .unwrap();
        }
        let why = "You do not have permission to use channel wildcard mentions in this channel.";
        assert_eq!(deliver(app, id, at), Delivery::Failed(why.into()));
        let listed = listing(&app.state, hamlet.id);
        assert_eq!(listed[0]["failed"], true);
        assert_eq!(listed[0]["failure_message"], why);
        // The Notification Bot told Hamlet why, in the same record.
        let bot = app.state.system_bot(hamlet.realm, SystemBot::Notification).unwrap();
        let last = crate::state::MessageId(app.state.ids.peek(crate::state::IdKind::Message) - 1);
        let notice = app.state.messages.get(&last).unwrap();
        assert_eq!(notice.sender, bot.id);
        let shown = crate::view::time::iso8601(at).replacen('T', " ", 1);
        assert_eq!(
            notice.content(),
            format!(
                "The message you scheduled for <time:{shown}>  was not sent because of the \
                 following error:\n\n> {why}\n\n[View scheduled messages](#scheduled)"
            )
        );
        assert!(notice.rendered().starts_with(&format!(
            "<p>The message you scheduled for <time datetime=\"{}\">{shown}</time>",
            crate::view::time::iso8601(at).replace("+00:00", "Z")
        )));
        assert!(notice.rendered().contains("<blockquote>"), "{}", notice.rendered());
        assert_eq!(app.state.flags(hamlet.id, last), Some(crate::state::Flags::default()));
        assert_eq!(deliver(app, id, at + 10), Delivery::Gone, "failed ones wait for an edit");
        assert!(app.state.scheduled.due(at + 10).0.is_empty());

        // Editing clears the failure; then it goes.
        let path = vec![id.0.to_string()];
        edit(app, &mut call(app, &hamlet, path, &[("content", "meeting")])).unwrap();
        assert_eq!(listing(&app.state, hamlet.id)[0]["failed"], false);
        let Delivery::Sent(message) = deliver(app, id, at) else { panic!("not sent") };
        let sent = app.state.messages.get(&message).unwrap();
        assert_eq!((sent.sender, sent.content()), (hamlet.id, "meeting"));
        assert!(app.state.scheduled.by_id.get(&id).is_none());
        assert_eq!(deliver(app, id, at), Delivery::Gone, "never twice");

        // The owner alone heard each step.
        let mine: Vec<Value> = broadcasts(&events)
            .into_iter()
            .filter(|(_, e)| e["type"] == "scheduled_messages")
            .map(|(audience, e)| {
                assert_eq!(audience, Audience::Users(vec![hamlet.id]));
                e
            })
            .collect();
        let ops: Vec<&str> = mine.iter().map(|e| e["op"].as_str().unwrap()).collect();
        assert_eq!(ops, ["add", "update", "update", "remove"]);
        assert_eq!(mine[0]["scheduled_messages"][0]["content"], "@**all** meeting");
        assert_eq!(mine[1]["scheduled_message"]["failed"], true);
        assert_eq!(mine[2]["scheduled_message"]["failed"], false);
        assert_eq!(
            mine[3],
            json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": id.0})
        );
    }

    #[test]
    fn register_section_lists_the_users_own() {
        let f = fixture();
        let app = &*f.app;
        let hamlet = user(app, "hamlet@natter.test");
        let othello = user(app, "othello@natter.test");
        let at = (entropy::now() + 100).to_string();
        let to = format!("[{}]", othello.id.0);
        let params = [
            ("type", "direct"),
            ("to", to.as_str()),
            ("content", "hi"),
            ("scheduled_delivery_timestamp", at.as_str()),
        ];
        create(app, &mut call(app, &hamlet, vec![], &params)).unwrap();
        let mut out = Reply::new();
        register_state(app, &hamlet, &|t| t == "scheduled_messages", &mut out);
        assert_eq!(out["scheduled_messages"].as_array().unwrap().len(), 1);
        assert_eq!(out["scheduled_messages"][0]["to"], json!([othello.id.0]));
        let mut out = Reply::new();
        register_state(app, &othello, &|t| t == "scheduled_messages", &mut out);
        assert_eq!(out["scheduled_messages"], json!([]));
        let mut out = Reply::new();
        register_state(app, &hamlet, &|_| false, &mut out);
        assert!(out.is_empty());
    }
}
