//! Register's user lists (`realm_users`, `realm_non_active_users`), built
//! once per realm and users generation and shared by every register.
//!
//! In a realm of 10,000 the two lists are about 5 MB of JSON, and writing
//! them (plus cloning and sorting the accounts they come from) was most of
//! `POST /register`'s time. Only four things decide a list's bytes: the
//! accounts (with their profile data), the realm's email visibility, the
//! viewer's class under it (whether they see other humans' real addresses;
//! nobody for a spectator) and the options `client_gravatar` ×
//! `include_custom_profile_fields`. So:
//!
//! - a `Cut` is the realm's accounts, profile values and address settings
//!   copied once at one users generation (`State::users_generation`, which
//!   `apply` bumps for every mutation that may change any of them);
//! - each viewer class's lists are written once from the cut, with the
//!   byte span of every user recorded;
//! - a viewer's reply is that text with their own entry (where they see
//!   their own address though not others') written fresh in its span.
//!
//! **Why this is race-free.** `UserLists::cut` (and `UserLists::pending`,
//! its first half) is called only under the commit writer lock (inside
//! `Committer::read_consistent`, where register creates its queue with
//! floor S = the applied seq). Every mutation is applied under that lock
//! and bumps the generation in the same critical section when it may touch
//! users; so the generation read there, G, names exactly the users data of
//! the cut S, and a cached cut with generation G holds that data (it was
//! made from a view of a moment when the generation was also G, and nothing
//! user-related changed between the two moments, or G would have moved).
//!
//! When no cut of G is cached, the lock is held only to *freeze* what a cut
//! is made of — the `users`, `profile_values` shards (`Sharded::freeze`:
//! pointer copies) and the realm's two address settings — and the cut is
//! copied out of those frozen maps after the lock is released
//! (`PendingCut::finish`; 20–29 ms at 10,000 users, which used to be held
//! under the lock). The shards are copy-on-write: a mutation applied
//! meanwhile copies the shard it writes and never changes a frozen one, so
//! the frozen maps stay exactly the users data of S and G, and the cut
//! finished from them is the one that would have been copied under the
//! lock. Storing it after the lock is therefore safe too: it pairs G with
//! G's data whenever it is stored, and a stored cut is never replaced by
//! one of an older generation.
//!
//! The cut is immutable: rendering it after the lock is released, while
//! later mutations apply, reads only the copy, never live state. Those
//! later mutations have seq > S, so their events reach the queue and are
//! applied by the client exactly once on top of what the cut shows.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::state::access::sees_others_emails;
use crate::state::files::Avatar;
use crate::state::shard::Frozen;
use crate::state::{profile, EmailVisibility, RealmId, State, User, UserId};
use crate::view::user::UserOptions;
use crate::view::user_text::{write_user, ListSource};

/// The cached cuts, one per realm (the newest generation asked for).
#[derive(Default)]
pub struct UserLists {
    cuts: Mutex<HashMap<RealmId, Arc<Cut>>>,
}

impl UserLists {
    /// The realm's users as of now. **Call only under the commit writer
    /// lock** (`Committer::read_consistent`): see the module comment.
    pub fn cut(&self, state: &State, realm: RealmId) -> Arc<Cut> {
        self.pending(state, realm).finish(self)
    }

    /// The realm's users as of now, to be finished after the writer lock
    /// is released (`PendingCut::finish`): the cached cut when it is of
    /// the current generation, else a frozen view of the users to copy it
    /// from. **Call only under the commit writer lock.**
    pub fn pending(&self, state: &State, realm: RealmId) -> PendingCut {
        let generation = state.users_generation.load(Ordering::Acquire);
        let previous = self.cuts.lock().get(&realm).cloned();
        if let Some(cut) = previous.as_ref().filter(|c| c.generation == generation) {
            return PendingCut::Ready(Arc::clone(cut));
        }
        PendingCut::Frozen(Box::new(FrozenUsers {
            realm,
            generation,
            users: state.users.freeze(),
            profiles: state.profile_values.freeze(),
            avatars: state.files.avatars(),
            visibility: state
                .realms
                .read(&realm, |r| r.settings.email_address_visibility)
                .unwrap_or(EmailVisibility::Nobody),
            placeholder_host: state.placeholder_host(realm),
            previous,
        }))
    }

