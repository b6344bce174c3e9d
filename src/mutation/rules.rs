//! The rules a user's identity must meet before it is stored, the same for
//! every way in (sign-up, an administrator's edit, a user's own settings,
//! a bot's creation, `natter realm create`): a display name and an email
//! address.

use crate::error::{ApiError, ApiResult};

/// Longest display name, in characters (Zulip's `MAX_NAME_LENGTH`).
pub const MAX_NAME_LENGTH: usize = 100;
/// Shortest display name, in characters.
pub const MIN_NAME_LENGTH: usize = 2;
/// Longest email address, in bytes.
pub const MAX_EMAIL_LENGTH: usize = 254;

/// Zulip's display-name rules: trimmed, 2–100 characters, none of
/// `*`, `` ` ``, `\`, `>`, `"`, `@` (they break mention syntax), no control
/// characters, and no trailing `|<digits>` (which would read as a
/// mention's user-id suffix).
pub fn check_full_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    let count = name.chars().count();
    if count > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request("Name too long!").with("var_name", "full_name"));
    }
    if count < MIN_NAME_LENGTH {
        return Err(ApiError::bad_request("Name too short!").with("var_name", "full_name"));
    }
    let bad_char = |c: char| "*`\\>\"@".contains(c) || c.is_control();
    let id_suffix = name
        .rsplit_once('|')
        .is_some_and(|(_, tail)| !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()));
    if name.chars().any(bad_char) || id_suffix {
        return Err(
            ApiError::bad_request("Invalid characters in name!").with("var_name", "full_name")
        );
    }
    Ok(name.to_owned())
}

/// A plausible address: `local@domain`, one `@`, a non-empty local part, a
/// dotted domain (or `localhost`) that neither starts nor ends with a dot,
/// at most 254 bytes, and no spaces, control characters or `<>,;"`.
/// Deliverability is the confirmation link's job.
pub fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    email.len() <= MAX_EMAIL_LENGTH
        && !local.is_empty()
        && !domain.contains('@')
        && (domain.contains('.') || domain == "localhost")
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
}

/// `valid_email` on the trimmed address, as an API error naming it.
pub fn check_email(email: &str) -> ApiResult<String> {
    let email = email.trim();
    if !valid_email(email) {
        return Err(ApiError::bad_request(format!("Invalid email '{email}'")));
    }
    Ok(email.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_name_rules() {
        assert_eq!(check_full_name("  Ophelia  ").unwrap(), "Ophelia");
        assert_eq!(check_full_name("A").unwrap_err().msg, "Name too short!");
        assert_eq!(check_full_name(&"x".repeat(101)).unwrap_err().msg, "Name too long!");
        assert!(check_full_name(&"é".repeat(100)).is_ok());
        for bad in ["a*b", "a`b", "a\\b", "a>b", "a\"b", "a@b", "a\u{7}b", "Bob|12"] {
            assert_eq!(check_full_name(bad).unwrap_err().msg, "Invalid characters in name!");
        }
        assert!(check_full_name("Bob|x").is_ok());
    }

    #[test]
    fn email_rules() {
        for ok in ["a@b.c", "hamlet@natter.test", "x+tag@sub.example.org", "owner@localhost"] {
            assert!(valid_email(ok), "{ok}");
        }
        for bad in [
            "",
            "plain",
            "@b.c",
            "a@",
            "a@b",
            "a@.b.c",
            "a@b.c.",
            "a@@b.c",
            "a@b@c.d",
            "a b@c.d",
            "a@b.c\n",
            "<a>@b.c",
            "a,b@c.d",
            "a;b@c.d",
            "\"a\"@b.c",
        ] {
            assert!(!valid_email(bad), "{bad:?}");
        }
        assert!(!valid_email(&format!("{}@b.c", "a".repeat(251))));
        assert_eq!(check_email("  a@b.c ").unwrap(), "a@b.c");
        assert_eq!(check_email("a@b").unwrap_err().msg, "Invalid email 'a@b'");
    }
}
