//! The HTML writer: pulldown-cmark's events (with their source offsets)
//! in, Zulip's HTML out — laid out as Python-Markdown writes it (a block
//! element's closing tag followed by a newline, a container's first block
//! child on a new line, `<br>`, `<hr>`), the text of each paragraph,
//! heading, list item and table cell rendered by `inline::Inline`.
//!
//! The parser keeps its own stack; this writer keeps only flags and the
//! open link, so nesting costs no recursion here either.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::fence::code_block;
use super::inline::{placeholder_at, Image, Inline};
use super::zulip::{unliteral_str, Piece};
use super::{escape_attr, escape_text_into, links, Mentions};

/// Renders the prepared text.
pub(super) fn write(
    text: &str,
    starts: &HashMap<usize, u64>,
    realm: Option<&str>,
    pieces: &mut Vec<Piece>,
    mentions: &mut Mentions,
) -> String {
    let mut w = Writer {
        text,
        starts,
        realm,
        keep_lead: true,
        item_lines: Vec::new(),
        images: Vec::new(),
        previewed: Vec::new(),
        out: String::with_capacity(text.len() + text.len() / 2 + 16),
        pieces,
        mentions,
        quote_depth: 0,
        fresh: false,
        inline: None,
        link: None,
        code: None,
        alignments: Vec::new(),
        cell: 0,
        in_head: false,
        last_end: 0,
        after_break: false,
    };
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        w.event(event, range);
    }
    w.out
}

/// A link being read: its target, title, source range and text.
struct Link {
    dest: String,
    title: String,
    range: Range<usize>,
    html: String,
}

/// What kind of element the open inline text belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Paragraph,
    /// Text directly in a (tight) list item.
    Item,
    Other,
}

struct Writer<'t, 'p> {
    text: &'t str,
    /// The real first numbers of nested ordered lists (by marker offset).
    starts: &'t HashMap<usize, u64>,
    /// The realm's URL with a final `/`, for relative local links.
    realm: Option<&'t str>,
    /// Continued lines keep their indentation (the paragraph starts a
    /// list item's marker line, or is outside lists), as in Zulip.
    keep_lead: bool,
    /// Where the open list items' marker lines start.
    item_lines: Vec<usize>,
    /// Links to images in the open inline text.
    images: Vec<Image>,
    /// Images previewed so far (each once per message).
    previewed: Vec<String>,
    out: String,
    pieces: &'p mut Vec<Piece>,
    mentions: &'p mut Mentions,
    quote_depth: usize,
    /// A container was just opened: its first block child starts a line.
    fresh: bool,
    /// The inline text being gathered, and for what.
    inline: Option<(String, Container)>,
    link: Option<Link>,
    /// A code block being read: (language, text).
    code: Option<(String, String)>,
    alignments: Vec<Alignment>,
    cell: usize,
    in_head: bool,
    /// Where the last inline event ended in the source.
    last_end: usize,
    /// The last inline event was a line break.
    after_break: bool,
}

