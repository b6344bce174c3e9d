//! Message Markdown → HTML, Zulip-flavoured. Pure: no state, no I/O.
//!
//! CommonMark via pulldown-cmark (an iterative parser and writer, so deep
//! nesting cannot overflow a small coroutine stack), shaped the way Zulip
//! renders: single newlines are line breaks, raw HTML is shown as text
//! (never passed through), links keep only safe schemes, images become
//! links, bare URLs are linked. Zulip's extensions:
//!
//! - user mentions `@**Full Name**`, `@**Full Name|id**`, silent
//!   `@_**Name**`; group mentions `@*group*`; wildcards `@**all**`,
//!   `@**everyone**`, `@**channel**`, `@**stream**`, `@**topic**`
//!   (`zulip.rs`, which also does channel links and `:emoji:` names);
//! - literal Unicode emoji (`emoji.rs` holds Zulip's name table);
//! - fenced code as `<div class="codehilite">` with the language, and the
//!   `spoiler` and `quote` fences, whose bodies are Markdown again — nested
//!   at most `MAX_FENCE_DEPTH` deep, so recursion stays bounded.
//!
//! Names are resolved through a `Resolver` the caller supplies (the send
//! handler answers only with what the sender may see), so this module never
//! reads state. `render_message` returns the HTML and what it mentions.

pub mod emoji;
pub mod linkifiers;
mod zulip;

pub use zulip::hash_encode;

use std::collections::BTreeSet;

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

use zulip::{Effect, Piece, CLOSE, OPEN};

/// `spoiler` / `quote` fences inside each other render as Markdown this
/// many levels deep; deeper ones are shown as code.
const MAX_FENCE_DEPTH: usize = 3;

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
    /// The realm's linkifiers, in the order they apply (`linkifiers.rs`).
    fn linkifiers(&self) -> &[linkifiers::Rule] {
        &[]
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
    let (text, pieces) = zulip::prepass(source, resolver);
    let mut renderer = Renderer { pieces: &pieces, mentions: Mentions::default() };
    let mut html = renderer.blocks(&text, 0);
    let trimmed = html.trim_end().len();
    html.truncate(trimmed);
    Rendered { html, mentions: renderer.mentions }
}

/// The HTML of `source` when it is one line of plain text — printable
/// ASCII starting with a letter, not ending in a space, with none of the
/// characters that can start Markdown or Zulip syntax — without running
/// the parser: `<p>text</p>`, with `"` escaped (the parser's inline text
/// escaping; `&`, `<` and `>` cannot occur). Most chat lines are like
/// this; a unit test checks the shortcut against the full renderer.
fn plain_line(source: &str) -> Option<String> {
    let bytes = source.as_bytes();
    let plain = bytes.first()?.is_ascii_alphabetic()
        && bytes.last()? != &b' '
        && bytes.iter().all(|&b| PLAIN[b as usize]);
    if !plain {
        return None;
    }
    let quotes = bytes.iter().filter(|&&b| b == b'"').count();
    let mut html = String::with_capacity(source.len() + 7 + 5 * quotes);
    html.push_str("<p>");
    if quotes == 0 {
        html.push_str(source);
    } else {
        for part in source.split_inclusive('"') {
            match part.strip_suffix('"') {
                Some(text) => {
                    html.push_str(text);
                    html.push_str("&quot;");
                }
                None => html.push_str(part),
            }
        }
    }
    html.push_str("</p>");
    Some(html)
}

/// The bytes `plain_line` accepts: printable ASCII except those that can
/// start Markdown or Zulip syntax. A table, so the check is one load per
/// byte (it runs on every message sent).
const PLAIN: [bool; 256] = {
    const SYNTAX: &[u8] = b"*_`[]<>&\\~:@#|";
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

struct Renderer<'p> {
    pieces: &'p [Piece],
    mentions: Mentions,
}

