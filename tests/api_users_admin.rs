//! Administering users and bots: GET/PATCH /users/{email}, PATCH
//! /users/{id}, DELETE /users/{id}, POST /users/{id}/reactivate, POST
//! /users, DELETE /users/me, API key regeneration, /bots, custom profile
//! fields, and `natter realm create`.

use serde_json::{json, Value};

use crate::util::{Client, TestServer, ACME};

const OWNER: &str = "desdemona@natter.test";
const ADMIN: &str = "iago@natter.test";
const MODERATOR: &str = "shiva@natter.test";
const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const GUEST: &str = "polonius@natter.test";

fn id(server: &TestServer, email: &str) -> u64 {
    server.client(email).get("/users/me", &[]).ok()["user_id"].as_u64().unwrap()
}

fn user(c: &Client, id: u64) -> Value {
    c.get(&format!("/users/{id}"), &[("include_custom_profile_fields", "true")]).ok()["user"]
        .clone()
}

fn patch(c: &Client, target: &str, p: &[(&str, &str)]) -> crate::util::Response {
    c.request("PATCH", &format!("/users/{target}"), p)
}

#[test]
fn get_and_patch_users_by_email_and_id() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let hid = id(&server, HAMLET);
    let by_email = admin.get(&format!("/users/{HAMLET}"), &[]).ok();
    assert_eq!(by_email["user"]["user_id"], hid);
    admin.get("/users/nobody@natter.test", &[]).err(400, "BAD_REQUEST");
    admin.get("/users/king@lear.test", &[]).err(400, "BAD_REQUEST");

    patch(&admin, HAMLET, &[("full_name", "Prince Hamlet")]).ok();
    assert_eq!(user(&admin, hid)["full_name"], "Prince Hamlet");
    patch(&admin, &hid.to_string(), &[("role", "300")]).ok();
    assert_eq!(user(&admin, hid)["role"], 300);
    for bad in ["", "x", "a*b", "Hamlet @ home", &"n".repeat(101)] {
        patch(&admin, HAMLET, &[("full_name", bad)]).err(400, "BAD_REQUEST");
    }
    patch(&admin, HAMLET, &[("role", "500")]).err(400, "BAD_REQUEST");
    patch(&admin, HAMLET, &[("role", "x")]).err(400, "BAD_REQUEST");
    patch(&admin, "999999", &[("full_name", "Nobody")]).err(400, "BAD_REQUEST");
    // Only administrators.
    patch(&server.client(MODERATOR), HAMLET, &[("full_name", "Hamlet")]).err(400, "BAD_REQUEST");
    patch(&server.client(OTHELLO), HAMLET, &[("full_name", "Hamlet")]).err(400, "BAD_REQUEST");
}

#[test]
fn role_rules() {
    let server = TestServer::start();
    let owner = server.client(OWNER);
    let admin = server.client(ADMIN);
    let oid = id(&server, OWNER);
    let hid = id(&server, HAMLET);
    let gid = id(&server, GUEST);
    // Only owners grant or remove the owner role.
    patch(&admin, &hid.to_string(), &[("role", "100")]).err(400, "BAD_REQUEST");
    patch(&admin, &oid.to_string(), &[("role", "400")]).err(400, "BAD_REQUEST");
    // The only owner keeps the role.
    patch(&owner, &oid.to_string(), &[("role", "200")]).err(400, "BAD_REQUEST");
    // A guest is not made an administrator in one step.
    patch(&owner, &gid.to_string(), &[("role", "200")]).err(400, "BAD_REQUEST");
    patch(&owner, &gid.to_string(), &[("role", "400")]).ok();
    patch(&owner, &gid.to_string(), &[("role", "200")]).ok();
    // With a second owner the first may step down.
    patch(&owner, &hid.to_string(), &[("role", "100")]).ok();
    patch(&owner, &oid.to_string(), &[("role", "200")]).ok();
    assert_eq!(user(&admin, oid)["is_owner"], false);
    assert_eq!(user(&admin, hid)["is_owner"], true);
}

