//! The Markdown table test: input → exact HTML, for CommonMark as Zulip
//! shapes it, every Zulip extension, and hostile input.

use super::*;

/// A realm with two users (one name shared by two accounts), a group and
/// two channels the sender may see.
struct Fixture;

impl Resolver for Fixture {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        match name.to_lowercase().as_str() {
            "king hamlet" => Some((12, "King Hamlet".into())),
            "o'neil <b>" => Some((14, "O'Neil <b>".into())),
            _ => None, // "Twin" is ambiguous: two users have it
        }
    }
    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        match id {
            12 => Some((12, "King Hamlet".into())),
            21 => Some((21, "Twin".into())),
            22 => Some((22, "Twin".into())),
            _ => None,
        }
    }
    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name == "backend").then(|| (30, "backend".into()))
    }
    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        match name.to_lowercase().as_str() {
            "denmark" => Some((9, "Denmark".into())),
            "core team" => Some((10, "core team".into())),
            _ => None,
        }
    }
    fn realm_url(&self) -> Option<String> {
        Some("http://zulip.testserver".into())
    }
}

fn html(source: &str) -> String {
    render_message(source, &Fixture).html
}

/// The cases of `cases.txt`: (name, input, expected HTML).
fn cases() -> Vec<(&'static str, &'static str, &'static str)> {
    const DATA: &str = include_str!("cases.txt");
    let mut cases = Vec::new();
    for chunk in DATA.split("\n§ ").skip(1) {
        let (name, body) = chunk.split_once('\n').expect("a name line");
        let marker = if body.starts_with("§→\n") {
            0
        } else {
            body.find("\n§→\n").expect("§→") + 1
        };
        let input = body[..marker].strip_suffix('\n').unwrap_or("");
        let expected = &body[marker + "§→\n".len()..];
        let expected = expected.strip_suffix('\n').unwrap_or(expected);
        cases.push((name, input, expected));
    }
    cases
}

