//! The event-queue journal, `<data dir>/event-queues.log`: what must
//! survive a crash for a client to resume its queue — the queue's
//! registration (owner, options, register floor) and how far its client
//! has acknowledged. Events are not journaled: they are derived again from
//! the mutation log at recovery (ARCHITECTURE.md, "Crash-surviving
//! queues"), with the ids they had (`seq × 1024 + k`).
//!
//! **Format.** An 8-byte magic, then frames: the payload's length (u32
//! LE), its CRC-32 (u32 LE), and the payload, one JSON `Entry`. Reading
//! stops at the first frame that is incomplete, fails its checksum or
//! does not decode: a crash mid-append leaves a torn tail, and everything
//! before it stands. The file is never appended to after a torn tail: at
//! start-up it is rewritten whole (compacted) from the recovered queues.
//!
//! **Writing.** The queue ticker calls `Journal::sync` about once a
//! second: it compares the live queues with what the journal holds and
//! appends a `Registered` for each new queue, an `Acked` for each queue
//! whose client acknowledged more, and a `Gone` for each queue no longer
//! live, with one `write` and one `fdatasync` for all of them (nothing
//! when nothing changed). The send path writes nothing here. When the
//! file has grown to four times its compacted size (and at least
//! `COMPACT_MIN`), it is rewritten from the live queues instead (temp
//! file, fsync, rename, fsync of the directory). Every change goes
//! through the log's `wal::Fs`, so the fault tests' seam covers it.
//!
//! **What a crash loses.** At most the last second: a queue registered in
//! it is unknown afterwards (its client registers again on
//! `BAD_EVENT_QUEUE_ID`), and an acknowledgement made in it only means
//! events the client already has come again, with the same ids, which it
//! skips.
//!
//! **Retention.** Each journaled queue needs the log's records from
//! `need_seq` on (`QueueRecord::need_seq`); after every sync the lowest
//! such seq is published to the snapshot schedule (`Retention`), which
//! keeps the previous snapshot and the log after it while a queue needs
//! them.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::queue::{need_seq, QueueRecord, View};
use super::queue::{QueueOptions, Queues};
use crate::state::{RealmId, UserId};

/// The journal's name inside the data dir.
pub const JOURNAL_FILE: &str = "event-queues.log";

/// The first bytes of a journal file.
const MAGIC: &[u8; 8] = b"natterqj";

/// The smallest file worth compacting.
const COMPACT_MIN: u64 = 1 << 20;

/// Frames longer than this are damage, not entries (a registration is
/// well under a kilobyte; a clean shutdown's pending events for one queue
/// are bounded by `--max-queue-events`).
const MAX_FRAME: u32 = 1 << 30;

/// One journal entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    /// A queue was registered (or is live, in a compacted file).
    Registered {
        /// The queue's id.
        id: String,
        /// Its owner.
        user: UserId,
        /// The owner's realm.
        realm: RealmId,
        /// What the client registered for (the narrow as sent).
        options: QueueOptions,
        /// Events of mutations up to this seq are not the queue's.
        floor_seq: u64,
    },
    /// The queue's client acknowledged every event up to this id.
    Acked {
        /// The queue's id.
        id: String,
        /// The acknowledged id.
        through: i64,
    },
    /// Events the queue held that the log may no longer derive: the
    /// unacknowledged events of every queue at a clean shutdown (the
    /// snapshot written then may let the log they came from go), kept by
    /// compactions while the queue still holds them.
    Pending {
        /// The queue's id.
        id: String,
        /// The events (each with its `id`), ascending.
        events: Vec<Value>,
        /// Every event of mutations up to this seq the queue should hold
        /// is among them: the log is needed only after it.
        through_seq: u64,
    },
    /// The queue is gone (deleted, expired, overflowed, its user
    /// deactivated).
    Gone {
        /// The queue's id.
        id: String,
    },
}

/// The lowest seq of the mutation log that some journaled queue still
/// needs, shared with the snapshot schedule; `u64::MAX` when none does.
#[derive(Clone, Debug)]
pub struct Retention(Arc<AtomicU64>);

impl Default for Retention {
    fn default() -> Self {
        Retention(Arc::new(AtomicU64::new(u64::MAX)))
    }
}

impl Retention {
    /// The lowest seq needed, if any queue needs one.
    pub fn needed_from(&self) -> Option<u64> {
        let seq = self.0.load(Ordering::Acquire);
        (seq != u64::MAX).then_some(seq)
    }

    /// Publishes the lowest seq needed (`None`: nothing).
    pub fn set(&self, seq: Option<u64>) {
        self.0.store(seq.unwrap_or(u64::MAX), Ordering::Release);
    }
}

