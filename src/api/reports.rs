//! `POST /messages/{message_id}/report`: a user reports a message they
//! may read to the organization's moderators, and register's
//! `server_report_message_types`.
//!
//! The report is the Notification Bot's message to the realm's
//! moderation request channel (`moderation_request_channel_id`,
//! `send::bot_messages::report`); a realm without one refuses reports, as
//! Zulip does. One's own messages may be reported too (Zulip names the
//! recipient then).

use serde_json::{json, Value};

use super::reactions::visible_message;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::send::bot_messages::{self, MAX_REPORT_EXPLANATION_LENGTH, REPORT_TYPES};
use crate::state::{MessageId, User};

/// `POST /messages/{message_id}/report` with `report_type` (one of
/// `REPORT_TYPES`) and `description` (required for "other").
pub fn report(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = MessageId(call.path_id(0, "message_id")?);
    let report_type = call.params.required_string("report_type")?;
    if !REPORT_TYPES.iter().any(|(key, _)| *key == report_type) {
        return Err(ApiError::bad_request("Invalid report_type").with("var_name", "report_type"));
    }
    let description = call.params.string("description").unwrap_or_default();
    if description.chars().count() > MAX_REPORT_EXPLANATION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "description is too long (limit: {MAX_REPORT_EXPLANATION_LENGTH} characters)"
        ))
        .with("var_name", "description"));
    }
    if report_type == "other" && description.is_empty() {
        return Err(ApiError::bad_request("An explanation is required."));
    }
    let disabled =
        || ApiError::bad_request("Message reporting is not enabled in this organization.");
    if app.state.features.of(call.realm.id).moderation_request_channel.is_none() {
        return Err(disabled());
    }
    let me = call.caller().clone();
    visible_message(&app.state, &me, id)?;
    let realm_url = super::realm::realm_url(app, &call.realm);
    let now = entropy::now();
    app.committer.commit(|state| {
        let message = visible_message(state, &me, id)?;
        let report = bot_messages::report(
            state,
            &realm_url,
            &me,
            &message,
            &report_type,
            &description,
            super::messages::MAX_MESSAGE_LENGTH,
            now,
        );
        Ok((report.ok_or_else(disabled)?, ()))
    })?;
    Ok(Reply::new())
}

/// Register's `server_report_message_types` (with the `realm` section).
pub fn register_state(_: &App, _: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("realm") {
        let types: Vec<Value> =
            REPORT_TYPES.iter().map(|(key, name)| json!({"key": key, "name": name})).collect();
        out.insert("server_report_message_types".into(), Value::from(types));
    }
}
