//! Zulip's inline syntax that CommonMark would misread: user and group
//! mentions (`@**Name**`, `@*group*`), channel and topic links
//! (`#**channel>topic**`), emoji names (`:smile:`) and global times
//! (`<time:2024-05-01T16:00:00+02:00>`).
//!
//! `@**Name**` is strong emphasis to CommonMark, so these are found in one
//! linear pass over the source *before* parsing and replaced by
//! placeholders (`U+E000 index U+E001`, characters CommonMark never
//! interprets). The renderer puts back either the rendered HTML or — inside
//! code — the original text. Only syntax that resolves becomes a
//! placeholder; anything else stays Markdown, as in Zulip.

use std::fmt::Write as _;

use super::{emoji, escape_html, Resolver};

/// Starts a placeholder.
pub(super) const OPEN: char = '\u{E000}';
/// Ends a placeholder.
pub(super) const CLOSE: char = '\u{E001}';

/// Longest name looked for between `**` delimiters, in bytes: longer runs
/// are not mentions, which keeps the scan linear on hostile input.
const MAX_NAME_BYTES: usize = 200;

/// What a rendered piece means for notifications.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// Nothing (emoji, channel links, silent mentions).
    None,
    /// Mentions this user.
    User(u64),
    /// Mentions this group.
    Group(u64),
    /// `@**all**`, `@**everyone**`, `@**channel**`, `@**stream**`.
    ChannelWildcard,
    /// `@**topic**`.
    TopicWildcard,
}

/// One recognised piece of Zulip syntax.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    /// Its HTML.
    pub html: String,
    /// The source text it replaced.
    pub original: String,
    /// What it mentions.
    pub effect: Effect,
}

/// Replaces Zulip syntax in `source` by placeholders; returns the text to
/// parse and the pieces, indexed by placeholder number.
pub(super) fn prepass(source: &str, resolver: &dyn Resolver) -> (String, Vec<Piece>) {
    let mut out = String::with_capacity(source.len());
    let mut pieces = Vec::new();
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < source.len() {
        // Jump to the next byte that can start something: `@`, `#`, `:`,
        // `<`, or the lead byte 0xEE of a would-be placeholder character.
        let Some(skip) =
            bytes[i..].iter().position(|b| matches!(b, b'@' | b'#' | b':' | b'<' | 0xEE))
        else {
            out.push_str(&source[i..]);
            break;
        };
        out.push_str(&source[i..i + skip]);
        i += skip;
        let rest = &source[i..];
        let c = rest.chars().next().expect("in bounds");
        let prev = source[..i].chars().next_back();
        let found = match c {
            '@' if mention_boundary(prev) => mention(rest, resolver),
            '#' if channel_boundary(prev) => channel_link(rest, resolver),
            ':' => emoji_name(rest, resolver),
            '<' => global_time(rest),
            _ => None,
        };
        match found {
            Some((len, piece)) => {
                let _ = write!(out, "{OPEN}{}{CLOSE}", pieces.len());
                pieces.push(piece);
                i += len;
            }
            None => {
                // The placeholder characters themselves never pass through.
                out.push(if c == OPEN || c == CLOSE { '\u{FFFD}' } else { c });
                i += c.len_utf8();
            }
        }
    }
    (out, pieces)
}

/// Zulip only sees a mention at the start, after whitespace or an opening
/// quote, bracket or slash.
fn mention_boundary(prev: Option<char>) -> bool {
    prev.is_none_or(|p| p.is_whitespace() || "'\"({[/<".contains(p))
}

fn channel_boundary(prev: Option<char>) -> bool {
    prev.is_none_or(|p| p.is_whitespace() || "'\"(,:<".contains(p))
}

