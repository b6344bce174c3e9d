//! The routing table: every endpoint natter serves, in one greppable list.
//! Paths are relative to `/api/v1`; `{name}` segments match one path
//! segment and are handed to the handler in order.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::api::{self, Handler};

/// Whether a route needs credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No authentication (an `Authorization` header is ignored).
    Public,
    /// HTTP Basic authentication required.
    User,
    /// Credentials checked when sent (a bad key is still 401); without
    /// them the handler runs with no caller (a logged-out spectator).
    Optional,
}

/// One endpoint.
pub struct Route {
    /// HTTP method.
    pub method: &'static str,
    /// Pattern under `/api/v1`.
    pub pattern: &'static str,
    /// Authentication requirement.
    pub access: Access,
    /// The handler.
    pub handler: Handler,
}

/// The position of `route` in [`ROUTES`] (a dense index for per-route
/// tables).
pub fn index_of(route: &'static Route) -> usize {
    (route as *const Route as usize - ROUTES.as_ptr() as usize) / std::mem::size_of::<Route>()
}

/// Every endpoint.
pub static ROUTES: &[Route] = &[
    Route {
        method: "POST",
        pattern: "/external/{integration}",
        access: Access::Public,
        handler: api::webhooks::receive,
    },
    Route {
        method: "GET",
        pattern: "/server_settings",
        access: Access::Public,
        handler: api::realm::server_settings,
    },
    Route {
        method: "POST",
        pattern: "/dev_fetch_api_key",
        access: Access::Public,
        handler: api::auth::dev_fetch_api_key,
    },
    Route {
        method: "GET",
        pattern: "/users/me",
        access: Access::User,
        handler: api::users::get_me,
    },
    Route { method: "GET", pattern: "/users", access: Access::User, handler: api::users::list },
    Route {
        method: "GET",
        pattern: "/users/{user_id}",
        access: Access::User,
        handler: api::users::get_one,
    },
    Route {
        method: "POST",
        pattern: "/messages",
        access: Access::User,
        handler: api::messages::send,
    },
    Route {
        method: "GET",
        pattern: "/messages/{message_id}",
        // Spectators may read a web-public channel's message (real time).
        access: Access::Optional,
        handler: api::spectators::get_message,
    },
    // --- Real time: register, event queues, presence ---
    Route {
        method: "POST",
        pattern: "/register",
        access: Access::Optional,
        handler: api::register::register,
    },
    Route {
        method: "GET",
        pattern: "/events",
        access: Access::User,
        handler: api::events::get_events,
    },
    Route {
        method: "DELETE",
        pattern: "/events",
        access: Access::User,
        handler: api::events::delete_queue,
    },
    Route {
        method: "POST",
        pattern: "/users/me/presence",
        access: Access::User,
        handler: api::presence::update_presence,
    },
    Route {
        method: "GET",
        pattern: "/realm/presence",
        access: Access::User,
        handler: api::presence::realm_presence,
    },
    Route {
        method: "GET",
        pattern: "/users/{user_id_or_email}/presence",
        access: Access::User,
        handler: api::presence::user_presence,
    },
    // --- end real time ---
    // Uploaded files (api/uploads.rs); the download route itself is
    // outside /api/v1 (http/downloads.rs).
    Route {
        method: "POST",
        pattern: "/user_uploads",
        access: Access::User,
        handler: api::uploads::upload,
    },
    Route {
        method: "GET",
        pattern: "/user_uploads/{realm_id}/{ab}/{token}/{filename}",
        access: Access::User,
        handler: api::uploads::temporary_url,
    },
    Route {
        method: "GET",
        pattern: "/realm/emoji",
        access: Access::User,
        handler: api::emoji::list,
    },
    Route {
        method: "POST",
        pattern: "/realm/emoji/{emoji_name}",
        access: Access::User,
        handler: api::emoji::add,
    },
    Route {
        method: "DELETE",
        pattern: "/realm/emoji/{emoji_name}",
        access: Access::User,
        handler: api::emoji::deactivate,
    },
    Route {
        method: "POST",
        pattern: "/users/me/avatar",
        access: Access::User,
        handler: api::avatars::upload,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/avatar",
        access: Access::User,
        handler: api::avatars::delete,
    },
    Route {
        method: "GET",
        pattern: "/attachments",
        access: Access::User,
        handler: api::uploads::list,
    },
    Route {
        method: "DELETE",
        pattern: "/attachments/{attachment_id}",
        access: Access::User,
        handler: api::uploads::delete,
    },
    // Reading: message windows and narrows, topics, channel lists, flags.
    Route {
        method: "GET",
        pattern: "/messages",
        // Spectators may read web-public channels (api/spectators.rs).
        access: Access::Optional,
        handler: api::reading::get_messages,
    },
    Route {
        method: "POST",
        pattern: "/messages/render",
        access: Access::User,
        handler: api::messages::render,
    },
    Route {
        method: "GET",
        pattern: "/messages/matches_narrow",
        access: Access::User,
        handler: api::reading::matches_narrow,
    },
    Route {
        method: "POST",
        pattern: "/messages/flags",
        access: Access::User,
        handler: api::flags::update,
    },
    Route {
        method: "GET",
        pattern: "/users/me/{stream_id}/topics",
        access: Access::User,
        handler: api::reading::get_topics,
    },
    Route {
        method: "GET",
        pattern: "/users/me/subscriptions",
        access: Access::User,
        handler: api::channels::get_subscriptions,
    },
    Route {
        method: "GET",
        pattern: "/streams",
        access: Access::User,
        handler: api::channels::get_streams,
    },
    // --- Personal settings, typing, invitations and the small per-user
    // --- resources (src/api/settings.rs and siblings).
    Route {
        method: "PATCH",
        pattern: "/settings",
        access: Access::User,
        handler: api::settings::update,
    },
    Route {
        method: "PATCH",
        pattern: "/settings/display",
        access: Access::User,
        handler: api::settings::update,
    },
    Route {
        method: "PATCH",
        pattern: "/settings/notifications",
        access: Access::User,
        handler: api::settings::update,
    },
    Route {
        method: "GET",
        pattern: "/confirm_email_change/{key}",
        access: Access::Public,
        handler: api::settings::confirm_email_change,
    },
    Route {
        method: "POST",
        pattern: "/fetch_api_key",
        access: Access::Public,
        handler: api::passwords::fetch_api_key,
    },
    Route {
        method: "POST",
        pattern: "/typing",
        access: Access::User,
        handler: api::typing::set_typing,
    },
    Route {
        method: "GET",
        pattern: "/users/me/alert_words",
        access: Access::User,
        handler: api::personal::get_alert_words,
    },
    Route {
        method: "POST",
        pattern: "/users/me/alert_words",
        access: Access::User,
        handler: api::personal::add_alert_words,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/alert_words",
        access: Access::User,
        handler: api::personal::remove_alert_words,
    },
    Route {
        method: "GET",
        pattern: "/drafts",
        access: Access::User,
        handler: api::personal::get_drafts,
    },
    Route {
        method: "POST",
        pattern: "/drafts",
        access: Access::User,
        handler: api::personal::create_drafts,
    },
    Route {
        method: "PATCH",
        pattern: "/drafts/{draft_id}",
        access: Access::User,
        handler: api::personal::edit_draft,
    },
    Route {
        method: "DELETE",
        pattern: "/drafts/{draft_id}",
        access: Access::User,
        handler: api::personal::delete_draft,
    },
    Route {
        method: "POST",
        pattern: "/users/me/status",
        access: Access::User,
        handler: api::personal::set_status,
    },
    Route {
        method: "GET",
        pattern: "/users/{user_id}/status",
        access: Access::User,
        handler: api::personal::get_status,
    },
    Route {
        method: "POST",
        pattern: "/users/me/muted_users/{muted_user_id}",
        access: Access::User,
        handler: api::personal::mute_user,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/muted_users/{muted_user_id}",
        access: Access::User,
        handler: api::personal::unmute_user,
    },
    Route {
        method: "POST",
        pattern: "/user_topics",
        access: Access::User,
        handler: api::personal::update_user_topic,
    },
    Route {
        method: "PATCH",
        pattern: "/users/me/subscriptions/muted_topics",
        access: Access::User,
        handler: api::personal::mute_topic_legacy,
    },
    Route {
        method: "GET",
        pattern: "/navigation_views",
        access: Access::User,
        handler: api::resources::get_navigation_views,
    },
    Route {
        method: "POST",
        pattern: "/navigation_views",
        access: Access::User,
        handler: api::resources::add_navigation_view,
    },
    Route {
        method: "PATCH",
        pattern: "/navigation_views/{fragment}",
        access: Access::User,
        handler: api::resources::update_navigation_view,
    },
    Route {
        method: "DELETE",
        pattern: "/navigation_views/{fragment}",
        access: Access::User,
        handler: api::resources::remove_navigation_view,
    },
    Route {
        method: "GET",
        pattern: "/saved_snippets",
        access: Access::User,
        handler: api::resources::get_saved_snippets,
    },
    Route {
        method: "POST",
        pattern: "/saved_snippets",
        access: Access::User,
        handler: api::resources::create_saved_snippet,
    },
    Route {
        method: "PATCH",
        pattern: "/saved_snippets/{saved_snippet_id}",
        access: Access::User,
        handler: api::resources::edit_saved_snippet,
    },
    Route {
        method: "DELETE",
        pattern: "/saved_snippets/{saved_snippet_id}",
        access: Access::User,
        handler: api::resources::delete_saved_snippet,
    },
    Route {
        method: "POST",
        pattern: "/realm/playgrounds",
        access: Access::User,
        handler: api::resources::add_playground,
    },
    Route {
        method: "DELETE",
        pattern: "/realm/playgrounds/{playground_id}",
        access: Access::User,
        handler: api::resources::remove_playground,
    },
    Route {
        method: "POST",
        pattern: "/users/me/apns_device_token",
        access: Access::User,
        handler: api::resources::add_apns_token,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/apns_device_token",
        access: Access::User,
        handler: api::resources::remove_apns_token,
    },
    Route {
        method: "POST",
        pattern: "/users/me/android_gcm_reg_id",
        access: Access::User,
        handler: api::resources::add_android_token,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/android_gcm_reg_id",
        access: Access::User,
        handler: api::resources::remove_android_token,
    },
    // --- channels, subscriptions, users, bots, groups ---
    Route {
        method: "POST",
        pattern: "/users/me/subscriptions",
        access: Access::User,
        handler: api::subscriptions::subscribe,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/subscriptions",
        access: Access::User,
        handler: api::subscriptions::unsubscribe,
    },
    Route {
        method: "POST",
        pattern: "/users/me/subscriptions/properties",
        access: Access::User,
        handler: api::subscriptions::update_properties,
    },
    Route {
        method: "GET",
        pattern: "/users/{user_id}/subscriptions/{stream_id}",
        access: Access::User,
        handler: api::subscriptions::status,
    },
    Route {
        method: "GET",
        pattern: "/streams/{stream_id}/members",
        access: Access::User,
        handler: api::subscriptions::members,
    },
    Route {
        method: "GET",
        pattern: "/streams/{stream_id}",
        access: Access::User,
        handler: api::streams::get_one,
    },
    Route {
        method: "PATCH",
        pattern: "/streams/{stream_id}",
        access: Access::User,
        handler: api::streams::update,
    },
    Route {
        method: "DELETE",
        pattern: "/streams/{stream_id}",
        access: Access::User,
        handler: api::streams::archive,
    },
    Route {
        method: "GET",
        pattern: "/streams/{stream_id}/email_address",
        access: Access::User,
        handler: api::channel_email::email_address,
    },
    Route {
        method: "GET",
        pattern: "/get_stream_id",
        access: Access::User,
        handler: api::streams::get_id,
    },
    Route {
        method: "PATCH",
        pattern: "/users/{user_id}",
        access: Access::User,
        handler: api::accounts::update_user,
    },
    Route {
        method: "DELETE",
        pattern: "/users/{user_id}",
        access: Access::User,
        handler: api::accounts::deactivate,
    },
    Route {
        method: "POST",
        pattern: "/users/{user_id}/reactivate",
        access: Access::User,
        handler: api::accounts::reactivate,
    },
    Route {
        method: "POST",
        pattern: "/users",
        access: Access::User,
        handler: api::accounts::create_user,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me",
        access: Access::User,
        handler: api::accounts::deactivate_me,
    },
    Route {
        method: "POST",
        pattern: "/users/me/api_key/regenerate",
        access: Access::User,
        handler: api::accounts::regenerate_my_key,
    },
    Route {
        method: "POST",
        pattern: "/bots",
        access: Access::User,
        handler: api::accounts::create_bot,
    },
    Route {
        method: "GET",
        pattern: "/bots",
        access: Access::User,
        handler: api::accounts::list_bots,
    },
    Route {
        method: "PATCH",
        pattern: "/bots/{bot_id}",
        access: Access::User,
        handler: api::accounts::update_bot,
    },
    Route {
        method: "DELETE",
        pattern: "/bots/{bot_id}",
        access: Access::User,
        handler: api::accounts::deactivate_bot,
    },
    Route {
        method: "POST",
        pattern: "/bots/{bot_id}/api_key/regenerate",
        access: Access::User,
        handler: api::accounts::regenerate_bot_key,
    },
    Route {
        method: "GET",
        pattern: "/bot_storage",
        access: Access::User,
        handler: api::bot_storage::get,
    },
    Route {
        method: "PUT",
        pattern: "/bot_storage",
        access: Access::User,
        handler: api::bot_storage::put,
    },
    Route {
        method: "DELETE",
        pattern: "/bot_storage",
        access: Access::User,
        handler: api::bot_storage::remove,
    },
    Route {
        method: "POST",
        pattern: "/streams/{stream_id}/delete_topic",
        access: Access::User,
        handler: api::streams::delete_topic,
    },
    Route {
        method: "PATCH",
        pattern: "/realm",
        access: Access::User,
        handler: api::realm_settings::update,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/user_settings_defaults",
        access: Access::User,
        handler: api::realm_settings::update_user_defaults,
    },
    Route {
        method: "GET",
        pattern: "/realm/domains",
        access: Access::User,
        handler: api::realm_domains::list,
    },
    Route {
        method: "POST",
        pattern: "/realm/domains",
        access: Access::User,
        handler: api::realm_domains::add,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/domains/{domain}",
        access: Access::User,
        handler: api::realm_domains::update,
    },
    Route {
        method: "DELETE",
        pattern: "/realm/domains/{domain}",
        access: Access::User,
        handler: api::realm_domains::remove,
    },
    Route {
        method: "GET",
        pattern: "/realm/linkifiers",
        access: Access::User,
        handler: api::linkifiers::list,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/linkifiers",
        access: Access::User,
        handler: api::linkifiers::reorder,
    },
    Route {
        method: "POST",
        pattern: "/realm/filters",
        access: Access::User,
        handler: api::linkifiers::add,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/filters/{filter_id}",
        access: Access::User,
        handler: api::linkifiers::update,
    },
    Route {
        method: "DELETE",
        pattern: "/realm/filters/{filter_id}",
        access: Access::User,
        handler: api::linkifiers::remove,
    },
    Route {
        method: "POST",
        pattern: "/default_streams",
        access: Access::User,
        handler: api::default_streams::add_default,
    },
    Route {
        method: "DELETE",
        pattern: "/default_streams",
        access: Access::User,
        handler: api::default_streams::remove_default,
    },
    Route {
        method: "POST",
        pattern: "/default_stream_groups/create",
        access: Access::User,
        handler: api::default_streams::create_group,
    },
    Route {
        method: "PATCH",
        pattern: "/default_stream_groups/{group_id}",
        access: Access::User,
        handler: api::default_streams::update_group,
    },
    Route {
        method: "PATCH",
        pattern: "/default_stream_groups/{group_id}/streams",
        access: Access::User,
        handler: api::default_streams::update_group_channels,
    },
    Route {
        method: "DELETE",
        pattern: "/default_stream_groups/{group_id}",
        access: Access::User,
        handler: api::default_streams::remove_group,
    },
    Route {
        method: "GET",
        pattern: "/realm/profile_fields",
        access: Access::User,
        handler: api::profile_fields::list,
    },
    Route {
        method: "POST",
        pattern: "/realm/profile_fields",
        access: Access::User,
        handler: api::profile_fields::create,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/profile_fields",
        access: Access::User,
        handler: api::profile_fields::reorder,
    },
    Route {
        method: "PATCH",
        pattern: "/realm/profile_fields/{field_id}",
        access: Access::User,
        handler: api::profile_fields::update,
    },
    Route {
        method: "DELETE",
        pattern: "/realm/profile_fields/{field_id}",
        access: Access::User,
        handler: api::profile_fields::delete,
    },
    Route {
        method: "GET",
        pattern: "/user_groups",
        access: Access::User,
        handler: api::groups::list,
    },
    Route {
        method: "POST",
        pattern: "/user_groups/create",
        access: Access::User,
        handler: api::groups::create,
    },
    Route {
        method: "PATCH",
        pattern: "/user_groups/{user_group_id}",
        access: Access::User,
        handler: api::groups::update,
    },
    Route {
        method: "POST",
        pattern: "/user_groups/{user_group_id}/members",
        access: Access::User,
        handler: api::groups::update_members,
    },
    Route {
        method: "GET",
        pattern: "/user_groups/{user_group_id}/members",
        access: Access::User,
        handler: api::groups::get_members,
    },
    Route {
        method: "GET",
        pattern: "/user_groups/{user_group_id}/members/{user_id}",
        access: Access::User,
        handler: api::groups::is_member,
    },
    Route {
        method: "POST",
        pattern: "/user_groups/{user_group_id}/subgroups",
        access: Access::User,
        handler: api::groups::update_subgroups,
    },
    Route {
        method: "GET",
        pattern: "/user_groups/{user_group_id}/subgroups",
        access: Access::User,
        handler: api::groups::get_subgroups,
    },
    Route {
        method: "POST",
        pattern: "/user_groups/{user_group_id}/deactivate",
        access: Access::User,
        handler: api::groups::deactivate,
    },
    // Messages: delete, reactions.
    Route {
        method: "DELETE",
        pattern: "/messages/{message_id}",
        access: Access::User,
        handler: api::messages::delete,
    },
    Route {
        method: "POST",
        pattern: "/messages/{message_id}/reactions",
        access: Access::User,
        handler: api::reactions::add,
    },
    Route {
        method: "DELETE",
        pattern: "/messages/{message_id}/reactions",
        access: Access::User,
        handler: api::reactions::remove,
    },
    // Read state in bulk and scheduled messages.
    Route {
        method: "POST",
        pattern: "/messages/flags/narrow",
        access: Access::User,
        handler: api::read_state::flags_narrow,
    },
    Route {
        method: "POST",
        pattern: "/mark_all_as_read",
        access: Access::User,
        handler: api::read_state::mark_all_as_read,
    },
    Route {
        method: "POST",
        pattern: "/mark_stream_as_read",
        access: Access::User,
        handler: api::read_state::mark_stream_as_read,
    },
    Route {
        method: "POST",
        pattern: "/mark_topic_as_read",
        access: Access::User,
        handler: api::read_state::mark_topic_as_read,
    },
    Route {
        method: "POST",
        pattern: "/scheduled_messages",
        access: Access::User,
        handler: api::scheduled::create,
    },
    Route {
        method: "GET",
        pattern: "/scheduled_messages",
        access: Access::User,
        handler: api::scheduled::list,
    },
    Route {
        method: "PATCH",
        pattern: "/scheduled_messages/{scheduled_message_id}",
        access: Access::User,
        handler: api::scheduled::edit,
    },
    Route {
        method: "DELETE",
        pattern: "/scheduled_messages/{scheduled_message_id}",
        access: Access::User,
        handler: api::scheduled::delete,
    },
    Route {
        method: "GET",
        pattern: "/reminders",
        access: Access::User,
        handler: api::reminders::list,
    },
    Route {
        method: "POST",
        pattern: "/reminders",
        access: Access::User,
        handler: api::reminders::create,
    },
    Route {
        method: "DELETE",
        pattern: "/reminders/{reminder_id}",
        access: Access::User,
        handler: api::reminders::delete,
    },
    // Messages: edit and move, history, delete, reactions.
    Route {
        method: "PATCH",
        pattern: "/messages/{message_id}",
        access: Access::User,
        handler: api::message_edit::update,
    },
    Route {
        method: "POST",
        pattern: "/messages/{message_id}/typing",
        access: Access::User,
        handler: api::typing::set_edit_typing,
    },
    Route {
        method: "GET",
        pattern: "/messages/{message_id}/read_receipts",
        access: Access::User,
        handler: api::read_state::read_receipts,
    },
    Route {
        method: "POST",
        pattern: "/messages/{message_id}/report",
        access: Access::User,
        handler: api::reports::report,
    },
    Route {
        method: "POST",
        pattern: "/submessage",
        access: Access::User,
        handler: api::submessages::add,
    },
    Route {
        method: "GET",
        pattern: "/messages/{message_id}/history",
        access: Access::User,
        handler: api::message_edit::history,
    },
    Route {
        method: "POST",
        pattern: "/invites",
        access: Access::User,
        handler: api::invites::send_invites,
    },
    Route {
        method: "GET",
        pattern: "/invites",
        access: Access::User,
        handler: api::invites::list_invites,
    },
    Route {
        method: "DELETE",
        pattern: "/invites/{invite_id}",
        access: Access::User,
        handler: api::invites::revoke_invite,
    },
    Route {
        method: "POST",
        pattern: "/invites/{invite_id}/resend",
        access: Access::User,
        handler: api::invites::resend_invite,
    },
    Route {
        method: "POST",
        pattern: "/invites/multiuse",
        access: Access::User,
        handler: api::invites::create_multiuse,
    },
    Route {
        method: "DELETE",
        pattern: "/invites/multiuse/{invite_id}",
        access: Access::User,
        handler: api::invites::revoke_multiuse,
    },
    Route {
        method: "GET",
        pattern: "/registration/{key}",
        access: Access::Public,
        handler: api::invites::show_registration,
    },
    Route {
        method: "POST",
        pattern: "/registration/{key}",
        access: Access::Public,
        handler: api::invites::register_invitee,
    },
    // --- a user's own custom profile field values ---
    Route {
        method: "PATCH",
        pattern: "/users/me/profile_data",
        access: Access::User,
        handler: api::profile_fields::update_own,
    },
    Route {
        method: "DELETE",
        pattern: "/users/me/profile_data",
        access: Access::User,
        handler: api::profile_fields::delete_own,
    },
];

