//! The register-vs-events harness, in the style of Zulip's `verify_action`:
//! register (fetching state) → do an action → apply the events the queue
//! received to the fetched state, as a client would → register again →
//! the two states must be equal.
//!
//! It runs in-process (`server::open_app` on a temp data dir with the dev
//! seed) so that actions can be any handler call or any committed
//! mutation, also those no endpoint makes yet (a new user, a channel).
//!
//! Adding a case: one `#[test]` calling `Harness::verify_action` with the
//! register parameters, the action, and the event types expected. A new
//! event type also needs its arm in `apply_event` — the client-side rule
//! for folding it into the fetched state.

use std::sync::Arc;

use serde_json::{json, Value};

use natter::api::params::Params;
use natter::api::{self, App, Call, Handler, Reply};
use natter::error::ApiResult;
use natter::mutation::build;
use natter::mutation::Mutation;
use natter::state::{Subscription, User};

const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member; general only
const IAGO: &str = "iago@natter.test"; // administrator; general, Denmark, core team

/// A seeded dev realm, in-process.
pub struct Harness {
    pub app: Arc<App>,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let app = natter::testkit::in_process_dev_app(&dir.path().join("data"), &[]);
        Harness { app, _dir: dir }
    }

    pub fn user(&self, email: &str) -> User {
        let realm = self.app.state.realm_by_subdomain("").unwrap();
        self.app.state.user_by_email(realm.id, email).unwrap()
    }

    /// Calls a handler as `email` with these parameters.
    pub fn call(&self, email: &str, handler: Handler, params: &[(&str, &str)]) -> ApiResult<Reply> {
        let realm = self.app.state.realm_by_subdomain("").unwrap();
        self.call_in(realm, email, handler, &[], params)
    }

    /// Calls a handler as `email` in `realm` (as the request's host named
    /// it, possibly edited by the test) with path arguments and parameters.
    pub fn call_in(
        &self,
        realm: natter::state::Realm,
        email: &str,
        handler: Handler,
        path: &[&str],
        params: &[(&str, &str)],
    ) -> ApiResult<Reply> {
        let mut call = Call {
            realm: realm.into(),
            caller: Some(self.user(email).into()),
            params: Params::from_pairs(params.iter().copied()),
            path: path.iter().map(|p| p.to_string()).collect(),
            client: "test".into(),
            raw_fields: Vec::new(),
            sorted_reply: None,
            files: Vec::new(),
        };
        let mut reply = handler(&self.app, &mut call)?;
        // A reply the handler wrote as text (`POST /messages`).
        if let Some(members) = &call.sorted_reply {
            reply.extend(members.to_map());
        }
        // Fields the handler serialized itself (register's user lists), as
        // the HTTP layer would splice them in.
        for (key, raw) in call.raw_fields {
            reply.insert(key, serde_json::from_str(&raw).expect("raw fields are JSON"));
        }
        Ok(reply)
    }

    /// Commits a mutation built against current state.
    pub fn commit(&self, build: impl FnOnce(&natter::state::State) -> Mutation) {
        self.app.committer.commit(|s| Ok((build(s), ()))).unwrap();
    }

    /// Register as `email` with `params`; returns the reply.
    pub fn register(&self, email: &str, params: &[(&str, &str)]) -> Value {
        Value::Object(self.call(email, api::register::register, params).expect("register"))
    }

    /// The queue's events after `last`, without waiting.
    pub fn events(&self, email: &str, queue: &str, last: i64) -> Vec<Value> {
        let last = last.to_string();
        let params =
            [("queue_id", queue), ("last_event_id", last.as_str()), ("dont_block", "true")];
        let reply = self.call(email, api::events::get_events, &params).expect("events");
        reply["events"].as_array().unwrap().clone()
    }

    /// register → `action` → apply the events → equal to a fresh register.
    /// Returns the events (heartbeats left out) for further checks.
    #[track_caller]
    pub fn verify_action(
        &self,
        email: &str,
        params: &[(&str, &str)],
        action: impl FnOnce(&Harness),
        expected: &[&str],
    ) -> Vec<Value> {
        let mut state = self.register(email, params);
        let queue = state["queue_id"].as_str().unwrap().to_owned();
        action(self);
        let events: Vec<Value> = self
            .events(email, &queue, -1)
            .into_iter()
            .filter(|e| e["type"] != "heartbeat")
            .collect();
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, expected, "event types: {events:#?}");
        // Ids rise from above the register's `last_event_id` (they derive
        // from each mutation's seq, so a fresh register's differs).
        let mut last = state["last_event_id"].as_i64().unwrap();
        for event in &events {
            let id = event["id"].as_i64().unwrap();
            assert!(id > last, "event ids rise above last_event_id {last}: {events:#?}");
            last = id;
        }
        let me = self.user(email).id.0;
        // Register's default, as in Zulip.
        let client_gravatar =
            params.iter().find(|(k, _)| *k == "client_gravatar").is_none_or(|(_, v)| *v == "true");
        for event in &events {
            apply_event(&mut state, event, me, client_gravatar);
        }
        let fresh = self.register(email, params);
        assert_same_state(normalize(state), normalize(fresh));
        events
    }

    /// An action for `verify_action`: `handler` called as `email` in the
    /// bare-host realm, with path arguments and parameters (copied).
    pub fn act(
        email: &'static str,
        handler: Handler,
        path: &[&str],
        params: &[(&str, &str)],
    ) -> impl FnOnce(&Harness) {
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        let params: Vec<(String, String)> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |h: &Harness| {
            let realm = h.app.state.realm_by_subdomain("").unwrap();
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let params: Vec<(&str, &str)> =
                params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            h.call_in(realm, email, handler, &path, &params).unwrap();
        }
    }
}

/// Drops what legitimately differs between two registers.
fn normalize(mut state: Value) -> Value {
    let map = state.as_object_mut().unwrap();
    for volatile in ["queue_id", "last_event_id", "server_timestamp", "presence_last_update_id"] {
        map.remove(volatile);
    }
    state
}

#[track_caller]
fn assert_same_state(applied: Value, fresh: Value) {
    if let Some((path, a, f)) = first_difference("", &applied, &fresh) {
        panic!(
            "state after applying events differs from a fresh register at {path}:\n\
             applied: {a:#}\nfresh:   {f:#}"
        );
    }
}

