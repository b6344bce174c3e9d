//! Command-line options → validated `Config`, in two stages: clap parses the
//! raw `Cli`, then `Cli::resolve` checks and converts it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;

/// natter: a team chat server that speaks the Zulip REST API.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    /// Address to listen on; port 0 picks a free port (printed at start-up).
    #[arg(long, default_value = "127.0.0.1:9991")]
    pub listen: String,

    /// Directory holding the write-ahead log and snapshots.
    #[arg(long, default_value = "natter-data", global = true)]
    pub data_dir: PathBuf,

    /// Development mode: enables POST /api/v1/dev_fetch_api_key and, on the
    /// first start with an empty data dir, seeds a dev realm and prints
    /// every account's email and API key. Never use in production.
    #[arg(long)]
    pub dev: bool,

    /// When a write is acknowledged: `always` (fdatasync before every reply,
    /// group-committed), `never` (no fsync: a crash can lose writes the OS
    /// had not flushed), or `interval:<ms>` (fsync every <ms>: a crash can
    /// lose up to that much). Only `always` keeps "a 2xx reply means on disk".
    #[arg(long, default_value = "always")]
    pub fsync: String,

    /// Write a snapshot after this many logged changes (0 = only at clean
    /// shutdown) instead of by log size (the default: see
    /// --snapshot-log-ratio). Snapshots bound restart time and let the log
    /// be trimmed.
    #[arg(long)]
    pub snapshot_every: Option<u64>,

    /// Write a snapshot once the log written since the last one is this
    /// fraction of the last snapshot's size (and at least
    /// --snapshot-min-log-mib): restart replays at most about this much
    /// log per byte of snapshot, and encoding snapshots costs a share of
    /// the CPU that does not grow with the data. A log byte costs a
    /// restart 1-3x what a snapshot byte costs, so 0.25 adds at most
    /// ≈ 25-75% to the snapshot's load time, and snapshots take ≈ 5% of a
    /// core while sending flat out at 10M messages.
    #[arg(long, default_value_t = 0.25)]
    pub snapshot_log_ratio: f64,

    /// The fewest MiB of log between two snapshots.
    #[arg(long, default_value_t = 16)]
    pub snapshot_min_log_mib: u64,

    /// The fewest seconds from the end of one snapshot to the next.
    #[arg(long, default_value_t = 10)]
    pub snapshot_min_interval_secs: u64,

    /// Log segment size in bytes before rotating to a new file.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    pub segment_bytes: u64,

    /// With --fsync always: microseconds the log waits for more writers
    /// before a sync while several are active (0: sync at once).
    #[arg(long, default_value_t = 100)]
    pub commit_gather_us: u64,

    /// HTTP worker threads (default: number of CPUs).
    #[arg(long)]
    pub workers: Option<usize>,

    /// Most heavy reads (narrows no index answers, searches) in the reader
    /// pool at once; more get 429 RATE_LIMIT_HIT.
    #[arg(long, default_value_t = 16)]
    pub max_heavy_reads: usize,

    /// A read that tests at most this many candidate messages one by one
    /// (the shortest index list of its narrow: an absent search word has
    /// none) is light: it runs in the reader threads' light lane, never
    /// refused; past it, the read is heavy and goes to the bounded heavy
    /// lane. 0: every read an index does not answer exactly is heavy.
    #[arg(long, default_value_t = 1_000)]
    pub light_read_candidates: usize,

    /// Host name clients use to reach the server, for realm URLs and
    /// subdomain routing (`<realm>.<host>`); default: the listen address.
    #[arg(long)]
    pub host: Option<String>,

    /// Largest accepted request body, in bytes, after chunked decoding
    /// (413 beyond).
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Largest uploaded file, in MiB (register's
    /// `max_file_upload_size_mib`); an upload route's request body may be
    /// this plus 64 KiB of multipart framing, streamed to disk.
    #[arg(long, default_value_t = 25)]
    pub max_file_upload_mib: u64,

    /// Most MiB of uploaded files one user may hold (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub upload_quota_user_mib: u64,

    /// Most MiB of uploaded files one organization may hold (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub upload_quota_realm_mib: u64,

    /// Seconds after its upload that a file no message (nor scheduled
    /// message) references is deleted; Zulip's default is five weeks.
    #[arg(long, default_value_t = 5 * 7 * 24 * 3600)]
    pub unclaimed_upload_grace_secs: u64,

    /// Most request headers (431 beyond).
    #[arg(long, default_value_t = 64)]
    pub max_headers: usize,

    /// Largest request head, request line and headers, in bytes (431 beyond).
    #[arg(long, default_value_t = 16 * 1024)]
    pub max_head_bytes: usize,

    /// Longest a started request head may take to arrive, and longest a
    /// request body or a reply may go without progress, in milliseconds
    /// (then 408, or the connection is dropped for a reply).
    #[arg(long, default_value_t = 10_000)]
    pub read_timeout_ms: u64,

    /// How long a keep-alive connection may wait for its next request, in
    /// milliseconds. A request being answered (a long-poll) is not idle.
    #[arg(long, default_value_t = 75_000)]
    pub idle_timeout_ms: u64,

    /// Most open client connections; a new one past this gets a 503.
    #[arg(long, default_value_t = 10_000)]
    pub max_connections: usize,

    /// A diagnostic: log (stderr) every request that takes at least this
    /// many milliseconds from being read to its reply, with its method,
    /// path and clock time; long-polls count their wait. 0 = off.
    #[arg(long, default_value_t = 0)]
    pub slow_request_ms: u64,

    /// Seconds after its last poll before an event queue is garbage-collected.
    #[arg(long, default_value_t = 600)]
    pub event_queue_timeout_secs: u64,

    /// Seconds a long-poll waits before answering with a heartbeat event
    /// (clients time out at 90 s; Zulip uses about 45 s).
    #[arg(long, default_value_t = 45)]
    pub heartbeat_secs: u64,

    /// Most events one queue holds unacknowledged; past it the queue is
    /// dropped and its client must register again.
    #[arg(long, default_value_t = 10_000)]
    pub max_queue_events: usize,

    /// Most event queues one user may hold at once.
    #[arg(long, default_value_t = 64)]
    pub max_queues_per_user: usize,

    /// Rate limits, Zulip's model: `on` (the defaults), `off` (benchmarks,
    /// load tests), or `on` changed by comma-separated `CLASS=N/SECS`
    /// rules (N requests per SECS seconds), e.g.
    /// `api-by-user=300/60,auth-by-ip=20/60`. Classes: api-by-user (200/60),
    /// api-by-ip (100/60, unauthenticated requests), auth-by-ip (10/60,
    /// fetch_api_key and dev_fetch_api_key), auth-failures-by-account
    /// (5/1800), auth-failures-by-ip (30/1800), signup (10/3600: invitations
    /// and registrations, per user or IP).
    #[arg(long, default_value = "on")]
    pub rate_limit: String,

    /// Serve `GET /metrics` (Prometheus text format) to requests with
    /// `Authorization: Bearer <this token>`; unset: no metrics route.
    #[arg(long)]
    pub metrics_token: Option<String>,

    /// Also serve `GET /metrics`, without a token, on this address (and
    /// nothing else there): for a scraper on a private network or the
    /// loopback interface. Unset: no such listener.
    #[arg(long)]
    pub metrics_listen: Option<String>,

    /// Let web pages of this origin (`scheme://host[:port]`) call the API
    /// with API keys: CORS headers on its requests and answers to its
    /// pre-flights. Unset (the default): no cross-origin access. The web
    /// client's session cookie is never accepted cross-origin.
    #[arg(long)]
    pub cors_origin: Option<String>,

    /// Mark the web client's session cookie `Secure`: for a server that
    /// browsers reach over HTTPS through a TLS-terminating proxy (natter
    /// itself speaks plain HTTP).
    #[arg(long)]
    pub secure_cookies: bool,

    /// On SIGTERM or SIGINT: the longest to wait for requests being
    /// answered (long-polls aside) before the final snapshot. New
    /// requests get 503 meanwhile; a second signal exits at once.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace_secs: u64,

    /// Seconds an outgoing-webhook bot's server has to answer one request
    /// (then the delivery is retried, up to 3 times).
    #[arg(long, default_value_t = 10)]
    pub outgoing_webhook_timeout: u64,

    /// Addresses outgoing-webhook deliveries may reach although they are
    /// loopback, private, link-local or otherwise not public: a
    /// comma-separated list of IP addresses and CIDR blocks, e.g.
    /// `127.0.0.1,10.1.0.0/16,::1` (a bot server on the same machine).
    #[arg(long, default_value = "")]
    pub outgoing_webhook_allow: String,

    /// Threads posting messages to outgoing-webhook bots.
    #[arg(long, default_value_t = 4)]
    pub outgoing_webhook_threads: usize,

    /// Milliseconds before the first retry of a delivery that timed out
    /// or could not connect; each later retry waits twice as long.
    #[arg(long, default_value_t = 1000)]
    pub outgoing_webhook_backoff_ms: u64,

    /// A PEM file of the certificate authorities `https` deliveries trust
    /// instead of the built-in Mozilla roots (bot servers behind a
    /// private CA). Certificates are always verified.
    #[arg(long)]
    pub outgoing_webhook_ca_file: Option<PathBuf>,

    /// Log lines as `text` (`natter: …`) or `json` (one object per line).
    #[arg(long, default_value = "text", global = true)]
    pub log_format: String,

    /// Which events to log, in RUST_LOG syntax (default: $RUST_LOG, else
    /// `info,natter::request=warn`: everything but the line per request;
    /// `info` adds it).
    #[arg(long, global = true)]
    pub log_filter: Option<String>,

    /// An administrative command instead of serving (e.g. `realm create`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Administrative commands run on the data dir, instead of serving it.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check the data dir end to end without changing it: every snapshot's
    /// and log record's checksum, and a replay of the log into a scratch
    /// state. Prints the first problem with its file and offset; exits 0
    /// if there is none, 1 if there is.
    Verify,
    /// Copy the data dir, while a server may be serving it, to a new
    /// directory: the newest snapshot and the log after it, checked as
    /// `verify` does. Restore by starting natter on the copy.
    Backup {
        /// The new directory (must not exist, or be empty).
        #[arg(long)]
        to: PathBuf,
    },
    /// Organizations.
    Realm {
        /// What to do.
        #[command(subcommand)]
        action: RealmCommand,
    },
}

