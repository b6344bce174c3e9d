//! Incoming webhooks, `POST /api/v1/external/{integration}`: the bot's key,
//! where messages go, the event filters, Zulip's webhook error codes, and
//! each integration on payloads in `tests/fixtures/webhooks/`.

use serde_json::{json, Value};

use crate::util::{Client, Response, TestServer, ACME};

const HAMLET: &str = "hamlet@natter.test"; // member; in general, Denmark
const IAGO: &str = "iago@natter.test"; // administrator
const GENERIC_BOT: &str = "helper-bot@natter.test"; // a generic bot
const NOTIFICATION_BOT: &str = "notification-bot@zulip.com";

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/webhooks/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A new incoming-webhook bot owned by `owner`: (email, api key).
fn webhook_bot(owner: &Client, short_name: &str) -> (String, String) {
    let bot = owner
        .post(
            "/bots",
            &[
                ("full_name", &format!("{short_name} hook")),
                ("short_name", short_name),
                ("bot_type", "2"),
            ],
        )
        .ok();
    (bot["email"].as_str().unwrap().to_owned(), bot["api_key"].as_str().unwrap().to_owned())
}

/// `POST /api/v1/external/<integration>?<query>` with a JSON body and
/// extra headers.
fn hook(
    c: &Client,
    integration: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in query {
        q.append_pair(k, v);
    }
    let mut head = format!(
        "POST /api/v1/external/{integration}?{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: Hookshot/1.0\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        q.finish(),
        c.host.as_deref().unwrap_or(&c.addr),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    c.raw(format!("{head}\r\n{body}").as_bytes())
}

/// The newest message `c` can see, with its raw Markdown.
fn newest(c: &Client) -> Value {
    let params = [
        ("anchor", "newest"),
        ("num_before", "1"),
        ("num_after", "0"),
        ("apply_markdown", "false"),
    ];
    c.get("/messages", &params).ok()["messages"][0].clone()
}

/// The newest messages `c` can see in `channel`, oldest first.
fn in_channel(c: &Client, channel: &str, n: usize) -> Vec<Value> {
    let narrow = json!([["stream", channel]]).to_string();
    let n = n.to_string();
    let params = [
        ("anchor", "newest"),
        ("num_before", &n),
        ("num_after", "0"),
        ("narrow", &narrow),
        ("apply_markdown", "false"),
    ];
    c.get("/messages", &params).ok()["messages"].as_array().unwrap().clone()
}

fn newest_id(c: &Client) -> u64 {
    newest(c)["id"].as_u64().unwrap()
}

#[test]
fn json_goes_to_the_owner_without_a_stream_and_to_a_channel_with_one() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (bot, key) = webhook_bot(&hamlet, "jsonhook");
    let body = fixture("json_any");

    // No stream: a direct message to the owner, from the bot.
    hook(&hamlet, "json", &[("api_key", &key)], &[], &body).ok();
    let dm = newest(&hamlet);
    assert_eq!(dm["type"], "private");
    assert_eq!(dm["sender_email"], bot.as_str());
    assert_eq!(dm["client"], "ZulipJsonWebhook");
    let expected = "```json\n{\n  \"count\": 3,\n  \"items\": [\n    \"a\",\n    \"b\"\n  ],\n  \"status\": \"ok\"\n}\n```";
    assert_eq!(dm["content"], expected);

    // A channel by name, the integration's topic; by id, the URL's topic.
    hook(&hamlet, "json", &[("api_key", &key), ("stream", "Denmark")], &[], &body).ok();
    let m = newest(&hamlet);
    assert_eq!(
        (m["display_recipient"].as_str(), m["subject"].as_str()),
        (Some("Denmark"), Some("JSON"))
    );
    let denmark = crate::util::channel_id(&hamlet, "Denmark").to_string();
    let query = [("api_key", key.as_str()), ("stream", &denmark), ("topic", "hooks")];
    hook(&hamlet, "json", &query, &[], "[1, 2]").ok();
    let m = newest(&hamlet);
    assert_eq!(
        (m["display_recipient"].as_str(), m["subject"].as_str()),
        (Some("Denmark"), Some("hooks"))
    );
    assert_eq!(m["content"], "```json\n[\n  1,\n  2\n]\n```");
    assert_eq!(m["sender_email"], bot.as_str());

    // Not JSON.
    let before = newest_id(&hamlet);
    let e = hook(&hamlet, "json", &[("api_key", &key)], &[], "{nope").err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Malformed JSON");
    assert_eq!(newest_id(&hamlet), before);
}

