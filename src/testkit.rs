//! Test and bench fixtures. [`World`] is the one unit-test fixture: a
//! `State` built by applying mutations directly (no log, no HTTP), with
//! small helpers to add realms, users, bots, channels, subscriptions,
//! groups and messages. Each helper goes through `apply` with the next
//! seq, so a world is what a log of those mutations would replay to, and
//! everything in it is deterministic (ids in creation order, fixed keys and
//! timestamps). The benches' fixtures follow.

use crate::api::App;
use crate::apply::apply;
use crate::events::Event;
use crate::mutation::build::{self, NewChannel, NewUser};
use crate::mutation::{Mutation, NewMessage, UserChange};
use crate::seed::seed_dev;
use crate::state::{
    BotType, Channel, ChannelId, Destination, Group, GroupId, IdKind, Message, MessageId,
    MessageParts, Realm, RecipientId, Role, State, User, UserId,
};
use std::sync::Arc;

/// A state and every mutation applied to it, in order.
pub struct World {
    /// The state the mutations built; tests read it and may change it by
    /// hand where a test needs what no mutation makes.
    pub state: State,
    log: Vec<Mutation>,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// An empty state with one realm on the bare host.
    pub fn new() -> World {
        let mut w = World { state: State::new(), log: Vec::new() };
        w.realm("");
        w
    }

    /// Applies one mutation with the next seq, returning its events.
    pub fn apply(&mut self, m: Mutation) -> Vec<Event> {
        let events = apply(&self.state, self.state.applied_seq() + 1, &m);
        self.log.push(m);
        events
    }

    /// Every mutation applied so far; the one at index `i` has seq `i + 1`.
    pub fn log(&self) -> &[Mutation] {
        &self.log
    }

    /// A realm by subdomain (also its name), created if needed.
    pub fn realm(&mut self, subdomain: &str) -> Realm {
        if let Some(r) = self.state.realm_by_subdomain(subdomain) {
            return r;
        }
        let m = build::realm(&self.state, subdomain, subdomain, 0).unwrap();
        self.apply(m);
        self.state.realm_by_subdomain(subdomain).unwrap()
    }

    /// A new user named by their email, with the API key `key-{email}`,
    /// joined at 0.
    pub fn user(&mut self, realm: &str, email: &str, role: Role) -> User {
        let new = NewUser { email, full_name: email, role, bot: None };
        self.add_user(realm, &new, 0)
    }

    /// A new account as `new` describes it (a display name of its own, a
    /// bot), joined at `date_joined`, with the API key `key-{email}`.
    pub fn add_user(&mut self, realm: &str, new: &NewUser<'_>, date_joined: i64) -> User {
        let realm = self.realm(realm);
        let key = format!("key-{}", new.email);
        let m = build::user(&self.state, realm.id, new, key, date_joined).unwrap();
        self.apply(m);
        self.state.user_by_email(realm.id, new.email).unwrap()
    }

    /// A new generic bot owned by `owner`, in the owner's realm.
    pub fn bot(&mut self, email: &str, owner: &User) -> User {
        let realm = self.state.realms.get(&owner.realm).unwrap().string_id;
        let new = NewUser {
            email,
            full_name: email,
            role: Role::Member,
            bot: Some((BotType::Generic, owner.id)),
        };
        self.add_user(&realm, &new, 0)
    }

    /// Deactivates `user` (as an administrator would), returning the
    /// account as it is now.
    pub fn deactivate(&mut self, user: &User) -> User {
        self.apply(Mutation::UpdateUsers { changes: vec![(user.id, UserChange::Active(false))] });
        self.state.users.get(&user.id).unwrap()
    }

    /// The system bots of `realm` (Notification Bot and the others).
    pub fn system_bots(&mut self, realm: &str) {
        let realm = self.realm(realm);
        let first = self.state.ids.peek(IdKind::User);
        self.apply(Mutation::CreateSystemBots(build::system_bots(&self.state, realm.id, first, 0)));
    }

    /// A new channel in `realm` with these subscribers and no creator.
    pub fn channel(&mut self, realm: &str, name: &str, private: bool, subs: &[&User]) -> Channel {
        let ids: Vec<UserId> = subs.iter().map(|u| u.id).collect();
        let new = NewChannel {
            name,
            description: "",
            invite_only: private,
            creator: None,
            subscribers: &ids,
        };
        self.add_channel(realm, &new)
    }

    /// A new channel as `new` describes it (a creator, a description),
    /// created at 0.
    pub fn add_channel(&mut self, realm: &str, new: &NewChannel<'_>) -> Channel {
        let realm = self.realm(realm);
        let m = build::channel(&self.state, &realm, new, 0).unwrap();
        self.apply(m);
        self.state.channel_by_name(realm.id, new.name).unwrap()
    }

