//! The one integration-test binary: every test starts the real `natter`
//! binary on port 0 with a temp data dir and talks HTTP to it.

/// Harness: TestServer (start/kill/stop/restart) and a raw HTTP client.
mod util;

/// POST /register, GET/DELETE /events, POST /users/me/presence.
mod api_events;
/// POST /messages, GET /messages/{message_id}.
mod api_messages;
/// GET /messages, topics, GET /users/me/subscriptions, GET /streams,
/// POST /messages/flags.
mod api_reading;
/// GET /server_settings, POST /dev_fetch_api_key, auth, routing, HTTP framing.
mod api_server;
/// PATCH /settings, typing, invitations and the small per-user resources.
mod api_settings;
/// GET /users/me, GET /users, GET /users/{user_id}.
mod api_users;
/// The natter-load generator.
mod load;
/// Crash (SIGKILL) and clean restarts, snapshots, torn and corrupt logs.
mod recovery;
/// The register-vs-events harness (Zulip's verify_action), one case per event type.
mod verify_action;
