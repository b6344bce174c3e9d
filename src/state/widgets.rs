//! Submessages: the state of a message's widget (a poll's question,
//! options and votes; a to-do list's title, tasks and ticks), kept as the
//! list of small JSON payloads its readers posted, in id order. natter
//! stores them and checks them as Zulip does (`validate`); clients
//! interpret them. The snapshot carries this area after the web sessions part
//! (format 14).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::ids::{MessageId, UserId};
use super::shard::{Entries, Sharded};

/// One submessage of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submessage {
    /// Its id (`submessage_id`), its own counter.
    pub id: u64,
    /// The message it belongs to.
    pub message: MessageId,
    /// Who posted it (the message's sender for the widget's first one).
    pub sender: UserId,
    /// Zulip's `msg_type` (always `widget` today).
    pub msg_type: String,
    /// The JSON text, as posted.
    pub content: String,
}

impl Submessage {
    /// Zulip's submessage object (a message's `submessages` items).
    pub fn to_api(&self) -> Value {
        json!({
            "id": self.id,
            "message_id": self.message.0,
            "sender_id": self.sender.0,
            "msg_type": self.msg_type,
            "content": self.content,
        })
    }

    /// Zulip's `submessage` event (without `id`).
    pub fn event(&self) -> Value {
        json!({
            "type": "submessage",
            "msg_type": self.msg_type,
            "message_id": self.message.0,
            "submessage_id": self.id,
            "sender_id": self.sender.0,
            "content": self.content,
        })
    }

    /// The widget type its content names (`poll`, `todo`), if it is a
    /// widget's first submessage.
    pub fn widget_type(&self) -> Option<String> {
        let value: Value = serde_json::from_str(&self.content).ok()?;
        value.get("widget_type")?.as_str().map(str::to_owned)
    }
}

/// This area's data. One field of `State`.
#[derive(Default)]
pub struct WidgetState {
    /// Each message's submessages, in id order (messages with none are
    /// absent).
    pub by_message: Sharded<MessageId, Vec<Submessage>>,
    /// The next free submessage id.
    next_id: AtomicU64,
}

/// `WidgetState` as key-sorted data, for snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WidgetsImage {
    /// Each message's submessages.
    pub by_message: Entries<MessageId, Vec<Submessage>>,
    /// The next free submessage id.
    pub next_id: u64,
}

impl WidgetsImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        self.by_message.parts()
    }
}

impl WidgetState {
    /// The snapshot cut (under the writer lock, like `State::image`).
    pub fn image(&self) -> WidgetsImage {
        WidgetsImage {
            by_message: self.by_message.freeze().into(),
            next_id: self.next_id.load(Ordering::Acquire),
        }
    }

    /// Rebuilds from a snapshot.
    pub fn from_image(image: WidgetsImage) -> Self {
        WidgetState {
            by_message: image.by_message.into_iter().collect(),
            next_id: AtomicU64::new(image.next_id),
        }
    }

    /// The id the next submessage gets (ids start at 1).
    pub fn peek(&self) -> u64 {
        self.next_id.load(Ordering::Acquire).max(1)
    }

    /// Records that submessage `id` is taken (apply only).
    pub(crate) fn claim(&self, id: u64) {
        self.next_id.fetch_max(id + 1, Ordering::AcqRel);
    }

    /// A message's submessages, in id order.
    pub fn of(&self, message: MessageId) -> Vec<Submessage> {
        self.by_message.get(&message).unwrap_or_default()
    }

    /// The widget type of a message (its first `widget` submessage's).
    pub fn widget_type(&self, message: MessageId) -> Option<String> {
        self.by_message
            .read(&message, |list| {
                list.iter().find(|s| s.msg_type == "widget").and_then(Submessage::widget_type)
            })
            .flatten()
    }

