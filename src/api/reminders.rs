//! Message reminders: `GET /reminders`, `POST /reminders`, `DELETE
//! /reminders/{reminder_id}`, the `reminders` register section, and
//! `deliver`, which the scheduler calls when one falls due.
//!
//! A reminder is about a message its owner may read; its text is written
//! when it is created (`send::bot_messages::reminder_content`) and the
//! Notification Bot sends it to the owner as a direct message at the
//! chosen time. Delivery is one record: the message and the reminder's
//! removal, so a crash neither loses nor repeats one. Another user's
//! reminder is answered like an unknown one.

use serde_json::Value;

use super::reactions::visible_message;
use super::scheduled::parse_time;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::send::bot_messages::{self, MAX_REMINDER_NOTE_LENGTH};
use crate::state::features::{FeatureChange, Reminder};
use crate::state::system_bots::SystemBot;
use crate::state::{MessageId, State, User};

fn not_found() -> ApiError {
    ApiError::not_found("Reminder does not exist")
}

/// `GET /reminders`: the caller's reminders, by delivery time.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "reminders" => listing(&app.state, call.caller()) })
}

fn listing(state: &State, user: &User) -> Vec<Value> {
    state.features.reminders_of(user.id).iter().map(Reminder::to_api).collect()
}

/// `POST /reminders`: remind the caller of `message_id` at
/// `scheduled_delivery_timestamp`, with an optional `note`.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let now = entropy::now();
    let id = call.params.int("message_id")?.ok_or_else(|| ApiError::missing("message_id"))?;
    let deliver_at =
        parse_time(call, now)?.ok_or_else(|| ApiError::missing("scheduled_delivery_timestamp"))?;
    // Zulip's normalization: trailing whitespace and leading blank lines go.
    let note = call.params.string("note").map(|n| n.trim_end().trim_start_matches('\n').to_owned());
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_REMINDER_NOTE_LENGTH) {
        return Err(ApiError::bad_request(format!(
            "Maximum reminder note length: {MAX_REMINDER_NOTE_LENGTH} characters"
        )));
    }
    let me = call.caller().clone();
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let message =
        visible_message(&app.state, &me, MessageId(u64::try_from(id).map_err(|_| invalid())?))?;
    let realm_url = super::realm::realm_url(app, &call.realm);
    let note = note.filter(|n| !n.is_empty());
    let content = bot_messages::reminder_content(
        &app.state,
        &realm_url,
        &message,
        note.as_deref(),
        super::messages::MAX_MESSAGE_LENGTH,
    );
    let renderer =
        app.state.system_bot(me.realm, SystemBot::Notification).unwrap_or_else(|| me.clone());
    let rendered_content =
        bot_messages::render_as_notification_bot(&app.state, &renderer, &content);
    let reminder_id = app.committer.commit(|state| {
        // The message may have gone, or become unreadable, meanwhile.
        visible_message(state, &me, message.id)?;
        let id = state.features.peek_reminder();
        let reminder = Reminder {
            id,
            realm: me.realm,
            owner: me.id,
            message: message.id,
            content,
            rendered_content,
            deliver_at,
        };
        Ok((Mutation::features(FeatureChange::AddReminder(reminder)), id))
    })?;
    Ok(reply! { "reminder_id" => reminder_id })
}

/// `DELETE /reminders/{reminder_id}`: cancel one of the caller's
/// reminders.
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "reminder_id")?;
    let me = call.caller().id;
    let owned = |state: &State| {
        state.features.reminders.get(&id).filter(|r| r.owner == me).ok_or_else(not_found)
    };
    owned(&app.state)?;
    app.committer.commit(|state| {
        owned(state)?;
        Ok((Mutation::features(FeatureChange::RemoveReminder { id }), ()))
    })?;
    Ok(Reply::new())
}

/// Register section `reminders` (fetch type `reminders`).
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("reminders") {
        out.insert("reminders".into(), Value::from(listing(&app.state, user)));
    }
}

/// Delivers reminder `id` if it is still due at `now`: one commit that
/// sends the Notification Bot's message (when the realm has the bot and
/// the owner is active) and removes the reminder. Returns whether it did.
pub fn deliver(app: &App, id: u64, now: i64) -> bool {
    let outcome = app.committer.commit(|state| {
        let reminder = state.features.reminders.get(&id).filter(|r| r.deliver_at <= now);
        // Deleted or delivered since the scheduler looked.
        let reminder = reminder.ok_or_else(not_found)?;
        let removal = Mutation::features(FeatureChange::RemoveReminder { id });
        let owner = state.users.get(&reminder.owner);
        let message =
            owner.and_then(|owner| bot_messages::reminder(state, &owner, &reminder.content, now));
        Ok((
            match message {
                Some(message) => Mutation::Batch(vec![message, removal]),
                None => removal,
            },
            (),
        ))
    });
    outcome.is_ok()
}
