//! Who hears about a change to an existing message (a reaction, a
//! deletion): the users who have it — a per-user row from delivery — plus,
//! for a channel whose history is open to subscribers, everyone subscribed
//! now (they can read it as history). As in Zulip.

use super::{Destination, IdKind, Message, MessageId, State, UserId};

impl State {
    /// Users holding a row for `message` (it was delivered to them),
    /// ascending.
    ///
    /// A recent message's recipients are remembered from its send
    /// (`holders`), and a direct message's can only be its participants
    /// (nobody else may read it, so nobody else gets a row, historical or
    /// not): only they are tested. Otherwise every user's rows are
    /// (`holders_by_scan`). Looking at every account this way was, with
    /// 10,000 users, milliseconds per reaction under the writer lock: the
    /// largest cost of the `natter-load --kind mix` load.
    pub fn message_holders(&self, message: &Message) -> Vec<UserId> {
        let candidates = match &message.destination {
            Destination::Direct { participants } => Some(participants.to_vec()),
            // Its recipients at send, and nobody has gained a row since.
            Destination::Channel { .. } => self.holder_hints.candidates(message.id),
        };
        let Some(mut holders) = candidates else {
            return self.holders_by_scan(message);
        };
        let in_realm = |id: &UserId| self.users.read(id, |u| u.realm == message.realm);
        holders.retain(|id| {
            self.user_messages.read(id, |m| m.ids().contains(message.id)) == Some(true)
                && in_realm(id) == Some(true)
        });
        holders
    }

    /// Notes a message's recipients at its send (live or replayed) as its
    /// holders, if it is one that takes a hint (`takes_hint`).
    pub fn note_holders(
        &self,
        message: &Message,
        recipients: impl ExactSizeIterator<Item = UserId>,
    ) {
        if takes_hint(message) {
            self.holder_hints.note_send(message.id, recipients);
        }
    }

    /// Hints for the newest messages read from the rows
    /// (`HolderHints::rebuild`): called once recovery has rebuilt the
    /// state, whose hints start empty.
    pub fn rebuild_holder_hints(&self) {
        let rows = self.user_messages.freeze();
        let next_id = self.ids.peek(IdKind::Message);
        // The messages that took a hint at their send.
        let hinted = |id: MessageId| self.messages.read(&id, |m| takes_hint(m)) == Some(true);
        self.holder_hints.rebuild(
            next_id,
            || rows.iter().map(|(user, m)| (*user, m.ids())),
            hinted,
        );
    }

    /// `message_holders` by one pass over the rows map: a pointer copy of
    /// its shards (no lock or hash per user) and one membership test of the
    /// delivered ids each; only the few holders are then looked up. The
    /// pointer copy is dropped before returning, so the caller's later
    /// writes copy no shard.
    fn holders_by_scan(&self, message: &Message) -> Vec<UserId> {
        let in_realm = |id: &UserId| self.users.read(id, |u| u.realm == message.realm);
        let rows = self.user_messages.freeze();
        let mut holders: Vec<UserId> =
            rows.iter().filter(|(_, m)| m.ids().contains(message.id)).map(|(id, _)| *id).collect();
        drop(rows);
        holders.retain(|id| in_realm(id) == Some(true));
        holders.sort_unstable();
        holders
    }

    /// Everyone who should get an event about `message`, ascending.
    pub fn message_audience(&self, message: &Message) -> Vec<UserId> {
        let mut audience = self.message_holders(message);
        if let Destination::Channel { channel, .. } = &message.destination {
            let subscribers = self
                .channels
                .read(channel, |c| {
                    let open = !c.invite_only || c.history_public_to_subscribers;
                    if open {
                        c.subscribers.iter().copied().collect()
                    } else {
                        Vec::new()
                    }
                })
                .unwrap_or_default();
            audience.extend(subscribers);
            audience.sort();
            audience.dedup();
        }
        audience
    }
}

/// Whether `message`'s holders are remembered from its send: a channel
/// message's are; a direct message's are its participants, asked without
/// a hint, so it takes no room in the hints' rings.
fn takes_hint(message: &Message) -> bool {
    matches!(message.destination, Destination::Channel { .. })
}

#[cfg(test)]
mod tests {
    use crate::mutation::Mutation;
    use crate::state::messages::{Reaction, ReactionType};
    use crate::state::{MessageId, Role, State, User};
    use crate::testkit::World;

    /// Every message's holders, as hinted and by the scan.
    fn both(state: &State) -> Vec<(Vec<crate::state::UserId>, Vec<crate::state::UserId>)> {
        (0..200)
            .filter_map(|i| state.messages.get(&MessageId(i)))
            .map(|m| (state.message_holders(&m), state.holders_by_scan(&m)))
            .collect()
    }

