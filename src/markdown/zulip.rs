//! Zulip's inline syntax that CommonMark would misread: user and group
//! mentions (`@**Name**`, `@*group*`), channel and topic links
//! (`#**channel>topic**`), emoji names (`:smile:`), global times
//! (`<time:2024-05-01T16:00:00+02:00>`) and `$$math$$`; and the characters
//! CommonMark reads and Zulip's dialect does not.
//!
//! `@**Name**` is strong emphasis to CommonMark, so these are found in one
//! linear pass over each line's text *before* parsing and replaced by
//! placeholders (`U+E000 index U+E001`, characters CommonMark never
//! interprets); `*`, `_`, `~`, `\`, `&` and `<` become literal stand-ins
//! (`LITERALS`), put back after parsing for Zulip's own inline patterns.
//! The renderer puts back either a placeholder's HTML or — inside code —
//! the original text. Only syntax that resolves becomes a placeholder;
//! anything else stays Markdown, as in Zulip.

use std::fmt::Write as _;

use super::{emoji, escape_attr, escape_text, Resolver};

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

/// One recognised piece of Zulip syntax, or a rendered block (code,
/// spoiler frame, math) standing in the text as a placeholder.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    /// Its HTML.
    pub html: String,
    /// Its HTML inside a quote, where Zulip silences mentions.
    pub quoted_html: Option<String>,
    /// The source text it replaced.
    pub original: String,
    /// What it mentions.
    pub effect: Effect,
    /// A block of its own: a paragraph holding only this placeholder is
    /// replaced by the HTML (no `<p>`).
    pub block: bool,
    /// TeX to typeset (`render_markdown` does, once the message is read);
    /// `html` is what shows when KaTeX cannot.
    pub math: Option<Math>,
}

/// The TeX of a math piece: one formula inline, or a display block's
/// paragraphs.
#[derive(Clone, Debug)]
pub(super) struct Math {
    pub display: bool,
    pub formulas: Vec<String>,
}

impl Piece {
    /// An inline piece that mentions nothing.
    pub fn plain(html: String, original: &str) -> Piece {
        Piece {
            html,
            quoted_html: None,
            original: original.to_owned(),
            effect: Effect::None,
            block: false,
            math: None,
        }
    }

    /// A block of HTML.
    pub fn block(html: String) -> Piece {
        Piece {
            html,
            quoted_html: None,
            original: String::new(),
            effect: Effect::None,
            block: true,
            math: None,
        }
    }
}

/// Characters that have a meaning to CommonMark but not in Zulip's
/// dialect (or that Zulip reads itself): in message text they are replaced
/// by `LITERAL_BASE + index` before parsing, so the parser passes them
/// through as text, and put back after.
pub(super) const LITERALS: &str = "*_~\\&<[!)=#`->";
/// The first of the private-use characters standing for `LITERALS`.
pub(super) const LITERAL_BASE: u32 = 0xE010;

/// The stand-in for `c`, one of `LITERALS`.
pub(super) fn literal(c: char) -> char {
    let index = LITERALS.find(c).expect("a literal character") as u32;
    char::from_u32(LITERAL_BASE + index).expect("private use")
}

/// `c` itself if it stands for a literal character.
pub(super) fn unliteral(c: char) -> char {
    let v = c as u32;
    if (LITERAL_BASE..LITERAL_BASE + LITERALS.len() as u32).contains(&v) {
        LITERALS.as_bytes()[(v - LITERAL_BASE) as usize] as char
    } else {
        c
    }
}

/// `text` with the literal stand-ins put back.
pub(super) fn unliteral_str(text: &str) -> String {
    text.chars().map(unliteral).collect()
}

