//! `POST /register`: create an event queue and return the current state of
//! the data the client asked for.
//!
//! The reply is built from sections, each present only when its name is in
//! `fetch_event_types` (which defaults to `event_types`; when both are
//! absent, every section is fetched). Sections of this file read
//! `RegisterOptions` (`SECTIONS`); other areas plug in with the shared
//! signature `RegisterState` (`PLUGINS`, run after, so they may replace an
//! empty default here).
//!
//! Race-free: the queue is created and the state read in one consistent
//! cut (`Committer::read_consistent`): the queue skips the events of every
//! mutation the cut already contains and receives every later one, so no
//! event is missed or applied twice.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::realm::{realm_url, FEATURE_LEVEL, VERSION};
use super::{channels, reading, App, Call, RawFields, Reply};
use crate::error::{ApiError, ApiResult};
use crate::events::queue::subscriber_lists;
use crate::events::queue::{Capabilities, IncludeSubscribers, QueueError, QueueOptions};
use crate::narrow::Narrow;
use crate::state::access::administers;
use crate::state::access::{spectator, web_public_access_enabled};
use crate::state::{Group, Realm, RealmId, State, User};
use crate::view::bots::bot_json;
use crate::view::channel::Subscribers;
use crate::view::groups::group_json_among;
use crate::view::user::UserOptions;
use crate::view::user_lists;

/// A section another area contributes: inserts its fields into `out` when
/// `wants("<fetch type>")`.
pub type RegisterState = fn(&App, &User, &dyn Fn(&str) -> bool, &mut Reply);

/// Sections of other areas, run after this file's own.
pub const PLUGINS: &[RegisterState] = &[
    super::profile_fields::register_state,
    super::streams::register_state,
    super::default_streams::register_state,
    super::realm_settings::register_state,
    super::realm_domains::register_state,
    super::scheduled::register_state,
    super::reminders::register_state,
    super::reports::register_state,
    register_state,
];

/// Longest channel name in characters (`max_stream_name_length`).
pub const MAX_STREAM_NAME_LENGTH: usize = 60;
/// Longest channel description in characters.
pub const MAX_STREAM_DESCRIPTION_LENGTH: usize = 1024;

/// The decoded parameters of one register call.
#[derive(Clone, Debug)]
pub struct RegisterOptions {
    /// What the queue delivers and how.
    pub queue: QueueOptions,
    /// Sections to fetch; `None` = all.
    pub fetch: Option<BTreeSet<String>>,
    /// Presence keyed by user id, modern form.
    pub slim_presence: bool,
    /// Only presences of users seen within this many days.
    pub presence_history_limit_days: Option<i64>,
}

impl RegisterOptions {
    /// Whether a section is fetched.
    pub fn wants(&self, name: &str) -> bool {
        self.fetch.as_ref().is_none_or(|f| f.contains(name))
    }
}

/// What a section sees.
pub struct Ctx<'a> {
    /// The application.
    pub app: &'a App,
    /// The consistent cut being read.
    pub state: &'a State,
    /// The caller's realm.
    pub realm: &'a Realm,
    /// The caller.
    pub user: &'a User,
    /// The register parameters.
    pub options: &'a RegisterOptions,
}

type Section = fn(&Ctx, &mut Reply);

/// This file's sections: (fetch type, builder).
const SECTIONS: &[(&str, Section)] = &[
    ("realm", realm_section),
    // `realm_user`, `presence` and `realm_user_groups` read the realm's
    // accounts: they are finished after the lock, from the cut, in
    // `register`.
    ("recent_private_conversations", recent_private_conversations_section),
    // Resources natter has no storage for yet: truly empty until their
    // endpoints exist (their areas replace these through PLUGINS).
    ("realm_emoji", |ctx, out| {
        insert(out, "realm_emoji", crate::view::files::realm_emoji(ctx.state, ctx.realm.id))
    }),
    ("custom_profile_fields", |_, out| {
        insert(out, "custom_profile_fields", json!([]));
        insert(out, "custom_profile_field_types", json!({}));
    }),
    ("alert_words", |_, out| insert(out, "alert_words", json!([]))),
    ("drafts", |_, out| insert(out, "drafts", json!([]))),
    ("navigation_views", |_, out| insert(out, "navigation_views", json!([]))),
    ("saved_snippets", |_, out| insert(out, "saved_snippets", json!([]))),
    ("realm_playgrounds", |_, out| insert(out, "realm_playgrounds", json!([]))),
    ("muted_topics", |_, out| insert(out, "muted_topics", json!([]))),
    ("user_topic", |_, out| insert(out, "user_topics", json!([]))),
    ("muted_users", |_, out| insert(out, "muted_users", json!([]))),
    ("realm_linkifiers", |ctx, out| {
        let capable = ctx.options.queue.capabilities.linkifier_url_template;
        let list = super::linkifiers::register_section(ctx.state, ctx.realm.id, capable);
        insert(out, "realm_linkifiers", list);
    }),
    ("realm_filters", |_, out| insert(out, "realm_filters", json!([]))),
];

