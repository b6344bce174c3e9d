//! The architecture's layering, read from the `use` lines of `src/`
//! (ARCHITECTURE.md, "Layers"): every top-level module sits on a floor,
//! and code may name only its own floor or lower ones; and no two files
//! import each other in a loop, except a module and its own children.
//!
//! Test code (`#[cfg(test)]` items) and the binaries in `src/bin/` are
//! left out: tests may build fixtures from any floor. The checker is a
//! plain function over file texts, so its own tests feed it forbidden
//! imports and expect them reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The floors, lowest first. A module may use modules on its own floor
/// or below; a loop within a floor is caught by the loop check.
const FLOORS: &[(&str, u32)] = &[
    ("entropy", 0),
    ("config", 0),
    ("logging", 0),
    ("markdown", 0),
    ("priority", 0),
    ("state", 1),
    ("error", 2),
    ("mutation", 2),
    ("narrow", 3),
    ("view", 4),
    ("events", 5),
    ("apply", 6),
    ("persist", 7),
    ("files", 7),
    ("thumbnails", 7),
    ("commit", 8),
    ("send", 9),
    ("api", 10),
    ("http", 11),
    ("scheduler", 11),
    ("outgoing", 11),
    ("seed", 11),
    ("realm_create", 11),
    ("server", 12),
    ("testkit", 13),
];

#[test]
fn no_module_imports_a_higher_floor_and_no_files_import_each_other_in_a_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&root, &root, &mut files);
    assert!(files.len() > 50, "found only {} source files under {}", files.len(), root.display());
    let problems = check(&files);
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_reports_a_lower_floor_naming_a_higher_one() {
    let files = sources(&[
        ("state/mod.rs", "pub mod users;\n"),
        ("state/users.rs", "use crate::api::App;\n"),
        ("api/mod.rs", "use crate::state::User;\npub struct App;\n"),
    ]);
    let problems = check(&files);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("state::users") && problems[0].contains("api"), "{problems:?}");
}

#[test]
fn the_checker_reports_loops_between_files_but_not_with_a_parent() {
    let files = sources(&[
        ("view/mod.rs", "pub mod a;\npub mod b;\nuse self::a::X;\n"),
        ("view/a.rs", "use super::b::Y;\nuse crate::view::Z;\npub struct X;\n"),
        ("view/b.rs", "use crate::view::{a::{self, X}};\npub struct Y;\n"),
    ]);
    let problems = check(&files);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("view::a") && problems[0].contains("view::b"), "{problems:?}");
    // Without the sibling import, a child naming its parent is no loop.
    let fine = sources(&[
        ("view/mod.rs", "pub mod a;\nuse self::a::X;\n"),
        ("view/a.rs", "use crate::view::Z;\npub struct X;\n"),
    ]);
    assert_eq!(check(&fine), Vec::<String>::new());
}

#[test]
fn test_code_comments_and_strings_are_not_imports() {
    let files = sources(&[
        (
            "state/mod.rs",
            concat!(
            "// crate::api::App in a comment\n",
            "/* crate::api::App /* nested */ */\n",
            "const S: &str = \"crate::api::App\";\n",
            "const R: &str = r#\"crate::api::{App}\"#;\n",
            "const C: char = '{';\n",
            "fn f<'a>(x: &'a str) -> &'a str { x }\n",
            "#[cfg(test)]\nmod tests {\n    use crate::api::App;\n    const B: char = '}';\n}\n",
        ),
        ),
        ("api/mod.rs", "pub struct App;\n"),
    ]);
    assert_eq!(check(&files), Vec::<String>::new());
    // And code after a test module is still read.
    let after = sources(&[
        (
            "state/mod.rs",
            "#[cfg(test)]\nmod tests { fn t() { let _ = '{'; } }\nuse crate::api::App;\n",
        ),
        ("api/mod.rs", "pub struct App;\n"),
    ]);
    assert_eq!(check(&after).len(), 1);
}

fn sources(list: &[(&str, &str)]) -> BTreeMap<String, String> {
    list.iter().map(|(path, text)| (module_of(path), text.to_string())).collect()
}