/// The outcome of matching a request path.
pub enum Match {
    /// A route and its path arguments.
    Found(&'static Route, Vec<String>),
    /// The path exists, but not for this method.
    WrongMethod,
    /// No such path.
    NotFound,
}

/// Most segments a path may have (no route has more than a few).
const MAX_SEGMENTS: usize = 16;

/// A route with its pattern split once: `None` for a `{…}` segment.
struct Compiled {
    route: &'static Route,
    parts: Vec<Option<&'static str>>,
    literals: usize,
    /// How specific the pattern is: a literal segment beats a `{…}` one,
    /// the leftmost difference deciding (one bit per segment, the first
    /// segment highest).
    rank: u32,
}

/// The routing table, split into segments on first use, with the routes
/// grouped by first segment (`users`, `messages`…) and segment count: a
/// request looks only at its group (and at routes starting with a `{…}`,
/// if any) instead of every route, which was ≈ 3k instructions per
/// request. Matching then allocates nothing but the matched route's
/// arguments.
struct Table {
    routes: Vec<Compiled>,
    /// Indexes into `routes` by literal first segment and segment count,
    /// in table order.
    by_head: HashMap<(&'static str, usize), Vec<usize>, FxBuildHasher>,
    /// Indexes of routes whose first segment is `{…}` (or that have none).
    any_head: Vec<usize>,
    /// Indexes of the routes without `{…}` segments, by pattern, in table
    /// order: such a route is the best match for its own path, found with
    /// one hash of the path (the busiest routes — `/users/me`,
    /// `/messages`, `/events`, `/register` — are literal).
    literal: HashMap<&'static str, Vec<usize>, FxBuildHasher>,
}

fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let routes: Vec<Compiled> = ROUTES
            .iter()
            .map(|route| {
                let parts: Vec<Option<&'static str>> = route
                    .pattern
                    .split('/')
                    .map(|part| (!part.starts_with('{')).then_some(part))
                    .collect();
                let literals = parts.iter().filter(|p| p.is_some()).count();
                let rank = parts
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.is_some())
                    .map(|(i, _)| 1u32 << (MAX_SEGMENTS - 1 - i.min(MAX_SEGMENTS - 1)))
                    .sum();
                Compiled { route, parts, literals, rank }
            })
            .collect();
        let mut by_head: HashMap<(&'static str, usize), Vec<usize>, FxBuildHasher> =
            HashMap::default();
        let mut any_head = Vec::new();
        let mut literal: HashMap<&'static str, Vec<usize>, FxBuildHasher> = HashMap::default();
        for (i, c) in routes.iter().enumerate() {
            if c.literals == c.parts.len() {
                literal.entry(c.route.pattern).or_default().push(i);
            }
            // Patterns start with `/`: part 0 is empty, part 1 the head.
            match c.parts.get(1) {
                Some(Some(head)) => by_head.entry((*head, c.parts.len())).or_default().push(i),
                _ => any_head.push(i),
            }
        }
        Table { routes, by_head, any_head, literal }
    })
}

