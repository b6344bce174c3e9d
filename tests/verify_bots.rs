//! The `realm_bots` register section and `realm_bot` events, on
//! the register-vs-events harness: a bot's owner and the administrators
//! see it created, renamed, re-keyed, re-owned, deactivated and
//! reactivated; other users see only `realm_user` events. Messages bots
//! send (an incoming webhook's, an outgoing-webhook bot's answer) are
//! message events like any other.

use serde_json::Value;

use natter::api::{self, Handler, Reply};
use natter::error::ApiResult;

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test"; // member
const OTHELLO: &str = "othello@natter.test"; // member
const CORDELIA: &str = "cordelia@natter.test"; // member
const IAGO: &str = "iago@natter.test"; // administrator
const FETCH: &[(&str, &str)] = &[("event_types", "[\"realm_bot\", \"realm_user\"]")];

fn call(
    h: &Harness,
    email: &str,
    handler: Handler,
    path: &[&str],
    params: &[(&str, &str)],
) -> ApiResult<Reply> {
    let realm = h.app.state.realm_by_subdomain("").unwrap();
    h.call_in(realm, email, handler, path, params)
}

fn bots(h: &Harness, email: &str) -> Vec<Value> {
    h.register(email, FETCH)["realm_bots"].as_array().unwrap().clone()
}

