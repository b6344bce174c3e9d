//! Unit-test fixtures: a `State` built by applying mutations directly (no
//! log, no HTTP), with helpers to add users, channels and messages.

use crate::api::App;
use crate::apply::apply;
use crate::events::Event;
use crate::mutation::build::{self, NewChannel, NewUser};
use crate::mutation::{Mutation, NewMessage};
use crate::seed::seed_dev;
use crate::state::{
    Channel, ChannelId, Destination, IdKind, Message, MessageId, MessageParts, Realm, RecipientId,
    Role, State, User, UserId,
};
use std::sync::Arc;

/// A state and the seq of the last applied mutation.
pub struct World {
    pub state: State,
    seq: u64,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
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
        let m = build::realm(&self.state, subdomain, subdomain, 0).unwrap();
        self.apply(m);
        self.state.realm_by_subdomain(subdomain).unwrap()
    }

    /// A new user.
    pub fn user(&mut self, realm: &str, email: &str, role: Role) -> User {
        let realm = self.realm(realm);
        let new = NewUser { email, full_name: email, role, bot: None };
        let m = build::user(&self.state, realm.id, &new, format!("key-{email}"), 0).unwrap();
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
        let m = build::channel(&self.state, &realm, &new, 0).unwrap();
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

/// An in-process server (no HTTP listener) on a seeded dev realm in
/// `data_dir`, with snapshots off and no fsync unless `extra_args` (more
/// command-line flags) set those flags themselves: the fixture
/// of the benches and of the in-process tests.
pub fn in_process_dev_app(data_dir: &std::path::Path, extra_args: &[&str]) -> Arc<App> {
    use clap::Parser;
    let data = data_dir.to_str().expect("a UTF-8 data dir path");
    let mut args = vec!["natter", "--dev"];
    for (flag, default) in [("--snapshot-every", "0"), ("--fsync", "never")] {
        if !extra_args.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend_from_slice(extra_args);
    args.extend(["--data-dir", data]);
    let config = crate::config::Cli::parse_from(args).resolve().expect("valid flags");
    let app = crate::server::open_app(config).expect("an openable data dir");
    seed_dev(&app).expect("the dev seed");
    crate::server::ensure_system_bots(&app).expect("the system bots");
    app
}

/// The state of the snapshot benches and `examples/restart_memory`:
/// one realm, `users` members subscribed to `general` and `other`, and
/// `messages` short channel messages ("hello number N", 1,000 topics in
/// `general`, every tenth in `other`), built by applying mutations
/// directly (no log, no HTTP); `log` sees every mutation as it is applied.
pub fn bench_state(
    messages: u64,
    users: u64,
    log: &mut dyn FnMut(&Mutation),
) -> crate::state::State {
    let state = crate::state::State::new();
    let mut step = |m: Mutation| {
        crate::apply::apply(&state, state.applied_seq() + 1, &m);
        log(&m);
    };
    step(build::realm(&state, "", "Bench", 0).unwrap());
    let realm = state.realm_by_subdomain("").unwrap();
    let mut ids = Vec::new();
    for i in 0..users {
        let email = format!("user{i}@b.test");
        let new = NewUser { email: &email, full_name: &email, role: Role::Member, bot: None };
        step(build::user(&state, realm.id, &new, String::new(), 0).unwrap());
        ids.push(state.user_by_email(realm.id, &email).unwrap().id);
    }
    for name in ["general", "other"] {
        let new = NewChannel {
            name,
            description: "",
            invite_only: false,
            creator: None,
            subscribers: &ids,
        };
        step(build::channel(&state, &realm, &new, 0).unwrap());
    }
    let general = state.channel_by_name(realm.id, "general").unwrap();
    let other = state.channel_by_name(realm.id, "other").unwrap();
    for i in 0..messages {
        let message = bench_message(&state, i, 1_000, &general, &other, ids[(i % users) as usize]);
        step(Mutation::SendMessage(NewMessage {
            message: Arc::new(message),
            read_by_sender: true,
            mentioned: vec![],
            channel_wildcard: false,
            topic_wildcard: vec![],
        }));
    }
    state
}

/// Short message number `i` of the benches ("hello number i", rendered
/// without the renderer): every tenth to `other` in topic "elsewhere",
/// the rest to `general` in one of `topics` topics; its id is the next
/// message id of `state`.
pub fn bench_message(
    state: &crate::state::State,
    i: u64,
    topics: u64,
    general: &crate::state::Channel,
    other: &crate::state::Channel,
    sender: crate::state::UserId,
) -> crate::state::Message {
    let (channel, topic) = if i % 10 == 9 {
        (other, "elsewhere".to_owned())
    } else {
        (general, format!("topic {}", i % topics))
    };
    let content = format!("hello number {i}");
    crate::state::Message::from(crate::state::MessageParts {
        id: crate::state::MessageId(state.ids.peek(crate::state::IdKind::Message)),
        realm: channel.realm,
        sender,
        recipient: channel.recipient,
        destination: Destination::Channel { channel: channel.id, topic: topic.into() },
        rendered_content: format!("<p>{content}</p>"),
        content,
        timestamp: 1_700_000_000 + i as i64,
        client: "bench".into(),
        is_me_message: false,
    })
}

/// Resident memory of this process, in bytes (Linux; 0 elsewhere): what
/// the benches and `examples/restart_memory` report per message.
pub fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kb.unwrap_or(0) * 1024
}
