//! The HTTP wire: multipart and chunked bodies,
//! header counts and sizes, 100-continue, time-outs, the connection cap, a
//! large reply to a slow reader, HTTP/1.0 and `Connection: close`, and
//! `natter-data/` ignored by git. Everything is sent over raw sockets.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::util::{basic_auth, connect, read_response, read_to_close, Response, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const FORM: &str = "application/x-www-form-urlencoded";

/// What curl 7.88.1 sent for `curl -F type=stream -F to=general -F topic=curl
/// -F 'content=hi there' -F f=@a.txt` (a file part named `f`).
const CURL_BODY: &str = "--------------------------df6d909b4d64e503\r\n\
Content-Disposition: form-data; name=\"type\"\r\n\r\nstream\r\n\
--------------------------df6d909b4d64e503\r\n\
Content-Disposition: form-data; name=\"to\"\r\n\r\ngeneral\r\n\
--------------------------df6d909b4d64e503\r\n\
Content-Disposition: form-data; name=\"topic\"\r\n\r\ncurl\r\n\
--------------------------df6d909b4d64e503\r\n\
Content-Disposition: form-data; name=\"content\"\r\n\r\nhi there\r\n\
--------------------------df6d909b4d64e503\r\n\
Content-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\
Content-Type: text/plain\r\n\r\nfile body\n\r\n\
--------------------------df6d909b4d64e503--\r\n";
const CURL_TYPE: &str = "multipart/form-data; boundary=------------------------df6d909b4d64e503";

/// What zulip-js 2.1.0 (npm `form-data` under node-fetch) sent for
/// `messages.send({type: "stream", to: ["general"], topic: "t", content})`.
const FORM_DATA_BODY: &str = "----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"type\"\r\n\r\nstream\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"to\"\r\n\r\n[\"general\"]\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"topic\"\r\n\r\nt\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"content\"\r\n\r\nmulti\r\nline é\r\n\
----------------------------5d5416eb0d4caab829b80c6c--\r\n";
const FORM_DATA_TYPE: &str =
    "multipart/form-data;boundary=--------------------------5d5416eb0d4caab829b80c6c";

/// Hamlet's Authorization header.
fn hamlet_auth(server: &TestServer) -> String {
    let a = server.account(HAMLET);
    basic_auth(&a.email, &a.key)
}

/// One request with a body and extra headers, on its own connection.
fn send(server: &TestServer, head: &str, extra: &[(&str, &str)], body: &[u8]) -> Response {
    let mut req = format!("{head} HTTP/1.1\r\nHost: {}\r\n", server.addr);
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    server.anonymous().raw(&bytes)
}

/// The raw content of a message, read back as Hamlet.
fn raw_content(server: &TestServer, id: &Value) -> String {
    let r = server.client(HAMLET).get(&format!("/messages/{id}"), &[]).ok();
    r["raw_content"].as_str().unwrap().to_owned()
}

#[test]
fn multipart_bodies_from_curl_and_form_data_are_request_variables() {
    let server = TestServer::start();
    let auth = hamlet_auth(&server);
    let headers = [("Authorization", auth.as_str()), ("Content-Type", CURL_TYPE)];
    let r = send(&server, "POST /api/v1/messages", &headers, CURL_BODY.as_bytes()).ok();
    assert!(r.get("ignored_parameters_unsupported").is_none(), "a file part is no variable: {r}");
    assert_eq!(raw_content(&server, &r["id"]), "hi there");

    let headers = [("Authorization", auth.as_str()), ("Content-Type", FORM_DATA_TYPE)];
    let r = send(&server, "POST /api/v1/messages", &headers, FORM_DATA_BODY.as_bytes()).ok();
    assert_eq!(raw_content(&server, &r["id"]), "multi\r\nline é");

    // The body wins over the query string when both name a variable.
    let body = "--b\r\nContent-Disposition: form-data; name=\"username\"\r\n\r\n\
hamlet@natter.test\r\n--b--\r\n";
    let headers = [("Content-Type", "multipart/form-data; boundary=b")];
    let r = send(
        &server,
        "POST /api/v1/dev_fetch_api_key?username=ghost%40natter.test",
        &headers,
        body.as_bytes(),
    );
    assert_eq!(r.ok()["email"], HAMLET);

    // A broken multipart body, or a body of a type natter does not read.
    let truncated = &CURL_BODY.as_bytes()[..CURL_BODY.len() / 2];
    let headers = [("Authorization", auth.as_str()), ("Content-Type", CURL_TYPE)];
    let e = send(&server, "POST /api/v1/messages", &headers, truncated).err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("multipart"), "{e}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    send(&server, "POST /api/v1/messages", &headers, b"{}").err(400, "BAD_REQUEST");
}