#[test]
fn keys_other_than_an_incoming_webhook_bots_are_refused() {
    let mut server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let body = fixture("json_any");
    let anon = server.anonymous();
    let before = newest_id(&hamlet);
    // No key, a wrong key.
    let e = hook(&anon, "json", &[], &[], &body).err(400, "REQUEST_VARIABLE_MISSING");
    assert_eq!(e["msg"], "Missing 'api_key' argument");
    hook(&anon, "json", &[("api_key", "not-a-key")], &[], &body).err(401, "INVALID_API_KEY");
    // A person's key and a generic bot's key.
    for email in [HAMLET, GENERIC_BOT] {
        let key = server.account(email).key;
        let e = hook(&anon, "json", &[("api_key", &key)], &[], &body).err(401, "UNAUTHORIZED");
        assert_eq!(e["msg"], "This API is only available to incoming webhook bots.");
    }
    // A deactivated webhook bot.
    let gone = hamlet
        .post("/bots", &[("full_name", "Gone hook"), ("short_name", "gone"), ("bot_type", "2")])
        .ok();
    let key = gone["api_key"].as_str().unwrap();
    hamlet.request("DELETE", &format!("/bots/{}", gone["user_id"]), &[]).ok();
    hook(&anon, "json", &[("api_key", key)], &[], &body).err(401, "USER_DEACTIVATED");
    // An unknown integration.
    let (_, key) = webhook_bot(&hamlet, "lost");
    hook(&anon, "nosuch", &[("api_key", &key)], &[], &body).err(404, "NOT_FOUND");
    assert_eq!(newest_id(&hamlet), before);

    // Another realm's webhook bot: its key is unknown here.
    server.stop();
    let boss_key = server.realm_create_ok(&ACME);
    server.restart_with_args(vec![]);
    let boss =
        server.anonymous().with_auth("boss@acme.test", &boss_key).with_host("acme.localhost");
    let (_, acme_key) = webhook_bot(&boss, "acmehook");
    let anon = server.anonymous();
    hook(&anon, "json", &[("api_key", &acme_key)], &[], &body).err(401, "INVALID_API_KEY");
    // In its own realm it works.
    hook(&anon.with_host("acme.localhost"), "json", &[("api_key", &acme_key)], &[], &body).ok();
    assert_eq!(newest(&boss)["content"].as_str().map(|c| c.starts_with("```json")), Some(true));
}

