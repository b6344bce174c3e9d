//! The one integration-test binary: every test starts the real `natter`
//! binary on port 0 with a temp data dir and talks HTTP to it.

/// Harness: TestServer (start/kill/stop/restart) and a raw HTTP client.
mod util;

/// Messages area (issue #8): edits and moves, history, deletion, reactions.
mod api_message_delete;
mod api_message_edit;
/// POST /messages, GET /messages/{message_id}.
mod api_messages;
mod api_reactions;
/// GET /server_settings, POST /dev_fetch_api_key, auth, routing, HTTP framing.
mod api_server;
/// GET /users/me, GET /users, GET /users/{user_id}.
mod api_users;
/// The natter-load generator.
mod load;
/// Crash (SIGKILL) and clean restarts, snapshots, torn and corrupt logs.
mod recovery;
