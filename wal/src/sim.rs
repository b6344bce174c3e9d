//! A simulated file system for tests: real files, plus a model of what a
//! disk has made durable, faults on demand, and power cuts.
//!
//! [`SimFs`] performs every call on the real files (that is the "page
//! cache": what a process reads back) and keeps, per file, the contents
//! as of its last `fdatasync`/`fsync`, and per directory, its entries as
//! of its last directory flush. [`SimFs::cut_power_at`] picks a call from
//! which on nothing more becomes durable; once everything using the
//! directories has been dropped, [`SimFs::restore_durable`] rewrites them
//! as a disk would be found after that power cut: files hold what their
//! last flush saw, a file created or renamed without a flush of its
//! directory is gone (or back under its old name), a removal not flushed
//! is undone.
//!
//! The model is the strict reading of POSIX that careful storage code
//! assumes (ext4 with `data=ordered` keeps more): only an explicit flush
//! makes anything durable, data and names separately. Directories
//! themselves (`create_dir_all`) count as durable at once, and calls on
//! files outside the directories the simulation has seen are unaffected.
//!
//! Files are told apart by inode, so a flush through a handle whose path
//! was renamed since still finds its file. Linux and other Unixes only.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::fs::{Fs, RealFs};

/// A kind of call, for [`Fault`]s and for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `create_new`, `create` or `open_write`.
    Open,
    /// `write_at`.
    Write,
    /// `set_len`.
    SetLen,
    /// `sync_data` or `sync_all`.
    Sync,
    /// `sync_dir`.
    SyncDir,
    /// `rename`.
    Rename,
    /// `remove_file`.
    Remove,
}

/// What a faulty call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Fails with `EIO`, changing nothing.
    Eio,
    /// Fails with `ENOSPC`, changing nothing.
    NoSpace,
    /// A write: the first `n` bytes are written, then `ENOSPC` (what a
    /// disk that fills during a `pwrite` loop returns).
    ShortWrite(usize),
}

/// A fault to inject: the next `times` calls of kind `op` on a path
/// containing `path_contains` fail as `kind` says.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The calls it applies to.
    pub op: Op,
    /// A substring of the path (of `from` for a rename); `""` matches all.
    pub path_contains: String,
    /// How the call fails.
    pub kind: FaultKind,
    /// How many calls fail before the fault is spent.
    pub times: u32,
}

/// A simulated file system; see the module documentation.
#[derive(Debug, Default)]
pub struct SimFs {
    inner: Mutex<Sim>,
}

#[derive(Debug, Default)]
struct Sim {
    /// Counted calls so far (every call but `create_dir_all`).
    calls: u64,
    /// The call from which on nothing becomes durable (1-based).
    cut_at: Option<u64>,
    /// Whether the write the power cut falls on lands half on the disk.
    torn: bool,
    faults: Vec<Fault>,
    /// Writes that grow a file fail with `ENOSPC` while set.
    full: bool,
    /// What `free_bytes` reports (unlimited if `None`; 0 while `full`).
    free: Option<u64>,
    next_id: u64,
    /// Live inode → file id (an id is never reused, an inode may be).
    ids: HashMap<u64, u64>,
    /// File id → contents as the process sees them.
    live: HashMap<u64, Vec<u8>>,
    /// File id → where its last byte that may not be zero ends: past it,
    /// `live` holds only zeros (the log writes zeros ahead of its frames,
    /// a MiB at a time, and a flush then copies only what is before them).
    data_end: HashMap<u64, usize>,
    /// File id → contents as of the file's last flush: the bytes up to
    /// `data_end`, and the size (zeros after the bytes).
    durable: HashMap<u64, (Vec<u8>, u64)>,
    /// Directory → its entries (name → file id) as of its last flush.
    dirs: HashMap<PathBuf, BTreeMap<OsString, u64>>,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

const EIO: i32 = 5;
const ENOSPC: i32 = 28;

impl SimFs {
    /// A simulated file system with no faults and the power on.
    pub fn new() -> SimFs {
        SimFs::default()
    }

    fn sim(&self) -> MutexGuard<'_, Sim> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cuts the power at the `call`th counted call from the start (1 is the
    /// first): that call and every later one still happen, but nothing
    /// they do becomes durable. With `torn`, if that call is a write, its
    /// first half reaches the disk (a write torn by the cut).
    pub fn cut_power_at(&self, call: u64, torn: bool) {
        let mut sim = self.sim();
        sim.cut_at = Some(call);
        sim.torn = torn;
    }

