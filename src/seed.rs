//! Builders for the mutations that create realms, users and channels, and
//! the development seed (`--dev` on an empty data dir) made from them.
//!
//! Builders read the next ids from state, so they run inside
//! `Committer::commit` (under the writer lock).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::api::App;
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::{Mutation, NewMessage};
use crate::state::{
    BotType, Channel, ChannelId, ChannelPermissions, Destination, Group, GroupId, GroupSetting,
    IdKind, Members, Message, MessageId, MessageParts, Realm, RealmId, RealmSettings, RecipientId,
    Role, State, Subscription, SystemGroup, SystemGroups, TopicsPolicy, User, UserId,
};

/// Zulip's palette for new subscriptions, picked in turn per user.
const COLORS: [&str; 12] = [
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5",
];

/// A realm and its system groups.
pub fn realm(state: &State, string_id: &str, name: &str, now: i64) -> ApiResult<Mutation> {
    if state.realm_by_subdomain(string_id).is_some() {
        return Err(ApiError::bad_request(format!("Subdomain '{string_id}' is already in use")));
    }
    let id = RealmId(state.ids.peek(IdKind::Realm));
    let group_ids: Vec<GroupId> =
        state.ids.peek_many(IdKind::Group, 8).into_iter().map(GroupId).collect();
    let system_groups = SystemGroups(std::array::from_fn(|i| group_ids[i]));
    let groups = SystemGroup::ALL
        .iter()
        .map(|kind| Group {
            id: system_groups.id(*kind),
            realm: id,
            name: kind.name().to_owned(),
            description: String::new(),
            system: Some(*kind),
            direct_members: BTreeSet::new(),
            direct_subgroups: BTreeSet::new(),
            deactivated: false,
            date_created: None,
            creator: None,
        })
        .collect();
    let realm = Realm {
        id,
        string_id: string_id.to_owned(),
        name: name.to_owned(),
        description: String::new(),
        date_created: now,
        deactivated: false,
        settings: RealmSettings::default(),
        system_groups,
    };
    Ok(Mutation::CreateRealm { realm: Box::new(realm), groups })
}

/// A new account in `realm` with a fresh API key.
pub struct NewUser<'a> {
    /// Real email (also the API email while emails are visible to everyone).
    pub email: &'a str,
    /// Display name.
    pub full_name: &'a str,
    /// Role.
    pub role: Role,
    /// For bots: type and owner.
    pub bot: Option<(BotType, UserId)>,
}

/// The mutation creating `new` in `realm`; the API key is drawn here.
pub fn user(
    state: &State,
    realm: RealmId,
    new: &NewUser<'_>,
    api_key: String,
    now: i64,
) -> ApiResult<Mutation> {
    if state.user_by_delivery_email(realm, new.email).is_some() {
        return Err(ApiError::bad_request(format!("Email '{}' already in use", new.email)));
    }
    Ok(Mutation::CreateUser(User {
        id: UserId(state.ids.peek(IdKind::User)),
        realm,
        email: new.email.to_owned(),
        delivery_email: new.email.to_owned(),
        full_name: new.full_name.to_owned(),
        role: new.role,
        is_active: true,
        bot_type: new.bot.map(|(t, _)| t),
        bot_owner: new.bot.map(|(_, o)| o),
        api_key,
        date_joined: now,
        timezone: String::new(),
        avatar_version: 1,
    }))
}

/// The default permissions of a new channel (Zulip's defaults).
pub fn default_permissions(realm: &Realm, creator: Option<UserId>) -> ChannelPermissions {
    let group = |g| GroupSetting::Group(realm.system_groups.id(g));
    ChannelPermissions {
        can_send_message: group(SystemGroup::Everyone),
        can_add_subscribers: group(SystemGroup::Nobody),
        can_remove_subscribers: group(SystemGroup::Administrators),
        can_administer_channel: GroupSetting::Anonymous {
            direct_members: creator.into_iter().collect(),
            direct_subgroups: BTreeSet::new(),
        },
        can_delete_any_message: group(SystemGroup::Administrators),
        can_delete_own_message: group(SystemGroup::Everyone),
        can_move_messages_out_of_channel: group(SystemGroup::Nobody),
    }
}

