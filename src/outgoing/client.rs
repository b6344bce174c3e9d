//! The HTTP client of the delivery pool: one kept `ureq` agent (HTTP/1.1
//! and HTTPS through rustls, blocking, for the pool's OS threads) with
//! natter's `User-Agent`, the per-request time-out, no redirects
//! followed, response bodies capped, and the SSRF guard as its name
//! resolver. `https` certificates are always verified: against Mozilla's
//! roots (webpki-roots), or the operator's own authorities
//! (`--outgoing-webhook-ca-file`) instead.
//!
//! The guard resolves the URL's host and refuses the request unless every
//! address it resolves to is public: not loopback, private, link-local,
//! multicast, unspecified, broadcast, shared (carrier-grade NAT),
//! documentation or other special-purpose ranges, in IPv4 and IPv6
//! (IPv4-mapped IPv6 addresses are judged as the IPv4 address they map).
//! The connection is made to the addresses the guard checked, so a name
//! cannot resolve to a public address for the check and to a private one
//! for the connection; for `https` the TLS session runs over that same
//! checked connection (the certificate is verified for the URL's name). Redirects are not followed: a bot's server that
//! answers with one gets the "responded with 3xx" failure, so a redirect
//! cannot lead to a private address either. The operator's allow-list
//! (`--outgoing-webhook-allow`) opens chosen addresses and blocks.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ureq::http::Uri;
use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use crate::config::OutgoingConfig;

/// The `User-Agent` of every delivery.
pub const USER_AGENT: &str = concat!("natter-outgoing-webhook/", env!("CARGO_PKG_VERSION"));

/// Largest response body read from a bot's server (1 MiB).
pub const MAX_RESPONSE_BYTES: u64 = 1 << 20;

/// A posted request's result.
#[derive(Debug)]
pub enum Outcome {
    /// The server answered: its status and body (`None` when the body was
    /// too large or not UTF-8).
    Answered {
        /// HTTP status.
        status: u16,
        /// The body as text.
        body: Option<String>,
    },
    /// The request timed out (retried).
    TimedOut,
    /// No connection could be made, or it broke (retried).
    ConnectionError(String),
    /// The URL's host resolves to an address deliveries may not reach.
    Disallowed,
    /// Any other failure (not retried).
    Failed(String),
}

/// The delivery pool's client.
pub struct Client {
    agent: ureq::Agent,
}

impl Client {
    /// A client with `config`'s time-out and allow-list.
    pub fn new(config: &OutgoingConfig) -> Client {
        let roots = if config.ca_certs.is_empty() {
            RootCerts::WebPki
        } else {
            RootCerts::new_with_certs(
                &config
                    .ca_certs
                    .iter()
                    .map(|der| Certificate::from_der(der).to_owned())
                    .collect::<Vec<_>>(),
            )
        };
        let tls = TlsConfig::builder().provider(TlsProvider::Rustls).root_certs(roots).build();
        let agent_config = ureq::Agent::config_builder()
            .tls_config(tls)
            .https_only(false)
            .timeout_global(Some(config.timeout))
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .user_agent(USER_AGENT)
            .build();
        let guard = Guard { config: config.clone() };
        Client { agent: ureq::Agent::with_parts(agent_config, DefaultConnector::default(), guard) }
    }

    /// POSTs `body` (of `content_type`) to `url`.
    pub fn post(&self, url: &str, content_type: &str, body: &[u8]) -> Outcome {
        let sent = self.agent.post(url).content_type(content_type).send(body);
        let mut response = match sent {
            Ok(response) => response,
            Err(e) => return failure(e),
        };
        let status = response.status().as_u16();
        let read = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_string();
        match read {
            Ok(text) => Outcome::Answered { status, body: Some(text) },
            Err(ureq::Error::BodyExceedsLimit(_)) => Outcome::Answered { status, body: None },
            Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                Outcome::Answered { status, body: None }
            }
            Err(e) => failure(e),
        }
    }
}

/// What a request error means for the delivery.
fn failure(e: ureq::Error) -> Outcome {
    match e {
        ureq::Error::Timeout(_) => Outcome::TimedOut,
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => Outcome::TimedOut,
        ureq::Error::Io(e) => Outcome::ConnectionError(e.to_string()),
        // A TLS failure (an untrusted certificate, a handshake error) is
        // a connection error, as Zulip's HTTP client counts it.
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound | ureq::Error::Rustls(_) => {
            Outcome::ConnectionError(e.to_string())
        }
        ureq::Error::Other(inner) if inner.is::<Refused>() => Outcome::Disallowed,
        other => Outcome::Failed(other.to_string()),
    }
}

/// The guard's refusal, carried through ureq as `Error::Other`.
#[derive(Debug)]
struct Refused(IpAddr);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a public address", self.0)
    }
}

impl std::error::Error for Refused {}

/// The SSRF guard: the default resolver, then every address checked.
#[derive(Debug)]
struct Guard {
    config: OutgoingConfig,
}

impl Resolver for Guard {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        if let Some(bad) = addrs.iter().map(|a| a.ip()).find(|ip| !self.may_reach(*ip)) {
            return Err(ureq::Error::Other(Box::new(Refused(bad))));
        }
        Ok(addrs)
    }
}

impl Guard {
    fn may_reach(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.config.allows(ip) || self.config.allows(canonical(ip))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it maps; others as
/// they are.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether deliveries may reach `ip` without the operator's leave: a
/// globally routed unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation
        || first == 0x0064 && ip.segments()[1] == 0xff9b // NAT64, maps IPv4
        || first == 0x2002 // 6to4, maps IPv4
        || ip.to_ipv4().is_some()) // IPv4-compatible and -mapped forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.1.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} counted as public");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip} counted as not public");
        }
    }

    #[test]
    fn the_allow_list_opens_addresses_and_blocks() {
        let allow = OutgoingConfig::parse_allow("127.0.0.1, 10.1.0.0/16,::1").unwrap();
        let config = OutgoingConfig {
            timeout: std::time::Duration::from_secs(1),
            allow,
            threads: 1,
            backoff: std::time::Duration::from_secs(1),
            ca_certs: Vec::new(),
        };
        let guard = Guard { config };
        for ip in ["127.0.0.1", "10.1.200.3", "::1", "::ffff:127.0.0.1", "8.8.8.8"] {
            assert!(guard.may_reach(ip.parse().unwrap()), "{ip} refused");
        }
        for ip in ["127.0.0.2", "10.2.0.1", "169.254.169.254", "::2"] {
            assert!(!guard.may_reach(ip.parse().unwrap()), "{ip} allowed");
        }
        assert!(OutgoingConfig::parse_allow("10.0.0.0/33").is_err());
        assert!(OutgoingConfig::parse_allow("localhost").is_err());
    }
}
