//! Bot storage: `GET/PUT/DELETE /bot_storage`, per account, with Zulip's
//! errors and size limit, durable across a crash.

use serde_json::json;

use crate::util::{Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";

fn bot(server: &TestServer, short: &str) -> Client {
    let hamlet = server.client(HAMLET);
    let p = [("full_name", &*format!("{short} bot")), ("short_name", short)];
    let r = hamlet.post("/bots", &p).ok();
    hamlet.with_auth(r["email"].as_str().unwrap(), r["api_key"].as_str().unwrap())
}

#[test]
fn bot_storage_keeps_each_bots_entries() {
    let mut server = TestServer::start();
    let one = bot(&server, "keeper");
    let two = bot(&server, "other");
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({}));
    one.request("PUT", "/bot_storage", &[("storage", r#"{"a": "1", "b": "two"}"#)]).ok();
    one.request("PUT", "/bot_storage", &[("storage", r#"{"b": "2"}"#)]).ok();
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({"a": "1", "b": "2"}));
    assert_eq!(one.get("/bot_storage", &[("keys", r#"["b"]"#)]).ok()["storage"], json!({"b": "2"}));
    // Isolation: another bot sees nothing of it.
    assert_eq!(two.get("/bot_storage", &[]).ok()["storage"], json!({}));
    let r = two.get("/bot_storage", &[("keys", r#"["a"]"#)]).err(400, "BAD_REQUEST");
    assert_eq!(r["msg"], "Key does not exist.");

    // Refusals change nothing.
    let r =
        one.request("PUT", "/bot_storage", &[("storage", r#"{"c": 3}"#)]).err(400, "BAD_REQUEST");
    assert_eq!(r["msg"], "Value type is int, but should be str.");
    one.request("PUT", "/bot_storage", &[("storage", "[1]")]).err(400, "BAD_REQUEST");
    one.request("PUT", "/bot_storage", &[("storage", "{")]).err(400, "INVALID_JSON");
    one.request("PUT", "/bot_storage", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    let r = one
        .request("DELETE", "/bot_storage", &[("keys", r#"["a", "nope"]"#)])
        .err(400, "BAD_REQUEST");
    assert_eq!(r["msg"], "Key does not exist.");
    one.get("/bot_storage", &[("keys", "\"a\"")]).err(400, "BAD_REQUEST");
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({"a": "1", "b": "2"}));

    // Durable.
    server.kill();
    server.restart();
    let one = Client { addr: server.addr.clone(), ..one };
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({"a": "1", "b": "2"}));
    one.request("DELETE", "/bot_storage", &[("keys", r#"["a"]"#)]).ok();
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({"b": "2"}));
    one.request("DELETE", "/bot_storage", &[]).ok();
    assert_eq!(one.get("/bot_storage", &[]).ok()["storage"], json!({}));
}

#[test]
fn bot_storage_refuses_past_the_size_limit() {
    let server = TestServer::start_with(&["--max-body-bytes", "30000000"]);
    let one = bot(&server, "big");
    let nine = json!({"k": "x".repeat(9_000_000)}).to_string();
    one.request("PUT", "/bot_storage", &[("storage", &nine)]).ok();
    let more = json!({"l": "y".repeat(999_999)}).to_string();
    let r = one.request("PUT", "/bot_storage", &[("storage", &more)]).err(400, "BAD_REQUEST");
    assert_eq!(
        r["msg"],
        "Request exceeds storage limit by 1 characters. The limit is 10000000 characters."
    );
    // Replacing a value counts the difference only.
    let again = json!({"k": "z".repeat(9_000_000)}).to_string();
    one.request("PUT", "/bot_storage", &[("storage", &again)]).ok();
}
