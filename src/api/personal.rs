//! The caller's own small resources: alert words, drafts, user status,
//! muted users and topic visibility — their endpoints and their register
//! sections (`register_state`).
//!
//! Each change is one `Mutation::Personal`; the checks against current
//! state are repeated under the writer lock where a racing request could
//! have changed the answer.

use serde_json::{json, Map, Value};

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access::{can_read_channel, can_see_channel};
use crate::state::personal::{Draft, LocalIdKind, PersonalChange, UserStatus};
use crate::state::{Channel, ChannelId, Realm, State, User, UserId};
use crate::view::personal::{muted_topics_json, muted_users_json, playgrounds_json};

/// Longest alert word, in characters.
pub const MAX_ALERT_WORD_LENGTH: usize = 100;
/// Most alert words per user.
pub const MAX_ALERT_WORDS: usize = 1000;
/// Longest status text, in characters.
pub const MAX_STATUS_TEXT_LENGTH: usize = 60;
/// Longest draft content (as messages).
pub const MAX_DRAFT_LENGTH: usize = super::messages::MAX_MESSAGE_LENGTH;
/// Longest topic (as messages).
const MAX_TOPIC_LENGTH: usize = super::messages::MAX_TOPIC_LENGTH;
/// Most drafts created by one request.
pub const MAX_DRAFTS_PER_REQUEST: usize = 100;

/// A 404 `NOT_FOUND` with a message (drafts, navigation views).
pub(crate) fn not_found(msg: &str) -> ApiError {
    ApiError { status: 404, code: "NOT_FOUND", msg: msg.to_owned(), extra: Vec::new() }
}

/// Commits one change of this area.
pub(crate) fn commit_change(
    app: &App,
    build: impl FnOnce(&State) -> ApiResult<PersonalChange>,
) -> ApiResult<()> {
    app.committer.commit(|state| Ok((Mutation::personal(build(state)?), ())))
}

// ---------------------------------------------------------------- alert words

fn alert_words_of(state: &State, user: UserId) -> Vec<String> {
    state.settings.alert_words.get(&user).unwrap_or_default()
}

/// The `alert_words` parameter: a JSON list of strings, trimmed, blanks
/// dropped.
fn alert_words_param(call: &mut Call) -> ApiResult<Vec<String>> {
    let value = call.params.json("alert_words")?.ok_or_else(|| ApiError::missing("alert_words"))?;
    let words = value
        .as_array()
        .and_then(|a| a.iter().map(|w| w.as_str().map(str::trim)).collect::<Option<Vec<_>>>())
        .ok_or_else(|| ApiError::invalid("alert_words", "not a list of strings"))?;
    let mut out: Vec<String> = Vec::new();
    for word in words.into_iter().filter(|w| !w.is_empty()) {
        if word.chars().count() > MAX_ALERT_WORD_LENGTH {
            return Err(ApiError::invalid("alert_words", "an alert word is too long"));
        }
        if !out.iter().any(|w| w.to_lowercase() == word.to_lowercase()) {
            out.push(word.to_owned());
        }
    }
    Ok(out)
}

/// `GET /users/me/alert_words`.
pub fn get_alert_words(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "alert_words" => alert_words_of(&app.state, call.caller().id) })
}

/// `POST /users/me/alert_words`: adds words (case-insensitively new ones).
pub fn add_alert_words(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let words = alert_words_param(call)?;
    change_alert_words(app, call.caller().id, |list| {
        for w in &words {
            if !list.iter().any(|x| x.to_lowercase() == w.to_lowercase()) {
                list.push(w.clone());
            }
        }
        if list.len() > MAX_ALERT_WORDS {
            return Err(ApiError::bad_request(format!(
                "You can have at most {MAX_ALERT_WORDS} alert words"
            )));
        }
        Ok(())
    })
}

/// `DELETE /users/me/alert_words`: removes words (case-insensitively).
pub fn remove_alert_words(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let words = alert_words_param(call)?;
    change_alert_words(app, call.caller().id, |list| {
        list.retain(|x| !words.iter().any(|w| w.to_lowercase() == x.to_lowercase()));
        Ok(())
    })
}

fn change_alert_words(
    app: &App,
    user: UserId,
    edit: impl Fn(&mut Vec<String>) -> ApiResult<()>,
) -> ApiResult<Reply> {
    let words = app.committer.commit(|state| {
        let before = alert_words_of(state, user);
        let mut words = before.clone();
        edit(&mut words)?;
        let change = PersonalChange::SetAlertWords { user, words: words.clone() };
        Ok((Mutation::personal(change), words))
    })?;
    Ok(reply! { "alert_words" => words })
}

