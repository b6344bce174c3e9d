//! Joining, leaving and creating channels, and per-subscription settings:
//! `POST /users/me/subscriptions`, `POST /channels/create`,
//! `DELETE /users/me/subscriptions`,
//! `POST /users/me/subscriptions/properties`,
//! `GET /users/{user_id}/subscriptions/{stream_id}`,
//! `GET /streams/{stream_id}/members`. Every rule is asked of
//! `state::access`; every change is one (possibly batched) mutation, so a
//! request is applied whole or not at all.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::group_setting;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::build;
use crate::mutation::{ChannelPermission, Mutation, NotificationSetting, SubscriptionChange};
use crate::reply;
use crate::state::access::can_see_subscribers;
use crate::state::access::{self, can_see_channel};
use crate::state::{
    Channel, ChannelId, Destination, GroupSetting, IdKind, Members, MessageId, Realm, RecipientId,
    Role, State, TopicsPolicy, User, UserId,
};

/// Longest channel name in characters (register's `max_stream_name_length`).
pub const MAX_CHANNEL_NAME_LENGTH: usize = 60;
/// Longest channel description (register's `max_stream_description_length`).
pub const MAX_CHANNEL_DESCRIPTION_LENGTH: usize = 1024;
/// Topic of channel-creation announcements (Zulip's).
const ANNOUNCE_TOPIC: &str = "new channels";

/// A checked channel name: trimmed, non-empty, short, printable.
pub fn check_channel_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Channel name can't be empty."));
    }
    if name.chars().count() > MAX_CHANNEL_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Channel name too long (limit: {MAX_CHANNEL_NAME_LENGTH} characters)."
        )));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(ApiError::bad_request("Invalid character in channel name."));
    }
    Ok(name.to_owned())
}

/// A checked channel description (newlines become spaces, as in Zulip).
pub fn check_description(description: &str) -> ApiResult<String> {
    if description.chars().count() > MAX_CHANNEL_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Channel description too long (limit: {MAX_CHANNEL_DESCRIPTION_LENGTH} characters)."
        )));
    }
    if description.contains('\0') {
        return Err(ApiError::bad_request("Invalid character in channel description."));
    }
    Ok(description.replace(['\r', '\n'], " ").trim().to_owned())
}

/// `message_retention_days`: days, `realm_default` (None) or `unlimited` (-1).
pub fn parse_retention(value: &Value) -> ApiResult<Option<i32>> {
    match value {
        Value::String(s) if s == "realm_default" => Ok(None),
        Value::String(s) if s == "unlimited" => Ok(Some(-1)),
        Value::Number(n) => match n.as_i64() {
            Some(days) if (1..=i64::from(i32::MAX)).contains(&days) => Ok(Some(days as i32)),
            _ => Err(ApiError::bad_request("Bad value for 'message_retention_days'")),
        },
        _ => Err(ApiError::bad_request("Bad value for 'message_retention_days'")),
    }
}

/// `topics_policy` by its Zulip name.
pub fn parse_topics_policy(name: &str) -> ApiResult<TopicsPolicy> {
    [
        TopicsPolicy::Inherit,
        TopicsPolicy::AllowEmptyTopic,
        TopicsPolicy::DisableEmptyTopic,
        TopicsPolicy::EmptyTopicOnly,
    ]
    .into_iter()
    .find(|p| p.as_str() == name)
    .ok_or_else(|| ApiError::invalid("topics_policy", "unknown policy"))
}

/// A user named in `principals` (an id or an email), active, of the realm.
fn resolve_principal(state: &State, realm: &Realm, value: &Value) -> ApiResult<User> {
    let user = match value {
        Value::Number(n) => n.as_u64().and_then(|id| state.user_in_realm(realm.id, UserId(id))),
        Value::String(email) => state
            .user_by_email(realm.id, email.trim())
            .or_else(|| state.user_by_delivery_email(realm.id, email.trim())),
        _ => None,
    };
    // System bots are nobody's to subscribe.
    user.filter(|u| u.is_active && !u.is_system_bot())
        .ok_or_else(|| ApiError::bad_request("No such user"))
}

