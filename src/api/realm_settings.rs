//! `PATCH /realm` and `PATCH /realm/user_settings_defaults`.
//!
//! `PATCH /realm`: the organization's name, description and the settings
//! natter implements (`RealmSettings`; `enable_read_receipts` and
//! `moderation_request_channel_id`, kept in `state::features`; and the
//! file settings kept with the files' records: `avatar_changes_disabled`,
//! `can_add_custom_emoji_group`), for administrators; the message
//! retention and who may create web-public channels for owners only, as
//! in Zulip. Each changed property reaches every member as Zulip's `realm`
//! `update` (or, for a group setting, `update_dict`) event
//! (`view::realm`), and the reply names what changed. A change of
//! `can_mention_many_users_group` also announces the deprecated
//! `wildcard_mention_policy` it replaced, as Zulip does.
//!
//! `PATCH /realm/user_settings_defaults`: the settings new accounts start
//! with (every personal setting but `default_language`, which the realm's
//! language decides in Zulip), for administrators; register's
//! `realm_user_settings_defaults` and its `update` events.

use serde_json::Value;

use super::group_setting;
use super::subscriptions::parse_topics_policy;
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::{Mutation, RealmUpdate};
use crate::state::access::can_see_channel;
use crate::state::features::{FeatureChange, RealmFeatures};
use crate::state::files::RealmFileSettings;
use crate::state::organization::OrgChange;
use crate::state::settings::SETTINGS;
use crate::state::{ChannelId, GroupSetting, Realm, Role, State, SystemGroup, TopicsPolicy};

/// Longest organization name, in characters (Zulip's).
pub const MAX_REALM_NAME_LENGTH: usize = 40;
/// Longest organization description, in characters (Zulip's).
pub const MAX_REALM_DESCRIPTION_LENGTH: usize = 1000;

/// The group settings of the realm, by their Zulip names; whether only
/// owners may change them.
const GROUP_SETTINGS: [(&str, bool); 9] = [
    ("can_mention_many_users_group", false),
    ("direct_message_permission_group", false),
    ("can_delete_any_message_group", false),
    ("can_delete_own_message_group", false),
    ("can_move_messages_between_topics_group", false),
    ("can_move_messages_between_channels_group", false),
    ("can_create_public_channel_group", false),
    ("can_create_private_channel_group", false),
    ("can_create_web_public_channel_group", true),
];

/// The slot of a group setting in the settings.
fn slot<'s>(s: &'s mut crate::state::RealmSettings, name: &str) -> &'s mut Option<GroupSetting> {
    match name {
        "can_mention_many_users_group" => &mut s.can_mention_many_users_group,
        "direct_message_permission_group" => &mut s.direct_message_permission_group,
        "can_delete_any_message_group" => &mut s.can_delete_any_message_group,
        "can_delete_own_message_group" => &mut s.can_delete_own_message_group,
        "can_move_messages_between_topics_group" => &mut s.can_move_messages_between_topics_group,
        "can_move_messages_between_channels_group" => {
            &mut s.can_move_messages_between_channels_group
        }
        "can_create_public_channel_group" => &mut s.can_create_public_channel_group,
        "can_create_private_channel_group" => &mut s.can_create_private_channel_group,
        "can_create_web_public_channel_group" => &mut s.can_create_web_public_channel_group,
        other => unreachable!("not a realm group setting: {other}"),
    }
}

/// One requested change.
enum Change {
    Name(String),
    Description(String),
    AllowEditing(bool),
    EditLimit(u32),
    AllowEditHistory(bool),
    Retention(Option<i32>),
    DeleteLimit(Option<u32>),
    MoveWithinLimit(Option<u32>),
    MoveBetweenLimit(Option<u32>),
    TopicsPolicy(TopicsPolicy),
    SpectatorAccess(bool),
    ReadReceipts(bool),
    ModerationChannel(Option<ChannelId>),
    Group { name: &'static str, new: GroupSetting, old: Option<GroupSetting> },
}

/// A number of seconds (≥ 1) or `"unlimited"` (`None`).
fn limit(call: &mut Call, name: &str) -> ApiResult<Option<Option<u32>>> {
    let Some(value) = call.params.json_or_string(name)? else { return Ok(None) };
    match &value {
        Value::String(s) if s == "unlimited" => Ok(Some(None)),
        Value::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(seconds) if seconds >= 1 => Ok(Some(Some(seconds))),
            _ => Err(ApiError::invalid(name, "not a positive number of seconds or 'unlimited'")),
        },
        _ => Err(ApiError::invalid(name, "not a positive number of seconds or 'unlimited'")),
    }
}

