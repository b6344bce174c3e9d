//! natter: a team chat server that speaks the Zulip REST API.
//!
//! Every durable change is a [`mutation::Mutation`]: handlers validate and
//! build one, [`commit`] logs it to the write-ahead log (the `wal` crate)
//! and hands it to [`apply::apply`], the one function that changes
//! [`state::State`]. Restart replays the log over the newest snapshot
//! through that same function.
//!
//! Layout (see ARCHITECTURE.md for the long form):
//! - `config` — command line → validated `Config`.
//! - `server` — start-up: recover, assemble the `App`, seed, listen.
//! - `http` — transport: natter's own HTTP/1.1 loop in, JSON bytes out; routing table; auth.
//! - `api` — one file per Zulip API area; thin handlers.
//! - `state` — in-memory realm data, sharded; the permission engine.
//! - `mutation` — the list of durable changes.
//! - `apply` — the deterministic state transition (`apply_admin`: its
//!   channel, subscription, user, group and profile-field arms).
//! - `commit` — the write path: lock → log → apply → durable → publish.
//! - `persist` — snapshots and recovery.
//! - `events` — ephemeral event delivery.
//! - `markdown` — message Markdown → HTML with Zulip's extensions
//!   (mentions, channel links, emoji, spoilers), names resolved by the caller.
//! - `narrow` — message filters (`narrow`), parsed and matched.
//! - `entropy` — the clock and random tokens, used before logging.
//! - `realm_create` — `natter realm create`: a realm and its first owner.
//! - `seed` — mutation builders and the `--dev` seed.
//! - `system_bots` — each realm's Notification and Welcome Bot accounts.
//! - `scheduler` — sends scheduled messages when they fall due (the one
//!   reader of the clock for delivery; it commits, `apply` never decides).
//! - `error` — Zulip-shaped API errors.
#![forbid(unsafe_code)]

/// mimalloc as the process allocator, for every binary built on natter
/// (the server, natter-load, tests, benches): fan-out, polls and register
/// allocate and free many small buffers across the may worker threads,
/// where it measured faster than the system allocator (README, real time).
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
pub mod markdown;
pub mod mutation;
pub mod narrow;
pub mod persist;
pub mod realm_create;
pub mod scheduler;
pub mod seed;
pub mod send;
pub mod server;
pub mod state;
#[doc(hidden)]
pub mod testkit;
pub mod view;
