//! The Notification Bot: the realm's system bots as clients see
//! them, the notices `PATCH /messages/{id}` posts to the old and new thread
//! of a move, resolved-topic notices, and old data dirs getting their bots.

use serde_json::{json, Value};

use crate::util::{Client, Response, TestServer, ACME};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; in general, Denmark
const IAGO: &str = "iago@natter.test"; // administrator
const NOTIFICATION_BOT: &str = "notification-bot@zulip.com";
const WELCOME_BOT: &str = "welcome-bot@zulip.com";

fn send(c: &Client, to: &str, topic: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", topic), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

fn patch(c: &Client, id: u64, params: &[(&str, &str)]) -> Response {
    c.request("PATCH", &format!("/messages/{id}"), params)
}

fn me(c: &Client) -> u64 {
    c.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap()
}

/// The messages of `channel` > `topic` as `c` sees them, oldest first.
fn topic(c: &Client, channel: &str, topic: &str) -> Vec<Value> {
    let narrow = json!([["stream", channel], ["topic", topic]]).to_string();
    let params =
        [("anchor", "newest"), ("num_before", "50"), ("num_after", "0"), ("narrow", &narrow)];
    c.get("/messages", &params).ok()["messages"].as_array().unwrap().clone()
}

/// The raw (Markdown) content of a message.
fn source(c: &Client, id: u64) -> String {
    c.get(&format!("/messages/{id}"), &[("apply_markdown", "false")]).ok()["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The Markdown of the messages of `channel` > `topic` sent by the
/// Notification Bot.
fn notices(c: &Client, channel: &str, name: &str) -> Vec<String> {
    topic(c, channel, name)
        .iter()
        .filter(|m| m["sender_email"] == NOTIFICATION_BOT)
        .map(|m| source(c, m["id"].as_u64().unwrap()))
        .collect()
}

fn ids(messages: &[Value]) -> Vec<u64> {
    messages.iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

#[test]
fn system_bots_are_cross_realm_bots_not_realm_users() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let register = hamlet.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    let bots = register["cross_realm_bots"].as_array().unwrap();
    let emails: Vec<&str> = bots.iter().map(|b| b["email"].as_str().unwrap()).collect();
    assert_eq!(emails, [NOTIFICATION_BOT, WELCOME_BOT]);
    for bot in bots {
        assert_eq!(bot["is_system_bot"], true);
        assert_eq!(bot["is_bot"], true);
        assert_eq!(bot["bot_type"], 1);
        assert_eq!(bot["bot_owner_id"], Value::Null);
        assert!(bot["user_id"].as_u64().is_some());
    }
    assert_eq!(bots[0]["full_name"], "Notification Bot");
    assert_eq!(bots[1]["full_name"], "Welcome Bot");
    let bot_id = bots[0]["user_id"].as_u64().unwrap();
    // Not a realm user: register, GET /users, the credentials printed.
    let listed =
        |users: &Value| users.as_array().unwrap().iter().any(|u| u["email"] == NOTIFICATION_BOT);
    assert!(!listed(&register["realm_users"]));
    assert!(!listed(&register["realm_non_active_users"]));
    assert!(!listed(&hamlet.get("/users", &[]).ok()["members"]));
    assert!(server.accounts.iter().all(|a| !a.email.ends_with("@zulip.com")));
    // By id it is found, marked as a system bot, as in register.
    let one = hamlet.get(&format!("/users/{bot_id}"), &[]).ok();
    assert_eq!(one["user"], bots[0]);
    // The same id on every register, and after a restart.
    let again = hamlet.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(again["cross_realm_bots"][0]["user_id"], bot_id);
    // It can be looked up, but not logged in as, edited or deactivated.
    let user = hamlet.get(&format!("/users/{bot_id}"), &[]).ok()["user"].clone();
    assert_eq!(user["email"], NOTIFICATION_BOT);
    let as_bot = server.anonymous().with_auth(NOTIFICATION_BOT, "");
    as_bot.get("/users/me", &[]).err(401, "INVALID_API_KEY");
    let fetched = server.anonymous().post("/dev_fetch_api_key", &[("username", NOTIFICATION_BOT)]);
    fetched.err(401, "AUTHENTICATION_FAILED");
    let iago = server.client(IAGO);
    let e = iago.request("DELETE", &format!("/users/{bot_id}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
    let e = iago
        .request("PATCH", &format!("/users/{bot_id}"), &[("full_name", "Mine")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
    let e = iago
        .request("PATCH", &format!("/bots/{bot_id}"), &[("full_name", "Mine")])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such bot");
    iago.request("POST", &format!("/users/{bot_id}/reactivate"), &[]).err(400, "BAD_REQUEST");
    // Nor subscribed to channels or put in groups.
    let principals = format!("[{bot_id}]");
    let e = iago
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "general"}]"#), ("principals", &principals)],
        )
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
    let group = [("name", "bots"), ("description", "d"), ("members", principals.as_str())];
    let e = iago.post("/user_groups/create", &group).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], format!("Invalid user ID: {bot_id}"));
    let bots = iago.get("/bots", &[]).ok()["bots"].clone();
    assert!(!listed(&bots), "administrators do not manage system bots: {bots}");
    // Logged-out spectators see them too.
    let spectator =
        server.anonymous().post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(spectator["cross_realm_bots"][0]["user_id"], bot_id);
    assert!(!listed(&spectator["realm_users"]));
    // Another realm has its own, with other ids.
    let king = server.client("king@lear.test").with_host("lear.localhost");
    let lear = king.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(lear["cross_realm_bots"][0]["email"], NOTIFICATION_BOT);
    assert_ne!(lear["cross_realm_bots"][0]["user_id"], bot_id);
    let e = king.get(&format!("/users/{bot_id}"), &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "No such user");
}

#[test]
fn a_whole_topic_move_tells_the_new_thread() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let hamlet_id = me(&hamlet);
    let a = send(&hamlet, "Denmark", "old", "one");
    send(&othello, "Denmark", "old", "two");
    // Defaults: the new thread is told, the old one is not.
    patch(&hamlet, a, &[("topic", "new"), ("propagate_mode", "change_all")]).ok();
    assert!(topic(&hamlet, "Denmark", "old").is_empty());
    let moved = topic(&hamlet, "Denmark", "new");
    assert_eq!(moved.len(), 3);
    let notice = &moved[2];
    assert_eq!(notice["sender_email"], NOTIFICATION_BOT);
    assert_eq!(notice["sender_full_name"], "Notification Bot");
    assert_eq!(notice["sender_realm_str"], "zulipinternal");
    assert_eq!(notice["client"], "Internal");
    let id = notice["id"].as_u64().unwrap();
    assert_eq!(
        source(&hamlet, id),
        format!(
            "This topic was moved here from #**Denmark>old** by @_**King Hamlet|{hamlet_id}**."
        )
    );
    // Rendered by the Markdown pipeline: a topic link and a silent mention.
    let html = notice["content"].as_str().unwrap();
    assert!(html.contains("class=\"stream-topic\""), "{html}");
    assert!(html.contains("/topic/old\">#Denmark &gt; old</a>"), "{html}");
    assert!(html.contains("class=\"user-mention silent\""), "{html}");
    // Read for the mover, unread (and not a mention) for the others.
    assert_eq!(notice["flags"], json!(["read"]));
    let theirs = topic(&othello, "Denmark", "new");
    assert_eq!(theirs[2]["flags"], json!([]));
}

#[test]
fn old_thread_notices_and_partial_moves() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let hamlet_id = me(&hamlet);
    let by = format!("@_**King Hamlet|{hamlet_id}**");
    let m1 = send(&hamlet, "Denmark", "t", "1");
    let m2 = send(&hamlet, "Denmark", "t", "2");
    let m3 = send(&hamlet, "Denmark", "t", "3");
    let m4 = send(&hamlet, "Denmark", "t", "4");
    let old = ("send_notification_to_old_thread", "true");
    // One message: a link to it in the new thread.
    patch(&hamlet, m4, &[("topic", "one"), old]).ok();
    let new_notices = notices(&hamlet, "Denmark", "one");
    assert_eq!(new_notices.len(), 1);
    let link = "/#narrow/channel/";
    let (text, rest) = new_notices[0].split_once("](").unwrap();
    assert_eq!(text, "[A message");
    assert!(rest.contains(link) && rest.contains(&format!("/topic/one/near/{m4})")), "{rest}");
    assert!(rest.ends_with(&format!(" was moved here from #**Denmark>t** by {by}.")), "{rest}");
    assert_eq!(
        notices(&hamlet, "Denmark", "t"),
        [format!("A message was moved from this topic to #**Denmark>one** by {by}.")]
    );
    // Two of the remaining messages (change_later from m2).
    patch(&hamlet, m2, &[("topic", "two"), ("propagate_mode", "change_later"), old]).ok();
    // change_later from m2 takes m3 and the notice posted at the end of t.
    let moved = ids(&topic(&hamlet, "Denmark", "two"));
    assert_eq!(moved.len(), 4, "m2, m3, the old-thread notice, the new notice");
    assert_eq!(&moved[..2], [m2, m3]);
    assert_eq!(
        notices(&hamlet, "Denmark", "two").last().unwrap(),
        &format!("3 messages were moved here from #**Denmark>t** by {by}.")
    );
    assert_eq!(
        notices(&hamlet, "Denmark", "t"),
        [format!("3 messages were moved from this topic to #**Denmark>two** by {by}.")]
    );
    assert_eq!(ids(&topic(&hamlet, "Denmark", "t"))[0], m1);
    // Into a topic that already has messages, the whole topic: a count.
    send(&hamlet, "Denmark", "busy", "already here");
    patch(&hamlet, m1, &[("topic", "busy"), ("propagate_mode", "change_all")]).ok();
    // (The old-thread notice left in t moved along.)
    assert_eq!(
        notices(&hamlet, "Denmark", "busy"),
        [
            format!("3 messages were moved from this topic to #**Denmark>two** by {by}."),
            format!("2 messages were moved here from #**Denmark>t** by {by}."),
        ]
    );
    // Both notices off: nothing is posted.
    let before = ids(&topic(&hamlet, "Denmark", "two")).len();
    let quiet = [
        ("topic", "quiet"),
        ("propagate_mode", "change_all"),
        ("send_notification_to_new_thread", "false"),
    ];
    patch(&hamlet, m2, &quiet).ok();
    assert_eq!(ids(&topic(&hamlet, "Denmark", "quiet")).len(), before);
    assert!(notices(&hamlet, "Denmark", "quiet").iter().all(|n| !n.contains("quiet")));
    assert!(topic(&hamlet, "Denmark", "two").is_empty());
}

