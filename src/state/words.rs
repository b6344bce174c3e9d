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
//! Unlike PostgreSQL, no stop words are dropped: searching for "the"
//! finds messages containing "the".

use std::borrow::Cow;
use std::cell::RefCell;

use rustc_hash::FxHashMap;

use rust_stemmers::{Algorithm, Stemmer};

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

/// The stems of `text`'s words, in order.
pub fn stems(text: &str) -> Vec<String> {
    words(text).map(|(_, w)| stem(w)).collect()
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
    fn english_stems_join_inflections() {
        for (a, b) in [("run", "running"), ("Run", "runs"), ("connection", "connected")] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_ne!(stem("soup"), stem("soap"));
        let text = stems("We were Running late");
        assert!(has_phrase(&text, &stems("run late")));
        assert!(!has_phrase(&text, &stems("late run")));
        assert!(has_phrase(&text, &[]));
    }
}
