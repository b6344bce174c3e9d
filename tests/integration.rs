//! The one integration-test binary: every test starts the real `natter`
//! binary on port 0 with a temp data dir and talks HTTP to it.

/// Harness: TestServer (start/kill/stop/restart) and a raw HTTP client.
mod util;

/// Avatars: upload, serve, redirect, delete, refusals.
mod api_avatars;
/// Bot storage: GET/PUT/DELETE /bot_storage.
mod api_bot_storage;
/// Channel folders: create, update, archive, reorder; channels' folder_id.
mod api_channel_folders;
/// Channels and subscriptions: create, join, leave, properties, PATCH/DELETE streams.
mod api_channels;
/// POST /register, GET/DELETE /events, POST /users/me/presence.
mod api_events;
/// Read receipts and moderation settings, reminders.
mod api_features;
/// User groups: create, edit, members, subgroups, deactivate.
mod api_groups;
/// Heavy reads on the reader pool: no head-of-line blocking, 429 past
/// the bounds.
mod api_heavy_reads;
/// Invitations and registration through the outbox link.
mod api_invites;
/// Messages area: deletion.
mod api_message_delete;
/// Messages area: edits and moves, history.
mod api_message_edit;
/// POST /messages, GET /messages/{message_id}.
mod api_messages;
/// The mobile app: register fields, emoji data, its routes.
mod api_mobile;
/// The Notification Bot: system bots, move and resolve notices.
mod api_move_notifications;
/// Linkifiers, default channels and default channel groups.
mod api_organization;
/// Outgoing-webhook bots: services, triggers, replies, failures, retries,
/// the SSRF guard, deliveries across a crash.
mod api_outgoing_bots;
/// Alert words, drafts, user status, muted users, topic visibility.
mod api_personal;
/// PATCH/DELETE /users/me/profile_data: a user's own custom profile values.
mod api_profile_data;
/// Messages area: emoji reactions.
mod api_reactions;
/// Read state in bulk: flags for a narrow, mark all / channel /
/// topic as read.
mod api_read_state;
/// GET /messages, topics, GET /users/me/subscriptions, GET /streams,
/// POST /messages/flags.
mod api_reading;
/// Navigation views, saved snippets, code playgrounds, push tokens.
mod api_resources;
/// Scheduled messages: create/list/edit/delete, delivery at
/// the time, exactly once across SIGKILL restarts.
mod api_scheduled;
/// GET /server_settings, POST /dev_fetch_api_key, auth, routing, HTTP framing.
mod api_server;
/// A connection's remembered realm and account (`http::Session`, area:
/// the connection loop's per-request costs).
mod api_sessions;
/// PATCH /settings, typing, invitations and the small per-user resources.
mod api_settings;
/// Logged-out spectators: POST /register without credentials (realtime2).
mod api_spectator;
/// Uploaded files: upload, download, attachments, quotas, restarts.
mod api_uploads;
/// GET /users/me, GET /users, GET /users/{user_id}.
mod api_users;
/// Administering users and bots, custom profile fields, `natter realm create`.
mod api_users_admin;
/// Incoming webhooks: the framework and each integration.
mod api_webhooks;
/// Polls and to-do lists: widgets, POST /submessage.
mod api_widgets;
/// The HTTP wire: multipart, chunked, header limits, time-outs, the
/// connection cap, large replies, HTTP/1.0.
mod api_wire;
/// A full disk under a running server: 503 for changes, reads served.
mod disk_full;
/// Handler-level tests of rules no endpoint reaches yet (realm settings).
mod handler_gaps;
/// The architecture's layering, read from `src/`'s `use` lines.
mod layering;
/// The natter-load generator.
mod load;
/// Markdown on the send path: sends render as /messages/render does.
mod markdown_send;
/// Operating natter: health, rate limits, `natter verify`.
mod ops;
/// Role × channel kind × action, against the real handlers; the table is data.
mod permission_matrix;
/// Event queues resumed after SIGKILL under a concurrent poller and
/// sender: the received stream is the committed history.
mod queue_recovery;
/// Crash (SIGKILL) and clean restarts, snapshots, torn and corrupt logs.
mod recovery;
/// Every route of the routing table × eight callers (owner, member,
/// outsider, guest, deactivated, bot, another realm, none); the table is data.
mod route_matrix;
/// register, GET /messages and every event, decoded as the mobile app does.
mod typed_client;
/// The register-vs-events harness (Zulip's verify_action), one case per event type.
mod verify_action;
/// Automatic topic follow/unmute on send (on the verify_action harness).
mod verify_auto_topics;
/// The realm_bots register section and realm_bot events (on the verify_action harness).
mod verify_bots;
/// Register-vs-events cases of read receipts, the moderation channel and
/// reminders (on the verify_action harness).
mod verify_features;
/// Register-vs-events cases for uploaded files.
mod verify_files;
/// Register-vs-events cases of linkifiers and default channels (on the verify_action harness).
mod verify_organization;
/// Register-vs-events cases of the settings area (on the verify_action harness).
mod verify_settings;
/// The web client's files, sign-in, session cookie and CSRF checks, CORS.
mod web_client;
