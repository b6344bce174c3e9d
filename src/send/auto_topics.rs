//! Automatic topic visibility on send, as Zulip does it: sending to a
//! channel topic may follow or unmute the topic for the sender (their
//! `automatically_follow_topics_policy` and
//! `automatically_unmute_topics_in_muted_streams_policy`: 1 "on
//! participation", 2 "on send", 3 "on initiation", 4 never), and a personal
//! mention follows it for a mentioned user with
//! `automatically_follow_topics_where_mentioned`.
//!
//! Worked out under the writer lock from the message about to be sent; the
//! changes are `SetUserTopic`s logged in the same `Mutation::Batch` as the
//! message, so the message and the policy change are durable together. A
//! followed topic is never "downgraded" to unmuted, and nothing is logged
//! when the policy would not change.
//!
//! Moving a whole topic (`change_all`) carries its visibility policies
//! along (`policies_follow_a_move`), logged in the move's batch: each
//! user's policy leaves the old topic and applies to the new one — if the
//! user can still read the destination channel; where the user already has
//! a policy for the destination topic, the more attentive of the two stays
//! (followed > unmuted > muted), so a move never hides a topic someone
//! followed.

use crate::mutation::{Mutation, NewMessage};
use crate::state::access::can_read_channel;
use crate::state::personal::{PersonalChange, UserTopics};
use crate::state::settings::SettingValue;
use crate::state::{ChannelId, Destination, State, UserId};

/// `visibility_policy` values.
const MUTED: u8 = 1;
const UNMUTED: u8 = 2;
const FOLLOWED: u8 = 3;

/// Values of the two automatic policies.
const ON_PARTICIPATION: i64 = 1;
const ON_SEND: i64 = 2;
const ON_INITIATION: i64 = 3;

/// One automatic change: `user`'s policy for the message's topic becomes
/// `policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AutoPolicy {
    pub user: UserId,
    pub policy: u8,
}

/// The automatic policy changes sending `new` causes (the sender's first,
/// if any). `personal_mentions` are the user ids the content mentions by
/// name (not silently, not through a group or wildcard). Call under the
/// writer lock, before `new` is applied.
pub(crate) fn on_send(
    state: &State,
    new: &NewMessage,
    personal_mentions: &[u64],
) -> Vec<AutoPolicy> {
    let Destination::Channel { channel, topic } = &new.message.destination else {
        return Vec::new();
    };
    let sender = new.message.sender;
    let mut out = Vec::new();
    let current = current_policy(state, sender, *channel, topic);
    if let Some(policy) = for_sender(state, sender, *channel, topic, current) {
        if changes(current, policy) {
            out.push(AutoPolicy { user: sender, policy });
        }
    }
    for user in &new.mentioned {
        if user == &sender || !personal_mentions.contains(&user.0) {
            continue;
        }
        if !state.settings.of(*user).bool("automatically_follow_topics_where_mentioned") {
            continue;
        }
        if changes(current_policy(state, *user, *channel, topic), FOLLOWED) {
            out.push(AutoPolicy { user: *user, policy: FOLLOWED });
        }
    }
    out
}

/// `send` (a mutation that sends a message: `SendMessage`, or a scheduled
/// delivery) followed by `parts` (its `policy_changes`), in one batch when
/// there are any.
pub(crate) fn batch(send: Mutation, parts: Vec<Mutation>) -> Mutation {
    if parts.is_empty() {
        return send;
    }
    Mutation::Batch(std::iter::once(send).chain(parts).collect())
}

/// The `SetUserTopic` mutations of `changes` for `new`'s topic.
pub(crate) fn policy_changes(new: &NewMessage, changes: &[AutoPolicy]) -> Vec<Mutation> {
    let Destination::Channel { channel, topic } = &new.message.destination else {
        return Vec::new();
    };
    changes
        .iter()
        .map(|c| {
            Mutation::personal(PersonalChange::SetUserTopic {
                user: c.user,
                channel: *channel,
                topic: topic.to_string(),
                policy: c.policy,
                when: new.message.timestamp,
            })
        })
        .collect()
}

