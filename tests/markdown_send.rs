//! Markdown on the send path: a sent message renders as `POST
//! /messages/render` renders it (links into the realm relative, code
//! highlighted), and hostile content is stored in bounded time.

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";

fn send(c: &Client, content: &str) -> String {
    let params = [("type", "stream"), ("to", "Denmark"), ("topic", "md"), ("content", content)];
    let id = c.post("/messages", &params).ok()["id"].as_u64().expect("message id");
    let m = c.get(&format!("/messages/{id}"), &[]).ok();
    m["message"]["content"].as_str().unwrap().to_owned()
}

fn render(c: &Client, content: &str) -> String {
    c.post("/messages/render", &[("content", content)]).ok()["rendered"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_send_renders_like_render() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let realm_url = server.anonymous().get("/server_settings", &[]).ok()["realm_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let link = format!("[the channel]({realm_url}/#narrow/channel/9-Denmark)");
    let sent = send(&hamlet, &link);
    assert_eq!(sent, "<p><a href=\"#narrow/channel/9-Denmark\">the channel</a></p>");
    assert_eq!(sent, render(&hamlet, &link));
    // A link elsewhere stays absolute.
    let other = "[x](https://example.com/#narrow)";
    assert_eq!(send(&hamlet, other), render(&hamlet, other));
    assert!(send(&hamlet, other).contains("href=\"https://example.com/#narrow\""));
    // Code is highlighted the same way on both paths.
    let code = "```python\ndef f():\n    return 1\n```";
    let sent = send(&hamlet, code);
    assert!(sent.contains("<span class=\"k\">def</span>"), "{sent}");
    assert_eq!(sent, render(&hamlet, code));
}
