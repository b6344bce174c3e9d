//! Links the server's own messages write: a channel topic's narrow URL
//! and the text of a Markdown link to it (Zulip's fallback form), shared by
//! the move notices, reminders and reports.

use crate::markdown::hash_encode;
use crate::state::Channel;

/// `#narrow/channel/ID-slug/topic/TOPIC`.
pub fn topic_url(channel: &Channel, topic: &str) -> String {
    format!(
        "#narrow/channel/{}-{}/topic/{}",
        channel.id.0,
        hash_encode(&channel.name.replace(' ', "-")),
        hash_encode(topic)
    )
}

/// Escapes what would break the fallback link's text.
pub fn escape_link_text(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '`' => out.push_str("&#96;"),
            '>' => out.push_str("&gt;"),
            '*' => out.push_str("&#42;"),
            '&' => out.push_str("&amp;"),
            '[' => out.push_str("&#91;"),
            ']' => out.push_str("&#93;"),
            c => out.push(c),
        }
    }
    out.replace("$$", "&#36;&#36;")
}
