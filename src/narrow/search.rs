//! The `search` operator: its operand as words and `"quoted phrases"`,
//! matched by stem (`state::words`: case-insensitive, English stemming,
//! as Zulip's PostgreSQL full-text search), and the highlighting of the
//! matched words in `match_content` / `match_subject`.
//!
//! Matching here and the word index (`state::lookup`) use the same
//! tokenizer and stemmer, and highlighting marks exactly the words whose
//! stem the search names, so what is found and what is marked agree.

use crate::state::words::{self, has_phrase};

/// Splits a search operand into its terms: each word, and each `"quoted
/// phrase"` as the stems of its words in order. Stop words are dropped
/// (`state::words`), and so are terms left without a word.
pub(crate) fn search_terms(text: &str) -> Vec<Vec<String>> {
    let mut terms = Vec::new();
    for (i, chunk) in text.split('"').enumerate() {
        if i % 2 == 1 {
            let phrase = words::stems(chunk);
            if !phrase.is_empty() {
                terms.push(phrase);
            }
        } else {
            terms.extend(words::stems(chunk).into_iter().map(|stem| vec![stem]));
        }
    }
    terms
}

/// Whether every term occurs in the content's or the topic's stems. No
/// term at all (a search of stop words or punctuation only) matches
/// nothing, as an empty PostgreSQL text query does.
pub fn text_matches(content: &str, topic: &str, terms: &[Vec<String>]) -> bool {
    if terms.is_empty() {
        return false;
    }
    let content = words::stems(content);
    let mut topic_stems: Option<Vec<String>> = None;
    terms.iter().all(|term| {
        has_phrase(&content, term)
            || has_phrase(topic_stems.get_or_insert_with(|| words::stems(topic)), term)
    })
}

/// Wraps the words of `html`'s text (never its tags or character
/// references) whose stem is one of `stems` in `<span
/// class="highlight">`, as Zulip marks search hits in `match_content` /
/// `match_subject`.
pub fn highlight(html: &str, stems: &[&str]) -> String {
    if stems.is_empty() {
        return html.to_owned();
    }
    let mut out = String::with_capacity(html.len() + 32);
    let mut rest = html;
    while !rest.is_empty() {
        // A tag, or a character reference (`&amp;`), is copied as is.
        let opaque = if rest.starts_with('<') {
            Some(rest.find('>').map_or(rest.len(), |i| i + 1))
        } else if rest.starts_with('&') {
            let reference = |i: &usize| {
                *i > 1 && rest[1..*i].chars().all(|c| c.is_ascii_alphanumeric() || c == '#')
            };
            rest.find(';').filter(reference).map(|i| i + 1)
        } else {
            None
        };
        if let Some(end) = opaque {
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        // Text up to the next tag or reference (a lone `&` is text).
        let first = rest.chars().next().map_or(1, char::len_utf8);
        let end = rest[first..].find(['<', '&']).map_or(rest.len(), |i| i + first);
        highlight_text(&rest[..end], stems, &mut out);
        rest = &rest[end..];
    }
    out
}

fn highlight_text(text: &str, stems: &[&str], out: &mut String) {
    let mut at = 0;
    for (start, word) in words::search_words(text) {
        if stems.contains(&words::stem(word).as_str()) {
            out.push_str(&text[at..start]);
            out.push_str("<span class=\"highlight\">");
            out.push_str(word);
            out.push_str("</span>");
            at = start + word.len();
        }
    }
    out.push_str(&text[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_splits_words_and_phrases() {
        let stems = |s: &str| words::stems(s);
        assert_eq!(
            search_terms(r#"Foo "Bar baz"  QUX ++"#),
            [stems("foo"), stems("bar baz"), stems("qux")]
        );
        assert!(search_terms("  \"\" ").is_empty());
    }

    #[test]
    fn matching_is_by_stem_and_phrase() {
        let terms = |s: &str| search_terms(s);
        assert!(text_matches("We are RUNNING late", "", &terms("run")));
        assert!(text_matches("soup at noon", "Lunch", &terms("lunches soup")));
        assert!(!text_matches("soup at noon", "Lunch", &terms("oup")));
        assert!(text_matches("soup at noon", "", &terms("\"soups at\"")));
        assert!(!text_matches("soup at noon", "", &terms("\"noon soup\"")));
        assert!(!text_matches("number 14", "", &terms("4")));
        assert!(text_matches("Ünïcode WÖRDS", "", &terms("wörds")));
        // Stop words are not searched; with no word left, nothing matches.
        assert!(!text_matches("anything", "", &terms("++")));
        assert!(!text_matches("the cat", "", &terms("the")));
        assert!(text_matches("the cat", "", &terms("THE Cats")));
        assert!(text_matches("soup at noon", "", &terms("\"soups for noon\"")));
    }

    #[test]
    fn highlights_text_not_tags() {
        let html = r#"<p>Soups <a href="https://soup.example">soup link</a> at noon &amp; amp</p>"#;
        let soup = words::stem("soup");
        let amp = words::stem("amp");
        assert_eq!(
            highlight(html, &[&soup, "noon", &amp]),
            "<p><span class=\"highlight\">Soups</span> <a href=\"https://soup.example\">\
             <span class=\"highlight\">soup</span> link</a> at <span class=\"highlight\">noon</span> \
             &amp; <span class=\"highlight\">amp</span></p>"
        );
        assert_eq!(highlight("<p>x</p>", &[]), "<p>x</p>");
        assert_eq!(
            highlight("<p>number 4, not 14 or 40</p>", &["4"]),
            "<p>number <span class=\"highlight\">4</span>, not 14 or 40</p>"
        );
        assert_eq!(highlight("a & bee", &["bee"]), "a & <span class=\"highlight\">bee</span>");
        assert_eq!(highlight("ünï & bee", &["bee"]), "ünï & <span class=\"highlight\">bee</span>");
        // A stop word is never marked, even if asked for.
        assert_eq!(highlight("the b", &["the", "b"]), "the b");
        assert_eq!(highlight("& ü", &["ü"]), "& <span class=\"highlight\">ü</span>");
    }
}