#[test]
fn a_missing_channel_sends_nothing_and_tells_the_owner() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (bot, key) = webhook_bot(&hamlet, "lostbot");
    let body = fixture("json_any");
    hook(&hamlet, "json", &[("api_key", &key), ("stream", "nowhere")], &[], &body).ok();
    let notice = newest(&hamlet);
    assert_eq!(notice["sender_email"], NOTIFICATION_BOT);
    assert_eq!(notice["type"], "private");
    assert_eq!(
        notice["content"],
        format!(
            "Your bot `{bot}` tried to send a message to channel #**nowhere**, but that channel \
             does not exist. Click [here](#channels/new) to create it."
        )
    );
    hook(&hamlet, "json", &[("api_key", &key), ("stream", "987654")], &[], &body).ok();
    assert_eq!(
        newest(&hamlet)["content"],
        format!(
            "Your bot `{bot}` tried to send a message to channel ID 987654, but there is no \
             channel with that ID."
        )
    );
    // A private channel the bot is not in is "missing" too: its owner is
    // not told anything about it.
    let iago = server.client(IAGO);
    iago.post(
        "/users/me/subscriptions",
        &[("subscriptions", r#"[{"name": "secret"}]"#), ("invite_only", "true")],
    )
    .ok();
    hook(&hamlet, "json", &[("api_key", &key), ("stream", "secret")], &[], &body).ok();
    assert!(newest(&hamlet)["content"].as_str().unwrap().contains("#**secret**, but that channel"));
    assert!(in_channel(&iago, "secret", 5).is_empty());
}

#[test]
fn a_channel_the_bot_may_not_post_in_is_refused() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let iago_id = crate::util::user_id(&server, IAGO);
    let group = json!({"direct_members": [iago_id], "direct_subgroups": []}).to_string();
    iago.post(
        "/users/me/subscriptions",
        &[("subscriptions", r#"[{"name": "announce"}]"#), ("can_send_message_group", &group)],
    )
    .ok();
    let (_, key) = webhook_bot(&iago, "announcer");
    let query = [("api_key", key.as_str()), ("stream", "announce")];
    let e = hook(&iago, "json", &query, &[], &fixture("json_any")).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Not authorized to send to channel 'announce'");
    assert!(in_channel(&iago, "announce", 5).is_empty());
}

#[test]
fn github_events_have_zulips_topics() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "octo");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    let send = |event: &str, name: &str| {
        hook(&hamlet, "github", &query, &[("X-GitHub-Event", event)], &fixture(name)).ok();
        let m = newest(&hamlet);
        assert_eq!(m["client"], "ZulipGitHubWebhook");
        (m["subject"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        send("ping", "github_ping"),
        ("hello-world".into(), "GitHub webhook has been successfully configured by mona.".into())
    );
    let (topic, content) = send("push", "github_push");
    assert_eq!(topic, "hello-world / main");
    assert_eq!(
        content,
        "mona [pushed](https://github.com/octo-org/hello-world/compare/9049f1265b7d...0d1a26e67d8f) \
         2 commits to branch main.\n\n\
         * Fix the greeting ([0d1a26e67d8](https://github.com/octo-org/hello-world/commit/0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c))\n\
         * Add a farewell ([a10867b14bb](https://github.com/octo-org/hello-world/commit/a10867b14bb761a232cd80139fbd4c0d33264240))"
    );
    assert_eq!(
        send("pull_request", "github_pull_request_opened"),
        (
            "hello-world / PR #42 Say goodbye too".into(),
            "mona opened [PR #42](https://github.com/octo-org/hello-world/pull/42) from \
             `octo-org:farewell` to `octo-org:main`:\n\n~~~ quote\nThis adds a farewell message.\n~~~"
                .into()
        )
    );
    assert_eq!(
        send("pull_request", "github_pull_request_merged").1,
        "hubot merged [PR #42](https://github.com/octo-org/hello-world/pull/42)."
    );
    assert_eq!(
        send("issues", "github_issues_opened"),
        (
            "hello-world / issue #7 Greeting is doubled".into(),
            "hubot opened [issue #7](https://github.com/octo-org/hello-world/issues/7):\n\n\
             ~~~ quote\nIt prints hello twice.\n~~~"
                .into()
        )
    );
    assert_eq!(
        send("issue_comment", "github_issue_comment_created"),
        (
            "hello-world / PR #42 Say goodbye too".into(),
            "hubot [commented](https://github.com/octo-org/hello-world/pull/42#issuecomment-99) \
             on [PR #42](https://github.com/octo-org/hello-world/pull/42):\n\n\
             ~~~ quote\nLooks good to me.\n~~~"
                .into()
        )
    );
    assert_eq!(
        send("release", "github_release_published"),
        (
            "hello-world".into(),
            "mona published release [Farewells](https://github.com/octo-org/hello-world/releases/tag/v1.2.0) \
             for tag v1.2.0."
                .into()
        )
    );
    assert_eq!(
        send("workflow_run", "github_workflow_run_completed"),
        (
            "hello-world / CI".into(),
            "[CI](https://github.com/octo-org/hello-world/actions/runs/30433642) workflow run \
             #562 on branch `main` (push) completed: :cross_mark: **failure**."
                .into()
        )
    );
    // An action Zulip ignores: accepted, no message.
    let before = newest_id(&hamlet);
    let labeled = fixture("github_pull_request_labeled");
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "pull_request")], &labeled).ok();
    assert_eq!(newest_id(&hamlet), before);
}

