//! `apply`: the only code that changes `State`.
//!
//! Deterministic: it reads nothing but the state and the mutation. At
//! runtime its only caller is `commit`; at startup `persist` replays the log
//! through `replay::Replay`, which applies runs of sends in bulk with the
//! same steps (`claim_message`, `deliver`) and every other mutation
//! through `apply`, throwing the events away. A mutation that does not fit the
//! state (a missing channel, a reused id) cannot come from a validated
//! commit, so it panics: replay refuses to limp on with diverged state.

pub mod admin;
mod bots;
pub mod features;
mod files;
mod folders;
pub(crate) mod organization;
pub(crate) mod personal;
pub mod replay;
mod settings;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::json;

use crate::events::{Audience, Event};
use crate::mutation::{FlagsChange, MessageEdit, Mutation, NewMessage};
use crate::state::messages::{EditRecord, Reaction};
use crate::state::scheduled::ScheduledId;
use crate::state::{
    Channel, ChannelId, Destination, Flags, IdKind, Members, Message, MessageId, Role, State,
    Subscription, UserId,
};

/// Applies mutation number `seq` and returns the events it causes.
///
/// # Panics
/// If `seq` is not exactly one past the last applied seq, or the mutation
/// contradicts the state.
pub fn apply(state: &State, seq: u64, mutation: &Mutation) -> Vec<Event> {
    let applied = state.applied_seq();
    assert_eq!(seq, applied + 1, "apply: mutation seq {seq} does not follow applied seq {applied}");
    let events = apply_one(state, mutation);
    // After the change: a reader under the writer lock sees the new data
    // with the new generation; a lockless reader may pair new data with the
    // old generation, which is why user-list caches are filled only under
    // the writer lock (`api::user_lists`).
    if !keeps_users(mutation) {
        state.users_generation.fetch_add(1, Ordering::AcqRel);
    }
    state.applied_seq.store(seq, Ordering::Release);
    events
}

/// Whether `mutation` certainly leaves every account, profile value and
/// realm as it was (messages, reactions, flags, channels, subscriptions,
/// groups, scheduled messages). Anything not listed here, new variants
/// included, counts as a change to users: a needless rebuild of a cached
/// user list costs time, a missed one would serve stale users.
pub fn keeps_users(mutation: &Mutation) -> bool {
    match mutation {
        Mutation::Batch(parts) => parts.iter().all(keeps_users),
        Mutation::CreateChannel { .. }
        | Mutation::Subscribe { .. }
        | Mutation::SendMessage(_)
        | Mutation::AddReaction { .. }
        | Mutation::RemoveReaction { .. }
        | Mutation::DeleteMessages { .. }
        | Mutation::EditMessage(_)
        | Mutation::UpdateFlags(_)
        | Mutation::Unsubscribe { .. }
        | Mutation::UpdateChannel { .. }
        | Mutation::UpdateSubscriptions { .. }
        | Mutation::CreateGroup(_)
        | Mutation::UpdateGroup { .. }
        | Mutation::ScheduleMessage(_)
        | Mutation::EditScheduled(_)
        | Mutation::DeleteScheduled { .. }
        | Mutation::DeliverScheduled { .. }
        | Mutation::FailScheduled { .. }
        | Mutation::SetPassword { .. }
        | Mutation::StartEmailChange(_)
        | Mutation::SendNotice { .. }
        | Mutation::CreateAttachment(_)
        | Mutation::LinkAttachments { .. }
        | Mutation::DeleteAttachment { .. }
        | Mutation::CreateRealmEmoji(_)
        | Mutation::DeactivateRealmEmoji { .. }
        | Mutation::SetThumbnail { .. }
        | Mutation::Organization(_)
        | Mutation::Features(_)
        | Mutation::WebSession(_)
        | Mutation::AddSubmessage { .. }
        | Mutation::ChannelFolder(_) => true,
        // A service shows in `realm_bots`; storage and deliveries nowhere.
        Mutation::Bot(change) => {
            !matches!(**change, crate::state::bots::BotChange::SetService { .. })
        }
        // Only the name and time zone of the settings live in the account.
        Mutation::UpdateSettings(change) => change.full_name.is_none() && change.timezone.is_none(),
        // Drafts, mutes, topic policies (a send's automatic follows ride
        // in its batch), statuses, invitations… but accepting an
        // invitation creates an account.
        Mutation::Personal(change) => {
            use crate::state::personal::PersonalChange as P;
            matches!(
                **change,
                P::SetAlertWords { .. }
                    | P::AddDrafts { .. }
                    | P::EditDraft { .. }
                    | P::DeleteDraft { .. }
                    | P::SetStatus { .. }
                    | P::SetMuted { .. }
                    | P::SetUserTopic { .. }
                    | P::PutNavigationView { .. }
                    | P::RemoveNavigationView { .. }
                    | P::PutSnippet { .. }
                    | P::DeleteSnippet { .. }
                    | P::AddPushToken { .. }
                    | P::RemovePushToken { .. }
                    | P::AddPlayground { .. }
                    | P::RemovePlayground { .. }
                    | P::CreateInvites { .. }
                    | P::RevokeInvite { .. }
                    | P::ResendInvite { .. }
            )
        }
        _ => false,
    }
}

