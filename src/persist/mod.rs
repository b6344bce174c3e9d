//! Durability glue between `State` and the `wal` crate.
//!
//! Data-dir layout:
//!
//! ```text
//! <data-dir>/wal/<first seq, 20 digits>.wal   log segments (see the wal crate docs)
//! <data-dir>/snapshots/snapshot-<seq>.bin     newest durable snapshot
//! ```
//!
//! `open` = newest valid snapshot + replay of every logged mutation after
//! it through the same `apply` used at runtime.

pub mod snapshot;

use std::fmt;
use std::path::{Path, PathBuf};

use wal::{Options, Wal};

use crate::apply::apply;
use crate::mutation::Mutation;
use crate::state::State;

/// Version of the on-disk encoding of `Mutation` and `StateImage`.
pub const FORMAT_VERSION: u32 = 1;

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
    /// Seq of the snapshot loaded, if any.
    pub snapshot_seq: Option<u64>,
    /// Log records replayed after it.
    pub replayed: u64,
    /// A torn log tail that was cut off.
    pub torn_tail: Option<wal::TornTail>,
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
    bincode::serde::encode_to_vec(m, bincode::config::standard()).expect("mutations always encode")
}

/// Decodes a log record.
pub fn decode_mutation(seq: u64, bytes: &[u8]) -> Result<Mutation, PersistError> {
    bincode::serde::decode_from_slice(bytes, bincode::config::standard())
        .map(|(m, _)| m)
        .map_err(|e| PersistError::BadRecord { seq, why: e.to_string() })
}

/// Recovers the state: newest valid snapshot, then the log tail.
pub fn open(data_dir: &Path, options: Options) -> Result<(State, Wal, OpenReport), PersistError> {
    std::fs::create_dir_all(data_dir)?;
    let mut report = OpenReport::default();
    let snapshots = snapshot_dir(data_dir);
    let mut state = State::new();
    for (seq, path) in snapshot::list(&snapshots)? {
        let bytes = std::fs::read(&path)?;
        match snapshot::decode(&bytes, &path) {
            Ok(image) => {
                state = State::from_image(image);
                report.snapshot_seq = Some(seq);
                break;
            }
            Err(e) => eprintln!("natter: warning: skipping {e}"),
        }
    }
    let (wal, recovery) = Wal::open(wal_dir(data_dir), options)?;
    report.torn_tail = recovery.truncated;
    let from = state.applied_seq();
    if wal.last_seq() < from {
        return Err(PersistError::LogBehindSnapshot { snapshot: from, log: wal.last_seq() });
    }
    for record in wal.replay_from(from + 1)? {
        let (seq, bytes) = record?;
        let mutation = decode_mutation(seq, &bytes)?;
        apply(&state, seq, &mutation);
        report.replayed += 1;
    }
    Ok((state, wal, report))
}
