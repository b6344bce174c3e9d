//! `github`: GitHub's repository webhooks, the event named by the
//! `X-GitHub-Event` header. Topics and messages word for word as Zulip's
//! (its GitHub fixture tests; the tests below hold those strings):
//! `<repo> / <branch>` for pushes, `<repo> / PR #<n> <title>` and
//! `<repo> / issue #<n> <title>` for pull requests, issues and their
//! comments, `<repo>` for releases, tag pushes and the `ping` GitHub sends
//! when the hook is set up, `<repo> / <workflow>` for workflow runs.
//! When the URL names the topic (`topic=`), links to issues and pull
//! requests carry their titles, as Zulip's do.
//!
//! Event names the filters see: `ping`, `push_commits`, `push_tags`,
//! `pull_request`, `issues`, `issue_comment`, `release`, `workflow_run`.

use serde_json::Value;

use super::{after_link, item_link, quoted, text, Notification, Request};
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
        "pull_request" => pull_request(&p, &repo, &user, request.topic_given),
        "issues" => issues(&p, &repo, &user, request.topic_given),
        "issue_comment" => issue_comment(&p, &repo, &user, request.topic_given),
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

/// Commits listed in a push message; the rest are counted.
const COMMITS_LIMIT: usize = 20;

/// Committers named in a push message's "Commits by"; the rest are
/// "others".
const COMMITTERS_LIMIT: usize = 3;

/// A commit's id as Zulip shortens it.
pub(super) fn short_sha(sha: &str) -> String {
    sha.chars().take(11).collect()
}

fn push(p: &Value, repo: &str, user: &str) -> Made {
    let reference = text(p, &["ref"]);
    let deleted = p.get("deleted").and_then(Value::as_bool) == Some(true);
    if let Some(tag) = reference.strip_prefix("refs/tags/") {
        let verb = if deleted { "removed" } else { "pushed" };
        let body = format!("{user} {verb} tag {tag}.");
        return Some(("push_tags".to_owned(), repo.to_owned(), body));
    }
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(&reference).to_owned();
    let topic = format!("{repo} / {branch}");
    let compare = text(p, &["compare"]);
    if deleted {
        let body = format!("{user} [deleted]({compare}) the branch {branch}.");
        return Some(("push_commits".to_owned(), topic, body));
    }
    let verb = if p.get("forced").and_then(Value::as_bool) == Some(true) {
        "force pushed"
    } else {
        "pushed"
    };
    let commits = p.get("commits").and_then(Value::as_array).cloned().unwrap_or_default();
    if commits.is_empty() {
        let body = format!("{user} [{verb}]({compare}) the branch {branch}.");
        return Some(("push_commits".to_owned(), topic, body));
    }
    let body = commits_pushed(user, verb, &compare, commits.len(), &branch, &commits);
    Some(("push_commits".to_owned(), topic, body))
}

/// Zulip's message of a push of `count` commits (`commits` those the
/// payload lists) to `branch`, for GitHub and GitLab alike: who pushed,
/// who wrote them, the first 20 of them.
pub(super) fn commits_pushed(
    user: &str,
    verb: &str,
    compare: &str,
    count: usize,
    branch: &str,
    commits: &[Value],
) -> String {
    let noun = if count == 1 { "commit" } else { "commits" };
    let mut body = format!("{user} [{verb}]({compare}) {count} {noun} to branch {branch}.");
    body.push_str(&committers(commits, user));
    body.push_str("\n\n");
    let lines: Vec<String> = commits
        .iter()
        .take(COMMITS_LIMIT)
        .map(|commit| {
            let message = text(commit, &["message"]);
            let first = message.lines().next().unwrap_or("");
            let sha = short_sha(&text(commit, &["id"]));
            format!("* {first} ([{sha}]({}))", text(commit, &["url"]))
        })
        .collect();
    body.push_str(&lines.join("\n"));
    if count > COMMITS_LIMIT {
        body.push_str(&format!("\n[and {} more commit(s)]", count - COMMITS_LIMIT));
    }
    body
}

/// " Commits by A (3), B (2) and C (1).", naming each commit's author
/// (GitHub user name, else name), most commits first; nothing when the
/// pusher wrote them all.
fn committers(commits: &[Value], pusher: &str) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for commit in commits {
        let mut name = text(commit, &["author", "username"]);
        if name.is_empty() {
            name = text(commit, &["author", "name"]);
        }
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    if counts.len() == 1 && counts[0].0 == pusher {
        return String::new();
    }
    // Most first; ties in the order the commits name them.
    counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    if counts.len() > COMMITTERS_LIMIT {
        let others = counts[COMMITTERS_LIMIT..].iter().map(|(_, c)| c).sum();
        counts.truncate(COMMITTERS_LIMIT);
        counts.push(("others".to_owned(), others));
    }
    let items: Vec<String> = counts.iter().map(|(n, c)| format!("{n} ({c})")).collect();
    let listed = match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => return String::new(),
    };
    format!(" Commits by {listed}.")
}

