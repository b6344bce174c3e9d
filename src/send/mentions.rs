//! Mentions on the send path: what the renderer may resolve for a sender,
//! who may use wildcard mentions, and which recipients get which
//! mention flags.
//!
//! `Visible` answers the renderer's name look-ups with only what the sender
//! may see (active users of their realm, their realm's non-system groups,
//! channels `can_see_channel` allows). `notify` runs under the writer lock
//! and turns what the message mentions into per-recipient data for
//! `NewMessage`.
//!
//! Wildcard threshold: like Zulip (`Realm.WILDCARD_MENTION_THRESHOLD`), a
//! channel wildcard in a channel with more than 15 subscribers, or a topic
//! wildcard in a topic with more than 15 participants, needs
//! `can_mention_many_users_group`.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use crate::error::{ApiError, ApiResult};
use crate::markdown::linkifiers::Rule;
use crate::markdown::{Mentions, Resolver, UploadPreview};
use crate::state::access::{can_see_channel, has_permission, in_group};
use crate::state::{ChannelId, Destination, GroupId, State, SystemGroup, User, UserId};

/// More subscribers / participants than this make a wildcard "large".
pub const WILDCARD_MENTION_THRESHOLD: usize = 15;

/// The renderer's view of the realm, as one sender sees it.
pub struct Visible<'a> {
    state: &'a State,
    sender: &'a User,
    /// Lowercased full name → ids with that name; built on first use
    /// (most messages mention nobody).
    names: OnceLock<HashMap<String, Vec<(u64, String)>>>,
    /// The realm's linkifiers; read on first use.
    linkifiers: OnceLock<Vec<Rule>>,
    /// The realm's URL: links into it render relative (`with_realm_url`).
    realm_url: Option<String>,
}

impl<'a> Visible<'a> {
    /// Look-ups limited to what `sender` may see.
    pub fn new(state: &'a State, sender: &'a User) -> Self {
        Visible {
            state,
            sender,
            names: OnceLock::new(),
            linkifiers: OnceLock::new(),
            realm_url: None,
        }
    }

    /// With the sender's realm URL (the API layer knows the external
    /// host): links into the realm render as Zulip renders them.
    pub fn with_realm_url(mut self, url: Option<String>) -> Self {
        self.realm_url = url;
        self
    }

    fn names(&self) -> &HashMap<String, Vec<(u64, String)>> {
        self.names.get_or_init(|| {
            let mut names: HashMap<String, Vec<(u64, String)>> = HashMap::new();
            for user in self.state.realm_users(self.sender.realm) {
                if user.is_active {
                    names
                        .entry(user.full_name.to_lowercase())
                        .or_default()
                        .push((user.id.0, user.full_name));
                }
            }
            names
        })
    }
}

impl Resolver for Visible<'_> {
    fn upload_preview(&self, path_id: &str) -> UploadPreview {
        let thumbnail = self
            .state
            .files
            .by_path(path_id)
            .filter(|a| a.realm == self.sender.realm)
            .and_then(|a| self.state.files.thumbnail(a.id));
        match thumbnail {
            Some(t) => UploadPreview::Thumbnail {
                src: crate::thumbnails::url(path_id),
                dimensions: (t.width, t.height),
                content_type: t.content_type,
            },
            None => UploadPreview::None,
        }
    }

    fn realm_url(&self) -> Option<String> {
        self.realm_url.clone()
    }

    fn realm_emoji(&self, name: &str) -> Option<(u64, String)> {
        let emoji = self.state.files.active_emoji(self.sender.realm, name)?;
        Some((emoji.id, format!("/user_avatars/{}", emoji.key)))
    }

    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        match self.names().get(&name.to_lowercase())?.as_slice() {
            [one] => Some(one.clone()),
            _ => None, // ambiguous: Zulip wants `@**Name|id**`
        }
    }

    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        let user = self.state.user_in_realm(self.sender.realm, UserId(id))?;
        user.is_active.then_some((user.id.0, user.full_name))
    }

    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        let realm = self.sender.realm;
        let found = self.state.groups.collect_sorted(|_, g| {
            g.realm == realm && g.system.is_none() && !g.deactivated && g.name == name
        });
        found.into_iter().next().map(|(id, g)| (id.0, g.name))
    }

    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        let channel = self.state.channel_by_name(self.sender.realm, name)?;
        can_see_channel(self.sender, &channel).then_some((channel.id.0, channel.name))
    }

    fn linkifiers(&self) -> &[Rule] {
        self.linkifiers.get_or_init(|| {
            let stored = self.state.organization.linkifiers(self.sender.realm);
            stored
                .into_iter()
                .map(|l| Rule { pattern: l.pattern, url_template: l.url_template })
                .collect()
        })
    }
}

/// Per-recipient mention data for a message about to be sent.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Notify {
    /// Recipients mentioned personally or through a group.
    pub mentioned: Vec<UserId>,
    /// Every recipient is channel-wildcard mentioned.
    pub channel_wildcard: bool,
    /// Topic participants (among the recipients) who are topic-wildcard
    /// mentioned.
    pub topic_wildcard: Vec<UserId>,
}

