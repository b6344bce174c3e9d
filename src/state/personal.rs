//! The small per-user (and per-realm) resources of the settings area:
//! alert words, drafts, user status, muted users, topic visibility,
//! navigation views, saved snippets, push tokens, code playgrounds and
//! invitations — their stored shapes, and `PersonalChange`, the one
//! mutation type that changes them (`Mutation::Personal`).
//!
//! Everything here is plain data: ids, timestamps and random keys are
//! decided by the handlers before logging.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ids::{ChannelId, GroupId, RealmId, UserId};
use super::users::{Role, User};

/// Kinds of ids this area allocates itself (each from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LocalIdKind {
    /// Drafts.
    Draft,
    /// Saved snippets.
    Snippet,
    /// Code playgrounds.
    Playground,
    /// Invitations.
    Invite,
}

/// A saved draft. `to` is `[channel id]` for `stream`, user ids for
/// `private`, empty for `""` (no recipient yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// Id, unique per server.
    pub id: u64,
    /// `stream`, `private` or `""`.
    pub kind: String,
    /// Recipients as above.
    pub to: Vec<u64>,
    /// Topic (channel drafts).
    pub topic: String,
    /// Markdown.
    pub content: String,
    /// Last edit, UNIX seconds.
    pub timestamp: i64,
}

/// A user's status message and emoji.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserStatus {
    /// Up to 60 characters; `""` = none.
    pub status_text: String,
    /// Deprecated "away" flag.
    pub away: bool,
    /// `""` = no emoji.
    pub emoji_name: String,
    /// Code of the emoji.
    pub emoji_code: String,
    /// `unicode_emoji`, `realm_emoji` or `zulip_extra_emoji` (`""` with no emoji).
    pub reaction_type: String,
}

/// A user's visibility policy for one topic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserTopic {
    /// The topic as the user last named it.
    pub topic: String,
    /// 1 muted, 2 unmuted, 3 followed (0 = inherit is never stored).
    pub policy: u8,
    /// UNIX seconds.
    pub last_updated: i64,
}

/// A navigation view (left-sidebar entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NavigationView {
    /// The URL hash; the view's identity.
    pub fragment: String,
    /// Shown in the sidebar (else in "More views").
    pub is_pinned: bool,
    /// Name of a custom view; `None` for built-in ones.
    pub name: Option<String>,
}

/// A saved snippet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSnippet {
    /// Id, unique per server.
    pub id: u64,
    /// Title.
    pub title: String,
    /// Markdown.
    pub content: String,
    /// UNIX seconds.
    pub date_created: i64,
}

/// Which push service a token is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PushKind {
    /// Apple (APNs).
    Apns,
    /// Android (FCM / GCM).
    Android,
}

/// A registered push device token (stored; natter sends no pushes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushToken {
    /// The service.
    pub kind: PushKind,
    /// The token as given.
    pub token: String,
    /// The app id (APNs bundle id).
    pub appid: Option<String>,
}

/// A code playground of a realm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Playground {
    /// Id, unique per server.
    pub id: u64,
    /// Owning realm.
    pub realm: RealmId,
    /// Display name.
    pub name: String,
    /// Pygments language it applies to.
    pub pygments_language: String,
    /// RFC 6570 template with the one variable `code`.
    pub url_template: String,
}

/// Where an invitation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InviteStatus {
    /// Usable (until it expires).
    Pending,
    /// An account was created with it (for a multi-use link: never set).
    Used,
    /// Revoked by the inviter or an administrator.
    Revoked,
}

/// An invitation: to one address, or a multi-use link (`email` `None`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    /// Id, unique per server.
    pub id: u64,
    /// Realm invited to.
    pub realm: RealmId,
    /// Who invited.
    pub inviter: UserId,
    /// The invited address; `None` for a multi-use link.
    pub email: Option<String>,
    /// Role the new account gets.
    pub role: Role,
    /// Channels the new user joins.
    pub channels: Vec<ChannelId>,
    /// Groups the new user joins.
    pub groups: Vec<GroupId>,
    /// Also join the realm's default channels.
    pub include_realm_default_subscriptions: bool,
    /// Tell the inviter when the account is created.
    pub notify_referrer_on_join: bool,
    /// Custom welcome text; `None` = the organization default.
    pub welcome_message_custom_text: Option<String>,
    /// UNIX seconds.
    pub invited: i64,
    /// UNIX seconds; `None` = never.
    pub expires: Option<i64>,
    /// The random key in the link.
    pub key: String,
    /// State.
    pub status: InviteStatus,
}