#[test]
fn renders_like_zulip() {
    let cases = cases();
    assert!(cases.len() >= 250, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (name, input, expected) in &cases {
        let got = html(input);
        if got != *expected {
            failures.push(format!("{name}: input {input:?}\n  want {expected:?}\n  got  {got:?}"));
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

#[test]
fn reports_what_is_mentioned() {
    let r = render_message("@**King Hamlet** @*backend* @**all** @**topic**", &Fixture);
    assert_eq!(r.mentions.users, BTreeSet::from([12]));
    assert_eq!(r.mentions.groups, BTreeSet::from([30]));
    assert!(r.mentions.channel_wildcard && r.mentions.topic_wildcard);
    // Silent mentions, mentions in code, unresolved names: nothing.
    let r = render_message(
        "@_**King Hamlet** @_*backend* @_**all** `@**topic**` @**Nobody**\n```\n@**all**\n```",
        &Fixture,
    );
    assert_eq!(r.mentions, Mentions::default());
    // Inside quotes they are silent, as in Zulip.
    let r = render_message("> @**King Hamlet** @*backend*\n\n```quote\n@**all**\n```", &Fixture);
    assert_eq!(r.mentions, Mentions::default());
    // Inside a spoiler they count.
    let r = render_message("```spoiler\n@**Twin|21**\n```", &Fixture);
    assert_eq!(r.mentions.users, BTreeSet::from([21]));
}

#[test]
fn hostile_input_stays_cheap_and_bounded() {
    // Deep nesting of every kind (run on a small thread stack, like a
    // coroutine's).
    let run = |source: String| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || render_message(&source, &Fixture))
            .unwrap()
            .join()
            .expect("rendering overflowed or panicked")
    };
    assert!(run(">".repeat(10_000) + " x").html.contains('x'));
    assert!(run("- ".repeat(10_000) + "x").html.contains('x'));
    assert!(run("*".repeat(10_000) + "x" + &"*".repeat(10_000)).html.contains('x'));
    assert!(run("[".repeat(10_000) + "x" + &"](y)".repeat(10_000)).html.contains('x'));
    assert!(run("```spoiler\n".repeat(50) + "deep").html.contains("deep"));
    assert!(run("```quote\n".repeat(50) + "deep").html.contains("deep"));
    assert!(run("````quote\n```spoiler\n~~~math\n".repeat(3_000)).html.contains("spoiler"));
    assert!(run("* a\n  ".repeat(5_000) + "x").html.contains('x'));
    assert!(run("1. a\n  ".repeat(5_000) + "x").html.contains('x'));
    assert!(run("**a ".repeat(5_000) + &"~~b ".repeat(5_000)).html.contains('b'));
    assert!(run("http://a.b/".to_owned() + &"(".repeat(20_000)).html.contains("a.b"));
    assert!(run("$$".repeat(20_000)).html.contains('$'));
    assert!(run("<time:".repeat(5_000)).html.contains("time"));
    // 10,000 mentions, all rendered and counted once.
    let r = run("@**King Hamlet** ".repeat(10_000));
    assert_eq!(r.html.matches("user-mention").count(), 10_000);
    assert_eq!(r.mentions.users, BTreeSet::from([12]));
    // Unclosed delimiters everywhere.
    let r = run("@**".repeat(10_000) + &"#**".repeat(10_000) + &":".repeat(10_000));
    assert!(!r.html.contains("<span") && !r.html.contains("<a"));
    // Emoji sequences of joiners.
    assert!(!run("\u{200d}".repeat(10_000)).html.is_empty());
    assert!(!run("🏳\u{fe0f}\u{200d}".repeat(5_000)).html.is_empty());
}

#[test]
fn hostile_math_and_code_stay_bounded() {
    let run = |source: String| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || render_message(&source, &Fixture))
            .unwrap()
            .join()
            .expect("rendering overflowed or panicked")
    };
    // 1 MB of formulas: the first `MAX_FORMULAS` typeset, the rest shown
    // as source.
    let r = run("$$x$$ ".repeat(170_000));
    assert_eq!(r.html.matches("<span class=\"katex\">").count(), math::MAX_FORMULAS);
    assert_eq!(r.html.matches("tex-error").count(), 170_000 - math::MAX_FORMULAS);
    // 1 MB of `$$`, of unclosed groups, and a math block of 1 MB.
    assert!(run("$$".repeat(500_000)).html.contains("$$"));
    assert!(run("$$\\frac{$$ ".repeat(100_000)).html.contains("tex-error"));
    let block = format!("```math\n{}```", "\\left(x\n\n".repeat(100_000));
    assert!(run(block).html.contains("tex-error"));
    // Unterminated fences, and code every exported lexer reads to the end
    // of a long block: strings, comments and brackets never closed.
    let soup = r#""\'/*<!--`${([{#"""'''x$$\"#.repeat(500);
    for lang in [
        "python", "js", "ts", "rust", "go", "java", "c", "cpp", "bash", "sql", "html", "css",
        "yaml", "ruby",
    ] {
        let r = run(format!("```{lang}\n{soup}\n{soup}"));
        assert!(r.html.starts_with("<div class=\"codehilite\""), "{lang}");
    }
    let r = run("```python\n".to_owned() + &"(".repeat(100_000));
    assert!(r.html.contains("<span class=\"p\">"));
    // YAML's indentation context: 1,000 nested levels, then a line back
    // at the start; flow collections never closed; block scalars and
    // plain scalars opened on every line.
    let deep: String = (0..1_000).map(|i| format!("{}k{i}:\n", " ".repeat(i / 2))).collect();
    let r = run(format!("```yaml\n{deep}top: 1\n```"));
    assert!(r.html.contains("<span class=\"nt\">top</span>"));
    for soup in ["- [{? ".repeat(20_000), "a: |2-\n".repeat(20_000), "- x\n  y\n".repeat(20_000)] {
        let r = run(format!("```yaml\n{soup}"));
        assert!(r.html.starts_with("<div class=\"codehilite\" data-code-language=\"YAML\""));
    }
    // Ruby: heredocs opened by the hundred on one line, interpolation
    // nested in interpolation, and heredocs never closed, whose following
    // lines Pygments lexes again each time: past a bound on that, the
    // block is shown unhighlighted.
    let many = "x = ".to_owned() + &"<<A, ".repeat(5_000) + "\n" + &"A\n".repeat(5_000);
    assert!(run(format!("```ruby\n{many}```")).html.contains("<span class=\"dl\">A</span>"));
    let nested = "%Q{#{".repeat(5_000);
    assert!(run(format!("```ruby\n{nested}```")).html.contains("<span class=\"sx\">"));
    let unclosed = "x = <<NEVER\n".repeat(20_000);
    let r = run(format!("```ruby\n{unclosed}```"));
    assert!(r.html.starts_with("<div class=\"codehilite\" data-code-language=\"Ruby\">"));
    assert!(!r.html.contains("<span class="), "shown unhighlighted");
}

