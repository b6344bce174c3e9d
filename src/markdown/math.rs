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
//! bounds the work per formula; and a formula KaTeX has not finished
//! within `DEADLINE` is given up: it renders as the `tex-error` span, and
//! the KaTeX thread, which QuickJS gives no way to interrupt, is retired —
//! it finishes that one formula and exits, dropping what was queued behind
//! it — while a new thread takes the next formulas.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A formula longer than this is not typeset.
pub(super) const MAX_FORMULA_BYTES: usize = 2_000;

/// Formulas typeset per message; the rest render as `tex-error`.
pub(super) const MAX_FORMULAS: usize = 100;

/// TeX bytes typeset per message.
pub(super) const MAX_TEX_BYTES: usize = 20_000;

/// How long one formula may take, queueing and first start of the KaTeX
/// thread included.
const DEADLINE: Duration = Duration::from_secs(5);

/// How often a waiting caller checks that its thread is still in service.
const POLL: Duration = Duration::from_millis(50);

/// How many times one formula is sent to a KaTeX thread.
const SUBMISSIONS: usize = 3;

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
    typeset_within(tex, display, DEADLINE)
}

/// `typeset`, giving up after `deadline` (and retiring the thread that
/// did not answer in time). A formula queued on a thread that another
/// formula's deadline retired is sent again to the new thread, with a new
/// deadline (a few times at most).
fn typeset_within(tex: &str, display: bool, deadline: Duration) -> Option<String> {
    for _ in 0..SUBMISSIONS {
        let (reply, answer) = may::sync::mpsc::channel();
        let job = Job { tex: tex.to_owned(), display, reply };
        let (id, queue) = current_worker();
        if queue.send(job).is_err() {
            retire(id);
            return None;
        }
        let start = Instant::now();
        loop {
            let left = deadline.saturating_sub(start.elapsed());
            if left.is_zero() {
                retire(id);
                return None;
            }
            match answer.recv_timeout(left.min(POLL)) {
                Ok(html) => return html,
                Err(std_mpsc::RecvTimeoutError::Timeout) if in_service(id) => {}
                // Retired before it reached this formula: send it again.
                Err(_) => break,
            }
        }
    }
    None
}

/// The KaTeX thread in service: its number, its queue, and the flag that
/// tells it to stop after the formula it is on.
struct Worker {
    id: u64,
    queue: std_mpsc::Sender<Job>,
    retired: Arc<AtomicBool>,
}

fn workers() -> &'static may::sync::Mutex<Option<Worker>> {
    static CURRENT: OnceLock<may::sync::Mutex<Option<Worker>>> = OnceLock::new();
    CURRENT.get_or_init(|| may::sync::Mutex::new(None))
}

/// The number and queue of the KaTeX thread in service, started when
/// there is none.
fn current_worker() -> (u64, std_mpsc::Sender<Job>) {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let mut current = workers().lock().unwrap_or_else(|e| e.into_inner());
    let worker = current.get_or_insert_with(|| {
        let id = STARTED.fetch_add(1, Ordering::Relaxed);
        let (queue, jobs) = std_mpsc::channel::<Job>();
        let retired = Arc::new(AtomicBool::new(false));
        let flag = retired.clone();
        let spawned =
            std::thread::Builder::new().name("katex".into()).stack_size(STACK).spawn(move || {
                for job in jobs {
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    let html = katex_html(&job.tex, job.display);
                    let _ = job.reply.send(html);
                }
            });
        // A thread that cannot start leaves a queue nobody reads: the
        // send fails, and the formula renders as `tex-error`.
        drop(spawned);
        Worker { id, queue, retired }
    });
    (worker.id, worker.queue.clone())
}

/// Whether thread `id` is the one in service.
fn in_service(id: u64) -> bool {
    let current = workers().lock().unwrap_or_else(|e| e.into_inner());
    current.as_ref().is_some_and(|w| w.id == id)
}

/// Takes thread `id` out of service (unless it already was): it stops
/// after its current formula, and the next formula starts a new thread.
fn retire(id: u64) {
    let mut current = workers().lock().unwrap_or_else(|e| e.into_inner());
    if current.as_ref().is_some_and(|w| w.id == id) {
        if let Some(worker) = current.take() {
            worker.retired.store(true, Ordering::Release);
        }
    }
}

/// Takes the KaTeX thread in service out of service: it exits once its
/// queue is done, and the next formula starts a new thread.
pub(super) fn restart() {
    let mut current = workers().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(worker) = current.take() {
        worker.retired.store(true, Ordering::Release);
    }
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

    /// Macros that expand to some 450,000 symbols within KaTeX's 1,000
    /// expansions: KaTeX would take far longer than the deadline. The
    /// formula is given up as failed, and the next one is typeset by a new
    /// thread while the old one finishes.
    #[test]
    fn a_formula_past_the_deadline_fails_and_the_thread_is_replaced() {
        let mut tex = format!("\\def\\a{{{}}}", "x".repeat(500));
        tex.push_str(&format!("\\def\\b{{{}}}", "\\a".repeat(10)));
        tex.push_str(&format!("\\def\\c{{{}}}", "\\b".repeat(10)));
        tex.push_str(&"\\c".repeat(9));
        assert!(tex.len() <= MAX_FORMULA_BYTES);
        // Started, so that the deadline is spent on the formula alone.
        assert!(typeset("y", false).is_some());
        let (before, _) = current_worker();
        assert_eq!(typeset_within(&tex, false, Duration::from_millis(200)), None);
        let (after, _) = current_worker();
        assert_ne!(before, after, "a new thread");
        let html = typeset("x^2", false).expect("typeset by the new thread");
        assert!(html.starts_with("<span class=\"katex\">"), "{html}");
    }

    #[test]
    fn a_restart_starts_a_new_thread() {
        assert!(typeset("y", false).is_some());
        let (before, _) = current_worker();
        restart();
        let html = typeset("x^2", false).expect("typeset by a new thread");
        assert!(html.starts_with("<span class=\"katex\">"), "{html}");
        let (after, _) = current_worker();
        assert_ne!(before, after, "a new thread");
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