/// `natter realm …`.
#[derive(Debug, clap::Subcommand)]
pub enum RealmCommand {
    /// Create an organization and its first owner, and print the owner's
    /// API key (HTTP Basic password for `<email>:<key>`).
    Create {
        /// Subdomain the realm is served on (`""`: the bare host).
        #[arg(long, default_value = "")]
        subdomain: String,
        /// Organization name.
        #[arg(long)]
        name: String,
        /// The owner's email address.
        #[arg(long)]
        owner_email: String,
        /// The owner's full name.
        #[arg(long)]
        owner_name: String,
        /// Allow public access (Zulip's `enable_spectator_access`):
        /// logged-out visitors may register without credentials and read
        /// the realm's web-public channels.
        #[arg(long)]
        public: bool,
    },
}

/// Validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Listen address (may end in `:0`).
    pub listen: String,
    /// Data directory.
    pub data_dir: PathBuf,
    /// Development mode.
    pub dev: bool,
    /// Log sync policy.
    pub fsync: FsyncPolicy,
    /// When to snapshot (the directory is set from `data_dir` at start-up).
    pub snapshots: SnapshotConfig,
    /// Log segment size.
    pub segment_bytes: u64,
    /// How long group commit waits for more writers while several are
    /// active (`wal::Options::gather`).
    pub commit_gather: Duration,
    /// HTTP worker threads.
    pub workers: usize,
    /// Most heavy reads in the reader pool at once.
    pub max_heavy_reads: usize,
    /// Most candidates a light read tests one by one (0: none).
    pub light_read_candidates: usize,
    /// External host name (no scheme), if given; else the bound address.
    pub external_host: Option<String>,
    /// Request body limit.
    pub max_body_bytes: usize,
    /// Wire limits and time-outs of the HTTP connection loop (its
    /// `max_body_bytes` is the one above).
    pub wire: WireLimits,
    /// Event queue limits and timings.
    pub queues: QueueConfig,
    /// Upload size limit and quotas.
    pub uploads: UploadLimits,
    /// Rate limits; `None` when switched off.
    pub rate_limits: Option<RateLimits>,
    /// The longest shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
    /// The bearer token of `GET /metrics` on the main listener; `None`:
    /// not served there.
    pub metrics_token: Option<String>,
    /// The address of the metrics-only listener, if any.
    pub metrics_listen: Option<String>,
    /// The one other origin allowed to call the API (`--cors-origin`).
    pub cors_origin: Option<String>,
    /// Whether the session cookie is `Secure` (`--secure-cookies`).
    pub secure_cookies: bool,
    /// Outgoing-webhook delivery settings.
    pub outgoing: OutgoingConfig,
}