/// The `SetUserTopic` mutations that move every visibility policy of
/// topic `from_topic` in `from` to `to_topic` in `to` (a `change_all` move
/// made at `now`): the old topic's policy is cleared, and the user's new
/// topic gets it unless they cannot read `to`, or already hold a more
/// attentive policy there. In user-id order (deterministic).
pub(crate) fn policies_follow_a_move(
    state: &State,
    from: ChannelId,
    from_topic: &str,
    to: &crate::state::Channel,
    to_topic: &str,
    now: i64,
) -> Vec<Mutation> {
    let old_key = (from, from_topic.to_lowercase());
    if old_key == (to.id, to_topic.to_lowercase()) {
        return Vec::new();
    }
    let holders = state.settings.user_topics.collect_sorted(|_, t| t.contains_key(&old_key));
    let set = |user, channel, topic: &str, policy| {
        Mutation::personal(PersonalChange::SetUserTopic {
            user,
            channel,
            topic: topic.to_owned(),
            policy,
            when: now,
        })
    };
    let mut out = Vec::new();
    for (user, topics) in holders {
        let Some(moved) = topics.get(&old_key).map(|t| t.policy) else { continue };
        out.push(set(user, from, from_topic, 0));
        let may_read = state.users.get(&user).is_some_and(|u| can_read_channel(&u, to));
        let there = current_policy(state, user, to.id, to_topic);
        if may_read && attention(moved) > attention(there) {
            out.push(set(user, to.id, to_topic, moved));
        }
    }
    out
}

/// How much attention a policy asks for, for merging a moved policy with
/// the destination's: followed > unmuted > muted > none (a moved mute
/// still applies where the user had no policy).
fn attention(policy: u8) -> u8 {
    match policy {
        FOLLOWED => 3,
        UNMUTED => 2,
        MUTED => 1,
        _ => 0,
    }
}

/// The policy a user has set for a topic (0 = inherit).
fn current_policy(state: &State, user: UserId, channel: ChannelId, topic: &str) -> u8 {
    // The lowercased key only for a user with topic settings (few have).
    let policy = |m: &UserTopics| {
        (!m.is_empty()).then(|| m.get(&(channel, topic.to_lowercase())).map(|t| t.policy))
    };
    state.settings.user_topics.read(&user, policy).flatten().flatten().unwrap_or(0)
}

/// Whether setting `new` changes anything: not the same policy, and an
/// unmute never replaces a follow.
fn changes(current: u8, new: u8) -> bool {
    current != new && !(new == UNMUTED && current == FOLLOWED)
}

/// The sender's new policy by their settings, if any.
fn for_sender(
    state: &State,
    sender: UserId,
    channel: ChannelId,
    topic: &str,
    current: u8,
) -> Option<u8> {
    if current == FOLLOWED {
        return None;
    }
    let settings = state.settings.of(sender);
    let int = |name: &str| match settings.get(name) {
        SettingValue::Int(v) => v,
        _ => 0,
    };
    let follow = int("automatically_follow_topics_policy");
    let unmute = int("automatically_unmute_topics_in_muted_streams_policy");
    let channel_muted = state
        .subscriptions
        .read(&sender, |subs| subs.get(&channel).is_some_and(|s| s.is_muted))
        .unwrap_or(false);
    // Sending is participating, so "on participation" acts as "on send".
    let on_send = |v: i64| v == ON_SEND || v == ON_PARTICIPATION;
    if on_send(follow) {
        return Some(FOLLOWED);
    }
    let mut policy = (channel_muted && on_send(unmute)).then_some(UNMUTED);
    // A topic with a policy of the user's own was not just started.
    if current == 0 && (follow == ON_INITIATION || (channel_muted && unmute == ON_INITIATION)) {
        let key = (channel, topic.to_lowercase());
        let started = state.by_topic.read(&key, |ids| ids.is_empty()).unwrap_or(true);
        if started && follow == ON_INITIATION {
            return Some(FOLLOWED);
        }
        if started && channel_muted && unmute == ON_INITIATION {
            policy = Some(UNMUTED);
        }
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unmute_never_replaces_a_follow() {
        assert!(!changes(FOLLOWED, UNMUTED));
        assert!(!changes(UNMUTED, UNMUTED));
        assert!(!changes(FOLLOWED, FOLLOWED));
        assert!(changes(0, UNMUTED));
        assert!(changes(1, UNMUTED));
        assert!(changes(UNMUTED, FOLLOWED));
        assert!(changes(0, FOLLOWED));
    }
}