/// `principals`: users by id or email (default: nobody given).
fn principals(call: &mut Call, state: &State) -> ApiResult<Option<Vec<User>>> {
    let Some(value) = call.params.json_or_string("principals")? else { return Ok(None) };
    let items = match value {
        Value::Array(items) => items,
        Value::String(s) => s.split(',').map(|e| Value::String(e.trim().to_owned())).collect(),
        other => vec![other],
    };
    let mut users: Vec<User> = Vec::new();
    for item in &items {
        let user = resolve_principal(state, &call.realm, item)?;
        if !users.iter().any(|u| u.id == user.id) {
            users.push(user);
        }
    }
    Ok(Some(users))
}

/// The creation options of `POST /users/me/subscriptions`.
struct Creation {
    invite_only: bool,
    is_web_public: bool,
    is_default: bool,
    history_public: Option<bool>,
    retention: Option<Option<i32>>,
    topics_policy: TopicsPolicy,
    folder: Option<u64>,
    permissions: Vec<(ChannelPermission, GroupSetting)>,
}

fn creation_options(call: &mut Call, state: &State) -> ApiResult<Creation> {
    let p = &mut call.params;
    let invite_only = p.bool_or("invite_only", false)?;
    let is_web_public = p.bool_or("is_web_public", false)?;
    let is_default = p.bool_or("is_default_stream", false)?;
    let history_public = p.bool("history_public_to_subscribers")?;
    let retention = match p.json_or_string("message_retention_days")? {
        Some(v) => Some(parse_retention(&v)?),
        None => None,
    };
    let topics_policy = match p.string("topics_policy") {
        Some(name) => parse_topics_policy(&name)?,
        None => TopicsPolicy::Inherit,
    };
    let folder = super::channel_folders::folder_param(call)?.flatten();
    if let Some(id) = folder {
        super::channel_folders::check_folder(state, call.realm.id, id)?;
    }
    let mut permissions = Vec::new();
    for which in ChannelPermission::ALL {
        if let Some(value) = call.params.json(which.name())? {
            permissions
                .push((which, group_setting::parse(state, &call.realm, which.name(), &value)?));
        }
    }
    Ok(Creation {
        invite_only,
        is_web_public,
        is_default,
        history_public,
        retention,
        topics_policy,
        folder,
        permissions,
    })
}

/// The requested `subscriptions`: `[{name, description?}]` (a bare list of
/// names is accepted too).
fn requested_channels(call: &mut Call) -> ApiResult<Vec<(String, String)>> {
    let value =
        call.params.json("subscriptions")?.ok_or_else(|| ApiError::missing("subscriptions"))?;
    let Value::Array(items) = value else {
        return Err(ApiError::invalid("subscriptions", "not a list"));
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let (name, description) = match &item {
            Value::String(name) => (name.clone(), String::new()),
            Value::Object(map) => {
                let name = map.get("name").and_then(Value::as_str).ok_or_else(|| {
                    ApiError::bad_request(format!("subscriptions[{i}] is missing 'name'"))
                })?;
                let description = match map.get("description") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(d)) => d.clone(),
                    Some(_) => return Err(ApiError::invalid("subscriptions", "bad description")),
                };
                (name.to_owned(), description)
            }
            _ => return Err(ApiError::invalid("subscriptions", "not a list of channels")),
        };
        let name = check_channel_name(&name)?;
        let description = check_description(&description)?;
        if !out.iter().any(|(n, _)| n.to_lowercase() == name.to_lowercase()) {
            out.push((name, description));
        }
    }
    Ok(out)
}

/// What the subscribe request resolved to, under the writer lock.
struct Plan {
    mutations: Vec<Mutation>,
    subscribed: BTreeMap<UserId, Vec<String>>,
    already: BTreeMap<UserId, Vec<String>>,
    unauthorized: Vec<String>,
}

fn keyed(map: &BTreeMap<UserId, Vec<String>>) -> Value {
    let out: Map<String, Value> =
        map.iter().map(|(u, names)| (u.0.to_string(), json!(names))).collect();
    Value::Object(out)
}