    /// Caches `cut` unless a cut of a newer generation is already there.
    fn store(&self, realm: RealmId, cut: Arc<Cut>) -> Arc<Cut> {
        let mut cuts = self.cuts.lock();
        match cuts.get(&realm) {
            Some(known) if known.generation > cut.generation => {}
            Some(known) if known.generation == cut.generation => return Arc::clone(known),
            _ => {
                cuts.insert(realm, Arc::clone(&cut));
            }
        }
        cut
    }
}

/// A cut taken under the writer lock, finished after it.
pub enum PendingCut {
    /// The cached cut of the generation asked for.
    Ready(Arc<Cut>),
    /// What the cut is made of, frozen at that generation.
    Frozen(Box<FrozenUsers>),
}

/// The users data of one generation, frozen under the writer lock.
pub struct FrozenUsers {
    realm: RealmId,
    generation: u64,
    users: Frozen<UserId, Arc<User>>,
    profiles: Frozen<UserId, profile::Values>,
    avatars: Arc<BTreeMap<UserId, Avatar>>,
    visibility: EmailVisibility,
    placeholder_host: Option<String>,
    previous: Option<Arc<Cut>>,
}

impl PendingCut {
    /// The cut, copied out of the frozen view if it was not cached (no
    /// lock needed: see the module comment), and cached for later
    /// registers of the same generation.
    pub fn finish(self, lists: &UserLists) -> Arc<Cut> {
        match self {
            PendingCut::Ready(cut) => cut,
            PendingCut::Frozen(frozen) => {
                let realm = frozen.realm;
                lists.store(realm, Arc::new(Cut::read(*frozen)))
            }
        }
    }
}

/// Which rendering of the lists a viewer gets.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Class {
    /// Whether the viewer sees other humans' real addresses; `None` for a
    /// spectator, who sees no real address at all (not even bots').
    sees_others: Option<bool>,
    client_gravatar: bool,
    include_custom_profile_fields: bool,
}

/// One list's JSON text, with each user's byte span in it.
struct Rendered {
    text: String,
    spans: Vec<(UserId, usize, usize)>,
}

/// A viewer class's two lists.
struct Lists {
    active: Rendered,
    inactive: Rendered,
}

/// A realm's accounts and what their JSON depends on, copied at one users
/// generation; immutable once made.
pub struct Cut {
    generation: u64,
    /// Every account of the realm, by id.
    pub users: Vec<User>,
    profiles: HashMap<UserId, profile::Values>,
    /// Uploaded avatars (a copy-on-write map: this one never changes).
    avatars: Arc<BTreeMap<UserId, Avatar>>,
    visibility: EmailVisibility,
    placeholder_host: Option<String>,
    rendered: Mutex<HashMap<Class, Arc<Lists>>>,
    /// The realm's cut before this one, while this one's lists are still
    /// to be written: the users unchanged since are copied from its lists
    /// instead of written again (one level only: its own predecessor is
    /// dropped when this cut is made).
    previous: Mutex<Option<Arc<Cut>>>,
}

