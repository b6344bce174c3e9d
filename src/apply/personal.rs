//! `apply` for `Mutation::Personal`: the settings area's small resources.
//! Deterministic; events are Zulip's JSON as `Event::Broadcast`.

use serde_json::{json, Value};

use super::settings::to_user;
use crate::events::{Audience, Event};
use crate::state::personal::{InviteStatus, LocalIdKind, PersonalChange};
use crate::state::{IdKind, RealmId, State, Subscription, UserId};
use crate::view::personal::{muted_topics_json, muted_users_json, playgrounds_json};

/// Applies one change of this area.
pub(super) fn apply(state: &State, change: &PersonalChange) -> Vec<Event> {
    let s = &state.settings;
    let user_exists = |u: &UserId| assert!(state.users.contains(u), "apply: no user {u}");
    match change {
        PersonalChange::SetAlertWords { user, words } => {
            user_exists(user);
            s.noted_alert_words();
            s.alert_words.insert(*user, words.clone());
            vec![to_user(*user, json!({ "type": "alert_words", "alert_words": words }))]
        }
        PersonalChange::AddDrafts { user, drafts } => {
            user_exists(user);
            for d in drafts {
                s.claim_id(LocalIdKind::Draft, d.id);
            }
            s.drafts.upsert(*user, |m| m.extend(drafts.iter().map(|d| (d.id, d.clone()))));
            let list: Vec<Value> = drafts.iter().map(|d| d.to_json()).collect();
            vec![to_user(*user, json!({ "type": "drafts", "op": "add", "drafts": list }))]
        }
        PersonalChange::EditDraft { user, draft } => {
            s.drafts
                .update(user, |m| m.insert(draft.id, draft.clone()))
                .flatten()
                .unwrap_or_else(|| panic!("apply: no draft {}", draft.id));
            vec![to_user(
                *user,
                json!({ "type": "drafts", "op": "update", "draft": draft.to_json() }),
            )]
        }
        PersonalChange::DeleteDraft { user, id } => {
            s.drafts
                .update(user, |m| m.remove(id))
                .flatten()
                .unwrap_or_else(|| panic!("apply: no draft {id}"));
            vec![to_user(*user, json!({ "type": "drafts", "op": "remove", "draft_id": id }))]
        }
        PersonalChange::SetStatus { user, status } => {
            let realm = state.users.read(user, |u| u.realm).expect("apply: no user");
            if status.is_empty() {
                s.statuses.remove(user);
            } else {
                s.statuses.insert(*user, status.clone());
            }
            let event = json!({
                "type": "user_status", "user_id": user.0, "away": status.away,
                "status_text": status.status_text, "emoji_name": status.emoji_name,
                "emoji_code": status.emoji_code, "reaction_type": status.reaction_type,
            });
            vec![Event::Broadcast { audience: Audience::Realm(realm), event }]
        }
        PersonalChange::SetMuted { user, target, since } => {
            user_exists(user);
            user_exists(target);
            s.noted_muted_users();
            s.muted_users.upsert(*user, |m| match since {
                Some(t) => {
                    m.insert(*target, *t);
                }
                None => {
                    m.remove(target);
                }
            });
            let list = muted_users_json(state, *user);
            vec![to_user(*user, json!({ "type": "muted_users", "muted_users": list }))]
        }
        PersonalChange::SetUserTopic { user, channel, topic, policy, when } => {
            user_exists(user);
            let key = (*channel, topic.to_lowercase());
            s.user_topics.upsert(*user, |m| {
                if *policy == 0 {
                    m.remove(&key);
                } else {
                    let entry = crate::state::personal::UserTopic {
                        topic: topic.clone(),
                        policy: *policy,
                        last_updated: *when,
                    };
                    m.insert(key, entry);
                }
            });
            vec![
                to_user(
                    *user,
                    json!({ "type": "muted_topics", "muted_topics": muted_topics_json(state, *user) }),
                ),
                to_user(
                    *user,
                    json!({ "type": "user_topic", "stream_id": channel.0, "topic_name": topic,
                            "last_updated": when, "visibility_policy": policy }),
                ),
            ]
        }
        PersonalChange::PutNavigationView { user, view, update } => {
            user_exists(user);
            s.navigation_views.upsert(*user, |views| {
                match views.iter_mut().find(|v| v.fragment == view.fragment) {
                    Some(v) => *v = view.clone(),
                    None => views.push(view.clone()),
                }
            });
            let event = if *update {
                let mut data = json!({ "is_pinned": view.is_pinned });
                if let Some(name) = &view.name {
                    data["name"] = json!(name);
                }
                json!({ "type": "navigation_view", "op": "update", "fragment": view.fragment,
                        "data": data })
            } else {
                json!({ "type": "navigation_view", "op": "add",
                        "navigation_view": view.to_json() })
            };
            vec![to_user(*user, event)]
        }
        PersonalChange::RemoveNavigationView { user, fragment } => {
            s.navigation_views
                .update(user, |views| views.retain(|v| v.fragment != *fragment))
                .unwrap_or_else(|| panic!("apply: no views for {user}"));
            vec![to_user(
                *user,
                json!({ "type": "navigation_view", "op": "remove", "fragment": fragment }),
            )]
        }
        PersonalChange::PutSnippet { user, snippet, update } => {
            user_exists(user);
            s.claim_id(LocalIdKind::Snippet, snippet.id);
            s.snippets.upsert(*user, |m| m.insert(snippet.id, snippet.clone()));
            let op = if *update { "update" } else { "add" };
            vec![to_user(
                *user,
                json!({ "type": "saved_snippets", "op": op, "saved_snippet": snippet.to_json() }),
            )]
        }
        PersonalChange::DeleteSnippet { user, id } => {
            s.snippets
                .update(user, |m| m.remove(id))
                .flatten()
                .unwrap_or_else(|| panic!("apply: no snippet {id}"));
            vec![to_user(
                *user,
                json!({ "type": "saved_snippets", "op": "remove", "saved_snippet_id": id }),
            )]
        }
        PersonalChange::AddPushToken { user, token } => {
            user_exists(user);
            s.push_tokens.upsert(*user, |tokens| {
                tokens.retain(|t| !(t.kind == token.kind && t.token == token.token));
                tokens.push(token.clone());
            });
            Vec::new()
        }
        PersonalChange::RemovePushToken { user, kind, token } => {
            s.push_tokens.upsert(*user, |tokens| {
                tokens.retain(|t| !(t.kind == *kind && t.token == *token));
            });
            Vec::new()
        }
        PersonalChange::AddPlayground(playground) => {
            assert!(state.realms.contains(&playground.realm), "apply: no realm");
            s.claim_id(LocalIdKind::Playground, playground.id);
            s.playgrounds.insert(playground.id, playground.clone());
            vec![playgrounds_event(state, playground.realm)]
        }
        PersonalChange::RemovePlayground { realm, id } => {
            s.playgrounds.remove(id).unwrap_or_else(|| panic!("apply: no playground {id}"));
            vec![playgrounds_event(state, *realm)]
        }
        PersonalChange::CreateInvites(invites) => {
            let mut realm = None;
            for invite in invites {
                s.claim_id(LocalIdKind::Invite, invite.id);
                s.invite_by_key.insert(invite.key.clone(), invite.id);
                s.invites.insert(invite.id, invite.clone());
                realm = Some((invite.realm, invite.inviter));
            }
            realm.map(|(r, inviter)| invites_changed(state, r, inviter)).into_iter().collect()
        }
        PersonalChange::RevokeInvite { id } => {
            let invite = s
                .invites
                .update(id, |i| {
                    i.status = InviteStatus::Revoked;
                    i.clone()
                })
                .unwrap_or_else(|| panic!("apply: no invite {id}"));
            vec![invites_changed(state, invite.realm, invite.inviter)]
        }
        PersonalChange::ResendInvite { id, invited, expires } => {
            let invite = s
                .invites
                .update(id, |i| {
                    i.invited = *invited;
                    i.expires = *expires;
                    i.clone()
                })
                .unwrap_or_else(|| panic!("apply: no invite {id}"));
            vec![invites_changed(state, invite.realm, invite.inviter)]
        }
        PersonalChange::AcceptInvite { id, user, password_hash, channels, groups } => {
            let invite = s.invites.get(id).unwrap_or_else(|| panic!("apply: no invite {id}"));
            assert!(state.users.get(&user.id).is_none(), "apply: user {} exists", user.id);
            if invite.email.is_some() {
                s.invites.update(id, |i| i.status = InviteStatus::Used);
            }
            state.ids.claim(IdKind::User, user.id.0);
            state.index_user(user.clone());
            super::organization::start_with_defaults(state, user.realm, user.id);
            s.passwords.insert(user.id, password_hash.clone());
            let mut events = vec![Event::RealmUserAdd { realm: user.realm, user: user.id }];
            for (channel, color) in channels {
                let sub = [(user.id, Subscription::new(color.clone()))];
                events.extend(super::subscribe(state, *channel, &sub));
            }
            for group in groups {
                state
                    .groups
                    .update(group, |g| g.direct_members.insert(user.id))
                    .unwrap_or_else(|| panic!("apply: no group {group}"));
                events.push(Event::Broadcast {
                    audience: Audience::Realm(user.realm),
                    event: json!({ "type": "user_group", "op": "add_members",
                                   "group_id": group.0, "user_ids": [user.id.0] }),
                });
            }
            events.push(invites_changed(state, invite.realm, invite.inviter));
            events
        }
    }
}

