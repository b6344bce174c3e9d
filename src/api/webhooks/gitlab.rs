//! `gitlab`: GitLab's project webhooks, the event named by the
//! `X-Gitlab-Event` header. Topics as Zulip's: `<project> / <branch>` for
//! pushes, pipelines and jobs, `<project> / MR #<iid> <title>` and
//! `<project> / issue #<iid> <title>` for merge requests, issues and their
//! comments, `<project>` for tags, commit comments, wiki pages and the
//! test GitLab sends from the hook's settings.
//!
//! When the URL names the topic (`topic=`), each message starts with a
//! link to the project (`[[<project>](<homepage>)] …`) and names the
//! issue or merge request by number and title, so the message tells what
//! the topic would have.
//!
//! Event names the filters see: `Push Hook`, `Tag Push Hook`,
//! `Merge Request Hook <action>`, `Issue Hook <action>`,
//! `Note Hook <noteable type>`, `Pipeline Hook`, `Job Hook` (also sent as
//! `Build Hook` by older GitLabs), `Wiki Page Hook <action>`, `Test Hook`.

use serde_json::Value;

use super::{after_link, item_link, quoted, text, Notification, Request};
use crate::error::ApiResult;

/// The header naming the event.
const EVENT_HEADER: &str = "X-Gitlab-Event";

/// The message for one GitLab delivery.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let header = request.event_header(EVENT_HEADER)?;
    let p = request.json_object()?;
    // Job payloads name the project under `repository` only.
    let project = match text(&p, &["project", "name"]) {
        name if name.is_empty() => text(&p, &["repository", "name"]),
        name => name,
    };
    if project.is_empty() {
        return Err(request.anomalous());
    }
    let user = match text(&p, &["user", "name"]) {
        name if name.is_empty() => text(&p, &["user_name"]),
        name => name,
    };
    let at = At { project: &project, user: &user, titled: request.topic_given };
    let made = match header.as_str() {
        "Push Hook" => push(&p, &at),
        "Tag Push Hook" => tag_push(&p, &at),
        "Merge Request Hook" => merge_request(&p, &at),
        "Issue Hook" | "Confidential Issue Hook" => issue(&p, &at),
        "Note Hook" | "Confidential Note Hook" => note(&p, &at),
        "Pipeline Hook" => pipeline(&p, &at),
        "Job Hook" | "Build Hook" => job(&p, &at, &header),
        "Wiki Page Hook" => wiki_page(&p, &at),
        "Test Hook" => Made::Message(
            "Test Hook".to_owned(),
            project.clone(),
            format!("Webhook for **{project}** has been configured successfully! :tada:"),
        ),
        other => return Err(request.unsupported(other)),
    };
    match made {
        Made::Message(event, topic, body) => {
            let body = if request.topic_given {
                format!("[[{project}]({})] {body}", homepage(&p))
            } else {
                body
            };
            Ok(vec![Notification { event: Some(event), topic, body }])
        }
        Made::Nothing => Ok(Vec::new()),
        Made::Anomalous => Err(request.anomalous()),
    }
}

/// What every event's message reads beside its payload.
struct At<'a> {
    /// The project's name.
    project: &'a str,
    /// Who did it.
    user: &'a str,
    /// Whether the URL names the topic: links to issues and merge
    /// requests then carry their titles.
    titled: bool,
}

impl At<'_> {
    /// `title` when links carry titles.
    fn title<'t>(&self, title: &'t str) -> Option<&'t str> {
        self.titled.then_some(title)
    }
}

enum Made {
    Message(String, String, String),
    Nothing,
    Anomalous,
}

/// The project's web page: `project.web_url`, or (older payloads)
/// `repository.homepage`.
fn homepage(p: &Value) -> String {
    match text(p, &["project", "web_url"]) {
        url if url.is_empty() => text(p, &["repository", "homepage"]),
        url => url,
    }
}