impl Writer<'_, '_> {
    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, code) = self.code.take().expect("open");
                    let code = self.restore(&unliteral_str(&code));
                    // Zulip drops trailing whitespace on every line.
                    let code: Vec<&str> = code.lines().map(str::trim_end).collect();
                    self.block_start();
                    self.out.push_str(&code_block(&lang, &code.join("\n")));
                    self.out.push('\n');
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => {
                self.inline_text(&t, range);
            }
            Event::Code(_) if self.text[range.clone()].contains('\n') => {
                // Zulip's code spans stay on one line.
                let raw = unliteral_str(&self.text[range.clone()]);
                self.inline_text(&raw, range);
            }
            Event::Code(_) => {
                let raw = &self.text[range.clone()];
                let ticks = raw.bytes().take_while(|b| *b == b'`').count();
                let inner = &raw[ticks..raw.len().saturating_sub(ticks).max(ticks)];
                let inner = self.restore(&unliteral_str(inner));
                let mut html = String::from("<code>");
                for c in inner.chars() {
                    match c {
                        '&' => html.push_str("&amp;"),
                        '<' => html.push_str("&lt;"),
                        '>' => html.push_str("&gt;"),
                        '\n' => html.push(' '),
                        c => html.push(c),
                    }
                }
                html.push_str("</code>");
                match &mut self.link {
                    Some(link) => link.html.push_str(&html),
                    None => {
                        let placeholder = self.inline_renderer().stash(html);
                        self.buffer(range).push_str(&placeholder);
                    }
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                // The spaces before the line end are kept, as Zulip keeps them.
                let before = &self.text[..range.start];
                let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
                let spaces = if range.start.saturating_sub(spaces) >= self.last_end {
                    &before[before.len() - spaces..]
                } else {
                    ""
                };
                let hard = &self.text[range.clone()];
                let hard = hard.trim_end_matches('\n');
                let piece = format!("{spaces}{hard}\n");
                match &mut self.link {
                    Some(link) => link.html.push_str(&piece),
                    None => self.buffer(range.clone()).push_str(&piece),
                }
                self.last_end = range.end;
                self.after_break = true;
            }
            Event::Rule => {
                self.block_start();
                self.out.push_str("<hr>\n");
            }
            _ => {}
        }
    }

    fn inline_renderer(&mut self) -> Inline<'_> {
        Inline {
            pieces: self.pieces,
            mentions: self.mentions,
            quoted: self.quote_depth > 0,
            images: None,
            realm: self.realm,
        }
    }

    /// `text` with placeholders put back as their source.
    fn restore(&mut self, text: &str) -> String {
        self.inline_renderer().restore(text)
    }

    /// The inline buffer, opened for a tight list item if none is.
    fn buffer(&mut self, range: Range<usize>) -> &mut String {
        if self.inline.is_none() {
            self.inline = Some((String::new(), Container::Item));
            self.fresh = false;
        }
        let (buffer, _) = self.inline.as_mut().expect("just opened");
        if self.after_break && self.keep_lead {
            // Indentation kept on a continued line (after quote markers).
            let line_start = self.text[..range.start].rfind('\n').map_or(0, |n| n + 1);
            let mut lead = &self.text[line_start..range.start];
            while let Some(rest) = lead.trim_start_matches(' ').strip_prefix('>') {
                lead = rest.strip_prefix(' ').unwrap_or(rest);
            }
            if !lead.is_empty() && lead.bytes().all(|b| b == b' ') {
                buffer.push_str(lead);
            }
        }
        self.after_break = false;
        self.last_end = range.end;
        buffer
    }

    fn inline_text(&mut self, text: &str, range: Range<usize>) {
        let text = unliteral_str(text);
        let shown = self.link.as_ref().map(|_| self.inline_restore(&text));
        if let (Some(shown), Some(link)) = (shown, &mut self.link) {
            escape_text_into(&shown, &mut link.html);
            self.last_end = range.end;
            return;
        }
        self.buffer(range).push_str(&text);
    }

    /// Inside link text: placeholders shown as the source they replaced
    /// (link text is not read for Zulip syntax).
    fn inline_restore(&self, text: &str) -> String {
        Inline::restore_with(self.pieces, text)
    }

    /// Before a block element: ends any open inline text (a tight item's),
    /// and starts a line if the container was just opened.
    fn block_start(&mut self) {
        self.flush_inline();
        if self.fresh {
            self.out.push('\n');
            self.fresh = false;
        }
    }

    /// Renders the gathered inline text.
    fn flush_inline(&mut self) {
        let Some((mut data, container)) = self.inline.take() else { return };
        if matches!(container, Container::Paragraph | Container::Item) {
            // Spaces at the end of the last line are kept.
            let rest = &self.text[self.last_end.min(self.text.len())..];
            let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
            if !line.is_empty() && line.bytes().all(|b| b == b' ' || b == b'\t') {
                data.push_str(line);
            }
        }
        // A paragraph holding only a rendered block is that block.
        let previews =
            matches!(container, Container::Paragraph | Container::Item) && self.quote_depth == 0;
        if container == Container::Paragraph {
            let trimmed = data.trim();
            if let Some((index, len)) = placeholder_at(trimmed) {
                if len == trimmed.len() && self.pieces.get(index).is_some_and(|p| p.block) {
                    self.out.push_str(&self.pieces[index].html);
                    self.out.push('\n');
                    return;
                }
            }
        }
        let mut images = std::mem::take(&mut self.images);
        if !previews {
            images.clear();
        }
        let html = {
            let mut inline = self.inline_renderer();
            if previews {
                inline.images = Some(&mut images);
            }
            inline.render(&data)
        };
        images.retain(|image| {
            let new = !self.previewed.contains(&image.href);
            if new {
                self.previewed.push(image.href.clone());
            }
            new
        });
        let mut preview = String::new();
        for image in &images {
            let href = escape_attr(&image.href);
            let _ = write!(preview, "<div class=\"message_inline_image\"><a href=\"{href}\"");
            if let Some(title) = &image.title {
                let _ = write!(preview, " title=\"{}\"", escape_attr(title));
            }
            let _ = write!(preview, "><img src=\"{href}\"></a></div>");
        }
        if container != Container::Paragraph {
            self.out.push_str(&html);
            self.out.push_str(&preview);
            return;
        }
        // A paragraph of nothing but a bare link to an image is its preview.
        let alone =
            images.len() == 1 && images[0].title.is_none() && data.trim() == images[0].source;
        if !alone {
            self.out.push_str("<p>");
            self.out.push_str(&html);
            self.out.push_str("</p>\n");
        }
        if !preview.is_empty() {
            self.out.push_str(&preview);
            self.out.push('\n');
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph => {
                self.block_start();
                let line_start = self.text[..range.start].rfind('\n').map_or(0, |n| n + 1);
                self.keep_lead = self.item_lines.last().is_none_or(|l| *l == line_start);
                self.inline = Some((String::new(), Container::Paragraph));
                self.after_break = false;
            }
            Tag::Heading { level, .. } => {
                self.block_start();
                let _ = write!(self.out, "<{}>", heading(level));
                self.inline = Some((String::new(), Container::Other));
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.out.push_str("<blockquote>");
                self.fresh = true;
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        let info = self.restore(&unliteral_str(&info));
                        info.split_whitespace().next().unwrap_or("").to_lowercase()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.block_start();
                let marker = range.start + self.text[range.start..].len()
                    - self.text[range.start..].trim_start_matches(' ').len();
                let start = start.map(|n| self.starts.get(&marker).copied().unwrap_or(n));
                match start {
                    Some(1) => self.out.push_str("<ol>"),
                    Some(n) => {
                        let _ = write!(self.out, "<ol start=\"{n}\">");
                    }
                    None => self.out.push_str("<ul>"),
                }
                self.fresh = true;
            }
            Tag::Item => {
                self.block_start();
                self.keep_lead = true;
                let line_start = self.text[..range.start].rfind('\n').map_or(0, |n| n + 1);
                self.item_lines.push(line_start);
                self.out.push_str("<li>");
                self.fresh = true;
            }
            Tag::Table(alignments) => {
                self.block_start();
                self.alignments = alignments;
                self.out.push_str("<table>");
                self.fresh = true;
            }
            Tag::TableHead => {
                self.block_start();
                self.out.push_str("<thead>\n<tr>");
                self.fresh = true;
                self.in_head = true;
                self.cell = 0;
            }
            Tag::TableRow => {
                self.block_start();
                self.out.push_str("<tr>");
                self.fresh = true;
                self.cell = 0;
            }
            Tag::TableCell => {
                self.block_start();
                let name = if self.in_head { "th" } else { "td" };
                match self.alignments.get(self.cell) {
                    Some(Alignment::Left) => {
                        let _ = write!(self.out, "<{name} style=\"text-align: left;\">");
                    }
                    Some(Alignment::Center) => {
                        let _ = write!(self.out, "<{name} style=\"text-align: center;\">");
                    }
                    Some(Alignment::Right) => {
                        let _ = write!(self.out, "<{name} style=\"text-align: right;\">");
                    }
                    _ => {
                        let _ = write!(self.out, "<{name}>");
                    }
                }
                self.inline = Some((String::new(), Container::Other));
            }
            Tag::Link { dest_url, title, .. } | Tag::Image { dest_url, title, .. } => {
                // The link's source range; its text is gathered apart.
                self.buffer(range.clone());
                self.link = Some(Link {
                    dest: dest_url.to_string(),
                    title: title.to_string(),
                    range,
                    html: String::new(),
                });
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush_inline(),
            TagEnd::Heading(level) => {
                self.flush_inline();
                let _ = writeln!(self.out, "</{}>", heading(level));
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.fresh = false;
                self.out.push_str("</blockquote>\n");
                self.quote_depth -= 1;
            }
            TagEnd::List(ordered) => {
                self.flush_inline();
                self.fresh = false;
                self.out.push_str(if ordered { "</ol>\n" } else { "</ul>\n" });
            }
            TagEnd::Item => {
                self.flush_inline();
                self.item_lines.pop();
                self.fresh = false;
                self.out.push_str("</li>\n");
            }
            TagEnd::TableHead => {
                self.flush_inline();
                self.out.push_str("</tr>\n</thead>\n<tbody>");
                self.fresh = true;
                self.in_head = false;
            }
            TagEnd::TableRow => {
                self.flush_inline();
                self.fresh = false;
                self.out.push_str("</tr>\n");
            }
            TagEnd::TableCell => {
                self.flush_inline();
                let name = if self.in_head { "th" } else { "td" };
                let _ = writeln!(self.out, "</{name}>");
                self.cell += 1;
            }
            TagEnd::Table => {
                self.flush_inline();
                self.fresh = false;
                self.out.push_str("</tbody>\n</table>\n");
            }
            TagEnd::Link | TagEnd::Image => self.end_link(),
            _ => {}
        }
    }

    /// A finished link: Zulip's checks on its target; a refused link stays
    /// as its source text, for the later patterns to read.
    fn end_link(&mut self) {
        let Some(link) = self.link.take() else { return };
        self.last_end = link.range.end;
        let dest = self.restore(&unliteral_str(&link.dest));
        let Some(href) = links::sanitize_url(dest.trim()).map(|h| links::relative(h, self.realm))
        else {
            let source = unliteral_str(&self.text[link.range.clone()]);
            self.buffer(link.range.end..link.range.end).push_str(&source);
            return;
        };
        let mut html = String::with_capacity(href.len() * 2 + link.html.len() + 32);
        let _ = write!(html, "<a href=\"{}\"", escape_attr(&href));
        if !link.title.is_empty() {
            let title = self.restore(&unliteral_str(&link.title));
            let _ = write!(html, " title=\"{}\"", escape_attr(&title));
        }
        html.push('>');
        let named = !link.html.trim().is_empty();
        if named {
            html.push_str(&link.html);
        } else {
            escape_text_into(&href, &mut html);
        }
        html.push_str("</a>");
        let placeholder = self.inline_renderer().stash(html);
        if links::is_image(&href) && self.quote_depth == 0 {
            let title = named.then(|| {
                let source = &self.text[link.range.clone()];
                let text = source.get(1..source.find("](").unwrap_or(1)).unwrap_or("");
                self.restore(&unliteral_str(text))
            });
            let source = placeholder.clone();
            self.images.push(Image { href: href.clone(), title, source });
        }
        self.buffer(link.range.end..link.range.end).push_str(&placeholder);
    }
}

fn heading(level: HeadingLevel) -> &'static str {
    match level {
        HeadingLevel::H1 => "h1",
        HeadingLevel::H2 => "h2",
        HeadingLevel::H3 => "h3",
        HeadingLevel::H4 => "h4",
        HeadingLevel::H5 => "h5",
        HeadingLevel::H6 => "h6",
    }
}
