//! Per-client event queues: what `POST /register` creates and `GET /events`
//! long-polls.
//!
//! A queue belongs to one user and holds the Zulip JSON of the events its
//! client has not acknowledged yet, each with an increasing `id`. A poll
//! names the last id the client has seen; everything up to it is dropped
//! for good, the rest is returned. An empty queue parks the polling
//! coroutine on a may `Semphore` (never an OS thread per poller) until an
//! event is pushed or the heartbeat interval passes, when a `heartbeat`
//! event (with an id) is queued and returned.
//!
//! **Ids a log replay can derive again.** The k-th event (from 0) that
//! mutation `seq` yields for a queue has id `seq × SLOT + k`
//! (`committed_id`), whatever else the queue received: committed events
//! are published in seq order, one mutation's events at a time
//! (`Hub::publish_committed`), so the events of the same mutations,
//! delivered again, get the same ids. An ephemeral event (heartbeat,
//! presence, typing) takes the next id after the newest the queue has
//! queued or its client has acknowledged, within the slot of the newest
//! published seq: below the id the next committed event will have. In
//! the rare case that slot is full (over a thousand ephemeral events to
//! one queue while nothing at all is committed), a heartbeat wakes its
//! poll with no event and other ephemeral events are not queued. A
//! mutation yielding more than `SLOT` events for one queue overflows it
//! (the client registers again). Ids stay below 2^53 for 2^43 mutations,
//! so JavaScript clients read them exactly.
//!
//! Queues are ephemeral: never logged as mutations. A queue not polled for
//! `QueueConfig::timeout` is collected; a queue that overflows
//! `max_events` is dropped (its client re-registers). What a queue must
//! keep across a crash — its registration and how far its client has
//! acknowledged — is journaled by the queue ticker (`journal`); its events
//! are derived again from the log at recovery (`restore`, then the log's
//! tail delivered as it was, then `drop_acknowledged`), with the same ids.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxBuildHasher;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::QueueConfig;
use crate::state::{MessageId, RealmId, UserId};
use crate::view::channel::Subscribers;

/// The `client_capabilities` natter honours, as sent to `POST /register`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Notification settings may be null (inherit) in subscriptions.
    pub notification_settings_null: bool,
    /// One `delete_message` event with `message_ids` for bulk deletions.
    pub bulk_message_deletion: bool,
    /// `avatar_url` may be omitted from users.
    pub user_avatar_url_field_optional: bool,
    /// Typing events for channel topics.
    pub stream_typing_notifications: bool,
    /// The `user_settings` object (no legacy settings events/fields).
    pub user_settings_object: bool,
    /// Linkifiers with `url_template`.
    pub linkifier_url_template: bool,
    /// `realm_users` may be incomplete.
    pub user_list_incomplete: bool,
    /// Deactivated groups are included.
    pub include_deactivated_groups: bool,
    /// Archived channels are included.
    pub archived_channels: bool,
    /// The empty topic is sent as `""` (else as the realm's display name).
    pub empty_topic_name: bool,
    /// Presence events in the `presences` (id-keyed) form.
    pub simplified_presence_events: bool,
}

impl Capabilities {
    /// Every capability name, for validation.
    pub const NAMES: [&'static str; 11] = [
        "notification_settings_null",
        "bulk_message_deletion",
        "user_avatar_url_field_optional",
        "stream_typing_notifications",
        "user_settings_object",
        "linkifier_url_template",
        "user_list_incomplete",
        "include_deactivated_groups",
        "archived_channels",
        "empty_topic_name",
        "simplified_presence_events",
    ];

    /// Sets a capability by name; false if the name is unknown.
    pub fn set(&mut self, name: &str, value: bool) -> bool {
        let slot = match name {
            "notification_settings_null" => &mut self.notification_settings_null,
            "bulk_message_deletion" => &mut self.bulk_message_deletion,
            "user_avatar_url_field_optional" => &mut self.user_avatar_url_field_optional,
            "stream_typing_notifications" => &mut self.stream_typing_notifications,
            "user_settings_object" => &mut self.user_settings_object,
            "linkifier_url_template" => &mut self.linkifier_url_template,
            "user_list_incomplete" => &mut self.user_list_incomplete,
            "include_deactivated_groups" => &mut self.include_deactivated_groups,
            "archived_channels" => &mut self.archived_channels,
            "empty_topic_name" => &mut self.empty_topic_name,
            "simplified_presence_events" => &mut self.simplified_presence_events,
            _ => return false,
        };
        *slot = value;
        true
    }
}

/// `include_subscribers` of `POST /register`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum IncludeSubscribers {
    /// No subscriber lists.
    #[default]
    No,
    /// Full lists.
    Yes,
    /// Full lists for small channels, `partial_subscribers` for big ones.
    Partial,
}

/// What a queue's client asked for at register time; decides which events
/// reach it and how they are rendered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueOptions {
    /// Event types to deliver; `None` = every type.
    pub event_types: Option<BTreeSet<String>>,
    /// Message events only for messages matching this narrow (JSON as
    /// sent, normalized; `[]` = all).
    pub narrow: Value,
    /// Message events for every public channel, subscribed or not.
    pub all_public_streams: bool,
    /// HTML content (true) or Markdown source (false).
    pub apply_markdown: bool,
    /// Null `avatar_url` where the client can compute a gravatar.
    pub client_gravatar: bool,
    /// The client's capabilities.
    pub capabilities: Capabilities,
    /// Subscriber lists in subscription events.
    pub include_subscribers: IncludeSubscribers,
    /// `narrow`, parsed against the state at register time (channel and
    /// user names resolved to ids). Not saved: re-parsed at load.
    #[serde(skip)]
    pub narrow_filter: crate::narrow::Narrow,
}

impl QueueOptions {
    /// Whether events of this type go to the queue (heartbeats always do).
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.as_ref().is_none_or(|t| t.contains(event_type))
    }
}

