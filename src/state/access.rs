//! The permission engine: every "may this user see or do that" question is
//! answered here, from state alone, so that each endpoint asks the same
//! questions the same way.

use std::collections::BTreeSet;

use super::{
    Channel, Destination, EmailVisibility, Flags, GroupId, GroupSetting, Message, Realm, Role,
    State, SystemGroup, User, UserId,
};

/// Subgroup nesting deeper than this is not followed (groups may form
/// cycles through bad data; membership checks must terminate regardless).
const MAX_GROUP_DEPTH: usize = 32;

/// Whether a role is in a system group. Membership of the `role:*` groups
/// is derived from the role rather than stored, so it can never drift.
pub fn role_in_system_group(role: Role, group: SystemGroup) -> bool {
    match group {
        SystemGroup::Owners => role == Role::Owner,
        SystemGroup::Administrators => role <= Role::Administrator,
        SystemGroup::Moderators => role <= Role::Moderator,
        SystemGroup::FullMembers | SystemGroup::Members => role <= Role::Member,
        SystemGroup::Everyone | SystemGroup::Internet => true,
        SystemGroup::Nobody => false,
    }
}

/// Whether `user` is in group `id`, directly or through subgroups.
pub fn in_group(state: &State, user: &User, id: GroupId) -> bool {
    let mut seen = BTreeSet::new();
    in_group_inner(state, user, id, &mut seen, 0)
}

fn in_group_inner(
    state: &State,
    user: &User,
    id: GroupId,
    seen: &mut BTreeSet<GroupId>,
    depth: usize,
) -> bool {
    if depth > MAX_GROUP_DEPTH || seen.contains(&id) {
        return false;
    }
    // Decided under the shard's read lock where it can be (a send asks
    // this twice: cloning the group and its settings cost more than the
    // question); only the subgroups to follow are copied out, and they are
    // followed after the lock is released.
    let subgroups = state.groups.read(&id, |group| {
        if group.realm != user.realm {
            return Err(false);
        }
        if let Some(system) = group.system {
            if user.is_active && role_in_system_group(user.role, system) {
                return Err(true);
            }
        }
        if group.direct_members.contains(&user.id) {
            return Err(true);
        }
        Ok(group.direct_subgroups.iter().copied().collect::<Vec<GroupId>>())
    });
    match subgroups {
        None => false,
        Some(Err(decided)) => decided,
        // Marked seen only when its subgroups are followed (what stops a
        // cycle): a group that decides at once (the usual system group)
        // costs the set no allocation.
        Some(Ok(subgroups)) => {
            seen.insert(id);
            subgroups.into_iter().any(|sub| in_group_inner(state, user, sub, seen, depth + 1))
        }
    }
}

/// Whether `user` holds a permission expressed as a group-setting value.
pub fn has_permission(state: &State, user: &User, setting: &GroupSetting) -> bool {
    match setting {
        GroupSetting::Group(id) => in_group(state, user, *id),
        GroupSetting::Anonymous { direct_members, direct_subgroups } => {
            direct_members.contains(&user.id)
                || direct_subgroups.iter().any(|g| in_group(state, user, *g))
        }
    }
}

/// Whether `viewer` may see `target`'s real email address.
pub fn can_see_email(state: &State, viewer: &User, target: &User) -> bool {
    if viewer.id == target.id || target.is_bot() {
        return true;
    }
    // Only the setting is read: cloning the whole realm per call made
    // building 10,000 users' JSON several times slower.
    let Some(visibility) =
        state.realms.read(&viewer.realm, |r| r.settings.email_address_visibility)
    else {
        return false;
    };
    sees_others_emails(visibility, viewer.role)
}

/// Whether a viewer of `role` sees the real addresses of other humans
/// under the realm's `visibility` setting (their own and bots' always).
pub fn sees_others_emails(visibility: EmailVisibility, role: Role) -> bool {
    match visibility {
        EmailVisibility::Everyone => true,
        EmailVisibility::Members => role <= Role::Member,
        EmailVisibility::Moderators => role <= Role::Moderator,
        EmailVisibility::Admins => role.is_admin(),
        EmailVisibility::Nobody => false,
    }
}

