//! Message Markdown → HTML, as Zulip renders it. Pure: no state, no I/O,
//! no clock.
//!
//! Zulip's Markdown is Python-Markdown with Zulip's own processors, a
//! dialect of its own: no `_` emphasis, `**strong**` without CommonMark's
//! flanking rules, no reference links, no setext headings, lists nested by
//! two spaces, raw HTML always escaped, its own autolink rules, fenced
//! `quote`, `spoiler` and `math` blocks. natter keeps pulldown-cmark (an
//! iterative parser: deep nesting cannot overflow a coroutine's small
//! stack) for the block structure, code spans and links, and builds Zulip's
//! layer around it, in passes that never recurse deeper than a constant:
//!
//! 1. `fence.rs`: fenced blocks, read line by line as Zulip reads them,
//!    rendered into the piece list (code, spoiler frames, math);
//! 2. `source.rs`: the text rewritten line by line so that the parser
//!    builds Zulip's blocks (lists, quotes, no setext…), and `zulip.rs`
//!    replacing Zulip's inline syntax in each line — mentions, channel
//!    links, emoji names, global times, `$$math$$` by placeholders; `*`,
//!    `_`, `~`, `\\`, `&` and `<` by literal stand-ins the parser passes
//!    through;
//! 3. `writer.rs`: the parser's events (with source offsets) written as
//!    Python-Markdown lays out HTML, each paragraph's text rendered by
//!    `inline.rs` (Zulip's bare links from `links.rs`, then emphasis in
//!    Zulip's order, then escaping, `<br>`, Unicode emoji).
//!
//! Names are resolved through a `Resolver` the caller supplies (the send
//! handler answers only with what the sender may see), so this module never
//! reads state. `render_message` returns the HTML and what it mentions;
//! mentions inside quotes are silent, as in Zulip.

pub mod emoji;
mod fence;
mod highlight;
mod inline;
pub mod linkifiers;
mod links;
mod math;
mod source;
mod upload_previews;
mod writer;
mod zulip;

pub use upload_previews::UploadPreview;
pub use zulip::hash_encode;

use std::collections::BTreeSet;

/// Answers "who or what is this name" for the renderer. Every answer is
/// `(id, display name)`; `None` = not resolvable *for this sender*.
pub trait Resolver {
    /// An active user by full name (case-insensitive; `None` if ambiguous).
    fn user_by_name(&self, name: &str) -> Option<(u64, String)>;
    /// An active user by id.
    fn user_by_id(&self, id: u64) -> Option<(u64, String)>;
    /// A mentionable user group by name.
    fn group_by_name(&self, name: &str) -> Option<(u64, String)>;
    /// A channel the sender may see, by name (case-insensitive).
    fn channel_by_name(&self, name: &str) -> Option<(u64, String)>;
    /// The realm's own URL (`https://chat.example.com`): links into it
    /// (`/#narrow/…`, `/user_uploads/…`) are written relative, as Zulip
    /// writes them. `None` leaves every link as typed.
    fn realm_url(&self) -> Option<String> {
        None
    }
    /// An active custom emoji of the sender's realm by name: its id and
    /// image URL. None by default.
    fn realm_emoji(&self, _name: &str) -> Option<(u64, String)> {
        None
    }
    /// The realm's linkifiers, in the order they apply (`linkifiers.rs`).
    fn linkifiers(&self) -> &[linkifiers::Rule] {
        &[]
    }
    /// How a link to an uploaded image (`/user_uploads/<path_id>`) is
    /// previewed (`upload_previews.rs`); as linked by default.
    fn upload_preview(&self, _path_id: &str) -> UploadPreview {
        UploadPreview::AsLinked
    }
}

/// Resolves nothing: plain Markdown (channel descriptions, tests).
pub struct NoResolver;

impl Resolver for NoResolver {
    fn user_by_name(&self, _: &str) -> Option<(u64, String)> {
        None
    }
    fn user_by_id(&self, _: u64) -> Option<(u64, String)> {
        None
    }
    fn group_by_name(&self, _: &str) -> Option<(u64, String)> {
        None
    }
    fn channel_by_name(&self, _: &str) -> Option<(u64, String)> {
        None
    }
}

/// What a message mentions (silent mentions and mentions inside code do
/// not count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mentions {
    /// Users mentioned by name or id.
    pub users: BTreeSet<u64>,
    /// Groups mentioned.
    pub groups: BTreeSet<u64>,
    /// `@**all**` / `@**everyone**` / `@**channel**` / `@**stream**`.
    pub channel_wildcard: bool,
    /// `@**topic**`.
    pub topic_wildcard: bool,
}

/// A rendered message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The HTML.
    pub html: String,
    /// What it mentions.
    pub mentions: Mentions,
}

/// Takes the KaTeX thread out of service: the next formula starts a new
/// one, paying what the first formula after a server start pays
/// (`benches/markdown.rs` measures that).
pub fn restart_katex() {
    math::restart();
}

/// Renders Markdown with no name resolution (descriptions).
pub fn render(source: &str) -> String {
    render_message(source, &NoResolver).html
}

/// Renders message content, resolving names through `resolver` and
/// applying its linkifiers.
pub fn render_message(source: &str, resolver: &dyn Resolver) -> Rendered {
    let mut rendered = render_markdown(source, resolver);
    let linkifiers = resolver.linkifiers();
    if !linkifiers.is_empty() {
        rendered.html = linkifiers::apply(&rendered.html, linkifiers);
    }
    rendered
}

