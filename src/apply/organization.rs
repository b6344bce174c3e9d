//! `apply` for `Mutation::Organization`: a realm's linkifiers and default
//! channel groups. Deterministic; each change yields the realm's whole
//! list as Zulip's event (`realm_linkifiers`, `default_stream_groups`).

use serde_json::json;

use crate::events::{Audience, Event};
use crate::state::organization::{OrgChange, OrgIdKind};
use crate::state::settings::setting_def;
use crate::state::{ChannelId, RealmId, State};
use crate::view::organization::{linkifiers_event, stream_groups_event};

/// Applies one change of this area.
pub(super) fn apply(state: &State, change: &OrgChange) -> Vec<Event> {
    let org = &state.organization;
    let realm_exists = |r: &RealmId| assert!(state.realms.contains(r), "apply: no realm {r}");
    match change {
        OrgChange::AddLinkifier { realm, linkifier } => {
            realm_exists(realm);
            org.claim_id(OrgIdKind::Linkifier, linkifier.id);
            org.realms.upsert(*realm, |r| r.linkifiers.push(linkifier.clone()));
            vec![linkifiers(state, *realm)]
        }
        OrgChange::EditLinkifier { realm, linkifier } => {
            org.realms
                .update(realm, |r| {
                    let slot = r.linkifiers.iter_mut().find(|l| l.id == linkifier.id);
                    *slot.unwrap_or_else(|| panic!("apply: no linkifier {}", linkifier.id)) =
                        linkifier.clone();
                })
                .unwrap_or_else(|| panic!("apply: no linkifiers in realm {realm}"));
            vec![linkifiers(state, *realm)]
        }
        OrgChange::RemoveLinkifier { realm, id } => {
            org.realms
                .update(realm, |r| {
                    let before = r.linkifiers.len();
                    r.linkifiers.retain(|l| l.id != *id);
                    assert!(r.linkifiers.len() < before, "apply: no linkifier {id}");
                })
                .unwrap_or_else(|| panic!("apply: no linkifiers in realm {realm}"));
            vec![linkifiers(state, *realm)]
        }
        OrgChange::ReorderLinkifiers { realm, order } => {
            org.realms
                .update(realm, |r| {
                    assert_eq!(order.len(), r.linkifiers.len(), "apply: reorder needs every id");
                    let mut ordered = Vec::with_capacity(order.len());
                    for id in order {
                        let at = r.linkifiers.iter().position(|l| l.id == *id);
                        let at = at.unwrap_or_else(|| panic!("apply: no linkifier {id}"));
                        ordered.push(r.linkifiers.remove(at));
                    }
                    r.linkifiers = ordered;
                })
                .unwrap_or_else(|| panic!("apply: no linkifiers in realm {realm}"));
            vec![linkifiers(state, *realm)]
        }
        OrgChange::PutStreamGroup { realm, group } => {
            realm_exists(realm);
            org.claim_id(OrgIdKind::StreamGroup, group.id);
            org.realms.upsert(*realm, |r| {
                match r.stream_groups.iter_mut().find(|g| g.id == group.id) {
                    Some(g) => *g = group.clone(),
                    None => r.stream_groups.push(group.clone()),
                }
                r.stream_groups.sort_by_key(|g| g.id);
            });
            vec![stream_groups(state, *realm)]
        }
        OrgChange::SetUserDefaults { realm, settings } => {
            realm_exists(realm);
            org.realms.upsert(*realm, |r| {
                for (name, value) in settings {
                    let def =
                        setting_def(name).unwrap_or_else(|| panic!("apply: no setting {name}"));
                    if def.default.value() == *value {
                        r.user_defaults.remove(name);
                    } else {
                        r.user_defaults.insert(name.clone(), value.clone());
                    }
                }
            });
            settings
                .iter()
                .map(|(name, value)| Event::Broadcast {
                    audience: Audience::Realm(*realm),
                    event: json!({ "type": "realm_user_settings_defaults", "op": "update",
                                   "property": name, "value": value.to_json() }),
                })
                .collect()
        }
        OrgChange::PutDomain { realm, domain, allow_subdomains, new } => {
            realm_exists(realm);
            org.realms.upsert(*realm, |r| {
                let had = r.domains.insert(domain.clone(), *allow_subdomains);
                assert_eq!(had.is_none(), *new, "apply: domain {domain} added twice or missing");
            });
            let op = if *new { "add" } else { "change" };
            vec![Event::Broadcast {
                audience: Audience::Realm(*realm),
                event: json!({ "type": "realm_domains", "op": op,
                               "realm_domain": { "domain": domain,
                                                 "allow_subdomains": allow_subdomains } }),
            }]
        }
        OrgChange::RemoveDomain { realm, domain } => {
            org.realms
                .update(realm, |r| r.domains.remove(domain))
                .flatten()
                .unwrap_or_else(|| panic!("apply: no domain {domain}"));
            vec![Event::Broadcast {
                audience: Audience::Realm(*realm),
                event: json!({ "type": "realm_domains", "op": "remove", "domain": domain }),
            }]
        }
        OrgChange::RemoveStreamGroup { realm, id } => {
            org.realms
                .update(realm, |r| {
                    let before = r.stream_groups.len();
                    r.stream_groups.retain(|g| g.id != *id);
                    assert!(r.stream_groups.len() < before, "apply: no default channel group {id}");
                })
                .unwrap_or_else(|| panic!("apply: no default channel groups in realm {realm}"));
            vec![stream_groups(state, *realm)]
        }
    }
}

/// A channel archived or made private leaves every default channel group
/// (as in Zulip); the realm hears the new list if any group changed.
pub(super) fn drop_from_stream_groups(
    state: &State,
    realm: RealmId,
    channel: ChannelId,
) -> Option<Event> {
    let changed = state
        .organization
        .realms
        .update(&realm, |r| {
            let mut changed = false;
            for g in &mut r.stream_groups {
                let before = g.channels.len();
                g.channels.retain(|c| *c != channel);
                changed |= g.channels.len() < before;
            }
            changed
        })
        .unwrap_or(false);
    changed.then(|| stream_groups(state, realm))
}

fn linkifiers(state: &State, realm: RealmId) -> Event {
    Event::Broadcast { audience: Audience::Realm(realm), event: linkifiers_event(state, realm) }
}

fn stream_groups(state: &State, realm: RealmId) -> Event {
    Event::Broadcast { audience: Audience::Realm(realm), event: stream_groups_event(state, realm) }
}

/// A new account starts with its realm's user-setting defaults (nothing
/// is stored when the realm has none).
pub(super) fn start_with_defaults(state: &State, realm: RealmId, user: crate::state::UserId) {
    let defaults = state.organization.user_defaults(realm);
    if !defaults.overrides.is_empty() {
        state.settings.user_settings.insert(user, defaults);
    }
}
