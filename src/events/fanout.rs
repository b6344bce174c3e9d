//! Turning one `Event` into Zulip JSON for each queue that should see it.
//!
//! Who receives what is decided here, from state at publish time: message
//! events go to every queue of every recipient (the sender's included) and
//! to `all_public_streams` queues for public channels, filtered by each
//! queue's event types and narrow, rendered with its `apply_markdown`,
//! `client_gravatar` and capabilities. JSON that many queues share is built
//! once per distinct rendering and shared (`Arc`), so a fan-out to
//! thousands of queues clones no message bodies.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

use super::queue::subscriber_lists;
use super::queue::{members, Outgoing, Queue};
use super::{Audience, Event, Realtime};
use crate::state::access::can_see_subscribers;
use crate::state::access::role_in_system_group;
use crate::state::access::{can_read_channel, can_see_channel, sees_others_emails, MessageView};
use crate::state::{Destination, Flags, Realm, SystemGroup, User, UserId};
use crate::view::channel::{self, Subscribers};
use crate::view::json_text::SortedMembers;
use crate::view::message::{MessageOptions, MessageWriter};
use crate::view::user::{self, UserOptions};

/// Delivers one event (of mutation `seq`, or ephemeral if `None`) to the
/// queues that should see it.
pub fn deliver(rt: &Realtime, seq: Option<u64>, event: &Event) {
    match event {
        Event::Message { message, recipients } => message_event(rt, seq, *message, recipients),
        Event::RealmUserAdd { realm, user } => {
            let state = &rt.state;
            let Some(person) = state.users.get(user) else { return };
            let targets = rt.queues.of_realm(*realm);
            rt.queues.deliver(seq, &targets, |q| {
                if !q.options.wants("realm_user") {
                    return None;
                }
                let viewer = state.users.get(&q.user)?;
                let options = UserOptions {
                    client_gravatar: q.options.client_gravatar,
                    include_custom_profile_fields: true,
                };
                let body = json!({
                    "type": "realm_user",
                    "op": "add",
                    "person": user::user(state, &viewer, &person, options),
                });
                Some(Outgoing::shared(Arc::new(object(body))))
            });
            // The new account joins its role's system groups.
            let Some(realm_row) = state.realms.get(realm) else { return };
            for kind in SystemGroup::ALL {
                if !person.is_active || !role_in_system_group(person.role, kind) {
                    continue;
                }
                let body = Arc::new(object(json!({
                    "type": "user_group",
                    "op": "add_members",
                    "group_id": realm_row.system_groups.id(kind).0,
                    "user_ids": [person.id.0],
                })));
                rt.queues.deliver(seq, &targets, |q| {
                    q.options.wants("user_group").then(|| Outgoing::shared(Arc::clone(&body)))
                });
            }
        }
        Event::ChannelCreate { realm, channel } => {
            let state = &rt.state;
            let Some(channel) = state.channels.get(channel) else { return };
            let targets = rt.queues.of_realm(*realm);
            rt.queues.deliver(seq, &targets, |q| {
                if !q.options.wants("stream") {
                    return None;
                }
                let viewer = state.users.get(&q.user)?;
                if !can_see_channel(&viewer, &channel) {
                    return None;
                }
                // As created: its first subscribers arrive as the
                // subscription events of the same change.
                let mut created = channel.clone();
                created.subscribers.clear();
                let body = json!({
                    "type": "stream",
                    "op": "create",
                    "streams": [channel::stream(state, &viewer, &created, Subscribers::Omit)],
                });
                Some(Outgoing::shared(Arc::new(object(body))))
            });
        }
        Event::SubscriptionAdd { channel, users } => subscription_add(rt, seq, *channel, users),
        Event::Broadcast { audience, event } => {
            let kind = event.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            let targets = match audience {
                Audience::Users(users) => rt.queues.of_users(users.iter().copied()),
                Audience::Realm(realm) => rt.queues.of_realm(*realm),
            };
            let shapes = BroadcastShapes::new(event);
            rt.queues.deliver(seq, &targets, |q| {
                let body = shapes.for_queue(&q.options.capabilities)?;
                let kind = body.get("type").and_then(Value::as_str).unwrap_or(&kind);
                q.options.wants(kind).then(|| Outgoing::shared(Arc::clone(body)))
            });
        }
        Event::Presence { realm, user, presence, server_timestamp } => {
            let Some(person) = rt.state.users.get(user) else { return };
            let simplified = Arc::new(object(json!({
                "type": "presence",
                "presences": { user.0.to_string(): presence.modern() },
            })));
            let (status, timestamp) = presence.legacy_status();
            let legacy = Arc::new(object(json!({
                "type": "presence",
                "user_id": user.0,
                "email": rt.state.api_email(&person),
                "server_timestamp": server_timestamp,
                "presence": { "website": {
                    "client": "website", "status": status, "timestamp": timestamp, "pushable": false,
                }},
            })));
            let targets = rt.queues.of_realm(*realm);
            rt.queues.deliver(seq, &targets, |q| {
                if !q.options.wants("presence") {
                    return None;
                }
                let body = if q.options.capabilities.simplified_presence_events {
                    &simplified
                } else {
                    &legacy
                };
                Some(Outgoing::shared(Arc::clone(body)))
            });
        }
        Event::QueuesEnd { user } => rt.queues.end_user(*user),
        Event::ChannelVisible { channel, users } => {
            let state = &rt.state;
            let Some(channel) = state.channels.get(channel) else { return };
            let targets = rt.queues.of_users(users.iter().copied());
            rt.queues.deliver(seq, &targets, |q| {
                if !q.options.wants("stream") {
                    return None;
                }
                let viewer = state.users.get(&q.user)?;
                let include = subscriber_lists(q.options.include_subscribers);
                let body = json!({
                    "type": "stream",
                    "op": "create",
                    "streams": [channel::stream(state, &viewer, &channel, include)],
                });
                Some(Outgoing::shared(Arc::new(object(body))))
            });
        }
    }
}