    /// Whether `user` posted any submessage on `message`.
    pub fn posted_by(&self, message: MessageId, user: UserId) -> bool {
        self.by_message.read(&message, |list| list.iter().any(|s| s.sender == user)) == Some(true)
    }
}

/// The widget a message's content makes at send time, as Zulip's server
/// does: `/poll question` with option lines, `/todo title` with task
/// lines (`task: description`). The content of its first submessage.
pub fn widget_for(content: &str) -> Option<Value> {
    let first = content.split(char::is_whitespace).next().unwrap_or("");
    let kind = first.strip_prefix('/')?;
    if kind != "poll" && kind != "todo" {
        return None;
    }
    let rest = content.replacen(first, "", 1);
    let mut lines = rest.lines();
    let head = match rest.lines().next() {
        Some(line) if !line.is_empty() => {
            lines.next();
            line.trim().to_owned()
        }
        _ => String::new(),
    };
    // A list marker (`-` or `*`) and the spaces around it go.
    let items = lines.filter_map(|line| {
        let line = line.trim();
        let item = line.strip_prefix(['-', '*']).unwrap_or(line).trim_start();
        (!item.is_empty()).then(|| item.to_owned())
    });
    let extra_data = if kind == "poll" {
        json!({"question": head, "options": items.collect::<Vec<_>>()})
    } else {
        let tasks: Vec<Value> = items
            .map(|item| match item.split_once(": ") {
                Some((task, desc)) => json!({"task": task.trim(), "desc": desc.trim()}),
                None => json!({"task": item.trim(), "desc": ""}),
            })
            .collect();
        json!({"task_list_title": head, "tasks": tasks})
    };
    Some(json!({"widget_type": kind, "extra_data": extra_data}))
}

/// The largest option or task index a client may name (Zulip's `MAX_IDX`).
const MAX_IDX: i64 = 1000;

/// The widget a sender names for its message (`widget_content`, as an
/// outgoing-webhook bot's reply may carry): JSON text of a
/// `{widget_type, extra_data}` object, checked as Zulip does. Only a
/// zform of `choices` (a heading and buttons whose `reply` is sent when
/// pressed) is accepted. `Err` holds Zulip's message.
pub fn check_widget_content(text: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|_| "Widgets: API programmer sent invalid JSON content".to_owned())?;
    check_widget_value(&value).map_err(|why| format!("Widgets: {why}"))?;
    Ok(value)
}

fn check_widget_value(value: &Value) -> Result<(), String> {
    let object = value.as_object().ok_or("widget_content is not a dict")?;
    let widget_type = object.get("widget_type").ok_or("widget_type is not in widget_content")?;
    let extra = object.get("extra_data").ok_or("extra_data is not in widget_content")?;
    let extra = extra.as_object().ok_or("extra_data is not a dict")?;
    let widget_type = widget_type.as_str().ok_or("widget_type is not a string")?;
    if widget_type != "zform" {
        return Err(format!("unknown widget type: {widget_type}"));
    }
    let kind = extra.get("type").ok_or("zform is missing type field")?;
    if kind.as_str() != Some("choices") {
        let kind = kind.as_str().map_or_else(|| kind.to_string(), str::to_owned);
        return Err(format!("unknown zform type: {kind}"));
    }
    match extra.get("heading") {
        Some(Value::String(_)) => {}
        Some(_) => return Err("extra_data[\"heading\"] is not a string".into()),
        None => return Err("heading key is missing from extra_data".into()),
    }
    let choices = extra.get("choices").ok_or("choices key is missing from extra_data")?;
    let choices = choices.as_array().ok_or("extra_data[\"choices\"] is not a list")?;
    for (i, choice) in choices.iter().enumerate() {
        let name = format!("extra_data[\"choices\"][{i}]");
        let choice = choice.as_object().ok_or_else(|| format!("{name} is not a dict"))?;
        for field in ["short_name", "long_name", "reply"] {
            match choice.get(field) {
                Some(Value::String(_)) => {}
                Some(_) => return Err(format!("{name}[\"{field}\"] is not a string")),
                None => return Err(format!("{field} key is missing from {name}")),
            }
        }
    }
    Ok(())
}