/// The text between `open` and the next `close`, if it is a plausible name:
/// non-empty, one line, no `*`, at most `MAX_NAME_BYTES`. Returns the name
/// and the length consumed including both delimiters.
fn delimited<'a>(s: &'a str, open: &str, close: &str) -> Option<(&'a str, usize)> {
    let body = s.strip_prefix(open)?;
    let limit = body.len().min(MAX_NAME_BYTES + close.len());
    let window = &body.as_bytes()[..limit];
    let end = window.iter().position(|b| *b == b'*' || *b == b'\n')?;
    let name = &body[..end];
    if name.trim().is_empty() || !body[end..].starts_with(close) {
        return None;
    }
    Some((name, open.len() + end + close.len()))
}

/// `@**Name**`, `@**Name|id**`, `@_**Name**`, wildcards, `@*group*`, `@_*group*`.
fn mention(s: &str, resolver: &dyn Resolver) -> Option<(usize, Piece)> {
    let (silent, body, prefix) = match s.strip_prefix("@_") {
        Some(body) => (true, body, 2),
        None => (false, &s[1..], 1),
    };
    let class_suffix = if silent { " silent" } else { "" };
    let at = if silent { "" } else { "@" };
    let piece = |len: usize, html: String, effect: Effect| {
        let effect = if silent { Effect::None } else { effect };
        Some((prefix + len, Piece { html, original: s[..prefix + len].to_owned(), effect }))
    };
    if let Some((inner, len)) = delimited(body, "**", "**") {
        let wildcard = match inner {
            "all" | "everyone" | "channel" | "stream" => Some(Effect::ChannelWildcard),
            "topic" => Some(Effect::TopicWildcard),
            _ => None,
        };
        match wildcard {
            Some(Effect::TopicWildcard) => {
                let html = format!("<span class=\"topic-mention{class_suffix}\">{at}topic</span>");
                return piece(len, html, Effect::TopicWildcard);
            }
            Some(effect) => {
                let html = format!(
                    "<span class=\"user-mention channel-wildcard-mention{class_suffix}\" \
                     data-user-id=\"*\">{at}{inner}</span>"
                );
                return piece(len, html, effect);
            }
            None => {}
        }
        let user = match inner.rsplit_once('|') {
            Some((name, id)) => {
                let id: u64 = id.trim().parse().ok()?;
                let user = resolver.user_by_id(id)?;
                let name = name.trim();
                if !name.is_empty() && !name.eq_ignore_ascii_case(user.1.trim()) {
                    return None;
                }
                user
            }
            None => resolver.user_by_name(inner.trim())?,
        };
        let html = format!(
            "<span class=\"user-mention{class_suffix}\" data-user-id=\"{}\">{at}{}</span>",
            user.0,
            escape_html(&user.1)
        );
        return piece(len, html, Effect::User(user.0));
    }
    let (inner, len) = delimited(body, "*", "*")?;
    let group = resolver.group_by_name(inner.trim())?;
    let html = format!(
        "<span class=\"user-group-mention{class_suffix}\" data-user-group-id=\"{}\">{at}{}</span>",
        group.0,
        escape_html(&group.1)
    );
    piece(len, html, Effect::Group(group.0))
}

/// `#**channel**` and `#**channel>topic**`.
fn channel_link(s: &str, resolver: &dyn Resolver) -> Option<(usize, Piece)> {
    let (inner, len) = delimited(&s[1..], "**", "**")?;
    let len = len + 1;
    let original = s[..len].to_owned();
    if let Some((name, topic)) = inner.split_once('>') {
        if !topic.is_empty() {
            if let Some((id, name)) = resolver.channel_by_name(name.trim()) {
                let html = format!(
                    "<a class=\"stream-topic\" data-stream-id=\"{id}\" \
                     href=\"/#narrow/channel/{id}-{}/topic/{}\">#{} &gt; {}</a>",
                    hash_encode(&name.replace(' ', "-")),
                    hash_encode(topic),
                    escape_html(&name),
                    escape_html(topic)
                );
                return Some((len, Piece { html, original, effect: Effect::None }));
            }
        }
    }
    let (id, name) = resolver.channel_by_name(inner.trim())?;
    let html = format!(
        "<a class=\"stream\" data-stream-id=\"{id}\" href=\"/#narrow/channel/{id}-{}\">#{}</a>",
        hash_encode(&name.replace(' ', "-")),
        escape_html(&name)
    );
    Some((len, Piece { html, original, effect: Effect::None }))
}