/// How messages are posted to outgoing-webhook bots.
#[derive(Clone, Debug)]
pub struct OutgoingConfig {
    /// Longest one request may take.
    pub timeout: Duration,
    /// Non-public addresses deliveries may reach anyway: (network, prefix
    /// length) blocks.
    pub allow: Vec<(std::net::IpAddr, u8)>,
    /// Delivery threads.
    pub threads: usize,
    /// Wait before the first retry (doubled for each later one).
    pub backoff: Duration,
    /// The DER certificates of the authorities `https` deliveries trust
    /// (`--outgoing-webhook-ca-file`); empty: the built-in Mozilla roots.
    pub ca_certs: Vec<Vec<u8>>,
}

impl OutgoingConfig {
    /// Parses `--outgoing-webhook-allow`: IP addresses (a block of one)
    /// and `address/prefix` blocks, comma-separated.
    pub fn parse_allow(list: &str) -> Result<Vec<(std::net::IpAddr, u8)>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                let bad = || {
                    format!("--outgoing-webhook-allow: {item:?} is not an address or CIDR block")
                };
                let (addr, prefix) = match item.split_once('/') {
                    Some((addr, prefix)) => (addr, Some(prefix)),
                    None => (item, None),
                };
                let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
                let max = if addr.is_ipv4() { 32 } else { 128 };
                let prefix = match prefix {
                    Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
                    None => max,
                };
                Ok((addr, prefix))
            })
            .collect()
    }

    /// Reads `--outgoing-webhook-ca-file`: every certificate of the PEM
    /// file, at least one.
    pub fn read_ca_file(path: &Path) -> Result<Vec<Vec<u8>>, String> {
        let why = |e: &dyn std::fmt::Display| {
            format!("--outgoing-webhook-ca-file {}: {e}", path.display())
        };
        let pem = std::fs::read(path).map_err(|e| why(&e))?;
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(&pem) {
            if let ureq::tls::PemItem::Certificate(cert) = item.map_err(|e| why(&e))? {
                certs.push(cert.der().to_vec());
            }
        }
        if certs.is_empty() {
            return Err(why(&"no certificate in the file"));
        }
        Ok(certs)
    }

    /// Whether `addr` is in one of the allowed blocks.
    pub fn allows(&self, addr: std::net::IpAddr) -> bool {
        self.allow.iter().any(|(net, prefix)| in_block(addr, *net, *prefix))
    }
}

