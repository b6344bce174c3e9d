//! Reading messages: `GET /messages` (anchors, narrows, windows) and
//! `GET /users/me/{stream_id}/topics`, plus the message-related register
//! sections (`max_message_id`, `unread_msgs`, `starred_messages`).
//!
//! What a caller may see is decided by the permission engine
//! (`state::access`): messages delivered to them, and channel history
//! they may read. Which messages to look at comes from the indexes — a
//! topic, a channel or conversation (`by_recipient`), or the caller's own
//! delivered messages — walked outward from the anchor in batches, so a
//! narrow that an index answers never scans unrelated messages and the
//! shard locks are held only while ids are copied out.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{spectators, App, Call, Reply};
use crate::api::params::Params;
use crate::error::{ApiError, ApiResult};
use crate::markdown::escape_html;
pub(crate) use crate::narrow::query::{
    is_heavy, window, Anchor, Window, WindowBounds, LARGER_THAN_MAX_MESSAGE_ID,
};
use crate::narrow::search::highlight;
use crate::narrow::Narrow;
use crate::reply;
use crate::state::access::{can_read_history, can_see_channel, MessageView};
use crate::state::{ChannelId, Destination, Flags, Message, MessageId, Realm, State, User, UserId};
use crate::view::json_text::{self, SortedMembers};
use crate::view::message::MessageOptions;

/// Most messages one `GET /messages` may ask for (`num_before + num_after`).
pub const MAX_MESSAGES_PER_FETCH: u64 = 5_000;
/// Most unread messages `unread_msgs` lists (newest kept), as in Zulip.
pub const MAX_UNREAD_MESSAGES: usize = 50_000;

fn parse_anchor(params: &mut Params) -> ApiResult<Anchor> {
    let use_first_unread = params.bool_or("use_first_unread_anchor", false)?;
    let raw = params.raw("anchor").map(|s| s.trim().trim_matches('"').to_owned());
    if use_first_unread {
        return Ok(Anchor::FirstUnread);
    }
    let raw = raw.ok_or_else(|| ApiError::missing("anchor"))?;
    match raw.as_str() {
        "newest" => Ok(Anchor::Id(LARGER_THAN_MAX_MESSAGE_ID)),
        "oldest" => Ok(Anchor::Id(0)),
        "first_unread" => Ok(Anchor::FirstUnread),
        _ => match raw.parse::<i64>() {
            Ok(n) if n < 0 => Ok(Anchor::Id(0)),
            Ok(n) => Ok(Anchor::Id((n as u64).min(LARGER_THAN_MAX_MESSAGE_ID))),
            Err(_) => Err(ApiError::bad_request("Invalid anchor").with("var_name", "anchor")),
        },
    }
}

fn count(params: &mut Params, name: &str) -> ApiResult<u64> {
    match params.int(name)? {
        None => Ok(0),
        Some(n) if n < 0 => Err(ApiError::invalid(name, "must not be negative")),
        Some(n) => Ok(n as u64),
    }
}

/// `GET /messages`: a window of messages around an anchor, in a narrow.
/// Without credentials, a spectator's read of web-public channels
/// (`spectators` has Zulip's rules).
///
/// The reply is written straight to JSON text (`crate::view::message::MessageWriter`):
/// the same bytes as the map of `crate::view::message::message` objects it replaces.
pub fn get_messages(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let (viewer, narrow) = match call.caller.clone() {
        None => {
            spectators::check_realm(&call.realm)?;
            let viewer = crate::state::access::spectator(&call.realm);
            let value = call.params.json("narrow")?;
            let narrow = spectators::narrow(&app.state, &call.realm, &viewer, value.as_ref())?;
            (Arc::new(viewer), narrow)
        }
        Some(me) => {
            let narrow = match call.params.json("narrow")? {
                Some(value) => Narrow::parse(&app.state, &me, &value)?,
                None => Narrow::default(),
            };
            (me, narrow)
        }
    };
    // The read runs on reader threads at low priority while this
    // coroutine parks (`api::readers`), and the parameters travel with it.
    // Even deciding whether it is heavy takes copying its index lists
    // (`is_heavy`), so that too happens in the light lane, which answers
    // the read itself unless no index answers the narrow exactly within
    // `--light-read-candidates`; such a read goes on to the heavy lane.
    let user = (!crate::state::access::is_spectator(&viewer)).then_some(viewer.id);
    let read = Read {
        state: Arc::clone(&app.state),
        realm: Arc::clone(&call.realm),
        viewer,
        narrow,
        params: std::mem::take(&mut call.params),
    };
    let light_up_to = app.config.light_read_candidates;
    let (reply, params) = match app.readers.run_light(move || {
        match is_heavy(&read.state, &read.viewer, &read.narrow, light_up_to) {
            true => Err(Box::new(read)),
            false => Ok(read.fetch()),
        }
    })? {
        Ok(done) => done,
        Err(heavy) => app.readers.run(user, move || (*heavy).fetch())?,
    };
    call.params = params;
    let reply = reply?;
    call.sorted_reply = Some(reply);
    Ok(Reply::new())
}

