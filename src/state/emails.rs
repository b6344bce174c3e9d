//! API email addresses under `email_address_visibility`: where the realm
//! hides real addresses, every account except bots is known to the API by
//! a placeholder, `user{id}@{realm host}` (Zulip's rule), everywhere a user
//! appears — also to the user themselves; the real address is then only in
//! `delivery_email`, for those allowed to see it. Placeholders are derived,
//! never stored, so changing the setting needs no rewrite of accounts.

use super::{EmailVisibility, RealmId, State, User, UserId};

/// Domain of placeholders when the server's host is not a usable email
/// domain (an IP address, a bare name without a dot).
pub const FALLBACK_EMAIL_DOMAIN: &str = "natter.invalid";

/// The email domain of the server, from its external host (`--host`, else
/// the listen address): the host without a port, or the fallback.
pub fn email_domain_of_host(host: &str) -> String {
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    let host = host.trim_matches(|c| c == '[' || c == ']').to_ascii_lowercase();
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    let valid = !host.is_empty()
        && host.contains('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if is_ip || !valid {
        FALLBACK_EMAIL_DOMAIN.to_owned()
    } else {
        host
    }
}

impl State {
    /// The email domain placeholders use (set once at start-up).
    pub fn email_domain(&self) -> &str {
        self.email_domain.get().map_or(FALLBACK_EMAIL_DOMAIN, String::as_str)
    }

    /// The realm's host part of placeholders: `<subdomain>.<domain>`.
    fn realm_email_domain(&self, realm: RealmId) -> String {
        let sub = self.realms.read(&realm, |r| r.string_id.clone()).unwrap_or_default();
        if sub.is_empty() {
            self.email_domain().to_owned()
        } else {
            format!("{sub}.{}", self.email_domain())
        }
    }

    /// Whether the realm hides real addresses behind placeholders.
    fn hides_emails(&self, realm: RealmId) -> bool {
        self.realms
            .read(&realm, |r| r.settings.email_address_visibility != EmailVisibility::Everyone)
            .unwrap_or(false)
    }

    /// The host of `realm`'s placeholder addresses when it hides real ones
    /// (`api_email` of a non-bot is then `user<id>@<host>`), else `None`.
    /// For lists of many users: read once instead of per user.
    pub fn placeholder_host(&self, realm: RealmId) -> Option<String> {
        self.hides_emails(realm).then(|| self.realm_email_domain(realm))
    }

    /// The address the API shows for `user` (the same for every viewer).
    pub fn api_email(&self, user: &User) -> String {
        if user.is_bot() || !self.hides_emails(user.realm) {
            user.email.clone()
        } else {
            format!("user{}@{}", user.id.0, self.realm_email_domain(user.realm))
        }
    }

    /// The user a placeholder address names, if `email` is one of `realm`'s.
    pub fn user_by_placeholder(&self, realm: RealmId, email: &str) -> Option<User> {
        let (local, domain) = email.rsplit_once('@')?;
        let id = local.strip_prefix("user")?.parse::<u64>().ok()?;
        if !domain.eq_ignore_ascii_case(&self.realm_email_domain(realm))
            || !self.hides_emails(realm)
        {
            return None;
        }
        self.user_in_realm(realm, UserId(id)).filter(|u| !u.is_bot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Role;
    use crate::testkit::World;
    use crate::view::user::UserOptions;

    #[test]
    fn hosts_become_email_domains() {
        assert_eq!(email_domain_of_host("chat.example.com:9991"), "chat.example.com");
        assert_eq!(email_domain_of_host("127.0.0.1:9991"), FALLBACK_EMAIL_DOMAIN);
        assert_eq!(email_domain_of_host("localhost"), FALLBACK_EMAIL_DOMAIN);
        assert_eq!(email_domain_of_host("[::1]:80"), FALLBACK_EMAIL_DOMAIN);
    }

    #[test]
    fn placeholders_replace_real_addresses_where_the_realm_hides_them() {
        let mut w = World::new();
        let admin = w.user("", "admin@t.test", Role::Administrator);
        let member = w.user("", "member@t.test", Role::Member);
        let options = UserOptions { client_gravatar: false, include_custom_profile_fields: false };
        let shown = |w: &World, viewer| crate::view::user::user(&w.state, viewer, &member, options);
        assert_eq!(shown(&w, &admin)["email"], "member@t.test");
        let mut realm = w.state.realm_by_subdomain("").unwrap();
        realm.settings.email_address_visibility = EmailVisibility::Admins;
        w.state.realms.insert(realm.id, realm.clone());
        let placeholder = format!("user{}@{FALLBACK_EMAIL_DOMAIN}", member.id.0);
        // The same API email for everyone; the real one only for admins.
        assert_eq!(shown(&w, &admin)["email"], placeholder.as_str());
        assert_eq!(shown(&w, &admin)["delivery_email"], "member@t.test");
        assert_eq!(shown(&w, &member)["email"], placeholder.as_str());
        let other = w.user("", "other@t.test", Role::Member);
        assert_eq!(shown(&w, &other)["email"], placeholder.as_str());
        assert!(shown(&w, &other)["delivery_email"].is_null());
        // The placeholder identifies the account (API login, lookups).
        assert_eq!(w.state.user_by_placeholder(realm.id, &placeholder).unwrap().id, member.id);
        assert_eq!(w.state.user_by_email(realm.id, &placeholder).unwrap().id, member.id);
        assert!(w.state.user_by_placeholder(realm.id, "user999@natter.invalid").is_none());
        realm.settings.email_address_visibility = EmailVisibility::Everyone;
        w.state.realms.insert(realm.id, realm.clone());
        assert!(w.state.user_by_placeholder(realm.id, &placeholder).is_none());
    }
}