/// Whether `addr` is in the block `net/prefix` (same address family).
fn in_block(addr: std::net::IpAddr, net: std::net::IpAddr, prefix: u8) -> bool {
    use std::net::IpAddr::{V4, V6};
    let (a, n, bits) = match (addr, net) {
        (V4(a), V4(n)) => (u128::from(a.to_bits()), u128::from(n.to_bits()), 32),
        (V6(a), V6(n)) => (a.to_bits(), n.to_bits(), 128),
        _ => return false,
    };
    let host_bits = bits - u32::from(prefix);
    if host_bits >= 128 {
        return true;
    }
    (a >> host_bits) == (n >> host_bits)
}

/// How much may be uploaded.
#[derive(Clone, Copy, Debug)]
pub struct UploadLimits {
    /// Largest file, in MiB.
    pub max_file_mib: u64,
    /// Most bytes of files per user, if limited.
    pub user_quota: Option<u64>,
    /// Most bytes of files per organization, if limited.
    pub realm_quota: Option<u64>,
    /// Seconds after its upload that an unreferenced file is deleted.
    pub unclaimed_grace_secs: u64,
}

impl UploadLimits {
    /// Largest file, in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_mib.saturating_mul(1 << 20)
    }

    /// Largest request body of an upload route: the file and its
    /// multipart framing and text fields.
    pub fn max_body_bytes(&self) -> u64 {
        self.max_file_bytes().saturating_add(UPLOAD_FRAMING)
    }
}

