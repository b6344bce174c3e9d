//! Code highlighting as Zulip's Pygments does it, byte for byte.
//!
//! `data/pygments/lexers.json` holds the rule tables of a curated set of
//! Pygments lexers, exported by `scripts/pygments_export.py` (Pygments is
//! BSD-licensed: `data/pygments/LICENSE`), and every lexer alias with its
//! display name. This module runs those tables the way Pygments'
//! `RegexLexer` does — in the current state, the first rule whose pattern
//! matches at the position wins, emits its token(s) and moves the state
//! stack; no rule matching emits one `err` character (a newline instead
//! resets to `root`) — and writes what Pygments' HTML formatter writes:
//! one `<span class="…">` per run of text with the same class, closed at
//! every line end.
//!
//! Where a Pygments table holds a Python callback, the exported table
//! names it and this module runs a port of it (`Hook`): YAML's lexer
//! keeps its indentation context that way, Ruby's reads its heredocs and
//! interpolated strings.
//!
//! A rule's pattern is tried where the previous token ended, with the
//! whole text before that position visible to `\b`, `^` and look-behind,
//! as Python's `pattern.match(text, pos)` does. Most patterns are compiled
//! by `regex-automata` (its meta regex, searched anchored at the position:
//! no backtracking, so no blow-up, and a size limit on what a pattern
//! compiles to); the few it cannot compile (look-around, back-references)
//! are compiled by `fancy-regex` as `\G(?:…)`, with a backtrack limit: a
//! pattern that exceeds it counts as not matching, so hostile code cannot
//! make a send slow. A rule is only tried where the next byte can start
//! its match (`Rule::first`). The table is parsed on first use and each
//! lexer's patterns compiled on first use of that lexer.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use fancy_regex::{Regex, RegexBuilder};
use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::util::syntax;
use regex_automata::{meta, Anchored, Input, PatternID};
use serde::Deserialize;

/// The exported tables (see the module documentation).
const DATA: &str = include_str!("../../data/pygments/lexers.json");

/// Backtracking steps one pattern may take at one position before it is
/// taken as not matching (`fancy-regex`'s patterns).
const BACKTRACK_LIMIT: usize = 100_000;

/// The most heap one pattern's automaton (`regex-automata`'s NFA, and the
/// one-pass DFA built from it) may take; a pattern past it is compiled by
/// `fancy-regex` instead (no exported pattern comes near it: the largest
/// regex, Sass's colour names, takes ≈ 0.9 MiB in all).
const AUTOMATON_LIMIT: usize = 2 << 20;

/// The most heap one pattern's lazy DFA may cache (per thread using it).
const LAZY_DFA_CACHE: usize = 256 << 10;

/// Sub-lexers (`using`) nested deeper than this emit their text as one
/// plain token.
const MAX_NESTING: usize = 8;

/// Ruby's heredocs never closed have their following lines lexed again
/// (as Pygments does): at most this many times the block's size in all,
/// past which the block is shown unhighlighted.
const RELEX_FACTOR: usize = 8;

/// The stack of the thread compiling a lexer (`off_stack`).
const COMPILE_STACK: usize = 8 << 20;

/// The state stack never grows past this (a rule that pushes in a loop).
const MAX_STACK: usize = 256;

/// Rules applied one after another without consuming text before the
/// next character is taken as unmatched (where Pygments would loop
/// forever: an empty match that leaves the stack as it was).
const MAX_IDLE: usize = 2 * MAX_STACK;

#[derive(Deserialize)]
struct Data {
    /// Alias → the lexer class highlighting it.
    highlighted: HashMap<String, String>,
    /// Alias (lower case) → display name, for every Pygments lexer.
    names: HashMap<String, String>,
    lexers: HashMap<String, LexerData>,
}

#[derive(Deserialize)]
struct LexerData {
    flags: String,
    states: HashMap<String, Vec<RuleData>>,
    #[serde(default)]
    remap: Option<Remap>,
    /// The state stack a block starts with (PHP under Zulip's
    /// `startinline`: inside `<?php`).
    #[serde(default)]
    start: Option<Vec<String>>,
    /// A lexer that is a hand-written scanner in Pygments, ported here
    /// (`json`), instead of a rule table.
    #[serde(default)]
    native: Option<String>,
    /// The parts of the Makefile lexer (`native` `make`).
    #[serde(default)]
    make: Option<MakeData>,
    /// The class of a newline no rule matches: `w` (Whitespace) for a
    /// `RegexLexer`, the empty Text class for an `ExtendedRegexLexer`.
    #[serde(default)]
    eol: Option<String>,
}

/// Pygments' `MakefileLexer`: lines matching `special` (directives, and
/// the lines a backslash continues) or `comment` are set aside, the rest
/// is lexed by `base`.
#[derive(Deserialize)]
struct MakeData {
    base: String,
    special: String,
    comment: String,
    directive: String,
    remark: String,
}

/// One rule: pattern, action, state change.
type RuleData = (String, Option<ActionData>, Option<NextData>);

/// A lexer's table, its compiled form (or why it did not compile) once
/// used.
type Slot = (String, LexerData, OnceLock<Result<Lexer, String>>);

