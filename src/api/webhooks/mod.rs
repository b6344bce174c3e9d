//! Incoming webhooks: `POST /external/{integration}`.
//!
//! A service posts its own payload to
//! `/api/v1/external/<integration>?api_key=…&stream=…&topic=…`; the
//! integration (one file each, listed in `INTEGRATIONS`) turns it into
//! messages, which are sent as the incoming-webhook bot the key belongs to
//! through the normal send path (every send rule, durable, with events).
//!
//! - `api_key` (query or form) must be an active incoming-webhook bot's of
//!   this realm; any other account's key is refused.
//! - `stream` (a name, or an id) and `topic` (overrides the integration's
//!   topic; the git hosts then name the issue or merge request in the
//!   message instead, and GitLab's messages start with a link to the
//!   project, as Zulip's do) choose the channel; without `stream` the message is a direct
//!   message to the bot's owner. A channel that does not exist (or that the
//!   bot cannot see) gets no message: the Notification Bot tells the owner,
//!   in Zulip's words, and the reply is still a success.
//! - `only_events` / `exclude_events`: JSON lists of event names, `*`
//!   matching any run of characters; a filtered event is accepted and
//!   dropped.
//! - Errors as Zulip's: `UNSUPPORTED_WEBHOOK_EVENT_TYPE` (200),
//!   `ANOMALOUS_WEBHOOK_PAYLOAD`, `MISSING_HTTP_EVENT_HEADER`.

pub mod alertmanager;
pub mod github;
pub mod gitlab;
pub mod grafana;
pub mod json;
pub mod sentry;
pub mod slack_incoming;

use serde_json::Value;

use super::messages::{self, ChannelRef, Draft, Target, UserRef};
use super::params::Payload;
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::send::bot_messages::to_bot_owner;
use crate::state::{BotType, User};

/// One integration: its URL name, the name its errors and client use, and
/// the function that reads a request.
pub struct Integration {
    /// The `{integration}` of the URL.
    pub name: &'static str,
    /// The service's display name (in error messages).
    pub display: &'static str,
    /// Zulip's client name for its messages (`Zulip<Name>Webhook`).
    pub client: &'static str,
    /// Reads the request into messages.
    pub handle: fn(&mut Request) -> ApiResult<Vec<Notification>>,
}

/// Every integration natter serves.
pub static INTEGRATIONS: &[Integration] = &[
    Integration {
        name: "alertmanager",
        display: "Alertmanager",
        client: "ZulipAlertmanagerWebhook",
        handle: alertmanager::handle,
    },
    Integration {
        name: "github",
        display: "GitHub",
        client: "ZulipGitHubWebhook",
        handle: github::handle,
    },
    Integration {
        name: "gitlab",
        display: "GitLab",
        client: "ZulipGitlabWebhook",
        handle: gitlab::handle,
    },
    Integration {
        name: "grafana",
        display: "Grafana",
        client: "ZulipGrafanaWebhook",
        handle: grafana::handle,
    },
    Integration { name: "json", display: "JSON", client: "ZulipJsonWebhook", handle: json::handle },
    Integration {
        name: "sentry",
        display: "Sentry",
        client: "ZulipSentryWebhook",
        handle: sentry::handle,
    },
    Integration {
        name: "slack_incoming",
        display: "SlackIncoming",
        client: "ZulipSlackIncomingWebhook",
        handle: slack_incoming::handle,
    },
];

/// One message an integration makes of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The event name the filters match (`None`: the integration has no
    /// event types, and the filters do not apply).
    pub event: Option<String>,
    /// The topic, unless the URL names one.
    pub topic: String,
    /// The message's Markdown.
    pub body: String,
}

/// What an integration reads: the parameters, the raw body and headers.
pub struct Request<'a> {
    /// The integration's display name, for its errors.
    pub display: &'static str,
    /// Query and form parameters.
    pub params: &'a mut super::params::Params,
    /// The raw body and headers.
    pub payload: &'a Payload,
    /// Whether the URL names the topic (`topic`): the message is then read
    /// without the topic the integration would have chosen, so it names
    /// what that topic would have (Zulip's integrations do likewise).
    pub topic_given: bool,
}