fn playgrounds_event(state: &State, realm: RealmId) -> Event {
    Event::Broadcast {
        audience: Audience::Realm(realm),
        event: json!({ "type": "realm_playgrounds",
                       "realm_playgrounds": playgrounds_json(state, realm) }),
    }
}

/// `invites_changed` (no payload: clients refetch) for the realm's
/// administrators and the inviter.
fn invites_changed(state: &State, realm: RealmId, inviter: UserId) -> Event {
    let mut users: Vec<UserId> = state
        .realm_users(realm)
        .into_iter()
        .filter(|u| u.is_active && (u.role.is_admin() || u.id == inviter))
        .map(|u| u.id)
        .collect();
    users.sort();
    Event::Broadcast {
        audience: Audience::Users(users),
        event: json!({ "type": "invites_changed" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::Mutation;
    use crate::persist::snapshot;
    use crate::state::personal::{
        Draft, Invite, NavigationView, Playground, PushKind, PushToken, SavedSnippet, UserStatus,
    };
    use crate::state::Role;
    use crate::testkit::World;

    /// Every resource of this area survives a snapshot round trip, and the
    /// derived invitation-key index is rebuilt.
    #[test]
    fn snapshot_round_trip() {
        let mut w = World::new();
        let realm = w.realm("").id;
        let [a, b] = ["a@x.test", "b@x.test"].map(|email| w.user("", email, Role::Member).id);
        let changes = vec![
            PersonalChange::SetAlertWords { user: a, words: vec!["w".into()] },
            PersonalChange::AddDrafts {
                user: a,
                drafts: vec![Draft {
                    id: 1,
                    kind: String::new(),
                    to: vec![],
                    topic: String::new(),
                    content: "c".into(),
                    timestamp: 5,
                }],
            },
            PersonalChange::SetStatus {
                user: a,
                status: UserStatus { status_text: "hi".into(), ..UserStatus::default() },
            },
            PersonalChange::SetMuted { user: a, target: b, since: Some(7) },
            PersonalChange::PutNavigationView {
                user: a,
                view: NavigationView { fragment: "inbox".into(), is_pinned: true, name: None },
                update: false,
            },
            PersonalChange::PutSnippet {
                user: a,
                snippet: SavedSnippet {
                    id: 1,
                    title: "t".into(),
                    content: "c".into(),
                    date_created: 1,
                },
                update: false,
            },
            PersonalChange::AddPushToken {
                user: a,
                token: PushToken { kind: PushKind::Android, token: "tok".into(), appid: None },
            },
            PersonalChange::AddPlayground(Playground {
                id: 1,
                realm,
                name: "Rust".into(),
                pygments_language: "rust".into(),
                url_template: "https://play.example/?code={code}".into(),
            }),
            PersonalChange::CreateInvites(vec![Invite {
                id: 1,
                realm,
                inviter: a,
                email: Some("new@x.test".into()),
                role: Role::Member,
                channels: vec![],
                groups: vec![],
                include_realm_default_subscriptions: false,
                notify_referrer_on_join: true,
                welcome_message_custom_text: None,
                invited: 1,
                expires: None,
                key: "KEY".into(),
                status: crate::state::personal::InviteStatus::Pending,
            }]),
        ];
        for change in changes {
            w.apply(Mutation::personal(change));
        }
        let image = w.state.image();
        let bytes = snapshot::encode(&image);
        let back = State::from_image(image.clone());
        assert!(snapshot::encode(&back.image()) == bytes, "image changed in the round trip");
        assert_eq!(back.settings.invite_by_key.get(&"KEY".to_owned()), Some(1));
        assert_eq!(back.settings.peek_id(LocalIdKind::Draft), 2);
        assert!(back.settings.has_alert_word(a, "a w b"));
    }
}