/// C and C++: names of standard types are re-tagged as keyword types.
#[derive(Deserialize)]
struct Remap {
    from: String,
    to: String,
    words: HashSet<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ActionData {
    Token(String),
    Groups { groups: Vec<Option<ActionData>> },
    Using { using: String, stack: Vec<String> },
    CodeBlock { codeblock: CodeBlockData },
    Hook(HookData),
}

/// A Python callback of Pygments' YAML or Ruby lexer, by name, with the
/// token classes (and flags) it was made with; ported as `Hook`.
#[derive(Deserialize)]
struct HookData {
    hook: String,
    token: String,
    /// `save_indent`: the class of indentation past a closed level.
    #[serde(default)]
    error: String,
    /// `parse_block_scalar_empty_line`: the class of the spaces past the
    /// block scalar's indentation.
    #[serde(default)]
    content: String,
    /// `save_indent`: at the start of a line.
    #[serde(default)]
    start: bool,
    /// `set_indent`: the indicator does not add to the indentation.
    #[serde(default)]
    implicit: bool,
    /// `heredoc`: the class of a heredoc's body and quotes.
    #[serde(default)]
    heredoc: String,
    /// `heredoc`: the class of a heredoc's name and closing line.
    #[serde(default)]
    delimiter: String,
    /// `interpolated`: the state the string's content is lexed from.
    #[serde(default)]
    state: String,
}

/// Markdown's fenced block: the classes of its parts.
#[derive(Deserialize, Clone)]
struct CodeBlockData {
    fence: String,
    space: String,
    extra: String,
    code: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NextData {
    Pop(i64),
    One(String),
    Many(Vec<String>),
}

/// The parsed table; lexers compiled on demand.
struct Table {
    highlighted: HashMap<String, usize>,
    names: HashMap<String, String>,
    /// By index: the class name, its data, its compiled form.
    lexers: Vec<Slot>,
    by_name: HashMap<String, usize>,
}

struct Lexer {
    states: Vec<Vec<Rule>>,
    ids: HashMap<String, usize>,
    remap: Option<Remap>,
    start: Vec<String>,
    native: Option<Native>,
    /// The class of a newline no rule matches.
    eol: String,
}

/// Pygments lexers that are code, not tables, ported.
enum Native {
    Json,
    Make(Box<Make>),
}

/// The compiled parts of Pygments' `MakefileLexer` (see `MakeData`).
struct Make {
    base: usize,
    special: Regex,
    comment: Regex,
    directive: String,
    remark: String,
}

struct Rule {
    pattern: Pattern,
    /// The bytes a match of the pattern can start with; `None`: any, or
    /// it can match the empty string (see `first_bytes`).
    first: Option<Box<[bool; 256]>>,
    /// Whether the action reads the groups (else only the whole match is
    /// searched for, the faster search).
    groups: bool,
    /// The names of the pattern's groups, by index.
    names: Vec<Option<String>>,
    action: Action,
    next: Next,
    /// The pattern as it was compiled before `regex-automata` was used,
    /// for the tests that check both find the same matches (nothing
    /// outside test builds).
    #[cfg_attr(not(test), allow(dead_code))]
    reference: Reference,
}

/// The `\G` fancy-regex form of a rule's pattern: kept in test builds
/// only (`Rule::check`).
#[cfg(test)]
type Reference = Regex;
#[cfg(not(test))]
type Reference = ();

#[cfg(test)]
fn reference(fancy: impl FnOnce() -> Result<Regex, String>) -> Result<Reference, String> {
    fancy()
}

#[cfg(not(test))]
fn reference(_: impl FnOnce() -> Result<Regex, String>) -> Result<Reference, String> {
    Ok(())
}

/// A rule's compiled pattern.
enum Pattern {
    /// Searched anchored at the position (most patterns).
    Automaton(meta::Regex),
    /// `\G(?:pattern)`: patterns `regex-automata` cannot compile.
    Fancy(Regex),
}

enum Action {
    Skip,
    Token(String),
    Groups(Vec<Action>),
    Using { lexer: usize, stack: Vec<String> },
    CodeBlock(CodeBlockData),
    Hook(Hook),
}

/// The callbacks of Pygments' `YamlLexer`, which keep an indentation
/// context (`Indentation`) and may pop the state stack, and of its
/// `RubyLexer` (heredocs, interpolated strings). Each emits the matched
/// text (or parts of it) and tells where lexing goes on: the end of the
/// match, or — when the callback returns early, as Pygments'
/// `ExtendedRegexLexer` callbacks may — the same position.
enum Hook {
    /// `something`: no token for an empty match.
    Something(String),
    /// `reset_indent`: a directive or document marker forgets the levels.
    ResetIndent(String),
    /// `save_indent`: a possible indentation level; at a line start, the
    /// levels deeper than the line are closed.
    SaveIndent { token: String, error: String, start: bool },
    /// `set_indent`: the saved level becomes the current one.
    SetIndent { token: String, implicit: bool },
    /// `set_block_scalar_indent`: a block scalar header's explicit
    /// indentation indicator.
    SetBlockScalarIndent(String),
    /// `parse_block_scalar_empty_line`.
    BlockScalarEmptyLine { indent: String, content: String },
    /// `parse_block_scalar_indent`: a line indented less than the block
    /// scalar ends it.
    BlockScalarIndent(String),
    /// `parse_plain_scalar_indent`: a line indented no deeper than the
    /// current level ends a multi-line plain scalar.
    PlainScalarIndent(String),
    /// Ruby's `heredoc_callback`: `<<~NAME` (groups 1–4: operator, quote,
    /// name, quote), the rest of its line lexed as code, then the
    /// heredocs of the line read up to their closing lines.
    Heredoc { operator: String, heredoc: String, delimiter: String, error: String },
    /// Ruby's `intp_regex_callback` / `intp_string_callback`: groups 1
    /// and 4 (the delimiters) as `token`, group 3 lexed on its own from
    /// `state`.
    Interpolated { token: String, state: Vec<String> },
}

/// Ruby's heredocs never nest deeper than this on one line (Pygments'
/// limit): past it, the rest of the line is one heredoc token.
const MAX_HEREDOCS: usize = 100;

/// The YAML lexer's context (Pygments' `YamlLexerContext`), in
/// characters; `-1` is no level.
struct Indentation {
    levels: Vec<i64>,
    indent: i64,
    next: i64,
    block_scalar: Option<i64>,
}

impl Default for Indentation {
    fn default() -> Self {
        Indentation { levels: Vec::new(), indent: -1, next: 0, block_scalar: None }
    }
}

enum Step {
    Pop,
    Dup,
    Push(usize),
}

enum Next {
    Stay,
    Pop(usize),
    Steps(Vec<Step>),
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let data: Data = serde_json::from_str(DATA).expect("data/pygments/lexers.json parses");
        let mut lexers: Vec<_> = data.lexers.into_iter().collect();
        lexers.sort_by(|a, b| a.0.cmp(&b.0));
        let by_name: HashMap<String, usize> =
            lexers.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect();
        let highlighted = data
            .highlighted
            .into_iter()
            .filter_map(|(alias, class)| Some((alias, *by_name.get(&class)?)))
            .collect();
        Table {
            highlighted,
            names: data.names,
            lexers: lexers.into_iter().map(|(n, d)| (n, d, OnceLock::new())).collect(),
            by_name,
        }
    })
}

/// Pygments' display name for a language alias (`py2` → "Python 2.x").
pub(super) fn display_name(lang: &str) -> Option<&'static str> {
    table().names.get(&lang.to_ascii_lowercase()).map(String::as_str)
}

/// The highlighted HTML of `code` (Pygments' formatter output between
/// `<code>` and `</code>`, quotes left as typed), or `None` when the
/// language is not one natter highlights.
#[cfg(test)]
pub(super) fn highlight(lang: &str, code: &str) -> Option<String> {
    let mut html = String::new();
    highlight_into(lang, code, &mut html).then_some(html)
}

/// Appends the highlighted HTML of `code` to `html` (see `highlight`);
/// `false`, leaving `html` as it was, when the language is not one natter
/// highlights.
pub(super) fn highlight_into(lang: &str, code: &str, html: &mut String) -> bool {
    let table = table();
    let Some(&index) = table.highlighted.get(&lang.to_ascii_lowercase()) else {
        return false;
    };
    let Some(lexer) = lexer(table, index) else {
        return false;
    };
    // Pygments' input rules: newlines at either end stripped, one added.
    let mut text = String::with_capacity(code.len() + 1);
    text.push_str(code.trim_matches('\n'));
    text.push('\n');
    let mut tokens = Vec::new();
    let relex = Cell::new(Some(RELEX_FACTOR * text.len()));
    run(table, index, &text, &lexer.start, &mut tokens, Depth { level: 0, relex: &relex });
    if relex.get().is_none() {
        return false;
    }
    format(&tokens, html);
    true
}

