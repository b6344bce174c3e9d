//! Uploaded files' records: each change is told to the attachment's
//! owner as Zulip's `attachment` event, with their `upload_space_used`.

use serde_json::json;

use crate::events::{Audience, Event};
use crate::state::files::{Attachment, Avatar, RealmEmoji, RealmFileSettings};
use crate::state::{MessageId, RealmId, State, UserId};
use crate::view;

/// `op` for `attachment`, told to its owner.
fn event(state: &State, op: &str, attachment: serde_json::Value, a: &Attachment) -> Event {
    let event = json!({
        "type": "attachment",
        "op": op,
        "attachment": attachment,
        "upload_space_used": state.files.used_by_user(a.owner),
    });
    Event::Broadcast { audience: Audience::Users(vec![a.owner]), event }
}

/// Records a new attachment.
pub fn create(state: &State, attachment: &Attachment) -> Vec<Event> {
    assert!(state.users.contains(&attachment.owner), "apply: no user {}", attachment.owner);
    state.files.insert(attachment.clone());
    vec![event(state, "add", view::files::attachment(state, attachment), attachment)]
}

/// Links a message to attachments (each still recorded).
pub fn link(state: &State, message: MessageId, ids: &[u64]) -> Vec<Event> {
    ids.iter()
        .filter_map(|id| state.files.link(*id, message))
        .map(|a| event(state, "update", view::files::attachment(state, &a), &a))
        .collect()
}

/// Removes an attachment's record.
pub fn delete(state: &State, id: u64) -> Vec<Event> {
    let removed = state.files.remove(id).unwrap_or_else(|| panic!("apply: no attachment {id}"));
    vec![event(state, "remove", json!({"id": id}), &removed)]
}

/// The realm's whole custom emoji dict, to every user of the realm.
fn emoji_event(state: &State, realm: RealmId) -> Event {
    let event = json!({
        "type": "realm_emoji",
        "op": "update",
        "realm_emoji": view::files::realm_emoji(state, realm),
    });
    Event::Broadcast { audience: Audience::Realm(realm), event }
}

/// Records a new custom emoji.
pub fn create_emoji(state: &State, emoji: &RealmEmoji) -> Vec<Event> {
    assert!(state.realms.contains(&emoji.realm), "apply: no realm {}", emoji.realm);
    state.files.insert_emoji(emoji.clone());
    vec![emoji_event(state, emoji.realm)]
}

/// Deactivates a custom emoji.
pub fn deactivate_emoji(state: &State, id: u64) -> Vec<Event> {
    let realm = state.files.deactivate_emoji(id).unwrap_or_else(|| panic!("apply: no emoji {id}"));
    vec![emoji_event(state, realm)]
}

/// Sets or removes a user's uploaded avatar and bumps their
/// `avatar_version`; the realm is told with Zulip's `realm_user` update,
/// which carries the URLs whatever a client's `client_gravatar`.
pub fn set_avatar(state: &State, user: UserId, avatar: Option<&Avatar>) -> Vec<Event> {
    state.files.set_avatar(user, avatar.cloned());
    let updated = state
        .users
        .update(&user, |u| {
            u.avatar_version += 1;
            u.clone()
        })
        .unwrap_or_else(|| panic!("apply: no user {user}"));
    let url = view::user::avatar_url(state, &updated, false);
    let event = json!({
        "type": "realm_user",
        "op": "update",
        "person": {
            "user_id": user.0,
            "avatar_source": view::user::avatar_source(state, &updated),
            "avatar_url": url,
            "avatar_url_medium": view::user::avatar_url_medium(state, &updated),
            "avatar_version": updated.avatar_version,
        },
    });
    let mut events = vec![Event::Broadcast { audience: Audience::Realm(updated.realm), event }];
    events.extend(super::bots::on_avatar(state, &updated));
    events
}

/// Replaces a realm's file settings; each changed property is told to
/// the realm as `PATCH /realm` tells its others.
pub fn set_realm_settings(
    state: &State,
    realm: RealmId,
    settings: &RealmFileSettings,
) -> Vec<Event> {
    let row = state.realms.get(&realm).unwrap_or_else(|| panic!("apply: no realm {realm}"));
    let before = state.files.realm_settings(realm);
    state.files.set_realm_settings(realm, settings.clone());
    view::files::settings_changes(&row, &before, settings)
        .into_iter()
        .map(|event| Event::Broadcast { audience: Audience::Realm(realm), event })
        .collect()
}
