//! `grafana`: Grafana's alert notification webhook, in both of Grafana's
//! formats. Unified alerting (`alerts` list, `status` firing/resolved):
//! the topic is the notification's `title`; the body names the status and
//! lists each alert with its summary and a link to its source. Legacy
//! alerting (`ruleName`, `state`, `evalMatches`): the topic is the
//! `title`; the body links the rule, quotes the message and lists the
//! matched metrics. The event name (for the filters) is the status or
//! state: `firing`, `resolved`, `alerting`, `ok`, `pending`, `paused`,
//! `no_data`.

use serde_json::Value;

use super::{Notification, Request};
use crate::error::ApiResult;

/// The message for one Grafana notification.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let p = request.json_object()?;
    let get = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let title = get("title");
    let topic = if title.is_empty() { "Grafana alert".to_owned() } else { title };
    if let Some(alerts) = p.get("alerts").and_then(Value::as_array) {
        let status = get("status");
        if status.is_empty() {
            return Err(request.anomalous());
        }
        let icon = if status == "resolved" { ":checkbox:" } else { ":alert:" };
        let mut body = format!("{icon} **{}**\n", status.to_uppercase());
        for alert in alerts {
            let field = |part: &str, key: &str| {
                alert.get(part).and_then(|v| v.get(key)).and_then(Value::as_str).unwrap_or("")
            };
            let name = field("labels", "alertname");
            let mut line = format!("\n* **{}**", if name.is_empty() { "alert" } else { name });
            let text = [field("annotations", "summary"), field("annotations", "description")]
                .into_iter()
                .find(|t| !t.is_empty());
            if let Some(text) = text {
                line.push_str(&format!(": {text}"));
            }
            if let Some(url) = alert.get("generatorURL").and_then(Value::as_str) {
                if !url.is_empty() {
                    line.push_str(&format!(" ([source]({url}))"));
                }
            }
            body.push_str(&line);
        }
        return Ok(vec![Notification { event: Some(status), topic, body }]);
    }
    let state = get("state");
    if state.is_empty() {
        return Err(request.anomalous());
    }
    let (rule, url) = (get("ruleName"), get("ruleUrl"));
    let mut body = if url.is_empty() { format!("**{rule}**") } else { format!("[{rule}]({url})") };
    body.push_str(&format!(" is **{state}**."));
    let message = get("message");
    if !message.is_empty() {
        body.push_str(&format!("\n\n~~~ quote\n{message}\n~~~"));
    }
    for eval in p.get("evalMatches").and_then(Value::as_array).into_iter().flatten() {
        let metric = eval.get("metric").and_then(Value::as_str).unwrap_or("");
        let value = eval.get("value").map(Value::to_string).unwrap_or_default();
        body.push_str(&format!("\n* **{metric}**: {value}"));
    }
    Ok(vec![Notification { event: Some(state), topic, body }])
}