/// `[login](profile)`, as Zulip names the sender of some events.
fn user_link(p: &Value, user: &str) -> String {
    format!("[{user}]({})", text(p, &["sender", "html_url"]))
}

fn pull_request(p: &Value, repo: &str, user: &str, titled: bool) -> Made {
    let pr = p.get("pull_request")?;
    let number = text(pr, &["number"]);
    let title = text(pr, &["title"]);
    let url = text(pr, &["html_url"]);
    let topic = format!("{repo} / PR #{number} {title}");
    let plain = format!("[PR #{number}]({url})");
    let title = titled.then_some(title.as_str());
    let link = item_link("PR", &number, title, &url);
    let end = after_link(title, false, ".");
    let action = text(p, &["action"]);
    // Opened, reopened, updated and edited pull requests name their
    // assignee; an opened one its branches and description, an edited one
    // its new description.
    let assignee = match text(pr, &["assignee", "login"]) {
        login if login.is_empty() => String::new(),
        login => format!(" (assigned to {login})"),
    };
    let described = |quote: String, more: bool| match quote {
        quote if quote.is_empty() => after_link(title, more, ".").to_owned(),
        quote => format!("{}{quote}", after_link(title, more, ":")),
    };
    let assigned = !assignee.is_empty();
    let body = match action.as_str() {
        "opened" => {
            let (head, base) = (text(pr, &["head", "label"]), text(pr, &["base", "label"]));
            let tail = described(quoted(&text(pr, &["body"])), true);
            format!("{user} opened {link} from `{head}` to `{base}`{assignee}{tail}")
        }
        "reopened" | "synchronize" | "edited" => {
            let verb = if action == "synchronize" { "updated" } else { action.as_str() };
            let changed = p.get("changes").and_then(|c| c.get("body")).is_some();
            let quote = if changed { quoted(&text(pr, &["body"])) } else { String::new() };
            format!("{user} {verb} {link}{assignee}{}", described(quote, assigned))
        }
        "closed" if pr.get("merged").and_then(Value::as_bool) == Some(true) => {
            format!("{user} merged {link}{end}")
        }
        "closed" => format!("{user} closed without merge {link}{end}"),
        "ready_for_review" => format!("**{user}** has marked {plain} as ready for review."),
        "assigned" => {
            let assignee = text(p, &["assignee", "login"]);
            format!("{user} assigned {assignee} to {link}{end}")
        }
        "unassigned" => format!("{user} unassigned {link}{end}"),
        "review_requested" => {
            let (name, profile) = match p.get("requested_team") {
                Some(team) => (text(team, &["name"]), text(team, &["html_url"])),
                None => (
                    text(p, &["requested_reviewer", "login"]),
                    text(p, &["requested_reviewer", "html_url"]),
                ),
            };
            format!("**{user}** requested [{name}]({profile}) for a review on {link}.")
        }
        "locked" => {
            let reason = text(pr, &["active_lock_reason"]);
            format!(
                "{user} has locked {plain} as {reason} and limited conversation to collaborators."
            )
        }
        "unlocked" => format!("{user} has unlocked {plain}."),
        "auto_merge_enabled" => format!("{user} has enabled auto merge for {plain}."),
        "auto_merge_disabled" => format!("{user} has disabled auto merge for {plain}."),
        // Drafts, labels, approvals and removed review requests: no
        // message, as Zulip.
        _ => return None,
    };
    Some(("pull_request".to_owned(), topic, body))
}

/// The topic of an issue (or of the PR an issue comment is on), its
/// link with `kind` spelled as given (and its title, if `titled`), and
/// the mark (`mark`, "." or ":") that follows the link.
fn issue_topic(
    repo: &str,
    issue: &Value,
    titled: bool,
    mark: &'static str,
) -> (String, String, &'static str) {
    let number = text(issue, &["number"]);
    let kind = if issue.get("pull_request").is_some() { "PR" } else { "issue" };
    let title = text(issue, &["title"]);
    let topic = format!("{repo} / {kind} #{number} {title}");
    let title = titled.then_some(title.as_str());
    let link = item_link(kind, &number, title, &text(issue, &["html_url"]));
    (topic, link, after_link(title, false, mark))
}

