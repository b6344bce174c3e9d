//! Outgoing-webhook bots: `POST /bots` and `PATCH /bots/{id}` with their
//! service, the triggers (a mention in a channel, a direct message), the
//! generic and Slack-compatible requests, every reply form, the failure
//! notices, retries, the SSRF guard and its allow-list, and a delivery
//! that survives a SIGKILL between the send and the bot's answer. The
//! bots' servers are tiny HTTP servers on threads of the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{channel_id, user_id, Client, TestServer};

const IAGO: &str = "iago@natter.test"; // administrator
const HAMLET: &str = "hamlet@natter.test"; // member; general, Denmark
const CORDELIA: &str = "cordelia@natter.test"; // member

/// Deliveries may reach the test's bot servers on 127.0.0.1; retries
/// wait 50 ms, then 100, then 200.
const ALLOW: &[&str] = &[
    "--outgoing-webhook-allow",
    "127.0.0.1",
    "--outgoing-webhook-backoff-ms",
    "50",
    "--outgoing-webhook-timeout",
    "2",
];

/// One request a bot server received.
#[derive(Debug)]
struct Seen {
    head: String,
    body: String,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// How a bot server answers its n-th request (from 0).
#[derive(Clone)]
enum Answer {
    /// A status and a body.
    Reply(u16, &'static str),
    /// Keeps the connection open without answering.
    Hang,
    /// Closes the connection without answering.
    Close,
    /// A 302 to this URL.
    Redirect(String),
}

/// A bot's server on `host`: every request it receives is sent on
/// `seen`.
struct BotServer {
    url: String,
    seen: mpsc::Receiver<Seen>,
}

impl BotServer {
    fn start(answer: impl Fn(usize) -> Answer + Send + 'static) -> BotServer {
        BotServer::start_on("127.0.0.1", answer)
    }

    fn start_on(host: &str, answer: impl Fn(usize) -> Answer + Send + 'static) -> BotServer {
        let listener = TcpListener::bind((host, 0)).expect("bind a bot server");
        let url = format!("http://{}/bot", listener.local_addr().unwrap());
        let (tx, seen) = mpsc::channel();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&mut stream) else { continue };
                if tx.send(request).is_err() {
                    return;
                }
                match answer(n) {
                    Answer::Reply(status, body) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Answer::Hang => held.push(stream),
                    Answer::Close => drop(stream),
                    Answer::Redirect(to) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\
                             Connection: close\r\n\r\n"
                        );
                    }
                }
            }
        });
        BotServer { url, seen }
    }

    /// The next request (the wait is generous: deliveries are
    /// asynchronous, not slow).
    fn next(&self) -> Seen {
        self.seen.recv_timeout(Duration::from_secs(60)).expect("the bot server got no request")
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    read_request_from(stream.try_clone().ok()?)
}

fn read_request_from(stream: impl Read) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let seen = Seen { head, body: String::new() };
    let len: usize = seen.header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { body: String::from_utf8(body).ok()?, ..seen })
}

