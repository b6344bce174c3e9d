//! One segment file: its name, its header, appending to it, and scanning it.
//!
//! A segment is a header followed by frames (see [`crate::record`]). This
//! module creates segment files so that a crash can never leave a segment
//! with a partial header, appends frames to the active segment, and scans a
//! segment at recovery to find where its valid frames end. It decides
//! nothing about what damage means; [`crate::recovery`] makes that call
//! with the facts a [`Scan`] reports.
//!
//! The one `unsafe` block of the crate, the memory map, is here too.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::error::IoContext;
use crate::fs::Fs;
use crate::record::{self, Invalid};
use crate::{fsync, Error, Result, Seq};

/// Bytes in a segment header.
pub(crate) const HEADER_LEN: u64 = 24;
/// The first eight bytes of every segment file.
const MAGIC: [u8; 8] = *b"NATTRWAL";
/// The format version this crate writes and reads.
pub(crate) const VERSION: u32 = 1;
/// Segment file names with a first seq above this (or 0) are refused, so
/// that counting records can never overflow a `u64`.
const MAX_FIRST_SEQ: Seq = i64::MAX as Seq;
/// Digits in a file name: enough for any `u64`, zero-padded so that sorting
/// names as strings sorts segments by first seq.
const NAME_DIGITS: usize = 20;
const SUFFIX: &str = ".wal";
/// A segment being created; renamed to its real name once its header is on disk.
const TEMP_SUFFIX: &str = ".wal.tmp";
/// An active segment whose predecessor may not be flushed yet (see
/// [`Segment::create_pending`]); renamed to its real name once it is.
const PENDING_SUFFIX: &str = ".wal.pending";

/// A segment file that is not (or no longer) written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentRef {
    pub(crate) path: PathBuf,
    /// The seq of the segment's first record (or of the record it will get
    /// first, while it is empty).
    pub(crate) first_seq: Seq,
}

/// The active segment, open for appending.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) path: PathBuf,
    pub(crate) first_seq: Seq,
    /// Shared with the sync thread, which `fdatasync`s it without holding the
    /// log's lock, so that appends carry on while an fsync is in flight.
    /// Frames are written at `len` (positioned writes), never past it.
    pub(crate) file: Arc<File>,
    /// Where every change to the file goes.
    pub(crate) fs: Arc<dyn Fs>,
    /// Bytes of header and complete frames: where the next frame goes, and
    /// the size a failed write cuts the file back to.
    pub(crate) len: u64,
    /// Frames in the segment.
    pub(crate) records: u64,
    /// Bytes of the file (`>= len`): past `len` it holds zeros written
    /// ahead of the frames (see [`PREALLOCATE`]).
    reserved: u64,
    /// Whether to write zeros ahead of the frames: in the modes that
    /// `fdatasync` after appends; turned off for the segment if writing
    /// them fails (the frames are written all the same).
    preallocate: bool,
}

/// How far ahead of its frames the active segment is filled with zeros, in
/// the modes that sync appends. An `fdatasync` after an append that grew
/// the file must also write the inode (the new size); one after an append
/// into bytes that already exist writes only the data. On this project's
/// machine that is ≈ 90 µs instead of ≈ 200 µs per sync, and the log's
/// syncs are what every durable reply waits for. The zeros are real
/// writes (not `fallocate`, whose unwritten extents cost the same metadata
/// write on first use), one chunk at a time: the sync after each chunk
/// also writes the chunk and the new size (≈ 0.8 ms for 1 MiB).
/// Recovery reads a zero tail as the end of the log ([`scan`]); rotation
/// and a clean close cut it off.
pub(crate) const PREALLOCATE: u64 = 1 << 20;

/// Zeros to write from: a static block, so that filling allocates nothing.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

impl Segment {
    /// Creates an empty segment whose first record will be `first_seq`.
    ///
    /// The header is written to a temporary file, flushed, and renamed into
    /// place, and the directory is flushed: a segment file therefore either
    /// does not exist or has its complete header on disk.
    pub(crate) fn create(fs: &Arc<dyn Fs>, dir: &Path, first_seq: Seq) -> Result<Segment> {
        let temp = dir.join(format!("{first_seq:0NAME_DIGITS$}{TEMP_SUFFIX}"));
        let path = named_path(dir, first_seq);
        remove_if_present(&**fs, &temp)?;
        let file = fs.create_new(&temp).at(&temp)?;
        fs.write_at(&file, &temp, &encode_header(first_seq), 0).at(&temp)?;
        fsync::all(&**fs, &file, &temp);
        fs.rename(&temp, &path).at(&path)?;
        fsync::dir(&**fs, dir)?;
        Ok(Segment::empty(fs, path, first_seq, file))
    }