/// One `GET /messages` read, as it travels to a reader thread.
struct Read {
    state: Arc<State>,
    realm: Arc<Realm>,
    viewer: Arc<User>,
    narrow: Narrow,
    params: Params,
}

impl Read {
    /// The reply, and the parameters back for the handler.
    fn fetch(mut self) -> (ApiResult<SortedMembers>, Params) {
        let reply = fetch(&self.state, &self.realm, &self.viewer, &self.narrow, &mut self.params);
        (reply, self.params)
    }
}

/// `GET /messages` against a `State` (the handler, minus HTTP; benches
/// call it directly): the reply's members (`SortedMembers::to_map` reads
/// them as a map).
pub fn get_messages_for(
    state: &State,
    realm: &Realm,
    me: &User,
    params: &mut Params,
) -> ApiResult<SortedMembers> {
    let narrow = match params.json("narrow")? {
        Some(value) => Narrow::parse(state, me, &value)?,
        None => Narrow::default(),
    };
    fetch(state, realm, me, &narrow, params)
}

/// How a message in a reply appears to `me`: as stored, or for a spectator
/// as Zulip shows them, read and not marked historical.
fn shown(me: &User, view: MessageView) -> MessageView {
    if crate::state::access::is_spectator(me) {
        MessageView { flags: Flags::READ, historical: false }
    } else {
        view
    }
}

/// Message options from the parameters; a spectator's avatars are always
/// URLs (no address is public to them).
fn options_for(me: &User, params: &mut Params) -> ApiResult<MessageOptions> {
    let mut options = message_options(params)?;
    if crate::state::access::is_spectator(me) {
        options.client_gravatar = false;
    }
    Ok(options)
}

/// `GET /messages` once the narrow is parsed.
fn fetch(
    state: &State,
    realm: &Realm,
    me: &User,
    narrow: &Narrow,
    params: &mut Params,
) -> ApiResult<SortedMembers> {
    if let Some(ids) = params.json("message_ids")? {
        return get_by_ids(state, realm, me, params, &ids, narrow);
    }
    let bounds = window_bounds(params)?;
    let options = options_for(me, params)?;

    let Window { anchor, before, at_anchor, after, found_oldest, found_newest } =
        window(state, me, narrow, bounds);
    let found_anchor = at_anchor.is_some();

    let words = narrow.search_stems();
    let mut writer = crate::view::message::MessageWriter::new(state, realm, me, options);
    // Room for the messages at once (a short one is about 700 bytes), not
    // a doubling per few of them.
    let count = before.len() + usize::from(found_anchor) + after.len();
    let mut reply = SortedMembers::reply(256 + count * 768);
    reply.unsigned("anchor", anchor);
    reply.boolean("found_anchor", found_anchor);
    reply.boolean("found_newest", found_newest);
    reply.boolean("found_oldest", found_oldest);
    reply.boolean("history_limited", false);
    let shown_messages = before.into_iter().rev().chain(at_anchor).chain(after);
    json_text::array(reply.member("messages"), shown_messages, |out, (message, view)| {
        crate::priority::breathe();
        let view = shown(me, view);
        if words.is_empty() {
            return writer.write(out, &message, view, &[]);
        }
        let (content, subject) = search_match(&message, &words);
        let (mut content_json, mut subject_json) = (Vec::new(), Vec::new());
        json_text::string(&mut content_json, &content);
        json_text::string(&mut subject_json, &subject);
        let extra: [(&str, &[u8]); 2] =
            [("match_content", &content_json), ("match_subject", &subject_json)];
        writer.write(out, &message, view, &extra);
    });
    Ok(reply)
}

