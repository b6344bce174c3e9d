//! Zulip's JSON for one viewer: the floor that `api/` (replies) and
//! `events/` (event payloads) both render through.
//!
//! Each resource is shaped here once — users, messages and their edit
//! history, channels and subscriptions, groups, custom profile fields,
//! bots, personal resources — from `State` and a viewer, with what the
//! viewer may see decided by `state::access`. Nothing here knows `App`, a
//! request or the wire: a function takes state and returns a `Value` or
//! writes JSON text.
//!
//! - `user` — the User resource and avatar URLs.
//! - `user_text` — lists of users written straight to JSON text.
//! - `user_lists` — register's user lists, cut once per users generation.
//! - `message` — the Message resource (`MessageWriter`).
//! - `history` — a message's versions, `edit_history`, the HTML diff.
//! - `channel` — channel (stream) and subscription objects.
//! - `groups` — user groups and group-setting values.
//! - `emoji` — Zulip's server emoji data (`server_emoji_data_url`).
//! - `profile` — custom profile fields.
//! - `bots` — bots as their administrators see them, and `realm_bot` events.
//! - `personal` — muted users and topics, code playgrounds.
//! - `organization` — linkifiers and default channel groups.
//! - `realm` — organization settings (register's and the events').
//! - `json_text` — a JSON object written as text with its members in key
//!   order (the bytes a `serde_json` map gives), and number and string
//!   writers.
//! - `time` — dates as Zulip writes them.

pub mod bots;
pub mod channel;
pub mod emoji;
pub mod files;
pub mod groups;
pub mod history;
pub mod json_text;
pub mod message;
pub mod organization;
pub mod personal;
pub mod profile;
pub mod realm;
pub mod time;
pub mod user;
pub mod user_lists;
pub mod user_text;
