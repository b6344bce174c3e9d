//! Typing notifications: `POST /typing`, and typing while editing a
//! message, `POST /messages/{message_id}/typing` (`typing_edit_message`
//! events).
//!
//! Ephemeral: nothing is logged or stored. The event is published straight
//! to the hub (never through the log) for the users who receive typing
//! notifications (`receives_typing_notifications`). Clients repeat `start`
//! and expire it themselves after the periods register announces (the
//! `server_typing_*` fields of register's realm section).

use serde_json::{json, Value};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::events::{Audience, Event};
use crate::state::access::can_read_channel;
use crate::state::{ChannelId, Destination, MessageId, State, User, UserId};

/// What is being composed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypingTarget {
    /// A direct message to these users (the sender is added).
    Direct(Vec<u64>),
    /// A channel message in this topic (`""` = the empty topic).
    Channel {
        /// The channel id.
        channel: u64,
        /// The topic, normalized.
        topic: String,
    },
}

/// `POST /typing`: `op` = `start` | `stop`; `type` = `direct` (default,
/// `to` = JSON list of user ids) or `stream` / `channel` (`stream_id`,
/// `topic`). The old `private` type is refused.
pub fn set_typing(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let op = call.params.required_string("op")?;
    if op != "start" && op != "stop" {
        return Err(ApiError::invalid("op", "must be 'start' or 'stop'"));
    }
    let kind = call.params.string("type").unwrap_or_else(|| "direct".to_owned());
    let target = match kind.as_str() {
        "direct" => {
            let to = call.params.json("to")?.ok_or_else(|| ApiError::missing("to"))?;
            let ids = to
                .as_array()
                .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
                .ok_or_else(|| ApiError::invalid("to", "not a list of user IDs"))?;
            TypingTarget::Direct(ids)
        }
        "stream" | "channel" => {
            let channel = call.params.int("stream_id")?.ok_or_else(|| {
                ApiError::bad_request("Missing channel ID").with("var_name", "stream_id")
            })?;
            let channel = u64::try_from(channel)
                .map_err(|_| ApiError::invalid("stream_id", "not a channel ID"))?;
            let topic = call.params.string("topic").ok_or_else(|| ApiError::missing("topic"))?;
            let topic = topic.trim();
            let topic =
                if topic == "(no topic)" || topic == call.realm.settings.empty_topic_display_name {
                    String::new()
                } else {
                    topic.to_owned()
                };
            TypingTarget::Channel { channel, topic }
        }
        _ => return Err(ApiError::invalid("type", "must be 'direct', 'stream' or 'channel'")),
    };
    let event = typing_event(&app.state, call.caller(), &target, &op)?;
    app.hub.publish(event.into_iter().collect());
    Ok(Reply::new())
}

/// `POST /messages/{message_id}/typing`: `op` = `start` | `stop` while the
/// caller edits a message they may see. A `typing_edit_message` event goes
/// to whoever would hear of the edit — the channel's subscribers, or the
/// direct message's participants — who receive typing notifications; its
/// `recipient` names the conversation (`channel` with `channel_id` and
/// `topic`, or `direct` with the notified `user_ids`), as in Zulip.
pub fn set_edit_typing(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let op = call.params.required_string("op")?;
    if op != "start" && op != "stop" {
        return Err(ApiError::invalid("op", "must be 'start' or 'stop'"));
    }
    let state = &app.state;
    let me = call.caller();
    let message = super::reactions::visible_message(state, me, id)?;
    let settings = state.settings.of(me.id);
    let receives = |u: &UserId| {
        state.users.read(u, |u| u.is_active) == Some(true)
            && state.settings.of(*u).bool("receives_typing_notifications")
    };
    let (audience, recipient) = match &message.destination {
        Destination::Channel { channel, .. } => {
            if !settings.bool("send_stream_typing_notifications") {
                return Err(ApiError::bad_request(
                    "User has disabled typing notifications for channel messages",
                ));
            }
            let subscribers = state
                .channels
                .read(channel, |c| c.subscribers.iter().copied().collect::<Vec<UserId>>());
            let audience: Vec<UserId> =
                subscribers.unwrap_or_default().into_iter().filter(receives).collect();
            let recipient = json!({
                "type": "channel", "channel_id": channel.0, "topic": message.topic(),
            });
            (audience, recipient)
        }
        Destination::Direct { participants } => {
            if !settings.bool("send_private_typing_notifications") {
                return Err(ApiError::bad_request(
                    "User has disabled typing notifications for direct messages",
                ));
            }
            let audience: Vec<UserId> = participants.iter().copied().filter(receives).collect();
            let ids: Vec<u64> = audience.iter().map(|u| u.0).collect();
            (audience, json!({ "type": "direct", "user_ids": ids }))
        }
    };
    if !audience.is_empty() {
        let event = json!({
            "type": "typing_edit_message",
            "op": op,
            "sender_id": me.id.0,
            "message_id": message.id.0,
            "recipient": recipient,
        });
        app.hub.publish(vec![Event::Broadcast { audience: Audience::Users(audience), event }]);
    }
    Ok(Reply::new())
}

