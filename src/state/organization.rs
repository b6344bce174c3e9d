//! Organization configuration kept per realm beside `Realm` itself:
//! linkifiers, default channel groups, the settings new users start
//! with and the email domains — their stored shapes, and
//! `OrgChange`, the one mutation type that changes them
//! (`Mutation::Organization`).
//!
//! Kept out of `Realm` so that the realm's own encoding (in the log's
//! `CreateRealm` records and in snapshots) stays as it was; the snapshot
//! carries this area after the image (`persist::snapshot`).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::ids::{ChannelId, RealmId};
use super::settings::{SettingValue, UserSettings};
use super::shard::{Entries, Sharded};

/// A linkifier: text matching `pattern` becomes a link to `url_template`
/// expanded with the match's named groups.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Linkifier {
    /// Id, unique per server.
    pub id: u64,
    /// The regular expression (Python syntax with `(?P<name>…)` groups).
    pub pattern: String,
    /// RFC 6570 template whose variables are the pattern's named groups.
    pub url_template: String,
}

/// A default channel group: channels offered together to new users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultStreamGroup {
    /// Id, unique per server.
    pub id: u64,
    /// Name, unique in the realm (case-insensitively).
    pub name: String,
    /// Description.
    pub description: String,
    /// The channels, in the order added.
    pub channels: Vec<ChannelId>,
}

/// One realm's configuration of this area.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmOrg {
    /// Linkifiers, in the order they apply.
    pub linkifiers: Vec<Linkifier>,
    /// Default channel groups, by id.
    pub stream_groups: Vec<DefaultStreamGroup>,
    /// The user settings new accounts start with, where they differ from
    /// Zulip's defaults (`settings::SETTINGS`).
    pub user_defaults: BTreeMap<String, SettingValue>,
    /// The organization's email domains (lowercase) and whether each
    /// includes its subdomains.
    pub domains: BTreeMap<String, bool>,
}

/// Every change this area makes, as one `Mutation` variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrgChange {
    /// A linkifier is added at the end of the realm's list.
    AddLinkifier {
        /// Whose.
        realm: RealmId,
        /// The linkifier (id decided by the handler).
        linkifier: Linkifier,
    },
    /// A linkifier's pattern and template are replaced (same id, same place).
    EditLinkifier {
        /// Whose.
        realm: RealmId,
        /// The new version.
        linkifier: Linkifier,
    },
    /// A linkifier is removed.
    RemoveLinkifier {
        /// Whose.
        realm: RealmId,
        /// Which.
        id: u64,
    },
    /// The realm's linkifiers are put in this order (every id, once).
    ReorderLinkifiers {
        /// Whose.
        realm: RealmId,
        /// The ids in their new order.
        order: Vec<u64>,
    },
    /// A default channel group is created, or replaced by id.
    PutStreamGroup {
        /// Whose.
        realm: RealmId,
        /// The group.
        group: DefaultStreamGroup,
    },
    /// A default channel group is removed.
    RemoveStreamGroup {
        /// Whose.
        realm: RealmId,
        /// Which.
        id: u64,
    },
    /// An email domain is added (`new`) or its `allow_subdomains` changed.
    PutDomain {
        /// Whose.
        realm: RealmId,
        /// The domain, lowercase.
        domain: String,
        /// Whether subdomains count.
        allow_subdomains: bool,
        /// Added (else changed).
        new: bool,
    },
    /// An email domain is removed.
    RemoveDomain {
        /// Whose.
        realm: RealmId,
        /// The domain.
        domain: String,
    },
    /// Settings new accounts start with change (only those that differ
    /// from the current defaults).
    SetUserDefaults {
        /// Whose.
        realm: RealmId,
        /// The settings and their new values, in request order.
        settings: Vec<(String, SettingValue)>,
    },
}

/// Kinds of ids this area allocates (each from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OrgIdKind {
    /// Linkifiers.
    Linkifier,
    /// Default channel groups.
    StreamGroup,
}

/// This area's data for every realm. One field of `State`.
#[derive(Default)]
pub struct OrgState {
    /// Each realm's configuration (absent = nothing configured).
    pub realms: Sharded<RealmId, RealmOrg>,
    /// Next free id of each kind.
    pub ids: Sharded<OrgIdKind, u64>,
}

/// `OrgState` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OrgImage {
    /// Each realm's configuration.
    pub realms: Entries<RealmId, RealmOrg>,
    /// Id counters.
    pub ids: Entries<OrgIdKind, u64>,
}

impl OrgImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        self.realms.parts() + self.ids.parts()
    }
}

impl OrgState {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> OrgImage {
        OrgImage { realms: self.realms.freeze().into(), ids: self.ids.freeze().into() }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: OrgImage) -> Self {
        OrgState {
            realms: image.realms.into_iter().collect(),
            ids: image.ids.into_iter().collect(),
        }
    }

    /// A realm's configuration (empty when nothing is configured).
    pub fn of(&self, realm: RealmId) -> RealmOrg {
        self.realms.get(&realm).unwrap_or_default()
    }

    /// A realm's linkifiers, in order.
    pub fn linkifiers(&self, realm: RealmId) -> Vec<Linkifier> {
        self.realms.read(&realm, |r| r.linkifiers.clone()).unwrap_or_default()
    }

    /// The settings a new account of `realm` starts with.
    pub fn user_defaults(&self, realm: RealmId) -> UserSettings {
        let overrides = self.realms.read(&realm, |r| r.user_defaults.clone()).unwrap_or_default();
        UserSettings { overrides }
    }

    /// The next free id of a kind (read under the writer lock).
    pub fn peek_id(&self, kind: OrgIdKind) -> u64 {
        self.ids.get(&kind).unwrap_or(1)
    }

    /// Records that `id` is taken (apply only).
    pub(crate) fn claim_id(&self, kind: OrgIdKind, id: u64) {
        self.ids.upsert(kind, |next| *next = (*next).max(id + 1));
    }
}
