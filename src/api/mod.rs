//! The Zulip API, one file per area. Handlers are thin: decode parameters →
//! check permissions → read state, or build a `Mutation` and commit it →
//! shape the JSON reply. Nothing here knows about may_minihttp.

pub mod accounts;
pub mod auth;
pub mod avatars;
pub mod bot_storage;
pub mod channel_email;
pub mod channel_folders;
pub mod channels;
pub mod default_streams;
pub mod emoji;
pub mod events;
pub mod flags;
pub mod group_setting;
pub mod groups;
pub mod invites;
pub mod linkifiers;
pub mod message_edit;
pub mod messages;
pub mod params;
pub mod passwords;
pub mod personal;
pub mod presence;
pub mod profile_fields;
pub mod reactions;
pub mod read_state;
pub mod readers;
pub mod reading;
pub mod realm;
pub mod realm_domains;
pub mod realm_settings;
pub mod register;
pub mod reminders;
pub mod reports;
pub mod resources;
pub mod scheduled;
pub mod settings;
pub mod spectators;
pub mod streams;
pub mod submessages;
pub mod subscriptions;
pub mod typing;
pub mod uploads;
pub mod users;
pub mod web_login;
pub mod webhooks;

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::api::params::Params;
use crate::commit::Committer;
use crate::config::Config;
use crate::error::{ApiError, ApiResult};
use crate::events::Hub;
use crate::state::{Realm, State, User};

/// Everything a handler may use. Passed explicitly; there is no global.
pub struct App {
    /// Realm data (read side).
    pub state: Arc<State>,
    /// The pool heavy reads run on, off the HTTP workers.
    pub readers: readers::Readers,
    /// The write path.
    pub committer: Committer,
    /// Event delivery.
    pub hub: Arc<Hub>,
    /// Validated configuration.
    pub config: Config,
    /// The address the listener bound (known only after binding, which
    /// needs the `App`; set once at start-up).
    pub bound: OnceLock<String>,
    /// Where uploaded files' bytes are kept.
    pub files: crate::files::Store,
    /// Live temporary download URLs.
    pub temporary_urls: crate::files::TemporaryUrls,
    /// How long start-up took to recover the state (snapshot and log).
    pub recovery: std::time::Duration,
    /// Deliveries to outgoing-webhook bots, handed to the delivery pool.
    pub outbox: Arc<crate::send::outgoing::Outbox>,
    /// The data dir's lock, held for the life of the process.
    pub(crate) _data_dir_lock: Option<std::fs::File>,
}

impl App {
    /// The host clients use: `--host`, else the bound address.
    pub fn external_host(&self) -> &str {
        match &self.config.external_host {
            Some(host) => host,
            None => self.bound.get().map_or(self.config.listen.as_str(), String::as_str),
        }
    }
}

/// One API call, as handlers see it.
pub struct Call {
    /// The realm the request's host names (shared with the state: not a
    /// copy).
    pub realm: Arc<Realm>,
    /// The authenticated user (always `Some` on authenticated routes),
    /// shared with the state.
    pub caller: Option<Arc<User>>,
    /// Query and form parameters.
    pub params: Params,
    /// Values of the `{…}` segments of the route pattern, in order.
    pub path: Vec<String>,
    /// Client name (first token of the User-Agent), Zulip's `client`;
    /// shared with the connection that sent it and the messages it sends.
    pub client: Arc<str>,
    /// Reply fields the handler has already serialized (large lists such
    /// as register's `realm_users`), spliced into the reply's JSON as they
    /// are instead of going through `Value` maps.
    pub raw_fields: RawFields,
    /// The whole reply written as JSON text in key order, when the
    /// handler wrote it so (`view::json_text`): then the `Reply` it returns
    /// is empty and `raw_fields` unused.
    pub sorted_reply: Option<crate::view::json_text::SortedMembers>,
    /// The file parts of an upload route's multipart body, staged on disk
    /// (empty on other routes).
    pub files: Vec<crate::files::Upload>,
}

/// Pre-serialized reply fields: (name, JSON text). The text is natter's
/// own serializer output, trusted as valid JSON (not parsed again).
pub type RawFields = Vec<(String, String)>;

impl Call {
    /// The authenticated user.
    pub fn caller(&self) -> &User {
        self.caller.as_ref().expect("authenticated route without a caller")
    }

    /// A required topic parameter, trimmed; the realm's display name for
    /// the empty topic means the empty topic.
    pub fn required_topic(&mut self, name: &str) -> ApiResult<String> {
        let topic = self.params.required_string(name)?;
        Ok(if topic == self.realm.settings.empty_topic_display_name {
            String::new()
        } else {
            topic.trim().to_owned()
        })
    }

    /// A path segment parsed as an id.
    pub fn path_id(&self, index: usize, name: &str) -> ApiResult<u64> {
        self.path
            .get(index)
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| ApiError::invalid(name, "not an integer"))
    }
}

/// The success fields of a reply (`result` and `msg` are added for you).
pub type Reply = Map<String, Value>;

/// A handler: one endpoint.
pub type Handler = fn(&App, &mut Call) -> ApiResult<Reply>;

/// Builds a `Reply` from `"key" => value` pairs.
#[macro_export]
macro_rules! reply {
    ($($key:literal => $value:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut map = $crate::api::Reply::new();
        $(map.insert($key.to_owned(), serde_json::json!($value));)*
        map
    }};
}
