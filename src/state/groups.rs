//! User groups, system groups included, and group-setting values.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::ids::{GroupId, RealmId, UserId};
use super::realm::SystemGroup;

/// A user group. System groups are groups too; their membership follows
/// from roles, so `direct_members` stays empty for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Server-wide id.
    pub id: GroupId,
    /// Owning realm.
    pub realm: RealmId,
    /// Unique within the realm.
    pub name: String,
    /// Free text.
    pub description: String,
    /// `Some` for the role-based system groups.
    pub system: Option<SystemGroup>,
    /// Users directly in the group.
    pub direct_members: BTreeSet<UserId>,
    /// Groups whose members are also members of this one.
    pub direct_subgroups: BTreeSet<GroupId>,
    /// Deactivated groups keep their id and members but cannot be picked
    /// for new permission settings.
    pub deactivated: bool,
    /// UNIX seconds; `None` for system groups.
    pub date_created: Option<i64>,
    /// Creator, if any.
    pub creator: Option<UserId>,
}

/// Who holds a permission: a named group, or an anonymous set of users
/// and groups (Zulip's "group-setting value").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupSetting {
    /// The members of one group.
    Group(GroupId),
    /// These users plus the members of these groups.
    Anonymous {
        /// Users named directly.
        direct_members: BTreeSet<UserId>,
        /// Groups whose members are included.
        direct_subgroups: BTreeSet<GroupId>,
    },
}