/// The path and values of the first place two JSON values differ.
fn first_difference(path: &str, a: &Value, f: &Value) -> Option<(String, Value, Value)> {
    match (a, f) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let (xa, ya) =
                    (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
                if x.contains_key(key) != y.contains_key(key) {
                    return Some((format!("{path}.{key}"), xa.clone(), ya.clone()));
                }
                if let Some(d) = first_difference(&format!("{path}.{key}"), xa, ya) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (xa, ya))| first_difference(&format!("{path}[{i}]"), xa, ya)),
        _ if a == f => None,
        _ => Some((path.to_owned(), a.clone(), f.clone())),
    }
}

fn ids_of(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

fn sort_by_name(list: &mut Value) {
    if let Some(items) = list.as_array_mut() {
        items.sort_by_key(|s| s["name"].as_str().unwrap_or("").to_lowercase());
    }
}

/// Folds one event into a fetched register state, as a client does.
pub fn apply_event(state: &mut Value, event: &Value, me: u64, client_gravatar: bool) {
    if crate::verify_settings::handles(event) {
        return crate::verify_settings::apply_event(state, event);
    }
    if crate::verify_features::handles(event) {
        return crate::verify_features::apply_event(state, event);
    }
    if crate::verify_organization::handles(event) {
        return crate::verify_organization::apply_event(state, event);
    }
    match event["type"].as_str().unwrap() {
        "message" => {
            let m = &event["message"];
            let id = m["id"].as_u64().unwrap();
            if state.get("max_message_id").is_some() {
                let max = state["max_message_id"].as_i64().unwrap().max(id as i64);
                state["max_message_id"] = json!(max);
            }
            let flags: Vec<&str> =
                event["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            if state.get("unread_msgs").is_some() && !flags.contains(&"read") {
                add_unread(&mut state["unread_msgs"], m, &flags, me);
            }
            for list in ["subscriptions", "never_subscribed", "streams"] {
                for s in state.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    if s["stream_id"] == m["stream_id"] {
                        if s["first_message_id"].is_null() {
                            s["first_message_id"] = json!(id);
                        }
                        s["is_recently_active"] = json!(true);
                    }
                }
            }
            if m["type"] == "private" {
                if let Some(recent) =
                    state.get_mut("recent_private_conversations").and_then(Value::as_array_mut)
                {
                    let mut others: Vec<u64> = m["display_recipient"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["id"].as_u64().unwrap())
                        .filter(|u| *u != me)
                        .collect();
                    others.sort();
                    recent.retain(|c| ids_of(&c["user_ids"]) != others);
                    recent.push(json!({"max_message_id": id, "user_ids": others}));
                    recent.sort_by_key(|c| std::cmp::Reverse(c["max_message_id"].as_u64()));
                }
            }
        }
        "update_message_flags" => {
            let ids = ids_of(&event["messages"]);
            let add = event["op"] == "add";
            match event["flag"].as_str().unwrap() {
                "read" if add => {
                    if let Some(unread) = state.get_mut("unread_msgs") {
                        remove_unread(unread, &ids);
                    }
                }
                "starred" => {
                    if let Some(starred) = state.get_mut("starred_messages") {
                        let mut list = ids_of(starred);
                        list.retain(|i| !ids.contains(i));
                        if add {
                            list.extend(&ids);
                        }
                        list.sort();
                        *starred = json!(list);
                    }
                }
                other => panic!("harness cannot apply update_message_flags {other}"),
            }
        }
        "presence" => {
            let Some(presences) = state.get_mut("presences") else { return };
            if let Some(modern) = event.get("presences") {
                for (k, v) in modern.as_object().unwrap() {
                    presences[k] = v.clone();
                }
            } else {
                let p = &event["presence"]["website"];
                let aggregated = json!({"client": p["client"], "status": p["status"], "timestamp": p["timestamp"]});
                presences[event["email"].as_str().unwrap()] =
                    json!({"website": p, "aggregated": aggregated});
            }
        }
        "realm_user" if event["op"] == "update" => {
            apply_person_update(state, &event["person"], me, client_gravatar)
        }
        "realm_user" => {
            assert_eq!(event["op"], "add");
            if let Some(users) = state.get_mut("realm_users").and_then(Value::as_array_mut) {
                users.push(event["person"].clone());
            }
        }
        "user_group" if event["op"] != "add_members" => apply_group_event(state, event),
        "custom_profile_fields" => state["custom_profile_fields"] = event["fields"].clone(),
        "realm_bot" => {
            let Some(list) = state.get_mut("realm_bots").and_then(Value::as_array_mut) else {
                return;
            };
            let bot = &event["bot"];
            match event["op"].as_str().unwrap() {
                "add" => {
                    list.retain(|b| b["user_id"] != bot["user_id"]);
                    list.push(bot.clone());
                    list.sort_by_key(|b| b["user_id"].as_u64());
                }
                "update" => {
                    let entry = list.iter_mut().find(|b| b["user_id"] == bot["user_id"]);
                    let entry = entry.expect("realm_bot update for a bot the client has");
                    for (k, v) in bot.as_object().unwrap() {
                        entry[k.as_str()] = v.clone();
                    }
                }
                "delete" => list.retain(|b| b["user_id"] != bot["user_id"]),
                other => panic!("realm_bot {other}"),
            }
        }
        "default_streams" => {
            if state.get("realm_default_streams").is_some() {
                state["realm_default_streams"] = event["default_streams"].clone();
            }
            // Channel objects say whether they are default channels.
            let defaults = event["default_streams"].as_array().unwrap();
            for list in ["subscriptions", "never_subscribed", "unsubscribed", "streams"] {
                for s in state.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    if s.get("is_default").is_some() {
                        let on = defaults.iter().any(|d| d["stream_id"] == s["stream_id"]);
                        s["is_default"] = json!(on);
                    }
                }
            }
        }
        "user_group" => {
            assert_eq!(event["op"], "add_members");
            let groups = state.get_mut("realm_user_groups").and_then(Value::as_array_mut);
            for g in groups.into_iter().flatten() {
                if g["id"] == event["group_id"] {
                    let mut members = ids_of(&g["members"]);
                    members.extend(ids_of(&event["user_ids"]));
                    members.sort();
                    g["members"] = json!(members);
                }
            }
        }
        "stream" if event["op"] == "update" => {
            let id = &event["stream_id"];
            for list in ["subscriptions", "never_subscribed", "streams"] {
                for s in state.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    if s["stream_id"] != *id {
                        continue;
                    }
                    s[event["property"].as_str().unwrap()] = event["value"].clone();
                    for extra in
                        ["rendered_description", "history_public_to_subscribers", "is_web_public"]
                    {
                        if let Some(v) = event.get(extra) {
                            s[extra] = v.clone();
                        }
                    }
                }
                if let Some(l) = state.get_mut(list) {
                    sort_by_name(l);
                }
            }
            let defaults = state.get_mut("realm_default_streams").and_then(Value::as_array_mut);
            for s in defaults.into_iter().flatten().filter(|s| s["stream_id"] == *id) {
                // Default-channel objects carry no `first_message_id`.
                if event["property"] != "first_message_id" {
                    s[event["property"].as_str().unwrap()] = event["value"].clone();
                }
                for extra in
                    ["rendered_description", "history_public_to_subscribers", "is_web_public"]
                {
                    if let Some(v) = event.get(extra) {
                        s[extra] = v.clone();
                    }
                }
                // Only the fields default-channel objects carry.
                for key in [
                    "can_add_subscribers_group",
                    "can_remove_subscribers_group",
                    "can_administer_channel_group",
                    "can_send_message_group",
                    "can_delete_any_message_group",
                    "can_delete_own_message_group",
                    "can_move_messages_out_of_channel_group",
                ] {
                    s.as_object_mut().unwrap().remove(key);
                }
            }
        }
        "stream" if event["op"] == "delete" => {
            let gone = ids_of(&event["stream_ids"]);
            for list in ["subscriptions", "never_subscribed", "unsubscribed", "streams"] {
                if let Some(l) = state.get_mut(list).and_then(Value::as_array_mut) {
                    l.retain(|s| !gone.contains(&s["stream_id"].as_u64().unwrap()));
                }
            }
        }
        "stream" => {
            assert_eq!(event["op"], "create");
            // With include_subscribers, every channel object has a list.
            let lists = state["subscriptions"]
                .as_array()
                .is_some_and(|subs| subs.iter().any(|s| s.get("subscribers").is_some()));
            // `streams` holds channel objects without subscriber lists.
            if let Some(streams) = state.get_mut("streams") {
                for s in event["streams"].as_array().unwrap() {
                    let mut s = s.clone();
                    s.as_object_mut().unwrap().remove("subscribers");
                    streams.as_array_mut().unwrap().push(s);
                }
                sort_by_name(streams);
            }
            if let Some(never) = state.get_mut("never_subscribed") {
                for s in event["streams"].as_array().unwrap() {
                    let mut s = s.clone();
                    if lists && s.get("subscribers").is_none() {
                        s["subscribers"] = json!([]);
                    }
                    never.as_array_mut().unwrap().push(s);
                }
                sort_by_name(never);
            }
        }
        "subscription" => match event["op"].as_str().unwrap() {
            "add" => {
                let added = event["subscriptions"].as_array().unwrap();
                for list in ["never_subscribed", "unsubscribed"] {
                    if let Some(l) = state.get_mut(list).and_then(Value::as_array_mut) {
                        l.retain(|s| added.iter().all(|a| a["stream_id"] != s["stream_id"]));
                    }
                }
                if let Some(subs) = state.get_mut("subscriptions") {
                    subs.as_array_mut().unwrap().extend(added.iter().cloned());
                    sort_by_name(subs);
                }
                // The channel's own fields (its subscriber count) as the
                // new subscription object carries them.
                for s in
                    state.get_mut("streams").and_then(Value::as_array_mut).into_iter().flatten()
                {
                    let Some(sub) = added.iter().find(|a| a["stream_id"] == s["stream_id"]) else {
                        continue;
                    };
                    for (key, value) in s.as_object_mut().unwrap() {
                        if let Some(new) = sub.get(key.as_str()) {
                            *value = new.clone();
                        }
                    }
                }
            }
            "peer_add" => {
                let streams = ids_of(&event["stream_ids"]);
                let users = ids_of(&event["user_ids"]);
                for list in ["subscriptions", "never_subscribed", "streams"] {
                    for s in state.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten()
                    {
                        if !streams.contains(&s["stream_id"].as_u64().unwrap()) {
                            continue;
                        }
                        let count = s["subscriber_count"].as_u64().unwrap();
                        s["subscriber_count"] = json!(count + users.len() as u64);
                        if let Some(subscribers) = s.get_mut("subscribers") {
                            let mut ids = ids_of(subscribers);
                            ids.extend(&users);
                            ids.sort();
                            *subscribers = json!(ids);
                        }
                    }
                }
            }
            "update" => {
                for sub in state["subscriptions"].as_array_mut().unwrap() {
                    if sub["stream_id"] == event["stream_id"] {
                        sub[event["property"].as_str().unwrap()] = event["value"].clone();
                    }
                }
            }
            "peer_remove" => {
                let streams = ids_of(&event["stream_ids"]);
                let users = ids_of(&event["user_ids"]);
                for list in ["subscriptions", "never_subscribed", "streams"] {
                    for s in state.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten()
                    {
                        if !streams.contains(&s["stream_id"].as_u64().unwrap()) {
                            continue;
                        }
                        let count = s["subscriber_count"].as_u64().unwrap();
                        s["subscriber_count"] = json!(count - users.len() as u64);
                        if let Some(subscribers) = s.get_mut("subscribers") {
                            let mut ids = ids_of(subscribers);
                            ids.retain(|u| !users.contains(u));
                            *subscribers = json!(ids);
                        }
                    }
                }
            }
            other => panic!("harness cannot apply subscription {other}"),
        },
        "update_message" => apply_update_message(state, event),
        "delete_message" => {
            if state.get("unread_msgs").is_some() {
                remove_unread(&mut state["unread_msgs"], &ids_of(&event["message_ids"]));
            }
        }
        "realm_emoji" => {
            assert_eq!(event["op"], "update");
            if state.get("realm_emoji").is_some() {
                state["realm_emoji"] = event["realm_emoji"].clone();
            }
        }
        // Register holds no list of attachments (GET /attachments does):
        // the event changes nothing a register returns.
        "attachment" => match event["op"].as_str().unwrap() {
            "add" | "update" | "remove" => {}
            other => panic!("harness cannot apply attachment {other}"),
        },
        other => panic!("harness cannot apply `{other}` events: add an arm to apply_event"),
    }
}

