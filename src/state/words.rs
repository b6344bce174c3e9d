//! Words of message text, as the `search` operator sees them: the one
//! tokenizer and stemmer that both the word index (`lookup`) and the
//! matching of a single message (`narrow`) use, so the two cannot
//! disagree about what a message contains.
//!
//! A word is a maximal run of letters and digits (Unicode), lowercased;
//! everything else separates words. Each word is reduced to its stem with
//! the Snowball English (Porter2) stemmer — the stemmer of PostgreSQL's
//! `english` text search configuration, which Zulip's search uses — so
//! "run", "runs" and "running" are one stem, and "Running" finds "run".
//! Stop words are dropped on both sides, as Zulip's search configuration
//! drops them: its list is PostgreSQL's English one plus every single
//! letter. They are neither indexed (about a third of the words of English
//! chat, and the longest lists) nor searched; a search made only of them
//! has no word left and, as in PostgreSQL ("an empty query matches
//! nothing"), finds nothing.

use std::borrow::Cow;
use std::cell::RefCell;

use rustc_hash::FxHashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// Zulip's English stop words, sorted (its PostgreSQL search
/// configuration's list: PostgreSQL's English stop words and the letters).
const STOP_WORDS: [&str; 149] = [
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "b",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "c",
    "can",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "e",
    "each",
    "f",
    "few",
    "for",
    "from",
    "further",
    "g",
    "h",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "j",
    "just",
    "k",
    "l",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "n",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "p",
    "q",
    "r",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "u",
    "under",
    "until",
    "up",
    "v",
    "very",
    "w",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "x",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "z",
];

/// Longest stop word, in bytes.
const LONGEST_STOP_WORD: usize = 10;

/// Longest word indexed or searched, in bytes: longer runs (hashes,
/// base64 blobs) are not words anyone types, and are skipped on both sides.
pub const MAX_WORD_BYTES: usize = 100;

/// Stems a thread remembers: chat words repeat (a few hundred make most
/// of any text) and the stemmer takes about a thousand instructions a
/// word, on the send path under the writer lock. Forgotten all at once
/// when full, so the memo stays small (about 200 KiB a thread).
const STEM_MEMO: usize = 4096;

/// Longest word remembered, in bytes (longer ones are rare).
const STEM_MEMO_WORD_BYTES: usize = 24;

thread_local! {
    static ENGLISH: Stemmer = Stemmer::create(Algorithm::English);
    static MEMO: RefCell<FxHashMap<Box<str>, Box<str>>> = RefCell::default();
}

/// The words of `text` in order, each with its byte offset in `text` (the
/// slice is of `text` itself, not lowercased).
pub fn words(text: &str) -> impl Iterator<Item = (usize, &str)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let rest = &text[at..];
        let start = at + rest.find(char::is_alphanumeric)?;
        let len = text[start..].find(|c: char| !c.is_alphanumeric()).unwrap_or(text.len() - start);
        at = start + len;
        if len <= MAX_WORD_BYTES {
            return Some((start, &text[start..start + len]));
        }
    })
}

/// Whether `word` (any case) is a stop word: never indexed nor searched.
pub fn is_stop_word(word: &str) -> bool {
    if word.len() > LONGEST_STOP_WORD || !word.is_ascii() {
        return false;
    }
    let mut buf = [0u8; LONGEST_STOP_WORD];
    let lower = &mut buf[..word.len()];
    lower.copy_from_slice(word.as_bytes());
    lower.make_ascii_lowercase();
    STOP_WORDS.binary_search_by(|stop| stop.as_bytes().cmp(lower)).is_ok()
}

/// The words of `text` that are indexed and searched: [`words`] without
/// the stop words.
pub fn search_words(text: &str) -> impl Iterator<Item = (usize, &str)> + '_ {
    words(text).filter(|(_, word)| !is_stop_word(word))
}

/// The stem of one word (any case).
pub fn stem(word: &str) -> String {
    if word.len() > STEM_MEMO_WORD_BYTES {
        return stem_uncached(word);
    }
    MEMO.with(|memo| {
        if let Some(stem) = memo.borrow().get(word) {
            return String::from(&**stem);
        }
        let stem = stem_uncached(word);
        let mut memo = memo.borrow_mut();
        if memo.len() >= STEM_MEMO {
            memo.clear();
        }
        memo.insert(word.into(), stem.as_str().into());
        stem
    })
}

fn stem_uncached(word: &str) -> String {
    let lower: Cow<'_, str> = if word.chars().any(char::is_uppercase) {
        Cow::Owned(word.to_lowercase())
    } else {
        Cow::Borrowed(word)
    };
    ENGLISH.with(|s| s.stem(&lower).into_owned())
}

/// The stems of `text`'s searched words, in order.
pub fn stems(text: &str) -> Vec<String> {
    search_words(text).map(|(_, w)| stem(w)).collect()
}

/// Whether `phrase` (stems, in order) occurs in `stems` as consecutive
/// words. The empty phrase occurs everywhere.
pub fn has_phrase(stems: &[String], phrase: &[String]) -> bool {
    match phrase.len() {
        0 => true,
        1 => stems.contains(&phrase[0]),
        n => stems.windows(n).any(|w| w == phrase),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        let found: Vec<_> = words("Hi, C++ fans: ünïcode-WÖRDS 42!").collect();
        assert_eq!(
            found,
            [(0, "Hi"), (4, "C"), (8, "fans"), (14, "ünïcode"), (24, "WÖRDS"), (31, "42")]
        );
        assert_eq!(words(&"x".repeat(MAX_WORD_BYTES + 1)).count(), 0);
        assert_eq!(words("  ").count(), 0);
    }

    #[test]
    fn remembered_stems_are_the_stemmer_s() {
        // Past the memo's size (it is cleared and refilled), twice over,
        // in mixed case and past the longest remembered word.
        let words: Vec<String> = (0..STEM_MEMO + 10)
            .map(|i| format!("Running{i}s"))
            .chain(["Running".into(), "x".repeat(STEM_MEMO_WORD_BYTES + 5) + "ing"])
            .collect();
        for _ in 0..2 {
            for w in &words {
                assert_eq!(stem(w), stem_uncached(w), "{w}");
            }
        }
        assert!(MEMO.with(|m| m.borrow().len()) <= STEM_MEMO);
        assert_eq!(stem("Running"), "run");
    }

    #[test]
    fn stop_words_are_zulip_s_in_any_case() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted, no twins");
        assert_eq!(STOP_WORDS.iter().map(|w| w.len()).max(), Some(LONGEST_STOP_WORD));
        for word in ["the", "The", "THEMSELVES", "b", "z", "don", "Should"] {
            assert!(is_stop_word(word), "{word}");
        }
        for word in ["theme", "4", "ünï", "runs", "themselvesx", "", "can't"] {
            assert!(!is_stop_word(word), "{word}");
        }
        let found: Vec<_> = search_words("The cat and I sat ON a mat").collect();
        assert_eq!(found, [(4, "cat"), (14, "sat"), (23, "mat")]);
        assert_eq!(stems("the a of"), Vec::<String>::new());
    }

    #[test]
    fn english_stems_join_inflections() {
        for (a, b) in [("run", "running"), ("Run", "runs"), ("connection", "connected")] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_ne!(stem("soup"), stem("soap"));
        let text = stems("Kids Running late");
        assert!(has_phrase(&text, &stems("run late")));
        assert!(!has_phrase(&text, &stems("late run")));
        assert!(has_phrase(&text, &[]));
    }
}