fn insert(out: &mut Reply, key: &str, value: Value) {
    out.insert(key.to_owned(), value);
}

/// `POST /register`.
pub fn register(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let Some(user) = call.caller.clone() else {
        return spectator_register(app, call);
    };
    let options = parse_options(app, call, &user)?;
    let realm = call.realm.clone();
    let (mut out, pending, groups) = app.committer.read_consistent(|state, seq| {
        let queues = &app.hub.realtime().queues;
        let queue_id = queues.create(user.id, user.realm, options.queue.clone(), seq).map_err(
            |e| match e {
                QueueError::TooManyQueues(n) => ApiError::bad_request(format!(
                    "Too many event queues for this user (at most {n}); delete unused ones \
                     with DELETE /events"
                )),
                QueueError::BadQueue => ApiError::internal(),
            },
        )?;
        let mut out = Reply::new();
        out.insert("queue_id".into(), json!(queue_id));
        // Ids of committed events derive from their seq (`events::queue`).
        let last_event_id = crate::events::queue::first_id(seq) - 1;
        out.insert("last_event_id".into(), json!(last_event_id));
        out.insert("zulip_feature_level".into(), json!(FEATURE_LEVEL));
        out.insert("zulip_version".into(), json!(VERSION));
        out.insert("zulip_merge_base".into(), json!(VERSION));
        // The realm's accounts as of this cut, shared with every other
        // register at the same users generation (`user_lists`): cached,
        // or frozen here (pointer copies) and copied out after the lock.
        let pending = app.hub.realtime().user_lists.pending(state, realm.id);
        let ctx = Ctx { app, state, realm: &realm, user: &user, options: &options };
        for (name, section) in SECTIONS {
            if options.wants(name) {
                section(&ctx, &mut out);
            }
        }
        // The groups as of the cut; the members of system groups follow
        // from the accounts' roles, read from the cut after the lock.
        let with_deactivated = options.queue.capabilities.include_deactivated_groups;
        let groups = options
            .wants("realm_user_groups")
            .then(|| realm_groups(state, realm.id, with_deactivated));
        let wants = |name: &str| options.wants(name);
        // The reading area's sections, with this register's options:
        // max_message_id, unread_msgs, starred_messages; subscriptions.
        let empty_topic_name = options.queue.capabilities.empty_topic_name;
        reading::register_state_with(state, &user, empty_topic_name, &wants, &mut out);
        let subscribers = subscriber_lists(options.queue.include_subscribers);
        let archived = options.queue.capabilities.archived_channels;
        channels::register_state_full(state, &user, subscribers, archived, &wants, &mut out);
        // The settings area's sections: user_settings (and the legacy
        // top-level settings for clients without user_settings_object),
        // alert words, drafts, status, mutes, topics, views, snippets,
        // playgrounds.
        let modern_settings = options.queue.capabilities.user_settings_object;
        super::settings::settings_sections(state, &user, &wants, modern_settings, &mut out);
        super::personal::register_sections(state, &user, &wants, &mut out);
        for plugin in PLUGINS {
            plugin(app, &user, &wants, &mut out);
        }
        Ok((out, pending, groups))
    })?;
    let cut = pending.finish(&app.hub.realtime().user_lists);
    if options.wants("presence") {
        presence_section(app, &cut.users, &options, &mut out);
    }
    if let Some(groups) = groups {
        user_groups_section(&groups, &cut.users, &mut out);
    }
    // The users' JSON is the biggest part of the reply: it comes after the
    // writer lock is released, from the cut taken under it (immutable, so
    // the events after the cut still apply exactly once; the argument is in
    // `user_lists`), and is written once per viewer class, not per register.
    if options.wants("realm_user") {
        realm_user_section(&app.state, &cut, &user, &options, &mut out, &mut call.raw_fields);
    }
    Ok(out)
}

