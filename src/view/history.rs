//! A message's edit history as Zulip shows it: its versions, the
//! `edit_history` of a Message resource, and `content_html_diff`, the
//! rendered HTML of a version with what changed marked.

use serde_json::{json, Map, Value};

use crate::state::messages::EditRecord;
use crate::state::{ChannelId, Destination, Message};

/// One version of a message: what it looked like after an edit.
#[derive(Clone, Debug)]
pub struct Version {
    /// Markdown.
    pub content: String,
    /// HTML.
    pub rendered: String,
    /// Topic (`""` for direct messages and the empty topic).
    pub topic: String,
    /// Channel, for channel messages.
    pub channel: Option<ChannelId>,
}

/// The versions of a message: `out[0]` is the original, `out[k]` the
/// message right after `edit_history[k - 1]`.
pub fn versions(message: &Message) -> Vec<Version> {
    let (topic, channel) = match &message.destination {
        Destination::Channel { channel, topic } => (topic.to_string(), Some(*channel)),
        Destination::Direct { .. } => (String::new(), None),
    };
    let mut current = Version {
        content: message.content().to_owned(),
        rendered: message.rendered().to_owned(),
        topic,
        channel,
    };
    let mut out = vec![current.clone()];
    for record in message.edit_history().iter().rev() {
        if let Some((content, rendered)) = &record.prev_content {
            current.content = content.clone();
            current.rendered = rendered.clone();
        }
        if let Some(topic) = &record.prev_topic {
            current.topic = topic.clone();
        }
        if let Some(channel) = record.prev_channel {
            current.channel = Some(channel);
        }
        out.push(current.clone());
    }
    out.reverse();
    out
}

/// The fields of one edit record shared by the message's `edit_history`
/// and the history endpoint.
pub fn record_fields(
    record: &EditRecord,
    after: &Version,
    show: &dyn Fn(&str) -> String,
) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("user_id".into(), json!(record.user.0));
    out.insert("timestamp".into(), json!(record.timestamp));
    if let Some((content, rendered)) = &record.prev_content {
        out.insert("prev_content".into(), json!(content));
        out.insert("prev_rendered_content".into(), json!(rendered));
    }
    if let Some(topic) = &record.prev_topic {
        out.insert("prev_topic".into(), json!(show(topic)));
        out.insert("topic".into(), json!(show(&after.topic)));
    }
    if let Some(channel) = record.prev_channel {
        out.insert("prev_stream".into(), json!(channel.0));
        out.insert("stream".into(), json!(after.channel.map(|c| c.0)));
    }
    out
}

/// `edit_history` of a Message resource: newest first.
pub fn edit_history_json(message: &Message, show: &dyn Fn(&str) -> String) -> Vec<Value> {
    let versions = versions(message);
    message
        .edit_history()
        .iter()
        .enumerate()
        .rev()
        .map(|(k, record)| Value::Object(record_fields(record, &versions[k + 1], show)))
        .collect()
}

/// Most tokens compared by the diff; longer pairs are shown as wholly
/// replaced (the table is quadratic).
const MAX_DIFF_CELLS: usize = 4_000_000;

/// `new` HTML with the text that differs from `old` marked, as Zulip's
/// `content_html_diff`: inserted text in `<span class="highlight_text_inserted">`,
/// removed text in `<span class="highlight_text_deleted">`. Tags are
/// compared as tokens but never wrapped, so the result stays well-formed.
pub fn html_diff(old: &str, new: &str) -> String {
    let a = tokens(old);
    let b = tokens(new);
    // Common prefix and suffix first: most edits are small.
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix =
        a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut out = String::with_capacity(new.len() + 64);
    for t in &b[..prefix] {
        out.push_str(t);
    }
    let ops = if ma.len().saturating_mul(mb.len()) <= MAX_DIFF_CELLS {
        lcs_ops(ma, mb)
    } else {
        ma.iter().map(|t| Op::Delete(t)).chain(mb.iter().map(|t| Op::Insert(t))).collect()
    };
    for op in ops {
        match op {
            Op::Keep(t) => out.push_str(t),
            Op::Insert(t) => mark(&mut out, t, "highlight_text_inserted"),
            Op::Delete(t) if !t.starts_with('<') => mark(&mut out, t, "highlight_text_deleted"),
            Op::Delete(_) => {}
        }
    }
    for t in &b[b.len() - suffix..] {
        out.push_str(t);
    }
    out
}

fn mark(out: &mut String, token: &str, class: &str) {
    if token.starts_with('<') || token.trim().is_empty() {
        out.push_str(token);
    } else {
        out.push_str(&format!("<span class=\"{class}\">{token}</span>"));
    }
}

enum Op<'a> {
    Keep(&'a str),
    Insert(&'a str),
    Delete(&'a str),
}

/// Tags, runs of whitespace, and runs of other text.
fn tokens(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = html.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i] == b'<' {
            i = html[i..].find('>').map_or(bytes.len(), |e| i + e + 1);
        } else if bytes[i].is_ascii_whitespace() {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
        } else {
            while i < bytes.len() && bytes[i] != b'<' && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        out.push(&html[start..i]);
    }
    out
}

/// Edit script by longest common subsequence (iterative; bounded table).
fn lcs_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let mut ops = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Keep(b[j]));
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            ops.push(Op::Delete(a[i]));
            i += 1;
        } else {
            ops.push(Op::Insert(b[j]));
            j += 1;
        }
    }
    ops.extend(a[i..].iter().map(|t| Op::Delete(t)));
    ops.extend(b[j..].iter().map(|t| Op::Insert(t)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_diff_marks_changed_words() {
        assert_eq!(
            html_diff("<p>hello world</p>", "<p>hello brave world</p>"),
            "<p>hello <span class=\"highlight_text_inserted\">brave</span> world</p>"
        );
        assert_eq!(
            html_diff("<p>a b c</p>", "<p>a c</p>"),
            "<p>a <span class=\"highlight_text_deleted\">b</span> c</p>"
        );
        assert_eq!(html_diff("<p>same</p>", "<p>same</p>"), "<p>same</p>");
        let big_old = "<p>".to_owned() + &"x ".repeat(5000) + "</p>";
        let big_new = "<p>".to_owned() + &"y ".repeat(5000) + "</p>";
        assert!(html_diff(&big_old, &big_new).contains("highlight_text_inserted"));
    }
}
