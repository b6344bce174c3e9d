//! Passwords and the mail outbox: `POST /fetch_api_key`, the argon2
//! hashing both it and `PATCH /settings` use, and `outbox::send`.
//!
//! Argon2 is deliberately slow (tens of milliseconds of CPU): a long CPU
//! loop on a may coroutine would stall every other coroutine of its worker
//! thread, so hashing and verifying run on a short-lived OS thread while
//! the coroutine parks on a may channel, at most `HASHERS` at a time.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::reply;

/// Shortest accepted password (Zulip's `PASSWORD_MIN_LENGTH`).
pub const MIN_PASSWORD_LENGTH: usize = 6;
/// Longest accepted password, in bytes: bounds the hashing input.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// Hashes computed at once; more callers park until one finishes (the
/// machine has few cores, and a login flood must not starve requests).
const HASHERS: usize = 2;

/// Runs `f` on its own OS thread; the calling coroutine parks meanwhile.
fn off_coroutine<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    static SLOTS: OnceLock<may::sync::Semphore> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| may::sync::Semphore::new(HASHERS));
    slots.wait();
    let (tx, rx) = may::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let result = rx.recv().expect("hashing thread died");
    slots.post();
    result
}

/// The argon2id PHC string of `password` with a fresh random salt.
pub fn hash_password(password: &str) -> String {
    let password = password.to_owned();
    off_coroutine(move || {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
        let salt = SaltString::encode_b64(&bytes).expect("16 bytes is a valid salt");
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .expect("argon2 with default parameters cannot fail")
            .to_string()
    })
}

/// Whether `password` matches the PHC string `hash`.
pub fn verify_password(password: &str, hash: &str) -> bool {
    let (password, hash) = (password.to_owned(), hash.to_owned());
    off_coroutine(move || {
        PasswordHash::new(&hash)
            .is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
    })
}

/// A hash no password matches, verified when the account does not exist so
/// that a login for an unknown address takes as long as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_password(&crate::entropy::api_key()))
}

/// A new password acceptable? (length only; Zulip also scores strength).
pub fn check_new_password(password: &str) -> ApiResult<()> {
    if password.chars().count() < MIN_PASSWORD_LENGTH {
        return Err(ApiError::bad_request(format!(
            "The password must be at least {MIN_PASSWORD_LENGTH} characters long."
        ))
        .with("var_name", "new_password"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(
            ApiError::bad_request("The password is too long.").with("var_name", "new_password")
        );
    }
    Ok(())
}

/// `POST /fetch_api_key`: `username` (the real email address) and
/// `password` → the account's API key. Accounts without a password, bots
/// and wrong passwords all get the same 401.
pub fn fetch_api_key(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let username = call.params.required_string("username")?;
    let password = call.params.required_string("password")?;
    let user = password_login(app, &call.realm, &username, &password)?;
    Ok(reply! { "api_key" => user.api_key, "email" => user.email, "user_id" => user.id.0 })
}

/// The account `username` (its real email address) and `password` sign in
/// as in `realm`, by `POST /fetch_api_key`'s rules (also the web client's
/// `POST /login`).
pub fn password_login(
    app: &App,
    realm: &crate::state::Realm,
    username: &str,
    password: &str,
) -> ApiResult<crate::state::User> {
    if realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let user = app.state.user_by_delivery_email(realm.id, username.trim());
    let hash = user.as_ref().and_then(|u| app.state.settings.passwords.get(&u.id));
    let matches = match &hash {
        Some(hash) if password.len() <= MAX_PASSWORD_BYTES => verify_password(password, hash),
        _ => {
            verify_password(password, decoy_hash());
            false
        }
    };
    let user =
        user.filter(|u| matches && !u.is_bot()).ok_or_else(ApiError::authentication_failed)?;
    if !user.is_active {
        return Err(ApiError::user_deactivated());
    }
    Ok(user)
}

/// The mail outbox: natter sends no mail; each message is a file under
/// `<data-dir>/outbox/` and a line in the log, for an operator (or a test)
/// to pass on.
pub mod outbox {
    use std::io::Write;
    use std::path::PathBuf;

    use crate::api::App;

    /// Writes one message; returns its file. Small and unsynced: losing an
    /// unsent mail in a crash only means asking again.
    pub fn send(app: &App, to: &str, subject: &str, body: &str) -> std::io::Result<PathBuf> {
        let dir = app.config.data_dir.join("outbox");
        std::fs::create_dir_all(&dir)?;
        // Nanoseconds first, so that a listing sorts in sending order.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{nanos:024}-{}.txt", &crate::entropy::api_key()[..8]);
        let path = dir.join(name);
        let mut file = std::fs::File::create_new(&path)?;
        write!(file, "To: {to}\nSubject: {subject}\n\n{body}\n")?;
        tracing::info!(target: "natter::mail", "mail to {to}: {subject} ({})", path.display());
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash_password("correct horse");
        let b = hash_password("correct horse");
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b, "each hash has its own salt");
        assert!(verify_password("correct horse", &a));
        assert!(!verify_password("correct horsE", &a));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn new_password_rules() {
        assert!(check_new_password("12345").is_err());
        assert!(check_new_password("123456").is_ok());
        assert!(check_new_password(&"x".repeat(MAX_PASSWORD_BYTES + 1)).is_err());
    }
}