/// Whether `user` may know the channel exists (name, description, settings).
pub fn can_see_channel(user: &User, channel: &Channel) -> bool {
    if user.realm != channel.realm {
        return false;
    }
    if channel.subscribers.contains(&user.id) {
        return true;
    }
    if channel.invite_only {
        // Zulip's administrators see every private channel's metadata.
        user.role.is_admin()
    } else {
        // Guests see the channels they are in, and web-public ones.
        user.role != Role::Guest || channel.is_web_public
    }
}

/// Whether `user` may read the channel's messages (subject to history rules).
pub fn can_read_channel(user: &User, channel: &Channel) -> bool {
    if user.realm != channel.realm {
        return false;
    }
    channel.subscribers.contains(&user.id)
        || (!channel.invite_only && (user.role != Role::Guest || channel.is_web_public))
}

/// Whether `user` administers `channel`: an organization administrator, or
/// in its `can_administer_channel_group`. Administering a private channel's
/// permissions or content settings also needs content access
/// (`may_change_permissions`).
pub fn administers_channel(state: &State, user: &User, channel: &Channel) -> bool {
    user.realm == channel.realm
        && user.is_active
        && (user.role.is_admin()
            || has_permission(state, user, &channel.permissions.can_administer_channel))
}

/// Whether `user` may rename the channel or change its description, folder,
/// retention or archived state: metadata access plus administering it.
pub fn may_change_metadata(state: &State, user: &User, channel: &Channel) -> bool {
    can_see_channel(user, channel) && administers_channel(state, user, channel)
}

/// Whether `user` may change the channel's privacy and content permissions:
/// administering it plus content access (an organization administrator
/// must be subscribed to a private channel).
pub fn may_change_permissions(state: &State, user: &User, channel: &Channel) -> bool {
    can_read_channel(user, channel)
        && user.role != Role::Guest
        && administers_channel(state, user, channel)
}

/// Why `user` may not subscribe themselves to `channel`, or `None`.
pub fn subscribe_self_refusal(
    state: &State,
    user: &User,
    channel: &Channel,
) -> Option<&'static str> {
    if channel.is_archived {
        return Some("archived");
    }
    if channel.subscribers.contains(&user.id) {
        return None;
    }
    if user.role == Role::Guest {
        return Some("guests cannot subscribe themselves");
    }
    if has_permission(state, user, &channel.permissions.can_add_subscribers) {
        return None;
    }
    if channel.invite_only {
        return Some("private channel");
    }
    None
}

/// Why `user` may not subscribe other users to `channel`, or `None`.
///
/// Members of the channel's `can_add_subscribers_group` may, without
/// being subscribed. Otherwise: for a public channel, any member (Zulip's
/// organization default) or channel administrator; for a private channel,
/// subscribers who are members or channel administrators.
pub fn subscribe_others_refusal(
    state: &State,
    user: &User,
    channel: &Channel,
) -> Option<&'static str> {
    if channel.is_archived {
        return Some("archived");
    }
    if user.role == Role::Guest {
        return Some("guests cannot subscribe others");
    }
    if has_permission(state, user, &channel.permissions.can_add_subscribers) {
        return None;
    }
    if channel.invite_only && !channel.subscribers.contains(&user.id) {
        return Some("private channel");
    }
    None
}

/// Whether `user` may unsubscribe other users from `channel`:
/// organization administrators and members of `can_remove_subscribers_group`
/// or of `can_administer_channel_group`, with metadata access.
pub fn may_unsubscribe_others(state: &State, user: &User, channel: &Channel) -> bool {
    can_see_channel(user, channel)
        && user.role != Role::Guest
        && (administers_channel(state, user, channel)
            || has_permission(state, user, &channel.permissions.can_remove_subscribers))
}

/// Whether `user` may archive (or unarchive) `channel`.
pub fn may_archive(state: &State, user: &User, channel: &Channel) -> bool {
    may_change_metadata(state, user, channel)
}

/// Whether `user` may delete a message `sender` sent to `channel`: with
/// content access, an organization administrator or a member of the
/// channel's `can_delete_any_message_group`; for their own messages, a
/// member of `can_delete_own_message_group`. (The delete-message endpoint
/// asks this; time limits are its own concern.)
pub fn may_delete_message(
    state: &State,
    user: &User,
    channel: &Channel,
    sender: crate::state::UserId,
) -> bool {
    if !can_read_channel(user, channel) {
        return false;
    }
    if user.role.is_admin()
        || has_permission(state, user, &channel.permissions.can_delete_any_message)
    {
        return true;
    }
    sender == user.id && has_permission(state, user, &channel.permissions.can_delete_own_message)
}

