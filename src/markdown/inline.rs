//! Zulip's inline patterns, run on the text of one paragraph, heading,
//! list item or table cell, in Zulip's order of priority:
//!
//! 1. bare links (`links::find_all`);
//! 2. `***strong emphasis***`, `**strong**` (one line, any content, no
//!    flanking rules), `*emphasis*` (no `*` inside, not starting or ending
//!    with a space), `~~strikethrough~~` (no `~` inside) — each found
//!    leftmost first, its content then read by the patterns after it only;
//! 3. on what is left: escaping, line breaks (`<br>`), Unicode emoji, and
//!    the pieces (mentions, code, links…) standing as placeholders.
//!
//! Every match becomes a placeholder in the text, as Python-Markdown
//! stashes its nodes, so later patterns see it as one opaque character
//! run. The passes are a fixed pipeline (recursion at most one level per
//! pattern) and each is linear in the text.

use std::fmt::Write as _;

use super::zulip::{emoji_span, unliteral, Effect, Piece, CLOSE, OPEN};
use super::{emoji, escape_attr, escape_text_into, links, Mentions};

/// The emphasis patterns, highest priority first.
#[derive(Clone, Copy)]
enum Pattern {
    StrongEm,
    Strong,
    Em,
    Del,
}

const PATTERNS: [Pattern; 4] = [Pattern::StrongEm, Pattern::Strong, Pattern::Em, Pattern::Del];

/// Renders inline text for one container.
pub(super) struct Inline<'a> {
    pub pieces: &'a mut Vec<Piece>,
    pub mentions: &'a mut Mentions,
    /// Inside a block quote: mentions are silent.
    pub quoted: bool,
    /// Bare links to images, for previews (`None` where none are made).
    pub images: Option<&'a mut Vec<Image>>,
    /// The realm's URL with a final `/`, for relative local links.
    pub realm: Option<&'a str>,
}

/// A link to an image, previewed after its paragraph.
pub(super) struct Image {
    /// The link's target.
    pub href: String,
    /// A named link's text.
    pub title: Option<String>,
    /// What stands for the link in the paragraph's text (a paragraph
    /// holding only a bare link to an image is replaced by the preview).
    pub source: String,
}

