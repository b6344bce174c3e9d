//! `github`: GitHub's repository webhooks, the event named by the
//! `X-GitHub-Event` header. Topics as Zulip's: `<repo> / <branch>` for
//! pushes, `<repo> / PR #<n> <title>` and `<repo> / issue #<n> <title>`
//! for pull requests, issues and their comments, `<repo> / <tag> <name>`
//! for releases, `<repo> / <workflow>` for workflow runs, `<repo>` for the
//! `ping` GitHub sends when the hook is set up.
//!
//! Event names the filters see: `ping`, `push_commits`, `push_tags`,
//! `pull_request`, `issues`, `issue_comment`, `release`, `workflow_run`.

use serde_json::Value;

use super::{quoted, text, Notification, Request};
use crate::error::ApiResult;

/// The header naming the event.
const EVENT_HEADER: &str = "X-GitHub-Event";

/// The message for one GitHub delivery.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let header = request.event_header(EVENT_HEADER)?;
    let p = request.json_object()?;
    let repo = text(&p, &["repository", "name"]);
    let user = text(&p, &["sender", "login"]);
    // The object each event is about, and its repository, must be there.
    let about = match header.as_str() {
        "pull_request" | "release" | "workflow_run" => Some(header.as_str()),
        "issues" | "issue_comment" => Some("issue"),
        _ => None,
    };
    let missing = |key: &str| !p.get(key).is_some_and(Value::is_object);
    if about.is_some_and(missing) || (header == "issue_comment" && missing("comment")) {
        return Err(request.anomalous());
    }
    if header != "ping" && repo.is_empty() {
        return Err(request.anomalous());
    }
    let made = match header.as_str() {
        "ping" => {
            let topic = if repo.is_empty() { text(&p, &["organization", "login"]) } else { repo };
            let body = format!("GitHub webhook has been successfully configured by {user}.");
            Some(("ping".to_owned(), topic, body))
        }
        "push" => push(&p, &repo, &user),
        "pull_request" => pull_request(&p, &repo, &user),
        "issues" => issues(&p, &repo, &user),
        "issue_comment" => issue_comment(&p, &repo, &user),
        "release" => release(&p, &repo, &user),
        "workflow_run" => workflow_run(&p, &repo),
        other => return Err(request.unsupported(other)),
    };
    match made {
        Some((event, topic, body)) if !topic.is_empty() => {
            Ok(vec![Notification { event: Some(event), topic, body }])
        }
        Some(_) => Err(request.anomalous()),
        // An action that makes no message (as Zulip ignores them).
        None => Ok(Vec::new()),
    }
}

type Made = Option<(String, String, String)>;

fn push(p: &Value, repo: &str, user: &str) -> Made {
    let reference = text(p, &["ref"]);
    if let Some(tag) = reference.strip_prefix("refs/tags/") {
        let verb = if p.get("deleted").and_then(Value::as_bool) == Some(true) {
            "removed"
        } else {
            "pushed"
        };
        let body = format!("{user} {verb} tag {tag}.");
        return Some(("push_tags".to_owned(), repo.to_owned(), body));
    }
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference).to_owned();
    let topic = format!("{repo} / {branch}");
    let compare = text(p, &["compare"]);
    if p.get("deleted").and_then(Value::as_bool) == Some(true) {
        let body = format!("{user} [deleted]({compare}) branch {branch}.");
        return Some(("push_commits".to_owned(), topic, body));
    }
    let commits = p.get("commits").and_then(Value::as_array).cloned().unwrap_or_default();
    let body = if commits.is_empty() {
        if p.get("created").and_then(Value::as_bool) == Some(true) {
            format!("{user} created [{branch}]({compare}) branch.")
        } else {
            format!("{user} [force pushed]({compare}) to branch {branch}.")
        }
    } else {
        let noun = if commits.len() == 1 { "commit" } else { "commits" };
        let mut body =
            format!("{user} [pushed]({compare}) {} {noun} to branch {branch}.\n\n", commits.len());
        for commit in &commits {
            let message = text(commit, &["message"]);
            let first = message.lines().next().unwrap_or("");
            let sha = text(commit, &["id"]);
            let short: String = sha.chars().take(7).collect();
            body.push_str(&format!("* {first} ([{short}]({}))\n", text(commit, &["url"])));
        }
        body
    };
    Some(("push_commits".to_owned(), topic, body))
}

