//! Narrows: Zulip's message filters (`narrow` on `GET /messages` and on
//! `POST /register`), parsed once and matched against single messages.
//!
//! A narrow is a list of terms, each an operator, an operand and an
//! optional negation. Clients send it as JSON in two syntaxes: the legacy
//! pair list `[["stream","general"],["topic","lunch"]]` and the object list
//! `[{"operator":"channel","operand":"general","negated":false}]`. Parsing
//! resolves every name (channel, user email) to an id against the caller's
//! realm, so a bad operand is refused up front with a 400 naming `narrow`,
//! and matching is a pure function of the message and the viewer's flags.
//!
//! The module decides *whether* a message matches; *which* messages to
//! look at (an index for a channel, a topic, a conversation) is the
//! reader's business — it asks through `Narrow::channel`, `Narrow::topic`,
//! `Narrow::conversation` and `Narrow::id`. Visibility is not decided here:
//! callers check `state::access::message_view` as well.

pub mod query;
pub mod search;

#[cfg(test)]
mod equivalence;

use search::{search_terms, text_matches};

use serde_json::Value;

use crate::error::ApiError;
use crate::state::access::can_see_channel;
use crate::state::lookup::Feature;
use crate::state::{ChannelId, Destination, Flags, Message, MessageId, State, User, UserId};

/// Most terms in one narrow.
pub const MAX_TERMS: usize = 32;
/// Longest operand string, in characters.
pub const MAX_OPERAND_CHARS: usize = 1_000;
/// Most users named in one `dm` operand.
pub const MAX_DM_USERS: usize = 100;
/// Most words in one `search` operand.
pub const MAX_SEARCH_WORDS: usize = 32;

/// What a `has:` term asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Has {
    /// A link in the rendered content.
    Link,
    /// An inline image.
    Image,
    /// A link to an uploaded file.
    Attachment,
    /// At least one emoji reaction.
    Reaction,
}

impl Has {
    /// The feature of `state::lookup` the term asks for.
    pub fn feature(self) -> Feature {
        match self {
            Has::Link => Feature::Link,
            Has::Image => Feature::Image,
            Has::Attachment => Feature::Attachment,
            Has::Reaction => Feature::Reaction,
        }
    }
}

/// What an `is:` term asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Is {
    /// A direct message (`is:dm`, legacy `is:private`).
    Dm,
    /// Starred by the viewer.
    Starred,
    /// Mentions the viewer (personally, by group or by wildcard).
    Mentioned,
    /// Not read by the viewer.
    Unread,
    /// In a resolved topic (`✔ ` prefix).
    Resolved,
    /// Contains one of the viewer's alert words.
    Alerted,
}

/// One resolved filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Messages of one channel.
    Channel(ChannelId),
    /// Channel messages whose topic equals this (compared lowercased).
    Topic(String),
    /// One direct conversation: exactly these participants (sorted, the
    /// viewer included).
    Dm(Vec<UserId>),
    /// Direct messages whose participants include this user.
    DmIncluding(UserId),
    /// Messages from this sender.
    Sender(UserId),
    /// A flag or kind of message.
    Is(Is),
    /// Some content feature.
    Has(Has),
    /// Exactly this message.
    Id(MessageId),
    /// An anchor hint for clients; filters nothing.
    Near(MessageId),
    /// Every term — a word, or a quoted phrase — occurs in the content or
    /// the topic, compared by stem (`search`); each term is its stems.
    Search(Vec<Vec<String>>),
    /// `in:home`: not in a muted channel.
    InHome,
    /// `in:all`: everything (a no-op filter).
    InAll,
}

/// One term: a filter, possibly negated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// The filter.
    pub filter: Filter,
    /// Match messages the filter rejects instead.
    pub negated: bool,
}

/// A parsed narrow: the conjunction of its terms. The empty narrow
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Narrow {
    /// The terms, in the order given.
    pub terms: Vec<Term>,
}

/// The error for a malformed narrow (wrong JSON shape).
fn malformed(why: &str) -> ApiError {
    ApiError::invalid("narrow", why)
}

