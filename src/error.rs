//! `ApiError`: a Zulip-shaped error (`{"result":"error","msg","code",…}`)
//! plus its HTTP status. Every refusal the API makes is one of these, built
//! by the constructors below, and turned into JSON in one place
//! (`ApiError::body`). Internal failures never reach a client with details.

use serde_json::{Map, Value};

/// An error reply.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Zulip's machine-readable `code`.
    pub code: &'static str,
    /// Human-readable `msg`.
    pub msg: String,
    /// Extra fields some codes carry (`stream`, `var_name`, `queue_id`…).
    pub extra: Vec<(&'static str, Value)>,
}

impl ApiError {
    fn new(status: u16, code: &'static str, msg: impl Into<String>) -> Self {
        ApiError { status, code, msg: msg.into(), extra: Vec::new() }
    }

    /// Adds an extra field to the error body.
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.extra.push((key, value.into()));
        self
    }

    /// 400 `BAD_REQUEST`: the generic refusal.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, "BAD_REQUEST", msg)
    }

    /// 400 `REQUEST_VARIABLE_MISSING` for a required parameter.
    pub fn missing(name: &str) -> Self {
        Self::new(400, "REQUEST_VARIABLE_MISSING", format!("Missing '{name}' argument"))
            .with("var_name", name)
    }

    /// 400 `BAD_REQUEST` for a parameter of the wrong type or value.
    pub fn invalid(name: &str, why: &str) -> Self {
        Self::bad_request(format!("Invalid {name}: {why}")).with("var_name", name)
    }

    /// 400 `INVALID_JSON` for a parameter that had to be JSON and was not.
    pub fn invalid_json(name: &str) -> Self {
        Self::new(400, "INVALID_JSON", format!("Argument \"{name}\" is not valid JSON."))
            .with("var_name", name)
    }

    /// 401 `UNAUTHORIZED`: no credentials at all.
    pub fn unauthorized(msg: impl Into<String>) -> Self {
        Self::new(401, "UNAUTHORIZED", msg)
    }

    /// 401 `INVALID_API_KEY`: wrong email/key pair.
    pub fn invalid_api_key() -> Self {
        Self::new(401, "INVALID_API_KEY", "Invalid API key")
    }

    /// 200 `UNSUPPORTED_WEBHOOK_EVENT_TYPE`: an incoming webhook's event
    /// the integration does not handle (200, as Zulip, so the sender does
    /// not retry it).
    pub fn unsupported_webhook_event(event: &str, integration: &str) -> Self {
        Self::new(
            200,
            "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
            format!(
                "The '{event}' event isn't currently supported by the {integration} webhook; \
                 ignoring"
            ),
        )
        .with("webhook_name", integration)
        .with("event_type", event)
    }

    /// 400 `ANOMALOUS_WEBHOOK_PAYLOAD`: a body the integration cannot read.
    pub fn anomalous_webhook_payload(integration: &str) -> Self {
        Self::new(
            400,
            "ANOMALOUS_WEBHOOK_PAYLOAD",
            format!("Unable to parse request: Did {integration} generate this event?"),
        )
        .with("webhook_name", integration)
    }

    /// 400 `MISSING_HTTP_EVENT_HEADER`: the header naming the event is
    /// absent.
    pub fn missing_webhook_event_header(header: &str) -> Self {
        Self::new(
            400,
            "MISSING_HTTP_EVENT_HEADER",
            format!("Missing the HTTP event header '{header}'"),
        )
        .with("header", header)
    }

    /// 401 `AUTHENTICATION_FAILED`: a login that did not match an account.
    pub fn authentication_failed() -> Self {
        Self::new(401, "AUTHENTICATION_FAILED", "Your username or password is incorrect")
    }

    /// 429 `RATE_LIMIT_HIT`, with `retry-after` in seconds.
    pub fn rate_limited(retry_after: f64) -> Self {
        Self::new(429, "RATE_LIMIT_HIT", "API usage exceeded rate limit")
            .with("retry-after", retry_after)
    }

    /// 503 `NOT_READY`: the server should not get traffic now (readiness).
    pub fn not_ready(why: &str) -> Self {
        Self::new(503, "NOT_READY", why)
    }

    /// 401 `USER_DEACTIVATED`.
    pub fn user_deactivated() -> Self {
        Self::new(401, "USER_DEACTIVATED", "Account is deactivated")
    }

    /// 401 `REALM_DEACTIVATED`.
    pub fn realm_deactivated() -> Self {
        Self::new(401, "REALM_DEACTIVATED", "This organization has been deactivated")
    }

    /// 400 `STREAM_DOES_NOT_EXIST` for a channel named by name.
    pub fn no_channel_named(name: &str) -> Self {
        Self::new(400, "STREAM_DOES_NOT_EXIST", format!("Channel '{name}' does not exist"))
            .with("stream", name)
    }

    /// 400 `CHANNEL_ALREADY_EXISTS`: a channel of that name exists.
    pub fn channel_exists(name: &str) -> Self {
        Self::new(400, "CHANNEL_ALREADY_EXISTS", format!("Channel '{name}' already exists"))
            .with("channel_name", name)
    }

    /// 400 `STREAM_DOES_NOT_EXIST` for a channel named by id.
    pub fn no_channel_id(id: u64) -> Self {
        Self::new(400, "STREAM_DOES_NOT_EXIST", format!("Channel with ID '{id}' does not exist"))
            .with("stream_id", id)
    }

    /// 400 `STREAM_WILDCARD_MENTION_NOT_ALLOWED`.
    pub fn stream_wildcard_not_allowed() -> Self {
        Self::new(
            400,
            "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
            "You do not have permission to use channel wildcard mentions in this channel.",
        )
    }

    /// 400 `TOPIC_WILDCARD_MENTION_NOT_ALLOWED`.
    pub fn topic_wildcard_not_allowed() -> Self {
        Self::new(
            400,
            "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
            "You do not have permission to use topic wildcard mentions in this topic.",
        )
    }

    /// 400 `REACTION_ALREADY_EXISTS`.
    pub fn reaction_exists() -> Self {
        Self::new(400, "REACTION_ALREADY_EXISTS", "Reaction already exists.")
    }

    /// 400 `MOVE_MESSAGES_TIME_LIMIT_EXCEEDED`: only the newest `allowed`
    /// of the topic's `total` messages may still be moved, from `first`
    /// on.
    pub fn move_time_limit(
        first: Option<crate::state::MessageId>,
        total: usize,
        allowed: usize,
    ) -> Self {
        Self::new(
            400,
            "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
            format!(
                "You only have permission to move the {allowed}/{total} most recent messages \
                 in this topic."
            ),
        )
        .with("first_message_id_allowed_to_move", first.map(|id| id.0))
        .with("total_messages_in_topic", total)
        .with("total_messages_allowed_to_move", allowed)
    }

    /// 400 `REACTION_DOES_NOT_EXIST`.
    pub fn reaction_missing() -> Self {
        Self::new(400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist.")
    }

    /// 404 `NOT_FOUND` for an object the caller has none of (Zulip's
    /// `ResourceNotFoundError`).
    /// 403 with a code of its own (`CSRF_FAILED`…).
    pub fn forbidden_code(code: &'static str, msg: impl Into<String>) -> Self {
        Self::new(403, code, msg)
    }

    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::new(404, "NOT_FOUND", msg)
    }

    /// 404 `NOT_FOUND` for an unknown endpoint.
    pub fn no_such_endpoint() -> Self {
        Self::new(404, "NOT_FOUND", "Not Found")
    }

    /// 405 for a known path with an unsupported method.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(405, "METHOD_NOT_ALLOWED", format!("Method Not Allowed ({method})"))
    }

    /// 404 `NONEXISTENT_SUBDOMAIN`: the Host names no realm.
    pub fn no_such_realm(host: &str) -> Self {
        Self::new(404, "NONEXISTENT_SUBDOMAIN", format!("There is no organization at {host}"))
    }

    /// 413 for a body over the size limit.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(413, "BAD_REQUEST", format!("Request body larger than {limit} bytes"))
    }

    /// 413 for an uploaded file over `max_file_upload_size_mib`, with
    /// Zulip's message.
    pub fn file_too_large(max_mib: u64) -> Self {
        Self::new(
            413,
            "BAD_REQUEST",
            format!(
                "File is larger than this server's configured maximum upload size ({max_mib} MiB)."
            ),
        )
    }

    /// 500 with no details: the cause is logged, never sent.
    pub fn internal() -> Self {
        Self::new(500, "INTERNAL_SERVER_ERROR", "Internal server error")
    }

    /// The JSON error body.
    pub fn body(&self) -> Value {
        let mut map = Map::new();
        map.insert("result".into(), "error".into());
        map.insert("msg".into(), self.msg.clone().into());
        map.insert("code".into(), self.code.into());
        for (k, v) in &self.extra {
            map.insert((*k).into(), v.clone());
        }
        Value::Object(map)
    }
}

/// Handler result: the success fields, or a refusal.
pub type ApiResult<T> = Result<T, ApiError>;