/// Checks a submessage's JSON against the rules of the message's widget
/// type, as Zulip does: `Err` holds Zulip's message. Contents for other
/// (or no) widget types pass unchecked.
pub fn validate(widget_type: Option<&str>, data: &Value, is_author: bool) -> Result<(), String> {
    let (what, rules): (&str, Rules) = match widget_type {
        Some("poll") => ("poll data", POLL),
        Some("todo") => ("todo data", TODO),
        _ => return Ok(()),
    };
    let Some(object) = data.as_object() else {
        return Err(format!("{what} is not a dict"));
    };
    let kind = match object.get("type") {
        None => return Err(format!("{what}[\"type\"] is missing")),
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err(format!("{what}[\"type\"] is not a string")),
    };
    let Some((_, fields)) = rules.iter().find(|(name, _)| *name == kind) else {
        return Err(format!("Unknown type for {what}: {kind}"));
    };
    if !is_author && matches!(kind, "question" | "new_task_list_title") {
        return Err(if kind == "question" {
            "You can't edit a question unless you are the author.".into()
        } else {
            "You can't edit the task list title unless you are the author.".into()
        });
    }
    check_fields(what, object, fields)
}

/// What a field of a submessage must hold.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bool,
    /// 1 or -1.
    Vote,
    /// 0 to `MAX_IDX`.
    Index,
}

type Rules = &'static [(&'static str, &'static [(&'static str, Kind)])];

const POLL: Rules = &[
    ("vote", &[("key", Kind::Str), ("vote", Kind::Vote)]),
    ("question", &[("question", Kind::Str)]),
    ("new_option", &[("option", Kind::Str), ("idx", Kind::Index)]),
];

const TODO: Rules = &[
    (
        "new_task",
        &[
            ("key", Kind::Index),
            ("task", Kind::Str),
            ("desc", Kind::Str),
            ("completed", Kind::Bool),
        ],
    ),
    ("strike", &[("key", Kind::Str)]),
    ("new_task_list_title", &[("title", Kind::Str)]),
];