// --------------------------------------------------------------------- drafts

fn drafts_enabled(state: &State, user: UserId) -> ApiResult<()> {
    if state.settings.of(user).bool("enable_drafts_synchronization") {
        Ok(())
    } else {
        Err(ApiError::bad_request("User has disabled synchronizing drafts."))
    }
}

/// Checks one draft object against the caller's realm (id left 0).
fn parse_draft(state: &State, me: &User, realm: &Realm, value: &Value) -> ApiResult<Draft> {
    let obj = value.as_object().ok_or_else(|| ApiError::invalid("draft", "not an object"))?;
    let known = ["id", "type", "to", "topic", "content", "timestamp"];
    if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!("Invalid draft field '{k}'")));
    }
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
    let to: Vec<u64> = match obj.get("to") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect())
            .ok_or_else(|| ApiError::invalid("to", "not a list of IDs"))?,
    };
    let topic = obj.get("topic").map_or(Some(""), Value::as_str);
    let topic = topic.ok_or_else(|| ApiError::invalid("topic", "not a string"))?.trim();
    let content = obj
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("Draft content is required"))?;
    let content = content.trim_end();
    if content.chars().count() > MAX_DRAFT_LENGTH {
        return Err(ApiError::bad_request("Draft content is too long"));
    }
    let timestamp = match obj.get("timestamp") {
        None => entropy::now(),
        Some(v) => {
            let t = v.as_f64().ok_or_else(|| ApiError::invalid("timestamp", "not a number"))?;
            if t < 0.0 {
                return Err(ApiError::bad_request("Timestamp must not be negative."));
            }
            t as i64
        }
    };
    let topic = match kind.as_str() {
        "" => {
            if !to.is_empty() || !topic.is_empty() {
                return Err(ApiError::bad_request(
                    "Must not provide a recipient or topic for a draft with no type",
                ));
            }
            String::new()
        }
        "stream" => {
            let [channel] = to.as_slice() else {
                return Err(ApiError::bad_request("Must specify exactly 1 channel ID"));
            };
            readable_channel(state, me, *channel)?;
            normalize_topic(topic, realm)
        }
        "private" => {
            for id in &to {
                state
                    .user_in_realm(me.realm, UserId(*id))
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
            }
            if !topic.is_empty() {
                return Err(ApiError::bad_request("Must not provide a topic for a direct message"));
            }
            String::new()
        }
        _ => return Err(ApiError::invalid("type", "must be 'stream', 'private' or ''")),
    };
    Ok(Draft { id: 0, kind, to, topic, content: content.to_owned(), timestamp })
}

/// `(no topic)` and the realm's empty-topic name mean `""`; long topics
/// are cut like message topics.
fn normalize_topic(topic: &str, realm: &Realm) -> String {
    let topic = topic.trim();
    if topic == "(no topic)" || topic == realm.settings.empty_topic_display_name {
        return String::new();
    }
    if topic.chars().count() > MAX_TOPIC_LENGTH {
        return topic.chars().take(MAX_TOPIC_LENGTH - 3).collect::<String>() + "...";
    }
    topic.to_owned()
}

/// A channel the user may read; otherwise "Invalid channel ID".
fn readable_channel(state: &State, me: &User, id: u64) -> ApiResult<Channel> {
    state
        .channel_in_realm(me.realm, ChannelId(id))
        .filter(|c| can_read_channel(me, c))
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))
}

fn drafts_json(state: &State, user: UserId) -> Vec<Value> {
    let drafts = state.settings.drafts.get(&user).unwrap_or_default();
    let mut list: Vec<&Draft> = drafts.values().collect();
    list.sort_by_key(|d| (d.timestamp, d.id));
    list.into_iter().map(Draft::to_json).collect()
}

/// `GET /drafts`.
pub fn get_drafts(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller();
    drafts_enabled(&app.state, me.id)?;
    let drafts = drafts_json(&app.state, me.id);
    Ok(reply! { "count" => drafts.len(), "drafts" => drafts })
}