/// Whether a commit id is all zeros (a created or deleted ref).
fn zero(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

fn push(p: &Value, at: &At) -> Made {
    let user = at.user;
    let reference = text(p, &["ref"]);
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference).to_owned();
    let topic = format!("{} / {branch}", at.project);
    let event = "Push Hook".to_owned();
    if zero(&text(p, &["after"])) {
        return Made::Message(event, topic, format!("{user} deleted branch {branch}."));
    }
    let commits = p.get("commits").and_then(Value::as_array).cloned().unwrap_or_default();
    let count =
        p.get("total_commits_count").and_then(Value::as_u64).map_or(commits.len(), |n| n as usize);
    let compare =
        format!("{}/-/compare/{}...{}", homepage(p), text(p, &["before"]), text(p, &["after"]));
    if commits.is_empty() {
        return Made::Message(
            event,
            topic,
            format!("{user} [pushed]({compare}) the branch {branch}."),
        );
    }
    let body = super::github::commits_pushed(user, "pushed", &compare, count, &branch, &commits);
    Made::Message(event, topic, body)
}

/// The payload's assignees' names (`assignees`, else `assignee`).
fn assignees(p: &Value) -> Vec<String> {
    let mut names: Vec<String> = p
        .get("assignees")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|u| text(u, &["name"])).filter(|n| !n.is_empty()).collect())
        .unwrap_or_default();
    if names.is_empty() {
        let one = text(p, &["assignee", "name"]);
        if !one.is_empty() {
            names.push(one);
        }
    }
    names
}

/// " (assigned to A, B and C)" for `names`, if any.
fn assigned(names: &[String]) -> String {
    let listed = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => return String::new(),
    };
    format!(" (assigned to {listed})")
}

/// The end of a sentence about an issue or merge request linked with
/// `title` (if titled): ":" and the quoted `description`, or "." when
/// there is none — either mark left out where the title ends in
/// punctuation and nothing (`more`) follows the link.
fn described(title: Option<&str>, more: bool, description: &str) -> String {
    match quoted(description) {
        quote if quote.is_empty() => after_link(title, more, ".").to_owned(),
        quote => format!("{}{quote}", after_link(title, more, ":")),
    }
}

fn tag_push(p: &Value, at: &At) -> Made {
    let reference = text(p, &["ref"]);
    let tag = reference.strip_prefix("refs/tags/").unwrap_or(&reference);
    let verb = if zero(&text(p, &["after"])) { "removed" } else { "pushed" };
    Made::Message(
        "Tag Push Hook".to_owned(),
        at.project.to_owned(),
        format!("{} {verb} tag {tag}.", at.user),
    )
}

fn merge_request(p: &Value, at: &At) -> Made {
    let Some(mr) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let user = at.user;
    let iid = text(mr, &["iid"]);
    let title = text(mr, &["title"]);
    let topic = format!("{} / MR #{iid} {title}", at.project);
    let title = at.title(&title);
    let link = item_link("MR", &iid, title, &text(mr, &["url"]));
    let action = text(mr, &["action"]);
    let (source, target) = (text(mr, &["source_branch"]), text(mr, &["target_branch"]));
    let description = text(mr, &["description"]);
    let names = assignees(p);
    let end = |more: bool| after_link(title, more, ".");
    let body = match action.as_str() {
        "open" => format!(
            "{user} created {link} from `{source}` to `{target}`{}{}",
            assigned(&names),
            described(title, true, &description)
        ),
        "reopen" => format!("{user} reopened {link}{}", end(false)),
        "merge" => format!("{user} merged {link} from `{source}` to `{target}`."),
        "close" => format!("{user} closed {link}{}", end(false)),
        "update" if mr.get("oldrev").is_some_and(|v| !v.is_null()) => {
            format!("{user} added commit(s) to {link}{}", end(false))
        }
        "update" => format!(
            "{user} updated {link}{}{}",
            assigned(&names),
            described(title, !names.is_empty(), &description)
        ),
        "approved" | "approval" => format!("{user} approved {link}{}", end(false)),
        "unapproved" | "unapproval" => format!("{user} unapproved {link}{}", end(false)),
        _ => return Made::Nothing,
    };
    Made::Message(format!("Merge Request Hook {action}"), topic, body)
}

fn issue(p: &Value, at: &At) -> Made {
    let Some(issue) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let user = at.user;
    let iid = text(issue, &["iid"]);
    let title = text(issue, &["title"]);
    let topic = format!("{} / issue #{iid} {title}", at.project);
    let title = at.title(&title);
    let link = item_link("issue", &iid, title, &text(issue, &["url"]));
    let action = text(issue, &["action"]);
    let end = after_link(title, false, ".");
    let body = match action.as_str() {
        "open" => {
            let names = assignees(p);
            format!(
                "{user} created {link}{}{}",
                assigned(&names),
                described(
                    title,
                    !names.is_empty(),
                    &without_hidden_comments(&text(issue, &["description"]))
                )
            )
        }
        "reopen" => format!("{user} reopened {link}{end}"),
        "close" => format!("{user} closed {link}{end}"),
        "update" => format!("{user} updated {link}{end}"),
        _ => return Made::Nothing,
    };
    Made::Message(format!("Issue Hook {action}"), topic, body)
}

