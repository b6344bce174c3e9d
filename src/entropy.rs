//! The non-deterministic inputs of the write path: the clock and random
//! tokens. Handlers call these *before* building a `Mutation`, so the log
//! records the results and `apply` never needs them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Current UNIX time in seconds.
pub fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// A new 32-character alphanumeric API key from the OS's random source.
pub fn api_key() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut key = String::with_capacity(32);
    while key.len() < 32 {
        let mut bytes = [0u8; 64];
        getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
        // Rejection sampling: 248 = 4 * 62 keeps the choice uniform.
        for b in bytes.into_iter().filter(|b| *b < 248) {
            if key.len() == 32 {
                break;
            }
            key.push(ALPHABET[(b % 62) as usize] as char);
        }
    }
    key
}

/// `len` characters drawn uniformly from `alphabet` (at most 256
/// characters) with the OS's random source: upload names, staged files,
/// download tokens.
pub fn token(len: usize, alphabet: &[u8]) -> String {
    assert!(!alphabet.is_empty() && alphabet.len() <= 256);
    // Rejection sampling keeps the choice uniform.
    let limit = 256 - 256 % alphabet.len();
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut bytes = [0u8; 64];
        getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
        for b in bytes.into_iter().filter(|b| (*b as usize) < limit) {
            if out.len() == len {
                break;
            }
            out.push(alphabet[b as usize % alphabet.len()] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn api_keys_are_32_alphanumerics_and_differ() {
        let a = super::api_key();
        let b = super::api_key();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }
}