/// Room for an upload's multipart framing and text fields.
pub const UPLOAD_FRAMING: u64 = 64 * 1024;

impl Default for UploadLimits {
    fn default() -> Self {
        UploadLimits {
            max_file_mib: 25,
            user_quota: None,
            realm_quota: None,
            unclaimed_grace_secs: 5 * 7 * 24 * 3600,
        }
    }
}

/// A token bucket's size and refill: `limit` requests per `window`, with
/// bursts of up to `limit`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateRule {
    /// Requests per window (the bucket's size).
    pub limit: u32,
    /// The time in which an empty bucket fills again.
    pub window: Duration,
}

impl RateRule {
    const fn per(limit: u32, secs: u64) -> Self {
        RateRule { limit, window: Duration::from_secs(secs) }
    }
}

/// The rate limits per class of request (Zulip's `RATE_LIMITING_RULES`
/// where it has one).
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimits {
    /// Every authenticated request, per user (Zulip: 200 per minute).
    pub api_by_user: RateRule,
    /// Every unauthenticated request, per client IP.
    pub api_by_ip: RateRule,
    /// Log-in attempts (`/fetch_api_key`, `/dev_fetch_api_key`), per IP.
    pub auth_by_ip: RateRule,
    /// Failed passwords or API keys, per account (Zulip's
    /// `authenticate_by_username`: 5 per 30 minutes).
    pub auth_failures_by_account: RateRule,
    /// Failed passwords or API keys, per client IP.
    pub auth_failures_by_ip: RateRule,
    /// Invitations and sign-ups, per user (or IP when unauthenticated).
    pub signup: RateRule,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            api_by_user: RateRule::per(200, 60),
            api_by_ip: RateRule::per(100, 60),
            auth_by_ip: RateRule::per(10, 60),
            auth_failures_by_account: RateRule::per(5, 1800),
            auth_failures_by_ip: RateRule::per(30, 1800),
            signup: RateRule::per(10, 3600),
        }
    }
}

impl RateLimits {
    /// `--rate-limit`: `off`, `on`, or rules changing the defaults.
    pub fn parse(spec: &str) -> Result<Option<RateLimits>, String> {
        let spec = spec.trim();
        if spec == "off" {
            return Ok(None);
        }
        let mut limits = RateLimits::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty() && *p != "on") {
            let bad = || {
                format!(
                    "--rate-limit: {part:?} is not on, off or CLASS=N/SECS \
                     (N and SECS at least 1)"
                )
            };
            let (class, rule) = part.split_once('=').ok_or_else(bad)?;
            let (n, secs) = rule.split_once('/').ok_or_else(bad)?;
            let n: u32 = n.trim().parse().map_err(|_| bad())?;
            let secs: u64 = secs.trim().parse().map_err(|_| bad())?;
            if n == 0 || secs == 0 {
                return Err(bad());
            }
            let slot = match class.trim() {
                "api-by-user" => &mut limits.api_by_user,
                "api-by-ip" => &mut limits.api_by_ip,
                "auth-by-ip" => &mut limits.auth_by_ip,
                "auth-failures-by-account" => &mut limits.auth_failures_by_account,
                "auth-failures-by-ip" => &mut limits.auth_failures_by_ip,
                "signup" => &mut limits.signup,
                other => return Err(format!("--rate-limit: unknown class {other:?}")),
            };
            *slot = RateRule::per(n, secs);
        }
        Ok(Some(limits))
    }
}

/// When to write snapshots (`persist::schedule::SnapshotPolicy`).
#[derive(Clone, Debug)]
pub struct SnapshotConfig {
    /// A fixed cadence in changes (0 = shutdown only) instead of by log size.
    pub every: Option<u64>,
    /// Log bytes between snapshots per byte of the last snapshot.
    pub log_ratio: f64,
    /// The fewest log bytes between snapshots.
    pub min_log_bytes: u64,
    /// The least time from one snapshot's end to the next.
    pub min_interval: Duration,
}

/// Event queue limits and timings.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// Idle time (since the last poll) before a queue is collected.
    pub timeout: Duration,
    /// How long a long-poll waits before a heartbeat.
    pub heartbeat: Duration,
    /// Most unacknowledged events per queue.
    pub max_events: usize,
    /// Most queues per user.
    pub max_per_user: usize,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            timeout: Duration::from_secs(600),
            heartbeat: Duration::from_secs(45),
            max_events: 10_000,
            max_per_user: 64,
        }
    }
}