fn note(p: &Value, at: &At) -> Made {
    let Some(note) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let project = at.project;
    let url = text(note, &["url"]);
    let kind = text(note, &["noteable_type"]);
    let comment = text(note, &["note"]);
    let commented = format!("{} [commented]({url}) on", at.user);
    let (topic, body) = match kind.as_str() {
        "MergeRequest" | "Issue" => {
            let (key, word) =
                if kind == "Issue" { ("issue", "issue") } else { ("merge_request", "MR") };
            let Some(item) = p.get(key) else {
                return Made::Anomalous;
            };
            let iid = text(item, &["iid"]);
            let title = text(item, &["title"]);
            let topic = format!("{project} / {word} #{iid} {title}");
            let title = at.title(&title);
            let link = item_link(word, &iid, title, &text(item, &["url"]));
            (topic, format!("{commented} {link}{}", described(title, false, &comment)))
        }
        "Commit" => {
            let sha = super::github::short_sha(&text(p, &["commit", "id"]));
            let link = format!("[{sha}]({})", text(p, &["commit", "url"]));
            // Zulip sets a comment on a commit one line below, not two.
            let quote = quoted(&comment).replacen("\n\n", "\n", 1);
            (project.to_owned(), format!("{commented} {link}:{quote}"))
        }
        _ => return Made::Nothing,
    };
    Made::Message(format!("Note Hook {kind}"), topic, body)
}

/// `text` without its HTML comments (`<!-- … -->`, which GitLab's issue
/// templates leave in descriptions and GitLab does not show), trailing
/// white space trimmed, as Zulip shows a new issue's description.
fn without_hidden_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        let Some(len) = rest[start + 4..].find("-->") else { break };
        out.push_str(&rest[..start]);
        rest = &rest[start + 4 + len + 3..];
    }
    out.push_str(rest);
    out.truncate(out.trim_end().len());
    out
}

/// A job's new status, in Zulip's words.
fn job(p: &Value, at: &At, header: &str) -> Made {
    let status = text(p, &["build_status"]);
    let action = match status.as_str() {
        "created" => "was created".to_owned(),
        "running" => "started".to_owned(),
        other => format!("changed status to {other}"),
    };
    let body = format!(
        "Build {} from {} stage {action}.",
        text(p, &["build_name"]),
        text(p, &["build_stage"])
    );
    let reference = text(p, &["ref"]);
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference);
    // The topic names the job's repository (as Zulip's does).
    let repository = match text(p, &["repository", "name"]) {
        name if name.is_empty() => at.project.to_owned(),
        name => name,
    };
    Made::Message(header.to_owned(), format!("{repository} / {branch}"), body)
}

/// A wiki page created or updated.
fn wiki_page(p: &Value, at: &At) -> Made {
    let Some(page) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let action = text(page, &["action"]);
    let verb = match action.as_str() {
        "create" => "created",
        "update" => "updated",
        _ => return Made::Nothing,
    };
    let body = format!(
        "{} {verb} [wiki page \"{}\"]({}).",
        at.user,
        text(page, &["title"]),
        text(page, &["url"])
    );
    Made::Message(format!("Wiki Page Hook {action}"), at.project.to_owned(), body)
}