impl Renderer<'_> {
    /// Renders one Markdown document (the message, or a fence body).
    fn blocks(&mut self, text: &str, depth: usize) -> String {
        let mut options = Options::empty();
        options.insert(Options::ENABLE_STRIKETHROUGH);
        options.insert(Options::ENABLE_TABLES);
        let mut events: Vec<Event<'_>> = Vec::new();
        let mut pending = String::new();
        let mut in_link = 0usize;
        let mut fence: Option<(String, String)> = None;
        // Image URLs, previewed after the block like Zulip's inline images.
        let mut images: Vec<String> = Vec::new();
        for event in Parser::new_ext(text, options) {
            if let Some((info, body)) = &mut fence {
                match event {
                    Event::Text(t) => body.push_str(&t),
                    Event::End(TagEnd::CodeBlock) => {
                        let html = self.code_block(info, body, depth);
                        events.push(Event::Html(CowStr::from(html)));
                        fence = None;
                    }
                    _ => {}
                }
                continue;
            }
            match event {
                // Raw HTML is text, never markup.
                Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => pending.push_str(&t),
                other => {
                    self.flush(&mut pending, in_link > 0, &mut events);
                    let is_image = matches!(other, Event::Start(Tag::Image { .. }));
                    match other {
                        Event::Start(Tag::CodeBlock(kind)) => {
                            let info = match kind {
                                CodeBlockKind::Fenced(info) => info.trim().to_owned(),
                                CodeBlockKind::Indented => String::new(),
                            };
                            fence = Some((info, String::new()));
                        }
                        Event::Start(Tag::HtmlBlock) => events.push(Event::Start(Tag::Paragraph)),
                        Event::End(TagEnd::HtmlBlock) => events.push(Event::End(TagEnd::Paragraph)),
                        Event::SoftBreak => events.push(Event::HardBreak),
                        Event::Start(Tag::Link { link_type, dest_url, title, id })
                        | Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
                            in_link += 1;
                            let safe = safe_url(&self.restore(&dest_url));
                            if is_image && !safe.is_empty() && !safe.starts_with("mailto:") {
                                images.push(safe.clone());
                            }
                            let dest_url = CowStr::from(safe);
                            let title = CowStr::from(self.restore(&title));
                            events.push(Event::Start(Tag::Link { link_type, dest_url, title, id }));
                        }
                        Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                            in_link = in_link.saturating_sub(1);
                            events.push(Event::End(TagEnd::Link));
                        }
                        Event::Code(code) => events.push(Event::Code(self.restore(&code).into())),
                        other => events.push(other),
                    }
                }
            }
        }
        if let Some((info, body)) = fence {
            let html = self.code_block(&info, &body, depth);
            events.push(Event::Html(CowStr::from(html)));
        }
        self.flush(&mut pending, in_link > 0, &mut events);
        let mut out = String::with_capacity(text.len() + text.len() / 2 + 16);
        html::push_html(&mut out, events.into_iter());
        for url in images {
            let url = escape_html(&url);
            out.push_str(&format!(
                "<div class=\"message_inline_image\"><a href=\"{url}\"><img src=\"{url}\"></a></div>"
            ));
        }
        out
    }

    /// Emits accumulated text: placeholders, bare URLs and Unicode emoji
    /// become markup, the rest is escaped.
    fn flush(&mut self, pending: &mut String, in_link: bool, events: &mut Vec<Event<'_>>) {
        if pending.is_empty() {
            return;
        }
        let html = self.inline(pending, in_link);
        events.push(Event::InlineHtml(CowStr::from(html)));
        pending.clear();
    }

    fn inline(&mut self, text: &str, in_link: bool) -> String {
        // Plain ASCII with no URL and no placeholder: only escaping to do.
        if text.is_ascii() && !text.contains("://") {
            let mut out = String::with_capacity(text.len() + 16);
            for c in text.chars() {
                match c {
                    '&' => out.push_str("&amp;"),
                    '<' => out.push_str("&lt;"),
                    '>' => out.push_str("&gt;"),
                    '"' => out.push_str("&quot;"),
                    c => out.push(c),
                }
            }
            return out;
        }
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len() + 16);
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == OPEN {
                if let Some((piece, len)) = self.placeholder(&chars[i..]) {
                    if in_link {
                        out.push_str(&escape_html(&piece.original));
                    } else {
                        out.push_str(&piece.html);
                        self.note(piece.effect);
                    }
                    i += len;
                    continue;
                }
            }
            if !in_link && (c == 'h' || c == 'H') && (i == 0 || !chars[i - 1].is_alphanumeric()) {
                if let Some(len) = url_len(&chars[i..]) {
                    let url: String = chars[i..i + len].iter().collect();
                    let url = escape_html(&self.restore(&url));
                    out.push_str(&format!("<a href=\"{url}\">{url}</a>"));
                    i += len;
                    continue;
                }
            }
            if emoji::may_start_emoji(c) {
                if let Some((code, name, len)) = emoji::match_at(&chars[i..]) {
                    out.push_str(&zulip::emoji_span(&code, name));
                    i += len;
                    continue;
                }
            }
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                c => out.push(c),
            }
            i += 1;
        }
        out
    }

    /// The piece a placeholder at `chars[0]` stands for, and its length.
    fn placeholder(&self, chars: &[char]) -> Option<(&Piece, usize)> {
        let close = chars.iter().take(24).position(|c| *c == CLOSE)?;
        let index: String = chars[1..close].iter().collect();
        let piece = self.pieces.get(index.parse::<usize>().ok()?)?;
        Some((piece, close + 1))
    }

    /// `text` with every placeholder put back as the source it replaced.
    fn restore(&self, text: &str) -> String {
        if !text.contains(OPEN) {
            return text.to_owned();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == OPEN {
                if let Some((piece, len)) = self.placeholder(&chars[i..]) {
                    out.push_str(&piece.original);
                    i += len;
                    continue;
                }
            }
            out.push(chars[i]);
            i += 1;
        }
        out
    }

    fn note(&mut self, effect: Effect) {
        match effect {
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

    /// A fenced or indented code block: `spoiler` and `quote` fences hold
    /// Markdown; anything else is code, with its language.
    fn code_block(&mut self, info: &str, body: &str, depth: usize) -> String {
        let (lang, rest) = match info.split_once(char::is_whitespace) {
            Some((lang, rest)) => (lang, rest.trim()),
            None => (info, ""),
        };
        let lang = lang.to_ascii_lowercase();
        if depth < MAX_FENCE_DEPTH && lang == "spoiler" {
            let header = self.blocks(rest, depth + 1);
            let content = self.blocks(body, depth + 1);
            return format!(
                "<div class=\"spoiler-block\"><div class=\"spoiler-header\">\n{}\n</div>\
                 <div class=\"spoiler-content\" aria-hidden=\"true\">\n{}\n</div></div>\n",
                header.trim_end(),
                content.trim_end()
            );
        }
        if depth < MAX_FENCE_DEPTH && (lang == "quote" || lang == "quoted") {
            let content = self.blocks(body, depth + 1);
            return format!("<blockquote>\n{}\n</blockquote>\n", content.trim_end());
        }
        let code = escape_html(&self.restore(body));
        let info_lang = info.split_whitespace().next().unwrap_or("");
        if info_lang.is_empty() {
            format!("<div class=\"codehilite\"><pre><span></span><code>{code}</code></pre></div>\n")
        } else {
            format!(
                "<div class=\"codehilite\" data-code-language=\"{}\"><pre><span></span>\
                 <code>{code}</code></pre></div>\n",
                escape_html(info_lang)
            )
        }
    }
}

/// Length of a bare `http(s)://` URL at `chars[0]`, without trailing
/// punctuation; `None` if there is none.
fn url_len(chars: &[char]) -> Option<usize> {
    let prefix: String = chars.iter().take(8).collect::<String>().to_ascii_lowercase();
    let scheme = if prefix.starts_with("https://") {
        8
    } else if prefix.starts_with("http://") {
        7
    } else {
        return None;
    };
    let mut end = scheme;
    while end < chars.len() && !chars[end].is_whitespace() && !"<>\"`".contains(chars[end]) {
        end += 1;
    }
    let mut parens: i64 =
        chars[..end].iter().map(|c| i64::from(*c == '(') - i64::from(*c == ')')).sum();
    while end > scheme {
        let last = chars[end - 1];
        if ".,;:!?'*_~".contains(last) {
            end -= 1;
        } else if last == ')' && parens < 0 {
            parens += 1;
            end -= 1;
        } else {
            break;
        }
    }
    (end > scheme).then_some(end)
}

/// Keeps http(s), mailto and relative URLs; anything else (`javascript:`,
/// `data:`, `vbscript:`…) becomes an inert empty link.
fn safe_url(url: &str) -> String {
    // Browsers ignore ASCII whitespace and control characters inside a
    // scheme ("java\tscript:"), so look at the URL without them.
    let squeezed: String =
        url.chars().filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control()).collect();
    let lower = squeezed.to_ascii_lowercase();
    match lower.find([':', '/', '?', '#']) {
        Some(i) if lower.as_bytes()[i] == b':' => {
            if matches!(&lower[..i], "http" | "https" | "mailto") {
                url.to_owned()
            } else {
                String::new()
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests;