#[test]
fn realm_bot_events_reach_the_owner_and_administrators() {
    let h = Harness::new();
    // The seed's bot belongs to the realm owner: an administrator sees it,
    // a member who does not own it does not.
    assert_eq!(bots(&h, IAGO).len(), 1);
    assert!(bots(&h, HAMLET).is_empty());

    let create = |h: &Harness| {
        let p = [("full_name", "Yorick Bot"), ("short_name", "yorick")];
        call(h, HAMLET, api::accounts::create_bot, &[], &p).unwrap();
    };
    let events = h.verify_action(HAMLET, FETCH, create, &["realm_user", "realm_bot"]);
    assert_eq!(events[1]["op"], "add");
    let bot = events[1]["bot"].clone();
    assert_eq!(bot["full_name"], "Yorick Bot");
    assert_eq!(bot["owner_id"], h.user(HAMLET).id.0);
    assert_eq!(bot["is_active"], true);
    assert!(bot["api_key"].as_str().is_some_and(|k| !k.is_empty()));
    let id = bot["user_id"].as_u64().unwrap().to_string();
    let path = [id.as_str()];

    // Renamed: owner and administrators get the update; others only the user.
    let rename = |name: &'static str| {
        let id = id.clone();
        move |h: &Harness| {
            call(h, HAMLET, api::accounts::update_bot, &[&id], &[("full_name", name)]).unwrap();
        }
    };
    let e = h.verify_action(HAMLET, FETCH, rename("Poor Yorick"), &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["bot"]["full_name"], "Poor Yorick");
    h.verify_action(IAGO, FETCH, rename("Yorick"), &["realm_user", "realm_bot"]);
    h.verify_action(CORDELIA, FETCH, rename("Jester"), &["realm_user"]);

    // A new key: to those who manage the bot only.
    let rekey = |h: &Harness| {
        call(h, HAMLET, api::accounts::regenerate_bot_key, &path, &[]).unwrap();
    };
    let e = h.verify_action(HAMLET, FETCH, rekey, &["realm_bot"]);
    assert_eq!(e[0]["bot"]["api_key"], bots(&h, HAMLET)[0]["api_key"]);
    h.verify_action(CORDELIA, FETCH, rekey, &[]);
    // Refused: a member who does not own it changes nothing, no event.
    let refused = |h: &Harness| {
        let err = call(h, CORDELIA, api::accounts::regenerate_bot_key, &path, &[]).unwrap_err();
        assert_eq!(err.msg, "Insufficient permission");
    };
    h.verify_action(HAMLET, FETCH, refused, &[]);

    // A new owner: the old one loses it, the new one gains it whole, the
    // administrators see the owner change.
    let othello = h.user(OTHELLO).id.0.to_string();
    let reown = |to: String| {
        let id = id.clone();
        move |h: &Harness| {
            let p = [("bot_owner_id", to.as_str())];
            call(h, IAGO, api::accounts::update_bot, &[&id], &p).unwrap();
        }
    };
    let hamlet = h.user(HAMLET).id.0.to_string();
    let e = h.verify_action(HAMLET, FETCH, reown(othello.clone()), &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["op"], "delete");
    assert!(bots(&h, HAMLET).is_empty());
    let e = h.verify_action(OTHELLO, FETCH, reown(hamlet), &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["op"], "delete");
    let e = h.verify_action(OTHELLO, FETCH, reown(othello), &["realm_user", "realm_bot"]);
    assert_eq!(
        (e[1]["op"].as_str(), e[1]["bot"]["full_name"].as_str()),
        (Some("add"), Some("Jester"))
    );
    let e = h.verify_action(
        IAGO,
        FETCH,
        reown(h.user(HAMLET).id.0.to_string()),
        &["realm_user", "realm_bot"],
    );
    assert_eq!(e[1]["op"], "update");
    assert_eq!(e[1]["bot"]["owner_id"], h.user(HAMLET).id.0);

    // Deactivated and reactivated: an update of is_active; the bot stays
    // listed (as inactive) for those who manage it.
    let deactivate = |h: &Harness| {
        call(h, IAGO, api::accounts::deactivate, &path, &[]).unwrap();
    };
    let e = h.verify_action(HAMLET, FETCH, deactivate, &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["bot"]["is_active"], false);
    assert_eq!(bots(&h, HAMLET)[0]["is_active"], false);
    let reactivate = |h: &Harness| {
        call(h, IAGO, api::accounts::reactivate, &path, &[]).unwrap();
    };
    let e = h.verify_action(HAMLET, FETCH, reactivate, &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["bot"]["is_active"], true);
    // Never listed for other members.
    assert!(bots(&h, CORDELIA).is_empty());
    // `DELETE /bots/{id}` by its owner: the same deactivation.
    let delete = |h: &Harness| {
        call(h, HAMLET, api::accounts::deactivate_bot, &path, &[]).unwrap();
    };
    let e = h.verify_action(HAMLET, FETCH, delete, &["realm_user", "realm_bot"]);
    assert_eq!(e[1]["bot"]["is_active"], false);
    h.verify_action(
        CORDELIA,
        FETCH,
        |h: &Harness| {
            call(h, IAGO, api::accounts::reactivate, &path, &[]).unwrap();
            call(h, IAGO, api::accounts::deactivate_bot, &path, &[]).unwrap();
        },
        &["realm_user", "realm_user"],
    );
}

#[test]
fn outgoing_webhook_services_show_in_realm_bots_and_their_events() {
    let h = Harness::new();
    let create = |h: &Harness| {
        let p = [
            ("full_name", "Hook Bot"),
            ("short_name", "hook"),
            ("bot_type", "3"),
            ("payload_url", "\"http://bots.example.com/hook\""),
            ("interface_type", "2"),
        ];
        call(h, HAMLET, api::accounts::create_bot, &[], &p).unwrap();
    };
    let events = h.verify_action(HAMLET, FETCH, create, &["realm_user", "realm_bot"]);
    let bot = events[1]["bot"].clone();
    assert_eq!(bot["bot_type"], 3);
    assert_eq!(bot["services"][0]["base_url"], "http://bots.example.com/hook");
    assert_eq!(bot["services"][0]["interface"], 2);
    let token = bot["services"][0]["token"].clone();
    assert_eq!(token.as_str().map(str::len), Some(32));
    let id = bot["user_id"].as_u64().unwrap().to_string();

    // A new URL: an update of `services` to the owner and administrators.
    let repoint = |url: &'static str| {
        let id = id.clone();
        move |h: &Harness| {
            let p = [("service_payload_url", url), ("service_interface", "1")];
            call(h, HAMLET, api::accounts::update_bot, &[&id], &p).unwrap();
        }
    };
    let e =
        h.verify_action(HAMLET, FETCH, repoint("\"http://bots.example.com/v2\""), &["realm_bot"]);
    assert_eq!(e[0]["op"], "update");
    assert_eq!(
        e[0]["bot"]["services"],
        serde_json::json!([{"base_url": "http://bots.example.com/v2", "interface": 1,
                            "token": token}])
    );
    h.verify_action(IAGO, FETCH, repoint("\"http://bots.example.com/v3\""), &["realm_bot"]);
    h.verify_action(CORDELIA, FETCH, repoint("\"http://bots.example.com/v4\""), &[]);
    // Refused: no change, no event.
    let refused = |h: &Harness| {
        let p = [("service_payload_url", "\"http://evil.example.com\"")];
        let err = call(h, CORDELIA, api::accounts::update_bot, &[&id], &p).unwrap_err();
        assert_eq!(err.msg, "Insufficient permission");
    };
    h.verify_action(HAMLET, FETCH, refused, &[]);
}

