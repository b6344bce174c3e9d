//! The `apply` arms for administering channels, subscriptions, users,
//! groups and custom profile fields, and the Zulip event objects they
//! yield. Deterministic like `apply`: state and mutation in, events out.
//!
//! Every event here has the same JSON for all its recipients, so each is an
//! `Event::Broadcast`; where a detail may only reach some users (a real
//! email address), it goes out as a second event to a narrower audience.

use serde_json::{json, Map, Value};

use crate::events::{Audience, Event};
use crate::mutation::{
    ChannelChange, GroupChange, NotificationSetting, SubscriptionChange, UserChange,
};
use crate::state::access::{can_see_channel, can_see_email};
use crate::state::profile::ProfileField;
use crate::state::{Channel, ChannelId, Group, GroupId, IdKind, RealmId, State, UserId};
use crate::view::channel::default_streams;
use crate::view::groups::group_json;
use crate::view::profile::profile_fields_json;

fn broadcast(audience: Audience, event: Value) -> Event {
    Event::Broadcast { audience, event }
}

/// Active users of the channel's realm who may know the channel exists.
pub fn channel_audience(state: &State, channel: &Channel) -> Vec<UserId> {
    state
        .realm_users(channel.realm)
        .into_iter()
        .filter(|u| u.is_active && can_see_channel(u, channel))
        .map(|u| u.id)
        .collect()
}

/// `Mutation::Unsubscribe`.
pub fn unsubscribe(state: &State, channel: ChannelId, users: &[UserId]) -> Vec<Event> {
    let before = state.channels.get(&channel).unwrap_or_else(|| panic!("apply: no channel"));
    for user in users {
        let removed = state.subscriptions.update(user, |s| s.remove(&channel)).flatten();
        let removed =
            removed.unwrap_or_else(|| panic!("apply: user {user} is not subscribed to {channel}"));
        state.former_subscriptions.upsert(*user, |former| former.insert(channel, removed));
    }
    let after = state
        .channels
        .update(&channel, |c| {
            for u in users {
                c.subscribers.remove(u);
            }
            c.clone()
        })
        .expect("channel exists");
    let mut events = vec![broadcast(
        Audience::Users(users.to_vec()),
        json!({"type": "subscription", "op": "remove",
               "subscriptions": [{"stream_id": channel.0, "name": before.name}]}),
    )];
    let peers: Vec<UserId> = state
        .realm_users(before.realm)
        .into_iter()
        .filter(|u| u.is_active && !users.contains(&u.id))
        .filter(|u| crate::state::access::can_see_subscribers(u, &before))
        .map(|u| u.id)
        .collect();
    if !peers.is_empty() {
        events.push(broadcast(
            Audience::Users(peers),
            json!({"type": "subscription", "op": "peer_remove", "stream_ids": [channel.0],
                   "user_ids": users.iter().map(|u| u.0).collect::<Vec<_>>()}),
        ));
    }
    // Users who lose sight of a private channel hear that it is gone.
    let lost: Vec<UserId> = users
        .iter()
        .copied()
        .filter(|u| !state.users.get(u).is_some_and(|u| can_see_channel(&u, &after)))
        .collect();
    if !lost.is_empty() {
        events.push(broadcast(
            Audience::Users(lost),
            json!({"type": "stream", "op": "delete", "streams": [{"stream_id": channel.0, "name": after.name}],
                   "stream_ids": [channel.0]}),
        ));
    }
    events
}

/// A stream `update` event.
pub(super) fn stream_update(channel: &Channel, property: &str, value: Value) -> Map<String, Value> {
    let mut event = Map::new();
    event.insert("type".into(), json!("stream"));
    event.insert("op".into(), json!("update"));
    event.insert("stream_id".into(), json!(channel.id.0));
    event.insert("name".into(), json!(channel.name));
    event.insert("property".into(), json!(property));
    event.insert("value".into(), value);
    event
}