/// `POST /drafts`: `drafts` = JSON list of draft objects → their `ids`.
pub fn create_drafts(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let list = call.params.json("drafts")?.ok_or_else(|| ApiError::missing("drafts"))?;
    let list = list.as_array().ok_or_else(|| ApiError::invalid("drafts", "not a list"))?;
    if list.len() > MAX_DRAFTS_PER_REQUEST {
        return Err(ApiError::invalid("drafts", "too many drafts at once"));
    }
    drafts_enabled(&app.state, me.id)?;
    let parsed: Vec<Draft> = list
        .iter()
        .map(|d| parse_draft(&app.state, &me, &call.realm, d))
        .collect::<ApiResult<_>>()?;
    let ids = app.committer.commit(|state| {
        drafts_enabled(state, me.id)?;
        let ids = state.settings.peek_ids(LocalIdKind::Draft, parsed.len());
        let drafts: Vec<Draft> =
            parsed.into_iter().zip(&ids).map(|(d, id)| Draft { id: *id, ..d }).collect();
        Ok((Mutation::personal(PersonalChange::AddDrafts { user: me.id, drafts }), ids))
    })?;
    Ok(reply! { "ids" => ids })
}

/// `PATCH /drafts/{draft_id}`: `draft` = the new version.
pub fn edit_draft(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "draft_id")?;
    let me = call.caller().clone();
    let value = call.params.json("draft")?.ok_or_else(|| ApiError::missing("draft"))?;
    drafts_enabled(&app.state, me.id)?;
    let draft = parse_draft(&app.state, &me, &call.realm, &value)?;
    commit_change(app, |state| {
        drafts_enabled(state, me.id)?;
        let exists = state.settings.drafts.read(&me.id, |m| m.contains_key(&id));
        if exists != Some(true) {
            return Err(not_found("Draft does not exist"));
        }
        Ok(PersonalChange::EditDraft { user: me.id, draft: Draft { id, ..draft } })
    })?;
    Ok(Reply::new())
}

/// `DELETE /drafts/{draft_id}`.
pub fn delete_draft(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "draft_id")?;
    let me = call.caller().id;
    drafts_enabled(&app.state, me)?;
    commit_change(app, |state| {
        if state.settings.drafts.read(&me, |m| m.contains_key(&id)) != Some(true) {
            return Err(not_found("Draft does not exist"));
        }
        Ok(PersonalChange::DeleteDraft { user: me, id })
    })?;
    Ok(Reply::new())
}

// ---------------------------------------------------------------- user status

/// Checks an emoji given by name and code: Unicode emoji codes are
/// dash-separated hex code points; `zulip_extra_emoji` is `zulip`; natter
/// has no custom emoji yet, so `realm_emoji` codes are refused.
fn check_emoji(code: &str, reaction_type: &str) -> ApiResult<()> {
    let ok = match reaction_type {
        "unicode_emoji" => {
            !code.is_empty()
                && code.split('-').all(|cp| {
                    (1..=6).contains(&cp.len())
                        && u32::from_str_radix(cp, 16).ok().and_then(char::from_u32).is_some()
                })
        }
        "zulip_extra_emoji" => code == "zulip",
        "realm_emoji" => false,
        _ => return Err(ApiError::invalid("reaction_type", "not an emoji type")),
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request("Invalid emoji code").with("var_name", "emoji_code"))
    }
}

/// `POST /users/me/status`: any of `status_text` (≤ 60 characters),
/// `away`, `emoji_name` (+ `emoji_code`, resolved from the name when
/// absent, `reaction_type`); fields not sent
/// keep their value; `emoji_name=""` clears the emoji.
pub fn set_status(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().id;
    let text = call.params.string("status_text");
    let away = call.params.bool("away")?;
    let emoji_name = call.params.string("emoji_name");
    let emoji_code = call.params.string("emoji_code");
    let reaction_type = call.params.string("reaction_type");
    if text.is_none() && away.is_none() && emoji_name.is_none() {
        return Err(ApiError::bad_request("Client did not pass any new values."));
    }
    let text = text.map(|t| t.trim().to_owned());
    if text.as_ref().is_some_and(|t| t.chars().count() > MAX_STATUS_TEXT_LENGTH) {
        return Err(ApiError::bad_request(format!(
            "status_text is too long (limit: {MAX_STATUS_TEXT_LENGTH} characters)"
        ))
        .with("var_name", "status_text"));
    }
    let emoji = match emoji_name.as_deref().map(str::trim) {
        None => None,
        Some("") => Some((String::new(), String::new(), String::new())),
        Some(name) => match emoji_code {
            Some(code) => {
                let kind = reaction_type.unwrap_or_else(|| "unicode_emoji".to_owned());
                check_emoji(&code, &kind)?;
                Some((name.to_owned(), code, kind))
            }
            // By name only: the code from the table reactions use.
            None => {
                let (kind, code) = super::reactions::emoji_by_name(name)?;
                if reaction_type.as_deref().is_some_and(|t| t != kind.as_str()) {
                    return Err(ApiError::invalid("reaction_type", "not this emoji's type"));
                }
                Some((name.to_owned(), code, kind.as_str().to_owned()))
            }
        },
    };
    commit_change(app, |state| {
        let mut status: UserStatus = state.settings.statuses.get(&me).unwrap_or_default();
        if let Some(text) = &text {
            status.status_text = text.clone();
        }
        if let Some(away) = away {
            status.away = away;
        }
        if let Some((name, code, kind)) = &emoji {
            (status.emoji_name, status.emoji_code, status.reaction_type) =
                (name.clone(), code.clone(), kind.clone());
        }
        Ok(PersonalChange::SetStatus { user: me, status })
    })?;
    Ok(Reply::new())
}