/// Whether `user` may add custom emoji: the realm's
/// `can_add_custom_emoji_group` (Zulip's default: members, not guests).
pub fn can_add_custom_emoji(state: &State, user: &User) -> bool {
    let Some(realm) = state.realms.get(&user.realm) else { return false };
    let setting = state.files.realm_settings(user.realm).can_add_custom_emoji_group;
    has_permission(state, user, &realm.group_setting(&setting, SystemGroup::Members))
}

/// Why `user` may not make a channel web-public in `realm`, if they may not:
/// the realm must allow spectators, and the user must be in its
/// `can_create_web_public_channel_group`.
pub fn web_public_refusal(state: &State, realm: &Realm, user: &User) -> Option<&'static str> {
    if !realm.settings.enable_spectator_access {
        return Some("Web-public channels are not enabled.");
    }
    let who = realm.group_setting(
        &realm.settings.can_create_web_public_channel_group,
        SystemGroup::Moderators,
    );
    if !has_permission(state, user, &who) {
        return Some("Insufficient permission to create web-public channels");
    }
    None
}

/// Whether `user` may create a channel of this kind, by the realm's
/// who-may-create settings (`can_create_public_channel_group`,
/// `can_create_private_channel_group`, both members by default; web-public
/// channels as `web_public_refusal` says, and never private).
pub fn create_channel_refusal(
    state: &State,
    realm: &Realm,
    user: &User,
    invite_only: bool,
    is_web_public: bool,
) -> Option<&'static str> {
    if is_web_public {
        if let Some(why) = web_public_refusal(state, realm, user) {
            return Some(why);
        }
        if invite_only {
            return Some("A web-public channel cannot be private.");
        }
        return None;
    }
    let (setting, why) = if invite_only {
        (
            &realm.settings.can_create_private_channel_group,
            "Insufficient permission to create private channels",
        )
    } else {
        (
            &realm.settings.can_create_public_channel_group,
            "Insufficient permission to create channels",
        )
    };
    if !has_permission(state, user, &realm.group_setting(setting, SystemGroup::Members)) {
        return Some(why);
    }
    None
}

/// Why `user` may not post to a channel they can see, or `None` if they may.
pub fn send_refusal(state: &State, user: &User, channel: &Channel) -> Option<&'static str> {
    if channel.is_archived {
        return Some("archived");
    }
    if channel.invite_only && !channel.subscribers.contains(&user.id) {
        return Some("not subscribed");
    }
    if user.role == Role::Guest && !channel.subscribers.contains(&user.id) {
        return Some("guest not subscribed");
    }
    if !has_permission(state, user, &channel.permissions.can_send_message) {
        return Some("not in can_send_message_group");
    }
    None
}

/// Whether `sender` may send a direct message to `others` (the recipients
/// other than the sender): always to oneself or to a bot; otherwise some
/// participant must be in the realm's `direct_message_permission_group`.
pub fn may_send_direct(state: &State, sender: &User, others: &[User]) -> bool {
    if others.is_empty() || others.iter().any(User::is_bot) {
        return true;
    }
    let Some(realm) = state.realms.get(&sender.realm) else { return false };
    let setting =
        realm.group_setting(&realm.settings.direct_message_permission_group, SystemGroup::Everyone);
    std::iter::once(sender).chain(others).any(|u| has_permission(state, u, &setting))
}

