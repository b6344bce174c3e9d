//! Delivery of messages to outgoing-webhook bots, off the request path.
//!
//! A send that triggers a bot logs the delivery in the message's own
//! record (`send::outgoing`) and pushes it onto the app's outbox; it never
//! waits for the bot. A small pool of OS threads (`--outgoing-webhook-
//! threads`; blocking HTTP has no place on the coroutines) takes due
//! deliveries from the outbox and posts each with the one kept client
//! (`client`: time-out, SSRF guard, capped bodies). What the bot's server
//! answers decides what is posted back, as Zulip does:
//!
//! - a 2xx JSON object: its `content` (Slack: `text`) posted as the bot in
//!   the same topic or direct conversation; `response_not_required`, an
//!   empty `content` or the JSON string `""`: nothing. A `widget_content`
//!   beside the content (a zform of choices) makes the message that
//!   widget; an invalid one is refused like invalid JSON, as in Zulip;
//! - invalid JSON or not an object: "Failure! Invalid JSON in response" /
//!   "Failure! Invalid response format" in the conversation, and a direct
//!   message to the bot's owner;
//! - another status: "Failure! Third party responded with <code>", and
//!   the owner is told;
//! - a time-out or connection error: retried after `--outgoing-webhook-
//!   backoff-ms`, doubled for each retry, 3 retries; then "Failure! Bot is
//!   unavailable" and the owner is told.
//!
//! The end of a delivery (`BotChange::Finish`) is logged in the record of
//! the last message it posts (or alone), so a finished delivery is never
//! posted again. Unfinished ones (a crash, a restart while retrying) are
//! posted again at start-up: at least once, and the request carries the
//! message id for the bot to recognise a repeat.
//!
//! Each retry's count (`BotChange::Retry`) is logged before the retry is
//! posted, and the try under way at a crash counts as failed: a delivery
//! picked up again at start-up goes on from the count it had, so however
//! often the server is killed, a bot's server gets no more than the
//! first try and `RETRIES` retries of one delivery.

pub mod client;
pub mod request;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::api::messages::{send_as, Conversation};
use crate::api::App;
use crate::mutation::Mutation;
use crate::state::bots::{BotChange, Delivery, Interface, Service};
use crate::state::widgets::check_widget_content;
use crate::state::{Destination, Message, Realm, User};
use client::{Client, Outcome};

/// Retries after a time-out or connection error.
pub const RETRIES: u32 = 3;

/// The client name of the messages a bot's answer posts.
const CLIENT: &str = "OutgoingWebhookResponse";

/// Starts the delivery threads, first queueing the deliveries the state
/// has unfinished (those of before a restart).
pub fn start(app: &Arc<App>) {
    app.outbox.resume(resumed(&app.state.bots.pending()));
    let client = Arc::new(Client::new(&app.config.outgoing));
    for n in 0..app.config.outgoing.threads {
        let (app, client) = (Arc::clone(app), Arc::clone(&client));
        std::thread::Builder::new()
            .name(format!("natter-outgoing-{n}"))
            .spawn(move || loop {
                let (delivery, failed) = app.outbox.next();
                run(&app, &client, delivery, failed);
            })
            .expect("spawn an outgoing-webhook thread");
    }
}

/// The unfinished deliveries of before a restart, each with the tries
/// it has behind it: those logged as failed, and the one that was under
/// way (or about to be) when the server stopped.
pub fn resumed(pending: &[(Delivery, u32)]) -> Vec<(Delivery, u32)> {
    pending.iter().map(|(d, failed)| (*d, failed + 1)).collect()
}

/// One delivery's data, read from the state.
struct Context {
    bot: Arc<User>,
    service: Service,
    message: Arc<Message>,
    realm: Arc<Realm>,
}