/// A message's rendered content and topic with the search words marked
/// (`match_content`, `match_subject`).
fn search_match(message: &Message, words: &[&str]) -> (String, String) {
    let topic = match &message.destination {
        Destination::Channel { topic, .. } => topic,
        Destination::Direct { .. } => "",
    };
    (highlight(message.rendered(), words), highlight(&escape_html(topic), words))
}

/// `GET /messages/matches_narrow`: which of `msg_ids` (among the
/// caller's own messages, as in Zulip) match `narrow`, with their
/// highlighted content and topic.
pub fn matches_narrow(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let state = &app.state;
    let me = call.caller().clone();
    let me = &me;
    let invalid = || ApiError::invalid("msg_ids", "not a list of message IDs");
    let ids: Vec<MessageId> = match call.params.json("msg_ids")? {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_u64().map(MessageId))
            .collect::<Option<_>>()
            .ok_or_else(invalid)?,
        Some(_) => return Err(invalid()),
        None => return Err(ApiError::missing("msg_ids")),
    };
    if ids.len() as u64 > MAX_MESSAGES_PER_FETCH {
        return Err(ApiError::invalid("msg_ids", "too many message IDs"));
    }
    let narrow = match call.params.json("narrow")? {
        Some(value) => Narrow::parse(state, me, &value)?,
        None => return Err(ApiError::missing("narrow")),
    };
    let words = narrow.search_stems();
    let mut out = serde_json::Map::new();
    for id in ids {
        let Some(flags) = state.flags(me.id, id) else { continue };
        let Some(message) = state.messages.get(&id) else { continue };
        if message.realm != me.realm || !narrow.matches(state, me, &message, flags) {
            continue;
        }
        let (content, subject) = search_match(&message, &words);
        out.insert(id.0.to_string(), json!({"match_content": content, "match_subject": subject}));
    }
    Ok(reply! { "messages" => out })
}

/// Options shared by both forms of `GET /messages`.
fn message_options(params: &mut Params) -> ApiResult<MessageOptions> {
    Ok(MessageOptions {
        apply_markdown: params.bool_or("apply_markdown", true)?,
        allow_empty_topic_name: params.bool_or("allow_empty_topic_name", false)?,
        client_gravatar: params.bool_or("client_gravatar", true)?,
    })
}

/// `GET /messages` with `message_ids`: exactly those messages that the
/// caller may read and that match the narrow, ascending; no anchor fields.
fn get_by_ids(
    state: &State,
    realm: &Realm,
    me: &User,
    params: &mut Params,
    ids: &Value,
    narrow: &Narrow,
) -> ApiResult<SortedMembers> {
    for conflicting in ["anchor", "num_before", "num_after", "include_anchor"] {
        if params.raw(conflicting).is_some() {
            return Err(ApiError::bad_request(format!(
                "Unsupported parameter combination: {conflicting}, message_ids"
            )));
        }
    }
    let invalid = || ApiError::invalid("message_ids", "not a list of message IDs");
    let list = ids.as_array().ok_or_else(invalid)?;
    if list.len() as u64 > MAX_MESSAGES_PER_FETCH {
        return Err(ApiError::bad_request(format!(
            "Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
        ))
        .with("var_name", "message_ids"));
    }
    let mut ids: Vec<MessageId> = list
        .iter()
        .map(|v| v.as_u64().map(MessageId))
        .collect::<Option<_>>()
        .ok_or_else(invalid)?;
    ids.sort_unstable();
    ids.dedup();
    let options = options_for(me, params)?;
    let mut writer = crate::view::message::MessageWriter::new(state, realm, me, options);
    let mut reply = SortedMembers::reply(128);
    reply.boolean("history_limited", false);
    let found = crate::narrow::query::by_ids(state, me, narrow, &ids);
    json_text::array(reply.member("messages"), found, |out, (message, view)| {
        writer.write(out, &message, shown(me, view), &[])
    });
    Ok(reply)
}