/// Appends `content` (the text of one line after its block markers) to
/// `out`, with Zulip's inline syntax that must not reach the parser
/// replaced: resolvable mentions, channel links, emoji names, global times
/// and `$$…$$` math by placeholders; `*`, `_`, `~`, `\`, `&`, `<` and a
/// `!` before `[` by literal stand-ins. `quoted` renders mentions silent
/// (Zulip silences mentions inside quotes).
pub(super) fn line_content(
    content: &str,
    out: &mut String,
    pieces: &mut Vec<Piece>,
    resolver: &dyn Resolver,
) {
    let bytes = content.as_bytes();
    let mut i = 0;
    while i < content.len() {
        // Jump to the next byte that can start something.
        let Some(skip) = bytes[i..].iter().position(|b| {
            matches!(b, b'@' | b'#' | b':' | b'<' | b'$' | b'*' | b'_' | b'~' | b'\\' | b'&' | b'!')
        }) else {
            out.push_str(&content[i..]);
            break;
        };
        out.push_str(&content[i..i + skip]);
        i += skip;
        let rest = &content[i..];
        let c = bytes[i] as char;
        let prev = content[..i].chars().next_back();
        let found = match c {
            '@' if mention_boundary(prev) => mention(rest, resolver),
            '#' if channel_boundary(prev) => channel_link(rest, resolver),
            ':' => emoji_name(rest, resolver),
            '<' => global_time(rest),
            '$' => tex(rest, prev),
            _ => None,
        };
        match found {
            Some((len, piece)) => {
                let _ = write!(out, "{OPEN}{}{CLOSE}", pieces.len());
                pieces.push(piece);
                i += len;
            }
            None => {
                match c {
                    '*' | '_' | '~' | '\\' | '&' | '<' => out.push(literal(c)),
                    '!' if rest[1..].starts_with('[') => out.push(literal('!')),
                    _ => out.push(c),
                }
                i += 1;
            }
        }
    }
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
    // Both forms: as written, and silent (inside a quote).
    let piece = |len: usize, html: &dyn Fn(bool) -> String, effect: Effect| {
        let effect = if silent { Effect::None } else { effect };
        Some((
            prefix + len,
            Piece {
                html: html(silent),
                quoted_html: Some(html(true)),
                original: s[..prefix + len].to_owned(),
                effect,
                block: false,
                math: None,
            },
        ))
    };
    let forms = |silent: bool| if silent { (" silent", "") } else { ("", "@") };
    if let Some((inner, len)) = delimited(body, "**", "**") {
        match inner {
            "topic" => {
                let html = |silent: bool| {
                    let (class, at) = forms(silent);
                    format!("<span class=\"topic-mention{class}\">{at}topic</span>")
                };
                return piece(len, &html, Effect::TopicWildcard);
            }
            "all" | "everyone" | "channel" | "stream" => {
                let html = |silent: bool| {
                    let (class, at) = forms(silent);
                    format!(
                        "<span class=\"user-mention channel-wildcard-mention{class}\" \
                         data-user-id=\"*\">{at}{inner}</span>"
                    )
                };
                return piece(len, &html, Effect::ChannelWildcard);
            }
            _ => {}
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
        let html = |silent: bool| {
            let (class, at) = forms(silent);
            format!(
                "<span class=\"user-mention{class}\" data-user-id=\"{}\">{at}{}</span>",
                user.0,
                escape_text(&user.1)
            )
        };
        return piece(len, &html, Effect::User(user.0));
    }
    let (inner, len) = delimited(body, "*", "*")?;
    let group = resolver.group_by_name(inner.trim())?;
    let html = |silent: bool| {
        let (class, at) = forms(silent);
        format!(
            "<span class=\"user-group-mention{class}\" data-user-group-id=\"{}\">{at}{}</span>",
            group.0,
            escape_text(&group.1)
        )
    };
    piece(len, &html, Effect::Group(group.0))
}

/// `#**channel**` and `#**channel>topic**`.
fn channel_link(s: &str, resolver: &dyn Resolver) -> Option<(usize, Piece)> {
    let (inner, len) = delimited(&s[1..], "**", "**")?;
    let len = len + 1;
    let original = &s[..len];
    if let Some((name, topic)) = inner.split_once('>') {
        if !topic.is_empty() {
            if let Some((id, name)) = resolver.channel_by_name(name.trim()) {
                let html = format!(
                    "<a class=\"stream-topic\" data-stream-id=\"{id}\" \
                     href=\"/#narrow/channel/{id}-{}/topic/{}\">#{} &gt; {}</a>",
                    hash_encode(&name.replace(' ', "-")),
                    hash_encode(topic),
                    escape_text(&name),
                    escape_text(topic)
                );
                return Some((len, Piece::plain(html, original)));
            }
        }
    }
    let (id, name) = resolver.channel_by_name(inner.trim())?;
    let html = format!(
        "<a class=\"stream\" data-stream-id=\"{id}\" href=\"/#narrow/channel/{id}-{}\">#{}</a>",
        hash_encode(&name.replace(' ', "-")),
        escape_text(&name)
    );
    Some((len, Piece::plain(html, original)))
}

/// `:name:` for a custom emoji of the realm (which wins, as in Zulip), a
/// name in Zulip's emoji table, or `:zulip:`.
fn emoji_name(s: &str, resolver: &dyn Resolver) -> Option<(usize, Piece)> {
    let body = &s[1..];
    // Zulip's `[\w\-\+]+` (Python's `\w` is Unicode: `:flag_türkiye:`).
    let end = body
        .char_indices()
        .take(64)
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '+' || c == '-'))
        .map(|(i, _)| i)?;
    if end == 0 || body.as_bytes()[end] != b':' {
        return None;
    }
    let name = &body[..end];
    let len = end + 2;
    if let Some((_, url)) = resolver.realm_emoji(name) {
        let html = format!(
            "<img alt=\":{}:\" class=\"emoji\" src=\"{}\" title=\"{}\">",
            escape_attr(name),
            escape_attr(&url),
            escape_attr(&name.replace('_', " "))
        );
        return Some((len, Piece::plain(html, &s[..len])));
    }
    if name == "zulip" {
        let html = "<img alt=\":zulip:\" class=\"emoji\" \
                    src=\"/static/generated/emoji/images/emoji/unicode/zulip.png\" title=\"zulip\">";
        return Some((len, Piece::plain(html.to_owned(), &s[..len])));
    }
    let code = emoji::code_for_name(name)?;
    Some((len, Piece::plain(emoji_span(code, name), &s[..len])))
}

