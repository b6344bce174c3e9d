//! Channels and subscriptions: POST/DELETE /users/me/subscriptions,
//! POST /users/me/subscriptions/properties, GET/PATCH/DELETE
//! /streams/{stream_id}, GET /get_stream_id, GET /streams/{id}/members,
//! GET /users/{id}/subscriptions/{stream_id} — successes and refusals.

use serde_json::{json, Value};

use crate::util::{channel_id, user_id, Client, TestServer};

const OWNER: &str = "desdemona@natter.test";
const ADMIN: &str = "iago@natter.test"; // general, Denmark, core team
const MODERATOR: &str = "shiva@natter.test"; // general
const HAMLET: &str = "hamlet@natter.test"; // member: general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member: general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member: general
const GUEST: &str = "polonius@natter.test"; // guest: general

fn subscribe(c: &Client, params: &[(&str, &str)]) -> crate::util::Response {
    c.post("/users/me/subscriptions", params)
}

fn my_sub(c: &Client, id: u64) -> Value {
    let subs = c.get("/users/me/subscriptions", &[]).ok();
    subs["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stream_id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn members(c: &Client, id: u64) -> Vec<u64> {
    let r = c.get(&format!("/streams/{id}/members"), &[]).ok();
    r["subscribers"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
}

#[test]
fn creating_channels_with_every_option() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let me = user_id(&server, HAMLET);
    let r = subscribe(
        &hamlet,
        &[
            ("subscriptions", r#"[{"name": "plans", "description": "Our **plans**"}]"#),
            ("invite_only", "true"),
            ("history_public_to_subscribers", "false"),
            ("topics_policy", "disable_empty_topic"),
            (
                "can_send_message_group",
                &json!({"direct_members": [me], "direct_subgroups": []}).to_string(),
            ),
        ],
    )
    .ok();
    assert_eq!(r["subscribed"], json!({ me.to_string(): ["plans"] }));
    assert_eq!(r["already_subscribed"], json!({}));
    assert!(r.get("unauthorized").is_none());

    let id = channel_id(&hamlet, "PLANS");
    let s = hamlet.get(&format!("/streams/{id}"), &[]).ok()["stream"].clone();
    assert_eq!(s["name"], "plans");
    assert_eq!(s["description"], "Our **plans**");
    assert!(s["rendered_description"].as_str().unwrap().contains("<strong>plans</strong>"));
    assert_eq!(
        (s["invite_only"].as_bool(), s["history_public_to_subscribers"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(s["topics_policy"], "disable_empty_topic");
    assert_eq!(s["creator_id"], me);
    assert_eq!(
        s["can_send_message_group"],
        json!({"direct_members": [me], "direct_subgroups": []})
    );
    assert_eq!(
        s["can_administer_channel_group"],
        json!({"direct_members": [me], "direct_subgroups": []})
    );
    assert_eq!(s["is_default"], false);
    let sub = my_sub(&hamlet, id);
    assert!(
        sub["color"].as_str().unwrap().len() == 7
            && sub["color"].as_str().unwrap().starts_with('#')
    );
    assert_eq!(sub["in_home_view"], true);

    // A second call: already subscribed, keyed by user id.
    let r = subscribe(&hamlet, &[("subscriptions", r#"[{"name": "plans"}]"#)]).ok();
    assert_eq!(r["subscribed"], json!({}));
    assert_eq!(r["already_subscribed"], json!({ me.to_string(): ["plans"] }));

    // Outsiders do not learn the private channel exists.
    let othello = server.client(OTHELLO);
    othello.get("/get_stream_id", &[("stream", "plans")]).err(400, "STREAM_DOES_NOT_EXIST");
    othello.get(&format!("/streams/{id}"), &[]).err(400, "STREAM_DOES_NOT_EXIST");
    othello.get(&format!("/streams/{id}/members"), &[]).err(400, "STREAM_DOES_NOT_EXIST");

    // Public channels force public history; retention words.
    let owner = server.client(OWNER);
    subscribe(
        &owner,
        &[
            ("subscriptions", r#"[{"name": "open"}, {"name": "forever"}]"#),
            ("history_public_to_subscribers", "false"),
            ("message_retention_days", "unlimited"),
            ("is_default_stream", "true"),
        ],
    )
    .ok();
    let open =
        owner.get(&format!("/streams/{}", channel_id(&owner, "open")), &[]).ok()["stream"].clone();
    assert_eq!(open["history_public_to_subscribers"], true);
    assert_eq!(open["message_retention_days"], -1);
    assert_eq!(open["is_default"], true);
    assert_eq!(channel_id(&owner, "forever"), channel_id(&owner, "open") + 1);
}

#[test]
fn creation_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let one = |c: &Client, extra: &[(&str, &str)]| {
        let mut p = vec![("subscriptions", r#"[{"name": "new one"}]"#)];
        p.extend_from_slice(extra);
        subscribe(c, &p)
    };
    one(&server.client(GUEST), &[]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("is_default_stream", "true")]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("message_retention_days", "30")]).err(400, "BAD_REQUEST");
    one(&server.client(OWNER), &[("message_retention_days", "0")]).err(400, "BAD_REQUEST");
    one(&server.client(OWNER), &[("message_retention_days", "soon")]).err(400, "BAD_REQUEST");
    // Web-public channels: the dev realm allows spectators, but only
    // moderators and above create them, and never private; a realm without
    // spectator access refuses everyone, its owner included.
    let e = one(&hamlet, &[("is_web_public", "true")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission to create web-public channels");
    let e = one(&server.client(OWNER), &[("is_web_public", "true"), ("invite_only", "true")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "A web-public channel cannot be private.");
    let king = server.client("king@lear.test").with_host("lear.localhost");
    let e = one(&king, &[("is_web_public", "true")]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Web-public channels are not enabled.");
    one(&server.client(ADMIN), &[("is_default_stream", "true"), ("invite_only", "true")])
        .err(400, "BAD_REQUEST");
    one(&hamlet, &[("topics_policy", "whatever")]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("folder_id", "3")]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("can_add_subscribers_group", "999999")]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("can_add_subscribers_group", r#"{"direct_members": [999999]}"#)])
        .err(400, "BAD_REQUEST");
    one(&hamlet, &[("principals", "[999999]")]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("principals", r#"["nobody@natter.test"]"#)]).err(400, "BAD_REQUEST");
    one(&hamlet, &[("principals", r#"["king@lear.test"]"#)]).err(400, "BAD_REQUEST");
    subscribe(&hamlet, &[("subscriptions", r#"[{"name": "   "}]"#)]).err(400, "BAD_REQUEST");
    let long = format!(r#"[{{"name": "{}"}}]"#, "x".repeat(61));
    subscribe(&hamlet, &[("subscriptions", &long)]).err(400, "BAD_REQUEST");
    let long = format!(r#"[{{"name": "d", "description": "{}"}}]"#, "x".repeat(1025));
    subscribe(&hamlet, &[("subscriptions", &long)]).err(400, "BAD_REQUEST");
    subscribe(&hamlet, &[("subscriptions", "{")]).err(400, "INVALID_JSON");
    subscribe(&hamlet, &[]).err(400, "REQUEST_VARIABLE_MISSING");
    // Nothing of the refused requests was created.
    hamlet.get("/get_stream_id", &[("stream", "new one")]).err(400, "STREAM_DOES_NOT_EXIST");
}

#[test]
fn subscribing_others_and_authorization_errors() {
    let server = TestServer::start();
    let cordelia = server.client(CORDELIA);
    let hamlet = server.client(HAMLET);
    let cid = user_id(&server, CORDELIA);
    let oid = user_id(&server, OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark");
    let core = channel_id(&hamlet, "core team");

    // A member subscribes others to a public channel, by email and by id.
    let r = subscribe(
        &cordelia,
        &[
            ("subscriptions", r#"[{"name": "Denmark"}]"#),
            ("principals", &format!(r#"["{CORDELIA}", {oid}]"#)),
        ],
    )
    .ok();
    assert_eq!(r["subscribed"], json!({ cid.to_string(): ["Denmark"] }));
    assert_eq!(r["already_subscribed"], json!({ oid.to_string(): ["Denmark"] }));
    assert!(members(&hamlet, denmark).contains(&cid));

    // A private channel: an outsider is refused, fatally or not.
    subscribe(&cordelia, &[("subscriptions", r#"[{"name": "core team"}]"#)])
        .err(400, "BAD_REQUEST");
    let r = subscribe(
        &cordelia,
        &[
            ("subscriptions", r#"[{"name": "core team"}, {"name": "fresh"}]"#),
            ("authorization_errors_fatal", "false"),
        ],
    )
    .ok();
    assert_eq!(r["unauthorized"], json!(["core team"]));
    assert_eq!(r["subscribed"], json!({ cid.to_string(): ["fresh"] }));
    // A subscriber may add others to it.
    let r = subscribe(
        &hamlet,
        &[("subscriptions", r#"[{"name": "core team"}]"#), ("principals", &format!("[{oid}]"))],
    )
    .ok();
    assert_eq!(r["subscribed"], json!({ oid.to_string(): ["core team"] }));
    // Guests may not subscribe anyone, not even themselves to a public channel.
    let guest = server.client(GUEST);
    subscribe(&guest, &[("subscriptions", r#"[{"name": "Denmark"}]"#)]).err(400, "BAD_REQUEST");
    subscribe(
        &guest,
        &[("subscriptions", r#"[{"name": "general"}]"#), ("principals", &format!("[{cid}]"))],
    )
    .err(400, "BAD_REQUEST");

    // Subscription status and members.
    let status = |c: &Client, u: u64, s: u64| c.get(&format!("/users/{u}/subscriptions/{s}"), &[]);
    assert_eq!(status(&hamlet, oid, core).ok()["is_subscribed"], true);
    assert_eq!(status(&hamlet, cid, core).ok()["is_subscribed"], false);
    status(&cordelia, oid, core).err(400, "STREAM_DOES_NOT_EXIST");
    status(&hamlet, 999_999, core).err(400, "BAD_REQUEST");
    // Administrators see a private channel's subscribers; guests see none of it.
    assert!(members(&server.client(OWNER), core).contains(&oid));
    guest.get(&format!("/streams/{core}/members"), &[]).err(400, "STREAM_DOES_NOT_EXIST");
    guest.get(&format!("/streams/{denmark}/members"), &[]).err(400, "STREAM_DOES_NOT_EXIST");
}

#[test]
fn unsubscribing() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let oid = user_id(&server, OTHELLO);
    let denmark = channel_id(&hamlet, "Denmark");
    let remove = |c: &Client, p: &[(&str, &str)]| c.request("DELETE", "/users/me/subscriptions", p);

    let r = remove(&othello, &[("subscriptions", r#"["Denmark", "core team"]"#)]);
    // Othello does not know "core team" exists.
    r.err(400, "STREAM_DOES_NOT_EXIST");
    // Named twice (in two spellings): removed once.
    let r = remove(&othello, &[("subscriptions", r#"["Denmark", "denmark"]"#)]).ok();
    assert_eq!((r["removed"].clone(), r["not_removed"].clone()), (json!(["Denmark"]), json!([])));
    assert!(!members(&hamlet, denmark).contains(&oid));
    let r = remove(&othello, &[("subscriptions", r#"["Denmark"]"#)]).ok();
    assert_eq!(r["not_removed"], json!(["Denmark"]));

    // Removing others needs can_remove_subscribers_group (administrators).
    let cid = user_id(&server, CORDELIA);
    remove(&hamlet, &[("subscriptions", r#"["general"]"#), ("principals", &format!("[{cid}]"))])
        .err(400, "BAD_REQUEST");
    let r = remove(
        &server.client(ADMIN),
        &[("subscriptions", r#"["general"]"#), ("principals", &format!("[{cid}]"))],
    )
    .ok();
    assert_eq!(r["removed"], json!(["general"]));
    remove(&hamlet, &[("subscriptions", r#"["general"]"#), ("principals", "[999999]")])
        .err(400, "BAD_REQUEST");
    remove(&hamlet, &[]).err(400, "REQUEST_VARIABLE_MISSING");

    // Leaving a private channel: messages sent while away are not readable.
    let core = channel_id(&hamlet, "core team");
    remove(&hamlet, &[("subscriptions", r#"["core team"]"#)]).ok();
    hamlet.get(&format!("/streams/{core}"), &[]).err(400, "STREAM_DOES_NOT_EXIST");
    let sent = server
        .client(ADMIN)
        .post(
            "/messages",
            &[("type", "stream"), ("to", "core team"), ("topic", "t"), ("content", "secret")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    hamlet.get(&format!("/messages/{sent}"), &[]).err(400, "BAD_REQUEST");
}

#[test]
fn subscription_properties() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    let set = |data: Value| {
        hamlet
            .post("/users/me/subscriptions/properties", &[("subscription_data", &data.to_string())])
    };
    set(json!([
        {"stream_id": denmark, "property": "color", "value": "#A1B2C3"},
        {"stream_id": denmark, "property": "pin_to_top", "value": true},
        {"stream_id": denmark, "property": "desktop_notifications", "value": true},
        {"stream_id": denmark, "property": "push_notifications", "value": false},
        {"stream_id": denmark, "property": "wildcard_mentions_notify", "value": true},
        {"stream_id": denmark, "property": "in_home_view", "value": false},
    ]))
    .ok();
    let sub = my_sub(&hamlet, denmark);
    assert_eq!(sub["color"], "#a1b2c3");
    assert_eq!(
        (sub["pin_to_top"].as_bool(), sub["is_muted"].as_bool(), sub["in_home_view"].as_bool()),
        (Some(true), Some(true), Some(false))
    );
    assert_eq!(
        (sub["desktop_notifications"].clone(), sub["push_notifications"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(sub["wildcard_mentions_notify"], true);
    set(json!([{"stream_id": denmark, "property": "is_muted", "value": false},
               {"stream_id": denmark, "property": "desktop_notifications", "value": null}]))
    .ok();
    let sub = my_sub(&hamlet, denmark);
    assert_eq!(
        (sub["is_muted"].clone(), sub["desktop_notifications"].clone()),
        (json!(false), Value::Null)
    );

    for bad in [
        json!([{"stream_id": denmark, "property": "color", "value": "red"}]),
        json!([{"stream_id": denmark, "property": "color", "value": "#abc"}]),
        json!([{"stream_id": denmark, "property": "is_muted", "value": "maybe"}]),
        json!([{"stream_id": denmark, "property": "volume", "value": true}]),
        json!([{"stream_id": denmark, "property": "pin_to_top"}]),
        json!([{"property": "pin_to_top", "value": true}]),
        json!({"stream_id": denmark}),
    ] {
        set(bad).err(400, "BAD_REQUEST");
    }
    // Not subscribed (Cordelia is not in Denmark), or not visible.
    server
        .client(CORDELIA)
        .post(
            "/users/me/subscriptions/properties",
            &[(
                "subscription_data",
                &json!([{"stream_id": denmark, "property": "pin_to_top", "value": true}])
                    .to_string(),
            )],
        )
        .err(400, "BAD_REQUEST");
    set(json!([{"stream_id": 999999, "property": "pin_to_top", "value": true}]))
        .err(400, "STREAM_DOES_NOT_EXIST");
    // A refused element leaves the others unapplied.
    set(json!([{"stream_id": denmark, "property": "pin_to_top", "value": false},
               {"stream_id": denmark, "property": "color", "value": "nope"}]))
    .err(400, "BAD_REQUEST");
    assert_eq!(my_sub(&hamlet, denmark)["pin_to_top"], true);
    hamlet.post("/users/me/subscriptions/properties", &[]).err(400, "REQUEST_VARIABLE_MISSING");
}

#[test]
fn updating_channels() {
    let server = TestServer::start();
    let owner = server.client(OWNER);
    let admin = server.client(ADMIN);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    let core = channel_id(&hamlet, "core team");
    let patch =
        |c: &Client, id: u64, p: &[(&str, &str)]| c.request("PATCH", &format!("/streams/{id}"), p);
    let get = |id: u64| owner.get(&format!("/streams/{id}"), &[]).ok()["stream"].clone();

    // Metadata by an administrator.
    patch(
        &admin,
        denmark,
        &[
            ("new_name", "Danmark"),
            ("description", "Something *rotten*"),
            ("stream_id", &denmark.to_string()),
        ],
    )
    .ok();
    let s = get(denmark);
    assert_eq!(
        (s["name"].as_str(), s["description"].as_str()),
        (Some("Danmark"), Some("Something *rotten*"))
    );
    assert!(s["rendered_description"].as_str().unwrap().contains("<em>rotten</em>"));
    hamlet.get("/get_stream_id", &[("stream", "Denmark")]).err(400, "STREAM_DOES_NOT_EXIST");
    // Members do not administer channels they did not create.
    patch(&hamlet, denmark, &[("description", "mine")]).err(400, "BAD_REQUEST");
    patch(&admin, denmark, &[("new_name", "general")]).err(400, "BAD_REQUEST");
    patch(&admin, denmark, &[("new_name", "")]).err(400, "BAD_REQUEST");
    patch(&admin, denmark, &[("new_name", &"n".repeat(61))]).err(400, "BAD_REQUEST");

    // Privacy: invalid combinations, then private with protected history.
    patch(&admin, denmark, &[("history_public_to_subscribers", "false")]).err(400, "BAD_REQUEST");
    patch(&admin, denmark, &[("is_private", "false"), ("history_public_to_subscribers", "false")])
        .err(400, "BAD_REQUEST");
    // Web-public and back (the dev realm allows spectators; an
    // administrator is above the default moderators' group).
    patch(&admin, denmark, &[("is_web_public", "true")]).ok();
    assert_eq!(get(denmark)["is_web_public"], true);
    patch(&admin, denmark, &[("is_web_public", "false")]).ok();
    assert_eq!(get(denmark)["is_web_public"], false);
    // A default channel cannot become private unless it stops being default.
    patch(&admin, denmark, &[("is_private", "true")]).err(400, "BAD_REQUEST");
    patch(
        &admin,
        denmark,
        &[
            ("is_private", "true"),
            ("history_public_to_subscribers", "false"),
            ("is_default_stream", "false"),
        ],
    )
    .ok();
    let s = get(denmark);
    assert_eq!(
        (s["invite_only"].as_bool(), s["history_public_to_subscribers"].as_bool()),
        (Some(true), Some(false))
    );
    // Cordelia, subscribed later, does not see what came before.
    let before = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Danmark"), ("topic", "t"), ("content", "before")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let cid = user_id(&server, CORDELIA);
    subscribe(
        &hamlet,
        &[("subscriptions", r#"[{"name": "Danmark"}]"#), ("principals", &format!("[{cid}]"))],
    )
    .ok();
    let after = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Danmark"), ("topic", "t"), ("content", "after")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let cordelia = server.client(CORDELIA);
    cordelia.get(&format!("/messages/{before}"), &[]).err(400, "BAD_REQUEST");
    cordelia.get(&format!("/messages/{after}"), &[]).ok();

    // An administrator not subscribed to a private channel may change its
    // metadata but not its permissions.
    let oid = user_id(&server, OTHELLO);
    owner
        .request("DELETE", "/users/me/subscriptions", &[("subscriptions", r#"["core team"]"#)])
        .ok();
    patch(&owner, core, &[("description", "owners may")]).ok();
    patch(&owner, core, &[("history_public_to_subscribers", "false")]).err(400, "BAD_REQUEST");
    let group = json!({"new": {"direct_members": [oid], "direct_subgroups": []}}).to_string();
    patch(&owner, core, &[("can_send_message_group", &group)]).err(400, "BAD_REQUEST");
    patch(&admin, core, &[("can_send_message_group", &group)]).ok();
    assert_eq!(
        get(core)["can_send_message_group"],
        json!({"direct_members": [oid], "direct_subgroups": []})
    );
    // `old` must match.
    let stale =
        json!({"new": 1, "old": {"direct_members": [], "direct_subgroups": []}}).to_string();
    patch(&admin, core, &[("can_send_message_group", &stale)]).err(400, "BAD_REQUEST");
    let good = json!({"new": {"direct_members": [], "direct_subgroups": []}, "old": {"direct_members": [oid], "direct_subgroups": []}}).to_string();
    patch(&admin, core, &[("can_send_message_group", &good)]).ok();
    patch(&admin, core, &[("can_send_message_group", r#"{"old": 1}"#)]).err(400, "BAD_REQUEST");
    patch(&admin, core, &[("can_send_message_group", "5")]).err(400, "BAD_REQUEST");

    // Default channels, retention, folders, topics policy.
    let general = channel_id(&hamlet, "general");
    patch(&hamlet, general, &[("is_default_stream", "false")]).err(400, "BAD_REQUEST");
    patch(&admin, core, &[("is_default_stream", "true")]).err(400, "BAD_REQUEST");
    patch(&admin, general, &[("message_retention_days", "10")]).err(400, "BAD_REQUEST");
    patch(&owner, general, &[("message_retention_days", "10"), ("is_default_stream", "false")])
        .ok();
    let s = get(general);
    assert_eq!(
        (s["message_retention_days"].clone(), s["is_default"].clone()),
        (json!(10), json!(false))
    );
    patch(&owner, general, &[("message_retention_days", "realm_default")]).ok();
    assert_eq!(get(general)["message_retention_days"], Value::Null);
    patch(&admin, general, &[("folder_id", "4")]).err(400, "BAD_REQUEST");
    patch(&admin, general, &[("folder_id", "null")]).ok();
    patch(&admin, general, &[("topics_policy", "empty_topic_only")]).err(400, "BAD_REQUEST");
    patch(&admin, general, &[("topics_policy", "allow_empty_topic")]).ok();
    assert_eq!(get(general)["topics_policy"], "allow_empty_topic");
    subscribe(&hamlet, &[("subscriptions", r#"[{"name": "quiet"}]"#)]).ok();
    let quiet = channel_id(&hamlet, "quiet");
    hamlet
        .post("/messages", &[("type", "stream"), ("to", "quiet"), ("topic", ""), ("content", "x")])
        .ok();
    // The creator administers their channel.
    patch(&hamlet, quiet, &[("topics_policy", "empty_topic_only")]).ok();
    patch(&hamlet, quiet, &[("is_archived", "true")]).err(400, "BAD_REQUEST");
    patch(&hamlet, 999_999, &[("description", "x")]).err(400, "STREAM_DOES_NOT_EXIST");
    patch(&hamlet, general, &[("is_private", "maybe")]).err(400, "BAD_REQUEST");
}

#[test]
fn archiving_and_unarchiving() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let hamlet = server.client(HAMLET);
    let denmark = channel_id(&hamlet, "Denmark");
    hamlet.request("DELETE", &format!("/streams/{denmark}"), &[]).err(400, "BAD_REQUEST");
    admin.request("DELETE", &format!("/streams/{denmark}"), &[]).ok();
    admin.request("DELETE", &format!("/streams/{denmark}"), &[]).err(400, "BAD_REQUEST");
    let s = admin.get(&format!("/streams/{denmark}"), &[]).ok()["stream"].clone();
    assert_eq!(s["is_archived"], true);
    hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "x")],
        )
        .err(400, "BAD_REQUEST");
    subscribe(&server.client(CORDELIA), &[("subscriptions", r#"[{"name": "Denmark"}]"#)])
        .err(400, "BAD_REQUEST");
    let patch =
        |c: &Client, p: &[(&str, &str)]| c.request("PATCH", &format!("/streams/{denmark}"), p);
    patch(&admin, &[("description", "x")]).err(400, "BAD_REQUEST");
    patch(&hamlet, &[("is_archived", "false")]).err(400, "BAD_REQUEST");
    patch(&admin, &[("is_archived", "false")]).ok();
    hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "Denmark"), ("topic", "t"), ("content", "back")],
        )
        .ok();
    let guest = server.client(GUEST);
    guest.request("DELETE", &format!("/streams/{denmark}"), &[]).err(400, "STREAM_DOES_NOT_EXIST");
    let _ = MODERATOR;
}

#[test]
fn announcing_a_new_channel() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    subscribe(&hamlet, &[("subscriptions", r#"[{"name": "news"}]"#), ("announce", "true")]).ok();
    let id = hamlet.get("/users/me", &[]).ok()["max_message_id"].as_u64().unwrap();
    let m = hamlet.get(&format!("/messages/{id}"), &[]).ok();
    assert_eq!(m["message"]["display_recipient"], "general");
    assert_eq!(m["message"]["subject"], "new channels");
    assert_eq!(m["message"]["sender_email"], "notification-bot@zulip.com");
    // Rendered: a silent mention of the creator and a link to the channel.
    let html = m["message"]["content"].as_str().unwrap();
    assert!(html.contains("class=\"user-mention silent\""), "{html}");
    assert!(html.contains("class=\"stream\"") && html.contains(">#news</a>"), "{html}");
    assert!(m["raw_content"].as_str().unwrap().contains("#**news**"), "{m}");
}

#[test]
fn web_public_channels_are_shown_to_spectators() {
    let server = TestServer::start();
    let owner = server.client(OWNER);
    subscribe(
        &owner,
        &[("subscriptions", r#"[{"name": "town square"}]"#), ("is_web_public", "true")],
    )
    .ok();
    let id = channel_id(&owner, "town square");
    let channel = owner.get(&format!("/streams/{id}"), &[]).ok()["stream"].clone();
    assert_eq!(
        (channel["is_web_public"].as_bool(), channel["invite_only"].as_bool()),
        (Some(true), Some(false))
    );
    // A logged-out spectator's register lists it (and no private channel).
    let seen = server.anonymous().post("/register", &[]).ok();
    let names: Vec<&str> = seen["never_subscribed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"town square"), "{names:?}");
    assert!(!names.contains(&"core team"), "{names:?}");
}

#[test]
fn channels_left_are_listed_as_unsubscribed_until_rejoined() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let lists = |c: &Client| {
        let r = c.post("/register", &[("fetch_event_types", r#"["subscription"]"#)]).ok();
        let names = |key: &str| -> Vec<String> {
            r[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_owned())
                .collect()
        };
        (names("subscriptions"), names("unsubscribed"), names("never_subscribed"), r)
    };
    let (subs, left, _, _) = lists(&hamlet);
    assert!(subs.contains(&"Denmark".to_owned()) && left.is_empty(), "{subs:?} {left:?}");
    let color = |r: &serde_json::Value, key: &str| {
        r[key].as_array().unwrap().iter().find(|s| s["name"] == "Denmark").unwrap()["color"].clone()
    };
    let (_, _, _, before) = lists(&hamlet);
    let was = color(&before, "subscriptions");

    hamlet
        .request("DELETE", "/users/me/subscriptions", &[("subscriptions", r#"["Denmark"]"#)])
        .ok();
    let (subs, left, never, after) = lists(&hamlet);
    assert!(!subs.contains(&"Denmark".to_owned()));
    assert_eq!(left, ["Denmark"], "left channels are `unsubscribed`");
    assert!(!never.contains(&"Denmark".to_owned()), "{never:?}");
    assert_eq!(color(&after, "unsubscribed"), was, "with the settings the user had");
    // Nobody else's lists change.
    let (_, left, _, _) = lists(&server.client(OTHELLO));
    assert!(left.is_empty());

    subscribe(&hamlet, &[("subscriptions", r#"[{"name": "Denmark"}]"#)]).ok();
    let (subs, left, _, _) = lists(&hamlet);
    assert!(subs.contains(&"Denmark".to_owned()) && left.is_empty(), "{subs:?} {left:?}");
}

#[test]
fn channels_create_makes_one_channel_with_its_subscribers() {
    let server = TestServer::start();
    let iago = server.client(ADMIN);
    let hamlet_id = user_id(&server, HAMLET);
    let othello_id = user_id(&server, OTHELLO);
    let subscribers = format!("[{hamlet_id},{othello_id}]");
    let params = [
        ("name", "Rialto"),
        ("description", "The **bridge**"),
        ("subscribers", subscribers.as_str()),
        ("invite_only", "true"),
        ("history_public_to_subscribers", "true"),
    ];
    let id = iago.post("/channels/create", &params).ok()["id"].as_u64().unwrap();
    assert_eq!(channel_id(&iago, "Rialto"), id);
    let mut got = members(&iago, id);
    got.sort_unstable();
    let mut want = vec![hamlet_id, othello_id];
    want.sort_unstable();
    assert_eq!(got, want, "the creator is not subscribed unless listed");
    let hamlet = server.client(HAMLET);
    let channel = hamlet.get(&format!("/streams/{id}"), &[]).ok()["stream"].clone();
    assert_eq!(channel["invite_only"], true);
    assert_eq!(channel["history_public_to_subscribers"], true);
    assert_eq!(channel["rendered_description"], "<p>The <strong>bridge</strong></p>");
    assert_eq!(channel["creator_id"], user_id(&server, ADMIN));
    // The private channel stays hidden from others.
    server.client(CORDELIA).get(&format!("/streams/{id}"), &[]).err(400, "STREAM_DOES_NOT_EXIST");

    // The name is taken, whatever its letter case, and nothing changes.
    let body = hamlet
        .post("/channels/create", &[("name", "rialto"), ("subscribers", "[]")])
        .err(400, "CHANNEL_ALREADY_EXISTS");
    assert_eq!(body["msg"], "Channel 'rialto' already exists");
    assert_eq!(body["channel_name"], "rialto");

    // Bad subscribers, names and options create nothing.
    let bad: [&[(&str, &str)]; 7] = [
        &[("name", "Nowhere")],
        &[("name", "Nowhere"), ("subscribers", "[99999]")],
        &[("name", "Nowhere"), ("subscribers", "[\"hamlet@natter.test\"]")],
        &[("name", "Nowhere"), ("subscribers", "7")],
        &[("name", " "), ("subscribers", "[]")],
        &[("name", "Nowhere"), ("subscribers", "[]"), ("folder_id", "12345")],
        &[("name", "Nowhere"), ("subscribers", "[]"), ("topics_policy", "whatever")],
    ];
    for params in bad {
        let r = hamlet.post("/channels/create", params);
        assert_eq!(r.status, 400, "{params:?}: {}", r.body);
    }
    iago.post("/channels/create", &[("subscribers", "[]")]).err(400, "REQUEST_VARIABLE_MISSING");
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let r = lear.post("/channels/create", &[("name", "Nowhere"), ("subscribers", &subscribers)]);
    r.err(400, "BAD_REQUEST");
    let streams = iago.get("/streams", &[]).ok()["streams"].clone();
    assert!(!streams.as_array().unwrap().iter().any(|s| s["name"] == "Nowhere"));

    // Who may create: not a guest; a web-public channel needs its permission.
    let guest = server.client(GUEST);
    guest
        .post("/channels/create", &[("name", "Guests"), ("subscribers", "[]")])
        .err(400, "BAD_REQUEST");
    let params = [("name", "Open"), ("subscribers", "[]"), ("is_web_public", "true")];
    hamlet.post("/channels/create", &params).err(400, "BAD_REQUEST");
    let params = [("name", "Default"), ("subscribers", "[]"), ("is_default_stream", "true")];
    hamlet.post("/channels/create", &params).err(400, "BAD_REQUEST");
}
