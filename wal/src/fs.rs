//! The file-system seam: every change the log makes to its files goes
//! through an [`Fs`].
//!
//! Production uses [`RealFs`], whose methods are the system calls
//! themselves. Tests use [`crate::sim::SimFs`], which performs the same
//! calls but can fail any of them (`EIO`, `ENOSPC`, a short write), tracks
//! what an `fsync` has made durable, and can lose power: drop every write,
//! size change and directory entry not yet flushed.
//!
//! The seam covers what changes files and what makes changes durable:
//! creating and opening files for writing, positioned writes, size
//! changes, `fdatasync`/`fsync` of files and directories, renames and
//! removals. Reading stays with the callers (memory maps, `read_dir`):
//! the simulated file system keeps its live contents in real files, so a
//! read sees exactly what a read after the same calls on a real disk
//! would.
//!
//! The log holds an `Arc<dyn Fs>`: one indirect call per system call,
//! which the system call's own cost (microseconds) dwarfs; a group commit
//! makes one write and one `fdatasync` per batch.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The operations the log (and natter's snapshots and file store) use to
/// change files. `path` arguments next to a `file` name the file for error
/// messages and fault injection; the file itself is the handle.
pub trait Fs: Send + Sync + std::fmt::Debug {
    /// Creates `path` for writing; fails if it exists (`O_CREAT|O_EXCL`).
    fn create_new(&self, path: &Path) -> io::Result<File>;
    /// Creates `path` for writing, or empties it if it exists.
    fn create(&self, path: &Path) -> io::Result<File>;
    /// Opens an existing file for writing.
    fn open_write(&self, path: &Path) -> io::Result<File>;
    /// Writes all of `buf` at `offset` (`pwrite`, repeated until done).
    fn write_at(&self, file: &File, path: &Path, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Sets the file's size (`ftruncate`).
    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()>;
    /// `fdatasync`: the file's data and the size needed to read it.
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;
    /// `fsync`: the file's data and all of its metadata.
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()>;
    /// Flushes a directory: the entries created, renamed or removed in it.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and any missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Bytes an unprivileged process can still write on the file system
    /// holding `dir` (`statvfs`'s available blocks).
    fn free_bytes(&self, dir: &Path) -> io::Result<u64>;
}

/// The real file system: each method is the system call it names.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl Fs for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().write(true).create_new(true).open(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        File::create(path)
    }

    fn open_write(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().write(true).open(path)
    }

    fn write_at(&self, file: &File, _: &Path, buf: &[u8], offset: u64) -> io::Result<()> {
        file.write_all_at(buf, offset)
    }

    fn set_len(&self, file: &File, _: &Path, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn sync_data(&self, file: &File, _: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File, _: &Path) -> io::Result<()> {
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn free_bytes(&self, dir: &Path) -> io::Result<u64> {
        #[cfg(target_os = "linux")]
        {
            let stat = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
            Ok((stat.blocks_available() as u64).saturating_mul(stat.fragment_size() as u64))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            Ok(u64::MAX)
        }
    }
}