/// Checks wildcard permission and works out who is mentioned, against the
/// state under the writer lock. `recipients` are the users the message is
/// delivered to.
pub fn notify(
    state: &State,
    sender: &User,
    destination: &Destination,
    recipients: &[UserId],
    mentions: &Mentions,
) -> ApiResult<Notify> {
    let mut out = Notify::default();
    let groups: Vec<GroupId> = mentions.groups.iter().map(|g| GroupId(*g)).collect();
    for user in recipients {
        let personal = mentions.users.contains(&user.0);
        let via_group = !groups.is_empty()
            && state
                .users
                .get(user)
                .is_some_and(|u| groups.iter().any(|g| in_group(state, &u, *g)));
        if personal || via_group {
            out.mentioned.push(*user);
        }
    }
    // Wildcards mean something only in channels (as in Zulip).
    let Destination::Channel { channel, topic } = destination else { return Ok(out) };
    if mentions.channel_wildcard {
        if recipients.len() > WILDCARD_MENTION_THRESHOLD && !may_mention_many(state, sender) {
            return Err(ApiError::stream_wildcard_not_allowed());
        }
        out.channel_wildcard = true;
    }
    if mentions.topic_wildcard {
        let participants = topic_participants(state, *channel, topic, sender.id);
        if participants.len() > WILDCARD_MENTION_THRESHOLD && !may_mention_many(state, sender) {
            return Err(ApiError::topic_wildcard_not_allowed());
        }
        out.topic_wildcard =
            recipients.iter().copied().filter(|u| participants.contains(u)).collect();
    }
    Ok(out)
}

fn may_mention_many(state: &State, sender: &User) -> bool {
    let Some(realm) = state.realms.get(&sender.realm) else { return false };
    let setting = realm
        .group_setting(&realm.settings.can_mention_many_users_group, SystemGroup::Administrators);
    has_permission(state, sender, &setting)
}

