//! `POST /submessage`: a reader adds to a message's widget (a poll vote,
//! a new option, a to-do task or tick). The first submessage of a message
//! must come from its sender (a `/poll` or `/todo` message gets it at
//! send time, `send::widgets`); contents are checked against the widget's
//! type as Zulip does (`state::widgets::validate`) and stored as posted.
//! Everyone holding the message gets a `submessage` event.

use serde_json::Value;

use super::reactions::visible_message;
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::state::widgets::{validate, Submessage};
use crate::state::MessageId;

/// `POST /submessage` with `message_id`, `msg_type` (`widget`) and
/// `content` (a JSON text).
pub fn add(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.params.int("message_id")?.ok_or_else(|| ApiError::missing("message_id"))?;
    let msg_type = call.params.required_string("msg_type")?;
    let content = call.params.required_string("content")?;
    if msg_type != "widget" {
        return Err(ApiError::bad_request("Invalid msg_type").with("var_name", "msg_type"));
    }
    let id = MessageId(u64::try_from(id).map_err(|_| ApiError::bad_request("Invalid message(s)"))?);
    let me = call.caller().clone();
    app.committer.commit(|state| {
        let message = visible_message(state, &me, id)?;
        let is_author = message.sender == me.id;
        if !is_author && !state.widgets.posted_by(id, message.sender) {
            return Err(ApiError::bad_request("You cannot attach a submessage to this message."));
        }
        let data: Value = serde_json::from_str(&content)
            .map_err(|_| ApiError::bad_request("Invalid json for submessage"))?;
        let widget_type = state.widgets.widget_type(id);
        validate(widget_type.as_deref(), &data, is_author).map_err(ApiError::bad_request)?;
        let submessage = Submessage {
            id: state.widgets.peek(),
            message: id,
            sender: me.id,
            msg_type: msg_type.clone(),
            content: content.clone(),
        };
        Ok((Mutation::AddSubmessage { submessage: Box::new(submessage), announce: true }, ()))
    })?;
    Ok(Reply::new())
}
