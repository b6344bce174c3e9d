//! Zulip's Unicode emoji names, as data.
//!
//! `data/zulip_emoji.tsv` is Zulip's own name → codepoint map (canonical
//! names and aliases), generated from the server's emoji data — never typed
//! by hand. It is parsed once, on first use, into two lookup tables:
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

/// The longest emoji sequence starting at `chars[0]`: (its code, its
/// canonical name, how many chars it spans).
pub fn match_at(chars: &[char]) -> Option<(String, &'static str, usize)> {
    // Grow the candidate over joiners, variation selectors, skin tones and
    // regional-indicator pairs, then try the longest prefix first.
    const ZWJ: char = '\u{200d}';
    const VS16: char = '\u{fe0f}';
    let mut end = 1;
    while end < chars.len() && end < 16 {
        let c = chars[end];
        let v = c as u32;
        if c == VS16 || (0x1f3fb..=0x1f3ff).contains(&v) || c == '\u{20e3}' {
            end += 1;
        } else if c == ZWJ && end + 1 < chars.len() {
            end += 2;
        } else if (0x1f1e6..=0x1f1ff).contains(&v) && end == 1 {
            end += 1;
        } else {
            break;
        }
    }
    for len in (1..=end).rev() {
        let seq = &chars[..len];
        let code = code_of(seq);
        if let Some(name) = name_for_code(&code) {
            return Some((code, name, len));
        }
        let stripped: Vec<char> = seq.iter().copied().filter(|c| *c != VS16).collect();
        if stripped.len() != seq.len() && !stripped.is_empty() {
            let code = code_of(&stripped);
            if let Some(name) = name_for_code(&code) {
                return Some((code, name, len));
            }
        }
    }
    None
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

    #[test]
    fn sequences_match_longest_first() {
        let chars: Vec<char> = "🏳️‍🌈x".chars().collect();
        let (code, name, len) = match_at(&chars).unwrap();
        assert_eq!((code.as_str(), name, len), ("1f3f3-200d-1f308", "rainbow_flag", 4));
        let chars: Vec<char> = "❤️".chars().collect();
        assert_eq!(match_at(&chars).unwrap().0, "2764");
        let chars: Vec<char> = "\u{2000}".chars().collect();
        assert!(match_at(&chars).is_none());
    }
}