/// How deep a run is nested in others (`using`, a callback's own
/// lexing), and how much text never-closed heredocs may still have lexed
/// again in the whole block (`None`: past the bound, see `RELEX_FACTOR`).
#[derive(Clone, Copy)]
struct Depth<'b> {
    level: usize,
    relex: &'b Cell<Option<usize>>,
}

impl Depth<'_> {
    fn deeper(self) -> Self {
        Depth { level: self.level + 1, ..self }
    }
}

/// The compiled lexer at `index`; `None` if one of its patterns does not
/// compile (the language then renders as plain code).
fn lexer(table: &'static Table, index: usize) -> Option<&'static Lexer> {
    let (_, data, slot) = &table.lexers[index];
    slot.get_or_init(|| off_stack(move || compile(table, data))).as_ref().ok()
}

/// Runs `f` on an OS thread of its own with a large stack, the caller
/// (a coroutine, with a small stack) parked meanwhile: compiling a
/// lexer's patterns recurses deeper than a coroutine's stack allows.
fn off_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = may::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("highlight-compile".into())
        .stack_size(COMPILE_STACK)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("a compiling thread starts");
    rx.recv().expect("the compiling thread answers")
}

fn compile(table: &Table, data: &LexerData) -> Result<Lexer, String> {
    let mut names: Vec<&String> = data.states.keys().collect();
    names.sort();
    let ids: HashMap<String, usize> =
        names.iter().enumerate().map(|(i, n)| ((*n).clone(), i)).collect();
    let verbose = data.flags.contains('x');
    let mut states = Vec::with_capacity(names.len());
    for name in &names {
        let mut rules = Vec::new();
        for (pattern, action, next) in &data.states[*name] {
            let flags =
                if data.flags.is_empty() { String::new() } else { format!("(?{})", data.flags) };
            let end = if verbose { "\n)" } else { ")" };
            let fancy = || {
                let source = format!("{flags}\\G(?:{pattern}{end}");
                RegexBuilder::new(&source)
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .build()
                    .map_err(|e| format!("{source}: {e}"))
            };
            let source = format!("{flags}(?:{pattern}{end}");
            let (compiled, names) = match automaton(&source) {
                Some(regex) => {
                    let names = regex
                        .group_info()
                        .pattern_names(PatternID::ZERO)
                        .map(|n| n.map(str::to_owned))
                        .collect();
                    (Pattern::Automaton(regex), names)
                }
                None => {
                    let regex = fancy()?;
                    let names = regex.capture_names().map(|n| n.map(str::to_owned)).collect();
                    (Pattern::Fancy(regex), names)
                }
            };
            let action =
                convert_action(table, action.as_ref()).ok_or("an unknown lexer or callback")?;
            let groups = !matches!(action, Action::Skip | Action::Token(_) | Action::Using { .. });
            let next = match next {
                None => Next::Stay,
                Some(NextData::Pop(n)) => Next::Pop(n.unsigned_abs() as usize),
                Some(NextData::One(s)) => Next::Steps(vec![step(&ids, s).ok_or("a state")?]),
                Some(NextData::Many(list)) => Next::Steps(
                    list.iter().map(|s| step(&ids, s)).collect::<Option<_>>().ok_or("a state")?,
                ),
            };
            rules.push(Rule {
                first: first_bytes(&source),
                pattern: compiled,
                groups,
                names,
                action,
                next,
                reference: reference(fancy)?,
            });
        }
        states.push(rules);
    }
    let remap = data.remap.as_ref().map(|r| Remap {
        from: r.from.clone(),
        to: r.to.clone(),
        words: r.words.clone(),
    });
    let native = match (data.native.as_deref(), &data.make) {
        (None, _) => None,
        (Some("json"), _) => Some(Native::Json),
        (Some("make"), Some(make)) => {
            let regex = |p: &str| {
                RegexBuilder::new(p)
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .build()
                    .map_err(|e| e.to_string())
            };
            Some(Native::Make(Box::new(Make {
                base: *table.by_name.get(&make.base).ok_or("an unknown lexer")?,
                special: regex(&make.special)?,
                comment: regex(&make.comment)?,
                directive: make.directive.clone(),
                remark: make.remark.clone(),
            })))
        }
        (Some(other), _) => return Err(format!("no port of the {other} lexer")),
    };
    let start = data.start.clone().unwrap_or_else(|| vec!["root".to_owned()]);
    let eol = data.eol.clone().unwrap_or_else(|| "w".to_owned());
    Ok(Lexer { states, ids, remap, start, native, eol })
}

/// `source` compiled by `regex-automata`, if it can be, within
/// `AUTOMATON_LIMIT`.
fn automaton(source: &str) -> Option<meta::Regex> {
    let config = meta::Config::new()
        .nfa_size_limit(Some(AUTOMATON_LIMIT))
        .onepass_size_limit(Some(AUTOMATON_LIMIT))
        .hybrid_cache_capacity(LAZY_DFA_CACHE);
    meta::Builder::new().configure(config).syntax(syntax::Config::new()).build(source).ok()
}

/// The bytes a match of `source` can start with, as far as it is known
/// for sure: `None` when the pattern can match the empty string (or
/// begins with look-around), or the set cannot be told.
fn first_bytes(source: &str) -> Option<Box<[bool; 256]>> {
    let set = fancy_regex::RegexOptionsBuilder::new().start_bytes(source).ok()??;
    let mut first = Box::new([false; 256]);
    for b in set.iter() {
        first[b as usize] = true;
    }
    Some(first)
}

fn step(ids: &HashMap<String, usize>, name: &str) -> Option<Step> {
    Some(match name {
        "#pop" => Step::Pop,
        "#push" => Step::Dup,
        state => Step::Push(*ids.get(state)?),
    })
}

fn convert_action(table: &Table, action: Option<&ActionData>) -> Option<Action> {
    Some(match action {
        None => Action::Skip,
        Some(ActionData::Token(class)) => Action::Token(class.clone()),
        Some(ActionData::Groups { groups }) => Action::Groups(
            groups.iter().map(|g| convert_action(table, g.as_ref())).collect::<Option<_>>()?,
        ),
        Some(ActionData::Using { using, stack }) => {
            Action::Using { lexer: *table.by_name.get(using)?, stack: stack.clone() }
        }
        Some(ActionData::CodeBlock { codeblock }) => Action::CodeBlock(codeblock.clone()),
        Some(ActionData::Hook(data)) => Action::Hook(convert_hook(data)?),
    })
}