/// A browser's boundary has capitals (Chrome: `----WebKitFormBoundary`
/// and 16 mixed-case characters; Firefox's are digits) and a boundary is
/// compared byte for byte: only the media type is case-insensitive.
#[test]
fn a_mixed_case_multipart_boundary_is_kept_as_sent() {
    let server = TestServer::start();
    let auth = hamlet_auth(&server);
    let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
    let part = |name: &str, value: &str| {
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        )
    };
    let body = [
        part("type", "stream"),
        part("to", "general"),
        part("topic", "browser"),
        part("content", "from a browser"),
        format!("--{boundary}--\r\n"),
    ]
    .concat();
    let content_type = format!("Multipart/Form-Data; boundary={boundary}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", content_type.as_str())];
    let r = send(&server, "POST /api/v1/messages", &headers, body.as_bytes()).ok();
    assert_eq!(raw_content(&server, &r["id"]), "from a browser");
}

#[test]
fn chunked_body_then_a_pipelined_request_on_one_connection() {
    let server = TestServer::start();
    let auth = hamlet_auth(&server);
    let body = "type=stream&to=general&topic=chunks&content=sent+in+chunks";
    let (a, b) = body.split_at(20);
    let mut req = format!(
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\
Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    // Two chunks (one with an extension), a zero chunk with a trailer, and
    // a second request right behind, all in one write.
    req.push_str(&format!(
        "{:x}\r\n{a}\r\n{:X};ext=1\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
        a.len(),
        b.len()
    ));
    req.push_str("GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut stream = connect(&server.addr);
    stream.write_all(req.as_bytes()).unwrap();
    let sent = read_response(&mut stream).ok();
    assert_eq!(read_response(&mut stream).ok()["realm_name"], "Natter Dev");
    assert_eq!(raw_content(&server, &sent["id"]), "sent in chunks");

    // A chunk that would pass the body limit (1 MiB): 413, then closed.
    let mut stream = connect(&server.addr);
    stream
        .write_all(b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\nabc")
        .unwrap();
    read_response(&mut stream).err(413, "BAD_REQUEST");
    assert!(read_to_close(&mut stream).is_empty());
    // A bad chunk-size line, and a coding natter does not decode.
    let mut stream = connect(&server.addr);
    stream
        .write_all(b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n")
        .unwrap();
    read_response(&mut stream).err(400, "BAD_REQUEST");
    let r = send(&server, "POST /api/v1/dev_fetch_api_key", &[("Transfer-Encoding", "gzip")], b"");
    r.err(501, "BAD_REQUEST");

    // Tiny chunks with long extensions: the decoded body is small, but the
    // raw bytes held for it are bounded too.
    let small = TestServer::start_with(&["--max-body-bytes", "1000"]);
    let mut stream = connect(&small.addr);
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut req = b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for _ in 0..200 {
                req.extend_from_slice(format!("1;{}\r\na\r\n", "e".repeat(1000)).as_bytes());
            }
            let _ = stream.write_all(&req); // may be cut off by the refusal
        })
    };
    read_response(&mut stream).err(413, "BAD_REQUEST");
    writer.join().unwrap();
}

/// A request carrying `n` headers in all (Host first).
fn with_headers(server: &TestServer, n: usize) -> Response {
    let mut req = String::from("GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n");
    for i in 1..n {
        req.push_str(&format!("X-Extra-{i}: {i}\r\n"));
    }
    req.push_str("\r\n");
    server.anonymous().raw(req.as_bytes())
}

#[test]
fn browser_and_proxy_header_counts_pass_and_too_many_get_431() {
    let server = TestServer::start();
    let auth = hamlet_auth(&server);
    // What headless Chromium's fetch() POST carried (18 headers), plus the
    // three an nginx in front adds.
    let body = "type=stream&to=general&topic=browser&content=from+a+page";
    let browser = [
        ("Connection", "keep-alive"),
        ("sec-ch-ua", "\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\""),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Linux\""),
        ("Authorization", auth.as_str()),
        ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/131.0.0.0 Safari/537.36"),
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "*/*"),
        ("Origin", "http://localhost:8000"),
        ("Sec-Fetch-Site", "same-site"),
        ("Sec-Fetch-Mode", "cors"),
        ("Sec-Fetch-Dest", "empty"),
        ("Referer", "http://localhost:8000/"),
        ("Accept-Encoding", "gzip, deflate, br, zstd"),
        ("Accept-Language", "en-US,en;q=0.9"),
        ("Cookie", "session=abc"),
        ("X-Forwarded-For", "203.0.113.9"),
        ("X-Forwarded-Proto", "https"),
        ("X-Real-IP", "203.0.113.9"),
    ];
    // Host + the 16 above the proxy lines + Content-Length = 18; 21 with the proxy.
    let r = send(&server, "POST /api/v1/messages", &browser[..16], body.as_bytes()).ok();
    assert!(r["id"].as_u64().is_some());
    send(&server, "POST /api/v1/messages", &browser, body.as_bytes()).ok();
    for n in [40, 64] {
        with_headers(&server, n).ok();
    }
    for n in [65, 500] {
        let e = with_headers(&server, n).err(431, "BAD_REQUEST");
        assert!(e["msg"].as_str().unwrap().contains("64"), "{e}");
    }
    // The reply comes before the close, on a connection that is then closed.
    let mut req = String::from("GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n");
    for i in 0..500 {
        req.push_str(&format!("X-Extra-{i}: {i}\r\n"));
    }
    req.push_str("\r\n");
    let mut stream = connect(&server.addr);
    stream.write_all(req.as_bytes()).unwrap();
    read_response(&mut stream).err(431, "BAD_REQUEST");
    assert!(read_to_close(&mut stream).is_empty());

    // The limit is a flag.
    let small = TestServer::start_with(&["--max-headers", "20"]);
    with_headers(&small, 20).ok();
    with_headers(&small, 21).err(431, "BAD_REQUEST");
}