#[test]
fn channel_moves_tell_both_threads() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let hamlet_id = me(&hamlet);
    let by = format!("@_**King Hamlet|{hamlet_id}**");
    let a = send(&hamlet, "Denmark", "plans", "one");
    send(&hamlet, "Denmark", "plans", "two");
    let general = hamlet.get("/get_stream_id", &[("stream", "general")]).ok()["stream_id"]
        .as_u64()
        .unwrap()
        .to_string();
    let params = [
        ("stream_id", general.as_str()),
        ("propagate_mode", "change_all"),
        ("send_notification_to_old_thread", "true"),
    ];
    patch(&hamlet, a, &params).ok();
    assert_eq!(
        notices(&hamlet, "general", "plans"),
        [format!("This topic was moved here from #**Denmark>plans** by {by}.")]
    );
    assert_eq!(
        notices(&hamlet, "Denmark", "plans"),
        [format!("This topic was moved to #**general>plans** by {by}.")]
    );
    // The move and its notices were one record: a crash keeps all of it.
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    assert_eq!(topic(&hamlet, "general", "plans").len(), 3);
    assert_eq!(topic(&hamlet, "Denmark", "plans").len(), 1);
}

#[test]
fn resolving_a_topic_posts_the_resolved_notice() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let iago = server.client(IAGO);
    let hamlet_id = me(&hamlet);
    let a = send(&hamlet, "Denmark", "bug", "it crashes");
    send(&othello, "Denmark", "bug", "still");
    // Iago follows the topic (Hamlet does too, having started it).
    let denmark = hamlet.get("/get_stream_id", &[("stream", "Denmark")]).ok()["stream_id"]
        .as_u64()
        .unwrap()
        .to_string();
    let follow = [("stream_id", denmark.as_str()), ("topic", "bug"), ("visibility_policy", "3")];
    iago.post("/user_topics", &follow).ok();
    patch(&hamlet, a, &[("topic", "✔ bug"), ("propagate_mode", "change_all")]).ok();
    let resolved = topic(&hamlet, "Denmark", "✔ bug");
    assert_eq!(resolved.len(), 3);
    let notice = resolved[2]["id"].as_u64().unwrap();
    assert_eq!(resolved[2]["sender_email"], NOTIFICATION_BOT);
    assert_eq!(
        source(&hamlet, notice),
        format!("@_**King Hamlet|{hamlet_id}** has marked this topic as resolved.")
    );
    // No "moved here" notice for a resolve, and it is not a move.
    assert_eq!(notices(&hamlet, "Denmark", "✔ bug").len(), 1);
    assert!(resolved[0].get("last_moved_timestamp").is_none());
    // The default policy (except_followed): read for Othello, who does not
    // follow the topic; unread for Iago, who does; read for the mover.
    let theirs = topic(&othello, "Denmark", "✔ bug");
    assert_eq!(theirs[2]["flags"], json!(["read"]));
    assert_eq!(topic(&iago, "Denmark", "✔ bug")[2]["flags"], json!([]));
    assert_eq!(resolved[2]["flags"], json!(["read"]));
    // Undone at once: the notice goes instead of an "unresolved" one.
    patch(&hamlet, a, &[("topic", "bug"), ("propagate_mode", "change_all")]).ok();
    let back = topic(&hamlet, "Denmark", "bug");
    assert_eq!(back.len(), 2);
    assert!(notices(&hamlet, "Denmark", "bug").is_empty());
    hamlet.get(&format!("/messages/{notice}"), &[]).err(400, "BAD_REQUEST");
    // A subscriber whose policy is `never` gets the next notice unread.
    othello
        .request("PATCH", "/settings", &[("resolved_topic_notice_auto_read_policy", "\"never\"")])
        .ok();
    patch(&hamlet, a, &[("topic", "✔ bug"), ("propagate_mode", "change_all")]).ok();
    let theirs = topic(&othello, "Denmark", "✔ bug");
    assert_eq!(theirs.len(), 3);
    assert_eq!(theirs[2]["sender_email"], NOTIFICATION_BOT);
    assert_eq!(theirs[2]["flags"], json!([]));
    assert_eq!(topic(&hamlet, "Denmark", "✔ bug")[2]["flags"], json!(["read"]));
}