fn convert_hook(data: &HookData) -> Option<Hook> {
    let token = data.token.clone();
    Some(match data.hook.as_str() {
        "something" => Hook::Something(token),
        "reset_indent" => Hook::ResetIndent(token),
        "save_indent" => Hook::SaveIndent { token, error: data.error.clone(), start: data.start },
        "set_indent" => Hook::SetIndent { token, implicit: data.implicit },
        "set_block_scalar_indent" => Hook::SetBlockScalarIndent(token),
        "parse_block_scalar_empty_line" => {
            Hook::BlockScalarEmptyLine { indent: token, content: data.content.clone() }
        }
        "parse_block_scalar_indent" => Hook::BlockScalarIndent(token),
        "parse_plain_scalar_indent" => Hook::PlainScalarIndent(token),
        "heredoc" => Hook::Heredoc {
            operator: token,
            heredoc: data.heredoc.clone(),
            delimiter: data.delimiter.clone(),
            error: data.error.clone(),
        },
        "interpolated" => Hook::Interpolated { token, state: vec![data.state.clone()] },
        _ => return None,
    })
}

/// Pygments' `RegexLexer.get_tokens_unprocessed` (and its
/// `ExtendedRegexLexer` twin, whose callbacks are the `Hook`s): appends
/// `(class, text)` tokens for `text`, starting with the state stack
/// `start`.
fn run<'t>(
    table: &'static Table,
    index: usize,
    text: &'t str,
    start: &[String],
    out: &mut Vec<(&'static str, &'t str)>,
    depth: Depth<'_>,
) {
    let Some(lexer) = lexer(table, index).filter(|_| depth.level < MAX_NESTING) else {
        out.push(("", text));
        return;
    };
    match &lexer.native {
        Some(Native::Json) => return json_tokens(text, out),
        Some(Native::Make(make)) => {
            let Make { base, special, comment, directive, remark } = &**make;
            let classes = (directive.as_str(), remark.as_str());
            return make_tokens(table, *base, (special, comment), classes, text, out, depth);
        }
        None => {}
    }
    let Some(root) = lexer.ids.get("root").copied() else {
        out.push(("", text));
        return;
    };
    let mut stack: Vec<usize> = start.iter().filter_map(|s| lexer.ids.get(s).copied()).collect();
    if stack.is_empty() {
        stack.push(root);
    }
    let mut lexing = Lexing {
        index,
        stack,
        context: Indentation::default(),
        end: text.len(),
        heredocs: Vec::new(),
        bodies: [""; 3],
    };
    let mut found = Found::default();
    let mut pos = 0;
    // Rules applied since text was last consumed.
    let mut idle = 0;
    'text: loop {
        if idle <= MAX_IDLE {
            // Patterns see the text up to `end` (Python's `endpos`).
            let visible = &text[..lexing.end];
            let state = *lexing.stack.last().expect("the stack keeps one state");
            let next_byte = visible.as_bytes().get(pos).copied();
            for rule in &lexer.states[state] {
                if !rule.find(visible, pos, next_byte, &mut found) {
                    continue;
                }
                let (start, end) = found.spans[0].expect("group 0");
                let caps = Caps { text, spans: &found.spans, names: &rule.names };
                let first = out.len();
                let depth_before = lexing.stack.len();
                let matched = Matched { caps, start, end, whole: true };
                let next =
                    emit(table, &rule.action, &matched, &mut lexing, out, depth).unwrap_or(pos);
                if let Some(remap) = &lexer.remap {
                    for token in &mut out[first..] {
                        if token.0 == remap.from && remap.words.contains(token.1) {
                            token.0 = &remap.to;
                        }
                    }
                }
                let moved = next > pos;
                pos = next;
                idle = if moved { 0 } else { idle + 1 };
                match &rule.next {
                    Next::Stay => {
                        if !moved && lexing.stack.len() == depth_before {
                            // Pygments would loop forever here; move on.
                            break;
                        }
                    }
                    Next::Pop(n) => {
                        let stack = &mut lexing.stack;
                        if *n >= stack.len() {
                            stack.truncate(1);
                        } else {
                            stack.truncate(stack.len() - n);
                        }
                    }
                    Next::Steps(steps) => {
                        let stack = &mut lexing.stack;
                        for step in steps {
                            match step {
                                Step::Pop => {
                                    if stack.len() > 1 {
                                        stack.pop();
                                    }
                                }
                                Step::Dup => {
                                    let top = *stack.last().expect("a state");
                                    stack.push(top);
                                }
                                Step::Push(s) => stack.push(*s),
                            }
                        }
                        if stack.len() > MAX_STACK {
                            stack.drain(1..stack.len() - MAX_STACK);
                        }
                    }
                }
                continue 'text;
            }
        }
        idle = 0;
        if pos >= lexing.end && !lexing.heredocs.is_empty() {
            // The line that opened heredocs is lexed: their bodies follow.
            let Some(next) = heredoc_bodies(lexing.bodies, text, pos, &lexing.heredocs, depth, out)
            else {
                // Past the bound on text lexed again: the block will be
                // shown unhighlighted.
                out.push(("", &text[pos..]));
                return;
            };
            pos = next;
            lexing.heredocs.clear();
            lexing.end = text.len();
            continue;
        }
        let Some(c) = text[pos..lexing.end].chars().next() else {
            break;
        };
        let end = pos + c.len_utf8();
        if c == '\n' {
            lexing.stack.clear();
            lexing.stack.push(root);
            out.push((lexer.eol.as_str(), &text[pos..end]));
        } else {
            out.push(("err", &text[pos..end]));
        }
        pos = end;
    }
}

impl Rule {
    /// Whether the rule's pattern matches at `pos` of `visible` (whose
    /// byte at `pos` is `next_byte`); if so, `found` holds the match and,
    /// where the action reads them, its groups.
    fn find(&self, visible: &str, pos: usize, next_byte: Option<u8>, found: &mut Found) -> bool {
        // Only an ASCII byte is ruled out, so that how a pattern's
        // non-ASCII characters (case-folded ones too) start never matters.
        let ruled_out = match (&self.first, next_byte) {
            (Some(first), Some(b)) => b.is_ascii() && !first[b as usize],
            (Some(_), None) => true,
            (None, _) => false,
        };
        let matched = !ruled_out && self.search(visible, pos, found);
        #[cfg(test)]
        self.check(visible, pos, matched.then_some(&*found));
        matched
    }