/// `$$…$$` (Zulip's pattern: not next to a word character or another `$`,
/// one line, not starting with `_`, `\$` inside allowed): a math piece,
/// typeset by KaTeX, or shown as Zulip shows what KaTeX cannot typeset —
/// the source in a `tex-error` span.
fn tex(s: &str, prev: Option<char>) -> Option<(usize, Piece)> {
    if prev.is_some_and(|p| p == '$' || super::links::word(p)) || !s.starts_with("$$") {
        return None;
    }
    let bytes = s.as_bytes();
    let first = *bytes.get(2)?;
    if matches!(first, b'\n' | b'_' | b'$') {
        return None;
    }
    let mut e = 2;
    let mut escaped_end = false;
    while e < bytes.len() && bytes[e] != b'$' && bytes[e] != b'\n' {
        escaped_end = false;
        if bytes[e] == b'\\' && bytes.get(e + 1) == Some(&b'$') {
            e += 2;
            escaped_end = true;
        } else {
            e += 1;
        }
    }
    let closes = |e: usize| {
        s[e..].starts_with("$$")
            && !s[e + 2..].starts_with('$')
            && !s[e + 2..].chars().next().is_some_and(super::links::word)
    };
    let end = if e > 2 && closes(e) {
        e
    } else if escaped_end && e > 3 && closes(e - 1) {
        e - 1
    } else {
        return None;
    };
    let len = end + 2;
    let html = format!("<span class=\"tex-error\">{}</span>", escape_text(&s[..len]));
    let mut piece = Piece::plain(html, &s[..len]);
    piece.math = Some(Math { display: false, formulas: vec![s[2..end].to_owned()] });
    Some((len, piece))
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
        Some(utc) => {
            let mut stamp = utc.format("%Y-%m-%dT%H:%M:%S").to_string();
            let micros = utc.timestamp_subsec_micros();
            if micros != 0 {
                let _ = write!(stamp, ".{micros:06}");
            }
            format!("<time datetime=\"{stamp}Z\">{}</time>", escape_text(text))
        }
        None => format!(
            "<span class=\"timestamp-error\">Invalid time format: {}</span>",
            escape_text(text)
        ),
    };
    let len = "<time:".len() + end + 1;
    Some((len, Piece::plain(html, &s[..len])))
}