    /// Cuts the power now: nothing from the next call on becomes durable.
    pub fn cut_power_now(&self) {
        let mut sim = self.sim();
        sim.cut_at = Some(sim.calls + 1);
        sim.torn = false;
    }

    /// Whether the power is still on: every call so far counted.
    pub fn powered(&self) -> bool {
        let sim = self.sim();
        sim.cut_at.is_none_or(|cut| sim.calls < cut)
    }

    /// Calls counted so far.
    pub fn calls(&self) -> u64 {
        self.sim().calls
    }

    /// Adds a fault.
    pub fn inject(&self, fault: Fault) {
        self.sim().faults.push(fault);
    }

    /// Removes every fault not yet spent.
    pub fn clear_faults(&self) {
        self.sim().faults.clear();
    }

    /// While `full`, every write or size change that would grow a file
    /// fails with `ENOSPC` (writes within a file's size succeed: its
    /// blocks are allocated), as does creating a file.
    pub fn set_full(&self, full: bool) {
        self.sim().full = full;
    }

    /// Sets what `free_bytes` reports: `None` for plenty. (The space a
    /// write takes is not counted: a test says when the disk is full.)
    pub fn set_free(&self, free: Option<u64>) {
        self.sim().free = free;
    }

    /// Rewrites every directory the simulation has seen as the disk holds
    /// it: each file with the contents of its last flush, only the entries
    /// of each directory's last flush. Call it once nothing has the files
    /// open, to look at the disk after a power cut.
    pub fn restore_durable(&self) -> io::Result<()> {
        let mut sim = self.sim();
        let dirs = std::mem::take(&mut sim.dirs);
        for (dir, entries) in &dirs {
            fs::create_dir_all(dir)?;
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    fs::remove_file(entry.path())?;
                }
            }
            for (name, id) in entries {
                let (bytes, len) = sim.durable.get(id).map_or((&[][..], 0), |(b, l)| (b, *l));
                let path = dir.join(name);
                fs::write(&path, bytes)?;
                fs::OpenOptions::new().write(true).open(&path)?.set_len(len)?;
            }
        }
        // A fresh start: what is on disk now is all durable.
        *sim = Sim::default();
        Ok(())
    }
}

impl Sim {
    /// Counts a call; whether it still has the power; its fault, if one
    /// matches.
    fn call(&mut self, op: Op, path: &Path) -> (bool, Option<FaultKind>) {
        self.calls += 1;
        let powered = self.cut_at.is_none_or(|cut| self.calls < cut);
        let path = path.to_string_lossy();
        let fault = self.faults.iter_mut().find(|fault| {
            fault.times > 0 && fault.op == op && path.contains(fault.path_contains.as_str())
        });
        let kind = fault.map(|fault| {
            fault.times -= 1;
            fault.kind
        });
        self.faults.retain(|fault| fault.times > 0);
        (powered, kind)
    }

    /// Whether this call is the one the power cut falls on, torn.
    fn torn_now(&self) -> bool {
        self.torn && self.cut_at == Some(self.calls)
    }

