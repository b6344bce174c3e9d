//! TeX typeset by KaTeX, as Zulip typesets `$$…$$` and `math` blocks.
//!
//! The `katex` crate runs KaTeX 0.16 (its `renderToString`, with the
//! mhchem extension) in QuickJS. QuickJS needs a real thread stack and
//! keeps its engine per thread, so one dedicated OS thread owns the engine
//! and is fed formulas through a channel; the caller (a coroutine on the
//! send path, or a plain thread) parks on a `may` channel for the answer.
//!
//! Bounds: a formula longer than `MAX_FORMULA_BYTES`, or past a message's
//! `MAX_FORMULAS` / `MAX_TEX_BYTES`, is not typeset (it renders as the
//! `tex-error` span); KaTeX's own `maxExpand` (1000 macro expansions)
//! bounds the work per formula; and a caller waits at most `WAIT` for an
//! answer.

use std::sync::mpsc as std_mpsc;
use std::sync::OnceLock;
use std::time::Duration;

/// A formula longer than this is not typeset.
pub(super) const MAX_FORMULA_BYTES: usize = 2_000;

/// Formulas typeset per message; the rest render as `tex-error`.
pub(super) const MAX_FORMULAS: usize = 100;

/// TeX bytes typeset per message.
pub(super) const MAX_TEX_BYTES: usize = 20_000;

/// How long a caller waits for the KaTeX thread.
const WAIT: Duration = Duration::from_secs(5);

/// The stack of the KaTeX thread (QuickJS recurses on nested input).
const STACK: usize = 16 << 20;

struct Job {
    tex: String,
    display: bool,
    reply: may::sync::mpsc::Sender<Option<String>>,
}

/// A message's allowance of typesetting (`MAX_FORMULAS`,
/// `MAX_TEX_BYTES`).
pub(super) struct Budget {
    formulas: usize,
    bytes: usize,
}

impl Budget {
    pub(super) fn new() -> Budget {
        Budget { formulas: MAX_FORMULAS, bytes: MAX_TEX_BYTES }
    }

    /// KaTeX's HTML for `tex`, or `None` when KaTeX cannot typeset it
    /// (a parse error) or the budget is spent.
    pub(super) fn render(&mut self, tex: &str, display: bool) -> Option<String> {
        if tex.len() > MAX_FORMULA_BYTES || self.formulas == 0 || tex.len() > self.bytes {
            return None;
        }
        self.formulas -= 1;
        self.bytes -= tex.len();
        typeset(tex, display)
    }
}

/// Sends one formula to the KaTeX thread and waits for its answer.
fn typeset(tex: &str, display: bool) -> Option<String> {
    let (reply, answer) = may::sync::mpsc::channel();
    let job = Job { tex: tex.to_owned(), display, reply };
    worker().send(job).ok()?;
    answer.recv_timeout(WAIT).ok().flatten()
}

/// The queue of the KaTeX thread, started on first use.
fn worker() -> &'static std_mpsc::Sender<Job> {
    static QUEUE: OnceLock<std_mpsc::Sender<Job>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = std_mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("katex".into())
            .stack_size(STACK)
            .spawn(move || {
                for job in rx {
                    let html = katex_html(&job.tex, job.display);
                    let _ = job.reply.send(html);
                }
            })
            .expect("the KaTeX thread starts");
        tx
    })
}

/// `katex.renderToString(tex, {displayMode})`, on the KaTeX thread.
fn katex_html(tex: &str, display: bool) -> Option<String> {
    let opts = katex::Opts::builder().display_mode(display).build().ok()?;
    katex::render_with_opts(tex, &opts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/fixtures/katex.json`: `[tex, display, HTML or null]`, written
    /// by KaTeX 0.16.4's own `renderToString` under Node
    /// (`scripts/katex_fixtures.js`).
    #[test]
    fn matches_katex() {
        let fixture = include_str!("../../tests/fixtures/katex.json");
        let cases: Vec<(String, bool, Option<String>)> = serde_json::from_str(fixture).unwrap();
        assert!(cases.len() >= 20, "{} cases", cases.len());
        let mut failures = Vec::new();
        for (tex, display, want) in &cases {
            let got = Budget::new().render(tex, *display);
            if &got != want {
                failures.push(format!("{tex:?} {display}\n  want {want:?}\n  got  {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{} differ:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn the_budget_bounds_a_message() {
        let mut budget = Budget::new();
        assert!(budget.render(&"x".repeat(MAX_FORMULA_BYTES + 1), false).is_none());
        for _ in 0..MAX_FORMULAS {
            assert!(budget.render("x", false).is_some());
        }
        assert!(budget.render("x", false).is_none(), "past MAX_FORMULAS");
        let mut budget = Budget::new();
        let big = "x".repeat(MAX_FORMULA_BYTES);
        let typeset = (0..MAX_FORMULAS).filter(|_| budget.render(&big, false).is_some()).count();
        assert_eq!(typeset, MAX_TEX_BYTES / MAX_FORMULA_BYTES);
    }
}
