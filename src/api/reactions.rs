//! Emoji reactions: `POST` and `DELETE /messages/{message_id}/reactions`.
//!
//! A reaction is (user, `reaction_type`, `emoji_code`); `emoji_name` is the
//! display name. Bots send only `emoji_name`, so the code (and type) is
//! resolved when `emoji_code` is absent: an active custom emoji of the realm
//! by that name first (`realm_emoji`, its id as the code), else Zulip's name
//! table.

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::markdown::emoji;
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access;
use crate::state::messages::{Reaction, ReactionType};
use crate::state::{Message, MessageId, State, User};
use std::sync::Arc;

/// The message named in the path, if `user` may see it; otherwise
/// "Invalid message(s)", the same for missing, private and foreign ids.
pub fn visible_message(state: &State, user: &User, id: MessageId) -> ApiResult<Arc<Message>> {
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let message = state.messages.get(&id).ok_or_else(invalid)?;
    access::message_view(state, user, &message).ok_or_else(invalid)?;
    Ok(message)
}

/// The emoji a request names: (type, code) from `emoji_code` /
/// `reaction_type` when given and valid, else from `emoji_name`.
fn emoji(state: &State, call: &mut Call, name: Option<&str>) -> ApiResult<(ReactionType, String)> {
    let code = call.params.string("emoji_code");
    let kind = call.params.string("reaction_type");
    let Some(code) = code else {
        let name = name.ok_or_else(|| {
            ApiError::bad_request(
                "At least one of the following arguments must be present: emoji_name, emoji_code",
            )
        })?;
        if let Some(custom) = state.files.active_emoji(call.realm.id, name) {
            return Ok((ReactionType::Realm, custom.id.to_string()));
        }
        return emoji_by_name(name);
    };
    let kind = match kind.as_deref() {
        None => ReactionType::Unicode,
        Some(k) => ReactionType::parse(k)
            .ok_or_else(|| ApiError::invalid("reaction_type", "not an emoji type"))?,
    };
    match kind {
        ReactionType::Unicode if !emoji::is_unicode_code(&code) => {
            Err(ApiError::bad_request("Invalid emoji code."))
        }
        ReactionType::Unicode => {
            // The name must be one of the code's names, as in Zulip.
            if let Some(name) = name {
                if emoji::code_for_name(name) != Some(code.as_str()) {
                    return Err(ApiError::bad_request("Invalid emoji name."));
                }
            }
            Ok((kind, code))
        }
        ReactionType::ZulipExtra if emoji::ZULIP_EXTRA.contains(&code.as_str()) => {
            if name.is_some_and(|n| n != code) {
                return Err(ApiError::bad_request("Invalid emoji name."));
            }
            Ok((kind, code))
        }
        ReactionType::ZulipExtra => Err(ApiError::bad_request("Invalid emoji code.")),
        ReactionType::Realm => {
            let custom = code
                .parse::<u64>()
                .ok()
                .and_then(|id| state.files.emoji(id))
                .filter(|e| e.realm == call.realm.id && !e.deactivated)
                .ok_or_else(|| ApiError::bad_request("Invalid custom emoji."))?;
            if name.is_some_and(|n| n != custom.name) {
                return Err(ApiError::bad_request("Invalid custom emoji name."));
            }
            Ok((kind, code))
        }
    }
}

/// Unicode or Zulip-extra emoji by name (Zulip's name table).
pub(super) fn emoji_by_name(name: &str) -> ApiResult<(ReactionType, String)> {
    if let Some(code) = emoji::code_for_name(name) {
        return Ok((ReactionType::Unicode, code.to_owned()));
    }
    if emoji::ZULIP_EXTRA.contains(&name) {
        return Ok((ReactionType::ZulipExtra, name.to_owned()));
    }
    Err(ApiError::bad_request(format!("Emoji '{name}' does not exist")))
}

