//! Fenced blocks, read line by line before any other parsing, as Zulip's
//! fenced-block preprocessor reads them.
//!
//! A fence is a line starting with three or more `` ` `` or `~`, then an
//! optional language (an optional `{` or `.` before it is dropped) and
//! header, with no `` ` `` or `~` after the fence; the block ends at a line
//! equal to the same fence (trailing whitespace aside), or at the end of
//! the message. By language:
//!
//! - `quote` / `quoted`: its lines, fences inside processed first, are
//!   given back as `> ` lines, so they become a block quote;
//! - `spoiler`: the header and the body stay Markdown between the
//!   spoiler's HTML frame;
//! - `math`: display math (natter renders the `tex-error` span Zulip
//!   renders when KaTeX cannot typeset);
//! - anything else: code, as `<div class="codehilite">`.
//!
//! Rendered blocks go into the piece list and stand in the text as a
//! placeholder line between blank lines. The open blocks are an explicit
//! stack (no recursion), at most `MAX_DEPTH` deep.

use std::fmt::Write as _;

use super::zulip::{Math, Piece, CLOSE, OPEN};
use super::{escape_attr, escape_text, highlight};

/// Fences nested deeper than this are read as text: quote fences prefix
/// every line they hold, so unbounded nesting would grow the text
/// quadratically.
const MAX_DEPTH: usize = 32;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Outer,
    Quote,
    Spoiler,
    Math,
    Code,
}

struct Frame {
    kind: Kind,
    fence: String,
    /// The language (code) or header (spoiler).
    lang: String,
    header: String,
    lines: Vec<String>,
}

/// A fence line: (fence, language, header).
fn open_fence(line: &str) -> Option<(&str, &str, &str)> {
    let first = line.chars().next()?;
    if first != '`' && first != '~' {
        return None;
    }
    let run = line.bytes().take_while(|b| *b == first as u8).count();
    if run < 3 {
        return None;
    }
    let (fence, rest) = line.split_at(run);
    if rest.contains(['`', '~']) {
        return None;
    }
    let rest = rest.trim_start_matches(' ');
    let rest = rest.strip_prefix('{').unwrap_or(rest);
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    let lang_len =
        rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || b"_+-./#".contains(b)).count();
    let (lang, header) = rest.split_at(lang_len);
    let header = header.trim_start_matches(' ');
    // The pattern ends at the end of the line: anything else is a header,
    // which may end in `}`.
    Some((fence, lang, header))
}

/// Replaces the fenced blocks of `source` (whole lines) as described in the
/// module documentation; returns the text for the rest of the parsing.
pub(super) fn fences(source: &str, pieces: &mut Vec<Piece>) -> String {
    if !source.contains("```") && !source.contains("~~~") {
        return source.to_owned();
    }
    let mut stack = vec![Frame {
        kind: Kind::Outer,
        fence: String::new(),
        lang: String::new(),
        header: String::new(),
        lines: Vec::new(),
    }];
    for line in source.split('\n') {
        let room = stack.len() < MAX_DEPTH;
        let top = stack.last_mut().expect("the outer frame stays");
        let closes = top.kind != Kind::Outer && line.trim_end() == top.fence;
        if closes {
            done(&mut stack, pieces);
            continue;
        }
        match top.kind {
            Kind::Code => top.lines.push(line.trim_end().to_owned()),
            Kind::Math => top.lines.push(line.to_owned()),
            Kind::Outer | Kind::Quote | Kind::Spoiler => match open_fence(line) {
                Some((fence, lang, header)) if room => {
                    let lang = lang.to_ascii_lowercase();
                    let kind = match lang.as_str() {
                        "quote" | "quoted" => Kind::Quote,
                        "spoiler" => Kind::Spoiler,
                        "math" => Kind::Math,
                        _ => Kind::Code,
                    };
                    let frame = Frame {
                        kind,
                        fence: fence.to_owned(),
                        lang,
                        header: header.to_owned(),
                        lines: Vec::new(),
                    };
                    stack.push(frame);
                }
                _ => top.lines.push(line.to_owned()),
            },
        }
    }
    while stack.len() > 1 {
        done(&mut stack, pieces);
    }
    stack.pop().expect("the outer frame").lines.join("\n")
}