    /// Creates an empty segment whose first record will be `first_seq`,
    /// under its *pending* name (`<name>.wal.pending`), without any fsync.
    ///
    /// Used when the segment before it is sealed but not yet flushed: the
    /// caller renames it to [`named_path`] only after flushing both files.
    /// Until then recovery treats it as unconfirmed: it is kept only if the
    /// segment before it turns out whole (see `recovery::recover`).
    pub(crate) fn create_pending(fs: &Arc<dyn Fs>, dir: &Path, first_seq: Seq) -> Result<Segment> {
        let path = pending_path(dir, first_seq);
        remove_if_present(&**fs, &path)?;
        let file = fs.create_new(&path).at(&path)?;
        if let Err(err) = fs.write_at(&file, &path, &encode_header(first_seq), 0) {
            let _ = fs.remove_file(&path);
            return Err(Error::io(&path, err));
        }
        Ok(Segment::empty(fs, path, first_seq, file))
    }

    /// A segment just created: `file` holds its header and nothing else.
    fn empty(fs: &Arc<dyn Fs>, path: PathBuf, first_seq: Seq, file: File) -> Segment {
        Segment {
            path,
            first_seq,
            file: Arc::new(file),
            fs: Arc::clone(fs),
            len: HEADER_LEN,
            records: 0,
            reserved: HEADER_LEN,
            preallocate: false,
        }
    }

    /// Opens a scanned segment for appending after its last valid frame (the
    /// caller has cut off anything after it).
    ///
    /// The file is flushed first: if the previous process crashed but the
    /// machine did not, the frames recovery just read may exist only in the
    /// page cache, and they are about to be reported as durable.
    pub(crate) fn reopen(fs: &Arc<dyn Fs>, path: PathBuf, scan: &Scan) -> Result<Segment> {
        let file = fs.open_write(&path).at(&path)?;
        fsync::data(&**fs, &file, &path);
        Ok(Segment {
            path,
            first_seq: scan.first_seq,
            file: Arc::new(file),
            fs: Arc::clone(fs),
            len: scan.valid_len,
            records: scan.records,
            // A zero tail (`scan` ends the frames there) is kept as the
            // reservation it was.
            reserved: scan.file_len.max(scan.valid_len),
            preallocate: false,
        })
    }

    /// Whether to write zeros ahead of the frames ([`PREALLOCATE`]).
    pub(crate) fn set_preallocate(&mut self, on: bool) {
        self.preallocate = on;
    }

    /// Cuts the file back to its frames (the zeros written ahead are
    /// dropped), for a segment that is sealed or closed. The caller
    /// flushes the new size.
    pub(crate) fn trim(&mut self) -> Result<()> {
        if self.reserved > self.len {
            self.fs.set_len(&self.file, &self.path, self.len).at(&self.path)?;
            self.reserved = self.len;
        }
        Ok(())
    }

    /// Writes zeros from the end of the file to past `end`, a whole chunk
    /// at a time. A failure only stops preallocating in this segment.
    fn reserve(&mut self, end: u64) {
        let target = end.next_multiple_of(PREALLOCATE);
        let mut at = self.reserved;
        while at < target {
            let n = (target - at).min(ZEROS.len() as u64);
            if let Err(err) = self.fs.write_at(&self.file, &self.path, &ZEROS[..n as usize], at) {
                tracing::warn!(
                    "{}: writing zeros ahead of the log failed ({err}); \
                     appending without them",
                    self.path.display()
                );
                self.preallocate = false;
                break;
            }
            at += n;
        }
        self.reserved = at;
    }

    /// The seq the next appended record gets.
    pub(crate) fn next_seq(&self) -> Seq {
        self.first_seq + self.records
    }

    /// Writes one encoded frame at the end of the segment with a single
    /// `write(2)` (no fsync).
    ///
    /// If the write fails part-way, the partial frame is cut off again so
    /// that the next append does not land after garbage. If even that fails,
    /// the segment can no longer be appended to: [`Error::Poisoned`].
    pub(crate) fn append(&mut self, frame: &[u8]) -> Result<()> {
        self.append_frames(frame, 1)
    }

