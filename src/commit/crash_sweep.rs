//! The crash-point sweep: a scripted workload through the real write path
//! (`Committer::commit` → log → `apply`, snapshots on their thread, log
//! rotations), with the power cut at every file-system call in turn
//! (`wal::sim::SimFs`), plain and tearing the write it falls on. After
//! each cut the disk is put back as it would be found, natter's recovery
//! opens it, and:
//!
//! - every acknowledged change is there: the recovered seq is at least
//!   the last one `commit` returned for while the power was on;
//! - nothing is half applied: the recovered state is byte for byte the
//!   state the first N committed mutations make, for the N recovered;
//! - ids keep increasing: the next commit gets seq N + 1 and the next
//!   free ids after the recovered state's.

use std::path::Path;
use std::sync::Arc;

use wal::sim::SimFs;

use super::*;
use crate::mutation::build::{self, NewChannel, NewUser};
use crate::mutation::{MessageEdit, NewContent, NewMessage, PropagateMode};
use crate::persist::snapshot;
use crate::state::{
    ChannelId, Destination, IdKind, Message, MessageId, MessageParts, RealmId, Role, UserId,
};

/// A committer on `dir` whose files go through `fs`, with 2 KiB log
/// segments (several rotations in the workload) and a snapshot every 9
/// commits.
fn open(dir: &Path, fs: &Arc<SimFs>) -> Committer {
    let durable = Arc::new(Durable::new(0));
    let on_durable = Arc::clone(&durable);
    let options = wal::Options {
        segment_bytes: 2048,
        on_durable: Some(Arc::new(move |seq| on_durable.advance(seq))),
        fs: Arc::clone(fs) as _,
        ..wal::Options::default()
    };
    let (state, wal, _) = crate::persist::open(dir, options).unwrap();
    let policy = SnapshotPolicy::every(crate::persist::snapshot_dir(dir), 9);
    Committer::new(Arc::new(state), Arc::new(wal), durable, Arc::new(Hub::new()), policy)
}

/// Stops the snapshot thread (after what it was handed) and lets go of
/// the log, so that nothing touches the files any more.
fn close(c: Committer) {
    drop(c.snapshot_tick.lock().take());
    if let Some(thread) = c.snapshot_thread.lock().take() {
        thread.join().unwrap();
    }
}

/// The workload, recording each committed mutation under its seq and
/// returning the last seq acknowledged while the power was on.
struct Run<'a> {
    c: &'a Committer,
    fs: &'a SimFs,
    /// Every committed mutation, in seq order (seq = index + 1).
    log: Vec<Mutation>,
    acked: u64,
}