/// An incoming webhook's messages reach the channel's subscribers, and its
/// missing-channel notice reaches the bot's owner, as message events.
#[test]
fn incoming_webhook_messages_are_message_events() {
    let h = Harness::new();
    let p = [("full_name", "Hook Bot"), ("short_name", "hook"), ("bot_type", "2")];
    let bot = call(&h, HAMLET, api::accounts::create_bot, &[], &p).unwrap();
    let key = bot["api_key"].as_str().unwrap().to_owned();
    let all: &[(&str, &str)] = &[];
    let post = |stream: &'static str| {
        let key = key.clone();
        move |h: &Harness| {
            let params =
                [("api_key", key.as_str()), ("stream", stream), ("payload", r#"{"a": 1}"#)];
            call(h, HAMLET, api::webhooks::receive, &["json"], &params).unwrap();
        }
    };
    let events = h.verify_action(OTHELLO, all, post("Denmark"), &["message"]);
    assert_eq!(events[0]["message"]["sender_email"], bot["email"]);
    // The notice is the owner's alone.
    h.verify_action(HAMLET, all, post("nowhere"), &["message"]);
    h.verify_action(OTHELLO, all, post("nowhere"), &[]);
}

/// An outgoing-webhook bot's answer is sent as any message is: the
/// subscribers get its message event, and a member it mentions also the
/// `user_topic` event of the topic followed for her.
#[test]
fn an_outgoing_bots_answer_is_a_message_and_follows_the_topic_for_whom_it_mentions() {
    use natter::api::messages::{send_as, Conversation};
    let h = Harness::new();
    let p = [
        ("full_name", "Relay Bot"),
        ("short_name", "relay"),
        ("bot_type", "3"),
        ("payload_url", "\"https://bots.example.com/relay\""),
    ];
    let bot = call(&h, HAMLET, api::accounts::create_bot, &[], &p).unwrap();
    let bot = h.user(bot["email"].as_str().unwrap());
    let denmark = h.app.state.channel_by_name.get(&(bot.realm, "denmark".to_owned())).unwrap();
    let answer = move |content: &'static str| {
        let bot = bot.clone();
        move |h: &Harness| {
            let to = Conversation::Channel { channel: denmark, topic: "answers".into() };
            send_as(&h.app, &bot, to, content, "OutgoingWebhookResponse", Vec::new(), None)
                .unwrap();
        }
    };
    let fetch: &[(&str, &str)] = &[("event_types", "[\"message\", \"user_topic\"]")];
    let mention = "Done, @**Othello, the Moor of Venice**.";
    let events = h.verify_action(OTHELLO, fetch, answer(mention), &["message", "user_topic"]);
    assert!(events[0]["flags"].as_array().unwrap().contains(&"mentioned".into()));
    assert_eq!(events[1]["visibility_policy"], 3);
    // Someone it does not mention gets the message alone.
    h.verify_action(HAMLET, fetch, answer(mention), &["message"]);
}
