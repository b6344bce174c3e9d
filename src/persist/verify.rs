//! `natter verify`: a data dir checked end to end without changing it:
//! every snapshot's checksums and decoding, every log segment's header and
//! every record's checksum and seq, that the log continues the newest
//! snapshot, and a full replay of the log after it into a scratch state
//! through `apply`. The first problem is reported with the file (and the
//! byte offset, for a log record) it is in.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use super::{decode_mutation, snapshot, snapshot_dir, wal_dir};
use crate::state::State;

/// The first problem found.
#[derive(Debug)]
pub struct Problem {
    /// The file (or directory) it is in.
    pub file: PathBuf,
    /// The byte offset in it, when known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "{} at offset {offset}: {}", self.file.display(), self.what),
            None => write!(f, "{}: {}", self.file.display(), self.what),
        }
    }
}

/// What a successful verification read.
#[derive(Debug, Default)]
pub struct Verified {
    /// Snapshots checked, newest first: seq and file.
    pub snapshots: Vec<(u64, PathBuf)>,
    /// Log segments checked.
    pub segments: usize,
    /// Log records checked (checksums), and of those replayed after the
    /// newest snapshot.
    pub records: u64,
    /// Records applied to the scratch state.
    pub replayed: u64,
    /// The seq the data dir recovers to.
    pub seq: u64,
    /// A torn tail at the end of the log (a crash mid-append, or a server
    /// appending while this ran): the next start cuts it off.
    pub torn_tail: Option<wal::TornTail>,
}

/// Checks the data dir at `data_dir` (see the module docs); takes no lock
/// and writes nothing.
pub fn verify(data_dir: &Path) -> Result<Verified, Problem> {
    let io = |file: &Path, e: std::io::Error| Problem {
        file: file.to_path_buf(),
        offset: None,
        what: e.to_string(),
    };
    if !data_dir.is_dir() {
        return Err(Problem {
            file: data_dir.to_path_buf(),
            offset: None,
            what: "not a directory".into(),
        });
    }
    let mut verified = Verified::default();
    let snapshots = snapshot_dir(data_dir);
    let threads = snapshot::threads();
    let mut newest = None;
    for (seq, path) in snapshot::list(&snapshots).map_err(|e| io(&snapshots, e))? {
        let image = snapshot::read(&path, threads).map_err(|e| Problem {
            file: path.clone(),
            offset: None,
            what: e.to_string(),
        })?;
        if newest.is_none() {
            newest = Some(image);
        }
        verified.snapshots.push((seq, path));
    }
    let state = newest.map_or_else(State::new, |image| State::from_image_on(image, threads));
    let base = state.applied_seq();
    let mut next = base + 1;
    let mut problem: Option<Problem> = None;
    let log = wal_dir(data_dir);
    let checked = wal::check(&log, |path, offset, seq, payload| {
        verified.records += 1;
        if seq <= base {
            return true;
        }
        let at = |what: String| Problem { file: path.to_path_buf(), offset: Some(offset), what };
        if seq != next {
            problem = Some(at(format!(
                "the log skips from seq {} to {seq}: records are missing (a segment?)",
                next - 1
            )));
            return false;
        }
        let mutation = match decode_mutation(seq, payload) {
            Ok(mutation) => mutation,
            Err(e) => {
                problem = Some(at(e.to_string()));
                return false;
            }
        };
        if catch_unwind(AssertUnwindSafe(|| crate::apply::apply(&state, seq, &mutation))).is_err() {
            problem = Some(at(format!("record {seq} does not apply to the state before it")));
            return false;
        }
        next = seq + 1;
        verified.replayed += 1;
        true
    })
    .map_err(|e| wal_problem(&log, e))?;
    if let Some(problem) = problem {
        return Err(problem);
    }
    if checked.last_seq < base {
        return Err(Problem {
            file: log,
            offset: None,
            what: format!(
                "the log ends at seq {}, before the newest snapshot's seq {base}: records are \
                 missing",
                checked.last_seq
            ),
        });
    }
    if let Some(first) = checked.first_seq().filter(|&first| first > base + 1) {
        let file = checked.segments.first().map_or(log, |s| s.0.clone());
        return Err(Problem {
            file,
            offset: None,
            what: format!(
                "the log starts at seq {first} but the state is at seq {base}: records {} to {} \
                 are missing (a segment?)",
                base + 1,
                first - 1
            ),
        });
    }
    verified.segments = checked.segments.len();
    verified.torn_tail = checked.torn_tail;
    verified.seq = state.applied_seq().max(base);
    Ok(verified)
}

/// A log error as a problem naming its file and offset.
fn wal_problem(log: &Path, e: wal::Error) -> Problem {
    let (file, offset) = match &e {
        wal::Error::Corrupt { segment, offset } => (segment.clone(), Some(*offset)),
        wal::Error::OutOfSequence { segment, offset, .. } => (segment.clone(), Some(*offset)),
        wal::Error::BadHeader { segment, .. } | wal::Error::UnsupportedVersion { segment, .. } => {
            (segment.clone(), Some(0))
        }
        wal::Error::StrayPending { segment, .. } => (segment.clone(), None),
        wal::Error::Io { path, .. } => (path.clone(), None),
        _ => (log.to_path_buf(), None),
    };
    Problem { file, offset, what: e.to_string() }
}