/// `POST /messages/{message_id}/reactions`: add an emoji reaction.
pub fn add(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let name = call.params.required_string("emoji_name")?;
    let (reaction_type, emoji_code) = emoji(&app.state, call, Some(&name))?;
    let user = call.caller().clone();
    let reaction = Reaction { emoji_name: name, emoji_code, reaction_type, user: user.id };
    app.committer.commit(|state| {
        let message = visible_message(state, &user, id)?;
        if message.reactions().iter().any(|r| same(r, &reaction)) {
            return Err(ApiError::reaction_exists());
        }
        Ok((Mutation::AddReaction { message: id, reaction }, ()))
    })?;
    Ok(reply! {})
}

/// `DELETE /messages/{message_id}/reactions`: remove one's own reaction.
pub fn remove(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let name = call.params.string("emoji_name");
    let (reaction_type, emoji_code) = emoji(&app.state, call, name.as_deref())?;
    let user = call.caller().clone();
    app.committer.commit(|state| {
        let message = visible_message(state, &user, id)?;
        let probe =
            Reaction { emoji_name: String::new(), emoji_code, reaction_type, user: user.id };
        let existing = message
            .reactions()
            .iter()
            .find(|r| same(r, &probe))
            .cloned()
            .ok_or_else(ApiError::reaction_missing)?;
        Ok((Mutation::RemoveReaction { message: id, reaction: existing }, ()))
    })?;
    Ok(reply! {})
}

