//! User groups, system groups included, and group-setting values.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::ids::{GroupId, RealmId, UserId};

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

/// The role-based system groups of one realm (Zulip's `role:*` groups).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SystemGroup {
    /// `role:owners`.
    Owners,
    /// `role:administrators` (contains owners).
    Administrators,
    /// `role:moderators` (contains administrators).
    Moderators,
    /// `role:fullmembers` (contains moderators).
    FullMembers,
    /// `role:members`: everyone but guests.
    Members,
    /// `role:everyone`: guests too.
    Everyone,
    /// `role:internet`: everyone plus logged-out spectators.
    Internet,
    /// `role:nobody`: empty.
    Nobody,
}

impl SystemGroup {
    /// All of them, in id-allocation order.
    pub const ALL: [SystemGroup; 8] = [
        SystemGroup::Owners,
        SystemGroup::Administrators,
        SystemGroup::Moderators,
        SystemGroup::FullMembers,
        SystemGroup::Members,
        SystemGroup::Everyone,
        SystemGroup::Internet,
        SystemGroup::Nobody,
    ];

    /// Zulip's name for the group.
    pub fn name(self) -> &'static str {
        match self {
            SystemGroup::Owners => "role:owners",
            SystemGroup::Administrators => "role:administrators",
            SystemGroup::Moderators => "role:moderators",
            SystemGroup::FullMembers => "role:fullmembers",
            SystemGroup::Members => "role:members",
            SystemGroup::Everyone => "role:everyone",
            SystemGroup::Internet => "role:internet",
            SystemGroup::Nobody => "role:nobody",
        }
    }
}

/// Ids of a realm's system groups, indexed like `SystemGroup::ALL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemGroups(pub [GroupId; 8]);

impl SystemGroups {
    /// The id of one system group.
    pub fn id(&self, group: SystemGroup) -> GroupId {
        self.0[group as usize]
    }
}
