//! `gitlab`: GitLab's project webhooks, the event named by the
//! `X-Gitlab-Event` header. Topics as Zulip's: `<project> / <branch>` for
//! pushes and pipelines, `<project> / MR #<iid> <title>` and
//! `<project> / issue #<iid> <title>` for merge requests, issues and their
//! comments, `<project>` for tags and commit comments.
//!
//! Event names the filters see: `Push Hook`, `Tag Push Hook`,
//! `Merge Request Hook <action>`, `Issue Hook <action>`,
//! `Note Hook <noteable type>`, `Pipeline Hook`.

use serde_json::Value;

use super::{quoted, text, Notification, Request};
use crate::error::ApiResult;

/// The header naming the event.
const EVENT_HEADER: &str = "X-Gitlab-Event";

/// The message for one GitLab delivery.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let header = request.event_header(EVENT_HEADER)?;
    let p = request.json_object()?;
    let project = text(&p, &["project", "name"]);
    if project.is_empty() {
        return Err(request.anomalous());
    }
    let user = match text(&p, &["user", "name"]) {
        name if name.is_empty() => text(&p, &["user_name"]),
        name => name,
    };
    let made = match header.as_str() {
        "Push Hook" => push(&p, &project, &user),
        "Tag Push Hook" => tag_push(&p, &project, &user),
        "Merge Request Hook" => merge_request(&p, &project, &user),
        "Issue Hook" | "Confidential Issue Hook" => issue(&p, &project, &user),
        "Note Hook" | "Confidential Note Hook" => note(&p, &project, &user),
        "Pipeline Hook" => pipeline(&p, &project),
        other => return Err(request.unsupported(other)),
    };
    match made {
        Made::Message(event, topic, body) => {
            Ok(vec![Notification { event: Some(event), topic, body }])
        }
        Made::Nothing => Ok(Vec::new()),
        Made::Anomalous => Err(request.anomalous()),
    }
}

enum Made {
    Message(String, String, String),
    Nothing,
    Anomalous,
}

/// Whether a commit id is all zeros (a created or deleted ref).
fn zero(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

fn push(p: &Value, project: &str, user: &str) -> Made {
    let reference = text(p, &["ref"]);
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference).to_owned();
    let topic = format!("{project} / {branch}");
    let event = "Push Hook".to_owned();
    if zero(&text(p, &["after"])) {
        return Made::Message(event, topic, format!("{user} deleted branch {branch}."));
    }
    let commits = p.get("commits").and_then(Value::as_array).cloned().unwrap_or_default();
    let count =
        p.get("total_commits_count").and_then(Value::as_u64).map_or(commits.len(), |n| n as usize);
    let compare = format!(
        "{}/-/compare/{}...{}",
        text(p, &["project", "web_url"]),
        text(p, &["before"]),
        text(p, &["after"])
    );
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

/// " (assigned to A, B and C)" for the payload's assignees, if any.
fn assigned(p: &Value) -> String {
    let mut names: Vec<String> = p
        .get("assignees")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|u| text(u, &["name"])).filter(|n| !n.is_empty()).collect())
        .unwrap_or_default();
    if names.is_empty() {
        let one = text(p, &["assignee", "name"]);
        if one.is_empty() {
            return String::new();
        }
        names.push(one);
    }
    let listed = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => return String::new(),
    };
    format!(" (assigned to {listed})")
}

/// ":" and the quoted description, or "." when there is none.
fn described(description: &str) -> String {
    match quoted(description) {
        quote if quote.is_empty() => ".".to_owned(),
        quote => format!(":{quote}"),
    }
}

fn tag_push(p: &Value, project: &str, user: &str) -> Made {
    let reference = text(p, &["ref"]);
    let tag = reference.strip_prefix("refs/tags/").unwrap_or(&reference);
    let verb = if zero(&text(p, &["after"])) { "removed" } else { "pushed" };
    Made::Message(
        "Tag Push Hook".to_owned(),
        project.to_owned(),
        format!("{user} {verb} tag {tag}."),
    )
}

