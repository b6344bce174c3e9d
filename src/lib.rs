//! natter: a team chat server that speaks the Zulip REST API.
//!
//! Every durable change is a [`mutation::Mutation`]: handlers validate and
//! build one, [`commit`] logs it to the write-ahead log (the `wal` crate)
//! and hands it to [`apply::apply`], the one function that changes
//! [`state::State`]. Restart replays the log over the newest snapshot
//! through that same function.
//!
//! Layout, by floor (lowest first; ARCHITECTURE.md has the long form, and
//! `tests/layering.rs` fails when a module uses a higher floor):
//! - `entropy` — the clock and random tokens, used before logging.
//! - `config` — command line → validated `Config`.
//! - `logging` — the log's text and JSON formats and its filter (`tracing`).
//! - `markdown` — message Markdown → HTML with Zulip's extensions
//!   (mentions, channel links, emoji, spoilers), names resolved by the caller.
//! - `state` — in-memory realm data, sharded; the permission rules (`access`).
//! - `error` — Zulip-shaped API errors.
//! - `mutation` — the list of durable changes, their builders (`build`)
//!   and the identity rules they share (`rules`).
//! - `narrow` — message filters, word search, the `GET /messages` query engine.
//! - `view` — Zulip's JSON for one viewer, for replies and events.
//! - `events` — ephemeral event delivery: hub, queues, fan-out, presence.
//! - `apply` — the deterministic state transition.
//! - `persist` — snapshots (and their schedule) and recovery.
//! - `files` — the file store of uploaded bytes (a local directory behind
//!   the `FileStore` trait) and its start-up reconciliation.
//! - `thumbnails` — bounded thumbnails of uploaded images.
//! - `commit` — the write path: lock → log → apply → durable → publish.
//! - `send` — what a send sets off: mentions, topic policies, bot
//!   messages, move notices.
//! - `api` — one file per Zulip API area; handlers only.
//! - `http` — transport: natter's own HTTP/1.1 loop in, JSON bytes out;
//!   routing table; auth.
//! - `outgoing` — posts messages to outgoing-webhook bots on a pool of OS
//!   threads, with the SSRF guard, and posts their answers back.
//! - `scheduler` — sends scheduled messages when they fall due (the one
//!   reader of the clock for delivery; it commits, `apply` never decides).
//! - `seed` — the `--dev` seed.
//! - `realm_create` — `natter realm create`: a realm and its first owner.
//! - `server` — start-up: recover, assemble the `App`, seed, listen.
//! - `testkit` — fixtures for unit tests and benches.
#![forbid(unsafe_code)]

/// mimalloc as the process allocator, for every binary built on natter
/// (the server, natter-load, tests, benches): fan-out, polls and register
/// allocate and free many small buffers across the may worker threads,
/// where it measured faster than the system allocator (docs/PERFORMANCE.md,
/// "Event fan-out and register"). Not in fuzz builds: libFuzzer's memory
/// limits (`-malloc_limit_mb`) see the system allocator's calls only.
#[cfg(not(fuzzing))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod api;
pub mod apply;
pub mod commit;
pub mod config;
pub mod entropy;
pub mod error;
pub mod events;
pub mod files;
pub mod http;
pub mod logging;
pub mod markdown;
pub mod mutation;
pub mod narrow;
pub mod outgoing;
pub mod persist;
pub mod priority;
pub mod realm_create;
pub mod scheduler;
pub mod seed;
pub mod send;
pub mod server;
pub mod state;
#[doc(hidden)]
pub mod testkit;
pub mod thumbnails;
pub mod view;
