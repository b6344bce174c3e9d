//! Invitations end to end: POST /invites with every parameter, the outbox
//! link, registration through it, GET/DELETE/resend, reusable links, and
//! every refusal.

use serde_json::{json, Value};

use crate::api_settings::{channel_id, link_path, outbox};
use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";

fn invite(c: &Client, params: &[(&str, &str)]) -> crate::util::Response {
    c.post("/invites", params)
}

fn register(server: &TestServer, path: &str, params: &[(&str, &str)]) -> crate::util::Response {
    server.anonymous().post(path, params)
}

#[test]
fn an_invitation_mails_a_link_that_creates_the_account_once() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let core = channel_id(&server, "core team").to_string();
    let streams = format!("[{core}]");
    invite(
        &iago,
        &[
            ("invitee_emails", "ophelia@elsinore.test,\nlaertes@elsinore.test"),
            ("stream_ids", &streams),
            ("include_realm_default_subscriptions", "true"),
            ("invite_as", "300"),
            ("welcome_message_custom_text", "Welcome to Elsinore!"),
            ("notify_referrer_on_join", "true"),
        ],
    )
    .ok();
    let mails = outbox(&server);
    assert_eq!(mails.len(), 2);
    assert!(mails[0].starts_with("To: ophelia@elsinore.test\n"), "{}", mails[0]);
    assert!(server.stderr().contains("mail to laertes@elsinore.test"));

    let listed = iago.get("/invites", &[]).ok()["invites"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["invited_as"], 300);
    assert_eq!(listed[0]["is_multiuse"], false);
    assert!(listed[0]["expiry_date"].as_i64().unwrap() > listed[0]["invited"].as_i64().unwrap());
    // A member who invited nobody sees nothing.
    assert_eq!(server.client(HAMLET).get("/invites", &[]).ok()["invites"], json!([]));

    let path = link_path(&mails[0]);
    let shown = server.anonymous().get(&path, &[]).ok();
    assert_eq!(shown["email"], "ophelia@elsinore.test");
    assert_eq!(shown["invited_by"], "Iago");
    assert_eq!(shown["welcome_message_custom_text"], "Welcome to Elsinore!");
    // Another realm's host does not know the link.
    server.anonymous().with_host("lear.localhost").get(&path, &[]).err(400, "BAD_REQUEST");

    register(&server, &path, &[("full_name", "O"), ("password", "rosemary")])
        .err(400, "BAD_REQUEST");
    register(&server, &path, &[("full_name", "Ophelia"), ("password", "rue")])
        .err(400, "BAD_REQUEST");
    register(&server, &path, &[("full_name", "Ophelia")]).err(400, "REQUEST_VARIABLE_MISSING");
    let made = register(&server, &path, &[("full_name", "Ophelia"), ("password", "rosemary")]).ok();
    assert_eq!(made["email"], "ophelia@elsinore.test");
    let key = made["api_key"].as_str().unwrap();
    let ophelia = server.anonymous().with_auth("ophelia@elsinore.test", key);
    let me = ophelia.get("/users/me", &[]).ok();
    assert_eq!((me["full_name"].as_str(), me["role"].as_u64()), (Some("Ophelia"), Some(300)));
    let subs = ophelia.get("/users/me/subscriptions", &[]).ok()["subscriptions"].clone();
    let mut names: Vec<&str> =
        subs.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, vec!["Denmark", "core team", "general"]);
    // The password works for logging in.
    let login = server
        .anonymous()
        .post("/fetch_api_key", &[("username", "ophelia@elsinore.test"), ("password", "rosemary")]);
    assert_eq!(login.ok()["api_key"], key);
    // Used: the link refuses, and the invitation is no longer listed.
    register(&server, &path, &[("full_name", "Ophelia 2"), ("password", "rosemary")])
        .err(400, "BAD_REQUEST");
    server.anonymous().get(&path, &[]).err(400, "BAD_REQUEST");
    assert_eq!(iago.get("/invites", &[]).ok()["invites"].as_array().unwrap().len(), 1);
    // The referrer was told by the Notification Bot, and the Welcome Bot
    // sent Ophelia the invitation's welcome text (direct messages).
    let newest = |c: &Client| {
        let params = [("anchor", "newest"), ("num_before", "1"), ("num_after", "0")];
        let raw = [params[0], params[1], params[2], ("apply_markdown", "false")];
        c.get("/messages", &raw).ok()["messages"][0].clone()
    };
    let told = newest(&iago);
    assert_eq!(told["sender_email"], "notification-bot@zulip.com");
    assert_eq!(told["type"], "private");
    let ophelia_id = me["user_id"].as_u64().unwrap();
    assert_eq!(
        told["content"],
        format!("@_**Ophelia|{ophelia_id}** accepted your invitation to join Zulip!")
    );
    assert_eq!(told["flags"], json!([]), "unread for Iago");
    let welcome = newest(&ophelia);
    assert_eq!(welcome["sender_email"], "welcome-bot@zulip.com");
    assert_eq!(welcome["content"], "Welcome to Elsinore!");
    assert_eq!(outbox(&server).len(), 2, "no mail beyond the two invitations");
}