/// Decodes and checks a window's four parameters (at most
/// `MAX_MESSAGES_PER_FETCH` messages in all).
pub(crate) fn window_bounds(params: &mut Params) -> ApiResult<WindowBounds> {
    let anchor = parse_anchor(params)?;
    let num_before = count(params, "num_before")?;
    let num_after = count(params, "num_after")?;
    if num_before + num_after > MAX_MESSAGES_PER_FETCH {
        return Err(ApiError::bad_request(format!(
            "Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
        ))
        .with("var_name", "num_before"));
    }
    let include_anchor = params.bool_or("include_anchor", true)?;
    Ok(WindowBounds { anchor, num_before, num_after, include_anchor })
}

/// `GET /users/me/{stream_id}/topics`: the channel's topics the caller may
/// see, newest first, each with its newest message id.
pub fn get_topics(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "stream_id")?;
    let allow_empty = call.params.bool_or("allow_empty_topic_name", false)?;
    let topics = topics_for(&app.state, &call.realm, call.caller(), id, allow_empty)?;
    Ok(reply! { "topics" => topics })
}

/// The topics `me` may see in channel `id`, newest first.
pub fn topics_for(
    state: &State,
    realm: &Realm,
    me: &User,
    id: u64,
    allow_empty: bool,
) -> ApiResult<Vec<Value>> {
    let channel = state
        .channel_in_realm(me.realm, ChannelId(id))
        .filter(|c| can_see_channel(me, c))
        .ok_or_else(|| ApiError::no_channel_id(id))?;
    let empty_name = &realm.settings.empty_topic_display_name;
    let shown = |name: &str| -> String {
        if name.is_empty() && !allow_empty {
            empty_name.clone()
        } else {
            name.to_owned()
        }
    };
    let topics: Vec<Value> = if can_read_history(me, &channel) {
        state
            .channel_topic_list(channel.id)
            .into_iter()
            .map(|t| json!({"name": shown(&t.name), "max_id": t.max_id.0}))
            .collect()
    } else {
        // Protected history, or a channel whose metadata only is visible:
        // only topics of messages delivered to the caller.
        let mut newest: BTreeMap<String, (MessageId, String)> = BTreeMap::new();
        let ids: Vec<MessageId> = state.user_message_ids(me.id);
        for id in ids {
            let Some(Destination::Channel { channel: c, topic }) =
                state.messages.read(&id, |m| m.destination.clone())
            else {
                continue;
            };
            if c == channel.id {
                newest.insert(topic.to_lowercase(), (id, topic.to_string()));
            }
        }
        let mut list: Vec<(MessageId, String)> = newest.into_values().collect();
        list.sort_by_key(|t| std::cmp::Reverse(t.0));
        list.into_iter().map(|(id, name)| json!({"name": shown(&name), "max_id": id.0})).collect()
    };
    Ok(topics)
}

/// The ids of `user`'s starred messages, ascending.
pub fn starred_messages(state: &State, user: UserId) -> Vec<u64> {
    state.starred_ids(user).into_iter().map(|id| id.0).collect()
}

/// The newest message delivered to `user`, or -1 (Zulip's value) if none.
pub fn max_message_id(state: &State, user: UserId) -> i64 {
    state.max_user_message(user).map_or(-1, |id| id.0 as i64)
}

