//! `apply` for `Mutation::ChannelFolder`: the change to the realm's
//! folders and Zulip's `channel_folder` event, which every user of the
//! realm hears.

use serde_json::{json, Map, Value};

use crate::events::{Audience, Event};
use crate::state::folders::FolderChange;
use crate::state::State;
use crate::view::channel::folder;

/// Applies one change of this area.
pub(super) fn apply(state: &State, change: &FolderChange) -> Vec<Event> {
    state.folders.apply(change);
    let (realm, event) = match change {
        FolderChange::Create(f) => {
            assert!(state.realms.contains(&f.realm), "apply: no realm {}", f.realm);
            (f.realm, json!({ "type": "channel_folder", "op": "add", "channel_folder": folder(f) }))
        }
        FolderChange::Update { realm, id, name, description, is_archived } => {
            let mut data = Map::new();
            if let Some(name) = name {
                data.insert("name".into(), json!(name));
            }
            if let Some((source, rendered)) = description {
                data.insert("description".into(), json!(source));
                data.insert("rendered_description".into(), json!(rendered));
            }
            if let Some(archived) = is_archived {
                data.insert("is_archived".into(), json!(archived));
            }
            let event = json!({ "type": "channel_folder", "op": "update",
                                "channel_folder_id": id, "data": Value::Object(data) });
            (*realm, event)
        }
        FolderChange::Reorder { realm, order } => {
            (*realm, json!({ "type": "channel_folder", "op": "reorder", "order": order }))
        }
    };
    vec![Event::Broadcast { audience: Audience::Realm(realm), event }]
}
