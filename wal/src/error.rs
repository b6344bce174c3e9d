//! The crate's error type.
//!
//! Every failure the log reports is one [`Error`] variant. Variants that
//! concern bytes on disk name the segment file (and the byte offset inside
//! it) so that an operator can look at exactly the place that is wrong.
//! Display messages are lowercase and carry no trailing punctuation, so they
//! compose into larger messages (`"opening the log: {err}"`).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::Seq;

/// What can go wrong when opening, writing or reading the log.
#[derive(Debug)]
pub enum Error {
    /// An operating-system call on a file or directory of the log failed.
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// What the operating system reported.
        source: io::Error,
    },
    /// A segment file does not start with a valid segment header.
    BadHeader {
        /// The segment file.
        segment: PathBuf,
        /// Which check failed.
        reason: &'static str,
    },
    /// A segment was written in a format version this crate cannot read.
    UnsupportedVersion {
        /// The segment file.
        segment: PathBuf,
        /// The version its header declares.
        version: u32,
    },
    /// A frame fails verification somewhere other than the torn tail of the
    /// last segment: the log was damaged after it was written.
    Corrupt {
        /// The segment file holding the damaged frame.
        segment: PathBuf,
        /// Byte offset of the damaged frame inside that file.
        offset: u64,
    },
    /// A frame or segment verifies, but its seq does not follow the one
    /// before it: records are missing, duplicated or out of place.
    OutOfSequence {
        /// The segment file.
        segment: PathBuf,
        /// Byte offset of the frame (0 when the segment header is at fault).
        offset: u64,
        /// The seq that should have come next.
        expected: Seq,
        /// The seq found instead.
        found: Seq,
    },
    /// A pending segment (`<name>.wal.pending`, see the crate docs) that
    /// the log cannot have left behind.
    StrayPending {
        /// The pending segment file.
        segment: PathBuf,
        /// Why it cannot be one.
        reason: &'static str,
    },
    /// A replay asked for records that `remove_through` already deleted.
    SeqGap {
        /// The first seq the caller asked for.
        requested: Seq,
        /// The earliest seq a replay can start from now.
        first_available: Seq,
    },
    /// A payload is longer than a frame's 32-bit length field can describe.
    RecordTooLarge {
        /// The payload's length in bytes.
        len: usize,
    },
    /// Another open [`crate::Wal`], in this process or another, holds the
    /// directory's lock.
    Locked {
        /// The log directory.
        dir: PathBuf,
    },
    /// An earlier append failed half-way and its partial frame could not be
    /// cut off again, so further appends would land after garbage.
    Poisoned,
}

/// Shorthand for results whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: &Path, source: io::Error) -> Error {
        Error::Io { path: path.to_path_buf(), source }
    }
}

/// Adds the path to an [`io::Result`]'s error: `file.write_all(b).at(&path)?`.
pub(crate) trait IoContext<T> {
    /// Converts the error into [`Error::Io`] about `path`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| Error::io(path, source))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "i/o error on {}: {source}", path.display()),
            Error::BadHeader { segment, reason } => {
                write!(f, "bad segment header in {}: {reason}", segment.display())
            }
            Error::UnsupportedVersion { segment, version } => {
                write!(f, "unsupported log format version {version} in {}", segment.display())
            }
            Error::Corrupt { segment, offset } => {
                write!(f, "corrupt frame in {} at offset {offset}", segment.display())
            }
            Error::OutOfSequence { segment, offset, expected, found } => write!(
                f,
                "out-of-sequence record in {} at offset {offset}: expected seq {expected}, found {found}",
                segment.display()
            ),
            Error::StrayPending { segment, reason } => {
                write!(f, "unexpected pending segment {}: {reason}", segment.display())
            }
            Error::SeqGap { requested, first_available } => write!(
                f,
                "seq {requested} has been removed from the log; replay can start at seq {first_available} at the earliest"
            ),
            Error::RecordTooLarge { len } => {
                write!(f, "record of {len} bytes exceeds the maximum of {} bytes", u32::MAX)
            }
            Error::Locked { dir } => {
                write!(f, "log directory {} is in use by another open log", dir.display())
            }
            Error::Poisoned => {
                write!(f, "log is unusable: a failed write could not be rolled back")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