/// One queued event: the JSON members shared by every queue that got the
/// same event, plus this queue's own members (flags, local_message_id…), both as
/// JSON text without the braces. A poll writes `{shared,own,"id":N}`
/// straight into its reply, so neither fan-out nor polling builds, clones
/// or re-serializes any JSON value per queue.
#[derive(Clone, Debug)]
pub struct Queued {
    id: i64,
    shared: Arc<str>,
    own: Option<Arc<str>>,
}

impl Queued {
    fn write(&self, out: &mut String) {
        out.push('{');
        let mut first = true;
        for part in [Some(&*self.shared), self.own.as_deref()].into_iter().flatten() {
            if !part.is_empty() {
                if !first {
                    out.push(',');
                }
                out.push_str(part);
                first = false;
            }
        }
        if !first {
            out.push(',');
        }
        out.push_str("\"id\":");
        // Without the formatting machinery: a long-poll writes one per event.
        if self.id < 0 {
            out.push('-');
        }
        out.push_str(crate::view::json_text::decimal(self.id.unsigned_abs(), &mut [0; 20]));
        out.push('}');
    }
}

/// The members of a JSON object, as text without its braces.
pub fn members(map: &Map<String, Value>) -> Arc<str> {
    let text = serde_json::to_string(map).expect("JSON values always serialize");
    Arc::from(&text[1..text.len() - 1])
}

/// An event body ready to be queued.
pub struct Outgoing {
    shared: Body,
    own: Option<Arc<str>>,
}

/// An event map shared by many queues.
type SharedMap = Arc<Map<String, Value>>;

/// The shared part of an event: a map (serialized once per deliver call
/// for all the queues that share it) or ready text.
enum Body {
    Map(Arc<Map<String, Value>>),
    Text(Arc<str>),
}

impl Outgoing {
    /// An event with no per-queue fields.
    pub fn shared(shared: Arc<Map<String, Value>>) -> Self {
        Outgoing { shared: Body::Map(shared), own: None }
    }

    /// An event with per-queue fields (`own` is merged over `shared`).
    pub fn with_own(shared: Arc<Map<String, Value>>, own: &Map<String, Value>) -> Self {
        Outgoing { shared: Body::Map(shared), own: (!own.is_empty()).then(|| members(own)) }
    }

    /// An event already as text: the shared members (`members`) and this
    /// queue's own, if any.
    pub fn text(shared: Arc<str>, own: Option<Arc<str>>) -> Self {
        Outgoing { shared: Body::Text(shared), own }
    }
}

/// The events one poll returns, as the JSON array text of the reply.
#[derive(Debug, PartialEq, Eq)]
pub struct Polled {
    /// `[{…},…]`.
    pub json: String,
    /// How many events.
    pub count: usize,
    /// The newest event's id, if any.
    pub newest: Option<i64>,
}

impl Polled {
    /// The events as values (tests, the journal at clean shutdown).
    pub fn values(&self) -> Vec<Value> {
        serde_json::from_str(&self.json).expect("queued events are JSON")
    }
}

/// One client's queue.
#[derive(Debug)]
pub struct Queue {
    /// The handle clients send back.
    pub id: String,
    /// Owner; nobody else may poll or delete it.
    pub user: UserId,
    /// The owner's realm.
    pub realm: RealmId,
    /// What the client registered for.
    pub options: QueueOptions,
    /// Unacknowledged events, ascending ids.
    events: VecDeque<Queued>,
    /// The id of the newest event ever queued (`first_id(floor_seq) - 1`
    /// before the first).
    last_id: i64,
    /// The highest id the client has acknowledged; ephemeral ids go above
    /// it too.
    acked: i64,
    /// Events of mutations with seq <= this are already in the state the
    /// client fetched at register time, so they are skipped.
    floor_seq: u64,
    /// The seq of the newest committed events queued (`floor_seq` before
    /// any), and how many of its events were queued: the next one's `k`.
    slot_seq: u64,
    slot_k: u64,
    /// Set by a heartbeat that found no free id: the parked poll returns
    /// with no event.
    bare_wake: bool,
    /// Last poll start or end; collection counts from here.
    last_active: Instant,
    /// The parked poller's wake-up, if one is parked.
    waiter: Option<Arc<may::sync::Semphore>>,
    /// When the current (or last) poll started; its heartbeat is due one
    /// heartbeat interval later.
    poll_started: Instant,
    /// Set when the queue is deleted, expired or overflowed.
    dead: bool,
    /// A queue restored with events the journal kept (a clean restart):
    /// its events of mutations up to this seq came from the journal, not
    /// the log, and the journal keeps them while the queue holds them. 0
    /// for any other queue.
    restored_through: u64,
}

impl Queue {
    /// Whether events of mutation `seq` are new to this queue's client.
    fn accepts_seq(&self, seq: Option<u64>) -> bool {
        seq.is_none_or(|s| s > self.floor_seq)
    }

    fn ack(&mut self, last_event_id: i64) {
        self.acked = self.acked.max(last_event_id);
        while self.events.front().is_some_and(|e| e.id <= last_event_id) {
            self.events.pop_front();
        }
    }

    /// The id the next event of mutation `seq` (published in seq order)
    /// takes; `None` if the mutation already filled its slot.
    fn committed_id(&self, seq: u64) -> Option<i64> {
        let k = if seq == self.slot_seq { self.slot_k } else { 0 };
        (k < SLOT).then(|| committed_id(seq, k))
    }

    /// The id an ephemeral event would take now that mutation `published`
    /// is the newest published: the next after everything queued or
    /// acknowledged, if that is below the next committed event's id.
    fn ephemeral_id(&self, published: u64) -> Option<i64> {
        // (`acked` is whatever the client sent, up to `i64::MAX`.)
        let id = self.last_id.max(self.acked).saturating_add(1);
        (id < first_id(published.max(self.slot_seq) + 1)).then_some(id)
    }

