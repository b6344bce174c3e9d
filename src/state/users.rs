//! User and bot accounts.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ids::{RealmId, UserId};
use super::Realm;

/// Organization role; the numbers are Zulip's wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Role {
    /// 100.
    Owner,
    /// 200.
    Administrator,
    /// 300.
    Moderator,
    /// 400.
    Member,
    /// 600.
    Guest,
}

impl Role {
    /// Zulip's integer for the role.
    pub fn code(self) -> u16 {
        match self {
            Role::Owner => 100,
            Role::Administrator => 200,
            Role::Moderator => 300,
            Role::Member => 400,
            Role::Guest => 600,
        }
    }

    /// Owner or administrator.
    pub fn is_admin(self) -> bool {
        self <= Role::Administrator
    }
}

/// Zulip's bot types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BotType {
    /// 1: a generic bot using the API.
    Generic,
    /// 2: incoming webhook.
    IncomingWebhook,
    /// 3: outgoing webhook.
    OutgoingWebhook,
    /// 4: embedded bot.
    Embedded,
}

impl BotType {
    /// Zulip's integer for the bot type.
    pub fn code(self) -> u8 {
        match self {
            BotType::Generic => 1,
            BotType::IncomingWebhook => 2,
            BotType::OutgoingWebhook => 3,
            BotType::Embedded => 4,
        }
    }
}

/// One account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct User {
    /// Server-wide id.
    pub id: UserId,
    /// The realm the account belongs to; it never sees another realm.
    pub realm: RealmId,
    /// The API email: what clients send as the Basic-auth user name.
    pub email: String,
    /// The real address, shown only to those allowed to see it.
    pub delivery_email: String,
    /// Display name.
    pub full_name: String,
    /// Organization role.
    pub role: Role,
    /// False once deactivated: the API key stops working at once.
    pub is_active: bool,
    /// `Some` for bots.
    pub bot_type: Option<BotType>,
    /// The human who owns a bot.
    pub bot_owner: Option<UserId>,
    /// 32 random alphanumeric characters, generated before logging.
    pub api_key: String,
    /// UNIX seconds.
    pub date_joined: i64,
    /// IANA zone name, may be empty.
    pub timezone: String,
    /// Bumped on avatar change; clients append `?v=`.
    pub avatar_version: u32,
}

impl User {
    /// Whether the account is a bot.
    pub fn is_bot(&self) -> bool {
        self.bot_type.is_some()
    }
}

/// Lookups that hand out the shared account or realm (no copy): what
/// every request's authentication and realm resolution use.
impl super::State {
    /// `user_by_email`, shared.
    pub fn user_by_email_shared(&self, realm: RealmId, email: &str) -> Option<Arc<User>> {
        let id = match self.user_by_email.get(&(realm, lowercase(email))) {
            Some(id) => id,
            // Where real addresses are hidden, the placeholder names the user.
            None => self.user_by_placeholder(realm, email)?.id,
        };
        self.users.get_shared(&id).filter(|u| u.realm == realm)
    }

    /// `realm_by_subdomain`, shared.
    pub fn realm_by_subdomain_shared(&self, subdomain: &str) -> Option<Arc<Realm>> {
        let id = self.realm_by_subdomain.get(&lowercase(subdomain))?;
        self.realms.get_shared(&id)
    }
}

/// `text` lowercased as the email and subdomain indexes store it; ASCII
/// (nearly every address) without the Unicode tables.
fn lowercase(text: &str) -> String {
    if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    }
}