/// `POST /register` without credentials: a logged-out spectator, in a
/// realm with public access (`enable_spectator_access`), as Zulip allows.
/// No queue is made (`queue_id` null), and only what anyone on the web may
/// see is returned: the realm's settings, its users' public fields (no real
/// addresses, no profile data), and its web-public channels; the personal
/// sections (settings, drafts, read state, mutes…) are left out.
fn spectator_register(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let realm = call.realm.clone();
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    if !realm.settings.enable_spectator_access {
        return Err(ApiError::unauthorized(
            "Not logged in: API authentication or user session required",
        ));
    }
    // The avatar and subscriber options default to what a spectator may
    // have; asking for more is an error, as in Zulip.
    let anonymous_error = |key: &str| {
        ApiError::bad_request(format!("Invalid '{key}' parameter for anonymous request"))
    };
    if call.params.bool("client_gravatar")? == Some(true) {
        return Err(anonymous_error("client_gravatar"));
    }
    let viewer = spectator(&realm);
    let mut options = parse_options(app, call, &viewer)?;
    if !matches!(options.queue.include_subscribers, IncludeSubscribers::No) {
        return Err(anonymous_error("include_subscribers"));
    }
    options.queue.client_gravatar = false;
    let state = &*app.state;
    let mut out = Reply::new();
    out.insert("queue_id".into(), Value::Null);
    out.insert("last_event_id".into(), json!(-1));
    out.insert("zulip_feature_level".into(), json!(FEATURE_LEVEL));
    out.insert("zulip_version".into(), json!(VERSION));
    out.insert("zulip_merge_base".into(), json!(VERSION));
    // Taken under the writer lock (the only place cuts are taken), copied
    // out after it (`user_lists`).
    let lists = &app.hub.realtime().user_lists;
    let cut =
        app.committer.read_consistent(|state, _| lists.pending(state, realm.id)).finish(lists);
    let ctx = Ctx { app, state, realm: &realm, user: &viewer, options: &options };
    if options.wants("realm") {
        realm_section(&ctx, &mut out);
    }
    if options.wants("realm_user") {
        let public = UserOptions { client_gravatar: false, include_custom_profile_fields: false };
        let (active, inactive) = cut.realm_users(None, public);
        call.raw_fields.push(("realm_users".into(), active));
        call.raw_fields.push(("realm_non_active_users".into(), inactive));
        insert(&mut out, "cross_realm_bots", cross_realm_bots(state, &viewer, false));
    }
    if options.wants("subscription") {
        let web_public: Vec<Value> = state
            .channels
            .collect_sorted(|_, c| c.realm == realm.id && c.is_web_public && !c.is_archived)
            .into_iter()
            .map(|(_, c)| crate::view::channel::stream(state, &viewer, &c, Subscribers::Omit))
            .collect();
        insert(&mut out, "subscriptions", json!([]));
        insert(&mut out, "unsubscribed", json!([]));
        insert(&mut out, "never_subscribed", Value::Array(web_public));
    }
    // No account: no messages of its own, nothing unread or starred.
    let wants = |name: &str| options.wants(name);
    let empty_topic_name = options.queue.capabilities.empty_topic_name;
    reading::register_state_with(state, &viewer, empty_topic_name, &wants, &mut out);
    if options.wants("presence") {
        insert(&mut out, "presences", json!({}));
        insert(&mut out, "presence_last_update_id", json!(-1));
        insert(&mut out, "server_timestamp", json!(crate::entropy::now()));
    }
    Ok(out)
}

