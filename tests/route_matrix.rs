//! The authorization matrix, generated from the routing table: every route
//! in `http::router::ROUTES` has one row in `ROWS`, and each row is tried
//! as eight callers against a fresh seeded realm, through the real request
//! path (`http::Service`: routing, realm by host, authentication, the
//! handler), in-process. A route without its row, or a row without its
//! route, fails the test.
//!
//! The ids a route names are objects an administrator, Iago, made for the
//! row: a private channel he shares with Hamlet, his message there (with a
//! file attached), a user group of the two, an event queue, a scheduled
//! message, a bot, a draft, a saved snippet, a navigation view, custom
//! emoji, a code playground, a linkifier, a custom profile field, a
//! default channel group, a realm domain and invitations. The callers, in
//! the order of a row's letters:
//!
//! 1. the owner of those objects (Iago);
//! 2. another member who shares the private channel and the group (Hamlet);
//! 3. a member who is not subscribed to the private channel (Othello);
//! 4. a guest (Polonius);
//! 5. a deactivated user, with what was its API key;
//! 6. a bot (Helper Bot, owned by Desdemona);
//! 7. the owner of another realm (King Lear, on `lear.localhost`);
//! 8. no credentials.
//!
//! A letter is the answer expected: `Y` a success (2xx), `n` a refusal
//! (400, 403 or 404: not allowed, or no such object for this caller), `A`
//! 401 (no valid credentials). Callers 3 to 8 never see the private
//! channel: a success of theirs whose reply names the channel, the
//! message's content or topic, or the file, is a leak and fails the test
//! whatever the row says. The owner calls last, so that objects the other
//! callers failed to change are still there for them.
//!
//! Adding a route: add its row (method, pattern, parameters, letters).
//! Parameters are `name=value` pairs joined by `&`, values unencoded; a
//! `$name` in a value, and a `{name}` segment of the pattern, is replaced
//! by the fixture's id of that name (`Fixture::value`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use natter::api::App;
use natter::http::conn;
use natter::http::health::Health;
use natter::http::router::ROUTES;
use natter::http::{Service, Session};
use serde_json::Value;

/// The callers, in the order of a row's letters.
const CALLERS: [&str; 8] =
    ["owner", "member", "outsider", "guest", "deactivated", "bot", "other realm", "none"];

/// Text only the private channel's subscribers may see.
const SECRETS: [&str; 4] =
    ["matrix-hideout", "whispered-plans-41", "secret-topic-41", "hidden-file-41.txt"];

/// Callers who must never see `SECRETS` (outsider to none).
const OUTSIDERS: std::ops::Range<usize> = 2..8;