/// Whether `<method> <path>` (after `/api/v1`, no trailing `/`) is an
/// upload route, whose multipart body streams to a file (`conn::Spool`):
/// `POST` of a file, avatar or emoji, and `PATCH /bots/{bot_id}` (a
/// bot's new avatar).
pub fn is_upload(method: &str, path: &str) -> bool {
    let one_segment = |rest: &str| !rest.is_empty() && !rest.contains('/');
    match method {
        "POST" => {
            path == "/user_uploads"
                || path == "/users/me/avatar"
                || path.strip_prefix("/realm/emoji/").is_some_and(one_segment)
        }
        "PATCH" => path.strip_prefix("/bots/").is_some_and(one_segment),
        _ => false,
    }
}

/// Finds the route for `method` and `path` (the part after `/api/v1`).
/// Literal segments win over `{…}` segments (`/users/me` before `/users/{id}`).
pub fn find(method: &str, path: &str) -> Match {
    let table = table();
    let trimmed = path.trim_end_matches('/');
    if let Some(same_path) = table.literal.get(trimmed) {
        // A path some pattern spells out is that pattern's, whatever the
        // method: `POST /messages/render` is never `/messages/{id}`, and
        // `GET /messages/render` is a 405, not a message id "render".
        let route = same_path.iter().map(|&i| table.routes[i].route).find(|r| r.method == method);
        return match route {
            Some(route) => Match::Found(route, Vec::new()),
            None => Match::WrongMethod,
        };
    }
    let mut buf = [""; MAX_SEGMENTS];
    let mut n = 0;
    for segment in trimmed.split('/') {
        if n == MAX_SEGMENTS {
            return Match::NotFound;
        }
        buf[n] = segment;
        n += 1;
    }
    let segments = &buf[..n];
    let group = segments.get(1).and_then(|head| table.by_head.get(&(*head, segments.len())));
    let group = group.map_or(&[][..], Vec::as_slice);
    // Both lists in table order, merged: ties go to the earlier route,
    // as when every route was tried in order.
    let (mut a, mut b) = (group.iter().peekable(), table.any_head.iter().peekable());
    let candidates = std::iter::from_fn(|| match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x < y => a.next(),
        (Some(_), Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    });
    // The most specific pattern matching the path owns it (`rank`): a
    // method it lacks is a 405 even where a vaguer pattern has that method.
    let mut best: Option<&Compiled> = None;
    let mut owner_rank: Option<u32> = None;
    for &i in candidates {
        let c = &table.routes[i];
        if !matches(c, segments) {
            continue;
        }
        owner_rank = owner_rank.max(Some(c.rank));
        if c.route.method != method {
            continue;
        }
        if best.is_none_or(|b| c.rank > b.rank) {
            best = Some(c);
        }
    }
    match (best, owner_rank) {
        (Some(c), Some(owner)) if c.rank == owner => Match::Found(c.route, arguments(c, segments)),
        (_, Some(_)) => Match::WrongMethod,
        (_, None) => Match::NotFound,
    }
}