/// The forms of one broadcast event that differ by client capability,
/// each built once and shared by every queue that gets it.
struct BroadcastShapes {
    /// The event as published.
    plain: Arc<Map<String, Value>>,
    /// For clients without `bulk_message_deletion`: `delete_message` with
    /// only `message_id` (the published event carries both forms).
    single_deletion: Option<Arc<Map<String, Value>>>,
    /// For clients without `archived_channels`: an archived channel
    /// disappears, as a `stream` `delete`, instead of an `is_archived`
    /// update (their register leaves archived channels out).
    archived_as_delete: Option<Arc<Map<String, Value>>>,
    /// A legacy settings event (`update_display_settings`,
    /// `update_global_notifications`).
    legacy_settings: bool,
    /// A `realm_linkifiers` event.
    linkifiers: bool,
}

impl BroadcastShapes {
    fn new(event: &Value) -> Self {
        let mut plain = object(event.clone());
        let mut single_deletion = None;
        let mut archived_as_delete = None;
        match plain.get("type").and_then(Value::as_str) {
            Some("delete_message") => {
                let mut single = plain.clone();
                single.remove("message_ids");
                plain.remove("message_id");
                single_deletion = Some(Arc::new(single));
            }
            Some("stream")
                if plain.get("op") == Some(&json!("update"))
                    && plain.get("property") == Some(&json!("is_archived"))
                    && plain.get("value") == Some(&json!(true)) =>
            {
                let id = plain.get("stream_id").cloned().unwrap_or(Value::Null);
                let name = plain.get("name").cloned().unwrap_or(Value::Null);
                archived_as_delete = Some(Arc::new(object(json!({
                    "type": "stream",
                    "op": "delete",
                    "streams": [{ "stream_id": id, "name": name }],
                    "stream_ids": [id],
                }))));
            }
            _ => {}
        }
        let legacy_settings = matches!(
            plain.get("type").and_then(Value::as_str),
            Some("update_display_settings" | "update_global_notifications")
        );
        let linkifiers = plain.get("type").and_then(Value::as_str) == Some("realm_linkifiers");
        BroadcastShapes {
            linkifiers,
            plain: Arc::new(plain),
            single_deletion,
            archived_as_delete,
            legacy_settings,
        }
    }

