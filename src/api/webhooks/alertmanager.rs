//! `alertmanager`: Prometheus Alertmanager's webhook receiver. Alerts are
//! grouped by name (the `name` query parameter picks the label, default
//! `alertname`), one message per name and status, the name being the
//! topic: `:alert: **FIRING** <desc> ([graph](url))` for one alert, a list
//! for several; resolved ones with `:squared_ok: **Resolved**`. Each
//! alert's text is the `desc` label or annotation (default `instance`).

use serde_json::Value;

use super::{Notification, Request};
use crate::error::ApiResult;

/// One message per alert name and status, in the order names appear.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let name_field = request.params.string("name").unwrap_or_else(|| "alertname".to_owned());
    let desc_field = request.params.string("desc").unwrap_or_else(|| "instance".to_owned());
    let payload = request.json_object()?;
    let alerts =
        payload.get("alerts").and_then(Value::as_array).ok_or_else(|| request.anomalous())?;
    // (name, firing, resolved), first appearance order.
    let mut groups: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for alert in alerts {
        let field = |key: &str| {
            ["labels", "annotations"]
                .iter()
                .find_map(|part| alert.get(part)?.get(key)?.as_str().map(str::to_owned))
        };
        let name = field(&name_field).unwrap_or_else(|| "(unknown)".to_owned());
        let desc = field(&desc_field).unwrap_or_else(|| format!("<missing field: {desc_field}>"));
        let url = alert.get("generatorURL").and_then(Value::as_str).unwrap_or("");
        let line = if url.is_empty() {
            desc
        } else {
            format!("{desc} ([graph]({}))", url.replace("tab=1", "tab=0"))
        };
        let at = match groups.iter().position(|g| g.0 == name) {
            Some(at) => at,
            None => {
                groups.push((name, Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        match alert.get("status").and_then(Value::as_str) {
            Some("resolved") => groups[at].2.push(line),
            Some("firing") => groups[at].1.push(line),
            _ => return Err(request.anomalous()),
        }
    }
    let mut out = Vec::new();
    for (name, firing, resolved) in groups {
        for (icon, title, lines) in
            [(":alert:", "FIRING", firing), (":squared_ok:", "Resolved", resolved)]
        {
            let body = match lines.as_slice() {
                [] => continue,
                [one] => format!("{icon} **{title}** {one}"),
                many => {
                    let list: Vec<String> = many.iter().map(|l| format!("* {l}")).collect();
                    format!("{icon} **{title}**\n{}", list.join("\n"))
                }
            };
            out.push(Notification { event: None, topic: name.clone(), body });
        }
    }
    Ok(out)
}
