//! Custom profile fields: `GET/POST /realm/profile_fields`,
//! `PATCH /realm/profile_fields` (reorder), `PATCH/DELETE
//! /realm/profile_fields/{field_id}`, the values users hold (set through
//! `PATCH /users/{id}` `profile_data`, or by users themselves through
//! `PATCH`/`DELETE /users/me/profile_data`), and register's
//! `custom_profile_fields` section.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::markdown;
use crate::mutation::{Mutation, UserChange};
use crate::reply;
use crate::state::profile::{FieldType, ProfileField};
use crate::state::{State, User, UserId};
use crate::view::profile::{profile_fields_json, DEFAULT_EXTERNAL_ACCOUNTS};

/// Longest field name.
const MAX_NAME: usize = 40;
/// Longest hint.
const MAX_HINT: usize = 80;
/// Longest short-text value (also pronouns and external account names).
const MAX_SHORT: usize = 50;
/// Longest long-text value.
const MAX_LONG: usize = 500;
/// At most this many fields are shown in the profile summary.
const MAX_SUMMARY_FIELDS: usize = 2;

/// `custom_profile_field_types` as register returns it.
fn field_types() -> Value {
    let mut out = Map::new();
    for t in FieldType::ALL {
        out.insert(t.name().to_owned(), json!({"id": t.code(), "name": t.name()}));
    }
    Value::Object(out)
}

/// Register's `custom_profile_fields` section.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    if wants("custom_profile_fields") {
        out.insert("custom_profile_fields".into(), profile_fields_json(&app.state, user.realm));
        out.insert("custom_profile_field_types".into(), field_types());
    }
}

/// `GET /realm/profile_fields`.
pub fn list(app: &App, call: &mut Call) -> ApiResult<Reply> {
    Ok(reply! { "custom_fields" => profile_fields_json(&app.state, call.caller().realm) })
}

/// Checks `field_data` for a type: choices for `Choice`, a subtype for
/// `ExternalAccount`, nothing for the others.
fn check_field_data(field_type: FieldType, data: Option<&Value>) -> ApiResult<String> {
    match field_type {
        FieldType::Choice => {
            let Some(Value::Object(choices)) = data else {
                return Err(ApiError::bad_request("Field must have at least one choice."));
            };
            if choices.is_empty() {
                return Err(ApiError::bad_request("Field must have at least one choice."));
            }
            let mut texts = BTreeSet::new();
            for (key, choice) in choices {
                let text = choice.get("text").and_then(Value::as_str).unwrap_or("").trim();
                if text.is_empty() || choice.get("order").is_none() {
                    return Err(ApiError::bad_request(format!(
                        "field_data[{key}] needs 'text' and 'order'"
                    )));
                }
                if !texts.insert(text.to_lowercase()) {
                    return Err(ApiError::bad_request(format!("Duplicate choice '{text}'")));
                }
            }
            Ok(Value::Object(choices.clone()).to_string())
        }
        FieldType::ExternalAccount => {
            let Some(Value::Object(map)) = data else {
                return Err(ApiError::bad_request("field_data needs a 'subtype'"));
            };
            let subtype = map.get("subtype").and_then(Value::as_str).unwrap_or("");
            if subtype == "custom" {
                let pattern = map.get("url_pattern").and_then(Value::as_str).unwrap_or("");
                if pattern.matches("%(username)s").count() != 1
                    || !(pattern.starts_with("http://") || pattern.starts_with("https://"))
                {
                    return Err(ApiError::bad_request("Malformed URL pattern."));
                }
            } else if !DEFAULT_EXTERNAL_ACCOUNTS.iter().any(|(known, ..)| *known == subtype) {
                return Err(ApiError::bad_request("Invalid external account type"));
            }
            Ok(Value::Object(map.clone()).to_string())
        }
        _ => Ok(String::new()),
    }
}

fn check_name_hint(name: &str, hint: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::bad_request("Label cannot be blank."));
    }
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::bad_request(format!(
            "name is too long (limit: {MAX_NAME} characters)"
        )));
    }
    if hint.chars().count() > MAX_HINT {
        return Err(ApiError::bad_request(format!(
            "hint is too long (limit: {MAX_HINT} characters)"
        )));
    }
    Ok(())
}