    /// Queues an event with the id `committed_id` or `ephemeral_id` gave
    /// (for mutation `seq`, or ephemeral).
    fn push(&mut self, seq: Option<u64>, id: i64, shared: Arc<str>, own: Option<Arc<str>>) {
        if let Some(seq) = seq {
            if seq != self.slot_seq {
                self.slot_seq = seq;
                self.slot_k = 0;
            }
            self.slot_k += 1;
        }
        self.last_id = id;
        self.events.push_back(Queued { id, shared, own });
        if let Some(waiter) = self.waiter.take() {
            // The woken poll is still under way until its coroutine runs:
            // the queue must not count as idle meanwhile (on a busy box,
            // or with short test timeouts, that wait can be long).
            self.last_active = Instant::now();
            waiter.post();
        }
    }

    fn render_all(&self) -> Polled {
        self.render_below(i64::MAX)
    }

    /// The queued events with ids below `limit`.
    fn render_below(&self, limit: i64) -> Polled {
        let events = || self.events.iter().take_while(|e| e.id < limit);
        let size: usize = events().map(|e| e.shared.len() + 32).sum();
        let mut json = String::with_capacity(2 + size);
        json.push('[');
        let mut count = 0;
        let mut newest = None;
        for event in events() {
            if count > 0 {
                json.push(',');
            }
            event.write(&mut json);
            count += 1;
            newest = Some(event.id);
        }
        json.push(']');
        Polled { json, count, newest }
    }

    fn expired(&self, now: Instant, timeout: Duration) -> bool {
        self.dead || (self.waiter.is_none() && now.duration_since(self.last_active) > timeout)
    }
}

/// A queue behind its own short lock (held only for in-memory work).
pub type QueueCell = Mutex<Queue>;

/// Why a queue operation failed.
#[derive(Debug, PartialEq, Eq)]
pub enum QueueError {
    /// Unknown, expired, overflowed, deleted or another user's queue.
    BadQueue,
    /// The user already holds the maximum number of queues.
    TooManyQueues(usize),
}

#[derive(Default)]
struct Registry {
    /// FxHash, not SipHash (looked up on every long-poll and every
    /// delivery): the ids are the server's own, with a random part, so
    /// nobody can choose keys that collide.
    by_id: HashMap<String, Arc<QueueCell>, FxBuildHasher>,
    by_user: HashMap<UserId, Vec<Arc<QueueCell>>, FxBuildHasher>,
    /// The `all_public_streams` queues of each realm: every public
    /// channel's message looks for them, and walking (and locking) every
    /// queue of the server per message for the few that are was
    /// proportional to the users online.
    all_public: HashMap<RealmId, Vec<Arc<QueueCell>>, FxBuildHasher>,
}

impl Registry {
    fn insert(&mut self, id: String, user: UserId, cell: Arc<QueueCell>) {
        self.by_user.entry(user).or_default().push(Arc::clone(&cell));
        let (realm, all_public) = {
            let q = cell.lock();
            (q.realm, q.options.all_public_streams)
        };
        if all_public {
            self.all_public.entry(realm).or_default().push(Arc::clone(&cell));
        }
        self.by_id.insert(id, cell);
    }

    fn remove(&mut self, id: &str) {
        let Some(cell) = self.by_id.remove(id) else { return };
        let user = {
            let mut q = cell.lock();
            q.dead = true;
            if let Some(w) = q.waiter.take() {
                w.post();
            }
            q.user
        };
        if let Some(list) = self.by_user.get_mut(&user) {
            list.retain(|c| !Arc::ptr_eq(c, &cell));
            if list.is_empty() {
                self.by_user.remove(&user);
            }
        }
        let (realm, all_public) = {
            let q = cell.lock();
            (q.realm, q.options.all_public_streams)
        };
        if let Some(list) = self.all_public.get_mut(&realm).filter(|_| all_public) {
            list.retain(|c| !Arc::ptr_eq(c, &cell));
            if list.is_empty() {
                self.all_public.remove(&realm);
            }
        }
    }
}

/// Every live queue of the server.
pub struct Queues {
    config: QueueConfig,
    /// Read-locked by fan-out and polls, write-locked only to add or remove
    /// a queue; never held across a wait.
    registry: RwLock<Registry>,
    /// `local_id`s of messages being sent, by message id, until the
    /// message event reaches the sender's queue.
    local_ids: Mutex<HashMap<MessageId, (String, String)>>,
    /// Counts for monitoring.
    pub figures: QueueFigures,
    /// The newest mutation whose events are being or have been delivered
    /// (`Hub` sets it, in seq order): the slot ephemeral ids come from.
    published: AtomicU64,
    /// Held by whoever delivers events (`delivering`): one publish call
    /// at a time, and the ticker's heartbeats.
    delivery: Mutex<()>,
}

/// What the queues have done since start, for monitoring.
#[derive(Default)]
pub struct QueueFigures {
    /// Events put into queues (one per queue an event went to).
    pub queued: AtomicU64,
    /// Queues dropped because they overflowed `max_events`.
    pub overflowed: AtomicU64,
    /// Queues collected after going unpolled for the timeout.
    pub expired: AtomicU64,
    /// Unacknowledged events thrown away with overflowed or expired queues.
    pub events_dropped: AtomicU64,
}

/// Ids each mutation's slot holds: committed events of mutation `seq` have
/// ids from `seq × SLOT`.
pub const SLOT: u64 = 1024;

/// The id of the `k`-th event mutation `seq` yields for a queue.
pub fn committed_id(seq: u64, k: u64) -> i64 {
    i64::try_from(seq * SLOT + k).expect("seq below 2^43")
}

/// The first id of mutation `seq`'s slot; a queue registered at `seq`
/// starts after `first_id(seq) - 1`, its `last_event_id`.
pub fn first_id(seq: u64) -> i64 {
    committed_id(seq, 0)
}