/// Every change this area makes, as one `Mutation` variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PersonalChange {
    /// A user's alert words become exactly `words`.
    SetAlertWords {
        /// Whose.
        user: UserId,
        /// The complete new list.
        words: Vec<String>,
    },
    /// New drafts (ids allocated by the handler).
    AddDrafts {
        /// Whose.
        user: UserId,
        /// The drafts.
        drafts: Vec<Draft>,
    },
    /// A draft is replaced.
    EditDraft {
        /// Whose.
        user: UserId,
        /// The new version (same id).
        draft: Draft,
    },
    /// A draft is deleted.
    DeleteDraft {
        /// Whose.
        user: UserId,
        /// Which.
        id: u64,
    },
    /// A user's status is replaced.
    SetStatus {
        /// Whose.
        user: UserId,
        /// The new status (all fields resolved).
        status: UserStatus,
    },
    /// `user` mutes (`Some(time)`) or unmutes (`None`) `target`.
    SetMuted {
        /// Who mutes.
        user: UserId,
        /// Who is muted.
        target: UserId,
        /// UNIX seconds of the mute; `None` = unmute.
        since: Option<i64>,
    },
    /// A topic's visibility policy for a user (0 removes it).
    SetUserTopic {
        /// Whose.
        user: UserId,
        /// The channel.
        channel: ChannelId,
        /// The topic.
        topic: String,
        /// 0 inherit, 1 muted, 2 unmuted, 3 followed.
        policy: u8,
        /// UNIX seconds.
        when: i64,
    },
    /// A navigation view is added or replaced (by fragment).
    PutNavigationView {
        /// Whose.
        user: UserId,
        /// The view.
        view: NavigationView,
        /// Whether it replaces an existing one (update event) or is new.
        update: bool,
    },
    /// A navigation view is removed.
    RemoveNavigationView {
        /// Whose.
        user: UserId,
        /// Which.
        fragment: String,
    },
    /// A saved snippet is added or replaced (by id).
    PutSnippet {
        /// Whose.
        user: UserId,
        /// The snippet.
        snippet: SavedSnippet,
        /// Whether it replaces an existing one.
        update: bool,
    },
    /// A saved snippet is deleted.
    DeleteSnippet {
        /// Whose.
        user: UserId,
        /// Which.
        id: u64,
    },
    /// A push token is registered (replacing the same token).
    AddPushToken {
        /// Whose.
        user: UserId,
        /// The token.
        token: PushToken,
    },
    /// A push token is removed.
    RemovePushToken {
        /// Whose.
        user: UserId,
        /// The service.
        kind: PushKind,
        /// The token.
        token: String,
    },
    /// A code playground is added.
    AddPlayground(Playground),
    /// A code playground is removed.
    RemovePlayground {
        /// Its realm.
        realm: RealmId,
        /// Which.
        id: u64,
    },
    /// Invitations are created.
    CreateInvites(Vec<Invite>),
    /// An invitation is revoked.
    RevokeInvite {
        /// Which.
        id: u64,
    },
    /// An invitation is sent again: a new expiry (the key stays).
    ResendInvite {
        /// Which.
        id: u64,
        /// UNIX seconds of the resend.
        invited: i64,
        /// New expiry.
        expires: Option<i64>,
    },
    /// Someone registers through an invitation: the account is created and
    /// joins the invitation's channels and groups.
    AcceptInvite {
        /// The invitation.
        id: u64,
        /// The new account (id, API key, name decided by the handler).
        user: User,
        /// Argon2 hash of the chosen password.
        password_hash: String,
        /// Channels to join, with the subscription color each gets.
        channels: Vec<(ChannelId, String)>,
        /// Groups to join.
        groups: Vec<GroupId>,
    },
}

impl Draft {
    /// Zulip's Draft object.
    pub fn to_json(&self) -> Value {
        json!({ "id": self.id, "type": self.kind, "to": self.to, "topic": self.topic,
                "content": self.content, "timestamp": self.timestamp })
    }
}

impl UserStatus {
    /// The fields register's `user_status` shows: only those set.
    pub fn to_json(&self) -> Value {
        let mut out = json!({});
        if self.away {
            out["away"] = json!(true);
        }
        if !self.status_text.is_empty() {
            out["status_text"] = json!(self.status_text);
        }
        if !self.emoji_name.is_empty() {
            out["emoji_name"] = json!(self.emoji_name);
            out["emoji_code"] = json!(self.emoji_code);
            out["reaction_type"] = json!(self.reaction_type);
        }
        out
    }

    /// Whether nothing is set (stored as no entry).
    pub fn is_empty(&self) -> bool {
        !self.away && self.status_text.is_empty() && self.emoji_name.is_empty()
    }
}

impl NavigationView {
    /// Zulip's NavigationView object (`name` omitted for built-in views).
    pub fn to_json(&self) -> Value {
        let mut out = json!({ "fragment": self.fragment, "is_pinned": self.is_pinned });
        if let Some(name) = &self.name {
            out["name"] = json!(name);
        }
        out
    }
}

impl SavedSnippet {
    /// Zulip's SavedSnippet object.
    pub fn to_json(&self) -> Value {
        json!({ "id": self.id, "title": self.title, "content": self.content,
                "date_created": self.date_created })
    }
}

impl Playground {
    /// Zulip's RealmPlayground object.
    pub fn to_json(&self) -> Value {
        json!({ "id": self.id, "name": self.name, "pygments_language": self.pygments_language,
                "url_template": self.url_template })
    }
}

/// A user's muted users: who, since when (UNIX seconds).
pub type MutedUsers = BTreeMap<UserId, i64>;
/// A user's topic policies by (channel, lowercased topic).
pub type UserTopics = BTreeMap<(ChannelId, String), UserTopic>;

/// Whether `content` contains `word` as a whole word, case-insensitively
/// (the surrounding characters, if any, are not letters or digits).
pub fn contains_alert_word(content: &str, word: &str) -> bool {
    let hay = content.to_lowercase();
    let needle = word.to_lowercase();
    if needle.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(pos) = hay[from..].find(&needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before = hay[..start].chars().next_back();
        let after = hay[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        from = start + hay[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_words_match_whole_words_case_insensitively() {
        assert!(contains_alert_word("Alas, poor Yorick!", "yorick"));
        assert!(contains_alert_word("YORICK", "Yorick"));
        assert!(contains_alert_word("to be, or not to be", "or not"));
        assert!(!contains_alert_word("Yoricks are many", "yorick"));
        assert!(!contains_alert_word("poorYorick", "yorick"));
        assert!(contains_alert_word("ärger über Ärger", "ärger"));
        assert!(!contains_alert_word("anything", ""));
        assert!(contains_alert_word("x-ray", "ray"));
    }
}