/// Why `user` may not delete `message` (which they can see) at time `now`,
/// or `None` if they may. Anyone in the realm's or the channel's
/// `can_delete_any_message_group` may delete any message; an author in the
/// realm's or the channel's `can_delete_own_message_group` may delete their
/// own within the realm's `message_content_delete_limit_seconds`.
pub fn delete_refusal(
    state: &State,
    user: &User,
    message: &Message,
    now: i64,
) -> Option<&'static str> {
    let realm = state.realms.get(&user.realm)?;
    let channel = match &message.destination {
        Destination::Channel { channel, .. } => state.channels.get(channel),
        Destination::Direct { .. } => None,
    };
    let settings = &realm.settings;
    let any =
        realm.group_setting(&settings.can_delete_any_message_group, SystemGroup::Administrators);
    if has_permission(state, user, &any)
        || channel
            .as_ref()
            .is_some_and(|c| has_permission(state, user, &c.permissions.can_delete_any_message))
    {
        return None;
    }
    if message.sender != user.id {
        return Some("You don't have permission to delete this message");
    }
    let own = realm.group_setting(&settings.can_delete_own_message_group, SystemGroup::Everyone);
    if !has_permission(state, user, &own)
        && !channel
            .as_ref()
            .is_some_and(|c| has_permission(state, user, &c.permissions.can_delete_own_message))
    {
        return Some("You don't have permission to delete this message");
    }
    match settings.message_content_delete_limit_seconds {
        Some(limit) if now.saturating_sub(message.timestamp) > i64::from(limit) => {
            Some("The time limit for deleting this message has passed")
        }
        _ => None,
    }
}

/// The flags `user` sees on `message`, or `None` if they may not read it.
///
/// A message delivered to the user carries their stored flags. A message in
/// a channel they may read but that was not delivered to them (sent before
/// they subscribed, or to a public channel they are not in) is "historical"
/// and shows as read, when the channel's history is open to them.
pub fn message_view(state: &State, user: &User, message: &Message) -> Option<MessageView> {
    message_view_with(state, user, message, None)
}

/// `message_view` for a caller who already holds the user's stored flags
/// on the message (`stored`, e.g. read from `user_messages` with its id);
/// `None` looks them up.
pub fn message_view_with(
    state: &State,
    user: &User,
    message: &Message,
    stored: Option<Flags>,
) -> Option<MessageView> {
    if message.realm != user.realm {
        return None;
    }
    if let Some(flags) = stored.or_else(|| state.flags(user.id, message.id)) {
        let historical = flags.contains(Flags::HISTORICAL);
        return Some(MessageView { flags: flags.without(Flags::HISTORICAL), historical });
    }
    let Destination::Channel { channel, .. } = &message.destination else { return None };
    let readable = state.channels.read(channel, |c| can_read_history(user, c))?;
    readable.then_some(MessageView { flags: Flags::READ, historical: true })
}

/// The users whose reading of `message` `viewer` may know of (`GET
/// /messages/{id}/read_receipts`), ascending: active users of the realm
/// holding it as read who share read receipts (`send_read_receipts`) —
/// never its sender, nor anyone `viewer` has muted or who has muted
/// `viewer`. The viewer appears when they have read it. As in Zulip.
pub fn read_receipts(state: &State, viewer: &User, message: &Message) -> Vec<UserId> {
    let shares = |id: UserId| {
        id != message.sender
            && state.users.read(&id, |u| u.is_active && u.realm == message.realm) == Some(true)
            && state.flags(id, message.id).is_some_and(|f| f.contains(Flags::READ))
            && state.settings.of(id).bool("send_read_receipts")
            && !state.settings.has_muted(viewer.id, id)
            && !state.settings.has_muted(id, viewer.id)
    };
    let mut readers = state.message_holders(message);
    readers.retain(|id| shares(*id));
    readers
}

/// Whether `user` may read channel messages that were not delivered to
/// them (sent before they subscribed, or while they were not subscribed):
/// never for protected history (`history_public_to_subscribers` false).
pub fn can_read_history(user: &User, channel: &Channel) -> bool {
    (!channel.invite_only || channel.history_public_to_subscribers)
        && can_read_channel(user, channel)
}

/// How a readable message appears to one user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageView {
    /// The user's flags.
    pub flags: Flags,
    /// Not delivered to the user; readable through channel history.
    pub historical: bool,
}

impl MessageView {
    /// Zulip's flag names, `historical` included.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut names = self.flags.names();
        if self.historical {
            names.push("historical");
        }
        names
    }
}

/// Whether `viewer` may see who is subscribed to `channel`.
pub fn can_see_subscribers(viewer: &User, channel: &Channel) -> bool {
    viewer.realm == channel.realm
        && (channel.subscribers.contains(&viewer.id)
            || viewer.role.is_admin()
            || (!channel.invite_only && viewer.role != Role::Guest))
}

