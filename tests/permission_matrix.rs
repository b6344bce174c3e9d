//! The permission matrix: every organization role × every kind of channel
//! × every channel action, against the real handlers (in-process, on a
//! seeded dev realm), with the expected outcome as a table of data.
//!
//! Two tables. In `OUTSIDERS` the five acting users are *not* subscribed
//! to the channel under test (its creator, Cordelia, is), so each cell
//! asks what a role grants by itself. In `SUBSCRIBERS` they were
//! subscribed after Cordelia's message was sent, which is where protected
//! history differs from a private channel. Each cell runs on a fresh
//! realm, so no action's effect leaks into another cell.
//!
//! "delete a message" has no endpoint yet: its cell asks the permission
//! engine function the delete endpoint will use
//! (`access::may_delete_message`, for another user's message).

use std::sync::Arc;

use serde_json::json;

use natter::api::params::Params;
use natter::api::{self, App, Call, Handler, Reply};
use natter::error::ApiResult;
use natter::mutation::build::{self, NewChannel};
use natter::mutation::{ChannelChange, Mutation};
use natter::state::{access, ChannelId, MessageId, User};

const ROLES: [&str; 5] = [
    "desdemona@natter.test", // owner
    "iago@natter.test",      // administrator
    "shiva@natter.test",     // moderator
    "hamlet@natter.test",    // member
    "polonius@natter.test",  // guest
];
const CREATOR: &str = "cordelia@natter.test";
const OTHER: &str = "othello@natter.test";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Public,
    Private,
    ProtectedHistory,
    WebPublic,
    Archived,
}

const ACTIONS: [&str; 8] = [
    "read",
    "send",
    "subscribe self",
    "subscribe others",
    "change metadata",
    "change permissions",
    "archive",
    "delete a message",
];