/// The realm's `default_streams` event (the whole list, as Zulip sends it).
pub fn default_streams_event(state: &State, realm: RealmId) -> Event {
    broadcast(
        Audience::Realm(realm),
        json!({"type": "default_streams", "default_streams": default_streams(state, realm)}),
    )
}

/// `Mutation::UpdateChannel`.
pub fn update_channel(state: &State, id: ChannelId, changes: &[ChannelChange]) -> Vec<Event> {
    let mut events = Vec::new();
    for change in changes {
        let before = state.channels.get(&id).unwrap_or_else(|| panic!("apply: no channel {id}"));
        if let ChannelChange::Name(name) = change {
            let old_key = (before.realm, before.name.to_lowercase());
            let new_key = (before.realm, name.to_lowercase());
            assert!(
                old_key == new_key || state.channel_by_name.get(&new_key).is_none(),
                "apply: channel name {name} taken"
            );
            state.channel_by_name.remove(&old_key);
            state.channel_by_name.insert(new_key, id);
        }
        let after = state
            .channels
            .update(&id, |c| {
                match change {
                    ChannelChange::Name(name) => c.name = name.clone(),
                    ChannelChange::Description { source, rendered } => {
                        c.description = source.clone();
                        c.rendered_description = rendered.clone();
                    }
                    ChannelChange::Access {
                        invite_only,
                        history_public_to_subscribers,
                        is_web_public,
                    } => {
                        c.invite_only = *invite_only;
                        c.history_public_to_subscribers = *history_public_to_subscribers;
                        c.is_web_public = *is_web_public;
                    }
                    ChannelChange::Default(on) => c.is_default = *on,
                    ChannelChange::Retention(days) => c.message_retention_days = *days,
                    ChannelChange::Archived(on) => c.is_archived = *on,
                    ChannelChange::Folder(folder) => c.folder_id = *folder,
                    ChannelChange::TopicsPolicy(policy) => c.topics_policy = *policy,
                    ChannelChange::Permission(which, setting) => {
                        *which.slot(&mut c.permissions) = setting.clone();
                    }
                }
                c.clone()
            })
            .expect("channel exists");
        let (seen_before, seen_after) =
            (channel_audience(state, &before), channel_audience(state, &after));
        // Users who can no longer see the channel hear that it is gone,
        // those who newly can get it as created (as Zulip does).
        let lost: Vec<UserId> =
            seen_before.iter().copied().filter(|u| !seen_after.contains(u)).collect();
        if !lost.is_empty() {
            events.push(broadcast(
                Audience::Users(lost),
                json!({"type": "stream", "op": "delete",
                       "streams": [{"stream_id": id.0, "name": after.name}],
                       "stream_ids": [id.0]}),
            ));
        }
        let gained: Vec<UserId> =
            seen_after.iter().copied().filter(|u| !seen_before.contains(u)).collect();
        let audience =
            Audience::Users(seen_after.iter().copied().filter(|u| !gained.contains(u)).collect());
        if !gained.is_empty() {
            // They get the channel as it is now, so no update besides.
            events.push(Event::ChannelVisible { channel: id, users: gained });
        }
        // An archived or private channel leaves the default channel groups.
        if matches!(
            change,
            ChannelChange::Access { invite_only: true, .. } | ChannelChange::Archived(true)
        ) {
            events.extend(super::organization::drop_from_stream_groups(state, after.realm, id));
        }
        let event = match change {
            // Zulip reports the old name under `name`.
            ChannelChange::Name(name) => stream_update(&before, "name", json!(name)),
            ChannelChange::Description { source, rendered } => {
                let mut e = stream_update(&after, "description", json!(source));
                e.insert("rendered_description".into(), json!(rendered));
                e
            }
            ChannelChange::Access { invite_only, history_public_to_subscribers, is_web_public } => {
                let mut e = stream_update(&after, "invite_only", json!(invite_only));
                e.insert(
                    "history_public_to_subscribers".into(),
                    json!(history_public_to_subscribers),
                );
                e.insert("is_web_public".into(), json!(is_web_public));
                e
            }
            ChannelChange::Default(_) => {
                events.push(default_streams_event(state, after.realm));
                continue;
            }

            ChannelChange::Retention(days) => {
                stream_update(&after, "message_retention_days", json!(days))
            }
            ChannelChange::Archived(on) => stream_update(&after, "is_archived", json!(on)),
            ChannelChange::Folder(folder) => stream_update(&after, "folder_id", json!(folder)),
            ChannelChange::TopicsPolicy(policy) => {
                stream_update(&after, "topics_policy", json!(policy.as_str()))
            }
            ChannelChange::Permission(which, setting) => {
                stream_update(&after, which.name(), crate::view::groups::group_setting(setting))
            }
        };
        events.push(broadcast(audience, Value::Object(event)));
    }
    events
}