/// Zulip's error for a well-formed term that names nothing valid.
pub(crate) fn bad_operator(desc: impl std::fmt::Display) -> ApiError {
    ApiError {
        status: 400,
        code: "BAD_NARROW",
        msg: format!("Invalid narrow operator: {desc}"),
        extra: vec![("var_name", Value::from("narrow"))],
    }
}

impl Narrow {
    /// Parses a narrow in either syntax, resolving names against
    /// `viewer`'s realm. Channels the viewer may not know about are
    /// "unknown", like nonexistent ones. A `with` term is resolved first:
    /// when it names a message the viewer may read, that message's
    /// conversation replaces the narrow's conversation terms.
    pub fn parse(state: &State, viewer: &User, value: &Value) -> Result<Narrow, ApiError> {
        let items = match value {
            Value::Array(items) => items,
            Value::Null => return Ok(Narrow::default()),
            _ => return Err(malformed("not a list")),
        };
        if items.len() > MAX_TERMS {
            return Err(malformed(&format!("more than {MAX_TERMS} terms")));
        }
        let split = items.iter().map(split_term).collect::<Result<Vec<_>, _>>()?;
        let mut with = split.iter().filter(|(operator, ..)| operator.eq_ignore_ascii_case("with"));
        let focus = match (with.next(), with.next()) {
            (Some(_), Some(_)) => {
                return Err(bad_combination("Duplicate 'with' operators."));
            }
            (Some((operator, operand, _)), None) => {
                conversation_of(state, viewer, MessageId(operand_id(operator, operand)?))
            }
            (None, _) => None,
        };
        let replaced = focus.is_some();
        let mut terms = focus.unwrap_or_default();
        for (operator, operand, negated) in split {
            if operator.eq_ignore_ascii_case("with") || (replaced && names_conversation(operator)) {
                continue;
            }
            let filter = resolve(state, viewer, operator, operand)?;
            terms.push(Term { filter, negated });
        }
        Ok(Narrow { terms })
    }

    /// Whether `message`, carrying `flags` for `viewer`, passes every term.
    pub fn matches(&self, state: &State, viewer: &User, message: &Message, flags: Flags) -> bool {
        self.terms.iter().all(|t| t.filter.accepts(state, viewer, message, flags) != t.negated)
    }