impl Context {
    /// `None` when the delivery can no longer happen: the message was
    /// deleted, the bot deactivated or its service removed.
    fn read(app: &App, delivery: &Delivery) -> Option<Context> {
        let message = app.state.messages.get(&delivery.message)?;
        let bot = app.state.users.get(&delivery.bot).filter(|b| b.is_active)?;
        let service = app.state.bots.services.get(&bot.id)?;
        let realm = app.state.realms.get(&bot.realm)?;
        Some(Context { bot: Arc::new(bot), service, message, realm: Arc::new(realm) })
    }
}

/// What one attempt leads to.
enum Next {
    /// The delivery is over: post `reply` in the conversation and
    /// `owner` to the bot's owner (each if any).
    Done { reply: Option<String>, owner: Option<String> },
    /// The delivery is over: post `reply` in the conversation as the
    /// widget `widget` (a checked `widget_content`).
    Widget { reply: String, widget: Value },
    /// Worth another try; `why` tells the owner if none is left.
    Retry { why: String },
}

fn run(app: &App, client: &Client, delivery: Delivery, failed: u32) {
    let Some(ctx) = Context::read(app, &delivery) else {
        finish(app, None, &delivery, None, None, None);
        return;
    };
    if failed > RETRIES {
        // Its last try was under way when the server stopped.
        let why = "The server restarted while the last try was waiting for an answer.";
        give_up(app, &ctx, &delivery, why);
        return;
    }
    if failed > 0 {
        let retry = BotChange::Retry { message: delivery.message, bot: delivery.bot, failed };
        if let Err(e) = app.committer.commit(|_| Ok((Mutation::Bot(Box::new(retry)), ()))) {
            // Not posted unless counted: tried again later.
            tracing::warn!("could not record a retry of an outgoing webhook: {}", e.msg);
            app.outbox.retry(delivery, failed, backoff(app.config.outgoing.backoff, failed));
            return;
        }
    }
    match attempt(app, client, &ctx, &delivery) {
        Next::Retry { why } if failed < RETRIES => {
            tracing::info!(
                "outgoing webhook of bot {} for message {}: {why}; retrying",
                delivery.bot.0,
                delivery.message.0
            );
            let delay = backoff(app.config.outgoing.backoff, failed);
            app.outbox.retry(delivery, failed + 1, delay);
        }
        Next::Retry { why } => {
            tracing::warn!(
                "outgoing webhook of bot {} for message {}: {why}; giving up",
                delivery.bot.0,
                delivery.message.0
            );
            give_up(app, &ctx, &delivery, &why);
        }
        Next::Done { reply, owner } => {
            let owner = owner.map(|detail| owner_notice(app, &ctx, &detail));
            finish(app, Some(&ctx), &delivery, reply, owner, None);
        }
        Next::Widget { reply, widget } => {
            finish(app, Some(&ctx), &delivery, Some(reply), None, Some(&widget));
        }
    }
}

/// Ends a delivery whose tries are spent: "Bot is unavailable" in the
/// conversation, and `why` to the bot's owner.
fn give_up(app: &App, ctx: &Context, delivery: &Delivery, why: &str) {
    let reply = failure("Bot is unavailable");
    finish(app, Some(ctx), delivery, Some(reply), Some(owner_notice(app, ctx, why)), None);
}

/// "Failure! …", Zulip's prefix of the notices in the conversation.
fn failure(what: &str) -> String {
    format!("Failure! {what}")
}

