//! The text handed to the CommonMark parser, rewritten line by line so that
//! the parser builds the blocks Zulip builds:
//!
//! - lists nest by two spaces (Zulip's list indent) whatever the marker's
//!   width, `*`, `-` and `+` items next to each other are one list, and a
//!   list may hang off a paragraph line;
//! - a block quote holds the rest of its block (lines without `>` too),
//!   and lines of nothing but `>` are text, not empty quotes;
//! - no setext headings (`===` / `--` under a line are text, `---` is a
//!   rule), no reference definitions, no `1)` lists, no `#` alone as a
//!   heading, no indented fences (fences were read already);
//! - inside each line's text, Zulip's inline syntax is replaced
//!   (`zulip::line_content`).

use std::collections::HashMap;

use super::zulip::{line_content, literal, Piece};
use super::Resolver;

/// How many levels of quotes the quote rules look into.
const MAX_QUOTE_RULE_DEPTH: usize = 8;

/// Rewrites `text` (fences already replaced) for the parser.
/// Also returns the first numbers of nested ordered lists, by the offset
/// of their first marker: they are written `1.` for the parser (which lets
/// only a list starting at 1 interrupt a paragraph).
pub(super) fn prepare(
    text: &str,
    pieces: &mut Vec<Piece>,
    resolver: &dyn Resolver,
) -> (String, HashMap<usize, u64>) {
    let mut starts = HashMap::new();
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if text.contains('>') {
        fix_quotes(&mut lines);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 8 + 16);
    // Widths of the open list items' markers (marker + one space), outermost first.
    let mut items: Vec<usize> = Vec::new();
    let mut prev_blank = true;
    let mut prev_item = false;
    for line in &lines {
        if line.trim().is_empty() {
            out.push('\n');
            prev_blank = true;
            prev_item = false;
            continue;
        }
        let quote = quote_prefix(line);
        let (prefix, rest) = line.split_at(quote);
        let indent = rest.len() - rest.trim_start_matches(' ').len();
        let body = &rest[indent..];
        let is_hr = indent < 4 && is_rule(body);
        let marker = if is_hr { None } else { list_marker(body) };
        if quote > 0 {
            if prev_blank {
                items.clear();
            }
            out.push_str(prefix);
            push_spaces(&mut out, indent);
            push_block_line(&mut out, body, is_hr, marker, pieces, resolver);
        } else if let Some(marker) = marker.filter(|_| !items.is_empty() || indent < 4) {
            let depth = if items.is_empty() { 0 } else { (indent / 2).min(items.len()) };
            if items.is_empty() && !prev_blank && !prev_item {
                // A list hanging off a paragraph line.
                out.push('\n');
            }
            items.truncate(depth);
            push_spaces(&mut out, items.iter().sum());
            let (mark, content) = body.split_at(marker);
            let mark = if mark.len() == 1 {
                "-"
            } else if depth > 0 && mark != "1." {
                if let Ok(n) = mark[..mark.len() - 1].parse::<u64>() {
                    starts.insert(out.len(), n);
                }
                "1."
            } else {
                mark
            };
            out.push_str(mark);
            items.push(mark.len() + 1);
            let content = content.trim_start_matches(' ');
            if !content.is_empty() {
                out.push(' ');
                push_content(&mut out, content, pieces, resolver);
            }
        } else if !items.is_empty() && indent >= 2 {
            let depth = (indent / 2).min(items.len());
            push_spaces(&mut out, items[..depth].iter().sum::<usize>() + indent - 2 * depth);
            push_block_line(&mut out, body, is_hr, None, pieces, resolver);
        } else {
            if prev_blank {
                items.clear();
            }
            if is_hr && !prev_blank {
                // Not a setext underline: a rule after the paragraph.
                out.push('\n');
            }
            push_spaces(&mut out, indent);
            if indent >= 4 && items.is_empty() {
                // Indented code: kept as typed (placeholders are put back
                // as the source inside code).
                push_content(&mut out, body, pieces, resolver);
            } else {
                push_block_line(&mut out, body, is_hr, None, pieces, resolver);
            }
        }
        out.push('\n');
        prev_blank = false;
        prev_item = marker.is_some() && quote == 0;
    }
    (out, starts)
}

