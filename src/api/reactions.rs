//! Emoji reactions: `POST` and `DELETE /messages/{message_id}/reactions`.
//!
//! A reaction is (user, `reaction_type`, `emoji_code`); `emoji_name` is the
//! display name. Bots send only `emoji_name`, so the code (and type) is
//! resolved from Zulip's name table when `emoji_code` is absent. natter has
//! no custom (realm) emoji yet, so `realm_emoji` codes never validate.

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::markdown::emoji;
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access;
use crate::state::messages::{Reaction, ReactionType};
use crate::state::{Message, MessageId, State, User};

/// The message named in the path, if `user` may see it; otherwise
/// "Invalid message(s)", the same for missing, private and foreign ids.
pub fn visible_message(state: &State, user: &User, id: MessageId) -> ApiResult<Message> {
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let message = state.messages.get(&id).ok_or_else(invalid)?;
    access::message_view(state, user, &message).ok_or_else(invalid)?;
    Ok(message)
}

/// The emoji a request names: (type, code) from `emoji_code` /
/// `reaction_type` when given and valid, else from `emoji_name`.
fn emoji(call: &mut Call, name: Option<&str>) -> ApiResult<(ReactionType, String)> {
    let code = call.params.string("emoji_code");
    let kind = call.params.string("reaction_type");
    let Some(code) = code else {
        let name = name.ok_or_else(|| {
            ApiError::bad_request(
                "At least one of the following arguments must be present: emoji_name, emoji_code",
            )
        })?;
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
        ReactionType::Realm => Err(ApiError::bad_request("Invalid custom emoji.")),
    }
}

fn emoji_by_name(name: &str) -> ApiResult<(ReactionType, String)> {
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
    let (reaction_type, emoji_code) = emoji(call, Some(&name))?;
    let user = call.caller().clone();
    let reaction = Reaction { emoji_name: name, emoji_code, reaction_type, user: user.id };
    app.committer.commit(|state| {
        let message = visible_message(state, &user, id)?;
        if message.reactions.iter().any(|r| same(r, &reaction)) {
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
    let (reaction_type, emoji_code) = emoji(call, name.as_deref())?;
    let user = call.caller().clone();
    app.committer.commit(|state| {
        let message = visible_message(state, &user, id)?;
        let probe =
            Reaction { emoji_name: String::new(), emoji_code, reaction_type, user: user.id };
        let existing = message
            .reactions
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
