//! Channels (Zulip "streams") and per-user subscriptions.

use serde::{Deserialize, Serialize};

use super::groups::GroupSetting;
use super::ids::{ChannelId, MessageId, RealmId, RecipientId, UserId};
use super::members::Members;

/// Whether a channel allows the empty topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopicsPolicy {
    /// Follow the organization setting.
    Inherit,
    /// Named topics and the empty topic.
    AllowEmptyTopic,
    /// Named topics only.
    DisableEmptyTopic,
    /// Only the empty topic.
    EmptyTopicOnly,
}

impl TopicsPolicy {
    /// Zulip's string for the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            TopicsPolicy::Inherit => "inherit",
            TopicsPolicy::AllowEmptyTopic => "allow_empty_topic",
            TopicsPolicy::DisableEmptyTopic => "disable_empty_topic",
            TopicsPolicy::EmptyTopicOnly => "empty_topic_only",
        }
    }
}

/// The channel's group-setting permissions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelPermissions {
    /// Who may post.
    pub can_send_message: GroupSetting,
    /// Who may subscribe others.
    pub can_add_subscribers: GroupSetting,
    /// Who may unsubscribe others.
    pub can_remove_subscribers: GroupSetting,
    /// Who may change the channel's settings.
    pub can_administer_channel: GroupSetting,
    /// Who may delete any message.
    pub can_delete_any_message: GroupSetting,
    /// Who may delete their own messages.
    pub can_delete_own_message: GroupSetting,
    /// Who may move messages to another channel.
    pub can_move_messages_out_of_channel: GroupSetting,
}

/// One channel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    /// Server-wide id.
    pub id: ChannelId,
    /// Owning realm.
    pub realm: RealmId,
    /// Unique (case-insensitively) within the realm.
    pub name: String,
    /// Markdown source.
    pub description: String,
    /// HTML of `description`, rendered before logging.
    pub rendered_description: String,
    /// Private channel.
    pub invite_only: bool,
    /// Readable by logged-out spectators.
    pub is_web_public: bool,
    /// Whether new subscribers see earlier messages.
    pub history_public_to_subscribers: bool,
    /// Who created it, if recorded.
    pub creator: Option<UserId>,
    /// UNIX seconds.
    pub date_created: i64,
    /// The recipient id every message of the channel carries.
    pub recipient: RecipientId,
    /// `None` inherits the realm setting; `Some(-1)` keeps forever.
    pub message_retention_days: Option<i32>,
    /// Archived channels refuse new messages.
    pub is_archived: bool,
    /// Empty-topic policy.
    pub topics_policy: TopicsPolicy,
    /// Channel folder, if any.
    pub folder_id: Option<u64>,
    /// Default channel for new users.
    pub is_default: bool,
    /// Group-setting permissions.
    pub permissions: ChannelPermissions,
    /// Oldest message still in the channel.
    pub first_message_id: Option<MessageId>,
    /// Reverse index of `State::subscriptions`: users subscribed now.
    pub subscribers: Members,
}

/// One user's settings for one channel they are subscribed to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    /// `#rrggbb`.
    pub color: String,
    /// Hidden from the combined feed and unread counts.
    pub is_muted: bool,
    /// Shown at the top of the channel list.
    pub pin_to_top: bool,
    /// `None` inherits the user-level default.
    pub desktop_notifications: Option<bool>,
    /// `None` inherits the user-level default.
    pub email_notifications: Option<bool>,
    /// `None` inherits the user-level default.
    pub push_notifications: Option<bool>,
    /// `None` inherits the user-level default.
    pub audible_notifications: Option<bool>,
    /// `None` inherits the user-level default.
    pub wildcard_mentions_notify: Option<bool>,
}

impl Subscription {
    /// A fresh subscription with every notification setting inherited.
    pub fn new(color: String) -> Self {
        Subscription {
            color,
            is_muted: false,
            pin_to_top: false,
            desktop_notifications: None,
            email_notifications: None,
            push_notifications: None,
            audible_notifications: None,
            wildcard_mentions_notify: None,
        }
    }
}
