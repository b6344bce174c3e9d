//! `apply`: the only code that changes `State`.
//!
//! Deterministic: it reads nothing but the state and the mutation. At
//! runtime its only caller is `commit`; at startup `persist` replays the log
//! through it and throws the events away. A mutation that does not fit the
//! state (a missing channel, a reused id) cannot come from a validated
//! commit, so it panics: replay refuses to limp on with diverged state.

mod settings;

use std::sync::atomic::Ordering;

use crate::events::{Audience, Event};
use crate::mutation::{FlagsChange, Mutation, NewMessage};
use crate::state::{
    Channel, ChannelId, Destination, Flags, IdKind, MessageId, State, Subscription, UserId,
};

/// Applies mutation number `seq` and returns the events it causes.
///
/// # Panics
/// If `seq` is not exactly one past the last applied seq, or the mutation
/// contradicts the state.
pub fn apply(state: &State, seq: u64, mutation: &Mutation) -> Vec<Event> {
    let applied = state.applied_seq();
    assert_eq!(seq, applied + 1, "apply: mutation seq {seq} does not follow applied seq {applied}");
    let events = match mutation {
        Mutation::CreateRealm { realm, groups } => {
            assert!(state.realms.get(&realm.id).is_none(), "apply: realm {} exists", realm.id);
            state.ids.claim(IdKind::Realm, realm.id.0);
            for group in groups {
                state.ids.claim(IdKind::Group, group.id.0);
                state.groups.insert(group.id, group.clone());
            }
            state.index_realm(realm.clone());
            Vec::new()
        }
        Mutation::CreateUser(user) => {
            assert!(state.users.get(&user.id).is_none(), "apply: user {} exists", user.id);
            assert!(state.realms.contains(&user.realm), "apply: no realm {}", user.realm);
            state.ids.claim(IdKind::User, user.id.0);
            state.index_user(user.clone());
            vec![Event::RealmUserAdd { realm: user.realm, user: user.id }]
        }
        Mutation::CreateChannel { channel, subscribers } => {
            assert!(
                state.channels.get(&channel.id).is_none(),
                "apply: channel {} exists",
                channel.id
            );
            state.ids.claim(IdKind::Channel, channel.id.0);
            state.ids.claim(IdKind::Recipient, channel.recipient.0);
            state.index_channel(Channel { subscribers: Default::default(), ..channel.clone() });
            let mut events =
                vec![Event::ChannelCreate { realm: channel.realm, channel: channel.id }];
            events.extend(subscribe(state, channel.id, subscribers));
            events
        }
        Mutation::Subscribe { channel, subscribers } => subscribe(state, *channel, subscribers),
        Mutation::SendMessage(new) => send_message(state, new),
        Mutation::UpdateFlags(change) => update_flags(state, change),
        Mutation::UpdateSettings(change) => settings::update_settings(state, change),
    };
    state.applied_seq.store(seq, Ordering::Release);
    events
}

fn subscribe(
    state: &State,
    channel: ChannelId,
    subscribers: &[(UserId, Subscription)],
) -> Vec<Event> {
    if subscribers.is_empty() {
        return Vec::new();
    }
    for (user, sub) in subscribers {
        assert!(state.users.contains(user), "apply: no user {user}");
        state.subscriptions.upsert(*user, |subs| subs.insert(channel, sub.clone()));
    }
    state
        .channels
        .update(&channel, |c| c.subscribers.extend(subscribers.iter().map(|(u, _)| *u)))
        .unwrap_or_else(|| panic!("apply: no channel {channel}"));
    vec![Event::SubscriptionAdd { channel, users: subscribers.iter().map(|(u, _)| *u).collect() }]
}

