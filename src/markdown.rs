//! Message Markdown → HTML. Pure: no state, no I/O.
//!
//! CommonMark via pulldown-cmark (an iterative parser and writer, so deep
//! nesting cannot overflow a small coroutine stack), shaped the way Zulip
//! renders: single newlines are line breaks, raw HTML is shown as text
//! (never passed through), and links only keep safe schemes.
//! Zulip's own extensions (mentions, channel links, emoji) build on this.

use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Renders message content to HTML.
pub fn render(source: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TABLES);
    let events = Parser::new_ext(source, options).map(|event| match event {
        // Raw HTML is escaped text, never markup (XSS); an HTML block
        // becomes a paragraph of that text, as in Zulip.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
        Event::SoftBreak => Event::HardBreak,
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url, link_type),
            title,
            id,
        }),
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_url(dest_url, link_type),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::with_capacity(source.len() + source.len() / 2 + 16);
    html::push_html(&mut out, events);
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Keeps http(s), mailto and relative URLs; anything else (`javascript:`,
/// `data:`…) becomes an inert empty link.
fn safe_url(url: CowStr<'_>, _kind: LinkType) -> CowStr<'_> {
    let lower = url.trim_start().to_ascii_lowercase();
    let scheme_end = lower.find([':', '/', '?', '#']);
    match scheme_end {
        Some(i) if lower.as_bytes()[i] == b':' => {
            let scheme = &lower[..i];
            if matches!(scheme, "http" | "https" | "mailto") {
                url
            } else {
                CowStr::Borrowed("")
            }
        }
        _ => url,
    }
}

/// Whether content is a `/me` status message.
pub fn is_me_message(source: &str) -> bool {
    source.starts_with("/me ") && !source.contains('\n')
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn renders_like_zulip() {
        let cases = [
            ("hello", "<p>hello</p>"),
            ("**bold** _it_", "<p><strong>bold</strong> <em>it</em></p>"),
            ("a\nb", "<p>a<br />\nb</p>"),
            ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
            ("[x](javascript:alert(1))", "<p><a href=\"\">x</a></p>"),
            ("[x](https://example.com)", "<p><a href=\"https://example.com\">x</a></p>"),
        ];
        for (input, expected) in cases {
            assert_eq!(render(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = ">".repeat(5000) + " x";
        assert!(render(&deep).contains('x'));
        let list = "- ".repeat(5000) + "x";
        assert!(render(&list).contains('x'));
    }
}