/// `Mutation::UpdateSubscriptions`.
pub fn update_subscriptions(
    state: &State,
    user: UserId,
    changes: &[(ChannelId, SubscriptionChange)],
) -> Vec<Event> {
    let mut events = Vec::new();
    for (channel, change) in changes {
        state
            .subscriptions
            .update(&user, |subs| {
                let sub = subs.get_mut(channel).expect("apply: not subscribed");
                match change {
                    SubscriptionChange::Color(color) => sub.color = color.clone(),
                    SubscriptionChange::Muted(on) => sub.is_muted = *on,
                    SubscriptionChange::PinToTop(on) => sub.pin_to_top = *on,
                    SubscriptionChange::Notification(which, value) => *which.slot(sub) = *value,
                }
            })
            .unwrap_or_else(|| panic!("apply: user {user} has no subscriptions"));
        let mut event = |property: &str, value: Value| {
            events.push(broadcast(
                Audience::Users(vec![user]),
                json!({"type": "subscription", "op": "update", "stream_id": channel.0,
                       "property": property, "value": value}),
            ));
        };
        match change {
            SubscriptionChange::Color(color) => event("color", json!(color)),
            // Two events, as Zulip sends: the modern and the legacy property.
            SubscriptionChange::Muted(on) => {
                event("is_muted", json!(on));
                event("in_home_view", json!(!on));
            }
            SubscriptionChange::PinToTop(on) => event("pin_to_top", json!(on)),
            SubscriptionChange::Notification(which, value) => {
                let name = NotificationSetting::ALL
                    .iter()
                    .find(|(w, _)| w == which)
                    .map(|(_, n)| *n)
                    .expect("every setting is named");
                event(name, json!(value));
            }
        }
    }
    events
}

