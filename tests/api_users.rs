//! GET /users/me, GET /users, GET /users/{user_id}.

use serde_json::Value;

use crate::util::TestServer;

const HAMLET: &str = "hamlet@natter.test";

fn user_id(server: &TestServer, email: &str) -> u64 {
    let members = server.client(HAMLET).get("/users", &[]).ok();
    members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == email)
        .and_then(|m| m["user_id"].as_u64())
        .unwrap_or_else(|| panic!("no user {email}"))
}

#[test]
fn users_me_has_the_fields_bots_read() {
    let server = TestServer::start();
    let me = server.client(HAMLET).get("/users/me", &[]).ok();
    assert_eq!(me["email"], HAMLET);
    assert_eq!(me["full_name"], "King Hamlet");
    assert!(me["user_id"].as_u64().is_some());
    assert_eq!(me["role"], 400);
    assert_eq!(me["is_admin"], false);
    assert_eq!(me["is_bot"], false);
    assert_eq!(me["delivery_email"], HAMLET);
    assert!(me["avatar_url"].as_str().unwrap().starts_with("https://"));
    assert!(me["max_message_id"].as_u64().unwrap() >= 1, "hamlet got the welcome message");
    assert!(me["date_joined"].as_str().unwrap().ends_with("+00:00"));

    let owner = server.client("desdemona@natter.test").get("/users/me", &[]).ok();
    assert_eq!(
        (owner["role"].as_u64(), owner["is_owner"].as_bool(), owner["is_admin"].as_bool()),
        (Some(100), Some(true), Some(true))
    );
    let guest = server.client("polonius@natter.test").get("/users/me", &[]).ok();
    assert_eq!((guest["role"].as_u64(), guest["is_guest"].as_bool()), (Some(600), Some(true)));
    let bot = server.client("helper-bot@natter.test").get("/users/me", &[]).ok();
    assert_eq!((bot["is_bot"].as_bool(), bot["bot_type"].as_u64()), (Some(true), Some(1)));
}

#[test]
fn users_lists_exactly_the_callers_realm() {
    let server = TestServer::start();
    let members = server.client(HAMLET).get("/users", &[]).ok();
    let members = members["members"].as_array().unwrap();
    let emails: Vec<&str> = members.iter().map(|m| m["email"].as_str().unwrap()).collect();
    assert_eq!(emails.len(), 8, "{emails:?}");
    assert!(emails.contains(&"helper-bot@natter.test"));
    assert!(!emails.iter().any(|e| e.ends_with("@lear.test")));
    let roles: Vec<u64> = members.iter().map(|m| m["role"].as_u64().unwrap()).collect();
    for role in [100, 200, 300, 400, 600] {
        assert!(roles.contains(&role), "role {role} missing");
    }
    // `--dev` printed the same accounts, labelled by realm and role.
    let printed: Vec<&str> = server
        .accounts
        .iter()
        .filter(|a| a.realm == "(default)")
        .map(|a| a.email.as_str())
        .collect();
    assert_eq!(printed.len(), emails.len());
    assert!(printed.iter().all(|e| emails.contains(e)));
    let labels: Vec<&str> = server.accounts.iter().map(|a| a.role.as_str()).collect();
    for label in ["owner", "administrator", "moderator", "member", "guest", "bot"] {
        assert!(labels.contains(&label), "no {label} printed");
    }
    let bot = members.iter().find(|m| m["is_bot"] == true).unwrap();
    assert_eq!(bot["bot_owner_id"], user_id(&server, "desdemona@natter.test"));
    // client_gravatar defaults to true: avatars are left to the client.
    assert!(members.iter().all(|m| m["avatar_url"].is_null()));
    assert!(members.iter().all(|m| m.get("profile_data").is_none()));

    let lear = server.client("king@lear.test").with_host("lear.localhost");
    let theirs = lear.get("/users", &[]).ok();
    let emails: Vec<&str> = theirs["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, vec!["king@lear.test", "goneril@lear.test"]);
}

#[test]
fn users_options_change_avatars_and_profile_data() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let r = c
        .get("/users", &[("client_gravatar", "false"), ("include_custom_profile_fields", "true")])
        .ok();
    for m in r["members"].as_array().unwrap() {
        assert!(m["avatar_url"].as_str().unwrap().contains("gravatar.com/avatar/"));
        assert_eq!(m.get("profile_data").is_some(), m["is_bot"] == false, "{m}");
    }
}

#[test]
fn get_user_by_id_and_its_refusals() {
    let server = TestServer::start();
    let c = server.client(HAMLET);
    let othello = user_id(&server, "othello@natter.test");
    let r = c.get(&format!("/users/{othello}"), &[]).ok();
    let user: &Value = &r["user"];
    assert_eq!(user["user_id"], othello);
    assert_eq!(user["full_name"], "Othello, the Moor of Venice");
    for field in [
        "delivery_email",
        "email",
        "date_joined",
        "is_active",
        "is_owner",
        "is_admin",
        "is_guest",
        "is_bot",
        "bot_type",
        "role",
        "timezone",
        "avatar_url",
        "avatar_version",
    ] {
        assert!(user.get(field).is_some(), "missing {field}");
    }
    assert!(user.get("profile_data").is_none());
    let r = c
        .get(
            &format!("/users/{othello}"),
            &[("include_custom_profile_fields", "true"), ("client_gravatar", "false")],
        )
        .ok();
    assert_eq!(r["user"]["profile_data"], serde_json::json!({}));
    assert!(r["user"]["avatar_url"].is_string());

    // Another realm's user is "no such user", like one that does not exist.
    let king =
        server.client("king@lear.test").with_host("lear.localhost").get("/users/me", &[]).ok();
    let king_id = king["user_id"].as_u64().unwrap();
    let e = c.get(&format!("/users/{king_id}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
    c.get("/users/999999", &[]).err(400, "BAD_REQUEST");
    c.get("/users/-1", &[]).err(400, "BAD_REQUEST");
}