/// `POST /users/me/subscriptions`: subscribe the caller or `principals`,
/// creating channels that do not exist yet.
pub fn subscribe(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let requested = requested_channels(call)?;
    let state = &app.state;
    let me = call.caller().clone();
    let targets = principals(call, state)?.unwrap_or_else(|| vec![me.clone()]);
    if targets.is_empty() {
        return Err(ApiError::bad_request("No such user"));
    }
    let fatal = call.params.bool_or("authorization_errors_fatal", true)?;
    let announce = call.params.bool_or("announce", false)?;
    let creation = creation_options(call, state)?;
    let realm = call.realm.clone();
    let now = entropy::now();
    // Rendered before the writer lock: descriptions and the announcement.
    let rendered: Vec<String> = requested.iter().map(|(_, d)| markdown::render(d)).collect();
    let others = targets.iter().any(|u| u.id != me.id);

    let plan = app.committer.commit(|s| {
        let mut plan = Plan {
            mutations: Vec::new(),
            subscribed: BTreeMap::new(),
            already: BTreeMap::new(),
            unauthorized: Vec::new(),
        };
        let mut created: Vec<(ChannelId, String)> = Vec::new();
        let mut offsets: BTreeMap<UserId, usize> = BTreeMap::new();
        for (i, (name, description)) in requested.iter().enumerate() {
            let existing = s.channel_by_name(realm.id, name);
            let channel = match existing {
                Some(c) if can_see_channel(&me, &c) => c,
                Some(_) => {
                    // A private channel the caller may not know about.
                    if fatal {
                        return Err(ApiError::bad_request(format!(
                            "Unable to access channel ({name})."
                        )));
                    }
                    plan.unauthorized.push(name.clone());
                    continue;
                }
                None => {
                    let c = new_channel(
                        s,
                        &realm,
                        &me,
                        name,
                        description,
                        &rendered[i],
                        &creation,
                        created.len(),
                        now,
                    )?;
                    created.push((c.id, c.name.clone()));
                    plan.mutations.push(Mutation::CreateChannel {
                        channel: Box::new(c.clone()),
                        subscribers: Vec::new(),
                    });
                    c
                }
            };
            let is_new = created.iter().any(|(id, _)| *id == channel.id);
            if !is_new {
                let refusal = if others {
                    access::subscribe_others_refusal(s, &me, &channel).or_else(|| {
                        targets
                            .iter()
                            .any(|t| t.id == me.id)
                            .then(|| access::subscribe_self_refusal(s, &me, &channel))
                            .flatten()
                    })
                } else {
                    access::subscribe_self_refusal(s, &me, &channel)
                };
                if refusal.is_some() {
                    if fatal {
                        return Err(ApiError::bad_request(format!(
                            "Unable to access channel ({}).",
                            channel.name
                        )));
                    }
                    plan.unauthorized.push(channel.name.clone());
                    continue;
                }
            }
            let mut new_subs = Vec::new();
            for target in &targets {
                if channel.subscribers.contains(&target.id) {
                    plan.already.entry(target.id).or_default().push(channel.name.clone());
                    continue;
                }
                let offset = offsets.entry(target.id).or_default();
                new_subs.push((target.id, build::subscription(s, target.id, *offset)));
                *offset += 1;
                plan.subscribed.entry(target.id).or_default().push(channel.name.clone());
            }
            if !new_subs.is_empty() {
                plan.mutations
                    .push(Mutation::Subscribe { channel: channel.id, subscribers: new_subs });
            }
        }
        if announce && !created.is_empty() && !creation.invite_only {
            if let Some(m) = announcement(s, &realm, &me, &created, now) {
                plan.mutations.push(m);
            }
        }
        let mutation = Mutation::Batch(std::mem::take(&mut plan.mutations));
        Ok((mutation, plan))
    })?;
    let mut out = reply! {
        "subscribed" => keyed(&plan.subscribed),
        "already_subscribed" => keyed(&plan.already),
    };
    if !plan.unauthorized.is_empty() {
        out.insert("unauthorized".into(), json!(plan.unauthorized));
    }
    Ok(out)
}

/// `subscribers` of `POST /channels/create`: a JSON list of user ids.
fn subscriber_ids(call: &mut Call, state: &State) -> ApiResult<Vec<User>> {
    let value = call.params.json("subscribers")?.ok_or_else(|| ApiError::missing("subscribers"))?;
    let Value::Array(items) = value else {
        return Err(ApiError::invalid("subscribers", "not a list of user IDs"));
    };
    let mut users: Vec<User> = Vec::new();
    for item in &items {
        if !item.is_u64() {
            return Err(ApiError::invalid("subscribers", "not a list of user IDs"));
        }
        let user = resolve_principal(state, &call.realm, item)?;
        if !users.iter().any(|u| u.id == user.id) {
            users.push(user);
        }
    }
    Ok(users)
}