/// Every `.rs` file below `dir`, by module path, `src/bin/` and the crate
/// roots left out.
fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if path.is_dir() {
            if rel != "bin" {
                read_tree(root, &path, out);
            }
        } else if rel.ends_with(".rs") && rel != "lib.rs" && rel != "main.rs" {
            out.insert(module_of(&rel), std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// `view/mod.rs` → `view`, `view/user.rs` → `view::user`.
fn module_of(rel: &str) -> String {
    let path = rel.trim_end_matches(".rs");
    let path = path.strip_suffix("/mod").unwrap_or(path);
    path.replace('/', "::")
}

/// Every problem found, one line each.
fn check(files: &BTreeMap<String, String>) -> Vec<String> {
    let modules: BTreeSet<&str> = files.keys().map(String::as_str).collect();
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in files {
        let code = without_tests(&blank_comments_and_literals(text));
        for path in paths(&code, module) {
            let Some(target) = resolve(&modules, &path) else { continue };
            if target == *module {
                continue;
            }
            let (from_top, to_top) = (top(module), top(&target));
            if from_top != to_top {
                match (floors.get(from_top), floors.get(to_top)) {
                    (Some(from), Some(to)) if from < to => problems.push(format!(
                        "{module} (floor {from}) uses {target} (floor {to}): `crate::{path}`"
                    )),
                    (None, _) => problems.push(format!("{from_top} has no floor in FLOORS")),
                    (_, None) => problems.push(format!("{to_top} has no floor in FLOORS")),
                    _ => {}
                }
            }
            // A child naming one of its ancestors closes no loop.
            if !module.starts_with(&format!("{target}::")) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    problems.sort();
    problems.dedup();
    for cycle in cycles(&edges) {
        problems.push(format!("import loop between files: {}", cycle.join(" → ")));
    }
    problems
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

/// The longest prefix of `path` that is a module.
fn resolve(modules: &BTreeSet<&str>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().map(|n| parts[..n].join("::")).find(|m| modules.contains(m.as_str()))
}

/// The text with comments, string and char literals replaced by spaces
/// (newlines kept), so that what remains is code.
fn blank_comments_and_literals(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('#' | '"')) && !is_ident(b.get(i.wrapping_sub(1)))
        {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String =
                std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let rest: String = b[j + 1..].iter().collect();
            let len = rest.find(&close).map_or(rest.chars().count(), |k| rest[..k].chars().count());
            for &ch in &b[i..(j + 1 + len + 1 + hashes).min(b.len())] {
                blank(&mut out, ch);
            }
            i = (j + 1 + len + 1 + hashes).min(b.len());
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{…}') or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for &ch in &b[i..=end] {
                        blank(&mut out, ch);
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// `code` without its `#[cfg(test)]` items (each to its closing brace or
/// semicolon).
fn without_tests(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path the code names from the crate root, `crate::`, `super::` and
/// `self::` resolved against `module`, `use` groups expanded.
fn paths(code: &str, module: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(i.checked_sub(1).and_then(|k| chars.get(k)))
            || (i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':')
        {
            i += 1;
            continue;
        }
        let base = [("crate::", 0), ("super::", 1), ("self::", 2)]
            .into_iter()
            .find(|(word, _)| chars[i..].iter().take(word.len()).copied().eq(word.chars()));
        let Some((word, kind)) = base else {
            i += 1;
            continue;
        };
        let mut prefix: Vec<String> = match kind {
            0 => Vec::new(),
            2 => module.split("::").map(str::to_owned).collect(),
            _ => {
                let mut p: Vec<String> = module.split("::").map(str::to_owned).collect();
                p.pop();
                p
            }
        };
        let mut j = i + word.len();
        // Further `super::` segments.
        while chars[j..].iter().take(7).copied().eq("super::".chars()) {
            prefix.pop();
            j += 7;
        }
        j = use_tree(&chars, j, &prefix, &mut out);
        i = j.max(i + 1);
    }
    out
}

/// Reads a use tree at `i` (`a::b`, `a::{b, c::{d}}`), pushing each full
/// path under `prefix`; returns where it ended.
fn use_tree(chars: &[char], mut i: usize, prefix: &[String], out: &mut Vec<String>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if chars.get(i) == Some(&'{') {
            i += 1;
            loop {
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                match chars.get(i) {
                    None => return i,
                    Some('}') => return i + 1,
                    _ => {}
                }
                let before = i;
                i = use_tree(chars, i, &path, out);
                // Skip an `as name`, or anything unexpected.
                while chars.get(i).is_some_and(|c| !matches!(c, ',' | '}')) {
                    i += 1;
                }
                if i == before {
                    i += 1;
                }
            }
        }
        let start = i;
        while is_ident(chars.get(i)) {
            i += 1;
        }
        if i == start {
            break;
        }
        let segment: String = chars[start..i].iter().collect();
        if segment != "self" {
            path.push(segment);
        }
        if chars[i..].iter().take(2).copied().eq("::".chars()) {
            i += 2;
        } else {
            break;
        }
    }
    if path.len() > prefix.len() || !path.is_empty() {
        out.push(path.join("::"));
    }
    i
}

/// The loops of a directed graph: one line per strongly connected
/// component of two or more files.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> =
        edges.keys().chain(edges.values().flat_map(|v| v.iter())).collect();
    let reaches = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for next in edges.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reaches(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reach[n].contains(*n) {
            continue;
        }
        let component: Vec<String> = nodes
            .iter()
            .filter(|m| reach[n].contains(**m) && reach[*m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        done.extend(component.iter().cloned());
        out.push(component);
    }
    out
}
