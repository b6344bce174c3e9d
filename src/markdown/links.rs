//! Zulip's link rules: which bare text becomes a link (its autolink
//! pattern, with the list of top-level domains in `tlds.txt`) and which
//! link targets are kept (`sanitize_url`).

use std::collections::HashSet;
use std::sync::OnceLock;

const TLDS: &str = include_str!("tlds.txt");

/// Deepest nesting of parentheses a linked path may have (Zulip's pattern
/// spells out seven levels).
const MAX_PAREN_DEPTH: usize = 7;

fn tlds() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| TLDS.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect())
}

/// `\w` as Python reads it: letters, digits (any script) and `_`.
pub(super) fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Characters a link may start after (or the start of the text).
fn starts_after(prev: Option<char>) -> bool {
    prev.is_none_or(|p| p.is_whitespace() || "'\"(,:<".contains(p))
}

/// Punctuation a link may be followed by before whitespace or the end.
fn trailing(c: char) -> bool {
    "!:;?),.'\">".contains(c)
}

/// A bare link found in text: its byte range.
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
}

/// Finds the bare links in `text`, left to right, as Zulip's autolink
/// pattern does: `http(s)://…`, a domain ending in a known top-level
/// domain, or an e-mail address; starting after whitespace or one of
/// `'"(,:<`, ending before optional punctuation and then whitespace or the
/// end; a path's parentheses balanced. Linear in the length of `text`.
pub(super) fn find_all(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    if !text.contains('.') && !text.contains("://") {
        return found;
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    // ends_ok[i]: a link may end before chars[i] (punctuation, then
    // whitespace or the end).
    let mut ends_ok = vec![false; chars.len() + 1];
    ends_ok[chars.len()] = true;
    for i in (0..chars.len()).rev() {
        let c = chars[i].1;
        ends_ok[i] = c.is_whitespace() || (trailing(c) && ends_ok[i + 1]);
    }
    let mut i = 0;
    while i < chars.len() {
        let prev = if i == 0 { None } else { Some(chars[i - 1].1) };
        // Not an attribute's value in escaped HTML (`<a href="…">`).
        let in_tag = i >= 2 && chars[i - 2].1 == '=' && matches!(prev, Some('"' | '\''));
        if starts_after(prev)
            && !in_tag
            && (word(chars[i].1) || chars[i].1 == '.' || chars[i].1 == '-')
        {
            if let Some(end) = match_at(&chars, i, &ends_ok) {
                let start = chars[i].0;
                let end_byte = chars.get(end).map_or(text.len(), |c| c.0);
                found.push(Found { start, end: end_byte });
                i = end;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// The end (char index) of a link starting at `chars[i]`, if any.
fn match_at(chars: &[(usize, char)], i: usize, ends_ok: &[bool]) -> Option<usize> {
    let at = |k: usize| chars.get(k).map(|c| c.1);
    let prefix = |k: usize, s: &str| s.chars().enumerate().all(|(n, c)| at(k + n) == Some(c));
    // `https?://host` + optional path (the scheme in lower case, as in
    // Zulip's pattern).
    let scheme = if prefix(i, "https://") {
        Some(8)
    } else if prefix(i, "http://") {
        Some(7)
    } else {
        None
    };
    if let Some(len) = scheme {
        let mut k = i + len;
        while at(k).is_some_and(|c| word(c) || ".:@-".contains(c)) {
            k += 1;
            // The host is matched lazily: the first end that works.
            if let Some(end) = end_with_optional_path(chars, k, ends_ok) {
                return Some(end);
            }
        }
    }
    // A domain ending in a known top-level domain, + optional path.
    if let Some(end) = domain_at(chars, i, ends_ok) {
        return Some(end);
    }
    email_at(chars, i, ends_ok)
}

/// With the host ending before `chars[k]`: the end of the link, trying
/// a path first (the pattern's optional group is greedy), then none.
fn end_with_optional_path(chars: &[(usize, char)], k: usize, ends_ok: &[bool]) -> Option<usize> {
    if chars.get(k).is_some_and(|c| c.1 == '/') {
        if let Some(end) = path_end(chars, k + 1, ends_ok) {
            return Some(end);
        }
    }
    ends_ok[k].then_some(k)
}

/// The path after a `/` at `chars[k-1]`: the shortest run of characters
/// other than whitespace and `"` with balanced parentheses after which the
/// link may end.
fn path_end(chars: &[(usize, char)], mut k: usize, ends_ok: &[bool]) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        if depth == 0 && ends_ok[k] {
            return Some(k);
        }
        let c = chars.get(k)?.1;
        if c.is_whitespace() || c == '"' {
            return None;
        }
        if c == '(' {
            depth += 1;
            if depth > MAX_PAREN_DEPTH {
                return None;
            }
        } else if c == ')' {
            depth = depth.checked_sub(1)?;
        }
        k += 1;
    }
}

/// `(?:[\w-]+\.)+TLD` + optional path.
fn domain_at(chars: &[(usize, char)], i: usize, ends_ok: &[bool]) -> Option<usize> {
    // Components: runs of word characters or `-`, each followed by `.`.
    let mut dots = Vec::new();
    let mut k = i;
    loop {
        let start = k;
        while chars.get(k).is_some_and(|c| word(c.1) || c.1 == '-') {
            k += 1;
        }
        if k == start || chars.get(k).is_none_or(|c| c.1 != '.') {
            break;
        }
        k += 1;
        dots.push(k);
    }
    // The components are greedy: try the most first, then fewer; at each,
    // the longest top-level domain first.
    for &after in dots.iter().rev() {
        let mut run = after;
        while chars.get(run).is_some_and(|c| c.1.is_ascii_alphanumeric() || c.1 == '-') {
            run += 1;
        }
        for end in (after + 1..=run).rev() {
            let tld: String = chars[after..end].iter().map(|c| c.1).collect();
            if !tlds().contains(tld.as_str()) {
                continue;
            }
            if let Some(link_end) = end_with_optional_path(chars, end, ends_ok) {
                return Some(link_end);
            }
        }
    }
    None
}

/// `[\w.-]+@[\w.-]+\.\w+`.
fn email_at(chars: &[(usize, char)], i: usize, ends_ok: &[bool]) -> Option<usize> {
    let local = |c: char| word(c) || c == '.' || c == '-';
    let mut k = i;
    while chars.get(k).is_some_and(|c| local(c.1)) {
        k += 1;
    }
    if k == i || chars.get(k).is_none_or(|c| c.1 != '@') {
        return None;
    }
    let host_start = k + 1;
    let mut end = host_start;
    while chars.get(end).is_some_and(|c| local(c.1)) {
        end += 1;
    }
    // Backtrack to the longest end that has `.` + word characters before it
    // and may end the link.
    let mut e = end;
    while e > host_start {
        if ends_ok[e] {
            // The last `.` before e, with only word characters after it.
            let mut d = e;
            while d > host_start && word(chars[d - 1].1) {
                d -= 1;
            }
            if d < e && d > host_start + 1 && chars[d - 1].1 == '.' {
                return Some(e);
            }
        }
        e -= 1;
    }
    None
}

/// Zulip's `sanitize_url`: the URL to link to, or `None` when the link is
/// refused (then its text stays as typed). No scheme: `mailto:` when it
/// has an `@`, kept when it starts with `/` or is a `#fragment`, else
/// `http://` is put in front. Only http, https, ftp, mailto, tel and sms
/// are linked.
pub(super) fn sanitize_url(url: &str) -> Option<String> {
    let url = url.replace(' ', "%20");
    let (scheme, rest) = split_scheme(&url);
    match scheme {
        None => {
            let has_netloc = rest.starts_with("//");
            let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
            if !has_netloc && rest[..path_end].contains('@') {
                return Some(format!("mailto:{rest}"));
            }
            if !has_netloc && rest.starts_with('/') {
                return Some(rest.to_owned());
            }
            if rest.starts_with('#') && rest.len() > 1 {
                return Some(rest.to_owned());
            }
            if rest.is_empty() {
                return None;
            }
            sanitize_url(&format!("http://{rest}"))
        }
        Some(scheme) => {
            let scheme = scheme.to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "ftp" | "mailto" | "tel" | "sms")
                .then(|| format!("{scheme}:{rest}"))
        }
    }
}

/// Zulip's local links: a link into the realm's own `#narrow` views or
/// uploads is written relative to it. `realm` ends in `/`.
pub(super) fn relative(href: String, realm: Option<&str>) -> String {
    match realm.and_then(|realm| href.strip_prefix(realm)) {
        Some(rest) if rest.starts_with('#') || rest.starts_with("user_uploads/") => rest.to_owned(),
        _ => href,
    }
}

/// `(scheme, rest)` as Python's `urlsplit` finds a scheme: letters, then
/// letters, digits, `+`, `-`, `.`, then `:`.
fn split_scheme(url: &str) -> (Option<&str>, &str) {
    if let Some(colon) = url.find(':') {
        let scheme = &url[..colon];
        let valid = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if valid {
            return (Some(scheme), &url[colon + 1..]);
        }
    }
    (None, url)
}

/// Whether a link's target is an image Zulip previews (by its path's
/// extension).
pub(super) fn is_image(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let lower = path.to_ascii_lowercase();
    let path = match lower.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |slash| &rest[slash..]),
        None => lower.as_str(),
    };
    [".bmp", ".gif", ".jpe", ".jpeg", ".jpg", ".png", ".webp"].iter().any(|ext| path.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(text: &str) -> Vec<&str> {
        find_all(text).iter().map(|f| &text[f.start..f.end]).collect()
    }

    #[test]
    fn finds_what_zulip_links() {
        assert_eq!(links("see http://a.com/x."), ["http://a.com/x"]);
        assert_eq!(links("readme.md views.py"), Vec::<&str>::new());
        assert_eq!(links("I spent a year at ucl.ac.uk"), ["ucl.ac.uk"]);
        assert_eq!(links("a.commandstuff() love...it"), Vec::<&str>::new());
        assert_eq!(links("(http://e.org/A_(b))"), ["http://e.org/A_(b)"]);
        assert_eq!(links("mail a@b.com now"), ["a@b.com"]);
        assert_eq!(links("a@b.com/foo"), Vec::<&str>::new());
        assert_eq!(links("javascript:foo.com"), ["foo.com"]);
    }

    #[test]
    fn sanitizes_like_zulip() {
        assert_eq!(sanitize_url("a@b.com").as_deref(), Some("mailto:a@b.com"));
        assert_eq!(sanitize_url("example.com").as_deref(), Some("http://example.com"));
        assert_eq!(sanitize_url("/user_uploads/x").as_deref(), Some("/user_uploads/x"));
        assert_eq!(sanitize_url("#narrow/x").as_deref(), Some("#narrow/x"));
        assert_eq!(sanitize_url("tel:+1").as_deref(), Some("tel:+1"));
        assert_eq!(sanitize_url("HTTP://x").as_deref(), Some("http://x"));
        assert_eq!(sanitize_url("javascript:alert(1)"), None);
        assert_eq!(sanitize_url("foo://"), None);
    }
}