/// `POST /channels/create`: creates the channel `name` (an error if the
/// realm has one of that name) with the creation options of
/// `POST /users/me/subscriptions`, subscribes `subscribers` and replies
/// the new channel's `id`.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = check_channel_name(&call.params.required_string("name")?)?;
    let description = check_description(&call.params.string("description").unwrap_or_default())?;
    let state = &app.state;
    let targets = subscriber_ids(call, state)?;
    let announce = call.params.bool_or("announce", false)?;
    let creation = creation_options(call, state)?;
    let realm = call.realm.clone();
    let me = call.caller().clone();
    let now = entropy::now();
    let rendered = markdown::render(&description);
    let id = app.committer.commit(|s| {
        if s.channel_by_name(realm.id, &name).is_some() {
            return Err(ApiError::channel_exists(&name));
        }
        let c = new_channel(s, &realm, &me, &name, &description, &rendered, &creation, 0, now)?;
        let created = [(c.id, c.name.clone())];
        let subscribers =
            targets.iter().map(|t| (t.id, build::subscription(s, t.id, 0))).collect::<Vec<_>>();
        let mut mutations =
            vec![Mutation::CreateChannel { channel: Box::new(c.clone()), subscribers: Vec::new() }];
        if !subscribers.is_empty() {
            mutations.push(Mutation::Subscribe { channel: c.id, subscribers });
        }
        if announce && !creation.invite_only {
            mutations.extend(announcement(s, &realm, &me, &created, now));
        }
        Ok((Mutation::Batch(mutations), c.id.0))
    })?;
    Ok(reply! { "id" => id })
}

/// A channel to create, checked against the creator's permissions; the
/// `k`-th channel created by this request gets the `k`-th next ids.
#[allow(clippy::too_many_arguments)]
fn new_channel(
    s: &State,
    realm: &Realm,
    me: &User,
    name: &str,
    description: &str,
    rendered: &str,
    c: &Creation,
    k: usize,
    now: i64,
) -> ApiResult<Channel> {
    if let Some(why) = access::create_channel_refusal(s, realm, me, c.invite_only, c.is_web_public)
    {
        return Err(ApiError::bad_request(why));
    }
    if c.is_default && !me.role.is_admin() {
        return Err(ApiError::bad_request("Must be an organization administrator"));
    }
    if c.is_default && c.invite_only {
        return Err(ApiError::bad_request("A default channel cannot be private."));
    }
    if c.retention.is_some() && me.role != Role::Owner {
        return Err(ApiError::bad_request("Must be an organization owner"));
    }
    let mut permissions = build::default_permissions(realm, Some(me.id));
    for (which, setting) in &c.permissions {
        *which.slot(&mut permissions) = setting.clone();
    }
    Ok(Channel {
        id: ChannelId(s.ids.peek(IdKind::Channel) + k as u64),
        realm: realm.id,
        name: name.to_owned(),
        description: description.to_owned(),
        rendered_description: rendered.to_owned(),
        invite_only: c.invite_only,
        is_web_public: c.is_web_public,
        // Public channels always share their history.
        history_public_to_subscribers: !c.invite_only || c.history_public.unwrap_or(false),
        creator: Some(me.id),
        date_created: now,
        recipient: RecipientId(s.ids.peek(IdKind::Recipient) + k as u64),
        message_retention_days: c.retention.flatten(),
        is_archived: false,
        topics_policy: c.topics_policy,
        folder_id: c.folder,
        is_default: c.is_default,
        permissions,
        first_message_id: None,
        subscribers: Members::new(),
    })
}

