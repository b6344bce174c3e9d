//! Builders for the mutations that create realms, users, channels and the
//! system bots: used by live handlers (sign-up, bot creation, channel
//! creation, `natter realm create`) and by the dev seed.
//!
//! Builders read the next ids from state, so they run inside
//! `Committer::commit` (under the writer lock).

use std::collections::BTreeSet;

use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::Mutation;
use crate::state::system_bots::SystemBot;
use crate::state::{
    BotType, Channel, ChannelId, ChannelPermissions, Group, GroupId, GroupSetting, IdKind, Members,
    Realm, RealmId, RealmSettings, RecipientId, Role, State, Subscription, SystemGroup,
    SystemGroups, TopicsPolicy, User, UserId,
};

/// Zulip's palette for new subscriptions, picked in turn per user.
const COLORS: [&str; 12] = [
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5",
];

/// A realm and its system groups.
pub fn realm(state: &State, string_id: &str, name: &str, now: i64) -> ApiResult<Mutation> {
    if state.realm_by_subdomain(string_id).is_some() {
        return Err(ApiError::bad_request(format!("Subdomain '{string_id}' is already in use")));
    }
    let id = RealmId(state.ids.peek(IdKind::Realm));
    let group_ids: Vec<GroupId> =
        state.ids.peek_many(IdKind::Group, 8).into_iter().map(GroupId).collect();
    let system_groups = SystemGroups(std::array::from_fn(|i| group_ids[i]));
    let groups = SystemGroup::ALL
        .iter()
        .map(|kind| Group {
            id: system_groups.id(*kind),
            realm: id,
            name: kind.name().to_owned(),
            description: String::new(),
            system: Some(*kind),
            direct_members: BTreeSet::new(),
            direct_subgroups: BTreeSet::new(),
            deactivated: false,
            date_created: None,
            creator: None,
        })
        .collect();
    let realm = Realm {
        id,
        string_id: string_id.to_owned(),
        name: name.to_owned(),
        description: String::new(),
        date_created: now,
        deactivated: false,
        settings: RealmSettings::default(),
        system_groups,
    };
    Ok(Mutation::CreateRealm { realm: Box::new(realm), groups })
}

/// A new account in `realm` with a fresh API key.
pub struct NewUser<'a> {
    /// Real email (also the API email while emails are visible to everyone).
    pub email: &'a str,
    /// Display name.
    pub full_name: &'a str,
    /// Role.
    pub role: Role,
    /// For bots: type and owner.
    pub bot: Option<(BotType, UserId)>,
}

/// The mutation creating `new` in `realm`; the API key is drawn here.
pub fn user(
    state: &State,
    realm: RealmId,
    new: &NewUser<'_>,
    api_key: String,
    now: i64,
) -> ApiResult<Mutation> {
    if state.user_by_delivery_email(realm, new.email).is_some() {
        return Err(ApiError::bad_request(format!("Email '{}' already in use", new.email)));
    }
    Ok(Mutation::CreateUser(User {
        id: UserId(state.ids.peek(IdKind::User)),
        realm,
        email: new.email.to_owned(),
        delivery_email: new.email.to_owned(),
        full_name: new.full_name.to_owned(),
        role: new.role,
        is_active: true,
        bot_type: new.bot.map(|(t, _)| t),
        bot_owner: new.bot.map(|(_, o)| o),
        api_key,
        date_joined: now,
        timezone: String::new(),
        avatar_version: 1,
    }))
}

/// The default permissions of a new channel (Zulip's defaults; the
/// delete permissions add to the realm's, so nobody more by default).
pub fn default_permissions(realm: &Realm, creator: Option<UserId>) -> ChannelPermissions {
    let group = |g| GroupSetting::Group(realm.system_groups.id(g));
    ChannelPermissions {
        can_send_message: group(SystemGroup::Everyone),
        can_add_subscribers: group(SystemGroup::Nobody),
        can_remove_subscribers: group(SystemGroup::Administrators),
        can_administer_channel: GroupSetting::Anonymous {
            direct_members: creator.into_iter().collect(),
            direct_subgroups: BTreeSet::new(),
        },
        can_delete_any_message: group(SystemGroup::Nobody),
        can_delete_own_message: group(SystemGroup::Nobody),
        can_move_messages_out_of_channel: group(SystemGroup::Nobody),
    }
}

/// A subscription for `user` with the next color of their palette.
pub fn subscription(state: &State, user: UserId, offset: usize) -> Subscription {
    let existing = state.subscriptions.read(&user, |s| s.len()).unwrap_or(0);
    Subscription::new(COLORS[(existing + offset) % COLORS.len()].to_owned())
}

/// A channel to create.
pub struct NewChannel<'a> {
    /// Name, unique in the realm.
    pub name: &'a str,
    /// Markdown description.
    pub description: &'a str,
    /// Private channel.
    pub invite_only: bool,
    /// Who creates it.
    pub creator: Option<UserId>,
    /// Who is subscribed from the start.
    pub subscribers: &'a [UserId],
}

/// The mutation creating `new` in `realm`.
pub fn channel(
    state: &State,
    realm: &Realm,
    new: &NewChannel<'_>,
    now: i64,
) -> ApiResult<Mutation> {
    if state.channel_by_name(realm.id, new.name).is_some() {
        return Err(ApiError::bad_request(format!("Channel '{}' already exists", new.name)));
    }
    let channel = Channel {
        id: ChannelId(state.ids.peek(IdKind::Channel)),
        realm: realm.id,
        name: new.name.to_owned(),
        description: new.description.to_owned(),
        rendered_description: markdown::render(new.description),
        invite_only: new.invite_only,
        is_web_public: false,
        history_public_to_subscribers: true,
        creator: new.creator,
        date_created: now,
        recipient: RecipientId(state.ids.peek(IdKind::Recipient)),
        message_retention_days: None,
        is_archived: false,
        topics_policy: TopicsPolicy::Inherit,
        folder_id: None,
        is_default: !new.invite_only,
        permissions: default_permissions(realm, new.creator),
        first_message_id: None,
        subscribers: Members::new(),
    };
    let subscribers = new.subscribers.iter().map(|u| (*u, subscription(state, *u, 0))).collect();
    Ok(Mutation::CreateChannel { channel: Box::new(channel), subscribers })
}

/// The system-bot accounts `realm` lacks, with ids from `first_id` on.
/// A bot whose reserved address another account already holds is left
/// out (that realm then posts no notices).
pub fn system_bots(state: &State, realm: RealmId, first_id: u64, now: i64) -> Vec<User> {
    SystemBot::ALL
        .into_iter()
        .filter(|kind| state.user_by_delivery_email(realm, kind.email()).is_none())
        .enumerate()
        .map(|(k, kind)| User {
            id: UserId(first_id + k as u64),
            realm,
            email: kind.email().to_owned(),
            delivery_email: kind.email().to_owned(),
            full_name: kind.full_name().to_owned(),
            role: Role::Member,
            is_active: true,
            bot_type: Some(BotType::Generic),
            bot_owner: None,
            // No key: API authentication refuses an empty key.
            api_key: String::new(),
            date_joined: now,
            timezone: String::new(),
            avatar_version: 1,
        })
        .collect()
}