/// Decodes and checks every register parameter (before anything exists).
fn parse_options(app: &App, call: &mut Call, viewer: &User) -> ApiResult<RegisterOptions> {
    let call_state = std::sync::Arc::clone(&app.state);
    let p = &mut call.params;
    let apply_markdown = p.bool_or("apply_markdown", false)?;
    let client_gravatar = p.bool_or("client_gravatar", true)?;
    let slim_presence = p.bool_or("slim_presence", false)?;
    let all_public_streams = p.bool_or("all_public_streams", false)?;
    let include_subscribers = match p.json_or_string("include_subscribers")? {
        None | Some(Value::Bool(false)) => IncludeSubscribers::No,
        Some(Value::Bool(true)) => IncludeSubscribers::Yes,
        Some(Value::String(s)) => match s.as_str() {
            "false" | "False" => IncludeSubscribers::No,
            "true" | "True" => IncludeSubscribers::Yes,
            "partial" => IncludeSubscribers::Partial,
            _ => return Err(invalid_subscribers()),
        },
        Some(_) => return Err(invalid_subscribers()),
    };
    let presence_history_limit_days = match p.int("presence_history_limit_days")? {
        Some(d) if d < 0 => {
            return Err(ApiError::invalid("presence_history_limit_days", "must not be negative"))
        }
        other => other,
    };
    let event_types = string_set(p.json("event_types")?, "event_types")?;
    let fetch = match p.raw("fetch_event_types") {
        Some(_) => string_set(p.json("fetch_event_types")?, "fetch_event_types")?,
        None => event_types.clone(),
    };
    let mut capabilities = Capabilities::default();
    if let Some(value) = p.json("client_capabilities")? {
        let Value::Object(map) = value else {
            return Err(ApiError::invalid("client_capabilities", "not a dict"));
        };
        for (name, value) in map {
            let Value::Bool(on) = value else {
                return Err(ApiError::invalid(
                    "client_capabilities",
                    &format!("{name} is not a boolean"),
                ));
            };
            // Unknown capabilities (from newer clients) are ignored.
            capabilities.set(&name, on);
        }
    }
    let narrow = match p.json("narrow")? {
        None | Some(Value::Null) => json!([]),
        Some(value) => value,
    };
    let narrow_filter = Narrow::parse(&call_state, viewer, &narrow)?;
    Ok(RegisterOptions {
        queue: QueueOptions {
            event_types,
            narrow,
            all_public_streams,
            apply_markdown,
            client_gravatar,
            capabilities,
            include_subscribers,
            narrow_filter,
        },
        fetch,
        slim_presence,
        presence_history_limit_days,
    })
}

fn invalid_subscribers() -> ApiError {
    ApiError::invalid("include_subscribers", "must be true, false or \"partial\"")
}

/// A JSON list of strings (or null) as a set.
fn string_set(value: Option<Value>, name: &str) -> ApiResult<Option<BTreeSet<String>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(ApiError::invalid(name, "not a list of strings")),
            })
            .collect::<ApiResult<BTreeSet<String>>>()
            .map(Some),
        Some(_) => Err(ApiError::invalid(name, "not a list of strings")),
    }
}