    /// Writes `count` encoded frames, back to back in `frames`, with a
    /// single `write(2)`, as [`Segment::append`] writes one: a failure
    /// part-way cuts all of them off again.
    pub(crate) fn append_frames(&mut self, frames: &[u8], count: u64) -> Result<()> {
        let end = self.len + frames.len() as u64;
        if self.preallocate && end > self.reserved {
            self.reserve(end);
        }
        if let Err(err) = self.fs.write_at(&self.file, &self.path, frames, self.len) {
            self.reserved = self.len;
            if let Err(cut) = self.fs.set_len(&self.file, &self.path, self.len) {
                tracing::error!(
                    "{}: write failed ({err}) and the partial frame could not be \
                     removed ({cut}); refusing further appends",
                    self.path.display()
                );
                return Err(Error::Poisoned);
            }
            return Err(Error::io(&self.path, err));
        }
        self.len = end;
        self.reserved = self.reserved.max(end);
        self.records += count;
        Ok(())
    }

    /// This segment, as a file that is no longer written to.
    pub(crate) fn to_ref(&self) -> SegmentRef {
        SegmentRef { path: self.path.clone(), first_seq: self.first_seq }
    }
}

/// What [`scan`] found in a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    pub(crate) first_seq: Seq,
    /// Valid frames, all with contiguous seqs starting at `first_seq`.
    pub(crate) records: u64,
    /// Offset just past the last valid frame.
    pub(crate) valid_len: u64,
    /// Size of the file.
    pub(crate) file_len: u64,
    /// The first invalid frame, if the valid frames do not reach the end of
    /// the file (or zeros to its end, which end the log).
    pub(crate) damage: Option<Damage>,
}

/// An invalid frame found by [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Where the invalid frame starts (equal to [`Scan::valid_len`]).
    pub(crate) offset: u64,
    /// What is wrong with it.
    pub(crate) invalid: Invalid,
    /// Whether a valid frame, with a seq that could follow, starts anywhere
    /// after it. If one does, the damage is not a torn tail: data written
    /// later survived, so something destroyed data in the middle.
    pub(crate) followed_by_valid_frame: bool,
}

/// Reads a whole segment, verifying the header and every frame.
///
/// Errors are returned for problems that no crash can cause: a bad header or
/// a valid frame with the wrong seq. An invalid frame is reported as
/// [`Scan::damage`] for the caller to judge.
pub(crate) fn scan(path: &Path, first_seq: Seq) -> Result<Scan> {
    let bytes = open_mapped(path, first_seq)?;
    let mut offset = HEADER_LEN as usize;
    let mut next_seq = first_seq;
    let damage = loop {
        let rest = &bytes[offset..];
        if rest.is_empty() {
            break None;
        }
        match record::decode(rest) {
            Ok(frame) if frame.seq == next_seq => {
                offset += frame.encoded_len();
                next_seq += 1;
            }
            Ok(frame) => {
                return Err(Error::OutOfSequence {
                    segment: path.to_path_buf(),
                    offset: offset as u64,
                    expected: next_seq,
                    found: frame.seq,
                });
            }
            // Zeros from here to the end of the file: the end of the log,
            // written ahead of the frames (`PREALLOCATE`) or allocated by
            // the file system and never written. Either way nothing was
            // appended here.
            Err(Invalid::Zeroed) if rest.iter().all(|&b| b == 0) => break None,
            Err(invalid) => {
                // Each frame takes at least a frame header, which bounds the
                // seqs a following frame could have.
                let after = &rest[1..];
                let max_seq = next_seq + (after.len() / record::HEADER_LEN) as u64;
                let followed_by_valid_frame = record::find(after, next_seq..=max_seq).is_some();
                break Some(Damage { offset: offset as u64, invalid, followed_by_valid_frame });
            }
        }
    };
    Ok(Scan {
        first_seq,
        records: next_seq - first_seq,
        valid_len: offset as u64,
        file_len: bytes.len() as u64,
        damage,
    })
}