#[test]
fn invitation_failures_and_refusals() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let none = [("stream_ids", "[]")];
    let with = |emails: &'static str, extra: &[(&'static str, &'static str)]| {
        let mut p = vec![("invitee_emails", emails), none[0]];
        p.extend_from_slice(extra);
        p
    };
    // Existing accounts are skipped; the others are invited.
    let body = invite(&iago, &with("hamlet@natter.test, new@elsinore.test", &[]))
        .err(400, "INVITATION_FAILED");
    assert_eq!(body["errors"], json!([["hamlet@natter.test", "Already has an account.", false]]));
    assert_eq!(body["sent_invitations"], true);
    assert_eq!(
        (body["daily_limit_reached"].as_bool(), body["license_limit_reached"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(outbox(&server).len(), 1);
    // A malformed address: nothing is sent.
    let body = invite(&iago, &with("good@elsinore.test, not an address", &[]))
        .err(400, "INVITATION_FAILED");
    assert_eq!(body["errors"], json!([["not an address", "Invalid address.", false]]));
    assert_eq!(body["sent_invitations"], false);
    assert_eq!(outbox(&server).len(), 1);

    invite(&iago, &with(" , ", &[])).err(400, "BAD_REQUEST");
    invite(&iago, &[("invitee_emails", "a@elsinore.test")]).err(400, "REQUEST_VARIABLE_MISSING");
    iago.post("/invites", &[("stream_ids", "[]")]).err(400, "REQUEST_VARIABLE_MISSING");
    invite(&iago, &with("a@elsinore.test", &[("invite_as", "100")])).err(400, "BAD_REQUEST");
    invite(&iago, &with("a@elsinore.test", &[("invite_as", "500")])).err(400, "BAD_REQUEST");
    invite(&hamlet, &with("a@elsinore.test", &[("invite_as", "300")])).err(400, "BAD_REQUEST");
    invite(&iago, &with("a@elsinore.test", &[("invite_expires_in_minutes", "0")]))
        .err(400, "BAD_REQUEST");
    invite(&iago, &with("a@elsinore.test", &[("group_ids", "[999999]")])).err(400, "BAD_REQUEST");
    invite(&iago, &with("a@elsinore.test", &[("stream_ids", "[999999]")])).err(400, "BAD_REQUEST");
    let long = "x".repeat(8001);
    let body = iago.post(
        "/invites",
        &[
            ("invitee_emails", "a@elsinore.test"),
            ("stream_ids", "[]"),
            ("welcome_message_custom_text", &long),
        ],
    );
    body.err(400, "BAD_REQUEST");
    // Guests cannot invite.
    invite(&server.client("polonius@natter.test"), &with("a@elsinore.test", &[]))
        .err(400, "BAD_REQUEST");
    // A member may not subscribe others to a private channel...
    let core = format!("[{}]", channel_id(&server, "core team"));
    let r =
        hamlet.post("/invites", &[("invitee_emails", "a@elsinore.test"), ("stream_ids", &core)]);
    r.err(400, "BAD_REQUEST");
    // ...nor name one they cannot see.
    let r = server
        .client("othello@natter.test")
        .post("/invites", &[("invitee_emails", "a@elsinore.test"), ("stream_ids", &core)]);
    r.err(400, "BAD_REQUEST");
    // A default channel is fine for a member; their custom text is dropped.
    let denmark = format!("[{}]", channel_id(&server, "Denmark"));
    hamlet
        .post(
            "/invites",
            &[
                ("invitee_emails", "b@elsinore.test"),
                ("stream_ids", &denmark),
                ("invite_expires_in_minutes", "null"),
                ("welcome_message_custom_text", "hi"),
            ],
        )
        .ok();
    let mails = outbox(&server);
    let shown = server.anonymous().get(&link_path(mails.last().unwrap()), &[]).ok();
    assert_eq!(
        (shown["welcome_message_custom_text"].clone(), shown["expiry_date"].clone()),
        (Value::Null, Value::Null)
    );
}

#[test]
fn revoking_resending_and_reusable_links() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    hamlet.post("/invites", &[("invitee_emails", "c@elsinore.test"), ("stream_ids", "[]")]).ok();
    let id = iago.get("/invites", &[]).ok()["invites"][0]["id"].as_u64().unwrap();
    let path = link_path(&outbox(&server)[0]);
    // Someone else (not admin, not the inviter) cannot touch it.
    let othello = server.client("othello@natter.test");
    othello.request("DELETE", &format!("/invites/{id}"), &[]).err(400, "BAD_REQUEST");
    othello.post(&format!("/invites/{id}/resend"), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&format!("/invites/{id}/resend"), &[]).ok();
    let mails = outbox(&server);
    assert_eq!(mails.len(), 2);
    assert_eq!(link_path(&mails[1]), path, "the resent mail has the same link");
    iago.post("/invites/999999/resend", &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", &format!("/invites/{id}"), &[]).ok();
    iago.request("DELETE", &format!("/invites/{id}"), &[]).err(400, "BAD_REQUEST");
    register(&server, &path, &[("full_name", "Cee"), ("password", "secret!")])
        .err(400, "BAD_REQUEST");

    // Reusable links: administrators only.
    hamlet.post("/invites/multiuse", &[("stream_ids", "[]")]).err(400, "BAD_REQUEST");
    let link = iago.post("/invites/multiuse", &[("stream_ids", "[]"), ("invite_as", "600")]).ok();
    let link = link["invite_link"].as_str().unwrap();
    let path = link[link.find("/api/v1").unwrap() + 7..].to_owned();
    register(&server, &path, &[("full_name", "Guest One"), ("password", "secret!")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    register(
        &server,
        &path,
        &[("full_name", "Guest One"), ("password", "secret!"), ("email", "bad")],
    )
    .err(400, "BAD_REQUEST");
    register(
        &server,
        &path,
        &[("full_name", "Guest One"), ("password", "secret!"), ("email", "hamlet@natter.test")],
    )
    .err(400, "BAD_REQUEST");
    for (name, email) in [("Guest One", "g1@elsinore.test"), ("Guest Two", "g2@elsinore.test")] {
        let made = register(
            &server,
            &path,
            &[("full_name", name), ("password", "secret!"), ("email", email)],
        )
        .ok();
        let who = server.anonymous().with_auth(email, made["api_key"].as_str().unwrap());
        assert_eq!(who.get("/users/me", &[]).ok()["role"], 600);
    }
    let listed = iago.get("/invites", &[]).ok()["invites"].clone();
    let multi =
        listed.as_array().unwrap().iter().find(|i| i["is_multiuse"] == true).unwrap().clone();
    assert_eq!(multi["link_url"], link);
    let id = multi["id"].as_u64().unwrap();
    iago.request("DELETE", &format!("/invites/{id}"), &[]).err(400, "BAD_REQUEST");
    iago.request("DELETE", &format!("/invites/multiuse/{id}"), &[]).ok();
    register(
        &server,
        &path,
        &[("full_name", "Guest 3"), ("password", "secret!"), ("email", "g3@elsinore.test")],
    )
    .err(400, "BAD_REQUEST");
}

#[test]
fn a_realm_sends_at_most_a_hundred_invitations_a_day() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let many: Vec<String> = (0..100).map(|i| format!("p{i}@elsinore.test")).collect();
    iago.post("/invites", &[("invitee_emails", &many.join(",")), ("stream_ids", "[]")]).ok();
    let body = iago
        .post("/invites", &[("invitee_emails", "one.more@elsinore.test"), ("stream_ids", "[]")])
        .err(400, "INVITATION_FAILED");
    assert_eq!(
        (body["daily_limit_reached"].as_bool(), body["sent_invitations"].as_bool()),
        (Some(true), Some(false))
    );
}