/// The methods `path` (after `/api/v1`) answers, for `OPTIONS`'s
/// `Allow`; empty when no route has the path.
pub fn methods(path: &str) -> Vec<&'static str> {
    ["GET", "POST", "PUT", "PATCH", "DELETE"]
        .into_iter()
        .filter(|&m| matches!(find(m, path), Match::Found(..)))
        .collect()
}

/// Whether the split pattern matches: literals equal, every `{…}` segment
/// non-empty and valid percent-encoded UTF-8.
/// Literals are compared first (cheap, and they rule out most candidates);
/// a segment without `%` is already valid UTF-8.
fn matches(c: &Compiled, segments: &[&str]) -> bool {
    c.parts.len() == segments.len()
        && c.parts.iter().zip(segments).all(|(part, segment)| match part {
            Some(literal) => literal == segment,
            None => !segment.is_empty(),
        })
        && c.parts.iter().zip(segments).all(|(part, segment)| {
            part.is_some()
                || !segment.contains('%')
                || percent_encoding::percent_decode_str(segment).decode_utf8().is_ok()
        })
}

/// The decoded `{…}` segments of a matched route, in order.
fn arguments(c: &Compiled, segments: &[&str]) -> Vec<String> {
    c.parts
        .iter()
        .zip(segments)
        .filter(|(part, _)| part.is_none())
        .map(|(_, segment)| {
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .map(|s| s.into_owned())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_segments_win_and_methods_are_checked() {
        match find("GET", "/users/me") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/users/me");
                assert!(args.is_empty());
            }
            _ => panic!("no match"),
        }
        match find("GET", "/users/12") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/users/{user_id}");
                assert_eq!(args, vec!["12".to_owned()]);
            }
            _ => panic!("no match"),
        }
        assert!(matches!(find("DELETE", "/server_settings"), Match::WrongMethod));
        assert!(matches!(find("GET", "/nope"), Match::NotFound));
    }

    /// A literal segment owns its path for every method: the vaguer
    /// `{…}` pattern never answers there, and the literal one's missing
    /// methods are 405s.
    #[test]
    fn a_literal_path_is_never_a_placeholder() {
        match find("POST", "/messages/render") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/messages/render");
                assert!(args.is_empty());
            }
            _ => panic!("no match"),
        }
        assert!(matches!(find("GET", "/messages/render"), Match::WrongMethod));
        assert!(matches!(find("PATCH", "/messages/flags"), Match::WrongMethod));
        assert!(matches!(find("PATCH", "/users/me"), Match::WrongMethod));
        match find("PATCH", "/messages/12") {
            Match::Found(route, args) => {
                assert_eq!((route.pattern, args), ("/messages/{message_id}", vec!["12".into()]))
            }
            _ => panic!("no match"),
        }
    }

    #[test]
    fn arguments_are_percent_decoded_and_odd_paths_do_not_match() {
        match find("GET", "/users/a%40b.test/") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/users/{user_id}");
                assert_eq!(args, vec!["a@b.test".to_owned()]);
            }
            _ => panic!("no match"),
        }
        // Not UTF-8 once decoded, empty, or far too deep: no route.
        assert!(matches!(find("GET", "/users/%FF"), Match::NotFound));
        assert!(matches!(find("GET", "/users//subscriptions/1"), Match::NotFound));
        assert!(matches!(find("GET", &"/users".repeat(40)), Match::NotFound));
    }

    /// The grouped lookup gives what trying every route in order gave, for
    /// every route's own path (placeholders filled) under every method.
    #[test]
    fn grouped_lookup_equals_a_scan_of_every_route() {
        fn scan(method: &str, path: &str) -> Option<(&'static str, &'static str)> {
            let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
            let matching: Vec<&Compiled> =
                table().routes.iter().filter(|c| matches(c, &segments)).collect();
            let owner = matching.iter().map(|c| c.rank).max()?;
            let best = matching.iter().find(|c| c.rank == owner && c.route.method == method)?;
            Some((best.route.method, best.route.pattern))
        }
        let odd = ["/users/me/", "/users", "/users/7/8/9/10", "/", "", "/messages/7/x/y"];
        for path in odd {
            for method in ["GET", "POST", "PATCH", "PUT", "DELETE"] {
                let found = match find(method, path) {
                    Match::Found(r, _) => Some((r.method, r.pattern)),
                    _ => None,
                };
                assert_eq!(found, scan(method, path), "{method} {path}");
            }
        }
        for route in ROUTES {
            let path: String = route
                .pattern
                .split('/')
                .map(|p| if p.starts_with('{') { "7" } else { p })
                .collect::<Vec<_>>()
                .join("/");
            for method in ["GET", "POST", "PATCH", "PUT", "DELETE"] {
                let found = match find(method, &path) {
                    Match::Found(r, _) => Some((r.method, r.pattern)),
                    _ => None,
                };
                assert_eq!(found, scan(method, &path), "{method} {path}");
            }
        }
    }
}
