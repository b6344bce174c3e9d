//! One channel: `GET /streams/{stream_id}`, `GET /get_stream_id`,
//! `PATCH /streams/{stream_id}` (every property and permission, with its
//! rule from `state::access`), `DELETE /streams/{stream_id}` (archive) and
//! `POST /streams/{stream_id}/delete_topic`.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::group_setting;
use super::subscriptions::{
    check_channel_name, check_description, parse_retention, parse_topics_policy, visible_channel,
};
use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::{ChannelChange, ChannelPermission, Mutation};
use crate::reply;
use crate::state::access::{self, can_see_channel};
use crate::state::{Channel, ChannelId, GroupSetting, MessageId, Role, State, TopicsPolicy, User};
use crate::view::channel::Subscribers;

/// Register's `default_streams` section: `realm_default_streams`.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("default_streams") {
        out.insert(
            "realm_default_streams".into(),
            crate::view::channel::default_streams(&app.state, user.realm),
        );
    }
}

/// `GET /streams/{stream_id}`: one channel the caller may know about.
pub fn get_one(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let channel = visible_channel(app, call, 0)?;
    Ok(
        reply! { "stream" => crate::view::channel::stream(&app.state, call.caller(), &channel, Subscribers::Omit) },
    )
}

/// `GET /get_stream_id`: a channel's id by name.
pub fn get_id(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = call.params.required_string("stream")?;
    let me = call.caller();
    let channel = app
        .state
        .channel_by_name(me.realm, name.trim())
        .filter(|c| can_see_channel(me, c))
        .ok_or_else(|| ApiError::no_channel_named(name.trim()))?;
    Ok(reply! { "stream_id" => channel.id.0 })
}

/// `DELETE /streams/{stream_id}`: archive the channel. Its messages and
/// subscriptions stay; it refuses new messages and subscribers and stops
/// being a default channel.
pub fn archive(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = visible_channel(app, call, 0)?.id;
    let me = call.caller().clone();
    app.committer.commit(|s| {
        let channel = s.channels.get(&id).ok_or_else(|| ApiError::no_channel_id(id.0))?;
        if !access::may_archive(s, &me, &channel) {
            return Err(ApiError::bad_request("Must be an organization or channel administrator"));
        }
        if channel.is_archived {
            return Err(ApiError::bad_request("Channel is already archived."));
        }
        let mut changes = Vec::new();
        if channel.is_default {
            changes.push(ChannelChange::Default(false));
        }
        changes.push(ChannelChange::Archived(true));
        Ok((Mutation::UpdateChannel { channel: id, changes }, ()))
    })?;
    Ok(Reply::new())
}

/// Messages one `delete_topic` batch deletes (one logged change each).
const DELETE_TOPIC_BATCH: usize = 1_000;
/// How long one `delete_topic` request keeps deleting before it replies
/// `complete: false` for the client to repeat it (Zulip's budget).
const DELETE_TOPIC_BUDGET: Duration = Duration::from_secs(50);