/// Posts the delivery's request and reads what its answer asks for.
fn attempt(app: &App, client: &Client, ctx: &Context, delivery: &Delivery) -> Next {
    let is_direct = matches!(ctx.message.destination, Destination::Direct { .. });
    if ctx.service.interface == Interface::Slack && is_direct {
        return Next::Done {
            reply: Some(failure("Slack outgoing webhooks don't support direct messages.")),
            owner: None,
        };
    }
    let url = &ctx.service.base_url;
    let scheme = |s: &str| url.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s));
    if !scheme("http://") && !scheme("https://") {
        return Next::Done {
            reply: Some(failure("Bot is unavailable")),
            owner: Some(
                "natter delivers to outgoing webhooks over HTTP and HTTPS only, and the URL \
                 configured for the webhook is neither an http:// nor an https:// URL."
                    .into(),
            ),
        };
    }
    let base = crate::api::realm::realm_url(app, &ctx.realm);
    let host = base.trim_start_matches("https://").trim_start_matches("http://");
    let parts = request::Parts {
        state: &app.state,
        realm: &ctx.realm,
        bot: &ctx.bot,
        service: &ctx.service,
        message: &ctx.message,
        delivery,
        host,
    };
    let outcome = match ctx.service.interface {
        Interface::Generic => {
            client.post(&ctx.service.base_url, "application/json", &request::generic(&parts))
        }
        Interface::Slack => client.post(
            &ctx.service.base_url,
            "application/x-www-form-urlencoded",
            &request::slack(&parts),
        ),
    };
    let seconds = app.config.outgoing.timeout.as_secs();
    match outcome {
        Outcome::TimedOut => {
            Next::Retry { why: format!("Request timed out after {seconds} seconds.") }
        }
        Outcome::ConnectionError(_) => Next::Retry {
            why: format!(
                "The message `{}` resulted in a connection error when sending a request to an \
                 outgoing webhook! See the server logs for more information.",
                ctx.message.content()
            ),
        },
        Outcome::Disallowed => Next::Done {
            reply: Some(failure("Third party responded with 407")),
            owner: Some(
                "The URL configured for the webhook is for a private or disallowed network.".into(),
            ),
        },
        Outcome::Failed(why) => {
            tracing::warn!("outgoing webhook of bot {}: {why}", ctx.bot.id.0);
            let text = format!(
                "An exception of type *RequestException* occurred for message `{}`! See the \
                 server logs for more information.",
                ctx.message.content()
            );
            Next::Done {
                reply: Some(failure(&text)),
                owner: Some(format!(
                    "When trying to send a request to the webhook service, an exception of type \
                     RequestException occurred:\n```\n{why}\n```"
                )),
            }
        }
        Outcome::Answered { status, body } if !(200..300).contains(&status) => Next::Done {
            reply: Some(failure(&format!("Third party responded with {status}"))),
            owner: Some(format!(
                "The webhook got a response with status code *{status}*.{}",
                payload(body.as_deref())
            )),
        },
        Outcome::Answered { body, .. } => answer(ctx, body.as_deref()),
    }
}

/// The answer of a 2xx response with `body` (`None`: too large or not
/// text).
fn answer(ctx: &Context, body: Option<&str>) -> Next {
    let refused = |why: &str| Next::Done {
        reply: Some(failure(why)),
        owner: Some(format!(
            "The outgoing webhook server attempted to send a message in Zulip, but that request \
             resulted in the following error:\n> {why}{}",
            payload(body)
        )),
    };
    let Some(body) = body else {
        return refused("Invalid response: larger than 1 MiB or not text");
    };
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        return refused("Invalid JSON in response");
    };
    // Older bot servers answered the JSON string "" when nothing was due.
    if json == Value::String(String::new()) {
        return Next::Done { reply: None, owner: None };
    }
    let Value::Object(map) = json else { return refused("Invalid response format") };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let content = match ctx.service.interface {
        Interface::Generic => {
            let not_required = map.get("response_not_required").is_some_and(truthy);
            if not_required {
                None
            } else {
                map.get("content").or_else(|| map.get("response_string")).map(text)
            }
        }
        Interface::Slack => map.get("text").map(text),
    };
    let Some(reply) = content.filter(|c| !c.trim().is_empty()) else {
        return Next::Done { reply: None, owner: None };
    };
    // Zulip's Slack interface reads no widget.
    let widget = match (ctx.service.interface, map.get("widget_content")) {
        (Interface::Generic, Some(value)) if !value.is_null() => value,
        _ => return Next::Done { reply: Some(reply), owner: None },
    };
    let checked = match widget {
        Value::String(text) => check_widget_content(text),
        _ => Err("Widgets: API programmer sent invalid JSON content".to_owned()),
    };
    match checked {
        Ok(widget) => Next::Widget { reply, widget },
        Err(why) => refused(&why),
    }
}