/// Whether `user` is the stand-in for a logged-out spectator.
pub(crate) fn is_spectator(user: &User) -> bool {
    user.id == UserId(0)
}

/// The stand-in account a spectator's sections are read as: no id (0 is
/// never an account's), the least-privileged role, no subscriptions.
pub(crate) fn spectator(realm: &Realm) -> User {
    User {
        id: UserId(0),
        realm: realm.id,
        email: String::new(),
        delivery_email: String::new(),
        full_name: String::new(),
        role: crate::state::Role::Guest,
        is_active: false,
        bot_type: None,
        bot_owner: None,
        api_key: String::new(),
        date_joined: 0,
        timezone: String::new(),
        avatar_version: 1,
    }
}

/// Zulip's `realm_web_public_access_enabled`: the realm allows public
/// access and has at least one web-public channel to show.
pub fn web_public_access_enabled(state: &State, realm: &Realm) -> bool {
    if !realm.settings.enable_spectator_access {
        return false;
    }
    // Looked at in place (the keep callback keeps nothing): cloning a
    // web-public channel would copy its subscriber set, 10,000 ids in a
    // big realm, on every register.
    let mut found = false;
    state.channels.collect_sorted(|_, c| {
        found |= c.realm == realm.id && c.is_web_public && !c.is_archived;
        false
    });
    found
}

/// Whether `user` administers `bot` (an active administrator of its realm,
/// or its owner).
pub fn administers(user: &User, bot: &User) -> bool {
    user.realm == bot.realm
        && user.is_active
        && !user.is_bot()
        && (user.role.is_admin() || bot.bot_owner == Some(user.id))
}

/// Whether `user` may download an uploaded file: its uploader, or anyone
/// of its realm who can read a message that references it (Zulip's rule).
pub fn can_read_attachment(
    state: &State,
    user: &User,
    attachment: &super::files::Attachment,
) -> bool {
    if attachment.realm != user.realm || !user.is_active {
        return false;
    }
    attachment.owner == user.id
        || attachment.messages.iter().any(|id| {
            state.messages.get(id).is_some_and(|m| message_view(state, user, &m).is_some())
        })
}