impl Cut {
    fn read(frozen: FrozenUsers) -> Self {
        let FrozenUsers {
            realm,
            generation,
            users,
            profiles,
            avatars,
            visibility,
            placeholder_host,
            previous,
        } = frozen;
        // The accounts are sorted by reference, then each cloned once into
        // place (system bots are cross-realm bots, not realm users).
        let mut mine: Vec<&User> = users
            .iter()
            .map(|(_, u)| &**u)
            .filter(|u| u.realm == realm && !u.is_system_bot())
            .collect();
        mine.sort_unstable_by_key(|u| u.id);
        let users: Vec<User> = mine.into_iter().cloned().collect();
        let profiles =
            users.iter().filter_map(|u| profiles.get(&u.id).map(|v| (u.id, v.clone()))).collect();
        Cut {
            generation,
            users,
            profiles,
            avatars,
            visibility,
            placeholder_host,
            rendered: Mutex::new(HashMap::new()),
            previous: Mutex::new(previous.inspect(|p| drop(p.previous.lock().take()))),
        }
    }

    /// The account `id` as of the cut.
    pub fn account(&self, id: UserId) -> Option<&User> {
        self.users.binary_search_by_key(&id, |u| u.id).ok().map(|i| &self.users[i])
    }

    /// The address the API shows for `user` (as `State::api_email`).
    pub fn api_email(&self, user: &User) -> String {
        match &self.placeholder_host {
            Some(host) if !user.is_bot() => format!("user{}@{host}", user.id.0),
            _ => user.email.clone(),
        }
    }

    /// `realm_users` and `realm_non_active_users` as `viewer` sees them
    /// (`None`: a logged-out spectator).
    pub fn realm_users(&self, viewer: Option<&User>, options: UserOptions) -> (String, String) {
        let class = Class {
            sees_others: viewer.map(|v| sees_others_emails(self.visibility, v.role)),
            client_gravatar: options.client_gravatar,
            include_custom_profile_fields: options.include_custom_profile_fields,
        };
        let lists = self.lists(class);
        // A viewer always sees their own address: where the class does not
        // see others', their own entry is written anew.
        let own = match (viewer, class.sees_others) {
            (Some(v), Some(false)) => self.account(v.id).map(|me| {
                let mut out = Vec::with_capacity(512);
                write_user(&mut out, &self.source(), me, true, options);
                (me.id, out)
            }),
            _ => None,
        };
        (splice(&lists.active, own.as_ref()), splice(&lists.inactive, own.as_ref()))
    }

    fn source(&self) -> ListSource<'_> {
        ListSource {
            placeholder_host: self.placeholder_host.as_deref(),
            profiles: &self.profiles,
            avatars: &self.avatars,
        }
    }

    /// The class's lists, written on first use. Two registers of a new
    /// class may both write them (no lock is held while writing); the
    /// first stored wins, and both are the same bytes.
    fn lists(&self, class: Class) -> Arc<Lists> {
        if let Some(lists) = self.rendered.lock().get(&class) {
            return Arc::clone(lists);
        }
        let options = UserOptions {
            client_gravatar: class.client_gravatar,
            include_custom_profile_fields: class.include_custom_profile_fields,
        };
        let sees = |user: &User| match class.sees_others {
            None => false,
            Some(others) => others || user.is_bot(),
        };
        let source = self.source();
        // The previous cut's lists of this class, if written under the same
        // address settings: unchanged users are copied from them.
        let previous = self.previous.lock().clone().and_then(|p| {
            let same =
                p.visibility == self.visibility && p.placeholder_host == self.placeholder_host;
            let lists = p.rendered.lock().get(&class).cloned().filter(|_| same)?;
            Some((p, lists))
        });
        let render = |active: bool| {
            let users = self.users.iter().filter(|u| u.is_active == active);
            // About 350 bytes a user: sized once, never copied while it grows.
            let mut out = Vec::with_capacity(64 + self.users.len() * 400);
            let mut spans = Vec::with_capacity(self.users.len());
            out.push(b'[');
            for (i, user) in users.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let start = out.len();
                let profile = self.profiles.get(&user.id);
                match previous.as_ref().and_then(|(p, lists)| {
                    p.fragment(lists, user, profile, self.avatars.get(&user.id))
                }) {
                    Some(bytes) => out.extend_from_slice(bytes),
                    None => write_user(&mut out, &source, user, sees(user), options),
                }
                spans.push((user.id, start, out.len()));
            }
            out.push(b']');
            Rendered { text: String::from_utf8(out).expect("serde_json writes UTF-8"), spans }
        };
        let lists = Arc::new(Lists { active: render(true), inactive: render(false) });
        Arc::clone(self.rendered.lock().entry(class).or_insert(lists))
    }
}