/// One mutation's effect (a `Batch` applies its parts in order).
fn apply_one(state: &State, mutation: &Mutation) -> Vec<Event> {
    match mutation {
        Mutation::CreateRealm { realm, groups } => {
            assert!(state.realms.get(&realm.id).is_none(), "apply: realm {} exists", realm.id);
            state.ids.claim(IdKind::Realm, realm.id.0);
            for group in groups {
                state.ids.claim(IdKind::Group, group.id.0);
                state.groups.insert(group.id, group.clone());
            }
            state.index_realm((**realm).clone());
            Vec::new()
        }
        Mutation::CreateUser(user) => {
            assert!(state.users.get(&user.id).is_none(), "apply: user {} exists", user.id);
            assert!(state.realms.contains(&user.realm), "apply: no realm {}", user.realm);
            state.ids.claim(IdKind::User, user.id.0);
            state.index_user(user.clone());
            organization::start_with_defaults(state, user.realm, user.id);
            let mut events = vec![Event::RealmUserAdd { realm: user.realm, user: user.id }];
            events.extend(bots::on_create(state, user));
            events
        }
        Mutation::CreateChannel { channel, subscribers } => {
            assert!(
                state.channels.get(&channel.id).is_none(),
                "apply: channel {} exists",
                channel.id
            );
            state.ids.claim(IdKind::Channel, channel.id.0);
            state.ids.claim(IdKind::Recipient, channel.recipient.0);
            state.index_channel(Channel { subscribers: Default::default(), ..(**channel).clone() });
            let mut events =
                vec![Event::ChannelCreate { realm: channel.realm, channel: channel.id }];
            events.extend(subscribe(state, channel.id, subscribers));
            if channel.is_default {
                events.push(crate::apply::admin::default_streams_event(state, channel.realm));
            }
            events
        }
        Mutation::Subscribe { channel, subscribers } => subscribe(state, *channel, subscribers),
        Mutation::SendMessage(new) => send_message(state, new, &[]),
        Mutation::AddReaction { message, reaction } => react(state, *message, reaction, true),
        Mutation::RemoveReaction { message, reaction } => react(state, *message, reaction, false),
        Mutation::DeleteMessages { messages, by } => delete_messages(state, messages, *by),
        Mutation::EditMessage(edit) => edit_message(state, edit),
        Mutation::UpdateFlags(change) => update_flags(state, change),
        Mutation::UpdateSettings(change) => settings::update_settings(state, change),
        Mutation::SetPassword { user, hash } => settings::set_password(state, *user, hash),
        Mutation::StartEmailChange(change) => settings::start_email_change(state, change),
        Mutation::ConfirmEmailChange { key } => settings::confirm_email_change(state, key),
        Mutation::Personal(change) => personal::apply(state, change),
        Mutation::Organization(change) => organization::apply(state, change),
        Mutation::Features(change) => features::apply(state, change),
        Mutation::Bot(change) => bots::on_bot_change(state, change),
        Mutation::WebSession(change) => {
            state.web_sessions.apply(change);
            Vec::new()
        }
        Mutation::ChannelFolder(change) => folders::apply(state, change),
        Mutation::AddSubmessage { submessage, announce } => {
            features::add_submessage(state, submessage, *announce)
        }
        Mutation::UpdateRealm(update) => {
            let before =
                state.realms.get(&update.realm).unwrap_or_else(|| panic!("apply: no realm"));
            let after = crate::state::Realm {
                name: update.name.clone(),
                description: update.description.clone(),
                settings: update.settings.clone(),
                ..before.clone()
            };
            let events = crate::view::realm::changes(&before, &after);
            state.realms.insert(update.realm, after);
            let audience = || Audience::Realm(update.realm);
            events
                .into_iter()
                .map(|event| Event::Broadcast { audience: audience(), event })
                .collect()
        }
        Mutation::Unsubscribe { channel, users } => admin::unsubscribe(state, *channel, users),
        Mutation::UpdateChannel { channel, changes } => {
            admin::update_channel(state, *channel, changes)
        }
        Mutation::UpdateSubscriptions { user, changes } => {
            admin::update_subscriptions(state, *user, changes)
        }
        Mutation::UpdateUsers { changes } => admin::update_users(state, changes),
        Mutation::CreateGroup(group) => admin::create_group(state, group),
        Mutation::UpdateGroup { group, change } => admin::update_group(state, *group, change),
        Mutation::PutProfileField(field) => admin::put_profile_field(state, field),
        Mutation::DeleteProfileField { realm, field } => {
            admin::delete_profile_field(state, *realm, *field)
        }
        Mutation::ReorderProfileFields { realm, order } => {
            admin::reorder_profile_fields(state, *realm, order)
        }
        Mutation::Batch(parts) => parts.iter().flat_map(|m| apply_one(state, m)).collect(),
        Mutation::ScheduleMessage(s) => {
            assert!(!state.scheduled.by_id.contains(&s.id), "apply: scheduled {} exists", s.id);
            state.scheduled.claim(s.id);
            state.scheduled.by_id.insert(s.id, s.clone());
            let event = json!({"type": "scheduled_messages", "op": "add", "scheduled_messages": [s.to_api()]});
            vec![Event::Broadcast { audience: Audience::Users(vec![s.sender]), event }]
        }
        Mutation::EditScheduled(s) => {
            state
                .scheduled
                .by_id
                .update(&s.id, |old| *old = s.clone())
                .unwrap_or_else(|| panic!("apply: no scheduled {}", s.id));
            let event = json!({"type": "scheduled_messages", "op": "update", "scheduled_message": s.to_api()});
            vec![Event::Broadcast { audience: Audience::Users(vec![s.sender]), event }]
        }
        Mutation::DeleteScheduled { id } => vec![unschedule(state, *id)],
        Mutation::DeliverScheduled { id, message } => {
            let removed = unschedule(state, *id);
            let mut events = send_message(state, message, &[]);
            events.push(removed);
            events
        }
        Mutation::FailScheduled { id, reason } => {
            let s = state
                .scheduled
                .by_id
                .update(id, |s| {
                    s.failure = Some(reason.clone());
                    s.clone()
                })
                .unwrap_or_else(|| panic!("apply: no scheduled {id}"));
            let event = json!({"type": "scheduled_messages", "op": "update", "scheduled_message": s.to_api()});
            vec![Event::Broadcast { audience: Audience::Users(vec![s.sender]), event }]
        }
        Mutation::CreateSystemBots(bots) => {
            for bot in bots {
                assert!(state.users.get(&bot.id).is_none(), "apply: user {} exists", bot.id);
                assert!(state.realms.contains(&bot.realm), "apply: no realm {}", bot.realm);
                assert!(bot.is_system_bot(), "apply: user {} is not a system bot", bot.id);
                state.ids.claim(IdKind::User, bot.id.0);
                state.index_user(bot.clone());
            }
            Vec::new()
        }
        Mutation::SendNotice { message, read_by } => send_message(state, message, read_by),
        Mutation::CreateAttachment(attachment) => files::create(state, attachment),
        Mutation::LinkAttachments { message, attachments } => {
            files::link(state, *message, attachments)
        }
        Mutation::DeleteAttachment { id } => files::delete(state, *id),
        Mutation::CreateRealmEmoji(emoji) => files::create_emoji(state, emoji),
        Mutation::DeactivateRealmEmoji { id } => files::deactivate_emoji(state, *id),
        Mutation::SetAvatar { user, avatar } => files::set_avatar(state, *user, avatar.as_deref()),
        Mutation::SetRealmFileSettings { realm, settings } => {
            files::set_realm_settings(state, *realm, settings)
        }
        Mutation::SetThumbnail { attachment, thumbnail } => {
            state.files.set_thumbnail(*attachment, (**thumbnail).clone());
            Vec::new()
        }
    }
}