fn send_message(state: &State, new: &NewMessage) -> Vec<Event> {
    let message = &new.message;
    assert!(state.messages.get(&message.id).is_none(), "apply: message {} exists", message.id);
    state.ids.claim(IdKind::Message, message.id.0);
    state.ids.claim(IdKind::Recipient, message.recipient.0);

    let audience: Vec<UserId> = match &message.destination {
        Destination::Channel { channel, .. } => {
            let subscribers = state
                .channels
                .update(channel, |c| {
                    c.first_message_id.get_or_insert(message.id);
                    c.subscribers.clone()
                })
                .unwrap_or_else(|| panic!("apply: no channel {channel}"));
            let mut audience: Vec<UserId> = subscribers.into_iter().collect();
            if !audience.contains(&message.sender) {
                audience.push(message.sender);
            }
            audience
        }
        Destination::Direct { participants } => {
            state.direct_recipients.insert(participants.clone(), message.recipient);
            participants.clone()
        }
    };

    let mut recipients = Vec::with_capacity(audience.len());
    for user in audience {
        let mut flags = Flags::default();
        if user == message.sender && new.read_by_sender {
            flags = flags.with(Flags::READ);
        }
        if new.mentioned.contains(&user) {
            flags = flags.with(Flags::MENTIONED);
        }
        state.user_messages.upsert(user, |m| m.insert(message.id, flags));
        recipients.push((user, flags));
    }
    state.index_message(message.clone());
    vec![Event::Message { message: message.id, recipients }]
}

/// Sets or clears one flag of one user on some messages; emits Zulip's
/// `update_message_flags` event (with the legacy `operation` key and, when
/// messages become unread, the `message_details` clients need to rebuild
/// their unread counts).
fn update_flags(state: &State, change: &FlagsChange) -> Vec<Event> {
    let FlagsChange { user, add, flag, messages, historical } = change;
    assert!(state.users.contains(user), "apply: no user {user}");
    state.user_messages.upsert(*user, |mine| {
        for id in historical {
            mine.entry(*id).or_insert(Flags::READ.with(Flags::HISTORICAL));
        }
        for id in messages {
            if let Some(flags) = mine.get_mut(id) {
                *flags = if *add { flags.with(*flag) } else { flags.without(*flag) };
            }
        }
    });
    let name = flag.names().first().copied().unwrap_or("read");
    let op = if *add { "add" } else { "remove" };
    let mut event = serde_json::json!({
        "type": "update_message_flags",
        "op": op,
        "operation": op,
        "flag": name,
        "messages": messages.iter().map(|m| m.0).collect::<Vec<_>>(),
        "all": false,
    });
    if !*add && *flag == Flags::READ {
        event["message_details"] = unread_details(state, *user, messages);
    }
    vec![Event::Broadcast { audience: Audience::Users(vec![*user]), event }]
}

/// Zulip's `message_details` for messages marked unread: per message id,
/// its kind, conversation and whether it mentions the user.
fn unread_details(state: &State, user: UserId, messages: &[MessageId]) -> serde_json::Value {
    let mut details = serde_json::Map::new();
    let muted = |channel: &ChannelId| {
        state
            .subscriptions
            .read(&user, |s| s.get(channel).is_some_and(|s| s.is_muted))
            .unwrap_or(false)
    };
    for id in messages {
        let Some(flags) = state.flags(user, *id) else { continue };
        let Some(destination) = state.messages.read(id, |m| m.destination.clone()) else {
            continue;
        };
        let mut entry = match destination {
            Destination::Channel { channel, topic } => serde_json::json!({
                "type": "stream",
                "stream_id": channel.0,
                "topic": topic,
                "unmuted_stream_msg": !muted(&channel),
            }),
            Destination::Direct { participants } => serde_json::json!({
                "type": "private",
                "user_ids": participants.iter().filter(|u| **u != user).map(|u| u.0).collect::<Vec<_>>(),
            }),
        };
        if flags.contains(Flags::MENTIONED)
            || flags.contains(Flags::STREAM_WILDCARD_MENTIONED)
            || flags.contains(Flags::TOPIC_WILDCARD_MENTIONED)
        {
            entry["mentioned"] = serde_json::Value::Bool(true);
        }
        details.insert(id.0.to_string(), entry);
    }
    serde_json::Value::Object(details)
}