/// Cuts a segment file down to `len` bytes and flushes the new size.
pub(crate) fn truncate(fs: &dyn Fs, path: &Path, len: u64) -> Result<()> {
    let file = fs.open_write(path).at(path)?;
    fs.set_len(&file, path, len).at(path)?;
    fsync::all(fs, &file, path);
    Ok(())
}

/// Opens a segment file read-only, maps it into memory and verifies that its
/// header is valid and names `first_seq`.
pub(crate) fn open_mapped(path: &Path, first_seq: Seq) -> Result<Mmap> {
    let file = File::open(path).at(path)?;
    if file.metadata().at(path)?.len() < HEADER_LEN {
        return Err(bad_header(path, "file is shorter than a segment header"));
    }
    let bytes = map(&file, path)?;
    check_header(&bytes, path, first_seq)?;
    Ok(bytes)
}

/// Whether a segment file's header reached the disk: `false` if the file
/// is shorter than a header or its header is all zeros (what a crash
/// leaves of a header written but not flushed); otherwise the header must
/// be valid and name `first_seq`, or this is an error like [`open_mapped`]'s.
pub(crate) fn has_header(path: &Path, first_seq: Seq) -> Result<bool> {
    let file = File::open(path).at(path)?;
    let mut header = [0; HEADER_LEN as usize];
    match file.read_exact_at(&mut header, 0) {
        Err(err) if err.kind() == ErrorKind::UnexpectedEof => return Ok(false),
        Err(err) => return Err(Error::io(path, err)),
        Ok(()) if header.iter().all(|&b| b == 0) => return Ok(false),
        Ok(()) => {}
    }
    check_header(&header, path, first_seq)?;
    Ok(true)
}

/// Maps a file into memory, read-only.
fn map(file: &File, path: &Path) -> Result<Mmap> {
    // SAFETY: a mapping is only sound while no one changes or shrinks the
    // bytes it covers. A log directory belongs to a single `Wal` (`Wal::open`
    // locks it; a process that ignores the lock is beyond help), and while it
    // is open segment files only
    // grow: frames are appended past the end of any existing mapping. The
    // two places that shrink a file do not overlap a mapping's live bytes:
    // recovery truncates a segment only after dropping the map it scanned,
    // and a failed append cuts off only its own partial frame, past every
    // frame a reader looks at.
    #[allow(unsafe_code)]
    let map = unsafe { Mmap::map(file) };
    map.at(path)
}

/// The segment files of a log directory, as [`list`] found them.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// The segments under their real names, sorted by first seq.
    pub(crate) named: Vec<SegmentRef>,
    /// The pending segments ([`Segment::create_pending`]), sorted by first
    /// seq: at most one, unless something other than this crate wrote the
    /// directory.
    pub(crate) pending: Vec<SegmentRef>,
}

/// The segments in `dir`. Removes leftover temporary files from a segment
/// creation that a crash interrupted; ignores files that are not segments.
pub(crate) fn list(fs: &dyn Fs, dir: &Path) -> Result<Listing> {
    list_with(dir, Some(fs))
}

/// `list`, leaving temporary files alone when `clean` is `None` (a check
/// of a directory another process may be writing).
pub(crate) fn list_with(dir: &Path, clean: Option<&dyn Fs>) -> Result<Listing> {
    let mut listing = Listing::default();
    for entry in fs::read_dir(dir).at(dir)? {
        let path = entry.at(dir)?.path();
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        if let Some(first_seq) = parse_file_name(name) {
            if !(1..=MAX_FIRST_SEQ).contains(&first_seq) {
                return Err(bad_header(&path, "first seq in the file name is out of range"));
            }
            listing.named.push(SegmentRef { path, first_seq });
        } else if let Some(first_seq) = name.strip_suffix(".pending").and_then(parse_file_name) {
            if !(1..=MAX_FIRST_SEQ).contains(&first_seq) {
                return Err(bad_header(&path, "first seq in the file name is out of range"));
            }
            listing.pending.push(SegmentRef { path, first_seq });
        } else if let Some(fs) = clean.filter(|_| is_temp_name(name)) {
            remove_if_present(fs, &path)?;
        }
    }
    listing.named.sort_by_key(|segment| segment.first_seq);
    listing.pending.sort_by_key(|segment| segment.first_seq);
    Ok(listing)
}

/// Where the segment whose first seq is `first_seq` lives once it is
/// named.
pub(crate) fn named_path(dir: &Path, first_seq: Seq) -> PathBuf {
    dir.join(file_name(first_seq))
}

