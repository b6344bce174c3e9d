//! Shared names: one `Arc<str>` per distinct string, so the many messages
//! of a topic, or sent through the same client, hold a pointer each rather
//! than a copy of the name (#7, the compact message store).
//!
//! Not snapshotted and not observable: `State::from_image` re-interns as
//! it rebuilds (`Interner::share_all`), and a name is the same string
//! whichever copy holds it. Names are not forgotten while the server runs
//! (a topic whose messages are all deleted keeps its one copy until the
//! next restart, which interns only the names still in use).

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashSet;

use super::messages::{Destination, Message};

/// A set of shared names.
#[derive(Default)]
pub struct Interner {
    names: Mutex<FxHashSet<Arc<str>>>,
}

impl Interner {
    /// The shared copy of `name` (which becomes the shared copy if new).
    pub fn intern(&self, name: &Arc<str>) -> Arc<str> {
        intern_in(&mut self.names.lock(), name)
    }

    /// The shared copy of `name` (a new one if none is shared yet).
    pub fn intern_str(&self, name: &str) -> Arc<str> {
        let mut names = self.names.lock();
        if let Some(shared) = names.get(name) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(name);
        names.insert(Arc::clone(&shared));
        shared
    }

    /// The shared copy of `name`, if one is shared already (nothing is
    /// added): a message built with it needs no copy when it is stored.
    pub fn shared(&self, name: &str) -> Option<Arc<str>> {
        self.names.lock().get(name).cloned()
    }

    /// Makes `message`'s client name and topic the shared copies (one
    /// lock for both; the message is copied only if someone else holds
    /// it and a name was not shared yet).
    pub fn share(&self, message: &mut Arc<Message>) {
        let mut names = self.names.lock();
        let client = intern_in(&mut names, &message.client);
        let topic = match &message.destination {
            Destination::Channel { topic, .. } => Some(intern_in(&mut names, topic)),
            Destination::Direct { .. } => None,
        };
        drop(names);
        replace_names(message, client, topic);
    }

    /// `messages` with their names shared, for a bulk load: a lock-free
    /// local set in front of the shared one, so the lock is taken once
    /// per distinct name rather than per message.
    pub fn share_all<'a>(
        &'a self,
        messages: impl IntoIterator<Item = Arc<Message>> + 'a,
    ) -> impl Iterator<Item = Arc<Message>> + 'a {
        let mut seen: FxHashSet<Arc<str>> = FxHashSet::default();
        let mut shared = move |name: &Arc<str>| match seen.get(&**name) {
            Some(known) => Arc::clone(known),
            None => {
                let known = self.intern(name);
                seen.insert(Arc::clone(&known));
                known
            }
        };
        messages.into_iter().map(move |mut message| {
            let client = shared(&message.client);
            let topic = match &message.destination {
                Destination::Channel { topic, .. } => Some(shared(topic)),
                Destination::Direct { .. } => None,
            };
            replace_names(&mut message, client, topic);
            message
        })
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.names.lock().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn intern_in(names: &mut FxHashSet<Arc<str>>, name: &Arc<str>) -> Arc<str> {
    match names.get(&**name) {
        Some(shared) => Arc::clone(shared),
        None => {
            names.insert(Arc::clone(name));
            Arc::clone(name)
        }
    }
}

/// Puts the shared `client` and `topic` into `message` where it holds
/// other copies.
fn replace_names(message: &mut Arc<Message>, client: Arc<str>, topic: Option<Arc<str>>) {
    let same_topic = match (&message.destination, &topic) {
        (Destination::Channel { topic: mine, .. }, Some(shared)) => Arc::ptr_eq(mine, shared),
        _ => true,
    };
    if Arc::ptr_eq(&message.client, &client) && same_topic {
        return;
    }
    let message = Arc::make_mut(message);
    message.client = client;
    if let (Destination::Channel { topic: mine, .. }, Some(shared)) =
        (&mut message.destination, topic)
    {
        *mine = shared;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::messages::MessageParts;
    use crate::state::{ChannelId, MessageId, RealmId, RecipientId, UserId};

    #[test]
    fn equal_names_share_one_copy() {
        let names = Interner::default();
        let a = names.intern(&Arc::from("website"));
        let b = names.intern(&Arc::from("website"));
        let c = names.intern(&Arc::from("ZulipPython"));
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &c));
        assert!(Arc::ptr_eq(&a, &names.intern_str("website")));
        assert_eq!(names.len(), 2);
    }

    fn message(id: u64, topic: &str) -> Arc<Message> {
        Arc::new(Message::from(MessageParts {
            id: MessageId(id),
            realm: RealmId(1),
            sender: UserId(1),
            recipient: RecipientId(1),
            destination: Destination::Channel { channel: ChannelId(1), topic: topic.into() },
            content: String::new(),
            rendered_content: String::new(),
            timestamp: 0,
            client: "website".into(),
            is_me_message: false,
        }))
    }

    #[test]
    fn messages_share_their_topic_and_client_one_by_one_or_in_bulk() {
        let names = Interner::default();
        let mut one = message(1, "lunch");
        names.share(&mut one);
        let all: Vec<_> = names
            .share_all([message(2, "lunch"), message(3, "LUNCH"), message(4, "lunch")])
            .collect();
        let topic = |m: &Message| match &m.destination {
            Destination::Channel { topic, .. } => Arc::clone(topic),
            Destination::Direct { .. } => unreachable!(),
        };
        assert!(Arc::ptr_eq(&topic(&one), &topic(&all[0])));
        assert!(Arc::ptr_eq(&topic(&one), &topic(&all[2])));
        assert!(!Arc::ptr_eq(&topic(&one), &topic(&all[1])), "topics are exact strings");
        assert!(all.iter().all(|m| Arc::ptr_eq(&m.client, &one.client)));
        assert_eq!(names.len(), 3);
    }
}