fn issues(p: &Value, repo: &str, user: &str, titled: bool) -> Made {
    let issue = p.get("issue")?;
    let body = quoted(&text(issue, &["body"]));
    let mark = if body.is_empty() { "." } else { ":" };
    let (topic, link, end) = issue_topic(repo, issue, titled, mark);
    let (_, _, period) = issue_topic(repo, issue, titled, ".");
    let action = text(p, &["action"]);
    let number = text(issue, &["number"]);
    let url = text(issue, &["html_url"]);
    let milestone = || {
        format!("[{}]({})", text(p, &["milestone", "title"]), text(p, &["milestone", "html_url"]))
    };
    // Zulip capitalises the issue in its label messages.
    let label_link = match titled {
        true => format!("[Issue #{number} {}]({url})", text(issue, &["title"])),
        false => format!("[Issue #{number}]({url})"),
    };
    let body = match action.as_str() {
        "assigned" | "unassigned" => match text(p, &["assignee", "login"]) {
            assignee if assignee.is_empty() => format!("{user} {action} {link}{period}"),
            assignee => {
                let to = if action == "assigned" { "to" } else { "from" };
                format!("{user} {action} {assignee} {to} {link}{period}")
            }
        },
        "labeled" => format!(
            "{} added the {} label to {label_link}.",
            user_link(p, user),
            text(p, &["label", "name"])
        ),
        "unlabeled" => format!(
            "{} removed the {} label from {label_link}.",
            user_link(p, user),
            text(p, &["label", "name"])
        ),
        "milestoned" => {
            format!("{} added milestone {} to {link}.", user_link(p, user), milestone())
        }
        "demilestoned" => {
            format!("{} removed milestone {} from {link}.", user_link(p, user), milestone())
        }
        "" => return None,
        // Opened, closed, reopened, edited, transferred…: the action as
        // GitHub names it, and the issue's description (as Zulip's
        // message for every other action).
        _ => format!("{user} {action} {link}{end}{body}"),
    };
    Some(("issues".to_owned(), topic, body))
}