/// An `update_message` move: the moved messages' unread entries follow
/// them to their new channel and topic. (Content edits change nothing
/// register fetches.)
fn apply_update_message(state: &mut Value, event: &Value) {
    let Some(orig_topic) = event.get("orig_subject").and_then(Value::as_str) else { return };
    let Some(unread) = state.get_mut("unread_msgs") else { return };
    let from = event["stream_id"].clone();
    let to = event.get("new_stream_id").unwrap_or(&from).clone();
    let topic = event.get("subject").and_then(Value::as_str).unwrap_or(orig_topic).to_owned();
    let moved = ids_of(&event["message_ids"]);
    let list = unread["streams"].as_array_mut().unwrap();
    let mut taken = Vec::new();
    for entry in list.iter_mut() {
        if entry["stream_id"] == from && entry["topic"] == orig_topic {
            let ids = ids_of(&entry["unread_message_ids"]);
            let (go, stay): (Vec<u64>, Vec<u64>) = ids.into_iter().partition(|i| moved.contains(i));
            taken.extend(go);
            entry["unread_message_ids"] = json!(stay);
        }
    }
    list.retain(|e| !e["unread_message_ids"].as_array().unwrap().is_empty());
    if taken.is_empty() {
        return;
    }
    match list.iter_mut().find(|e| e["stream_id"] == to && e["topic"] == topic.as_str()) {
        Some(e) => {
            let mut ids = ids_of(&e["unread_message_ids"]);
            ids.extend(taken);
            ids.sort();
            e["unread_message_ids"] = json!(ids);
        }
        None => list.push(json!({"stream_id": to, "topic": topic, "unread_message_ids": taken})),
    }
    list.sort_by_key(|s| (s["stream_id"].as_u64(), s["topic"].as_str().map(str::to_owned)));
}

