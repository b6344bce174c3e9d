//! A user's personal resources as Zulip shows them (muted users and
//! topics, code playgrounds).

use serde_json::{json, Value};

use crate::state::{RealmId, State, UserId};

/// `muted_users` as register and the event show it.
pub(crate) fn muted_users_json(state: &State, user: UserId) -> Value {
    let muted = state.settings.muted_users.get(&user).unwrap_or_default();
    Value::Array(muted.iter().map(|(id, t)| json!({ "id": id.0, "timestamp": t })).collect())
}

/// The legacy `muted_topics` triples `[channel name, topic, UNIX seconds]`.
pub(crate) fn muted_topics_json(state: &State, user: UserId) -> Value {
    let topics = state.settings.user_topics.get(&user).unwrap_or_default();
    let list = topics
        .iter()
        .filter(|(_, t)| t.policy == 1)
        .filter_map(|((channel, _), t)| {
            let name = state.channels.read(channel, |c| c.name.clone())?;
            Some(json!([name, t.topic, t.last_updated]))
        })
        .collect();
    Value::Array(list)
}

/// A realm's playgrounds, by id.
pub(crate) fn playgrounds_json(state: &State, realm: RealmId) -> Value {
    let list = state.settings.playgrounds.collect_sorted(|_, p| p.realm == realm);
    Value::Array(list.into_iter().map(|(_, p)| p.to_json()).collect())
}