/// Closes the innermost block, handing its output to the one around it.
fn done(stack: &mut Vec<Frame>, pieces: &mut Vec<Piece>) {
    let frame = stack.pop().expect("a block to close");
    let parent = &mut stack.last_mut().expect("the outer frame stays").lines;
    let mut placeholder = |html: String, block: bool| {
        let mut piece = Piece::block(html);
        piece.block = block;
        let line = format!("{OPEN}{}{CLOSE}", pieces.len());
        pieces.push(piece);
        line
    };
    match frame.kind {
        Kind::Outer => unreachable!("the outer frame is never closed"),
        Kind::Code => {
            let html = code_block(&frame.lang, &frame.lines.join("\n"));
            let line = placeholder(html, true);
            parent.extend([String::new(), line, String::new()]);
        }
        Kind::Math => {
            let text = frame.lines.join("\n");
            let formulas: Vec<String> = text.split("\n\n").map(str::to_owned).collect();
            let html: Vec<String> = formulas.iter().map(|p| tex_error(p)).collect();
            let line = format!("{OPEN}{}{CLOSE}", pieces.len());
            let mut piece = Piece::block(html.join("\n\n"));
            piece.block = false;
            piece.math = Some(Math { display: true, formulas });
            pieces.push(piece);
            parent.extend([String::new(), line, String::new()]);
        }
        Kind::Quote => {
            parent.push(String::new());
            parent.extend(frame.lines.iter().map(|l| format!("> {l}")));
            parent.push(String::new());
        }
        Kind::Spoiler => {
            if frame.lines.is_empty() {
                return;
            }
            let open = placeholder(
                "<div class=\"spoiler-block\"><div class=\"spoiler-header\">".to_owned(),
                true,
            );
            let middle = placeholder(
                "</div><div class=\"spoiler-content\" aria-hidden=\"true\">".to_owned(),
                true,
            );
            let close = placeholder("</div></div>".to_owned(), true);
            parent.extend([String::new(), open, String::new(), frame.header, String::new()]);
            parent.extend([middle, String::new()]);
            parent.extend(frame.lines);
            parent.extend([String::new(), close, String::new()]);
        }
    }
}

/// What Zulip shows for display TeX that KaTeX cannot typeset.
pub(super) fn tex_error(tex: &str) -> String {
    format!("<span class=\"tex-error\">{}</span>", escape_python(tex))
}

/// Python's `html.escape`: `&`, `<`, `>`, `"` and `'` (as `&#x27;`).
fn escape_python(text: &str) -> String {
    escape_text(text).replace('"', "&quot;").replace('\'', "&#x27;")
}

/// A code block as Zulip renders it: the `codehilite` frame, with the
/// language's display name in `data-code-language` when one was given;
/// blank lines at either end dropped, and a final newline.
pub(super) fn code_block(lang: &str, code: &str) -> String {
    let code = code.trim_matches('\n');
    let mut html = String::with_capacity(code.len() + 96);
    html.push_str("<div class=\"codehilite\"");
    if !lang.is_empty() {
        let name = highlight::display_name(lang).unwrap_or(lang);
        let _ = write!(html, " data-code-language=\"{}\"", escape_attr(name));
    }
    html.push_str("><pre><span></span><code>");
    if lang.is_empty() {
        // Pygments' own escaping.
        for c in code.chars() {
            match c {
                '&' => html.push_str("&amp;"),
                '<' => html.push_str("&lt;"),
                '>' => html.push_str("&gt;"),
                '"' => html.push_str("&quot;"),
                '\'' => html.push_str("&#39;"),
                c => html.push(c),
            }
        }
    } else if highlight::highlight_into(lang, code, &mut html) {
        html.push_str("</code></pre></div>");
        return html;
    } else {
        // Re-serialized after the language is set: quotes stay as typed.
        for c in code.chars() {
            match c {
                '&' => html.push_str("&amp;"),
                '<' => html.push_str("&lt;"),
                '>' => html.push_str("&gt;"),
                c => html.push(c),
            }
        }
    }
    html.push_str("\n</code></pre></div>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fences_as_zulip_does() {
        assert_eq!(open_fence("~~~~.python "), Some(("~~~~", "python", "")));
        assert_eq!(open_fence("``` {js}"), Some(("```", "js", "}")));
        assert_eq!(open_fence("```spoiler Hi there"), Some(("```", "spoiler", "Hi there")));
        assert_eq!(open_fence("```inline code```"), None);
        assert_eq!(open_fence("~~~~~~~~x: y~~~~~~"), None);
        assert_eq!(open_fence("``"), None);
    }
}