/// What the journal last made durable about one queue.
#[derive(Clone, Copy)]
struct Known {
    floor_seq: u64,
    acked: i64,
    pending_through: u64,
}

impl Known {
    fn need_seq(&self) -> u64 {
        need_seq(self.floor_seq, self.acked, self.pending_through)
    }
}

/// The open journal; owned by whoever writes it (the queue ticker).
pub struct Journal {
    fs: Arc<dyn wal::Fs>,
    path: PathBuf,
    file: File,
    /// Bytes written (the next frame goes here).
    len: u64,
    /// The size right after the last compaction.
    compacted_len: u64,
    /// What the durable file says of each live queue.
    known: HashMap<String, Known>,
    /// A write or flush failed: what the file holds is unknown, so the
    /// next sync rewrites it whole.
    broken: bool,
    retention: Retention,
}

/// Reads the journal at `path`: the queues it describes as live, in id
/// order, and the bytes of a torn tail it ignored. A missing file is no
/// queues.
pub fn read(path: &Path) -> std::io::Result<(Vec<QueueRecord>, u64)> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let (entries, torn) = decode(&bytes);
    let mut live: HashMap<String, QueueRecord> = HashMap::new();
    for entry in entries {
        match entry {
            Entry::Registered { id, user, realm, options, floor_seq } => {
                let record = QueueRecord {
                    id: id.clone(),
                    user,
                    realm,
                    options,
                    floor_seq,
                    acked: -1,
                    pending: Vec::new(),
                    pending_through: 0,
                };
                live.insert(id, record);
            }
            Entry::Acked { id, through } => {
                if let Some(q) = live.get_mut(&id) {
                    q.acked = q.acked.max(through);
                }
            }
            Entry::Pending { id, events, through_seq } => {
                if let Some(q) = live.get_mut(&id) {
                    q.pending = events;
                    q.pending_through = through_seq;
                }
            }
            Entry::Gone { id } => {
                live.remove(&id);
            }
        }
    }
    let mut queues: Vec<QueueRecord> = live.into_values().collect();
    queues.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((queues, torn))
}

/// The whole entries in `bytes`, and how many bytes after them were cut.
fn decode(bytes: &[u8]) -> (Vec<Entry>, u64) {
    let mut entries = Vec::new();
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return (entries, bytes.len() as u64);
    }
    let mut at = MAGIC.len();
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if len > MAX_FRAME {
            break;
        }
        let Some(payload) = bytes.get(at + 8..at + 8 + len as usize) else { break };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Ok(entry) = serde_json::from_slice::<Entry>(payload) else { break };
        entries.push(entry);
        at += 8 + len as usize;
    }
    (entries, (bytes.len() - at) as u64)
}

/// Appends one frame of `entry` to `out`.
/// A queue's registration, and how far its client has acknowledged.
fn frame_registration(q: &View<'_>, out: &mut Vec<u8>) {
    let entry = Entry::Registered {
        id: q.id.to_owned(),
        user: q.user,
        realm: q.realm,
        options: q.options.clone(),
        floor_seq: q.floor_seq,
    };
    frame(&entry, out);
    if q.acked >= 0 {
        frame(&Entry::Acked { id: q.id.to_owned(), through: q.acked }, out);
    }
}