/// Exactly `type` and `fields`, each of its kind.
fn check_fields(
    what: &str,
    object: &Map<String, Value>,
    fields: &[(&str, Kind)],
) -> Result<(), String> {
    for (name, kind) in fields {
        let Some(value) = object.get(*name) else {
            return Err(format!("{what}[\"{name}\"] is missing"));
        };
        let fits = match kind {
            Kind::Str => value.is_string(),
            Kind::Bool => value.is_boolean(),
            Kind::Vote => matches!(value.as_i64(), Some(1 | -1)),
            Kind::Index => value.as_i64().is_some_and(|i| (0..=MAX_IDX).contains(&i)),
        };
        if !fits {
            let expected = match kind {
                Kind::Str => "is not a string",
                Kind::Bool => "is not a boolean",
                Kind::Vote => "is not in the list of allowed values",
                Kind::Index => "is not in the allowed range",
            };
            return Err(format!("{what}[\"{name}\"] {expected}"));
        }
    }
    let mut extra: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "type" && !fields.iter().any(|(name, _)| name == k))
        .collect();
    if !extra.is_empty() {
        extra.sort_unstable();
        return Err(format!("Unexpected arguments: {}", extra.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widget_content_is_a_zform_of_choices_or_refused_with_zulips_message() {
        let zform = r#"{"widget_type": "zform", "extra_data": {"type": "choices",
            "heading": "h", "choices": [{"short_name": "a", "long_name": "A", "reply": "a"}]}}"#;
        assert_eq!(check_widget_content(zform).unwrap()["widget_type"], "zform");
        let refused = [
            ("nope", "Widgets: API programmer sent invalid JSON content"),
            ("[]", "Widgets: widget_content is not a dict"),
            (r#"{"extra_data": {}}"#, "Widgets: widget_type is not in widget_content"),
            (r#"{"widget_type": "zform"}"#, "Widgets: extra_data is not in widget_content"),
            (r#"{"widget_type": "zform", "extra_data": 1}"#, "Widgets: extra_data is not a dict"),
            (r#"{"widget_type": "poll", "extra_data": {}}"#, "Widgets: unknown widget type: poll"),
            (
                r#"{"widget_type": "zform", "extra_data": {}}"#,
                "Widgets: zform is missing type field",
            ),
            (
                r#"{"widget_type": "zform", "extra_data": {"type": "other"}}"#,
                "Widgets: unknown zform type: other",
            ),
            (
                r#"{"widget_type": "zform", "extra_data": {"type": "choices", "choices": []}}"#,
                "Widgets: heading key is missing from extra_data",
            ),
            (
                r#"{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "h",
                    "choices": [{"short_name": "a", "long_name": 1, "reply": "a"}]}}"#,
                "Widgets: extra_data[\"choices\"][0][\"long_name\"] is not a string",
            ),
        ];
        for (text, why) in refused {
            assert_eq!(check_widget_content(text).unwrap_err(), why, "{text}");
        }
    }

    #[test]
    fn poll_and_todo_messages_make_their_widgets() {
        let poll = widget_for("/poll Tea or coffee?\n- Tea\n* Coffee\n\n  Water").unwrap();
        assert_eq!(
            poll,
            json!({"widget_type": "poll", "extra_data": {
                "question": "Tea or coffee?", "options": ["Tea", "Coffee", "Water"]}})
        );
        let todo = widget_for("/todo Launch\n- Write docs: the API page\n- Ship").unwrap();
        assert_eq!(
            todo,
            json!({"widget_type": "todo", "extra_data": {"task_list_title": "Launch", "tasks": [
                {"task": "Write docs", "desc": "the API page"}, {"task": "Ship", "desc": ""}]}})
        );
        assert_eq!(
            widget_for("/poll").unwrap()["extra_data"],
            json!({"question": "", "options": []})
        );
        assert_eq!(widget_for("/pollster a"), None);
        assert_eq!(widget_for("hello /poll"), None);
        assert_eq!(widget_for("/me waves"), None);
    }

    #[test]
    fn submessages_are_checked_against_their_widget_type() {
        let ok = |t: &str, v: Value| validate(Some(t), &v, false);
        assert_eq!(ok("poll", json!({"type": "vote", "key": "canned,1", "vote": 1})), Ok(()));
        assert_eq!(ok("poll", json!({"type": "new_option", "idx": 2, "option": "x"})), Ok(()));
        assert_eq!(
            ok(
                "todo",
                json!({"type": "new_task", "key": 3, "task": "t", "desc": "", "completed": false})
            ),
            Ok(())
        );
        assert_eq!(ok("todo", json!({"type": "strike", "key": "3,7"})), Ok(()));
        assert!(ok("poll", json!({"type": "vote", "key": "k", "vote": 2})).is_err());
        assert!(ok("poll", json!({"type": "vote", "key": "k", "vote": 1, "x": 1})).is_err());
        assert!(ok("poll", json!({"type": "new_option", "idx": 1001, "option": "x"})).is_err());
        assert_eq!(
            ok("poll", json!({"type": "question", "question": "q"})),
            Err("You can't edit a question unless you are the author.".into())
        );
        assert_eq!(
            validate(Some("poll"), &json!({"type": "question", "question": "q"}), true),
            Ok(())
        );
        assert_eq!(ok("poll", json!([1])), Err("poll data is not a dict".into()));
        assert_eq!(
            ok("todo", json!({"type": "nope"})),
            Err("Unknown type for todo data: nope".into())
        );
        assert_eq!(validate(None, &json!([1]), false), Ok(()));
    }
}
