//! `sentry`: Sentry's internal-integration webhooks, the resource named by
//! the `Sentry-Hook-Resource` header: `issue` (created, resolved, assigned,
//! ignored) and `event_alert` (an alert rule fired on an event); and the
//! legacy plugin webhook (no header: `project_name`, `message`, `url`,
//! `event`). The topic is the issue's or event's title.
//!
//! Event names the filters see: `issue`, `event_alert`, `legacy`.

use serde_json::Value;

use super::{Notification, Request};
use crate::error::ApiResult;

/// The header naming the resource.
const RESOURCE_HEADER: &str = "Sentry-Hook-Resource";

/// Longest topic kept from a title (natter truncates beyond it anyway).
const TOPIC_CHARS: usize = 60;

/// The message for one Sentry delivery.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let resource = request.payload.header(RESOURCE_HEADER).map(str::to_owned);
    let p = request.json_object()?;
    let made = match resource.as_deref() {
        Some("issue") => issue(&p),
        Some("event_alert") => event_alert(&p),
        // Sentry's check that the URL answers.
        Some("installation") => return Ok(Vec::new()),
        Some(other) => return Err(request.unsupported(other)),
        None => legacy(&p),
    };
    let (event, title, body) = made.ok_or_else(|| request.anomalous())?;
    let topic: String = title.chars().take(TOPIC_CHARS).collect();
    Ok(vec![Notification { event: Some(event.to_owned()), topic, body }])
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `**level:** …` / `**culprit:** …` lines for the fields present.
fn details(value: &Value, keys: &[&str]) -> String {
    let lines: Vec<String> = keys
        .iter()
        .filter(|k| !text(value, k).is_empty())
        .map(|k| format!("**{k}:** {}", text(value, k)))
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("\n```quote\n{}\n```", lines.join("\n"))
    }
}

fn issue(p: &Value) -> Option<(&'static str, String, String)> {
    let issue = p.get("data")?.get("issue")?;
    let title = text(issue, "title").to_owned();
    if title.is_empty() {
        return None;
    }
    let url = match text(issue, "web_url") {
        "" => text(issue, "permalink"),
        url => url,
    };
    let link = format!("[{title}]({url})");
    let actor = p.get("actor").map(|a| text(a, "name")).unwrap_or("");
    let body = match text(p, "action") {
        "created" => format!(
            "**New issue created:** {link}{}",
            details(issue, &["level", "culprit", "shortId"])
        ),
        "resolved" => format!("Issue {link} was marked as resolved by {actor}."),
        "ignored" | "archived" => format!("Issue {link} was ignored by {actor}."),
        "unresolved" => format!("Issue {link} was marked as unresolved by {actor}."),
        "assigned" => {
            let to = p
                .get("data")
                .and_then(|d| d.get("issue"))
                .and_then(|i| i.get("assignedTo"))
                .map(|a| text(a, "name"))
                .unwrap_or("");
            format!("Issue {link} has now been assigned to {to} by {actor}.")
        }
        _ => return None,
    };
    Some(("issue", title, body))
}

fn event_alert(p: &Value) -> Option<(&'static str, String, String)> {
    let data = p.get("data")?;
    let event = data.get("event")?;
    let title = text(event, "title").to_owned();
    if title.is_empty() {
        return None;
    }
    let rule = text(data, "triggered_rule");
    let mut body = format!(
        "**New {} event:** [{title}]({}){}",
        match text(event, "level") {
            "" => "error",
            level => level,
        },
        text(event, "web_url"),
        details(event, &["culprit", "environment", "platform"])
    );
    if !rule.is_empty() {
        body.push_str(&format!("\nTriggered by the alert rule **{rule}**."));
    }
    Some(("event_alert", title, body))
}

fn legacy(p: &Value) -> Option<(&'static str, String, String)> {
    let project = text(p, "project_name");
    let message = text(p, "message");
    if project.is_empty() || message.is_empty() {
        return None;
    }
    let title = match p.get("event").map(|e| text(e, "title")) {
        Some(title) if !title.is_empty() => title.to_owned(),
        _ => message.to_owned(),
    };
    let body = format!(
        "**New {} event in {project}:** [{message}]({}){}",
        match text(p, "level") {
            "" => "error",
            level => level,
        },
        text(p, "url"),
        details(p, &["culprit"])
    );
    Some(("legacy", title, body))
}