/// Where the segment whose first seq is `first_seq` lives while it is
/// pending.
fn pending_path(dir: &Path, first_seq: Seq) -> PathBuf {
    dir.join(format!("{first_seq:0NAME_DIGITS$}{PENDING_SUFFIX}"))
}

/// The real name of a pending segment's path; `None` for any other path.
pub(crate) fn named_after_pending(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let first_seq = name.strip_suffix(".pending").and_then(parse_file_name)?;
    Some(named_path(path.parent()?, first_seq))
}

/// The file name of the segment whose first seq is `first_seq`.
pub(crate) fn file_name(first_seq: Seq) -> String {
    format!("{first_seq:0NAME_DIGITS$}{SUFFIX}")
}

/// The first seq encoded in a segment file name, or `None` if `name` is not
/// one.
fn parse_file_name(name: &str) -> Option<Seq> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn encode_header(first_seq: Seq) -> [u8; HEADER_LEN as usize] {
    let mut header = [0; HEADER_LEN as usize];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[12..20].copy_from_slice(&first_seq.to_le_bytes());
    let crc = crc32fast::hash(&header[0..20]);
    header[20..24].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Verifies the header at the start of `bytes` and that it names
/// `first_seq` (which [`list`] has checked is in range). The version is checked before the checksum so that a file
/// from a newer format is reported as such even if its header grew.
fn check_header(bytes: &[u8], path: &Path, first_seq: Seq) -> Result<()> {
    let Some(header) = bytes.get(..HEADER_LEN as usize) else {
        return Err(bad_header(path, "file is shorter than a segment header"));
    };
    if header[0..8] != MAGIC {
        return Err(bad_header(path, "not a segment file (bad magic)"));
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != VERSION {
        return Err(Error::UnsupportedVersion { segment: path.to_path_buf(), version });
    }
    let mut crc = [0; 4];
    crc.copy_from_slice(&header[20..24]);
    if crc32fast::hash(&header[0..20]) != u32::from_le_bytes(crc) {
        return Err(bad_header(path, "header checksum mismatch"));
    }
    let mut seq = [0; 8];
    seq.copy_from_slice(&header[12..20]);
    if Seq::from_le_bytes(seq) != first_seq {
        return Err(bad_header(path, "first seq does not match the file name"));
    }
    Ok(())
}

fn bad_header(path: &Path, reason: &'static str) -> Error {
    Error::BadHeader { segment: path.to_path_buf(), reason }
}

/// Whether `name` is that of a segment being created.
fn is_temp_name(name: &str) -> bool {
    name.strip_suffix(".tmp").and_then(parse_file_name).is_some()
}

fn remove_if_present(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.remove_file(path) {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(Error::io(path, err)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_sort_like_their_seqs() {
        let seqs = [1, 9, 10, 99, 100, 12_345, u64::MAX];
        let mut names: Vec<String> = seqs.iter().map(|&s| file_name(s)).collect();
        names.sort();
        let parsed: Vec<Seq> = names.iter().map(|n| parse_file_name(n).unwrap()).collect();
        assert_eq!(parsed, seqs);
        assert_eq!(file_name(1), "00000000000000000001.wal");
    }

    #[test]
    fn other_names_are_not_segments() {
        for name in [
            "1.wal",
            "0000000000000000001.wal",
            "000000000000000000001.wal",
            "0000000000000000000x.wal",
            "00000000000000000001.wal.tmp",
            "00000000000000000001.log",
            "99999999999999999999.wal",
        ] {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let path = Path::new("x.wal");
        let header = encode_header(77);
        assert!(check_header(&header, path, 77).is_ok());
        assert!(matches!(
            check_header(&header, path, 78),
            Err(Error::BadHeader { reason: "first seq does not match the file name", .. })
        ));
        assert!(matches!(check_header(&header[..23], path, 77), Err(Error::BadHeader { .. })));
        for i in 0..header.len() {
            let mut damaged = header;
            damaged[i] ^= 0x10;
            assert!(check_header(&damaged, path, 77).is_err(), "byte {i}");
        }
        let mut newer = header;
        newer[8] = 2;
        assert!(matches!(
            check_header(&newer, path, 77),
            Err(Error::UnsupportedVersion { version: 2, .. })
        ));
    }
}