/// A `realm_user` `update`: one changed field of one person.
fn apply_person_update(state: &mut Value, person: &Value, me: u64, client_gravatar: bool) {
    let id = person["user_id"].clone();
    // The caller's own fields also sit at the top level of register.
    if id == me {
        for (key, value) in person.as_object().unwrap() {
            let key = if key == "new_email" { "email" } else { key.as_str() };
            if key != "user_id" {
                if let Some(slot) = state.get_mut(key) {
                    *slot = value.clone();
                }
            }
        }
    }
    // Zulip's client rule: with `client_gravatar`, a gravatar URL in the
    // user list is null (the client computes it).
    let mut person = person.clone();
    if client_gravatar && person["avatar_url"].as_str().is_some_and(|u| u.contains("gravatar.com"))
    {
        person["avatar_url"] = Value::Null;
        person["avatar_url_medium"] = Value::Null;
    }
    let person = &person;
    let Some(active) = state.get("realm_users") else { return };
    let mut all: Vec<(bool, Value)> = active
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (true, u.clone()))
        .chain(
            state["realm_non_active_users"].as_array().unwrap().iter().map(|u| (false, u.clone())),
        )
        .collect();
    for (is_active, u) in all.iter_mut() {
        if u["user_id"] != id {
            continue;
        }
        for (key, value) in person.as_object().unwrap() {
            match key.as_str() {
                "user_id" => {}
                "role" => {
                    let role = value.as_u64().unwrap();
                    u["role"] = value.clone();
                    u["is_owner"] = json!(role == 100);
                    u["is_admin"] = json!(role <= 200);
                    u["is_guest"] = json!(role == 600);
                }
                "is_active" => {
                    *is_active = value.as_bool().unwrap();
                    u["is_active"] = value.clone();
                }
                "new_email" => u["email"] = value.clone(),
                // A user object has only `avatar_url` and `avatar_version`.
                "avatar_source" | "avatar_url_medium" => {}
                "custom_profile_field" => {
                    let field = value["id"].to_string();
                    let data = u["profile_data"].as_object_mut().unwrap();
                    if value["value"] == "" {
                        data.remove(&field);
                    } else {
                        let mut v = json!({"value": value["value"]});
                        if let Some(r) = value.get("rendered_value") {
                            v["rendered_value"] = r.clone();
                        }
                        data.insert(field, v);
                    }
                }
                other => u[other] = value.clone(),
            }
        }
    }
    all.sort_by_key(|(_, u)| u["user_id"].as_u64());
    let pick = |want: bool| -> Value {
        Value::Array(all.iter().filter(|(a, _)| *a == want).map(|(_, u)| u.clone()).collect())
    };
    state["realm_users"] = pick(true);
    state["realm_non_active_users"] = pick(false);
}

/// `user_group` events other than `add_members`.
fn apply_group_event(state: &mut Value, event: &Value) {
    let Some(groups) = state.get_mut("realm_user_groups").and_then(Value::as_array_mut) else {
        return;
    };
    match event["op"].as_str().unwrap() {
        "add" => {
            groups.push(event["group"].clone());
            groups.sort_by_key(|g| g["id"].as_u64());
            return;
        }
        "update" if event["data"]["deactivated"] == true => {
            // Without `include_deactivated_groups` a deactivated group leaves.
            groups.retain(|g| g["id"] != event["group_id"]);
            return;
        }
        _ => {}
    }
    for g in groups.iter_mut().filter(|g| g["id"] == event["group_id"]) {
        match event["op"].as_str().unwrap() {
            "update" => {
                for (k, v) in event["data"].as_object().unwrap() {
                    g[k] = v.clone();
                }
            }
            "remove_members" => {
                let gone = ids_of(&event["user_ids"]);
                let members: Vec<u64> =
                    ids_of(&g["members"]).into_iter().filter(|u| !gone.contains(u)).collect();
                g["members"] = json!(members);
            }
            op @ ("add_subgroups" | "remove_subgroups") => {
                let change = ids_of(&event["direct_subgroup_ids"]);
                let mut subs = ids_of(&g["direct_subgroup_ids"]);
                subs.retain(|s| !change.contains(s));
                if op == "add_subgroups" {
                    subs.extend(change);
                }
                subs.sort();
                g["direct_subgroup_ids"] = json!(subs);
            }
            other => panic!("harness cannot apply user_group {other}"),
        }
    }
}

