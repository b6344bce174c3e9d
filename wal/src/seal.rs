//! Sealing a segment on its own thread, in the modes whose appends do not
//! wait for fsyncs ([`SyncMode::Never`](crate::SyncMode::Never) and
//! [`SyncMode::Interval`](crate::SyncMode::Interval)).
//!
//! A sealed segment must be complete on disk before a segment after it
//! carries its real name: that is what lets recovery call damage in any
//! segment but the last corruption. Flushing 64 MiB takes tens of
//! milliseconds when the disk is busy (a snapshot being written), and the
//! appender that fills a segment would stall every other appender that long.
//! So in those modes rotation starts the next segment under a *pending*
//! name and hands the old one to a [`Seal`]: a thread that flushes the
//! sealed segment, then the pending one, renames the pending one into place
//! and flushes the directory. Appends go on meanwhile.
//!
//! The log applies the rename to its own bookkeeping when it next looks
//! ([`Seal::finished`]), and waits for a seal in flight before it rotates
//! again, so there is never more than one pending segment.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use crate::error::IoContext;
use crate::fs::Fs;
use crate::{fsync, Result};

/// A seal in flight (or finished, and not yet looked at).
pub(crate) struct Seal {
    thread: JoinHandle<Result<()>>,
    done: Arc<Done>,
    /// The pending segment's path, and the real name it gets.
    pub(crate) pending: PathBuf,
    pub(crate) named: PathBuf,
}

/// Set when a seal's thread has finished, for waiters that do not hold the
/// log's lock (a [`JoinHandle`] has a single owner: the log).
#[derive(Default)]
pub(crate) struct Done {
    finished: Mutex<bool>,
    changed: Condvar,
}

impl Done {
    fn set(&self) {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.changed.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks the calling OS thread until the seal's thread has finished.
    pub(crate) fn wait(&self) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        while !*finished {
            finished = self.changed.wait(finished).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Sets [`Done`] when the seal's thread ends, however it ends.
struct SetOnDrop(Arc<Done>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

impl Seal {
    /// Starts flushing `sealed` (complete, and no longer written to) and
    /// then naming `pending` (the segment after it) as `named`.
    pub(crate) fn start(
        fs: Arc<dyn Fs>,
        dir: &Path,
        sealed: (Arc<File>, PathBuf),
        pending: (Arc<File>, PathBuf),
        named: PathBuf,
    ) -> Result<Seal> {
        let done = Arc::new(Done::default());
        let pending_path = pending.1.clone();
        let thread = {
            let (thread_dir, named, done) =
                (dir.to_path_buf(), named.clone(), SetOnDrop(done.clone()));
            thread::Builder::new()
                .name("wal-seal".into())
                .spawn(move || {
                    let _done = done;
                    seal(
                        &*fs,
                        &thread_dir,
                        (&sealed.0, &sealed.1),
                        (&pending.0, &pending.1),
                        &named,
                    )
                })
                .at(dir)?
        };
        Ok(Seal { thread, done, pending: pending_path, named })
    }

    /// Whether the seal is done, so that [`Seal::join`] returns at once
    /// (the thread has nothing left to do but exit).
    pub(crate) fn finished(&self) -> bool {
        self.done.is_set()
    }

    /// What waiters that do not own the seal wait on.
    pub(crate) fn done(&self) -> Arc<Done> {
        Arc::clone(&self.done)
    }

    /// Waits for the thread and returns how the seal went. A panic in it
    /// (which nothing in it should cause) is reported as an error.
    pub(crate) fn join(self) -> Result<()> {
        let pending = self.pending;
        self.thread.join().unwrap_or_else(|_| {
            Err(crate::Error::io(&pending, std::io::Error::other("the seal thread panicked")))
        })
    }
}

/// The seal itself, on the seal thread or at recovery: flushes `sealed`
/// (complete, its zeros cut off) and then `pending`, and names `pending`
/// as `named`. The fsyncs abort the process on failure (see [`fsync`]); a
/// failed rename leaves the pending segment pending, which recovery
/// handles like any other.
pub(crate) fn seal(
    fs: &dyn Fs,
    dir: &Path,
    (sealed, sealed_path): (&File, &Path),
    (pending, pending_path): (&File, &Path),
    named: &Path,
) -> Result<()> {
    // Its frames and its size (rotation has cut off any zeros).
    fsync::all(fs, sealed, sealed_path);
    // The pending segment's header (and its frames so far): a named
    // segment always has its header on disk.
    fsync::data(fs, pending, pending_path);
    fs.rename(pending_path, named).at(named)?;
    fsync::dir(fs, dir)
}