/// The Markdown (and Zulip syntax) of `render_message`.
fn render_markdown(source: &str, resolver: &dyn Resolver) -> Rendered {
    if let Some(html) = plain_line(source) {
        return Rendered { html, mentions: Mentions::default() };
    }
    let mut pieces = Vec::new();
    let normal = normalize(source);
    let text = fence::fences(&normal, &mut pieces);
    let (text, starts) = source::prepare(&text, &mut pieces, resolver);
    typeset(&mut pieces);
    let mut mentions = Mentions::default();
    let realm = resolver.realm_url().map(|url| format!("{}/", url.trim_end_matches('/')));
    let html = writer::write(&text, &starts, realm.as_deref(), &mut pieces, &mut mentions);
    let mut html = upload_previews::apply(html, resolver);
    let end = html.trim_end().len();
    html.truncate(end);
    let start = html.len() - html.trim_start().len();
    html.drain(..start);
    Rendered { html, mentions }
}

/// Math pieces typeset by KaTeX, within one message's budget; what KaTeX
/// cannot typeset keeps its `tex-error` HTML.
fn typeset(pieces: &mut [zulip::Piece]) {
    let mut budget = math::Budget::new();
    for piece in pieces.iter_mut() {
        let Some(tex) = piece.math.take() else { continue };
        if tex.display {
            let html: Vec<String> = tex
                .formulas
                .iter()
                .map(|f| budget.render(f, true).unwrap_or_else(|| fence::tex_error(f)))
                .collect();
            piece.html = html.join("\n\n");
        } else if let Some(html) = budget.render(&tex.formulas[0], false) {
            piece.html = html;
        }
    }
}

/// Zulip's whitespace rules before parsing: `\r\n` and `\r` as `\n`, tabs
/// expanded to 4 columns, lines of only spaces emptied; and the
/// private-use characters natter's placeholders use replaced, so they
/// cannot be forged.
fn normalize(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 8);
    let mut column = 0;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                    column = 0;
                }
            }
            '\n' => {
                out.push('\n');
                column = 0;
            }
            '\t' => {
                let n = 4 - column % 4;
                out.extend(std::iter::repeat_n(' ', n));
                column += n;
            }
            '\u{E000}'..='\u{E0FF}' | '\u{2}' | '\u{3}' => {
                out.push('\u{FFFD}');
                column += 1;
            }
            c => {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

/// The HTML of `source` when it is one line of plain text — printable
/// ASCII starting with a letter, with none of the characters that can
/// start Markdown or Zulip syntax and no `.` before a letter or digit (a
/// bare domain would be linked) — without running the parser:
/// `<p>text</p>` (Zulip escapes only `&`, `<` and `>` in text, and they
/// cannot occur). Most chat lines are like this; a unit test checks the
/// shortcut against the full renderer.
fn plain_line(source: &str) -> Option<String> {
    let bytes = source.as_bytes();
    let plain = bytes.first()?.is_ascii_alphabetic()
        && bytes.iter().all(|&b| PLAIN[b as usize])
        && !bytes.windows(2).any(|w| w[0] == b'.' && w[1].is_ascii_alphanumeric());
    if !plain {
        return None;
    }
    let mut html = String::with_capacity(source.len() + 7);
    html.push_str("<p>");
    html.push_str(source);
    html.push_str("</p>");
    Some(html)
}

/// The bytes `plain_line` accepts: printable ASCII except those that can
/// start Markdown or Zulip syntax. A table, so the check is one load per
/// byte (it runs on every message sent).
const PLAIN: [bool; 256] = {
    const SYNTAX: &[u8] = b"*_`[]<>&\\~:@#|$";
    let mut table = [false; 256];
    let mut b = b' ';
    while b <= b'~' {
        table[b as usize] = true;
        b += 1;
    }
    let mut i = 0;
    while i < SYNTAX.len() {
        table[SYNTAX[i] as usize] = false;
        i += 1;
    }
    table
};

/// Whether content is a `/me` status message.
pub fn is_me_message(source: &str) -> bool {
    source.starts_with("/me ") && !source.contains('\n')
}

/// HTML-escapes text for element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes element text as Zulip's serializer does: `<`, `>`, and `&`
/// unless it starts an entity (`&amp;`, `&#39;`); quotes stay.
pub(crate) fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    escape_text_into(s, &mut out);
    out
}

/// `escape_text`, appending to `out`.
pub(crate) fn escape_text_into(s: &str, out: &mut String) {
    for (i, c) in s.char_indices() {
        match c {
            '&' if !starts_entity(&s[i..]) => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// Escapes an attribute value: as text, and `"` too.
pub(crate) fn escape_attr(s: &str) -> String {
    escape_text(s).replace('"', "&quot;")
}

/// An HTML entity (`&name;`, `&#123;`, `&#x1f;`) at the start of `s`.
pub(super) fn starts_entity(s: &str) -> bool {
    let body = &s.as_bytes()[1..];
    let Some(end) = body.iter().take(32).position(|b| *b == b';').filter(|e| *e > 0) else {
        return false;
    };
    match &body[..end] {
        [b'#', b'x' | b'X', hex @ ..] => !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit),
        [b'#', digits @ ..] => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
        name => name.iter().all(u8::is_ascii_alphanumeric),
    }
}

#[cfg(test)]
mod tests;