/// When writes become durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// fdatasync before each reply (group-committed).
    Always,
    /// Never fsync (benchmarks only).
    Never,
    /// fsync on a timer.
    Interval(Duration),
}

impl FsyncPolicy {
    /// The log's sync mode for this policy.
    pub fn sync_mode(self) -> wal::SyncMode {
        match self {
            FsyncPolicy::Always => wal::SyncMode::Always,
            FsyncPolicy::Never => wal::SyncMode::Never,
            FsyncPolicy::Interval(d) => wal::SyncMode::Interval(d),
        }
    }
}

impl Cli {
    /// Checks the options and builds a `Config`.
    pub fn resolve(self) -> Result<Config, String> {
        let fsync = match self.fsync.as_str() {
            "always" => FsyncPolicy::Always,
            "never" => FsyncPolicy::Never,
            other => match other.strip_prefix("interval:").and_then(|ms| ms.parse::<u64>().ok()) {
                Some(ms) if ms > 0 => FsyncPolicy::Interval(Duration::from_millis(ms)),
                _ => {
                    return Err(format!(
                        "--fsync must be always, never or interval:<ms>, not {other:?}"
                    ))
                }
            },
        };
        if self.segment_bytes < 4096 {
            return Err("--segment-bytes must be at least 4096".into());
        }
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2));
        if workers == 0 {
            return Err("--workers must be at least 1".into());
        }
        if self.max_heavy_reads == 0 {
            return Err("--max-heavy-reads must be at least 1".into());
        }
        if self.max_headers == 0 || self.max_head_bytes < 64 || self.max_connections == 0 {
            return Err(
                "--max-headers and --max-connections must be at least 1, --max-head-bytes at least 64"
                    .into(),
            );
        }
        if self.read_timeout_ms == 0 || self.idle_timeout_ms == 0 {
            return Err("--read-timeout-ms and --idle-timeout-ms must be at least 1".into());
        }
        let wire = WireLimits {
            max_headers: self.max_headers,
            max_head_bytes: self.max_head_bytes,
            max_body_bytes: self.max_body_bytes,
            read_timeout: Duration::from_millis(self.read_timeout_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            max_connections: self.max_connections,
            slow_request: (self.slow_request_ms > 0)
                .then(|| Duration::from_millis(self.slow_request_ms)),
        };
        if self.event_queue_timeout_secs == 0 || self.heartbeat_secs == 0 {
            return Err("--event-queue-timeout-secs and --heartbeat-secs must be at least 1".into());
        }
        if self.max_queue_events == 0 || self.max_queues_per_user == 0 {
            return Err("--max-queue-events and --max-queues-per-user must be at least 1".into());
        }
        if !(self.snapshot_log_ratio.is_finite() && self.snapshot_log_ratio > 0.0) {
            return Err("--snapshot-log-ratio must be a number above 0".into());
        }
        let snapshots = SnapshotConfig {
            every: self.snapshot_every,
            log_ratio: self.snapshot_log_ratio,
            min_log_bytes: self.snapshot_min_log_mib.saturating_mul(1 << 20),
            min_interval: Duration::from_secs(self.snapshot_min_interval_secs),
        };
        let queues = QueueConfig {
            timeout: Duration::from_secs(self.event_queue_timeout_secs),
            heartbeat: Duration::from_secs(self.heartbeat_secs),
            max_events: self.max_queue_events,
            max_per_user: self.max_queues_per_user,
        };
        if self.max_file_upload_mib == 0 {
            return Err("--max-file-upload-mib must be at least 1".into());
        }
        let quota = |mib: u64| (mib > 0).then(|| mib.saturating_mul(1 << 20));
        let uploads = UploadLimits {
            max_file_mib: self.max_file_upload_mib,
            user_quota: quota(self.upload_quota_user_mib),
            realm_quota: quota(self.upload_quota_realm_mib),
            unclaimed_grace_secs: self.unclaimed_upload_grace_secs,
        };
        let rate_limits = RateLimits::parse(&self.rate_limit)?;
        if self.outgoing_webhook_timeout == 0 || self.outgoing_webhook_threads == 0 {
            return Err(
                "--outgoing-webhook-timeout and --outgoing-webhook-threads must be at least 1"
                    .into(),
            );
        }
        let outgoing = OutgoingConfig {
            timeout: Duration::from_secs(self.outgoing_webhook_timeout),
            allow: OutgoingConfig::parse_allow(&self.outgoing_webhook_allow)?,
            threads: self.outgoing_webhook_threads,
            backoff: Duration::from_millis(self.outgoing_webhook_backoff_ms),
            ca_certs: match &self.outgoing_webhook_ca_file {
                Some(path) => OutgoingConfig::read_ca_file(path)?,
                None => Vec::new(),
            },
        };
        Ok(Config {
            outgoing,
            uploads,
            rate_limits,
            shutdown_grace: Duration::from_secs(self.shutdown_grace_secs),
            metrics_token: match self.metrics_token {
                Some(token) if token.trim().len() < 16 => {
                    return Err("--metrics-token must be at least 16 characters".into())
                }
                token => token,
            },
            metrics_listen: self.metrics_listen,
            cors_origin: match self.cors_origin {
                Some(origin) => Some(check_origin(&origin)?),
                None => None,
            },
            secure_cookies: self.secure_cookies,
            queues,
            external_host: self.host,
            listen: self.listen,
            data_dir: self.data_dir,
            dev: self.dev,
            fsync,
            snapshots,
            segment_bytes: self.segment_bytes,
            commit_gather: Duration::from_micros(self.commit_gather_us),
            workers,
            max_heavy_reads: self.max_heavy_reads,
            light_read_candidates: self.light_read_candidates,
            max_body_bytes: self.max_body_bytes,
            wire,
        })
    }
}

