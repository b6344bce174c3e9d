//! `json`: any JSON payload, shown as a `json` code block under the topic
//! "JSON", as Zulip's JSON formatter integration.

use super::{Notification, Request};
use crate::error::ApiResult;

/// The topic of every message.
const TOPIC: &str = "JSON";

/// The payload, pretty-printed in a code block.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let value = request.json()?;
    let pretty = serde_json::to_string_pretty(&value).map_err(|_| request.anomalous())?;
    let body = format!("```json\n{pretty}\n```");
    Ok(vec![Notification { event: None, topic: TOPIC.to_owned(), body }])
}
