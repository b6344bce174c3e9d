//! `apply`: the only code that changes `State`.
//!
//! Deterministic: it reads nothing but the state and the mutation. At
//! runtime its only caller is `commit`; at startup `persist` replays the log
//! through it and throws the events away. A mutation that does not fit the
//! state (a missing channel, a reused id) cannot come from a validated
//! commit, so it panics: replay refuses to limp on with diverged state.

use std::sync::atomic::Ordering;

use crate::events::Event;
use crate::mutation::{Mutation, NewMessage};
use crate::state::{Channel, ChannelId, Destination, Flags, IdKind, State, Subscription, UserId};

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
        if new.channel_wildcard {
            flags = flags.with(Flags::STREAM_WILDCARD_MENTIONED);
        }
        if new.topic_wildcard.contains(&user) {
            flags = flags.with(Flags::TOPIC_WILDCARD_MENTIONED);
        }
        state.user_messages.upsert(user, |m| m.insert(message.id, flags));
        recipients.push((user, flags));
    }
    state.index_message(message.clone());
    vec![Event::Message { message: message.id, recipients }]
}
