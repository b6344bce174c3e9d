//! The one integration-test binary: every test starts the real `natter`
//! binary on port 0 with a temp data dir and talks HTTP to it.

/// Harness: TestServer (start/kill/stop/restart) and a raw HTTP client.
mod util;

/// POST /register, GET/DELETE /events, POST /users/me/presence.
mod api_events;
/// Messages area (issue #8): reactions and deletion.
mod api_message_delete;
/// POST /messages, GET /messages/{message_id}.
mod api_messages;
mod api_reactions;
/// Read state in bulk (issue #8): flags for a narrow, mark all / channel /
/// topic as read.
mod api_read_state;
/// GET /messages, topics, GET /users/me/subscriptions, GET /streams,
/// POST /messages/flags.
mod api_reading;
/// Scheduled messages (issue #8): create/list/edit/delete, delivery at
/// the time, exactly once across SIGKILL restarts.
mod api_scheduled;
/// GET /server_settings, POST /dev_fetch_api_key, auth, routing, HTTP framing.
mod api_server;
/// GET /users/me, GET /users, GET /users/{user_id}.
mod api_users;
/// The natter-load generator.
mod load;
/// Crash (SIGKILL) and clean restarts, snapshots, torn and corrupt logs.
mod recovery;
