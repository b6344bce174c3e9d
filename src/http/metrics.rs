//! `GET /metrics`: Prometheus text format (0.0.4, what `promtool check
//! metrics` reads and every Prometheus scrapes). Served on the main
//! listener to requests bearing the `--metrics-token`, and on the
//! `--metrics-listen` address (if set) to anyone who can reach it; off
//! without either.
//!
//! Recorded as requests are answered: requests by method, route pattern
//! and status, and latency by route. Read at each scrape from counters the
//! other layers keep anyway (atomics, no lock on a request's path):
//! connections open, accepted and refused; event queues, parked polls,
//! events queued and queues dropped with their events; commits and
//! writer-lock time; the log's flush latency and commit-group sizes
//! (histograms kept by the `wal` crate) and bytes appended; snapshots
//! written, the newest one's duration, size and age; the start-up
//! recovery time; realms, and users and messages per realm; resident
//! memory.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Metric, Registry};

use super::auth::constant_time_eq;
use super::response::{self, Response};
use super::router::ROUTES;
use super::web;
use super::Service;
use crate::error::ApiError;

/// The path, outside `/api/v1` as Prometheus expects.
pub const PATH: &str = "/metrics";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RealmLabels {
    /// The realm's subdomain (`""` for the root realm).
    realm: String,
}

/// Latency buckets, in seconds: 0.25 ms to about 8 s, doubling.
const LATENCY_SECONDS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024,
    2.048, 4.096, 8.192,
];

/// The methods requests are counted by; anything else is `other`.
const METHODS: [&str; 7] = ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "other"];

/// Distinct statuses counted without a lock per slot; a slot that sees
/// more (rare: each route answers a handful) counts the rest under one.
const STATUSES_PER_SLOT: usize = 8;