/// Register's `unread_msgs` for `user`: unread direct messages by
/// conversation (`pms` with `other_user_id` and the deprecated
/// `sender_id`, `huddles`), unread channel messages by topic (`streams`,
/// only channels the user is still subscribed to), `mentions`, and
/// `count`, which — like the unread counts clients show — leaves out muted
/// channels; wildcard mentions in muted channels are not mentions. At most
/// `MAX_UNREAD_MESSAGES` (the newest); `old_unreads_missing` says so.
pub fn unread_msgs(state: &State, user: &User, allow_empty_topic_name: bool) -> Value {
    let mut unread: Vec<MessageId> = state.unread_ids(user.id);
    let old_unreads_missing = unread.len() > MAX_UNREAD_MESSAGES;
    if old_unreads_missing {
        unread.drain(..unread.len() - MAX_UNREAD_MESSAGES);
    }
    let unread: Vec<(MessageId, Flags)> = state
        .user_messages
        .read(&user.id, |m| unread.iter().filter_map(|id| m.get(*id).map(|f| (*id, f))).collect())
        .unwrap_or_default();
    let subscriptions = state.subscriptions.get(&user.id).unwrap_or_default();
    let topic_policies = state.settings.user_topics.get(&user.id).unwrap_or_default();
    let empty_name = state
        .realms
        .read(&user.realm, |r| r.settings.empty_topic_display_name.clone())
        .unwrap_or_default();

    let mut pms: BTreeMap<UserId, Vec<u64>> = BTreeMap::new();
    let mut huddles: BTreeMap<Vec<UserId>, Vec<u64>> = BTreeMap::new();
    let mut streams: BTreeMap<(ChannelId, String), Vec<u64>> = BTreeMap::new();
    let mut mentions = Vec::new();
    let mut count = 0usize;
    for (id, flags) in unread {
        if flags.contains(Flags::READ) {
            continue;
        }
        let Some(destination) = state.messages.read(&id, |m| m.destination.clone()) else {
            continue;
        };
        let muted = match &destination {
            Destination::Direct { participants } => {
                if participants.len() <= 2 {
                    let other =
                        participants.iter().copied().find(|u| *u != user.id).unwrap_or(user.id);
                    pms.entry(other).or_default().push(id.0);
                } else {
                    huddles.entry(participants.to_vec()).or_default().push(id.0);
                }
                count += 1;
                false
            }
            Destination::Channel { channel, topic } => {
                let Some(sub) = subscriptions.get(channel) else { continue };
                let raw_topic = topic;
                let topic = if topic.is_empty() && !allow_empty_topic_name {
                    empty_name.clone()
                } else {
                    topic.to_string()
                };
                streams.entry((*channel, topic)).or_default().push(id.0);
                // As Zulip: a muted channel's unmuted or followed topics
                // count, an unmuted channel's muted topics do not.
                let policy = topic_policies.get(&(*channel, raw_topic.to_lowercase()));
                let muted = match policy.map(|t| t.policy) {
                    Some(2 | 3) => false,
                    Some(1) => true,
                    _ => sub.is_muted,
                };
                if !muted {
                    count += 1;
                }
                muted
            }
        };
        let wildcard = flags.contains(Flags::STREAM_WILDCARD_MENTIONED)
            || flags.contains(Flags::TOPIC_WILDCARD_MENTIONED);
        if flags.contains(Flags::MENTIONED) || (wildcard && !muted) {
            mentions.push(id.0);
        }
    }
    let pms: Vec<Value> = pms
        .into_iter()
        .map(|(other, ids)| {
            json!({"other_user_id": other.0, "sender_id": other.0, "unread_message_ids": ids})
        })
        .collect();
    let huddles: Vec<Value> = huddles
        .into_iter()
        .map(|(users, ids)| {
            let key: Vec<String> = users.iter().map(|u| u.0.to_string()).collect();
            json!({"user_ids_string": key.join(","), "unread_message_ids": ids})
        })
        .collect();
    let streams: Vec<Value> = streams
        .into_iter()
        .map(|((channel, topic), ids)| {
            json!({"stream_id": channel.0, "topic": topic, "unread_message_ids": ids})
        })
        .collect();
    json!({
        "pms": pms,
        "streams": streams,
        "huddles": huddles,
        "mentions": mentions,
        "count": count,
        "old_unreads_missing": old_unreads_missing,
    })
}

/// Register sections owned by this module: `max_message_id` (fetch type
/// `message`), `unread_msgs` (`message` and `update_message_flags`), and
/// `starred_messages`.
pub fn register_state(app: &App, user: &User, wants: &dyn Fn(&str) -> bool, out: &mut Reply) {
    register_state_with(&app.state, user, false, wants, out);
}