    #[test]
    fn hinted_holders_match_the_scan_after_late_rows_and_removals() {
        // Four members of a public channel, 30 messages in it.
        let mut w = World::new();
        let members: Vec<User> =
            (0..4).map(|i| w.user("", &format!("user{i}@b.test"), Role::Member)).collect();
        let general = w.channel("", "general", false, &members.iter().collect::<Vec<_>>()).id;
        for i in 0..30 {
            w.post(&members[i % 4], general, &format!("topic {}", i % 3), &format!("hello {i}"));
        }
        let pairs = both(&w.state);
        assert_eq!(pairs.len(), 30);
        for (hinted, scanned) in &pairs {
            assert_eq!(hinted, scanned);
            assert_eq!(hinted.len(), 4, "every member got every message");
        }
        let first = (0..200).map(MessageId).find(|id| w.state.messages.contains(id)).unwrap();
        assert!(w.state.holder_hints.candidates(first).is_some());
        // A newcomer reacts to a message of the public channel's history:
        // a historical row, added after the send.
        let late = w.user("", "late@b.test", Role::Member).id;
        let reaction = Reaction {
            emoji_name: "smile".into(),
            emoji_code: "1f604".into(),
            reaction_type: ReactionType::Unicode,
            user: late,
        };
        w.apply(Mutation::AddReaction { message: first, reaction });
        assert!(w.state.holder_hints.candidates(first).is_none(), "the late row dropped the hint");
        let message = w.state.messages.get(&first).unwrap();
        assert!(w.state.message_holders(&message).contains(&late));
        // A removed row leaves a hinted message's holders too.
        let second = MessageId(first.0 + 1);
        let gone = w.state.message_holders(&w.state.messages.get(&second).unwrap())[0];
        w.state.remove_row(gone, second);
        assert!(w.state.holder_hints.candidates(second).is_some());
        for (hinted, scanned) in both(&w.state) {
            assert_eq!(hinted, scanned);
        }
        assert!(!w.state.message_holders(&w.state.messages.get(&second).unwrap()).contains(&gone));

        // A restart: the state comes back from its image with no hints;
        // rebuilt from the rows, every message has one again (the one
        // with the late row too: its holders are read as they are now),
        // and they still match the scan.
        let restarted = State::from_image(w.state.image());
        assert!(restarted.holder_hints.candidates(first).is_none(), "hints are not snapshotted");
        restarted.rebuild_holder_hints();
        for id in (0..200).map(MessageId).filter(|id| restarted.messages.contains(id)) {
            assert!(restarted.holder_hints.candidates(id).is_some(), "{id} has a hint");
        }
        let before = both(&w.state);
        assert_eq!(both(&restarted), before);
        assert!(before[0].0.contains(&late));
    }

    #[test]
    fn direct_message_holders_are_its_participants_with_a_row_without_a_hint() {
        let mut w = World::new();
        let [a, b, c, d] =
            ["a", "b", "c", "d"].map(|n| w.user("", &format!("{n}@x.test"), Role::Member));
        let pair = w.dm(&a, &[&b], "one to one");
        let group = w.dm(&b, &[&a, &c], "a group");
        let own = w.dm(&d, &[], "a note to self");
        let channel = w.channel("", "team", false, &[&a, &c]);
        let post = w.post(&a, channel.id, "t", "in a channel");
        // Only the channel message took room in the hints at its send.
        for id in [pair, group, own] {
            assert!(w.state.holder_hints.candidates(id).is_none(), "{id} noted at send");
        }
        assert_eq!(w.state.holder_hints.candidates(post), Some(vec![a.id, c.id]));
        w.state.remove_row(c.id, group);
        // As after a restart, with the hints rebuilt from the rows: again
        // only the channel message has one, so only the participants can
        // answer a direct message without the scan.
        let state = State::from_image(w.state.image());
        state.rebuild_holder_hints();
        for id in [pair, group, own] {
            assert!(state.holder_hints.candidates(id).is_none(), "{id} hinted by the rebuild");
        }
        assert_eq!(state.holder_hints.candidates(post), Some(vec![a.id, c.id]));
        let holders = |id| {
            let m = state.messages.get(&id).unwrap();
            let hinted = state.message_holders(&m);
            assert_eq!(hinted, state.holders_by_scan(&m), "{id}");
            hinted
        };
        let ids = |us: &[&crate::state::User]| us.iter().map(|u| u.id).collect::<Vec<_>>();
        assert_eq!(holders(pair), ids(&[&a, &b]));
        assert_eq!(holders(group), ids(&[&a, &b]), "c's row is gone");
        assert_eq!(holders(own), ids(&[&d]));
        // A row nobody outside the conversation can get, put in by hand:
        // the scan finds it, the participants do not — they are what is
        // asked.
        state.user_messages.upsert(c.id, |rows| {
            rows.insert_if_absent(pair, crate::state::Flags::READ);
        });
        let m = state.messages.get(&pair).unwrap();
        assert!(state.holders_by_scan(&m).contains(&c.id));
        assert_eq!(state.message_holders(&m), ids(&[&a, &b]));
    }
}