fn merge_request(p: &Value, project: &str, user: &str) -> Made {
    let Some(mr) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let iid = text(mr, &["iid"]);
    let topic = format!("{project} / MR #{iid} {}", text(mr, &["title"]));
    let link = format!("[MR #{iid}]({})", text(mr, &["url"]));
    let action = text(mr, &["action"]);
    let (source, target) = (text(mr, &["source_branch"]), text(mr, &["target_branch"]));
    let description = described(&text(mr, &["description"]));
    let body = match action.as_str() {
        "open" => format!(
            "{user} created {link} from `{source}` to `{target}`{}{description}",
            assigned(p)
        ),
        "reopen" => format!("{user} reopened {link}."),
        "merge" => format!("{user} merged {link} from `{source}` to `{target}`."),
        "close" => format!("{user} closed {link}."),
        "update" if mr.get("oldrev").is_some_and(|v| !v.is_null()) => {
            format!("{user} added commit(s) to {link}.")
        }
        "update" => format!("{user} updated {link}{}{description}", assigned(p)),
        "approved" | "approval" => format!("{user} approved {link}."),
        "unapproved" | "unapproval" => format!("{user} unapproved {link}."),
        _ => return Made::Nothing,
    };
    Made::Message(format!("Merge Request Hook {action}"), topic, body)
}

fn issue(p: &Value, project: &str, user: &str) -> Made {
    let Some(issue) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let iid = text(issue, &["iid"]);
    let topic = format!("{project} / issue #{iid} {}", text(issue, &["title"]));
    let link = format!("[issue #{iid}]({})", text(issue, &["url"]));
    let action = text(issue, &["action"]);
    let body = match action.as_str() {
        "open" => format!(
            "{user} created {link}{}{}",
            assigned(p),
            described(&text(issue, &["description"]))
        ),
        "reopen" => format!("{user} reopened {link}."),
        "close" => format!("{user} closed {link}."),
        "update" => format!("{user} updated {link}."),
        _ => return Made::Nothing,
    };
    Made::Message(format!("Issue Hook {action}"), topic, body)
}

fn note(p: &Value, project: &str, user: &str) -> Made {
    let Some(note) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let url = text(note, &["url"]);
    let kind = text(note, &["noteable_type"]);
    let (topic, on) = match kind.as_str() {
        "MergeRequest" => {
            let Some(mr) = p.get("merge_request") else {
                return Made::Anomalous;
            };
            let iid = text(mr, &["iid"]);
            (
                format!("{project} / MR #{iid} {}", text(mr, &["title"])),
                format!("[MR #{iid}]({})", text(mr, &["url"])),
            )
        }
        "Issue" => {
            let Some(issue) = p.get("issue") else {
                return Made::Anomalous;
            };
            let iid = text(issue, &["iid"]);
            (
                format!("{project} / issue #{iid} {}", text(issue, &["title"])),
                format!("[issue #{iid}]({})", text(issue, &["url"])),
            )
        }
        "Commit" => {
            let sha = super::github::short_sha(&text(p, &["commit", "id"]));
            (project.to_owned(), format!("[{sha}]({})", text(p, &["commit", "url"])))
        }
        _ => return Made::Nothing,
    };
    let mut quote = quoted(&text(note, &["note"]));
    if kind == "Commit" {
        // Zulip sets a comment on a commit one line below, not two.
        quote = quote.replacen("\n\n", "\n", 1);
    }
    let body = format!("{user} [commented]({url}) on {on}:{quote}");
    Made::Message(format!("Note Hook {kind}"), topic, body)
}

fn pipeline(p: &Value, project: &str) -> Made {
    let Some(pipeline) = p.get("object_attributes") else {
        return Made::Anomalous;
    };
    let status = text(pipeline, &["status"]);
    let branch = text(pipeline, &["ref"]);
    let id = text(pipeline, &["id"]);
    let url = match text(pipeline, &["url"]) {
        url if url.is_empty() => format!("{}/-/pipelines/{id}", text(p, &["project", "web_url"])),
        url => url,
    };
    let mut body = format!("[Pipeline #{id}]({url}) on branch `{branch}` is **{status}**.");
    for build in p.get("builds").and_then(Value::as_array).into_iter().flatten() {
        body.push_str(&format!(
            "\n* {} ({}): {}",
            text(build, &["name"]),
            text(build, &["stage"]),
            text(build, &["status"])
        ));
    }
    Made::Message("Pipeline Hook".to_owned(), format!("{project} / {branch}"), body)
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
        let mut params = Params::from_pairs(std::iter::empty());
        let payload = Payload {
            body: payload.to_string().into_bytes(),
            headers: vec![(EVENT_HEADER.to_owned(), event.to_owned())],
        };
        let mut request = Request { display: "Gitlab", params: &mut params, payload: &payload };
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
}