#[test]
fn new_email_needs_an_owner() {
    let server = TestServer::start();
    let hid = id(&server, HAMLET);
    patch(&server.client(ADMIN), &hid.to_string(), &[("new_email", "prince@natter.test")])
        .err(400, "BAD_REQUEST");
    let owner = server.client(OWNER);
    patch(&owner, &hid.to_string(), &[("new_email", "not an email")]).err(400, "BAD_REQUEST");
    patch(&owner, &hid.to_string(), &[("new_email", OTHELLO)]).err(400, "BAD_REQUEST");
    patch(&owner, &hid.to_string(), &[("new_email", "prince@natter.test")]).ok();
    let key = server.account(HAMLET).key;
    let renamed = server.anonymous().with_auth("prince@natter.test", &key);
    assert_eq!(renamed.get("/users/me", &[]).ok()["email"], "prince@natter.test");
    server.client(HAMLET).get("/users/me", &[]).err(401, "INVALID_API_KEY");
}

#[test]
fn deactivation_and_reactivation() {
    let server = TestServer::start();
    let owner = server.client(OWNER);
    let admin = server.client(ADMIN);
    let hid = id(&server, HAMLET);
    let oid = id(&server, OWNER);
    server
        .client(HAMLET)
        .request("DELETE", &format!("/users/{}", id(&server, OTHELLO)), &[])
        .err(400, "BAD_REQUEST");
    admin.request("DELETE", &format!("/users/{oid}"), &[]).err(400, "BAD_REQUEST");
    owner.request("DELETE", &format!("/users/{oid}"), &[]).err(400, "BAD_REQUEST");
    owner.request("DELETE", "/users/me", &[]).err(400, "BAD_REQUEST");
    admin.request("DELETE", "/users/999999", &[]).err(400, "BAD_REQUEST");

    let bot = server
        .client(HAMLET)
        .post("/bots", &[("full_name", "Ghost Bot"), ("short_name", "ghost")])
        .ok();
    let bot_client =
        admin.with_auth(bot["email"].as_str().unwrap(), bot["api_key"].as_str().unwrap());
    bot_client.get("/users/me", &[]).ok();
    admin.request("DELETE", &format!("/users/{hid}"), &[]).ok();
    server.client(HAMLET).get("/users/me", &[]).err(401, "USER_DEACTIVATED");
    // The bots a deactivated user owns go with them.
    bot_client.get("/users/me", &[]).err(401, "USER_DEACTIVATED");
    assert_eq!(user(&admin, hid)["is_active"], false);
    admin.request("DELETE", &format!("/users/{hid}"), &[]).err(400, "BAD_REQUEST");
    // A deactivated principal cannot be subscribed.
    admin
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "general"}]"#), ("principals", &format!("[{hid}]"))],
        )
        .err(400, "BAD_REQUEST");
    admin.post(&format!("/users/{hid}/reactivate"), &[]).ok();
    admin.post(&format!("/users/{hid}/reactivate"), &[]).err(400, "BAD_REQUEST");
    server.client(HAMLET).get("/users/me", &[]).ok();

    owner.request("DELETE", &format!("/users/{}", id(&server, ADMIN)), &[]).ok();
    server.client(OTHELLO).request("DELETE", "/users/me", &[]).ok();
    server.client(OTHELLO).get("/users/me", &[]).err(401, "USER_DEACTIVATED");
}

#[test]
fn creating_users() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let r = admin
        .post(
            "/users",
            &[
                ("email", "newbie@natter.test"),
                ("full_name", "New Bie"),
                ("password", "a long enough secret"),
            ],
        )
        .ok();
    let nid = r["user_id"].as_u64().unwrap();
    assert!(r.get("ignored_parameters_unsupported").is_none(), "{r}");
    // The new user logs in with that password.
    let login = |password: &str| {
        server
            .anonymous()
            .post("/fetch_api_key", &[("username", "newbie@natter.test"), ("password", password)])
    };
    assert_eq!(login("a long enough secret").ok()["user_id"].as_u64(), Some(nid));
    login("wrong password").err(401, "AUTHENTICATION_FAILED");
    admin
        .post(
            "/users",
            &[("email", "short@natter.test"), ("full_name", "Short"), ("password", "pw")],
        )
        .err(400, "BAD_REQUEST");
    let u = user(&admin, nid);
    assert_eq!((u["email"].as_str(), u["role"].as_u64()), (Some("newbie@natter.test"), Some(400)));
    admin
        .post("/users", &[("email", "newbie@natter.test"), ("full_name", "Again")])
        .err(400, "BAD_REQUEST");
    admin.post("/users", &[("email", "bad"), ("full_name", "Bad Email")]).err(400, "BAD_REQUEST");
    admin.post("/users", &[("email", "x@natter.test")]).err(400, "REQUEST_VARIABLE_MISSING");
    server
        .client(HAMLET)
        .post("/users", &[("email", "y@natter.test"), ("full_name", "Why")])
        .err(400, "BAD_REQUEST");
}