/// A new unread message in `unread_msgs` (the reading area's layout).
fn add_unread(unread: &mut Value, m: &Value, flags: &[&str], me: u64) {
    let id = m["id"].as_u64().unwrap();
    if m["type"] == "stream" {
        let list = unread["streams"].as_array_mut().unwrap();
        let entry = list
            .iter_mut()
            .find(|s| s["stream_id"] == m["stream_id"] && s["topic"] == m["subject"]);
        match entry {
            Some(e) => e["unread_message_ids"].as_array_mut().unwrap().push(json!(id)),
            None => list.push(json!({
                "stream_id": m["stream_id"], "topic": m["subject"], "unread_message_ids": [id],
            })),
        }
        list.sort_by_key(|s| (s["stream_id"].as_u64(), s["topic"].as_str().map(str::to_owned)));
    } else {
        let mut users: Vec<u64> = m["display_recipient"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        users.sort();
        if users.len() <= 2 {
            let other = users.iter().copied().find(|u| *u != me).unwrap_or(me);
            let list = unread["pms"].as_array_mut().unwrap();
            match list.iter_mut().find(|p| p["other_user_id"] == json!(other)) {
                Some(e) => e["unread_message_ids"].as_array_mut().unwrap().push(json!(id)),
                None => list.push(json!({
                    "other_user_id": other, "sender_id": other, "unread_message_ids": [id],
                })),
            }
            list.sort_by_key(|p| p["other_user_id"].as_u64());
        } else {
            let key: Vec<String> = users.iter().map(u64::to_string).collect();
            let key = key.join(",");
            let list = unread["huddles"].as_array_mut().unwrap();
            match list.iter_mut().find(|h| h["user_ids_string"] == json!(key)) {
                Some(e) => e["unread_message_ids"].as_array_mut().unwrap().push(json!(id)),
                None => list.push(json!({"user_ids_string": key, "unread_message_ids": [id]})),
            }
        }
    }
    if flags.contains(&"mentioned") || flags.contains(&"wildcard_mentioned") {
        unread["mentions"].as_array_mut().unwrap().push(json!(id));
    }
    unread["count"] = json!(unread["count"].as_u64().unwrap() + 1);
}

/// Messages marked read leave `unread_msgs`.
fn remove_unread(unread: &mut Value, ids: &[u64]) {
    let mut removed = 0;
    for kind in ["pms", "streams", "huddles"] {
        let list = unread[kind].as_array_mut().unwrap();
        for entry in list.iter_mut() {
            let before = ids_of(&entry["unread_message_ids"]);
            let after: Vec<u64> = before.iter().copied().filter(|i| !ids.contains(i)).collect();
            removed += before.len() - after.len();
            entry["unread_message_ids"] = json!(after);
        }
        list.retain(|e| !e["unread_message_ids"].as_array().unwrap().is_empty());
    }
    unread["mentions"].as_array_mut().unwrap().retain(|m| !ids.contains(&m.as_u64().unwrap()));
    unread["count"] = json!(unread["count"].as_u64().unwrap() - removed as u64);
}

fn send(h: &Harness, email: &str, params: &[(&str, &str)]) -> u64 {
    h.call(email, api::messages::send, params).unwrap()["id"].as_u64().unwrap()
}

const ALL: &[(&str, &str)] = &[("include_subscribers", "true")];

#[test]
fn channel_message() {
    let h = Harness::new();
    let send_it = |h: &Harness| {
        send(
            h,
            OTHELLO,
            &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "hi")],
        );
    };
    h.verify_action(HAMLET, ALL, send_it, &["message"]);
    h.verify_action(HAMLET, &[("apply_markdown", "true")], send_it, &["message"]);
    // The sender's own queue.
    h.verify_action(OTHELLO, ALL, send_it, &["message"]);
    // Not a recipient: nothing changes, no event.
    h.verify_action(CORDELIA, ALL, send_it, &[]);
}

#[test]
fn first_message_in_a_channel() {
    let h = Harness::new();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let (hamlet, othello) = (h.user(HAMLET).id, h.user(OTHELLO).id);
    h.commit(|s| {
        let new = build::NewChannel {
            name: "quiet",
            description: "",
            invite_only: false,
            creator: Some(hamlet),
            subscribers: &[hamlet, othello],
        };
        build::channel(s, &realm, &new, 0).unwrap()
    });
    let send_it = |h: &Harness| {
        send(h, HAMLET, &[("type", "stream"), ("to", "quiet"), ("topic", "t"), ("content", "1")]);
    };
    h.verify_action(OTHELLO, ALL, send_it, &["message"]);
}

#[test]
fn direct_message() {
    let h = Harness::new();
    let hamlet_id = h.user(HAMLET).id.0.to_string();
    let cordelia_id = h.user(CORDELIA).id.0.to_string();
    let to_one = format!("[{hamlet_id}]");
    let to_two = format!("[{hamlet_id}, {cordelia_id}]");
    h.verify_action(
        HAMLET,
        ALL,
        |h| {
            send(h, OTHELLO, &[("type", "private"), ("to", &to_one), ("content", "psst")]);
        },
        &["message"],
    );
    h.verify_action(
        HAMLET,
        ALL,
        |h| {
            send(h, OTHELLO, &[("type", "private"), ("to", &to_two), ("content", "all")]);
        },
        &["message"],
    );
}

#[test]
fn message_flags() {
    let h = Harness::new();
    let id = send(
        &h,
        OTHELLO,
        &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "read me")],
    )
    .to_string();
    let ids = format!("[{id}]");
    let flag = |op: &'static str, flag: &'static str| {
        let ids = ids.clone();
        move |h: &Harness| {
            let params = [("op", op), ("flag", flag), ("messages", ids.as_str())];
            h.call(HAMLET, api::flags::update, &params).unwrap();
        }
    };
    h.verify_action(HAMLET, ALL, flag("add", "starred"), &["update_message_flags"]);
    h.verify_action(HAMLET, ALL, flag("remove", "starred"), &["update_message_flags"]);
    h.verify_action(HAMLET, ALL, flag("add", "read"), &["update_message_flags"]);
}