fn same(a: &Reaction, b: &Reaction) -> bool {
    a.user == b.user && a.reaction_type == b.reaction_type && a.emoji_code == b.emoji_code
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::events::{Audience, Event};
    use crate::mutation::build::NewChannel;
    use crate::mutation::Mutation;
    use crate::state::access::delete_refusal;
    use crate::state::messages::{Reaction, ReactionType};
    use crate::state::{Destination, GroupSetting, Message, Role, SystemGroup, User};
    use crate::testkit::World;
    use std::sync::Arc;

    /// A realm: owner, two members, a guest; a private channel with the
    /// owner and the first member; one message in it from that member.
    fn world() -> (World, Vec<User>, Arc<Message>) {
        let mut w = World::new();
        let users: Vec<User> = [Role::Owner, Role::Member, Role::Member, Role::Guest]
            .iter()
            .enumerate()
            .map(|(i, role)| w.user("", &format!("u{i}@t.test"), *role))
            .collect();
        let new = NewChannel {
            name: "secret",
            description: "",
            invite_only: true,
            creator: Some(users[0].id),
            subscribers: &[users[0].id, users[1].id],
        };
        let channel = w.add_channel("", &new);
        let id = w.post(&users[1], channel.id, "t", "x");
        let message = w.message(id);
        (w, users, message)
    }

    fn reaction_of(user: &User) -> Reaction {
        Reaction {
            emoji_name: "eyes".into(),
            emoji_code: "1f440".into(),
            reaction_type: ReactionType::Unicode,
            user: user.id,
        }
    }

    #[test]
    fn reaction_events_reach_those_who_can_see_the_message() {
        let (mut w, users, message) = world();
        let reaction = Reaction {
            emoji_name: "octopus".into(),
            emoji_code: "1f419".into(),
            reaction_type: ReactionType::Unicode,
            user: users[0].id,
        };
        let events =
            w.apply(Mutation::AddReaction { message: message.id, reaction: reaction.clone() });
        let expected = json!({
            "type": "reaction", "op": "add", "message_id": message.id.0,
            "emoji_name": "octopus", "emoji_code": "1f419", "reaction_type": "unicode_emoji",
            "user_id": users[0].id.0,
            "user": {"user_id": users[0].id.0, "email": "u0@t.test", "full_name": "u0@t.test"},
        });
        assert_eq!(
            events,
            vec![Event::Broadcast {
                audience: Audience::Users(vec![users[0].id, users[1].id]),
                event: expected
            }]
        );
        assert_eq!(
            w.state.messages.get(&message.id).unwrap().reactions(),
            std::slice::from_ref(&reaction)
        );
        let events = w.apply(Mutation::RemoveReaction { message: message.id, reaction });
        let Event::Broadcast { event, .. } = &events[0] else { panic!("{events:?}") };
        assert_eq!(event["op"], "remove");
        // Someone without a row (a public channel's history) hears of their
        // own reaction.
        let outsider = Reaction { user: users[2].id, ..reaction_of(&users[2]) };
        let events = w.apply(Mutation::AddReaction { message: message.id, reaction: outsider });
        let Event::Broadcast { audience, .. } = &events[0] else { panic!("{events:?}") };
        assert_eq!(audience, &Audience::Users(vec![users[0].id, users[1].id, users[2].id]));
        assert_eq!(w.state.messages.get(&message.id).unwrap().reactions().len(), 1);
    }

    #[test]
    fn delete_events_carry_both_shapes_and_clean_up() {
        let (mut w, users, message) = world();
        // Deleted by someone with no row for it (an administrator, say):
        // they hear of it too.
        let delete = Mutation::DeleteMessages { messages: vec![message.id], by: users[2].id };
        let events = w.apply(delete);
        let Destination::Channel { channel, .. } = message.destination else { unreachable!() };
        let expected = json!({
            "type": "delete_message", "message_id": message.id.0, "message_ids": [message.id.0],
            "message_type": "stream", "stream_id": channel.0, "topic": "t",
        });
        // It was the channel's only message: those who see the channel
        // hear that it has no first message now.
        let first = json!({
            "type": "stream", "op": "update", "stream_id": channel.0, "name": "secret",
            "property": "first_message_id", "value": null,
        });
        assert_eq!(
            events,
            vec![
                Event::Broadcast {
                    audience: Audience::Users(vec![users[0].id, users[1].id]),
                    event: first
                },
                Event::Broadcast {
                    audience: Audience::Users(vec![users[0].id, users[1].id, users[2].id]),
                    event: expected
                }
            ]
        );
        assert!(w.state.messages.get(&message.id).is_none());
        assert!(w.state.flags(users[0].id, message.id).is_none());
        assert!(w.state.by_recipient.get(&message.recipient).unwrap().is_empty());
        assert_eq!(w.state.channels.get(&channel).unwrap().first_message_id, None);
    }

    #[test]
    fn delete_permission_and_time_limit() {
        let (w, users, message) = world();
        let (owner, author, other) = (&users[0], &users[1], &users[2]);
        let sent = message.timestamp;
        assert_eq!(delete_refusal(&w.state, author, &message, sent + 600), None);
        assert_eq!(
            delete_refusal(&w.state, author, &message, sent + 601),
            Some("The time limit for deleting this message has passed")
        );
        assert!(delete_refusal(&w.state, other, &message, sent).is_some());
        assert_eq!(
            delete_refusal(&w.state, owner, &message, sent + 1_000_000),
            None,
            "admins: no limit"
        );
        // No limit, and authors barred by the realm and the channel.
        let mut realm = w.state.realms.get(&author.realm).unwrap();
        realm.settings.message_content_delete_limit_seconds = None;
        w.state.realms.insert(realm.id, realm.clone());
        assert_eq!(delete_refusal(&w.state, author, &message, sent + 1_000_000), None);
        let nobody = GroupSetting::Group(realm.system_groups.id(SystemGroup::Nobody));
        realm.settings.can_delete_own_message_group = Some(nobody.clone());
        w.state.realms.insert(realm.id, realm.clone());
        let Destination::Channel { channel, .. } = message.destination else { unreachable!() };
        assert!(
            delete_refusal(&w.state, author, &message, sent).is_some(),
            "a channel adds nobody by default"
        );
        let everyone = GroupSetting::Group(realm.system_groups.id(SystemGroup::Everyone));
        w.state.channels.update(&channel, |c| c.permissions.can_delete_own_message = everyone);
        assert_eq!(
            delete_refusal(&w.state, author, &message, sent),
            None,
            "the channel's grant adds to the realm's"
        );
        w.state
            .channels
            .update(&channel, |c| c.permissions.can_delete_own_message = nobody.clone());
        assert!(delete_refusal(&w.state, author, &message, sent).is_some());
        // A channel-level "delete any" grant works without the realm's.
        w.state.channels.update(&channel, |c| {
            c.permissions.can_delete_any_message = GroupSetting::Anonymous {
                direct_members: [other.id].into(),
                direct_subgroups: Default::default(),
            }
        });
        assert_eq!(delete_refusal(&w.state, other, &message, sent + 1_000_000), None);
    }
}