    fn search(&self, visible: &str, pos: usize, found: &mut Found) -> bool {
        found.spans.clear();
        match &self.pattern {
            Pattern::Automaton(regex) => {
                let groups =
                    if self.groups { regex.group_info().group_len(PatternID::ZERO) } else { 1 };
                found.slots.clear();
                found.slots.resize(2 * groups, None);
                let input = Input::new(visible).span(pos..visible.len()).anchored(Anchored::Yes);
                if regex.search_slots(&input, &mut found.slots).is_none() {
                    return false;
                }
                let spans = found.slots.chunks(2).map(|pair| match pair {
                    [Some(start), Some(end)] => Some((start.get(), end.get())),
                    _ => None,
                });
                found.spans.extend(spans);
            }
            Pattern::Fancy(regex) => {
                let Ok(Some(caps)) = regex.captures_from_pos(visible, pos) else {
                    return false;
                };
                found.spans.extend(caps.iter().map(|m| m.map(|m| (m.start(), m.end()))));
            }
        }
        true
    }

    /// Panics unless the pattern as it was compiled before (`reference`)
    /// finds the same match and groups.
    #[cfg(test)]
    fn check(&self, visible: &str, pos: usize, found: Option<&Found>) {
        let want = self.reference.captures_from_pos(visible, pos);
        let want: Option<Vec<_>> = match want {
            Ok(Some(caps)) => Some(caps.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect()),
            _ => None,
        };
        let got = found.map(|f| f.spans.clone());
        let agree = match (&want, &got) {
            (None, None) => true,
            (Some(want), Some(got)) if self.groups => want == got,
            (Some(want), Some(got)) => want[0] == got[0],
            _ => false,
        };
        assert!(
            agree,
            "{} at {pos} of {visible:?}: fancy-regex {want:?}, now {got:?}",
            self.reference.as_str()
        );
    }
}

/// A rule's match: the spans of its groups (group 0 the whole match; only
/// that one when the action does not read groups), and the search's
/// buffer, kept from one search to the next.
#[derive(Default)]
struct Found {
    spans: Vec<Option<(usize, usize)>>,
    slots: Vec<Option<NonMaxUsize>>,
}

/// The groups of a rule's match in `text`.
#[derive(Clone, Copy)]
struct Caps<'m, 't> {
    text: &'t str,
    spans: &'m [Option<(usize, usize)>],
    names: &'m [Option<String>],
}

/// One group's match.
#[derive(Clone, Copy)]
struct Group<'t> {
    text: &'t str,
    start: usize,
    end: usize,
}

impl<'t> Group<'t> {
    fn start(&self) -> usize {
        self.start
    }
    fn end(&self) -> usize {
        self.end
    }
    fn as_str(&self) -> &'t str {
        &self.text[self.start..self.end]
    }
}

impl<'t> Caps<'_, 't> {
    fn get(&self, i: usize) -> Option<Group<'t>> {
        let (start, end) = (*self.spans.get(i)?)?;
        Some(Group { text: self.text, start, end })
    }

    fn name(&self, name: &str) -> Option<Group<'t>> {
        self.get(self.names.iter().position(|n| n.as_deref() == Some(name))?)
    }
}

/// The text a rule (or one of its groups) matched: `start..end` of the
/// text, within the rule's match `caps`; `whole` when it is the rule's
/// match, not a group of it.
struct Matched<'m, 't> {
    caps: Caps<'m, 't>,
    start: usize,
    end: usize,
    whole: bool,
}

/// One run of a lexer, as far as its callbacks (those of an
/// `ExtendedRegexLexer`) see and change it: the state stack, YAML's
/// indentation context, where the patterns' view of the text ends
/// (Pygments' `ctx.end`), and Ruby's heredocs opened on the current line
/// (`(tolerant of indentation, name)`).
struct Lexing<'t> {
    /// The lexer running (a callback lexes parts of the text with it).
    index: usize,
    stack: Vec<usize>,
    context: Indentation,
    end: usize,
    heredocs: Vec<(bool, &'t str)>,
    /// The classes of the heredocs' bodies: body, closing line, a body
    /// never closed.
    bodies: [&'static str; 3],
}

/// The tokens of one matched rule; the position lexing goes on from
/// (`None`: where it was, a callback having returned early).
fn emit<'t>(
    table: &'static Table,
    action: &'static Action,
    matched: &Matched<'_, 't>,
    lexing: &mut Lexing<'t>,
    out: &mut Vec<(&'static str, &'t str)>,
    depth: Depth<'_>,
) -> Option<usize> {
    let &Matched { caps, start, end, .. } = matched;
    let text = caps.text;
    match action {
        Action::Skip => {}
        Action::Token(class) => {
            if end > start {
                out.push((class, &text[start..end]));
            }
        }
        Action::Groups(groups) => {
            for (i, group) in groups.iter().enumerate() {
                let Some(m) = caps.get(i + 1) else { continue };
                match group {
                    Action::Skip => {}
                    Action::Token(class) => {
                        if !m.as_str().is_empty() {
                            out.push((class, m.as_str()));
                        }
                    }
                    _ => {
                        let part = Matched { caps, start: m.start(), end: m.end(), whole: false };
                        emit(table, group, &part, lexing, out, depth);
                    }
                }
            }
        }
        Action::Using { lexer, stack } => {
            run(table, *lexer, &text[start..end], stack, out, depth.deeper());
        }
        Action::CodeBlock(classes) => code_block(table, classes, caps, out, depth),
        Action::Hook(hook) => return callback(table, hook, matched, lexing, out, depth),
    }
    Some(end)
}