/// The "new channel" notice, posted by its creator to the realm's
/// announcement channel (the public channel named `general`, else the
/// oldest public default channel). Private channels are not announced.
/// The realm's Notification Bot posts it, as in Zulip (the creator, in a
/// realm without one).
fn announcement(
    s: &State,
    realm: &Realm,
    me: &User,
    created: &[(ChannelId, String)],
    now: i64,
) -> Option<Mutation> {
    let target = s
        .channel_by_name(realm.id, "general")
        .filter(|c| !c.invite_only && !c.is_archived)
        .or_else(|| {
            s.channels
                .collect_sorted(|_, c| {
                    c.realm == realm.id && c.is_default && !c.invite_only && !c.is_archived
                })
                .into_iter()
                .map(|(_, c)| c)
                .next()
        })?;
    let names: Vec<String> = created
        .iter()
        .filter(|(id, _)| !s.channels.contains(id))
        .map(|(_, name)| format!("#**{name}**"))
        .collect();
    if names.is_empty() || access::send_refusal(s, me, &target).is_some() {
        return None;
    }
    let content =
        format!("@_**{}|{}** created a new channel {}.", me.full_name, me.id, names.join(", "));
    // Rendered like any message; the new channels (created in the same
    // record) resolve too.
    let resolver = Announcing { visible: crate::send::mentions::Visible::new(s, me), created };
    let rendered = markdown::render_message(&content, &resolver).html;
    // From the Notification Bot; from the creator where the realm has none.
    let sender = s
        .system_bot(realm.id, crate::state::system_bots::SystemBot::Notification)
        .unwrap_or_else(|| me.clone());
    let id = MessageId(s.ids.peek(IdKind::Message));
    let destination = Destination::Channel { channel: target.id, topic: ANNOUNCE_TOPIC.into() };
    let message = crate::send::bot_messages::posted(
        id,
        &sender,
        target.recipient,
        destination,
        content,
        rendered,
        now,
    );
    Some(Mutation::SendMessage(message))
}

/// The creator's view of the realm plus the channels being created (not
/// in state yet), for the announcement's links.
struct Announcing<'a> {
    visible: crate::send::mentions::Visible<'a>,
    created: &'a [(ChannelId, String)],
}

impl markdown::Resolver for Announcing<'_> {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        self.visible.user_by_name(name)
    }

    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        self.visible.user_by_id(id)
    }

    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        self.visible.group_by_name(name)
    }

    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        let new = self.created.iter().find(|(_, n)| n.eq_ignore_ascii_case(name));
        new.map(|(id, n)| (id.0, n.clone())).or_else(|| self.visible.channel_by_name(name))
    }
}

/// `DELETE /users/me/subscriptions`: unsubscribe the caller or `principals`.
pub fn unsubscribe(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let value =
        call.params.json("subscriptions")?.ok_or_else(|| ApiError::missing("subscriptions"))?;
    let names: Vec<String> = match value {
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Some(s.trim().to_owned()),
                Value::Object(m) => {
                    m.get("name").and_then(Value::as_str).map(|s| s.trim().to_owned())
                }
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ApiError::invalid("subscriptions", "not a list of channel names"))?,
        _ => return Err(ApiError::invalid("subscriptions", "not a list")),
    };
    let state = &app.state;
    let me = call.caller().clone();
    let targets = principals(call, state)?.unwrap_or_else(|| vec![me.clone()]);
    let realm = call.realm.clone();
    let (removed, not_removed) = app.committer.commit(|s| {
        let mut removed = Vec::new();
        let mut not_removed = Vec::new();
        let mut mutations = Vec::new();
        let mut seen = BTreeSet::new();
        for name in &names {
            let channel = s
                .channel_by_name(realm.id, name)
                .filter(|c| can_see_channel(&me, c) || c.subscribers.contains(&me.id))
                .ok_or_else(|| ApiError::no_channel_named(name))?;
            // A channel named twice is handled once.
            if !seen.insert(channel.id) {
                continue;
            }
            if targets.iter().any(|t| t.id != me.id)
                && !access::may_unsubscribe_others(s, &me, &channel)
            {
                return Err(ApiError::bad_request("Insufficient permission"));
            }
            let leaving: Vec<UserId> = targets
                .iter()
                .filter(|t| channel.subscribers.contains(&t.id))
                .map(|t| t.id)
                .collect();
            if leaving.is_empty() {
                not_removed.push(channel.name.clone());
            } else {
                removed.push(channel.name.clone());
                mutations.push(Mutation::Unsubscribe { channel: channel.id, users: leaving });
            }
        }
        Ok((Mutation::Batch(mutations), (removed, not_removed)))
    })?;
    Ok(reply! { "removed" => removed, "not_removed" => not_removed })
}

