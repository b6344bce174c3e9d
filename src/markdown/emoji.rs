//! Zulip's Unicode emoji names, as data.
//!
//! `data/zulip_emoji.tsv` is Zulip's own name → codepoint map (canonical
//! names and aliases), written by `scripts/zulip_emoji_table.py` from
//! Zulip's emoji_names.py and iamcal's emoji-datasource (pinned versions)
//! — never typed by hand. It is parsed once, on first use, into two lookup tables:
//! name → code (`:smile:` → `1f642`, reactions by name) and code →
//! canonical name (a literal 🙂 in a message).

use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("../../data/zulip_emoji.tsv");

/// Zulip's one built-in non-Unicode emoji (`reaction_type` `zulip_extra_emoji`).
pub const ZULIP_EXTRA: &[&str] = &["zulip"];

struct Table {
    by_name: HashMap<&'static str, &'static str>,
    by_code: HashMap<&'static str, &'static str>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_name = HashMap::new();
        let mut by_code = HashMap::new();
        for line in DATA.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let mut cols = line.split('\t');
            let (Some(name), Some(code)) = (cols.next(), cols.next()) else { continue };
            by_name.insert(name, code);
            by_code.insert(code, name);
            for alias in cols.next().unwrap_or("").split(' ').filter(|a| !a.is_empty()) {
                by_name.entry(alias).or_insert(code);
            }
        }
        Table { by_name, by_code }
    })
}

/// The codepoints (`1f642`, `1f3f3-200d-1f308`) of a Zulip emoji name.
pub fn code_for_name(name: &str) -> Option<&'static str> {
    table().by_name.get(name).copied()
}

/// The canonical Zulip name of an emoji code.
pub fn name_for_code(code: &str) -> Option<&'static str> {
    table().by_code.get(code).copied()
}

/// Whether `code` names a Unicode emoji Zulip knows.
pub fn is_unicode_code(code: &str) -> bool {
    table().by_code.contains_key(code)
}

/// Zulip's code for a sequence of characters: lowercase hex, at least four
/// digits, joined by `-`.
pub fn code_of(chars: &[char]) -> String {
    let mut out = String::with_capacity(chars.len() * 6);
    for (i, c) in chars.iter().enumerate() {
        if i > 0 {
            out.push('-');
        }
        out.push_str(&format!("{:04x}", *c as u32));
    }
    out
}

/// Whether `c` can start an emoji sequence (cheap pre-filter; the table
/// decides).
pub fn may_start_emoji(c: char) -> bool {
    let v = c as u32;
    v == 0xa9 || v == 0xae || (0x2000..=0x3300).contains(&v) || v >= 0x1f000
}