/// Removes a scheduled message; the `remove` event goes to its owner.
fn unschedule(state: &State, id: ScheduledId) -> Event {
    let s = state.scheduled.by_id.remove(&id).unwrap_or_else(|| panic!("apply: no scheduled {id}"));
    let event = json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": id.0});
    Event::Broadcast { audience: Audience::Users(vec![s.sender]), event }
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
        state.former_subscriptions.update(user, |former| former.remove(&channel));
    }
    state
        .channels
        .update(&channel, |c| c.subscribers.extend(subscribers.iter().map(|(u, _)| *u)))
        .unwrap_or_else(|| panic!("apply: no channel {channel}"));
    vec![Event::SubscriptionAdd { channel, users: subscribers.iter().map(|(u, _)| *u).collect() }]
}

/// Delivers a message; the copies of `read_by` (and the sender's, per
/// `read_by_sender`) start read.
fn send_message(state: &State, new: &NewMessage, read_by: &[UserId]) -> Vec<Event> {
    let message = &new.message;
    claim_message(state, message);
    let subscribers = match &message.destination {
        Destination::Channel { channel, .. } => Some(channel_subscribers(state, *channel)),
        Destination::Direct { .. } => None,
    };
    let mut recipients = Vec::with_capacity(subscribers.as_ref().map_or(2, |s| s.1.len() + 1));
    let first = subscribers.as_ref().is_some_and(|s| s.0);
    let subscribers = subscribers.as_ref().map_or(&[][..], |s| s.1.as_slice());
    deliver(state, new, read_by, first, subscribers, |_, user, flags| {
        state.set_flags(user, message.id, flags);
        recipients.push((user, flags));
    });
    state.index_message(Arc::clone(message));
    state.note_holders(message, recipients.iter().map(|(u, _)| *u));
    vec![Event::Message { message: message.id, recipients }]
}