/// Creates an outgoing-webhook bot owned by `c`'s user; returns (id,
/// email, API key, the service's token).
fn create_bot(
    c: &Client,
    short: &str,
    url: &str,
    interface: &str,
) -> (u64, String, String, String) {
    let url = serde_json::to_string(url).unwrap();
    let r = c
        .post(
            "/bots",
            &[
                ("full_name", &format!("{short} bot")),
                ("short_name", short),
                ("bot_type", "3"),
                ("payload_url", &url),
                ("interface_type", interface),
            ],
        )
        .ok();
    let id = r["user_id"].as_u64().unwrap();
    let bots = c.get("/bots", &[]).ok();
    let bot = bots["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == id).unwrap().clone();
    let token = bot["services"][0]["token"].as_str().unwrap().to_owned();
    (id, r["email"].as_str().unwrap().to_owned(), r["api_key"].as_str().unwrap().to_owned(), token)
}

fn send_channel(c: &Client, channel: &str, topic: &str, content: &str) -> u64 {
    let p = [("type", "stream"), ("to", channel), ("topic", topic), ("content", content)];
    c.post("/messages", &p).ok()["id"].as_u64().unwrap()
}

fn send_direct(c: &Client, to: u64, content: &str) -> u64 {
    let to = format!("[{to}]");
    let p = [("type", "direct"), ("to", to.as_str()), ("content", content)];
    c.post("/messages", &p).ok()["id"].as_u64().unwrap()
}

/// The messages of a narrow as `c` sees them (Markdown source), oldest
/// first.
fn messages(c: &Client, narrow: &str) -> Vec<Value> {
    let p = [
        ("anchor", "newest"),
        ("num_before", "100"),
        ("num_after", "0"),
        ("narrow", narrow),
        ("apply_markdown", "false"),
    ];
    c.get("/messages", &p).ok()["messages"].as_array().unwrap().clone()
}

fn topic_narrow(channel: &str, topic: &str) -> String {
    serde_json::json!([["channel", channel], ["topic", topic]]).to_string()
}

fn dm_narrow(with: &str) -> String {
    serde_json::json!([["dm", with]]).to_string()
}

/// Waits until the narrow holds `count` messages; returns them.
fn wait_for(c: &Client, narrow: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = messages(c, narrow);
        if found.len() >= count {
            return found;
        }
        assert!(Instant::now() < deadline, "{narrow}: {} messages, not {count}", found.len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| m["content"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn outgoing_bots_are_created_listed_and_updated_with_their_service() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (id, _, _, token) = create_bot(&hamlet, "echo", "https://bots.example.com/echo", "1");
    let bots = hamlet.get("/bots", &[]).ok();
    let bot = bots["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == id).unwrap();
    assert_eq!(bot["bot_type"], 3);
    assert_eq!(
        bot["services"],
        serde_json::json!([{"base_url": "https://bots.example.com/echo", "interface": 1,
                            "token": token}])
    );
    assert_eq!(token.len(), 32);
    let register = hamlet.post("/register", &[("fetch_event_types", "[\"realm_bot\"]")]).ok();
    let listed = register["realm_bots"].as_array().unwrap().iter().find(|b| b["user_id"] == id);
    assert_eq!(listed.unwrap()["services"][0]["token"], token.as_str());

    // Refusals: not JSON, not a URL, another scheme, a bad interface, no
    // URL, an embedded bot.
    let refuse = |params: &[(&str, &str)], code: &str| {
        let mut p = vec![("full_name", "Other bot"), ("short_name", "other"), ("bot_type", "3")];
        p.extend_from_slice(params);
        hamlet.post("/bots", &p).err(400, code)["msg"].as_str().unwrap().to_owned()
    };
    refuse(&[("payload_url", "http://example.com")], "INVALID_JSON");
    let msg = refuse(&[("payload_url", "\"not a url\"")], "BAD_REQUEST");
    assert_eq!(msg, "payload_url is not a URL");
    refuse(&[("payload_url", "\"ftp://example.com/x\"")], "BAD_REQUEST");
    let msg = refuse(
        &[("payload_url", "\"http://example.com\""), ("interface_type", "3")],
        "BAD_REQUEST",
    );
    assert_eq!(msg, "Invalid interface type");
    refuse(&[], "REQUEST_VARIABLE_MISSING");
    let p = [("full_name", "Embedded"), ("short_name", "emb"), ("bot_type", "4")];
    let msg = hamlet.post("/bots", &p).err(400, "BAD_REQUEST")["msg"].as_str().unwrap().to_owned();
    assert!(msg.starts_with("Embedded bots are not supported"), "{msg}");

    // PATCH: the owner changes the URL and interface; the token stays.
    let path = format!("/bots/{id}");
    let p = [("service_payload_url", "\"http://bots.example.com/v2\""), ("service_interface", "2")];
    hamlet.request("PATCH", &path, &p).ok();
    let bots = hamlet.get("/bots", &[]).ok();
    let bot = bots["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == id).unwrap();
    assert_eq!(
        bot["services"],
        serde_json::json!([{"base_url": "http://bots.example.com/v2", "interface": 2,
                            "token": token}])
    );
    // Refused: a bad URL or interface, a member who does not own it, a
    // bot without a service.
    let p = [("service_payload_url", "\"nope\"")];
    hamlet.request("PATCH", &path, &p).err(400, "BAD_REQUEST");
    let p = [("service_interface", "7")];
    hamlet.request("PATCH", &path, &p).err(400, "BAD_REQUEST");
    let p = [("service_payload_url", "\"http://evil.example.com\"")];
    let r = server.client(CORDELIA).request("PATCH", &path, &p).err(400, "BAD_REQUEST");
    assert_eq!(r["msg"], "Insufficient permission");
    // An administrator may.
    let p = [("service_payload_url", "\"http://bots.example.com/v3\"")];
    server.client(IAGO).request("PATCH", &path, &p).ok();
    let generic = hamlet.post("/bots", &[("full_name", "Plain"), ("short_name", "plain")]).ok();
    let p = [("service_payload_url", "\"http://bots.example.com\"")];
    let path = format!("/bots/{}", generic["user_id"]);
    hamlet.request("PATCH", &path, &p).err(400, "BAD_REQUEST");

    // Durable: the service is there after a crash.
    let mut server = server;
    server.kill();
    server.restart();
    let bots = server.client(HAMLET).get("/bots", &[]).ok();
    let bot = bots["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == id).unwrap();
    assert_eq!(bot["services"][0]["base_url"], "http://bots.example.com/v3");
}

#[test]
fn a_mention_and_a_direct_message_trigger_the_bot_and_get_its_reply() {
    let server = TestServer::start_with(ALLOW);
    let bot = BotServer::start(|_| Answer::Reply(200, r#"{"content": "Hello from the bot"}"#));
    let hamlet = server.client(HAMLET);
    let (bot_id, bot_email, _, token) = create_bot(&hamlet, "hello", &bot.url, "1");

    // A mention in a channel the bot can read (public).
    let sent = send_channel(&hamlet, "Denmark", "greetings", "hi @**hello bot**, how are you?");
    let seen = bot.next();
    assert_eq!(seen.header("content-type").as_deref(), Some("application/json"));
    assert!(seen.header("user-agent").unwrap().starts_with("natter-outgoing-webhook/"));
    assert!(seen.head.starts_with("POST /bot HTTP/1.1"), "{}", seen.head);
    let body = seen.json();
    assert_eq!(body["trigger"], "mention");
    assert_eq!(body["token"], token.as_str());
    assert_eq!(body["bot_email"], bot_email.as_str());
    assert_eq!(body["bot_full_name"], "hello bot");
    assert_eq!(body["data"], "hi @**hello bot**, how are you?");
    assert_eq!(body["message"]["id"], sent);
    assert_eq!(body["message"]["content"], "hi @**hello bot**, how are you?");
    assert!(body["message"]["rendered_content"].as_str().unwrap().contains("user-mention"));
    assert_eq!(body["message"]["display_recipient"], "Denmark");
    assert_eq!(body["message"]["subject"], "greetings");
    assert_eq!(body["message"]["sender_email"], HAMLET);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "greetings"), 2);
    assert_eq!(contents(&topic), ["hi @**hello bot**, how are you?", "Hello from the bot"]);
    assert_eq!(topic[1]["sender_id"], bot_id);
    assert_eq!(topic[1]["client"], "OutgoingWebhookResponse");

    // A direct message: the reply comes in the same conversation.
    let sent = send_direct(&hamlet, bot_id, "ping");
    let body = bot.next().json();
    assert_eq!(body["trigger"], "direct_message");
    assert_eq!(body["message"]["id"], sent);
    assert_eq!(body["message"]["type"], "private");
    let dm = wait_for(&hamlet, &dm_narrow(&bot_email), 2);
    assert_eq!(contents(&dm), ["ping", "Hello from the bot"]);

    // A silent mention, a plain message and a mention in a private
    // channel the bot is not in trigger nothing; the next request is the
    // next real mention (the bot's own replies never trigger it either).
    send_channel(&hamlet, "core team", "secret", "@**hello bot** read this");
    send_channel(&hamlet, "Denmark", "quiet", "hi @_**hello bot**");
    send_channel(&hamlet, "Denmark", "quiet", "no mention here");
    let sent = send_channel(&hamlet, "Denmark", "quiet", "@**hello bot** again");
    assert_eq!(bot.next().json()["message"]["id"], sent);
    wait_for(&hamlet, &topic_narrow("Denmark", "quiet"), 4);
}

#[test]
fn each_reply_form_posts_what_zulip_posts() {
    let server = TestServer::start_with(ALLOW);
    let answers = [
        Answer::Reply(200, r#"{"response_not_required": true, "content": "unseen"}"#),
        Answer::Reply(200, r#""""#),
        Answer::Reply(200, r#"{"content": ""}"#),
        Answer::Reply(200, "this is not json"),
        Answer::Reply(200, "[1, 2]"),
        Answer::Reply(500, "oops"),
        Answer::Reply(200, r#"{"response_string": "old style"}"#),
    ];
    let bot = BotServer::start(move |n| answers[n.min(answers.len() - 1)].clone());
    let hamlet = server.client(HAMLET);
    let (bot_id, bot_email, _, _) = create_bot(&hamlet, "forms", &bot.url, "1");
    let narrow = topic_narrow("Denmark", "forms");
    let mut expected: Vec<String> = Vec::new();
    let mut say = |content: &str, answers: &[&str]| {
        send_channel(&hamlet, "Denmark", "forms", content);
        bot.next();
        expected.push(content.to_owned());
        expected.extend(answers.iter().map(|a| a.to_string()));
        // Each failure notice arrives before the next send; the forms that
        // post nothing show as the next message following at once.
        let found = wait_for(&hamlet, &narrow, expected.len());
        assert_eq!(contents(&found), expected);
    };
    say("@**forms bot** 1", &[]);
    say("@**forms bot** 2", &[]);
    say("@**forms bot** 3", &[]);
    say("@**forms bot** 4", &["Failure! Invalid JSON in response"]);
    say("@**forms bot** 5", &["Failure! Invalid response format"]);
    say("@**forms bot** 6", &["Failure! Third party responded with 500"]);
    say("@**forms bot** 7", &["old style"]);
    // The owner heard of each failure, with the response's payload.
    let owner = wait_for(&hamlet, &dm_narrow(&bot_email), 3);
    let notes = contents(&owner);
    assert!(notes
        .iter()
        .all(|n| n.contains("to your bot @_**forms bot** triggered an outgoing webhook")));
    assert!(notes[0].contains("Invalid JSON in response") && notes[0].contains("this is not json"));
    assert!(notes[2].contains("The webhook got a response with status code *500*."));
    assert!(notes[2].contains("oops"));
    assert!(owner.iter().all(|m| m["sender_id"] == bot_id));
}

#[test]
fn a_slack_compatible_bot_gets_a_form_and_refuses_direct_messages() {
    let server = TestServer::start_with(ALLOW);
    let bot = BotServer::start(|_| Answer::Reply(200, r#"{"text": "Slack says hi"}"#));
    let hamlet = server.client(HAMLET);
    let (bot_id, bot_email, _, token) = create_bot(&hamlet, "slacky", &bot.url, "2");
    let sent = send_channel(&hamlet, "Denmark", "slack", "@**slacky bot** hello");
    let seen = bot.next();
    assert_eq!(seen.header("content-type").as_deref(), Some("application/x-www-form-urlencoded"));
    let form: std::collections::HashMap<String, String> =
        form_urlencoded::parse(seen.body.as_bytes()).into_owned().collect();
    assert_eq!(form["token"], token);
    assert_eq!(form["channel_name"], "Denmark");
    assert_eq!(form["text"], "@**slacky bot** hello");
    assert_eq!(form["trigger_word"], "mention");
    assert_eq!(form["user_name"], "King Hamlet");
    assert_eq!(form["user_id"], format!("U{}", user_id(&server, HAMLET)));
    assert_eq!(form["service_id"], bot_id.to_string());
    assert!(form["team_id"].starts_with('T') && form["channel_id"].starts_with('C'));
    assert_eq!(form["timestamp"], form["thread_ts"]);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "slack"), 2);
    assert_eq!(contents(&topic)[1], "Slack says hi");
    let _ = sent;

    // A direct message: no request, a notice in the conversation.
    send_direct(&hamlet, bot_id, "hello?");
    let dm = wait_for(&hamlet, &dm_narrow(&bot_email), 2);
    assert_eq!(contents(&dm)[1], "Failure! Slack outgoing webhooks don't support direct messages.");
    assert!(bot.seen.try_recv().is_err(), "the direct message was posted to a Slack bot");
}

#[test]
fn time_outs_and_connection_errors_are_retried_then_reported() {
    let server = TestServer::start_with(ALLOW);
    let hamlet = server.client(HAMLET);

    // A closed connection, then a time-out, then an answer: two retries.
    let bot = BotServer::start(|n| match n {
        0 => Answer::Close,
        1 => Answer::Hang,
        _ => Answer::Reply(200, r#"{"content": "third time lucky"}"#),
    });
    create_bot(&hamlet, "flaky", &bot.url, "1");
    let sent = send_channel(&hamlet, "Denmark", "flaky", "@**flaky bot** hi");
    for _ in 0..3 {
        assert_eq!(bot.next().json()["message"]["id"], sent, "the same message each time");
    }
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "flaky"), 2);
    assert_eq!(contents(&topic), ["@**flaky bot** hi", "third time lucky"]);

    // Nothing listens: the first try and 3 retries, then the notices.
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    let (_, dead_email, _, _) = create_bot(&hamlet, "dead", &url, "1");
    send_channel(&hamlet, "Denmark", "dead", "@**dead bot** anyone?");
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "dead"), 2);
    assert_eq!(contents(&topic)[1], "Failure! Bot is unavailable");
    let owner = wait_for(&hamlet, &dm_narrow(&dead_email), 1);
    let note = &contents(&owner)[0];
    assert!(note.contains("to your bot @_**dead bot** triggered an outgoing webhook."), "{note}");
    assert!(note.contains("resulted in a connection error"), "{note}");
}

#[test]
fn the_ssrf_guard_refuses_private_addresses_and_redirects() {
    // No allow-list: loopback, private, link-local and IPv6 loopback are
    // all refused before any connection.
    let server = TestServer::start_with(&["--outgoing-webhook-backoff-ms", "50"]);
    let hamlet = server.client(HAMLET);
    let local = BotServer::start(|_| Answer::Reply(200, r#"{"content": "leaked"}"#));
    let urls = [
        local.url.clone(),
        "http://10.1.2.3/bot".to_owned(),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "http://[::1]:9/bot".to_owned(),
        "http://[::ffff:127.0.0.1]:9/bot".to_owned(),
    ];
    for (n, url) in urls.iter().enumerate() {
        let short = format!("guarded{n}");
        let (_, email, _, _) = create_bot(&hamlet, &short, url, "1");
        let topic = format!("ssrf {n}");
        send_channel(&hamlet, "Denmark", &topic, &format!("@**{short} bot** fetch"));
        let found = wait_for(&hamlet, &topic_narrow("Denmark", &topic), 2);
        assert_eq!(contents(&found)[1], "Failure! Third party responded with 407", "{url}");
        let owner = wait_for(&hamlet, &dm_narrow(&email), 1);
        assert!(contents(&owner)[0].contains("is for a private or disallowed network"));
    }
    assert!(local.seen.try_recv().is_err(), "a refused address got a request");
    drop(server);

    // With 127.0.0.1 allowed, a redirect to another loopback address is
    // not followed.
    let server = TestServer::start_with(ALLOW);
    let hamlet = server.client(HAMLET);
    let target = BotServer::start_on("127.0.0.2", |_| Answer::Reply(200, r#"{"content": "x"}"#));
    let to = target.url.clone();
    let redirecting = BotServer::start(move |_| Answer::Redirect(to.clone()));
    create_bot(&hamlet, "redirect", &redirecting.url, "1");
    send_channel(&hamlet, "Denmark", "redirect", "@**redirect bot** go");
    redirecting.next();
    let found = wait_for(&hamlet, &topic_narrow("Denmark", "redirect"), 2);
    assert_eq!(contents(&found)[1], "Failure! Third party responded with 302");
    assert!(target.seen.try_recv().is_err(), "the redirect was followed");
}

#[test]
fn a_delivery_in_flight_at_a_crash_is_made_after_the_restart() {
    let mut server = TestServer::start_with(&[
        "--outgoing-webhook-allow",
        "127.0.0.1",
        "--outgoing-webhook-timeout",
        "30",
    ]);
    // The first request is never answered (the server is killed while it
    // waits); later ones are.
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    let bot = BotServer::start(move |n| {
        count.fetch_add(1, Ordering::SeqCst);
        if n == 0 {
            Answer::Hang
        } else {
            Answer::Reply(200, r#"{"content": "answered after the crash"}"#)
        }
    });
    let hamlet = server.client(HAMLET);
    create_bot(&hamlet, "durable", &bot.url, "1");
    let sent = send_channel(&hamlet, "Denmark", "crash", "@**durable bot** are you there?");
    assert_eq!(bot.next().json()["message"]["id"], sent);
    server.kill();
    server.restart();
    // Posted again after the restart, with the same message id.
    assert_eq!(bot.next().json()["message"]["id"], sent);
    let hamlet = server.client(HAMLET);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "crash"), 2);
    assert_eq!(contents(&topic)[1], "answered after the crash");

    // Finished deliveries are not made again after another crash: the
    // next request the bot gets is for the next message. (A message is
    // readable once applied, durable once a later write is acknowledged:
    // this send makes sure the answer and the delivery's end are on disk.)
    send_channel(&hamlet, "Denmark", "crash", "written after the answer");
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    let next = send_channel(&hamlet, "Denmark", "crash", "@**durable bot** again");
    assert_eq!(bot.next().json()["message"]["id"], next);
    wait_for(&hamlet, &topic_narrow("Denmark", "crash"), 5);
    assert_eq!(answered.load(Ordering::SeqCst), 3);
}

/// A zform of choices, as a bot's `widget_content` (JSON text).
const ZFORM: &str = r#"{"content": "Pick a fruit", "widget_content": "{\"widget_type\": \"zform\", \"extra_data\": {\"type\": \"choices\", \"heading\": \"Which fruit?\", \"choices\": [{\"short_name\": \"A\", \"long_name\": \"Apples\", \"reply\": \"apples\"}]}}"}"#;

#[test]
fn a_reply_with_widget_content_becomes_that_widget_and_a_bad_one_is_refused() {
    let server = TestServer::start_with(ALLOW);
    let answers = [
        Answer::Reply(200, ZFORM),
        Answer::Reply(
            200,
            r#"{"content": "Vote", "widget_content": "{\"widget_type\": \"poll\", \"extra_data\": {}}"}"#,
        ),
        Answer::Reply(200, r#"{"content": "Broken", "widget_content": "{not json"}"#),
        Answer::Reply(
            200,
            r#"{"content": "As object", "widget_content": {"widget_type": "zform"}}"#,
        ),
        Answer::Reply(
            200,
            r#"{"content": "No choices", "widget_content": "{\"widget_type\": \"zform\", \"extra_data\": {\"type\": \"choices\", \"heading\": \"h\"}}"}"#,
        ),
    ];
    let bot = BotServer::start(move |n| answers[n.min(answers.len() - 1)].clone());
    let hamlet = server.client(HAMLET);
    let (bot_id, bot_email, _, _) = create_bot(&hamlet, "widgets", &bot.url, "1");
    let narrow = topic_narrow("Denmark", "widgets");
    send_channel(&hamlet, "Denmark", "widgets", "@**widgets bot** fruit?");
    bot.next();
    let found = wait_for(&hamlet, &narrow, 2);
    assert_eq!(found[1]["content"], "Pick a fruit");
    let submessages = found[1]["submessages"].as_array().unwrap();
    assert_eq!(submessages.len(), 1);
    assert_eq!(submessages[0]["sender_id"], bot_id);
    assert_eq!(submessages[0]["msg_type"], "widget");
    let widget: Value = serde_json::from_str(submessages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(widget["widget_type"], "zform");
    assert_eq!(widget["extra_data"]["choices"][0]["reply"], "apples");
    // The asking message itself is no widget.
    assert_eq!(found[0]["submessages"], serde_json::json!([]));

    // Refused as Zulip refuses them: a failure notice and the owner told.
    let refusals = [
        "Failure! Widgets: unknown widget type: poll",
        "Failure! Widgets: API programmer sent invalid JSON content",
        "Failure! Widgets: API programmer sent invalid JSON content",
        "Failure! Widgets: choices key is missing from extra_data",
    ];
    for (i, refusal) in refusals.iter().enumerate() {
        send_channel(&hamlet, "Denmark", "widgets", &format!("@**widgets bot** {i}"));
        bot.next();
        let found = wait_for(&hamlet, &narrow, 4 + 2 * i);
        assert_eq!(found[3 + 2 * i]["content"], *refusal);
        assert_eq!(found[3 + 2 * i]["submessages"], serde_json::json!([]));
    }
    let owner = wait_for(&hamlet, &dm_narrow(&bot_email), refusals.len());
    assert!(contents(&owner)[0].contains("Widgets: unknown widget type: poll"));
}

/// A bot's server over TLS on 127.0.0.1, with the test certificate of
/// `tests/fixtures/tls` (for 127.0.0.1 and localhost, issued by the test
/// authority `ca.pem`, which only the tests trust): it answers every
/// request with `body`; each request it reads is sent on `seen`, and
/// each failed handshake counted.
struct TlsBotServer {
    url: String,
    seen: mpsc::Receiver<Seen>,
    failed_handshakes: Arc<AtomicUsize>,
}

impl TlsBotServer {
    fn start(body: &'static str) -> TlsBotServer {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
        let certs = CertificateDer::pem_file_iter(format!("{dir}/bot.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(format!("{dir}/bot.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a TLS bot server");
        let url = format!("https://{}/bot", listener.local_addr().unwrap());
        let (tx, seen) = mpsc::channel();
        let failed_handshakes = Arc::new(AtomicUsize::new(0));
        let failures = Arc::clone(&failed_handshakes);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(tcp) = stream else { return };
                let conn = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let Some(request) = read_request_from(&mut tls) else {
                    failures.fetch_add(1, Ordering::SeqCst);
                    continue;
                };
                if tx.send(request).is_err() {
                    return;
                }
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        TlsBotServer { url, seen, failed_handshakes }
    }
}

/// The test authority's certificate, for `--outgoing-webhook-ca-file`.
const TEST_CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls/ca.pem");

#[test]
fn https_bots_get_their_messages_over_verified_tls() {
    // The test authority trusted (instead of Mozilla's roots), and
    // 127.0.0.1 allowed: the delivery goes over TLS and the answer is
    // posted.
    let args = [ALLOW, &["--outgoing-webhook-ca-file", TEST_CA][..]].concat();
    let server = TestServer::start_with(&args);
    let hamlet = server.client(HAMLET);
    let bot = TlsBotServer::start(r#"{"content": "hello over TLS"}"#);
    create_bot(&hamlet, "secure", &bot.url, "1");
    let sent = send_channel(&hamlet, "Denmark", "tls", "@**secure bot** hi");
    let seen = bot.seen.recv_timeout(Duration::from_secs(60)).expect("a request over TLS");
    assert_eq!(seen.json()["message"]["id"], sent);
    assert!(seen.head.starts_with("POST /bot HTTP/1.1"), "{}", seen.head);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "tls"), 2);
    assert_eq!(contents(&topic), ["@**secure bot** hi", "hello over TLS"]);
    drop(server);

    // Without the test authority the certificate is not trusted: the
    // handshake fails on every try, nothing is read, and the tries end
    // with the unavailable notice.
    let server = TestServer::start_with(ALLOW);
    let hamlet = server.client(HAMLET);
    let untrusted = TlsBotServer::start(r#"{"content": "must not be read"}"#);
    let (_, email, _, _) = create_bot(&hamlet, "untrusted", &untrusted.url, "1");
    send_channel(&hamlet, "Denmark", "untrusted tls", "@**untrusted bot** hi");
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "untrusted tls"), 2);
    assert_eq!(contents(&topic)[1], "Failure! Bot is unavailable");
    let owner = wait_for(&hamlet, &dm_narrow(&email), 1);
    assert!(contents(&owner)[0].contains("resulted in a connection error"));
    assert!(untrusted.seen.try_recv().is_err(), "a request was read over an untrusted session");
    // The bot server counts a refused handshake once natter hangs up.
    let deadline = Instant::now() + Duration::from_secs(60);
    while untrusted.failed_handshakes.load(Ordering::SeqCst) < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(untrusted.failed_handshakes.load(Ordering::SeqCst), 4, "the try and 3 retries");
    drop(server);

    // The SSRF guard holds for https: with the authority trusted but no
    // allow-list, 127.0.0.1 is refused before any connection.
    let server = TestServer::start_with(&["--outgoing-webhook-ca-file", TEST_CA]);
    let hamlet = server.client(HAMLET);
    let guarded = TlsBotServer::start(r#"{"content": "leaked"}"#);
    create_bot(&hamlet, "guarded", &guarded.url, "1");
    send_channel(&hamlet, "Denmark", "guarded tls", "@**guarded bot** hi");
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "guarded tls"), 2);
    assert_eq!(contents(&topic)[1], "Failure! Third party responded with 407");
    assert!(guarded.seen.try_recv().is_err());
    assert_eq!(guarded.failed_handshakes.load(Ordering::SeqCst), 0, "no connection was made");
}

#[test]
fn a_bad_ca_file_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificate here\n").unwrap();
    for path in [empty.to_str().unwrap(), "/nonexistent/ca.pem"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_natter"))
            .args(["--data-dir", dir.path().to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .args(["--outgoing-webhook-ca-file", path])
            .output()
            .unwrap();
        assert!(!out.status.success(), "started with {path}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--outgoing-webhook-ca-file"), "{stderr}");
    }
}

#[test]
fn scheduled_messages_trigger_bots_as_sent_ones_do() {
    let server = TestServer::start_with(ALLOW);
    let hamlet = server.client(HAMLET);
    let bot = BotServer::start(|_| Answer::Reply(200, r#"{"content": "on time"}"#));
    let (bot_id, bot_email, _, _) = create_bot(&hamlet, "timely", &bot.url, "1");
    let denmark = channel_id(&hamlet, "Denmark").to_string();
    let at =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2)
            .to_string();
    let schedule = |params: &[(&str, &str)]| {
        let mut params = params.to_vec();
        params.push(("scheduled_delivery_timestamp", at.as_str()));
        hamlet.post("/scheduled_messages", &params).ok();
    };
    // A mention in a channel, and a direct message to the bot.
    let content = "@**timely bot** the scheduled mention";
    schedule(&[("type", "stream"), ("to", &denmark), ("topic", "later"), ("content", content)]);
    let to = format!("[{bot_id}]");
    schedule(&[("type", "direct"), ("to", &to), ("content", "the scheduled DM")]);

    let mut triggers = Vec::new();
    for _ in 0..2 {
        let request = bot.next().json();
        let id = request["message"]["id"].as_u64().unwrap();
        triggers.push((request["trigger"].clone(), request["data"].clone(), id));
    }
    triggers.sort_by_key(|t| t.0.to_string());
    assert_eq!(triggers[0].0, "direct_message");
    assert_eq!(triggers[0].1, "the scheduled DM");
    assert_eq!(triggers[1].0, "mention");
    assert_eq!(triggers[1].1, content);
    // The messages the bot got are the delivered ones, and its answers
    // are posted beside them.
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "later"), 2);
    assert_eq!(topic[0]["id"].as_u64(), Some(triggers[1].2));
    assert_eq!(contents(&topic), [content, "on time"]);
    let dm = wait_for(&hamlet, &dm_narrow(&bot_email), 2);
    assert_eq!(contents(&dm), ["the scheduled DM", "on time"]);
    assert!(bot.seen.try_recv().is_err(), "one delivery per message");
}

#[test]
fn retries_counted_before_a_crash_are_not_made_again_after_it() {
    // Timed-out tries would take the time-out each; closed connections
    // fail at once. The third try (the second retry) hangs, and the
    // server is killed while it waits.
    let args = [
        "--outgoing-webhook-allow",
        "127.0.0.1",
        "--outgoing-webhook-backoff-ms",
        "20",
        "--outgoing-webhook-timeout",
        "60",
    ];
    let mut server = TestServer::start_with(&args);
    let bot = BotServer::start(|n| if n == 2 { Answer::Hang } else { Answer::Close });
    let hamlet = server.client(HAMLET);
    let (_, email, _, _) = create_bot(&hamlet, "shaky", &bot.url, "1");
    let sent = send_channel(&hamlet, "Denmark", "shaky", "@**shaky bot** still there?");
    for _ in 0..3 {
        assert_eq!(bot.next().json()["message"]["id"], sent);
    }
    server.kill();
    server.restart();
    // The try under way at the crash counts: one retry is left, not the
    // first try and three retries again.
    assert_eq!(bot.next().json()["message"]["id"], sent);
    let hamlet = server.client(HAMLET);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "shaky"), 2);
    assert_eq!(contents(&topic)[1], "Failure! Bot is unavailable");
    let owner = wait_for(&hamlet, &dm_narrow(&email), 1);
    assert!(contents(&owner)[0].contains("resulted in a connection error"));
    assert!(bot.seen.try_recv().is_err(), "4 tries in all, as Zulip's limit");

    // A crash while the last try waits: after the restart no try is
    // left, so the delivery ends with the notice and no request.
    let last = BotServer::start(|n| if n == 3 { Answer::Hang } else { Answer::Close });
    let (_, email, _, _) = create_bot(&hamlet, "spent", &last.url, "1");
    let sent = send_channel(&hamlet, "Denmark", "spent", "@**spent bot** hello?");
    for _ in 0..4 {
        assert_eq!(last.next().json()["message"]["id"], sent);
    }
    server.kill();
    server.restart();
    let hamlet = server.client(HAMLET);
    let topic = wait_for(&hamlet, &topic_narrow("Denmark", "spent"), 2);
    assert_eq!(contents(&topic)[1], "Failure! Bot is unavailable");
    let owner = wait_for(&hamlet, &dm_narrow(&email), 1);
    assert!(contents(&owner)[0].contains("The server restarted while the last try"));
    assert!(last.seen.try_recv().is_err(), "no fifth try");
}

#[test]
fn a_bots_answer_is_sent_as_any_message_is_with_mentions_follows_and_events() {
    let server = TestServer::start_with(ALLOW);
    let answer = r#"{"content": "Thanks @**King Hamlet**! Over to @**Cordelia, Lear's daughter**: **done**, says @**relay bot**"}"#;
    let bot = BotServer::start(move |_| Answer::Reply(200, answer));
    let hamlet = server.client(HAMLET);
    let cordelia = server.client(CORDELIA); // in general
    let (bot_id, _, _, _) = create_bot(&hamlet, "relay", &bot.url, "1");
    let (queue, registered) =
        crate::api_events::register(&cordelia, &[("event_types", r#"["message", "user_topic"]"#)]);
    let last = registered["last_event_id"].as_i64().unwrap();

    send_channel(&hamlet, "general", "handover", "@**relay bot** please take this");
    bot.next();
    let narrow = topic_narrow("general", "handover");
    let topic = wait_for(&hamlet, &narrow, 2);
    let answer_id = topic[1]["id"].as_u64().unwrap();
    assert_eq!(topic[1]["sender_id"], bot_id);

    // Rendered by the send path's renderer, mentions resolved.
    let p = [("apply_markdown", "true")];
    let shown = hamlet.get(&format!("/messages/{answer_id}"), &p).ok();
    let html = shown["message"]["content"].as_str().unwrap();
    assert!(html.contains(r#"class="user-mention" data-user-id=""#), "{html}");
    assert!(html.contains("<strong>done</strong>"), "{html}");
    // Each mentioned user's flags say so.
    let flags = |c: &Client| {
        let found = messages(c, &narrow);
        let answer = found.iter().find(|m| m["id"] == answer_id).expect("the answer").clone();
        answer["flags"].as_array().unwrap().clone()
    };
    assert!(flags(&cordelia).contains(&"mentioned".into()));
    assert!(flags(&hamlet).contains(&"mentioned".into()));

    // Cordelia's queue got the message event with its mention flag, and
    // the topic was followed for her because she was mentioned (her
    // `automatically_follow_topics_where_mentioned`), as for any message.
    let events = crate::api_events::events(&cordelia, &queue, last);
    let message = events
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["id"] == answer_id)
        .expect("a message event for the bot's answer");
    assert!(message["flags"].as_array().unwrap().contains(&"mentioned".into()));
    let followed = events.iter().find(|e| e["type"] == "user_topic").expect("a user_topic event");
    assert_eq!(followed["topic_name"], "handover");
    assert_eq!(followed["visibility_policy"], 3);
    let register = cordelia.post("/register", &[("fetch_event_types", r#"["user_topic"]"#)]).ok();
    let topics = register["user_topics"].as_array().unwrap();
    assert!(topics.iter().any(|t| t["topic_name"] == "handover" && t["visibility_policy"] == 3));

    // The answer mentions the bot itself, yet a bot's message triggers no
    // bot: the next request the bot's server gets is for the next
    // person's mention.
    let next = send_channel(&hamlet, "general", "handover", "@**relay bot** once more");
    assert_eq!(bot.next().json()["message"]["id"], next);
}
