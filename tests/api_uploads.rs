//! Uploaded files: POST /user_uploads (streamed to disk, size limit,
//! quotas), downloads outside /api/v1 (Basic auth, temporary URLs, who may
//! read, Range, ETag, the headers that keep an HTML or SVG file from
//! running), GET /attachments, DELETE /attachments/{id}, and restarts.

use std::collections::HashMap;
use std::io::{Read, Write};

use serde_json::Value;

use crate::util::{basic_auth, connect, read_response, Client, Response, TestServer, ACME};

const HAMLET: &str = "hamlet@natter.test"; // member: general, Denmark, core team
const OTHELLO: &str = "othello@natter.test"; // member: general, Denmark
const POLONIUS: &str = "polonius@natter.test"; // guest: general only
const IAGO: &str = "iago@natter.test"; // administrator

pub(crate) const BOUNDARY: &str = "natter-test-boundary-7d3a";

/// A multipart body with one file part per `(filename, content type,
/// bytes)` and text fields.
pub(crate) fn multipart(files: &[(&str, &str, &[u8])], fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (i, (filename, content_type, bytes)) in files.iter().enumerate() {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file{i}\"; \
                 filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// `POST /api/v1/user_uploads` with `body` as `client`.
fn post_upload(server: &TestServer, email: Option<&str>, body: &[u8]) -> Response {
    post_multipart(server, "/user_uploads", email, body)
}

/// `POST /api/v1<path>` with a multipart `body`.
pub(crate) fn post_multipart(
    server: &TestServer,
    path: &str,
    email: Option<&str>,
    body: &[u8],
) -> Response {
    let mut head = format!(
        "POST /api/v1{path} HTTP/1.1\r\nHost: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n",
        server.addr,
        body.len()
    );
    if let Some(email) = email {
        let a = server.account(email);
        head.push_str(&format!("Authorization: {}\r\n", basic_auth(&a.email, &a.key)));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    server.anonymous().raw(&bytes)
}

/// Uploads one file as `email`; the reply's `url`.
pub(crate) fn upload(
    server: &TestServer,
    email: &str,
    name: &str,
    content_type: &str,
    bytes: &[u8],
) -> String {
    let reply = post_upload(server, Some(email), &multipart(&[(name, content_type, bytes)], &[]));
    let json = reply.ok();
    assert_eq!(json["uri"], json["url"]);
    json["url"].as_str().unwrap().to_owned()
}

/// A raw download response: status, headers (lowercased names), body.
pub(crate) struct Download {
    pub(crate) status: u16,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Download {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// `GET <path>` (outside /api/v1) as `auth` (email, key), with extra
/// headers.
pub(crate) fn download(
    server: &TestServer,
    path: &str,
    auth: Option<(&str, &str)>,
    extra: &[(&str, &str)],
) -> Download {
    download_method(server, "GET", path, auth, extra)
}

fn download_method(
    server: &TestServer,
    method: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    extra: &[(&str, &str)],
) -> Download {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", server.addr);
    if let Some((email, key)) = auth {
        head.push_str(&format!("Authorization: {}\r\n", basic_auth(email, key)));
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = connect(&server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    let text = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Download { status, headers, body: raw[split..].to_vec() }
}

fn as_user(server: &TestServer, email: &str) -> (String, String) {
    let a = server.account(email);
    (a.email, a.key)
}

fn auth(creds: &(String, String)) -> Option<(&str, &str)> {
    Some((creds.0.as_str(), creds.1.as_str()))
}

fn send(c: &Client, to: &str, content: &str) -> u64 {
    c.post("/messages", &[("type", "stream"), ("to", to), ("topic", "files"), ("content", content)])
        .ok()["id"]
        .as_u64()
        .unwrap()
}

#[test]
fn upload_download_and_share() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let othello = as_user(&server, OTHELLO);
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let url =
        upload(&server, HAMLET, "../../etc/my report.bin", "application/octet-stream", &bytes);
    // The client's name is only the last segment, sanitised.
    assert!(url.starts_with("/user_uploads/"), "{url}");
    assert!(url.ends_with("/my-report.bin"), "{url}");
    let segments: Vec<&str> = url.trim_start_matches("/user_uploads/").split('/').collect();
    assert_eq!(segments.len(), 4, "{url}");
    assert!(!url.contains(".."));

    // The uploader downloads the same bytes with Basic auth.
    let d = download(&server, &url, auth(&hamlet), &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.body, bytes);
    assert_eq!(d.headers["content-length"], bytes.len().to_string());
    assert_eq!(d.headers["content-type"], "application/octet-stream");
    assert!(d.headers["content-disposition"].starts_with("attachment; "), "{:?}", d.headers);
    assert_eq!(d.headers["x-content-type-options"], "nosniff");
    assert!(d.headers["content-security-policy"].contains("sandbox"));

    // Someone else cannot, until a message they can read links it.
    let d = download(&server, &url, auth(&othello), &[]);
    assert_eq!((d.status, d.json()["code"].as_str()), (404, Some("NOT_FOUND")));
    assert!(d.body.len() < 200, "no bytes leak");
    let id = send(&server.client(HAMLET), "core team", &format!("[report]({url})"));
    assert_eq!(download(&server, &url, auth(&othello), &[]).status, 404, "a private channel");
    send(&server.client(HAMLET), "Denmark", &format!("again: [report]({url})"));
    let d = download(&server, &url, auth(&othello), &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.body, bytes);

    // No credentials: Zulip's redirect to the login page (for a page, an
    // API client or curl), or its 403 for an `<img>`; never the bytes.
    let d = download(&server, &url, None, &[]);
    assert_eq!(d.status, 302);
    let next = d.headers["location"].strip_prefix("/?next=").unwrap();
    assert_eq!(percent_encoding::percent_decode_str(next).decode_utf8().unwrap(), url);
    assert!(d.body.is_empty());
    let d = download(&server, &url, None, &[("Accept", "*/*")]);
    assert_eq!(d.status, 302);
    let d = download(&server, &url, None, &[("Accept", "image/webp,image/*,*/*;q=0.8")]);
    assert_eq!((d.status, d.json()["code"].as_str()), (403, Some("UNAUTHORIZED")));
    assert_eq!(d.json()["msg"], "You are not authorized to view this file.");
    // A file that does not exist: 404, with or without credentials.
    let unknown = "/user_uploads/1/ab/ABCDEFGHIJKLMNOPQRSTUVWX/x.bin";
    assert_eq!(download(&server, unknown, None, &[]).status, 404);
    // Bad credentials: 401, as the API answers.
    assert_eq!(download(&server, &url, Some((HAMLET, "wrong")), &[]).status, 401);

    // The attachment lists the messages that link it.
    let list = server.client(HAMLET).get("/attachments", &[]).ok();
    let attachments = list["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1);
    let a = &attachments[0];
    assert_eq!(a["size"], bytes.len());
    assert_eq!(a["name"], "my-report.bin");
    assert_eq!(format!("/user_uploads/{}", a["path_id"].as_str().unwrap()), url);
    let linked: Vec<u64> =
        a["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(linked.len(), 2);
    assert!(linked.contains(&id));
    assert_eq!(list["upload_space_used"], bytes.len());
    assert!(server.client(OTHELLO).get("/attachments", &[]).ok()["attachments"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn temporary_urls_download_without_credentials() {
    let server = TestServer::start();
    let url = upload(&server, HAMLET, "notes.txt", "text/plain", b"some notes");
    // The same path under /api/v1.
    let api_path = url.clone();
    let reply = server.client(HAMLET).get(&api_path, &[]).ok();
    let temporary = reply["url"].as_str().unwrap().to_owned();
    assert!(temporary.starts_with("/user_uploads/temporary/"), "{temporary}");
    assert!(temporary.ends_with("/notes.txt"));
    let d = download(&server, &temporary, None, &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.body, b"some notes");
    // Another user cannot get a temporary URL for it.
    server.client(OTHELLO).get(&api_path, &[]).err(404, "NOT_FOUND");
    // A made-up token, or the right token with another name, is 404.
    let token = temporary.split('/').nth(3).unwrap();
    assert_eq!(download(&server, "/user_uploads/temporary/AAAA/notes.txt", None, &[]).status, 404);
    let renamed = format!("/user_uploads/temporary/{token}/other.txt");
    assert_eq!(download(&server, &renamed, None, &[]).status, 404);
}

#[test]
fn ranges_etags_and_head() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 256) as u8).collect();
    let url = upload(&server, HAMLET, "clip.mp4", "video/mp4", &bytes);
    let d = download(&server, &url, auth(&hamlet), &[("Range", "bytes=10-19")]);
    assert_eq!(d.status, 206);
    assert_eq!(d.body, &bytes[10..20]);
    assert_eq!(d.headers["content-range"], "bytes 10-19/1000");
    assert_eq!(d.headers["content-type"], "video/mp4");
    assert!(d.headers["content-disposition"].starts_with("inline; "));
    let d = download(&server, &url, auth(&hamlet), &[("Range", "bytes=-5")]);
    assert_eq!((d.status, d.body.as_slice()), (206, &bytes[995..]));
    let d = download(&server, &url, auth(&hamlet), &[("Range", "bytes=990-")]);
    assert_eq!((d.status, d.body.as_slice()), (206, &bytes[990..]));
    let d = download(&server, &url, auth(&hamlet), &[("Range", "bytes=1000-")]);
    assert_eq!(d.status, 416);
    assert_eq!(d.headers["content-range"], "bytes */1000");
    // Several ranges: the whole file.
    let d = download(&server, &url, auth(&hamlet), &[("Range", "bytes=0-1,5-6")]);
    assert_eq!((d.status, d.body.len()), (200, 1000));
    // ETag and If-None-Match.
    let d = download(&server, &url, auth(&hamlet), &[]);
    let etag = d.headers["etag"].clone();
    let d = download(&server, &url, auth(&hamlet), &[("If-None-Match", &etag)]);
    assert_eq!(d.status, 304);
    assert!(d.body.is_empty());
    let d = download(&server, &url, auth(&hamlet), &[("If-None-Match", "\"other\"")]);
    assert_eq!(d.status, 200);
    // HEAD: the head of a GET, no body.
    let d = download_method(&server, "HEAD", &url, auth(&hamlet), &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.headers["content-length"], "1000");
    assert!(d.body.is_empty());
    // Other methods are refused.
    let d = download_method(&server, "DELETE", &url, auth(&hamlet), &[]);
    assert_eq!(d.status, 405);
}

#[test]
fn html_and_svg_never_run_as_pages() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    let html = b"<html><script>alert(document.cookie)</script></html>";
    for (name, declared, bytes) in [
        ("x.svg", "image/svg+xml", &svg[..]),
        ("x.html", "text/html", &html[..]),
        // A page that claims to be something harmless is served as that.
        ("x.png", "text/html", &html[..]),
    ] {
        let url = upload(&server, HAMLET, name, declared, bytes);
        let d = download(&server, &url, auth(&hamlet), &[]);
        assert_eq!(d.status, 200);
        assert_eq!(d.headers["x-content-type-options"], "nosniff");
        let csp = &d.headers["content-security-policy"];
        assert!(csp.contains("sandbox") && csp.contains("default-src 'none'"), "{csp}");
        if declared != "image/png" && name != "x.png" {
            assert!(
                d.headers["content-disposition"].starts_with("attachment; "),
                "{name}: {:?}",
                d.headers
            );
        }
    }
}

#[test]
fn upload_refusals() {
    let server = TestServer::start_with(&["--max-file-upload-mib", "1"]);
    // No credentials, or bad ones: 401, and a large body from such a
    // caller is not streamed to disk (the small body limit applies).
    post_upload(&server, None, &multipart(&[("a.txt", "text/plain", b"x")], &[]))
        .err(401, "UNAUTHORIZED");
    let large = multipart(&[("a.bin", "application/zip", &vec![1u8; 900 * 1024])], &[]);
    let mut bytes = format!(
        "POST /api/v1/user_uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        basic_auth(HAMLET, "not-the-key"),
        large.len() + 300 * 1024
    )
    .into_bytes();
    bytes.extend_from_slice(&large);
    bytes.extend_from_slice(&vec![b' '; 300 * 1024]);
    server.anonymous().raw(&bytes).err(413, "BAD_REQUEST");
    // No file, two files.
    post_upload(&server, Some(HAMLET), &multipart(&[], &[("a", "b")])).err(400, "BAD_REQUEST");
    let two = multipart(&[("a.txt", "text/plain", b"x"), ("b.txt", "text/plain", b"y")], &[]);
    let e = post_upload(&server, Some(HAMLET), &two).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You may only upload one file at a time");
    // A form body, not multipart.
    server.client(HAMLET).post("/user_uploads", &[("a", "b")]).err(400, "BAD_REQUEST");
    // Broken multipart.
    post_upload(&server, Some(HAMLET), b"--nope\r\n").err(400, "BAD_REQUEST");
    // Over the limit: a file part of 1 MiB + 1 (body within the framing
    // allowance), then a body far over it (refused before it is read).
    let big = vec![7u8; (1 << 20) + 1];
    let e = post_upload(
        &server,
        Some(HAMLET),
        &multipart(&[("big.bin", "application/zip", &big)], &[]),
    )
    .err(413, "BAD_REQUEST");
    assert_eq!(
        e["msg"],
        "File is larger than this server's configured maximum upload size (1 MiB)."
    );
    let huge = format!(
        "POST /api/v1/user_uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        basic_auth(HAMLET, &server.account(HAMLET).key),
        200 << 20
    );
    server.anonymous().raw(huge.as_bytes()).err(413, "BAD_REQUEST");
    // Chunked uploads are refused: the size must be known.
    let chunked = format!(
        "POST /api/v1/user_uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        server.addr,
        basic_auth(HAMLET, &server.account(HAMLET).key),
    );
    assert_eq!(server.anonymous().raw(chunked.as_bytes()).status, 411);
    // Exactly the limit is fine; other routes keep the small body limit.
    let limit = vec![1u8; 1 << 20];
    upload(&server, HAMLET, "limit.bin", "application/zip", &limit);
    let content = "x".repeat(2 << 20);
    let r = server.client(HAMLET).post(
        "/messages",
        &[("type", "stream"), ("to", "general"), ("topic", "t"), ("content", &content)],
    );
    assert_eq!(r.status, 413);
    // Nothing was left in the staging directory.
    let staging = server.data_dir().join("data/uploads/tmp");
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0, "{}", staging.display());
}

#[test]
fn quotas() {
    let server =
        TestServer::start_with(&["--upload-quota-user-mib", "1", "--upload-quota-realm-mib", "2"]);
    let half = vec![0u8; 600 * 1024];
    upload(&server, HAMLET, "a.bin", "application/zip", &half);
    let e =
        post_upload(&server, Some(HAMLET), &multipart(&[("b.bin", "application/zip", &half)], &[]))
            .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Upload would exceed your upload quota.");
    upload(&server, OTHELLO, "c.bin", "application/zip", &half);
    upload(&server, IAGO, "d.bin", "application/zip", &half);
    let e = post_upload(
        &server,
        Some(POLONIUS),
        &multipart(&[("e.bin", "application/zip", &half)], &[]),
    )
    .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Upload would exceed your organization's upload quota.");
    // Register says so.
    let reg =
        server.client(HAMLET).post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(reg["realm_upload_quota_mib"], 2);
    // Deleting frees the space.
    let list = server.client(HAMLET).get("/attachments", &[]).ok();
    let id = list["attachments"][0]["id"].as_u64().unwrap();
    server.client(HAMLET).request("DELETE", &format!("/attachments/{id}"), &[]).ok();
    upload(&server, HAMLET, "b.bin", "application/zip", &half);
}

#[test]
fn delete_attachments() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let url = upload(&server, HAMLET, "a.txt", "text/plain", b"abc");
    let id = server.client(HAMLET).get("/attachments", &[]).ok()["attachments"][0]["id"]
        .as_u64()
        .unwrap();
    // Only the owner may delete it; an unknown id is the same error.
    for email in [OTHELLO, IAGO, POLONIUS] {
        let e = server.client(email).request("DELETE", &format!("/attachments/{id}"), &[]);
        assert_eq!(e.err(400, "BAD_REQUEST")["msg"], "Invalid attachment");
    }
    server.client(HAMLET).request("DELETE", "/attachments/99999", &[]).err(400, "BAD_REQUEST");
    server.client(HAMLET).request("DELETE", "/attachments/x", &[]).err(400, "BAD_REQUEST");
    server.client(HAMLET).request("DELETE", &format!("/attachments/{id}"), &[]).ok();
    assert_eq!(download(&server, &url, auth(&hamlet), &[]).status, 404);
    assert!(server.client(HAMLET).get("/attachments", &[]).ok()["attachments"]
        .as_array()
        .unwrap()
        .is_empty());
    // The bytes are gone from the store.
    let key: Vec<&str> = url.trim_start_matches("/user_uploads/").split('/').take(3).collect();
    assert!(!server.data_dir().join("data/uploads").join(key.join("/")).exists());
}

#[test]
fn path_traversal_and_odd_paths_are_404() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let url = upload(&server, HAMLET, "a.txt", "text/plain", b"abc");
    let parts: Vec<&str> = url.trim_start_matches("/user_uploads/").split('/').collect();
    let (realm, ab, token) = (parts[0], parts[1], parts[2]);
    for path in [
        "/user_uploads/../wal".to_owned(),
        "/user_uploads/%2e%2e/%2e%2e/LOCK".to_owned(),
        format!("/user_uploads/{realm}/{ab}/{token}/../../../../LOCK"),
        format!("/user_uploads/{realm}/{ab}/{token}"),
        format!("/user_uploads/{realm}/{ab}/{token}/a.txt%00.png"),
        format!("/user_uploads/{realm}/{ab}/{token}/other.txt"),
        format!("/user_uploads//{realm}/{ab}/{token}/a.txt"),
        format!("/user_uploads/%2F{realm}/{ab}/{token}/a.txt"),
        format!("/user_uploads/{realm}/{ab}/{token}/{}", "a".repeat(5000)),
        "/user_uploads/tmp/x".to_owned(),
    ] {
        let d = download(&server, &path, auth(&hamlet), &[]);
        assert_eq!(d.status, 404, "{path}");
        assert_eq!(d.json()["code"], "NOT_FOUND", "{path}");
    }
    assert_eq!(download(&server, &url, auth(&hamlet), &[]).status, 200);
}

#[test]
fn other_realms_guests_and_deactivated_users() {
    let mut server = TestServer::start();
    server.stop();
    let key = server.realm_create_ok(&ACME);
    server.restart_with_args(vec![]);
    let hamlet = as_user(&server, HAMLET);
    let url = upload(&server, HAMLET, "a.txt", "text/plain", b"abc");
    // The other realm's owner, on their own host or on this one: 404 / 401.
    let boss = download_on(&server, &url, "acme.localhost", ("boss@acme.test", &key));
    assert_eq!(boss, 404);
    assert_eq!(download(&server, &url, Some(("boss@acme.test", &key)), &[]).status, 401);
    // A guest who cannot read the linking message: 404; once it is in a
    // channel they are in: 200.
    let polonius = as_user(&server, POLONIUS);
    send(&server.client(HAMLET), "Denmark", &format!("[a]({url})"));
    assert_eq!(download(&server, &url, auth(&polonius), &[]).status, 404);
    send(&server.client(HAMLET), "general", &format!("[a]({url})"));
    assert_eq!(download(&server, &url, auth(&polonius), &[]).status, 200);
    // A guest may upload (Zulip allows it).
    upload(&server, POLONIUS, "g.txt", "text/plain", b"guest");
    // A deactivated uploader can neither download nor upload.
    let hid = server.client(HAMLET).get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    server.client(IAGO).request("DELETE", &format!("/users/{hid}"), &[]).ok();
    assert_eq!(download(&server, &url, auth(&hamlet), &[]).status, 401);
    post_upload(&server, Some(HAMLET), &multipart(&[("a.txt", "text/plain", b"x")], &[]))
        .err(401, "USER_DEACTIVATED");
}

pub(crate) fn download_on(server: &TestServer, path: &str, host: &str, creds: (&str, &str)) -> u16 {
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAuthorization: {}\r\n\r\n",
        basic_auth(creds.0, creds.1)
    );
    let mut stream = connect(&server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    read_response(&mut stream).status
}

/// `GET <path>` on `host` as `creds`: the status and `Location`.
pub(crate) fn redirect_on(
    server: &TestServer,
    path: &str,
    host: &str,
    creds: (&str, &str),
) -> (u16, String) {
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAuthorization: {}\r\n\r\n",
        basic_auth(creds.0, creds.1)
    );
    let mut stream = connect(&server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let location = text
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("location")))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    (status, location)
}

#[test]
fn attachments_survive_restarts_and_snapshots() {
    let mut server = TestServer::start_with(&["--snapshot-every", "3"]);
    let hamlet = as_user(&server, HAMLET);
    let first = upload(&server, HAMLET, "a.txt", "text/plain", b"first");
    for i in 0..4 {
        send(&server.client(HAMLET), "general", &format!("filler {i}"));
    }
    let second = upload(&server, HAMLET, "b.txt", "text/plain", b"second");
    server.kill();
    server.restart();
    assert_eq!(download(&server, &first, auth(&hamlet), &[]).body, b"first");
    assert_eq!(download(&server, &second, auth(&hamlet), &[]).body, b"second");
    assert_eq!(
        server.client(HAMLET).get("/attachments", &[]).ok()["attachments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A file with no record (an upload a crash cut between storing and
    // logging) is removed at start-up; a record whose file is gone is
    // reported.
    let orphan = server.data_dir().join("data/uploads/1/ab/ABCDEFGHIJKLMNOPQRSTUVWX");
    std::fs::create_dir_all(orphan.parent().unwrap()).unwrap();
    std::fs::write(&orphan, b"orphan").unwrap();
    let key: Vec<&str> = second.trim_start_matches("/user_uploads/").split('/').take(3).collect();
    std::fs::remove_file(server.data_dir().join("data/uploads").join(key.join("/"))).unwrap();
    server.stop();
    server.restart();
    assert!(!orphan.exists(), "the orphan is removed");
    let stderr = server.stderr();
    assert!(stderr.contains("removed 1 uploaded files no record names"), "{stderr}");
    assert!(stderr.contains("is recorded but its bytes are missing"), "{stderr}");
    assert!(stderr.contains(&second), "{stderr}");
    assert_eq!(download(&server, &first, auth(&hamlet), &[]).status, 200);
}

/// A slow uploader (a body trickling in) does not hold up other requests:
/// while its body is incomplete, other connections are answered.
#[test]
fn a_slow_upload_does_not_stall_other_requests() {
    let server = TestServer::start();
    let a = server.account(HAMLET);
    let body = multipart(&[("slow.bin", "application/zip", &vec![3u8; 300_000])], &[]);
    let head = format!(
        "POST /api/v1/user_uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        basic_auth(&a.email, &a.key),
        body.len()
    );
    let mut slow = connect(&server.addr);
    slow.write_all(head.as_bytes()).unwrap();
    slow.write_all(&body[..body.len() / 2]).unwrap();
    // The upload is half sent: other requests are served meanwhile.
    for _ in 0..5 {
        server.client(OTHELLO).get("/users/me", &[]).ok();
    }
    slow.write_all(&body[body.len() / 2..]).unwrap();
    let reply = read_response(&mut slow).ok();
    let url = reply["url"].as_str().unwrap();
    let creds = as_user(&server, HAMLET);
    assert_eq!(download(&server, url, auth(&creds), &[]).body.len(), 300_000);
}

#[test]
fn has_attachment_and_has_image_narrows() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let text = upload(&server, HAMLET, "notes.txt", "text/plain", b"notes");
    let image = upload(&server, HAMLET, "photo.png", "image/png", b"\x89PNG\r\n\x1a\n");
    let plain = send(&hamlet, "general", "no file here");
    let with_text = send(&hamlet, "general", &format!("[notes]({text})"));
    let with_image = send(&hamlet, "general", &format!("[photo]({image})"));
    let ids = |narrow: &str| -> Vec<u64> {
        let reply = hamlet
            .get(
                "/messages",
                &[
                    ("anchor", "newest"),
                    ("num_before", "100"),
                    ("num_after", "0"),
                    ("narrow", narrow),
                ],
            )
            .ok();
        reply["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
    };
    let attachments = ids(r#"[{"operator": "has", "operand": "attachment"}]"#);
    assert_eq!(attachments, vec![with_text, with_image]);
    assert!(!attachments.contains(&plain));
    assert_eq!(ids(r#"[{"operator": "has", "operand": "image"}]"#), vec![with_image]);
}

/// A 1×1 PNG.
pub(crate) const PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 11, 73, 68, 65, 84, 120, 156, 99, 96, 0, 2, 0, 0, 5, 0, 1,
    122, 94, 171, 63, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

pub(crate) fn add_emoji(server: &TestServer, email: &str, name: &str, bytes: &[u8]) -> Response {
    let path = format!("/realm/emoji/{name}");
    post_multipart(server, &path, Some(email), &multipart(&[("e.png", "image/png", bytes)], &[]))
}

#[test]
fn custom_emoji() {
    let server = TestServer::start();
    add_emoji(&server, HAMLET, "party_parrot", PNG).ok();
    let listed = server.client(OTHELLO).get("/realm/emoji", &[]).ok();
    let dict = listed["emoji"].as_object().unwrap();
    assert_eq!(dict.len(), 1);
    let (id, emoji) = dict.iter().next().unwrap();
    assert_eq!(emoji["name"], "party_parrot");
    assert_eq!(emoji["author_id"], crate::util::user_id(&server, HAMLET));
    // Register has the same dict.
    let reg = server
        .client(OTHELLO)
        .post("/register", &[("fetch_event_types", r#"["realm_emoji"]"#)])
        .ok();
    assert_eq!(reg["realm_emoji"], listed["emoji"]);
    // The image is served without credentials, as an image.
    let source = emoji["source_url"].as_str().unwrap();
    let d = download(&server, source, None, &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.headers["content-type"], "image/png");
    assert_eq!(d.headers["content-length"], d.body.len().to_string());
    // Zulip's 64-pixel square.
    let image = image::load_from_memory_with_format(&d.body, image::ImageFormat::Png).unwrap();
    assert_eq!((image.width(), image.height()), (64, 64));
    assert_eq!(d.headers["x-content-type-options"], "nosniff");
    assert_eq!(
        download(&server, "/user_avatars/1/ab/ABCDEFGHIJKLMNOPQRSTUVWX", None, &[]).status,
        404
    );
    assert_eq!(download(&server, "/user_avatars/../LOCK", None, &[]).status, 404);

    // Refusals: a guest, bad names, a taken name, not an image, two files,
    // a built-in emoji's name for a non-administrator.
    let e = add_emoji(&server, POLONIUS, "guest_emoji", PNG).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    for bad in ["Party", "a_", "a%21", "x%2Fy"] {
        add_emoji(&server, HAMLET, bad, PNG).err(400, "BAD_REQUEST");
    }
    let e = add_emoji(&server, OTHELLO, "party_parrot", PNG).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "A custom emoji with this name already exists.");
    let e = add_emoji(&server, HAMLET, "svg", b"<svg><script>alert(1)</script></svg>")
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Invalid image format");
    let two = multipart(&[("a.png", "image/png", PNG), ("b.png", "image/png", PNG)], &[]);
    post_multipart(&server, "/realm/emoji/two", Some(HAMLET), &two).err(400, "BAD_REQUEST");
    // A decompression bomb is refused before any pixel is decoded; a
    // file that only starts like an image does not decode.
    let e = add_emoji(&server, HAMLET, "huge_one", &bomb(100_000)).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Image size exceeds limit.");
    let e = add_emoji(&server, HAMLET, "fake_one", b"\x89PNG\r\n\x1a\n not the rest of a png")
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Could not decode image; did you upload an image file?");
    for name in ["huge_one", "fake_one"] {
        assert!(listed_names(&server).iter().all(|n| n != name), "{name}");
    }
    let e = add_emoji(&server, HAMLET, "smile", PNG).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Only administrators can override default emoji.");
    add_emoji(&server, IAGO, "smile", PNG).ok();
    post_multipart(
        &server,
        "/realm/emoji/anon",
        None,
        &multipart(&[("a.png", "image/png", PNG)], &[]),
    )
    .err(401, "UNAUTHORIZED");

    // `:name:` in a message shows it (a custom emoji wins over a built-in
    // one of the same name).
    let hamlet = server.client(HAMLET);
    let shown = send(&hamlet, "general", "look :party_parrot: and :smile: and :nope:");
    let html = hamlet.get(&format!("/messages/{shown}"), &[]).ok()["message"]["content"].clone();
    let html = html.as_str().unwrap();
    assert!(
        html.contains(&format!(
            "<img alt=\":party_parrot:\" class=\"emoji\" src=\"{source}\" title=\"party parrot\">"
        )),
        "{html}"
    );
    assert!(html.contains("<img alt=\":smile:\" class=\"emoji\""), "{html}");
    assert!(html.contains(":nope:"), "{html}");
    // Reactions with it: by name alone (a bot's way) or by code.
    let message = send(&hamlet, "general", "react");
    let path = format!("/messages/{message}/reactions");
    server.client(OTHELLO).post(&path, &[("emoji_name", "party_parrot")]).ok();
    hamlet
        .post(
            &path,
            &[("emoji_name", "party_parrot"), ("emoji_code", id), ("reaction_type", "realm_emoji")],
        )
        .ok();
    let reactions =
        hamlet.get(&format!("/messages/{message}"), &[]).ok()["message"]["reactions"].clone();
    let reactions = reactions.as_array().unwrap();
    assert_eq!(reactions.len(), 2);
    assert!(reactions
        .iter()
        .all(|r| r["reaction_type"] == "realm_emoji" && r["emoji_code"] == id.as_str()));
    // A wrong code or name for it is refused.
    for params in [
        [("emoji_name", "party_parrot"), ("emoji_code", "999"), ("reaction_type", "realm_emoji")],
        [("emoji_name", "other"), ("emoji_code", id.as_str()), ("reaction_type", "realm_emoji")],
    ] {
        server.client(IAGO).post(&path, &params).err(400, "BAD_REQUEST");
    }

    // Deactivating: not another member's; the author's and an
    // administrator's are fine; then it cannot be used, and stays listed.
    let e = server
        .client(OTHELLO)
        .request("DELETE", "/realm/emoji/party_parrot", &[])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Must be an organization administrator or emoji author");
    hamlet.request("DELETE", "/realm/emoji/party_parrot", &[]).ok();
    hamlet.request("DELETE", "/realm/emoji/party_parrot", &[]).err(400, "BAD_REQUEST");
    server.client(IAGO).request("DELETE", "/realm/emoji/smile", &[]).ok();
    let listed = hamlet.get("/realm/emoji", &[]).ok();
    assert_eq!(listed["emoji"][id.as_str()]["deactivated"], true);
    server
        .client(IAGO)
        .post(
            &path,
            &[("emoji_name", "party_parrot"), ("emoji_code", id), ("reaction_type", "realm_emoji")],
        )
        .err(400, "BAD_REQUEST");
    // The name is free again.
    add_emoji(&server, OTHELLO, "party_parrot", PNG).ok();
}

#[test]
fn custom_emoji_belong_to_their_realm() {
    let mut server = TestServer::start();
    server.stop();
    let key = server.realm_create_ok(&ACME);
    server.restart_with_args(vec![]);
    add_emoji(&server, HAMLET, "ours", PNG).ok();
    let listed = server.client(HAMLET).get("/realm/emoji", &[]).ok();
    let (id, emoji) = listed["emoji"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let boss = server.anonymous().with_auth("boss@acme.test", &key).with_host("acme.localhost");
    assert!(boss.get("/realm/emoji", &[]).ok()["emoji"].as_object().unwrap().is_empty());
    // Its image is not served on the other realm's host; its code is not
    // a reaction there.
    let source = emoji["source_url"].as_str().unwrap();
    let head =
        format!("GET {source} HTTP/1.1\r\nHost: acme.localhost\r\nConnection: close\r\n\r\n");
    let mut stream = connect(&server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    assert_eq!(read_response(&mut stream).status, 404);
    boss.post("/users/me/subscriptions", &[("subscriptions", r#"[{"name": "hq"}]"#)]).ok();
    let message = send(&boss, "hq", "hi");
    boss.post(
        &format!("/messages/{message}/reactions"),
        &[("emoji_name", "ours"), ("emoji_code", &id), ("reaction_type", "realm_emoji")],
    )
    .err(400, "BAD_REQUEST");
    // Emoji survive a restart.
    server.kill();
    server.restart();
    assert_eq!(server.client(HAMLET).get("/realm/emoji", &[]).ok()["emoji"][&id]["name"], "ours");
    let d = download(&server, source, None, &[]);
    assert_eq!(image::load_from_memory(&d.body).unwrap().width(), 64);
}

/// An edit that adds a link to an upload shares it like a send does.
#[test]
fn edits_link_uploads_too() {
    let server = TestServer::start();
    let othello = as_user(&server, OTHELLO);
    let url = upload(&server, HAMLET, "later.txt", "text/plain", b"later");
    let id = send(&server.client(HAMLET), "general", "file coming");
    assert_eq!(download(&server, &url, auth(&othello), &[]).status, 404);
    server
        .client(HAMLET)
        .request("PATCH", &format!("/messages/{id}"), &[("content", &format!("here: [f]({url})"))])
        .ok();
    assert_eq!(download(&server, &url, auth(&othello), &[]).body, b"later");
}

/// SIGKILL while an upload's body is arriving, and right after an
/// upload's reply: after restart, no attachment and nothing left of the
/// first; the second complete and downloadable.
#[test]
fn uploads_survive_a_kill_or_leave_nothing() {
    let mut server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let done = upload(&server, HAMLET, "kept.bin", "application/zip", &[5u8; 50_000]);
    let body = multipart(&[("cut.bin", "application/zip", &vec![6u8; 400_000])], &[]);
    let head = format!(
        "POST /api/v1/user_uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        basic_auth(&hamlet.0, &hamlet.1),
        body.len()
    );
    let mut cut = connect(&server.addr);
    cut.write_all(head.as_bytes()).unwrap();
    cut.write_all(&body[..200_000]).unwrap();
    // The server has the head and part of the body (another request
    // answered after it shows the connection was read).
    server.client(OTHELLO).get("/users/me", &[]).ok();
    server.kill();
    drop(cut);
    server.restart();
    let list = server.client(HAMLET).get("/attachments", &[]).ok();
    let names: Vec<&str> = list["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["kept.bin"]);
    assert_eq!(download(&server, &done, auth(&hamlet), &[]).body, vec![5u8; 50_000]);
    let staging = server.data_dir().join("data/uploads/tmp");
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0, "the cut body is gone");
}

#[test]
fn web_public_files_download_without_credentials() {
    let server = TestServer::start();
    // `general` is web-public in the dev realm, which allows spectators.
    let public = upload(&server, HAMLET, "p.txt", "text/plain", b"for everyone");
    let members_only = upload(&server, HAMLET, "m.txt", "text/plain", b"for members");
    let unsent = upload(&server, HAMLET, "u.txt", "text/plain", b"for me");
    let hamlet = server.client(HAMLET);
    send(&hamlet, "general", &format!("[p]({public})"));
    send(&hamlet, "Denmark", &format!("[m]({members_only})"));
    let d = download(&server, &public, None, &[]);
    assert_eq!((d.status, d.body.as_slice()), (200, &b"for everyone"[..]));
    for path in [&members_only, &unsent] {
        let d = download(&server, path, None, &[]);
        assert_eq!(d.status, 302, "{path}");
        assert!(d.headers["location"].starts_with("/?next=%2Fuser%5Fuploads%2F"), "{path}");
        assert!(d.body.windows(3).all(|w| w != b"for"), "{path}");
    }
    let unknown = "/user_uploads/1/ab/ABCDEFGHIJKLMNOPQRSTUVWX/x";
    assert_eq!(download(&server, unknown, None, &[]).status, 404);
    // Without public access, nothing downloads without credentials.
    server.client(IAGO).request("PATCH", "/realm", &[("enable_spectator_access", "false")]).ok();
    assert_eq!(download(&server, &public, None, &[]).status, 302);
    let othello = as_user(&server, OTHELLO);
    assert_eq!(download(&server, &public, auth(&othello), &[]).status, 200);
}

#[test]
fn who_may_add_custom_emoji() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let groups = iago.get("/user_groups", &[]).ok();
    let group = |name: &str| {
        let all = groups["user_groups"].as_array().unwrap();
        all.iter().find(|g| g["name"] == name).unwrap()["id"].as_u64().unwrap()
    };
    let (admins, members) = (group("role:administrators"), group("role:members"));
    let reg =
        server.client(HAMLET).post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(reg["realm_can_add_custom_emoji_group"], members);
    // Only administrators change it; a stale `old` is refused.
    let to_admins = format!(r#"{{"new": {admins}}}"#);
    server
        .client(HAMLET)
        .request("PATCH", "/realm", &[("can_add_custom_emoji_group", &to_admins)])
        .err(400, "BAD_REQUEST");
    let stale = format!(r#"{{"new": {admins}, "old": {admins}}}"#);
    let e = iago
        .request("PATCH", "/realm", &[("can_add_custom_emoji_group", &stale)])
        .err(400, "BAD_REQUEST");
    assert_eq!(
        e["msg"],
        "'old' value for 'can_add_custom_emoji_group' does not match the expected value."
    );
    iago.request("PATCH", "/realm", &[("can_add_custom_emoji_group", r#"{"new": 999999}"#)])
        .err(400, "BAD_REQUEST");
    let changed =
        iago.request("PATCH", "/realm", &[("can_add_custom_emoji_group", &to_admins)]).ok();
    assert_eq!(changed["can_add_custom_emoji_group"], admins);
    // Now a member may not add one; an administrator may.
    let e = add_emoji(&server, HAMLET, "members_emoji", PNG).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    add_emoji(&server, IAGO, "admins_emoji", PNG).ok();
    // A group naming the member directly lets them (and only them) in;
    // guests stay out unless named.
    let hamlet_id = crate::util::user_id(&server, HAMLET);
    let named =
        format!(r#"{{"new": {{"direct_members": [{hamlet_id}], "direct_subgroups": []}}}}"#);
    iago.request("PATCH", "/realm", &[("can_add_custom_emoji_group", &named)]).ok();
    add_emoji(&server, HAMLET, "hamlets_emoji", PNG).ok();
    add_emoji(&server, OTHELLO, "othellos_emoji", PNG).err(400, "BAD_REQUEST");
    add_emoji(&server, POLONIUS, "guest_emoji", PNG).err(400, "BAD_REQUEST");
    // Deleting stays the author's or an administrator's.
    let e = server
        .client(OTHELLO)
        .request("DELETE", "/realm/emoji/hamlets_emoji", &[])
        .err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Must be an organization administrator or emoji author");
    server.client(HAMLET).request("DELETE", "/realm/emoji/hamlets_emoji", &[]).ok();
    iago.request("DELETE", "/realm/emoji/admins_emoji", &[]).ok();
}

/// The names of the realm's custom emoji.
fn listed_names(server: &TestServer) -> Vec<String> {
    let listed = server.client(HAMLET).get("/realm/emoji", &[]).ok();
    let dict = listed["emoji"].as_object().unwrap().clone();
    dict.values().map(|e| e["name"].as_str().unwrap().to_owned()).collect()
}

/// An animated custom emoji keeps its frames, each fit in 64 pixels.
#[test]
fn animated_emoji_are_resized_frame_by_frame() {
    use image::AnimationDecoder;
    let server = TestServer::start();
    let mut gif = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
        for n in 0..3u8 {
            let buffer = image::RgbaImage::from_pixel(128, 96, image::Rgba([n * 60, 0, 0, 255]));
            let delay = image::Delay::from_numer_denom_ms(80, 1);
            encoder.encode_frame(image::Frame::from_parts(buffer, 0, 0, delay)).unwrap();
        }
    }
    add_emoji(&server, HAMLET, "blink", &gif).ok();
    let listed = server.client(HAMLET).get("/realm/emoji", &[]).ok();
    let emoji = listed["emoji"].as_object().unwrap().values().next().unwrap().clone();
    let d = download(&server, emoji["source_url"].as_str().unwrap(), None, &[]);
    assert_eq!(d.headers["content-type"], "image/gif");
    let decoder = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(d.body)).unwrap();
    let frames = decoder.into_frames().collect_frames().unwrap();
    assert_eq!(frames.len(), 3);
    assert!(frames.iter().all(|f| f.buffer().dimensions() == (64, 48)));
}

/// A PNG of `width` × `height` pixels.
pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 9]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image).write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A few dozen bytes of PNG whose header declares `side` × `side` pixels
/// (a decompression bomb, if anything decoded it).
pub(crate) fn bomb(side: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend(side.to_be_bytes());
    ihdr.extend(side.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(13u32.to_be_bytes());
    out.extend(&ihdr);
    out.extend(crc32fast::hash(&ihdr).to_be_bytes());
    let idat = b"IDAT\x78\x9c\x03\x00\x00\x00\x00\x01";
    out.extend(8u32.to_be_bytes());
    out.extend(idat);
    out.extend(crc32fast::hash(idat).to_be_bytes());
    out
}

/// The rendered content of message `id` as `c` sees it.
fn content(c: &Client, id: u64) -> String {
    c.get(&format!("/messages/{id}"), &[]).ok()["message"]["content"].as_str().unwrap().to_owned()
}

#[test]
fn images_get_thumbnails_and_bombs_do_not() {
    let server = TestServer::start();
    let hamlet = as_user(&server, HAMLET);
    let c = server.client(HAMLET);
    // A normal image: the message shows its thumbnail, which is served
    // like the original, to whoever may read the original.
    let url = upload(&server, HAMLET, "photo.png", "image/png", &png(1000, 800));
    let thumbnail =
        format!("/user_uploads/thumbnail/{}/840x560.webp", &url["/user_uploads/".len()..]);
    // The message shows the thumbnail whether or not it is made yet (it
    // is made after the upload's reply; until then its URL serves the
    // original).
    let sent = send(&c, "Denmark", &format!("[photo.png]({url})"));
    let html = content(&c, sent);
    assert!(
        html.contains(&format!(
            "<div class=\"message_inline_image\"><a href=\"{url}\" title=\"photo.png\">\
             <img data-original-content-type=\"image/png\" data-original-dimensions=\"1000x800\" \
             src=\"{thumbnail}\"></a></div>"
        )),
        "{html}"
    );
    let original = png(1000, 800);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let d = loop {
        let d = download(&server, &thumbnail, auth(&hamlet), &[]);
        assert_eq!(d.status, 200);
        if d.headers["content-type"] == "image/webp" {
            break d;
        }
        assert_eq!((d.headers["content-type"].as_str(), &d.body), ("image/png", &original));
        assert_eq!(d.headers["cache-control"], "private, no-cache");
        assert!(std::time::Instant::now() < deadline, "no thumbnail made");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let small = image::load_from_memory_with_format(&d.body, image::ImageFormat::WebP).unwrap();
    assert_eq!((small.width(), small.height()), (700, 560));
    let othello = as_user(&server, OTHELLO);
    assert_eq!(download(&server, &thumbnail, auth(&othello), &[]).status, 200);
    let polonius = as_user(&server, POLONIUS);
    assert_eq!(download(&server, &thumbnail, auth(&polonius), &[]).status, 404);
    assert_eq!(download(&server, &thumbnail, None, &[]).status, 302);
    let wrong_size = thumbnail.replace("840x560", "100x100");
    assert_eq!(download(&server, &wrong_size, auth(&hamlet), &[]).status, 404);

    // A bomb and a file that only calls itself an image: stored and
    // downloadable as files, never thumbnailed nor previewed.
    let bomb_url = upload(&server, HAMLET, "bomb.png", "image/png", &bomb(100_000));
    let fake_url = upload(&server, HAMLET, "fake.png", "image/png", b"not an image at all");
    for url in [&bomb_url, &fake_url] {
        let sent = send(&c, "general", &format!("[look.png]({url})"));
        let html = content(&c, sent);
        assert_eq!(html, format!("<p><a href=\"{url}\">look.png</a></p>"));
        let thumbnail =
            format!("/user_uploads/thumbnail/{}/840x560.webp", &url["/user_uploads/".len()..]);
        assert_eq!(download(&server, &thumbnail, auth(&hamlet), &[]).status, 404);
        assert_eq!(download(&server, url, auth(&hamlet), &[]).status, 200);
    }
    assert!(server.stderr().contains("no thumbnail for an upload: TooLarge(100000, 100000)"));

    // Deleting the attachment removes the thumbnail's file too.
    let listed = c.get("/attachments", &[]).ok();
    let photo = listed["attachments"].as_array().unwrap().iter().find(|a| a["name"] == "photo.png");
    let id = photo.unwrap()["id"].as_u64().unwrap();
    let stored = |dir: &std::path::Path| -> usize {
        let mut count = 0;
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    count += 1;
                }
            }
        }
        count
    };
    let uploads = server.data_dir().join("data/uploads");
    let before = stored(&uploads);
    c.request("DELETE", &format!("/attachments/{id}"), &[]).ok();
    assert_eq!(stored(&uploads), before - 2, "the original and its thumbnail");
    assert_eq!(download(&server, &thumbnail, auth(&hamlet), &[]).status, 404);
}
