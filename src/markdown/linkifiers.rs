//! Linkifiers: a realm's regular expressions whose matches in a message's
//! text become links (`#123` → an issue URL), as Zulip applies them.
//!
//! They run over the rendered HTML's text, never inside a link, code,
//! a mention, an emoji or a time: the text between tags is matched (its
//! HTML escapes read as the characters they stand for) and each match is
//! wrapped in `<a href>` with the linkifier's RFC 6570 template expanded
//! from the match's named groups. Linkifiers apply in the realm's order:
//! text an earlier one linked is not looked at by later ones.
//!
//! A match counts only where Zulip's would: preceded by the start of the
//! text, whitespace or one of `'"(,:<[`, and followed by the end or a
//! character that is not a letter or digit. The patterns are compiled by
//! the `regex` crate (linear time: a pattern cannot make a send slow),
//! which is also what `check_pattern` validates against; compiled
//! patterns are kept in a small cache.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use iri_string::spec::UriSpec;
use iri_string::template::simple_context::SimpleContext;
use iri_string::template::UriTemplateStr;
use parking_lot::Mutex;
use regex::{Regex, RegexBuilder};

/// A linkifier as the renderer takes it (the realm's stored linkifier
/// without its id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The regular expression.
    pub pattern: String,
    /// The RFC 6570 URL template.
    pub url_template: String,
}

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_LENGTH: usize = 1024;
/// Longest URL template accepted, in bytes.
pub const MAX_TEMPLATE_LENGTH: usize = 1024;
/// Compiled size limit of one pattern (the `regex` crate's `size_limit`).
const COMPILED_SIZE_LIMIT: usize = 1 << 20;
/// Compiled patterns kept; the cache is emptied when it reaches this.
const CACHE_ENTRIES: usize = 256;

/// Compiles a pattern, or says why it is not one. Its named groups are
/// what a URL template may use.
pub fn check_pattern(pattern: &str) -> Result<Vec<String>, String> {
    if pattern.is_empty() {
        return Err("the pattern is empty".into());
    }
    if pattern.len() > MAX_PATTERN_LENGTH {
        return Err(format!("longer than {MAX_PATTERN_LENGTH} bytes"));
    }
    let regex = compile(pattern).map_err(|e| e.to_string())?;
    Ok(regex.capture_names().flatten().map(str::to_owned).collect())
}

/// Checks a URL template against the pattern's named groups: a valid RFC
/// 6570 template of an http(s) URL using only those groups.
pub fn check_url_template(template: &str, groups: &[String]) -> Result<(), String> {
    if template.len() > MAX_TEMPLATE_LENGTH {
        return Err(format!("longer than {MAX_TEMPLATE_LENGTH} bytes"));
    }
    let parsed =
        UriTemplateStr::new(template).map_err(|e| format!("not an RFC 6570 template: {e}"))?;
    for var in parsed.variables() {
        if !groups.iter().any(|g| g == var.as_str()) {
            return Err(format!(
                "Group \"{}\" in URL template is not present in linkifier pattern.",
                var.as_str()
            ));
        }
    }
    let lower = template.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        return Err("must be an http or https URL".into());
    }
    Ok(())
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(COMPILED_SIZE_LIMIT).build()
}

/// The compiled pattern, from the cache when it is there. The lock guards
/// a map look-up or insert only (compiling happens outside it).
fn compiled(pattern: &str) -> Option<Arc<Regex>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(regex) = cache.lock().get(pattern) {
        return Some(Arc::clone(regex));
    }
    let regex = Arc::new(compile(pattern).ok()?);
    let mut map = cache.lock();
    if map.len() >= CACHE_ENTRIES {
        map.clear();
    }
    map.insert(pattern.to_owned(), Arc::clone(&regex));
    Some(regex)
}

/// The link a match makes: the template expanded with the named groups.
fn expand(template: &str, regex: &Regex, caps: &regex::Captures<'_>) -> Option<String> {
    let template = UriTemplateStr::new(template).ok()?;
    let mut context = SimpleContext::new();
    for name in regex.capture_names().flatten() {
        if let Some(m) = caps.name(name) {
            context.insert(name, m.as_str());
        }
    }
    Some(template.expand::<UriSpec, _>(&context).ok()?.to_string())
}

/// Applies `linkifiers` to the text of rendered HTML.
pub fn apply(html: &str, linkifiers: &[Rule]) -> String {
    let rules: Vec<(Arc<Regex>, &str)> = linkifiers
        .iter()
        .filter_map(|l| Some((compiled(&l.pattern)?, l.url_template.as_str())))
        .collect();
    if rules.is_empty() {
        return html.to_owned();
    }
    let mut out = String::with_capacity(html.len() + 64);
    // Open elements, each with whether its text is left alone.
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            text(rest, &rules, open.last().is_some_and(|e| e.1), &mut out);
            break;
        };
        text(&rest[..lt], &rules, open.last().is_some_and(|e| e.1), &mut out);
        let end = rest[lt..].find('>').map_or(rest.len(), |gt| lt + gt + 1);
        let tag = &rest[lt..end];
        out.push_str(tag);
        track(tag, &mut open);
        rest = &rest[end..];
    }
    out
}

