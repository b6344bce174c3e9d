//! The web client's sign-ins: one record per session cookie, created by
//! `POST /login` and removed by `POST /logout` (`Mutation::WebSession`),
//! snapshotted after the features part (`persist::snapshot`), so a
//! restart keeps everyone signed in.
//!
//! A session stays valid only while the account's API key and password
//! are what they were at sign-in: a new key or a new password ends every
//! session of the account without a mutation of its own (`is_current`).

use serde::{Deserialize, Serialize};

use super::ids::{RealmId, UserId};
use super::shard::{Entries, Sharded};

/// One signed-in browser.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSession {
    /// The account signed in.
    pub user: UserId,
    /// Its realm: the cookie is refused on another realm's host.
    pub realm: RealmId,
    /// The token state-changing requests must repeat in `X-CSRF-Token`.
    pub csrf_token: String,
    /// The account's API key at sign-in.
    pub api_key: String,
    /// The account's password hash at sign-in (`None`: no password).
    pub password_hash: Option<String>,
    /// When it was created, Unix seconds.
    pub created: i64,
}

/// Every change of this area, as one `Mutation` variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionChange {
    /// A browser signs in: its cookie's token and the record.
    Open {
        /// The cookie's value.
        token: String,
        /// The record.
        session: WebSession,
    },
    /// A browser signs out (or its session is found stale).
    Close {
        /// The cookie's value.
        token: String,
    },
}

/// The live sessions by cookie value.
#[derive(Default)]
pub struct WebSessions {
    /// Sessions by token.
    pub by_token: Sharded<String, WebSession>,
}

/// `WebSessions` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebSessionsImage {
    /// Sessions by token.
    pub by_token: Entries<String, WebSession>,
}

impl WebSessionsImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        self.by_token.parts()
    }
}

impl WebSessions {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> WebSessionsImage {
        WebSessionsImage { by_token: self.by_token.freeze().into() }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: WebSessionsImage) -> Self {
        WebSessions { by_token: image.by_token.into_iter().collect() }
    }

    /// `apply` for `Mutation::WebSession`.
    pub fn apply(&self, change: &SessionChange) {
        match change {
            SessionChange::Open { token, session } => {
                self.by_token.insert(token.clone(), session.clone())
            }
            SessionChange::Close { token } => {
                self.by_token.remove(token);
            }
        }
    }

    /// The session of a cookie value.
    pub fn get(&self, token: &str) -> Option<WebSession> {
        self.by_token.get(&token.to_owned())
    }
}

impl WebSession {
    /// Whether the account still has the key and password it signed in
    /// with.
    pub fn is_current(&self, api_key: &str, password_hash: Option<&str>) -> bool {
        self.api_key == api_key && self.password_hash.as_deref() == password_hash
    }
}