/// A send's first step, shared by `apply` and replay (`apply::replay`):
/// the id must be new; the message and recipient ids are claimed.
pub(crate) fn claim_message(state: &State, message: &Message) {
    assert!(!state.messages.contains(&message.id), "apply: message {} exists", message.id);
    state.ids.claim(IdKind::Message, message.id.0);
    state.ids.claim(IdKind::Recipient, message.recipient.0);
}

/// Whether `channel` has no message yet, and its subscribers (ascending;
/// shared with the channel, not copied).
pub(crate) fn channel_subscribers(state: &State, channel: ChannelId) -> (bool, Members) {
    state
        .channels
        .read(&channel, |c| (c.first_message_id.is_none(), c.subscribers.shared()))
        .unwrap_or_else(|| panic!("apply: no channel {channel}"))
}

/// The rest of a send but its rows and indexes, shared by `apply` and
/// replay: a channel's first message is noted (`first`, as
/// `channel_subscribers` said), a conversation's recipient recorded; then
/// `row` is called once per recipient — a channel's `subscribers`, then
/// the sender if not among them, or a conversation's participants — with
/// the recipient's position in that order and the flags their row starts
/// with. `apply` writes each row at once;
/// replay gathers a run of sends' rows and writes each user's together.
pub(crate) fn deliver(
    state: &State,
    new: &NewMessage,
    read_by: &[UserId],
    first: bool,
    subscribers: &[UserId],
    mut row: impl FnMut(usize, UserId, Flags),
) {
    let message = &new.message;
    let sender_subscribed;
    let audience = match &message.destination {
        Destination::Channel { channel, .. } => {
            // Write the channel only for its first message.
            if first {
                state.channels.update(channel, |c| c.first_message_id = Some(message.id));
            }
            sender_subscribed = subscribers.contains(&message.sender);
            subscribers
        }
        Destination::Direct { participants } => {
            state.direct_recipients.insert(participants.to_vec(), message.recipient);
            sender_subscribed = true;
            &participants[..]
        }
    };
    let sender = (!sender_subscribed).then_some(message.sender);
    // Per-recipient lookups only when anyone has alert words or mutes.
    let settings = &state.settings;
    let (alerts, mutes) = (settings.may_have_alert_words(), settings.may_have_muted_users());
    for (at, &user) in audience.iter().chain(sender.iter()).enumerate() {
        let mut flags = Flags::default();
        if (user == message.sender && new.read_by_sender) || read_by.contains(&user) {
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
        // Alert words and mutes are state too, so this stays deterministic.
        if alerts && user != message.sender && settings.has_alert_word(user, message.content()) {
            flags = flags.with(Flags::HAS_ALERT_WORD);
        }
        // Messages from a muted user arrive read (Zulip's rule).
        if mutes && user != message.sender && settings.has_muted(user, message.sender) {
            flags = flags.with(Flags::READ);
        }
        row(at, user, flags);
    }
}

/// Adds or removes one reaction; the `reaction` event goes to everyone who
/// can see the message. Reacting to a channel message the user never
/// received (readable through the channel's history) first gives them a
/// historical, read entry, as Zulip creates a historical UserMessage row,
/// so the message is among theirs from then on.
fn react(state: &State, id: MessageId, reaction: &Reaction, add: bool) -> Vec<Event> {
    if add && state.flags(reaction.user, id).is_none() {
        let channel = state
            .messages
            .read(&id, |m| matches!(m.destination, Destination::Channel { .. }))
            .unwrap_or(false);
        if channel {
            state.set_flags(reaction.user, id, Flags::READ.with(Flags::HISTORICAL));
        }
    }
    let same = |r: &Reaction| {
        r.user == reaction.user
            && r.reaction_type == reaction.reaction_type
            && r.emoji_code == reaction.emoji_code
    };
    let old = state.messages.get(&id).unwrap_or_else(|| panic!("apply: no message {id}"));
    let message = state
        .messages
        .update(&id, |m| {
            let m = Arc::make_mut(m);
            let existing = m.reactions().iter().position(same);
            match (add, existing) {
                (true, None) => m.add_reaction(reaction.clone()),
                (false, Some(i)) => {
                    m.remove_reaction(i);
                }
                _ => panic!("apply: reaction on message {id} is not in the expected state"),
            }
            m.clone()
        })
        .unwrap_or_else(|| panic!("apply: no message {id}"));
    state.lookup.replace(&old, &message);
    let user = state.users.get(&reaction.user).unwrap_or_else(|| panic!("apply: no user"));
    let event = json!({
        "type": "reaction",
        "op": if add { "add" } else { "remove" },
        "message_id": id.0,
        "emoji_name": reaction.emoji_name,
        "emoji_code": reaction.emoji_code,
        "reaction_type": reaction.reaction_type.as_str(),
        "user_id": user.id.0,
        "user": { "user_id": user.id.0, "email": user.email, "full_name": user.full_name },
    });
    // The reacting user hears of it too, even on a message that was never
    // delivered to them (a public channel's history).
    let mut audience = state.message_audience(&message);
    if let Err(i) = audience.binary_search(&reaction.user) {
        audience.insert(i, reaction.user);
    }
    vec![Event::Broadcast { audience: Audience::Users(audience), event }]
}

/// Deletes messages with their per-user rows; one `delete_message` event
/// per message. The event carries both Zulip shapes — `message_id` and
/// `message_ids` — and queues keep the one their client asked for
/// (`bulk_message_deletion`).
fn delete_messages(state: &State, ids: &[MessageId], by: UserId) -> Vec<Event> {
    let mut events = Vec::with_capacity(ids.len());
    for id in ids {
        let message = state.messages.get(id).unwrap_or_else(|| panic!("apply: no message {id}"));
        let mut audience = state.message_audience(&message);
        if let Err(i) = audience.binary_search(&by) {
            audience.insert(i, by);
        }
        let holders = state.message_holders(&message);
        let first = state.unindex_message(&message, &holders);
        state.widgets.by_message.remove(id);
        let mut event = json!({
            "type": "delete_message",
            "message_id": id.0,
            "message_ids": [id.0],
        });
        match &message.destination {
            Destination::Channel { channel, topic } => {
                let changed = state
                    .channels
                    .update(channel, |c| {
                        let changed = c.first_message_id == Some(*id);
                        if changed {
                            c.first_message_id = first;
                        }
                        changed.then(|| c.clone())
                    })
                    .flatten();
                // The channel's oldest message changed: those who see the
                // channel hear its new `first_message_id` (as Zulip does
                // since feature level 256).
                if let Some(c) = changed {
                    let update =
                        admin::stream_update(&c, "first_message_id", json!(first.map(|m| m.0)));
                    events.push(Event::Broadcast {
                        audience: Audience::Users(admin::channel_audience(state, &c)),
                        event: serde_json::Value::Object(update),
                    });
                }
                event["message_type"] = json!("stream");
                event["stream_id"] = json!(channel.0);
                event["topic"] = json!(topic);
            }
            Destination::Direct { .. } => event["message_type"] = json!("private"),
        }
        events.push(Event::Broadcast { audience: Audience::Users(audience), event });
    }
    events
}

/// Sets or clears one flag of one user on some messages; emits Zulip's
/// `update_message_flags` event (with the legacy `operation` key and, when
/// messages become unread, the `message_details` clients need to rebuild
/// their unread counts).
fn update_flags(state: &State, change: &FlagsChange) -> Vec<Event> {
    let FlagsChange { user, add, flag, messages, historical } = change;
    assert!(state.users.contains(user), "apply: no user {user}");
    for id in historical {
        state.holder_hints.row_added(*id);
    }
    state.user_messages.upsert(*user, |mine| {
        for id in historical {
            mine.insert_if_absent(*id, Flags::READ.with(Flags::HISTORICAL));
        }
        for id in messages {
            mine.update(*id, |flags| flags.set(*flag, *add));
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

/// Edits content and/or moves messages; one `EditRecord` per changed
/// message. Users who can no longer read a message moved to another
/// channel lose it (and get `delete_message`); the new channel's
/// subscribers get it, read. `update_message` goes to everyone who could
/// see the message before or can see it now, one event per distinct set
/// of flags (the event carries the recipient's flags).
fn edit_message(state: &State, edit: &MessageEdit) -> Vec<Event> {
    let target = edit.message;
    let before =
        state.messages.get(&target).unwrap_or_else(|| panic!("apply: no message {target}"));
    let mut audience: BTreeSet<UserId> = state.message_audience(&before).into_iter().collect();
    let (old_channel, old_topic) = match &before.destination {
        Destination::Channel { channel, topic } => (Some(*channel), topic.to_string()),
        Destination::Direct { .. } => (None, String::new()),
    };
    // One shared copy of the new topic for every moved message.
    let new_topic = edit.topic.as_deref().map(|topic| state.names.intern_str(topic));
    let new_channel = edit
        .channel
        .map(|id| state.channels.get(&id).unwrap_or_else(|| panic!("apply: no channel {id}")));
    let mut lost: Vec<(MessageId, Vec<UserId>)> = Vec::new();
    let mut touched: Vec<MessageId> = edit.moved.clone();
    if edit.content.is_some() && touched.binary_search(&target).is_err() {
        touched.push(target);
        touched.sort();
    }
    for id in &touched {
        let moves = edit.moved.binary_search(id).is_ok();
        let old = state.messages.get(id).unwrap_or_else(|| panic!("apply: no message {id}"));
        if moves {
            // The topic indexes are keyed by destination: leave the old one
            // before it changes, join the new one after.
            state.unindex_topic(&old);
        }
        let mut old_recipient = None;
        let message = state
            .messages
            .update(id, |m| {
                let m = Arc::make_mut(m);
                let mut record = EditRecord {
                    user: edit.editor,
                    timestamp: edit.timestamp,
                    prev_content: None,
                    prev_topic: None,
                    prev_channel: None,
                };
                if *id == target {
                    if let Some(new) = &edit.content {
                        record.prev_content =
                            Some((m.content().to_owned(), m.rendered().to_owned()));
                        m.set_text(&new.content, &new.rendered);
                        m.is_me_message = new.is_me_message;
                        m.set_last_edit_timestamp(edit.timestamp);
                    }
                }
                if edit.moved.binary_search(id).is_ok() {
                    if let Destination::Channel { channel, topic } = &mut m.destination {
                        if let Some(new_topic) = &new_topic {
                            if **topic != **new_topic {
                                let old = std::mem::replace(topic, Arc::clone(new_topic));
                                record.prev_topic = Some(old.to_string());
                            }
                        }
                        if let Some(new) = &new_channel {
                            if *channel != new.id {
                                record.prev_channel = Some(*channel);
                                *channel = new.id;
                                old_recipient = Some(m.recipient);
                                m.recipient = new.recipient;
                            }
                        }
                    }
                    if edit.counts_as_move
                        && (record.prev_topic.is_some() || record.prev_channel.is_some())
                    {
                        m.set_last_moved_timestamp(edit.timestamp);
                    }
                }
                if record.prev_content.is_some()
                    || record.prev_topic.is_some()
                    || record.prev_channel.is_some()
                {
                    m.push_edit(record);
                }
                // Only a channel move needs the message afterwards.
                old_recipient.map(|_| m.clone())
            })
            .unwrap_or_else(|| panic!("apply: no message {id}"));
        let new = state.messages.get(id).expect("just edited");
        if moves {
            state.index_topic(&new);
        }
        state.lookup.replace(&old, &new);
        if let (Some(old), Some(new), Some(message)) = (old_recipient, &new_channel, message) {
            state.by_recipient.update(&old, |ids| ids.remove(*id));
            state.by_recipient.upsert(new.recipient, |ids| ids.insert(*id));
            lost.push((*id, move_rows(state, &message, new)));
        }
    }
    for channel in old_channel.iter().chain(new_channel.as_ref().map(|c| &c.id)) {
        let recipient = state.channels.read(channel, |c| c.recipient);
        let first = recipient.and_then(|r| state.recipient_first(r));
        state.channels.update(channel, |c| c.first_message_id = first);
    }
    if let Some(new) = &edit.content {
        for user in state.message_holders(&state.messages.get(&target).expect("just edited")) {
            state.update_flags(user, target, |flags| {
                flags
                    .set(Flags::MENTIONED, new.mentioned.contains(&user))
                    .set(Flags::STREAM_WILDCARD_MENTIONED, new.channel_wildcard)
                    .set(Flags::TOPIC_WILDCARD_MENTIONED, new.topic_wildcard.contains(&user))
            });
        }
    }

    let after = state.messages.get(&target).expect("just edited");
    audience.extend(state.message_audience(&after));
    audience.insert(edit.editor);
    let mut events = Vec::new();
    let mut removed: BTreeSet<UserId> = BTreeSet::new();
    for (id, users) in &lost {
        if users.is_empty() {
            continue;
        }
        removed.extend(users.iter().copied());
        let event = json!({
            "type": "delete_message",
            "message_id": id.0,
            "message_ids": [id.0],
            "message_type": "stream",
            "stream_id": old_channel.map(|c| c.0),
            "topic": old_topic,
        });
        events.push(Event::Broadcast { audience: Audience::Users(users.clone()), event });
    }
    let mut event = json!({
        "type": "update_message",
        "user_id": edit.editor.0,
        "edit_timestamp": edit.timestamp,
        "message_id": target.0,
        "message_ids": touched.iter().map(|id| id.0).collect::<Vec<_>>(),
        "rendering_only": false,
    });
    if let Some(new) = &edit.content {
        event["orig_content"] = json!(before.content());
        event["orig_rendered_content"] = json!(before.rendered());
        event["content"] = json!(new.content);
        event["rendered_content"] = json!(new.rendered);
        event["is_me_message"] = json!(new.is_me_message);
    }
    if let Some(channel) = old_channel {
        event["stream_id"] = json!(channel.0);
        event["stream_name"] =
            json!(state.channels.read(&channel, |c| c.name.clone()).unwrap_or_default());
        if !edit.moved.is_empty() {
            event["propagate_mode"] = json!(edit.propagate_mode.as_str());
            event["orig_subject"] = json!(old_topic);
            let Destination::Channel { topic, .. } = &after.destination else { unreachable!() };
            if edit.topic.is_some() {
                event["subject"] = json!(topic);
                let rules = crate::view::message::linkifier_rules(state, after.realm);
                event["topic_links"] = crate::view::message::topic_links(&rules, topic);
            }
            if let Some(new) = &new_channel {
                event["new_stream_id"] = json!(new.id.0);
            }
        }
    }
    let mut by_flags: BTreeMap<Vec<&'static str>, Vec<UserId>> = BTreeMap::new();
    for user in audience.into_iter().filter(|u| !removed.contains(u)) {
        let flags = match state.flags(user, target) {
            Some(flags) => flags.names(),
            None => {
                let mut names = Flags::READ.names();
                names.push("historical");
                names
            }
        };
        by_flags.entry(flags).or_default().push(user);
    }
    for (flags, users) in by_flags {
        let mut event = event.clone();
        event["flags"] = json!(flags);
        events.push(Event::Broadcast { audience: Audience::Users(users), event });
    }
    events
}

/// Per-user rows of a message moved into channel `new`: subscribers get it
/// (read); holders who may not read the new channel lose it. Returns who
/// lost it.
fn move_rows(state: &State, message: &Message, new: &Channel) -> Vec<UserId> {
    let mut lost = Vec::new();
    for user in state.message_holders(message) {
        let keeps = new.subscribers.contains(&user)
            || (!new.invite_only
                && state.users.read(&user, |u| u.role != Role::Guest).unwrap_or(false));
        if !keeps {
            // With the row go its unread and starred marks.
            state.remove_row(user, message.id);
            lost.push(user);
        }
    }
    for user in &new.subscribers {
        state.add_row(*user, message.id, Flags::READ);
    }
    lost
}