    /// The form a queue with these capabilities gets, if any.
    fn for_queue(&self, caps: &super::queue::Capabilities) -> Option<&Arc<Map<String, Value>>> {
        // The pre-`user_settings` settings events only go to clients
        // without the `user_settings_object` capability.
        if self.legacy_settings && caps.user_settings_object {
            return None;
        }
        // Linkifiers reach only clients that read `url_template` (their
        // register's list is empty otherwise, as in Zulip).
        if self.linkifiers && !caps.linkifier_url_template {
            return None;
        }
        match (&self.single_deletion, &self.archived_as_delete) {
            (Some(single), _) if !caps.bulk_message_deletion => Some(single),
            (_, Some(deleted)) if !caps.archived_channels => Some(deleted),
            _ => Some(&self.plain),
        }
    }
}

/// `subscription` `add` to the new subscribers' queues, `peer_add` to the
/// queues of everyone else who may see the channel's subscribers.
fn subscription_add(
    rt: &Realtime,
    seq: Option<u64>,
    channel: crate::state::ChannelId,
    users: &[UserId],
) {
    let state = &rt.state;
    let Some(channel) = state.channels.get(&channel) else { return };
    let targets = rt.queues.of_realm(channel.realm);
    let peer_add = Arc::new(object(json!({
        "type": "subscription",
        "op": "peer_add",
        "stream_ids": [channel.id.0],
        "user_ids": users.iter().map(|u| u.0).collect::<Vec<_>>(),
    })));
    rt.queues.deliver(seq, &targets, |q| {
        if !q.options.wants("subscription") {
            return None;
        }
        let viewer = state.users.get(&q.user)?;
        if users.contains(&q.user) {
            let sub = state.subscriptions.read(&q.user, |m| m.get(&channel.id).cloned())??;
            let include = subscriber_lists(q.options.include_subscribers);
            let body = json!({
                "type": "subscription",
                "op": "add",
                "subscriptions": [channel::subscription(state, &viewer, &channel, &sub, include)],
            });
            return Some(Outgoing::shared(Arc::new(object(body))));
        }
        can_see_subscribers(&viewer, &channel).then(|| Outgoing::shared(Arc::clone(&peer_add)))
    });
}

