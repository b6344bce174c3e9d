//! Realms (Zulip "organizations") and their settings.

use serde::{Deserialize, Serialize};

use super::channels::TopicsPolicy;
use super::groups::{GroupSetting, SystemGroup, SystemGroups};
use super::ids::RealmId;

/// One organization. Every user, channel, group and message belongs to one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Realm {
    /// Server-wide id.
    pub id: RealmId,
    /// Subdomain (`""` for the realm served on the bare host), Zulip's `string_id`.
    pub string_id: String,
    /// Display name.
    pub name: String,
    /// Markdown description.
    pub description: String,
    /// UNIX seconds.
    pub date_created: i64,
    /// A deactivated realm refuses every authenticated request.
    pub deactivated: bool,
    /// Organization settings.
    pub settings: RealmSettings,
    /// The realm's role-based system groups, created with the realm.
    pub system_groups: SystemGroups,
}

/// Who may see users' real email addresses (Zulip's `email_address_visibility`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EmailVisibility {
    /// 1: every user.
    Everyone,
    /// 2: members (not guests).
    Members,
    /// 3: administrators only.
    Admins,
    /// 4: nobody.
    Nobody,
    /// 5: moderators and administrators.
    Moderators,
}

impl EmailVisibility {
    /// Every value, from the most open to the most closed.
    pub const ALL: [EmailVisibility; 5] = [
        EmailVisibility::Everyone,
        EmailVisibility::Members,
        EmailVisibility::Moderators,
        EmailVisibility::Admins,
        EmailVisibility::Nobody,
    ];
}

/// Organization settings that natter implements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealmSettings {
    /// Who sees real email addresses.
    pub email_address_visibility: EmailVisibility,
    /// Whether messages may be edited at all.
    pub allow_message_editing: bool,
    /// Seconds after sending during which content may be edited; 0 = no limit.
    pub message_content_edit_limit_seconds: u32,
    /// Whether users may see edit history.
    pub allow_edit_history: bool,
    /// `None` = keep forever.
    pub message_retention_days: Option<i32>,
    /// How the empty topic is shown to clients without `empty_topic_name`.
    pub empty_topic_display_name: String,
    /// Who may use channel and topic wildcard mentions in large channels
    /// and topics; `None` = Zulip's default, `role:administrators`.
    pub can_mention_many_users_group: Option<GroupSetting>,
    /// A direct message is allowed only if some participant is in this
    /// group; `None` = Zulip's default, `role:everyone`.
    pub direct_message_permission_group: Option<GroupSetting>,
    /// Who may delete any message; `None` = `role:administrators`.
    pub can_delete_any_message_group: Option<GroupSetting>,
    /// Who may delete their own messages (within the time limit); `None` =
    /// `role:everyone`.
    pub can_delete_own_message_group: Option<GroupSetting>,
    /// Seconds after sending during which an author may delete their
    /// message; `None` = no limit. Zulip's default is 600.
    pub message_content_delete_limit_seconds: Option<u32>,
    /// The organization's empty-topic policy, which channels with the
    /// `inherit` policy follow (`allow_empty_topic` or `disable_empty_topic`).
    pub topics_policy: TopicsPolicy,
    /// Who may move messages to another topic; `None` = `role:members`.
    pub can_move_messages_between_topics_group: Option<GroupSetting>,
    /// Who may move messages to another channel (besides the channel's own
    /// `can_move_messages_out_of_channel_group`); `None` = `role:members`.
    pub can_move_messages_between_channels_group: Option<GroupSetting>,
    /// Seconds after sending during which non-moderators may move a message
    /// to another topic; `None` = no limit. Zulip's default is 7 days.
    pub move_messages_within_stream_limit_seconds: Option<u32>,
    /// The same for moves to another channel.
    pub move_messages_between_streams_limit_seconds: Option<u32>,
    /// Public access (Zulip's `enable_spectator_access`): logged-out
    /// visitors may register without credentials and see the realm's
    /// web-public channels. Zulip's default is off.
    pub enable_spectator_access: bool,
    /// Who may create public channels; `None` = Zulip's default,
    /// `role:members`.
    pub can_create_public_channel_group: Option<GroupSetting>,
    /// Who may create private channels; `None` = `role:members`.
    pub can_create_private_channel_group: Option<GroupSetting>,
    /// Who may create (or make) web-public channels, where spectators are
    /// allowed at all; `None` = `role:moderators`.
    pub can_create_web_public_channel_group: Option<GroupSetting>,
}

impl Default for RealmSettings {
    fn default() -> Self {
        RealmSettings {
            email_address_visibility: EmailVisibility::Everyone,
            allow_message_editing: true,
            message_content_edit_limit_seconds: 0,
            allow_edit_history: true,
            message_retention_days: None,
            empty_topic_display_name: "general chat".to_owned(),
            can_mention_many_users_group: None,
            direct_message_permission_group: None,
            can_delete_any_message_group: None,
            can_delete_own_message_group: None,
            message_content_delete_limit_seconds: Some(600),
            topics_policy: TopicsPolicy::AllowEmptyTopic,
            can_move_messages_between_topics_group: None,
            can_move_messages_between_channels_group: None,
            move_messages_within_stream_limit_seconds: Some(7 * 24 * 3600),
            move_messages_between_streams_limit_seconds: Some(7 * 24 * 3600),
            enable_spectator_access: false,
            can_create_public_channel_group: None,
            can_create_private_channel_group: None,
            can_create_web_public_channel_group: None,
        }
    }
}

impl Realm {
    /// A group-setting value of the realm, with `None` meaning `default`.
    pub fn group_setting(
        &self,
        value: &Option<GroupSetting>,
        default: SystemGroup,
    ) -> GroupSetting {
        value.clone().unwrap_or(GroupSetting::Group(self.system_groups.id(default)))
    }
}