/// The typing event for `target`, addressed to the interested users, or
/// `None` when nobody wants it. Refuses targets the sender may not write to.
pub fn typing_event(
    state: &State,
    sender: &User,
    target: &TypingTarget,
    op: &str,
) -> ApiResult<Option<Event>> {
    let settings = state.settings.of(sender.id);
    let who = |u: &User| json!({ "user_id": u.id.0, "email": u.email });
    let (audience, mut event): (Vec<UserId>, Value) = match target {
        TypingTarget::Direct(ids) => {
            if ids.is_empty() {
                return Err(ApiError::bad_request("Empty 'to' list"));
            }
            if !settings.bool("send_private_typing_notifications") {
                return Err(ApiError::bad_request(
                    "User has disabled typing notifications for direct messages",
                ));
            }
            let mut users = vec![sender.clone()];
            for id in ids {
                let user = state
                    .user_in_realm(sender.realm, UserId(*id))
                    .filter(|u| u.is_active)
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
                if !users.iter().any(|u| u.id == user.id) {
                    users.push(user);
                }
            }
            users.sort_by_key(|u| u.id);
            let recipients: Vec<Value> = users.iter().map(who).collect();
            let event = json!({ "message_type": "direct", "recipients": recipients });
            (users.iter().map(|u| u.id).collect(), event)
        }
        TypingTarget::Channel { channel, topic } => {
            if !settings.bool("send_stream_typing_notifications") {
                return Err(ApiError::bad_request(
                    "User has disabled typing notifications for channel messages",
                ));
            }
            let channel = state
                .channel_in_realm(sender.realm, ChannelId(*channel))
                .filter(|c| can_read_channel(sender, c))
                .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
            let event =
                json!({ "message_type": "stream", "stream_id": channel.id.0, "topic": topic });
            (channel.subscribers.iter().copied().collect(), event)
        }
    };
    event["type"] = json!("typing");
    event["op"] = json!(op);
    event["sender"] = who(sender);
    let interested: Vec<UserId> = audience
        .into_iter()
        .filter(|u| state.settings.of(*u).bool("receives_typing_notifications"))
        .collect();
    if interested.is_empty() {
        return Ok(None);
    }
    Ok(Some(Event::Broadcast { audience: Audience::Users(interested), event }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::build::NewChannel;
    use crate::mutation::Mutation;
    use crate::state::settings::{SettingValue, SettingsChange};
    use crate::state::Role;
    use crate::testkit::World;

    fn parts(e: Option<Event>) -> (Vec<UserId>, Value) {
        match e {
            Some(Event::Broadcast { audience: Audience::Users(u), event }) => (u, event),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn direct_typing_goes_to_every_participant_who_wants_it() {
        let mut w = World::new();
        let (a, b, c) = (
            w.user("", "a@x.test", Role::Member),
            w.user("", "b@x.test", Role::Member),
            w.user("", "c@x.test", Role::Member),
        );
        let target = TypingTarget::Direct(vec![b.id.0, c.id.0, b.id.0]);
        let (to, e) = parts(typing_event(&w.state, &a, &target, "start").unwrap());
        assert_eq!(to, vec![a.id, b.id, c.id]);
        assert_eq!(e["type"], "typing");
        assert_eq!(e["op"], "start");
        assert_eq!(e["message_type"], "direct");
        assert_eq!(e["sender"], json!({ "user_id": a.id.0, "email": "a@x.test" }));
        assert_eq!(e["recipients"].as_array().unwrap().len(), 3);
        assert!(e.get("stream_id").is_none());

        // c turns typing notifications off: c no longer hears them.
        w.apply(Mutation::UpdateSettings(SettingsChange {
            user: c.id,
            full_name: None,
            timezone: None,
            settings: vec![("receives_typing_notifications".into(), SettingValue::Bool(false))],
        }));
        let (to, _) = parts(typing_event(&w.state, &a, &target, "stop").unwrap());
        assert_eq!(to, vec![a.id, b.id]);

        // Unknown users and empty lists are refused.
        for bad in [vec![], vec![9999]] {
            let err = typing_event(&w.state, &a, &TypingTarget::Direct(bad), "start").unwrap_err();
            assert_eq!(err.code, "BAD_REQUEST");
        }
        // A sender who disabled sending them is refused.
        w.apply(Mutation::UpdateSettings(SettingsChange {
            user: a.id,
            full_name: None,
            timezone: None,
            settings: vec![("send_private_typing_notifications".into(), SettingValue::Bool(false))],
        }));
        assert!(typing_event(&w.state, &a, &target, "start").is_err());
    }

    #[test]
    fn channel_typing_goes_to_subscribers_and_respects_privacy() {
        let mut w = World::new();
        let (a, b, outsider) = (
            w.user("", "a@x.test", Role::Member),
            w.user("", "b@x.test", Role::Member),
            w.user("", "o@x.test", Role::Member),
        );
        let guest = w.user("", "g@x.test", Role::Guest);
        let make = |w: &mut World, name: &str, private: bool| {
            let subscribers = [a.id, b.id];
            let new = NewChannel {
                name,
                description: "",
                invite_only: private,
                creator: Some(a.id),
                subscribers: &subscribers,
            };
            w.add_channel("", &new).id.0
        };
        let public = make(&mut w, "pub", false);
        let private = make(&mut w, "priv", true);

        let target = TypingTarget::Channel { channel: public, topic: "t".into() };
        let (to, e) = parts(typing_event(&w.state, &a, &target, "start").unwrap());
        assert_eq!(to, vec![a.id, b.id]);
        assert_eq!((e["message_type"].as_str(), e["topic"].as_str()), (Some("stream"), Some("t")));
        assert_eq!(e["stream_id"], public);
        assert!(e.get("recipients").is_none());
        // A non-subscriber may type in a public channel...
        assert!(typing_event(&w.state, &outsider, &target, "start").is_ok());
        // ...but not in a private one, nor may a guest in an unsubscribed one.
        let secret = TypingTarget::Channel { channel: private, topic: "t".into() };
        assert!(typing_event(&w.state, &outsider, &secret, "start").is_err());
        assert!(typing_event(&w.state, &guest, &target, "start").is_err());
        let missing = TypingTarget::Channel { channel: 9999, topic: "t".into() };
        assert!(typing_event(&w.state, &a, &missing, "start").is_err());
    }
}
