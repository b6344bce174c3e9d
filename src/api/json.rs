//! The JSON shapes of Zulip's resources (User, Message…), built from state
//! for one viewer: what a viewer may see (real emails, flags) is decided
//! here with `state::access`, never in the individual handlers.

use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

use super::message_edit::edit_history_json;
use crate::state::access::{can_see_email, MessageView};
use crate::state::{Destination, Message, Realm, Role, State, User, UserId};

/// Options that change a user's JSON.
#[derive(Clone, Copy, Debug)]
pub struct UserOptions {
    /// Leave `avatar_url` null where the client can compute a gravatar.
    pub client_gravatar: bool,
    /// Include `profile_data`.
    pub include_custom_profile_fields: bool,
}

/// A User resource as `viewer` may see it.
pub fn user(state: &State, viewer: &User, user: &User, options: UserOptions) -> Value {
    let sees_email = can_see_email(state, viewer, user);
    let mut out = Map::new();
    out.insert("user_id".into(), json!(user.id.0));
    out.insert(
        "delivery_email".into(),
        if sees_email { json!(user.delivery_email) } else { Value::Null },
    );
    out.insert("email".into(), json!(user.email));
    out.insert("full_name".into(), json!(user.full_name));
    out.insert("date_joined".into(), json!(iso8601(user.date_joined)));
    out.insert("is_active".into(), json!(user.is_active));
    out.insert("is_owner".into(), json!(user.role == Role::Owner));
    out.insert("is_admin".into(), json!(user.role.is_admin()));
    out.insert("is_guest".into(), json!(user.role == Role::Guest));
    out.insert("is_bot".into(), json!(user.is_bot()));
    out.insert("bot_type".into(), json!(user.bot_type.map(|t| t.code())));
    if user.is_bot() {
        out.insert("bot_owner_id".into(), json!(user.bot_owner.map(|o| o.0)));
    }
    out.insert("role".into(), json!(user.role.code()));
    out.insert("timezone".into(), json!(user.timezone));
    out.insert("avatar_url".into(), avatar_url(user, options.client_gravatar && sees_email));
    out.insert("avatar_version".into(), json!(user.avatar_version));
    if options.include_custom_profile_fields && !user.is_bot() {
        out.insert("profile_data".into(), json!({}));
    }
    Value::Object(out)
}

/// The avatar URL: a gravatar of the real email (natter stores no uploaded
/// avatars yet), or null when the client computes it itself.
pub fn avatar_url(user: &User, client_computes: bool) -> Value {
    if client_computes {
        return Value::Null;
    }
    let digest = Md5::digest(user.delivery_email.trim().to_lowercase().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    json!(format!(
        "https://secure.gravatar.com/avatar/{hex}?d=identicon&version={}",
        user.avatar_version
    ))
}

/// Options that change a message's JSON.
#[derive(Clone, Copy, Debug)]
pub struct MessageOptions {
    /// HTML (`true`) or Markdown source.
    pub apply_markdown: bool,
    /// Show the empty topic as `""` rather than the realm's display name.
    pub allow_empty_topic_name: bool,
    /// Leave `avatar_url` null where the client can compute a gravatar.
    pub client_gravatar: bool,
}

/// A Message resource as seen by `viewer` through `view`.
pub fn message(
    state: &State,
    realm: &Realm,
    viewer: &User,
    message: &Message,
    view: MessageView,
    options: MessageOptions,
) -> Value {
    let sender = state.users.get(&message.sender).expect("message sender exists");
    let mut out = Map::new();
    out.insert("id".into(), json!(message.id.0));
    out.insert("sender_id".into(), json!(sender.id.0));
    out.insert("sender_email".into(), json!(sender.email));
    out.insert("sender_full_name".into(), json!(sender.full_name));
    out.insert("sender_realm_str".into(), json!(realm.string_id));
    out.insert(
        "avatar_url".into(),
        avatar_url(&sender, options.client_gravatar && can_see_email(state, viewer, &sender)),
    );
    out.insert("client".into(), json!(message.client));
    if options.apply_markdown {
        out.insert("content".into(), json!(message.rendered_content));
        out.insert("content_type".into(), json!("text/html"));
    } else {
        out.insert("content".into(), json!(message.content));
        out.insert("content_type".into(), json!("text/x-markdown"));
    }
    match &message.destination {
        Destination::Channel { channel, topic } => {
            let name = state.channels.read(channel, |c| c.name.clone()).unwrap_or_default();
            out.insert("type".into(), json!("stream"));
            out.insert("display_recipient".into(), json!(name));
            out.insert("stream_id".into(), json!(channel.0));
            let shown = if topic.is_empty() && !options.allow_empty_topic_name {
                realm.settings.empty_topic_display_name.as_str()
            } else {
                topic.as_str()
            };
            out.insert("subject".into(), json!(shown));
        }
        Destination::Direct { participants } => {
            out.insert("type".into(), json!("private"));
            out.insert("display_recipient".into(), json!(display_recipient(state, participants)));
            out.insert("subject".into(), json!(""));
        }
    }
    out.insert("is_me_message".into(), json!(message.is_me_message));
    out.insert("reactions".into(), reactions(state, message));
    out.insert("recipient_id".into(), json!(message.recipient.0));
    out.insert("submessages".into(), json!([]));
    out.insert("timestamp".into(), json!(message.timestamp));
    out.insert("topic_links".into(), json!([]));
    out.insert("flags".into(), json!(view.flag_names()));
    if let Some(ts) = message.last_edit_timestamp {
        out.insert("last_edit_timestamp".into(), json!(ts));
    }
    if let Some(ts) = message.last_moved_timestamp {
        out.insert("last_moved_timestamp".into(), json!(ts));
    }
    if !message.edit_history.is_empty() && realm.settings.allow_edit_history {
        let is_channel = matches!(message.destination, Destination::Channel { .. });
        let show = |topic: &str| {
            if topic.is_empty() && is_channel && !options.allow_empty_topic_name {
                realm.settings.empty_topic_display_name.clone()
            } else {
                topic.to_owned()
            }
        };
        out.insert("edit_history".into(), json!(edit_history_json(message, &show)));
    }
    Value::Object(out)
}

/// `display_recipient` of a direct message: every participant.
fn display_recipient(state: &State, participants: &[UserId]) -> Vec<Value> {
    participants
        .iter()
        .filter_map(|id| state.users.get(id))
        .map(|u| {
            json!({"id": u.id.0, "email": u.email, "full_name": u.full_name, "is_mirror_dummy": false})
        })
        .collect()
}

/// Reactions with both `user_id` and the deprecated `user` object.
fn reactions(state: &State, message: &Message) -> Value {
    let list: Vec<Value> = message
        .reactions
        .iter()
        .map(|r| {
            let user = state.users.get(&r.user);
            json!({
                "emoji_name": r.emoji_name,
                "emoji_code": r.emoji_code,
                "reaction_type": r.reaction_type.as_str(),
                "user_id": r.user.0,
                "user": {
                    "id": r.user.0,
                    "email": user.as_ref().map(|u| u.email.clone()),
                    "full_name": user.as_ref().map(|u| u.full_name.clone()),
                    "is_mirror_dummy": false,
                },
            })
        })
        .collect();
    Value::Array(list)
}

/// UNIX seconds → `YYYY-MM-DDTHH:MM:SS+00:00` (proleptic Gregorian, UTC).
pub fn iso8601(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn formats_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20+00:00");
    }
}