/// The emoji sequence starting at `chars[0]`, read whole as Zulip reads
/// it (an emoji with its variation selector, skin tone or keycap, joined
/// to more by zero-width joiners; a regional-indicator pair): how many
/// chars it spans, and its code and canonical name when Zulip knows the
/// whole sequence (codes leave out U+FE0F). A sequence Zulip does not know
/// stays text, all of it.
pub fn sequence_at(chars: &[char]) -> (usize, Option<(String, &'static str)>) {
    const ZWJ: char = '\u{200d}';
    const VS16: char = '\u{fe0f}';
    let mut end = 1;
    while end < chars.len() && end < 16 {
        let c = chars[end];
        let v = c as u32;
        // Variation selector, skin tone, keycap, tag characters.
        if c == VS16
            || (0x1f3fb..=0x1f3ff).contains(&v)
            || c == '\u{20e3}'
            || (0xe0020..=0xe007f).contains(&v)
        {
            end += 1;
        } else if c == ZWJ && chars.get(end + 1).is_some_and(|c| may_start_emoji(*c)) {
            end += 2;
        } else if (0x1f1e6..=0x1f1ff).contains(&v)
            && end == 1
            && (0x1f1e6..=0x1f1ff).contains(&(chars[0] as u32))
        {
            end += 1;
        } else {
            break;
        }
    }
    let stripped: Vec<char> = chars[..end].iter().copied().filter(|c| *c != VS16).collect();
    if stripped.is_empty() {
        return (end, None);
    }
    let code = code_of(&stripped);
    match name_for_code(&code) {
        Some(name) => (end, Some((code, name))),
        None => (end, None),
    }
}

/// Whether `c` followed by `next` starts a keycap (`#️⃣`, `1️⃣`).
pub fn starts_keycap(c: char, next: Option<char>) -> bool {
    matches!(c, '#' | '*' | '0'..='9') && matches!(next, Some('\u{fe0f}' | '\u{20e3}'))
}

/// Every Unicode emoji of the table with its names, in the table's order:
/// the canonical name first, then its aliases (what Zulip's emoji data
/// lists per code).
pub fn names_by_code() -> impl Iterator<Item = (&'static str, Vec<&'static str>)> {
    DATA.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|line| {
        let mut cols = line.split('\t');
        let (name, code) = (cols.next()?, cols.next()?);
        let aliases = cols.next().unwrap_or("").split(' ').filter(|a| !a.is_empty());
        Some((code, std::iter::once(name).chain(aliases).collect()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_come_from_zulips_table() {
        assert_eq!(code_for_name("smile"), Some("1f642"));
        assert_eq!(code_for_name("thumbs_up"), Some("1f44d"));
        assert_eq!(code_for_name("+1"), Some("1f44d"));
        assert_eq!(code_for_name("wave"), Some("1f44b"));
        assert_eq!(code_for_name("octopus"), Some("1f419"));
        assert_eq!(code_for_name("no_such_emoji"), None);
        assert_eq!(name_for_code("1f44d"), Some("+1"));
        assert!(is_unicode_code("2764") && !is_unicode_code("zzzz"));
        let thumbs = names_by_code().find(|(code, _)| *code == "1f44d").unwrap();
        assert_eq!(thumbs.1, ["+1", "thumbs_up", "like"]);
    }

    /// Names of Zulip's emoji_names.py that the earlier table (a client's
    /// copy) lacked, aliases, and codes without U+FE0F.
    #[test]
    fn the_table_is_zulips_emoji_names() {
        assert_eq!(code_for_name("jellyfish"), Some("1fabc"));
        assert_eq!(code_for_name("goose"), Some("1fabf"));
        assert_eq!(code_for_name("honk"), Some("1fabf"), "an alias");
        assert_eq!(name_for_code("1fabf"), Some("goose"), "the canonical name");
        assert_eq!(code_for_name("flag_türkiye"), Some("1f1f9-1f1f7"));
        assert_eq!(code_for_name("flag_turkiye"), Some("1f1f9-1f1f7"));
        assert_eq!(code_for_name("shaking_face"), Some("1fae8"));
        assert_eq!(code_for_name("woman_lifting_weights"), Some("1f3cb-200d-2640"));
        let chars: Vec<char> = "🏋️‍♀️".chars().collect();
        assert_eq!(sequence_at(&chars).1.unwrap().1, "woman_lifting_weights");
        assert!(names_by_code().all(|(code, _)| !code.contains("fe0f")));
        let mut names = std::collections::HashSet::new();
        for (code, list) in names_by_code() {
            for name in list {
                assert!(names.insert(name), "{name} twice");
                assert_eq!(code_for_name(name), Some(code));
            }
        }
    }

    #[test]
    fn sequences_match_whole() {
        let chars: Vec<char> = "🏳️‍🌈x".chars().collect();
        let (len, found) = sequence_at(&chars);
        let (code, name) = found.unwrap();
        assert_eq!((code.as_str(), name, len), ("1f3f3-200d-1f308", "rainbow_flag", 4));
        let chars: Vec<char> = "❤️".chars().collect();
        assert_eq!(sequence_at(&chars).1.unwrap().0, "2764");
        let chars: Vec<char> = "\u{2000}".chars().collect();
        assert!(sequence_at(&chars).1.is_none());
        // A sequence Zulip does not know is not split into known parts.
        let chars: Vec<char> = "🐦\u{200d}🔥".chars().collect();
        assert_eq!(sequence_at(&chars), (3, None));
    }
}
