//! Outgoing-webhook bots' services, bots' storage, and the deliveries of
//! messages to outgoing-webhook bots that are not finished yet — their
//! stored shapes, and `BotChange`, the one mutation type that changes them
//! (`Mutation::Bot`).
//!
//! Kept out of `User` so that the account's own encoding (in the log's
//! `CreateUser` records and in snapshots) stays as it was; the snapshot
//! carries this area after the image's features part (`persist::snapshot`).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::ids::{MessageId, UserId};
use super::shard::{Entries, Sharded};

/// How an outgoing-webhook bot's server wants its requests (Zulip's
/// `interface_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Interface {
    /// Zulip's own JSON body (1).
    Generic,
    /// A Slack-compatible form body (2).
    Slack,
}

impl Interface {
    /// Zulip's integer.
    pub fn code(self) -> u8 {
        match self {
            Interface::Generic => 1,
            Interface::Slack => 2,
        }
    }

    /// The interface Zulip numbers `code`.
    pub fn from_code(code: i64) -> Option<Interface> {
        match code {
            1 => Some(Interface::Generic),
            2 => Some(Interface::Slack),
            _ => None,
        }
    }
}

/// An outgoing-webhook bot's service: where its messages are posted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// The service's name (`service_name`; may be empty).
    pub name: String,
    /// The URL messages are posted to (`payload_url`).
    pub base_url: String,
    /// The request format.
    pub interface: Interface,
    /// The secret sent with every request, so the bot's server can tell
    /// natter's requests from others.
    pub token: String,
    /// The bot's `config_data` (string keys and values).
    pub config: BTreeMap<String, String>,
}

/// Why a message was delivered to an outgoing-webhook bot (the request's
/// `trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Trigger {
    /// The bot was mentioned in a channel message.
    Mention,
    /// The message is a direct message the bot received.
    DirectMessage,
}

impl Trigger {
    /// Zulip's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Mention => "mention",
            Trigger::DirectMessage => "direct_message",
        }
    }
}

/// A message to post to an outgoing-webhook bot, not yet finished
/// (answered, or given up on). Keyed by (message, bot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Delivery {
    /// The message.
    pub message: MessageId,
    /// The bot.
    pub bot: UserId,
    /// Why.
    pub trigger: Trigger,
}

/// Every change this area makes, as one `Mutation` variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BotChange {
    /// A bot's service is set (created or replaced whole).
    SetService {
        /// The bot.
        bot: UserId,
        /// Its service.
        service: Service,
    },
    /// Entries are written to a bot's storage (added or replaced).
    PutStorage {
        /// The bot.
        bot: UserId,
        /// Keys and values.
        entries: Vec<(String, String)>,
    },
    /// Keys are removed from a bot's storage (each present).
    RemoveStorage {
        /// The bot.
        bot: UserId,
        /// The keys.
        keys: Vec<String>,
    },
    /// Deliveries a sent message triggered (logged with the message).
    Queue(Vec<Delivery>),
    /// Deliveries are finished: answered, refused or given up on.
    Finish(Vec<(MessageId, UserId)>),
    /// A delivery's try is about to be made again: `failed` tries of it
    /// failed (or were cut short by a restart) before. Logged before the
    /// try, so a crash never resets the count.
    Retry {
        /// The message.
        message: MessageId,
        /// The bot.
        bot: UserId,
        /// Tries that failed before this one.
        failed: u32,
    },
}

/// This area's data. One field of `State`.
#[derive(Default)]
pub struct BotState {
    /// Outgoing-webhook bots' services.
    pub services: Sharded<UserId, Service>,
    /// Each bot's storage: key → value.
    pub storage: Sharded<UserId, BTreeMap<String, String>>,
    /// Deliveries not finished yet.
    pub deliveries: Sharded<(MessageId, UserId), Delivery>,
    /// The unfinished deliveries retried at least once: how many of
    /// their tries failed before the one last begun.
    pub failed: Sharded<(MessageId, UserId), u32>,
}

/// `BotState` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BotsImage {
    /// Services.
    pub services: Entries<UserId, Service>,
    /// Storage.
    pub storage: Entries<UserId, BTreeMap<String, String>>,
    /// Unfinished deliveries.
    pub deliveries: Entries<(MessageId, UserId), Delivery>,
    /// Their failed tries (since snapshot format 17; a part of its own,
    /// after the widgets part, so the parts before keep their encoding).
    #[serde(skip)]
    pub failed: Entries<(MessageId, UserId), u32>,
}

impl BotsImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        self.services.parts() + self.storage.parts() + self.deliveries.parts() + self.failed.parts()
    }
}

impl BotState {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> BotsImage {
        BotsImage {
            services: self.services.freeze().into(),
            storage: self.storage.freeze().into(),
            deliveries: self.deliveries.freeze().into(),
            failed: self.failed.freeze().into(),
        }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: BotsImage) -> Self {
        BotState {
            services: image.services.into_iter().collect(),
            storage: image.storage.into_iter().collect(),
            deliveries: image.deliveries.into_iter().collect(),
            failed: image.failed.into_iter().collect(),
        }
    }

    /// Unfinished deliveries, in (message, bot) order, each with the tries
    /// that failed before the one last begun.
    pub fn pending(&self) -> Vec<(Delivery, u32)> {
        self.deliveries
            .collect_sorted(|_, _| true)
            .into_iter()
            .map(|(key, d)| (d, self.failed.get(&key).unwrap_or(0)))
            .collect()
    }

    /// The size of a bot's storage as Zulip counts it: the characters of
    /// every key and value.
    pub fn storage_size(&self, bot: UserId) -> usize {
        self.storage
            .read(&bot, |s| s.iter().map(|(k, v)| k.chars().count() + v.chars().count()).sum())
            .unwrap_or(0)
    }

    /// Applies one change.
    pub fn apply(&self, change: &BotChange) {
        match change {
            BotChange::SetService { bot, service } => self.services.insert(*bot, service.clone()),
            BotChange::PutStorage { bot, entries } => self.storage.upsert(*bot, |s| {
                for (k, v) in entries {
                    s.insert(k.clone(), v.clone());
                }
            }),
            BotChange::RemoveStorage { bot, keys } => {
                self.storage.update(bot, |s| {
                    for k in keys {
                        s.remove(k);
                    }
                });
            }
            BotChange::Queue(deliveries) => {
                for d in deliveries {
                    self.deliveries.insert((d.message, d.bot), *d);
                }
            }
            BotChange::Finish(done) => {
                for key in done {
                    self.deliveries.remove(key);
                    self.failed.remove(key);
                }
            }
            BotChange::Retry { message, bot, failed } => {
                let key = (*message, *bot);
                if self.deliveries.contains(&key) {
                    self.failed.insert(key, *failed);
                }
            }
        }
    }
}