fn parse(app: &App, call: &mut Call) -> ApiResult<Vec<Change>> {
    let mut out = Vec::new();
    if let Some(name) = call.params.string("name") {
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err(ApiError::invalid("name", "the organization name cannot be empty"));
        }
        if name.chars().count() > MAX_REALM_NAME_LENGTH {
            return Err(ApiError::invalid("name", "longer than 40 characters"));
        }
        out.push(Change::Name(name));
    }
    if let Some(description) = call.params.string("description") {
        if description.chars().count() > MAX_REALM_DESCRIPTION_LENGTH {
            return Err(ApiError::invalid("description", "longer than 1000 characters"));
        }
        out.push(Change::Description(description));
    }
    if let Some(on) = call.params.bool("allow_message_editing")? {
        out.push(Change::AllowEditing(on));
    }
    if let Some(limit) = limit(call, "message_content_edit_limit_seconds")? {
        // Stored as 0 for "no limit" (register's integer).
        out.push(Change::EditLimit(limit.unwrap_or(0)));
    }
    if let Some(on) = call.params.bool("allow_edit_history")? {
        out.push(Change::AllowEditHistory(on));
    }
    if let Some(value) = call.params.json_or_string("message_retention_days")? {
        let days = match &value {
            Value::String(s) if s == "unlimited" => None,
            Value::Number(n) => match n.as_i64() {
                Some(d) if (1..=i64::from(i32::MAX)).contains(&d) => Some(d as i32),
                _ => {
                    return Err(ApiError::invalid(
                        "message_retention_days",
                        "not a positive number of days or 'unlimited'",
                    ))
                }
            },
            _ => {
                return Err(ApiError::invalid(
                    "message_retention_days",
                    "not a positive number of days or 'unlimited'",
                ))
            }
        };
        out.push(Change::Retention(days));
    }
    if let Some(limit) = limit(call, "message_content_delete_limit_seconds")? {
        out.push(Change::DeleteLimit(limit));
    }
    if let Some(limit) = limit(call, "move_messages_within_stream_limit_seconds")? {
        out.push(Change::MoveWithinLimit(limit));
    }
    if let Some(limit) = limit(call, "move_messages_between_streams_limit_seconds")? {
        out.push(Change::MoveBetweenLimit(limit));
    }
    if let Some(name) = call.params.string("topics_policy") {
        let policy = parse_topics_policy(&name)?;
        if !matches!(policy, TopicsPolicy::AllowEmptyTopic | TopicsPolicy::DisableEmptyTopic) {
            return Err(ApiError::invalid("topics_policy", "not an organization policy"));
        }
        out.push(Change::TopicsPolicy(policy));
    }
    if let Some(on) = call.params.bool("enable_spectator_access")? {
        out.push(Change::SpectatorAccess(on));
    }
    if let Some(on) = call.params.bool("enable_read_receipts")? {
        out.push(Change::ReadReceipts(on));
    }
    if let Some(id) = call.params.int("moderation_request_channel_id")? {
        out.push(Change::ModerationChannel(moderation_channel(app, call, id)?));
    }
    for (name, _) in GROUP_SETTINGS {
        let Some(value) = call.params.json(name)? else { continue };
        let Value::Object(map) = &value else {
            return Err(ApiError::invalid(name, "not an object with 'new'"));
        };
        let new = map.get("new").ok_or_else(|| ApiError::invalid(name, "'new' is missing"))?;
        let new = group_setting::parse(&app.state, &call.realm, name, new)?;
        let old = match map.get("old") {
            Some(old) => Some(group_setting::parse(&app.state, &call.realm, name, old)?),
            None => None,
        };
        out.push(Change::Group { name, new, old });
    }
    Ok(out)
}

/// The channel `moderation_request_channel_id` names (-1: none), as
/// Zulip checks it: one the caller may see, and private.
fn moderation_channel(app: &App, call: &Call, id: i64) -> ApiResult<Option<ChannelId>> {
    if id == -1 {
        return Ok(None);
    }
    let invalid = || ApiError::bad_request("Invalid channel ID");
    let id = u64::try_from(id).map_err(|_| invalid())?;
    let channel = app
        .state
        .channel_in_realm(call.realm.id, ChannelId(id))
        .filter(|c| can_see_channel(call.caller(), c))
        .ok_or_else(invalid)?;
    if !channel.invite_only {
        return Err(ApiError::bad_request("Moderation request channel must be private."));
    }
    Ok(Some(channel.id))
}

