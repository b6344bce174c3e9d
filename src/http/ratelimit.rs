//! Rate limits, Zulip's model: a token bucket per user (authenticated
//! requests) or per client IP (unauthenticated ones) for each class of
//! request, with stricter classes for log-in attempts, failed credentials
//! and sign-ups (`config::RateLimits`). A request past its budget is
//! answered 429 `RATE_LIMIT_HIT` with `retry-after`, and the `X-RateLimit-*`
//! headers say where a client stands.
//!
//! Buckets live in memory only (a restart forgives everyone), in sharded
//! maps; a full bucket is the same as none, so full ones are dropped when a
//! shard grows.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use super::response::RateHeaders;
use crate::config::{RateLimits, RateRule};
use crate::error::ApiError;

/// The class of a request: which bucket of its caller it draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Any request (per user, or per IP when unauthenticated).
    Api,
    /// `POST /fetch_api_key`, `POST /dev_fetch_api_key`.
    Auth,
    /// Invitations (`POST /invites`, `/invites/multiuse`, a resend) and
    /// registering through one.
    Signup,
    /// `GET /events`, not counted: each poll follows the events the
    /// server delivered, so a busy realm's clients poll faster than any
    /// person clicks, and a refused poll would only delay its events.
    Poll,
}

impl Class {
    /// The class of a routed request, from its method and route pattern.
    pub fn of(method: &str, pattern: &str) -> Class {
        match (method, pattern) {
            (_, "/fetch_api_key" | "/dev_fetch_api_key") => Class::Auth,
            ("GET", "/events") => Class::Poll,
            ("POST", "/invites" | "/invites/multiuse" | "/invites/{invite_id}/resend")
            | ("POST", "/registration/{key}") => Class::Signup,
            _ => Class::Api,
        }
    }
}

