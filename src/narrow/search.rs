//! Words in messages: the `search` operator's word matching (whole words,
//! case-insensitive) and the highlighting of matched words in
//! `match_content` / `match_subject`.

/// Splits a search string into lowercased words and `"quoted phrases"`.
pub(crate) fn search_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for (i, chunk) in text.split('"').enumerate() {
        if i % 2 == 1 {
            let phrase = chunk.trim().to_lowercase();
            if !phrase.is_empty() {
                words.push(phrase);
            }
        } else {
            words.extend(chunk.split_whitespace().map(str::to_lowercase));
        }
    }
    words
}

/// Whether the lowercased `word` occurs in `text` as a whole word, ignoring
/// case; ASCII text is searched in place, other text lowercased first.
pub fn text_has_word(text: &str, word: &str) -> bool {
    if !text.is_ascii() {
        return contains_word(&text.to_lowercase(), word);
    }
    let (hay, needle) = (text.as_bytes(), word.as_bytes());
    if needle.is_empty() || !word.is_ascii() || needle.len() > hay.len() {
        return false;
    }
    let alnum = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    let first = needle[0].is_ascii_alphanumeric();
    let last = needle[needle.len() - 1].is_ascii_alphanumeric();
    (0..=hay.len() - needle.len()).any(|i| {
        hay[i..i + needle.len()].eq_ignore_ascii_case(needle)
            && !(first && i > 0 && alnum(hay.get(i - 1)))
            && !(last && alnum(hay.get(i + needle.len())))
    })
}

/// Whether `word` occurs in `text` (both lowercased) as a whole word: not
/// preceded or followed by a letter or digit. A phrase or a word with
/// punctuation must only occur; its outer ends still need boundaries.
pub fn contains_word(text: &str, word: &str) -> bool {
    find_word(text, word, 0).is_some()
}

/// The first whole-word occurrence of `word` in `text` at or after `from`.
fn find_word(text: &str, word: &str, from: usize) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    let mut at = from;
    while let Some(i) = text.get(at..).and_then(|rest| rest.find(word)) {
        let start = at + i;
        let end = start + word.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        let first = word.chars().next().is_some_and(char::is_alphanumeric);
        let last = word.chars().next_back().is_some_and(char::is_alphanumeric);
        if (!first || edge(before)) && (!last || edge(after)) {
            return Some(start);
        }
        at = start + word.chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Wraps case-insensitive occurrences of `words` in the text (never the
/// tags) of `html` in `<span class="highlight">`, as Zulip marks search
/// hits in `match_content` / `match_subject`.
pub fn highlight(html: &str, words: &[&str]) -> String {
    let words: Vec<&str> = words.iter().copied().filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return html.to_owned();
    }
    let mut out = String::with_capacity(html.len() + 32);
    let mut rest = html;
    while !rest.is_empty() {
        // A tag is copied as is.
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let end = rest.find('<').unwrap_or(rest.len());
        highlight_text(&rest[..end], &words, &mut out);
        rest = &rest[end..];
    }
    out
}

fn highlight_text(text: &str, words: &[&str], out: &mut String) {
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        // Lowercasing moved byte offsets (rare scripts): leave it plain.
        out.push_str(text);
        return;
    }
    let mut at = 0;
    while at < text.len() {
        let hit = words
            .iter()
            .filter_map(|w| find_word(&lower, w, at).map(|start| (start, w.len())))
            .min_by_key(|(start, len)| (*start, std::cmp::Reverse(*len)));
        let Some((start, len)) = hit else { break };
        if !text.is_char_boundary(start) || !text.is_char_boundary(start + len) {
            break;
        }
        out.push_str(&text[at..start]);
        out.push_str("<span class=\"highlight\">");
        out.push_str(&text[start..start + len]);
        out.push_str("</span>");
        at = start + len;
    }
    out.push_str(&text[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_splits_words_and_phrases() {
        assert_eq!(search_words(r#"Foo "Bar baz"  QUX"#), ["foo", "bar baz", "qux"]);
        assert!(search_words("  ").is_empty());
    }

    #[test]
    fn highlights_text_not_tags() {
        let html = r#"<p>Soup <a href="https://soup.example">soup link</a> at noon</p>"#;
        assert_eq!(
            highlight(html, &["soup", "noon"]),
            "<p><span class=\"highlight\">Soup</span> <a href=\"https://soup.example\">\
             <span class=\"highlight\">soup</span> link</a> at <span class=\"highlight\">noon</span></p>"
        );
        assert_eq!(highlight("<p>x</p>", &[]), "<p>x</p>");
        assert_eq!(
            highlight("<p>number 4, not 14 or 40</p>", &["4"]),
            "<p>number <span class=\"highlight\">4</span>, not 14 or 40</p>"
        );
        assert!(contains_word("see c++ here", "c++") && contains_word("a.b", "a.b"));
        for (text, word, hit) in [
            ("Soup at NOON", "noon", true),
            ("soupe", "soup", false),
            ("number 14", "4", false),
            ("number 4.", "4", true),
            ("C++ rocks", "c++", true),
            ("Ünïcode WÖRDS", "wörds", true),
            ("x", "", false),
        ] {
            assert_eq!(text_has_word(text, word), hit, "{text:?} / {word:?}");
        }
        assert!(contains_word("ünïcode wörds", "wörds") && !contains_word("wördsy", "wörds"));
    }
}