fn pull_request(p: &Value, repo: &str, user: &str) -> Made {
    let pr = p.get("pull_request")?;
    let number = text(pr, &["number"]);
    let title = text(pr, &["title"]);
    let url = text(pr, &["html_url"]);
    let topic = format!("{repo} / PR #{number} {title}");
    let link = format!("[PR #{number}]({url})");
    let action = text(p, &["action"]);
    let body = match action.as_str() {
        "opened" | "reopened" => {
            let (head, base) = (text(pr, &["head", "ref"]), text(pr, &["base", "ref"]));
            format!(
                "{user} {action} {link} from `{head}` to `{base}`.{}",
                quoted(&text(pr, &["body"]))
            )
        }
        "closed" if pr.get("merged").and_then(Value::as_bool) == Some(true) => {
            format!("{user} merged {link}.")
        }
        "closed" => format!("{user} closed {link} without merging."),
        "synchronize" => format!("{user} updated {link}."),
        "edited" => format!("{user} edited {link}."),
        "ready_for_review" => format!("{user} marked {link} as ready for review."),
        "converted_to_draft" => format!("{user} converted {link} to a draft."),
        "assigned" | "unassigned" => {
            let assignee = text(p, &["assignee", "login"]);
            let to = if action == "assigned" { "to" } else { "from" };
            format!("{user} {action} {assignee} {to} {link}.")
        }
        "review_requested" => {
            let reviewer = text(p, &["requested_reviewer", "login"]);
            format!("{user} requested {reviewer} for a review on {link}.")
        }
        // Labels, milestones, locks and auto-merge changes: no message.
        _ => return None,
    };
    Some(("pull_request".to_owned(), topic, body))
}

/// The topic of an issue (or of the PR an issue comment is on).
fn issue_topic(repo: &str, issue: &Value) -> (String, String) {
    let number = text(issue, &["number"]);
    let kind = if issue.get("pull_request").is_some() { "PR" } else { "issue" };
    let topic = format!("{repo} / {kind} #{number} {}", text(issue, &["title"]));
    let link = format!("[{kind} #{number}]({})", text(issue, &["html_url"]));
    (topic, link)
}

fn issues(p: &Value, repo: &str, user: &str) -> Made {
    let issue = p.get("issue")?;
    let (topic, link) = issue_topic(repo, issue);
    let action = text(p, &["action"]);
    let body = match action.as_str() {
        "opened" => format!("{user} opened {link}:{}", quoted(&text(issue, &["body"]))),
        "closed" | "reopened" | "edited" | "deleted" | "pinned" | "unpinned" | "locked"
        | "unlocked" => format!("{user} {action} {link}."),
        "assigned" | "unassigned" => {
            let assignee = text(p, &["assignee", "login"]);
            let to = if action == "assigned" { "to" } else { "from" };
            format!("{user} {action} {assignee} {to} {link}.")
        }
        _ => return None,
    };
    Some(("issues".to_owned(), topic, body))
}

fn issue_comment(p: &Value, repo: &str, user: &str) -> Made {
    let issue = p.get("issue")?;
    let (topic, link) = issue_topic(repo, issue);
    let comment = p.get("comment")?;
    let url = text(comment, &["html_url"]);
    let verb = match text(p, &["action"]).as_str() {
        "created" => "commented",
        "edited" => "edited a comment",
        "deleted" => "deleted a comment",
        _ => return None,
    };
    let body = format!("{user} [{verb}]({url}) on {link}:{}", quoted(&text(comment, &["body"])));
    Some(("issue_comment".to_owned(), topic, body))
}

fn release(p: &Value, repo: &str, user: &str) -> Made {
    let release = p.get("release")?;
    let tag = text(release, &["tag_name"]);
    let name = match text(release, &["name"]) {
        name if name.is_empty() => tag.clone(),
        name => name,
    };
    let url = text(release, &["html_url"]);
    let action = text(p, &["action"]);
    let verb = match action.as_str() {
        "published" | "created" | "released" | "edited" | "deleted" | "prereleased"
        | "unpublished" => action.as_str(),
        _ => return None,
    };
    let topic = format!("{repo} / {tag} {name}");
    let body = format!("{user} {verb} release [{name}]({url}) for tag {tag}.");
    Some(("release".to_owned(), topic, body))
}

fn workflow_run(p: &Value, repo: &str) -> Made {
    let run = p.get("workflow_run")?;
    if text(p, &["action"]) != "completed" {
        // Requested and in-progress runs: only the outcome is told.
        return None;
    }
    let name = text(run, &["name"]);
    let topic = format!("{repo} / {name}");
    let conclusion = text(run, &["conclusion"]);
    let icon = match conclusion.as_str() {
        "success" => ":check:",
        "failure" | "timed_out" | "startup_failure" => ":cross_mark:",
        _ => ":warning:",
    };
    let body = format!(
        "[{name}]({}) workflow run #{} on branch `{}` ({}) completed: {icon} **{conclusion}**.",
        text(run, &["html_url"]),
        text(run, &["run_number"]),
        text(run, &["head_branch"]),
        text(run, &["event"]),
    );
    Some(("workflow_run".to_owned(), topic, body))
}