/// The moment `text` names, read leniently as Zulip does: ISO 8601 /
/// RFC 3339 (with an offset or `Z`; none means UTC); English dates such as
/// "Jun 5th 2017, 10:30PM" or "31 Dec 2017 5:30 am IST" (month names,
/// ordinals, 12- or 24-hour times, common zone abbreviations); else UNIX
/// seconds. A date without a year, month or day is refused (Zulip would
/// take today's: rendering here reads no clock).
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
    if let Some(t) = parse_english_time(text) {
        return Some(t);
    }
    let seconds: f64 = text.parse().ok().filter(|s: &f64| s.is_finite())?;
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).round().min(999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

/// Common zone abbreviations and their offsets in minutes.
const ZONES: &[(&str, i32)] = &[
    ("utc", 0),
    ("gmt", 0),
    ("z", 0),
    ("wet", 0),
    ("west", 60),
    ("bst", 60),
    ("cet", 60),
    ("cest", 120),
    ("eet", 120),
    ("eest", 180),
    ("msk", 180),
    ("ist", 330),
    ("pkt", 300),
    ("wib", 420),
    ("sgt", 480),
    ("hkt", 480),
    ("awst", 480),
    ("jst", 540),
    ("kst", 540),
    ("acst", 570),
    ("aest", 600),
    ("aedt", 660),
    ("nzst", 720),
    ("nzdt", 780),
    ("est", -300),
    ("edt", -240),
    ("cst", -360),
    ("cdt", -300),
    ("mst", -420),
    ("mdt", -360),
    ("pst", -480),
    ("pdt", -420),
    ("akst", -540),
    ("akdt", -480),
    ("hst", -600),
];

const MONTHS: &[&str] =
    &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Dates in English words and numbers ("Jun 5th 2017, 10:30PM").
fn parse_english_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::NaiveDate;
    let lower = text.to_ascii_lowercase().replace(',', " ");
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    let (mut year, mut month, mut day) = (None::<i32>, None::<u32>, None::<u32>);
    let (mut hour, mut minute, mut second) = (0u32, 0u32, 0u32);
    let mut meridiem: Option<bool> = None; // Some(true) = pm
    let mut offset: Option<i32> = None;
    let mut index = 0;
    while index < tokens.len() {
        let token = tokens[index];
        index += 1;
        let (body, ampm) = match token.strip_suffix("pm").or_else(|| token.strip_suffix("p.m.")) {
            Some(b) if !b.is_empty() && b.as_bytes()[0].is_ascii_digit() => (b, Some(true)),
            _ => match token.strip_suffix("am").or_else(|| token.strip_suffix("a.m.")) {
                Some(b) if !b.is_empty() && b.as_bytes()[0].is_ascii_digit() => (b, Some(false)),
                _ => (token, None),
            },
        };
        if ampm.is_some() {
            meridiem = ampm;
        }
        if matches!(body, "am" | "a.m.") {
            meridiem = Some(false);
        } else if matches!(body, "pm" | "p.m.") {
            meridiem = Some(true);
        } else if matches!(body, "at" | "on" | "of" | "the") {
        } else if body.contains(':') {
            let mut parts = body.split(':');
            hour = parts.next()?.parse().ok()?;
            minute = parts.next()?.parse().ok()?;
            second = match parts.next() {
                Some(s) => s.parse().ok()?,
                None => 0,
            };
            if parts.next().is_some() || hour > 24 || minute > 59 || second > 59 {
                return None;
            }
        } else if let Some(&(_, minutes)) = ZONES.iter().find(|(name, _)| *name == body) {
            offset = Some(minutes);
        } else if let Some(sign) = body
            .strip_prefix('+')
            .map(|b| (1, b))
            .or_else(|| body.strip_prefix('-').map(|b| (-1, b)))
        {
            let digits: String = sign.1.chars().filter(|c| *c != ':').collect();
            if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let hours: i32 = digits[..2].parse().ok()?;
            let minutes: i32 = digits[2..].parse().ok()?;
            offset = Some(sign.0 * (hours * 60 + minutes));
        } else if body.contains('/') || (body.contains('-') && body.as_bytes()[0].is_ascii_digit())
        {
            let parts: Vec<u32> =
                body.split(['/', '-']).map(|p| p.parse().ok()).collect::<Option<_>>()?;
            let [a, b, c] = parts[..] else { return None };
            if a > 999 {
                (year, month, day) = (Some(a as i32), Some(b), Some(c));
            } else {
                (year, month, day) = (Some(c as i32), Some(a), Some(b));
            }
        } else if body.as_bytes()[0].is_ascii_digit() {
            let digits = body
                .strip_suffix("st")
                .or_else(|| body.strip_suffix("nd"))
                .or_else(|| body.strip_suffix("rd"))
                .or_else(|| body.strip_suffix("th"))
                .unwrap_or(body);
            let n: u32 = digits.parse().ok()?;
            let next_is_meridiem =
                tokens.get(index).is_some_and(|t| matches!(*t, "am" | "pm" | "a.m." | "p.m."));
            if ampm.is_some() || next_is_meridiem {
                hour = n;
            } else if digits.len() == 4 && year.is_none() {
                year = Some(n as i32);
            } else if digits.len() <= 2 && day.is_none() {
                day = Some(n);
            } else {
                return None;
            }
        } else if let Some(m) = MONTHS.iter().position(|m| body.starts_with(m)) {
            month = Some(m as u32 + 1);
        } else if ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
            .iter()
            .any(|d| body.starts_with(d))
        {
        } else {
            return None;
        }
    }
    match meridiem {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        Some(_) if hour > 12 => return None,
        _ => {}
    }
    let date = NaiveDate::from_ymd_opt(year?, month?, day?)?;
    let local = date.and_hms_opt(hour.min(23), minute, second)?;
    let utc = local - chrono::Duration::minutes(i64::from(offset.unwrap_or(0)));
    Some(utc.and_utc())
}

/// Zulip's markup for a Unicode emoji.
pub(super) fn emoji_span(code: &str, name: &str) -> String {
    let title = escape_attr(&name.replace('_', " "));
    format!(
        "<span aria-label=\"{title}\" class=\"emoji emoji-{code}\" role=\"img\" \
         title=\"{title}\">:{}:</span>",
        escape_text(name)
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