/// (method, pattern, parameters, one letter per caller of `CALLERS`).
#[rustfmt::skip]
const ROWS: &[(&str, &str, &str, &str)] = &[
    ("GET", "/server_settings", "", "YYYYYYYY"),
    ("POST", "/dev_fetch_api_key", "username=hamlet@natter.test", "YYYYYYAY"),
    ("GET", "/users/me", "", "YYYYAYYA"),
    ("GET", "/users", "", "YYYYAYYA"),
    ("GET", "/users/{user_id}", "", "YYYYAYnA"),
    ("POST", "/messages", "type=stream&to=$channel&topic=t&content=hello", "YYnnAnnA"),
    ("GET", "/messages/{message_id}", "", "YYnnAnnn"),
    ("POST", "/register", "", "YYYYAYYY"),
    ("GET", "/events", "queue_id=$queue&last_event_id=-1&dont_block=true", "YnnnAnnA"),
    ("DELETE", "/events", "queue_id=$queue", "YnnnAnnA"),
    ("POST", "/users/me/presence", "status=active", "YYYYAYYA"),
    ("GET", "/realm/presence", "", "YYYYAYYA"),
    ("GET", "/users/{user_id_or_email}/presence", "", "YYYYAYnA"),
    ("POST", "/user_uploads", "", "YYYYAYYA"),
    ("GET", "/user_uploads/{realm_id}/{ab}/{token}/{filename}", "", "YYnnAnnA"),
    ("GET", "/realm/emoji", "", "YYYYAYYA"),
    ("POST", "/realm/emoji/{emoji_name}", "", "YYYnAYYA"),
    ("DELETE", "/realm/emoji/{emoji_name}", "", "YnnnAnnA"),
    ("GET", "/attachments", "", "YYYYAYYA"),
    ("POST", "/users/me/avatar", "", "YYYYAYYA"),
    ("DELETE", "/users/me/avatar", "", "YYYYAYYA"),
    ("GET", "/reminders", "", "YYYYAYYA"),
    ("POST", "/reminders", "message_id=$message&scheduled_delivery_timestamp=4102444800", "YYnnAnnA"),
    ("DELETE", "/reminders/{reminder_id}", "", "YnnnAnnA"),
    ("GET", "/streams/{stream_id}/email_address", "", "YYnnAnnA"),
    ("POST", "/messages/{message_id}/report", "report_type=spam", "nnnnAnnA"),
    ("GET", "/bot_storage", "", "YYYYAYYA"),
    ("PUT", "/bot_storage", "storage={\"k\": \"v\"}", "YYYYAYYA"),
    ("DELETE", "/bot_storage", "", "YYYYAYYA"),
    ("DELETE", "/attachments/{attachment_id}", "", "YnnnAnnA"),
    ("GET", "/messages", r#"anchor=newest&num_before=10&num_after=0&narrow=[{"operator": "channel", "operand": $channel}]"#, "YYnnAnnA"),
    ("POST", "/messages/render", "content=**bold**", "YYYYAYYA"),
    ("GET", "/messages/matches_narrow", r#"msg_ids=[$message]&narrow=[{"operator": "channel", "operand": $channel}]"#, "YYnnAnnA"),
    ("POST", "/messages/flags", "messages=[$message]&op=add&flag=starred", "YYnnAnnA"),
    ("GET", "/users/me/{stream_id}/topics", "", "YYnnAnnA"),
    ("GET", "/users/me/subscriptions", "", "YYYYAYYA"),
    ("GET", "/streams", "", "YYYYAYYA"),
    ("PATCH", "/settings", "full_name=Renamed", "YYYYAYYA"),
    ("PATCH", "/settings/display", "twenty_four_hour_time=true", "YYYYAYYA"),
    ("PATCH", "/settings/notifications", "enable_sounds=false", "YYYYAYYA"),
    ("GET", "/confirm_email_change/{key}", "", "nnnnnnnn"),
    ("POST", "/fetch_api_key", "username=hamlet@natter.test&password=wrong", "AAAAAAAA"),
    ("POST", "/typing", "type=stream&stream_id=$channel&topic=t&op=start", "YYnnAnnA"),
    ("GET", "/users/me/alert_words", "", "YYYYAYYA"),
    ("POST", "/users/me/alert_words", r#"alert_words=["matrix"]"#, "YYYYAYYA"),
    ("DELETE", "/users/me/alert_words", r#"alert_words=["matrix"]"#, "YYYYAYYA"),
    ("GET", "/drafts", "", "YYYYAYYA"),
    ("POST", "/drafts", r#"drafts=[{"type": "stream", "to": [$channel], "topic": "t", "content": "c", "timestamp": 1700000000}]"#, "YYnnAnnA"),
    ("PATCH", "/drafts/{draft_id}", r#"draft={"type": "stream", "to": [$channel], "topic": "t", "content": "changed", "timestamp": 1700000000}"#, "YnnnAnnA"),
    ("DELETE", "/drafts/{draft_id}", "", "YnnnAnnA"),
    ("POST", "/users/me/status", "status_text=away", "YYYYAYYA"),
    ("GET", "/users/{user_id}/status", "", "YYYYAYnA"),
    ("POST", "/users/me/muted_users/{muted_user_id}", "", "YYnYAYnA"),
    ("DELETE", "/users/me/muted_users/{muted_user_id}", "", "YnnnAnnA"),
    ("POST", "/user_topics", "stream_id=$channel&topic=secret-topic-41&visibility_policy=1", "YYnnAnnA"),
    ("PATCH", "/users/me/subscriptions/muted_topics", "stream_id=$channel&topic=secret-topic-41&op=add", "YYnnAnnA"),
    ("GET", "/navigation_views", "", "YYYYAYYA"),
    ("POST", "/navigation_views", "fragment=narrow/channel/$channel-x&is_pinned=true&name=Other", "YYYYAYYA"),
    ("PATCH", "/navigation_views/{fragment}", "is_pinned=false", "YnnnAnnA"),
    ("DELETE", "/navigation_views/{fragment}", "", "YnnnAnnA"),
    ("GET", "/saved_snippets", "", "YYYYAYYA"),
    ("POST", "/saved_snippets", "title=t&content=c", "YYYYAYYA"),
    ("PATCH", "/saved_snippets/{saved_snippet_id}", "title=changed", "YnnnAnnA"),
    ("DELETE", "/saved_snippets/{saved_snippet_id}", "", "YnnnAnnA"),
    ("POST", "/realm/playgrounds", "name=Other&pygments_language=Python&url_template=https://py.example.com/?code={code}", "YnnnAnYA"),
    ("DELETE", "/realm/playgrounds/{playground_id}", "", "YnnnAnnA"),
    ("POST", "/users/me/apns_device_token", "token=0123456789abcdef&appid=org.zulip.Zulip", "YYYYAYYA"),
    ("DELETE", "/users/me/apns_device_token", "token=feedc0de", "YnnnAnnA"),
    ("POST", "/users/me/android_gcm_reg_id", "token=0123456789abcdef", "YYYYAYYA"),
    ("DELETE", "/users/me/android_gcm_reg_id", "token=feedc0de", "YnnnAnnA"),
    ("POST", "/users/me/subscriptions", r#"subscriptions=[{"name": "matrix-hideout"}]"#, "YYnnAnYA"),
    ("DELETE", "/users/me/subscriptions", r#"subscriptions=["matrix-hideout"]"#, "YYnnAnnA"),
    ("POST", "/users/me/subscriptions/properties", r#"subscription_data=[{"stream_id": $channel, "property": "pin_to_top", "value": true}]"#, "YYnnAnnA"),
    ("GET", "/users/{user_id}/subscriptions/{stream_id}", "", "YYnnAnnA"),
    ("GET", "/streams/{stream_id}/members", "", "YYnnAnnA"),
    ("GET", "/streams/{stream_id}", "", "YYnnAnnA"),
    ("PATCH", "/streams/{stream_id}", "description=changed", "YnnnAnnA"),
    ("DELETE", "/streams/{stream_id}", "", "YnnnAnnA"),
    ("GET", "/get_stream_id", "stream=matrix-hideout", "YYnnAnnA"),
    ("PATCH", "/users/{user_id}", "full_name=Renamed", "YnnnAnnA"),
    ("DELETE", "/users/{user_id}", "", "YnnnAnnA"),
    ("POST", "/users/{user_id}/reactivate", "", "YnnnAnnA"),
    ("POST", "/users", "email=newcomer$caller@natter.test&password=correct-horse-battery&full_name=Newcomer", "YnnnAnYA"),
    ("DELETE", "/users/me", "", "YYYYAYnA"),
    ("POST", "/users/me/api_key/regenerate", "", "YYYYAYYA"),
    ("POST", "/bots", "full_name=Other Bot $caller&short_name=other$caller", "YYYnAnYA"),
    ("GET", "/bots", "", "YYYYAYYA"),
    ("PATCH", "/bots/{bot_id}", "full_name=Renamed Bot", "YnnnAnnA"),
    ("DELETE", "/bots/{bot_id}", "", "YnnnAnnA"),
    ("POST", "/bots/{bot_id}/api_key/regenerate", "", "YnnnAnnA"),
    // The bot's key in the parameters is the credential, whoever calls;
    // another realm does not know it.
    ("POST", "/external/{integration}", r#"api_key=$webhook_key&payload={"a": 1}"#, "YYYYYYAY"),
    ("POST", "/streams/{stream_id}/delete_topic", "topic_name=secret-topic-41", "YnnnAnnA"),
    ("PATCH", "/realm", "description=changed", "YnnnAnYA"),
    ("PATCH", "/realm/user_settings_defaults", "enable_sounds=false", "YnnnAnYA"),
    ("GET", "/realm/domains", "", "YYYYAYYA"),
    ("POST", "/realm/domains", "domain=other.example.com&allow_subdomains=false", "YnnnAnYA"),
    ("PATCH", "/realm/domains/{domain}", "allow_subdomains=true", "YnnnAnnA"),
    ("DELETE", "/realm/domains/{domain}", "", "YnnnAnnA"),
    ("GET", "/realm/linkifiers", "", "YYYYAYYA"),
    ("PATCH", "/realm/linkifiers", "ordered_linkifier_ids=[$filter]", "YnnnAnnA"),
    ("POST", "/realm/filters", "pattern=T(?P<id>[0-9]+)&url_template=https://t.example.com/{id}", "YnnnAnYA"),
    ("PATCH", "/realm/filters/{filter_id}", "pattern=M(?P<id>[0-9]+)&url_template=https://m.example.com/{id}", "YnnnAnnA"),
    ("DELETE", "/realm/filters/{filter_id}", "", "YnnnAnnA"),
    ("POST", "/default_streams", "stream_id=$lobby", "YnnnAnnA"),
    ("DELETE", "/default_streams", "stream_id=$plaza", "YnnnAnnA"),
    ("POST", "/default_stream_groups/create", r#"group_name=other defaults&description=d&stream_names=["matrix-square"]"#, "YnnnAnnA"),
    ("PATCH", "/default_stream_groups/{group_id}", "new_description=changed", "YnnnAnnA"),
    ("PATCH", "/default_stream_groups/{group_id}/streams", r#"op=add&stream_names=["matrix-lobby"]"#, "YnnnAnnA"),
    ("DELETE", "/default_stream_groups/{group_id}", "", "YnnnAnnA"),
    ("GET", "/realm/profile_fields", "", "YYYYAYYA"),
    ("POST", "/realm/profile_fields", "name=Other field&field_type=1", "YnnnAnYA"),
    ("PATCH", "/realm/profile_fields", "order=[$field]", "YnnnAnnA"),
    ("PATCH", "/realm/profile_fields/{field_id}", "name=Renamed field", "YnnnAnnA"),
    ("DELETE", "/realm/profile_fields/{field_id}", "", "YnnnAnnA"),
    ("GET", "/user_groups", "", "YYYYAYYA"),
    ("POST", "/user_groups/create", "name=other group $caller&description=d&members=[$hamlet]", "YYYnAYnA"),
    ("PATCH", "/user_groups/{user_group_id}", "description=changed", "YnnnAnnA"),
    ("POST", "/user_groups/{user_group_id}/members", "add=[$othello]", "YnnnAnnA"),
    ("GET", "/user_groups/{user_group_id}/members", "", "YYYYAYnA"),
    ("GET", "/user_groups/{user_group_id}/members/{user_id}", "", "YYYYAYnA"),
    ("POST", "/user_groups/{user_group_id}/subgroups", "add=[$subgroup]", "YnnnAnnA"),
    ("GET", "/user_groups/{user_group_id}/subgroups", "", "YYYYAYnA"),
    ("POST", "/user_groups/{user_group_id}/deactivate", "", "YnnnAnnA"),
    ("DELETE", "/messages/{message_id}", "", "YnnnAnnA"),
    ("POST", "/messages/{message_id}/reactions", "emoji_name=heart", "YYnnAnnA"),
    ("DELETE", "/messages/{message_id}/reactions", "emoji_name=smile", "YnnnAnnA"),
    ("POST", "/messages/flags/narrow", r#"anchor=newest&num_before=10&num_after=0&narrow=[{"operator": "channel", "operand": $channel}]&op=add&flag=read"#, "YYnnAnnA"),
    ("POST", "/mark_all_as_read", "", "YYYYAYYA"),
    ("POST", "/mark_stream_as_read", "stream_id=$channel", "YYnnAnnA"),
    ("POST", "/mark_topic_as_read", "stream_id=$channel&topic_name=secret-topic-41", "YYnnAnnA"),
    ("POST", "/scheduled_messages", "type=stream&to=$channel&topic=t&content=later&scheduled_delivery_timestamp=4102444800", "YYnnAnnA"),
    ("GET", "/scheduled_messages", "", "YYYYAYYA"),
    ("PATCH", "/scheduled_messages/{scheduled_message_id}", "content=changed", "YnnnAnnA"),
    ("DELETE", "/scheduled_messages/{scheduled_message_id}", "", "YnnnAnnA"),
    ("PATCH", "/messages/{message_id}", "content=edited", "YnnnAnnA"),
    ("POST", "/messages/{message_id}/typing", "op=start", "YYnnAnnA"),
    // The message is no widget: only its sender, who calls last, may start one.
    ("POST", "/submessage", r#"message_id=$message&msg_type=widget&content={"type":"vote","key":"canned,0","vote":1}"#, "YnnnAnnA"),
    ("GET", "/messages/{message_id}/read_receipts", "", "YYnnAnnA"),
    ("GET", "/messages/{message_id}/history", "", "YYnnAnnA"),
    ("POST", "/invites", "invitee_emails=other@example.com&stream_ids=[]", "YYYnAnYA"),
    ("GET", "/invites", "", "YYYYAYYA"),
    ("DELETE", "/invites/{invite_id}", "", "YnnnAnnA"),
    ("POST", "/invites/{invite_id}/resend", "", "YnnnAnnA"),
    ("POST", "/invites/multiuse", "stream_ids=[]", "YnnnAnYA"),
    ("DELETE", "/invites/multiuse/{invite_id}", "", "YnnnAnnA"),
    ("GET", "/registration/{key}", "", "nnnnnnnn"),
    ("POST", "/registration/{key}", "full_name=Newcomer&password=correct-horse-battery", "nnnnnnnn"),
    ("PATCH", "/users/me/profile_data", r#"data=[{"id": $field, "value": "v"}]"#, "YYYYAnnA"),
    ("DELETE", "/users/me/profile_data", "data=[$field]", "YYYYAnnA"),
];

/// A 1×1 PNG: custom emoji must be an image.
const PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 11, 73, 68, 65, 84, 120, 156, 99, 96, 0, 2, 0, 0, 5, 0, 1,
    122, 94, 171, 63, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// One caller: an account's e-mail and key (none for `none`), and the
/// realm's host.
struct Caller {
    authorization: Option<String>,
    host: String,
}

/// A seeded dev realm plus the objects a row's ids name.
struct Fixture {
    app: Arc<App>,
    service: Service,
    ids: BTreeMap<&'static str, String>,
    callers: Vec<Caller>,
    _dir: tempfile::TempDir,
}

/// A reply: its status and body.
struct Answer {
    status: u16,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn letter(&self) -> char {
        match self.status {
            200..=299 => 'Y',
            401 => 'A',
            400 | 403 | 404 => 'n',
            _ => '?',
        }
    }
}

fn basic(email: &str, key: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
    format!("Basic {token}")
}

/// `name=value&…` with every value percent-encoded.
fn form(pairs: &[(String, String)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        out.append_pair(name, value);
    }
    out.finish()
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let app =
            natter::testkit::in_process_dev_app(&dir.path().join("data"), &["--rate-limit", "off"]);
        let service = Service::new(Arc::clone(&app), Arc::new(Health::default()));
        let mut f = Fixture { app, service, ids: BTreeMap::new(), callers: Vec::new(), _dir: dir };
        f.callers = vec![
            f.caller("", "iago@natter.test"),
            f.caller("", "hamlet@natter.test"),
            f.caller("", "othello@natter.test"),
            f.caller("", "polonius@natter.test"),
            f.caller("", "cordelia@natter.test"),
            f.caller("", "helper-bot@natter.test"),
            f.caller("lear", "king@lear.test"),
            Caller { authorization: None, host: "localhost".into() },
        ];
        f.build();
        f
    }

    fn user(&self, subdomain: &str, email: &str) -> natter::state::User {
        let state = &self.app.state;
        let realm = state.realm_by_subdomain(subdomain).unwrap();
        state.user_by_email(realm.id, email).unwrap()
    }

    fn caller(&self, subdomain: &str, email: &str) -> Caller {
        let user = self.user(subdomain, email);
        let host = if subdomain.is_empty() {
            "localhost".into()
        } else {
            format!("{subdomain}.localhost")
        };
        Caller { authorization: Some(basic(email, &user.api_key)), host }
    }

    /// A request through the real service; `file` a multipart file part
    /// (name, content) sent as an upload route's spooled body.
    fn request(
        &self,
        caller: &Caller,
        method: &str,
        path: &str,
        params: &[(String, String)],
        file: Option<(&str, &[u8])>,
    ) -> Answer {
        let encoded = form(params);
        let (target, body) = match method {
            "GET" | "DELETE" if file.is_none() => {
                (format!("/api/v1{path}?{encoded}"), String::new())
            }
            _ => (format!("/api/v1{path}"), encoded),
        };
        let boundary = "matrixboundary";
        let (content_type, staged) = match file {
            None => ("application/x-www-form-urlencoded".to_owned(), None),
            Some((name, content)) => {
                use std::io::Write;
                let (staged, mut out) =
                    natter::files::Staged::create(self.app.files.staging()).unwrap();
                let mut multipart = String::new();
                for (name, value) in params {
                    multipart.push_str(&format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                    ));
                }
                multipart.push_str(&format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\r\n"
                ));
                out.write_all(multipart.as_bytes()).unwrap();
                out.write_all(content).unwrap();
                out.write_all(format!("\r\n--{boundary}--\r\n").as_bytes()).unwrap();
                drop(out);
                (format!("multipart/form-data; boundary={boundary}"), Some(staged))
            }
        };
        let mut headers = vec![
            httparse::Header { name: "Host", value: caller.host.as_bytes() },
            httparse::Header { name: "Content-Type", value: content_type.as_bytes() },
            httparse::Header { name: "User-Agent", value: b"matrix" },
        ];
        if let Some(authorization) = &caller.authorization {
            headers
                .push(httparse::Header { name: "Authorization", value: authorization.as_bytes() });
        }
        let request = conn::Request {
            method,
            target: &target,
            headers: &headers,
            body: if staged.is_some() { b"" } else { body.as_bytes() },
            spooled: staged.as_ref(),
            peer: None,
        };
        let reply = conn::Handler::handle(&self.service, &request, &mut Session::default());
        Answer { status: reply.status, body: String::from_utf8_lossy(&reply.body).into_owned() }
    }

    /// A request as the owner that must succeed; its reply.
    fn setup(&self, method: &str, path: &str, params: &[(&str, &str)]) -> Value {
        let params: Vec<(String, String)> =
            params.iter().map(|(n, v)| (n.to_string(), self.fill(v))).collect();
        let answer = self.request(&self.callers[0], method, &self.fill(path), &params, None);
        assert_eq!(answer.status, 200, "{method} {path}: {}", answer.body);
        answer.json()
    }

    fn id(&mut self, name: &'static str, value: impl ToString) {
        self.ids.insert(name, value.to_string());
    }

    /// `text` with each `$name` replaced by the fixture's value.
    fn fill(&self, text: &str) -> String {
        let mut out = text.to_owned();
        // Longest names first: `$user_group` before `$user`.
        let mut names: Vec<_> = self.ids.iter().collect();
        names.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
        for (name, value) in names {
            out = out.replace(&format!("${name}"), value);
        }
        out
    }

    /// The objects every row's ids name, made by Iago.
    fn build(&mut self) {
        let hamlet = self.user("", "hamlet@natter.test").id.0;
        let iago = self.user("", "iago@natter.test").id.0;
        self.id("hamlet", hamlet);
        self.id("iago", iago);
        self.id("othello", self.user("", "othello@natter.test").id.0);
        // Cordelia is the deactivated caller; Iago deactivates her.
        let cordelia = self.user("", "cordelia@natter.test").id.0;
        self.id("cordelia", cordelia);
        self.setup("DELETE", &format!("/users/{cordelia}"), &[]);
        self.setup(
            "POST",
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "matrix-hideout", "description": "d"}]"#),
                ("invite_only", "true"),
                ("principals", &format!("[{iago}, {hamlet}]")),
            ],
        );
        let channel = self.setup("GET", "/get_stream_id", &[("stream", "matrix-hideout")]);
        self.id("channel", &channel["stream_id"]);
        let upload = self.request(
            &self.callers[0],
            "POST",
            "/user_uploads",
            &[],
            Some(("hidden-file-41.txt", b"file body")),
        );
        assert_eq!(upload.status, 200, "upload: {}", upload.body);
        let url = upload.json()["url"].as_str().unwrap().to_owned();
        let parts: Vec<&str> = url.trim_start_matches("/user_uploads/").split('/').collect();
        for (name, part) in ["realm_id", "ab", "token", "filename"].into_iter().zip(parts) {
            self.id(name, part);
        }
        let sent = self.setup(
            "POST",
            "/messages",
            &[
                ("type", "stream"),
                ("to", "$channel"),
                ("topic", "secret-topic-41"),
                ("content", &format!("whispered-plans-41 [file]({url})")),
            ],
        );
        self.id("message", &sent["id"]);
        let reminder = self.setup(
            "POST",
            "/reminders",
            &[("message_id", "$message"), ("scheduled_delivery_timestamp", "4102444800")],
        );
        self.id("reminder", &reminder["reminder_id"]);
        let attachments = self.setup("GET", "/attachments", &[]);
        self.id("attachment", &attachments["attachments"][0]["id"]);
        let group = self.setup(
            "POST",
            "/user_groups/create",
            &[
                ("name", "matrix group"),
                ("description", "d"),
                ("members", &format!("[{iago}, {hamlet}]")),
            ],
        );
        self.id("user_group", &group["group_id"]);
        let queue = self.setup("POST", "/register", &[("event_types", r#"["message"]"#)]);
        self.id("queue", queue["queue_id"].as_str().unwrap());
        let scheduled = self.setup(
            "POST",
            "/scheduled_messages",
            &[
                ("type", "stream"),
                ("to", "$channel"),
                ("topic", "secret-topic-41"),
                ("content", "whispered-plans-41 later"),
                ("scheduled_delivery_timestamp", "4102444800"),
            ],
        );
        self.id("scheduled_message", &scheduled["scheduled_message_id"]);
        let bot =
            self.setup("POST", "/bots", &[("full_name", "Matrix Bot"), ("short_name", "matrix")]);
        self.id("bot", &bot["user_id"]);
        let hook = self.setup(
            "POST",
            "/bots",
            &[("full_name", "Matrix Hook"), ("short_name", "matrixhook"), ("bot_type", "2")],
        );
        self.id("webhook_key", hook["api_key"].as_str().unwrap());
        let drafts = self.setup(
            "POST",
            "/drafts",
            &[(
                "drafts",
                r#"[{"type": "stream", "to": [$channel], "topic": "secret-topic-41", "content": "whispered-plans-41 draft", "timestamp": 1700000000}]"#,
            )],
        );
        self.id("draft", &drafts["ids"][0]);
        let snippet = self.setup(
            "POST",
            "/saved_snippets",
            &[("title", "matrix snippet"), ("content", "snippet body")],
        );
        self.id("saved_snippet", &snippet["saved_snippet_id"]);
        self.setup(
            "POST",
            "/navigation_views",
            &[("fragment", "narrow/channel/9-matrix"), ("is_pinned", "true"), ("name", "Matrix")],
        );
        self.id("fragment", "narrow%2Fchannel%2F9-matrix");
        let emoji = self.request(
            &self.callers[0],
            "POST",
            "/realm/emoji/matrix_emoji",
            &[],
            Some(("emoji.png", PNG)),
        );
        let _ = emoji; // the route's own row checks it
        self.id("emoji", "matrix_emoji");
        let playground = self.setup(
            "POST",
            "/realm/playgrounds",
            &[
                ("name", "Matrix"),
                ("pygments_language", "Rust"),
                ("url_template", "https://play.example.com/?code={code}"),
            ],
        );
        self.id("playground", &playground["id"]);
        let filter = self.setup(
            "POST",
            "/realm/filters",
            &[("pattern", "#(?P<id>[0-9]+)"), ("url_template", "https://tracker.example.com/{id}")],
        );
        self.id("filter", &filter["id"]);
        let field = self.setup(
            "POST",
            "/realm/profile_fields",
            &[("name", "Matrix field"), ("field_type", "1")],
        );
        self.id("field", &field["id"]);
        self.setup(
            "POST",
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "matrix-square"}]"#)],
        );
        let group = self.setup(
            "POST",
            "/default_stream_groups/create",
            &[
                ("group_name", "matrix defaults"),
                ("description", "d"),
                ("stream_names", r#"["matrix-square"]"#),
            ],
        );
        let _ = group;
        let registered = self.setup(
            "POST",
            "/register",
            &[("fetch_event_types", r#"["default_stream_groups"]"#), ("event_types", "[]")],
        );
        self.id("default_group", &registered["realm_default_stream_groups"][0]["id"]);
        for name in ["matrix-plaza", "matrix-lobby"] {
            let subscriptions = format!(r#"[{{"name": "{name}"}}]"#);
            self.setup("POST", "/users/me/subscriptions", &[("subscriptions", &subscriptions)]);
            let id = self.setup("GET", "/get_stream_id", &[("stream", name)]);
            self.id(if name == "matrix-plaza" { "plaza" } else { "lobby" }, &id["stream_id"]);
        }
        self.setup("POST", "/default_streams", &[("stream_id", "$plaza")]);
        let subgroup = self.setup(
            "POST",
            "/user_groups/create",
            &[("name", "matrix subgroup"), ("description", "d"), ("members", "[]")],
        );
        self.id("subgroup", &subgroup["group_id"]);
        self.setup("POST", "/users/me/presence", &[("status", "active")]);
        let desdemona = self.user("", "desdemona@natter.test").id.0;
        self.id("desdemona", desdemona);
        self.setup("POST", &format!("/users/me/muted_users/{desdemona}"), &[]);
        self.setup(
            "POST",
            "/users/me/apns_device_token",
            &[("token", "feedc0de"), ("appid", "org.zulip.Zulip")],
        );
        self.setup("POST", "/users/me/android_gcm_reg_id", &[("token", "feedc0de")]);
        self.setup("POST", "/messages/$message/reactions", &[("emoji_name", "smile")]);
        self.setup(
            "POST",
            "/realm/domains",
            &[("domain", "matrix.example.com"), ("allow_subdomains", "false")],
        );
        self.id("domain", "matrix.example.com");
        self.setup(
            "POST",
            "/invites",
            &[("invitee_emails", "guest-to-be@example.com"), ("stream_ids", "[]")],
        );
        self.setup("POST", "/invites/multiuse", &[("stream_ids", "[]")]);
        let invites = self.setup("GET", "/invites", &[]);
        for invite in invites["invites"].as_array().unwrap() {
            let name = if invite["is_multiuse"] == true { "multiuse_invite" } else { "invite" };
            self.id(name, &invite["id"]);
        }
    }
}

fn collect_answers(row: &(&str, &str, &str, &str)) -> (String, Vec<String>) {
    let (method, pattern, params, _) = *row;
    let f = Fixture::new();
    let path = pattern
        .split('/')
        .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => f.path_value(method, pattern, name),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/");
    let params: Vec<(String, String)> = params
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            (name.to_owned(), f.fill(value))
        })
        .collect();
    let mut letters = vec!['?'; CALLERS.len()];
    let mut problems = Vec::new();
    let file = pattern_is_upload(method, pattern).then_some(("upload.png", PNG));
    // The owner last: the others' attempts must leave the objects as they were.
    for i in (1..CALLERS.len()).chain([0]) {
        let caller = i.to_string();
        let path = path.replace("$caller", &caller);
        let params: Vec<(String, String)> =
            params.iter().map(|(n, v)| (n.clone(), v.replace("$caller", &caller))).collect();
        let answer = f.request(&f.callers[i], method, &path, &params, file);
        letters[i] = answer.letter();
        if i == 0 && answer.letter() != 'Y' && std::env::var_os("MATRIX_PRINT").is_some() {
            println!("    // owner: {} {}", answer.status, answer.body);
        }
        if answer.letter() == '?' {
            problems.push(format!(
                "{method} {pattern} as {}: {} {}",
                CALLERS[i], answer.status, answer.body
            ));
        }
        if answer.letter() == 'Y' && OUTSIDERS.contains(&i) {
            // Text the caller sent itself (a channel name of its own
            // realm) is no leak.
            let sent = |secret: &str| params.iter().any(|(_, v)| v.contains(secret));
            for secret in SECRETS.into_iter().filter(|s| !sent(s)) {
                if answer.body.contains(secret) {
                    problems.push(format!(
                        "{method} {pattern} as {}: the reply leaks {secret:?}: {}",
                        CALLERS[i], answer.body
                    ));
                }
            }
        }
    }
    (letters.into_iter().collect(), problems)
}

fn pattern_is_upload(method: &str, pattern: &str) -> bool {
    method == "POST"
        && matches!(pattern, "/user_uploads" | "/realm/emoji/{emoji_name}" | "/users/me/avatar")
}

impl Fixture {
    /// The value of a pattern's `{name}` segment.
    fn path_value(&self, method: &str, pattern: &str, name: &str) -> String {
        let key = match (name, method) {
            // A new emoji per caller; a mute, a token, a reaction that exist.
            ("emoji_name", "POST") => return "fresh_$caller".to_owned(),
            ("integration", _) => return "json".to_owned(),
            ("muted_user_id", "DELETE") => "desdemona",
            ("user_id_or_email", _) => "iago",
            ("user_id", _) if pattern.ends_with("/reactivate") => "cordelia",
            ("invite_id", _) if pattern.contains("multiuse") => "multiuse_invite",
            (name, _) => name,
        };
        let key = match key {
            "message_id" => "message",
            "stream_id" => "channel",
            "user_id" | "user_id_or_email" => "hamlet",
            "muted_user_id" => "othello",
            "user_group_id" => "user_group",
            "bot_id" => "bot",
            "draft_id" => "draft",
            "saved_snippet_id" => "saved_snippet",
            "scheduled_message_id" => "scheduled_message",
            "attachment_id" => "attachment",
            "reminder_id" => "reminder",
            "emoji_name" => "emoji",
            "filter_id" => "filter",
            "playground_id" => "playground",
            "field_id" => "field",
            "invite_id" => "invite",
            "group_id" => "default_group",
            // No such confirmation or registration key: the routes' rows
            // check who gets which refusal.
            "key" => return "0123456789abcdef".to_owned(),
            other => other,
        };
        self.ids.get(key).cloned().unwrap_or_else(|| panic!("no fixture value for {{{name}}}"))
    }
}

#[test]
fn every_route_has_one_row() {
    let routes: BTreeSet<(&str, &str)> = ROUTES.iter().map(|r| (r.method, r.pattern)).collect();
    let mut rows = BTreeSet::new();
    for (method, pattern, _, _) in ROWS {
        assert!(rows.insert((*method, *pattern)), "two rows for {method} {pattern}");
    }
    let missing: Vec<_> = routes.difference(&rows).collect();
    let extra: Vec<_> = rows.difference(&routes).collect();
    assert!(missing.is_empty(), "routes without a row in ROWS: {missing:?}");
    assert!(extra.is_empty(), "rows for routes that do not exist: {extra:?}");
}

#[test]
fn every_route_answers_each_caller_as_its_row_says() {
    let mut mismatches = Vec::new();
    for row in ROWS {
        let (got, problems) = collect_answers(row);
        mismatches.extend(problems);
        if std::env::var_os("MATRIX_PRINT").is_some() {
            println!("    ({:?}, {:?}, {:?}, \"{got}\"),", row.0, row.1, row.2);
        }
        if got != row.3 {
            mismatches.push(format!("{} {}: expected {}, got {got}", row.0, row.1, row.3));
        }
    }
    assert!(mismatches.is_empty(), "authorization matrix differs:\n{}", mismatches.join("\n"));
}