impl Queues {
    /// No queues yet.
    pub fn new(config: QueueConfig) -> Self {
        Queues {
            config,
            registry: RwLock::new(Registry::default()),
            local_ids: Mutex::new(HashMap::new()),
            figures: QueueFigures::default(),
            published: AtomicU64::new(0),
            delivery: Mutex::new(()),
        }
    }

    /// Held while one publish call delivers its events (and while the
    /// ticker queues heartbeats), so the events of one mutation reach a
    /// queue with no other event between them: the next one's id is
    /// taken for granted (`committed_id`). Uncontended on the send path
    /// (the committer publishes in seq order, one at a time); only an
    /// ephemeral publish or a tick can meet it.
    pub fn delivering(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.delivery.lock()
    }

    /// Records that the events of mutation `seq` are being delivered (all
    /// earlier mutations' are): called in seq order by the hub, and at
    /// start-up with the recovered seq.
    pub fn set_published(&self, seq: u64) {
        self.published.fetch_max(seq, Ordering::Relaxed);
    }

    /// The limits and timings in force.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Creates a queue for `user`; events of mutations up to `floor_seq`
    /// are skipped (they are in the state the client is about to fetch).
    pub fn create(
        &self,
        user: UserId,
        realm: RealmId,
        options: QueueOptions,
        floor_seq: u64,
    ) -> Result<String, QueueError> {
        let mut registry = self.registry.write();
        // The user's idle queues do not count against the limit (the
        // server-wide sweep runs in the background, not here).
        let now = Instant::now();
        let expired: Vec<String> = registry
            .by_user
            .get(&user)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let q = c.lock();
                q.expired(now, self.config.timeout).then(|| q.id.clone())
            })
            .collect();
        for id in expired {
            registry.remove(&id);
        }
        let held = registry.by_user.get(&user).map_or(0, Vec::len);
        if held >= self.config.max_per_user {
            return Err(QueueError::TooManyQueues(self.config.max_per_user));
        }
        let id = new_queue_id();
        let queue = Queue {
            id: id.clone(),
            user,
            realm,
            options,
            events: VecDeque::new(),
            last_id: first_id(floor_seq) - 1,
            acked: -1,
            floor_seq,
            slot_seq: floor_seq,
            slot_k: 0,
            bare_wake: false,
            last_active: Instant::now(),
            waiter: None,
            poll_started: Instant::now(),
            dead: false,
            restored_through: 0,
        };
        registry.insert(id.clone(), user, Arc::new(Mutex::new(queue)));
        Ok(id)
    }

    /// The live queue `id` if `user` owns it.
    fn owned(&self, id: &str, user: UserId) -> Result<Arc<QueueCell>, QueueError> {
        let cell = self.registry.read().by_id.get(id).cloned().ok_or(QueueError::BadQueue)?;
        let expired = {
            let q = cell.lock();
            if q.user != user {
                return Err(QueueError::BadQueue);
            }
            q.expired(Instant::now(), self.config.timeout)
        };
        if expired {
            self.registry.write().remove(id);
            return Err(QueueError::BadQueue);
        }
        Ok(cell)
    }

    /// Deletes `user`'s queue `id` (`DELETE /events`).
    pub fn delete(&self, id: &str, user: UserId) -> Result<(), QueueError> {
        self.owned(id, user)?;
        self.registry.write().remove(id);
        Ok(())
    }

    /// `GET /events`: drops events up to `last_event_id`, then returns the
    /// rest; if there are none (and `dont_block` is false) parks until one
    /// arrives — a heartbeat, at the latest, which `tick` queues once the
    /// poll has waited the heartbeat interval. The park has no timeout of
    /// its own: 10,000 parked polls then cost no timers at all.
    pub fn poll_json(
        &self,
        id: &str,
        user: UserId,
        last_event_id: Option<i64>,
        dont_block: bool,
    ) -> Result<Polled, QueueError> {
        let cell = self.owned(id, user)?;
        let mut mine: Option<Arc<may::sync::Semphore>> = None;
        loop {
            let waiter = {
                let mut q = cell.lock();
                if q.dead {
                    return Err(QueueError::BadQueue);
                }
                let now = Instant::now();
                q.last_active = now;
                if let Some(last) = last_event_id {
                    q.ack(last);
                }
                // Another poll of the same queue replaced this one.
                let ours = |w: &Option<Arc<may::sync::Semphore>>| match (&mine, w) {
                    (Some(m), Some(w)) => Arc::ptr_eq(m, w),
                    _ => false,
                };
                let superseded = mine.is_some() && q.waiter.is_some() && !ours(&q.waiter);
                if superseded {
                    return Ok(q.render_all());
                }
                if !q.events.is_empty() || dont_block || std::mem::take(&mut q.bare_wake) {
                    if ours(&q.waiter) {
                        q.waiter = None;
                    }
                    return Ok(q.render_all());
                }
                if mine.is_none() {
                    q.poll_started = now;
                }
                let waiter = Arc::new(may::sync::Semphore::new(0));
                if let Some(old) = q.waiter.replace(Arc::clone(&waiter)) {
                    if !mine.as_ref().is_some_and(|m| Arc::ptr_eq(m, &old)) {
                        old.post();
                    }
                }
                mine = Some(Arc::clone(&waiter));
                waiter
            };
            waiter.wait();
        }
    }

    /// `poll_json`, with the events as values.
    pub fn poll(
        &self,
        id: &str,
        user: UserId,
        last_event_id: Option<i64>,
        dont_block: bool,
    ) -> Result<Vec<Value>, QueueError> {
        self.poll_json(id, user, last_event_id, dont_block).map(|p| p.values())
    }

    /// Ends every queue of `user` (a deactivated account): parked polls
    /// wake, and every later poll gets `BAD_EVENT_QUEUE_ID`.
    pub fn end_user(&self, user: UserId) {
        let mut registry = self.registry.write();
        let ids: Vec<String> = registry
            .by_user
            .get(&user)
            .map(|list| list.iter().map(|c| c.lock().id.clone()).collect())
            .unwrap_or_default();
        for id in ids {
            registry.remove(&id);
        }
    }

    /// The periodic duties, run by a background thread about every
    /// `tick_period`: a heartbeat event for every poll parked for the
    /// heartbeat interval (it wakes the poll), and collection of idle queues.
    pub fn tick(&self) {
        let now = Instant::now();
        let heartbeat = self.config.heartbeat;
        let beat: Arc<str> = Arc::from(r#""type":"heartbeat""#);
        let cells: Vec<Arc<QueueCell>> = self.registry.read().by_id.values().cloned().collect();
        let delivering = self.delivering();
        let published = self.published.load(Ordering::Relaxed);
        for cell in cells {
            let mut q = cell.lock();
            if q.waiter.is_some() && now.duration_since(q.poll_started) >= heartbeat {
                match q.ephemeral_id(published) {
                    Some(id) => q.push(None, id, Arc::clone(&beat), None),
                    None => {
                        // No id free below the next committed event's:
                        // the poll ends with no event instead.
                        q.bare_wake = true;
                        if let Some(waiter) = q.waiter.take() {
                            q.last_active = Instant::now();
                            waiter.post();
                        }
                    }
                }
            }
        }
        drop(delivering);
        self.collect_expired();
    }

    /// How often `tick` should run: a parked poll gets its heartbeat
    /// between 1 and 1.25 heartbeat intervals after it started.
    pub fn tick_period(&self) -> Duration {
        (self.config.heartbeat.min(self.config.timeout) / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(15))
    }

    /// Queues of these users (every queue of each), live ones only.
    pub fn of_users(&self, users: impl IntoIterator<Item = UserId>) -> Vec<Arc<QueueCell>> {
        let registry = self.registry.read();
        let mut out = Vec::new();
        for user in users {
            if let Some(list) = registry.by_user.get(&user) {
                out.extend(list.iter().cloned());
            }
        }
        out
    }

    /// Every live queue of a realm.
    pub fn of_realm(&self, realm: RealmId) -> Vec<Arc<QueueCell>> {
        let registry = self.registry.read();
        registry.by_id.values().filter(|c| c.lock().realm == realm).cloned().collect()
    }

    /// The live `all_public_streams` queues of a realm.
    pub fn of_realm_all_public(&self, realm: RealmId) -> Vec<Arc<QueueCell>> {
        self.registry.read().all_public.get(&realm).cloned().unwrap_or_default()
    }

    /// Pushes a rendered event into each queue for which `render` returns
    /// one. `render` sees the queue (owner, options) under its lock and
    /// must not block. Queues that overflow are dropped.
    pub fn deliver(
        &self,
        seq: Option<u64>,
        targets: &[Arc<QueueCell>],
        mut render: impl FnMut(&Queue) -> Option<Outgoing>,
    ) {
        let mut overflowed = Vec::new();
        let mut queued = 0;
        let published = self.published.load(Ordering::Relaxed);
        // Maps shared by many queues are serialized once: (map, its text).
        let mut texts: Vec<(SharedMap, Arc<str>)> = Vec::new();
        for cell in targets {
            let mut q = cell.lock();
            if q.dead || !q.accepts_seq(seq) {
                continue;
            }
            let id = match seq {
                // `None`: the mutation filled its slot, which overflows
                // the queue like too many events.
                Some(seq) => q.committed_id(seq),
                // Transient by nature: with no id free, not queued.
                None => match q.ephemeral_id(published) {
                    Some(id) => Some(id),
                    None => continue,
                },
            };
            let Some(out) = render(&q) else { continue };
            let room = q.events.len() < self.config.max_events;
            let Some(id) = id.filter(|_| room) else {
                tracing::warn!(
                    "event queue {} of user {} overflowed ({} unacknowledged events, \
                     at most {} per mutation); dropped, its client must register again",
                    q.id,
                    q.user,
                    self.config.max_events,
                    SLOT
                );
                q.dead = true;
                let lost = q.events.len() as u64;
                self.figures.events_dropped.fetch_add(lost, Ordering::Relaxed);
                overflowed.push(q.id.clone());
                continue;
            };
            let shared = match out.shared {
                Body::Text(text) => text,
                Body::Map(map) => match texts.iter().find(|(m, _)| Arc::ptr_eq(m, &map)) {
                    Some((_, text)) => Arc::clone(text),
                    None => {
                        let text = members(&map);
                        texts.push((map, Arc::clone(&text)));
                        text
                    }
                },
            };
            q.push(seq, id, shared, out.own);
            queued += 1;
        }
        self.figures.queued.fetch_add(queued, Ordering::Relaxed);
        if !overflowed.is_empty() {
            let count = overflowed.len() as u64;
            self.figures.overflowed.fetch_add(count, Ordering::Relaxed);
            let mut registry = self.registry.write();
            for id in overflowed {
                registry.remove(&id);
            }
        }
    }

    /// Remembers that the message being committed as `message` carried
    /// `local_id` for queue `queue_id` (the sender's own queue).
    pub fn note_local_id(&self, message: MessageId, queue_id: String, local_id: String) {
        self.local_ids.lock().insert(message, (queue_id, local_id));
    }

    /// Takes the `(queue_id, local_id)` noted for a message, if any.
    pub fn take_local_id(&self, message: MessageId) -> Option<(String, String)> {
        self.local_ids.lock().remove(&message)
    }

    /// Number of queues with a poller parked on them right now.
    pub fn parked(&self) -> usize {
        self.registry.read().by_id.values().filter(|c| c.lock().waiter.is_some()).count()
    }

    /// Number of live queues.
    pub fn len(&self) -> usize {
        self.registry.read().by_id.len()
    }

    /// Whether there are no live queues.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every queue idle for longer than the timeout.
    pub fn collect_expired(&self) {
        let now = Instant::now();
        let expired: Vec<String> = self
            .registry
            .read()
            .by_id
            .iter()
            .filter(|(_, c)| {
                let q = c.lock();
                let expired = q.expired(now, self.config.timeout);
                if expired {
                    let lost = q.events.len() as u64;
                    self.figures.events_dropped.fetch_add(lost, Ordering::Relaxed);
                }
                expired
            })
            .map(|(id, _)| id.clone())
            .collect();
        if !expired.is_empty() {
            let count = expired.len();
            self.figures.expired.fetch_add(count as u64, Ordering::Relaxed);
            let mut registry = self.registry.write();
            for id in expired {
                registry.remove(&id);
            }
            let live = registry.by_id.len();
            tracing::info!("collected {count} idle event queues ({live} live)");
        }
    }

    /// Calls `each` with every live queue as the journal records it:
    /// with every unacknowledged event if `all_events` (a clean shutdown,
    /// after the last commit), else with the events a restored queue still
    /// holds from the journal (`Queue::restored_through`). In id order.
    pub fn journal_view(&self, all_events: bool, mut each: impl FnMut(View<'_>)) {
        let mut cells: Vec<(String, Arc<QueueCell>)> =
            self.registry.read().by_id.iter().map(|(id, c)| (id.clone(), Arc::clone(c))).collect();
        cells.sort_by(|a, b| a.0.cmp(&b.0));
        // Under the delivery lock: every event of the mutations up to
        // `published` has reached its queues.
        let published = {
            let _delivering = self.delivering();
            self.published.load(Ordering::Relaxed)
        };
        for (_, cell) in cells {
            let q = cell.lock();
            if q.dead {
                continue;
            }
            // How far the client has everything: its acknowledgement, or,
            // since events leave a queue only when acknowledged, up to the
            // first event still queued (to every mutation published when
            // none is). An idle queue's need follows the log's head.
            let delivered = q.events.front().map_or(first_id(published + 1), |e| e.id);
            let acked = q.acked.max(delivered - 1);
            let pending = if all_events {
                Some((q.render_all().values(), published.max(q.floor_seq)))
            } else if q.restored_through > 0 {
                let kept = q.render_below(first_id(q.restored_through + 1));
                (kept.count > 0).then(|| (kept.values(), q.restored_through))
            } else {
                None
            };
            each(View {
                id: &q.id,
                user: q.user,
                realm: q.realm,
                options: &q.options,
                floor_seq: q.floor_seq,
                acked,
                pending,
            });
        }
    }

    /// Restores a journaled queue at start-up, before the log's tail is
    /// delivered: it takes the events of mutations from the record's
    /// `need_seq` on (those before are in its fetched state, acknowledged,
    /// or among the events the journal kept). A narrow that no longer
    /// parses (its channel or user is gone) drops the queue: false.
    pub fn restore(
        &self,
        record: QueueRecord,
        reparse: &dyn Fn(UserId, &Value) -> Option<crate::narrow::Narrow>,
    ) -> bool {
        let Some(filter) = reparse(record.user, &record.options.narrow) else { return false };
        let floor = record.need_seq() - 1;
        let mut options = record.options;
        options.narrow_filter = filter;
        let events: VecDeque<Queued> = record
            .pending
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(mut map) => {
                    let id = map.remove("id")?.as_i64()?;
                    Some(Queued { id, shared: members(&map), own: None })
                }
                _ => None,
            })
            .collect();
        let newest = events.back().map_or(i64::MIN, |e| e.id);
        let queue = Queue {
            id: record.id.clone(),
            user: record.user,
            realm: record.realm,
            options,
            events,
            last_id: (first_id(record.floor_seq) - 1).max(record.acked).max(newest),
            acked: record.acked,
            floor_seq: floor,
            slot_seq: floor,
            slot_k: 0,
            bare_wake: false,
            last_active: Instant::now(),
            waiter: None,
            poll_started: Instant::now(),
            dead: false,
            restored_through: record.pending_through,
        };
        self.registry.write().insert(record.id, record.user, Arc::new(Mutex::new(queue)));
        true
    }

    /// Drops from every queue the events its client acknowledged: after
    /// the log's tail was delivered to restored queues, the events of the
    /// acknowledged mutation that came before the acknowledged id.
    pub fn drop_acknowledged(&self) {
        for cell in self.registry.read().by_id.values() {
            let mut q = cell.lock();
            let acked = q.acked;
            q.ack(acked);
        }
    }
}