    /// Whether the narrow has no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    fn positive(&self) -> impl Iterator<Item = &Filter> {
        self.terms.iter().filter(|t| !t.negated).map(|t| &t.filter)
    }

    /// The channel a positive `channel` term restricts to.
    pub fn channel(&self) -> Option<ChannelId> {
        self.positive().find_map(|f| match f {
            Filter::Channel(c) => Some(*c),
            _ => None,
        })
    }

    /// The (lowercased) topic a positive `topic` term restricts to.
    pub fn topic(&self) -> Option<&str> {
        self.positive().find_map(|f| match f {
            Filter::Topic(t) => Some(t.as_str()),
            _ => None,
        })
    }

    /// The participants of the conversation a positive `dm` term names.
    pub fn conversation(&self) -> Option<&[UserId]> {
        self.positive().find_map(|f| match f {
            Filter::Dm(users) => Some(users.as_slice()),
            _ => None,
        })
    }

    /// The message a positive `id` term names.
    pub fn id(&self) -> Option<MessageId> {
        self.positive().find_map(|f| match f {
            Filter::Id(id) => Some(*id),
            _ => None,
        })
    }

    /// The stems of positive `search` terms, for highlighting.
    pub fn search_stems(&self) -> Vec<&str> {
        self.positive()
            .flat_map(|f| match f {
                Filter::Search(terms) => terms.iter().flatten().map(String::as_str).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Whether a positive `is:` term asks for `which`.
    pub fn is(&self, which: Is) -> bool {
        self.positive().any(|f| *f == Filter::Is(which))
    }

    /// Whether a positive term limits the narrow to direct messages.
    pub fn only_direct(&self) -> bool {
        self.positive()
            .any(|f| matches!(f, Filter::Dm(_) | Filter::DmIncluding(_) | Filter::Is(Is::Dm)))
    }
}

/// Zulip's error for terms that cannot go together.
fn bad_combination(why: &str) -> ApiError {
    ApiError {
        status: 400,
        code: "BAD_NARROW",
        msg: format!("Invalid narrow operator combination: {why}"),
        extra: vec![("var_name", Value::from("narrow"))],
    }
}

/// The terms of the conversation that holds message `id` now (`with:`):
/// its channel and topic, or its direct conversation — `None` when there
/// is no such message or `viewer` may not read it, and the narrow then
/// stays as given (Zulip's rule: a link to a moved or deleted message
/// still opens its old place).
fn conversation_of(state: &State, viewer: &User, id: MessageId) -> Option<Vec<Term>> {
    let message = state.messages.get(&id)?;
    crate::state::access::message_view(state, viewer, &message)?;
    let term = |filter| Term { filter, negated: false };
    Some(match &message.destination {
        Destination::Channel { channel, topic } => {
            vec![term(Filter::Channel(*channel)), term(Filter::Topic(topic.to_lowercase()))]
        }
        Destination::Direct { participants } => vec![term(Filter::Dm(participants.to_vec()))],
    })
}

/// Whether `operator` names a conversation (`with:` replaces those).
fn names_conversation(operator: &str) -> bool {
    let normalized = operator.to_ascii_lowercase().replace('_', "-");
    matches!(normalized.as_str(), "channel" | "stream" | "topic" | "subject" | "dm" | "pm-with")
}

/// `(operator, operand, negated)` of every term of a narrow in either
/// syntax, checked for shape only (`Narrow::parse` resolves them).
pub fn split_terms(value: &Value) -> Result<Vec<(&str, &Value, bool)>, ApiError> {
    let items = match value {
        Value::Array(items) => items,
        _ => return Err(malformed("not a list")),
    };
    if items.len() > MAX_TERMS {
        return Err(malformed(&format!("more than {MAX_TERMS} terms")));
    }
    items.iter().map(split_term).collect()
}

/// `(operator, operand, negated)` of one term in either syntax.
fn split_term(item: &Value) -> Result<(&str, &Value, bool), ApiError> {
    match item {
        Value::Array(pair) if pair.len() == 2 => {
            let operator = pair[0].as_str().ok_or_else(|| malformed("operator is not a string"))?;
            Ok((operator, &pair[1], false))
        }
        Value::Array(_) => Err(malformed("a term is not an [operator, operand] pair")),
        Value::Object(map) => {
            let operator = map
                .get("operator")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a term has no string 'operator'"))?;
            let operand = map.get("operand").ok_or_else(|| malformed("a term has no 'operand'"))?;
            let negated = match map.get("negated") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(malformed("'negated' is not a boolean")),
            };
            Ok((operator, operand, negated))
        }
        _ => Err(malformed("a term is neither a pair nor an object")),
    }
}

/// An operand that must be a string, bounded in length.
fn operand_str<'a>(operator: &str, operand: &'a Value) -> Result<&'a str, ApiError> {
    let s = operand.as_str().ok_or_else(|| bad_operator(format!("'{operator}' needs a string")))?;
    if s.chars().count() > MAX_OPERAND_CHARS {
        return Err(bad_operator(format!("'{operator}' operand is too long")));
    }
    Ok(s)
}

