//! `slack_incoming`: Slack-compatible incoming webhooks, for services that
//! only speak Slack's format. The body is JSON (or a form whose `payload`
//! field is); the message is made of its `blocks` and `attachments`, else
//! its `text` (after `icon_emoji`). Slack's markup is converted to
//! Markdown: `<url|text>` links, `*bold*`, `_italic_`, `~strike~`.
//! The topic is the URL's `topic`, else the payload's `channel` (without
//! its `#`/`@`), else "(no topic)". An empty message sends nothing.

use serde_json::Value;

use super::{Notification, Request};
use crate::error::ApiResult;

/// The message for a Slack payload.
pub fn handle(request: &mut Request) -> ApiResult<Vec<Notification>> {
    let payload = request.json_object()?;
    let topic = match payload.get("channel").and_then(Value::as_str) {
        Some(channel) => channel.trim_start_matches(['#', '@']).to_owned(),
        None => "(no topic)".to_owned(),
    };
    let mut pieces: Vec<String> = Vec::new();
    for block in payload.get("blocks").and_then(Value::as_array).into_iter().flatten() {
        pieces.push(render_block(block));
    }
    for attachment in payload.get("attachments").and_then(Value::as_array).into_iter().flatten() {
        pieces.push(render_attachment(attachment));
    }
    let mut body: String =
        pieces.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n");
    if body.is_empty() {
        if let Some(text) = payload.get("text").and_then(Value::as_str) {
            body = match payload.get("icon_emoji").and_then(Value::as_str) {
                Some(icon) => format!("{icon} {text}"),
                None => text.to_owned(),
            };
        }
    }
    let body = convert_markup(replace_links(&body).trim());
    if body.trim().is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Notification { event: None, topic, body }])
}

/// A text object's text (`mrkdwn` or `plain_text`).
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(object) => object.get("text").and_then(Value::as_str).unwrap_or("").to_owned(),
        None => String::new(),
    }
}

/// One layout block: section, header, divider, context, image.
fn render_block(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "section" => {
            let mut out = vec![text_of(block.get("text"))];
            for field in block.get("fields").and_then(Value::as_array).into_iter().flatten() {
                out.push(text_of(Some(field)));
            }
            if let Some(accessory) = block.get("accessory") {
                if accessory.get("type").and_then(Value::as_str) == Some("image") {
                    out.push(image(accessory));
                }
            }
            out.retain(|s| !s.is_empty());
            out.join("\n")
        }
        "header" => format!("## {}", text_of(block.get("text"))),
        "divider" => "---".to_owned(),
        "context" => block
            .get("elements")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| match e.get("type").and_then(Value::as_str) {
                Some("image") => image(e),
                _ => text_of(Some(e)),
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        "image" => image(block),
        _ => String::new(),
    }
}

/// An image element as a link Zulip previews.
fn image(value: &Value) -> String {
    let url = value.get("image_url").and_then(Value::as_str).unwrap_or("");
    if url.is_empty() {
        return String::new();
    }
    let alt = value.get("alt_text").and_then(Value::as_str).unwrap_or("image");
    format!("[{alt}]({url})")
}

/// A legacy attachment: pretext, title (linked), text, fields, image,
/// footer.
fn render_attachment(attachment: &Value) -> String {
    let get = |key: &str| attachment.get(key).and_then(Value::as_str).unwrap_or("");
    let mut out: Vec<String> = Vec::new();
    if !get("pretext").is_empty() {
        out.push(get("pretext").to_owned());
    }
    match (get("title"), get("title_link")) {
        ("", _) => {}
        (title, "") => out.push(format!("## {title}")),
        (title, link) => out.push(format!("## [{title}]({link})")),
    }
    if !get("text").is_empty() {
        out.push(get("text").to_owned());
    }
    for field in attachment.get("fields").and_then(Value::as_array).into_iter().flatten() {
        let title = field.get("title").and_then(Value::as_str).unwrap_or("");
        let value = field.get("value").and_then(Value::as_str).unwrap_or("");
        match (title.is_empty(), value.is_empty()) {
            (true, true) => {}
            (false, true) => out.push(format!("**{title}**")),
            (true, false) => out.push(value.to_owned()),
            (false, false) => out.push(format!("**{title}**: {value}")),
        }
    }
    if !get("image_url").is_empty() {
        out.push(format!("[image]({})", get("image_url")));
    }
    if !get("footer").is_empty() {
        out.push(get("footer").to_owned());
    }
    if out.is_empty() && !get("fallback").is_empty() {
        out.push(get("fallback").to_owned());
    }
    out.join("\n")
}

/// Slack's `<url|text>` → `[text](url)` and `<url>` → `url`, for http(s)
/// and mailto links; other `<…>` (user and channel references) are kept.
pub fn replace_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let is_link = ["http://", "https://", "mailto:"].iter().any(|p| inner.starts_with(p))
            && !inner.contains('\n');
        if is_link {
            match inner.split_once('|') {
                Some((url, label)) if !label.is_empty() => {
                    out.push_str(&format!("[{label}]({url})"))
                }
                Some((url, _)) => out.push_str(url),
                None => out.push_str(inner),
            }
        } else {
            out.push('<');
            out.push_str(inner);
            out.push('>');
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Slack's `*bold*`, `_italic_` and `~strike~` as Markdown's `**bold**`,
/// `*italic*` and `~~strike~~`.
pub fn convert_markup(text: &str) -> String {
    let bold = convert(text, '*', "**");
    let italic = convert(&bold, '_', "*");
    convert(&italic, '~', "~~")
}

/// Replaces each `d…d` span (opening after the start or a non-word
/// character and before a non-space; closing after a non-space and before
/// the end or a non-word character; on one line, without `d` inside) with
/// `to…to`. A `d` doubled (Markdown already) is left alone.
fn convert(text: &str, d: char, to: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = c == d
            && (i == 0 || !word(chars[i - 1]) && chars[i - 1] != d)
            && chars.get(i + 1).is_some_and(|&n| !n.is_whitespace() && n != d);
        if opens {
            // The closing delimiter on this line.
            let close = (i + 1..chars.len()).take_while(|&j| chars[j] != '\n').find(|&j| {
                chars[j] == d
                    && !chars[j - 1].is_whitespace()
                    && chars.get(j + 1).is_none_or(|&n| !word(n) && n != d)
            });
            if let Some(j) = close {
                if !chars[i + 1..j].contains(&d) {
                    out.push_str(to);
                    out.extend(&chars[i + 1..j]);
                    out.push_str(to);
                    i = j + 1;
                    continue;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_markup_are_converted() {
        assert_eq!(
            replace_links("see <https://a.test/x|the page> and <https://b.test> or <@U123>"),
            "see [the page](https://a.test/x) and https://b.test or <@U123>"
        );
        assert_eq!(convert_markup("a *bold* b"), "a **bold** b");
        assert_eq!(convert_markup("_it_ and ~gone~"), "*it* and ~~gone~~");
        // Inside words, across spaces at the edges, or doubled: kept.
        assert_eq!(convert_markup("snake_case_name"), "snake_case_name");
        assert_eq!(convert_markup("2 * 3 * 4"), "2 * 3 * 4");
        assert_eq!(convert_markup("**already**"), "**already**");
        assert_eq!(convert_markup("*multi\nline*"), "*multi\nline*");
    }
}