/// The realm and its features after `changes`, or why `role` may not make
/// them.
fn updated(
    realm: &Realm,
    features: &RealmFeatures,
    role: Role,
    changes: &[Change],
) -> ApiResult<(Realm, RealmFeatures)> {
    let mut after = realm.clone();
    let mut features = features.clone();
    let owner = || -> ApiResult<()> {
        if role == Role::Owner {
            Ok(())
        } else {
            Err(ApiError::bad_request("Must be an organization owner"))
        }
    };
    for change in changes {
        let s = &mut after.settings;
        match change {
            Change::Name(name) => after.name = name.clone(),
            Change::Description(d) => after.description = d.clone(),
            Change::AllowEditing(on) => s.allow_message_editing = *on,
            Change::EditLimit(l) => s.message_content_edit_limit_seconds = *l,
            Change::AllowEditHistory(on) => s.allow_edit_history = *on,
            Change::Retention(days) => {
                owner()?;
                s.message_retention_days = *days;
            }
            Change::DeleteLimit(l) => s.message_content_delete_limit_seconds = *l,
            Change::MoveWithinLimit(l) => s.move_messages_within_stream_limit_seconds = *l,
            Change::MoveBetweenLimit(l) => s.move_messages_between_streams_limit_seconds = *l,
            Change::TopicsPolicy(p) => s.topics_policy = *p,
            Change::SpectatorAccess(on) => s.enable_spectator_access = *on,
            Change::ReadReceipts(on) => features.enable_read_receipts = *on,
            Change::ModerationChannel(c) => features.moderation_request_channel = *c,
            Change::Group { name, new, old } => {
                if GROUP_SETTINGS.iter().any(|(n, owners)| n == name && *owners) {
                    owner()?;
                }
                let default = realm_default(name);
                let mut settings = realm.settings.clone();
                let current = realm.group_setting(slot(&mut settings, name), default);
                if old.as_ref().is_some_and(|old| *old != current) {
                    return Err(ApiError::bad_request(format!(
                        "'old' value for '{name}' does not match the expected value."
                    )));
                }
                *slot(s, name) = Some(new.clone());
            }
        }
    }
    Ok((after, features))
}

/// What each group setting means when it was never set (Zulip's defaults).
fn realm_default(name: &str) -> crate::state::SystemGroup {
    use crate::state::SystemGroup as G;
    match name {
        "can_mention_many_users_group" | "can_delete_any_message_group" => G::Administrators,
        "direct_message_permission_group" | "can_delete_own_message_group" => G::Everyone,
        "can_create_web_public_channel_group" => G::Moderators,
        _ => G::Members,
    }
}

/// The realm's file settings (`state::files`) a `PATCH /realm` asks to
/// change: `avatar_changes_disabled`, and `can_add_custom_emoji_group` as
/// its new value and the `old` one the client expects.
struct FileChanges {
    avatar_changes_disabled: Option<bool>,
    emoji_group: Option<(GroupSetting, Option<GroupSetting>)>,
}

fn parse_file_settings(app: &App, call: &mut Call) -> ApiResult<FileChanges> {
    let avatar_changes_disabled = call.params.bool("avatar_changes_disabled")?;
    let name = "can_add_custom_emoji_group";
    let emoji_group = match call.params.json(name)? {
        None => None,
        Some(Value::Object(map)) => {
            let new = map.get("new").ok_or_else(|| ApiError::invalid(name, "'new' is missing"))?;
            let new = group_setting::parse(&app.state, &call.realm, name, new)?;
            let old = match map.get("old") {
                Some(old) => Some(group_setting::parse(&app.state, &call.realm, name, old)?),
                None => None,
            };
            Some((new, old))
        }
        Some(_) => return Err(ApiError::invalid(name, "not an object with 'new'")),
    };
    Ok(FileChanges { avatar_changes_disabled, emoji_group })
}

/// The realm's file settings after `changes`.
fn updated_files(
    realm: &Realm,
    before: &RealmFileSettings,
    changes: &FileChanges,
) -> ApiResult<RealmFileSettings> {
    let mut after = before.clone();
    if let Some(on) = changes.avatar_changes_disabled {
        after.avatar_changes_disabled = on;
    }
    if let Some((new, old)) = &changes.emoji_group {
        let current = realm.group_setting(&before.can_add_custom_emoji_group, SystemGroup::Members);
        if old.as_ref().is_some_and(|old| *old != current) {
            return Err(ApiError::bad_request(
                "'old' value for 'can_add_custom_emoji_group' does not match the expected value.",
            ));
        }
        after.can_add_custom_emoji_group = Some(new.clone());
    }
    Ok(after)
}