/// A message event for every queue that may see the message.
fn message_event(
    rt: &Realtime,
    seq: Option<u64>,
    id: crate::state::MessageId,
    recipients: &[(UserId, Flags)],
) {
    let state = &rt.state;
    let local = rt.queues.take_local_id(id);
    let Some(message) = state.messages.get(&id) else { return };
    let mut targets = rt.queues.of_users(recipients.iter().map(|(u, _)| *u));
    let public = match &message.destination {
        Destination::Channel { channel, .. } => {
            state.channels.read(channel, |c| !c.invite_only).unwrap_or(false)
        }
        Destination::Direct { .. } => false,
    };
    // Queues watching every public channel see its messages too. The
    // channel is read in place: cloning it copied its subscriber set.
    let watching = if public { rt.queues.of_realm_all_public(message.realm) } else { Vec::new() };
    // Most sends reach no queue: nothing more to build then.
    if targets.is_empty() && watching.is_empty() {
        return;
    }
    let flags: FxHashMap<UserId, Flags> = recipients.iter().copied().collect();
    targets.extend(watching.into_iter().filter(|c| {
        let q = c.lock();
        q.options.all_public_streams && !flags.contains_key(&q.user)
    }));
    if targets.is_empty() {
        return;
    }
    // Read once for every queue: whether a viewer sees the sender's real
    // address follows from the realm's setting and the viewer's role.
    let Some(visibility) =
        state.realms.read(&message.realm, |r| r.settings.email_address_visibility)
    else {
        return;
    };
    let Some(sender_address_public) = state.users.read(&message.sender, |u| u.is_bot()) else {
        return;
    };
    // The realm and the sender as the renderer needs them, read once, on
    // the first rendering (none when no queue wants the message).
    let mut render_context: Option<Option<(Arc<Realm>, Arc<User>)>> = None;
    // One rendering per (apply_markdown, null avatar, empty topic as ""),
    // as JSON text shared by every queue of that shape.
    let mut rendered: FxHashMap<(bool, bool, bool), Arc<str>> = FxHashMap::default();
    // The per-queue `flags` member, written once per distinct flag set.
    let mut flag_members: Vec<(Flags, Arc<str>)> = Vec::new();
    rt.queues.deliver(seq, &targets, |q: &Queue| {
        if !q.options.wants("message") {
            return None;
        }
        let user_flags = match flags.get(&q.user) {
            Some(f) => *f,
            None => {
                // An all_public_streams queue: only channels it may read
                // (both read in place).
                let Destination::Channel { channel, .. } = &message.destination else {
                    return None;
                };
                let readable = state.users.read(&q.user, |viewer| {
                    state.channels.read(channel, |c| can_read_channel(viewer, c))
                })??;
                if !readable {
                    return None;
                }
                Flags::default()
            }
        };
        if !q.options.narrow_filter.is_empty() {
            let narrow = &q.options.narrow_filter;
            let matches = state
                .users
                .read(&q.user, |viewer| narrow.matches(state, viewer, &message, user_flags))?;
            if !matches {
                return None;
            }
        }
        // `can_see_email(viewer, sender)`, without re-reading the realm.
        let null_avatar = q.options.client_gravatar
            && (q.user == message.sender
                || sender_address_public
                || state
                    .users
                    .read(&q.user, |viewer| sees_others_emails(visibility, viewer.role))?);
        let key = (q.options.apply_markdown, null_avatar, q.options.capabilities.empty_topic_name);
        let shared = match rendered.entry(key) {
            Entry::Occupied(known) => Arc::clone(known.get()),
            Entry::Vacant(slot) => {
                let context = render_context.get_or_insert_with(|| {
                    Some((
                        state.realms.get_shared(&message.realm)?,
                        state.users.get_shared(&message.sender)?,
                    ))
                });
                let (realm, sender) = context.as_ref()?;
                let text = {
                    let options = MessageOptions {
                        apply_markdown: key.0,
                        client_gravatar: key.1,
                        allow_empty_topic_name: key.2,
                    };
                    let view = MessageView { flags: Flags::default(), historical: false };
                    // Rendered as the sender sees it: with `client_gravatar`
                    // set, the avatar is null exactly when `null_avatar` holds.
                    // Straight to text, without the flags (each queue's own
                    // `flags` member goes beside it).
                    let mut event = SortedMembers::with_capacity(1024);
                    let mut writer =
                        MessageWriter::new(state, realm, sender, options).without_flags();
                    writer.write(event.member("message"), &message, view, &[]);
                    event.string("type", "message");
                    let mut text = Vec::with_capacity(1024);
                    event.write_object(&mut text, &[]);
                    let inner = text.get(1..text.len() - 1).unwrap_or_default();
                    // The writer writes UTF-8: checked by the vectorized
                    // `from_utf8`, not the lossy scan (≈ 3.6k instructions
                    // for a short message's event).
                    match std::str::from_utf8(inner) {
                        Ok(text) => Arc::from(text),
                        Err(_) => Arc::from(String::from_utf8_lossy(inner)),
                    }
                };
                Arc::clone(slot.insert(text))
            }
        };
        let flags_member = match flag_members.iter().find(|(f, _)| *f == user_flags) {
            Some((_, text)) => Arc::clone(text),
            None => {
                let mut own = Map::new();
                own.insert("flags".into(), json!(user_flags.names()));
                let text = members(&own);
                flag_members.push((user_flags, Arc::clone(&text)));
                text
            }
        };
        let own = match &local {
            Some((queue_id, local_id)) if *queue_id == q.id && q.user == message.sender => {
                let mut own = Map::new();
                // Zulip names it `local_message_id` on the event (the
                // request's `local_id`); the clients match their local echo
                // by that key.
                own.insert("local_message_id".into(), json!(local_id));
                Arc::from(format!("{flags_member},{}", members(&own)))
            }
            _ => flags_member,
        };
        Some(Outgoing::text(shared, Some(own)))
    });
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
