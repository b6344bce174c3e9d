//! A connection's remembered realm and account (`http::Session`): the
//! second request on a keep-alive connection reuses what its `Host` and
//! `Authorization` headers resolved to, until an account or realm changes.
//! These tests keep one connection open across such changes and check that
//! every change is seen at once: a regenerated key, a deactivation, another
//! realm's host, wrong credentials after right ones.

use std::io::Write;
use std::net::TcpStream;

use crate::util::{basic_auth, connect, read_response, Response, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const OWNER: &str = "desdemona@natter.test";

/// Sends `GET /api/v1/users/me` on `stream` with these headers.
fn me(stream: &mut TcpStream, host: &str, authorization: &str) -> Response {
    let request = format!(
        "GET /api/v1/users/me HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    read_response(stream)
}

#[test]
fn a_kept_connection_sees_key_changes_and_deactivation_at_once() {
    let server = TestServer::start();
    let host = server.addr.clone();
    let hamlet = server.account(HAMLET);
    let old = basic_auth(HAMLET, &hamlet.key);
    let mut stream = connect(&server.addr);
    for _ in 0..3 {
        assert_eq!(me(&mut stream, &host, &old).ok()["email"], HAMLET);
    }
    // Wrong credentials on the same connection are refused, right ones
    // still work after them.
    me(&mut stream, &host, &basic_auth(HAMLET, "x".repeat(32).as_str()))
        .err(401, "INVALID_API_KEY");
    assert_eq!(me(&mut stream, &host, &old).ok()["email"], HAMLET);

    // A new key (asked on another connection): the old one stops at once
    // on this one, the new one works on it.
    let key = server.client(HAMLET).post("/users/me/api_key/regenerate", &[]).ok()["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    me(&mut stream, &host, &old).err(401, "INVALID_API_KEY");
    let new = basic_auth(HAMLET, &key);
    let id = me(&mut stream, &host, &new).ok()["user_id"].as_u64().unwrap();

    // Deactivated by the owner: refused on this connection too.
    server.client(OWNER).request("DELETE", &format!("/users/{id}"), &[]).ok();
    me(&mut stream, &host, &new).err(401, "USER_DEACTIVATED");
    server.client(OWNER).post(&format!("/users/{id}/reactivate"), &[]).ok();
    assert_eq!(me(&mut stream, &host, &new).ok()["user_id"], id);
}

#[test]
fn a_kept_connection_follows_its_host_and_credentials() {
    let server = TestServer::start();
    let host = server.addr.clone();
    let port = host.rsplit_once(':').unwrap().1;
    let lear_host = format!("lear.localhost:{port}");
    let hamlet = basic_auth(HAMLET, &server.account(HAMLET).key);
    let king = basic_auth("king@lear.test", &server.account("king@lear.test").key);
    let mut stream = connect(&server.addr);
    assert_eq!(me(&mut stream, &host, &hamlet).ok()["email"], HAMLET);
    // The same credentials for another realm's host are not that realm's.
    me(&mut stream, &lear_host, &hamlet).err(401, "INVALID_API_KEY");
    assert_eq!(me(&mut stream, &lear_host, &king).ok()["email"], "king@lear.test");
    me(&mut stream, &host, &king).err(401, "INVALID_API_KEY");
    assert_eq!(me(&mut stream, &host, &hamlet).ok()["email"], HAMLET);
    // Another account's credentials on the same connection are that account.
    let owner = basic_auth(OWNER, &server.account(OWNER).key);
    assert_eq!(me(&mut stream, &host, &owner).ok()["email"], OWNER);
    // An unknown host is refused even after a good request.
    let e = me(&mut stream, &format!("nowhere.localhost:{port}"), &owner);
    assert!(e.status >= 400, "{}", e.body);
}