/// Follows the element nesting: `tag` is one `<…>`.
fn track(tag: &str, open: &mut Vec<(String, bool)>) {
    let inner = tag.trim_start_matches('<').trim_end_matches('>');
    if let Some(name) = inner.strip_prefix('/') {
        let name = name.trim().to_ascii_lowercase();
        if let Some(at) = open.iter().rposition(|(n, _)| *n == name) {
            open.truncate(at);
        }
        return;
    }
    let name: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    let void =
        matches!(name.as_str(), "br" | "hr" | "img" | "input" | "wbr") || inner.ends_with('/');
    if name.is_empty() || void {
        return;
    }
    let class = inner.find("class=\"").map(|at| {
        let value = &inner[at + 7..];
        &value[..value.find('"').unwrap_or(value.len())]
    });
    let untouched = matches!(name.as_str(), "a" | "code" | "pre" | "time")
        || class.is_some_and(|c| {
            c.split(' ').any(|c| {
                matches!(c, "user-mention" | "user-group-mention" | "topic-mention" | "emoji")
            })
        });
    let parent = open.last().is_some_and(|e| e.1);
    open.push((name, parent || untouched));
}

/// One run of escaped text: linked where a linkifier matches.
fn text(escaped: &str, rules: &[(Arc<Regex>, &str)], untouched: bool, out: &mut String) {
    if escaped.is_empty() {
        return;
    }
    if untouched {
        out.push_str(escaped);
        return;
    }
    // The text as characters, with where each came from in `escaped`.
    let mut plain = String::with_capacity(escaped.len());
    let mut origin: Vec<usize> = Vec::with_capacity(escaped.len() + 1);
    let mut i = 0;
    while i < escaped.len() {
        let (c, len) = unescape_at(&escaped[i..]);
        for _ in 0..c.len_utf8() {
            origin.push(i);
        }
        plain.push(c);
        i += len;
    }
    origin.push(escaped.len());
    // Linked spans of `plain`, in order, each with its URL.
    let mut links: Vec<(usize, usize, String)> = Vec::new();
    for (regex, template) in rules {
        let mut from = 0;
        while from <= plain.len() {
            let Some(caps) = regex.captures_at(&plain, from) else { break };
            let whole = caps.get(0).expect("group 0 is the match");
            let (start, end) = (whole.start(), whole.end());
            let overlaps = links.iter().any(|(s, e, _)| start < *e && *s < end);
            if end > start && !overlaps && bounded(&plain, start, end) {
                if let Some(url) = expand(template, regex, &caps) {
                    links.push((start, end, url));
                    from = end;
                    continue;
                }
            }
            // Try again from the next character.
            from = start + plain[start..].chars().next().map_or(1, char::len_utf8);
        }
    }
    if links.is_empty() {
        out.push_str(escaped);
        return;
    }
    links.sort_by_key(|l| l.0);
    let mut at = 0;
    for (start, end, url) in links {
        out.push_str(&escaped[origin[at]..origin[start]]);
        out.push_str("<a href=\"");
        out.push_str(&super::escape_html(&url));
        out.push_str("\">");
        out.push_str(&escaped[origin[start]..origin[end]]);
        out.push_str("</a>");
        at = end;
    }
    out.push_str(&escaped[origin[at]..]);
}

/// Whether a match at `start..end` of `text` stands alone as Zulip wants.
fn bounded(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let before_ok = before.is_none_or(|c| c.is_whitespace() || "'\"(,:<[".contains(c));
    let after_ok = after.is_none_or(|c| !c.is_alphanumeric());
    before_ok && after_ok
}