fn issue_comment(p: &Value, repo: &str, user: &str, titled: bool) -> Made {
    let issue = p.get("issue")?;
    let comment = p.get("comment")?;
    let quote = quoted(&text(comment, &["body"]));
    let (topic, link, end) =
        issue_topic(repo, issue, titled, if quote.is_empty() { "." } else { ":" });
    let url = text(comment, &["html_url"]);
    let what = match text(p, &["action"]).as_str() {
        "created" => format!("[commented]({url})"),
        "edited" => format!("edited a [comment]({url})"),
        "deleted" => format!("deleted a [comment]({url})"),
        _ => return None,
    };
    let body = format!("{user} {what} on {link}{end}{quote}");
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
    let body = format!("{user} {verb} release [{name}]({url}) for tag {tag}.");
    Some(("release".to_owned(), repo.to_owned(), body))
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

/// Zulip's GitHub fixture tests, as facts: each payload here carries the
/// fields of Zulip's fixture that the message reads, and each expected
/// topic and message is Zulip's, word for word.
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::params::{Params, Payload};

    /// The topic and message natter makes of `payload` as GitHub event
    /// `event` (`None`: no message).
    fn made(event: &str, payload: Value) -> Option<(String, String)> {
        read(event, payload, false)
    }

    /// The message of `payload` when the URL names the topic.
    fn titled(event: &str, payload: Value) -> String {
        read(event, payload, true).expect("a message").1
    }

    fn read(event: &str, payload: Value, topic_given: bool) -> Option<(String, String)> {
        let mut params = Params::from_pairs(std::iter::empty());
        let payload = Payload {
            body: payload.to_string().into_bytes(),
            headers: vec![(EVENT_HEADER.to_owned(), event.to_owned())],
        };
        let mut request =
            Request { display: "GitHub", params: &mut params, payload: &payload, topic_given };
        let made = handle(&mut request).expect("a supported event");
        made.into_iter().next().map(|n| (n.topic, n.body))
    }

    fn says(event: &str, payload: Value, topic: &str, message: &str) {
        let got = made(event, payload).expect("a message");
        assert_eq!((got.0.as_str(), got.1.as_str()), (topic, message));
    }

    const BAXTER: &str = "https://github.com/baxterthehacker/public-repo";
    const SHA: &str = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c";

    fn commit(author: Value) -> Value {
        json!({"id": SHA, "message": "Update README.md", "url": format!("{BAXTER}/commit/{SHA}"),
               "author": author})
    }

    fn push_of(commits: Vec<Value>) -> Value {
        json!({"ref": "refs/heads/changes", "compare": format!("{BAXTER}/compare/9049f1265b7d...0d1a26e67d8f"),
               "repository": {"name": "public-repo"}, "sender": {"login": "baxterthehacker"},
               "commits": commits})
    }

    #[test]
    fn pushes() {
        let line = format!("* Update README.md ([0d1a26e67d8]({BAXTER}/commit/{SHA}))");
        let pushed =
            format!("baxterthehacker [pushed]({BAXTER}/compare/9049f1265b7d...0d1a26e67d8f)");
        let baxter = json!({"name": "baxterthehacker", "username": "baxterthehacker"});
        says(
            "push",
            push_of(vec![commit(baxter.clone())]),
            "public-repo / changes",
            &format!("{pushed} 1 commit to branch changes.\n\n{line}"),
        );
        // More than 20 commits: 20 listed, the rest counted.
        says(
            "push",
            push_of(vec![commit(baxter.clone()); 50]),
            "public-repo / changes",
            &format!(
                "{pushed} 50 commits to branch changes.\n\n{}[and 30 more commit(s)]",
                format!("{line}\n").repeat(20)
            ),
        );
        // Several committers, most first; past three, "others".
        let by = |name: &str| json!({"name": name, "username": name});
        let mut commits = vec![commit(by("Tomasz")); 3];
        commits.extend(vec![commit(by("Ben")); 2]);
        commits.push(commit(baxter.clone()));
        says(
            "push",
            push_of(commits.clone()),
            "public-repo / changes",
            &format!(
                "{pushed} 6 commits to branch changes. Commits by Tomasz (3), Ben (2) and \
                      baxterthehacker (1).\n\n{}{line}",
                format!("{line}\n").repeat(5)
            ),
        );
        let mut commits = vec![commit(by("Tomasz")); 4];
        commits.extend(vec![commit(by("Ben")); 3]);
        commits.extend(vec![commit(by("James")); 2]);
        commits.push(commit(by("Cordelia")));
        says(
            "push",
            push_of(commits),
            "public-repo / changes",
            &format!(
                "{pushed} 10 commits to branch changes. Commits by Tomasz (4), Ben (3), \
                      James (2) and others (1).\n\n{}{line}",
                format!("{line}\n").repeat(9)
            ),
        );
        // A commit author without a GitHub user name: named.
        let eesh = "https://github.com/eeshangarg/public-repo";
        let sha = "2e8cf535fb38a3dab2476cdf856efda904ad4c94";
        says(
            "push",
            json!({"ref": "refs/heads/changes", "compare": format!("{eesh}/compare/0383613da871...2e8cf535fb38"),
                   "repository": {"name": "public-repo"}, "sender": {"login": "eeshangarg"},
                   "commits": [{"id": sha, "message": "Update the README\n\nMore.", "url": format!("{eesh}/commit/{sha}"),
                                "author": {"name": "John Snow", "email": "john@example.com"}}]}),
            "public-repo / changes",
            &format!(
                "eeshangarg [pushed]({eesh}/compare/0383613da871...2e8cf535fb38) 1 commit to \
                      branch changes. Commits by John Snow (1).\n\n* Update the README \
                      ([2e8cf535fb3]({eesh}/commit/{sha}))"
            ),
        );
        // A deleted branch, a new one without commits, a forced push that
        // removed commits, a tag.
        let branch = |extra: Value| {
            let mut p = json!({"ref": "refs/heads/feature", "repository": {"name": "public-repo"},
                               "sender": {"login": "eeshangarg"}, "commits": []});
            p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            p
        };
        says(
            "push",
            branch(json!({"deleted": true, "compare": format!("{eesh}/compare/2e8cf535fb38...000000000000")})),
            "public-repo / feature",
            &format!("eeshangarg [deleted]({eesh}/compare/2e8cf535fb38...000000000000) the branch feature."),
        );
        says(
            "push",
            branch(json!({"created": true, "compare": format!("{eesh}/compare/feature")})),
            "public-repo / feature",
            &format!("eeshangarg [pushed]({eesh}/compare/feature) the branch feature."),
        );
        says(
            "push",
            json!({"ref": "refs/heads/temp", "forced": true, "commits": [],
                   "compare": "https://github.com/sbansal1999/zulip/compare/2084a91af9ca...9a8749ea8fe7",
                   "repository": {"name": "zulip"}, "sender": {"login": "sbansal1999"}}),
            "zulip / temp",
            "sbansal1999 [force pushed](https://github.com/sbansal1999/zulip/compare/2084a91af9ca...9a8749ea8fe7) the branch temp.",
        );
        says(
            "push",
            json!({"ref": "refs/tags/abc", "repository": {"name": "public-repo"},
                   "sender": {"login": "baxterthehacker"}, "commits": []}),
            "public-repo",
            "baxterthehacker pushed tag abc.",
        );
    }

    /// A `pull_request` payload of `action` on Zulip's PR #1 fixture.
    fn pr(action: &str, extra: Value) -> Value {
        let mut p = json!({
            "action": action, "repository": {"name": "public-repo"}, "sender": {"login": "baxterthehacker"},
            "pull_request": {"number": 1, "title": "Update the README with new information",
                             "html_url": format!("{BAXTER}/pull/1"),
                             "body": "This is a pretty simple change that we need to pull into master.",
                             "head": {"label": "baxterthehacker:changes", "ref": "changes"},
                             "base": {"label": "baxterthehacker:master", "ref": "master"},
                             "merged": false, "assignee": null}});
        for (k, v) in extra.as_object().unwrap() {
            match (k.as_str(), v) {
                ("pull_request", Value::Object(fields)) => {
                    p["pull_request"].as_object_mut().unwrap().extend(fields.clone())
                }
                _ => {
                    p[k] = v.clone();
                }
            }
        }
        p
    }

    #[test]
    fn pull_requests() {
        const TOPIC: &str = "public-repo / PR #1 Update the README with new information";
        let link = format!("[PR #1]({BAXTER}/pull/1)");
        says(
            "pull_request",
            pr("opened", json!({})),
            TOPIC,
            &format!(
                "baxterthehacker opened {link} from `baxterthehacker:changes` to \
                      `baxterthehacker:master`:\n\n~~~ quote\nThis is a pretty simple change that \
                      we need to pull into master.\n~~~"
            ),
        );
        says(
            "pull_request",
            json!({"action": "opened", "repository": {"name": "Scheduler"}, "sender": {"login": "eeshangarg"},
                   "pull_request": {"number": 4, "title": "Improve README", "body": null,
                                    "html_url": "https://github.com/eeshangarg/Scheduler/pull/4",
                                    "head": {"label": "eeshangarg:improve-readme-2"},
                                    "base": {"label": "eeshangarg:master"},
                                    "assignee": {"login": "eeshangarg"}}}),
            "Scheduler / PR #4 Improve README",
            "eeshangarg opened [PR #4](https://github.com/eeshangarg/Scheduler/pull/4) from \
             `eeshangarg:improve-readme-2` to `eeshangarg:master` (assigned to eeshangarg).",
        );
        says(
            "pull_request",
            pr("synchronize", json!({})),
            TOPIC,
            &format!("baxterthehacker updated {link}."),
        );
        // Reopened: no branches, no description; an assignee is named on
        // every update (Zulip's message for these actions).
        says(
            "pull_request",
            pr("reopened", json!({})),
            TOPIC,
            &format!("baxterthehacker reopened {link}."),
        );
        says(
            "pull_request",
            pr("synchronize", json!({"pull_request": {"assignee": {"login": "eeshangarg"}}})),
            TOPIC,
            &format!("baxterthehacker updated {link} (assigned to eeshangarg)."),
        );
        says(
            "pull_request",
            pr(
                "edited",
                json!({"changes": {"body": {"from": "old"}},
                       "pull_request": {"body": "New body", "assignee": {"login": "eeshangarg"}}}),
            ),
            TOPIC,
            &format!("baxterthehacker edited {link} (assigned to eeshangarg):\n\n~~~ quote\nNew body\n~~~"),
        );
        says(
            "pull_request",
            pr("closed", json!({})),
            TOPIC,
            &format!("baxterthehacker closed without merge {link}."),
        );
        says(
            "pull_request",
            pr("closed", json!({"pull_request": {"merged": true}})),
            TOPIC,
            &format!("baxterthehacker merged {link}."),
        );
        says(
            "pull_request",
            pr("edited", json!({})),
            TOPIC,
            &format!("baxterthehacker edited {link}."),
        );
        says(
            "pull_request",
            pr(
                "edited",
                json!({"changes": {"body": {"from": "old"}}, "pull_request": {"body": "PR EDITED"}}),
            ),
            TOPIC,
            &format!("baxterthehacker edited {link}:\n\n~~~ quote\nPR EDITED\n~~~"),
        );
        says(
            "pull_request",
            pr("assigned", json!({"assignee": {"login": "baxterthehacker"}})),
            TOPIC,
            &format!("baxterthehacker assigned baxterthehacker to {link}."),
        );
        says(
            "pull_request",
            pr("unassigned", json!({"assignee": {"login": "baxterthehacker"}})),
            TOPIC,
            &format!("baxterthehacker unassigned {link}."),
        );
        says(
            "pull_request",
            pr("ready_for_review", json!({})),
            TOPIC,
            &format!("**baxterthehacker** has marked {link} as ready for review."),
        );
        says(
            "pull_request",
            pr("review_requested", json!({"requested_reviewer": {"login": "showell", "html_url": "https://github.com/showell"}})),
            TOPIC,
            &format!("**baxterthehacker** requested [showell](https://github.com/showell) for a review on {link}."),
        );
        says(
            "pull_request",
            pr("review_requested", json!({"requested_team": {"name": "authority",
                "html_url": "https://github.com/orgs/test-org965/teams/authority"}})),
            TOPIC,
            &format!("**baxterthehacker** requested [authority](https://github.com/orgs/test-org965/teams/authority) \
                      for a review on {link}."),
        );
        says(
            "pull_request",
            pr("locked", json!({"pull_request": {"active_lock_reason": "off-topic"}})),
            TOPIC,
            &format!("baxterthehacker has locked {link} as off-topic and limited conversation to collaborators."),
        );
        says(
            "pull_request",
            pr("unlocked", json!({})),
            TOPIC,
            &format!("baxterthehacker has unlocked {link}."),
        );
        says(
            "pull_request",
            pr("auto_merge_enabled", json!({})),
            TOPIC,
            &format!("baxterthehacker has enabled auto merge for {link}."),
        );
        says(
            "pull_request",
            pr("auto_merge_disabled", json!({})),
            TOPIC,
            &format!("baxterthehacker has disabled auto merge for {link}."),
        );
        for ignored in
            ["approved", "converted_to_draft", "labeled", "review_request_removed", "unlabeled"]
        {
            assert_eq!(made("pull_request", pr(ignored, json!({}))), None, "{ignored}");
        }
    }

    fn issue(action: &str, extra: Value) -> Value {
        let mut p = json!({
            "action": action, "repository": {"name": "testing-gh"},
            "sender": {"login": "sbansal1999", "html_url": "https://github.com/sbansal1999"},
            "issue": {"number": 9, "title": "idk man", "body": null,
                      "html_url": "https://github.com/sbansal1999/testing-gh/issues/9"}});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    }

    #[test]
    fn issues_and_comments() {
        const TOPIC: &str = "public-repo / issue #2 Spelling error in the README file";
        let baxter_issue = json!({"number": 2, "title": "Spelling error in the README file",
            "html_url": format!("{BAXTER}/issues/2"),
            "body": "It looks like you accidentally spelled 'commit' with two 't's."});
        says(
            "issues",
            json!({"action": "opened", "issue": baxter_issue, "repository": {"name": "public-repo"},
                   "sender": {"login": "baxterthehacker"}}),
            TOPIC,
            &format!(
                "baxterthehacker opened [issue #2]({BAXTER}/issues/2):\n\n~~~ quote\nIt looks \
                      like you accidentally spelled 'commit' with two 't's.\n~~~"
            ),
        );
        says(
            "issue_comment",
            json!({"action": "created", "issue": baxter_issue, "repository": {"name": "public-repo"},
                   "sender": {"login": "baxterthehacker"},
                   "comment": {"html_url": format!("{BAXTER}/issues/2#issuecomment-99262140"),
                               "body": "You are totally right! I'll get this fixed right away."}}),
            TOPIC,
            &format!(
                "baxterthehacker [commented]({BAXTER}/issues/2#issuecomment-99262140) on \
                      [issue #2]({BAXTER}/issues/2):\n\n~~~ quote\nYou are totally right! I'll get \
                      this fixed right away.\n~~~"
            ),
        );
        let scheduler = "https://github.com/eeshangarg/Scheduler/issues/5";
        says(
            "issue_comment",
            json!({"action": "deleted", "repository": {"name": "Scheduler"}, "sender": {"login": "eeshangarg"},
                   "issue": {"number": 5, "title": "This is a new issue", "html_url": scheduler},
                   "comment": {"html_url": format!("{scheduler}#issuecomment-425164194"),
                               "body": "This is a comment on this new issue."}}),
            "Scheduler / issue #5 This is a new issue",
            &format!("eeshangarg deleted a [comment]({scheduler}#issuecomment-425164194) on \
                      [issue #5]({scheduler}):\n\n~~~ quote\nThis is a comment on this new issue.\n~~~"),
        );
        let pr_url = "https://github.com/sbansal1999/public-repo/pull/1";
        says(
            "issue_comment",
            json!({"action": "created", "repository": {"name": "public-repo"}, "sender": {"login": "sbansal1999"},
                   "issue": {"number": 1, "title": "Update the README with new information",
                             "html_url": pr_url, "pull_request": {"url": pr_url}},
                   "comment": {"html_url": format!("{pr_url}#issuecomment-1631445420"), "body": "Some comment"}}),
            "public-repo / PR #1 Update the README with new information",
            &format!(
                "sbansal1999 [commented]({pr_url}#issuecomment-1631445420) on [PR #1]({pr_url}):\
                      \n\n~~~ quote\nSome comment\n~~~"
            ),
        );
        // Any other action: GitHub's name for it, and the description.
        says(
            "issues",
            json!({"action": "closed", "issue": baxter_issue, "repository": {"name": "public-repo"},
                   "sender": {"login": "baxterthehacker"}}),
            TOPIC,
            &format!(
                "baxterthehacker closed [issue #2]({BAXTER}/issues/2):\n\n~~~ quote\nIt looks \
                      like you accidentally spelled 'commit' with two 't's.\n~~~"
            ),
        );
        let url = "https://github.com/sbansal1999/testing-gh/issues";
        for action in ["closed", "reopened", "transferred"] {
            says(
                "issues",
                issue(action, json!({})),
                "testing-gh / issue #9 idk man",
                &format!("sbansal1999 {action} [issue #9]({url}/9)."),
            );
        }
        says(
            "issues",
            issue("assigned", json!({})),
            "testing-gh / issue #9 idk man",
            &format!("sbansal1999 assigned [issue #9]({url}/9)."),
        );
        says(
            "issues",
            json!({"action": "assigned", "repository": {"name": "testing-gh"}, "sender": {"login": "sbansal1999"},
                   "assignee": {"login": "sbansal1999"},
                   "issue": {"number": 7, "title": "Testing when issue assigned!", "html_url": format!("{url}/7")}}),
            "testing-gh / issue #7 Testing when issue assigned!",
            &format!("sbansal1999 assigned sbansal1999 to [issue #7]({url}/7)."),
        );
        says(
            "issues",
            issue("unassigned", json!({"assignee": {"login": "sbansal1999"}})),
            "testing-gh / issue #9 idk man",
            &format!("sbansal1999 unassigned sbansal1999 from [issue #9]({url}/9)."),
        );
        says(
            "issues",
            issue("labeled", json!({"label": {"name": "bug"}})),
            "testing-gh / issue #9 idk man",
            &format!("[sbansal1999](https://github.com/sbansal1999) added the bug label to [Issue #9]({url}/9)."),
        );
        says(
            "issues",
            issue("unlabeled", json!({"label": {"name": "bug"}})),
            "testing-gh / issue #9 idk man",
            &format!("[sbansal1999](https://github.com/sbansal1999) removed the bug label from [Issue #9]({url}/9)."),
        );
        let milestone = json!({"milestone": {"title": "some_random_milestone",
            "html_url": "https://github.com/sbansal1999/testing-gh/milestone/1"}});
        let long = |action: &str| {
            let mut p = issue(action, milestone.clone());
            p["issue"] = json!({"number": 6, "title": "This is a sample issue to test GH Integration Func",
                                "html_url": format!("{url}/6")});
            p
        };
        let (topic, message) = made("issues", long("milestoned")).unwrap();
        assert_eq!(
            message,
            format!("[sbansal1999](https://github.com/sbansal1999) added milestone \
                     [some_random_milestone](https://github.com/sbansal1999/testing-gh/milestone/1) \
                     to [issue #6]({url}/6).")
        );
        // The send path cuts the topic to 60 characters, as Zulip shows it.
        let cut = crate::api::messages::normalize_topic_for(&topic, "").unwrap();
        assert_eq!(cut, "testing-gh / issue #6 This is a sample issue to test GH I...");
        assert_eq!(
            made("issues", long("demilestoned")).unwrap().1,
            format!("[sbansal1999](https://github.com/sbansal1999) removed milestone \
                     [some_random_milestone](https://github.com/sbansal1999/testing-gh/milestone/1) \
                     from [issue #6]({url}/6).")
        );
    }

    #[test]
    fn releases_and_pings() {
        says(
            "release",
            json!({"action": "published", "repository": {"name": "public-repo"},
                   "sender": {"login": "baxterthehacker"},
                   "release": {"tag_name": "0.0.1", "name": null,
                               "html_url": format!("{BAXTER}/releases/tag/0.0.1")}}),
            "public-repo",
            &format!("baxterthehacker published release [0.0.1]({BAXTER}/releases/tag/0.0.1) for tag 0.0.1."),
        );
        says(
            "ping",
            json!({"hook_id": 1, "repository": {"name": "public-repo"}, "sender": {"login": "TomaszKolek"}}),
            "public-repo",
            "GitHub webhook has been successfully configured by TomaszKolek.",
        );
        says(
            "ping",
            json!({"hook_id": 1, "organization": {"login": "zulip-test-org"}, "sender": {"login": "eeshangarg"}}),
            "zulip-test-org",
            "GitHub webhook has been successfully configured by eeshangarg.",
        );
    }

    #[test]
    fn a_topic_in_the_url_titles_the_issue_or_pull_request() {
        // Zulip's `*_with_custom_topic_in_url` tests.
        let link = format!("[PR #1 Update the README with new information]({BAXTER}/pull/1)");
        assert_eq!(
            titled("pull_request", pr("opened", json!({}))),
            format!(
                "baxterthehacker opened {link} from `baxterthehacker:changes` to \
                 `baxterthehacker:master`:\n\n~~~ quote\nThis is a pretty simple change that we \
                 need to pull into master.\n~~~"
            )
        );
        assert_eq!(
            titled("pull_request", pr("closed", json!({}))),
            format!("baxterthehacker closed without merge {link}.")
        );
        assert_eq!(
            titled(
                "pull_request",
                pr("assigned", json!({"assignee": {"login": "baxterthehacker"}}))
            ),
            format!("baxterthehacker assigned baxterthehacker to {link}.")
        );
        let baxter_issue = json!({"number": 2, "title": "Spelling error in the README file",
            "html_url": format!("{BAXTER}/issues/2"),
            "body": "It looks like you accidentally spelled 'commit' with two 't's."});
        let issue_link = format!("[issue #2 Spelling error in the README file]({BAXTER}/issues/2)");
        assert_eq!(
            titled(
                "issues",
                json!({"action": "opened", "issue": baxter_issue, "repository": {"name": "public-repo"},
                       "sender": {"login": "baxterthehacker"}})
            ),
            format!(
                "baxterthehacker opened {issue_link}:\n\n~~~ quote\nIt looks like you \
                 accidentally spelled 'commit' with two 't's.\n~~~"
            )
        );
        assert_eq!(
            titled(
                "issue_comment",
                json!({"action": "created", "issue": baxter_issue, "repository": {"name": "public-repo"},
                       "sender": {"login": "baxterthehacker"},
                       "comment": {"html_url": format!("{BAXTER}/issues/2#issuecomment-99262140"),
                                   "body": "You are totally right! I'll get this fixed right away."}})
            ),
            format!(
                "baxterthehacker [commented]({BAXTER}/issues/2#issuecomment-99262140) on \
                 {issue_link}:\n\n~~~ quote\nYou are totally right! I'll get this fixed right \
                 away.\n~~~"
            )
        );
        let url = "https://github.com/sbansal1999/testing-gh/issues";
        // A title ending in punctuation takes no period after it.
        assert_eq!(
            titled(
                "issues",
                json!({"action": "assigned", "repository": {"name": "testing-gh"},
                       "sender": {"login": "sbansal1999"}, "assignee": {"login": "sbansal1999"},
                       "issue": {"number": 7, "title": "Testing when issue assigned!",
                                 "html_url": format!("{url}/7")}})
            ),
            format!("sbansal1999 assigned sbansal1999 to [issue #7 Testing when issue assigned!]({url}/7)")
        );
        assert_eq!(
            titled("issues", issue("unassigned", json!({"assignee": {"login": "sbansal1999"}}))),
            format!("sbansal1999 unassigned sbansal1999 from [issue #9 idk man]({url}/9).")
        );
        assert_eq!(
            titled("issues", issue("labeled", json!({"label": {"name": "bug"}}))),
            format!(
                "[sbansal1999](https://github.com/sbansal1999) added the bug label to \
                 [Issue #9 idk man]({url}/9)."
            )
        );
        // Events about no issue or pull request are unchanged.
        let push = push_of(vec![commit(
            json!({"name": "baxterthehacker", "username": "baxterthehacker"}),
        )]);
        assert_eq!(titled("push", push.clone()), made("push", push).unwrap().1);
    }

    fn run(action: &str, conclusion: Value) -> Value {
        json!({"action": action, "repository": {"name": "public-repo"},
               "sender": {"login": "baxterthehacker"},
               "workflow_run": {"name": "CI", "run_number": 42, "head_branch": "main",
                                "event": "push", "conclusion": conclusion,
                                "html_url": format!("{BAXTER}/actions/runs/7")}})
    }

    #[test]
    fn workflow_runs() {
        let told = |conclusion: &str, icon: &str| {
            format!(
                "[CI]({BAXTER}/actions/runs/7) workflow run #42 on branch `main` (push) \
                 completed: {icon} **{conclusion}**."
            )
        };
        for (conclusion, icon) in [
            ("success", ":check:"),
            ("failure", ":cross_mark:"),
            ("timed_out", ":cross_mark:"),
            ("cancelled", ":warning:"),
            ("skipped", ":warning:"),
        ] {
            says(
                "workflow_run",
                run("completed", json!(conclusion)),
                "public-repo / CI",
                &told(conclusion, icon),
            );
        }
        // Requested and in-progress runs make no message.
        for action in ["requested", "in_progress"] {
            assert_eq!(made("workflow_run", run(action, Value::Null)), None, "{action}");
        }
    }
}