/// Pygments' `YamlLexer` and `RubyLexer` callbacks (see `Hook`), on the
/// run's context and state stack.
fn callback<'t>(
    table: &'static Table,
    hook: &'static Hook,
    matched: &Matched<'_, 't>,
    lexing: &mut Lexing<'t>,
    out: &mut Vec<(&'static str, &'t str)>,
    depth: Depth<'_>,
) -> Option<usize> {
    let value = &matched.caps.text[matched.start..matched.end];
    let len = value.chars().count() as i64;
    let group = |i: usize| matched.caps.get(i).filter(|_| matched.whole);
    let context = &mut lexing.context;
    let mut push = |class: &'static String, value: &'t str| {
        if !value.is_empty() {
            out.push((class.as_str(), value));
        }
    };
    // The callbacks' `context.stack.pop()` twice: the scalar and the
    // block line both end.
    let leave = |stack: &mut Vec<usize>| {
        for _ in 0..2 {
            if stack.len() > 1 {
                stack.pop();
            }
        }
    };
    match hook {
        Hook::Something(class) => {
            if value.is_empty() {
                return None;
            }
            push(class, value);
        }
        Hook::ResetIndent(class) => {
            *context = Indentation::default();
            push(class, value);
        }
        Hook::SaveIndent { token, error, start } => {
            let (mut kept, mut extra) = (value, "");
            if *start {
                context.next = len;
                if context.next < context.indent {
                    while context.next < context.indent {
                        context.indent = context.levels.pop().unwrap_or(-1);
                    }
                    if context.next > context.indent {
                        // Python's `text[:indent]`, `text[indent:]`: a
                        // level of -1 cuts before the last character.
                        let cut = python_cut(value, context.indent);
                        (kept, extra) = value.split_at(cut);
                    }
                }
            } else {
                context.next += len;
            }
            push(token, kept);
            push(error, extra);
        }
        Hook::SetIndent { token, implicit } => {
            if context.indent < context.next {
                context.levels.push(context.indent);
                context.indent = context.next;
            }
            if !implicit {
                context.next += len;
            }
            push(token, value);
        }
        Hook::SetBlockScalarIndent(class) => {
            context.block_scalar = None;
            if value.is_empty() {
                return None;
            }
            if let Some(digit) = group(1).and_then(|m| m.as_str().parse::<i64>().ok()) {
                context.block_scalar = Some(context.indent.max(0) + digit);
            }
            push(class, value);
        }
        Hook::BlockScalarEmptyLine { indent, content } => match context.block_scalar {
            Some(level) if len > level => {
                let (spaces, rest) = value.split_at(python_cut(value, level));
                push(indent, spaces);
                push(content, rest);
            }
            _ => push(indent, value),
        },
        Hook::BlockScalarIndent(class) => {
            match context.block_scalar {
                None if len <= context.indent.max(0) => {
                    leave(&mut lexing.stack);
                    return None;
                }
                None => context.block_scalar = Some(len),
                Some(level) if len < level => {
                    leave(&mut lexing.stack);
                    return None;
                }
                Some(_) => {}
            }
            if value.is_empty() {
                return None;
            }
            push(class, value);
        }
        Hook::PlainScalarIndent(class) => {
            if len <= context.indent {
                leave(&mut lexing.stack);
                return None;
            }
            if value.is_empty() {
                return None;
            }
            push(class, value);
        }
        Hook::Heredoc { operator, heredoc, delimiter, error } => {
            let (Some(op), Some(name), Some(rest)) = (group(1), group(3), group(5)) else {
                return Some(matched.end);
            };
            push(operator, op.as_str());
            push(heredoc, group(2).map_or("", |m| m.as_str()));
            push(delimiter, name.as_str());
            push(heredoc, group(4).map_or("", |m| m.as_str()));
            lexing.heredocs.push((matches!(op.as_str(), "<<-" | "<<~"), name.as_str()));
            lexing.bodies = [heredoc.as_str(), delimiter.as_str(), error.as_str()];
            if lexing.heredocs.len() >= MAX_HEREDOCS {
                push(heredoc, rest.as_str());
                return Some(rest.end());
            }
            // Pygments lexes the rest of the line (ending where the match
            // ends) with the same context, recursively; the loop goes on
            // instead, its view of the text ending there, and reads the
            // bodies once that part is lexed (`heredoc_bodies`).
            lexing.end = rest.end();
            return Some(rest.start());
        }
        Hook::Interpolated { token, state } => {
            let (Some(open), Some(content), Some(close)) = (group(1), group(3), group(4)) else {
                return Some(matched.end);
            };
            out.push((token.as_str(), open.as_str()));
            run(table, lexing.index, content.as_str(), state, out, depth.deeper());
            out.push((token.as_str(), close.as_str()));
        }
    }
    Some(matched.end)
}

/// The bodies of the heredocs a line opened, in order, from `pos` (the
/// next line): each body's lines up to the one that is its name (only
/// trailing whitespace ignored; leading whitespace too for `<<-` and
/// `<<~`) as `heredoc`, that line as `delimiter`. A heredoc never closed
/// makes every following line an `error` token and leaves the position
/// where it was, so those lines are lexed again, as Pygments does.
/// Returns where lexing goes on, or `None` past the bound on text lexed
/// again (`RELEX_FACTOR`).
fn heredoc_bodies<'t>(
    [heredoc, delimiter, error]: [&'static str; 3],
    text: &'t str,
    mut pos: usize,
    heredocs: &[(bool, &str)],
    depth: Depth<'_>,
    out: &mut Vec<(&'static str, &'t str)>,
) -> Option<usize> {
    for &(tolerant, name) in heredocs {
        let body = pos;
        let mut closed = false;
        let mut line_start = pos;
        // Python's `.*?\n` over the text: lines ending in a newline.
        while let Some(newline) = text[line_start..].find('\n') {
            let line_end = line_start + newline + 1;
            let line = &text[line_start..line_end];
            let check = if tolerant {
                line.trim_matches(python_space)
            } else {
                line.trim_end_matches(python_space)
            };
            if check == name {
                if line_start > body {
                    out.push((heredoc, &text[body..line_start]));
                }
                out.push((delimiter, line));
                pos = line_end;
                closed = true;
                break;
            }
            line_start = line_end;
        }
        if !closed && line_start > body {
            let left = depth.relex.get().and_then(|left| left.checked_sub(line_start - body));
            depth.relex.set(left);
            left?;
            out.push((error, &text[body..line_start]));
        }
    }
    Some(pos)
}

/// Python's `str.isspace` (what `strip` removes).
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The byte offset of Python's `text[:at]` / `text[at:]` cut, `at` in
/// characters (negative: from the end).
fn python_cut(text: &str, at: i64) -> usize {
    let chars = text.chars().count() as i64;
    let at = if at < 0 { (chars + at).max(0) } else { at.min(chars) };
    text.char_indices().nth(at as usize).map_or(text.len(), |(i, _)| i)
}

/// Pygments' `MarkdownLexer._handle_codeblock`: the fence and language,
/// the rest of the opening line, then the code by the lexer the language
/// names (from its root state), or as one string when there is none.
fn code_block<'t>(
    table: &'static Table,
    classes: &'static CodeBlockData,
    caps: Caps<'_, 't>,
    out: &mut Vec<(&'static str, &'t str)>,
    depth: Depth<'_>,
) {
    let group = |name: &str| caps.name(name).map_or("", |m| m.as_str());
    let mut push = |class: &'static str, value: &'t str| {
        if !value.is_empty() {
            out.push((class, value));
        }
    };
    push(&classes.fence, group("initial"));
    push(&classes.fence, group("lang"));
    if caps.name("afterlang").is_some() {
        push(&classes.space, group("whitespace"));
        push(&classes.extra, group("extra"));
    }
    push(&classes.space, group("newline"));
    let code = group("code");
    let lang = group("lang").trim().to_ascii_lowercase();
    match table.highlighted.get(&lang) {
        Some(&index) => run(table, index, code, &["root".to_owned()], out, depth.deeper()),
        None if !code.is_empty() => out.push((&classes.code, code)),
        None => {}
    }
    if let Some(m) = caps.name("terminator") {
        if !m.as_str().is_empty() {
            out.push((&classes.fence, m.as_str()));
        }
    }
}