/// A queue as the journal (`journal`) describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueRecord {
    /// The queue's id.
    pub id: String,
    /// Its owner.
    pub user: UserId,
    /// The owner's realm.
    pub realm: RealmId,
    /// Register options (narrow unparsed).
    pub options: QueueOptions,
    /// The register floor.
    pub floor_seq: u64,
    /// The highest id acknowledged (-1: none).
    pub acked: i64,
    /// Events kept in the journal, and the seq they cover through (0 and
    /// empty when none).
    pub pending: Vec<Value>,
    /// See `journal::Entry::Pending`'s `through_seq`.
    pub pending_through: u64,
}

impl QueueRecord {
    /// The first seq whose events this queue may still lack: after its
    /// floor, after the events kept with it, and no earlier than the
    /// mutation of the id acknowledged (a later event of the same mutation
    /// may be unacknowledged).
    pub fn need_seq(&self) -> u64 {
        need_seq(self.floor_seq, self.acked, self.pending_through)
    }
}

/// `QueueRecord::need_seq` from its parts.
pub fn need_seq(floor_seq: u64, acked: i64, pending_through: u64) -> u64 {
    let acked_seq = u64::try_from(acked.div_euclid(SLOT as i64)).unwrap_or(0);
    (floor_seq.max(pending_through) + 1).max(acked_seq)
}

