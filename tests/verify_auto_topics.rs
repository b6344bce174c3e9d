//! Automatic topic visibility on send, on the register-vs-events
//! harness: the sender's `automatically_follow_topics_policy` and
//! `automatically_unmute_topics_in_muted_streams_policy`, a mentioned
//! user's `automatically_follow_topics_where_mentioned`; the reply's
//! `automatic_new_visibility_policy`, the `user_topic` event, and the
//! policy in a fresh register.

use serde_json::{json, Value};

use natter::api::{self, Reply};

use crate::verify_action::Harness;

const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member; general, Denmark

const FOLLOWED: u64 = 3;
const UNMUTED: u64 = 2;

fn send(h: &Harness, email: &str, to: &str, topic: &str, content: &str) -> Reply {
    let params = [("type", "stream"), ("to", to), ("topic", topic), ("content", content)];
    h.call(email, api::messages::send, &params).expect("send")
}

fn settings(h: &Harness, email: &str, params: &[(&str, &str)]) {
    h.call(email, api::settings::update, params).expect("PATCH /settings");
}

/// `email`'s policy for `topic` in channel `name`, from a fresh register.
fn policy(h: &Harness, email: &str, name: &str, topic: &str) -> Option<u64> {
    let state = h.register(email, &[("fetch_event_types", "[\"user_topic\"]")]);
    let id = h.app.state.channel_by_name(h.user(email).realm, name).unwrap().id.0;
    state["user_topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["stream_id"] == id && t["topic_name"] == topic)
        .map(|t| t["visibility_policy"].as_u64().unwrap())
}

fn auto(reply: &Reply) -> Option<u64> {
    reply.get("automatic_new_visibility_policy").map(|v| v.as_u64().unwrap())
}

#[test]
fn starting_a_topic_follows_it_by_default() {
    let h = Harness::new();
    let mut reply = None;
    let events = h.verify_action(
        HAMLET,
        &[],
        |h| reply = Some(send(h, HAMLET, "general", "Elsinore", "who's there?")),
        &["message", "muted_topics", "user_topic"],
    );
    assert_eq!(auto(&reply.unwrap()), Some(FOLLOWED));
    let event = &events[2];
    assert_eq!(event["topic_name"], "Elsinore");
    assert_eq!(event["visibility_policy"], FOLLOWED);
    assert_eq!(policy(&h, HAMLET, "general", "Elsinore"), Some(FOLLOWED));
    // Others get the message only.
    h.verify_action(
        OTHELLO,
        &[],
        |h| {
            send(h, HAMLET, "general", "Cyprus", "x");
        },
        &["message"],
    );
    // Replying in a topic someone else started changes nothing ("on
    // initiation" is the default), and nor does a second message.
    let mut reply = None;
    h.verify_action(
        OTHELLO,
        &[],
        |h| reply = Some(send(h, OTHELLO, "general", "elsinore", "Nay, answer me")),
        &["message"],
    );
    assert_eq!(auto(&reply.unwrap()), None);
    assert_eq!(policy(&h, OTHELLO, "general", "Elsinore"), None);
    assert_eq!(auto(&send(&h, HAMLET, "general", "Elsinore", "again")), None);
}

#[test]
fn follow_on_send_and_never() {
    let h = Harness::new();
    send(&h, OTHELLO, "general", "duel", "started by Othello");
    settings(&h, HAMLET, &[("automatically_follow_topics_policy", "2")]);
    let mut reply = None;
    h.verify_action(
        HAMLET,
        &[],
        |h| reply = Some(send(h, HAMLET, "general", "duel", "I join")),
        &["message", "muted_topics", "user_topic"],
    );
    assert_eq!(auto(&reply.unwrap()), Some(FOLLOWED));
    // "On participation" acts on sending too.
    settings(&h, OTHELLO, &[("automatically_follow_topics_policy", "1")]);
    assert_eq!(auto(&send(&h, OTHELLO, "Denmark", "ghosts", "x")), Some(FOLLOWED));
    // Never: a new topic stays as it was.
    settings(&h, HAMLET, &[("automatically_follow_topics_policy", "4")]);
    let r = send(&h, HAMLET, "general", "quiet", "x");
    assert_eq!(auto(&r), None);
    assert_eq!(policy(&h, HAMLET, "general", "quiet"), None);
    // A topic the user muted by hand is followed again on send.
    settings(&h, HAMLET, &[("automatically_follow_topics_policy", "2")]);
    let general = h.app.state.channel_by_name(h.user(HAMLET).realm, "general").unwrap().id.0;
    let general = general.to_string();
    let mute = [("stream_id", general.as_str()), ("topic", "quiet"), ("visibility_policy", "1")];
    h.call(HAMLET, api::personal::update_user_topic, &mute).unwrap();
    assert_eq!(auto(&send(&h, HAMLET, "general", "quiet", "y")), Some(FOLLOWED));
}

#[test]
fn unmute_in_a_muted_channel() {
    let h = Harness::new();
    settings(&h, HAMLET, &[("automatically_follow_topics_policy", "4")]);
    let denmark = h.app.state.channel_by_name(h.user(HAMLET).realm, "Denmark").unwrap().id.0;
    let mute = json!([{ "stream_id": denmark, "property": "is_muted", "value": true }]);
    let mute = mute.to_string();
    h.call(HAMLET, api::subscriptions::update_properties, &[("subscription_data", mute.as_str())])
        .unwrap();
    // Default "on send": a message to a muted channel unmutes its topic.
    let mut reply = None;
    let events = h.verify_action(
        HAMLET,
        &[],
        |h| reply = Some(send(h, HAMLET, "Denmark", "rot", "something is rotten")),
        &["message", "muted_topics", "user_topic"],
    );
    assert_eq!(auto(&reply.unwrap()), Some(UNMUTED));
    assert_eq!(events[2]["visibility_policy"], UNMUTED);
    // Already unmuted: nothing more.
    assert_eq!(auto(&send(&h, HAMLET, "Denmark", "rot", "still")), None);
    // Not in an unmuted channel.
    assert_eq!(auto(&send(&h, HAMLET, "general", "rot", "x")), None);
    // "On initiation": only a new topic.
    settings(&h, HAMLET, &[("automatically_unmute_topics_in_muted_streams_policy", "3")]);
    send(&h, OTHELLO, "Denmark", "old", "x");
    assert_eq!(auto(&send(&h, HAMLET, "Denmark", "old", "y")), None);
    assert_eq!(auto(&send(&h, HAMLET, "Denmark", "new", "y")), Some(UNMUTED));
    // An unmute never replaces a follow.
    settings(&h, HAMLET, &[("automatically_unmute_topics_in_muted_streams_policy", "2")]);
    let topic = [("stream_id", denmark.to_string()), ("topic", "followed".into())];
    let mut params: Vec<(&str, &str)> = topic.iter().map(|(k, v)| (*k, v.as_str())).collect();
    params.push(("visibility_policy", "3"));
    h.call(HAMLET, api::personal::update_user_topic, &params).unwrap();
    assert_eq!(auto(&send(&h, HAMLET, "Denmark", "followed", "z")), None);
    assert_eq!(policy(&h, HAMLET, "Denmark", "followed"), Some(FOLLOWED));
    // Never: nothing.
    settings(&h, HAMLET, &[("automatically_unmute_topics_in_muted_streams_policy", "4")]);
    assert_eq!(auto(&send(&h, HAMLET, "Denmark", "newer", "y")), None);
}

#[test]
fn a_personal_mention_follows_the_topic_for_the_mentioned() {
    let h = Harness::new();
    settings(&h, HAMLET, &[("automatically_follow_topics_policy", "4")]);
    send(&h, HAMLET, "general", "plot", "first");
    let othello = h.user(OTHELLO);
    let mention = format!("@**{}|{}** look", othello.full_name, othello.id.0);
    let mut reply = None;
    let events: Vec<Value> = h.verify_action(
        OTHELLO,
        &[],
        |h| reply = Some(send(h, HAMLET, "general", "plot", &mention)),
        &["message", "muted_topics", "user_topic"],
    );
    // The sender's own policy did not change.
    assert_eq!(auto(&reply.unwrap()), None);
    assert_eq!(events[2]["visibility_policy"], FOLLOWED);
    assert_eq!(policy(&h, OTHELLO, "general", "plot"), Some(FOLLOWED));
    // A silent mention, or a user who turned it off: nothing.
    let silent = format!("@_**{}|{}** psst", othello.full_name, othello.id.0);
    h.verify_action(
        OTHELLO,
        &[],
        |h| {
            send(h, HAMLET, "general", "silent", &silent);
        },
        &["message"],
    );
    settings(&h, OTHELLO, &[("automatically_follow_topics_where_mentioned", "false")]);
    let loud = format!("@**{}|{}** hey", othello.full_name, othello.id.0);
    send(&h, HAMLET, "general", "loud", &loud);
    assert_eq!(policy(&h, OTHELLO, "general", "loud"), None);
}

#[test]
fn direct_messages_change_no_topic() {
    let h = Harness::new();
    let othello = h.user(OTHELLO).id.0.to_string();
    let to = format!("[{othello}]");
    let params = [("type", "direct"), ("to", to.as_str()), ("content", "hi")];
    let mut reply = None;
    h.verify_action(
        HAMLET,
        &[],
        |h| reply = Some(h.call(HAMLET, api::messages::send, &params).unwrap()),
        &["message"],
    );
    assert_eq!(auto(&reply.unwrap()), None);
}

#[test]
fn a_refused_send_changes_no_policy() {
    let h = Harness::new();
    // Othello is not subscribed to the private "core team".
    let params = [("type", "stream"), ("to", "core team"), ("topic", "t"), ("content", "x")];
    let err = h.call(OTHELLO, api::messages::send, &params).unwrap_err();
    assert_eq!(err.code, "STREAM_DOES_NOT_EXIST");
    assert!(h.register(OTHELLO, &[])["user_topics"].as_array().unwrap().is_empty());
}

#[test]
fn a_scheduled_delivery_follows_the_topic_it_starts() {
    let h = Harness::new();
    let general = h.app.state.channel_by_name(h.user(HAMLET).realm, "general").unwrap().id.0;
    let (general, at) = (general.to_string(), (natter::entropy::now() + 3600).to_string());
    let params = [
        ("type", "stream"),
        ("to", general.as_str()),
        ("topic", "later"),
        ("content", "from the past"),
        ("scheduled_delivery_timestamp", at.as_str()),
    ];
    let reply = h.call(HAMLET, api::scheduled::create, &params).unwrap();
    let id = natter::state::scheduled::ScheduledId(reply["scheduled_message_id"].as_u64().unwrap());
    let deliver = |h: &Harness| {
        let outcome = api::scheduled::deliver(&h.app, id, natter::entropy::now() + 7200);
        assert!(matches!(outcome, api::scheduled::Delivery::Sent(_)));
    };
    h.verify_action(
        HAMLET,
        &[("event_types", "[\"message\", \"user_topic\"]")],
        deliver,
        &["message", "user_topic"],
    );
    assert_eq!(policy(&h, HAMLET, "general", "later"), Some(FOLLOWED));
}