#[test]
fn api_keys_and_bots() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let hid = id(&server, HAMLET);
    let new_key = hamlet.post("/users/me/api_key/regenerate", &[]).ok()["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(new_key.len(), 32);
    hamlet.get("/users/me", &[]).err(401, "INVALID_API_KEY");
    let hamlet = hamlet.with_auth(HAMLET, &new_key);
    hamlet.get("/users/me", &[]).ok();

    let bot = hamlet.post("/bots", &[("full_name", "Weather Bot"), ("short_name", "weather")]).ok();
    let bot_id = bot["user_id"].as_u64().unwrap();
    let bot_email = bot["email"].as_str().unwrap().to_owned();
    assert!(bot_email.starts_with("weather-bot@"), "{bot}");
    let bot_client = hamlet.with_auth(&bot_email, bot["api_key"].as_str().unwrap());
    let me = bot_client.get("/users/me", &[]).ok();
    assert_eq!((me["is_bot"].as_bool(), me["bot_owner_id"].as_u64()), (Some(true), Some(hid)));
    hamlet
        .post("/bots", &[("full_name", "Weather Bot"), ("short_name", "weather")])
        .err(400, "BAD_REQUEST");
    hamlet
        .post("/bots", &[("full_name", "Other Bot"), ("short_name", "bad name")])
        .err(400, "BAD_REQUEST");
    // An outgoing-webhook bot needs its URL; embedded bots are refused.
    hamlet
        .post("/bots", &[("full_name", "Hook Bot"), ("short_name", "hook"), ("bot_type", "3")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    hamlet
        .post("/bots", &[("full_name", "Inside Bot"), ("short_name", "inside"), ("bot_type", "4")])
        .err(400, "BAD_REQUEST");
    hamlet
        .post("/bots", &[("full_name", "Odd Bot"), ("short_name", "odd"), ("bot_type", "9")])
        .err(400, "BAD_REQUEST");
    server
        .client(GUEST)
        .post("/bots", &[("full_name", "Guest Bot"), ("short_name", "g")])
        .err(400, "BAD_REQUEST");

    let mine = hamlet.get("/bots", &[]).ok();
    let ids: Vec<u64> =
        mine["bots"].as_array().unwrap().iter().map(|b| b["user_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![bot_id]);
    let all = server.client(ADMIN).get("/bots", &[]).ok();
    assert_eq!(all["bots"].as_array().unwrap().len(), 2, "the seed's bot and Hamlet's");

    let oid = id(&server, OTHELLO);
    let path = format!("/bots/{bot_id}");
    server
        .client(OTHELLO)
        .request("PATCH", &path, &[("full_name", "Mine Now")])
        .err(400, "BAD_REQUEST");
    hamlet.request("PATCH", &path, &[("bot_owner_id", "999999")]).err(400, "BAD_REQUEST");
    hamlet.request("PATCH", &path, &[("role", "200")]).err(400, "BAD_REQUEST");
    hamlet
        .request("PATCH", &path, &[("full_name", "Rain Bot"), ("bot_owner_id", &oid.to_string())])
        .ok();
    let b = user(&hamlet, bot_id);
    assert_eq!(
        (b["full_name"].as_str(), b["bot_owner_id"].as_u64()),
        (Some("Rain Bot"), Some(oid))
    );
    // Hamlet no longer owns it.
    hamlet.post(&format!("/bots/{bot_id}/api_key/regenerate"), &[]).err(400, "BAD_REQUEST");
    let key = server.client(OTHELLO).post(&format!("/bots/{bot_id}/api_key/regenerate"), &[]).ok()
        ["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    bot_client.get("/users/me", &[]).err(401, "INVALID_API_KEY");
    bot_client.with_auth(&bot_email, &key).get("/users/me", &[]).ok();
    hamlet.post("/bots/999999/api_key/regenerate", &[]).err(400, "BAD_REQUEST");
}

#[test]
fn custom_profile_fields() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let hamlet = server.client(HAMLET);
    let hid = id(&server, HAMLET);
    let oid = id(&server, OTHELLO);
    let create = |p: &[(&str, &str)]| admin.post("/realm/profile_fields", p);
    let text = create(&[("name", "Team"), ("field_type", "1"), ("hint", "Your team")]).ok()["id"]
        .as_u64()
        .unwrap();
    let bio = create(&[("name", "Bio"), ("field_type", "2")]).ok()["id"].as_u64().unwrap();
    let choices =
        json!({"a": {"text": "Tea", "order": "1"}, "b": {"text": "Coffee", "order": "2"}})
            .to_string();
    let drink = create(&[("name", "Drink"), ("field_type", "3"), ("field_data", &choices)]).ok()
        ["id"]
        .as_u64()
        .unwrap();
    let birthday =
        create(&[("name", "Birthday"), ("field_type", "4")]).ok()["id"].as_u64().unwrap();
    let site = create(&[("name", "Site"), ("field_type", "5")]).ok()["id"].as_u64().unwrap();
    let mentor = create(&[("name", "Mentor"), ("field_type", "6")]).ok()["id"].as_u64().unwrap();
    let gh = create(&[
        ("name", "GitHub"),
        ("field_type", "7"),
        ("field_data", r#"{"subtype": "github"}"#),
    ])
    .ok()["id"]
        .as_u64()
        .unwrap();
    let pronouns =
        create(&[("name", "Pronouns"), ("field_type", "8")]).ok()["id"].as_u64().unwrap();

    // Refusals.
    create(&[("name", "Team"), ("field_type", "1")]).err(400, "BAD_REQUEST");
    create(&[("name", "X"), ("field_type", "9")]).err(400, "BAD_REQUEST");
    create(&[("name", ""), ("field_type", "1")]).err(400, "BAD_REQUEST");
    create(&[("name", "Y"), ("field_type", "3")]).err(400, "BAD_REQUEST");
    create(&[("name", "Z"), ("field_type", "7"), ("field_data", r#"{"subtype": "myspace"}"#)])
        .err(400, "BAD_REQUEST");
    create(&[
        ("name", "W"),
        ("field_type", "7"),
        ("field_data", r#"{"subtype": "custom", "url_pattern": "https://x/"}"#),
    ])
    .err(400, "BAD_REQUEST");
    create(&[("name", "Q"), ("field_type", "1"), ("hint", &"h".repeat(81))])
        .err(400, "BAD_REQUEST");
    hamlet
        .post("/realm/profile_fields", &[("name", "Mine"), ("field_type", "1")])
        .err(400, "BAD_REQUEST");
    create(&[("name", "S1"), ("field_type", "1"), ("display_in_profile_summary", "true")]).ok();
    create(&[("name", "S2"), ("field_type", "1"), ("display_in_profile_summary", "true")]).ok();
    create(&[("name", "S3"), ("field_type", "1"), ("display_in_profile_summary", "true")])
        .err(400, "BAD_REQUEST");

    let listed = hamlet.get("/realm/profile_fields", &[]).ok();
    let fields = listed["custom_fields"].as_array().unwrap();
    assert_eq!(fields.len(), 10);
    assert_eq!(fields[0]["name"], "Team");
    assert_eq!(fields[0]["hint"], "Your team");
    assert_eq!(fields[2]["type"], 3);

    // Values through PATCH /users/{id}.
    let data = json!([
        {"id": text, "value": "Elsinore"},
        {"id": bio, "value": "To **be**"},
        {"id": drink, "value": "b"},
        {"id": birthday, "value": "1600-04-23"},
        {"id": site, "value": "https://example.com/hamlet"},
        {"id": mentor, "value": [oid]},
        {"id": gh, "value": "hamlet"},
        {"id": pronouns, "value": "he/him"},
    ])
    .to_string();
    patch(&admin, &hid.to_string(), &[("profile_data", &data)]).ok();
    let pd = user(&hamlet, hid)["profile_data"].clone();
    assert_eq!(pd[text.to_string()]["value"], "Elsinore");
    assert!(pd[bio.to_string()]["rendered_value"]
        .as_str()
        .unwrap()
        .contains("<strong>be</strong>"));
    assert_eq!(pd[drink.to_string()]["value"], "b");
    assert_eq!(pd[mentor.to_string()]["value"], json!([oid]).to_string());
    for bad in [
        json!([{"id": drink, "value": "c"}]),
        json!([{"id": birthday, "value": "April 23"}]),
        json!([{"id": site, "value": "example.com"}]),
        json!([{"id": mentor, "value": [999999]}]),
        json!([{"id": text, "value": "t".repeat(51)}]),
        json!([{"id": 999999, "value": "x"}]),
        json!([{"value": "x"}]),
    ] {
        patch(&admin, &hid.to_string(), &[("profile_data", &bad.to_string())])
            .err(400, "BAD_REQUEST");
    }
    // Clearing a value.
    patch(
        &admin,
        &hid.to_string(),
        &[("profile_data", &json!([{"id": text, "value": null}]).to_string())],
    )
    .ok();
    assert!(user(&hamlet, hid)["profile_data"].get(text.to_string()).is_none());

    // Update, reorder, delete.
    admin.request("PATCH", &format!("/realm/profile_fields/{text}"), &[("name", "Squad")]).ok();
    admin
        .request("PATCH", &format!("/realm/profile_fields/{text}"), &[("name", "Bio")])
        .err(400, "BAD_REQUEST");
    admin
        .request("PATCH", "/realm/profile_fields/999999", &[("name", "N")])
        .err(400, "BAD_REQUEST");
    let mut order: Vec<u64> = fields.iter().map(|f| f["id"].as_u64().unwrap()).collect();
    order.reverse();
    admin.request("PATCH", "/realm/profile_fields", &[("order", &json!(order).to_string())]).ok();
    let listed = hamlet.get("/realm/profile_fields", &[]).ok();
    assert_eq!(listed["custom_fields"][0]["id"], order[0]);
    admin
        .request("PATCH", "/realm/profile_fields", &[("order", &json!(order[1..]).to_string())])
        .err(400, "BAD_REQUEST");
    hamlet.request("DELETE", &format!("/realm/profile_fields/{bio}"), &[]).err(400, "BAD_REQUEST");
    admin.request("DELETE", &format!("/realm/profile_fields/{bio}"), &[]).ok();
    assert!(user(&hamlet, hid)["profile_data"].get(bio.to_string()).is_none());
    admin.request("DELETE", &format!("/realm/profile_fields/{bio}"), &[]).err(400, "BAD_REQUEST");
}

#[test]
fn realm_create_makes_a_usable_realm() {
    let mut server = TestServer::start();
    server.stop();
    let key = server.realm_create_ok(&ACME);
    // The same subdomain again is refused.
    let again = server.realm_create(&[
        "--subdomain",
        "acme",
        "--name",
        "Acme",
        "--owner-email",
        "x@acme.test",
        "--owner-name",
        "Another",
    ]);
    assert!(!again.status.success());
    server.restart_with_args(vec![]);
    let boss = server.anonymous().with_auth("boss@acme.test", &key).with_host("acme.localhost");
    let me = boss.get("/users/me", &[]).ok();
    assert_eq!((me["role"].as_u64(), me["full_name"].as_str()), (Some(100), Some("The Boss")));
    boss.post("/users/me/subscriptions", &[("subscriptions", r#"[{"name": "hq"}]"#)]).ok();
    boss.post(
        "/messages",
        &[("type", "stream"), ("to", "hq"), ("topic", "t"), ("content", "hello")],
    )
    .ok();
}

/// One display-name rule and one email rule for every way in: what
/// `PATCH /settings` refuses, `POST /users` and `PATCH /users/{id}` refuse
/// too, and the other way round.
#[test]
fn names_and_emails_follow_one_rule_everywhere() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let hamlet = server.client(HAMLET);
    let hid = id(&server, HAMLET);
    let before = user(&admin, hid)["full_name"].clone();
    // A trailing `|<digits>` reads as a mention's id suffix.
    for name in ["Bob|12", "a*b", "x"] {
        let e = admin
            .post("/users", &[("email", "rule@natter.test"), ("full_name", name)])
            .err(400, "BAD_REQUEST");
        let again =
            hamlet.request("PATCH", "/settings", &[("full_name", name)]).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], again["msg"], "{name}");
        patch(&admin, &hid.to_string(), &[("full_name", &json!(name).to_string())])
            .err(400, "BAD_REQUEST");
    }
    // Addresses the settings page refuses are refused on creation too.
    for email in ["a<b>@natter.test", "a,b@natter.test", "nodot@natter"] {
        admin.post("/users", &[("email", email), ("full_name", "Rule")]).err(400, "BAD_REQUEST");
        hamlet.request("PATCH", "/settings", &[("email", email)]).err(400, "BAD_REQUEST");
    }
    assert_eq!(user(&admin, hid)["full_name"], before, "nothing was changed");
}