/// `PATCH /realm` (administrators): see the module documentation.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let changes = parse(app, call)?;
    let file_changes = parse_file_settings(app, call)?;
    let me = call.caller().clone();
    if !me.role.is_admin() {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    let id = call.realm.id;
    type Parts = (Realm, RealmFeatures, RealmFileSettings);
    let plan = |s: &State| -> ApiResult<(Parts, Parts)> {
        let before = s.realms.get(&id).ok_or_else(ApiError::internal)?;
        let features = s.features.of(id);
        let files = s.files.realm_settings(id);
        let (realm, features_after) = updated(&before, &features, me.role, &changes)?;
        let files_after = updated_files(&before, &files, &file_changes)?;
        Ok(((before, features, files), (realm, features_after, files_after)))
    };
    // Checked before the writer lock so that a request changing nothing
    // logs nothing; checked again under it.
    let (before, after) = plan(&app.state)?;
    let mut reply = Reply::new();
    if before == after {
        return Ok(reply);
    }
    let (realm_after, features_after, files_after) = app.committer.commit(|s| {
        let ((realm_before, features_before, files_before), (realm, features, files)) = plan(s)?;
        let mut parts = Vec::new();
        if realm_before != realm {
            parts.push(Mutation::UpdateRealm(Box::new(RealmUpdate {
                realm: id,
                name: realm.name.clone(),
                description: realm.description.clone(),
                settings: realm.settings.clone(),
            })));
        }
        if features_before != features {
            parts.push(Mutation::features(FeatureChange::SetRealm {
                realm: id,
                features: features.clone(),
            }));
        }
        if files_before != files {
            let settings = Box::new(files.clone());
            parts.push(Mutation::SetRealmFileSettings { realm: id, settings });
        }
        let mutation =
            if parts.len() == 1 { parts.pop().expect("one") } else { Mutation::Batch(parts) };
        Ok((mutation, (realm, features, files)))
    })?;
    let old = crate::view::realm::settings(&before.0)
        .into_iter()
        .chain(crate::view::files::settings(&before.0, &before.2));
    let new = crate::view::realm::settings(&realm_after)
        .into_iter()
        .chain(crate::view::files::settings(&realm_after, &files_after));
    for ((property, value, _), (_, was, _)) in new.zip(old) {
        if value != was {
            reply.insert(property.to_owned(), value);
        }
    }
    if before.1.enable_read_receipts != features_after.enable_read_receipts {
        reply.insert("enable_read_receipts".into(), features_after.enable_read_receipts.into());
    }
    if before.1.moderation_request_channel != features_after.moderation_request_channel {
        let value = crate::view::realm::moderation_channel_value(&features_after);
        reply.insert("moderation_request_channel_id".into(), value);
    }
    Ok(reply)
}

/// Register's `realm_user_settings_defaults`: every setting a new account
/// of the realm starts with, and the choices of emoji set and sound.
pub fn register_state(
    app: &App,
    user: &crate::state::User,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    if !wants("realm_user_settings_defaults") {
        return;
    }
    let defaults = app.state.organization.user_defaults(user.realm);
    let mut object = serde_json::Map::new();
    for def in SETTINGS.iter().filter(|d| is_realm_default(d.name)) {
        object.insert(def.name.to_owned(), defaults.get(def.name).to_json());
    }
    object.insert("emojiset_choices".into(), super::settings::emojiset_choices());
    object.insert(
        "available_notification_sounds".into(),
        serde_json::json!(crate::state::settings::NOTIFICATION_SOUNDS),
    );
    out.insert("realm_user_settings_defaults".into(), Value::Object(object));
}

/// Whether a personal setting has a realm default.
fn is_realm_default(name: &str) -> bool {
    name != "default_language"
}

/// `PATCH /realm/user_settings_defaults` (administrators): any personal
/// setting but `default_language`, with the values `PATCH /settings`
/// accepts. Existing accounts keep their settings.
pub fn update_user_defaults(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let mut settings = Vec::new();
    for def in SETTINGS.iter().filter(|d| is_realm_default(d.name)) {
        if let Some(value) =
            super::settings::setting_param(call, def.name, def.default, def.allowed)?
        {
            settings.push((def.name.to_owned(), value));
        }
    }
    if !call.caller().role.is_admin() {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    let realm = call.realm.id;
    let build = |s: &State| {
        let current = s.organization.user_defaults(realm);
        let changed: Vec<_> =
            settings.iter().filter(|(n, v)| current.get(n) != *v).cloned().collect();
        changed
    };
    if build(&app.state).is_empty() {
        return Ok(Reply::new());
    }
    app.committer.commit(|s| {
        let settings = build(s);
        Ok((Mutation::organization(OrgChange::SetUserDefaults { realm, settings }), ()))
    })?;
    Ok(Reply::new())
}
