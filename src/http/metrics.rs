//! `GET /metrics`: Prometheus text format (0.0.4, what `promtool check
//! metrics` reads and every Prometheus scrapes), for requests bearing the
//! `--metrics-token` (off without it). Requests by method, route pattern
//! and status, latency by route, and at each scrape: event queues and
//! parked polls, requests in flight, commits and writer-lock time, the
//! applied seq, realms, users and messages, and the process's resident
//! memory.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::auth::constant_time_eq;
use super::response::{self, Response};
use crate::api::App;
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

type Latency = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// Latency buckets: 0.25 ms to about 8 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

/// Read at each scrape.
#[derive(Default)]
struct Gauges {
    queues: Gauge,
    parked: Gauge,
    in_flight: Gauge,
    seq: Gauge,
    realms: Gauge,
    users: Gauge,
    messages: Gauge,
    commits: Gauge,
    lock_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    rss_bytes: Gauge,
}

/// The registry and the request metrics.
pub struct Metrics {
    token: String,
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Latency,
    gauges: Gauges,
}

impl Metrics {
    /// Metrics served to `token`.
    pub fn new(token: String) -> Self {
        let mut registry = Registry::with_prefix("natter");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Latency::new_with_constructor(latency_histogram);
        let gauges = Gauges::default();
        registry.register("http_requests", "Requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time from a request read to its reply, by route (long-polls count their wait)",
            latency.clone(),
        );
        let g = &gauges;
        registry.register("event_queues", "Live event queues", g.queues.clone());
        registry.register("parked_polls", "Long-polls waiting for events", g.parked.clone());
        registry.register("requests_in_flight", "Requests being answered", g.in_flight.clone());
        registry.register("applied_seq", "The last change applied (log seq)", g.seq.clone());
        registry.register("realms", "Organizations", g.realms.clone());
        registry.register("users", "Accounts, bots included, in every realm", g.users.clone());
        registry.register("messages", "Messages stored, in every realm", g.messages.clone());
        registry.register("commits", "Changes committed since start", g.commits.clone());
        registry.register(
            "writer_lock_held_seconds",
            "Time commits held the writer lock since start",
            g.lock_seconds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory of the process",
            g.rss_bytes.clone(),
        );
        Metrics { token, registry, requests, latency, gauges }
    }

    /// Counts one answered request.
    pub fn observe(&self, method: &str, route: &'static str, status: u16, seconds: f64) {
        let method = match method {
            "GET" => "GET",
            "POST" => "POST",
            "PATCH" => "PATCH",
            "PUT" => "PUT",
            "DELETE" => "DELETE",
            "HEAD" => "HEAD",
            _ => "other",
        };
        let route = if route.is_empty() { "-" } else { route };
        self.requests.get_or_create(&RequestLabels { method, route, status }).inc();
        self.latency.get_or_create(&RouteLabels { route }).observe(seconds);
    }

    /// The reply to `GET /metrics` with `authorization`.
    pub fn answer(&self, app: &App, in_flight: usize, authorization: Option<&[u8]>) -> Response {
        let token = authorization
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| h.trim().strip_prefix("Bearer "))
            .map(str::trim);
        let allowed = token.is_some_and(|t| constant_time_eq(t.as_bytes(), self.token.as_bytes()));
        if !allowed {
            return response::error(&ApiError::unauthorized(
                "GET /metrics needs Authorization: Bearer <the --metrics-token>",
            ));
        }
        let g = &self.gauges;
        let queues = &app.hub.realtime().queues;
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        g.queues.set(count(queues.len()));
        g.parked.set(count(queues.parked()));
        g.in_flight.set(count(in_flight));
        g.seq.set(i64::try_from(app.state.applied_seq()).unwrap_or(i64::MAX));
        g.realms.set(count(app.state.realms.len()));
        g.users.set(count(app.state.users.len()));
        g.messages.set(count(app.state.messages.len()));
        let (commits, held) = app.committer.lock_figures();
        g.commits.set(i64::try_from(commits).unwrap_or(i64::MAX));
        g.lock_seconds.set(held.as_secs_f64());
        g.rss_bytes.set(resident_bytes().map_or(0, |b| i64::try_from(b).unwrap_or(i64::MAX)));
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