/// Expected outcome per kind: one row per action, one letter per role
/// (owner, administrator, moderator, member, guest): Y allowed, n refused.
const OUTSIDERS: &[(Kind, [&str; 8])] = &[
    (Kind::Public, ["YYYYn", "YYYYn", "YYYYn", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"]),
    (Kind::Private, ["nnnnn", "nnnnn", "nnnnn", "nnnnn", "YYnnn", "nnnnn", "YYnnn", "nnnnn"]),
    (
        Kind::ProtectedHistory,
        ["nnnnn", "nnnnn", "nnnnn", "nnnnn", "YYnnn", "nnnnn", "YYnnn", "nnnnn"],
    ),
    (Kind::WebPublic, ["YYYYY", "YYYYn", "YYYYn", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"]),
    (Kind::Archived, ["YYYYn", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "YYnnn"]),
];

/// The same, for users subscribed after the channel's message was sent
/// ("subscribe self" is then a no-op success, except when archived).
const SUBSCRIBERS: &[(Kind, [&str; 8])] = &[
    (Kind::Public, ["YYYYY", "YYYYY", "YYYYY", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"]),
    (Kind::Private, ["YYYYY", "YYYYY", "YYYYY", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"]),
    (
        Kind::ProtectedHistory,
        ["nnnnn", "YYYYY", "YYYYY", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"],
    ),
    (Kind::WebPublic, ["YYYYY", "YYYYY", "YYYYY", "YYYYn", "YYnnn", "YYnnn", "YYnnn", "YYnnn"]),
    (Kind::Archived, ["YYYYY", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "nnnnn", "YYnnn"]),
];

struct Realm {
    app: Arc<App>,
    channel: ChannelId,
    message: MessageId,
    _dir: tempfile::TempDir,
}

impl Realm {
    /// A seeded dev realm plus one channel of `kind`, created by Cordelia
    /// (its only subscriber), with one message from her.
    fn new(kind: Kind, subscribed: bool) -> Realm {
        let dir = tempfile::tempdir().unwrap();
        let app = natter::testkit::in_process_dev_app(&dir.path().join("data"), &[]);
        let realm = app.state.realm_by_subdomain("").unwrap();
        let creator = app.state.user_by_email(realm.id, CREATOR).unwrap();
        let private = matches!(kind, Kind::Private | Kind::ProtectedHistory);
        let channel = app
            .committer
            .commit(|s| {
                let new = NewChannel {
                    name: "matrix",
                    description: "",
                    invite_only: private,
                    creator: Some(creator.id),
                    subscribers: &[creator.id],
                };
                let m = build::channel(s, &realm, &new, 0)?;
                let Mutation::CreateChannel { channel, .. } = &m else { unreachable!() };
                let id = channel.id;
                Ok((m, id))
            })
            .unwrap();
        let mut r = Realm { app, channel, message: MessageId(0), _dir: dir };
        let sent = r.call(
            CREATOR,
            api::messages::send,
            &[("type", "stream"), ("to", "matrix"), ("topic", "t"), ("content", "hi")],
            &[],
        );
        r.message = MessageId(sent.unwrap()["id"].as_u64().unwrap());
        if subscribed {
            let subscribers = ROLES
                .iter()
                .map(|email| {
                    let id = r.user(email).id;
                    (id, natter::state::Subscription::new("#76ce90".into()))
                })
                .collect();
            let m = Mutation::Subscribe { channel, subscribers };
            r.app.committer.commit(|_| Ok((m, ()))).unwrap();
        }
        let change = match kind {
            Kind::Public | Kind::Private => None,
            Kind::ProtectedHistory => Some(ChannelChange::Access {
                invite_only: true,
                history_public_to_subscribers: false,
                is_web_public: false,
            }),
            Kind::WebPublic => Some(ChannelChange::Access {
                invite_only: false,
                history_public_to_subscribers: true,
                is_web_public: true,
            }),
            Kind::Archived => Some(ChannelChange::Archived(true)),
        };
        if let Some(change) = change {
            let m = Mutation::UpdateChannel { channel, changes: vec![change] };
            r.app.committer.commit(|_| Ok((m, ()))).unwrap();
        }
        r
    }

    fn user(&self, email: &str) -> User {
        let realm = self.app.state.realm_by_subdomain("").unwrap();
        self.app.state.user_by_email(realm.id, email).unwrap()
    }

    fn call(
        &self,
        email: &str,
        handler: Handler,
        params: &[(&str, &str)],
        path: &[String],
    ) -> ApiResult<Reply> {
        let realm = self.app.state.realm_by_subdomain("").unwrap();
        let mut call = Call {
            realm: realm.into(),
            caller: Some(self.user(email).into()),
            params: Params::from_pairs(params.iter().copied()),
            path: path.to_vec(),
            client: "test".into(),
            raw_fields: Vec::new(),
            sorted_reply: None,
            files: Vec::new(),
        };
        let mut reply = handler(&self.app, &mut call)?;
        // A reply the handler wrote as text (`POST /messages`).
        if let Some(members) = &call.sorted_reply {
            reply.extend(members.to_map());
        }
        Ok(reply)
    }

    /// Whether `email` may do `action` (by calling its endpoint).
    fn allowed(&self, email: &str, action: &str) -> bool {
        let id = self.channel.0.to_string();
        let other = self.user(OTHER).id.0;
        let principals = format!("[{other}]");
        let subs = r#"[{"name": "matrix"}]"#;
        let group = json!({"new": {"direct_members": [other], "direct_subgroups": []}}).to_string();
        let result = match action {
            "read" => self.call(email, api::messages::get_one, &[], &[self.message.0.to_string()]),
            "send" => self.call(
                email,
                api::messages::send,
                &[("type", "stream"), ("to", "matrix"), ("topic", "t"), ("content", "x")],
                &[],
            ),
            "subscribe self" => {
                let r = self.call(
                    email,
                    api::subscriptions::subscribe,
                    &[("subscriptions", subs)],
                    &[],
                );
                // Success must mean subscribed (now or already).
                let me = self.user(email).id;
                r.inspect(|_| {
                    let channel = self.app.state.channels.get(&self.channel).unwrap();
                    assert!(channel.subscribers.contains(&me));
                })
            }
            "subscribe others" => self.call(
                email,
                api::subscriptions::subscribe,
                &[("subscriptions", subs), ("principals", &principals)],
                &[],
            ),
            "change metadata" => self.call(
                email,
                api::streams::update,
                &[("description", "changed")],
                std::slice::from_ref(&id),
            ),
            "change permissions" => self.call(
                email,
                api::streams::update,
                &[("can_send_message_group", &group)],
                std::slice::from_ref(&id),
            ),
            "archive" => self.call(email, api::streams::archive, &[], std::slice::from_ref(&id)),
            "delete a message" => {
                let channel = self.app.state.channels.get(&self.channel).unwrap();
                let sender = self.user(CREATOR).id;
                return access::may_delete_message(
                    &self.app.state,
                    &self.user(email),
                    &channel,
                    sender,
                );
            }
            other => panic!("no action {other}"),
        };
        match result {
            Ok(_) => true,
            Err(e) => {
                assert!(e.status == 400, "{action} by {email}: {e:?}");
                false
            }
        }
    }
}

fn check(table: &[(Kind, [&str; 8])], subscribed: bool) {
    let mut mismatches = Vec::new();
    for (kind, rows) in table {
        for (action, row) in ACTIONS.iter().zip(rows) {
            let got: String = ROLES
                .iter()
                .map(|email| {
                    let realm = Realm::new(*kind, subscribed);
                    if realm.allowed(email, action) {
                        'Y'
                    } else {
                        'n'
                    }
                })
                .collect();
            if got != *row {
                mismatches.push(format!("{kind:?} / {action}: expected {row}, got {got}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "permission matrix differs:\n{}", mismatches.join("\n"));
}

#[test]
fn permission_matrix_for_outsiders() {
    check(OUTSIDERS, false);
}

#[test]
fn permission_matrix_for_subscribers() {
    check(SUBSCRIBERS, true);
}