/// `realm`: organization settings and server limits.
fn realm_section(ctx: &Ctx, out: &mut Reply) {
    let realm = ctx.realm;
    let s = &realm.settings;
    let features = ctx.state.features.of(realm.id);
    let url = realm_url(ctx.app, realm);
    let fields = json!({
        "realm_url": url,
        "realm_uri": url,
        "realm_date_created": realm.date_created,
        "realm_icon_url": format!("https://secure.gravatar.com/avatar/{}?d=identicon", realm.id),
        "realm_icon_source": "G",
        "realm_logo_url": "",
        "realm_logo_source": "D",
        "realm_night_logo_url": "",
        "realm_night_logo_source": "D",
        "realm_empty_topic_display_name": s.empty_topic_display_name,
        "realm_email_address_visibility": match s.email_address_visibility {
            crate::state::EmailVisibility::Everyone => 1,
            crate::state::EmailVisibility::Members => 2,
            crate::state::EmailVisibility::Admins => 3,
            crate::state::EmailVisibility::Nobody => 4,
            crate::state::EmailVisibility::Moderators => 5,
        },
    });
    let more = json!({
        "realm_is_zephyr_mirror_realm": false,
        "realm_web_public_access_enabled": web_public_access_enabled(ctx.state, realm),
        "realm_presence_disabled": false,
        "realm_mandatory_topics": false,
        "realm_inline_image_preview": true,
        "realm_inline_url_embed_preview": false,
        "realm_push_notifications_enabled": false,
        "realm_default_language": "en",
        "realm_default_code_block_language": "",
        "realm_waiting_period_threshold": 0,
        "realm_digest_emails_enabled": false,
        "realm_send_welcome_emails": false,
        "realm_invite_required": true,
        "realm_emails_restricted_to_domains": false,
        "realm_name_changes_disabled": false,
        "realm_email_changes_disabled": false,
        "realm_video_chat_provider": 0,
        "realm_available_video_chat_providers": {},
        "realm_org_type": 0,
        "realm_plan_type": 1,
        "realm_upload_quota_mib": ctx.app.config.uploads.realm_quota.map(|bytes| bytes >> 20),
        "realm_authentication_methods": {},
        "realm_bot_domain": ctx.app.external_host(),
        // Deprecated by Zulip (`can_mention_many_users_group` replaced it)
        // but still sent, and required by the mobile app: the old policy
        // the realm's group setting corresponds to.
        "realm_wildcard_mention_policy": crate::view::realm::wildcard_mention_policy(realm),
        "realm_enable_read_receipts": features.enable_read_receipts,
        "realm_moderation_request_channel_id":
            crate::view::realm::moderation_channel_value(&features),
        "realm_default_external_accounts": crate::view::profile::default_external_accounts(),
        "server_emoji_data_url": format!("{url}{}", crate::view::emoji::EMOJI_DATA_PATH),
        "realm_new_stream_announcements_stream_id": -1,
        "realm_signup_announcements_stream_id": -1,
        "realm_zulip_update_announcements_stream_id": -1,
    });
    let limits = json!({
        "max_message_length": super::messages::MAX_MESSAGE_LENGTH,
        "max_topic_length": super::messages::MAX_TOPIC_LENGTH,
        "max_stream_name_length": MAX_STREAM_NAME_LENGTH,
        "max_stream_description_length": MAX_STREAM_DESCRIPTION_LENGTH,
        "max_file_upload_size_mib": ctx.app.config.uploads.max_file_mib,
        "max_avatar_file_size_mib": super::avatars::MAX_AVATAR_FILE_MIB,
        "max_icon_file_size_mib": 5,
        "max_logo_file_size_mib": 5,
        "server_typing_started_wait_period_milliseconds": 10_000,
        "server_typing_stopped_wait_period_milliseconds": 5_000,
        "server_typing_started_expiry_period_milliseconds": 15_000,
        "server_presence_ping_interval_seconds": 60,
        "server_presence_offline_threshold_seconds":
            crate::events::presence::OFFLINE_THRESHOLD_SECS,
        "server_needs_upgrade": false,
        "event_queue_longpoll_timeout_seconds": 90,
    });
    for part in [fields, more, limits] {
        if let Value::Object(map) = part {
            out.extend(map);
        }
    }
    // The settings `PATCH /realm` changes (the table its events come from).
    for (property, value, _) in crate::view::realm::settings(realm) {
        out.insert(format!("realm_{property}"), value);
    }
    let files = ctx.state.files.realm_settings(realm.id);
    for (property, value, _) in crate::view::files::settings(realm, &files) {
        out.insert(format!("realm_{property}"), value);
    }
}

/// `realm_user`: every account of the realm, and the caller's own fields.
/// The two user lists are JSON text from the realm's cached cut
/// (`user_lists`), never built as `Value` maps.
fn realm_user_section(
    state: &State,
    cut: &user_lists::Cut,
    me: &User,
    options: &RegisterOptions,
    out: &mut Reply,
    raw: &mut RawFields,
) {
    // The caller as of the cut (the session's copy may be older).
    let me = cut.account(me.id).unwrap_or(me);
    let list_options = UserOptions {
        client_gravatar: options.queue.client_gravatar,
        include_custom_profile_fields: true,
    };
    let (active, inactive) = cut.realm_users(Some(me), list_options);
    raw.push(("realm_users".into(), active));
    raw.push(("realm_non_active_users".into(), inactive));
    let fields = json!({
        "cross_realm_bots": cross_realm_bots(state, me, options.queue.client_gravatar),
        "user_id": me.id.0,
        "email": cut.api_email(me),
        "delivery_email": me.delivery_email,
        "full_name": me.full_name,
        "avatar_source": crate::view::user::avatar_source(state, me),
        "avatar_url": crate::view::user::avatar_url(state, me, false),
        "avatar_url_medium": crate::view::user::avatar_url_medium(state, me),
        "is_admin": me.role.is_admin(),
        "is_owner": me.role == crate::state::Role::Owner,
        "is_moderator": me.role <= crate::state::Role::Moderator,
        "is_guest": me.role == crate::state::Role::Guest,
        "is_billing_admin": false,
        "user_role": me.role.code(),
    });
    if let Value::Object(map) = fields {
        out.extend(map);
    }
}

