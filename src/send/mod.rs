//! What sending a message sets off, decided under the writer lock and
//! logged in one record with the message: who a message mentions
//! (`mentions`, the Markdown renderer's name resolver), the topic
//! visibility policies it changes (`auto_topics`), the bots' direct
//! messages (`bot_messages`, also reminders and message reports), the
//! Notification Bot's notices of a move (`move_notices`), the
//! outgoing-webhook bots it triggers (`outgoing`) and the widget a
//! `/poll` or `/todo` message becomes (`widgets`); `links` are the topic
//! links these messages write.

pub mod attachments;
pub mod auto_topics;
pub mod bot_messages;
pub mod links;
pub mod mentions;
pub mod move_notices;
pub mod outgoing;
pub mod widgets;