impl Request<'_> {
    /// The body as JSON (or a form's `payload` field, which some services
    /// send instead): anything else is an anomalous payload.
    pub fn json(&mut self) -> ApiResult<Value> {
        let text = if self.payload.body.is_empty() {
            self.params.string("payload").unwrap_or_default().into_bytes()
        } else {
            self.payload.body.clone()
        };
        if super::params::json_depth(&String::from_utf8_lossy(&text)) > MAX_PAYLOAD_DEPTH {
            return Err(ApiError::anomalous_webhook_payload(self.display));
        }
        serde_json::from_slice(&text).map_err(|_| ApiError::bad_request("Malformed JSON"))
    }

    /// The JSON body, which must be an object.
    pub fn json_object(&mut self) -> ApiResult<Value> {
        let value = self.json()?;
        if value.is_object() {
            Ok(value)
        } else {
            Err(ApiError::anomalous_webhook_payload(self.display))
        }
    }

    /// A header that names the event: its absence is
    /// `MISSING_HTTP_EVENT_HEADER`.
    pub fn event_header(&self, name: &str) -> ApiResult<String> {
        self.payload
            .header(name)
            .map(str::to_owned)
            .ok_or_else(|| ApiError::missing_webhook_event_header(name))
    }

    /// An anomalous payload error for this integration.
    pub fn anomalous(&self) -> ApiError {
        ApiError::anomalous_webhook_payload(self.display)
    }

    /// An unsupported event error for this integration.
    pub fn unsupported(&self, event: &str) -> ApiError {
        ApiError::unsupported_webhook_event(event, self.display)
    }
}

/// Deepest JSON nesting read from a payload (decoding is recursive and
/// coroutine stacks are small; real payloads nest a dozen levels or so).
const MAX_PAYLOAD_DEPTH: usize = 64;

/// `POST /external/{integration}`: one webhook request.
pub fn receive(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = call.path.first().map(String::as_str).unwrap_or("");
    let integration =
        INTEGRATIONS.iter().find(|i| i.name == name).ok_or_else(ApiError::no_such_endpoint)?;
    let bot = webhook_bot(app, call)?;
    let stream = call.params.string("stream");
    let topic = call.params.string("topic");
    let only = filter_list(call, "only_events")?;
    let exclude = filter_list(call, "exclude_events")?;
    let payload = call.params.take_payload().unwrap_or_default();
    let mut request = Request {
        display: integration.display,
        params: &mut call.params,
        payload: &payload,
        topic_given: topic.is_some(),
    };
    let notifications = (integration.handle)(&mut request)?;
    for notification in notifications {
        if let Some(event) = &notification.event {
            if !passes(event, only.as_deref(), exclude.as_deref()) {
                continue;
            }
        }
        let topic = topic.clone().unwrap_or(notification.topic);
        deliver(app, call, &bot, integration, stream.as_deref(), &topic, notification.body)?;
    }
    Ok(Reply::new())
}

/// The active incoming-webhook bot of this realm `api_key` belongs to.
fn webhook_bot(app: &App, call: &mut Call) -> ApiResult<User> {
    let key = call.params.string("api_key").ok_or_else(|| ApiError::missing("api_key"))?;
    if call.realm.deactivated {
        return Err(ApiError::realm_deactivated());
    }
    let realm = call.realm.id;
    let found = app.state.users.collect_sorted(|_, u| {
        u.realm == realm && !key.is_empty() && same_key(u.api_key.as_bytes(), key.as_bytes())
    });
    let (_, user) = found.into_iter().next().ok_or_else(ApiError::invalid_api_key)?;
    if !user.is_active {
        return Err(ApiError::user_deactivated());
    }
    if user.bot_type != Some(BotType::IncomingWebhook) {
        return Err(ApiError::unauthorized("This API is only available to incoming webhook bots."));
    }
    Ok(user)
}

/// Compares API keys in time independent of where they differ.
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `only_events` / `exclude_events`: a JSON list of strings.
fn filter_list(call: &mut Call, name: &str) -> ApiResult<Option<Vec<String>>> {
    let Some(value) = call.params.json(name)? else {
        return Ok(None);
    };
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                _ => Err(ApiError::bad_request(format!("{name}[0] is not a string"))),
            })
            .collect::<ApiResult<Vec<String>>>()
            .map(Some),
        _ => Err(ApiError::bad_request(format!("{name} is not a list"))),
    }
}

/// Whether `event` passes the filters.
fn passes(event: &str, only: Option<&[String]>, exclude: Option<&[String]>) -> bool {
    let any = |patterns: &[String]| patterns.iter().any(|p| wildcard_match(p, event));
    only.is_none_or(any) && !exclude.is_some_and(any)
}