/// Pygments' `MakefileLexer`: each line (Python's `splitlines`) that is a
/// directive, or continues one with a trailing backslash, becomes one
/// `directive` token, each comment line one `remark` token; the other
/// lines, joined, are lexed by `base`, and the set-aside lines are put
/// back where they were (Pygments' `do_insertions`).
fn make_tokens<'t>(
    table: &'static Table,
    base: usize,
    (special, comment): (&Regex, &Regex),
    (directive, remark): (&'static str, &'static str),
    text: &'t str,
    out: &mut Vec<(&'static str, &'t str)>,
    depth: Depth<'_>,
) {
    let mut rest = String::new();
    let mut kept: Vec<&'t str> = Vec::new();
    // (offset in `rest`, class, line)
    let mut inserts: Vec<(usize, &'static str, &'t str)> = Vec::new();
    let mut continued = false;
    for line in python_lines(text) {
        if continued || special.is_match(line).unwrap_or(false) {
            inserts.push((rest.len(), directive, line));
            continued = line.trim().ends_with('\\');
        } else if comment.is_match(line).unwrap_or(false) {
            inserts.push((rest.len(), remark, line));
        } else {
            rest.push_str(line);
            kept.push(line);
        }
    }
    let root = ["root".to_owned()];
    if inserts.is_empty() {
        return run(table, base, text, &root, out, depth.deeper());
    }
    let mut tokens: Vec<(&'static str, &str)> = Vec::new();
    run(table, base, &rest, &root, &mut tokens, depth.deeper());
    // The tokens are slices of `rest`, the kept lines joined: walk the
    // kept lines alongside to hand out slices of `text` instead.
    let mut kept = kept.into_iter();
    let mut line: &'t str = "";
    let mut inserts = inserts.into_iter().peekable();
    let mut pos = 0;
    for (class, mut value) in tokens {
        while let Some(&(at, inserted_class, inserted)) = inserts.peek() {
            if at > pos + value.len() {
                break;
            }
            let cut = at - pos;
            take(&mut line, &mut kept, cut, class, out);
            out.push((inserted_class, inserted));
            inserts.next();
            value = &value[cut..];
            pos = at;
        }
        take(&mut line, &mut kept, value.len(), class, out);
        pos += value.len();
    }
    out.extend(inserts.map(|(_, class, line)| (class, line)));
}

/// Pushes the next `len` bytes of the kept lines as `class` tokens:
/// `line` is what is left of the kept line being walked.
fn take<'t>(
    line: &mut &'t str,
    kept: &mut impl Iterator<Item = &'t str>,
    mut len: usize,
    class: &'static str,
    out: &mut Vec<(&'static str, &'t str)>,
) {
    while len > 0 {
        if line.is_empty() {
            match kept.next() {
                Some(next) => *line = next,
                None => return,
            }
        }
        let n = len.min(line.len());
        out.push((class, &line[..n]));
        *line = &line[n..];
        len -= n;
    }
}

/// Python's `str.splitlines(keepends=True)`.
fn python_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len();
        let mut chars = rest.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let breaks = matches!(
                c,
                '\n' | '\r'
                    | '\u{0b}'
                    | '\u{0c}'
                    | '\u{1c}'
                    | '\u{1d}'
                    | '\u{1e}'
                    | '\u{85}'
                    | '\u{2028}'
                    | '\u{2029}'
            );
            if breaks {
                end = i + c.len_utf8();
                if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
                    end += 1;
                }
                break;
            }
        }
        let (line, next) = rest.split_at(end);
        rest = next;
        Some(line)
    })
}

/// Pygments' `JsonLexer` (a character scanner, not a rule table): strings
/// are `s2` unless a `:` follows (then `nt`, object keys), with the
/// whitespace and comments between them held back until that is known;
/// numbers, `true`/`false`/`null` runs, punctuation runs and comments; any
/// other character is an error.
fn json_tokens<'t>(text: &'t str, out: &mut Vec<(&'static str, &'t str)>) {
    #[derive(PartialEq)]
    enum Mode {
        Idle,
        Str,
        Space,
        Constant,
        Number,
        Punctuation,
        LineComment,
        BlockComment,
        Slash,
    }
    fn space(c: char) -> bool {
        matches!(c, ' ' | '\n' | '\t' | '\r')
    }
    fn integer(c: char) -> bool {
        c == '-' || c.is_ascii_digit()
    }
    fn punctuation(c: char) -> bool {
        matches!(c, ',' | '[' | ']' | '{' | '}')
    }
    let mut mode = Mode::Idle;
    let (mut escape, mut unicode, mut float, mut star) = (false, 0u8, false, false);
    let mut start = 0;
    // Strings, and the whitespace and comments after them, until it is
    // known whether a `:` follows.
    let mut queue: Vec<(&'static str, &'t str)> = Vec::new();
    let hold = |queue: &mut Vec<(&'static str, &'t str)>,
                out: &mut Vec<(&'static str, &'t str)>,
                token: (&'static str, &'t str)| {
        if queue.is_empty() {
            out.push(token);
        } else {
            queue.push(token);
        }
    };
    for (stop, c) in text.char_indices() {
        let next = stop + c.len_utf8();
        match mode {
            Mode::Str => {
                if unicode > 0 {
                    if c.is_ascii_hexdigit() {
                        unicode -= 1;
                        if unicode == 0 {
                            escape = false;
                        }
                    } else {
                        unicode = 0;
                        escape = false;
                    }
                } else if escape {
                    if c == 'u' {
                        unicode = 4;
                    } else {
                        escape = false;
                    }
                } else if c == '\\' {
                    escape = true;
                } else if c == '"' {
                    queue.push(("s2", &text[start..next]));
                    mode = Mode::Idle;
                    escape = false;
                    unicode = 0;
                }
                continue;
            }
            Mode::Space => {
                if space(c) {
                    continue;
                }
                hold(&mut queue, out, ("w", &text[start..stop]));
            }
            Mode::Constant => {
                if matches!(c, 't' | 'r' | 'u' | 'e' | 'f' | 'a' | 'l' | 's' | 'n') {
                    continue;
                }
                out.push(("kc", &text[start..stop]));
            }
            Mode::Number => {
                if integer(c) {
                    continue;
                }
                if matches!(c, 'e' | 'E' | '+' | '.') {
                    float = true;
                    continue;
                }
                out.push((if float { "mf" } else { "mi" }, &text[start..stop]));
                float = false;
            }
            Mode::Punctuation => {
                if punctuation(c) {
                    continue;
                }
                out.push(("p", &text[start..stop]));
            }
            Mode::LineComment => {
                if c != '\n' {
                    continue;
                }
                hold(&mut queue, out, ("c1", &text[start..stop]));
            }
            Mode::BlockComment => {
                if c == '*' {
                    star = true;
                } else if star {
                    star = false;
                    if c == '/' {
                        hold(&mut queue, out, ("cm", &text[start..next]));
                        mode = Mode::Idle;
                    }
                }
                continue;
            }
            Mode::Slash => {
                if c == '/' {
                    mode = Mode::LineComment;
                    continue;
                }
                if c == '*' {
                    mode = Mode::BlockComment;
                    continue;
                }
                out.append(&mut queue);
                out.push(("err", &text[start..stop]));
            }
            Mode::Idle => {}
        }
        mode = Mode::Idle;
        start = stop;
        if c == '"' {
            mode = Mode::Str;
        } else if space(c) {
            mode = Mode::Space;
        } else if matches!(c, 'f' | 'n' | 't') {
            out.append(&mut queue);
            mode = Mode::Constant;
        } else if integer(c) {
            out.append(&mut queue);
            mode = Mode::Number;
        } else if c == ':' {
            out.extend(
                queue.drain(..).map(|(class, t)| (if class == "s2" { "nt" } else { class }, t)),
            );
            mode = Mode::Punctuation;
        } else if punctuation(c) {
            out.append(&mut queue);
            mode = Mode::Punctuation;
        } else if c == '/' {
            mode = Mode::Slash;
        } else {
            out.append(&mut queue);
            out.push(("err", &text[stop..next]));
        }
    }
    out.append(&mut queue);
    let rest = &text[start..];
    match mode {
        Mode::Idle => {}
        Mode::Str | Mode::BlockComment | Mode::Slash => out.push(("err", rest)),
        Mode::Number => out.push((if float { "mf" } else { "mi" }, rest)),
        Mode::Constant => out.push(("kc", rest)),
        Mode::Space => out.push(("w", rest)),
        Mode::Punctuation => out.push(("p", rest)),
        Mode::LineComment => out.push(("c1", rest)),
    }
}

