//! Presence: who is online, kept in memory only.
//!
//! Presence is ephemeral by design (see ARCHITECTURE.md): clients report
//! it every minute, so logging it would put one durable write per online
//! user per minute into the log for data that is stale within two minutes.
//! After a restart every user shows offline until their client's next
//! report (at most a minute later).
//!
//! The model is Zulip's modern one: per user, the last time a client
//! reported them *active* and the last time any client was *connected*
//! (active or idle). The legacy per-client shape is derived from those two.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::state::{User, UserId};

/// A user whose client has not reported for this long is offline.
pub const OFFLINE_THRESHOLD_SECS: i64 = 140;

/// The client name used in the legacy per-client shape.
const LEGACY_CLIENT: &str = "website";

/// One user's presence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPresence {
    /// Last report with status `active` (UNIX seconds).
    pub active: Option<i64>,
    /// Last report of any status.
    pub connected: i64,
    /// The global update counter when this entry last changed.
    pub update_id: u64,
}

impl UserPresence {
    /// Zulip's legacy status: `active` if the last active report is as
    /// recent as the connection, else `idle`; with its timestamp.
    pub fn legacy_status(&self) -> (&'static str, i64) {
        match self.active {
            Some(a) if a + OFFLINE_THRESHOLD_SECS >= self.connected => ("active", a),
            _ => ("idle", self.connected),
        }
    }

    /// The modern (id-keyed) form.
    pub fn modern(&self) -> Value {
        json!({
            "active_timestamp": self.active.unwrap_or(0),
            "idle_timestamp": self.connected,
        })
    }

    /// The legacy (email-keyed) form: one client plus `aggregated`.
    pub fn legacy(&self) -> Value {
        let (status, timestamp) = self.legacy_status();
        json!({
            LEGACY_CLIENT: {
                "client": LEGACY_CLIENT, "status": status, "timestamp": timestamp, "pushable": false,
            },
            "aggregated": { "client": LEGACY_CLIENT, "status": status, "timestamp": timestamp },
        })
    }
}

/// Every user's presence.
#[derive(Default)]
pub struct Presences {
    /// Held for map lookups and inserts only.
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    users: HashMap<UserId, UserPresence>,
    last_update_id: u64,
}

/// What a report changed.
pub struct Report {
    /// The user's presence after the report.
    pub now: UserPresence,
    /// Whether others should hear about it (came online, or switched
    /// between active and idle); timestamps alone refresh silently.
    pub notify: bool,
}

impl Presences {
    /// Records a report at `now` (UNIX seconds).
    pub fn report(&self, user: UserId, active: bool, now: i64) -> Report {
        let mut inner = self.inner.lock();
        inner.last_update_id += 1;
        let update_id = inner.last_update_id;
        let before = inner.users.get(&user).copied();
        let entry = UserPresence {
            active: if active { Some(now) } else { before.and_then(|b| b.active) },
            connected: now,
            update_id,
        };
        inner.users.insert(user, entry);
        let notify = match before {
            None => true,
            Some(b) => {
                b.connected + OFFLINE_THRESHOLD_SECS < now
                    || b.legacy_status().0 != entry.legacy_status().0
            }
        };
        Report { now: entry, notify }
    }

    /// Makes `user` offline as of `now` (their `presence_enabled` was
    /// turned off): last active and connected just past the offline
    /// threshold. Returns the entry to announce.
    pub fn hide(&self, user: UserId, now: i64) -> UserPresence {
        let mut inner = self.inner.lock();
        inner.last_update_id += 1;
        let past = now - OFFLINE_THRESHOLD_SECS - 1;
        let entry =
            UserPresence { active: Some(past), connected: past, update_id: inner.last_update_id };
        inner.users.insert(user, entry);
        entry
    }

    /// One user's presence.
    pub fn get(&self, user: UserId) -> Option<UserPresence> {
        self.inner.lock().users.get(&user).copied()
    }

    /// The newest update id handed out (0 = none yet).
    pub fn last_update_id(&self) -> u64 {
        self.inner.lock().last_update_id
    }

    /// The `presences` object for `users`: those connected since
    /// `since` (UNIX seconds) and changed after `after_update_id`, keyed by
    /// user id in the modern form (`slim`) or by email in the legacy form.
    pub fn render(&self, users: &[User], since: i64, after_update_id: u64, slim: bool) -> Value {
        let inner = self.inner.lock();
        let mut out = Map::new();
        for user in users {
            let Some(p) = inner.users.get(&user.id) else { continue };
            if p.connected < since || p.update_id <= after_update_id {
                continue;
            }
            if slim {
                out.insert(user.id.0.to_string(), p.modern());
            } else {
                out.insert(user.email.clone(), p.legacy());
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_notify_on_coming_online_and_on_status_changes_only() {
        let p = Presences::default();
        let u = UserId(1);
        assert!(p.report(u, true, 1000).notify, "first report");
        assert!(!p.report(u, true, 1060).notify, "still active");
        let r = p.report(u, false, 1300);
        assert!(r.notify, "active long ago: now idle");
        assert_eq!(r.now.legacy_status(), ("idle", 1300));
        assert!(!p.report(u, false, 1360).notify);
        assert!(p.report(u, false, 2000).notify, "was offline");
        let r = p.report(u, true, 2010);
        assert!(r.notify);
        assert_eq!(r.now.legacy_status(), ("active", 2010));
        assert_eq!(p.last_update_id(), 6);
    }
}
