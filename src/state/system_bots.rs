//! Zulip's system bots as natter keeps them: every realm has its own
//! Notification Bot and Welcome Bot accounts, which the server itself
//! uses to post (topic-move notices, resolved-topic notices, welcome
//! messages).
//!
//! Clients see them as Zulip shows its cross-realm bots: listed in
//! register's `cross_realm_bots` (with `is_system_bot: true`), never in
//! `realm_users` or `GET /users`, with Zulip's fixed addresses and a stable
//! id. They cannot log in (no API key), and the user and bot
//! administration endpoints do not find them, so nobody can deactivate or
//! edit them.
//!
//! A system bot is recognised from its account alone — a generic bot with
//! no owner and one of the reserved addresses (bots made through the API
//! always have an owner) — so the on-disk `User` needs no new field and
//! older data dirs load unchanged; start-up adds the accounts to realms
//! that lack them (`crate::server::ensure_system_bots`).

use super::{BotType, RealmId, State, User};

/// The system bots a realm has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemBot {
    /// Posts topic-move and resolved-topic notices and channel
    /// announcements.
    Notification,
    /// Greets new users.
    Welcome,
}

impl SystemBot {
    /// Every system bot, in the order realms get them.
    pub const ALL: [SystemBot; 2] = [SystemBot::Notification, SystemBot::Welcome];

    /// Zulip's address for the bot (its API and real email).
    pub fn email(self) -> &'static str {
        match self {
            SystemBot::Notification => "notification-bot@zulip.com",
            SystemBot::Welcome => "welcome-bot@zulip.com",
        }
    }

    /// Display name.
    pub fn full_name(self) -> &'static str {
        match self {
            SystemBot::Notification => "Notification Bot",
            SystemBot::Welcome => "Welcome Bot",
        }
    }

    /// Which system bot `user` is, if any.
    pub fn of(user: &User) -> Option<SystemBot> {
        if user.bot_type != Some(BotType::Generic) || user.bot_owner.is_some() {
            return None;
        }
        Self::ALL.into_iter().find(|b| user.delivery_email.eq_ignore_ascii_case(b.email()))
    }

    /// Whether `email` is one of the reserved system-bot addresses.
    pub fn is_reserved(email: &str) -> bool {
        Self::ALL.iter().any(|b| email.trim().eq_ignore_ascii_case(b.email()))
    }
}

impl User {
    /// Whether the account is one of the server's system bots.
    pub fn is_system_bot(&self) -> bool {
        SystemBot::of(self).is_some()
    }
}

impl State {
    /// `realm`'s account for the system bot `kind`, if it has one.
    pub fn system_bot(&self, realm: RealmId, kind: SystemBot) -> Option<User> {
        self.user_by_delivery_email(realm, kind.email()).filter(|u| SystemBot::of(u) == Some(kind))
    }

    /// `realm`'s system bots, in `SystemBot::ALL` order.
    pub fn system_bots(&self, realm: RealmId) -> Vec<User> {
        SystemBot::ALL.into_iter().filter_map(|kind| self.system_bot(realm, kind)).collect()
    }

    /// A user of `realm` by id as the administration endpoints address
    /// them: `None` for other realms' users and for system bots.
    pub fn account_in_realm(&self, realm: RealmId, id: super::UserId) -> Option<User> {
        self.user_in_realm(realm, id).filter(|u| !u.is_system_bot())
    }
}
