//! Durability glue between `State` and the `wal` crate.
//!
//! Data-dir layout:
//!
//! ```text
//! <data-dir>/LOCK                              held (flock) while a process uses the dir
//! <data-dir>/wal/<first seq, 20 digits>.wal   log segments (see the wal crate docs)
//! <data-dir>/snapshots/snapshot-<seq>.bin     newest durable snapshot
//! ```
//!
//! `open` = newest valid snapshot + replay of every logged mutation after
//! it through the same `apply` used at runtime (`apply::replay::Replay`:
//! runs of sends in bulk, with the same steps; no events).

pub mod backup;
pub mod progress;
pub mod schedule;
pub mod snapshot;
pub mod verify;

use std::fmt;
use std::path::{Path, PathBuf};

use wal::{Options, Wal};

use crate::mutation::Mutation;
use crate::state::State;

/// Version of the on-disk encoding of `Mutation` and `StateImage`.
pub const FORMAT_VERSION: u32 = 17;

/// Why the data dir could not be opened.
#[derive(Debug)]
pub enum PersistError {
    /// The log refused to open (corruption in the middle, bad header…).
    Wal(wal::Error),
    /// A snapshot file failed verification.
    BadSnapshot {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
    /// A logged record does not decode as a `Mutation`.
    BadRecord {
        /// Its seq.
        seq: u64,
        /// The decoder's complaint.
        why: String,
    },
    /// The log ends before the snapshot: records are missing.
    LogBehindSnapshot {
        /// Snapshot seq.
        snapshot: u64,
        /// Last seq in the log.
        log: u64,
    },
    /// Another process holds the data dir.
    Locked(PathBuf),
    /// File system error outside the log.
    Io(std::io::Error),
}

impl fmt::Display for PersistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistError::Wal(e) => write!(f, "write-ahead log: {e}"),
            PersistError::BadSnapshot { path, why } => {
                write!(f, "snapshot {}: {why}", path.display())
            }
            PersistError::BadRecord { seq, why } => write!(f, "log record {seq}: {why}"),
            PersistError::LogBehindSnapshot { snapshot, log } => write!(
                f,
                "the log ends at seq {log} but the snapshot covers seq {snapshot}: log records are missing"
            ),
            PersistError::Locked(path) => write!(
                f,
                "{} is locked: another natter process is using this data dir",
                path.display()
            ),
            PersistError::Io(e) => write!(f, "i/o: {e}"),
        }
    }
}

impl std::error::Error for PersistError {}

impl From<wal::Error> for PersistError {
    fn from(e: wal::Error) -> Self {
        PersistError::Wal(e)
    }
}

impl From<std::io::Error> for PersistError {
    fn from(e: std::io::Error) -> Self {
        PersistError::Io(e)
    }
}

/// What `open` found and did.
#[derive(Debug, Default)]
pub struct OpenReport {
    /// The exclusive lock on the data dir; released when dropped, so keep
    /// the report (or this field) for as long as the state is in use.
    pub lock: Option<std::fs::File>,
    /// Seq of the snapshot loaded, if any.
    pub snapshot_seq: Option<u64>,
    /// Log records replayed after it.
    pub replayed: u64,
    /// The seq of the state recovery started from (the snapshot loaded,
    /// or 0).
    pub base_seq: u64,
    /// A torn log tail that was cut off.
    pub torn_tail: Option<wal::TornTail>,
    /// With `open_resuming`: the first seq left to replay (through
    /// `apply`, with its events), if the log goes on past the state
    /// returned.
    pub events_from: Option<u64>,
}

/// Paths inside a data dir.
pub fn wal_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("wal")
}

/// Paths inside a data dir.
pub fn snapshot_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

/// Encodes a mutation as a log record.
pub fn encode_mutation(m: &Mutation) -> Vec<u8> {
    // Room for a short message's record at once: bincode writes a field
    // (often a byte) at a time, and growing from empty reallocated and
    // copied the buffer five or six times per send.
    let mut out = Vec::with_capacity(RECORD_CAPACITY);
    bincode::serde::encode_into_std_write(m, &mut out, bincode::config::standard())
        .expect("mutations always encode");
    out
}

/// The first allocation for an encoded mutation: a send of a short message
/// to a channel encodes to about 100 bytes.
const RECORD_CAPACITY: usize = 256;

/// Decodes a log record.
pub fn decode_mutation(seq: u64, bytes: &[u8]) -> Result<Mutation, PersistError> {
    decode_bounded(bytes)
        .map(|(m, _)| m)
        .map_err(|e| PersistError::BadRecord { seq, why: e.to_string() })
}

/// Most bytes bincode claims (counts against its limit) per byte it
/// decodes: a string claims its length, an integer its width (at most 16
/// bytes, for a varint of one byte or more), a variant tag 4.
const CLAIM_PER_BYTE: usize = 16;

/// Decodes bincode (the standard configuration, as everything on disk is
/// written) from `bytes`, with the memory the decoder may claim bounded
/// by what bytes of that length can hold. Without a limit, bincode
/// allocates a string's or a byte list's length as the bytes declare it
/// before reading them, so a few damaged bytes could ask for terabytes
/// (an abort, not an error). The limit is the first of a few sizes at or
/// above `CLAIM_PER_BYTE` × the length — never less than anything valid
/// bytes decode to — so a length larger than the input is an error.
pub fn decode_bounded<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    use bincode::config::standard;
    let claim = bytes.len().saturating_mul(CLAIM_PER_BYTE);
    macro_rules! within {
        ($($limit:expr),*) => {$(
            if claim <= $limit {
                return bincode::serde::decode_from_slice(bytes, standard().with_limit::<{ $limit }>());
            }
        )*};
    }
    within!(1 << 20, 1 << 26, 1 << 32);
    bincode::serde::decode_from_slice(bytes, standard().with_limit::<{ 1 << 40 }>())
}

/// Recovers the state: newest valid snapshot, then the log tail. Quiet;
/// `open_reporting` prints progress.
pub fn open(data_dir: &Path, options: Options) -> Result<(State, Wal, OpenReport), PersistError> {
    open_reporting(data_dir, options, &mut std::io::sink())
}

/// `open`, writing restart progress lines to `progress` (see `progress`):
/// a summary of the snapshot load, a replay line at most once a second
/// (records/s, ETA) and a replay summary.
pub fn open_reporting(
    data_dir: &Path,
    options: Options,
    progress: &mut dyn std::io::Write,
) -> Result<(State, Wal, OpenReport), PersistError> {
    open_resuming(data_dir, options, progress, None)
}

