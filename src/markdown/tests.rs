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
}

fn html(source: &str) -> String {
    render_message(source, &Fixture).html
}

const TABLE: &[(&str, &str)] = &[
    // CommonMark, Zulip-shaped.
    ("hello", "<p>hello</p>"),
    ("**bold** _it_ ~~gone~~", "<p><strong>bold</strong> <em>it</em> <del>gone</del></p>"),
    ("a\nb", "<p>a<br />\nb</p>"),
    ("> quoted", "<blockquote>\n<p>quoted</p>\n</blockquote>"),
    ("- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"),
    ("`@**King Hamlet**`", "<p><code>@**King Hamlet**</code></p>"),
    // Raw HTML is always text.
    ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
    ("a <b onclick=x>b</b>", "<p>a &lt;b onclick=x&gt;b&lt;/b&gt;</p>"),
    // Links: safe schemes only; images are links.
    ("[x](javascript:alert(1))", "<p><a href=\"\">x</a></p>"),
    ("[x](JaVa\tScript:alert(1))", "<p>[x](JaVa\tScript:alert(1))</p>"),
    ("[x](data:text/html,hi)", "<p><a href=\"\">x</a></p>"),
    ("[x](https://example.com)", "<p><a href=\"https://example.com\">x</a></p>"),
    (
        "![cat](https://e.com/c.png)",
        "<p><a href=\"https://e.com/c.png\">cat</a></p>\n<div class=\"message_inline_image\">\
         <a href=\"https://e.com/c.png\"><img src=\"https://e.com/c.png\"></a></div>",
    ),
    ("![x](javascript:alert(1))", "<p><a href=\"\">x</a></p>"),
    ("<javascript:alert(1)>", "<p><a href=\"\">javascript:alert(1)</a></p>"),
    // Bare URLs are linked, without trailing punctuation.
    (
        "see https://example.com/a_b?x=1&y=2.",
        "<p>see <a href=\"https://example.com/a_b?x=1&amp;y=2\">https://example.com/a_b?x=1&amp;y=2</a>.</p>",
    ),
    (
        "(https://e.com/wiki/A_(b))",
        "<p>(<a href=\"https://e.com/wiki/A_(b)\">https://e.com/wiki/A_(b)</a>)</p>",
    ),
    // Global times: UTC in `datetime`, the text as typed.
    (
        "at <time:2017-06-05T22:30:00Z>",
        "<p>at <time datetime=\"2017-06-05T22:30:00Z\">2017-06-05T22:30:00Z</time></p>",
    ),
    (
        "<time:2020-08-14T16:00:00+05:30>",
        "<p><time datetime=\"2020-08-14T10:30:00Z\">2020-08-14T16:00:00+05:30</time></p>",
    ),
    (
        "<time:2020-08-14 16:00>",
        "<p><time datetime=\"2020-08-14T16:00:00Z\">2020-08-14 16:00</time></p>",
    ),
    ("<time:2020-08-14>", "<p><time datetime=\"2020-08-14T00:00:00Z\">2020-08-14</time></p>"),
    ("<time:1496701800>", "<p><time datetime=\"2017-06-05T22:30:00Z\">1496701800</time></p>"),
    (
        "<time:1496701800.5>",
        "<p><time datetime=\"2017-06-05T22:30:00.500Z\">1496701800.5</time></p>",
    ),
    (
        "<time:soon <b>>",
        "<p><span class=\"timestamp-error\">Invalid time format: soon &lt;b</span>&gt;</p>",
    ),
    ("<time:NaN>", "<p><span class=\"timestamp-error\">Invalid time format: NaN</span></p>"),
    ("`<time:1496701800>`", "<p><code>&lt;time:1496701800&gt;</code></p>"),
    ("<time:1496701800", "<p>&lt;time:1496701800</p>"),
    // User mentions.
    (
        "@**King Hamlet** hi",
        "<p><span class=\"user-mention\" data-user-id=\"12\">@King Hamlet</span> hi</p>",
    ),
    (
        "hi @**king hamlet**!",
        "<p>hi <span class=\"user-mention\" data-user-id=\"12\">@King Hamlet</span>!</p>",
    ),
    (
        "@**Twin|22**",
        "<p><span class=\"user-mention\" data-user-id=\"22\">@Twin</span></p>",
    ),
    (
        "@**|12**",
        "<p><span class=\"user-mention\" data-user-id=\"12\">@King Hamlet</span></p>",
    ),
    ("@**Twin**", "<p>@<strong>Twin</strong></p>"),
    ("@**King Hamlet|21**", "<p>@<strong>King Hamlet|21</strong></p>"),
    ("@**Nobody**", "<p>@<strong>Nobody</strong></p>"),
    (
        "@_**King Hamlet**",
        "<p><span class=\"user-mention silent\" data-user-id=\"12\">King Hamlet</span></p>",
    ),
    (
        "@**O'Neil <b>**",
        "<p><span class=\"user-mention\" data-user-id=\"14\">@O&#39;Neil &lt;b&gt;</span></p>",
    ),
    ("mail@**King Hamlet**", "<p>mail@<strong>King Hamlet</strong></p>"),
    // Wildcards.
    (
        "@**all** @**everyone**",
        "<p><span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@all</span> \
         <span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@everyone</span></p>",
    ),
    (
        "@**channel** @**stream**",
        "<p><span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@channel</span> \
         <span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@stream</span></p>",
    ),
    ("@**topic**", "<p><span class=\"topic-mention\">@topic</span></p>"),
    (
        "@_**all** @_**topic**",
        "<p><span class=\"user-mention channel-wildcard-mention silent\" data-user-id=\"*\">all</span> \
         <span class=\"topic-mention silent\">topic</span></p>",
    ),
    // Group mentions.
    (
        "@*backend* @_*backend*",
        "<p><span class=\"user-group-mention\" data-user-group-id=\"30\">@backend</span> \
         <span class=\"user-group-mention silent\" data-user-group-id=\"30\">backend</span></p>",
    ),
    ("@*frontend*", "<p>@<em>frontend</em></p>"),
    // Channel and topic links.
    (
        "#**Denmark**",
        "<p><a class=\"stream\" data-stream-id=\"9\" href=\"/#narrow/channel/9-Denmark\">#Denmark</a></p>",
    ),
    (
        "#**core team>plans for v1.0**",
        "<p><a class=\"stream-topic\" data-stream-id=\"10\" \
         href=\"/#narrow/channel/10-core-team/topic/plans.20for.20v1.2E0\">#core team &gt; plans for v1.0</a></p>",
    ),
    ("#**secret**", "<p>#<strong>secret</strong></p>"),
    // Emoji by name and literal.
    (
        ":smile: :thumbs_up:",
        "<p><span aria-label=\"smile\" class=\"emoji emoji-1f642\" role=\"img\" title=\"smile\">:smile:</span> \
         <span aria-label=\"thumbs up\" class=\"emoji emoji-1f44d\" role=\"img\" title=\"thumbs up\">:thumbs_up:</span></p>",
    ),
    (":not_an_emoji: 10:30:00", "<p>:not_an_emoji: 10:30:00</p>"),
    (
        "ok 🐙!",
        "<p>ok <span aria-label=\"octopus\" class=\"emoji emoji-1f419\" role=\"img\" title=\"octopus\">:octopus:</span>!</p>",
    ),
    ("`:smile:`", "<p><code>:smile:</code></p>"),
    // Code blocks.
    (
        "```python\nprint('<hi>')\n```",
        "<div class=\"codehilite\" data-code-language=\"python\"><pre><span></span><code>print(&#39;&lt;hi&gt;&#39;)\n</code></pre></div>",
    ),
    (
        "```\n@**King Hamlet** :smile:\n```",
        "<div class=\"codehilite\"><pre><span></span><code>@**King Hamlet** :smile:\n</code></pre></div>",
    ),
    (
        "```\nnever closed\n\nstill code",
        "<div class=\"codehilite\"><pre><span></span><code>never closed\n\nstill code</code></pre></div>",
    ),
    // Quote and spoiler fences.
    (
        "```quote\n**said**\n```",
        "<blockquote>\n<p><strong>said</strong></p>\n</blockquote>",
    ),
    (
        "```spoiler The ending\nHe **dies**. @**King Hamlet**\n```",
        "<div class=\"spoiler-block\"><div class=\"spoiler-header\">\n<p>The ending</p>\n</div>\
         <div class=\"spoiler-content\" aria-hidden=\"true\">\n<p>He <strong>dies</strong>. \
         <span class=\"user-mention\" data-user-id=\"12\">@King Hamlet</span></p>\n</div></div>",
    ),
    // /me stays text in the HTML (the flag is separate).
    ("/me waves", "<p>/me waves</p>"),
    // Placeholder characters in the input cannot forge a piece.
    ("\u{E000}0\u{E001}", "<p>\u{FFFD}0\u{FFFD}</p>"),
];

#[test]
fn renders_like_zulip() {
    let mut failures = Vec::new();
    for (input, expected) in TABLE {
        let got = html(input);
        if got != *expected {
            failures.push(format!("input {input:?}\n  want {expected:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
fn hash_encoding_matches_zulip() {
    assert_eq!(zulip::hash_encode("a b.c/d%é"), "a.20b.2Ec.2Fd.25.C3.A9");
}

/// The one-line shortcut (`plain_line`) gives exactly what the parser
/// gives, for every string it accepts: random lines over all of printable
/// ASCII (a fixed-seed generator, so failures reproduce), plus edge cases.
#[test]
fn plain_line_shortcut_matches_the_full_renderer() {
    let full = |source: &str| {
        let (text, pieces) = zulip::prepass(source, &Fixture);
        let mut renderer = Renderer { pieces: &pieces, mentions: Mentions::default() };
        let html = renderer.blocks(&text, 0);
        html.trim_end().to_owned()
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
    for refused in
        ["- item", "1. one", "http://x.y", "a *b*", "a `b`", "a @**x**", "a :smile:", "a  "]
    {
        assert_eq!(plain_line(refused), None, "{refused:?}");
    }
}
