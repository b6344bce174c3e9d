//! Polls and to-do lists over HTTP: `/poll` and `/todo` messages become
//! widgets, `POST /submessage` adds to them (refusals as Zulip's), and
//! their state survives a restart. (Events: `verify_features.rs`.)

use serde_json::{json, Value};

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const IAGO: &str = "iago@natter.test";

fn send(c: &Client, to: &str, content: &str) -> String {
    let params = [("type", "stream"), ("to", to), ("topic", "widgets"), ("content", content)];
    c.post("/messages", &params).ok()["id"].to_string()
}

fn submessages(c: &Client, id: &str) -> Vec<Value> {
    let m = c.get(&format!("/messages/{id}"), &[]).ok();
    m["message"]["submessages"].as_array().unwrap().clone()
}

fn post(c: &Client, id: &str, content: &str) -> crate::util::Response {
    c.post("/submessage", &[("message_id", id), ("msg_type", "widget"), ("content", content)])
}

fn widget(submessage: &Value) -> Value {
    serde_json::from_str(submessage["content"].as_str().unwrap()).unwrap()
}

#[test]
fn polls_and_todo_lists_keep_their_submessages_across_a_restart() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let iago = server.client(IAGO);
    let poll = send(&hamlet, "Denmark", "/poll Where to?\n- Elsinore\n* Wittenberg");
    let todo = send(&hamlet, "Denmark", "/todo Plans\nAct: with care\nWatch");
    let first = submessages(&hamlet, &poll);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["sender_id"], crate::util::user_id(&server, HAMLET));
    assert_eq!(first[0]["msg_type"], "widget");
    assert_eq!(first[0]["message_id"].to_string(), poll);
    assert_eq!(
        widget(&first[0]),
        json!({"widget_type": "poll", "extra_data":
            {"question": "Where to?", "options": ["Elsinore", "Wittenberg"]}})
    );
    assert_eq!(
        widget(&submessages(&iago, &todo)[0]),
        json!({"widget_type": "todo", "extra_data": {"task_list_title": "Plans", "tasks": [
            {"task": "Act", "desc": "with care"}, {"task": "Watch", "desc": ""}]}})
    );
    // A plain message has none.
    assert!(submessages(&hamlet, &send(&hamlet, "Denmark", "no widget")).is_empty());

    let vote = r#"{"type":"vote","key":"canned,1","vote":1}"#;
    post(&iago, &poll, vote).ok();
    let option = r#"{"type":"new_option","idx":1,"option":"Norway"}"#;
    post(&hamlet, &poll, option).ok();
    let strike = r#"{"type":"strike","key":"0,canned"}"#;
    post(&iago, &todo, strike).ok();
    // GET /messages lists them too, in id order.
    let narrow = r#"[["topic","widgets"]]"#;
    let listed = hamlet
        .get("/messages", &[("anchor", "oldest"), ("num_after", "10"), ("narrow", narrow)])
        .ok();
    let listed = &listed["messages"][0]["submessages"];
    assert_eq!(listed.as_array().unwrap().len(), 3);
    assert_eq!(listed[1]["content"], vote);
    assert_eq!(listed[2]["content"], option);
    assert!(listed[1]["id"].as_u64() < listed[2]["id"].as_u64());

    let before = (submessages(&hamlet, &poll), submessages(&hamlet, &todo));
    server.stop();
    server.restart();
    let hamlet = server.client(HAMLET);
    assert_eq!((submessages(&hamlet, &poll), submessages(&hamlet, &todo)), before);
    // Ids keep counting after a restart.
    post(&hamlet, &poll, vote).ok();
    let after = submessages(&hamlet, &poll);
    assert!(after[3]["id"].as_u64() > after[2]["id"].as_u64());
}

#[test]
fn submessage_refusals() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let othello = server.client(OTHELLO);
    let iago = server.client(IAGO);
    let poll = send(&hamlet, "Denmark", "/poll Which?\nA\nB");
    let vote = r#"{"type":"vote","key":"canned,0","vote":1}"#;
    let bad = |c: &Client, params: &[(&str, &str)], msg: &str| {
        let e = c.post("/submessage", params).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], msg, "{params:?}");
    };
    // Messages the caller cannot read: a private channel he is not in,
    // another realm, one that does not exist.
    let secret = send(&iago, "core team", "/poll Secret?\nY\nN");
    let invalid = "Invalid message(s)";
    bad(&othello, &[("message_id", &secret), ("msg_type", "widget"), ("content", vote)], invalid);
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    bad(&lear, &[("message_id", &poll), ("msg_type", "widget"), ("content", vote)], invalid);
    bad(&hamlet, &[("message_id", "999999"), ("msg_type", "widget"), ("content", vote)], invalid);
    bad(&hamlet, &[("message_id", "-1"), ("msg_type", "widget"), ("content", vote)], invalid);
    // Content that is not JSON; a msg_type other than widget.
    let json = "Invalid json for submessage";
    bad(&othello, &[("message_id", &poll), ("msg_type", "widget"), ("content", "{nope")], json);
    let msg_type = "Invalid msg_type";
    bad(&othello, &[("message_id", &poll), ("msg_type", "poll"), ("content", vote)], msg_type);
    // Missing parameters.
    for missing in ["message_id", "msg_type", "content"] {
        let all = [("message_id", poll.as_str()), ("msg_type", "widget"), ("content", vote)];
        let params: Vec<_> = all.into_iter().filter(|(k, _)| *k != missing).collect();
        let e = othello.post("/submessage", &params).err(400, "REQUEST_VARIABLE_MISSING");
        assert_eq!(e["var_name"], missing);
    }
    // Not a widget: only its sender may start one there.
    let plain = send(&hamlet, "Denmark", "just text");
    let cannot = "You cannot attach a submessage to this message.";
    bad(&othello, &[("message_id", &plain), ("msg_type", "widget"), ("content", vote)], cannot);
    // Contents a poll does not take.
    let poll_bad = [
        (
            r#"{"type":"vote","key":"canned,0","vote":2}"#,
            r#"poll data["vote"] is not in the list of allowed values"#,
        ),
        (r#"{"type":"vote","key":"canned,0"}"#, r#"poll data["vote"] is missing"#),
        (r#"{"type":"vote","key":"k","vote":1,"extra":1}"#, "Unexpected arguments: extra"),
        (
            r#"{"type":"question","question":"Mine?"}"#,
            "You can't edit a question unless you are the author.",
        ),
        (r#"{"type":"launch"}"#, "Unknown type for poll data: launch"),
        ("[1]", "poll data is not a dict"),
    ];
    for (content, msg) in poll_bad {
        bad(&othello, &[("message_id", &poll), ("msg_type", "widget"), ("content", content)], msg);
    }
    // Nothing refused was stored.
    assert_eq!(submessages(&hamlet, &poll).len(), 1);
    assert!(submessages(&hamlet, &plain).is_empty());
    // The author may edit the question.
    post(&hamlet, &poll, r#"{"type":"question","question":"Which one?"}"#).ok();
    let todo = send(&hamlet, "Denmark", "/todo List");
    let e = post(
        &othello,
        &todo,
        r#"{"type":"new_task","key":1001,"task":"t","desc":"","completed":false}"#,
    )
    .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], r#"todo data["key"] is not in the allowed range"#);
    post(&othello, &todo, r#"{"type":"new_task","key":1,"task":"t","desc":"","completed":false}"#)
        .ok();
    assert_eq!(submessages(&hamlet, &poll).len(), 2);
    assert_eq!(submessages(&hamlet, &todo).len(), 2);
}