impl Cut {
    /// `user`'s object as `lists` (this cut's, of one class) wrote it, if
    /// the account and its profile values are unchanged in the new cut.
    fn fragment<'a>(
        &self,
        lists: &'a Lists,
        user: &User,
        profile: Option<&profile::Values>,
        avatar: Option<&Avatar>,
    ) -> Option<&'a [u8]> {
        let before = self.account(user.id)?;
        let same_avatar = self.avatars.get(&user.id) == avatar;
        if before != user || self.profiles.get(&user.id) != profile || !same_avatar {
            return None;
        }
        let list = if before.is_active { &lists.active } else { &lists.inactive };
        let i = list.spans.binary_search_by_key(&user.id, |s| s.0).ok()?;
        let (_, start, end) = list.spans[i];
        Some(&list.text.as_bytes()[start..end])
    }
}

/// The list's text with `own` (a user's id and object) in that user's span.
fn splice(list: &Rendered, own: Option<&(UserId, Vec<u8>)>) -> String {
    let found = own.and_then(|(id, bytes)| {
        let i = list.spans.binary_search_by_key(id, |s| s.0).ok()?;
        Some((list.spans[i], bytes))
    });
    let Some(((_, start, end), bytes)) = found else { return list.text.clone() };
    let mut out = String::with_capacity(list.text.len() + bytes.len());
    out.push_str(&list.text[..start]);
    out.push_str(std::str::from_utf8(bytes).expect("serde_json writes UTF-8"));
    out.push_str(&list.text[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Role;
    use crate::testkit::World;
    use crate::view::user_text::users_array;

    /// Every viewer's lists from `cut` equal those written from live state.
    fn assert_fresh(state: &State, users: &[User], cut: &Cut) {
        let viewers = users.iter().map(Some).chain([None]);
        for viewer in viewers {
            for client_gravatar in [false, true] {
                for include_custom_profile_fields in [false, true] {
                    let options = UserOptions { client_gravatar, include_custom_profile_fields };
                    let (active, inactive): (Vec<&User>, Vec<&User>) =
                        users.iter().partition(|u| u.is_active);
                    let want = (
                        users_array(state, viewer, active.into_iter(), options),
                        users_array(state, viewer, inactive.into_iter(), options),
                    );
                    let got = cut.realm_users(viewer, options);
                    assert_eq!(got, want, "{options:?} {:?}", viewer.map(|v| v.id));
                }
            }
        }
    }

    /// After a change, the new cut copies the unchanged users from the
    /// previous cut's lists and writes the changed ones: still the same
    /// bytes as fresh lists, for every viewer class.
    #[test]
    fn a_new_cut_reuses_unchanged_users_exactly() {
        let (w, users) = crate::view::user_text::tests::realm();
        let realm = users[0].realm;
        let lists = UserLists::default();
        let first = lists.cut(&w.state, realm);
        assert_fresh(&w.state, &users, &first);
        // A rename, a deactivation, a role change and new profile data.
        w.state.users.update(&users[1].id, |u| u.full_name = "Renamed \"Ü\"".into());
        w.state.users.update(&users[0].id, |u| u.is_active = false);
        w.state.users.update(&users[4].id, |u| u.role = Role::Moderator);
        let mut values = profile::Values::new();
        values.insert(3, ("new".into(), None));
        w.state.profile_values.insert(users[1].id, values);
        w.state.users_generation.fetch_add(1, Ordering::AcqRel);
        let second = lists.cut(&w.state, realm);
        assert!(second.previous.lock().is_some(), "the first cut is reused");
        let users = w.state.realm_users(realm);
        assert_fresh(&w.state, &users, &second);
        // Cuts never chain: the first one lets go of nothing older.
        w.state.users_generation.fetch_add(1, Ordering::AcqRel);
        let third = lists.cut(&w.state, realm);
        assert!(second.previous.lock().is_none());
        assert_fresh(&w.state, &users, &third);
    }

    /// The cached, spliced lists are byte for byte what writing each
    /// viewer's lists from live state gives, for every viewer class.
    #[test]
    fn cached_lists_equal_fresh_ones_for_every_viewer() {
        let (w, users) = crate::view::user_text::tests::realm();
        let realm = users[0].realm;
        for visibility in EmailVisibility::ALL {
            w.state.realms.update(&realm, |r| r.settings.email_address_visibility = visibility);
            let PendingCut::Frozen(frozen) = UserLists::default().pending(&w.state, realm) else {
                panic!("nothing is cached yet")
            };
            let cut = Cut::read(*frozen);
            let viewers = users.iter().map(Some).chain([None]);
            for viewer in viewers {
                for client_gravatar in [false, true] {
                    for include_custom_profile_fields in [false, true] {
                        let options =
                            UserOptions { client_gravatar, include_custom_profile_fields };
                        let (active, inactive): (Vec<&User>, Vec<&User>) =
                            users.iter().partition(|u| u.is_active);
                        let want = (
                            users_array(&w.state, viewer, active.into_iter(), options),
                            users_array(&w.state, viewer, inactive.into_iter(), options),
                        );
                        assert_eq!(
                            cut.realm_users(viewer, options),
                            want,
                            "{visibility:?} {options:?} {:?}",
                            viewer.map(|v| v.id)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn apply_moves_the_generation_for_user_changes_only() {
        use crate::mutation::Mutation;
        let (mut w, users) = crate::view::user_text::tests::realm();
        let generation = |w: &World| w.state.users_generation.load(Ordering::Acquire);
        let before = generation(&w);
        w.apply(Mutation::Batch(Vec::new()));
        assert_eq!(generation(&w), before, "an empty batch changes no user");
        let new = crate::mutation::build::NewUser {
            email: "new@t.test",
            full_name: "New",
            role: crate::state::Role::Member,
            bot: None,
        };
        let created =
            crate::mutation::build::user(&w.state, users[0].realm, &new, "n".repeat(32), 0)
                .unwrap();
        w.apply(Mutation::Batch(vec![created]));
        assert_eq!(generation(&w), before + 1, "a batch creating a user moves it");
        // Settings: only the name and time zone live in the account.
        let settings = |full_name: Option<&str>| {
            Mutation::UpdateSettings(crate::state::settings::SettingsChange {
                user: users[0].id,
                full_name: full_name.map(str::to_owned),
                timezone: None,
                settings: Vec::new(),
            })
        };
        w.apply(settings(None));
        assert_eq!(generation(&w), before + 1, "a change of other settings keeps it");
        w.apply(settings(Some("New Name")));
        assert_eq!(generation(&w), before + 2, "a rename moves it");
        assert!(crate::apply::keeps_users(&Mutation::SetPassword {
            user: users[0].id,
            hash: String::new()
        }));
    }

    #[test]
    fn a_cut_is_reused_until_the_users_generation_moves() {
        let (w, users) = crate::view::user_text::tests::realm();
        let realm = users[0].realm;
        let lists = UserLists::default();
        let first = lists.cut(&w.state, realm);
        assert!(Arc::ptr_eq(&first, &lists.cut(&w.state, realm)));
        w.state.users_generation.fetch_add(1, Ordering::AcqRel);
        let second = lists.cut(&w.state, realm);
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&second, &lists.cut(&w.state, realm)));
    }
}