/// `open_reporting` for a recovery whose event queues need the events of
/// the log from seq `need` on (the lowest seq a journaled queue needs).
/// If `need` is at or below the newest snapshot's seq, recovery starts
/// from the snapshot before it (kept for this, `schedule::write_snapshot`;
/// or from the empty state when the log starts at seq 1), if it is there
/// with the log after it. The log is replayed (without events) up to
/// `need`; the state returned is there, and `OpenReport::events_from` is
/// the seq the caller replays from, delivering the events. The queues
/// that need an earlier seq than `snapshot_seq + 1` cannot be served.
pub fn open_resuming(
    data_dir: &Path,
    options: Options,
    progress: &mut dyn std::io::Write,
    need: Option<u64>,
) -> Result<(State, Wal, OpenReport), PersistError> {
    std::fs::create_dir_all(data_dir)?;
    let mut report = OpenReport::default();
    // Two processes appending to one log would interleave records; an
    // advisory lock (released by the OS when the process dies) prevents it.
    let lock_path = data_dir.join("LOCK");
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
    match lock.try_lock() {
        Ok(()) => report.lock = Some(lock),
        Err(std::fs::TryLockError::WouldBlock) => return Err(PersistError::Locked(lock_path)),
        Err(std::fs::TryLockError::Error(e)) => return Err(PersistError::Io(e)),
    }
    let (wal, recovery) = Wal::open(wal_dir(data_dir), options)?;
    report.torn_tail = recovery.truncated;
    let snapshots = snapshot_dir(data_dir);
    let mut candidates = snapshot::list(&snapshots)?;
    // The log holds every record after `base` (or holds none at all).
    let covered = |base: u64| wal.first_seq() == 0 || wal.first_seq() <= base + 1;
    let newest = candidates.first().map_or(0, |(seq, _)| *seq);
    let mut from_empty = false;
    if let Some(need) = need.filter(|&need| need <= newest) {
        match candidates.iter().position(|(seq, _)| *seq < need) {
            Some(older) if covered(candidates[older].0) => {
                // Start from the kept snapshot; the newer ones stay as the
                // fallback if it does not decode.
                let kept = candidates.remove(older);
                candidates.insert(0, kept);
            }
            None if covered(0) => from_empty = true,
            _ => {}
        }
    }
    let mut state = State::new();
    for (seq, path) in candidates.into_iter().filter(|_| !from_empty) {
        let size = std::fs::metadata(&path)?.len();
        let started = std::time::Instant::now();
        // Read a block at a time by the decoding threads: the file is
        // never in memory whole (a freed buffer of its size would stay in
        // the allocator's resident memory).
        let threads = snapshot::threads();
        match snapshot::read(&path, threads) {
            Ok(image) => {
                let decoded = started.elapsed();
                state = State::from_image_on(image, threads);
                let rebuilt = started.elapsed() - decoded;
                progress::snapshot_loaded(progress, seq, size, threads, decoded, rebuilt);
                report.snapshot_seq = Some(seq);
                break;
            }
            Err(e) => tracing::warn!("skipping {e}"),
        }
    }
    let from = state.applied_seq();
    report.base_seq = from;
    if wal.last_seq() < from {
        return Err(PersistError::LogBehindSnapshot { snapshot: from, log: wal.last_seq() });
    }
    // Without events up to `need`: the caller delivers the rest's.
    report.events_from = need.map(|need| need.max(from + 1)).filter(|&s| s <= wal.last_seq());
    let end = report.events_from.map_or(wal.last_seq(), |start| start - 1);
    let mut replay = progress::Replay::new(progress, end - from);
    let mut applier = crate::apply::replay::Replay::new(&state);
    if end > from {
        replay_log_through(&wal, from + 1, end, |seq, mutation| {
            applier.apply(seq, mutation);
            replay.record();
        })?;
    }
    applier.finish();
    report.replayed = replay.finish();
    state.rebuild_holder_hints();
    Ok((state, wal, report))
}

/// `replay_log` of the records from `from` through `through`.
fn replay_log_through(
    wal: &Wal,
    from: u64,
    through: u64,
    mut each: impl FnMut(u64, Mutation),
) -> Result<(), PersistError> {
    if through >= wal.last_seq() {
        return replay_log(wal, from, each);
    }
    // The reader stops at the end of the log, not at `through`: the
    // records after it are decoded and dropped (at most the log a queue
    // needs, one snapshot interval).
    replay_log(wal, from, |seq, mutation| {
        if seq <= through {
            each(seq, mutation);
        }
    })
}

/// Mutations per batch handed from the log reader to the applier.
const REPLAY_BATCH: usize = 512;

/// Batches the reader may be ahead of the applier: enough for the reader
/// to go on while the applier writes a run of sends (`apply::replay`'s
/// `RUN`, 16,384), which takes it a while — with 4 the reader sat blocked
/// for 15% of a 1M-record replay and the applier then waited for it
/// (≈ 0.96M records/s against 0.92M). About 6 MB of decoded sends.
const REPLAY_AHEAD: usize = 64;

/// Threads decoding records during replay: with one, reading and decoding
/// (≈ 1 µs a record) was slower than applying, and the applier waited for
/// it a fifth of the time.
const DECODERS: usize = 2;