/// `register_state` with the `empty_topic_name` client capability.
pub fn register_state_with(
    state: &State,
    user: &User,
    allow_empty_topic_name: bool,
    wants: &dyn Fn(&str) -> bool,
    out: &mut Reply,
) {
    if wants("message") {
        out.insert("max_message_id".into(), json!(max_message_id(state, user.id)));
    }
    if wants("message") && wants("update_message_flags") {
        out.insert("unread_msgs".into(), unread_msgs(state, user, allow_empty_topic_name));
    }
    if wants("starred_messages") {
        out.insert("starred_messages".into(), json!(starred_messages(state, user.id)));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mutation::{MessageEdit, Mutation, NewContent, PropagateMode};
    use crate::state::messages::{Reaction, ReactionType};
    use crate::state::Role;
    use crate::testkit::World;

    struct Fixture {
        w: World,
        me: User,
        other: User,
        third: User,
        ids: Vec<MessageId>,
    }

    /// `me`, `other`, `third` in `general`; `secret` is private without
    /// `me`; `lear` is another realm with its own `general`.
    fn fixture() -> Fixture {
        let mut w = World::new();
        let me = w.user("", "me@t.test", Role::Member);
        let other = w.user("", "other@t.test", Role::Member);
        let third = w.user("", "third@t.test", Role::Member);
        let stranger = w.user("lear", "king@lear.test", Role::Owner);
        let general = w.channel("", "general", false, &[&me, &other, &third]).id;
        let secret = w.channel("", "secret", true, &[&other, &third]).id;
        let lear = w.channel("lear", "general", false, &[&stranger]).id;
        let ids = vec![
            w.post(&other, general, "lunch", "soup at noon"),
            w.post(&third, general, "Lunch", "with **bread**"),
            w.post_mentioning(&other, general, "dinner", "@me come", &[&me]),
            w.post(&other, secret, "plans", "secret soup"),
            w.dm(&other, &[&me], "hi me"),
            w.dm(&other, &[&me, &third], "hi all"),
            w.post(&stranger, lear, "court", "soup in lear"),
            w.post(&me, general, "✔ done", "see https://example.com"),
        ];
        Fixture { w, me, other, third, ids }
    }

    fn fetch(f: &Fixture, pairs: &[(&str, &str)]) -> ApiResult<Reply> {
        let realm = f.w.state.realms.get(&f.me.realm).unwrap();
        get_messages_for(&f.w.state, &realm, &f.me, &mut Params::from_pairs(pairs.iter().copied()))
            .map(|reply| reply.to_map())
    }

    /// `MessageWriter` writes exactly the bytes `crate::view::message::message`'s map
    /// serializes to: channel and direct messages, an empty topic, an
    /// edited and moved message, reactions, mention flags, a historical
    /// view, every option, with and without extra members and without
    /// flags (as message events carry it), writers reused across messages
    /// (their caches of senders and channels).
    #[test]
    fn written_messages_are_the_bytes_of_the_map() {
        let mut f = fixture();
        let general = f.w.state.channel_by_name.get(&(f.me.realm, "general".into())).unwrap();
        let empty = f.w.post(&f.third, general, "", "no topic \"here\"");
        let edited = f.w.post(&f.other, general, "old", "first <b>draft</b>");
        f.w.apply(Mutation::EditMessage(MessageEdit {
            message: edited,
            editor: f.other.id,
            timestamp: 1_700_000_100,
            content: Some(NewContent {
                content: "second draft".into(),
                rendered: "<p>second draft</p>".into(),
                is_me_message: false,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            }),
            topic: Some("new".into()),
            channel: None,
            moved: vec![edited],
            counts_as_move: true,
            propagate_mode: PropagateMode::ChangeOne,
        }));
        for (message, user, name) in [(f.ids[0], &f.me, "octopus"), (f.ids[4], &f.third, "tada")] {
            let reaction = Reaction {
                emoji_name: name.into(),
                emoji_code: "1f419".into(),
                reaction_type: ReactionType::Unicode,
                user: user.id,
            };
            f.w.apply(Mutation::AddReaction { message, reaction });
        }
        let mut ids = f.ids.clone();
        ids.extend([empty, edited]);
        let state = &f.w.state;
        let bools = [false, true];
        for viewer in [&f.me, &f.other] {
            let realm = state.realms.get(&viewer.realm).unwrap();
            for (apply_markdown, allow_empty_topic_name, client_gravatar) in bools
                .iter()
                .flat_map(|a| bools.iter().flat_map(move |b| bools.map(|c| (*a, *b, c))))
            {
                let options =
                    MessageOptions { apply_markdown, allow_empty_topic_name, client_gravatar };
                let mut writer =
                    crate::view::message::MessageWriter::new(state, &realm, viewer, options);
                let mut flagless =
                    crate::view::message::MessageWriter::new(state, &realm, viewer, options)
                        .without_flags();
                for id in &ids {
                    let message = state.messages.get(id).unwrap();
                    let flags = state.flags(viewer.id, *id).unwrap_or_default();
                    for historical in bools {
                        let view = MessageView { flags, historical };
                        let map = crate::view::message::message(
                            state, &realm, viewer, &message, view, options,
                        );
                        let mut out = Vec::new();
                        writer.write(&mut out, &message, view, &[]);
                        assert_eq!(String::from_utf8(out).unwrap(), map.to_string(), "{id:?}");
                        let mut with_extra = map.clone();
                        with_extra["match_content"] = json!("<p>x</p>");
                        with_extra["match_subject"] = json!("y");
                        let mut out = Vec::new();
                        let extra: [(&str, &[u8]); 2] =
                            [("match_content", b"\"<p>x</p>\""), ("match_subject", b"\"y\"")];
                        writer.write(&mut out, &message, view, &extra);
                        assert_eq!(String::from_utf8(out).unwrap(), with_extra.to_string());
                        let mut without = map.clone();
                        without.as_object_mut().unwrap().remove("flags");
                        let mut out = Vec::new();
                        flagless.write(&mut out, &message, view, &[]);
                        assert_eq!(String::from_utf8(out).unwrap(), without.to_string());
                    }
                }
            }
        }
        let edited = state.messages.get(&edited).unwrap();
        assert!(
            !edited.edit_history().is_empty()
                && !state.messages.get(&f.ids[0]).unwrap().reactions().is_empty()
        );
    }

    fn ids(reply: &Reply) -> Vec<u64> {
        reply["messages"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
    }

    fn want(f: &Fixture, idx: &[usize]) -> Vec<u64> {
        idx.iter().map(|i| f.ids[*i].0).collect()
    }

    #[test]
    fn the_empty_narrow_is_what_was_delivered() {
        let f = fixture();
        let r =
            fetch(&f, &[("anchor", "newest"), ("num_before", "100"), ("narrow", "[]")]).unwrap();
        assert_eq!(ids(&r), want(&f, &[0, 1, 2, 4, 5, 7]));
        assert_eq!(r["found_newest"], true);
        assert_eq!(r["found_oldest"], true);
        assert_eq!(r["found_anchor"], false);
        assert_eq!(r["anchor"], LARGER_THAN_MAX_MESSAGE_ID);
    }

    #[test]
    fn topic_narrows_ignore_case_and_use_the_index() {
        let f = fixture();
        let narrow = r#"[["stream","general"],["topic","LUNCH"]]"#;
        let r =
            fetch(&f, &[("anchor", "newest"), ("num_before", "10"), ("narrow", narrow)]).unwrap();
        assert_eq!(ids(&r), want(&f, &[0, 1]));
        let r = fetch(&f, &[("anchor", "oldest"), ("num_after", "1"), ("narrow", narrow)]).unwrap();
        assert_eq!(ids(&r), want(&f, &[0]));
        assert_eq!(
            (r["found_oldest"].clone(), r["found_newest"].clone()),
            (json!(true), json!(false))
        );
    }

    #[test]
    fn first_unread_anchor() {
        let f = fixture();
        let r = fetch(
            &f,
            &[
                ("anchor", "0"),
                ("use_first_unread_anchor", "true"),
                ("num_before", "30"),
                ("num_after", "10"),
            ],
        )
        .unwrap();
        assert_eq!(r["anchor"], f.ids[0].0);
        assert_eq!(r["found_anchor"], true);
        assert_eq!(ids(&r), want(&f, &[0, 1, 2, 4, 5, 7]));
        let r = fetch(
            &f,
            &[("anchor", "first_unread"), ("narrow", r#"[["is","dm"]]"#), ("num_after", "5")],
        )
        .unwrap();
        assert_eq!(r["anchor"], f.ids[4].0);
        assert_eq!(ids(&r), want(&f, &[4, 5]));
        let r = fetch(&f, &[("anchor", "first_unread"), ("narrow", r#"[["sender","me@t.test"]]"#)])
            .unwrap();
        assert_eq!(r["anchor"], LARGER_THAN_MAX_MESSAGE_ID);
    }

    #[test]
    fn unread_sections() {
        let f = fixture();
        let u = unread_msgs(&f.w.state, &f.me, false);
        let general = f.w.state.channel_by_name(f.me.realm, "general").unwrap().id.0;
        assert_eq!(u["count"], 5);
        assert_eq!(
            u["pms"],
            json!([{"other_user_id": f.other.id.0, "sender_id": f.other.id.0, "unread_message_ids": [f.ids[4].0]}])
        );
        let mut trio = [f.me.id.0, f.other.id.0, f.third.id.0];
        trio.sort();
        let key = trio.map(|i| i.to_string()).join(",");
        assert_eq!(
            u["huddles"],
            json!([{"user_ids_string": key, "unread_message_ids": [f.ids[5].0]}])
        );
        assert_eq!(u["mentions"], json!([f.ids[2].0]));
        let topics: Vec<(u64, String)> = u["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["stream_id"].as_u64().unwrap(), s["topic"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            topics,
            [(general, "Lunch".into()), (general, "dinner".into()), (general, "lunch".into())]
        );
        assert_eq!(max_message_id(&f.w.state, f.me.id), f.ids[7].0 as i64);
        assert_eq!(max_message_id(&f.w.state, UserId(9999)), -1);
        assert!(starred_messages(&f.w.state, f.me.id).is_empty());
        // Muting the channel leaves its messages listed but not counted.
        f.w.state
            .subscriptions
            .upsert(f.me.id, |s| s.get_mut(&ChannelId(general)).unwrap().is_muted = true);
        let u = unread_msgs(&f.w.state, &f.me, false);
        assert_eq!(u["count"], 2);
        assert_eq!(u["streams"].as_array().unwrap().len(), 3);
        // A muted channel's unmuted topic counts; an unmuted channel's
        // muted topic (any spelling) does not.
        let policy = |topic: &str, policy: u8| {
            let entry =
                crate::state::personal::UserTopic { topic: topic.into(), policy, last_updated: 0 };
            f.w.state.settings.user_topics.upsert(f.me.id, |m| {
                m.insert((ChannelId(general), topic.to_lowercase()), entry);
            });
        };
        policy("dinner", 2);
        assert_eq!(unread_msgs(&f.w.state, &f.me, false)["count"], 3);
        f.w.state
            .subscriptions
            .upsert(f.me.id, |s| s.get_mut(&ChannelId(general)).unwrap().is_muted = false);
        policy("LUNCH", 1);
        assert_eq!(unread_msgs(&f.w.state, &f.me, false)["count"], 3);
        assert_eq!(u["mentions"], json!([f.ids[2].0]), "a personal mention stays a mention");
    }

    #[test]
    fn protected_history_hides_what_came_before_subscribing() {
        let mut w = World::new();
        let old = w.user("", "old@t.test", Role::Member);
        let late = w.user("", "late@t.test", Role::Member);
        let admin = w.user("", "admin@t.test", Role::Administrator);
        let channel = w.channel("", "vault", true, &[&old]).id;
        w.state.channels.update(&channel, |c| c.history_public_to_subscribers = false);
        let before = w.post(&old, channel, "early", "before");
        w.subscribe(channel, &[&late]);
        let after = w.post(&old, channel, "later", "after");
        let realm = w.state.realms.get(&late.realm).unwrap();
        let fetch = |who: &User, narrow: &str| {
            let pairs = [("anchor", "newest"), ("num_before", "10"), ("narrow", narrow)];
            let r = get_messages_for(&w.state, &realm, who, &mut Params::from_pairs(pairs))
                .unwrap()
                .to_map();
            ids(&r)
        };
        assert_eq!(fetch(&late, r#"[["stream","vault"]]"#), [after.0]);
        assert_eq!(fetch(&late, r#"[["stream","vault"],["topic","early"]]"#), Vec::<u64>::new());
        assert_eq!(fetch(&old, r#"[["stream","vault"]]"#), [before.0, after.0]);
        // An administrator outside the channel may name it but reads nothing.
        assert_eq!(fetch(&admin, r#"[["stream","vault"]]"#), Vec::<u64>::new());
        let message = w.state.messages.get(&before).unwrap();
        assert!(crate::state::access::message_view(&w.state, &late, &message).is_none());
        // Topics: only those of delivered messages for the late subscriber.
        let names = |who: &User| -> Vec<Value> {
            let topics = topics_for(&w.state, &realm, who, channel.0, false).unwrap();
            topics.iter().map(|t| t["name"].clone()).collect()
        };
        assert_eq!(names(&late), [json!("later")]);
        assert_eq!(names(&old), [json!("later"), json!("early")]);
        assert_eq!(names(&admin), Vec::<Value>::new());
    }
}
