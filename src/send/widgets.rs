//! The widget a `/poll` or `/todo` message becomes: its first submessage,
//! logged in the send's record with the message's sender as its sender
//! (as Zulip's server makes it).

use crate::mutation::{Mutation, NewMessage};
use crate::state::widgets::{widget_for, Submessage};
use crate::state::State;

/// The widget's first submessage for `new`, if its content makes one.
pub(crate) fn first_submessage(state: &State, new: &NewMessage) -> Option<Mutation> {
    let content = widget_for(new.message.content())?;
    let submessage = Submessage {
        id: state.widgets.peek(),
        message: new.message.id,
        sender: new.message.sender,
        msg_type: "widget".into(),
        content: content.to_string(),
    };
    Some(Mutation::AddSubmessage { submessage: Box::new(submessage), announce: false })
}