/// Pygments' HTML formatter on the tokens: runs of one class in one span,
/// spans closed at each line end, text escaped (`&`, `<`, `>`; the quotes
/// Pygments escapes come back as typed when Zulip serializes the block).
fn format(tokens: &[(&str, &str)], html: &mut String) {
    html.reserve(tokens.iter().map(|t| t.1.len() * 2).sum());
    let mut open: &str = "";
    let mut line_empty = true;
    for &(class, value) in tokens {
        let mut parts = value.split('\n').peekable();
        while let Some(part) = parts.next() {
            let last = parts.peek().is_none();
            if !part.is_empty() {
                if line_empty || open != class {
                    if !line_empty && !open.is_empty() {
                        html.push_str("</span>");
                    }
                    if !class.is_empty() {
                        html.push_str("<span class=\"");
                        html.push_str(class);
                        html.push_str("\">");
                    }
                    open = class;
                }
                line_empty = false;
                escape(part, html);
            }
            if !last {
                if !line_empty && !open.is_empty() {
                    html.push_str("</span>");
                }
                html.push('\n');
                line_empty = true;
                open = "";
            }
        }
    }
    if !line_empty && !open.is_empty() {
        html.push_str("</span>");
    }
}

/// Appends `text` with `&`, `<` and `>` escaped, the runs between them
/// copied whole.
fn escape(text: &str, out: &mut String) {
    let mut rest = text;
    while let Some(i) = rest.find(['&', '<', '>']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            _ => "&gt;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/fixtures/pygments.json`: `[language, code, Zulip's HTML]`,
    /// written by real Pygments (`scripts/pygments_export.py --fixtures`).
    #[test]
    fn matches_pygments() {
        let fixture = include_str!("../../tests/fixtures/pygments.json");
        let cases: Vec<(String, String, String)> = serde_json::from_str(fixture).unwrap();
        assert!(cases.len() >= 40, "{} cases", cases.len());
        let mut failures = Vec::new();
        for (lang, code, want) in &cases {
            let got = super::super::fence::code_block(lang, code);
            if &got != want {
                failures.push(format!("{lang} {code:?}\n  want {want:?}\n  got  {got:?}"));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} differ:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }

    /// Every highlighted lexer on the code of every fixture (the other
    /// languages' code too, so rules fail and the error paths run), as
    /// typed, upper-cased, with non-ASCII letters (some of which case-fold
    /// to ASCII ones) and with CRLF line ends: every rule attempt is
    /// checked against the `\G` fancy-regex pattern (`Rule::check`).
    #[test]
    fn automata_match_where_fancy_regex_matches() {
        let fixture = include_str!("../../tests/fixtures/pygments.json");
        let cases: Vec<(String, String, String)> = serde_json::from_str(fixture).unwrap();
        let corpus: String = cases.iter().map(|c| c.1.as_str()).collect::<Vec<_>>().join("\n");
        let variants = [
            corpus.clone(),
            corpus.to_uppercase(),
            corpus
                .replace('e', "é")
                .replace('k', "\u{212a}")
                .replace('s', "ſ")
                .replace(' ', "\u{a0}"),
            corpus.replace('\n', "\r\n"),
        ];
        let table = table();
        let mut lexers: Vec<(&String, &usize)> = table.highlighted.iter().collect();
        lexers.sort_by_key(|&(alias, &index)| (index, alias.len(), alias.clone()));
        lexers.dedup_by_key(|(_, index)| **index);
        assert!(lexers.len() >= 40, "{} lexers", lexers.len());
        for (alias, _) in lexers {
            for text in &variants {
                highlight(alias, text);
            }
        }
    }

    #[test]
    fn every_exported_lexer_compiles() {
        let table = table();
        for (i, (name, _, slot)) in table.lexers.iter().enumerate() {
            lexer(table, i);
            if let Some(Err(e)) = slot.get() {
                panic!("{name} does not compile: {e}");
            }
        }
    }

    /// A Ruby heredoc never closed: the lines after it are error tokens,
    /// then lexed again (Pygments' output); many such heredocs would lex
    /// the text again and again, so past `RELEX_FACTOR` times its size
    /// the block is not highlighted.
    #[test]
    fn heredocs_never_closed_are_lexed_again_within_a_bound() {
        let once = highlight("ruby", "x = <<END\ny\n").unwrap();
        assert_eq!(
            once,
            "<span class=\"n\">x</span><span class=\"w\"> </span><span class=\"o\">=</span>\
             <span class=\"w\"> </span><span class=\"o\">&lt;&lt;</span><span class=\"dl\">END</span>\n\
             <span class=\"err\">y</span>\n<span class=\"n\">y</span>\n"
        );
        let within = "x = <<END\n".repeat(RELEX_FACTOR / 2);
        assert!(highlight("ruby", &within).is_some());
        let past = "x = <<END\n".repeat(4 * RELEX_FACTOR);
        assert_eq!(highlight("ruby", &past), None);
    }

    #[test]
    fn unknown_languages_are_not_highlighted() {
        assert_eq!(highlight("no-such-language", "x"), None);
        assert_eq!(display_name("py2"), Some("Python 2.x"));
        assert_eq!(display_name("no-such-language"), None);
    }
}
