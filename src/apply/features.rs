//! `apply` for `Mutation::Features`: a realm's read receipts and
//! moderation request channel (`realm` `update` events, as Zulip's), and
//! reminders (`reminders` `add` / `remove`, to their owner only), and
//! channel email tokens (no event: clients never see a token unasked).
//! Also `Mutation::AddSubmessage`: a message's widget state
//! (`submessage` events to the message's recipients).

use serde_json::json;

use crate::events::{Audience, Event};
use crate::state::features::{FeatureChange, RealmFeatures};
use crate::state::widgets::Submessage;
use crate::state::{RealmId, State};
use crate::view::realm::moderation_channel_value;

/// Applies one change of this area.
pub(super) fn apply(state: &State, change: &FeatureChange) -> Vec<Event> {
    let features = &state.features;
    match change {
        FeatureChange::SetRealm { realm, features: after } => {
            assert!(state.realms.contains(realm), "apply: no realm {realm}");
            let before = features.of(*realm);
            features.realms.insert(*realm, after.clone());
            realm_changes(*realm, &before, after)
        }
        FeatureChange::AddReminder(reminder) => {
            assert!(state.users.contains(&reminder.owner), "apply: no user {}", reminder.owner);
            assert!(
                features.reminders.get(&reminder.id).is_none(),
                "apply: reminder {} exists",
                reminder.id
            );
            features.claim_reminder(reminder.id);
            features.reminders.insert(reminder.id, reminder.clone());
            vec![Event::Broadcast {
                audience: Audience::Users(vec![reminder.owner]),
                event: json!({"type": "reminders", "op": "add", "reminders": [reminder.to_api()]}),
            }]
        }
        FeatureChange::RemoveReminder { id } => {
            let reminder =
                features.reminders.remove(id).unwrap_or_else(|| panic!("apply: no reminder {id}"));
            vec![Event::Broadcast {
                audience: Audience::Users(vec![reminder.owner]),
                event: json!({"type": "reminders", "op": "remove", "reminder_id": id}),
            }]
        }
        FeatureChange::AddEmailToken { channel, sender, token } => {
            assert!(state.channels.contains(channel), "apply: no channel {channel}");
            let key = (*channel, *sender);
            assert!(!features.email_tokens.contains(&key), "apply: token exists");
            features.email_tokens.insert(key, token.clone());
            Vec::new()
        }
    }
}

/// Adds a submessage to its message; a posted one (`announce`) reaches
/// every user holding the message, as Zulip's `submessage` event.
pub(super) fn add_submessage(state: &State, submessage: &Submessage, announce: bool) -> Vec<Event> {
    let message = state
        .messages
        .get(&submessage.message)
        .unwrap_or_else(|| panic!("apply: no message {}", submessage.message));
    assert!(state.users.contains(&submessage.sender), "apply: no user {}", submessage.sender);
    let widgets = &state.widgets;
    assert!(submessage.id >= widgets.peek(), "apply: submessage {} taken", submessage.id);
    widgets.claim(submessage.id);
    widgets.by_message.upsert(submessage.message, |list| list.push(submessage.clone()));
    if !announce {
        return Vec::new();
    }
    vec![Event::Broadcast {
        audience: Audience::Users(state.message_holders(&message)),
        event: submessage.event(),
    }]
}

/// The `realm` `update` events that take a client from `before` to
/// `after`.
fn realm_changes(realm: RealmId, before: &RealmFeatures, after: &RealmFeatures) -> Vec<Event> {
    let mut out = Vec::new();
    let mut update = |property: &str, value: serde_json::Value| {
        out.push(Event::Broadcast {
            audience: Audience::Realm(realm),
            event: json!({"type": "realm", "op": "update", "property": property, "value": value}),
        });
    };
    if before.enable_read_receipts != after.enable_read_receipts {
        update("enable_read_receipts", json!(after.enable_read_receipts));
    }
    if before.moderation_request_channel != after.moderation_request_channel {
        update("moderation_request_channel_id", moderation_channel_value(after));
    }
    out
}