/// A subscription for `user` with the next color of their palette.
pub fn subscription(state: &State, user: UserId, offset: usize) -> Subscription {
    let existing = state.subscriptions.read(&user, |s| s.len()).unwrap_or(0);
    Subscription::new(COLORS[(existing + offset) % COLORS.len()].to_owned())
}

/// A channel to create.
pub struct NewChannel<'a> {
    /// Name, unique in the realm.
    pub name: &'a str,
    /// Markdown description.
    pub description: &'a str,
    /// Private channel.
    pub invite_only: bool,
    /// Who creates it.
    pub creator: Option<UserId>,
    /// Who is subscribed from the start.
    pub subscribers: &'a [UserId],
}

/// The mutation creating `new` in `realm`.
pub fn channel(
    state: &State,
    realm: &Realm,
    new: &NewChannel<'_>,
    now: i64,
) -> ApiResult<Mutation> {
    if state.channel_by_name(realm.id, new.name).is_some() {
        return Err(ApiError::bad_request(format!("Channel '{}' already exists", new.name)));
    }
    let channel = Channel {
        id: ChannelId(state.ids.peek(IdKind::Channel)),
        realm: realm.id,
        name: new.name.to_owned(),
        description: new.description.to_owned(),
        rendered_description: markdown::render(new.description),
        invite_only: new.invite_only,
        is_web_public: false,
        history_public_to_subscribers: true,
        creator: new.creator,
        date_created: now,
        recipient: RecipientId(state.ids.peek(IdKind::Recipient)),
        message_retention_days: None,
        is_archived: false,
        topics_policy: TopicsPolicy::Inherit,
        folder_id: None,
        is_default: !new.invite_only,
        permissions: default_permissions(realm, new.creator),
        first_message_id: None,
        subscribers: Members::new(),
    };
    let subscribers = new.subscribers.iter().map(|u| (*u, subscription(state, *u, 0))).collect();
    Ok(Mutation::CreateChannel { channel: Box::new(channel), subscribers })
}

/// One account printed at dev start-up.
pub struct Credential {
    /// Realm subdomain (`""` for the bare host).
    pub realm: String,
    /// Role label.
    pub role: &'static str,
    /// API email.
    pub email: String,
    /// API key.
    pub api_key: String,
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
    app
}

/// Seeds the development realms if the data dir is empty; returns every
/// account's credentials (also on later starts, so they can be printed).
pub fn seed_dev(app: &App) -> ApiResult<Vec<Credential>> {
    if app.state.realm_by_subdomain("").is_none() {
        // The default realm allows public access, and its `general` is
        // web-public, so logged-out spectators have something to see;
        // `lear` stays closed.
        seed_realm(app, "", "Natter Dev", "natter.test", DEV_USERS, DEV_CHANNELS, true)?;
        seed_realm(app, "lear", "Lear & Co.", "lear.test", LEAR_USERS, LEAR_CHANNELS, false)?;
    }
    // Their Notification and Welcome Bots (after the seeded accounts, so
    // those keep their ids).
    crate::system_bots::ensure(app)?;
    let mut out = Vec::new();
    for realm in [app.state.realm_by_subdomain(""), app.state.realm_by_subdomain("lear")]
        .into_iter()
        .flatten()
    {
        for user in app.state.realm_users(realm.id) {
            let role = match (user.bot_type, user.role) {
                (Some(_), _) => "bot",
                (None, Role::Owner) => "owner",
                (None, Role::Administrator) => "administrator",
                (None, Role::Moderator) => "moderator",
                (None, Role::Member) => "member",
                (None, Role::Guest) => "guest",
            };
            out.push(Credential {
                realm: realm.string_id.clone(),
                role,
                email: user.email,
                api_key: user.api_key,
            });
        }
    }
    Ok(out)
}

type SeedUser = (&'static str, &'static str, Role, bool);
/// (local part, full name, role, is a bot owned by the first member).
const DEV_USERS: &[SeedUser] = &[
    ("desdemona", "Desdemona", Role::Owner, false),
    ("iago", "Iago", Role::Administrator, false),
    ("shiva", "Shiva", Role::Moderator, false),
    ("hamlet", "King Hamlet", Role::Member, false),
    ("othello", "Othello, the Moor of Venice", Role::Member, false),
    ("cordelia", "Cordelia, Lear's daughter", Role::Member, false),
    ("polonius", "Polonius", Role::Guest, false),
    ("helper-bot", "Helper Bot", Role::Member, true),
];
const LEAR_USERS: &[SeedUser] =
    &[("king", "King Lear", Role::Owner, false), ("goneril", "Goneril", Role::Member, false)];