#[test]
fn a_200_kb_header_gets_431_and_the_head_limit_is_a_flag() {
    let server = TestServer::start();
    let mut stream = connect(&server.addr);
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            let head = format!(
                "GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
                "a".repeat(200 * 1024)
            );
            // The server may answer and close before all of it is sent.
            let _ = stream.write_all(head.as_bytes());
        })
    };
    let e = read_response(&mut stream).err(431, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("16384"), "{e}");
    writer.join().unwrap();
    // Just under the default 16 KiB head: fine.
    let big = "b".repeat(15 * 1024);
    send(&server, "GET /api/v1/server_settings", &[("X-Big", &big)], b"").ok();
    let small = TestServer::start_with(&["--max-head-bytes", "1024"]);
    send(&small, "GET /api/v1/server_settings", &[("X-Big", &big[..1200])], b"")
        .err(431, "BAD_REQUEST");
}

#[test]
fn expect_100_continue_is_answered_before_the_body_is_sent() {
    let server = TestServer::start();
    let body = format!("username={HAMLET}");
    let mut stream = connect(&server.addr);
    let head = format!(
        "POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\
Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // The interim reply comes while the client still holds the body back.
    let mut interim = [0u8; 25];
    stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(body.as_bytes()).unwrap();
    assert_eq!(read_response(&mut stream).ok()["email"], HAMLET);
    // Too large a body is refused at once, without the 100.
    let mut stream = connect(&server.addr);
    stream
        .write_all(b"POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n")
        .unwrap();
    read_response(&mut stream).err(413, "BAD_REQUEST");
}

#[test]
fn stalled_requests_and_idle_connections_are_closed_by_the_time_outs() {
    let server = TestServer::start_with(&["--read-timeout-ms", "300", "--idle-timeout-ms", "300"]);
    // Half a head, then nothing: 408, then closed.
    let mut stream = connect(&server.addr);
    stream.write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n").unwrap();
    read_response(&mut stream).err(408, "BAD_REQUEST");
    assert!(read_to_close(&mut stream).is_empty());

    // A body that stops arriving: 408, and the message is never sent.
    let hamlet = server.client(HAMLET);
    let before = hamlet.get("/users/me", &[]).ok()["max_message_id"].clone();
    let mut stream = connect(&server.addr);
    let head = format!(
        "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: 200\r\n\r\n",
        hamlet_auth(&server)
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(b"type=stream&to=general&topic=t&content=cut").unwrap();
    read_response(&mut stream).err(408, "BAD_REQUEST");
    assert!(read_to_close(&mut stream).is_empty());
    assert_eq!(hamlet.get("/users/me", &[]).ok()["max_message_id"], before);

    // A body that keeps moving is not cut off, though it takes longer in
    // all than the time-out (which bounds each wait for body bytes).
    let body = format!("username={HAMLET}&padding={}", "p".repeat(40));
    let mut stream = connect(&server.addr);
    let head = format!(
        "POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    for piece in body.as_bytes().chunks(4) {
        std::thread::sleep(Duration::from_millis(50));
        stream.write_all(piece).unwrap();
    }
    assert_eq!(read_response(&mut stream).ok()["email"], HAMLET);

    // A head trickled one byte at a time, each well within the time-out:
    // the time-out bounds the whole head, so it still ends in a 408.
    let mut stream = connect(&server.addr);
    let head = b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    stream.write_all(head).unwrap();
    loop {
        stream.set_nonblocking(true).unwrap();
        let answered = stream.peek(&mut [0u8; 1]).is_ok();
        stream.set_nonblocking(false).unwrap();
        if answered || stream.write_all(b"a").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    read_response(&mut stream).err(408, "BAD_REQUEST");

    // An idle keep-alive connection is closed without a reply.
    let mut stream = connect(&server.addr);
    stream.write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(&mut stream).ok();
    assert!(read_to_close(&mut stream).is_empty());
}

/// Whether a new connection gets a 200 within `attempts` tries `pause`
/// apart (a connection slot freed as soon as the server has seen a close).
fn served_within(server: &TestServer, attempts: usize, pause: Duration) -> bool {
    let request = b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n";
    for _ in 0..attempts {
        let mut stream = connect(&server.addr);
        stream.write_all(request).unwrap();
        if read_response(&mut stream).status == 200 {
            return true;
        }
        std::thread::sleep(pause);
    }
    false
}

#[test]
fn past_the_connection_cap_a_new_connection_gets_503() {
    let server = TestServer::start_with(&["--max-connections", "2"]);
    let request = b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n";
    // Two open connections, each answered (so each is counted).
    let mut held: Vec<TcpStream> = (0..2).map(|_| connect(&server.addr)).collect();
    for stream in &mut held {
        stream.write_all(request).unwrap();
        read_response(stream).ok();
    }
    let mut third = connect(&server.addr);
    read_response(&mut third).err(503, "BAD_REQUEST");
    assert!(read_to_close(&mut third).is_empty());
    // The held connections still work.
    held[0].write_all(request).unwrap();
    read_response(&mut held[0]).ok();
    // Once one closes, a new connection is served again (as soon as the
    // server has seen the close: poll for that).
    drop(held.pop());
    assert!(served_within(&server, 500, Duration::from_millis(10)), "a freed slot is reused");

    // A cap the open-file limit cannot hold is lowered, with a warning, so
    // clients past it get the 503 instead of waiting on a failing accept.
    let huge = TestServer::start_with(&["--max-connections", "1000000000000000"]);
    assert!(
        huge.stderr().contains("--max-connections 1000000000000000 lowered to"),
        "{}",
        huge.stderr()
    );
    huge.anonymous().get("/server_settings", &[]).ok();
}

/// Asks for a 5 MB reply on a connection with a 32 KB receive window, so
/// the reply cannot all sit in kernel buffers (natter's send buffer is at
/// most 4 MB here). An honest way to it with production routes: 200,000
/// parameters the endpoint does not use come back, by name, in
/// `ignored_parameters_unsupported`. The server needs
/// `--max-body-bytes 16000000`.
fn request_a_5_mb_reply(server: &TestServer) -> TcpStream {
    let mut body = format!("username={HAMLET}");
    for i in 0..200_000 {
        body.push_str(&format!("&unused_parameter_{i:07}="));
    }
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(32 * 1024).unwrap();
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST /api/v1/dev_fetch_api_key HTTP/1.1\r\nHost: x\r\n\
Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream
}

/// The end of a 200 reply's head in `received`, and its Content-Length.
fn ok_head(received: &[u8]) -> (usize, usize) {
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&received[..head_end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
    (head_end, length)
}

#[test]
fn a_5_mb_reply_reaches_a_slow_reader_while_others_are_served() {
    let server = TestServer::start_with(&["--max-body-bytes", "16000000"]);
    let mut slow = request_a_5_mb_reply(&server);
    // Read only the start of the reply, then stop reading.
    let mut start = vec![0u8; 16 * 1024];
    slow.read_exact(&mut start).unwrap();
    let (head_end, length) = ok_head(&start);
    assert!(length > 5_000_000, "{length}");
    // Meanwhile other connections are served promptly.
    let anon = server.anonymous();
    for _ in 0..20 {
        anon.get("/server_settings", &[]).ok();
    }
    // Now read the rest, slowly.
    let mut reply = start[head_end..].to_vec();
    let mut chunk = vec![0u8; 256 * 1024];
    while reply.len() < length {
        let n = slow.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {} of {length} bytes", reply.len());
        reply.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_millis(2));
    }
    let json: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(json["email"], HAMLET);
    let ignored = json["ignored_parameters_unsupported"].as_array().unwrap();
    assert_eq!(ignored.len(), 200_000);
    assert_eq!(ignored[199_999], "unused_parameter_0199999");
}

#[test]
fn a_reply_the_client_stops_reading_is_abandoned_after_the_time_out() {
    // One connection at a time: the stalled one holds the only slot until
    // natter gives up on its reply.
    let server = TestServer::start_with(&[
        "--read-timeout-ms",
        "300",
        "--max-connections",
        "1",
        "--max-body-bytes",
        "16000000",
    ]);
    let mut stalled = request_a_5_mb_reply(&server);
    // Not a byte read: once natter's write has made no progress for the
    // time-out it closes the connection, and the slot serves again (poll
    // for that; the bound is generous, the time-out is 0.3 s).
    assert!(
        served_within(&server, 600, Duration::from_millis(50)),
        "the stalled reply was never abandoned"
    );
    // The stalled client gets what the buffers held, then the close: less
    // than the reply's length.
    let mut received = Vec::new();
    let _ = stalled.read_to_end(&mut received);
    let (head_end, length) = ok_head(&received);
    assert!(received.len() - head_end < length, "the whole reply arrived after all");
}

#[test]
fn http_1_0_connection_close_and_head_are_honoured() {
    let server = TestServer::start();
    // HTTP/1.0: one reply, then closed.
    let mut stream = connect(&server.addr);
    stream.write_all(b"GET /api/v1/server_settings HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    read_response(&mut stream).ok();
    assert!(read_to_close(&mut stream).is_empty());
    // HTTP/1.0 asking for keep-alive: two replies on one connection.
    let mut stream = connect(&server.addr);
    let keep = b"GET /api/v1/server_settings HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n";
    stream.write_all(keep).unwrap();
    read_response(&mut stream).ok();
    stream.write_all(keep).unwrap();
    read_response(&mut stream).ok();
    // HTTP/1.1 Connection: close: one reply, then closed, even with more
    // requests pipelined behind it.
    let mut stream = connect(&server.addr);
    stream
        .write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    read_response(&mut stream).ok();
    assert!(read_to_close(&mut stream).is_empty());
    // HEAD: the head of the reply, no body; the connection stays in step.
    let mut stream = connect(&server.addr);
    stream.write_all(b"HEAD /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 405 "), "{}", String::from_utf8_lossy(&head));
    stream.write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(&mut stream).ok();
}

#[test]
fn the_default_data_dir_is_ignored_by_git() {
    let out = std::process::Command::new("git")
        .args(["check-ignore", "--no-index", "-q", "natter-data/wal/00000000000000000001.wal"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run git");
    assert!(out.success(), "natter-data/ is not in .gitignore");
}

/// `PATCH` and `DELETE` read request variables from the query string (as
/// zulip-js sends them) as well as from the body; the body wins when both
/// name one.
#[test]
fn patch_and_delete_take_query_string_variables_and_the_body_wins() {
    let server = TestServer::start();
    let auth = hamlet_auth(&server);
    let hamlet = server.client(HAMLET);
    let sent = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "query"), ("content", "v1")],
        )
        .ok();
    let id = sent["id"].as_u64().unwrap();
    let form = [("Authorization", auth.as_str()), ("Content-Type", FORM)];
    let no_body = [("Authorization", auth.as_str())];

    // PATCH with the content in the query string only.
    let head = format!("PATCH /api/v1/messages/{id}?content=edited%20by%20query");
    send(&server, &head, &no_body, b"").ok();
    assert_eq!(raw_content(&server, &sent["id"]), "edited by query");
    // Both: the body's value wins.
    let head = format!("PATCH /api/v1/messages/{id}?content=from%20the%20query");
    send(&server, &head, &form, b"content=from+the+body").ok();
    assert_eq!(raw_content(&server, &sent["id"]), "from the body");
    // A query-string edit is checked like any other: not the author's.
    let othello = server.account("othello@natter.test");
    let othello_auth = basic_auth(&othello.email, &othello.key);
    let head = format!("PATCH /api/v1/messages/{id}?content=not%20mine");
    let e = send(&server, &head, &[("Authorization", othello_auth.as_str())], b"");
    e.err(400, "BAD_REQUEST");
    assert_eq!(raw_content(&server, &sent["id"]), "from the body");

    // DELETE a reaction named in the query string.
    let reactions = format!("/messages/{id}/reactions");
    hamlet.post(&reactions, &[("emoji_name", "smile")]).ok();
    let head = format!("DELETE /api/v1/messages/{id}/reactions?emoji_name=smile");
    send(&server, &head, &no_body, b"").ok();
    let m = hamlet.get(&format!("/messages/{id}"), &[]).ok();
    assert_eq!(m["message"]["reactions"], serde_json::json!([]));
    // Nothing left to remove: the refusal, from query-string variables too.
    send(&server, &head, &no_body, b"").err(400, "REACTION_DOES_NOT_EXIST");
    // Both: the body names the reaction that is removed.
    hamlet.post(&reactions, &[("emoji_name", "heart")]).ok();
    let head = format!("DELETE /api/v1/messages/{id}/reactions?emoji_name=smile");
    send(&server, &head, &form, b"emoji_name=heart").ok();
    let m = hamlet.get(&format!("/messages/{id}"), &[]).ok();
    assert_eq!(m["message"]["reactions"], serde_json::json!([]));
}