/// A `--cors-origin` value as browsers send `Origin`: `http` or `https`,
/// a host and an optional port, nothing after.
fn check_origin(origin: &str) -> Result<String, String> {
    let bad = || format!("--cors-origin must be scheme://host[:port], not {origin:?}");
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or_else(bad)?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    if rest.is_empty() || !rest.chars().all(allowed) {
        return Err(bad());
    }
    Ok(origin.to_ascii_lowercase())
}

/// Limits and time-outs of the connection loop (from `Config`).
#[derive(Clone, Debug)]
pub struct WireLimits {
    /// Most request headers; more is a 431.
    pub max_headers: usize,
    /// Largest request head (request line + headers), in bytes; more is a 431.
    pub max_head_bytes: usize,
    /// Largest request body, after chunked decoding; more is a 413.
    pub max_body_bytes: usize,
    /// Longest a started request head may take to arrive, and longest a
    /// body may go without progress.
    pub read_timeout: Duration,
    /// Longest a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Most open connections; a new one past this gets a 503.
    pub max_connections: usize,
    /// A diagnostic, off by default: log each request that took at least
    /// this long from the moment it was all read to its reply encoded (a
    /// long-poll counts its wait).
    pub slow_request: Option<Duration>,
}

impl Default for WireLimits {
    fn default() -> Self {
        WireLimits {
            max_headers: 64,
            max_head_bytes: 16 * 1024,
            max_body_bytes: 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            max_connections: 10_000,
            slow_request: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_specs() {
        assert_eq!(RateLimits::parse("off"), Ok(None));
        assert_eq!(RateLimits::parse("on"), Ok(Some(RateLimits::default())));
        let changed = RateLimits::parse("on, api-by-user=3/2,signup=1/60").unwrap().unwrap();
        assert_eq!(changed.api_by_user, RateRule::per(3, 2));
        assert_eq!(changed.signup, RateRule::per(1, 60));
        assert_eq!(changed.auth_by_ip, RateLimits::default().auth_by_ip);
        for bad in ["api-by-user=0/60", "api-by-user=5", "api-by-user=5/0", "nope=1/1", "sometimes"]
        {
            assert!(RateLimits::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn cors_origins_are_bare_origins() {
        assert_eq!(
            check_origin("https://App.example.com:8443").unwrap(),
            "https://app.example.com:8443"
        );
        assert_eq!(check_origin("http://[::1]:3000").unwrap(), "http://[::1]:3000");
        for bad in
            ["*", "app.example.com", "https://", "https://a.com/", "https://a.com/x", "ftp://a"]
        {
            assert!(check_origin(bad).is_err(), "{bad} accepted");
        }
    }
}