/// `Mutation::UpdateUsers`.
pub fn update_users(state: &State, changes: &[(UserId, UserChange)]) -> Vec<Event> {
    let mut events = Vec::new();
    for (id, change) in changes {
        let before = state.users.get(id).unwrap_or_else(|| panic!("apply: no user {id}"));
        if let UserChange::Email(email) = change {
            state.user_by_email.remove(&(before.realm, before.email.to_lowercase()));
            state
                .user_by_delivery_email
                .remove(&(before.realm, before.delivery_email.to_lowercase()));
            state.user_by_email.insert((before.realm, email.to_lowercase()), *id);
            state.user_by_delivery_email.insert((before.realm, email.to_lowercase()), *id);
        }
        if let UserChange::ProfileValue { field, value } = change {
            state.profile_values.upsert(*id, |values| match value {
                Some(v) => {
                    values.insert(*field, v.clone());
                }
                None => {
                    values.remove(field);
                }
            });
        }
        state.users.update(id, |u| match change {
            UserChange::FullName(name) => u.full_name = name.clone(),
            UserChange::Role(role) => u.role = *role,
            UserChange::Email(email) => {
                u.email = email.clone();
                u.delivery_email = email.clone();
            }
            UserChange::Active(on) => u.is_active = *on,
            UserChange::ApiKey(key) => u.api_key = key.clone(),
            UserChange::BotOwner(owner) => u.bot_owner = Some(*owner),
            UserChange::ProfileValue { .. } => {}
        });
        let realm = Audience::Realm(before.realm);
        if matches!(change, UserChange::Role(_) | UserChange::Active(_)) {
            let after = state.users.get(id).expect("user exists");
            events.extend(system_group_moves(state, &before, &after));
        }
        let person = |fields: Value| {
            let mut person = json!({"user_id": id.0});
            if let (Value::Object(p), Value::Object(f)) = (&mut person, fields) {
                p.extend(f);
            }
            json!({"type": "realm_user", "op": "update", "person": person})
        };
        match change {
            UserChange::FullName(name) => {
                events.push(broadcast(realm, person(json!({"full_name": name}))));
            }
            UserChange::Role(role) => {
                events.push(broadcast(realm, person(json!({"role": role.code()}))));
            }
            UserChange::Email(email) => {
                let after = state.users.get(id).expect("user exists");
                // The API email: a placeholder where the realm hides addresses.
                let shown = state.api_email(&after);
                events.push(broadcast(realm, person(json!({"new_email": shown}))));
                let seers: Vec<UserId> = state
                    .realm_users(before.realm)
                    .into_iter()
                    .filter(|v| v.is_active && can_see_email(state, v, &after))
                    .map(|v| v.id)
                    .collect();
                events.push(broadcast(
                    Audience::Users(seers),
                    person(json!({"delivery_email": email})),
                ));
            }
            UserChange::Active(on) => {
                events.push(broadcast(realm, person(json!({"is_active": on}))));
                if !on {
                    events.push(Event::QueuesEnd { user: *id });
                }
            }
            // A new key is news to nobody's queue.
            UserChange::ApiKey(_) => {}
            UserChange::BotOwner(owner) => {
                events.push(broadcast(realm, person(json!({"bot_owner_id": owner.0}))));
            }
            UserChange::ProfileValue { field, value } => {
                let (value, rendered) = value.clone().unwrap_or_default();
                let mut field_json = json!({"id": field, "value": value});
                if let Some(r) = rendered {
                    field_json["rendered_value"] = json!(r);
                }
                events.push(broadcast(realm, person(json!({"custom_profile_field": field_json}))));
            }
        }
        events.extend(super::bots::on_change(state, &before, change));
    }
    events
}

/// `user_group` member events for the system groups a role or activation
/// change moves a user out of and into (their membership follows roles,
/// for active users).
fn system_group_moves(
    state: &State,
    before: &crate::state::User,
    after: &crate::state::User,
) -> Vec<Event> {
    let Some(realm) = state.realms.get(&before.realm) else { return Vec::new() };
    let mut events = Vec::new();
    for kind in crate::state::SystemGroup::ALL {
        let was = before.is_active && crate::state::access::role_in_system_group(before.role, kind);
        let is = after.is_active && crate::state::access::role_in_system_group(after.role, kind);
        if was == is {
            continue;
        }
        let op = if is { "add_members" } else { "remove_members" };
        events.push(broadcast(
            Audience::Realm(before.realm),
            json!({"type": "user_group", "op": op, "group_id": realm.system_groups.id(kind).0,
                   "user_ids": [before.id.0]}),
        ));
    }
    events
}

/// `Mutation::CreateGroup`.
pub fn create_group(state: &State, group: &Group) -> Vec<Event> {
    assert!(state.groups.get(&group.id).is_none(), "apply: group {} exists", group.id);
    state.ids.claim(IdKind::Group, group.id.0);
    state.groups.insert(group.id, group.clone());
    vec![broadcast(
        Audience::Realm(group.realm),
        json!({"type": "user_group", "op": "add", "group": group_json(state, group)}),
    )]
}

