//! Unit-test fixtures: a `State` built by applying mutations directly (no
//! log, no HTTP), with helpers to add users, channels and messages.

use crate::apply::apply;
use crate::events::Event;
use crate::mutation::{Mutation, NewMessage};
use crate::seed::{self, NewChannel, NewUser};
use crate::state::{
    Channel, ChannelId, Destination, IdKind, Message, MessageId, MessageParts, Realm, RecipientId,
    Role, State, User, UserId,
};

/// A state and the seq of the last applied mutation.
pub struct World {
    pub state: State,
    seq: u64,
}

impl World {
    /// An empty state with one realm on the bare host.
    pub fn new() -> World {
        let mut w = World { state: State::new(), seq: 0 };
        w.realm("");
        w
    }

    /// Applies one mutation, returning its events.
    pub fn apply(&mut self, m: Mutation) -> Vec<Event> {
        self.seq += 1;
        apply(&self.state, self.seq, &m)
    }

    /// A realm by subdomain, created if needed.
    pub fn realm(&mut self, subdomain: &str) -> Realm {
        if let Some(r) = self.state.realm_by_subdomain(subdomain) {
            return r;
        }
        let m = seed::realm(&self.state, subdomain, subdomain, 0).unwrap();
        self.apply(m);
        self.state.realm_by_subdomain(subdomain).unwrap()
    }

    /// A new user.
    pub fn user(&mut self, realm: &str, email: &str, role: Role) -> User {
        let realm = self.realm(realm);
        let new = NewUser { email, full_name: email, role, bot: None };
        let m = seed::user(&self.state, realm.id, &new, format!("key-{email}"), 0).unwrap();
        self.apply(m);
        self.state.user_by_email(realm.id, email).unwrap()
    }

    /// A new channel in `realm` with these subscribers.
    pub fn channel(&mut self, realm: &str, name: &str, private: bool, subs: &[&User]) -> Channel {
        let realm = self.realm(realm);
        let ids: Vec<UserId> = subs.iter().map(|u| u.id).collect();
        let new = NewChannel {
            name,
            description: "",
            invite_only: private,
            creator: None,
            subscribers: &ids,
        };
        let m = seed::channel(&self.state, &realm, &new, 0).unwrap();
        self.apply(m);
        self.state.channel_by_name(realm.id, name).unwrap()
    }

    fn send(
        &mut self,
        sender: &User,
        destination: Destination,
        recipient: RecipientId,
        content: &str,
        mentioned: &[&User],
    ) -> MessageId {
        let id = MessageId(self.state.ids.peek(IdKind::Message));
        let message = Message::from(MessageParts {
            id,
            realm: sender.realm,
            sender: sender.id,
            recipient,
            destination,
            content: content.to_owned(),
            rendered_content: crate::markdown::render(content),
            timestamp: 1_000 + id.0 as i64,
            client: "test".into(),
            is_me_message: false,
        });
        let mentioned = mentioned.iter().map(|u| u.id).collect();
        self.apply(Mutation::SendMessage(NewMessage {
            message: std::sync::Arc::new(message),
            read_by_sender: true,
            mentioned,
            channel_wildcard: false,
            topic_wildcard: Vec::new(),
        }));
        id
    }

    /// A channel message (read by its sender).
    pub fn post(
        &mut self,
        sender: &User,
        channel: ChannelId,
        topic: &str,
        content: &str,
    ) -> MessageId {
        self.post_mentioning(sender, channel, topic, content, &[])
    }

    /// A channel message mentioning some users.
    pub fn post_mentioning(
        &mut self,
        sender: &User,
        channel: ChannelId,
        topic: &str,
        content: &str,
        mentioned: &[&User],
    ) -> MessageId {
        let recipient = self.state.channels.read(&channel, |c| c.recipient).unwrap();
        let d = Destination::Channel { channel, topic: topic.into() };
        self.send(sender, d, recipient, content, mentioned)
    }

    /// A direct message to `to` (the sender is added).
    pub fn dm(&mut self, sender: &User, to: &[&User], content: &str) -> MessageId {
        let mut participants: Vec<UserId> = to.iter().map(|u| u.id).collect();
        participants.push(sender.id);
        participants.sort();
        participants.dedup();
        let recipient = self
            .state
            .direct_recipients
            .get(&participants)
            .unwrap_or_else(|| RecipientId(self.state.ids.peek(IdKind::Recipient)));
        self.send(
            sender,
            Destination::Direct { participants: participants.into() },
            recipient,
            content,
            &[],
        )
    }
}