impl Run<'_> {
    fn commit(&mut self, build: impl FnOnce(&State) -> Mutation) -> u64 {
        let log = &mut self.log;
        let seq = self
            .c
            .commit(|s| {
                let m = build(s);
                log.push(m.clone());
                Ok((m, s.applied_seq() + 1))
            })
            .unwrap();
        assert_eq!(seq, self.log.len() as u64);
        if self.fs.powered() {
            self.acked = seq;
        }
        seq
    }

    fn user(&mut self, realm: RealmId, email: &str) -> UserId {
        let new = NewUser { email, full_name: email, role: Role::Member, bot: None };
        self.commit(|s| build::user(s, realm, &new, "k".repeat(32), 0).unwrap());
        self.c.state().user_by_delivery_email(realm, email).unwrap().id
    }

    fn send(&mut self, sender: UserId, channel: ChannelId, content: &str) -> MessageId {
        let state = self.c.state();
        let realm = state.users.read(&sender, |u| u.realm).unwrap();
        let recipient = state.channels.read(&channel, |c| c.recipient).unwrap();
        let mut id = MessageId(0);
        self.commit(|s| {
            id = MessageId(s.ids.peek(IdKind::Message));
            let message = Message::from(MessageParts {
                id,
                realm,
                sender,
                recipient,
                destination: Destination::Channel { channel, topic: "sweep".into() },
                content: content.to_owned(),
                rendered_content: crate::markdown::render(content),
                timestamp: 1_000 + id.0 as i64,
                client: "test".into(),
                is_me_message: false,
            });
            Mutation::SendMessage(NewMessage {
                message: Arc::new(message),
                read_by_sender: true,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            })
        });
        id
    }

    fn edit(&mut self, editor: UserId, message: MessageId, content: &str) {
        self.commit(|_| {
            Mutation::EditMessage(MessageEdit {
                message,
                editor,
                timestamp: 5_000,
                content: Some(NewContent {
                    content: content.to_owned(),
                    rendered: crate::markdown::render(content),
                    is_me_message: false,
                    mentioned: Vec::new(),
                    channel_wildcard: false,
                    topic_wildcard: Vec::new(),
                }),
                topic: None,
                channel: None,
                moved: Vec::new(),
                counts_as_move: false,
                propagate_mode: PropagateMode::ChangeOne,
            })
        });
    }

    /// Sends, edits, deletes, subscriptions and their removal: about 30
    /// commits, three snapshots and several log segments.
    fn script(&mut self) {
        self.commit(|s| build::realm(s, "", "Sweep", 0).unwrap());
        let realm = self.c.state().realm_by_subdomain("").unwrap().id;
        let alice = self.user(realm, "alice@sweep.test");
        let bob = self.user(realm, "bob@sweep.test");
        let carol = self.user(realm, "carol@sweep.test");
        let subscribers = [alice, bob];
        self.commit(|s| {
            let realm = s.realms.get(&realm).unwrap();
            let new = NewChannel {
                name: "general",
                description: "",
                invite_only: false,
                creator: Some(alice),
                subscribers: &subscribers,
            };
            build::channel(s, &realm, &new, 0).unwrap()
        });
        let general = self.c.state().channel_by_name(realm, "general").unwrap().id;
        let mut sent = Vec::new();
        for round in 0..6 {
            let sender = [alice, bob][round % 2];
            sent.push(self.send(sender, general, &format!("message {round} with **some** text")));
            sent.push(self.send(sender, general, &format!("and a reply {round}")));
            if round == 1 {
                self.commit(|s| Mutation::Subscribe {
                    channel: general,
                    subscribers: vec![(carol, build::subscription(s, carol, 0))],
                });
            }
            if round == 4 {
                self.commit(|_| Mutation::Unsubscribe { channel: general, users: vec![bob] });
            }
            self.edit(sender, sent[sent.len() - 2], &format!("message {round}, edited"));
            if round % 2 == 1 {
                let doomed = sent.remove(0);
                self.commit(|_| Mutation::DeleteMessages { messages: vec![doomed], by: alice });
            }
        }
    }
}

/// What the first `n` mutations of `log` make, encoded as a snapshot.
fn replayed(log: &[Mutation], n: u64) -> Vec<u8> {
    let state = State::new();
    for (i, m) in log.iter().take(n as usize).enumerate() {
        apply(&state, i as u64 + 1, m);
    }
    snapshot::encode(&state.image())
}

/// One run with the power cut at `cut`; whether the workload finished
/// before it.
fn run(cut: u64, torn: bool) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(SimFs::new());
    fs.cut_power_at(cut, torn);
    let c = open(dir.path(), &fs);
    let mut run = Run { c: &c, fs: &fs, log: Vec::new(), acked: 0 };
    run.script();
    let (log, acked) = (std::mem::take(&mut run.log), run.acked);
    close(c);
    let finished = fs.powered();
    fs.restore_durable().unwrap();

    let after = Arc::new(SimFs::new());
    let c = open(dir.path(), &after);
    let recovered = c.state().applied_seq();
    let context = format!("power cut at call {cut} (torn: {torn})");
    assert!(recovered >= acked, "{context}: acknowledged {acked}, recovered {recovered}");
    assert!(recovered <= log.len() as u64, "{context}: recovered more than was committed");
    assert!(
        snapshot::encode(&c.state().image()) == replayed(&log, recovered),
        "{context}: the recovered state is not that of the first {recovered} commits"
    );
    // Ids go on from where the recovered state is.
    let next_user = c.state().ids.peek(IdKind::User);
    let seq = c
        .commit(|s| {
            let realm = s.realm_by_subdomain("").map(|r| r.id);
            let m = match realm {
                Some(realm) => {
                    let new = NewUser {
                        email: "late@sweep.test",
                        full_name: "Late",
                        role: Role::Member,
                        bot: None,
                    };
                    build::user(s, realm, &new, "k".repeat(32), 0)?
                }
                None => build::realm(s, "", "Sweep", 0)?,
            };
            Ok((m, s.applied_seq() + 1))
        })
        .unwrap();
    assert_eq!(seq, recovered + 1, "{context}");
    assert!(c.state().ids.peek(IdKind::User) >= next_user, "{context}");
    close(c);
    finished
}

#[test]
fn a_power_cut_at_any_call_loses_no_acknowledged_change() {
    let mut cuts = 0;
    for torn in [false, true] {
        for cut in 1.. {
            if run(cut, torn) {
                break;
            }
            cuts += 1;
        }
    }
    assert!(cuts > 100, "only {cuts} cut points");
}
