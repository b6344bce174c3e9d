//! The development seed: `--dev` on an empty data dir creates two realms
//! with their users, bots and channels (through the ordinary write path,
//! with the builders of `mutation::build`), and every start prints how to
//! log in as each account.

use std::sync::Arc;

use crate::api::App;
use crate::entropy;
use crate::error::ApiResult;
use crate::markdown;
use crate::mutation::build::{channel, realm, user, NewChannel, NewUser};
use crate::mutation::{Mutation, NewMessage};
use crate::state::{BotType, Destination, IdKind, Message, MessageId, MessageParts, Role, UserId};

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

/// Seeds the development realms if the data dir is empty; returns every
/// account's credentials (also on later starts, so they can be printed).
/// Their Notification and Welcome Bots come after, from
/// `server::ensure_system_bots` (so the seeded accounts keep their ids).
pub fn seed_dev(app: &App) -> ApiResult<Vec<Credential>> {
    if app.state.realm_by_subdomain("").is_none() {
        // The default realm allows public access, and its `general` is
        // web-public, so logged-out spectators have something to see;
        // `lear` stays closed.
        seed_realm(app, "", "Natter Dev", "natter.test", DEV_USERS, DEV_CHANNELS, true)?;
        seed_realm(app, "lear", "Lear & Co.", "lear.test", LEAR_USERS, LEAR_CHANNELS, false)?;
    }
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