/// `GET /users/{user_id}/status`.
pub fn get_status(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = UserId(call.path_id(0, "user_id")?);
    let me = call.caller();
    app.state.user_in_realm(me.realm, id).ok_or_else(|| ApiError::bad_request("No such user"))?;
    let status = app.state.settings.statuses.get(&id).unwrap_or_default();
    Ok(reply! { "status" => status.to_json() })
}

// ---------------------------------------------------------------- muted users

/// `POST /users/me/muted_users/{muted_user_id}`.
pub fn mute_user(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let target = UserId(call.path_id(0, "muted_user_id")?);
    let me = call.caller().clone();
    let now = entropy::now();
    if target == me.id {
        return Err(ApiError::bad_request("Cannot mute self"));
    }
    commit_change(app, |state| {
        state
            .user_in_realm(me.realm, target)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if state.settings.muted_users.read(&me.id, |m| m.contains_key(&target)) == Some(true) {
            return Err(ApiError::bad_request("User already muted"));
        }
        Ok(PersonalChange::SetMuted { user: me.id, target, since: Some(now) })
    })?;
    Ok(Reply::new())
}

/// `DELETE /users/me/muted_users/{muted_user_id}`.
pub fn unmute_user(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let target = UserId(call.path_id(0, "muted_user_id")?);
    let me = call.caller().clone();
    commit_change(app, |state| {
        state
            .user_in_realm(me.realm, target)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if state.settings.muted_users.read(&me.id, |m| m.contains_key(&target)) != Some(true) {
            return Err(ApiError::bad_request("User is not muted"));
        }
        Ok(PersonalChange::SetMuted { user: me.id, target, since: None })
    })?;
    Ok(Reply::new())
}

// ------------------------------------------------------------ topic visibility

fn current_policy(state: &State, user: UserId, channel: ChannelId, topic: &str) -> u8 {
    let key = (channel, topic.to_lowercase());
    state.settings.user_topics.read(&user, |m| m.get(&key).map(|t| t.policy)).flatten().unwrap_or(0)
}

fn set_topic_policy(
    app: &App,
    me: &User,
    channel: ChannelId,
    topic: String,
    policy: u8,
    precondition: impl Fn(u8) -> ApiResult<()>,
) -> ApiResult<()> {
    let now = entropy::now();
    let me = me.clone();
    let current = current_policy(&app.state, me.id, channel, &topic);
    precondition(current)?;
    if current == policy {
        return Ok(());
    }
    commit_change(app, |state| {
        precondition(current_policy(state, me.id, channel, &topic))?;
        Ok(PersonalChange::SetUserTopic { user: me.id, channel, topic, policy, when: now })
    })
}

/// `POST /user_topics`: `stream_id`, `topic`, `visibility_policy`
/// (0 inherit, 1 muted, 2 unmuted, 3 followed).
pub fn update_user_topic(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let channel = call.params.int("stream_id")?.ok_or_else(|| ApiError::missing("stream_id"))?;
    let topic = call.params.required_string("topic")?;
    let policy = call
        .params
        .int("visibility_policy")?
        .ok_or_else(|| ApiError::missing("visibility_policy"))?;
    let policy = u8::try_from(policy)
        .ok()
        .filter(|p| *p <= 3)
        .ok_or_else(|| ApiError::invalid("visibility_policy", "must be 0, 1, 2 or 3"))?;
    let me = call.caller().clone();
    let channel =
        u64::try_from(channel).map_err(|_| ApiError::bad_request("Invalid channel ID"))?;
    let channel = readable_channel(&app.state, &me, channel)?;
    let topic = normalize_topic(&topic, &call.realm);
    set_topic_policy(app, &me, channel.id, topic, policy, |_| Ok(()))?;
    Ok(Reply::new())
}