/// An operand that must be a positive integer (a JSON number or digits).
fn operand_id(operator: &str, operand: &Value) -> Result<u64, ApiError> {
    let id = match operand {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    id.ok_or_else(|| bad_operator(format!("'{operator}' needs a message ID")))
}

/// One user named by id, email or delivery email in the viewer's realm.
fn resolve_user(state: &State, viewer: &User, operand: &Value) -> Result<UserId, ApiError> {
    let found = match operand {
        Value::Number(n) => n.as_u64().and_then(|id| state.user_in_realm(viewer.realm, UserId(id))),
        Value::String(s) if s.trim().parse::<u64>().is_ok() => {
            state.user_in_realm(viewer.realm, UserId(s.trim().parse().unwrap_or_default()))
        }
        Value::String(s) => {
            let email = s.trim();
            state
                .user_by_email(viewer.realm, email)
                .or_else(|| state.user_by_delivery_email(viewer.realm, email))
        }
        _ => None,
    };
    found.map(|u| u.id).ok_or_else(|| bad_operator("unknown user"))
}

/// The users of a `dm` operand: `"a@x, b@y"`, `[ids]`, `[emails]` or an id.
fn resolve_users(state: &State, viewer: &User, operand: &Value) -> Result<Vec<UserId>, ApiError> {
    let items: Vec<Value> = match operand {
        Value::String(s) => {
            if s.chars().count() > MAX_OPERAND_CHARS {
                return Err(bad_operator("'dm' operand is too long"));
            }
            s.split(',').map(str::trim).filter(|e| !e.is_empty()).map(Value::from).collect()
        }
        Value::Number(_) => vec![operand.clone()],
        Value::Array(items) => items.clone(),
        _ => return Err(bad_operator("'dm' needs user IDs or emails")),
    };
    if items.is_empty() {
        return Err(bad_operator("'dm' names no user"));
    }
    if items.len() > MAX_DM_USERS {
        return Err(bad_operator(format!("'dm' names more than {MAX_DM_USERS} users")));
    }
    let mut users = vec![viewer.id];
    for item in &items {
        users.push(resolve_user(state, viewer, item)?);
    }
    users.sort();
    users.dedup();
    Ok(users)
}

fn resolve(
    state: &State,
    viewer: &User,
    operator: &str,
    operand: &Value,
) -> Result<Filter, ApiError> {
    // Zulip accepts `-` and `_` interchangeably (`pm-with`, `pm_with`).
    let normalized = operator.to_ascii_lowercase().replace('_', "-");
    let filter = match normalized.as_str() {
        "channel" | "stream" => {
            // Whether a channel is there, and the viewer may see it, read
            // in place: a narrow is parsed on every `GET /messages`, and a
            // `Channel` copy (names, description, settings) per parse cost
            // more than the rest of it.
            let in_realm = |id: ChannelId| {
                state.channels.read(&id, |c| c.realm == viewer.realm).unwrap_or(false).then_some(id)
            };
            let channel = match operand {
                Value::Number(n) => n.as_u64().and_then(|id| in_realm(ChannelId(id))),
                Value::String(s) => {
                    if s.chars().count() > MAX_OPERAND_CHARS {
                        return Err(bad_operator("channel name is too long"));
                    }
                    state.channel_id_by_name(viewer.realm, s.trim()).or_else(|| {
                        s.trim().parse::<u64>().ok().and_then(|id| in_realm(ChannelId(id)))
                    })
                }
                _ => None,
            };
            let visible = |id: &ChannelId| {
                state.channels.read(id, |c| can_see_channel(viewer, c)).unwrap_or(false)
            };
            let channel = channel.filter(visible).ok_or_else(|| bad_operator("unknown channel"))?;
            Filter::Channel(channel)
        }
        "topic" | "subject" => {
            let topic = operand_str(operator, operand)?.trim();
            let realm = state.realms.get_shared(&viewer.realm);
            let empty_name = realm.as_ref().map(|r| r.settings.empty_topic_display_name.as_str());
            if Some(topic) == empty_name || topic == "(no topic)" {
                Filter::Topic(String::new())
            } else {
                Filter::Topic(topic.to_lowercase())
            }
        }
        "dm" | "pm-with" => Filter::Dm(resolve_users(state, viewer, operand)?),
        "dm-including" | "group-pm-with" => {
            Filter::DmIncluding(resolve_user(state, viewer, operand)?)
        }
        "sender" => Filter::Sender(resolve_user(state, viewer, operand)?),
        "is" => Filter::Is(match operand_str(operator, operand)?.trim() {
            "dm" | "private" => Is::Dm,
            "starred" => Is::Starred,
            "mentioned" => Is::Mentioned,
            "unread" => Is::Unread,
            "resolved" => Is::Resolved,
            "alerted" => Is::Alerted,
            other => return Err(bad_operator(format!("unknown 'is' operand {other}"))),
        }),
        "has" => Filter::Has(match operand_str(operator, operand)?.trim() {
            "link" => Has::Link,
            "image" => Has::Image,
            "attachment" => Has::Attachment,
            "reaction" => Has::Reaction,
            other => return Err(bad_operator(format!("unknown 'has' operand {other}"))),
        }),
        "in" => match operand_str(operator, operand)?.trim() {
            "home" => Filter::InHome,
            "all" => Filter::InAll,
            other => return Err(bad_operator(format!("unknown 'in' operand {other}"))),
        },
        "id" => Filter::Id(MessageId(operand_id(operator, operand)?)),
        "near" => Filter::Near(MessageId(operand_id(operator, operand)?)),
        "search" => {
            let terms = search_terms(operand_str(operator, operand)?);
            if terms.iter().map(Vec::len).sum::<usize>() > MAX_SEARCH_WORDS {
                return Err(bad_operator(format!("more than {MAX_SEARCH_WORDS} search words")));
            }
            Filter::Search(terms)
        }
        _ => return Err(bad_operator("unknown operator")),
    };
    Ok(filter)
}

/// Whether `topic` equals the lowercased `wanted`, ignoring case.
pub fn topic_eq(topic: &str, wanted: &str) -> bool {
    if topic.is_ascii() {
        topic.eq_ignore_ascii_case(wanted)
    } else {
        topic.to_lowercase() == wanted
    }
}

/// Whether `topic` is a resolved topic (Zulip marks them with `✔ `).
pub fn is_resolved_topic(topic: &str) -> bool {
    topic.starts_with("✔ ")
}

impl Filter {
    /// Whether the filter (not negated) accepts the message.
    pub fn accepts(&self, state: &State, viewer: &User, message: &Message, flags: Flags) -> bool {
        match self {
            Filter::Channel(c) => {
                matches!(&message.destination, Destination::Channel { channel, .. } if channel == c)
            }
            Filter::Topic(t) => match &message.destination {
                Destination::Channel { topic, .. } => topic_eq(topic, t),
                Destination::Direct { .. } => false,
            },
            Filter::Dm(users) => matches!(
                &message.destination,
                Destination::Direct { participants } if **participants == **users
            ),
            Filter::DmIncluding(user) => matches!(
                &message.destination,
                Destination::Direct { participants } if participants.contains(user)
            ),
            Filter::Sender(user) => message.sender == *user,
            Filter::Is(Is::Dm) => matches!(message.destination, Destination::Direct { .. }),
            Filter::Is(Is::Starred) => flags.contains(Flags::STARRED),
            Filter::Is(Is::Mentioned) => {
                flags.contains(Flags::MENTIONED)
                    || flags.contains(Flags::STREAM_WILDCARD_MENTIONED)
                    || flags.contains(Flags::TOPIC_WILDCARD_MENTIONED)
            }
            Filter::Is(Is::Unread) => !flags.contains(Flags::READ),
            Filter::Is(Is::Resolved) => matches!(
                &message.destination,
                Destination::Channel { topic, .. } if is_resolved_topic(topic)
            ),
            Filter::Is(Is::Alerted) => flags.contains(Flags::HAS_ALERT_WORD),
            Filter::Has(has) => has.feature().of(message),
            Filter::Id(id) => message.id == *id,
            Filter::Near(_) | Filter::InAll => true,
            Filter::Search(terms) => {
                let topic = match &message.destination {
                    Destination::Channel { topic, .. } => topic,
                    Destination::Direct { .. } => "",
                };
                text_matches(message.content(), topic, terms)
            }
            Filter::InHome => match &message.destination {
                Destination::Channel { channel, .. } => !state
                    .subscriptions
                    .read(&viewer.id, |subs| subs.get(channel).is_some_and(|s| s.is_muted))
                    .unwrap_or(false),
                Destination::Direct { .. } => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::Role;
    use crate::testkit::World;

    /// A realm with three members, a public and a private channel (the
    /// first user not in the private one), and a second realm with its own
    /// `general`.
    fn world() -> (World, Vec<User>) {
        let mut w = World::new();
        let mut users: Vec<User> =
            (0..3).map(|i| w.user("", &format!("u{i}@t.test"), Role::Member)).collect();
        users.push(w.user("other", "u3@t.test", Role::Member));
        let [u0, u1, u2, u3] = [&users[0], &users[1], &users[2], &users[3]];
        w.channel("", "general", false, &[u0, u1, u2]);
        w.channel("", "secret", true, &[u1, u2]);
        w.channel("other", "general", false, &[u3]);
        (w, users)
    }

    fn parse(state: &State, viewer: &User, v: Value) -> Result<Narrow, ApiError> {
        Narrow::parse(state, viewer, &v)
    }

    #[test]
    fn both_syntaxes_parse_to_the_same_terms() {
        let (w, users) = world();
        let state = &w.state;
        let legacy = parse(state, &users[0], json!([["stream", "General"], ["topic", "Lunch"]]));
        let modern = parse(
            state,
            &users[0],
            json!([{"operator": "channel", "operand": "general"},
                   {"operator": "subject", "operand": "lunch", "negated": false}]),
        );
        assert_eq!(legacy.unwrap(), modern.unwrap());
        let n = parse(state, &users[0], json!([{"operator":"topic","operand":"x","negated":true}]))
            .unwrap();
        assert!(n.terms[0].negated && n.topic().is_none());
    }

    #[test]
    fn names_resolve_against_the_viewers_realm_only() {
        let (w, users) = world();
        let state = &w.state;
        let (me, insider, stranger) = (&users[0], &users[1], &users[3]);
        // The private channel is unknown to a non-subscriber, known to a subscriber.
        let e = parse(state, me, json!([["stream", "secret"]])).unwrap_err();
        assert_eq!((e.status, e.code), (400, "BAD_NARROW"));
        assert!(parse(state, insider, json!([["stream", "secret"]])).is_ok());
        // Another realm's user is unknown, by email and by id.
        assert!(parse(state, me, json!([["dm", stranger.email]])).is_err());
        assert!(parse(state, me, json!([["dm", [stranger.id.0]]])).is_err());
        // Its `general` is a different channel from ours.
        let ours = parse(state, me, json!([["stream", "general"]])).unwrap().channel();
        let theirs = parse(state, stranger, json!([["stream", "general"]])).unwrap().channel();
        assert_ne!(ours, theirs);
        // dm operands: emails joined by ", ", ids, one id; the viewer is implied.
        let by_emails = parse(
            state,
            me,
            json!([["pm_with", format!("{}, {}", users[1].email, users[2].email)]]),
        )
        .unwrap();
        let by_ids = parse(state, me, json!([["dm", [users[2].id.0, users[1].id.0]]])).unwrap();
        assert_eq!(by_emails.conversation(), by_ids.conversation());
        assert_eq!(by_ids.conversation().unwrap().len(), 3);
        let one = parse(state, me, json!([["dm", users[1].id.0]])).unwrap();
        assert_eq!(one.conversation().unwrap(), &[me.id, users[1].id][..]);
    }

    #[test]
    fn bad_narrows_are_refused_naming_narrow() {
        let (w, users) = world();
        let state = &w.state;
        let me = &users[0];
        for bad in [
            json!({"stream": "general"}),
            json!([["stream"]]),
            json!([[1, "x"]]),
            json!([{"operand": "x"}]),
            json!([{"operator": "stream"}]),
            json!([{"operator": "is", "operand": "unread", "negated": "yes"}]),
            json!([["bogus", "x"]]),
            json!([["is", "nothing"]]),
            json!([["has", "nothing"]]),
            json!([["stream", "nope"]]),
            json!([["sender", "nobody@t.test"]]),
            json!([["id", "abc"]]),
            json!([["near", -1]]),
            json!([["topic", 5]]),
            json!([["search", "x".repeat(MAX_OPERAND_CHARS + 1)]]),
            json!(vec![json!(["is", "unread"]); MAX_TERMS + 1]),
            json!([["dm", []]]),
        ] {
            let e = parse(state, me, bad.clone()).unwrap_err();
            assert_eq!(e.status, 400, "{bad}");
            assert!(e.extra.iter().any(|(k, v)| *k == "var_name" && v == "narrow"), "{bad}: {e:?}");
        }
        assert!(parse(state, me, json!([])).unwrap().is_empty());
    }

    #[test]
    fn every_filter_matches_and_negates() {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let you = w.user("", "you@t.test", Role::Member);
        let general = w.channel("", "general", false, &[&me, &you]).id;
        let plain = w.post(&you, general, "Lunch", "Soup at NOON");
        let linked = w.post(&you, general, "✔ fixed", "see <https://example.com/x.png>");
        let direct = w.dm(&you, &[&me], "psst");
        let state = &w.state;
        let message = |id| state.messages.get(&id).unwrap();
        let check = |narrow: Value, id: MessageId, flags: Flags| -> bool {
            let n = Narrow::parse(state, &me, &narrow).unwrap();
            n.matches(state, &me, &message(id), flags)
        };
        let none = Flags::default();
        let read = Flags::READ;
        assert!(check(json!([["stream", "general"]]), plain, read));
        assert!(!check(json!([["stream", "general"]]), direct, read));
        assert!(check(json!([["stream", general.0]]), plain, read));
        assert!(check(json!([["topic", "lunch"]]), plain, read));
        assert!(!check(
            json!([{"operator": "topic", "operand": "lunch", "negated": true}]),
            plain,
            read
        ));
        assert!(check(json!([["dm", "you@t.test"]]), direct, read));
        assert!(!check(json!([["dm", "you@t.test"]]), plain, read));
        assert!(check(json!([["dm-including", you.id.0]]), direct, read));
        assert!(check(json!([["sender", "you@t.test"]]), plain, read));
        assert!(!check(json!([["sender", me.id.0]]), plain, read));
        assert!(check(json!([["is", "private"]]), direct, read));
        assert!(
            check(json!([["is", "dm"]]), direct, read)
                && !check(json!([["is", "dm"]]), plain, read)
        );
        assert!(
            check(json!([["is", "starred"]]), plain, Flags::STARRED)
                && !check(json!([["is", "starred"]]), plain, read)
        );
        assert!(check(json!([["is", "mentioned"]]), plain, Flags::TOPIC_WILDCARD_MENTIONED));
        assert!(
            check(json!([["is", "unread"]]), plain, none)
                && !check(json!([["is", "unread"]]), plain, read)
        );
        assert!(
            check(json!([["is", "resolved"]]), linked, read)
                && !check(json!([["is", "resolved"]]), plain, read)
        );
        assert!(check(json!([["is", "alerted"]]), plain, Flags::HAS_ALERT_WORD));
        assert!(
            check(json!([["has", "link"]]), linked, read)
                && !check(json!([["has", "link"]]), plain, read)
        );
        assert!(!check(json!([["has", "reaction"]]), plain, read));
        assert!(
            check(json!([["id", plain.0]]), plain, read)
                && !check(json!([["id", plain.0.to_string()]]), linked, read)
        );
        assert!(check(json!([["near", 1]]), plain, read));
        assert!(check(json!([["search", "noon soup"]]), plain, read));
        assert!(check(json!([["search", "soups"]]), plain, read), "by stem");
        assert!(!check(json!([["search", "soap"]]), plain, read));
        assert!(!check(json!([["search", "oup"]]), plain, read), "whole words only");
        assert!(check(json!([["search", "LUNCH"]]), plain, read), "search covers the topic");
        assert!(!check(json!([["search", "soup dinner"]]), plain, read));
        assert!(check(json!([["search", "\"soup at\""]]), plain, read));
        assert!(
            check(json!([["in", "home"]]), plain, read)
                && check(json!([["in", "all"]]), direct, read)
        );
        w.state.subscriptions.upsert(me.id, |s| s.get_mut(&general).unwrap().is_muted = true);
        let n = Narrow::parse(&w.state, &me, &json!([["in", "home"]])).unwrap();
        assert!(!n.matches(&w.state, &me, &w.state.messages.get(&plain).unwrap(), read));
    }
}