fn frame(entry: &Entry, out: &mut Vec<u8>) {
    let payload = serde_json::to_vec(entry).expect("journal entries serialize");
    let len = u32::try_from(payload.len()).expect("an entry under 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
}

impl Journal {
    /// Writes a fresh journal at `dir/event-queues.log` from the live
    /// `queues` (replacing any file there; call once recovery has restored
    /// the queues it described) and publishes their retention.
    pub fn create(
        fs: Arc<dyn wal::Fs>,
        dir: &Path,
        queues: &Queues,
        retention: Retention,
    ) -> std::io::Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let (file, len, known) = Self::rewrite(&*fs, &path, queues, false)?;
        let journal =
            Journal { fs, path, file, len, compacted_len: len, known, broken: false, retention };
        journal.publish();
        Ok(journal)
    }

    /// Writes the journal of `queues` under a temporary name, flushes it
    /// and renames it into place. With `all_events`, every queue's
    /// unacknowledged events go in too (a clean shutdown).
    fn rewrite(
        fs: &dyn wal::Fs,
        path: &Path,
        queues: &Queues,
        all_events: bool,
    ) -> std::io::Result<(File, u64, HashMap<String, Known>)> {
        let mut bytes = MAGIC.to_vec();
        let mut known = HashMap::new();
        queues.journal_view(all_events, |q| {
            frame_registration(&q, &mut bytes);
            let mut pending_through = 0;
            if let Some((events, through_seq)) = q.pending {
                pending_through = through_seq;
                frame(&Entry::Pending { id: q.id.to_owned(), events, through_seq }, &mut bytes);
            }
            let seen = Known { floor_seq: q.floor_seq, acked: q.acked, pending_through };
            known.insert(q.id.to_owned(), seen);
        });
        let dir = path.parent().expect("the journal is in a directory");
        let tmp = dir.join(format!("{JOURNAL_FILE}.tmp"));
        let file = fs.create(&tmp)?;
        let written = fs
            .write_at(&file, &tmp, &bytes, 0)
            .and_then(|()| fs.sync_data(&file, &tmp))
            .and_then(|()| fs.rename(&tmp, path))
            .and_then(|()| fs.sync_dir(dir));
        if let Err(e) = written {
            let _ = fs.remove_file(&tmp);
            return Err(e);
        }
        drop(file);
        let file = fs.open_write(path)?;
        Ok((file, bytes.len() as u64, known))
    }

    /// Brings the file up to date with the live queues: one write and one
    /// `fdatasync` for every change since the last sync (none if nothing
    /// changed), or a compaction when the file has grown (or a write
    /// failed before). Then publishes the retention the durable file
    /// implies.
    pub fn sync(&mut self, queues: &Queues) -> std::io::Result<()> {
        if self.broken || (self.len >= COMPACT_MIN && self.len >= 4 * self.compacted_len) {
            return self.compact(queues, false);
        }
        let mut bytes = Vec::new();
        let mut seen: HashMap<String, Known> = HashMap::with_capacity(self.known.len());
        queues.journal_view(false, |q| {
            let old = self.known.get(q.id).copied();
            let mut now = Known { floor_seq: q.floor_seq, acked: q.acked, pending_through: 0 };
            match old {
                None => {
                    frame_registration(&q, &mut bytes);
                }
                Some(old) => {
                    now.pending_through = old.pending_through;
                    if q.acked > old.acked {
                        frame(&Entry::Acked { id: q.id.to_owned(), through: q.acked }, &mut bytes);
                    } else {
                        now.acked = old.acked;
                    }
                }
            }
            seen.insert(q.id.to_owned(), now);
        });
        for id in self.known.keys().filter(|id| !seen.contains_key(*id)) {
            frame(&Entry::Gone { id: id.clone() }, &mut bytes);
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let written = self
            .fs
            .write_at(&self.file, &self.path, &bytes, self.len)
            .and_then(|()| self.fs.sync_data(&self.file, &self.path));
        if let Err(e) = written {
            self.broken = true;
            return Err(e);
        }
        self.len += bytes.len() as u64;
        self.known = seen;
        self.publish();
        Ok(())
    }

    /// Rewrites the file from the live queues (with every queue's
    /// unacknowledged events if `all_events`: a clean shutdown, after the
    /// last commit).
    pub fn compact(&mut self, queues: &Queues, all_events: bool) -> std::io::Result<()> {
        match Self::rewrite(&*self.fs, &self.path, queues, all_events) {
            Ok((file, len, known)) => {
                self.file = file;
                self.len = len;
                self.compacted_len = len;
                self.known = known;
                self.broken = false;
                self.publish();
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// The file's size now.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len <= MAGIC.len() as u64
    }

    /// Publishes the lowest seq a durably journaled queue needs.
    fn publish(&self) {
        self.retention.set(self.known.values().map(Known::need_seq).min());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueConfig;
    use crate::events::queue::{first_id, Outgoing};
    use serde_json::Map;

    fn queues() -> Queues {
        Queues::new(QueueConfig { max_events: 10_000, max_per_user: 10, ..QueueConfig::default() })
    }

    fn body(kind: &str) -> Outgoing {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(kind));
        Outgoing::shared(Arc::new(m))
    }

    fn open(dir: &Path, qs: &Queues) -> (Journal, Retention) {
        let retention = Retention::default();
        let fs: Arc<dyn wal::Fs> = Arc::new(wal::RealFs);
        (Journal::create(fs, dir, qs, retention.clone()).unwrap(), retention)
    }

    #[test]
    fn registrations_acknowledgements_and_removals_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let (mut journal, retention) = open(dir.path(), &qs);
        assert!(journal.is_empty());
        assert_eq!(retention.needed_from(), None);
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 5).unwrap();
        let b = qs.create(UserId(2), RealmId(1), QueueOptions::default(), 7).unwrap();
        journal.sync(&qs).unwrap();
        assert_eq!(retention.needed_from(), Some(6));
        let len = journal.len();
        journal.sync(&qs).unwrap();
        assert_eq!(journal.len(), len, "nothing changed, nothing written");
        qs.set_published(9);
        qs.deliver(Some(9), &qs.of_users([UserId(1)]), |_| Some(body("m")));
        qs.poll(&a, UserId(1), Some(first_id(9)), true).unwrap();
        qs.delete(&b, UserId(2)).unwrap();
        journal.sync(&qs).unwrap();
        assert_eq!(retention.needed_from(), Some(9), "the head's seq, all acknowledged");
        let (found, torn) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(torn, 0);
        assert_eq!(found.len(), 1);
        // Everything up to the published head reached the client.
        assert_eq!((found[0].id.as_str(), found[0].floor_seq), (&*a, 5));
        assert_eq!(found[0].acked, first_id(10) - 1);
        assert_eq!(found[0].user, UserId(1));
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let (mut journal, _) = open(dir.path(), &qs);
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 1).unwrap();
        journal.sync(&qs).unwrap();
        let whole = journal.len();
        qs.poll(&a, UserId(1), Some(5000), true).unwrap();
        qs.create(UserId(2), RealmId(1), QueueOptions::default(), 3).unwrap();
        journal.sync(&qs).unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let bytes = std::fs::read(&path).unwrap();
        let (full, _) = read(&path).unwrap();
        assert_eq!(full.len(), 2);
        for cut in whole as usize..bytes.len() {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let (found, torn) = read(&path).unwrap();
            // The first sync's entries always stand; later ones only whole.
            assert!(found.iter().any(|q| q.id == a), "cut at {cut}");
            assert!(found.len() <= 2 && torn < (bytes.len() - whole as usize) as u64);
            if let Some(q) = found.iter().find(|q| q.id == a).filter(|q| q.acked == 5000) {
                assert_eq!(q.floor_seq, 1);
            }
        }
        // A flipped byte in the last frame cuts it too.
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 0x40;
        std::fs::write(&path, &flipped).unwrap();
        let (whole, _) = decode(&bytes);
        let (cut, torn) = decode(&flipped);
        assert!(torn > 0, "the damaged frame is cut");
        assert_eq!(cut[..], whole[..whole.len() - 1]);
    }

    #[test]
    fn a_growing_journal_is_compacted_to_the_live_queues() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let (mut journal, _) = open(dir.path(), &qs);
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 1).unwrap();
        let mut grew = 0;
        for i in 0..40_000 {
            qs.poll(&a, UserId(1), Some(i), true).unwrap();
            let before = journal.len();
            journal.sync(&qs).unwrap();
            if journal.len() < before {
                grew += 1;
                break;
            }
        }
        assert_eq!(grew, 1, "compacted once the file passed its bound");
        assert!(journal.len() < 1024, "{} bytes", journal.len());
        let (found, torn) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(torn, 0);
        assert_eq!(found.len(), 1);
        assert!(found[0].acked > 10_000);
        assert!(!dir.path().join(format!("{JOURNAL_FILE}.tmp")).exists());
    }

    #[test]
    fn a_clean_shutdown_keeps_the_unacknowledged_events_and_needs_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let (mut journal, retention) = open(dir.path(), &qs);
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 2).unwrap();
        qs.set_published(3);
        qs.deliver(Some(3), &qs.of_users([UserId(1)]), |_| Some(body("x")));
        qs.deliver(Some(3), &qs.of_users([UserId(1)]), |_| Some(body("y")));
        qs.poll(&a, UserId(1), Some(first_id(3)), true).unwrap();
        journal.compact(&qs, true).unwrap();
        assert_eq!(retention.needed_from(), Some(4));
        let (found, _) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(found[0].pending, vec![serde_json::json!({"type": "y", "id": first_id(3) + 1})]);
        assert_eq!((found[0].pending_through, found[0].need_seq()), (3, 4));
    }

    fn restored(dir: &Path) -> Queues {
        let again = queues();
        let (found, _) = read(&dir.join(JOURNAL_FILE)).unwrap();
        for record in found {
            assert!(again.restore(record, &|_, _| Some(Default::default())));
        }
        again
    }

    #[test]
    fn a_clean_restart_gives_back_exactly_the_unacknowledged_events() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let (mut journal, _) = open(dir.path(), &qs);
        let id = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 0).unwrap();
        let targets = qs.of_users([UserId(1)]);
        qs.set_published(1);
        qs.deliver(Some(1), &targets, |_| Some(body("a")));
        qs.deliver(Some(1), &targets, |_| Some(body("b")));
        qs.poll(&id, UserId(1), Some(first_id(1)), true).unwrap();
        journal.compact(&qs, true).unwrap();
        let again = restored(dir.path());
        again.set_published(1);
        again.drop_acknowledged();
        let got = again.poll(&id, UserId(1), Some(first_id(1)), true).unwrap();
        assert_eq!(got, vec![serde_json::json!({"type": "b", "id": first_id(1) + 1})]);
        again.set_published(2);
        again.deliver(Some(2), &again.of_users([UserId(1)]), |_| Some(body("c")));
        let got = again.poll(&id, UserId(1), Some(first_id(1) + 1), true).unwrap();
        assert_eq!(got, vec![serde_json::json!({"type": "c", "id": first_id(2)})]);
        // A compaction while the queue still holds journal-kept events
        // keeps them; once acknowledged they go.
        let (mut journal, retention) = open(dir.path(), &again);
        assert_eq!(retention.needed_from(), Some(2));
        journal.compact(&again, false).unwrap();
        let (found, _) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert!(found[0].pending.is_empty(), "event b was acknowledged");
    }

    #[test]
    fn a_crash_redelivers_the_log_tail_with_the_original_ids_after_the_acknowledged_one() {
        let dir = tempfile::tempdir().unwrap();
        let history: [(u64, &[&str]); 3] = [(4, &["a", "b", "c"]), (5, &["d"]), (7, &["e", "f"])];
        let live = queues();
        let (mut journal, retention) = open(dir.path(), &live);
        let id = live.create(UserId(1), RealmId(1), QueueOptions::default(), 3).unwrap();
        for (seq, kinds) in history {
            live.set_published(seq);
            for kind in kinds {
                live.deliver(Some(seq), &live.of_users([UserId(1)]), |_| Some(body(kind)));
            }
        }
        let all = live.poll(&id, UserId(1), None, true).unwrap();
        // The client acknowledged "b"; the journal has it; then a crash.
        live.poll(&id, UserId(1), Some(first_id(4) + 1), true).unwrap();
        journal.sync(&live).unwrap();
        assert_eq!(retention.needed_from(), Some(4));
        let again = restored(dir.path());
        // Recovery delivers the log from seq 4 on, as the hub did.
        for (seq, kinds) in history {
            again.set_published(seq);
            for kind in kinds {
                again.deliver(Some(seq), &again.of_users([UserId(1)]), |_| Some(body(kind)));
            }
        }
        again.drop_acknowledged();
        let got = again.poll(&id, UserId(1), None, true).unwrap();
        assert_eq!(got, all[2..].to_vec(), "c, d, e, f with their ids");
        // An older acknowledgement only brings back what the client has.
        let got = again.poll(&id, UserId(1), Some(first_id(4)), true).unwrap();
        assert_eq!(got[0]["type"], "c");
    }

    #[test]
    fn a_failed_flush_rewrites_the_file_at_the_next_sync() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let sim = Arc::new(wal::sim::SimFs::new());
        let retention = Retention::default();
        let mut journal =
            Journal::create(sim.clone() as _, dir.path(), &qs, retention.clone()).unwrap();
        qs.create(UserId(1), RealmId(1), QueueOptions::default(), 4).unwrap();
        sim.inject(wal::sim::Fault {
            op: wal::sim::Op::Sync,
            path_contains: JOURNAL_FILE.into(),
            kind: wal::sim::FaultKind::Eio,
            times: 1,
        });
        assert!(journal.sync(&qs).is_err());
        assert_eq!(retention.needed_from(), None, "nothing durable, nothing retained");
        sim.clear_faults();
        journal.sync(&qs).unwrap();
        assert_eq!(retention.needed_from(), Some(5));
        let (found, torn) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!((found.len(), torn), (1, 0));
    }

    #[test]
    fn a_power_cut_keeps_what_the_last_sync_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let qs = queues();
        let sim = Arc::new(wal::sim::SimFs::new());
        let mut journal =
            Journal::create(sim.clone() as _, dir.path(), &qs, Retention::default()).unwrap();
        let a = qs.create(UserId(1), RealmId(1), QueueOptions::default(), 4).unwrap();
        journal.sync(&qs).unwrap();
        sim.cut_power_now();
        qs.poll(&a, UserId(1), Some(9000), true).unwrap();
        qs.create(UserId(2), RealmId(1), QueueOptions::default(), 6).unwrap();
        journal.sync(&qs).unwrap();
        sim.restore_durable().unwrap();
        let (found, _) = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].id.as_str(), found[0].acked), (&*a, first_id(1) - 1));
    }
}