/// One `subscription_data` element decoded into a change.
fn property_change(property: &str, value: &Value) -> ApiResult<Vec<SubscriptionChange>> {
    let boolean = || {
        value
            .as_bool()
            .or_else(|| match value.as_str() {
                Some("true") => Some(true),
                Some("false") => Some(false),
                _ => None,
            })
            .ok_or_else(|| ApiError::bad_request(format!("{property} is not a boolean")))
    };
    Ok(match property {
        "color" => {
            let color = value.as_str().unwrap_or("");
            let hex = color.strip_prefix('#').unwrap_or("");
            if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ApiError::bad_request("color is not a valid hex color code"));
            }
            vec![SubscriptionChange::Color(color.to_ascii_lowercase())]
        }
        "is_muted" => vec![SubscriptionChange::Muted(boolean()?)],
        "in_home_view" => vec![SubscriptionChange::Muted(!boolean()?)],
        "pin_to_top" => vec![SubscriptionChange::PinToTop(boolean()?)],
        _ => {
            let Some((which, _)) = NotificationSetting::ALL.iter().find(|(_, n)| *n == property)
            else {
                return Err(ApiError::bad_request(format!(
                    "Unknown subscription property: {property}"
                )));
            };
            let value = if value.is_null() { None } else { Some(boolean()?) };
            vec![SubscriptionChange::Notification(*which, value)]
        }
    })
}

/// `POST /users/me/subscriptions/properties`: change the caller's settings
/// for channels they are subscribed to.
pub fn update_properties(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let data = call
        .params
        .json("subscription_data")?
        .ok_or_else(|| ApiError::missing("subscription_data"))?;
    let Value::Array(items) = data else {
        return Err(ApiError::invalid("subscription_data", "not a list"));
    };
    let me = call.caller().clone();
    let mut changes = Vec::new();
    for item in &items {
        let id = item
            .get("stream_id")
            .and_then(Value::as_u64)
            .ok_or_else(|| ApiError::bad_request("subscription_data is missing 'stream_id'"))?;
        let property = item
            .get("property")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::bad_request("subscription_data is missing 'property'"))?;
        let value = item
            .get("value")
            .ok_or_else(|| ApiError::bad_request("subscription_data is missing 'value'"))?;
        for change in property_change(property, value)? {
            changes.push((ChannelId(id), change));
        }
    }
    app.committer.commit(|s| {
        let subs = s.subscriptions.get(&me.id).unwrap_or_default();
        for (id, _) in &changes {
            if s.channel_in_realm(me.realm, *id).filter(|c| can_see_channel(&me, c)).is_none() {
                return Err(ApiError::no_channel_id(id.0));
            }
            if !subs.contains_key(id) {
                return Err(ApiError::bad_request(format!(
                    "Not subscribed to channel ID {}",
                    id.0
                )));
            }
        }
        Ok((Mutation::UpdateSubscriptions { user: me.id, changes }, ()))
    })?;
    Ok(Reply::new())
}

/// A channel of the caller's realm that they may know about, by path id.
pub fn visible_channel(app: &App, call: &Call, index: usize) -> ApiResult<Channel> {
    let id = call.path_id(index, "stream_id")?;
    app.state
        .channel_in_realm(call.realm.id, ChannelId(id))
        .filter(|c| can_see_channel(call.caller(), c))
        .ok_or_else(|| ApiError::no_channel_id(id))
}

/// `GET /streams/{stream_id}/members`: the channel's subscribers, for
/// those who may see them.
pub fn members(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let channel = visible_channel(app, call, 0)?;
    if !can_see_subscribers(call.caller(), &channel) {
        return Err(ApiError::bad_request("Invalid channel ID"));
    }
    let ids: Vec<u64> = channel.subscribers.iter().map(|u| u.0).collect();
    Ok(reply! { "subscribers" => ids })
}

/// `GET /users/{user_id}/subscriptions/{stream_id}`: whether a user is
/// subscribed, for callers who may see the channel's subscribers.
pub fn status(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let user = UserId(call.path_id(0, "user_id")?);
    let channel = visible_channel(app, call, 1)?;
    app.state
        .user_in_realm(call.realm.id, user)
        .ok_or_else(|| ApiError::bad_request("No such user"))?;
    if !can_see_subscribers(call.caller(), &channel) {
        return Err(ApiError::bad_request("Invalid channel ID"));
    }
    Ok(reply! { "is_subscribed" => channel.subscribers.contains(&user) })
}
