//! Success and error envelopes, serialized to bytes with their status.

use serde_json::Value;

use crate::api::Reply;
use crate::error::ApiError;

/// A finished response: status and JSON body.
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Serialized JSON.
    pub body: Vec<u8>,
}

/// `{"result":"success","msg":"",…fields}` plus the ignored parameters.
pub fn success(mut fields: Reply, ignored: Vec<String>) -> Response {
    fields.insert("result".into(), "success".into());
    fields.insert("msg".into(), "".into());
    if !ignored.is_empty() {
        fields.insert("ignored_parameters_unsupported".into(), ignored.into());
    }
    Response { status: 200, body: serde_json::to_vec(&Value::Object(fields)).expect("json") }
}

/// The Zulip error envelope with the error's status.
pub fn error(e: &ApiError) -> Response {
    Response { status: e.status, body: serde_json::to_vec(&e.body()).expect("json") }
}

/// The reason phrase for a status (may_minihttp needs a `&'static str`).
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        _ => "Internal Server Error",
    }
}