/// Calls `each` with every logged mutation from seq `from` on, in order.
/// Reading and checking the records runs on a thread of its own and
/// decoding them on `DECODERS` more — batches are dealt to the decoders
/// in turn and taken back in the same turn, so the order is kept — up to
/// `REPLAY_AHEAD` batches ahead of `each` (the single `apply` thread): on
/// restart every core works, and `each` never waits for the disk or a
/// decoder while decoded records are ready. The first bad record stops
/// the reading; `each` sees every record before it, then the error is
/// returned.
pub fn replay_log(
    wal: &Wal,
    from: u64,
    mut each: impl FnMut(u64, Mutation),
) -> Result<(), PersistError> {
    use std::sync::mpsc::sync_channel;
    /// A batch, and why it ended early if it did (then it holds the
    /// records before the bad one, and nothing follows it).
    type Batch<T> = (Vec<T>, Option<PersistError>);
    let records = wal.replay_from(from)?;
    let ahead = (REPLAY_AHEAD / DECODERS).max(1);
    std::thread::scope(|scope| {
        let mut raw_senders = Vec::new();
        let mut decoded = Vec::new();
        for _ in 0..DECODERS {
            let (raw_send, raw_receive) = sync_channel::<Batch<(u64, Vec<u8>)>>(ahead);
            let (send, receive) = sync_channel::<Batch<(u64, Mutation)>>(ahead);
            raw_senders.push(raw_send);
            decoded.push(receive);
            scope.spawn(move || {
                for (raw, mut failed) in raw_receive {
                    let mut batch = Vec::with_capacity(raw.len());
                    for (seq, bytes) in raw {
                        match decode_mutation(seq, &bytes) {
                            Ok(mutation) => batch.push((seq, mutation)),
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    let stop = failed.is_some();
                    if send.send((batch, failed)).is_err() || stop {
                        return;
                    }
                }
            });
        }
        scope.spawn(move || {
            // Batch `k` goes to decoder `k % DECODERS`.
            let mut k = 0;
            let mut batch = Vec::with_capacity(REPLAY_BATCH);
            for record in records {
                let to = &raw_senders[k % DECODERS];
                match record {
                    Ok(record) => batch.push(record),
                    Err(e) => {
                        let _ = to.send((batch, Some(e.into())));
                        return;
                    }
                }
                if batch.len() == REPLAY_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(REPLAY_BATCH));
                    if to.send((full, None)).is_err() {
                        return;
                    }
                    k += 1;
                }
            }
            if !batch.is_empty() {
                let _ = raw_senders[k % DECODERS].send((batch, None));
            }
        });
        // A closed channel where the next batch should come from is the
        // end of the log. Returning drops the receivers, which stops the
        // decoders and the reader if they are still going.
        for k in 0.. {
            let Ok((batch, failed)) = decoded[k % DECODERS].recv() else { break };
            for (seq, mutation) in batch {
                each(seq, mutation);
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply;
    use crate::mutation::build::{self, NewChannel, NewUser};
    use crate::mutation::NewMessage;
    use crate::state::{Destination, IdKind, Message, MessageId, MessageParts, Role};

    /// Message number `i`, as first sent (no reactions, no edits).
    fn test_message(
        state: &State,
        realm: crate::state::RealmId,
        sender: crate::state::UserId,
        recipient: crate::state::RecipientId,
        destination: Destination,
        i: u64,
    ) -> Message {
        Message::from(MessageParts {
            id: MessageId(state.ids.peek(IdKind::Message)),
            realm,
            sender,
            recipient,
            destination,
            content: format!("m{i}"),
            rendered_content: format!("<p>m{i}</p>"),
            timestamp: 1_700_000_100 + i as i64,
            client: "test".into(),
            is_me_message: false,
        })
    }

    /// A realm, two users, a channel and `n` messages, as mutations that
    /// have been applied to `state` in order.
    fn history(state: &State, n: u64) -> Vec<Mutation> {
        let mut log = Vec::new();
        let mut step = |m: Mutation| {
            apply(state, state.applied_seq() + 1, &m);
            log.push(m);
        };
        step(build::realm(state, "", "Test", 1_700_000_000).unwrap());
        let realm = state.realm_by_subdomain("").unwrap();
        for (i, email) in ["a@x.test", "b@x.test"].iter().enumerate() {
            let new = NewUser { email, full_name: email, role: Role::Member, bot: None };
            step(build::user(state, realm.id, &new, format!("{i:0>32}"), 1_700_000_001).unwrap());
        }
        let users = [crate::state::UserId(1), crate::state::UserId(2)];
        let new = NewChannel {
            name: "general",
            description: "d",
            invite_only: false,
            creator: None,
            subscribers: &users,
        };
        step(build::channel(state, &realm, &new, 1_700_000_002).unwrap());
        let channel = state.channel_by_name(realm.id, "general").unwrap();
        for i in 0..n {
            let destination =
                Destination::Channel { channel: channel.id, topic: format!("t{}", i % 3).into() };
            let sender = users[(i % 2) as usize];
            let message = test_message(state, realm.id, sender, channel.recipient, destination, i);
            step(Mutation::SendMessage(NewMessage {
                message: std::sync::Arc::new(message),
                read_by_sender: i % 2 == 0,
                mentioned: vec![users[0]],
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            }));
        }
        log
    }

    #[test]
    fn snapshot_round_trip_is_byte_identical() {
        let state = State::new();
        history(&state, 20);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let decoded = snapshot::decode(&bytes, Path::new("mem")).unwrap();
        assert_eq!(decoded, image);
        let rebuilt = State::from_image(decoded);
        assert_eq!(snapshot::encode(&rebuilt.image()), bytes);
        // Indexes are rebuilt too.
        let realm = rebuilt.realm_by_subdomain("").unwrap();
        assert_eq!(rebuilt.user_by_email(realm.id, "A@X.TEST").unwrap().id.0, 1);
        let channel = image.channels.sorted()[0].recipient;
        assert_eq!(rebuilt.by_recipient.read(&channel, crate::state::IdSet::len), Some(20));
    }

    /// Appends `log` to the write-ahead log of the data dir `data`.
    fn write_log(data: &Path, log: &[Mutation], options: Options) {
        let (wal, _) = Wal::open(wal_dir(data), options).unwrap();
        for m in log {
            wal.append(&encode_mutation(m)).unwrap();
        }
        wal.close().unwrap();
    }

    /// Records spread over several batches per decoder come back once
    /// each and in order, from any seq; a record that does not decode
    /// stops the replay with its seq, after every record before it.
    #[test]
    fn replay_log_keeps_the_order_and_stops_at_a_bad_record() {
        use crate::state::personal::PersonalChange;
        let words = |seq: u64| {
            Mutation::personal(PersonalChange::SetAlertWords {
                user: crate::state::UserId(seq),
                words: vec![format!("w{seq}")],
            })
        };
        let n = (REPLAY_BATCH * DECODERS * 3 + REPLAY_BATCH / 2) as u64;
        let bad = REPLAY_BATCH as u64 * 5 + 7;
        let dir = tempfile::tempdir().unwrap();
        let options = Options { sync: wal::SyncMode::Never, ..Options::default() };
        let (wal, _) = Wal::open(dir.path(), options.clone()).unwrap();
        for seq in 1..=n {
            let payload = if seq == bad { vec![0xff; 9] } else { encode_mutation(&words(seq)) };
            assert_eq!(wal.append(&payload).unwrap(), seq);
        }
        let replayed = |from: u64| {
            let mut seen = Vec::new();
            let result = replay_log(&wal, from, |seq, m| {
                assert_eq!(m, words(seq));
                seen.push(seq);
            });
            (seen, result)
        };
        let (seen, result) = replayed(1);
        assert_eq!(seen, (1..bad).collect::<Vec<_>>());
        assert!(
            matches!(result, Err(PersistError::BadRecord { seq, .. }) if seq == bad),
            "{result:?}"
        );
        let (seen, result) = replayed(bad + 1);
        assert_eq!(seen, (bad + 1..=n).collect::<Vec<_>>());
        assert!(result.is_ok());
        let (seen, result) = replayed(n + 1);
        assert!(seen.is_empty() && result.is_ok());
    }

    #[test]
    fn replay_from_the_log_and_from_snapshot_plus_tail_agree_with_live_state() {
        let live = State::new();
        let log = history(&live, 30);
        let expected = snapshot::encode(&live.image());

        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), &log, Options::default());
        let (state, wal, report) = open(dir.path(), Options::default()).unwrap();
        assert_eq!(report.replayed, log.len() as u64);
        assert_eq!(snapshot::encode(&state.image()), expected);
        // While open, the data dir is locked against a second user.
        assert!(matches!(open(dir.path(), Options::default()), Err(PersistError::Locked(_))));
        drop((wal, report));

        // A snapshot in the middle, then the tail.
        let half = State::new();
        for (i, m) in log.iter().take(20).enumerate() {
            apply(&half, i as u64 + 1, m);
        }
        snapshot::write(&snapshot_dir(dir.path()), &half.image()).unwrap();
        let (state, _wal, report) = open(dir.path(), Options::default()).unwrap();
        assert_eq!(report.snapshot_seq, Some(20));
        assert_eq!(report.replayed, log.len() as u64 - 20);
        assert_eq!(snapshot::encode(&state.image()), expected);
    }

    /// The state after the first `n` records of `log`.
    fn prefix(log: &[Mutation], n: usize) -> State {
        let state = State::new();
        for (i, m) in log.iter().take(n).enumerate() {
            apply(&state, i as u64 + 1, m);
        }
        state
    }

    /// While a journaled event queue needs the log from a seq at or below
    /// a new snapshot's, the previous snapshot and the log after it stay
    /// (and `natter verify` accepts the two); recovery for that queue
    /// starts from the kept snapshot and stops where its events begin.
    #[test]
    fn the_snapshot_a_queue_needs_and_the_log_after_it_are_kept_and_recovery_starts_there() {
        use crate::events::journal::Retention;
        use crate::persist::schedule::{write_snapshot, SnapshotPolicy};
        let live = State::new();
        let log = history(&live, 30);
        let last = log.len();
        assert!(last >= 30);
        let expected = snapshot::encode(&live.image());
        let dir = tempfile::tempdir().unwrap();
        let small = || Options { segment_bytes: 256, ..Options::default() };
        write_log(dir.path(), &log, small());
        let retention = Retention::default();
        let policy = SnapshotPolicy {
            retention: retention.clone(),
            ..SnapshotPolicy::every(snapshot_dir(dir.path()), 0)
        };
        let seqs = |dir: &Path| -> Vec<u64> {
            snapshot::list(&snapshot_dir(dir)).unwrap().into_iter().map(|(seq, _)| seq).collect()
        };
        let (wal, _) = Wal::open(wal_dir(dir.path()), small()).unwrap();
        write_snapshot(&wal, &policy, &prefix(&log, 10).image(), &mut || {}).unwrap();
        assert_eq!(seqs(dir.path()), [10]);
        assert!(wal.first_seq() > 1, "no queue needs it: trimmed");
        // A queue needs the events from seq 15: snapshot 10 and the log
        // after it stay.
        retention.set(Some(15));
        write_snapshot(&wal, &policy, &prefix(&log, 20).image(), &mut || {}).unwrap();
        assert_eq!(seqs(dir.path()), [20, 10]);
        assert!(wal.first_seq() <= 11 && wal.first_seq() > 1);
        wal.close().unwrap();
        let verified = verify::verify(dir.path()).unwrap();
        assert_eq!((verified.snapshots.len(), verified.seq), (2, last as u64));

        let opened = open_resuming(dir.path(), small(), &mut std::io::sink(), Some(15));
        let (state, wal, report) = opened.unwrap();
        assert_eq!((report.snapshot_seq, report.base_seq), (Some(10), 10));
        assert_eq!((report.events_from, state.applied_seq(), report.replayed), (Some(15), 14, 4));
        replay_log(&wal, 15, |seq, m| drop(apply(&state, seq, &m))).unwrap();
        assert_eq!(snapshot::encode(&state.image()), expected);
        drop((state, wal, report));
        // Needed from after the newest snapshot: the newest serves.
        let opened = open_resuming(dir.path(), small(), &mut std::io::sink(), Some(25));
        let (state, wal, report) = opened.unwrap();
        assert_eq!(
            (report.snapshot_seq, report.events_from, state.applied_seq()),
            (Some(20), Some(25), 24)
        );
        drop(state);
        // At most two: the next snapshot keeps 20, not 10.
        retention.set(Some(25));
        write_snapshot(&wal, &policy, &prefix(&log, 30).image(), &mut || {}).unwrap();
        assert_eq!(seqs(dir.path()), [30, 20]);
        assert!(wal.first_seq() <= 21 && wal.first_seq() > 11);
        // Nothing needed: the newest alone, the log trimmed.
        retention.set(None);
        write_snapshot(&wal, &policy, &live.image(), &mut || {}).unwrap();
        assert_eq!(seqs(dir.path()), [last as u64]);
        drop((wal, report));
        // A queue needing what no snapshot kept: recovery starts from the
        // newest, and the caller drops the queue (its need ≤ base_seq).
        let opened = open_resuming(dir.path(), small(), &mut std::io::sink(), Some(15));
        let (state, _wal, report) = opened.unwrap();
        assert_eq!((report.base_seq, report.events_from), (last as u64, None));
        assert_eq!(snapshot::encode(&state.image()), expected);
    }

    #[test]
    fn a_corrupt_snapshot_is_refused() {
        let state = State::new();
        history(&state, 3);
        let mut bytes = snapshot::encode(&state.image());
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let err = snapshot::decode(&bytes, Path::new("s")).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(snapshot::decode(b"short", Path::new("s")).is_err());
    }

    /// Recomputes a snapshot's header checksum after a test changed its
    /// payload: a file whose CRC matches but whose blocks do not.
    fn reseal(bytes: &mut [u8]) {
        let crc = crc32fast::hash(&bytes[32..]);
        bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    }

    /// Where the blocked sections start in a snapshot's bytes: after the
    /// header and the image's own encoding.
    fn sections_at(image: &crate::state::StateImage) -> usize {
        32 + 8 + 4 + head_block(image).len()
    }

    /// The parts that follow the image in its block, in the order formats
    /// added them: organization (10), features (11), bots (12), web
    /// sessions (13), widgets (14), folders (16), delivery tries (17). A
    /// format's block holds a prefix of them.
    fn image_parts(image: &crate::state::StateImage) -> Vec<Vec<u8>> {
        fn encoded<T: serde::Serialize>(value: &T) -> Vec<u8> {
            bincode::serde::encode_to_vec(value, bincode::config::standard()).unwrap()
        }
        vec![
            encoded(&image.organization),
            encoded(&image.features),
            encoded(&image.bots),
            encoded(&image.web_sessions),
            encoded(&image.widgets),
            encoded(&image.folders),
            encoded(&image.bots.failed),
        ]
    }

    /// The image's own block: the image, then every part.
    fn head_block(image: &crate::state::StateImage) -> Vec<u8> {
        let mut head = bincode::serde::encode_to_vec(image, bincode::config::standard()).unwrap();
        image_parts(image).iter().for_each(|part| head.extend(part));
        head
    }

    /// The files block as `image` is written now: the `FilesImage`, then
    /// (since format 11) its extra part.
    fn files_block_len(image: &crate::state::StateImage) -> usize {
        let config = bincode::config::standard();
        8 + 4
            + bincode::serde::encode_to_vec(&image.files, config).unwrap().len()
            + bincode::serde::encode_to_vec(&image.files.extra, config).unwrap().len()
    }

    /// `bytes` (a current snapshot of `image`) from its sections on, with
    /// the files block as formats 9 and 10 wrote it: no extra part.
    fn sections_as_format_10(bytes: &[u8], image: &crate::state::StateImage) -> Vec<u8> {
        let files = bincode::serde::encode_to_vec(&image.files, bincode::config::standard());
        let files = files.unwrap();
        let mut out = bytes[sections_at(image)..bytes.len() - files_block_len(image)].to_vec();
        out.extend((files.len() as u64).to_le_bytes());
        out.extend(crc32fast::hash(&files).to_le_bytes());
        out.extend(&files);
        out
    }

    /// A snapshot of `image` as format `version` wrote it: its image
    /// block holds the image and `parts` after it.
    fn older_snapshot(
        image: &crate::state::StateImage,
        version: u32,
        parts: &[Vec<u8>],
    ) -> Vec<u8> {
        let bytes = snapshot::encode(image);
        older_snapshot_with(image, version, parts, &bytes[sections_at(image)..])
    }

    /// `older_snapshot` with `sections` (the blocks after the image's) as
    /// the older format wrote them.
    fn older_snapshot_with(
        image: &crate::state::StateImage,
        version: u32,
        parts: &[Vec<u8>],
        sections: &[u8],
    ) -> Vec<u8> {
        let bytes = snapshot::encode(image);
        let config = bincode::config::standard();
        let mut head = bincode::serde::encode_to_vec(image, config).unwrap();
        for part in parts {
            head.extend(part);
        }
        let mut old = bytes[..32].to_vec();
        old[8..12].copy_from_slice(&version.to_le_bytes());
        old.extend((head.len() as u64).to_le_bytes());
        old.extend(crc32fast::hash(&head).to_le_bytes());
        old.extend(&head);
        old.extend(sections);
        let len = (old.len() - 32) as u64;
        old[20..28].copy_from_slice(&len.to_le_bytes());
        reseal(&mut old);
        old
    }

    /// Snapshots of format 14 (no folders part after the widgets part)
    /// still load, with no channel folders; the current format keeps them.
    #[test]
    fn a_format_14_snapshot_loads_with_no_channel_folders() {
        use crate::state::folders::{ChannelFolder, FolderChange};
        let state = State::new();
        history(&state, 20);
        let realm = crate::state::RealmId(1);
        state.folders.apply(&FolderChange::Create(ChannelFolder {
            id: 1,
            realm,
            name: "Backend".into(),
            description: String::new(),
            rendered_description: String::new(),
            creator: None,
            date_created: 0,
            is_archived: false,
            order: 1,
        }));
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let decoded = snapshot::decode(&bytes, Path::new("s")).unwrap();
        assert_eq!(decoded.folders, image.folders);
        let old = older_snapshot(&image, 14, &image_parts(&image)[..5]);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(decoded.folders, Default::default());
        assert_eq!(decoded.widgets, image.widgets);
        // A format-14 header over a format-16 payload is refused.
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&14u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());
    }

    /// Snapshots of format 13 (no widgets part after the web sessions
    /// part) still load, with no submessages.
    #[test]
    fn a_format_13_snapshot_loads_with_no_submessages() {
        let state = State::new();
        history(&state, 20);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let old = older_snapshot(&image, 13, &image_parts(&image)[..4]);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(snapshot::encode(&decoded), bytes);
        // A format-13 header over a format-14 payload is refused.
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&13u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());
    }

    /// Snapshots of format 10 (no features part after the organization
    /// part, no avatars or realm file settings after the files' records)
    /// still load, with Zulip's defaults, no reminders and no avatars;
    /// format 11 carries them.
    #[test]
    fn a_format_10_snapshot_loads_with_empty_features_and_no_avatars() {
        let state = State::new();
        history(&state, 20);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let sections = sections_as_format_10(&bytes, &image);
        let old = older_snapshot_with(&image, 10, &image_parts(&image)[..1], &sections);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(snapshot::encode(&decoded), bytes);
        // A format-10 header over a newer payload is refused.
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&10u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());
        // Avatars and realm file settings round-trip.
        let owner = state.users.collect_sorted(|_, _| true)[0].0;
        let avatar = crate::state::files::Avatar {
            key: "1/ab/ABCDEFGHIJKLMNOPQRSTUVWX".into(),
            size: 9,
            medium_key: "1/ab/ABCDEFGHIJKLMNOPQRSTUVWY".into(),
            medium_size: 90,
        };
        state.files.set_avatar(owner, Some(avatar));
        let settings = crate::state::files::RealmFileSettings {
            avatar_changes_disabled: true,
            can_add_custom_emoji_group: None,
        };
        state.files.set_realm_settings(crate::state::RealmId(1), settings);
        let image = state.image();
        let back = snapshot::decode(&snapshot::encode(&image), Path::new("s")).unwrap();
        assert_eq!(back.files, image.files);
        assert!(!back.files.extra.avatars.is_empty() && !back.files.extra.realms.is_empty());
    }

    /// Snapshots of format 11 (no bots part after the features part)
    /// still load, with no services, storage or deliveries; format 12
    /// carries them.
    #[test]
    fn a_format_11_snapshot_loads_with_an_empty_bots_part() {
        let state = State::new();
        history(&state, 20);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let old = older_snapshot(&image, 11, &image_parts(&image)[..2]);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(snapshot::encode(&decoded), bytes);
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&11u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());

        // A bot's service, storage and an unfinished delivery round-trip.
        use crate::state::bots::{BotChange, Delivery, Interface, Service, Trigger};
        let bot = state.users.collect_sorted(|_, _| true)[0].0;
        let service = Service {
            name: "s".into(),
            base_url: "http://example.com".into(),
            interface: Interface::Slack,
            token: "t".into(),
            config: Default::default(),
        };
        state.bots.apply(&BotChange::SetService { bot, service });
        state.bots.apply(&BotChange::PutStorage { bot, entries: vec![("k".into(), "v".into())] });
        let delivery =
            Delivery { message: crate::state::MessageId(1), bot, trigger: Trigger::Mention };
        state.bots.apply(&BotChange::Queue(vec![delivery]));
        let image = state.image();
        let decoded = snapshot::decode(&snapshot::encode(&image), Path::new("s")).unwrap();
        assert_eq!(decoded.bots, image.bots);
        let bots = crate::state::bots::BotState::from_image(decoded.bots);
        assert_eq!(bots.pending(), [(delivery, 0)]);
    }

    /// Snapshots of format 14 (no failed tries after the widgets part)
    /// still load, every unfinished delivery at its first try; format 17
    /// keeps the count of a delivery's failed tries.
    #[test]
    fn a_format_14_snapshot_loads_with_no_failed_tries() {
        use crate::state::bots::{BotChange, Delivery, Trigger};
        let state = State::new();
        history(&state, 20);
        let bot = state.users.collect_sorted(|_, _| true)[0].0;
        let delivery =
            Delivery { message: crate::state::MessageId(1), bot, trigger: Trigger::Mention };
        state.bots.apply(&BotChange::Queue(vec![delivery]));
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let old = older_snapshot(&image, 14, &image_parts(&image)[..5]);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(snapshot::encode(&decoded), bytes);
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&14u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());

        // Two failed tries round-trip; a finished delivery drops its count.
        let retry = BotChange::Retry { message: delivery.message, bot, failed: 2 };
        state.bots.apply(&retry);
        let image = state.image();
        let decoded = snapshot::decode(&snapshot::encode(&image), Path::new("s")).unwrap();
        let bots = crate::state::bots::BotState::from_image(decoded.bots);
        assert_eq!(bots.pending(), [(delivery, 2)]);
        bots.apply(&BotChange::Finish(vec![(delivery.message, bot)]));
        assert!(bots.pending().is_empty() && bots.failed.get(&(delivery.message, bot)).is_none());
        // A retry logged after the delivery finished leaves no count.
        bots.apply(&retry);
        assert!(bots.failed.get(&(delivery.message, bot)).is_none());
    }

    /// Snapshots of format 12 (no web sessions after the bots part) still
    /// load, with no one signed in; current ones keep them.
    #[test]
    fn a_format_12_snapshot_loads_with_no_web_sessions() {
        use crate::state::web_sessions::{SessionChange, WebSession};
        let state = State::new();
        history(&state, 20);
        let owner = state.users.collect_sorted(|_, _| true)[0].0;
        let session = WebSession {
            user: owner,
            realm: state.users.get(&owner).unwrap().realm,
            csrf_token: "csrf".into(),
            api_key: "key".into(),
            password_hash: None,
            created: 7,
        };
        state.web_sessions.apply(&SessionChange::Open { token: "t".into(), session });
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let back = snapshot::decode(&bytes, Path::new("s")).unwrap();
        assert_eq!(back.web_sessions.by_token.sorted().len(), 1);
        let old = older_snapshot(&image, 12, &image_parts(&image)[..3]);
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert!(decoded.web_sessions.by_token.sorted().is_empty());
        assert_eq!(decoded.applied_seq, image.applied_seq);
        // A format-12 header over a current payload is refused.
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&12u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());
    }

    /// Snapshots of format 9 (no organization part after the image) still
    /// load, with no linkifiers or default channel groups.
    #[test]
    fn a_format_9_snapshot_loads_with_an_empty_organization_part() {
        let state = State::new();
        history(&state, 20);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let old = older_snapshot_with(&image, 9, &[], &sections_as_format_10(&bytes, &image));
        let decoded = snapshot::decode(&old, Path::new("s")).unwrap();
        assert_eq!(snapshot::encode(&decoded), bytes);
        // A format-9 header over a format-10 payload is refused.
        let mut mislabelled = bytes.clone();
        mislabelled[8..12].copy_from_slice(&9u32.to_le_bytes());
        assert!(snapshot::decode(&mislabelled, Path::new("s")).is_err());
    }

    #[test]
    fn a_corrupt_message_block_is_refused_and_the_previous_snapshot_used() {
        let live = State::new();
        let log = history(&live, 5_000);
        let expected = snapshot::encode(&live.image());
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), &log, Options::default());
        // A good snapshot at seq 20, and a newer one with one bit flipped
        // inside its second message block (ids 4,096 and up).
        let older = State::new();
        for (i, m) in log.iter().take(20).enumerate() {
            apply(&older, i as u64 + 1, m);
        }
        let snapshots = snapshot_dir(dir.path());
        snapshot::write(&snapshots, &older.image()).unwrap();
        let image = live.image();
        let mut bytes = snapshot::encode(&image);
        let at = bytes.len() - 2_000;
        bytes[at] ^= 0x10;
        let err = snapshot::decode(&bytes, Path::new("s")).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        std::fs::write(snapshots.join(format!("snapshot-{:020}.bin", log.len())), &bytes).unwrap();
        let (state, _wal, report) = open(dir.path(), Options::default()).unwrap();
        assert_eq!(report.snapshot_seq, Some(20), "fell back to the older snapshot");
        assert_eq!(report.replayed, log.len() as u64 - 20);
        assert_eq!(snapshot::encode(&state.image()), expected);
    }

    #[test]
    fn blocks_that_do_not_match_their_framing_are_refused_even_with_a_good_checksum() {
        let state = State::new();
        history(&state, 5_000);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let at = sections_at(&image);
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!(u64_at(&bytes, at), 2, "5,000 messages from id 1 are two chunks' blocks");
        let refused = |bytes: &[u8], what: &str| {
            let err = snapshot::decode(bytes, Path::new("s")).unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
        };
        // The first block's item count one too many, or one too few.
        for count in [4_096, 4_094] {
            let mut bad = bytes.clone();
            bad[at + 16..at + 24].copy_from_slice(&(count as u64).to_le_bytes());
            reseal(&mut bad);
            refused(&bad, "undecodable block");
        }
        // A block whose bytes do not match its own CRC (the file's resealed).
        let mut bad = bytes.clone();
        bad[at + 8 + 20 + 100] ^= 1;
        reseal(&mut bad);
        refused(&bad, "checksum mismatch in a block");
        // A block length past the end of the file.
        let mut bad = bytes.clone();
        bad[at + 8..at + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        reseal(&mut bad);
        refused(&bad, "bad messages section");
        // The two message blocks swapped: ids out of order.
        let first = 20 + u64_at(&bytes, at + 8) as usize;
        let second = 20 + u64_at(&bytes, at + 8 + first) as usize;
        let mut bad = bytes.clone();
        let blocks = at + 8..at + 8 + first + second;
        let mut swapped = bytes[blocks.start + first..blocks.end].to_vec();
        swapped.extend_from_slice(&bytes[blocks.start..blocks.start + first]);
        bad[blocks].copy_from_slice(&swapped);
        reseal(&mut bad);
        refused(&bad, "messages out of order");
        // Something after the last section.
        let mut bad = bytes.clone();
        bad.push(0);
        let len = (bad.len() - 32) as u64;
        bad[20..28].copy_from_slice(&len.to_le_bytes());
        reseal(&mut bad);
        refused(&bad, "after the last section");
    }

    /// A snapshot writer hears of its progress after every synced MiB
    /// (the snapshot thread raises its own priority there when slow).
    #[test]
    fn writing_a_snapshot_reports_each_synced_mebibyte() {
        let state = State::new();
        history(&state, 100_000);
        let dir = tempfile::tempdir().unwrap();
        let mut calls = 0u64;
        let path = snapshot::write_with(dir.path(), &state.image(), &mut || calls += 1).unwrap();
        let len = std::fs::metadata(path).unwrap().len();
        assert!(len > 2 << 20, "a snapshot of several MiB: {len} bytes");
        assert!(calls >= 2 && calls <= len >> 20, "{calls} calls for {len} bytes");
    }

    /// Any number of decode and rebuild threads gives the same image and
    /// the same derived indexes as the one-by-one `index_messages`, with
    /// topics spelled in several cases across chunk and thread borders.
    #[test]
    fn decoding_and_rebuilding_on_many_threads_match_one_thread() {
        let live = State::new();
        history(&live, 2);
        let realm = live.realm_by_subdomain("").unwrap();
        let channel = live.channel_by_name(realm.id, "general").unwrap();
        for i in 0..9_000u64 {
            let topic = ["Topic", "topic", "TOPIC", "other"][(i % 7 % 4) as usize];
            let topic = if i > 8_000 { "late" } else { topic };
            let destination = Destination::Channel { channel: channel.id, topic: topic.into() };
            let sender = crate::state::UserId(1 + i % 2);
            let message = test_message(&live, realm.id, sender, channel.recipient, destination, i);
            apply(
                &live,
                live.applied_seq() + 1,
                &Mutation::SendMessage(NewMessage {
                    message: std::sync::Arc::new(message),
                    read_by_sender: true,
                    mentioned: Vec::new(),
                    channel_wildcard: false,
                    topic_wildcard: Vec::new(),
                }),
            );
        }
        let bytes = snapshot::encode(&live.image());
        let one = snapshot::decode_on(&bytes, Path::new("s"), 1).unwrap();
        for threads in [2, 3, 8] {
            let many = snapshot::decode_on(&bytes, Path::new("s"), threads).unwrap();
            assert_eq!(many, one, "{threads} decode threads");
        }
        let indexes = |state: &State| {
            (
                state.by_recipient.collect_sorted(|_, _| true),
                state.by_topic.collect_sorted(|_, _| true),
                state.channel_topics.collect_sorted(|_, _| true),
            )
        };
        let reference = State::new();
        let image = snapshot::decode_on(&bytes, Path::new("s"), 1).unwrap();
        let sequential = crate::state::StateImage {
            messages: crate::state::MessagesImage::Decoded(
                image.messages.iter().cloned().collect(),
            ),
            ..image
        };
        let reference = {
            drop(reference);
            State::from_image_on(sequential, 1)
        };
        let expected = indexes(&live);
        assert_eq!(indexes(&reference), expected);
        for threads in [1, 2, 3, 8] {
            let image = snapshot::decode_on(&bytes, Path::new("s"), threads).unwrap();
            let rebuilt = State::from_image_on(image, threads);
            assert_eq!(indexes(&rebuilt), expected, "{threads} rebuild threads");
            assert_eq!(snapshot::encode(&rebuilt.image()), bytes);
            assert_eq!(rebuilt.names.len(), live.names.len(), "the client name and topics");
        }
    }

    /// The framing of the blocked sections (since FORMAT_VERSION 8): per
    /// section a block count, then per block its byte length, its item
    /// count, its CRC32 and the items' bincode encodings.
    #[test]
    fn snapshot_sections_fixture() {
        let state = State::new();
        history(&state, 2);
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let hex =
            bytes[sections_at(&image)..].iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex, SECTIONS_FIXTURE, "the snapshot format changed: bump FORMAT_VERSION");
    }

    /// A version 8 snapshot (no files block) still reads, with no
    /// attachments; later ones carry them.
    #[test]
    fn snapshots_without_a_files_block_still_read() {
        let state = State::new();
        history(&state, 2);
        let owner = state.users.collect_sorted(|_, _| true)[0].0;
        state.files.insert(crate::state::files::Attachment {
            id: 1,
            realm: state.users.get(&owner).unwrap().realm,
            owner,
            path_id: "1/ab/ABCDEFGHIJKLMNOPQRSTUVWX/a.txt".into(),
            name: "a.txt".into(),
            size: 3,
            content_type: "text/plain".into(),
            create_time: 5,
            messages: vec![crate::state::MessageId(1)],
        });
        let image = state.image();
        let bytes = snapshot::encode(&image);
        let back = snapshot::decode_on(&bytes, Path::new("s"), 1).unwrap();
        assert_eq!(back.files, image.files);
        // The same snapshot as version 8 wrote it: no files block.
        let files_block = files_block_len(&image);
        // Version 8 had no organization part after the image either.
        let head = bincode::serde::encode_to_vec(&image, bincode::config::standard()).unwrap();
        let mut old = bytes[..32].to_vec();
        old.extend((head.len() as u64).to_le_bytes());
        old.extend(crc32fast::hash(&head).to_le_bytes());
        old.extend(&head);
        old.extend(&bytes[sections_at(&image)..bytes.len() - files_block]);
        old[8..12].copy_from_slice(&8u32.to_le_bytes());
        let old_len = (old.len() - 32) as u64;
        old[20..28].copy_from_slice(&old_len.to_le_bytes());
        let payload_len = (bytes.len() - files_block - 32) as u64;
        let crc = crc32fast::hash(&old[32..]);
        old[28..32].copy_from_slice(&crc.to_le_bytes());
        let back = snapshot::decode_on(&old, Path::new("s"), 1).unwrap();
        assert!(back.files.is_empty());
        assert_eq!(back.applied_seq, image.applied_seq);
        // A current file cut short of its files block is refused.
        let mut cut = bytes[..bytes.len() - files_block].to_vec();
        cut[20..28].copy_from_slice(&payload_len.to_le_bytes());
        let crc = crc32fast::hash(&cut[32..]);
        cut[28..32].copy_from_slice(&crc.to_le_bytes());
        assert!(snapshot::decode_on(&cut, Path::new("s"), 1).is_err());
    }

    const SECTIONS_FIXTURE: &str = concat!(
        // Messages: 1 block of 0x4a bytes holding 2 messages.
        "0100000000000000",
        "4a00000000000000",
        "0200000000000000",
        "2c139af3",
        "010101010001027430026d30093c703e6d303c2f703efcc8e2a7ca04746573740000000000",
        "020102010001027431026d31093c703e6d313c2f703efccae2a7ca04746573740000000000",
        // Rows: 1 block of 0x1d bytes holding 2 users' rows.
        "0100000000000000",
        "1d00000000000000",
        "0200000000000000",
        "259b65cc",
        "0102010101020000020101000000000202010102010100000000000000",
        // Files (since FORMAT_VERSION 9): 7 bytes, no attachments and no
        // custom emoji, then (since 11) no avatars, realm settings or
        // thumbnails.
        "0700000000000000",
        "7edf6c9d",
        "00000000000000",
    );

    /// A deterministic pseudo-random generator (xorshift64*), so the
    /// random-history test is reproducible from its seed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    /// A random mix of users, channels, subscriptions and channel and
    /// direct messages across two realms, applied to `state`.
    fn random_history(state: &State, seed: u64, steps: usize) -> Vec<Mutation> {
        use crate::state::{ChannelId, UserId};
        let mut rng = Rng(seed);
        let mut log = Vec::new();
        let mut step = |m: Mutation| {
            apply(state, state.applied_seq() + 1, &m);
            log.push(m);
        };
        step(build::realm(state, "", "A", 0).unwrap());
        step(build::realm(state, "b", "B", 0).unwrap());
        let realms =
            [state.realm_by_subdomain("").unwrap(), state.realm_by_subdomain("b").unwrap()];
        for i in 0..steps {
            let realm = &realms[rng.below(2) as usize];
            let users: Vec<UserId> = state.realm_users(realm.id).iter().map(|u| u.id).collect();
            let channels: Vec<ChannelId> = state
                .channels
                .collect_sorted(|_, c| c.realm == realm.id)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let choice = if users.len() < 2 {
                0
            } else if channels.is_empty() {
                1
            } else {
                rng.below(5)
            };
            let m = match choice {
                0 => {
                    let email = format!("u{i}@r{}.test", realm.id);
                    let new =
                        NewUser { email: &email, full_name: "U", role: Role::Member, bot: None };
                    build::user(state, realm.id, &new, format!("{i:0>32}"), i as i64).unwrap()
                }
                1 => {
                    let name = format!("c{i}");
                    let subscribers = [users[rng.below(users.len() as u64) as usize]];
                    let new = NewChannel {
                        name: &name,
                        description: "d",
                        invite_only: rng.below(2) == 0,
                        creator: Some(subscribers[0]),
                        subscribers: &subscribers,
                    };
                    build::channel(state, realm, &new, i as i64).unwrap()
                }
                2 => {
                    let channel = channels[rng.below(channels.len() as u64) as usize];
                    let user = users[rng.below(users.len() as u64) as usize];
                    let already =
                        state.channels.read(&channel, |c| c.subscribers.contains(&user)).unwrap();
                    let subscribers = if already {
                        Vec::new()
                    } else {
                        vec![(user, build::subscription(state, user, 0))]
                    };
                    Mutation::Subscribe { channel, subscribers }
                }
                kind => {
                    let sender = users[rng.below(users.len() as u64) as usize];
                    let (destination, recipient) = if kind == 3 {
                        let channel = state
                            .channels
                            .get(&channels[rng.below(channels.len() as u64) as usize])
                            .unwrap();
                        (
                            Destination::Channel {
                                channel: channel.id,
                                topic: format!("t{}", rng.below(3)).into(),
                            },
                            channel.recipient,
                        )
                    } else {
                        let other = users[rng.below(users.len() as u64) as usize];
                        let mut participants = vec![sender, other];
                        participants.sort();
                        participants.dedup();
                        let recipient = state.direct_recipients.get(&participants).unwrap_or(
                            crate::state::RecipientId(state.ids.peek(IdKind::Recipient)),
                        );
                        (Destination::Direct { participants: participants.into() }, recipient)
                    };
                    let message =
                        test_message(state, realm.id, sender, recipient, destination, i as u64);
                    Mutation::SendMessage(NewMessage {
                        message: std::sync::Arc::new(message),
                        read_by_sender: rng.below(2) == 0,
                        mentioned: Vec::new(),
                        channel_wildcard: false,
                        topic_wildcard: Vec::new(),
                    })
                }
            };
            step(m);
        }
        log
    }

    #[test]
    fn random_histories_replay_identically_from_any_snapshot_point() {
        for seed in [1u64, 7, 42, 1234] {
            let live = State::new();
            let log = random_history(&live, seed, 300);
            let expected = snapshot::encode(&live.image());
            let mut rng = Rng(seed ^ 0xdead_beef);
            for cut in
                [0, rng.below(log.len() as u64), rng.below(log.len() as u64), log.len() as u64]
            {
                let dir = tempfile::tempdir().unwrap();
                let small = Options { segment_bytes: 512, ..Options::default() };
                write_log(dir.path(), &log, small.clone());
                let prefix = State::new();
                for (i, m) in log.iter().take(cut as usize).enumerate() {
                    apply(&prefix, i as u64 + 1, m);
                }
                if cut > 0 {
                    snapshot::write(&snapshot_dir(dir.path()), &prefix.image()).unwrap();
                }
                let (state, _wal, report) = open(dir.path(), small).unwrap();
                assert_eq!(report.replayed, log.len() as u64 - cut, "seed {seed} cut {cut}");
                assert!(
                    snapshot::encode(&state.image()) == expected,
                    "seed {seed} cut {cut}: state differs"
                );
            }
        }
    }

    /// Scheduling, editing, failing, delivering and deleting scheduled
    /// messages replay to the same state from the log and from a snapshot
    /// at every point.
    #[test]
    fn scheduled_messages_replay_identically_from_any_snapshot_point() {
        use crate::state::scheduled::{ScheduledId, ScheduledMessage, ScheduledTo};
        let live = State::new();
        let mut log = history(&live, 2);
        let realm = live.realm_by_subdomain("").unwrap();
        let channel = live.channel_by_name(realm.id, "general").unwrap();
        let scheduled = |id: u64, content: &str| ScheduledMessage {
            id: ScheduledId(id),
            realm: realm.id,
            sender: crate::state::UserId(1),
            to: ScheduledTo::Channel { channel: channel.id, topic: "later".into() },
            content: content.into(),
            rendered_content: format!("<p>{content}</p>"),
            deliver_at: 1_800_000_000 + id as i64,
            read_by_sender: true,
            client: "test".into(),
            failure: None,
        };
        let mut step = |m: Mutation| {
            apply(&live, live.applied_seq() + 1, &m);
            log.push(m);
        };
        for id in 1..=4 {
            step(Mutation::ScheduleMessage(scheduled(id, &format!("s{id}"))));
        }
        step(Mutation::EditScheduled(scheduled(2, "edited")));
        step(Mutation::FailScheduled { id: ScheduledId(3), reason: "no".into() });
        step(Mutation::DeleteScheduled { id: ScheduledId(4) });
        let destination = Destination::Channel { channel: channel.id, topic: "later".into() };
        let message = test_message(
            &live,
            realm.id,
            crate::state::UserId(1),
            channel.recipient,
            destination,
            9,
        );
        let sent = message.id;
        step(Mutation::DeliverScheduled {
            id: ScheduledId(1),
            message: NewMessage {
                message: std::sync::Arc::new(message),
                read_by_sender: true,
                mentioned: Vec::new(),
                channel_wildcard: false,
                topic_wildcard: Vec::new(),
            },
        });
        assert!(live.messages.contains(&sent));
        let left: Vec<u64> =
            live.scheduled.of_user(crate::state::UserId(1)).iter().map(|s| s.id.0).collect();
        assert_eq!(left, [2, 3]);
        assert_eq!(live.scheduled.peek(), ScheduledId(5));
        let expected = snapshot::encode(&live.image());
        for cut in 0..=log.len() {
            let replayed = State::new();
            for (i, m) in log.iter().take(cut).enumerate() {
                apply(&replayed, i as u64 + 1, m);
            }
            let restored = State::from_image(replayed.image());
            for (i, m) in log.iter().enumerate().skip(cut) {
                apply(&restored, i as u64 + 1, m);
            }
            assert_eq!(snapshot::encode(&restored.image()), expected, "snapshot after {cut}");
        }
    }

    /// System bots and their notices (the newest mutations) replay to the
    /// same state from any snapshot point, and from the log alone.
    #[test]
    fn system_bots_and_notices_replay_identically_from_any_snapshot_point() {
        use crate::state::system_bots::SystemBot;
        use crate::state::{Flags, UserId};
        let live = State::new();
        let mut log = history(&live, 4);
        let mut step = |m: Mutation| {
            apply(&live, live.applied_seq() + 1, &m);
            log.push(m);
        };
        let realm = live.realm_by_subdomain("").unwrap();
        let first = live.ids.peek(IdKind::User);
        step(Mutation::CreateSystemBots(crate::mutation::build::system_bots(
            &live, realm.id, first, 5,
        )));
        let bot = live.system_bot(realm.id, SystemBot::Notification).unwrap();
        assert!(live.realm_users(realm.id).iter().all(|u| !u.is_system_bot()));
        let channel = live.channel_by_name(realm.id, "general").unwrap();
        let destination = Destination::Channel { channel: channel.id, topic: "t0".into() };
        let message = test_message(&live, realm.id, bot.id, channel.recipient, destination, 9);
        let id = message.id;
        let notice = NewMessage {
            message: std::sync::Arc::new(message),
            read_by_sender: true,
            mentioned: Vec::new(),
            channel_wildcard: false,
            topic_wildcard: Vec::new(),
        };
        step(Mutation::SendNotice { message: notice, read_by: vec![UserId(1)] });
        assert_eq!(live.flags(UserId(1), id), Some(Flags::READ));
        assert_eq!(live.flags(UserId(2), id), Some(Flags::default()));
        let expected = snapshot::encode(&live.image());
        for cut in 0..=log.len() {
            let replayed = State::new();
            for (i, m) in log.iter().take(cut).enumerate() {
                apply(&replayed, i as u64 + 1, m);
            }
            let restored = State::from_image(replayed.image());
            for (i, m) in log.iter().enumerate().skip(cut) {
                apply(&restored, i as u64 + 1, m);
            }
            assert_eq!(snapshot::encode(&restored.image()), expected, "snapshot after {cut}");
            assert_eq!(restored.system_bot(realm.id, SystemBot::Notification), Some(bot.clone()));
        }
        for m in &log {
            assert_eq!(&decode_mutation(1, &encode_mutation(m)).unwrap(), m);
        }
    }

    /// A length that the bytes cannot hold is an error before anything
    /// is allocated for it: a string of 2^40 bytes declared by 10 bytes.
    #[test]
    fn bincode_lengths_past_the_input_are_errors() {
        let mut huge = vec![253u8];
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        huge.push(b'x');
        let refused = decode_bounded::<String>(&huge).unwrap_err();
        assert!(matches!(refused, bincode::error::DecodeError::LimitExceeded), "{refused:?}");
        assert!(decode_bounded::<Vec<u8>>(&huge).is_err());
        // Bytes that hold what they declare decode, however they claim.
        let ids: Vec<u64> = (0..10_000).collect();
        let bytes = bincode::serde::encode_to_vec(&ids, bincode::config::standard()).unwrap();
        assert_eq!(decode_bounded::<Vec<u64>>(&bytes).unwrap(), (ids, bytes.len()));
        let empty: Vec<Vec<()>> = vec![Vec::new(); 1000];
        let bytes = bincode::serde::encode_to_vec(&empty, bincode::config::standard()).unwrap();
        assert_eq!(decode_bounded::<Vec<Vec<()>>>(&bytes).unwrap().0, empty);
    }

    /// Found by the `log_record` fuzz target: a record of 28 bytes whose
    /// string length asked for 3.4 GB (an abort while bincode decoded
    /// without a limit); now an error like any damaged record.
    #[test]
    fn fuzz_record_declaring_gigabytes_is_an_error() {
        let record = hex_bytes("0426000000010101fca770e2ca047465737400000000000101010200");
        // Refused for the length, before anything was allocated for it.
        let refused = decode_mutation(3, &record).unwrap_err();
        assert!(
            matches!(&refused, PersistError::BadRecord { seq: 3, why } if why == "LimitExceeded"),
            "{refused:?}"
        );
    }

    /// Found by the `snapshot` fuzz target: a snapshot whose framing and
    /// checksums are right and whose image block declares a string of
    /// 2^62 bytes (an abort: allocation too big); now a bad snapshot.
    #[test]
    fn fuzz_snapshot_declaring_a_huge_string_is_refused() {
        let file = hex_bytes(concat!(
            "4e4154534e4150000a00000000000000000000009200000000000000f951759942000000",
            "00000000c92b085fc0000000000000fcffff00000000fdffffffffffffff46c000000000",
            "000000fdffffffffffffff1246ffffffffff46c0000000000000fdffffffffffffff1246",
            "124601000000000000000000000000000000000000000000000000000000010000000000",
            "00000000000000000000000000000000000000000000000000000000000000000000",
        ));
        let refused = snapshot::decode_on(&file, Path::new("fuzz.bin"), 1).unwrap_err();
        assert!(matches!(refused, PersistError::BadSnapshot { .. }), "{refused:?}");
    }

    fn hex_bytes(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }

    /// The on-disk encoding of a mutation. If this changes, old data dirs
    /// no longer read: bump `FORMAT_VERSION` and keep a converter.
    #[test]
    fn mutation_encoding_fixture() {
        let state = State::new();
        let log = history(&state, 1);
        let hex = |m: &Mutation| {
            encode_mutation(m).iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        assert_eq!(hex(&log[1]), USER_FIXTURE, "the log format changed: bump FORMAT_VERSION");
        assert_eq!(
            hex(log.last().unwrap()),
            MESSAGE_FIXTURE,
            "the log format changed: bump FORMAT_VERSION"
        );
        assert_eq!(decode_mutation(1, &encode_mutation(&log[0])).unwrap(), log[0]);
    }

    /// The boxed variants (a realm, a channel, a personal change) are
    /// written as their payloads: the box is not in the log, so logs
    /// written before the variants were boxed read the same.
    #[test]
    fn boxed_variants_encode_as_their_payloads() {
        let state = State::new();
        let log = history(&state, 1);
        let config = bincode::config::standard();
        let fields = |index: u8, payload: Vec<u8>| [vec![index], payload].concat();
        let Mutation::CreateRealm { realm, groups } = &log[0] else { panic!("{:?}", log[0]) };
        let payload = bincode::serde::encode_to_vec((&**realm, groups), config).unwrap();
        assert_eq!(encode_mutation(&log[0]), fields(0, payload));
        let channel = log.iter().find(|m| matches!(m, Mutation::CreateChannel { .. })).unwrap();
        let Mutation::CreateChannel { channel: c, subscribers } = channel else { unreachable!() };
        let payload = bincode::serde::encode_to_vec((&**c, subscribers), config).unwrap();
        assert_eq!(encode_mutation(channel), fields(2, payload));
        let change = crate::state::personal::PersonalChange::SetAlertWords {
            user: crate::state::UserId(7),
            words: vec!["natter".into()],
        };
        let payload = bincode::serde::encode_to_vec(&change, config).unwrap();
        let personal = Mutation::personal(change);
        let index = encode_mutation(&personal)[0];
        assert_eq!(encode_mutation(&personal), fields(index, payload));
        assert_eq!(decode_mutation(1, &encode_mutation(&personal)).unwrap(), personal);
    }

    /// A `Mutation` stays small: replay holds batches of them and moves
    /// each several times (it was 760 bytes while a realm and a channel
    /// were stored inline, 200 while a send held its message inline; the
    /// message is shared now, so a send is a fraction of that).
    #[test]
    fn a_mutation_stays_small() {
        let send = std::mem::size_of::<crate::mutation::NewMessage>();
        assert!(send <= 96, "a send's mutation: {send} bytes");
        assert!(std::mem::size_of::<Mutation>() <= 200, "{}", std::mem::size_of::<Mutation>());
    }

    /// The on-disk encoding of the per-user rows in a snapshot (since
    /// FORMAT_VERSION 7: per user, the delivered ids, the unread ids and
    /// one set per other flag, each as its length and id gaps).
    #[test]
    fn user_rows_snapshot_fixture() {
        let state = State::new();
        history(&state, 4);
        let image = state.image();
        let hex = bincode::serde::encode_to_vec(&image.user_messages, bincode::config::standard())
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        assert_eq!(hex, ROWS_FIXTURE, "the snapshot format changed: bump FORMAT_VERSION");
    }

    const ROWS_FIXTURE: &str =
        "020104010101010202020000040101010100000000020401010101040101010100000000000000";

    const USER_FIXTURE: &str = "010101086140782e74657374086140782e74657374086140782e7465737403010000203030303030303030303030303030303030303030303030303030303030303030fc02e2a7ca0001";
    const MESSAGE_FIXTURE: &str =
        "04010101010001027430026d30093c703e6d303c2f703efcc8e2a7ca047465737400000000000101010000";
}