/// `Mutation::UpdateGroup`.
pub fn update_group(state: &State, id: GroupId, change: &GroupChange) -> Vec<Event> {
    let group = state
        .groups
        .update(&id, |g| {
            assert!(g.system.is_none(), "apply: system group {id} is not editable");
            match change {
                GroupChange::Info { name, description } => {
                    if let Some(n) = name {
                        g.name = n.clone();
                    }
                    if let Some(d) = description {
                        g.description = d.clone();
                    }
                }
                GroupChange::Members { add, remove } => {
                    g.direct_members.extend(add.iter().copied());
                    for u in remove {
                        g.direct_members.remove(u);
                    }
                }
                GroupChange::Subgroups { add, remove } => {
                    g.direct_subgroups.extend(add.iter().copied());
                    for s in remove {
                        g.direct_subgroups.remove(s);
                    }
                }
                GroupChange::Deactivate => g.deactivated = true,
            }
            g.clone()
        })
        .unwrap_or_else(|| panic!("apply: no group {id}"));
    let realm = Audience::Realm(group.realm);
    let ids = |v: &[UserId]| v.iter().map(|u| u.0).collect::<Vec<_>>();
    let gids = |v: &[GroupId]| v.iter().map(|g| g.0).collect::<Vec<_>>();
    let mut events = Vec::new();
    let mut push = |event: Value| events.push(broadcast(realm.clone(), event));
    match change {
        GroupChange::Info { name, description } => {
            let mut data = Map::new();
            if let Some(n) = name {
                data.insert("name".into(), json!(n));
            }
            if let Some(d) = description {
                data.insert("description".into(), json!(d));
            }
            push(json!({"type": "user_group", "op": "update", "group_id": id.0, "data": data}));
        }
        GroupChange::Members { add, remove } => {
            if !add.is_empty() {
                push(json!({"type": "user_group", "op": "add_members", "group_id": id.0,
                            "user_ids": ids(add)}));
            }
            if !remove.is_empty() {
                push(json!({"type": "user_group", "op": "remove_members", "group_id": id.0,
                            "user_ids": ids(remove)}));
            }
        }
        GroupChange::Subgroups { add, remove } => {
            if !add.is_empty() {
                push(json!({"type": "user_group", "op": "add_subgroups", "group_id": id.0,
                            "direct_subgroup_ids": gids(add)}));
            }
            if !remove.is_empty() {
                push(json!({"type": "user_group", "op": "remove_subgroups", "group_id": id.0,
                            "direct_subgroup_ids": gids(remove)}));
            }
        }
        GroupChange::Deactivate => {
            push(json!({"type": "user_group", "op": "update", "group_id": id.0,
                        "data": {"deactivated": true}}));
        }
    }
    events
}

fn profile_fields_event(state: &State, realm: RealmId) -> Vec<Event> {
    vec![broadcast(
        Audience::Realm(realm),
        json!({"type": "custom_profile_fields", "fields": profile_fields_json(state, realm)}),
    )]
}

/// `Mutation::PutProfileField`.
pub fn put_profile_field(state: &State, field: &ProfileField) -> Vec<Event> {
    state.profile_fields.insert(field.id, field.clone());
    profile_fields_event(state, field.realm)
}

/// `Mutation::DeleteProfileField`.
pub fn delete_profile_field(state: &State, realm: RealmId, field: u64) -> Vec<Event> {
    assert!(state.profile_fields.remove(&field).is_some(), "apply: no profile field {field}");
    for user in state.realm_users(realm) {
        state.profile_values.update(&user.id, |v| v.remove(&field));
    }
    profile_fields_event(state, realm)
}