    /// Starts following `dir` if it is new to the simulation: what it
    /// holds now counts as durable.
    fn track_dir(&mut self, dir: &Path) -> io::Result<()> {
        if self.dirs.contains_key(dir) {
            return Ok(());
        }
        let mut entries = BTreeMap::new();
        if dir.is_dir() {
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                if !entry.file_type()?.is_file() {
                    continue;
                }
                let id = self.track_existing(&entry.path(), entry.metadata()?.ino())?;
                entries.insert(entry.file_name(), id);
            }
        }
        self.dirs.insert(dir.to_path_buf(), entries);
        Ok(())
    }

    /// The id of a file that existed before the simulation saw it: its
    /// contents count as durable.
    fn track_existing(&mut self, path: &Path, ino: u64) -> io::Result<u64> {
        if let Some(&id) = self.ids.get(&ino) {
            return Ok(id);
        }
        let bytes = fs::read(path)?;
        let id = self.new_id(ino);
        self.data_end.insert(id, bytes.len());
        self.durable.insert(id, (bytes.clone(), bytes.len() as u64));
        self.live.insert(id, bytes);
        Ok(id)
    }

    fn new_id(&mut self, ino: u64) -> u64 {
        self.next_id += 1;
        self.ids.insert(ino, self.next_id);
        self.next_id
    }

    /// The id of an open file, following its directory if need be.
    fn id_of(&mut self, file: &File, path: &Path) -> io::Result<u64> {
        let ino = file.metadata()?.ino();
        if let Some(&id) = self.ids.get(&ino) {
            return Ok(id);
        }
        self.track_dir(parent(path))?;
        match self.ids.get(&ino) {
            Some(&id) => Ok(id),
            // Created outside the simulation after its directory was
            // seen: only what is in it now is known.
            None => self.track_existing(path, ino),
        }
    }

    fn live_mut(&mut self, id: u64) -> &mut Vec<u8> {
        self.live.entry(id).or_default()
    }

    /// Records a flush of file `id`.
    fn flush(&mut self, id: u64) {
        let live = self.live.entry(id).or_default();
        let end = self.data_end.get(&id).copied().unwrap_or(0).min(live.len());
        let durable = (live[..end].to_vec(), live.len() as u64);
        self.durable.insert(id, durable);
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn fail(kind: FaultKind) -> io::Error {
    match kind {
        FaultKind::Eio => errno(EIO),
        FaultKind::NoSpace | FaultKind::ShortWrite(_) => errno(ENOSPC),
    }
}

impl Fs for SimFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Open, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        if sim.full {
            return Err(errno(ENOSPC));
        }
        sim.track_dir(parent(path))?;
        let file = RealFs.create_new(path)?;
        let id = sim.new_id(file.metadata()?.ino());
        sim.live.insert(id, Vec::new());
        sim.data_end.insert(id, 0);
        Ok(file)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Open, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        if sim.full && !path.exists() {
            return Err(errno(ENOSPC));
        }
        sim.track_dir(parent(path))?;
        let file = RealFs.create(path)?;
        let ino = file.metadata()?.ino();
        let id = match sim.ids.get(&ino) {
            Some(&id) => id,
            None => sim.new_id(ino),
        };
        sim.live.insert(id, Vec::new());
        sim.data_end.insert(id, 0);
        Ok(file)
    }

    fn open_write(&self, path: &Path) -> io::Result<File> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Open, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        let file = RealFs.open_write(path)?;
        sim.id_of(&file, path)?;
        Ok(file)
    }

    fn write_at(&self, file: &File, path: &Path, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Write, path);
        let id = sim.id_of(file, path)?;
        let size = sim.live_mut(id).len() as u64;
        let (buf, result) = match fault {
            Some(FaultKind::ShortWrite(n)) => (&buf[..n.min(buf.len())], Err(errno(ENOSPC))),
            Some(kind) => return Err(fail(kind)),
            None if sim.full && offset + buf.len() as u64 > size => {
                // What fits in the blocks the file has, then no more.
                let fits = size.saturating_sub(offset).min(buf.len() as u64) as usize;
                (&buf[..fits], Err(errno(ENOSPC)))
            }
            None => (buf, Ok(())),
        };
        file.write_all_at(buf, offset)?;
        let start = offset as usize;
        let end = start + buf.len();
        let live = sim.live_mut(id);
        if live.len() < end {
            live.resize(end, 0);
        }
        live[start..end].copy_from_slice(buf);
        if buf.iter().any(|&b| b != 0) {
            let data_end = sim.data_end.entry(id).or_default();
            *data_end = (*data_end).max(end);
        }
        if sim.torn_now() {
            let half = &buf[..buf.len() / 2];
            let (bytes, len) = sim.durable.entry(id).or_default();
            if bytes.len() < start + half.len() {
                bytes.resize(start + half.len(), 0);
            }
            bytes[start..start + half.len()].copy_from_slice(half);
            *len = (*len).max(bytes.len() as u64);
        }
        result
    }

    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::SetLen, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        let id = sim.id_of(file, path)?;
        if sim.full && len > sim.live_mut(id).len() as u64 {
            return Err(errno(ENOSPC));
        }
        file.set_len(len)?;
        sim.live_mut(id).resize(len as usize, 0);
        if let Some(data_end) = sim.data_end.get_mut(&id) {
            *data_end = (*data_end).min(len as usize);
        }
        Ok(())
    }

    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        self.sync_all(file, path)
    }

    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        let mut sim = self.sim();
        let (powered, fault) = sim.call(Op::Sync, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        let id = sim.id_of(file, path)?;
        if powered {
            sim.flush(id);
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut sim = self.sim();
        let (powered, fault) = sim.call(Op::SyncDir, dir);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        sim.track_dir(dir)?;
        if powered {
            let mut entries = BTreeMap::new();
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                if !entry.file_type()?.is_file() {
                    continue;
                }
                let ino = entry.metadata()?.ino();
                let id = match sim.ids.get(&ino) {
                    Some(&id) => id,
                    None => sim.track_existing(&entry.path(), ino)?,
                };
                entries.insert(entry.file_name(), id);
            }
            sim.dirs.insert(dir.to_path_buf(), entries);
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Rename, from);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        sim.track_dir(parent(from))?;
        sim.track_dir(parent(to))?;
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut sim = self.sim();
        let (_, fault) = sim.call(Op::Remove, path);
        if let Some(kind) = fault {
            return Err(fail(kind));
        }
        sim.track_dir(parent(path))?;
        fs::remove_file(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn free_bytes(&self, _: &Path) -> io::Result<u64> {
        let sim = self.sim();
        Ok(if sim.full { 0 } else { sim.free.unwrap_or(u64::MAX) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Vec<u8> {
        fs::read(path).unwrap()
    }

    #[test]
    fn only_flushed_data_and_names_survive_a_power_cut() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("old"), b"before").unwrap();
        let sim = SimFs::new();
        // Flushed data and name: kept.
        let kept = sim.create_new(&d.join("kept")).unwrap();
        sim.write_at(&kept, &d.join("kept"), b"hello", 0).unwrap();
        sim.sync_data(&kept, &d.join("kept")).unwrap();
        // Flushed data, name never flushed: lost.
        let unnamed = sim.create_new(&d.join("unnamed.tmp")).unwrap();
        sim.sync_dir(d).unwrap();
        sim.write_at(&kept, &d.join("kept"), b" world", 5).unwrap();
        sim.write_at(&unnamed, &d.join("unnamed.tmp"), b"data", 0).unwrap();
        sim.sync_all(&unnamed, &d.join("unnamed.tmp")).unwrap();
        sim.rename(&d.join("unnamed.tmp"), &d.join("renamed")).unwrap();
        // A removal not flushed is undone.
        sim.remove_file(&d.join("old")).unwrap();
        assert_eq!(read(&d.join("kept")), b"hello world");
        sim.restore_durable().unwrap();
        assert_eq!(read(&d.join("kept")), b"hello", "the unflushed write is gone");
        assert_eq!(read(&d.join("unnamed.tmp")), b"data", "the rename was not flushed");
        assert!(!d.join("renamed").exists());
        assert_eq!(read(&d.join("old")), b"before");
    }

    #[test]
    fn a_cut_freezes_the_disk_and_a_torn_write_lands_half() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let sim = SimFs::new();
        let file = sim.create_new(&path).unwrap(); // call 1
        sim.sync_dir(dir.path()).unwrap(); // 2
        sim.write_at(&file, &path, b"aaaa", 0).unwrap(); // 3
        sim.sync_data(&file, &path).unwrap(); // 4
        sim.cut_power_at(5, true);
        assert!(sim.powered());
        sim.write_at(&file, &path, b"bbbb", 4).unwrap(); // 5: torn
        assert!(!sim.powered());
        sim.sync_data(&file, &path).unwrap(); // after the cut: nothing
        assert_eq!(read(&path), b"aaaabbbb", "the process saw its writes");
        sim.restore_durable().unwrap();
        assert_eq!(read(&path), b"aaaabb");
    }

    #[test]
    fn faults_fail_the_calls_they_name_then_are_spent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let sim = SimFs::new();
        let file = sim.create_new(&path).unwrap();
        let fault = |op, kind| Fault { op, path_contains: "f".into(), kind, times: 1 };
        sim.inject(fault(Op::Write, FaultKind::ShortWrite(2)));
        let err = sim.write_at(&file, &path, b"abcd", 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(ENOSPC));
        assert_eq!(read(&path), b"ab", "a short write leaves its prefix");
        sim.write_at(&file, &path, b"abcd", 0).unwrap();
        sim.inject(fault(Op::Sync, FaultKind::Eio));
        assert_eq!(sim.sync_data(&file, &path).unwrap_err().raw_os_error(), Some(EIO));
        sim.inject(Fault {
            op: Op::Rename,
            path_contains: String::new(),
            kind: FaultKind::Eio,
            times: 1,
        });
        assert!(sim.rename(&path, &dir.path().join("g")).is_err());
        assert!(path.exists());
        sim.set_full(true);
        sim.write_at(&file, &path, b"xy", 1).unwrap();
        let err = sim.write_at(&file, &path, b"123", 3).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(ENOSPC));
        assert_eq!(read(&path), b"axy1", "what fitted in the file's blocks was written");
        sim.set_full(false);
        sim.write_at(&file, &path, b"123", 3).unwrap();
        assert_eq!(read(&path), b"axy123");
    }
}