/// The character at the start of escaped HTML text and how many bytes
/// stand for it (an entity the renderer writes, or the character itself).
fn unescape_at(s: &str) -> (char, usize) {
    for (entity, c) in
        [("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>'), ("&quot;", '"'), ("&#39;", '\'')]
    {
        if s.starts_with(entity) {
            return (c, entity.len());
        }
    }
    let c = s.chars().next().expect("not empty");
    (c, c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(_order: u64, pattern: &str, url_template: &str) -> Rule {
        Rule { pattern: pattern.into(), url_template: url_template.into() }
    }

    fn issues() -> Vec<Rule> {
        vec![rule(1, "#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}")]
    }

    #[test]
    fn matches_become_links_with_the_template_expanded() {
        assert_eq!(
            apply("<p>see #123, please</p>", &issues()),
            "<p>see <a href=\"https://github.com/zulip/zulip/issues/123\">#123</a>, please</p>"
        );
    }

    #[test]
    fn links_code_mentions_and_emoji_are_left_alone() {
        for html in [
            "<p><a href=\"https://x.test\">#1</a></p>",
            "<p><code>#1</code></p>",
            "<div class=\"codehilite\"><pre><span></span><code>#1\n</code></pre></div>",
            "<p><span class=\"user-mention\" data-user-id=\"5\">@#1</span></p>",
        ] {
            assert_eq!(apply(html, &issues()), html);
        }
        assert_eq!(
            apply("<p><strong>#7</strong> and <code>#8</code> #9</p>", &issues()),
            "<p><strong><a href=\"https://github.com/zulip/zulip/issues/7\">#7</a></strong> \
             and <code>#8</code> <a href=\"https://github.com/zulip/zulip/issues/9\">#9</a></p>"
        );
    }

    #[test]
    fn a_match_must_stand_alone() {
        assert_eq!(apply("<p>a#12 #12b</p>", &issues()), "<p>a#12 #12b</p>");
        assert!(apply("<p>(#12)</p>", &issues()).contains("issues/12\">#12</a>)"));
    }

    #[test]
    fn earlier_linkifiers_win_and_values_are_encoded() {
        let rules = vec![
            rule(1, "JIRA-(?P<id>[0-9]+)", "https://jira.test/{id}"),
            rule(2, "(?P<word>[A-Z]+-[0-9]+)", "https://other.test/?q={word}"),
        ];
        assert_eq!(
            apply("<p>JIRA-5 ABC-6</p>", &rules),
            "<p><a href=\"https://jira.test/5\">JIRA-5</a> \
             <a href=\"https://other.test/?q=ABC-6\">ABC-6</a></p>"
        );
        let spaces = vec![rule(1, "ask (?P<q>[a-z&]+)", "https://search.test/?q={q}")];
        assert_eq!(
            apply("<p>ask a&amp;b</p>", &spaces),
            "<p><a href=\"https://search.test/?q=a%26b\">ask a&amp;b</a></p>"
        );
    }

    #[test]
    fn patterns_and_templates_are_checked() {
        assert_eq!(check_pattern("#(?P<id>[0-9]+)").unwrap(), vec!["id".to_owned()]);
        assert!(check_pattern("(unclosed").is_err());
        assert!(check_pattern("(?<=x)y").is_err(), "no look-behind");
        assert!(check_pattern("").is_err());
        let id = vec!["id".to_owned()];
        assert!(check_url_template("https://x.test/{id}", &id).is_ok());
        assert!(check_url_template("https://x.test/{other}", &id).is_err());
        assert!(check_url_template("https://x.test/{id", &id).is_err());
        assert!(check_url_template("javascript:alert({id})", &id).is_err());
    }
}

/// A topic's links, as Zulip's `topic_links` gives them: each linkifier's
/// matches (same boundaries as in messages), then the topic's `http://`
/// and `https://` words as links to themselves; a match overlapping one
/// before it (earlier linkifiers first, then earlier in the topic) is
/// dropped; the rest in topic order, as (text, url).
pub fn topic_links(topic: &str, linkifiers: &[Rule]) -> Vec<(String, String)> {
    // (start, end, url), in precedence order.
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for rule in linkifiers {
        let Some(regex) = compiled(&rule.pattern) else { continue };
        let mut matches = Vec::new();
        let mut from = 0;
        while from <= topic.len() {
            let Some(caps) = regex.captures_at(topic, from) else { break };
            let whole = caps.get(0).expect("group 0 is the match");
            let (start, end) = (whole.start(), whole.end());
            if end > start && bounded(topic, start, end) {
                if let Some(url) = expand(&rule.url_template, &regex, &caps) {
                    matches.push((start, end, url));
                    from = end;
                    continue;
                }
            }
            from = start + topic[start..].chars().next().map_or(1, char::len_utf8);
        }
        found.extend(matches);
    }
    let mut at = 0;
    for word in topic.split_whitespace() {
        let start = at + topic[at..].find(word).expect("a word of the topic");
        at = start + word.len();
        if word.starts_with("http://") || word.starts_with("https://") {
            found.push((start, at, word.to_owned()));
        }
    }
    let mut kept: Vec<(usize, usize, String)> = Vec::new();
    for (start, end, url) in found {
        if !kept.iter().any(|(s, e, _)| start < *e && *s < end) {
            kept.push((start, end, url));
        }
    }
    kept.sort_by_key(|(start, _, _)| *start);
    kept.into_iter().map(|(start, end, url)| (topic[start..end].to_owned(), url)).collect()
}

#[cfg(test)]
mod topic_tests {
    use super::*;

    fn rule(pattern: &str, url_template: &str) -> Rule {
        Rule { pattern: pattern.into(), url_template: url_template.into() }
    }

    #[test]
    fn topic_links_follow_precedence_then_position() {
        let rules = [
            rule("#(?P<id>[0-9]+)", "https://tracker.test/{id}"),
            rule("(?P<word>[a-z]+)#(?P<id>[0-9]+)", "https://{word}.test/{id}"),
        ];
        let links = topic_links("fix #12 and zulip#34 see https://x.test/a", &rules);
        assert_eq!(
            links,
            [
                ("#12".to_owned(), "https://tracker.test/12".to_owned()),
                ("zulip#34".to_owned(), "https://zulip.test/34".to_owned()),
                ("https://x.test/a".to_owned(), "https://x.test/a".to_owned()),
            ]
        );
        assert!(topic_links("nothing here", &rules).is_empty());
        assert!(topic_links("abc#12", &rules[..1]).is_empty(), "not at a word start");
    }
}