/// Whose bucket.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    User(Class, u64),
    Ip(Class, IpAddr),
    /// Failed credentials for an account: realm id and lowercased email.
    FailedAccount(u64, Box<str>),
    FailedIp(IpAddr),
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`, refilled since `at` at `rule`'s rate.
    fn level(&self, rule: RateRule, now: Instant) -> f64 {
        let rate = f64::from(rule.limit) / rule.window.as_secs_f64();
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * rate).min(f64::from(rule.limit))
    }
}

/// Shards of the bucket maps (a request locks one, briefly).
const SHARDS: usize = 16;
/// A shard holding more buckets than this drops its full ones.
const SWEEP_AT: usize = 4096;

/// Where a caller stands with one bucket after a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Standing {
    /// The rule's size.
    pub limit: u32,
    /// Tokens left (after this request, if it passed).
    pub tokens: f64,
    /// Seconds until the bucket is full again.
    pub full_in: f64,
    /// Seconds until one token is there, when there was none for this
    /// request.
    pub retry_after: Option<f64>,
}

impl Standing {
    /// Zulip's headers for it.
    pub fn headers(&self) -> RateHeaders {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        RateHeaders {
            limit: self.limit,
            remaining: self.tokens.max(0.0) as u32,
            reset: (now + self.full_in).ceil() as u64,
            retry_after: self.retry_after.map(|s| s.ceil().max(1.0) as u64),
        }
    }

    /// The 429 for a request that found no token.
    pub fn error(&self) -> ApiError {
        let after = self.retry_after.unwrap_or(0.0);
        ApiError::rate_limited(after)
    }
}

/// The buckets of every caller.
pub struct Limiter {
    rules: RateLimits,
    shards: [Mutex<HashMap<Key, Bucket>>; SHARDS],
}

impl Limiter {
    /// Buckets under `rules`, all full.
    pub fn new(rules: RateLimits) -> Self {
        Limiter { rules, shards: std::array::from_fn(|_| Mutex::new(HashMap::new())) }
    }

    fn rule(&self, class: Class) -> RateRule {
        match class {
            Class::Api | Class::Poll => self.rules.api_by_user,
            Class::Auth => self.rules.auth_by_ip,
            Class::Signup => self.rules.signup,
        }
    }

    /// Takes a token from a user's bucket of `class`.
    pub fn user(&self, class: Class, user: u64) -> Standing {
        self.take(Key::User(class, user), self.rule(class), Instant::now())
    }

    /// Takes a token from an unauthenticated client's bucket of `class`.
    pub fn ip(&self, class: Class, ip: IpAddr) -> Standing {
        let rule = if class == Class::Api { self.rules.api_by_ip } else { self.rule(class) };
        self.take(Key::Ip(class, ip), rule, Instant::now())
    }

    /// Whether credentials for `account` (realm, email) from `ip` may be
    /// checked now: not while either has used up its failures. The
    /// standing of the one that blocks.
    pub fn failures_blocked(
        &self,
        account: Option<(u64, &str)>,
        ip: Option<IpAddr>,
    ) -> Option<Standing> {
        let now = Instant::now();
        let by_ip = ip.map(|ip| (Key::FailedIp(ip), self.rules.auth_failures_by_ip));
        let by_account = account.map(|(realm, email)| {
            (
                Key::FailedAccount(realm, email.to_lowercase().into()),
                self.rules.auth_failures_by_account,
            )
        });
        [by_ip, by_account].into_iter().flatten().find_map(|(key, rule)| {
            let standing = self.peek(&key, rule, now);
            standing.retry_after.is_some().then_some(standing)
        })
    }

    /// Counts failed credentials against `account` and `ip`.
    pub fn failed(&self, account: Option<(u64, &str)>, ip: Option<IpAddr>) {
        let now = Instant::now();
        if let Some(ip) = ip {
            self.take(Key::FailedIp(ip), self.rules.auth_failures_by_ip, now);
        }
        if let Some((realm, email)) = account {
            let key = Key::FailedAccount(realm, email.to_lowercase().into());
            self.take(key, self.rules.auth_failures_by_account, now);
        }
    }

    fn shard(&self, key: &Key) -> &Mutex<HashMap<Key, Bucket>> {
        &self.shards[FxBuildHasher.hash_one(key) as usize % SHARDS]
    }

    /// Takes a token if there is one.
    fn take(&self, key: Key, rule: RateRule, now: Instant) -> Standing {
        let rate = f64::from(rule.limit) / rule.window.as_secs_f64();
        let mut shard = self.shard(&key).lock();
        if shard.len() >= SWEEP_AT && !shard.contains_key(&key) {
            shard.retain(|k, b| b.level(self.rule_of(k), now) < f64::from(self.rule_of(k).limit));
        }
        let full = Bucket { tokens: f64::from(rule.limit), at: now };
        let bucket = shard.entry(key).or_insert(full);
        let level = bucket.level(rule, now);
        let passed = level >= 1.0;
        bucket.tokens = if passed { level - 1.0 } else { level };
        bucket.at = now;
        let tokens = bucket.tokens;
        Standing {
            limit: rule.limit,
            tokens,
            full_in: (f64::from(rule.limit) - tokens) / rate,
            retry_after: (!passed).then(|| (1.0 - tokens) / rate),
        }
    }

    /// Where `key` stands, taking nothing.
    fn peek(&self, key: &Key, rule: RateRule, now: Instant) -> Standing {
        let rate = f64::from(rule.limit) / rule.window.as_secs_f64();
        let tokens =
            self.shard(key).lock().get(key).map_or(f64::from(rule.limit), |b| b.level(rule, now));
        Standing {
            limit: rule.limit,
            tokens,
            full_in: (f64::from(rule.limit) - tokens) / rate,
            retry_after: (tokens < 1.0).then(|| (1.0 - tokens) / rate),
        }
    }

    /// The rule a key's bucket fills by.
    fn rule_of(&self, key: &Key) -> RateRule {
        match key {
            Key::User(class, _) => self.rule(*class),
            Key::Ip(Class::Api, _) => self.rules.api_by_ip,
            Key::Ip(class, _) => self.rule(*class),
            Key::FailedAccount(..) => self.rules.auth_failures_by_account,
            Key::FailedIp(_) => self.rules.auth_failures_by_ip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter(spec: &str) -> Limiter {
        Limiter::new(RateLimits::parse(spec).unwrap().unwrap())
    }

    #[test]
    fn a_bucket_lets_its_limit_through_then_refuses_until_it_refills() {
        let l = limiter("api-by-user=3/60");
        let now = Instant::now();
        let rule = l.rules.api_by_user;
        for left in [2.0, 1.0, 0.0] {
            let s = l.take(Key::User(Class::Api, 7), rule, now);
            assert_eq!((s.tokens, s.retry_after), (left, None));
        }
        let refused = l.take(Key::User(Class::Api, 7), rule, now);
        // One token every 20 s.
        assert_eq!(refused.retry_after, Some(20.0));
        assert_eq!(refused.full_in, 60.0);
        let h = refused.headers();
        assert_eq!((h.limit, h.remaining, h.retry_after), (3, 0, Some(20)));
        // Another user, another bucket.
        assert_eq!(l.take(Key::User(Class::Api, 8), rule, now).retry_after, None);
        // 20 s later one request passes again.
        let later = now + Duration::from_secs(20);
        assert_eq!(l.take(Key::User(Class::Api, 7), rule, later).retry_after, None);
        assert!(l.take(Key::User(Class::Api, 7), rule, later).retry_after.is_some());
        let e = refused.error();
        assert_eq!((e.status, e.code), (429, "RATE_LIMIT_HIT"));
        assert_eq!(e.body()["retry-after"], 20.0);
    }

    #[test]
    fn failures_block_an_account_and_an_ip_but_not_others() {
        let l = limiter("auth-failures-by-account=2/600,auth-failures-by-ip=3/600");
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        assert_eq!(l.failures_blocked(Some((1, "a@x.test")), Some(ip)), None);
        l.failed(Some((1, "a@x.test")), Some(ip));
        l.failed(Some((1, "A@X.test")), Some(ip));
        // The account is blocked from anywhere; the IP not yet for others.
        assert!(l.failures_blocked(Some((1, "a@x.test")), Some(other)).is_some());
        assert_eq!(l.failures_blocked(Some((1, "b@x.test")), Some(ip)), None);
        assert_eq!(l.failures_blocked(Some((2, "a@x.test")), Some(other)), None);
        l.failed(Some((1, "c@x.test")), Some(ip));
        let blocked = l.failures_blocked(Some((1, "b@x.test")), Some(ip)).unwrap();
        // One failure back every 200 s (time passed since the last one).
        let after = blocked.retry_after.unwrap();
        assert!(after > 199.0 && after <= 200.0, "{after}");
        assert_eq!(l.failures_blocked(None, Some(other)), None);
    }

    #[test]
    fn classes_of_routes() {
        assert_eq!(Class::of("POST", "/fetch_api_key"), Class::Auth);
        assert_eq!(Class::of("POST", "/dev_fetch_api_key"), Class::Auth);
        assert_eq!(Class::of("POST", "/invites"), Class::Signup);
        assert_eq!(Class::of("POST", "/registration/{key}"), Class::Signup);
        assert_eq!(Class::of("GET", "/invites"), Class::Api);
        assert_eq!(Class::of("GET", "/registration/{key}"), Class::Api);
        assert_eq!(Class::of("POST", "/messages"), Class::Api);
        assert_eq!(Class::of("GET", "/events"), Class::Poll);
        assert_eq!(Class::of("DELETE", "/events"), Class::Api);
    }

    #[test]
    fn full_buckets_are_dropped_when_a_shard_grows() {
        let l = limiter("api-by-ip=5/1");
        let start = Instant::now();
        for i in 0..(SHARDS * SWEEP_AT) as u32 {
            let ip = IpAddr::from(i.to_be_bytes());
            l.take(Key::Ip(Class::Api, ip), l.rules.api_by_ip, start);
        }
        // Some shard holds at least `SWEEP_AT`; new keys in every shard.
        let later = start + Duration::from_secs(2);
        for i in 0..1000u32 {
            let ip = IpAddr::from((u32::MAX - i).to_be_bytes());
            l.take(Key::Ip(Class::Api, ip), l.rules.api_by_ip, later);
        }
        let held: usize = l.shards.iter().map(|s| s.lock().len()).sum();
        assert!(held < SHARDS * SWEEP_AT, "{held} buckets kept");
    }
}
