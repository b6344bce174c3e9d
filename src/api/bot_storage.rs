//! Bot storage, the key-value store interactive bots keep state in
//! (`bot_handler.storage` of Zulip's bot framework): `GET /bot_storage`,
//! `PUT /bot_storage`, `DELETE /bot_storage`. Each account has its own
//! storage (a bot's calls reach only the bot's); Zulip's limit of
//! 10,000,000 characters (keys and values) holds per account.

use serde_json::Value;

use super::{App, Call, Reply};
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::bots::BotChange;

/// Most characters (keys plus values) one account may store, as Zulip's
/// `USER_STATE_SIZE_LIMIT`.
pub const STORAGE_LIMIT: usize = 10_000_000;

/// A JSON list of strings parameter, if given.
fn keys(call: &mut Call) -> ApiResult<Option<Vec<String>>> {
    let Some(value) = call.params.json("keys")? else { return Ok(None) };
    let Value::Array(items) = value else {
        return Err(ApiError::bad_request("keys is not a list").with("var_name", "keys"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s),
            _ => Err(ApiError::bad_request(format!("keys[{i}] is not a string"))),
        })
        .collect::<ApiResult<_>>()
        .map(Some)
}

fn missing_key() -> ApiError {
    ApiError::bad_request("Key does not exist.")
}

/// `GET /bot_storage`: the values of `keys` (all of them without it).
pub fn get(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().id;
    let keys = keys(call)?;
    let stored = app.state.bots.storage.get(&me).unwrap_or_default();
    let storage: serde_json::Map<String, Value> = match keys {
        None => stored.into_iter().map(|(k, v)| (k, Value::String(v))).collect(),
        Some(keys) => keys
            .into_iter()
            .map(|k| {
                let v = stored.get(&k).cloned().ok_or_else(missing_key)?;
                Ok((k, Value::String(v)))
            })
            .collect::<ApiResult<_>>()?,
    };
    Ok(reply! { "storage" => storage })
}

/// `PUT /bot_storage`: `storage`, a JSON object of strings, written over
/// the stored entries (within the size limit).
pub fn put(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().id;
    let value = call.params.json("storage")?.ok_or_else(|| ApiError::missing("storage"))?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request("storage is not a dict").with("var_name", "storage"));
    };
    let entries: Vec<(String, String)> = map
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(v) => Ok((k, v)),
            other => Err(ApiError::bad_request(format!(
                "Value type is {}, but should be str.",
                json_type(&other)
            ))),
        })
        .collect::<ApiResult<_>>()?;
    let size = |s: &str| s.chars().count();
    app.committer.commit(|s| {
        let stored = s.bots.storage.get(&me).unwrap_or_default();
        let mut total = s.bots.storage_size(me);
        for (k, v) in &entries {
            if let Some(old) = stored.get(k) {
                total -= size(k) + size(old);
            }
            total += size(k) + size(v);
        }
        if total > STORAGE_LIMIT {
            return Err(ApiError::bad_request(format!(
                "Request exceeds storage limit by {} characters. The limit is {STORAGE_LIMIT} \
                 characters.",
                total - STORAGE_LIMIT
            )));
        }
        let change = BotChange::PutStorage { bot: me, entries: entries.clone() };
        Ok((Mutation::Bot(Box::new(change)), ()))
    })?;
    Ok(Reply::new())
}

/// `DELETE /bot_storage`: removes `keys` (every key without it); all of
/// them must exist.
pub fn remove(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let me = call.caller().id;
    let keys = keys(call)?;
    app.committer.commit(|s| {
        let stored = s.bots.storage.get(&me).unwrap_or_default();
        let keys = match &keys {
            None => stored.keys().cloned().collect(),
            Some(keys) if keys.iter().all(|k| stored.contains_key(k)) => keys.clone(),
            Some(_) => return Err(missing_key()),
        };
        Ok((Mutation::Bot(Box::new(BotChange::RemoveStorage { bot: me, keys })), ()))
    })?;
    Ok(Reply::new())
}

/// Python's name of a JSON value's type, as Zulip's message names it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}