fn require_admin(me: &User) -> ApiResult<()> {
    if me.role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// Refuses a duplicate label or a third summary field (under the lock).
fn check_unique(s: &State, field: &ProfileField) -> ApiResult<()> {
    let others: Vec<ProfileField> =
        s.realm_profile_fields(field.realm).into_iter().filter(|f| f.id != field.id).collect();
    if others.iter().any(|f| f.name.eq_ignore_ascii_case(&field.name)) {
        return Err(ApiError::bad_request("A field with that label already exists."));
    }
    if field.display_in_profile_summary
        && others.iter().filter(|f| f.display_in_profile_summary).count() >= MAX_SUMMARY_FIELDS
    {
        return Err(ApiError::bad_request(
            "Only 2 custom profile fields can be displayed in the profile summary.",
        ));
    }
    Ok(())
}

/// `POST /realm/profile_fields`: an administrator adds a field.
pub fn create(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    require_admin(&me)?;
    let p = &mut call.params;
    let code = p.int("field_type")?.ok_or_else(|| ApiError::missing("field_type"))?;
    let field_type =
        FieldType::from_code(code).ok_or_else(|| ApiError::bad_request("Invalid field type."))?;
    let name = p.string("name").unwrap_or_default().trim().to_owned();
    let hint = p.string("hint").unwrap_or_default().trim().to_owned();
    check_name_hint(&name, &hint)?;
    let data = p.json("field_data")?;
    let field_data = check_field_data(field_type, data.as_ref())?;
    let display_in_profile_summary = p.bool_or("display_in_profile_summary", false)?;
    let required = p.bool_or("required", false)?;
    let editable_by_user = p.bool_or("editable_by_user", true)?;
    let id = app.committer.commit(|s| {
        // Ids are server-wide: one past the largest ever stored (deleted
        // fields' ids may be reused only if they were the largest).
        let id = s.profile_fields.collect_sorted(|_, _| true).last().map_or(1, |(id, _)| id + 1);
        let order = s.realm_profile_fields(me.realm).iter().map(|f| f.order).max().unwrap_or(0) + 1;
        let field = ProfileField {
            id,
            realm: me.realm,
            field_type,
            order,
            name,
            hint,
            field_data,
            display_in_profile_summary,
            required,
            editable_by_user,
        };
        check_unique(s, &field)?;
        Ok((Mutation::PutProfileField(field), id))
    })?;
    Ok(reply! { "id" => id })
}

fn field_by_path(app: &App, call: &Call) -> ApiResult<ProfileField> {
    let id = call.path_id(0, "field_id")?;
    app.state
        .profile_fields
        .get(&id)
        .filter(|f| f.realm == call.caller().realm)
        .ok_or_else(|| ApiError::bad_request(format!("Field id {id} not found.")))
}

/// `PATCH /realm/profile_fields/{field_id}`: change a field's label, hint,
/// choices or flags (never its type).
pub fn update(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    require_admin(&me)?;
    let mut field = field_by_path(app, call)?;
    let p = &mut call.params;
    if let Some(name) = p.string("name") {
        field.name = name.trim().to_owned();
    }
    if let Some(hint) = p.string("hint") {
        field.hint = hint.trim().to_owned();
    }
    check_name_hint(&field.name, &field.hint)?;
    if let Some(data) = p.json("field_data")? {
        field.field_data = check_field_data(field.field_type, Some(&data))?;
    }
    if let Some(on) = p.bool("display_in_profile_summary")? {
        field.display_in_profile_summary = on;
    }
    if let Some(on) = p.bool("required")? {
        field.required = on;
    }
    if let Some(on) = p.bool("editable_by_user")? {
        field.editable_by_user = on;
    }
    app.committer.commit(|s| {
        if !s.profile_fields.contains(&field.id) {
            return Err(ApiError::bad_request("Field not found."));
        }
        check_unique(s, &field)?;
        Ok((Mutation::PutProfileField(field), ()))
    })?;
    Ok(Reply::new())
}

/// `DELETE /realm/profile_fields/{field_id}`: the field and every value.
pub fn delete(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    require_admin(&me)?;
    let field = field_by_path(app, call)?;
    app.committer.commit(|s| {
        if !s.profile_fields.contains(&field.id) {
            return Err(ApiError::bad_request("Field not found."));
        }
        Ok((Mutation::DeleteProfileField { realm: me.realm, field: field.id }, ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /realm/profile_fields`: `order`, every field id in the new order.
pub fn reorder(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    require_admin(&me)?;
    let order = call.params.json("order")?.ok_or_else(|| ApiError::missing("order"))?;
    let order: Vec<u64> = order
        .as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect())
        .ok_or_else(|| ApiError::invalid("order", "not a list of field IDs"))?;
    app.committer.commit(|s| {
        let mut have: Vec<u64> = s.realm_profile_fields(me.realm).iter().map(|f| f.id).collect();
        let mut given = order.clone();
        have.sort_unstable();
        given.sort_unstable();
        if have != given {
            return Err(ApiError::bad_request("Invalid order mapping."));
        }
        Ok((Mutation::ReorderProfileFields { realm: me.realm, order }, ()))
    })?;
    Ok(Reply::new())
}

/// A value checked against its field's type: the stored text and, for the
/// text fields, its rendering. `None` clears the value.
fn check_value(
    state: &State,
    field: &ProfileField,
    value: &Value,
) -> ApiResult<Option<(String, Option<String>)>> {
    let bad = |why: &str| Err(ApiError::bad_request(format!("{}: {why}", field.name)));
    if value.is_null() || value.as_str() == Some("") || value.as_array().is_some_and(Vec::is_empty)
    {
        if field.required {
            return bad("this field is required");
        }
        return Ok(None);
    }
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) => String::new(),
        _ => return bad("not a valid value"),
    };
    let plain = |max: usize| -> ApiResult<Option<(String, Option<String>)>> {
        if text.chars().count() > max {
            return Err(ApiError::bad_request(format!(
                "{}: value is too long (limit: {max} characters)",
                field.name
            )));
        }
        Ok(Some((text.clone(), None)))
    };
    match field.field_type {
        FieldType::ShortText | FieldType::LongText => {
            let max = if field.field_type == FieldType::ShortText { MAX_SHORT } else { MAX_LONG };
            let checked = plain(max)?.expect("a value");
            Ok(Some((checked.0.clone(), Some(markdown::render(&checked.0)))))
        }
        FieldType::Pronouns | FieldType::ExternalAccount => plain(MAX_SHORT),
        FieldType::Choice => {
            let choices: Value = serde_json::from_str(&field.field_data).unwrap_or(Value::Null);
            if choices.get(&text).is_none() {
                return bad(&format!("'{text}' is not a valid choice"));
            }
            Ok(Some((text, None)))
        }
        FieldType::Date => {
            let ok = text.len() == 10
                && text.as_bytes()[4] == b'-'
                && text.as_bytes()[7] == b'-'
                && text[..4].parse::<u16>().is_ok()
                && text[5..7].parse::<u8>().is_ok_and(|m| (1..=12).contains(&m))
                && text[8..].parse::<u8>().is_ok_and(|d| (1..=31).contains(&d));
            if !ok {
                return bad("not a date (YYYY-MM-DD)");
            }
            Ok(Some((text, None)))
        }
        FieldType::Link => {
            let ok = (text.starts_with("http://") || text.starts_with("https://"))
                && text.len() > 8
                && !text.chars().any(char::is_whitespace);
            if !ok {
                return bad("not a URL");
            }
            Ok(Some((text, None)))
        }
        FieldType::User => {
            let ids: Vec<u64> = match value {
                Value::Array(items) => items.iter().map(Value::as_u64).collect::<Option<_>>(),
                Value::String(s) => serde_json::from_str::<Vec<u64>>(s).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                ApiError::bad_request(format!("{}: not a list of user IDs", field.name))
            })?;
            let mut seen = BTreeSet::new();
            for id in &ids {
                if state.user_in_realm(field.realm, UserId(*id)).filter(|u| u.is_active).is_none() {
                    return bad(&format!("invalid user ID {id}"));
                }
                if !seen.insert(*id) {
                    return bad("duplicate user IDs");
                }
            }
            Ok(Some((json!(ids).to_string(), None)))
        }
    }
}

/// `profile_data` of `PATCH /users/{id}`: `[{id, value}]` → changes.
pub fn parse_profile_data(
    state: &State,
    target: &User,
    data: &Value,
) -> ApiResult<Vec<UserChange>> {
    let items = data.as_array().ok_or_else(|| ApiError::invalid("profile_data", "not a list"))?;
    let mut out = Vec::new();
    for item in items {
        let id = item
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| ApiError::bad_request("profile_data element is missing 'id'"))?;
        let field = state
            .profile_fields
            .get(&id)
            .filter(|f| f.realm == target.realm)
            .ok_or_else(|| ApiError::bad_request(format!("Field id {id} not found.")))?;
        let value = item.get("value").unwrap_or(&Value::Null);
        out.push(UserChange::ProfileValue { field: id, value: check_value(state, &field, value)? });
    }
    Ok(out)
}

/// The caller's own field `id`, which they may change: it exists in
/// their realm and is `editable_by_user` (administrators change any).
fn own_field(state: &State, me: &User, id: u64) -> ApiResult<ProfileField> {
    let field = state
        .profile_fields
        .get(&id)
        .filter(|f| f.realm == me.realm)
        .ok_or_else(|| ApiError::bad_request(format!("Field id {id} not found.")))?;
    if !field.editable_by_user && !me.role.is_admin() {
        return Err(ApiError::bad_request(
            "You are not allowed to change this field. Contact an administrator to update it.",
        ));
    }
    Ok(field)
}

/// Commits the caller's own profile changes (one `realm_user` update event
/// per field, as an administrator's edit sends).
fn commit_own(app: &App, me: &User, changes: Vec<UserChange>) -> ApiResult<Reply> {
    if me.is_bot() {
        return Err(ApiError::bad_request("Bots have no custom profile fields"));
    }
    let id = me.id;
    app.committer.commit(|s| {
        // A field deleted meanwhile is gone: refuse rather than resurrect.
        for change in &changes {
            if let UserChange::ProfileValue { field, .. } = change {
                if !s.profile_fields.contains(field) {
                    return Err(ApiError::bad_request(format!("Field id {field} not found.")));
                }
            }
        }
        Ok((Mutation::UpdateUsers { changes: changes.into_iter().map(|c| (id, c)).collect() }, ()))
    })?;
    Ok(Reply::new())
}

/// `PATCH /users/me/profile_data`: `data` = `[{id, value}]`, the caller's
/// own values of fields users may edit (an empty value clears one).
pub fn update_own(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let data = call.params.json("data")?.ok_or_else(|| ApiError::missing("data"))?;
    let items = data.as_array().ok_or_else(|| ApiError::invalid("data", "not a list"))?;
    let mut changes = Vec::new();
    for item in items {
        let id = item
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| ApiError::bad_request("data element is missing 'id'"))?;
        let field = own_field(&app.state, &me, id)?;
        let value = item.get("value").unwrap_or(&Value::Null);
        changes.push(UserChange::ProfileValue {
            field: id,
            value: check_value(&app.state, &field, value)?,
        });
    }
    commit_own(app, &me, changes)
}

/// `DELETE /users/me/profile_data`: `data` = JSON list of field ids whose
/// values the caller clears (fields users may edit; not required ones).
pub fn delete_own(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().clone();
    let data = call.params.json("data")?.ok_or_else(|| ApiError::missing("data"))?;
    let ids = data.as_array().ok_or_else(|| ApiError::invalid("data", "not a list"))?;
    let mut changes = Vec::new();
    for id in ids {
        let id = id.as_u64().ok_or_else(|| ApiError::invalid("data", "not a list of IDs"))?;
        let field = own_field(&app.state, &me, id)?;
        check_value(&app.state, &field, &Value::Null)?;
        changes.push(UserChange::ProfileValue { field: id, value: None });
    }
    commit_own(app, &me, changes)
}