#[test]
fn hash_encoding_matches_zulip() {
    assert_eq!(zulip::hash_encode("a b.c/d%é"), "a.20b.2Ec.2Fd.25.C3.A9");
}

/// The one-line shortcut (`plain_line`) gives exactly what the parser
/// gives, for every string it accepts: random lines over all of printable
/// ASCII (a fixed-seed generator, so failures reproduce), plus edge cases.
#[test]
fn plain_line_shortcut_matches_the_full_renderer() {
    let full = |source: &str| {
        let mut pieces = Vec::new();
        let text = fence::fences(&normalize(source), &mut pieces);
        let (text, starts) = source::prepare(&text, &mut pieces, &Fixture);
        let mut mentions = Mentions::default();
        writer::write(&text, &starts, Some("http://zulip.testserver/"), &mut pieces, &mut mentions)
            .trim()
            .to_owned()
    };
    let mut accepted = 0;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut cases: Vec<String> = [
        "hello number 12345",
        "a",
        "Hi \"there\" (you) -- ok?! 100% done; 3/4 = 0.75 + {x} ^ y",
        "one  two   three",
        "x -",
        "Dear Bob, 1. not a list",
        "A 'quoted' word",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for _ in 0..20_000 {
        let len = 1 + (next() % 24) as usize;
        // Mostly letters and spaces, so many lines pass the shortcut.
        let line: String = (0..len)
            .map(|_| match next() % 4 {
                0 => (b' ' + (next() % 95) as u8) as char,
                1 => ' ',
                _ => (b'a' + (next() % 26) as u8) as char,
            })
            .collect();
        cases.push(line);
    }
    for case in &cases {
        if let Some(fast) = plain_line(case) {
            accepted += 1;
            assert_eq!(fast, full(case), "shortcut differs for {case:?}");
        }
    }
    assert!(accepted > 5_000, "the generator should exercise the shortcut ({accepted} accepted)");
    for refused in ["- item", "1. one", "http://x.y", "a *b*", "a `b`", "a @**x**", "a :smile:"] {
        assert_eq!(plain_line(refused), None, "{refused:?}");
    }
}

/// Random text over Markdown's and Zulip's syntax characters (and
/// multi-byte ones) renders without panicking, on a coroutine-sized stack;
/// a fixed-seed generator, so a failure reproduces.
#[test]
fn random_syntax_soup_renders() {
    const ALPHABET: &[&str] = &[
        "*",
        "**",
        "_",
        "~~",
        "`",
        "```",
        "~~~",
        "\\",
        "[",
        "]",
        "(",
        ")",
        "<",
        ">",
        "&",
        "#",
        "$$",
        "!",
        ":",
        "@**",
        "@*",
        "|",
        "-",
        "+",
        "=",
        ".",
        "1.",
        "2)",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "a",
        "King Hamlet",
        "é",
        "🐙",
        "\u{200d}",
        "\u{fe0f}",
        "http://",
        "x.com",
        ":smile:",
        "<time:",
        "```quote\n",
        "```spoiler h\n",
        "```math\n",
        "> ",
        "    ",
    ];
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let inputs: Vec<String> = (0..3_000)
        .map(|_| {
            let len = (next() % 60) as usize;
            (0..len).map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize]).collect()
        })
        .collect();
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            for input in &inputs {
                let html = render_message(input, &Fixture).html;
                let leaked = html.chars().any(|c| ('\u{E000}'..='\u{E0FF}').contains(&c));
                assert!(!leaked, "{input:?} → {html:?}");
            }
        })
        .unwrap()
        .join()
        .expect("rendering panicked");
}