#[test]
fn a_data_dir_from_before_system_bots_gets_them() {
    use natter::mutation::build::{self, NewUser};
    use natter::mutation::Mutation;
    use natter::state::Role;
    let mut server = TestServer::start();
    server.stop();
    let data = server.data_dir().join("data");
    std::fs::remove_dir_all(&data).unwrap();
    // A realm and its owner written the way an older natter did: log
    // records plus a snapshot, no system bots.
    {
        let (state, wal, _report) = natter::persist::open(&data, wal::Options::default()).unwrap();
        let realm = build::realm(&state, "", "Old", 0).unwrap();
        let mut seq = 0;
        let mut step = |m: Mutation| {
            seq = wal.append(&natter::persist::encode_mutation(&m)).unwrap();
            natter::apply::apply(&state, seq, &m);
        };
        step(realm);
        let realm = state.realm_by_subdomain("").unwrap();
        let owner =
            NewUser { email: "old@natter.test", full_name: "Old", role: Role::Owner, bot: None };
        step(build::user(&state, realm.id, &owner, "k".repeat(32), 0).unwrap());
        natter::persist::snapshot::write(&natter::persist::snapshot_dir(&data), &state.image())
            .unwrap();
        wal.close().unwrap();
    }
    server.restart_with_args(vec![]);
    let old = server.anonymous().with_auth("old@natter.test", &"k".repeat(32));
    let register = old.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    let emails: Vec<&str> = register["cross_realm_bots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, [NOTIFICATION_BOT, WELCOME_BOT]);
    let bot_id = register["cross_realm_bots"][0]["user_id"].clone();
    assert_eq!(register["realm_users"].as_array().unwrap().len(), 1);
    // Created once: the same ids after another restart.
    server.stop();
    server.restart_with_args(vec![]);
    let old = server.anonymous().with_auth("old@natter.test", &"k".repeat(32));
    let register = old.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(register["cross_realm_bots"][0]["user_id"], bot_id);
    assert_eq!(register["cross_realm_bots"].as_array().unwrap().len(), 2);
}

#[test]
fn realm_create_gives_the_new_realm_its_system_bots() {
    let mut server = TestServer::start();
    server.stop();
    let key = server.realm_create_ok(&ACME);
    server.restart_with_args(vec![]);
    let boss = server.anonymous().with_auth("boss@acme.test", &key).with_host("acme.localhost");
    let register = boss.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(register["cross_realm_bots"].as_array().unwrap().len(), 2);
    assert_eq!(register["realm_users"].as_array().unwrap().len(), 1);
    // The bot posts there too.
    boss.post("/users/me/subscriptions", &[("subscriptions", r#"[{"name": "hq"}]"#)]).ok();
    let id = send(&boss, "hq", "a", "x");
    patch(&boss, id, &[("topic", "b")]).ok();
    assert_eq!(notices(&boss, "hq", "b").len(), 1);
}

/// Move time limits over a whole topic (`change_all`), handler-level: the
/// topic's old messages are committed with past timestamps (no endpoint
/// back-dates a message), then the real handler decides.
#[test]
fn change_all_moves_respect_the_time_limit_for_every_message() {
    use natter::api;
    use natter::mutation::{Mutation, NewMessage};
    use natter::state::{Destination, IdKind, Message, MessageId, MessageParts};
    let h = crate::verify_action::Harness::new();
    let hamlet = h.user(HAMLET);
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    let denmark = h.app.state.channel_by_name(realm.id, "Denmark").unwrap();
    let now = natter::entropy::now();
    // Two messages from eight days ago (past the default week's limit), one
    // from an hour ago.
    for age in [8 * 24 * 3600, 8 * 24 * 3600 - 1, 3600] {
        h.commit(|s| {
            let message = Message::from(MessageParts {
                id: MessageId(s.ids.peek(IdKind::Message)),
                realm: realm.id,
                sender: hamlet.id,
                recipient: denmark.recipient,
                destination: Destination::Channel { channel: denmark.id, topic: "old".into() },
                content: "x".into(),
                rendered_content: "<p>x</p>".into(),
                timestamp: now - age,
                client: "test".into(),
                is_me_message: false,
            });
            Mutation::SendMessage(NewMessage {
                message: std::sync::Arc::new(message),
                read_by_sender: true,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            })
        });
    }
    let newest = (h.app.state.ids.peek(IdKind::Message) - 1).to_string();
    let all = [("topic", "new"), ("propagate_mode", "change_all")];
    let update = |email: &str, params: &[(&str, &str)]| {
        let realm = h.app.state.realm_by_subdomain("").unwrap();
        h.call_in(realm, email, api::message_edit::update, &[&newest], params)
    };
    // A member may not take the old messages along.
    let e = update(HAMLET, &all).unwrap_err();
    assert_eq!((e.status, e.code), (400, "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED"));
    assert_eq!(
        e.msg,
        "You only have permission to move the 1/3 most recent messages in this topic."
    );
    let first = json!(newest.parse::<u64>().unwrap());
    assert_eq!(
        e.extra,
        vec![
            ("first_message_id_allowed_to_move", first),
            ("total_messages_in_topic", json!(3)),
            ("total_messages_allowed_to_move", json!(1)),
        ]
    );
    // Nothing moved.
    let old_topic = (denmark.id, "old".to_owned());
    assert_eq!(h.app.state.by_topic.get(&old_topic).unwrap().len(), 3);
    // Only the recent one (change_one) is fine; a moderator moves them all.
    update(HAMLET, &[("topic", "new"), ("propagate_mode", "change_one")]).unwrap();
    let back = [("topic", "old"), ("propagate_mode", "change_one")];
    update(HAMLET, &back).unwrap();
    update("shiva@natter.test", &all).unwrap_or_else(|e| panic!("{}", e.msg));
    let new_topic = (denmark.id, "new".to_owned());
    assert!(h.app.state.by_topic.get(&old_topic).unwrap_or_default().is_empty());
    assert!(h.app.state.by_topic.get(&new_topic).unwrap().len() >= 3);
}

/// Joining through an invitation: the Notification Bot tells the inviter
/// (unless `notify_referrer_on_join=false`), the Welcome Bot sends the
/// invitation's welcome text (none when it has none); both are direct
/// messages rendered like any other, logged with the account.
#[test]
fn joining_sends_the_referrer_notice_and_the_welcome_text() {
    use crate::api_settings::{link_path, outbox};
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let invite = |c: &Client, email: &str, extra: &[(&str, &str)]| {
        let mut p = vec![("invitee_emails", email), ("stream_ids", "[]")];
        p.extend_from_slice(extra);
        c.post("/invites", &p).ok();
        link_path(outbox(&server).iter().find(|m| m.contains(email)).unwrap())
    };
    let join = |path: &str, name: &str| {
        let made =
            server.anonymous().post(path, &[("full_name", name), ("password", "rosemary")]).ok();
        let key = made["api_key"].as_str().unwrap().to_owned();
        let id = made["user_id"].as_u64().unwrap();
        (server.anonymous().with_auth(made["email"].as_str().unwrap(), &key), id)
    };
    let dms = |c: &Client| -> Vec<Value> {
        let narrow = json!([["is", "dm"]]).to_string();
        let params =
            [("anchor", "newest"), ("num_before", "20"), ("num_after", "0"), ("narrow", &narrow)];
        c.get("/messages", &params).ok()["messages"].as_array().unwrap().clone()
    };
    // An administrator's invitation with a welcome text (Markdown).
    let path =
        invite(&iago, "ophelia@elsinore.test", &[("welcome_message_custom_text", "Hi **there**")]);
    let (ophelia, ophelia_id) = join(&path, "Ophelia");
    let told = dms(&iago);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["sender_email"], NOTIFICATION_BOT);
    let html = told[0]["content"].as_str().unwrap();
    assert!(
        html.contains(&format!("data-user-id=\"{ophelia_id}\""))
            && html.contains("user-mention silent"),
        "the new user is mentioned (silently): {html}"
    );
    assert!(html.ends_with(" accepted your invitation to join Zulip!</p>"), "{html}");
    let welcome = dms(&ophelia);
    assert_eq!(welcome.len(), 1);
    assert_eq!(welcome[0]["sender_email"], WELCOME_BOT);
    assert_eq!(welcome[0]["content"], "<p>Hi <strong>there</strong></p>");
    assert_eq!(welcome[0]["flags"], json!([]));
    // A member's invitation: no welcome text (only administrators set one),
    // and no notice when the inviter asked for none.
    let path = invite(
        &hamlet,
        "laertes@elsinore.test",
        &[("welcome_message_custom_text", "ignored"), ("notify_referrer_on_join", "false")],
    );
    let (laertes, _) = join(&path, "Laertes");
    assert!(dms(&laertes).is_empty());
    assert!(dms(&hamlet).is_empty());
    // Durable with the account.
    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    assert_eq!(dms(&iago).len(), 1);
}

/// A scheduled message the send rules refuse at delivery time: the real
/// scheduler marks it failed and the Notification Bot tells its owner why.
#[test]
fn a_failed_scheduled_delivery_is_reported_by_the_notification_bot() {
    use std::time::{Duration, Instant};
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let denmark =
        hamlet.get("/get_stream_id", &[("stream", "Denmark")]).ok()["stream_id"].as_u64().unwrap();
    let now = natter::entropy::now();
    let at = (now + 2).to_string();
    let to = denmark.to_string();
    let params = [
        ("type", "stream"),
        ("to", to.as_str()),
        ("topic", "later"),
        ("content", "see you"),
        ("scheduled_delivery_timestamp", at.as_str()),
    ];
    hamlet.post("/scheduled_messages", &params).ok();
    // Archived before it is due: the delivery is refused.
    server.client(IAGO).request("DELETE", &format!("/streams/{denmark}"), &[]).ok();
    let narrow = json!([["is", "dm"]]).to_string();
    let dms = || {
        let params = [
            ("anchor", "newest"),
            ("num_before", "5"),
            ("num_after", "0"),
            ("narrow", narrow.as_str()),
            ("apply_markdown", "false"),
        ];
        hamlet.get("/messages", &params).ok()["messages"].as_array().unwrap().clone()
    };
    let start = Instant::now();
    let told = loop {
        if let Some(m) = dms().into_iter().find(|m| m["sender_email"] == NOTIFICATION_BOT) {
            break m;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no notice from the Notification Bot");
        std::thread::sleep(Duration::from_millis(100));
    };
    let content = told["content"].as_str().unwrap();
    assert!(content.starts_with("The message you scheduled for <time:"), "{content}");
    assert!(content.contains("was not sent because of the following error:\n\n> "), "{content}");
    assert!(content.ends_with("[View scheduled messages](#scheduled)"), "{content}");
    let listed = hamlet.get("/scheduled_messages", &[]).ok()["scheduled_messages"].clone();
    assert_eq!(listed[0]["failed"], true);
    assert!(content.contains(listed[0]["failure_message"].as_str().unwrap()));
}
