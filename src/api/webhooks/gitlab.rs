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
        p.get("total_commits_count").and_then(Value::as_u64).unwrap_or(commits.len() as u64);
    if commits.is_empty() {
        return Made::Message(event, topic, format!("{user} created branch {branch}."));
    }
    let noun = if count == 1 { "commit" } else { "commits" };
    let compare = format!(
        "{}/-/compare/{}...{}",
        text(p, &["project", "web_url"]),
        text(p, &["before"]),
        text(p, &["after"])
    );
    let mut body = format!("{user} [pushed]({compare}) {count} {noun} to branch {branch}.\n\n");
    for commit in &commits {
        let message = text(commit, &["message"]);
        let short: String = text(commit, &["id"]).chars().take(7).collect();
        let first = message.lines().next().unwrap_or("");
        body.push_str(&format!("* {first} ([{short}]({}))\n", text(commit, &["url"])));
    }
    Made::Message(event, topic, body)
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
    let body = match action.as_str() {
        "open" | "reopen" => {
            let verb = if action == "open" { "created" } else { "reopened" };
            format!(
                "{user} {verb} {link} from `{}` to `{}`.{}",
                text(mr, &["source_branch"]),
                text(mr, &["target_branch"]),
                quoted(&text(mr, &["description"]))
            )
        }
        "merge" => format!("{user} merged {link}."),
        "close" => format!("{user} closed {link}."),
        "update" => format!("{user} updated {link}."),
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
        "open" => format!("{user} created {link}:{}", quoted(&text(issue, &["description"]))),
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
            let sha: String = text(p, &["commit", "id"]).chars().take(7).collect();
            (project.to_owned(), format!("[{sha}]({})", text(p, &["commit", "url"])))
        }
        _ => return Made::Nothing,
    };
    let body = format!("{user} [commented]({url}) on {on}:{}", quoted(&text(note, &["note"])));
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