#[test]
fn presence() {
    let h = Harness::new();
    let report = |status: &'static str| {
        move |h: &Harness| {
            h.call(OTHELLO, api::presence::update_presence, &[("status", status)]).unwrap();
        }
    };
    h.verify_action(HAMLET, &[], report("active"), &["presence"]);
    let slim = [
        ("slim_presence", "true"),
        ("client_capabilities", r#"{"simplified_presence_events": true}"#),
    ];
    let first_report = |h: &Harness| {
        h.call(IAGO, api::presence::update_presence, &[("status", "idle")]).unwrap();
    };
    h.verify_action(HAMLET, &slim, first_report, &["presence"]);
    // A refresh that changes no status sends nothing (only timestamps
    // move, which clients refresh with their own periodic reports).
    let queue = h.register(CORDELIA, &slim)["queue_id"].as_str().unwrap().to_owned();
    report("active")(&h);
    assert!(h.events(CORDELIA, &queue, -1).is_empty());
}

#[test]
fn realm_user_add() {
    let h = Harness::new();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let new_user = |h: &Harness| {
        h.commit(|s| {
            let new = build::NewUser {
                email: "ophelia@natter.test",
                full_name: "Ophelia",
                role: natter::state::Role::Member,
                bot: None,
            };
            build::user(s, realm.id, &new, "k".repeat(32), 0).unwrap()
        });
    };
    // role:members, role:fullmembers, role:everyone, role:internet.
    let groups = ["user_group"; 4];
    let mut expected = vec!["realm_user"];
    expected.extend(groups);
    h.verify_action(HAMLET, &[], new_user, &expected);
}

#[test]
fn channel_create_and_subscribe() {
    let h = Harness::new();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let (othello, cordelia) = (h.user(OTHELLO).id, h.user(CORDELIA).id);
    let create = |name: &'static str, private: bool| {
        let realm = realm.clone();
        move |h: &Harness| {
            h.commit(|s| {
                let new = build::NewChannel {
                    name,
                    description: "new",
                    invite_only: private,
                    creator: Some(othello),
                    subscribers: &[othello],
                };
                build::channel(s, &realm, &new, 0).unwrap()
            });
        }
    };
    // A bystander learns of the channel and its first subscriber.
    // (A public channel is a default channel in the seed's builder, so
    // default-channel lists hear of it too.)
    let public = ["stream", "subscription", "default_streams"];
    h.verify_action(HAMLET, ALL, create("new one", false), &public);
    // The creator is subscribed.
    h.verify_action(OTHELLO, ALL, create("another", false), &public);
    // A private channel: an administrator sees it, a member does not.
    h.verify_action(IAGO, ALL, create("hidden", true), &["stream", "subscription"]);
    h.verify_action(HAMLET, ALL, create("hidden 2", true), &[]);
    // Subscribing someone: `add` for them, `peer_add` for the others.
    let channel = h.app.state.channel_by_name(realm.id, "new one").unwrap().id;
    let subscribe = |h: &Harness| {
        h.commit(|_| Mutation::Subscribe {
            channel,
            subscribers: vec![(cordelia, Subscription::new("#76ce90".into()))],
        });
    };
    let events = h.verify_action(CORDELIA, ALL, subscribe, &["subscription"]);
    assert_eq!(events[0]["op"], "add");
    let cordelia2 = h.user("shiva@natter.test").id;
    let subscribe = |h: &Harness| {
        h.commit(|_| Mutation::Subscribe {
            channel,
            subscribers: vec![(cordelia2, Subscription::new("#76ce90".into()))],
        });
    };
    let events = h.verify_action(HAMLET, &[], subscribe, &["subscription"]);
    assert_eq!(events[0]["op"], "peer_add");
}

/// Calls a handler with path arguments.
fn call_path(h: &Harness, email: &str, handler: Handler, path: &[&str], params: &[(&str, &str)]) {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    h.call_in(realm, email, handler, path, params).unwrap();
}

#[test]
fn subscription_property_updates() {
    let h = Harness::new();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let denmark = h.app.state.channel_by_name(realm.id, "Denmark").unwrap().id.0;
    let set = |property: &'static str, value: Value| {
        move |h: &Harness| {
            let data = json!([{"stream_id": denmark, "property": property, "value": value}]);
            let data = data.to_string();
            h.call(HAMLET, api::subscriptions::update_properties, &[("subscription_data", &data)])
                .unwrap();
        }
    };
    // Muting is two events: the property and its legacy inverse.
    let events = h.verify_action(HAMLET, ALL, set("is_muted", json!(true)), &["subscription"; 2]);
    assert_eq!(
        (events[0]["property"].as_str(), events[1]["property"].as_str()),
        (Some("is_muted"), Some("in_home_view"))
    );
    assert_eq!(events[1]["value"], false);
    h.verify_action(HAMLET, ALL, set("in_home_view", json!(true)), &["subscription"; 2]);
    h.verify_action(HAMLET, ALL, set("color", json!("#123abc")), &["subscription"]);
    h.verify_action(HAMLET, ALL, set("pin_to_top", json!(true)), &["subscription"]);
    h.verify_action(HAMLET, ALL, set("push_notifications", json!(false)), &["subscription"]);
    h.verify_action(HAMLET, ALL, set("push_notifications", Value::Null), &["subscription"]);
}