/// Whether Python would take `value` as true (Zulip reads
/// `response_not_required` so).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The owner's notice's quote of a response body, if any.
fn payload(body: Option<&str>) -> String {
    match body {
        Some(body) if !body.is_empty() => {
            format!("\nThe response contains the following payload:\n```\n{body}\n```")
        }
        _ => String::new(),
    }
}

/// The direct message to the bot's owner about a failed delivery.
fn owner_notice(app: &App, ctx: &Context, detail: &str) -> String {
    let base = crate::api::realm::realm_url(app, &ctx.realm);
    let m = &ctx.message;
    let url = match &m.destination {
        Destination::Channel { channel, topic } => {
            let link =
                app.state.channels.get(channel).map(|c| crate::send::links::topic_url(&c, topic));
            format!("{base}/{}/near/{}", link.unwrap_or_else(|| "#narrow".into()), m.id.0)
        }
        Destination::Direct { participants } => {
            let ids: Vec<String> = participants.iter().map(|p| p.0.to_string()).collect();
            format!("{base}/#narrow/dm/{}-dm/near/{}", ids.join(","), m.id.0)
        }
    };
    format!(
        "[A message]({url}) to your bot @_**{}** triggered an outgoing webhook.\n{detail}",
        ctx.bot.full_name
    )
}

/// Ends a delivery: posts `reply` as the bot in the message's
/// conversation (as `widget`, if given) and `owner` as the bot to its
/// owner, the last of them in one record with the delivery's end (or the
/// end alone).
fn finish(
    app: &App,
    ctx: Option<&Context>,
    delivery: &Delivery,
    reply: Option<String>,
    owner: Option<String>,
    widget: Option<&Value>,
) {
    let done =
        || Mutation::Bot(Box::new(BotChange::Finish(vec![(delivery.message, delivery.bot)])));
    let mut posts: Vec<(Conversation, String)> = Vec::new();
    if let (Some(ctx), Some(reply)) = (ctx, reply) {
        let to = match &ctx.message.destination {
            Destination::Channel { channel, topic } => {
                Conversation::Channel { channel: *channel, topic: topic.to_string() }
            }
            Destination::Direct { participants } => Conversation::Direct(participants.to_vec()),
        };
        posts.push((to, reply));
    }
    if let (Some(ctx), Some(owner)) = (ctx, owner) {
        let active = |id| app.state.users.get(&id).is_some_and(|u| u.is_active);
        if let Some(id) = ctx.bot.bot_owner.filter(|o| active(*o)) {
            posts.push((Conversation::Direct(vec![id]), owner));
        }
    }
    let last = posts.len();
    let mut finished = false;
    for (n, (to, content)) in posts.into_iter().enumerate() {
        let Some(ctx) = ctx else { break };
        let extra = if n + 1 == last { vec![done()] } else { Vec::new() };
        let widget = if n == 0 { widget } else { None };
        match send_as(app, &ctx.bot, to, &content, CLIENT, extra, widget) {
            Ok(_) => finished |= n + 1 == last,
            Err(e) => tracing::warn!(
                "bot {} could not post its answer to message {}: {}",
                ctx.bot.id.0,
                delivery.message.0,
                e.msg
            ),
        }
    }
    if !finished {
        if let Err(e) = app.committer.commit(|_| Ok((done(), ()))) {
            tracing::warn!("could not record the end of a delivery: {}", e.msg);
        }
    }
}

/// The back-off before retry `n` (from 0).
pub fn backoff(base: Duration, n: u32) -> Duration {
    base.saturating_mul(1 << n.min(16))
}