fn push_spaces(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A line's text after its quote markers and indentation.
fn push_block_line(
    out: &mut String,
    body: &str,
    is_hr: bool,
    marker: Option<usize>,
    pieces: &mut Vec<Piece>,
    resolver: &dyn Resolver,
) {
    if is_hr {
        out.push_str(body);
        return;
    }
    match marker {
        Some(len) => {
            out.push_str(&body[..len]);
            push_content(out, &body[len..], pieces, resolver);
        }
        None => push_content(out, body, pieces, resolver),
    }
}

/// The text of a line, with the block syntax CommonMark has and Zulip
/// lacks turned into text first.
fn push_content(out: &mut String, body: &str, pieces: &mut Vec<Piece>, resolver: &dyn Resolver) {
    let trimmed = body.trim_end();
    let first = body.chars().next();
    let literal_first = match first {
        // A setext underline.
        Some('=') => trimmed.bytes().all(|b| b == b'='),
        Some('-') => trimmed.len() <= 2 && trimmed.bytes().all(|b| b == b'-'),
        // `#` alone is no heading.
        Some('#') => trimmed.len() <= 6 && trimmed.bytes().all(|b| b == b'#') && body == trimmed,
        // A reference definition.
        Some('[') => is_definition(body),
        // A fence Zulip did not read as one.
        Some('`') => {
            let run = body.bytes().take_while(|b| *b == b'`').count();
            run >= 3 && !body[run..].contains('`')
        }
        _ => false,
    };
    if literal_first {
        let c = first.expect("checked");
        out.push(literal(c));
        line_content(&body[1..], out, pieces, resolver);
        return;
    }
    // `1)` starts no list in Zulip.
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && body[digits..].starts_with(')') {
        out.push_str(&body[..digits]);
        out.push(literal(')'));
        line_content(&body[digits + 1..], out, pieces, resolver);
        return;
    }
    line_content(body, out, pieces, resolver);
}

/// `[label]: …`.
fn is_definition(body: &str) -> bool {
    body.find("]:").is_some_and(|end| end > 1 && !body[1..end].contains(['[', ']']))
}

/// The length of a line's quote markers: `>` (after at most three spaces)
/// and one optional space, repeated.
fn quote_prefix(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        let spaces = bytes[i..].iter().take_while(|b| **b == b' ').count();
        if spaces > 3 || bytes.get(i + spaces) != Some(&b'>') {
            return i;
        }
        i += spaces + 1;
        if bytes.get(i) == Some(&b' ') {
            i += 1;
        }
    }
}

/// A thematic break: three or more of one of `*`, `-`, `_`, spaces between.
fn is_rule(body: &str) -> bool {
    let Some(c) = body.chars().next().filter(|c| matches!(c, '*' | '-' | '_')) else {
        return false;
    };
    let mut count = 0;
    for b in body.trim_end().chars() {
        if b == c {
            count += 1;
        } else if b != ' ' {
            return false;
        }
    }
    count >= 3
}

/// The length of a list marker (`*`, `-`, `+`, or `N.`) at the start of
/// `body`, which must be followed by a space (or end the line).
fn list_marker(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let len = match bytes.first()? {
        b'*' | b'-' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || bytes.get(digits) != Some(&b'.') {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    match bytes.get(len) {
        Some(b' ') => Some(len),
        None if len > 1 => Some(len),
        _ => None,
    }
}

/// Zulip's quote rules, on each block of lines (blank lines between): from
/// the first quote line on, the rest of the block is in the quote (lines
/// without `>` get one); but when the lines from there on are all bare `>`
/// lines, there is no quote and the `>` are text. Applied again inside
/// each quote, `MAX_QUOTE_RULE_DEPTH` levels deep.
fn fix_quotes(lines: &mut [String]) {
    let mut offsets = vec![0usize; lines.len()];
    let mut start = 0;
    while start < lines.len() {
        if lines[start].trim().is_empty() {
            start += 1;
            continue;
        }
        let end = (start..lines.len()).find(|&k| lines[k].trim().is_empty()).unwrap_or(lines.len());
        fix_quote_block(&mut lines[start..end], &mut offsets[start..end], 0);
        start = end;
    }
}

/// Where the `>` of a quote line is (at most three spaces in), if it is one.
fn quote_marker(rest: &str) -> Option<usize> {
    let spaces = rest.bytes().take_while(|b| *b == b' ').count();
    (spaces <= 3 && rest.as_bytes().get(spaces) == Some(&b'>')).then_some(spaces)
}

fn fix_quote_block(lines: &mut [String], offsets: &mut [usize], depth: usize) {
    if depth >= MAX_QUOTE_RULE_DEPTH {
        return;
    }
    let marker = |line: &String, offset: usize| quote_marker(&line[offset..]);
    let bare = |line: &String, offset: usize| {
        marker(line, offset).is_some_and(|m| line[offset + m + 1..].trim().is_empty())
    };
    let Some(first) = (0..lines.len()).find(|&k| marker(&lines[k], offsets[k]).is_some()) else {
        return;
    };
    let last_real = (0..lines.len()).rev().find(|&k| !bare(&lines[k], offsets[k]));
    if last_real.is_none_or(|last| first > last) {
        for k in first..lines.len() {
            if let Some(m) = marker(&lines[k], offsets[k]) {
                let at = offsets[k] + m;
                lines[k].replace_range(at..at + 1, &literal('>').to_string());
            }
        }
        return;
    }
    for k in first..lines.len() {
        let at = match marker(&lines[k], offsets[k]) {
            Some(m) => offsets[k] + m,
            None => {
                // A line of the quote without `>`.
                lines[k].insert_str(offsets[k], "> ");
                offsets[k]
            }
        };
        let mut inner = at + 1;
        if lines[k].as_bytes().get(inner) == Some(&b' ') {
            inner += 1;
        }
        offsets[k] = inner;
    }
    // The quote's own blocks, one level in.
    let (lines, offsets) = (&mut lines[first..], &mut offsets[first..]);
    let mut start = 0;
    while start < lines.len() {
        if lines[start][offsets[start]..].trim().is_empty() {
            start += 1;
            continue;
        }
        let end = (start..lines.len())
            .find(|&k| lines[k][offsets[k]..].trim().is_empty())
            .unwrap_or(lines.len());
        fix_quote_block(&mut lines[start..end], &mut offsets[start..end], depth + 1);
        start = end;
    }
}