/// A pipeline's new status, with each of its jobs (and the artifacts it
/// built), in Zulip's words.
fn pipeline(p: &Value, at: &At) -> Made {
    let Some(pipeline) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let status = text(pipeline, &["status"]);
    let action = match status.as_str() {
        "pending" => "was created".to_owned(),
        "running" => "started".to_owned(),
        other => format!("changed status to {other}"),
    };
    let home = homepage(p);
    let id = text(pipeline, &["id"]);
    let mut builds = String::new();
    for build in p.get("builds").and_then(Value::as_array).into_iter().flatten() {
        let url = format!("{home}/-/jobs/{}", text(build, &["id"]));
        builds.push_str(&format!(
            "* [{}]({url}) - {}\n",
            text(build, &["name"]),
            text(build, &["status"])
        ));
        let artifact = text(build, &["artifacts_file", "filename"]);
        if !artifact.is_empty() {
            builds.push_str(&format!(
                "  * built artifact: *{artifact}* [[Browse]({url}/artifacts/browse)|\
                 [Download]({url}/artifacts/download)]\n"
            ));
        }
    }
    // The list ends the sentence: its last line break gives way to ".".
    builds.pop();
    let body =
        format!("[Pipeline ({id})]({home}/-/pipelines/{id}) {action} with build(s):\n{builds}.");
    let reference = text(pipeline, &["ref"]);
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference);
    Made::Message("Pipeline Hook".to_owned(), format!("{} / {branch}", at.project), body)
}

