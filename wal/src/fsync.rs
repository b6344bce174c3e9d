//! Flushing to stable storage, and why a failed flush ends the process.
//!
//! Every `fsync`/`fdatasync` the crate makes goes through this module. When
//! one fails, the process prints what happened and aborts instead of
//! returning an error, because an error invites a retry and a retry is a lie:
//! after a failed writeback Linux marks the dirty pages clean (or drops them)
//! and reports the error once, so a second `fsync` on the same file usually
//! succeeds while the data it was meant to protect is gone. PostgreSQL
//! learned this in 2018 ("fsyncgate") and since then treats an fsync failure
//! as a crash. So does this crate: after a restart, recovery reads back what
//! actually reached the disk, which is the only trustworthy state.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

use crate::fs::Fs;
use crate::{Error, Result};

/// `fdatasync`: makes the file's data (and the size needed to read it)
/// durable. Aborts the process on failure.
pub(crate) fn data(fs: &dyn Fs, file: &File, path: &Path) {
    if let Err(err) = fs.sync_data(file, path) {
        fatal(path, &err);
    }
}

/// `fsync`: makes the file's data and all of its metadata durable. Aborts
/// the process on failure.
pub(crate) fn all(fs: &dyn Fs, file: &File, path: &Path) {
    if let Err(err) = fs.sync_all(file, path) {
        fatal(path, &err);
    }
}

/// Makes a directory's entries (files created, renamed or removed in it)
/// durable. Failing to open the directory (it is missing, or not ours to
/// open) is an ordinary error, since nothing has been lost yet; failing to
/// flush it aborts the process.
pub(crate) fn dir(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.sync_dir(path) {
        Ok(()) => Ok(()),
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
            Err(Error::io(path, err))
        }
        Err(err) => fatal(path, &err),
    }
}

fn fatal(path: &Path, err: &std::io::Error) -> ! {
    eprintln!(
        "wal: fatal: fsync of {} failed: {err}. Aborting: after a failed fsync the kernel may \
         already have discarded the unwritten data, so retrying could report success for \
         writes that are lost. Restart to recover from what is on disk.",
        path.display()
    );
    std::process::abort()
}

/// Asks the kernel to start writing `len` bytes of `file` from `offset`
/// back to disk, without waiting and without any durability meaning
/// (Linux: `posix_fadvise(POSIX_FADV_DONTNEED)`, which starts asynchronous
/// writeback of the range's dirty pages and lets the kernel drop the
/// clean ones — the log never reads a segment back while it runs;
/// elsewhere nothing). Errors are ignored: see `Log::write_back_early`.
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else { return };
        let _ = posix_fadvise(file, offset, len, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}