/// `POST /streams/{stream_id}/delete_topic` (administrators): delete every
/// message of `topic_name` the caller may reach — all of them where the
/// channel's history is public to subscribers, else those the caller
/// received — newest first, in atomic batches. A request that runs out of
/// time replies `complete: false` (what is deleted stays deleted) and the
/// client repeats it, as with Zulip.
pub fn delete_topic(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let channel = visible_channel(app, call, 0)?;
    let topic = call.required_topic("topic_name")?;
    let me = call.caller().clone();
    if !me.role.is_admin() {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    // Deleting is a content action: a private channel's administrator
    // who is not subscribed sees its name, not its messages.
    if !access::can_read_channel(&me, &channel) {
        return Err(ApiError::no_channel_id(channel.id.0));
    }
    let key = (channel.id, topic.to_lowercase());
    let started = Instant::now();
    loop {
        if started.elapsed() >= DELETE_TOPIC_BUDGET {
            return Ok(reply! { "complete" => false });
        }
        let batch = deletable_batch(&app.state, &me, &key);
        if batch.is_empty() {
            return Ok(reply! { "complete" => true });
        }
        app.committer.commit(|s| {
            // Another request may have deleted some meanwhile.
            let messages: Vec<_> = batch.into_iter().filter(|m| s.messages.contains(m)).collect();
            let mutation = if messages.is_empty() {
                Mutation::Batch(Vec::new())
            } else {
                Mutation::DeleteMessages { messages, by: me.id }
            };
            Ok((mutation, ()))
        })?;
        if may::coroutine::is_coroutine() {
            may::coroutine::yield_now();
        }
    }
}

/// The next (newest) messages of a topic `me` may delete, at most a batch.
fn deletable_batch(state: &State, me: &User, key: &(ChannelId, String)) -> Vec<MessageId> {
    let Some(channel) = state.channels.get(&key.0) else { return Vec::new() };
    let all = channel.history_public_to_subscribers;
    let mut out = Vec::new();
    let mut before = MessageId(u64::MAX);
    loop {
        let ids = state.topic_ids_before(key, before, DELETE_TOPIC_BATCH);
        out.extend(ids.iter().filter(|m| all || state.flags(me.id, **m).is_some()));
        match ids.last() {
            Some(last) if ids.len() == DELETE_TOPIC_BATCH && out.len() < DELETE_TOPIC_BATCH => {
                before = *last;
            }
            _ => break,
        }
    }
    out.truncate(DELETE_TOPIC_BATCH);
    out
}

/// A `{new, old}` group-setting update.
struct SettingUpdate {
    which: ChannelPermission,
    new: GroupSetting,
    old: Option<GroupSetting>,
}

/// The parsed request of `PATCH /streams/{stream_id}`.
#[derive(Default)]
struct Patch {
    new_name: Option<String>,
    description: Option<(String, String)>,
    is_private: Option<bool>,
    is_web_public: Option<bool>,
    history_public: Option<bool>,
    is_default: Option<bool>,
    retention: Option<Option<i32>>,
    is_archived: Option<bool>,
    folder: Option<Option<u64>>,
    topics_policy: Option<TopicsPolicy>,
    settings: Vec<SettingUpdate>,
}

fn parse_patch(app: &App, call: &mut Call) -> ApiResult<Patch> {
    let state = &app.state;
    let p = &mut call.params;
    // The Python bindings repeat the path id in the body.
    let _ = p.raw("stream_id");
    let mut patch = Patch {
        new_name: p.string("new_name").map(|n| check_channel_name(&n)).transpose()?,
        is_private: p.bool("is_private")?,
        is_web_public: p.bool("is_web_public")?,
        history_public: p.bool("history_public_to_subscribers")?,
        is_default: p.bool("is_default_stream")?,
        is_archived: p.bool("is_archived")?,
        ..Patch::default()
    };
    if let Some(d) = p.string("description") {
        let d = check_description(&d)?;
        let rendered = markdown::render(&d);
        patch.description = Some((d, rendered));
    }
    if let Some(v) = p.json_or_string("message_retention_days")? {
        patch.retention = Some(parse_retention(&v)?);
    }
    if let Some(v) = p.json_or_string("folder_id")? {
        patch.folder = Some(match v {
            Value::Null => None,
            Value::Number(n) => {
                Some(n.as_u64().ok_or_else(|| ApiError::invalid("folder_id", "not an ID"))?)
            }
            _ => return Err(ApiError::invalid("folder_id", "not an ID")),
        });
    }
    if let Some(name) = p.string("topics_policy") {
        patch.topics_policy = Some(parse_topics_policy(&name)?);
    }
    for which in ChannelPermission::ALL {
        let Some(value) = call.params.json(which.name())? else { continue };
        let Value::Object(map) = &value else {
            return Err(ApiError::invalid(which.name(), "not an object with 'new'"));
        };
        let new =
            map.get("new").ok_or_else(|| ApiError::invalid(which.name(), "'new' is missing"))?;
        let new = group_setting::parse(state, &call.realm, which.name(), new)?;
        let old = match map.get("old") {
            Some(old) => Some(group_setting::parse(state, &call.realm, which.name(), old)?),
            None => None,
        };
        patch.settings.push(SettingUpdate { which, new, old });
    }
    Ok(patch)
}

/// Whether every message of the channel is in the empty topic.
fn only_empty_topic(state: &State, channel: &Channel) -> bool {
    let topics = state.channel_topics.get(&channel.id).unwrap_or_default();
    topics.keys().filter(|k| !k.is_empty()).all(|k| {
        state.by_topic.read(&(channel.id, k.clone()), crate::state::IdSet::is_empty).unwrap_or(true)
    })
}

/// Checks the patch against the channel and the caller and lists the
/// changes (only real changes; an empty list changes nothing).
fn changes(
    s: &State,
    me: &User,
    channel: &Channel,
    patch: &Patch,
) -> ApiResult<Vec<ChannelChange>> {
    let refuse = |msg: &str| Err(ApiError::bad_request(msg));
    let metadata = access::may_change_metadata(s, me, channel);
    let permissions = access::may_change_permissions(s, me, channel);
    let mut out = Vec::new();
    if channel.is_archived {
        if patch.is_archived != Some(false) {
            return refuse("You cannot modify an archived channel.");
        }
        if !metadata {
            return refuse("Must be an organization or channel administrator");
        }
        out.push(ChannelChange::Archived(false));
    } else if patch.is_archived == Some(true) {
        return refuse("Only unarchiving a channel is supported here; use DELETE /streams/{stream_id} to archive.");
    }
    let needs_metadata = patch.new_name.is_some()
        || patch.description.is_some()
        || patch.folder.is_some()
        || patch.topics_policy.is_some()
        || patch.retention.is_some();
    if needs_metadata && !metadata {
        return refuse("Must be an organization or channel administrator");
    }
    if let Some(name) = &patch.new_name {
        if *name != channel.name {
            if let Some(other) = s.channel_by_name(channel.realm, name) {
                if other.id != channel.id {
                    return refuse(&format!("Channel name '{name}' is already taken."));
                }
            }
            out.push(ChannelChange::Name(name.clone()));
        }
    }
    if let Some((source, rendered)) = &patch.description {
        if *source != channel.description {
            out.push(ChannelChange::Description {
                source: source.clone(),
                rendered: rendered.clone(),
            });
        }
    }
    if patch.is_private.is_some() || patch.is_web_public.is_some() || patch.history_public.is_some()
    {
        if !permissions {
            return refuse("Must be an organization or channel administrator (and subscribed, for a private channel)");
        }
        let invite_only = patch.is_private.unwrap_or(channel.invite_only);
        let web_public = patch.is_web_public.unwrap_or(if patch.is_private == Some(true) {
            false
        } else {
            channel.is_web_public
        });
        let history = match patch.history_public {
            Some(h) => h,
            None if !invite_only => true,
            None => channel.history_public_to_subscribers,
        };
        if web_public && !channel.is_web_public {
            let realm = s.realms.get(&channel.realm).expect("a channel's realm exists");
            if let Some(why) = access::web_public_refusal(s, &realm, me) {
                return refuse(why);
            }
        }
        if invite_only && web_public {
            return refuse("A web-public channel cannot be private.");
        }
        if !history && !invite_only {
            return refuse(
                "Invalid parameters: a public channel's history is always public to subscribers.",
            );
        }
        if invite_only
            && (patch.is_default == Some(true)
                || (channel.is_default && patch.is_default != Some(false)))
        {
            return refuse("A default channel cannot be private.");
        }
        if (invite_only, history, web_public)
            != (channel.invite_only, channel.history_public_to_subscribers, channel.is_web_public)
        {
            out.push(ChannelChange::Access {
                invite_only,
                history_public_to_subscribers: history,
                is_web_public: web_public,
            });
        }
    }
    if let Some(on) = patch.is_default {
        if !me.role.is_admin() || !can_see_channel(me, channel) {
            return refuse("Must be an organization administrator");
        }
        let private = patch.is_private.unwrap_or(channel.invite_only);
        if on && private {
            return refuse("A default channel cannot be private.");
        }
        if on != channel.is_default {
            out.push(ChannelChange::Default(on));
        }
    }
    if let Some(days) = patch.retention {
        if me.role != Role::Owner {
            return refuse("Must be an organization owner");
        }
        if days != channel.message_retention_days {
            out.push(ChannelChange::Retention(days));
        }
    }
    if let Some(folder) = patch.folder {
        if let Some(id) = folder {
            super::channel_folders::check_folder(s, channel.realm, id)?;
        }
        if folder != channel.folder_id {
            out.push(ChannelChange::Folder(folder));
        }
    }
    if let Some(policy) = patch.topics_policy {
        if policy == TopicsPolicy::EmptyTopicOnly && !only_empty_topic(s, channel) {
            return refuse("To enable this configuration, all messages in this channel must be in the general chat topic. Consider renaming or deleting other topics.");
        }
        if policy != channel.topics_policy {
            out.push(ChannelChange::TopicsPolicy(policy));
        }
    }
    for update in &patch.settings {
        let metadata_only = matches!(
            update.which,
            ChannelPermission::RemoveSubscribers | ChannelPermission::AdministerChannel
        );
        let allowed = if metadata_only { metadata } else { permissions };
        if !allowed {
            return refuse("Must be an organization or channel administrator (and subscribed, for a private channel)");
        }
        let mut current = channel.permissions.clone();
        let current = update.which.slot(&mut current).clone();
        if let Some(old) = &update.old {
            if *old != current {
                return refuse(&format!(
                    "'old' value for '{}' does not match the expected value.",
                    update.which.name()
                ));
            }
        }
        if update.new != current {
            out.push(ChannelChange::Permission(update.which, update.new.clone()));
        }
    }
    Ok(out)
}

/// `PATCH /streams/{stream_id}`: change a channel's properties.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = visible_channel(app, call, 0)?.id;
    let patch = parse_patch(app, call)?;
    let me = call.caller().clone();
    // Checked once before the writer lock, so a request that changes
    // nothing (or is refused) logs nothing; checked again under it.
    let channel = app.state.channels.get(&id).ok_or_else(|| ApiError::no_channel_id(id.0))?;
    if changes(&app.state, &me, &channel, &patch)?.is_empty() {
        return Ok(Reply::new());
    }
    app.committer.commit(|s| {
        let channel = s.channels.get(&id).ok_or_else(|| ApiError::no_channel_id(id.0))?;
        let changes = changes(s, &me, &channel, &patch)?;
        Ok((Mutation::UpdateChannel { channel: id, changes }, ()))
    })?;
    Ok(Reply::new())
}