/// Zulip's GitLab fixture tests, as facts: payloads with the fields of
/// its fixtures that the messages read, its topics and messages word for
/// word.
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::params::{Params, Payload};

    fn made(event: &str, payload: Value) -> (String, String) {
        read(event, payload, false)
    }

    /// The message of `payload` when the URL names the topic.
    fn titled(event: &str, payload: Value) -> String {
        read(event, payload, true).1
    }

    fn read(event: &str, payload: Value, topic_given: bool) -> (String, String) {
        let mut params = Params::from_pairs(std::iter::empty());
        let payload = Payload {
            body: payload.to_string().into_bytes(),
            headers: vec![(EVENT_HEADER.to_owned(), event.to_owned())],
        };
        let mut request =
            Request { display: "Gitlab", params: &mut params, payload: &payload, topic_given };
        let made = handle(&mut request).expect("a supported event");
        let n = made.into_iter().next().expect("a message");
        (n.topic, n.body)
    }

    const PROJECT: &str = "https://gitlab.com/tomaszkolek0/my-awesome-project";

    fn push(commits: Value) -> Value {
        json!({"object_kind": "push", "ref": "refs/heads/tomek", "user_name": "Tomasz Kolek",
               "before": "5fcdd5551fc3085df79bece2c32b1400802ac407",
               "after": "eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9",
               "project": {"name": "my-awesome-project", "web_url": PROJECT},
               "total_commits_count": commits.as_array().unwrap().len(), "commits": commits})
    }

    fn commit(sha: &str, message: &str, author: &str) -> Value {
        json!({"id": sha, "message": message, "url": format!("{PROJECT}/commit/{sha}"),
               "author": {"name": author}})
    }

    #[test]
    fn pushes() {
        let b = "66abd2da28809ffa128ed0447965cf11d7f863a7";
        let c = "eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9";
        let pushed = format!(
            "Tomasz Kolek [pushed]({PROJECT}/-/compare/5fcdd5551fc3085df79bece2c32b1400802ac407...\
             eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9) 2 commits to branch tomek."
        );
        let list = format!(
            "\n\n* b ([66abd2da288]({PROJECT}/commit/{b}))\n* c ([eb6ae1e591e]({PROJECT}/commit/{c}))"
        );
        assert_eq!(
            made(
                "Push Hook",
                push(json!([commit(b, "b\n", "Tomasz Kolek"), commit(c, "c\n", "Tomasz Kolek")]))
            ),
            ("my-awesome-project / tomek".to_owned(), format!("{pushed}{list}"))
        );
        assert_eq!(
            made(
                "Push Hook",
                push(json!([commit(b, "b\n", "Ben"), commit(c, "c\n", "Tomasz Kolek")]))
            )
            .1,
            format!("{pushed} Commits by Ben (1) and Tomasz Kolek (1).{list}")
        );
        let eesh = "https://gitlab.com/eeshangarg/my-awesome-project";
        let local = json!({"ref": "refs/heads/changes", "user_name": "Eeshan Garg",
            "before": "0000000000000000000000000000000000000000",
            "after": "68d7a5528cf423dfaac37dd62a56ac9cc8a884e3",
            "project": {"name": "my-awesome-project", "web_url": eesh},
            "total_commits_count": 0, "commits": []});
        assert_eq!(
            made("Push Hook", local),
            (
                "my-awesome-project / changes".to_owned(),
                format!("Eeshan Garg [pushed]({eesh}/-/compare/0000000000000000000000000000000000000000\
                         ...68d7a5528cf423dfaac37dd62a56ac9cc8a884e3) the branch changes.")
            )
        );
    }

    #[test]
    fn issues_merge_requests_and_notes() {
        let issue = |description: Value, assignees: Value| {
            json!({"object_kind": "issue", "user": {"name": "Adam Birds"},
                   "project": {"name": "Zulip GitLab Test"}, "assignees": assignees,
                   "object_attributes": {"iid": 2, "title": "Zulip Test Issue 2", "action": "open",
                       "url": "https://gitlab.com/adambirds/zulip-gitlab-test/issues/2",
                       "description": description}})
        };
        let three =
            json!([{"name": "Adam Birds"}, {"name": "Eeshan Garg"}, {"name": "Tim Abbott"}]);
        assert_eq!(
            made("Issue Hook", issue(json!("Zulip Test Issue 2"), three)),
            (
                "Zulip GitLab Test / issue #2 Zulip Test Issue 2".to_owned(),
                "Adam Birds created [issue #2](https://gitlab.com/adambirds/zulip-gitlab-test/issues/2) \
                 (assigned to Adam Birds, Eeshan Garg and Tim Abbott):\n\n~~~ quote\nZulip Test Issue 2\n~~~"
                    .to_owned()
            )
        );
        assert_eq!(
            made("Issue Hook", issue(Value::Null, json!([]))).1,
            "Adam Birds created [issue #2](https://gitlab.com/adambirds/zulip-gitlab-test/issues/2)."
        );

        let mr = |action: &str, extra: Value| {
            let mut attributes = json!({"iid": 3, "title": "New Merge Request", "action": action,
                "url": format!("{PROJECT}/merge_requests/3"), "source_branch": "tomek",
                "target_branch": "master", "description": "description of merge request"});
            attributes.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            json!({"object_kind": "merge_request", "user": {"name": "Tomasz Kolek"},
                   "project": {"name": "my-awesome-project"},
                   "assignees": [{"name": "Tomasz Kolek"}], "object_attributes": attributes})
        };
        let link = format!("[MR #3]({PROJECT}/merge_requests/3)");
        assert_eq!(
            made("Merge Request Hook", mr("open", json!({}))),
            (
                "my-awesome-project / MR #3 New Merge Request".to_owned(),
                format!(
                    "Tomasz Kolek created {link} from `tomek` to `master` (assigned to Tomasz \
                         Kolek):\n\n~~~ quote\ndescription of merge request\n~~~"
                )
            )
        );
        assert_eq!(
            made("Merge Request Hook", mr("update", json!({"description": "updated desc"}))).1,
            format!("Tomasz Kolek updated {link} (assigned to Tomasz Kolek):\n\n~~~ quote\nupdated desc\n~~~")
        );
        assert_eq!(
            made("Merge Request Hook", mr("update", json!({"oldrev": "e4a2c1b"}))).1,
            format!("Tomasz Kolek added commit(s) to {link}.")
        );
        assert_eq!(
            made("Merge Request Hook", mr("merge", json!({}))).1,
            format!("Tomasz Kolek merged {link} from `tomek` to `master`.")
        );
        assert_eq!(
            made("Merge Request Hook", mr("close", json!({}))).1,
            format!("Tomasz Kolek closed {link}.")
        );

        let repo = "https://gitlab.com/sbansal1999/testing-zulip-gitlab-integration";
        let sha = "82689ddf00fd7bdadb5c2afb3b94bd555edc9d01";
        let note = json!({"object_kind": "note", "user": {"name": "Satyam Bansal"},
            "project": {"name": "testing-zulip-gitlab-integration"},
            "commit": {"id": sha, "url": format!("{repo}/-/commit/{sha}")},
            "object_attributes": {"noteable_type": "Commit", "note": "Wow what a beautiful commit.",
                                  "url": format!("{repo}/-/commit/{sha}#note_1406241063")}});
        assert_eq!(
            made("Note Hook", note),
            (
                "testing-zulip-gitlab-integration".to_owned(),
                format!("Satyam Bansal [commented]({repo}/-/commit/{sha}#note_1406241063) on \
                         [82689ddf00f]({repo}/-/commit/{sha}):\n~~~ quote\nWow what a beautiful commit.\n~~~")
            )
        );
    }

    /// A `Pipeline Hook` payload of Zulip's `my-awesome-project` fixture
    /// with `status` and its two jobs in `builds`.
    fn pipeline(status: &str, builds: Value) -> Value {
        json!({"object_kind": "pipeline",
               "object_attributes": {"id": 4414206, "ref": "master", "status": status},
               "user": {"name": "Tomasz Kolek"},
               "project": {"name": "my-awesome-project",
                           "web_url": "https://gitlab.com/TomaszKolek/my-awesome-project"},
               "builds": builds})
    }

    fn job(id: u64, name: &str, status: &str) -> Value {
        json!({"id": id, "stage": "test", "name": name, "status": status,
               "artifacts_file": {"filename": null, "size": null}})
    }

    #[test]
    fn pipelines() {
        let home = "https://gitlab.com/TomaszKolek/my-awesome-project";
        let run = format!("[Pipeline (4414206)]({home}/-/pipelines/4414206)");
        let one = |n: u64| format!("{home}/-/jobs/{n}");
        // Zulip's fixtures: succeeded, started (running), pending.
        assert_eq!(
            made(
                "Pipeline Hook",
                pipeline(
                    "success",
                    json!([
                        job(4541113, "job_name2", "success"),
                        job(4541112, "job_name", "success")
                    ])
                )
            ),
            (
                "my-awesome-project / master".to_owned(),
                format!(
                    "{run} changed status to success with build(s):\n* [job_name2]({}) - success\n\
                     * [job_name]({}) - success.",
                    one(4541113),
                    one(4541112)
                )
            )
        );
        assert_eq!(
            made(
                "Pipeline Hook",
                pipeline(
                    "running",
                    json!([job(4541112, "job_name", "running"), job(4541113, "job_name2", "pending")])
                )
            )
            .1,
            format!(
                "{run} started with build(s):\n* [job_name]({}) - running\n* [job_name2]({}) - pending.",
                one(4541112),
                one(4541113)
            )
        );
        assert_eq!(
            made(
                "Pipeline Hook",
                pipeline(
                    "pending",
                    json!([job(4541113, "job_name2", "pending"), job(4541112, "job_name", "created")])
                )
            )
            .1,
            format!(
                "{run} was created with build(s):\n* [job_name2]({}) - pending\n* [job_name]({}) - created.",
                one(4541113),
                one(4541112)
            )
        );
        // Every other status is told as it is named: failed, canceled,
        // created, skipped…
        for status in ["failed", "canceled", "created", "skipped"] {
            assert_eq!(
                made("Pipeline Hook", pipeline(status, json!([job(4541112, "job_name", status)])))
                    .1,
                format!(
                    "{run} changed status to {status} with build(s):\n* [job_name]({}) - {status}.",
                    one(4541112)
                )
            );
        }
        // No jobs: the list is empty.
        assert_eq!(
            made("Pipeline Hook", pipeline("failed", json!([]))).1,
            format!("{run} changed status to failed with build(s):\n.")
        );
    }

    #[test]
    fn pipelines_list_built_artifacts() {
        // Zulip's `pipeline_succeeded_with_artifacts` fixture (three of its
        // jobs): a branch with a slash, jobs with and without artifacts.
        let home = "https://gitlab.example.com/group1/onlysomeproject";
        let payload = json!({
            "object_attributes": {"id": 22668, "ref": "test/links-in-zulip-pipeline-message", "status": "success"},
            "project": {"name": "onlysomeproject", "web_url": home},
            "builds": [
                {"id": 58592, "name": "cleanup:cleanup docker image", "status": "success",
                 "artifacts_file": {"filename": null}},
                {"id": 58591, "name": "pages", "status": "success",
                 "artifacts_file": {"filename": "artifacts.zip", "size": 1352366}},
                {"id": 58589, "name": "docs:anaconda environment", "status": "success",
                 "artifacts_file": {"filename": "sphinx-docs.zip", "size": 3340}},
                {"id": 58586, "name": "setup:docker image", "status": "success"}]});
        let jobs = format!("{home}/-/jobs");
        assert_eq!(
            made("Pipeline Hook", payload),
            (
                "onlysomeproject / test/links-in-zulip-pipeline-message".to_owned(),
                format!(
                    "[Pipeline (22668)]({home}/-/pipelines/22668) changed status to success with \
                     build(s):\n* [cleanup:cleanup docker image]({jobs}/58592) - success\n\
                     * [pages]({jobs}/58591) - success\n  * built artifact: *artifacts.zip* \
                     [[Browse]({jobs}/58591/artifacts/browse)|[Download]({jobs}/58591/artifacts/download)]\n\
                     * [docs:anaconda environment]({jobs}/58589) - success\n  * built artifact: \
                     *sphinx-docs.zip* [[Browse]({jobs}/58589/artifacts/browse)|\
                     [Download]({jobs}/58589/artifacts/download)]\n\
                     * [setup:docker image]({jobs}/58586) - success."
                )
            )
        );
    }

    #[test]
    fn a_topic_in_the_url_links_the_project_and_titles_the_item() {
        // Zulip's `*_with_custom_topic_in_url` tests.
        let home = "https://gitlab.com/tomaszkolek0/my-awesome-project";
        let prefix = format!("[[my-awesome-project]({home})]");
        let issue = |action: &str, title: &str| {
            json!({"object_kind": "issue", "user": {"name": "Tomasz Kolek"},
                   "project": {"name": "my-awesome-project", "web_url": home},
                   "object_attributes": {"iid": 1, "title": title, "action": action,
                       "url": format!("{home}/issues/1"), "description": "Issue description"}})
        };
        assert_eq!(
            titled("Issue Hook", issue("open", "Issue title")),
            format!(
                "{prefix} Tomasz Kolek created [issue #1 Issue title]({home}/issues/1):\n\n\
                 ~~~ quote\nIssue description\n~~~"
            )
        );
        assert_eq!(
            titled("Issue Hook", issue("update", "Issue title_new")),
            format!("{prefix} Tomasz Kolek updated [issue #1 Issue title_new]({home}/issues/1).")
        );
        // A title ending in punctuation takes no second mark.
        assert_eq!(
            titled("Issue Hook", issue("close", "Why?")),
            format!("{prefix} Tomasz Kolek closed [issue #1 Why?]({home}/issues/1)")
        );
        let mr = |action: &str| {
            json!({"object_kind": "merge_request", "user": {"name": "Tomasz Kolek"},
                   "project": {"name": "my-awesome-project", "web_url": home},
                   "object_attributes": {"iid": 2, "title": "NEW MR", "action": action,
                       "url": format!("{home}/merge_requests/2"), "source_branch": "tomek",
                       "target_branch": "master", "description": "description of merge request"}})
        };
        assert_eq!(
            titled("Merge Request Hook", mr("open")),
            format!(
                "{prefix} Tomasz Kolek created [MR #2 NEW MR]({home}/merge_requests/2) from \
                 `tomek` to `master`:\n\n~~~ quote\ndescription of merge request\n~~~"
            )
        );
        assert_eq!(
            titled("Merge Request Hook", mr("close")),
            format!("{prefix} Tomasz Kolek closed [MR #2 NEW MR]({home}/merge_requests/2).")
        );
        let repo = "https://gitlab.com/sbansal1999/testing-zulip-gitlab-integration";
        let note = json!({"object_kind": "note", "user": {"name": "Satyam Bansal"},
            "project": {"name": "testing-zulip-gitlab-integration", "web_url": repo},
            "issue": {"iid": 1, "title": "Add more lines", "url": format!("{repo}/-/issues/1")},
            "object_attributes": {"noteable_type": "Issue", "note": "This is again a random comment.",
                                  "url": format!("{repo}/-/issues/1#note_1406279810")}});
        assert_eq!(
            titled("Note Hook", note.clone()),
            format!(
                "[[testing-zulip-gitlab-integration]({repo})] Satyam Bansal \
                 [commented]({repo}/-/issues/1#note_1406279810) on [issue #1 Add more lines]\
                 ({repo}/-/issues/1):\n\n~~~ quote\nThis is again a random comment.\n~~~"
            )
        );
        // Without a topic in the URL: no project link, no title.
        assert_eq!(
            made("Note Hook", note),
            (
                "testing-zulip-gitlab-integration / issue #1 Add more lines".to_owned(),
                format!(
                    "Satyam Bansal [commented]({repo}/-/issues/1#note_1406279810) on \
                     [issue #1]({repo}/-/issues/1):\n\n~~~ quote\nThis is again a random comment.\n~~~"
                )
            )
        );
        // Pushes and pipelines: the project link only.
        let b = "66abd2da28809ffa128ed0447965cf11d7f863a7";
        let c = "eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9";
        assert_eq!(
            titled(
                "Push Hook",
                push(json!([commit(b, "b\n", "Tomasz Kolek"), commit(c, "c\n", "Tomasz Kolek")]))
            ),
            format!(
                "[[my-awesome-project]({PROJECT})] Tomasz Kolek [pushed]({PROJECT}/-/compare/\
                 5fcdd5551fc3085df79bece2c32b1400802ac407...eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9) \
                 2 commits to branch tomek.\n\n* b ([66abd2da288]({PROJECT}/commit/{b}))\n\
                 * c ([eb6ae1e591e]({PROJECT}/commit/{c}))"
            )
        );
        assert!(titled("Pipeline Hook", pipeline("success", json!([]))).starts_with(
            "[[my-awesome-project](https://gitlab.com/TomaszKolek/my-awesome-project)] [Pipeline (4414206)]"
        ));
    }

    #[test]
    fn jobs_wiki_pages_and_the_test_hook() {
        // Zulip's `build_*` and `job_hook__build_created` fixtures: the
        // project is named under `repository` only.
        let build = |status: &str| {
            json!({"object_kind": "build", "ref": "master", "build_name": "job_name",
                   "build_stage": "test", "build_status": status, "user": {"name": "Tomasz Kolek"},
                   "repository": {"name": "my-awesome-project",
                                  "homepage": "https://gitlab.com/tomaszkolek0/my-awesome-project"}})
        };
        for (event, status, message) in [
            ("Job Hook", "created", "Build job_name from test stage was created."),
            ("Job Hook", "running", "Build job_name from test stage started."),
            ("Build Hook", "success", "Build job_name from test stage changed status to success."),
        ] {
            assert_eq!(
                made(event, build(status)),
                ("my-awesome-project / master".to_owned(), message.to_owned())
            );
        }
        assert_eq!(
            titled("Job Hook", build("created")),
            "[[my-awesome-project](https://gitlab.com/tomaszkolek0/my-awesome-project)] Build \
             job_name from test stage was created."
        );
        let wiki = |action: &str| {
            json!({"object_kind": "wiki_page", "user": {"name": "Tomasz Kolek"},
                   "project": {"name": "my-awesome-project", "web_url": PROJECT},
                   "object_attributes": {"title": "how to", "action": action,
                                         "url": format!("{PROJECT}/wikis/how-to")}})
        };
        assert_eq!(
            made("Wiki Page Hook", wiki("create")),
            (
                "my-awesome-project".to_owned(),
                format!("Tomasz Kolek created [wiki page \"how to\"]({PROJECT}/wikis/how-to).")
            )
        );
        assert_eq!(
            made("Wiki Page Hook", wiki("update")).1,
            format!("Tomasz Kolek updated [wiki page \"how to\"]({PROJECT}/wikis/how-to).")
        );
        assert_eq!(
            made("Test Hook", json!({"object_kind": "push", "project": {"name": "public-repo"}})),
            (
                "public-repo".to_owned(),
                "Webhook for **public-repo** has been configured successfully! :tada:".to_owned()
            )
        );
    }

    #[test]
    fn a_new_issues_hidden_comments_are_left_out() {
        // Zulip's `issue_created_with_hidden_comment_in_description`.
        let payload = json!({"object_kind": "issue", "user": {"name": "Eeshan Garg"},
            "project": {"name": "public-repo"},
            "object_attributes": {"iid": 3, "title": "New Issue with hidden comment", "action": "open",
                "url": "https://gitlab.com/eeshangarg/public-repo/issues/3",
                "description": "This description actually has a hidden comment in it!\n\
                                <!-- This is a hidden comment\nover two lines -->\n"}});
        assert_eq!(
            made("Issue Hook", payload),
            (
                "public-repo / issue #3 New Issue with hidden comment".to_owned(),
                "Eeshan Garg created [issue #3](https://gitlab.com/eeshangarg/public-repo/issues/3):\
                 \n\n~~~ quote\nThis description actually has a hidden comment in it!\n~~~"
                    .to_owned()
            )
        );
        assert_eq!(without_hidden_comments("a <!-- b --> c <!-- d"), "a  c <!-- d");
        assert_eq!(without_hidden_comments("<!-- only -->"), "");
    }
}