#[test]
fn unsubscribe_events() {
    let h = Harness::new();
    // Others see `peer_remove`.
    let leave = |h: &Harness| {
        h.call(OTHELLO, api::subscriptions::unsubscribe, &[("subscriptions", r#"["Denmark"]"#)])
            .unwrap();
    };
    let events = h.verify_action(HAMLET, ALL, leave, &["subscription"]);
    assert_eq!(events[0]["op"], "peer_remove");
    // The one who leaves gets `remove` (clients move the channel to
    // `unsubscribed`, where a fresh register lists it too).
    let queue = h.register(CORDELIA, &[])["queue_id"].as_str().unwrap().to_owned();
    h.call(CORDELIA, api::subscriptions::unsubscribe, &[("subscriptions", r#"["general"]"#)])
        .unwrap();
    let events = h.events(CORDELIA, &queue, -1);
    assert_eq!(events[0]["op"], "remove");
    assert_eq!(events[0]["subscriptions"][0]["name"], "general");
}

#[test]
fn channel_updates() {
    let h = Harness::new();
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let denmark = h.app.state.channel_by_name(realm.id, "Denmark").unwrap().id.0.to_string();
    let core = h.app.state.channel_by_name(realm.id, "core team").unwrap().id.0.to_string();
    let patch = |id: String, params: Vec<(&'static str, String)>| {
        move |h: &Harness| {
            let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            call_path(h, IAGO, api::streams::update, &[&id], &p);
        }
    };
    let d = denmark.clone();
    h.verify_action(
        HAMLET,
        ALL,
        patch(d.clone(), vec![("description", "A *new* one".into())]),
        &["stream"],
    );
    h.verify_action(
        CORDELIA,
        ALL,
        patch(d.clone(), vec![("new_name", "Danmark".into())]),
        &["stream"],
    );
    let group = json!({"new": {"direct_members": [h.user(OTHELLO).id.0], "direct_subgroups": []}})
        .to_string();
    h.verify_action(
        HAMLET,
        ALL,
        patch(d.clone(), vec![("can_add_subscribers_group", group)]),
        &["stream"],
    );
    h.verify_action(
        IAGO,
        ALL,
        patch(core, vec![("topics_policy", "disable_empty_topic".into())]),
        &["stream"],
    );
    // Turning a channel private: subscribers see the change, others see it go.
    let private =
        vec![("is_private", "true".to_owned()), ("is_default_stream", "false".to_owned())];
    let events =
        h.verify_action(CORDELIA, ALL, patch(d.clone(), private), &["stream", "default_streams"]);
    assert_eq!(events[0]["op"], "delete");
    // And back: those who can see it again get it as created.
    let public = vec![("is_private", "false".to_owned())];
    let events = h.verify_action(CORDELIA, ALL, patch(d.clone(), public), &["stream"]);
    assert_eq!(events[0]["op"], "create");
    // Archiving: clients with `archived_channels` see the property change;
    // the others see the channel go, as their register leaves it out.
    let archive = |h: &Harness| call_path(h, IAGO, api::streams::archive, &[&denmark], &[]);
    let unarchive = |h: &Harness| {
        call_path(h, IAGO, api::streams::update, &[&denmark], &[("is_archived", "false")]);
    };
    let archived_channels = [
        ("include_subscribers", "true"),
        ("client_capabilities", r#"{"archived_channels": true}"#),
    ];
    let events = h.verify_action(HAMLET, &archived_channels, archive, &["stream"]);
    assert_eq!(
        (events[0]["property"].as_str(), events[0]["value"].as_bool()),
        (Some("is_archived"), Some(true))
    );
    h.verify_action(HAMLET, &archived_channels, unarchive, &["stream"]);
    let events = h.verify_action(HAMLET, ALL, archive, &["stream"]);
    assert_eq!((events[0]["op"].as_str(), &events[0]["stream_ids"]), (Some("delete"), &json!([2])));
}

#[test]
fn user_updates() {
    let h = Harness::new();
    let othello = h.user(OTHELLO).id.0.to_string();
    let admin = |params: Vec<(&'static str, String)>, handler: Handler| {
        let othello = othello.clone();
        move |h: &Harness| {
            let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            call_path(h, "desdemona@natter.test", handler, &[&othello], &p);
        }
    };
    h.verify_action(
        HAMLET,
        &[],
        admin(vec![("full_name", "The Moor".into())], api::accounts::update_user),
        &["realm_user"],
    );
    // A role change also moves the user between system groups.
    let role = admin(vec![("role", "300".into())], api::accounts::update_user);
    let events = h.verify_action(HAMLET, &[], role, &["user_group", "realm_user"]);
    assert_eq!(events[1]["person"]["role"], 300);
    // Deactivation takes them out of every system group they were in.
    let deactivate = admin(vec![], api::accounts::deactivate);
    let mut expected = vec!["user_group"; 5];
    expected.push("realm_user");
    h.verify_action(HAMLET, &[], deactivate, &expected);
    h.verify_action(HAMLET, &[], admin(vec![], api::accounts::reactivate), &expected);
    // A new address: the API email for all, the real one for those who may see it.
    let email = admin(vec![("new_email", "moor@natter.test".into())], api::accounts::update_user);
    let events = h.verify_action(HAMLET, &[], email, &["realm_user", "realm_user"]);
    assert_eq!(events[0]["person"]["new_email"], "moor@natter.test");
    assert_eq!(events[1]["person"]["delivery_email"], "moor@natter.test");
    // A bot's new owner.
    let bot = h.user("helper-bot@natter.test").id.0.to_string();
    let owner = h.user(HAMLET).id.0.to_string();
    let reown = move |h: &Harness| {
        call_path(
            h,
            "desdemona@natter.test",
            api::accounts::update_bot,
            &[&bot],
            &[("bot_owner_id", &owner)],
        );
    };
    h.verify_action(CORDELIA, &[], reown, &["realm_user"]);
}

#[test]
fn group_and_profile_field_events() {
    let h = Harness::new();
    let (hamlet, othello) = (h.user(HAMLET).id.0, h.user(OTHELLO).id.0);
    let create = move |h: &Harness| {
        let members = json!([hamlet]).to_string();
        h.call(HAMLET, api::groups::create, &[("name", "crew"), ("members", &members)]).unwrap();
    };
    h.verify_action(CORDELIA, &[], create, &["user_group"]);
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let gid = h.app.state.groups.collect_sorted(|_, g| g.realm == realm.id && g.name == "crew")[0]
        .0
         .0
        .to_string();
    let on = |handler: Handler, params: Vec<(&'static str, String)>| {
        let gid = gid.clone();
        move |h: &Harness| {
            let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            call_path(h, HAMLET, handler, &[&gid], &p);
        }
    };
    h.verify_action(
        CORDELIA,
        &[],
        on(api::groups::update, vec![("name", "cast".into())]),
        &["user_group"],
    );
    h.verify_action(
        CORDELIA,
        &[],
        on(
            api::groups::update_members,
            vec![("add", format!("[{othello}]")), ("delete", format!("[{hamlet}]"))],
        ),
        &["user_group"; 2],
    );
    let members_group = realm.system_groups.id(natter::state::SystemGroup::Moderators).0;
    h.verify_action(
        CORDELIA,
        &[],
        on(api::groups::update_subgroups, vec![("add", format!("[{members_group}]"))]),
        &["user_group"],
    );
    h.verify_action(
        CORDELIA,
        &[],
        on(api::groups::update_subgroups, vec![("delete", format!("[{members_group}]"))]),
        &["user_group"],
    );
    h.verify_action(CORDELIA, &[], on(api::groups::deactivate, vec![]), &["user_group"]);

    let field = |h: &Harness| {
        h.call(IAGO, api::profile_fields::create, &[("name", "Team"), ("field_type", "1")])
            .unwrap();
    };
    h.verify_action(CORDELIA, &[], field, &["custom_profile_fields"]);
    let fid = h.app.state.profile_fields.collect_sorted(|_, _| true)[0].0;
    let value = move |h: &Harness| {
        let data = json!([{"id": fid, "value": "Players"}]).to_string();
        call_path(
            h,
            IAGO,
            api::accounts::update_user,
            &[&othello.to_string()],
            &[("profile_data", &data)],
        );
    };
    h.verify_action(CORDELIA, &[], value, &["realm_user"]);
}

#[test]
fn deactivation_ends_the_users_queues() {
    let h = Harness::new();
    let queue = h.register(OTHELLO, &[])["queue_id"].as_str().unwrap().to_owned();
    let bystander = h.register(HAMLET, &[])["queue_id"].as_str().unwrap().to_owned();
    let othello = h.user(OTHELLO).id.0.to_string();
    call_path(&h, "desdemona@natter.test", api::accounts::deactivate, &[&othello], &[]);
    // Polled as the deactivated user (authentication aside): the queue is gone.
    let params = [("queue_id", queue.as_str()), ("last_event_id", "-1"), ("dont_block", "true")];
    let err = h.call(OTHELLO, api::events::get_events, &params).unwrap_err();
    assert_eq!(err.code, "BAD_EVENT_QUEUE_ID");
    // Others keep theirs, and hear of the deactivation.
    let events = h.events(HAMLET, &bystander, -1);
    assert!(events.iter().any(|e| e["type"] == "realm_user" && e["person"]["is_active"] == false));
}

/// A topic move with both notices: the move, then the Notification Bot's
/// messages (read for the mover); Othello's unread message follows the
/// topic.
#[test]
fn message_move_with_notices() {
    let h = Harness::new();
    let params = |topic: &'static str| {
        [("type", "stream"), ("to", "Denmark"), ("topic", topic), ("content", "x")]
    };
    let first = send(&h, HAMLET, &params("old")).to_string();
    send(&h, OTHELLO, &params("old"));
    let move_topic = move |h: &Harness| {
        let p = [
            ("topic", "new"),
            ("propagate_mode", "change_all"),
            ("send_notification_to_old_thread", "true"),
        ];
        call_path(h, HAMLET, api::message_edit::update, &[&first], &p);
    };
    // Hamlet started the topic, so he follows it (automatic follow on
    // initiation): his follow moves along with it.
    let moved_follow = ["muted_topics", "user_topic", "muted_topics", "user_topic"];
    let expected: Vec<&str> =
        ["update_message", "message", "message"].into_iter().chain(moved_follow).collect();
    let events = h.verify_action(HAMLET, ALL, move_topic, &expected);
    assert_eq!(events[1]["message"]["sender_email"], "notification-bot@zulip.com");
    assert_eq!(events[1]["flags"], json!(["read"]));
    // Othello hears of it too, with the notices unread.
    let first = send(&h, HAMLET, &params("second")).to_string();
    let events = h.verify_action(
        OTHELLO,
        ALL,
        move |h: &Harness| {
            let p = [("topic", "✔ second"), ("propagate_mode", "change_all")];
            call_path(h, HAMLET, api::message_edit::update, &[&first], &p);
        },
        &["update_message", "message"],
    );
    assert_eq!(events[1]["flags"], json!(["read"]), "resolve notices arrive read by default");
}

/// A whole-topic move carries a follower's policy: the follower's queue
/// gets the move, the notice, and the policy leaving the old topic and
/// arriving at the new one, as a fresh register shows them.
#[test]
fn message_move_carries_topic_policies() {
    let h = Harness::new();
    let params = [("type", "stream"), ("to", "Denmark"), ("topic", "old"), ("content", "x")];
    let first = send(&h, HAMLET, &params).to_string();
    let denmark = h.app.state.channel_by_name(h.user(HAMLET).realm, "Denmark").unwrap().id.0;
    let follow = [
        ("stream_id", denmark.to_string()),
        ("topic", "old".to_owned()),
        ("visibility_policy", "3".to_owned()),
    ];
    let follow: Vec<(&str, &str)> = follow.iter().map(|(k, v)| (*k, v.as_str())).collect();
    h.call(OTHELLO, api::personal::update_user_topic, &follow).unwrap();
    let move_topic = move |h: &Harness| {
        let p = [("topic", "new"), ("propagate_mode", "change_all")];
        call_path(h, HAMLET, api::message_edit::update, &[&first], &p);
    };
    let events = h.verify_action(
        OTHELLO,
        ALL,
        move_topic,
        &["update_message", "message", "muted_topics", "user_topic", "muted_topics", "user_topic"],
    );
    assert_eq!(
        (events[3]["topic_name"].as_str(), events[3]["visibility_policy"].as_u64()),
        (Some("old"), Some(0))
    );
    assert_eq!(
        (events[5]["topic_name"].as_str(), events[5]["visibility_policy"].as_u64()),
        (Some("new"), Some(3))
    );
}

/// An invited user joins: the inviter's queue gets, among the account's
/// events, the Notification Bot's direct message, which folds into
/// `unread_msgs` and `recent_private_conversations` as a fresh register
/// shows them.
#[test]
fn join_notice_to_the_inviter() {
    let h = Harness::new();
    let invite = [
        ("invitee_emails", "ophelia@elsinore.test"),
        ("stream_ids", "[]"),
        ("welcome_message_custom_text", "Welcome!"),
    ];
    h.call(IAGO, api::invites::send_invites, &invite).unwrap();
    let key = h.app.state.settings.invites.collect_sorted(|_, _| true).pop().unwrap().1.key;
    let join = move |h: &Harness| {
        let p = [("full_name", "Ophelia"), ("password", "rosemary")];
        call_path(h, IAGO, api::invites::register_invitee, &[&key], &p);
    };
    let events = h.verify_action(
        IAGO,
        ALL,
        join,
        &[
            "realm_user",
            "user_group",
            "user_group",
            "user_group",
            "user_group",
            "invites_changed",
            "message",
        ],
    );
    let message = &events[6]["message"];
    assert_eq!(message["sender_email"], "notification-bot@zulip.com");
    assert_eq!(message["type"], "private");
    assert_eq!(events[6]["flags"], json!([]));
}