type SeedChannel = (&'static str, &'static str, bool, &'static [&'static str]);
/// (name, description, private, subscribers by local part; `*` = all humans).
const DEV_CHANNELS: &[SeedChannel] = &[
    ("general", "Everything, for everyone.", false, &["*"]),
    ("Denmark", "A public channel.", false, &["iago", "hamlet", "othello"]),
    ("core team", "A **private** channel.", true, &["desdemona", "iago", "hamlet"]),
];
const LEAR_CHANNELS: &[SeedChannel] = &[("general", "The court.", false, &["*"])];

fn seed_realm(
    app: &App,
    subdomain: &str,
    name: &str,
    domain: &str,
    users: &[SeedUser],
    channels: &[SeedChannel],
    public: bool,
) -> ApiResult<()> {
    let c = &app.committer;
    let now = entropy::now();
    c.commit(|s| {
        let mut m = realm(s, subdomain, name, now)?;
        let Mutation::CreateRealm { realm, .. } = &mut m else { unreachable!() };
        realm.settings.enable_spectator_access = public;
        Ok((m, ()))
    })?;
    let realm = app.state.realm_by_subdomain(subdomain).expect("realm just created");
    let mut ids: Vec<(&str, UserId, bool)> = Vec::new();
    for (local, full_name, role, is_bot) in users {
        let email = format!("{local}@{domain}");
        let owner = ids.iter().find(|(_, _, bot)| !bot).map(|(_, id, _)| *id);
        let bot = if *is_bot { owner.map(|o| (BotType::Generic, o)) } else { None };
        let new = NewUser { email: &email, full_name, role: *role, bot };
        let key = entropy::api_key();
        let id = c.commit(|s| {
            let m = user(s, realm.id, &new, key, now)?;
            let Mutation::CreateUser(u) = &m else { unreachable!() };
            let id = u.id;
            Ok((m, id))
        })?;
        ids.push((local, id, *is_bot));
    }
    let owner = ids[0].1;
    let mut first_channel = None;
    for (channel_name, description, private, members) in channels {
        let subscribers: Vec<UserId> = ids
            .iter()
            .filter(|(local, _, bot)| members.contains(local) || (members.contains(&"*") && !bot))
            .map(|(_, id, _)| *id)
            .collect();
        let id = c.commit(|s| {
            let new = NewChannel {
                name: channel_name,
                description,
                invite_only: *private,
                creator: Some(owner),
                subscribers: &subscribers,
            };
            let mut m = channel(s, &realm, &new, now)?;
            let Mutation::CreateChannel { channel, .. } = &mut m else { unreachable!() };
            // The first channel (`general`) is web-public in a public realm.
            channel.is_web_public = public && first_channel.is_none();
            let id = channel.id;
            Ok((m, id))
        })?;
        first_channel.get_or_insert(id);
    }
    let channel = first_channel.expect("seed has a channel");
    let content = format!(
        "Welcome to **{name}**! This realm was seeded by `natter --dev`; every account's \
         email and API key were printed when the server started."
    );
    let rendered = markdown::render(&content);
    c.commit(|s| {
        let recipient = s.channels.read(&channel, |ch| ch.recipient).expect("seeded channel");
        let message = Message::from(MessageParts {
            id: MessageId(s.ids.peek(IdKind::Message)),
            realm: realm.id,
            sender: owner,
            recipient,
            destination: Destination::Channel { channel, topic: "welcome".into() },
            content,
            rendered_content: rendered,
            timestamp: now,
            client: "natter".into(),
            is_me_message: false,
        });
        Ok((
            Mutation::SendMessage(NewMessage {
                message: Arc::new(message),
                read_by_sender: true,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            }),
            (),
        ))
    })
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
    step(realm(&state, "", "Bench", 0).unwrap());
    let realm = state.realm_by_subdomain("").unwrap();
    let mut ids = Vec::new();
    for i in 0..users {
        let email = format!("user{i}@b.test");
        let new = NewUser { email: &email, full_name: &email, role: Role::Member, bot: None };
        step(user(&state, realm.id, &new, String::new(), 0).unwrap());
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
        step(channel(&state, &realm, &new, 0).unwrap());
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
