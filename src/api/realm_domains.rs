//! The organization's email domains: `GET /realm/domains`,
//! `POST /realm/domains`, `PATCH /realm/domains/{domain}` and
//! `DELETE /realm/domains/{domain}`, with register's `realm_domains` and
//! the `realm_domains` events. Changes are for administrators.
//!
//! natter keeps the list for clients (the organization settings show
//! it); registration is not restricted to these domains
//! (`realm_emails_restricted_to_domains` is false).

use serde_json::{json, Value};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::organization::OrgChange;
use crate::state::{RealmId, State, User};

/// Longest domain accepted, in bytes (DNS's limit).
const MAX_DOMAIN_LENGTH: usize = 253;

fn domains_json(state: &State, realm: RealmId) -> Value {
    let domains = state.organization.of(realm).domains;
    Value::Array(
        domains
            .into_iter()
            .map(|(domain, sub)| json!({ "domain": domain, "allow_subdomains": sub }))
            .collect(),
    )
}

/// Register's `realm_domains`.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("realm_domains") {
        out.insert("realm_domains".into(), domains_json(&app.state, user.realm));
    }
}

/// `GET /realm/domains`: the list, by domain.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "domains" => domains_json(&app.state, call.realm.id) })
}

fn require_admin(call: &Call) -> ApiResult<()> {
    if call.caller().role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// A domain name as Zulip accepts one: lowercase labels of letters,
/// digits and inner hyphens, at least two of them.
pub fn check_domain(raw: &str) -> Result<String, String> {
    let domain = raw.trim().to_lowercase();
    if domain.is_empty() {
        return Err("Domain can't be empty.".into());
    }
    if domain.len() > MAX_DOMAIN_LENGTH {
        return Err("Domain is too long.".into());
    }
    if !domain.contains('.') {
        return Err("Domain must have at least one dot (.)".into());
    }
    if domain.starts_with('.') || domain.ends_with('.') {
        return Err("Domain can't start or end with a dot (.)".into());
    }
    for label in domain.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            return Err(format!("Invalid characters or layout in the label '{label}'."));
        }
    }
    Ok(domain)
}

fn invalid(why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid domain: {why}"))
}

fn no_entry(domain: &str) -> ApiError {
    ApiError::bad_request(format!("No entry found for domain {domain}."))
}

/// `POST /realm/domains` (administrators): `domain`, `allow_subdomains`
/// (default false).
pub fn add(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let raw = call.params.required_string("domain")?;
    let allow_subdomains = call.params.bool_or("allow_subdomains", false)?;
    require_admin(call)?;
    let domain = check_domain(&raw).map_err(|why| invalid(&why))?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        if s.organization.of(realm).domains.contains_key(&domain) {
            return Err(ApiError::bad_request(format!(
                "The domain {domain} is already a part of your organization."
            )));
        }
        let change =
            OrgChange::PutDomain { realm, domain: domain.clone(), allow_subdomains, new: true };
        Ok((Mutation::organization(change), ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /realm/domains/{domain}` (administrators): `allow_subdomains`.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let domain = call.path.first().cloned().unwrap_or_default().trim().to_lowercase();
    let allow_subdomains = call
        .params
        .bool("allow_subdomains")?
        .ok_or_else(|| ApiError::missing("allow_subdomains"))?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        if !s.organization.of(realm).domains.contains_key(&domain) {
            return Err(no_entry(&domain));
        }
        let change =
            OrgChange::PutDomain { realm, domain: domain.clone(), allow_subdomains, new: false };
        Ok((Mutation::organization(change), ()))
    })?;
    Ok(Reply::new())
}

/// `DELETE /realm/domains/{domain}` (administrators).
pub fn remove(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let domain = call.path.first().cloned().unwrap_or_default().trim().to_lowercase();
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|s| {
        if !s.organization.of(realm).domains.contains_key(&domain) {
            return Err(no_entry(&domain));
        }
        let change = OrgChange::RemoveDomain { realm, domain: domain.clone() };
        Ok((Mutation::organization(change), ()))
    })?;
    Ok(Reply::new())
}