/// `Mutation::ReorderProfileFields`.
pub fn reorder_profile_fields(state: &State, realm: RealmId, order: &[u64]) -> Vec<Event> {
    for (i, id) in order.iter().enumerate() {
        state
            .profile_fields
            .update(id, |f| f.order = i as u64 + 1)
            .unwrap_or_else(|| panic!("apply: no profile field {id}"));
    }
    profile_fields_event(state, realm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::{ChannelPermission, Mutation};
    use crate::persist::snapshot;
    use crate::state::profile::FieldType;
    use crate::state::{GroupSetting, Role, TopicsPolicy};
    use crate::testkit::World;

    /// A history of every administrative mutation kind.
    fn history(w: &mut World) -> Vec<Mutation> {
        let owner = w.user("", "o@t.test", Role::Owner);
        let member = w.user("", "m@t.test", Role::Member);
        let channel = w.channel("", "c", false, &[&owner, &member]);
        let realm = w.state.realm_by_subdomain("").unwrap();
        let group = crate::state::Group {
            id: GroupId(w.state.ids.peek(IdKind::Group)),
            realm: realm.id,
            name: "g".into(),
            description: String::new(),
            system: None,
            direct_members: [member.id].into(),
            direct_subgroups: Default::default(),
            deactivated: false,
            date_created: Some(1),
            creator: Some(owner.id),
        };
        let field = ProfileField {
            id: 1,
            realm: realm.id,
            field_type: FieldType::ShortText,
            order: 1,
            name: "Team".into(),
            hint: String::new(),
            field_data: String::new(),
            display_in_profile_summary: false,
            required: false,
            editable_by_user: true,
        };
        vec![
            Mutation::UpdateChannel {
                channel: channel.id,
                changes: vec![
                    ChannelChange::Name("d".into()),
                    ChannelChange::TopicsPolicy(TopicsPolicy::AllowEmptyTopic),
                    ChannelChange::Permission(
                        ChannelPermission::SendMessage,
                        GroupSetting::Group(group.id),
                    ),
                    ChannelChange::Default(false),
                ],
            },
            Mutation::UpdateSubscriptions {
                user: member.id,
                changes: vec![(channel.id, SubscriptionChange::Muted(true))],
            },
            Mutation::CreateGroup(group.clone()),
            Mutation::UpdateGroup {
                group: group.id,
                change: GroupChange::Members { add: vec![owner.id], remove: vec![member.id] },
            },
            Mutation::PutProfileField(field),
            Mutation::UpdateUsers {
                changes: vec![
                    (member.id, UserChange::FullName("M".into())),
                    (member.id, UserChange::Email("m2@t.test".into())),
                    (
                        member.id,
                        UserChange::ProfileValue { field: 1, value: Some(("x".into(), None)) },
                    ),
                    (member.id, UserChange::Active(false)),
                ],
            },
            Mutation::Unsubscribe { channel: channel.id, users: vec![member.id] },
            Mutation::Batch(vec![Mutation::DeleteProfileField { realm: realm.id, field: 1 }]),
        ]
    }

    #[test]
    fn administrative_changes_replay_identically_and_survive_snapshots() {
        let mut live = World::new();
        let log = history(&mut live);
        let mut replay = World::new();
        let _ = history(&mut replay);
        for m in &log {
            assert!(!live.apply(m.clone()).is_empty(), "{m:?} yields events");
            replay.apply(m.clone());
        }
        let image = live.state.image();
        assert_eq!(snapshot::encode(&image), snapshot::encode(&replay.state.image()));
        let restored = State::from_image(image.clone());
        assert_eq!(snapshot::encode(&restored.image()), snapshot::encode(&image));
        // The derived indexes follow: new name and new email resolve.
        let realm = restored.realm_by_subdomain("").unwrap();
        assert!(restored.channel_by_name(realm.id, "d").is_some());
        assert!(restored.channel_by_name(realm.id, "c").is_none());
        assert!(restored.user_by_email(realm.id, "m2@t.test").is_some());
        assert!(restored.user_by_email(realm.id, "m@t.test").is_none());
    }
}