/// The request figures, recorded with relaxed atomics in tables laid out
/// once from the routing table: a request costs a few uncontended
/// increments, no hashing of labels and no lock.
struct RequestFigures {
    /// One per entry of [`ROUTES`], then of the web client's routes
    /// ([`web::ROUTES`]), then one per method in [`METHODS`] for requests
    /// no route matched (route `-`).
    slots: Box<[Slot]>,
    /// Each slot's latency histogram: routes that share a pattern (one
    /// per method) share one, as the `route` label does.
    latency_of: Box<[usize]>,
    /// One per distinct pattern, in first-seen order.
    latency: Box<[(&'static str, wal::Histogram)]>,
    /// Counts of statuses past a slot's [`STATUSES_PER_SLOT`].
    overflow: parking_lot::Mutex<rustc_hash::FxHashMap<(usize, u16), u64>>,
}

/// One (method, route)'s counts by status: `status` 0 is a free cell.
#[derive(Default)]
struct Slot {
    statuses: [(AtomicU16, AtomicU64); STATUSES_PER_SLOT],
}

impl RequestFigures {
    fn new() -> Self {
        let slots = (0..ROUTES.len() + web::ROUTES.len() + METHODS.len())
            .map(|_| Slot::default())
            .collect();
        let mut patterns: Vec<&'static str> = Vec::new();
        let latency_of = ROUTES
            .iter()
            .map(|r| r.pattern)
            .chain(web::ROUTES.iter().map(|&(_, pattern)| pattern))
            .chain(METHODS.iter().map(|_| "-"))
            .map(|pattern| {
                patterns.iter().position(|&p| p == pattern).unwrap_or_else(|| {
                    patterns.push(pattern);
                    patterns.len() - 1
                })
            })
            .collect();
        let latency = patterns.into_iter().map(|p| (p, wal::Histogram::new(LATENCY_SECONDS)));
        RequestFigures {
            slots,
            latency_of,
            latency: latency.collect(),
            overflow: parking_lot::Mutex::default(),
        }
    }

    /// The slot's method and route labels.
    fn labels(&self, slot: usize) -> (&'static str, &'static str) {
        let web_slot = slot.wrapping_sub(ROUTES.len());
        match (ROUTES.get(slot), web::ROUTES.get(web_slot)) {
            (Some(route), _) => (route.method, route.pattern),
            (None, Some(&web_route)) => web_route,
            (None, None) => (METHODS[web_slot - web::ROUTES.len()], "-"),
        }
    }

    fn observe(&self, method: &str, route: Option<usize>, status: u16, seconds: f64) {
        let slot = route.unwrap_or_else(|| {
            let unrouted = ROUTES.len() + web::ROUTES.len();
            unrouted + METHODS.iter().position(|&m| m == method).unwrap_or(METHODS.len() - 1)
        });
        self.latency[self.latency_of[slot]].1.observe(seconds);
        for (held, count) in &self.slots[slot].statuses {
            let current = match held.load(Ordering::Relaxed) {
                0 => match held.compare_exchange(0, status, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => status,
                    Err(other) => other,
                },
                other => other,
            };
            if current == status {
                count.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        *self.overflow.lock().entry((slot, status)).or_insert(0) += 1;
    }

    /// Every (slot, status, count) counted so far, in slot order.
    fn counts(&self) -> Vec<(usize, u16, u64)> {
        let mut out = Vec::new();
        for (slot, cells) in self.slots.iter().enumerate() {
            for (held, count) in &cells.statuses {
                let n = count.load(Ordering::Relaxed);
                if n > 0 {
                    out.push((slot, held.load(Ordering::Relaxed), n));
                }
            }
        }
        out.extend(self.overflow.lock().iter().map(|(&(slot, status), &n)| (slot, status, n)));
        out.sort_unstable();
        out
    }
}

/// `http_requests`, by method, route and status.
#[derive(Clone)]
struct Requests(Arc<RequestFigures>);

impl std::fmt::Debug for Requests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Requests")
    }
}

impl EncodeMetric for Requests {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (slot, status, n) in self.0.counts() {
            let (method, route) = self.0.labels(slot);
            let labels = RequestLabels { method, route, status };
            encoder.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&n, None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// `http_request_duration_seconds`, by route.
#[derive(Clone)]
struct Latency(Arc<RequestFigures>);

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Latency")
    }
}

impl EncodeMetric for Latency {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (route, histogram) in self.0.latency.iter() {
            let figures = histogram.figures();
            if figures.count > 0 {
                encode_histogram(encoder.encode_family(&RouteLabels { route })?, &figures)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Writes `figures` (cumulative buckets, as `wal` keeps them).
fn encode_histogram(
    mut encoder: MetricEncoder,
    figures: &wal::HistogramFigures,
) -> Result<(), std::fmt::Error> {
    // The encoder sums the buckets itself and writes `+Inf` for
    // `f64::MAX`: hand it each bucket's own count.
    let mut below = 0;
    let buckets: Vec<(f64, u64)> = figures
        .buckets
        .iter()
        .map(|&(bound, cumulative)| {
            let own = cumulative - below;
            below = cumulative;
            (if bound.is_finite() { bound } else { f64::MAX }, own)
        })
        .collect();
    encoder.encode_histogram::<NoLabelSet>(figures.sum, figures.count, &buckets, None)
}

/// A counter whose total another layer keeps: set at each scrape.
#[derive(Clone, Debug, Default)]
struct Total(Arc<AtomicU64>);

impl Total {
    fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

impl EncodeMetric for Total {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_counter::<NoLabelSet, _, u64>(&self.0.load(Ordering::Relaxed), None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// A histogram another layer keeps (the `wal` crate's): copied at each
/// scrape.
#[derive(Clone, Debug, Default)]
struct Copied(Arc<parking_lot::Mutex<Option<wal::HistogramFigures>>>);

impl Copied {
    fn set(&self, figures: wal::HistogramFigures) {
        *self.0.lock() = Some(figures);
    }
}

impl EncodeMetric for Copied {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let held = self.0.lock();
        let empty = wal::HistogramFigures { sum: 0.0, count: 0, buckets: vec![(f64::INFINITY, 0)] };
        encode_histogram(encoder, held.as_ref().unwrap_or(&empty))
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Read at each scrape.
#[derive(Default)]
struct Readings {
    queues: Gauge,
    parked: Gauge,
    events_queued: Total,
    queues_overflowed: Total,
    queues_expired: Total,
    events_dropped: Total,
    in_flight: Gauge,
    connections_open: Gauge,
    connections_accepted: Total,
    connections_refused: Total,
    seq: Gauge,
    realms: Gauge,
    users: Gauge,
    messages: Gauge,
    realm_users: Family<RealmLabels, Gauge>,
    realm_messages: Family<RealmLabels, Gauge>,
    commits: Gauge,
    lock_seconds: Gauge<f64, AtomicU64>,
    sync_seconds: Copied,
    group_records: Copied,
    log_bytes: Total,
    snapshots: Total,
    snapshot_seconds: Gauge<f64, AtomicU64>,
    snapshot_bytes: Gauge,
    snapshot_timestamp: Gauge,
    snapshot_age: Gauge,
    recovery_seconds: Gauge<f64, AtomicU64>,
    rss_bytes: Gauge,
}

/// The registry and the request metrics.
pub struct Metrics {
    /// `None`: not served on the main listener (only on `--metrics-listen`).
    token: Option<String>,
    registry: Registry,
    requests: Arc<RequestFigures>,
    readings: Readings,
}

impl Metrics {
    /// Metrics served on the main listener to `token` (if any).
    pub fn new(token: Option<String>) -> Self {
        let mut registry = Registry::with_prefix("natter");
        let requests = Arc::new(RequestFigures::new());
        let readings = Readings::default();
        registry.register("http_requests", "Requests answered", Requests(requests.clone()));
        registry.register(
            "http_request_duration_seconds",
            "Time from a request read to its reply, by route (long-polls count their wait)",
            Latency(requests.clone()),
        );
        let r = &readings;
        fn add(registry: &mut Registry, name: &str, help: &str, metric: impl Metric) {
            registry.register(name, help, metric);
        }
        let reg = &mut registry;
        add(reg, "event_queues", "Live event queues", r.queues.clone());
        add(reg, "parked_polls", "Long-polls waiting for events", r.parked.clone());
        add(reg, "events_queued", "Events put into event queues", r.events_queued.clone());
        add(
            reg,
            "event_queues_overflowed",
            "Event queues dropped for holding too many unacknowledged events",
            r.queues_overflowed.clone(),
        );
        add(
            reg,
            "event_queues_expired",
            "Event queues collected after going unpolled for the time-out",
            r.queues_expired.clone(),
        );
        add(
            reg,
            "events_dropped",
            "Unacknowledged events thrown away with overflowed or expired queues",
            r.events_dropped.clone(),
        );
        add(reg, "requests_in_flight", "Requests being answered", r.in_flight.clone());
        add(reg, "connections_open", "Client connections open", r.connections_open.clone());
        add(
            reg,
            "connections_accepted",
            "Client connections accepted",
            r.connections_accepted.clone(),
        );
        add(
            reg,
            "connections_refused",
            "Client connections refused past --max-connections",
            r.connections_refused.clone(),
        );
        add(reg, "applied_seq", "The last change applied (log seq)", r.seq.clone());
        add(reg, "realms", "Organizations", r.realms.clone());
        add(reg, "users", "Accounts, bots included, in every realm", r.users.clone());
        add(reg, "messages", "Messages stored, in every realm", r.messages.clone());
        add(reg, "realm_users", "Accounts, bots included, by realm", r.realm_users.clone());
        add(reg, "realm_messages", "Messages stored, by realm", r.realm_messages.clone());
        add(reg, "commits", "Changes committed since start", r.commits.clone());
        add(
            reg,
            "writer_lock_held_seconds",
            "Time commits held the writer lock since start",
            r.lock_seconds.clone(),
        );
        add(
            reg,
            "log_fsync_duration_seconds",
            "Duration of each fdatasync of the write-ahead log",
            r.sync_seconds.clone(),
        );
        add(
            reg,
            "log_commit_group_records",
            "Records each log flush made durable (the size of each commit group)",
            r.group_records.clone(),
        );
        add(
            reg,
            "log_appended_bytes",
            "Bytes appended to the write-ahead log since start",
            r.log_bytes.clone(),
        );
        add(reg, "snapshots_written", "Snapshots written since start", r.snapshots.clone());
        add(
            reg,
            "snapshot_duration_seconds",
            "How long the newest snapshot written since start took",
            r.snapshot_seconds.clone(),
        );
        add(reg, "snapshot_size_bytes", "Size of the newest snapshot", r.snapshot_bytes.clone());
        add(
            reg,
            "snapshot_timestamp_seconds",
            "When the newest snapshot was written (Unix time; 0 if there is none)",
            r.snapshot_timestamp.clone(),
        );
        add(
            reg,
            "snapshot_age_seconds",
            "Seconds since the newest snapshot was written (0 if there is none)",
            r.snapshot_age.clone(),
        );
        add(
            reg,
            "recovery_seconds",
            "How long start-up took to recover the state (snapshot and log replay)",
            r.recovery_seconds.clone(),
        );
        add(
            reg,
            "process_resident_memory_bytes",
            "Resident memory of the process",
            r.rss_bytes.clone(),
        );
        Metrics { token, registry, requests, readings }
    }

    /// Counts one answered request: `route` is its position in the
    /// routing table, `None` if no route matched.
    pub fn observe(&self, method: &str, route: Option<usize>, status: u16, seconds: f64) {
        self.requests.observe(method, route, status, seconds);
    }

    /// Whether the main listener serves `GET /metrics`.
    pub fn on_main_listener(&self) -> bool {
        self.token.is_some()
    }

    /// The main listener's reply to `GET /metrics` with `authorization`.
    pub fn answer(&self, service: &Service, authorization: Option<&[u8]>) -> Response {
        let token = authorization
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| h.trim().strip_prefix("Bearer "))
            .map(str::trim);
        let allowed = match (token, &self.token) {
            (Some(given), Some(wanted)) => constant_time_eq(given.as_bytes(), wanted.as_bytes()),
            _ => false,
        };
        if !allowed {
            return response::error(&ApiError::unauthorized(
                "GET /metrics needs Authorization: Bearer <the --metrics-token>",
            ));
        }
        self.render(service)
    }

    /// The metrics, read now, in Prometheus' text format.
    pub fn render(&self, service: &Service) -> Response {
        self.read(service);
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            return response::error(&ApiError::internal());
        }
        let mut reply = Response::json(200, classic_text(&text).into_bytes());
        reply.head = Some(Box::new(response::Head {
            content_type: "text/plain; version=0.0.4; charset=utf-8".into(),
            headers: Vec::new(),
        }));
        reply
    }

    /// Sets every reading from the state and counters of `service`.
    fn read(&self, service: &Service) {
        let app = &service.app;
        let r = &self.readings;
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let queues = &app.hub.realtime().queues;
        r.queues.set(count(queues.len()));
        r.parked.set(count(queues.parked()));
        let q = &queues.figures;
        r.events_queued.set(q.queued.load(Ordering::Relaxed));
        r.queues_overflowed.set(q.overflowed.load(Ordering::Relaxed));
        r.queues_expired.set(q.expired.load(Ordering::Relaxed));
        r.events_dropped.set(q.events_dropped.load(Ordering::Relaxed));
        r.in_flight.set(count(service.health.in_flight()));
        let c = &service.connections;
        r.connections_open.set(count(c.open.load(Ordering::Relaxed)));
        r.connections_accepted.set(c.accepted.load(Ordering::Relaxed));
        r.connections_refused.set(c.refused.load(Ordering::Relaxed));
        r.seq.set(int(app.state.applied_seq()));
        r.realms.set(count(app.state.realms.len()));
        r.users.set(count(app.state.users.len()));
        r.messages.set(count(app.state.messages.len()));
        let mut users_by_realm = rustc_hash::FxHashMap::default();
        for (_, user) in app.state.users.freeze().iter() {
            *users_by_realm.entry(user.realm).or_insert(0usize) += 1;
        }
        let messages_by_realm = app.state.messages.by_realm();
        for (id, realm) in app.state.realms.freeze().iter() {
            let labels = RealmLabels { realm: realm.string_id.clone() };
            let users = users_by_realm.get(id).copied().unwrap_or(0);
            r.realm_users.get_or_create(&labels).set(count(users));
            let messages = messages_by_realm.iter().find(|(r, _)| r == id).map_or(0, |(_, n)| *n);
            r.realm_messages.get_or_create(&labels).set(count(messages));
        }
        let (commits, held) = app.committer.lock_figures();
        r.commits.set(int(commits));
        r.lock_seconds.set(held.as_secs_f64());
        let log = app.committer.log_stats();
        r.sync_seconds.set(log.sync_seconds.figures());
        r.group_records.set(log.group_records.figures());
        r.log_bytes.set(log.appended_bytes());
        let (written, took, size, at) = app.committer.snapshot_figures();
        r.snapshots.set(written);
        r.snapshot_seconds.set(took.as_secs_f64());
        r.snapshot_bytes.set(int(size));
        r.snapshot_timestamp.set(int(at));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        r.snapshot_age.set(if at == 0 { 0 } else { int(now.saturating_sub(at)) });
        r.recovery_seconds.set(app.recovery.as_secs_f64());
        r.rss_bytes.set(resident_bytes().map_or(0, int));
    }
}

/// The `--metrics-listen` listener's handler: `GET /metrics` without a
/// token, 404 for everything else.
pub struct MetricsOnly(pub Arc<Service>);

impl super::conn::Handler for MetricsOnly {
    type Session = ();

    fn handle(&self, req: &super::conn::Request<'_>, _: &mut ()) -> Response {
        let path = req.target.split('?').next().unwrap_or("");
        match (&self.0.metrics, req.method) {
            (Some(metrics), "GET" | "HEAD") if path == PATH => metrics.render(&self.0),
            _ => response::error(&ApiError::not_found("Only GET /metrics is served here")),
        }
    }
}

/// The classic Prometheus text format of the encoder's OpenMetrics text:
/// a counter's `HELP` and `TYPE` name its samples (`…_total`), and there
/// is no `# EOF`. Histograms and gauges read the same in both.
fn classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len() + 256);
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(held) = help.replace(line) {
                out.push_str(held);
                out.push('\n');
            }
            continue;
        }
        let counter = line
            .strip_prefix("# TYPE ")
            .and_then(|rest| rest.strip_suffix(" counter"))
            .filter(|name| !name.ends_with("_total"));
        match (help.take(), counter) {
            (Some(held), Some(name)) => {
                let text = held.strip_prefix("# HELP ").and_then(|h| h.strip_prefix(name));
                out.push_str(&format!("# HELP {name}_total{}\n", text.unwrap_or("")));
                out.push_str(&format!("# TYPE {name}_total counter\n"));
                continue;
            }
            (Some(held), _) => {
                out.push_str(held);
                out.push('\n');
            }
            (None, Some(name)) => {
                out.push_str(&format!("# TYPE {name}_total counter\n"));
                continue;
            }
            (None, None) => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The process's resident memory, from `/proc/self/statm` (Linux).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_slot_and_status_past_the_lock_free_cells() {
        let figures = RequestFigures::new();
        let get = ROUTES.iter().position(|r| r.method == "GET").unwrap();
        // More distinct statuses than a slot holds without its lock.
        let statuses: Vec<u16> = (0..STATUSES_PER_SLOT as u16 + 3).map(|i| 400 + i).collect();
        for &status in &statuses {
            figures.observe("GET", Some(get), status, 0.001);
        }
        figures.observe("GET", Some(get), 400, 0.001);
        figures.observe("BREW", None, 404, 20.0);
        figures.observe("DELETE", None, 405, 0.000_1);
        // The web client's routes follow the API's.
        figures.observe("GET", Some(ROUTES.len()), 200, 0.001);
        let counts = figures.counts();
        let for_get: Vec<(u16, u64)> =
            counts.iter().filter(|c| c.0 == get).map(|&(_, s, n)| (s, n)).collect();
        let mut expected: Vec<(u16, u64)> = statuses.iter().map(|&s| (s, 1)).collect();
        expected[0].1 = 2;
        assert_eq!(for_get, expected);
        let unrouted = ROUTES.len() + web::ROUTES.len();
        let web: Vec<_> = counts
            .iter()
            .filter(|c| (ROUTES.len()..unrouted).contains(&c.0))
            .map(|&(slot, status, n)| (figures.labels(slot), status, n))
            .collect();
        assert_eq!(web, [(("GET", "/"), 200, 1)]);
        let unmatched: Vec<_> = counts
            .iter()
            .filter(|c| c.0 >= unrouted)
            .map(|&(slot, status, n)| (figures.labels(slot), status, n))
            .collect();
        assert_eq!(unmatched, [(("DELETE", "-"), 405, 1), (("other", "-"), 404, 1)]);
        let of = |slot: usize| &figures.latency[figures.latency_of[slot]];
        assert_eq!(of(get).1.figures().count, statuses.len() as u64 + 1);
        let unmatched = of(unrouted);
        assert_eq!((unmatched.0, unmatched.1.figures().count), ("-", 2));
        // Routes sharing a pattern (one per method) share a histogram.
        let (one, other) = (0..ROUTES.len())
            .flat_map(|i| (i + 1..ROUTES.len()).map(move |j| (i, j)))
            .find(|&(i, j)| ROUTES[i].pattern == ROUTES[j].pattern)
            .unwrap();
        assert_eq!(figures.latency_of[one], figures.latency_of[other]);
        assert_ne!(figures.latency_of[get], figures.latency_of[unrouted]);
    }

    #[test]
    fn counters_are_named_by_their_samples_in_the_classic_format() {
        let open = "# HELP natter_http_requests Requests answered.\n\
                    # TYPE natter_http_requests counter\n\
                    natter_http_requests_total{status=\"200\"} 1\n\
                    # HELP natter_users Accounts.\n\
                    # TYPE natter_users gauge\n\
                    natter_users 14\n\
                    # EOF\n";
        assert_eq!(
            classic_text(open),
            "# HELP natter_http_requests_total Requests answered.\n\
             # TYPE natter_http_requests_total counter\n\
             natter_http_requests_total{status=\"200\"} 1\n\
             # HELP natter_users Accounts.\n\
             # TYPE natter_users gauge\n\
             natter_users 14\n"
        );
    }
}