#[test]
fn github_errors_are_zulips() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "octo");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    let before = newest_id(&hamlet);
    let push = fixture("github_push");
    let e = hook(&hamlet, "github", &query, &[], &push).err(400, "MISSING_HTTP_EVENT_HEADER");
    assert_eq!(e["msg"], "Missing the HTTP event header 'X-GitHub-Event'");
    let e = hook(&hamlet, "github", &query, &[("X-GitHub-Event", "star")], &push)
        .err(200, "UNSUPPORTED_WEBHOOK_EVENT_TYPE");
    assert_eq!(
        e["msg"],
        "The 'star' event isn't currently supported by the GitHub webhook; ignoring"
    );
    let e = hook(&hamlet, "github", &query, &[("X-GitHub-Event", "push")], "[1]")
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    assert_eq!(e["msg"], "Unable to parse request: Did GitHub generate this event?");
    // A pull request event without its pull request, or without a repository.
    hook(
        &hamlet,
        "github",
        &query,
        &[("X-GitHub-Event", "pull_request")],
        r#"{"action": "opened"}"#,
    )
    .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "ping")], "{}")
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    let no_repo = r#"{"ref": "refs/heads/main", "commits": [], "sender": {"login": "mona"}}"#;
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "push")], no_repo)
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    let no_comment =
        r#"{"action": "created", "issue": {"number": 1}, "repository": {"name": "r"}}"#;
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "issue_comment")], no_comment)
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    assert_eq!(newest_id(&hamlet), before);
}