    /// Subscribes `users` to `channel`, each with the next color of their
    /// palette.
    pub fn subscribe(&mut self, channel: ChannelId, users: &[&User]) {
        let subscribers =
            users.iter().map(|u| (u.id, build::subscription(&self.state, u.id, 0))).collect();
        self.apply(Mutation::Subscribe { channel, subscribers });
    }

    /// A new user group of `realm` with these direct members, created at 0
    /// by nobody.
    pub fn group(&mut self, realm: &str, name: &str, members: &[&User]) -> Group {
        let realm = self.realm(realm);
        let group = Group {
            id: GroupId(self.state.ids.peek(IdKind::Group)),
            realm: realm.id,
            name: name.to_owned(),
            description: String::new(),
            system: None,
            direct_members: members.iter().map(|u| u.id).collect(),
            direct_subgroups: Default::default(),
            deactivated: false,
            date_created: Some(0),
            creator: None,
        };
        self.apply(Mutation::CreateGroup(group.clone()));
        group
    }

    /// The stored message `id`.
    pub fn message(&self, id: MessageId) -> Arc<Message> {
        self.state.messages.get(&id).unwrap()
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

    /// A channel message (read by its sender), sent at 1,000 + its id from
    /// the client "test".
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
    in_process_dev_app_on(data_dir, extra_args, Arc::new(wal::RealFs))
}

/// `in_process_dev_app`, with the log and snapshots going through `fs`.
pub fn in_process_dev_app_on(
    data_dir: &std::path::Path,
    extra_args: &[&str],
    fs: Arc<dyn wal::Fs>,
) -> Arc<App> {
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
    let app = crate::server::open_app_on(config, fs).expect("an openable data dir");
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A world using every helper once.
    fn everything() -> (World, User, User, Channel) {
        let mut w = World::new();
        w.system_bots("");
        let owner = w.user("", "o@t.test", Role::Owner);
        let named = NewUser { email: "n@t.test", full_name: "Ñ", role: Role::Member, bot: None };
        let member = w.add_user("", &named, 86_400);
        let bot = w.bot("b@t.test", &member);
        w.deactivate(&bot);
        let secret = w.channel("", "secret", true, &[&owner]);
        w.subscribe(secret.id, &[&member]);
        w.group("", "crew", &[&owner, &member]);
        w.post_mentioning(&owner, secret.id, "t", "hi", &[&member]);
        w.dm(&member, &[&owner], "psst");
        w.user("other", "o@t.test", Role::Member);
        (w, owner, member, secret)
    }

    #[test]
    fn the_helpers_build_what_they_say() {
        let (w, owner, member, secret) = everything();
        let realm = w.state.realm_by_subdomain("").unwrap();
        assert_eq!((member.full_name.as_str(), member.date_joined), ("Ñ", 86_400));
        assert_eq!(owner.api_key, "key-o@t.test");
        let bot = w.state.user_by_email(realm.id, "b@t.test").unwrap();
        assert_eq!((bot.bot_owner, bot.is_active), (Some(member.id), false));
        let subscribers = w.state.channels.read(&secret.id, |c| c.subscribers.clone()).unwrap();
        assert!(subscribers.contains(&owner.id) && subscribers.contains(&member.id));
        let group = w.state.groups.collect_sorted(|_, g| g.name == "crew");
        assert_eq!(group[0].1.direct_members, [owner.id, member.id].into());
        let post = MessageId(w.state.ids.peek(IdKind::Message) - 2);
        assert_eq!(w.message(post).timestamp, 1_000 + post.0 as i64);
        assert!(w.state.flags(member.id, post).unwrap().contains(crate::state::Flags::MENTIONED));
        // Another realm's account may reuse an address.
        let other = w.state.realm_by_subdomain("other").unwrap();
        assert_ne!(w.state.user_by_email(other.id, "o@t.test").unwrap().id, owner.id);
    }

    /// The log is every mutation in seq order, and replaying it gives the
    /// same state; two worlds built alike are byte-identical.
    #[test]
    fn a_world_is_its_log_and_deterministic() {
        let (w, ..) = everything();
        assert_eq!(w.log().len() as u64, w.state.applied_seq());
        let replayed = State::new();
        for (m, seq) in w.log().iter().zip(1..) {
            apply(&replayed, seq, m);
        }
        let image = crate::persist::snapshot::encode(&w.state.image());
        assert!(crate::persist::snapshot::encode(&replayed.image()) == image);
        assert!(crate::persist::snapshot::encode(&everything().0.state.image()) == image);
    }
}