/// `presence`: the realm's presences, legacy (email-keyed) or slim.
fn presence_section(app: &App, users: &[User], options: &RegisterOptions, out: &mut Reply) {
    let now = crate::entropy::now();
    let days = options.presence_history_limit_days.unwrap_or(14);
    let since = now.saturating_sub(days.saturating_mul(86_400));
    let presence = &app.hub.realtime().presence;
    insert(out, "presences", presence.render(users, since, 0, options.slim_presence));
    insert(out, "presence_last_update_id", json!(presence.last_update_id()));
    insert(out, "server_timestamp", json!(now));
}

/// `recent_private_conversations`: the caller's direct conversations,
/// newest first, with the other participants.
fn recent_private_conversations_section(ctx: &Ctx, out: &mut Reply) {
    let me = ctx.user.id;
    let state = ctx.state;
    let mut conversations: Vec<(u64, Vec<u64>)> = state
        .direct_recipients
        .collect_sorted(|participants, _| participants.contains(&me))
        .into_iter()
        .filter_map(|(participants, recipient)| {
            let max = state.recipient_last(recipient)?;
            let others: Vec<u64> = participants.iter().filter(|u| **u != me).map(|u| u.0).collect();
            Some((max.0, others))
        })
        .collect();
    conversations.sort_by_key(|c| std::cmp::Reverse(c.0));
    conversations.truncate(1000);
    let list: Vec<Value> = conversations
        .into_iter()
        .map(|(max, users)| json!({ "max_message_id": max, "user_ids": users }))
        .collect();
    insert(out, "recent_private_conversations", Value::Array(list));
}

/// The realm's groups (deactivated ones only with `with_deactivated`),
/// read under the writer lock for `user_groups_section`.
fn realm_groups(state: &State, realm: RealmId, with_deactivated: bool) -> Vec<Group> {
    state
        .groups
        .collect_sorted(|_, g| g.realm == realm && (with_deactivated || !g.deactivated))
        .into_iter()
        .map(|(_, g)| g)
        .collect()
}

/// `realm_user_groups`: every group of the realm, system groups included,
/// with members (system groups' members follow from the roles of `users`,
/// the realm's accounts as of the same cut).
fn user_groups_section(groups: &[Group], users: &[User], out: &mut Reply) {
    let groups = groups.iter().map(|g| group_json_among(g, users)).collect();
    insert(out, "realm_user_groups", Value::Array(groups));
}

/// `cross_realm_bots`: the realm's system bots (Notification Bot, Welcome
/// Bot) as `viewer` sees them, with `is_system_bot`.
fn cross_realm_bots(state: &State, viewer: &User, client_gravatar: bool) -> Value {
    let bots = state.system_bots(viewer.realm);
    Value::Array(
        bots.iter()
            .map(|b| crate::view::user::system_bot(state, viewer, b, client_gravatar))
            .collect(),
    )
}

/// The `realm_bots` register section: the bots `user` administers.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if !wants("realm_bot") {
        return;
    }
    // Filtered before cloning: a big realm has few bots.
    let bots: Vec<Value> = app
        .state
        .users
        .collect_sorted(|_, b| {
            b.realm == user.realm && b.is_bot() && !b.is_system_bot() && administers(user, b)
        })
        .iter()
        .map(|(_, bot)| bot_json(&app.state, bot))
        .collect();
    out.insert("realm_bots".into(), Value::Array(bots));
}