/// Whether a logged-out visitor may download an uploaded file (Zulip's
/// rule): the realm allows public access and a message of a web-public
/// channel references the file.
pub fn spectator_can_read_attachment(
    state: &State,
    realm: &Realm,
    attachment: &super::files::Attachment,
) -> bool {
    if attachment.realm != realm.id || !realm.settings.enable_spectator_access {
        return false;
    }
    let viewer = spectator(realm);
    attachment.messages.iter().any(|id| {
        state.messages.get(id).is_some_and(|m| {
            let Destination::Channel { channel, .. } = &m.destination else { return false };
            state.channels.read(channel, |c| c.is_web_public && can_read_history(&viewer, c))
                == Some(true)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::build::NewChannel;
    use crate::state::{Group, GroupId, UserId};
    use crate::testkit::World;

    /// A realm with one user per role, and a public channel with only the
    /// owner subscribed.
    fn realm() -> (World, Vec<User>, Channel) {
        let mut w = World::new();
        let roles = [Role::Owner, Role::Administrator, Role::Moderator, Role::Member, Role::Guest];
        let users: Vec<User> = roles
            .into_iter()
            .enumerate()
            .map(|(i, role)| w.user("", &format!("u{i}@t.test"), role))
            .collect();
        let new = NewChannel {
            name: "c",
            description: "",
            invite_only: false,
            creator: Some(users[0].id),
            subscribers: &[users[0].id],
        };
        let channel = w.add_channel("", &new);
        (w, users, channel)
    }

    #[test]
    fn system_groups_follow_roles() {
        let (w, users, _) = realm();
        let realm = w.state.realm_by_subdomain("").unwrap();
        let admins = realm.system_groups.id(SystemGroup::Administrators);
        let members = realm.system_groups.id(SystemGroup::Members);
        let nobody = realm.system_groups.id(SystemGroup::Nobody);
        let got: Vec<bool> = users.iter().map(|u| in_group(&w.state, u, admins)).collect();
        assert_eq!(got, [true, true, false, false, false]);
        let got: Vec<bool> = users.iter().map(|u| in_group(&w.state, u, members)).collect();
        assert_eq!(got, [true, true, true, true, false]);
        assert!(users.iter().all(|u| !in_group(&w.state, u, nobody)));
        assert!(!in_group(&w.state, &users[0], GroupId(9999)));
    }

    #[test]
    fn subgroup_cycles_terminate() {
        let (w, users, _) = realm();
        let realm = w.state.realm_by_subdomain("").unwrap();
        let base = Group {
            id: GroupId(100),
            realm: realm.id,
            name: "a".into(),
            description: String::new(),
            system: None,
            direct_members: Default::default(),
            direct_subgroups: [GroupId(101)].into(),
            deactivated: false,
            date_created: None,
            creator: None,
        };
        let b = Group {
            id: GroupId(101),
            name: "b".into(),
            direct_subgroups: [GroupId(100)].into(),
            direct_members: [users[3].id].into(),
            ..base.clone()
        };
        w.state.groups.insert(base.id, base);
        w.state.groups.insert(b.id, b);
        assert!(in_group(&w.state, &users[3], GroupId(100)));
        assert!(!in_group(&w.state, &users[2], GroupId(100)));
        let anonymous = GroupSetting::Anonymous {
            direct_members: [users[4].id].into(),
            direct_subgroups: [GroupId(101)].into(),
        };
        assert!(has_permission(&w.state, &users[4], &anonymous));
        assert!(has_permission(&w.state, &users[3], &anonymous));
        assert!(!has_permission(&w.state, &users[1], &anonymous));
    }

    #[test]
    fn send_refusals() {
        let (w, users, channel) = realm();
        let realm = w.state.realm_by_subdomain("").unwrap();
        let member = &users[3];
        let guest = &users[4];
        assert_eq!(send_refusal(&w.state, member, &channel), None);
        assert_eq!(send_refusal(&w.state, guest, &channel), Some("guest not subscribed"));
        let archived = Channel { is_archived: true, ..channel.clone() };
        assert_eq!(send_refusal(&w.state, member, &archived), Some("archived"));
        let private = Channel { invite_only: true, ..channel.clone() };
        assert_eq!(send_refusal(&w.state, member, &private), Some("not subscribed"));
        assert!(!can_see_channel(member, &private));
        assert!(can_see_channel(&users[1], &private), "admins see private channel metadata");
        assert!(!can_read_channel(&users[1], &private), "but not its messages");
        let mut announce = channel.clone();
        announce.permissions.can_send_message =
            GroupSetting::Group(realm.system_groups.id(SystemGroup::Administrators));
        assert_eq!(
            send_refusal(&w.state, member, &announce),
            Some("not in can_send_message_group")
        );
        assert_eq!(send_refusal(&w.state, &users[1], &announce), None);
        // Deactivated users are in no system group.
        let gone = User { is_active: false, ..users[0].clone() };
        assert!(!in_group(&w.state, &gone, realm.system_groups.id(SystemGroup::Everyone)));
        // Another realm's user sees nothing.
        let stranger =
            User { realm: crate::state::RealmId(999), id: UserId(999), ..users[0].clone() };
        assert!(!can_see_channel(&stranger, &channel) && !can_read_channel(&stranger, &channel));
    }

    #[test]
    fn email_visibility_follows_the_realm_setting() {
        let (w, users, _) = realm();
        let realm = w.state.realm_by_subdomain("").unwrap();
        let check = |setting: EmailVisibility| -> Vec<bool> {
            let mut r = realm.clone();
            r.settings.email_address_visibility = setting;
            w.state.realms.insert(r.id, r);
            users.iter().map(|viewer| can_see_email(&w.state, viewer, &users[3])).collect()
        };
        // Viewer order: owner, admin, moderator, member (the target), guest.
        assert_eq!(check(EmailVisibility::Everyone), [true, true, true, true, true]);
        assert_eq!(check(EmailVisibility::Members), [true, true, true, true, false]);
        assert_eq!(check(EmailVisibility::Moderators), [true, true, true, true, false]);
        assert_eq!(check(EmailVisibility::Admins), [true, true, false, true, false]);
        assert_eq!(check(EmailVisibility::Nobody), [false, false, false, true, false]);
    }
}