/// `:name:` for a custom emoji of the realm (which wins, as in Zulip) or a
/// name in Zulip's emoji table.
fn emoji_name(s: &str, resolver: &dyn Resolver) -> Option<(usize, Piece)> {
    let body = &s[1..];
    let end = body
        .bytes()
        .take(64)
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'+' || b == b'-'))?;
    if end == 0 || body.as_bytes()[end] != b':' {
        return None;
    }
    let name = &body[..end];
    let len = end + 2;
    if let Some((_, url)) = resolver.realm_emoji(name) {
        let html = format!(
            "<img alt=\":{}:\" class=\"emoji\" src=\"{}\" title=\"{}\">",
            escape_html(name),
            escape_html(&url),
            escape_html(&name.replace('_', " "))
        );
        return Some((len, Piece { html, original: s[..len].to_owned(), effect: Effect::None }));
    }
    let code = emoji::code_for_name(name)?;
    Some((
        len,
        Piece { html: emoji_span(code, name), original: s[..len].to_owned(), effect: Effect::None },
    ))
}

/// Longest `<time:…>` body looked at, in bytes.
const MAX_TIME_BYTES: usize = 100;

/// `<time:…>`: a moment every reader sees in their own time zone. Zulip
/// renders `<time datetime="…Z">` with the time in UTC and the text as
/// typed (so clients that only show text still show something), or a
/// `timestamp-error` span when the text is not a time.
fn global_time(s: &str) -> Option<(usize, Piece)> {
    let body = s.strip_prefix("<time:")?;
    let window = &body.as_bytes()[..body.len().min(MAX_TIME_BYTES + 1)];
    let end = window.iter().position(|b| *b == b'>' || *b == b'\n')?;
    if body.as_bytes()[end] != b'>' {
        return None;
    }
    let text = &body[..end];
    let html = match parse_time(text) {
        Some(utc) => format!(
            "<time datetime=\"{}\">{}</time>",
            utc.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            escape_html(text)
        ),
        None => format!(
            "<span class=\"timestamp-error\">Invalid time format: {}</span>",
            escape_html(text)
        ),
    };
    let len = "<time:".len() + end + 1;
    Some((len, Piece { html, original: s[..len].to_owned(), effect: Effect::None }))
}

/// The moment `text` names: an ISO 8601 / RFC 3339 date-time (`T` or a
/// space between date and time; seconds optional; with an offset or `Z`,
/// else UTC), a bare date (midnight UTC), or UNIX seconds (fractions
/// allowed). Zulip parses more free-form English too; those are errors
/// here.
fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M%:z", "%Y-%m-%d %H:%M%:z", "%Y-%m-%d %H:%M:%S%:z"] {
        if let Ok(t) = DateTime::parse_from_str(text, format) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let text_utc = text.strip_suffix('Z').unwrap_or(text);
    for format in
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
    {
        if let Ok(t) = NaiveDateTime::parse_from_str(text_utc, format) {
            return Some(t.and_utc());
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Some(day.and_hms_opt(0, 0, 0)?.and_utc());
    }
    let seconds: f64 = text.parse().ok().filter(|s: &f64| s.is_finite())?;
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).round().min(999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

/// Zulip's markup for a Unicode emoji.
pub(super) fn emoji_span(code: &str, name: &str) -> String {
    let title = escape_html(&name.replace('_', " "));
    format!(
        "<span aria-label=\"{title}\" class=\"emoji emoji-{code}\" role=\"img\" \
         title=\"{title}\">:{}:</span>",
        escape_html(name)
    )
}

/// Zulip's URL-fragment encoding: percent-encode everything but
/// `A-Za-z0-9_-~`, then write `%` as `.` (so `.` itself becomes `.2E`).
pub fn hash_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'~' {
            out.push(b as char);
        } else {
            let _ = write!(out, ".{b:02X}");
        }
    }
    out
}