/// Who has posted in the topic (case-insensitively, as Zulip compares
/// topics), plus the sender, who is about to.
fn topic_participants(
    state: &State,
    channel: ChannelId,
    topic: &str,
    sender: UserId,
) -> BTreeSet<UserId> {
    let mut participants = BTreeSet::from([sender]);
    // The topic's own index (keyed by the lowercased topic): not a scan of
    // the whole channel, which a busy channel makes millions of messages.
    for id in state.topic_ids(&(channel, topic.to_lowercase())).iter() {
        state.messages.read(&id, |m| participants.insert(m.sender));
    }
    participants
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::render_message;
    use crate::mutation::build::{NewChannel, NewUser};
    use crate::state::{GroupSetting, Role};
    use crate::testkit::World;

    /// A realm with an owner, `members` members (one named "Twin" twice)
    /// and a channel "big" everyone is in.
    fn realm(members: usize) -> (World, Vec<User>) {
        let mut w = World::new();
        let users: Vec<User> = (0..=members)
            .map(|i| {
                let email = format!("u{i}@t.test");
                let name = if i >= members - 1 { "Twin".to_owned() } else { format!("User {i}") };
                let role = if i == 0 { Role::Owner } else { Role::Member };
                w.add_user("", &NewUser { email: &email, full_name: &name, role, bot: None }, 0)
            })
            .collect();
        let ids: Vec<UserId> = users.iter().map(|u| u.id).collect();
        let new = NewChannel {
            name: "big",
            description: "",
            invite_only: false,
            creator: Some(ids[0]),
            subscribers: &ids,
        };
        w.add_channel("", &new);
        (w, users)
    }

    fn big(w: &World) -> Destination {
        let realm = w.state.realm_by_subdomain("").unwrap();
        let channel = w.state.channel_by_name(realm.id, "big").unwrap();
        Destination::Channel { channel: channel.id, topic: "t".into() }
    }

    #[test]
    fn resolves_only_what_the_sender_may_see() {
        let (w, users) = realm(3);
        let member = &users[1];
        let visible = Visible::new(&w.state, member);
        assert_eq!(visible.user_by_name("user 1"), Some((member.id.0, "User 1".into())));
        assert_eq!(visible.user_by_name("Twin"), None, "ambiguous names need an id");
        assert!(visible.user_by_id(users[3].id.0).is_some());
        assert!(visible.user_by_id(9999).is_none());
        assert!(visible.channel_by_name("BIG").is_some());
        assert!(
            visible.group_by_name("role:everyone").is_none(),
            "system groups are not mentionable"
        );
        // Another realm's user is nobody here.
        let stranger = User { realm: crate::state::RealmId(77), ..member.clone() };
        let visible = Visible::new(&w.state, &stranger);
        assert!(
            visible.user_by_id(member.id.0).is_none() && visible.channel_by_name("big").is_none()
        );
    }

    #[test]
    fn flags_follow_mentions() {
        let (mut w, users) = realm(4);
        w.group("", "crew", &[&users[2]]);
        let sender = &users[1];
        let ids: Vec<UserId> = users.iter().map(|u| u.id).collect();
        let source = format!("@**Twin|{}** @*crew* @_**User 1**", users[3].id.0);
        let rendered = render_message(&source, &Visible::new(&w.state, sender));
        let n = notify(&w.state, sender, &big(&w), &ids, &rendered.mentions).unwrap();
        assert_eq!(n.mentioned, vec![users[2].id, users[3].id]);
        assert!(!n.channel_wildcard && n.topic_wildcard.is_empty());
        // A topic wildcard reaches the topic's participants: the sender only.
        let rendered = render_message("@**topic** @**all**", &Visible::new(&w.state, sender));
        let n = notify(&w.state, sender, &big(&w), &ids, &rendered.mentions).unwrap();
        assert!(n.channel_wildcard);
        assert_eq!(n.topic_wildcard, vec![sender.id]);
    }

    #[test]
    fn large_wildcards_need_permission() {
        let (w, users) = realm(WILDCARD_MENTION_THRESHOLD + 1);
        let ids: Vec<UserId> = users.iter().map(|u| u.id).collect();
        assert!(ids.len() > WILDCARD_MENTION_THRESHOLD);
        let member = &users[1];
        let owner = &users[0];
        let all = Mentions { channel_wildcard: true, ..Mentions::default() };
        let e = notify(&w.state, member, &big(&w), &ids, &all).unwrap_err();
        assert_eq!(e.code, "STREAM_WILDCARD_MENTION_NOT_ALLOWED");
        assert!(notify(&w.state, owner, &big(&w), &ids, &all).unwrap().channel_wildcard);
        // Small audiences are fine for anyone.
        assert!(
            notify(&w.state, member, &big(&w), &ids[..WILDCARD_MENTION_THRESHOLD], &all).is_ok()
        );
        // Direct messages ignore wildcards.
        let dm = Destination::Direct { participants: ids.clone().into() };
        assert!(!notify(&w.state, member, &dm, &ids, &all).unwrap().channel_wildcard);
        // The realm may open it to everyone.
        let mut realm = w.state.realm_by_subdomain("").unwrap();
        realm.settings.can_mention_many_users_group =
            Some(GroupSetting::Group(realm.system_groups.id(SystemGroup::Everyone)));
        w.state.realms.insert(realm.id, realm.clone());
        assert!(notify(&w.state, member, &big(&w), &ids, &all).is_ok());
        realm.settings.can_mention_many_users_group = None;
        w.state.realms.insert(realm.id, realm);
        // Topic wildcards count participants, not subscribers.
        let topic = Mentions { topic_wildcard: true, ..Mentions::default() };
        assert!(notify(&w.state, member, &big(&w), &ids, &topic).is_ok());
    }

    #[test]
    fn large_topic_wildcards_need_permission() {
        let (mut w, users) = realm(WILDCARD_MENTION_THRESHOLD + 1);
        let destination = big(&w);
        let Destination::Channel { channel, .. } = &destination else { unreachable!() };
        for (i, u) in users.iter().enumerate() {
            w.post(u, *channel, "T", &format!("m{i}"));
        }
        let ids: Vec<UserId> = users.iter().map(|u| u.id).collect();
        let topic = Mentions { topic_wildcard: true, ..Mentions::default() };
        let e = notify(&w.state, &users[1], &destination, &ids, &topic).unwrap_err();
        assert_eq!(e.code, "TOPIC_WILDCARD_MENTION_NOT_ALLOWED");
        let n = notify(&w.state, &users[0], &destination, &ids, &topic).unwrap();
        assert_eq!(n.topic_wildcard, ids);
        // Another topic of the same channel is small.
        let other = Destination::Channel { channel: *channel, topic: "other".into() };
        assert!(notify(&w.state, &users[1], &other, &ids, &topic).is_ok());
    }

    #[test]
    fn direct_message_permission_group() {
        let (w, users) = realm(3);
        let mut realm = w.state.realm_by_subdomain("").unwrap();
        let (owner, a, b) = (&users[0], &users[1], &users[2]);
        assert!(crate::state::access::may_send_direct(&w.state, a, std::slice::from_ref(b)));
        realm.settings.direct_message_permission_group =
            Some(GroupSetting::Group(realm.system_groups.id(SystemGroup::Administrators)));
        w.state.realms.insert(realm.id, realm);
        let may = |s: &User, to: &[User]| crate::state::access::may_send_direct(&w.state, s, to);
        assert!(!may(a, std::slice::from_ref(b)), "no participant is an administrator");
        assert!(may(a, &[b.clone(), owner.clone()]), "an administrator takes part");
        assert!(may(owner, std::slice::from_ref(a)));
        assert!(may(a, &[]), "a note to self is always allowed");
    }
}
