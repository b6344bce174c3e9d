//! Linkifiers: `GET /realm/linkifiers`, `POST /realm/filters`,
//! `PATCH /realm/filters/{filter_id}`, `DELETE /realm/filters/{filter_id}`
//! and `PATCH /realm/linkifiers` (the order), with register's
//! `realm_linkifiers`. Changes are for administrators; every member of the
//! realm gets the `realm_linkifiers` event with the whole list. Sends
//! apply them through the send path's resolver (`markdown::linkifiers`).

use serde_json::{json, Value};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::markdown::linkifiers::{check_pattern, check_url_template};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::organization::{Linkifier, OrgChange, OrgIdKind};
use crate::state::{RealmId, State};
use crate::view::organization::linkifiers_json;

/// Register's `realm_linkifiers`: the list for clients with the
/// `linkifier_url_template` capability, empty for the others (their
/// linkifier syntax is gone, as in Zulip). `realm_filters` is always empty.
pub fn register_section(state: &State, realm: RealmId, capable: bool) -> Value {
    if capable {
        linkifiers_json(state, realm)
    } else {
        json!([])
    }
}

/// `GET /realm/linkifiers`: the realm's linkifiers, in order.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "linkifiers" => linkifiers_json(&app.state, call.realm.id) })
}

fn require_admin(call: &Call) -> ApiResult<()> {
    if call.caller().role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// The `pattern` and `url_template` parameters, checked.
fn parse(call: &mut Call) -> ApiResult<(String, String)> {
    let pattern = call.params.required_string("pattern")?;
    let template = call.params.required_string("url_template")?;
    let groups = check_pattern(&pattern)
        .map_err(|why| ApiError::invalid("pattern", &format!("bad regular expression: {why}")))?;
    check_url_template(&template, &groups)
        .map_err(|why| ApiError::invalid("url_template", &why))?;
    Ok((pattern, template))
}

fn duplicate(state: &State, realm: RealmId, pattern: &str, except: Option<u64>) -> ApiResult<()> {
    let taken = state
        .organization
        .linkifiers(realm)
        .iter()
        .any(|l| l.pattern == pattern && Some(l.id) != except);
    if taken {
        return Err(ApiError::invalid("pattern", "a linkifier with this pattern already exists"));
    }
    Ok(())
}

fn not_found() -> ApiError {
    ApiError::bad_request("Linkifier not found.")
}

/// `POST /realm/filters` (administrators): `pattern`, `url_template` →
/// `id`; the new linkifier applies after the existing ones.
pub fn add(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let (pattern, url_template) = parse(call)?;
    require_admin(call)?;
    let realm = call.realm.id;
    let id = app.committer.commit(|state| {
        duplicate(state, realm, &pattern, None)?;
        let id = state.organization.peek_id(OrgIdKind::Linkifier);
        let linkifier = Linkifier { id, pattern, url_template };
        Ok((Mutation::organization(OrgChange::AddLinkifier { realm, linkifier }), id))
    })?;
    Ok(reply! { "id" => id })
}

/// `PATCH /realm/filters/{filter_id}` (administrators): a new `pattern`
/// and `url_template`; the linkifier keeps its place.
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "filter_id")?;
    let (pattern, url_template) = parse(call)?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|state| {
        if !state.organization.linkifiers(realm).iter().any(|l| l.id == id) {
            return Err(not_found());
        }
        duplicate(state, realm, &pattern, Some(id))?;
        let linkifier = Linkifier { id, pattern, url_template };
        Ok((Mutation::organization(OrgChange::EditLinkifier { realm, linkifier }), ()))
    })?;
    Ok(Reply::new())
}

/// `DELETE /realm/filters/{filter_id}` (administrators).
pub fn remove(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "filter_id")?;
    require_admin(call)?;
    let realm = call.realm.id;
    app.committer.commit(|state| {
        if !state.organization.linkifiers(realm).iter().any(|l| l.id == id) {
            return Err(not_found());
        }
        Ok((Mutation::organization(OrgChange::RemoveLinkifier { realm, id }), ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /realm/linkifiers` (administrators): `ordered_linkifier_ids`,
/// every linkifier of the realm exactly once, in the order they apply.
pub fn reorder(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = "ordered_linkifier_ids";
    let raw = call.params.json(name)?.ok_or_else(|| ApiError::missing(name))?;
    let order: Vec<u64> = raw
        .as_array()
        .and_then(|ids| ids.iter().map(Value::as_u64).collect())
        .ok_or_else(|| ApiError::invalid(name, "not a list of linkifier ids"))?;
    require_admin(call)?;
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != order.len() {
        return Err(ApiError::bad_request(
            "The ordered list must not contain duplicated linkifiers",
        ));
    }
    let realm = call.realm.id;
    app.committer.commit(|state| {
        let mut existing: Vec<u64> =
            state.organization.linkifiers(realm).iter().map(|l| l.id).collect();
        existing.sort_unstable();
        if existing != sorted {
            return Err(ApiError::bad_request(
                "The ordered list must enumerate all existing linkifiers exactly once",
            ));
        }
        Ok((Mutation::organization(OrgChange::ReorderLinkifiers { realm, order }), ()))
    })?;
    Ok(Reply::new())
}