/// One live queue as the journal sees it (`Queues::journal_view`).
pub struct View<'a> {
    /// The queue's id.
    pub id: &'a str,
    /// Its owner.
    pub user: UserId,
    /// The owner's realm.
    pub realm: RealmId,
    /// Register options.
    pub options: &'a QueueOptions,
    /// Register floor.
    pub floor_seq: u64,
    /// Highest id acknowledged.
    pub acked: i64,
    /// Events from before the floor that the log may not derive (a queue
    /// restored at a clean restart), and the seq they cover through.
    pub pending: Option<(Vec<Value>, u64)>,
}

/// A fresh, unguessable queue id: `<unix seconds>:<random>`, like Zulip's
/// `<server start>:<counter>` shape but not enumerable.
fn new_queue_id() -> String {
    format!("{}:{}", crate::entropy::now(), crate::entropy::api_key())
}

/// The JSON builders' form of `include_subscribers`.
pub fn subscriber_lists(include: IncludeSubscribers) -> Subscribers {
    match include {
        IncludeSubscribers::No => Subscribers::Omit,
        IncludeSubscribers::Yes => Subscribers::All,
        IncludeSubscribers::Partial => Subscribers::Partial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues() -> Queues {
        Queues::new(QueueConfig {
            timeout: Duration::from_millis(200),
            heartbeat: Duration::from_millis(100),
            max_events: 3,
            max_per_user: 2,
        })
    }

    fn ids(events: &[Value]) -> Vec<i64> {
        events.iter().map(|e| e["id"].as_i64().unwrap()).collect()
    }

    fn body(kind: &str) -> Outgoing {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(kind));
        Outgoing::shared(Arc::new(m))
    }

    impl Outgoing {
        fn shared_map(&self) -> Map<String, Value> {
            match &self.shared {
                Body::Map(map) => (**map).clone(),
                Body::Text(_) => Map::new(),
            }
        }
    }

    #[test]
    fn events_are_acknowledged_by_id_and_skipped_below_the_floor() {
        let qs = queues();
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 5).unwrap();
        let targets = qs.of_users([UserId(1)]);
        qs.deliver(Some(5), &targets, |_| Some(body("old")));
        qs.deliver(Some(6), &targets, |_| Some(body("a")));
        qs.deliver(None, &targets, |_| Some(body("b")));
        let got = qs.poll(&id, UserId(1), None, true).unwrap();
        assert_eq!(ids(&got), [6 * 1024, 6 * 1024 + 1]);
        assert_eq!(got[0]["type"], "a");
        let got = qs.poll(&id, UserId(1), Some(6 * 1024), true).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["type"], "b");
        assert_eq!(qs.poll(&id, UserId(2), Some(0), true), Err(QueueError::BadQueue));
    }

    #[test]
    fn text_events_render_with_their_own_members_and_id() {
        let qs = queues();
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let targets = qs.of_users([UserId(1)]);
        let shared: Arc<str> = Arc::from(r#""type":"x","n":[1,{"a":"}"}]"#);
        let own: Arc<str> = Arc::from(r#""flags":["read"]"#);
        qs.deliver(None, &targets, |_| {
            Some(Outgoing::text(Arc::clone(&shared), Some(own.clone())))
        });
        let mut local = Map::new();
        local.insert("local_id".into(), Value::from("1.5"));
        let y = Arc::new(body("y").shared_map());
        qs.deliver(None, &targets, |_| Some(Outgoing::with_own(Arc::clone(&y), &local)));
        let polled = qs.poll_json(&id, UserId(1), None, true).unwrap();
        assert_eq!((polled.count, polled.newest), (2, Some(1)));
        assert_eq!(
            polled.values(),
            vec![
                serde_json::json!({"type": "x", "n": [1, {"a": "}"}], "flags": ["read"], "id": 0}),
                serde_json::json!({"type": "y", "local_id": "1.5", "id": 1}),
            ]
        );
        let empty = qs.poll_json(&id, UserId(1), Some(1), true).unwrap();
        assert_eq!((empty.json.as_str(), empty.count, empty.newest), ("[]", 0, None));
    }

    #[test]
    fn limits_expiry_and_overflow() {
        let qs = queues();
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        assert_eq!(
            qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0),
            Err(QueueError::TooManyQueues(2))
        );
        let targets = qs.of_users([UserId(1)]);
        for _ in 0..4 {
            qs.deliver(None, &targets, |_| Some(body("x")));
        }
        assert_eq!(qs.poll(&a, UserId(1), None, true), Err(QueueError::BadQueue));
        let b = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(qs.poll(&b, UserId(1), None, true), Err(QueueError::BadQueue));
    }

    #[test]
    fn all_public_streams_queues_are_found_by_realm_until_gone() {
        let qs = queues();
        let all = QueueOptions { all_public_streams: true, ..QueueOptions::default() };
        let a = qs.create(UserId(1), RealmId(1), all.clone(), 0).unwrap();
        qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let b = qs.create(UserId(2), RealmId(2), all, 0).unwrap();
        let ids = |realm| -> Vec<String> {
            qs.of_realm_all_public(RealmId(realm)).iter().map(|c| c.lock().id.clone()).collect()
        };
        assert_eq!(ids(1), vec![a.clone()]);
        assert_eq!(ids(2), vec![b]);
        qs.delete(&a, UserId(1)).unwrap();
        assert!(ids(1).is_empty());
        qs.end_user(UserId(2));
        assert!(ids(2).is_empty());
    }

    /// Runs `tick` in the background, as the server's collector does.
    fn ticking(qs: &Arc<Queues>) {
        let weak = Arc::downgrade(qs);
        std::thread::spawn(move || {
            while let Some(qs) = weak.upgrade() {
                qs.tick();
                drop(qs);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    }

    #[test]
    fn an_empty_poll_times_out_with_a_heartbeat() {
        let qs = Arc::new(queues());
        ticking(&qs);
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let got = qs.poll(&id, UserId(1), None, false).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["type"], "heartbeat");
        assert_eq!(got[0]["id"], 0);
    }

    fn roomy() -> Queues {
        Queues::new(QueueConfig { max_events: 5000, max_per_user: 5, ..QueueConfig::default() })
    }

    /// Delivers mutation `seq`'s events in order, as the hub does.
    fn publish(qs: &Queues, seq: u64, events: &[(UserId, &str)]) {
        qs.set_published(seq);
        for (user, kind) in events {
            qs.deliver(Some(seq), &qs.of_users([*user]), |_| Some(body(kind)));
        }
    }

    #[test]
    fn committed_ids_derive_from_seq_whatever_ephemeral_events_came_between() {
        let history: [(u64, &[(UserId, &str)]); 3] = [
            (4, &[(UserId(1), "a"), (UserId(2), "b"), (UserId(1), "c")]),
            (5, &[(UserId(2), "d")]),
            (7, &[(UserId(1), "e")]),
        ];
        let (live, again) = (roomy(), roomy());
        let a = live.create(UserId(1), RealmId(1), QueueOptions::default(), 3).unwrap();
        live.create(UserId(2), RealmId(1), QueueOptions::default(), 3).unwrap();
        let b = again.create(UserId(1), RealmId(1), QueueOptions::default(), 3).unwrap();
        for (seq, events) in history {
            publish(&live, seq, events);
            // Only the live queue sees typing in between.
            live.deliver(None, &live.of_users([UserId(1)]), |_| Some(body("typing")));
            publish(&again, seq, events);
        }
        let got = live.poll(&a, UserId(1), Some(first_id(3) - 1), true).unwrap();
        let kinds: Vec<&str> = got.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["a", "c", "typing", "typing", "e", "typing"]);
        assert_eq!(ids(&got), [4096, 4097, 4098, 4099, 7168, 7169]);
        let committed: Vec<&Value> = got.iter().filter(|e| e["type"] != "typing").collect();
        let derived = again.poll(&b, UserId(1), None, true).unwrap();
        assert_eq!(committed, derived.iter().collect::<Vec<_>>(), "same events, same ids");
        // Ephemeral ids also go above whatever the client acknowledged.
        live.poll(&a, UserId(1), Some(7500), true).unwrap();
        live.deliver(None, &live.of_users([UserId(1)]), |_| Some(body("typing")));
        assert_eq!(ids(&live.poll(&a, UserId(1), None, true).unwrap()), [7501]);
    }

    #[test]
    fn a_full_slot_queues_no_ephemeral_event_and_a_heartbeat_wakes_with_none() {
        let qs = Arc::new(Queues::new(QueueConfig {
            heartbeat: Duration::from_millis(20),
            max_events: 5000,
            ..QueueConfig::default()
        }));
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 2).unwrap();
        let mine = qs.of_users([UserId(1)]);
        for _ in 0..SLOT + 5 {
            qs.deliver(None, &mine, |_| Some(body("typing")));
        }
        let got = qs.poll(&id, UserId(1), None, true).unwrap();
        assert_eq!(got.len() as u64, SLOT);
        assert_eq!(got.last().unwrap()["id"], first_id(3) - 1);
        let last = first_id(3) - 1;
        ticking(&qs);
        let (poller, queue) = (Arc::clone(&qs), id.clone());
        let woken = may::go!(move || poller.poll(&queue, UserId(1), Some(last), false).unwrap());
        assert_eq!(woken.join().unwrap(), Vec::<Value>::new(), "a bare wake, no event");
        // The next mutation opens a new slot.
        publish(&qs, 3, &[(UserId(1), "m")]);
        qs.deliver(None, &mine, |_| Some(body("typing")));
        let got = qs.poll(&id, UserId(1), Some(last), true).unwrap();
        assert_eq!(ids(&got), [first_id(3), first_id(3) + 1]);
    }

    #[test]
    fn an_acknowledgement_past_every_id_leaves_no_ephemeral_room_and_committed_ids_alone() {
        let qs = roomy();
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        assert_eq!(qs.poll(&id, UserId(1), Some(i64::MAX), true).unwrap(), Vec::<Value>::new());
        qs.deliver(None, &qs.of_users([UserId(1)]), |_| Some(body("typing")));
        publish(&qs, 1, &[(UserId(1), "m")]);
        let got = qs.poll(&id, UserId(1), Some(-1), true).unwrap();
        assert_eq!(got, vec![serde_json::json!({"type": "m", "id": 1024})]);
    }

    #[test]
    fn a_mutation_filling_its_slot_overflows_the_queue() {
        let qs = roomy();
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let fits = vec![(UserId(1), "x"); SLOT as usize];
        publish(&qs, 1, &fits);
        assert_eq!(qs.poll(&id, UserId(1), None, true).unwrap().len() as u64, SLOT);
        publish(&qs, 1, &[(UserId(1), "one too many")]);
        assert_eq!(qs.poll(&id, UserId(1), None, true), Err(QueueError::BadQueue));
    }

    #[test]
    fn a_parked_coroutine_wakes_on_push_and_on_heartbeat() {
        let qs = Arc::new(queues());
        ticking(&qs);
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let (poller, queue) = (Arc::clone(&qs), id.clone());
        let heartbeat =
            may::go!(move || poller.poll(&queue, UserId(1), None, false).unwrap()).join().unwrap();
        assert_eq!(heartbeat[0]["type"], "heartbeat");
        // A heartbeat far away: only the push can end this poll.
        let qs = Arc::new(Queues::new(QueueConfig {
            heartbeat: Duration::from_secs(600),
            ..QueueConfig::default()
        }));
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let (poller, queue) = (Arc::clone(&qs), id.clone());
        let parked = may::go!(move || poller.poll(&queue, UserId(1), None, false).unwrap());
        // Deliver only once the coroutine is parked on the queue.
        let cell = qs.registry.read().by_id.get(&id).cloned().unwrap();
        while cell.lock().waiter.is_none() {
            std::thread::yield_now();
        }
        qs.deliver(None, &qs.of_users([UserId(1)]), |_| Some(body("woken")));
        let got = parked.join().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["type"], "woken");
    }
}
