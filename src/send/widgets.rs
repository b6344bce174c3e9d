//! The widget a `/poll` or `/todo` message becomes, or the one its sender
//! named (`widget_content`): its first submessage, logged in the send's
//! record with the message's sender as its sender (as Zulip's server
//! makes it).

use serde_json::Value;

use crate::mutation::{Mutation, NewMessage};
use crate::state::widgets::{widget_for, Submessage};
use crate::state::State;

/// The widget's first submessage for `new`: `widget` (a checked
/// `widget_content` its sender named) if given, else the one its content
/// makes, if any.
pub(crate) fn first_submessage_with(
    state: &State,
    new: &NewMessage,
    widget: Option<&Value>,
) -> Option<Mutation> {
    let content = match widget {
        Some(widget) => widget.clone(),
        None => widget_for(new.message.content())?,
    };
    let submessage = Submessage {
        id: state.widgets.peek(),
        message: new.message.id,
        sender: new.message.sender,
        msg_type: "widget".into(),
        content: content.to_string(),
    };
    Some(Mutation::AddSubmessage { submessage: Box::new(submessage), announce: false })
}
