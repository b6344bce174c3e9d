//! Who hears about a change to an existing message (a reaction, a
//! deletion): the users who have it — a per-user row from delivery — plus,
//! for a channel whose history is open to subscribers, everyone subscribed
//! now (they can read it as history). As in Zulip.

use super::{Destination, Message, State, UserId};

impl State {
    /// Users holding a row for `message` (it was delivered to them).
    pub fn message_holders(&self, message: &Message) -> Vec<UserId> {
        self.users
            .collect_sorted(|id, u| {
                u.realm == message.realm && self.flags(*id, message.id).is_some()
            })
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// Everyone who should get an event about `message`, ascending.
    pub fn message_audience(&self, message: &Message) -> Vec<UserId> {
        let mut audience = self.message_holders(message);
        if let Destination::Channel { channel, .. } = &message.destination {
            let subscribers = self
                .channels
                .read(channel, |c| {
                    let open = !c.invite_only || c.history_public_to_subscribers;
                    if open {
                        c.subscribers.iter().copied().collect()
                    } else {
                        Vec::new()
                    }
                })
                .unwrap_or_default();
            audience.extend(subscribers);
            audience.sort();
            audience.dedup();
        }
        audience
    }
}