impl Inline<'_> {
    /// Stores `html` as a piece; returns its placeholder.
    pub fn stash(&mut self, html: String) -> String {
        let placeholder = format!("{OPEN}{}{CLOSE}", self.pieces.len());
        self.pieces.push(Piece::plain(html, ""));
        placeholder
    }

    /// The HTML of `data`.
    pub fn render(&mut self, data: &str) -> String {
        let linked = self.autolinks(data);
        let text = self.emphasis(linked, 0);
        let mut out = String::with_capacity(text.len() + 16);
        self.leaf(&text, &mut out);
        out
    }

    /// Bare links become placeholders.
    fn autolinks(&mut self, data: &str) -> String {
        let found = links::find_all(data);
        if found.is_empty() {
            return data.to_owned();
        }
        let mut out = String::with_capacity(data.len() + 16);
        let mut at = 0;
        for link in found {
            let text = self.restore(&data[link.start..link.end]);
            out.push_str(&data[at..link.start]);
            at = link.end;
            match links::sanitize_url(&text).map(|h| links::relative(h, self.realm)) {
                Some(href) => {
                    let mut html = String::with_capacity(2 * text.len() + 16);
                    let _ = write!(html, "<a href=\"{}\">", escape_attr(&href));
                    escape_text_into(&text, &mut html);
                    html.push_str("</a>");
                    let placeholder = self.stash(html);
                    out.push_str(&placeholder);
                    if links::is_image(&href) {
                        if let Some(images) = self.images.as_deref_mut() {
                            let source = data[link.start..link.end].to_owned();
                            images.push(Image { href, title: None, source });
                        }
                    }
                }
                None => out.push_str(&data[link.start..link.end]),
            }
        }
        out.push_str(&data[at..]);
        out
    }

    /// Applies the emphasis patterns from `PATTERNS[from]` on.
    fn emphasis(&mut self, mut text: String, from: usize) -> String {
        for (index, pattern) in PATTERNS.iter().enumerate().skip(from) {
            if !text.contains(['*', '~']) {
                break;
            }
            text = self.apply(&text, *pattern, index);
        }
        text
    }

    /// Replaces every match of `pattern` (leftmost first) by a placeholder
    /// of its element, the element's content read by the later patterns.
    fn apply(&mut self, text: &str, pattern: Pattern, index: usize) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut from = 0;
        while let Some((start, inner, end)) = find(text, from, pattern) {
            let content = self.emphasis(text[inner.0..inner.1].to_owned(), index + 1);
            let mut html = String::with_capacity(content.len() + 32);
            let (open, close) = match pattern {
                Pattern::StrongEm => ("<strong><em>", "</em></strong>"),
                Pattern::Strong => ("<strong>", "</strong>"),
                Pattern::Em => ("<em>", "</em>"),
                Pattern::Del => ("<del>", "</del>"),
            };
            html.push_str(open);
            self.leaf(&content, &mut html);
            html.push_str(close);
            out.push_str(&text[at..start]);
            let placeholder = self.stash(html);
            out.push_str(&placeholder);
            at = end;
            from = end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// `text` with placeholders put back as their source.
    pub fn restore(&self, text: &str) -> String {
        Self::restore_with(self.pieces, text)
    }

    /// `text` with the placeholders of `pieces` put back as their source.
    pub fn restore_with(pieces: &[Piece], text: &str) -> String {
        if !text.contains(OPEN) {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find(OPEN) {
            out.push_str(&rest[..open]);
            match placeholder_at(&rest[open..]) {
                Some((index, len)) => {
                    if let Some(piece) = pieces.get(index) {
                        out.push_str(&piece.original);
                    }
                    rest = &rest[open + len..];
                }
                None => {
                    out.push(OPEN);
                    rest = &rest[open + OPEN.len_utf8()..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The final pass: escaping, `<br>`, Unicode emoji, placeholders.
    pub fn leaf(&mut self, text: &str, out: &mut String) {
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                OPEN => {
                    if let Some((index, len)) = placeholder_at(&text[i..]) {
                        self.piece(index, out);
                        while chars.peek().is_some_and(|(j, _)| *j < i + len) {
                            chars.next();
                        }
                    }
                }
                '\n' => out.push_str("<br>\n"),
                '&' => {
                    if super::starts_entity(&text[i..]) {
                        out.push('&');
                    } else {
                        out.push_str("&amp;");
                    }
                }
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                c if emoji::may_start_emoji(c)
                    || emoji::starts_keycap(c, text[i + c.len_utf8()..].chars().next()) =>
                {
                    let rest: Vec<char> = text[i..].chars().take(16).collect();
                    let (len, found) = emoji::sequence_at(&rest);
                    match found {
                        Some((code, name)) => out.push_str(&emoji_span(&code, name)),
                        None => rest[..len].iter().for_each(|c| out.push(*c)),
                    }
                    for _ in 1..len {
                        chars.next();
                    }
                }
                c => out.push(unliteral(c)),
            }
        }
    }

    /// A piece's HTML, noting what it mentions.
    fn piece(&mut self, index: usize, out: &mut String) {
        let Some(piece) = self.pieces.get(index) else { return };
        match (&piece.quoted_html, self.quoted) {
            (Some(quoted), true) => out.push_str(quoted),
            _ => {
                out.push_str(&piece.html);
                match piece.effect {
                    Effect::None => {}
                    Effect::User(id) => {
                        self.mentions.users.insert(id);
                    }
                    Effect::Group(id) => {
                        self.mentions.groups.insert(id);
                    }
                    Effect::ChannelWildcard => self.mentions.channel_wildcard = true,
                    Effect::TopicWildcard => self.mentions.topic_wildcard = true,
                }
            }
        }
    }
}

/// `OPEN digits CLOSE` at the start of `s`: (index, byte length).
pub(super) fn placeholder_at(s: &str) -> Option<(usize, usize)> {
    let body = s.strip_prefix(OPEN)?;
    let digits = body.bytes().take(12).take_while(u8::is_ascii_digit).count();
    if digits == 0 || !body[digits..].starts_with(CLOSE) {
        return None;
    }
    let index = body[..digits].parse().ok()?;
    Some((index, OPEN.len_utf8() + digits + CLOSE.len_utf8()))
}

/// The next match of `pattern` in `text` at or after `from`:
/// (start, content range, end).
fn find(text: &str, from: usize, pattern: Pattern) -> Option<(usize, (usize, usize), usize)> {
    let b = text.as_bytes();
    let mut p = from;
    while p < b.len() {
        match pattern {
            Pattern::StrongEm | Pattern::Em => {
                let n = if matches!(pattern, Pattern::StrongEm) { 3 } else { 1 };
                let q = p + memchr(b'*', &b[p..])?;
                if let Some(m) = match_em(b, q, n) {
                    return Some(m);
                }
                p = q + 1;
            }
            Pattern::Strong => {
                let q = p + find_pair(&b[p..], b'*')?;
                // Content: at least one character, no newline, up to the
                // next `**`.
                let start = q + 2;
                let mut k = start;
                let mut found = None;
                while k < b.len() && b[k] != b'\n' {
                    if k > start && b[k] == b'*' && b.get(k + 1) == Some(&b'*') {
                        found = Some(k);
                        break;
                    }
                    k += 1;
                }
                if let Some(k) = found {
                    return Some((q, (start, k), k + 2));
                }
                p = q + 1;
            }
            Pattern::Del => {
                let q = p + find_pair(&b[p..], b'~')?;
                if q > 0 && b[q - 1] == b'~' {
                    p = q + 1;
                    continue;
                }
                let start = q + 2;
                let close = b[start..].iter().position(|c| *c == b'~' || *c == b'\n');
                if let Some(k) = close.map(|c| start + c) {
                    if k > start
                        && b[k] == b'~'
                        && b.get(k + 1) == Some(&b'~')
                        && b.get(k + 2) != Some(&b'~')
                    {
                        return Some((q, (start, k), k + 2));
                    }
                }
                p = q + 1;
            }
        }
    }
    None
}

/// `*content*` (n = 1) or `***content***` (n = 3) at `q`: not followed by
/// whitespace, content without `*`, `^` or a newline, not ending in
/// whitespace.
fn match_em(b: &[u8], q: usize, n: usize) -> Option<(usize, (usize, usize), usize)> {
    if b.len() < q + n || b[q..q + n].iter().any(|c| *c != b'*') {
        return None;
    }
    let start = q + n;
    let first = *b.get(start)?;
    if first.is_ascii_whitespace() || first == b'*' || first == b'^' || first == b'\n' {
        return None;
    }
    let len = b[start..].iter().position(|c| matches!(c, b'*' | b'^' | b'\n'))?;
    let end = start + len;
    if b[end - 1].is_ascii_whitespace()
        || b.len() < end + n
        || b[end..end + n].iter().any(|c| *c != b'*')
    {
        return None;
    }
    Some((q, (start, end), end + n))
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|b| *b == needle)
}

/// The next position of two `c` in a row.
fn find_pair(b: &[u8], c: u8) -> Option<usize> {
    b.windows(2).position(|w| w[0] == c && w[1] == c)
}