/// `pattern` with `*` standing for any run of characters matches `text`.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Sends one message as `bot`: to `stream`'s `topic`, or to the bot's owner.
fn deliver(
    app: &App,
    call: &Call,
    bot: &User,
    integration: &Integration,
    stream: Option<&str>,
    topic: &str,
    body: String,
) -> ApiResult<()> {
    let body = messages::normalize_content(&body)?;
    let target = match stream.map(str::trim) {
        None | Some("") => {
            let owner = bot.bot_owner.ok_or_else(|| {
                ApiError::bad_request("This bot has no owner to send direct messages to.")
            })?;
            Target::Direct(vec![UserRef::Id(owner.0)])
        }
        Some(stream) => {
            let channel = match stream.parse::<u64>() {
                Ok(id) => ChannelRef::Id(id),
                Err(_) => ChannelRef::Name(stream.to_owned()),
            };
            if messages::find_channel(&app.state, bot, &channel).is_err() {
                notify_missing_channel(app, bot, &channel)?;
                return Ok(());
            }
            let topic = messages::normalize_topic_for(
                topic,
                &call.realm.settings.empty_topic_display_name,
            )?;
            Target::Channel { channel, topic }
        }
    };
    let url = super::realm::realm_url_of(app, bot.realm);
    let draft = Draft::new(&app.state, bot, target, body, false, integration.client, url);
    messages::commit_draft(app, bot, &draft, None)?;
    Ok(())
}

/// The Notification Bot's direct message to the bot's owner about a
/// channel that does not exist, in Zulip's words.
fn notify_missing_channel(app: &App, bot: &User, channel: &ChannelRef) -> ApiResult<()> {
    let identity = format!("`{}`", bot.email);
    let content = match channel {
        ChannelRef::Id(id) => format!(
            "Your bot {identity} tried to send a message to channel ID {id}, but there is no \
             channel with that ID."
        ),
        ChannelRef::Name(name) => format!(
            "Your bot {identity} tried to send a message to channel #**{name}**, but that \
             channel does not exist. Click [here](#channels/new) to create it."
        ),
    };
    let Some(owner) = bot.bot_owner.and_then(|id| app.state.users.get(&id)) else {
        return Ok(());
    };
    let now = entropy::now();
    // Nothing to send where the realm has no Notification Bot or the owner
    // is deactivated (checked again under the writer lock).
    if to_bot_owner(&app.state, &owner, &content, now).is_none() {
        return Ok(());
    }
    app.committer.commit(|state| {
        let mutation = to_bot_owner(state, &owner, &content, now).ok_or_else(ApiError::internal)?;
        Ok((mutation, ()))
    })
}

/// The string (or number) at `path` in `value`, or "" (the git hosts'
/// payloads).
pub(super) fn text(value: &Value, path: &[&str]) -> String {
    let mut at = value;
    for key in path {
        match at.get(key) {
            Some(v) => at = v,
            None => return String::new(),
        }
    }
    match at {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A quoted block of text, as Zulip quotes a pull request's, issue's or
/// comment's body; "" for an empty body.
pub(super) fn quoted(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        format!("\n\n~~~ quote\n{body}\n~~~")
    }
}

/// `[<kind> #<number>](<url>)`, or with the title after the number when
/// the URL names the topic (`title` given): the git hosts' link to an
/// issue, pull or merge request, as Zulip writes it.
pub(super) fn item_link(kind: &str, number: &str, title: Option<&str>, url: &str) -> String {
    match title {
        Some(title) => format!("[{kind} #{number} {title}]({url})"),
        None => format!("[{kind} #{number}]({url})"),
    }
}

/// The mark after a sentence ending in `item_link`: `mark` ("." or ":"),
/// left out where the link's title already ends in punctuation and
/// nothing (`more`: an assignee, branches) follows the link, as Zulip
/// does.
pub(super) fn after_link(title: Option<&str>, more: bool, mark: &'static str) -> &'static str {
    let punctuated = title.and_then(|t| t.chars().last()).is_some_and(|c| c.is_ascii_punctuation());
    if more || !punctuated {
        mark
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_any_run_of_characters() {
        assert!(wildcard_match("push", "push"));
        assert!(!wildcard_match("push", "push_tags"));
        assert!(wildcard_match("push*", "push_tags"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("*_request", "pull_request"));
        assert!(wildcard_match("p*l*t", "pull_request_edit"));
        assert!(!wildcard_match("p*l*x", "pull_request_edit"));
        assert!(!wildcard_match("a*a", "a"));
        let only = vec!["issue*".to_owned()];
        let exclude = vec!["issue_comment".to_owned()];
        assert!(passes("issues", Some(&only), Some(&exclude)));
        assert!(!passes("issue_comment", Some(&only), Some(&exclude)));
        assert!(!passes("push", Some(&only), None));
        assert!(passes("push", None, None));
    }
}