#[test]
fn only_and_exclude_events_filter_with_wildcards() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "octo");
    let push = fixture("github_push");
    let pr = fixture("github_pull_request_opened");
    let post = |filters: &[(&str, &str)], event: &str, body: &str| -> bool {
        let before = newest_id(&hamlet);
        let mut query = vec![("api_key", key.as_str()), ("stream", "Denmark")];
        query.extend_from_slice(filters);
        hook(&hamlet, "github", &query, &[("X-GitHub-Event", event)], body).ok();
        newest_id(&hamlet) != before
    };
    let only_pulls = [("only_events", r#"["pull_*"]"#)];
    assert!(!post(&only_pulls, "push", &push));
    assert!(post(&only_pulls, "pull_request", &pr));
    let only_push = [("only_events", r#"["push_commits", "issues"]"#)];
    assert!(post(&only_push, "push", &push));
    assert!(!post(&only_push, "pull_request", &pr));
    let no_push = [("exclude_events", r#"["push*"]"#)];
    assert!(!post(&no_push, "push", &push));
    assert!(post(&no_push, "pull_request", &pr));
    // Both: in the list and not excluded.
    let both = [("only_events", r#"["*"]"#), ("exclude_events", r#"["*request"]"#)];
    assert!(post(&both, "push", &push));
    assert!(!post(&both, "pull_request", &pr));
    // A filter that is not a list of strings.
    let query = [("api_key", key.as_str()), ("only_events", r#""push""#)];
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "push")], &push).err(400, "BAD_REQUEST");
    let query = [("api_key", key.as_str()), ("exclude_events", "[1]")];
    hook(&hamlet, "github", &query, &[("X-GitHub-Event", "push")], &push).err(400, "BAD_REQUEST");
}

#[test]
fn slack_incoming_converts_blocks_attachments_and_markup() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "slacky");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    hook(&hamlet, "slack_incoming", &query, &[], &fixture("slack_incoming_blocks")).ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "deploys");
    assert_eq!(m["client"], "ZulipSlackIncomingWebhook");
    assert_eq!(
        m["content"],
        "## Deploy finished\n\n\
         **web-3** is *live*, see [run 88](https://deploy.example.com/runs/88)\n~~old~~ v1.1\nv1.2\n\n\
         ---\n\nby deploybot\n\n\
         ## [Changelog](https://deploy.example.com/changes)\nTwo fixes\n**Duration**: 3m"
    );
    // Text only, with its icon; the URL's topic wins over the default.
    let query = [("api_key", key.as_str()), ("stream", "Denmark"), ("topic", "ci")];
    hook(&hamlet, "slack_incoming", &query, &[], &fixture("slack_incoming_text")).ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "ci");
    assert_eq!(m["content"], ":tada: Build **passed** on [build 12](https://ci.example.com/b/12)");
    // As Slack's form encoding: `payload=<json>`, the key in the form.
    let form =
        [("api_key", key.as_str()), ("stream", "Denmark"), ("payload", r#"{"text": "_form_"}"#)];
    hamlet.post("/external/slack_incoming", &form).ok();
    let m = newest(&hamlet);
    // "(no topic)" is the empty topic, shown with the realm's name for it.
    assert_eq!(
        (m["subject"].as_str(), m["content"].as_str()),
        (Some("general chat"), Some("*form*"))
    );
    // Nothing to say: accepted, no message.
    let before = newest_id(&hamlet);
    hook(&hamlet, "slack_incoming", &query, &[], r#"{"text": "  "}"#).ok();
    assert_eq!(newest_id(&hamlet), before);
    hook(&hamlet, "slack_incoming", &query, &[], r#""text""#).err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
}

#[test]
fn alertmanager_groups_alerts_by_name_and_status() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "prom");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    hook(&hamlet, "alertmanager", &query, &[], &fixture("alertmanager_mixed")).ok();
    let messages = in_channel(&hamlet, "Denmark", 2);
    let got: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["subject"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "HighLatency",
                ":alert: **FIRING**\n\
                 * web-1:9100 ([graph](http://prometheus.example.com/graph?g0.expr=latency&g0.tab=0))\n\
                 * web-2:9100 ([graph](http://prometheus.example.com/graph?g0.expr=latency&g0.tab=0))"
            ),
            (
                "DiskFull",
                ":squared_ok: **Resolved** db-1:9100 ([graph](http://prometheus.example.com/graph?g0.expr=disk&g0.tab=0))"
            ),
        ]
    );
    // `name` and `desc` pick other fields (labels, else annotations).
    let query = [
        ("api_key", key.as_str()),
        ("stream", "Denmark"),
        ("desc", "summary"),
        ("name", "instance"),
    ];
    hook(&hamlet, "alertmanager", &query, &[], &fixture("alertmanager_mixed")).ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "db-1:9100");
    assert!(m["content"].as_str().unwrap().starts_with(":squared_ok: **Resolved** disk 95% full"));
    hook(&hamlet, "alertmanager", &query, &[], r#"{"status": "firing"}"#)
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
}

#[test]
fn grafana_reads_unified_and_legacy_alerts() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "graf");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    hook(&hamlet, "grafana", &query, &[], &fixture("grafana_unified_firing")).ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "[FIRING:1] CPU high Servers");
    assert_eq!(
        m["content"],
        ":alert: **FIRING**\n\n* **CPU high**: CPU above 90% for 5m \
         ([source](https://grafana.example.com/alerting/grafana/cpu/view))"
    );
    hook(&hamlet, "grafana", &query, &[], &fixture("grafana_legacy_alerting")).ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "[Alerting] Test notification");
    assert_eq!(
        m["content"],
        "[Test notification](https://grafana.example.com/d/abc/dash?panelId=1) is **alerting**.\n\n\
         ~~~ quote\nSomeone is testing the alert notification within Grafana.\n~~~\n\
         * **High value**: 100"
    );
    // The status is the event name the filters see.
    let before = newest_id(&hamlet);
    let only_resolved = [
        ("api_key", key.as_str()),
        ("stream", "Denmark"),
        ("only_events", r#"["resolved", "ok"]"#),
    ];
    hook(&hamlet, "grafana", &only_resolved, &[], &fixture("grafana_unified_firing")).ok();
    hook(&hamlet, "grafana", &only_resolved, &[], &fixture("grafana_legacy_alerting")).ok();
    assert_eq!(newest_id(&hamlet), before);
    hook(&hamlet, "grafana", &query, &[], r#"{"title": "x"}"#)
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
}

#[test]
fn gitlab_events_have_zulips_topics() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "tanuki");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    let send = |event: &str, name: &str| {
        hook(&hamlet, "gitlab", &query, &[("X-Gitlab-Event", event)], &fixture(name)).ok();
        let m = newest(&hamlet);
        assert_eq!(m["client"], "ZulipGitlabWebhook");
        (m["subject"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        send("Push Hook", "gitlab_push"),
        (
            "Diaspora / main".into(),
            "Jane Doe [pushed](https://gitlab.example.com/mike/diaspora/-/compare/\
             95790bf891e76fee5e1747ab589903a6a1f80f22...da1560886d4f094c3e6c9ef40349f7d38b5d27d7) \
             1 commit to branch main.\n\n* fixed readme ([da1560886d4](https://gitlab.example.com/mike/\
             diaspora/-/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7))"
                .into()
        )
    );
    assert_eq!(
        send("Merge Request Hook", "gitlab_merge_request_open"),
        (
            "Gitlab Test / MR #1 MS-Viewport".into(),
            "Administrator created [MR #1](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1) \
             from `ms-viewport` to `master`:\n\n~~~ quote\nAdds the viewport meta tag.\n~~~"
                .into()
        )
    );
    assert_eq!(
        send("Issue Hook", "gitlab_issue_close"),
        (
            "Gitlab Test / issue #23 New API: create/update/delete file".into(),
            "Administrator closed [issue #23](https://gitlab.example.com/gitlabhq/gitlab-test/-/issues/23)."
                .into()
        )
    );
    let (topic, content) = send("Note Hook", "gitlab_note_merge_request");
    assert_eq!(topic, "Gitlab Test / MR #1 Tempora et eos debitis quae laborum et.");
    assert_eq!(
        content,
        "Administrator [commented](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1#note_1244) \
         on [MR #1](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1):\n\n\
         ~~~ quote\nThis MR needs work.\n~~~"
    );
    assert_eq!(
        send("Pipeline Hook", "gitlab_pipeline_failed"),
        (
            "Gitlab Test / master".into(),
            "[Pipeline (31)](https://gitlab.example.com/gitlab-org/gitlab-test/-/pipelines/31) changed \
             status to failed with build(s):\n\
             * [compile](https://gitlab.example.com/gitlab-org/gitlab-test/-/jobs/380) - success\n\
             * [rspec](https://gitlab.example.com/gitlab-org/gitlab-test/-/jobs/381) - failed."
                .into()
        )
    );
    // Filters see "Merge Request Hook <action>".
    let before = newest_id(&hamlet);
    let filtered = [
        ("api_key", key.as_str()),
        ("stream", "Denmark"),
        ("exclude_events", r#"["Merge Request Hook *"]"#),
    ];
    let mr = fixture("gitlab_merge_request_open");
    hook(&hamlet, "gitlab", &filtered, &[("X-Gitlab-Event", "Merge Request Hook")], &mr).ok();
    assert_eq!(newest_id(&hamlet), before);
    // Errors.
    hook(&hamlet, "gitlab", &query, &[], &mr).err(400, "MISSING_HTTP_EVENT_HEADER");
    hook(&hamlet, "gitlab", &query, &[("X-Gitlab-Event", "Member Hook")], &mr)
        .err(200, "UNSUPPORTED_WEBHOOK_EVENT_TYPE");
    hook(
        &hamlet,
        "gitlab",
        &query,
        &[("X-Gitlab-Event", "Issue Hook")],
        r#"{"project": {"name": "p"}}"#,
    )
    .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    assert_eq!(newest_id(&hamlet), before);
}

#[test]
fn a_topic_in_the_url_links_the_project_in_gitlab_and_titles_issues_in_both() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "fixedtopic");
    let send = |integration: &str, header: (&str, &str), name: &str, topic: Option<&str>| {
        let mut query = vec![("api_key", key.as_str()), ("stream", "Denmark")];
        query.extend(topic.map(|t| ("topic", t)));
        hook(&hamlet, integration, &query, &[header], &fixture(name)).ok();
        let m = newest(&hamlet);
        (m["subject"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned())
    };
    let issue = ("X-Gitlab-Event", "Issue Hook");
    let link = "[issue #23](https://gitlab.example.com/gitlabhq/gitlab-test/-/issues/23)";
    assert_eq!(
        send("gitlab", issue, "gitlab_issue_close", None),
        (
            "Gitlab Test / issue #23 New API: create/update/delete file".into(),
            format!("Administrator closed {link}.")
        )
    );
    assert_eq!(
        send("gitlab", issue, "gitlab_issue_close", Some("notifications")),
        (
            "notifications".into(),
            "[[Gitlab Test](https://gitlab.example.com/gitlabhq/gitlab-test)] Administrator closed \
             [issue #23 New API: create/update/delete file]\
             (https://gitlab.example.com/gitlabhq/gitlab-test/-/issues/23)."
                .into()
        )
    );
    let (topic, content) = send(
        "gitlab",
        ("X-Gitlab-Event", "Pipeline Hook"),
        "gitlab_pipeline_failed",
        Some("builds"),
    );
    assert_eq!(topic, "builds");
    assert!(
        content.starts_with(
            "[[Gitlab Test](https://gitlab.example.com/gitlab-org/gitlab-test)] [Pipeline (31)]"
        ),
        "{content}"
    );
    // GitHub names the issue in full; it adds no repository link.
    let (topic, content) =
        send("github", ("X-GitHub-Event", "issues"), "github_issues_opened", Some("notifications"));
    assert_eq!(topic, "notifications");
    let (plain_topic, plain) =
        send("github", ("X-GitHub-Event", "issues"), "github_issues_opened", None);
    assert_eq!(plain_topic, "hello-world / issue #7 Greeting is doubled");
    assert!(plain.contains("[issue #7]("), "{plain}");
    assert!(content.contains("[issue #7 Greeting is doubled]("), "{content}");
    assert_eq!(content.replace("[issue #7 Greeting is doubled](", "[issue #7]("), plain);
}

#[test]
fn sentry_issues_and_event_alerts() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (_, key) = webhook_bot(&hamlet, "sentinel");
    let query = [("api_key", key.as_str()), ("stream", "Denmark")];
    hook(
        &hamlet,
        "sentry",
        &query,
        &[("Sentry-Hook-Resource", "issue")],
        &fixture("sentry_issue_created"),
    )
    .ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "ZeroDivisionError: division by zero");
    assert_eq!(
        m["content"],
        "**New issue created:** [ZeroDivisionError: division by zero]\
         (https://sentry.example.com/organizations/acme/issues/1170820242/)\n\
         ```quote\n**level:** error\n**culprit:** app.views in divide\n**shortId:** NATTER-9\n```"
    );
    hook(
        &hamlet,
        "sentry",
        &query,
        &[("Sentry-Hook-Resource", "event_alert")],
        &fixture("sentry_event_alert"),
    )
    .ok();
    let m = newest(&hamlet);
    assert_eq!(m["subject"], "TypeError: cannot read properties of undefined");
    assert_eq!(
        m["content"],
        "**New error event:** [TypeError: cannot read properties of undefined]\
         (https://sentry.example.com/organizations/acme/issues/1170820243/events/d3f5d7d1b6f04f6a8fba3e7f4e6b9a11/)\n\
         ```quote\n**culprit:** render(app/main)\n**environment:** production\n**platform:** javascript\n```\n\
         Triggered by the alert rule **Page on new errors**."
    );
    let before = newest_id(&hamlet);
    hook(&hamlet, "sentry", &query, &[("Sentry-Hook-Resource", "metric_alert")], "{}")
        .err(200, "UNSUPPORTED_WEBHOOK_EVENT_TYPE");
    hook(
        &hamlet,
        "sentry",
        &query,
        &[("Sentry-Hook-Resource", "issue")],
        r#"{"action": "created"}"#,
    )
    .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    hook(&hamlet, "sentry", &query, &[], r#"{"action": "created"}"#)
        .err(400, "ANOMALOUS_WEBHOOK_PAYLOAD");
    let only_issues =
        [("api_key", key.as_str()), ("stream", "Denmark"), ("only_events", r#"["issue"]"#)];
    hook(
        &hamlet,
        "sentry",
        &only_issues,
        &[("Sentry-Hook-Resource", "event_alert")],
        &fixture("sentry_event_alert"),
    )
    .ok();
    assert_eq!(newest_id(&hamlet), before);
}