/// `PATCH /users/me/subscriptions/muted_topics` (deprecated): `stream` (a
/// name) or `stream_id`, `topic`, `op` = `add` | `remove`.
pub fn mute_topic_legacy(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let by_id = call.params.int("stream_id")?;
    let by_name = call.params.string("stream");
    let channel = match (by_id, by_name) {
        (Some(id), None) => {
            let id = u64::try_from(id).map_err(|_| ApiError::bad_request("Invalid channel ID"))?;
            readable_channel(&app.state, &me, id)?
        }
        (None, Some(name)) => app
            .state
            .channel_by_name(me.realm, &name)
            .filter(|c| can_see_channel(&me, c) && can_read_channel(&me, c))
            .ok_or_else(|| ApiError::no_channel_named(&name))?,
        _ => return Err(ApiError::bad_request("Please choose one: 'stream' or 'stream_id'.")),
    };
    let topic = normalize_topic(&call.params.required_string("topic")?, &call.realm);
    let op = call.params.required_string("op")?;
    let (policy, check): (u8, fn(u8) -> ApiResult<()>) = match op.as_str() {
        "add" => {
            (1, |p| if p == 1 { Err(ApiError::bad_request("Topic already muted")) } else { Ok(()) })
        }
        "remove" => {
            (0, |p| if p != 1 { Err(ApiError::bad_request("Topic is not muted")) } else { Ok(()) })
        }
        _ => return Err(ApiError::invalid("op", "must be 'add' or 'remove'")),
    };
    set_topic_policy(app, &me, channel.id, topic, policy, check)?;
    Ok(Reply::new())
}

// ------------------------------------------------------------------- register

/// The register sections of these resources and of navigation views,
/// saved snippets and code playgrounds: `alert_words`, `drafts`,
/// `user_status`, `muted_users`, `user_topic` (→ `user_topics`),
/// `muted_topics` (triples, for old clients), `navigation_views`,
/// `saved_snippets`, `realm_playgrounds`.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    register_sections(&app.state, user, wants, out);
}

/// `register_state` on a bare `State`.
pub fn register_sections(
    state: &State,
    user: &User,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    let s = &state.settings;
    if wants("alert_words") {
        out.insert("alert_words".into(), json!(alert_words_of(state, user.id)));
    }
    if wants("drafts") {
        let drafts = if s.of(user.id).bool("enable_drafts_synchronization") {
            drafts_json(state, user.id)
        } else {
            Vec::new()
        };
        out.insert("drafts".into(), Value::Array(drafts));
    }
    if wants("user_status") {
        let mut statuses = Map::new();
        for (id, status) in s.statuses.collect_sorted(|_, _| true) {
            if state.users.read(&id, |u| u.realm == user.realm) == Some(true) {
                statuses.insert(id.0.to_string(), status.to_json());
            }
        }
        out.insert("user_status".into(), Value::Object(statuses));
    }
    if wants("muted_users") {
        out.insert("muted_users".into(), muted_users_json(state, user.id));
    }
    if wants("user_topic") {
        let topics = s.user_topics.get(&user.id).unwrap_or_default();
        let list: Vec<Value> = topics
            .iter()
            .map(|((channel, _), t)| {
                json!({ "stream_id": channel.0, "topic_name": t.topic,
                        "last_updated": t.last_updated, "visibility_policy": t.policy })
            })
            .collect();
        out.insert("user_topics".into(), Value::Array(list));
    }
    if wants("muted_topics") {
        out.insert("muted_topics".into(), muted_topics_json(state, user.id));
    }
    if wants("navigation_views") {
        let views = s.navigation_views.get(&user.id).unwrap_or_default();
        out.insert("navigation_views".into(), views.iter().map(|v| v.to_json()).collect());
    }
    if wants("saved_snippets") {
        let snippets = s.snippets.get(&user.id).unwrap_or_default();
        out.insert("saved_snippets".into(), snippets.values().map(|v| v.to_json()).collect());
    }
    if wants("realm_playgrounds") {
        out.insert("realm_playgrounds".into(), playgrounds_json(state, user.realm));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_checks() {
        assert!(check_emoji("1f600", "unicode_emoji").is_ok());
        assert!(check_emoji("1f468-200d-1f469", "unicode_emoji").is_ok());
        assert!(check_emoji("zulip", "zulip_extra_emoji").is_ok());
        for (code, kind) in [
            ("", "unicode_emoji"),
            ("xyz", "unicode_emoji"),
            ("d800", "unicode_emoji"),
            ("1f600-", "unicode_emoji"),
            ("1234567", "unicode_emoji"),
            ("other", "zulip_extra_emoji"),
            ("1", "realm_emoji"),
        ] {
            assert!(check_emoji(code, kind).is_err(), "{code} {kind}");
        }
        assert!(check_emoji("1f600", "image").is_err());
    }
}
