//! Times `markdown::render_message` on the typical message of
//! `benches/markdown.rs` (and on the same message with its code block not
//! highlighted, its one-line Rust block alone, highlighted and not, and a 200-line Python
//! block), for comparing two builds of the renderer on a
//! busy machine where a criterion run is not fair: each figure is the
//! fastest of several rounds, so other load mostly drops out, and the
//! ratio of two builds' figures is what to read (an unoptimized build's
//! absolute times are not the release ones).
//!
//! Run: `cargo run --example markdown_timing [-- RENDERS ROUNDS]`
//! (default 2000 renders, 7 rounds).

use std::time::{Duration, Instant};

use natter::markdown::render_message;

#[path = "../benches/common/markdown_inputs.rs"]
mod inputs;
use inputs::{Names, TYPICAL};

/// The same message with its code block not highlighted (`text`): what
/// rendering it costs without the lexer.
const TYPICAL_PLAIN: &str =
    "@**King Hamlet** the build on #**Denmark>ci** is green again :tada: — \
see https://example.com/builds/1234 for the log.\n\n\
The fix was a **one-line** change:\n\n```text\nlet limit = config.limit.max(1);\n```\n\n\
> was it the cache?\n\nNo, the `limit` was zero. Thanks @*backend*!";

const RUST_BLOCK: &str = "```rust\nlet limit = config.limit.max(1);\n```";

/// The same block not highlighted.
const TEXT_BLOCK: &str = "```text\nlet limit = config.limit.max(1);\n```";

fn python_block() -> String {
    let mut s = String::from("```python\n");
    for i in 0..40 {
        s.push_str(&format!("def handler_{i}(request, *args, **kwargs):\n"));
        s.push_str("    \"\"\"Answer one request.\"\"\"\n");
        s.push_str(&format!(
            "    limit = max(int(request.get('limit', {i})), 1)  # at least one\n"
        ));
        s.push_str("    return [x ** 2 for x in range(limit) if x % 3 == 0]\n\n");
    }
    s.push_str("```");
    s
}

/// The fastest of `rounds` rounds of `renders` renders, per render.
fn time(source: &str, renders: u32, rounds: u32) -> Duration {
    // Warm: lexers compiled, tables parsed.
    std::hint::black_box(render_message(source, &Names));
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..renders {
                std::hint::black_box(render_message(std::hint::black_box(source), &Names));
            }
            start.elapsed() / renders
        })
        .min()
        .expect("one round")
}

fn main() {
    let args: Vec<u32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let renders = args.first().copied().unwrap_or(2000);
    let rounds = args.get(1).copied().unwrap_or(7);
    let python = python_block();
    for (name, source, renders) in [
        ("typical", TYPICAL, renders),
        ("typical_plain", TYPICAL_PLAIN, renders),
        ("rust_block", RUST_BLOCK, renders),
        ("text_block", TEXT_BLOCK, renders),
        ("python_200_lines", python.as_str(), (renders / 100).max(1)),
    ] {
        let per = time(source, renders, rounds);
        println!("{name}: {:.1} µs per render", per.as_secs_f64() * 1e6);
    }
}
