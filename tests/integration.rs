//! The one integration-test binary: every test starts the real `natter`
//! binary on port 0 with a temp data dir and talks HTTP to it.

/// Harness: TestServer (start/kill/stop/restart) and a raw HTTP client.
mod util;

/// POST /messages, GET /messages/{message_id}.
mod api_messages;
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
