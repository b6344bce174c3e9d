//! Crash recovery, corruption detection, segment management and group commit,
//! exercised through the public API against real files.
//!
//! Crashes are simulated by editing the files a closed log left behind:
//! cutting them short, flipping bytes, appending zeros. The layout facts the
//! tests rely on (a 24-byte segment header, a 16-byte frame header) are the
//! ones the crate documentation specifies.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread;
use std::time::Duration;

use wal::{Error, Options, Recovery, Seq, SyncMode, TornTail, Wal};

const SEGMENT_HEADER: u64 = 24;
const FRAME_HEADER: u64 = 16;

type Records = Vec<(Seq, Vec<u8>)>;

/// Options for tests that do not need fsyncs to be real.
fn fast() -> Options {
    Options { sync: SyncMode::Never, ..Options::default() }
}

fn with_segment_bytes(segment_bytes: u64) -> Options {
    Options { segment_bytes, ..fast() }
}

/// A deterministic payload of `len` bytes that differs for every `seq`.
fn payload(seq: Seq, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq as usize * 31 + i * 7) as u8).collect()
}

/// Appends `sizes.len()` records and returns what was appended.
fn append_all(log: &Wal, sizes: &[usize]) -> Records {
    sizes
        .iter()
        .map(|&len| {
            let data = payload(log.last_seq() + 1, len);
            let seq = log.append(&data).unwrap();
            (seq, data)
        })
        .collect()
}

fn replay(log: &Wal, from: Seq) -> Records {
    log.replay_from(from).unwrap().collect::<Result<_, _>>().unwrap()
}

/// The segment files in `dir`, sorted by name (and so by first seq).
fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wal"))
        .collect();
    files.sort();
    files
}

/// The pending segment files in `dir` (`<name>.wal.pending`), sorted.
fn pending_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_str().unwrap().ends_with(".wal.pending"))
        .collect();
    files.sort();
    files
}

fn first_seq_of(segment: &Path) -> Seq {
    segment.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

/// Copies every file of `from` into a fresh temporary directory.
fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, to.path().join(path.file_name().unwrap())).unwrap();
    }
    to
}

fn flip_byte(path: &Path, offset: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset as usize] ^= 0x5a;
    fs::write(path, bytes).unwrap();
}

/// A closed log with `sizes.len()` records in one segment.
fn single_segment_log(sizes: &[usize]) -> (tempfile::TempDir, Records) {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), fast()).unwrap();
    let records = append_all(&log, sizes);
    log.close().unwrap();
    (dir, records)
}

/// Where each frame ends in a single-segment log of `records`.
fn frame_ends(records: &Records) -> Vec<u64> {
    records
        .iter()
        .scan(SEGMENT_HEADER, |end, (_, data)| {
            *end += FRAME_HEADER + data.len() as u64;
            Some(*end)
        })
        .collect()
}

#[test]
fn every_cut_keeps_exactly_the_complete_frames() {
    let sizes = [0, 1, 5, 17, 40, 3, 64, 9];
    let (dir, records) = single_segment_log(&sizes);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let bytes = fs::read(segment).unwrap();
    let ends = frame_ends(&records);
    assert_eq!(*ends.last().unwrap(), bytes.len() as u64);

    for cut in 0..=bytes.len() as u64 {
        let copy = tempfile::tempdir().unwrap();
        let path = copy.path().join(segment.file_name().unwrap());
        fs::write(&path, &bytes[..cut as usize]).unwrap();

        let (log, recovery) = Wal::open(copy.path(), fast())
            .unwrap_or_else(|err| panic!("cut at {cut}: open failed: {err}"));

        let complete = ends.iter().filter(|&&end| end <= cut).count();
        let boundary = if cut < SEGMENT_HEADER {
            0
        } else {
            ends.iter().copied().filter(|&end| end <= cut).max().unwrap_or(SEGMENT_HEADER)
        };
        assert_eq!(replay(&log, 1), records[..complete], "cut at {cut}");
        assert_eq!(log.last_seq(), complete as Seq, "cut at {cut}");
        assert_eq!(log.durable_seq(), complete as Seq, "cut at {cut}");
        // Only zeros after the last complete frame (a cut inside a zero
        // length field) end the log like the zeros appends write ahead:
        // kept, not reported.
        let zero_tail =
            cut >= SEGMENT_HEADER && bytes[boundary as usize..cut as usize].iter().all(|&b| b == 0);
        let expected = (!zero_tail && (cut != boundary || cut < SEGMENT_HEADER)).then(|| {
            TornTail { segment: path.clone(), offset: boundary, discarded_bytes: cut - boundary }
        });
        assert_eq!(recovery, Recovery { truncated: expected, discarded: None }, "cut at {cut}");
        let len = if zero_tail { cut } else { boundary.max(SEGMENT_HEADER) };
        assert_eq!(fs::metadata(&path).unwrap().len(), len, "cut at {cut}");
    }
}

#[test]
fn appends_continue_after_a_repair_and_survive_another_reopen() {
    let (dir, mut records) = single_segment_log(&[10, 20, 30, 40, 50]);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let ends = frame_ends(&records);
    let file = fs::OpenOptions::new().write(true).open(segment).unwrap();
    file.set_len(ends[3] + 7).unwrap(); // 7 bytes into the fifth frame
    drop(file);

    let (log, recovery) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!(
        recovery.truncated,
        Some(TornTail { segment: segment.clone(), offset: ends[3], discarded_bytes: 7 })
    );
    records.truncate(4);
    assert_eq!(log.last_seq(), 4);
    records.extend(append_all(&log, &[5, 6, 7]));
    assert_eq!(records.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7]);
    drop(log);

    let (log, recovery) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!(replay(&log, 0), records);
}

#[test]
fn a_zero_filled_tail_is_the_end_of_the_log() {
    let (dir, records) = single_segment_log(&[3, 30, 300]);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let len = fs::metadata(segment).unwrap().len();
    fs::OpenOptions::new().write(true).open(segment).unwrap().set_len(len + 4096).unwrap();

    let (log, recovery) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!(recovery.truncated, None, "zeros after the last frame are not damage");
    assert_eq!(replay(&log, 1), records);
    let mut records = records;
    records.extend(append_all(&log, &[4]));
    assert_eq!(records[3].0, 4);
    log.close().unwrap();
    let (log, recovery) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!(replay(&log, 1), records, "the next frame went right after the last one");
}

/// With a sync thread, appends write zeros ahead of their frames (so the
/// log's syncs need not write the file's size); a crash leaves them, and
/// recovery reads them as the end of the log; rotation and a clean close
/// cut them off.
#[test]
fn zeros_written_ahead_end_the_log_and_are_cut_off_when_sealed_or_closed() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { segment_bytes: 8 << 20, sync: SyncMode::Always, ..Options::default() };
    let (log, _) = Wal::open(dir.path(), opts.clone()).unwrap();
    let mut records = append_all(&log, &[100; 50]);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let frames_end = *frame_ends(&records).last().unwrap();
    let reserved = fs::metadata(segment).unwrap().len();
    assert!(reserved > frames_end, "zeros ahead: {reserved} bytes for {frames_end} of frames");
    assert!(fs::read(segment).unwrap()[frames_end as usize..].iter().all(|&b| b == 0));
    drop(log); // a crash of the process: no close

    let (log, recovery) = Wal::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!(replay(&log, 1), records);
    records.extend(append_all(&log, &[7, 8]));
    assert_eq!(fs::metadata(segment).unwrap().len(), reserved, "appended into the zeros");
    log.close().unwrap();
    let frames_end = *frame_ends(&records).last().unwrap();
    assert_eq!(fs::metadata(segment).unwrap().len(), frames_end, "a clean close cuts them off");

    // Sealed segments end with their last frame.
    let small = Options { segment_bytes: 4096, ..opts };
    let (log, _) = Wal::open(dir.path(), small.clone()).unwrap();
    records.extend(append_all(&log, &[1000; 12]));
    drop(log);
    let files = segment_files(dir.path());
    assert!(files.len() > 3, "rotated: {files:?}");
    let (log, recovery) = Wal::open(dir.path(), small).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!(replay(&log, 1), records);
    // (The first segment was written with the larger segment size.)
    for sealed in &files[1..files.len() - 1] {
        let len = fs::metadata(sealed).unwrap().len();
        assert!(len <= 4096, "{sealed:?} kept the zeros written ahead: {len} bytes");
    }
}

#[test]
fn a_partial_frame_followed_by_zeros_is_cut_off() {
    let (dir, records) = single_segment_log(&[8, 8, 8]);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let ends = frame_ends(&records);
    let mut bytes = fs::read(segment).unwrap();
    bytes.truncate(ends[1] as usize + 10);
    bytes.resize(bytes.len() + 100, 0);
    fs::write(segment, &bytes).unwrap();

    let (log, recovery) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!(
        recovery.truncated,
        Some(TornTail { segment: segment.clone(), offset: ends[1], discarded_bytes: 110 })
    );
    assert_eq!(replay(&log, 1), records[..2]);
}

/// A closed log of 30 records of 20 bytes: 36-byte frames, four to a
/// 200-byte segment, so eight segments, the last holding two records.
fn multi_segment_log() -> (tempfile::TempDir, Records, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), with_segment_bytes(200)).unwrap();
    let records = append_all(&log, &[20; 30]);
    log.close().unwrap();
    let segments = segment_files(dir.path());
    assert_eq!(segments.len(), 8);
    (dir, records, segments)
}

const FRAME: u64 = FRAME_HEADER + 20;

#[test]
fn damage_in_an_earlier_segment_is_corruption() {
    let (dir, _, segments) = multi_segment_log();
    let frame_offset = SEGMENT_HEADER + 2 * FRAME;
    for byte in 0..FRAME {
        let copy = copy_dir(dir.path());
        let segment = copy.path().join(segments[1].file_name().unwrap());
        flip_byte(&segment, frame_offset + byte);
        match Wal::open(copy.path(), fast()) {
            Err(Error::Corrupt { segment: at, offset }) => {
                assert_eq!((at, offset), (segment, frame_offset), "byte {byte}");
            }
            other => panic!("byte {byte}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn damage_followed_by_a_valid_frame_in_the_last_segment_is_corruption() {
    let (dir, _, segments) = multi_segment_log();
    let last = segments.last().unwrap();
    for byte in 0..FRAME {
        let copy = copy_dir(dir.path());
        let segment = copy.path().join(last.file_name().unwrap());
        flip_byte(&segment, SEGMENT_HEADER + byte);
        match Wal::open(copy.path(), fast()) {
            Err(Error::Corrupt { segment: at, offset }) => {
                assert_eq!((at, offset), (segment, SEGMENT_HEADER), "byte {byte}");
            }
            other => panic!("byte {byte}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn damage_in_the_last_frame_drops_only_that_frame() {
    let (dir, records, segments) = multi_segment_log();
    let last = segments.last().unwrap();
    let frame_offset = SEGMENT_HEADER + FRAME;
    for byte in 0..FRAME {
        let copy = copy_dir(dir.path());
        let segment = copy.path().join(last.file_name().unwrap());
        flip_byte(&segment, frame_offset + byte);
        let (log, recovery) = Wal::open(copy.path(), fast())
            .unwrap_or_else(|err| panic!("byte {byte}: open failed: {err}"));
        assert_eq!(
            recovery.truncated,
            Some(TornTail { segment, offset: frame_offset, discarded_bytes: FRAME }),
            "byte {byte}"
        );
        assert_eq!(replay(&log, 1), records[..29], "byte {byte}");
    }
}

/// Appends one record to a recovered `log`, which must get seq `next`,
/// closes it, and checks that it reopens with nothing to repair.
fn goes_on_after_reopen(log: Wal, dir: &Path, opts: Options, next: Seq, case: &str) {
    assert_eq!(log.append(b"after").unwrap(), next, "{case}");
    log.close().unwrap();
    let (log, recovery) = Wal::open(dir, opts).unwrap();
    assert_eq!(recovery, Recovery::default(), "{case}");
    assert_eq!(log.last_seq(), next, "{case}");
}

/// A copy of `multi_segment_log` as a crash could leave it while the
/// seventh segment's seal was in flight (`Never` and `Interval` modes): the
/// last segment still under its pending name. Returns the copy, the last
/// segment's real path and its pending path.
fn with_last_pending(dir: &Path, segments: &[PathBuf]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let copy = copy_dir(dir);
    let last = copy.path().join(segments.last().unwrap().file_name().unwrap());
    let pending = PathBuf::from(format!("{}.pending", last.display()));
    fs::rename(&last, &pending).unwrap();
    (copy, last, pending)
}

#[test]
fn a_pending_segment_after_a_whole_one_is_named_and_kept() {
    let (dir, records, segments) = multi_segment_log();
    // Recovery does not depend on the mode the log is opened in.
    for sync in [SyncMode::Never, SyncMode::Always] {
        let (copy, last, pending) = with_last_pending(dir.path(), &segments);
        let opts = || Options { segment_bytes: 200, sync, ..Options::default() };
        let (log, recovery) = Wal::open(copy.path(), opts()).unwrap();
        assert_eq!(recovery, Recovery::default(), "{sync:?}");
        assert_eq!(replay(&log, 1), records, "{sync:?}");
        assert!(last.exists() && !pending.exists(), "{sync:?}");
        assert_eq!(segment_files(copy.path()).len(), 8);
        goes_on_after_reopen(log, copy.path(), opts(), 31, &format!("{sync:?}"));
    }
}

#[test]
fn a_torn_pending_segment_is_repaired_like_a_last_one() {
    let (dir, records, segments) = multi_segment_log();
    let (copy, last, pending) = with_last_pending(dir.path(), &segments);
    let file = fs::OpenOptions::new().write(true).open(&pending).unwrap();
    file.set_len(SEGMENT_HEADER + FRAME + 5).unwrap(); // 5 bytes into its second frame
    let (log, recovery) = Wal::open(copy.path(), fast()).unwrap();
    let torn =
        TornTail { segment: last.clone(), offset: SEGMENT_HEADER + FRAME, discarded_bytes: 5 };
    assert_eq!(recovery, Recovery { truncated: Some(torn), discarded: None });
    assert_eq!(replay(&log, 1), records[..29]);
    assert_eq!(fs::metadata(&last).unwrap().len(), SEGMENT_HEADER + FRAME);
    assert!(!pending.exists());
}

#[test]
fn a_pending_segment_after_a_torn_or_short_one_is_discarded() {
    let (dir, records, segments) = multi_segment_log();
    // The seventh segment holds seqs 25..=28. A crash before its seal
    // cut it in its last frame (torn), or just before it (short: a
    // frame that never reached the disk leaves no trace).
    let last_frame = SEGMENT_HEADER + 3 * FRAME;
    for (cut, torn) in [(last_frame + 7, true), (last_frame, false)] {
        let (copy, last, pending) = with_last_pending(dir.path(), &segments);
        let seventh = copy.path().join(segments[6].file_name().unwrap());
        fs::OpenOptions::new().write(true).open(&seventh).unwrap().set_len(cut).unwrap();
        let pending_len = fs::metadata(&pending).unwrap().len();

        let (log, recovery) = Wal::open(copy.path(), fast()).unwrap();
        let expected = Recovery {
            truncated: torn.then(|| TornTail {
                segment: seventh.clone(),
                offset: last_frame,
                discarded_bytes: 7,
            }),
            discarded: Some(TornTail {
                segment: pending.clone(),
                offset: 0,
                discarded_bytes: pending_len,
            }),
        };
        assert_eq!(recovery, expected, "cut at {cut}");
        assert!(!pending.exists() && !last.exists(), "cut at {cut}");
        assert_eq!(replay(&log, 1), records[..27], "cut at {cut}");
        // The log goes on from the last record it has.
        goes_on_after_reopen(log, copy.path(), fast(), 28, &format!("cut at {cut}"));
    }
}

#[test]
fn a_pending_segment_whose_header_never_reached_the_disk_is_discarded() {
    let (dir, records, segments) = multi_segment_log();
    let zeros = (SEGMENT_HEADER + 2 * FRAME) as usize;
    for contents in [vec![], vec![0; 10], vec![0; zeros]] {
        let (copy, last, pending) = with_last_pending(dir.path(), &segments);
        fs::write(&pending, &contents).unwrap();
        let (log, recovery) = Wal::open(copy.path(), fast()).unwrap();
        let discarded = TornTail {
            segment: pending.clone(),
            offset: 0,
            discarded_bytes: contents.len() as u64,
        };
        assert_eq!(recovery, Recovery { truncated: None, discarded: Some(discarded) });
        assert!(!pending.exists() && !last.exists());
        assert_eq!(replay(&log, 1), records[..28]);
    }
}

#[test]
fn a_damaged_pending_segment_is_refused_and_left_alone() {
    let (dir, _, segments) = multi_segment_log();
    // Damage followed by a valid frame: not a crash.
    let (copy, last, pending) = with_last_pending(dir.path(), &segments);
    flip_byte(&pending, SEGMENT_HEADER + 3);
    match Wal::open(copy.path(), fast()) {
        Err(Error::Corrupt { segment, offset }) => {
            assert_eq!((segment, offset), (pending.clone(), SEGMENT_HEADER));
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(pending.exists() && !last.exists());
    // A header that is not zeros but not valid either.
    let (copy, _, pending) = with_last_pending(dir.path(), &segments);
    flip_byte(&pending, 2);
    assert!(matches!(Wal::open(copy.path(), fast()), Err(Error::BadHeader { .. })));
    assert!(pending.exists());
}

#[test]
fn pending_segments_the_log_cannot_have_left_are_refused() {
    let (dir, _, segments) = multi_segment_log();
    let stray = |copy: &Path, expected: &Path| match Wal::open(copy, fast()) {
        Err(Error::StrayPending { segment, .. }) => assert_eq!(segment, expected),
        other => panic!("expected a stray pending segment, got {other:?}"),
    };
    // Two pending segments: the seventh and the eighth.
    let (copy, _, _) = with_last_pending(dir.path(), &segments);
    let seventh = copy.path().join(segments[6].file_name().unwrap());
    let seventh_pending = PathBuf::from(format!("{}.pending", seventh.display()));
    fs::rename(&seventh, &seventh_pending).unwrap();
    let eighth_pending = pending_files(copy.path())[1].clone();
    stray(copy.path(), &eighth_pending);
    assert_eq!(pending_files(copy.path()).len(), 2);
    // A pending segment with no named segment before it.
    let alone = tempfile::tempdir().unwrap();
    let path = alone.path().join("00000000000000000001.wal.pending");
    fs::copy(&seventh_pending, &path).unwrap();
    stray(alone.path(), &path);
    // A pending segment before the last named one.
    let (copy, _, _) = with_last_pending(dir.path(), &segments);
    let (first, second) = (&segments[0], &segments[1]);
    let early =
        copy.path().join(format!("{}.pending", second.file_name().unwrap().to_str().unwrap()));
    fs::copy(copy.path().join(first.file_name().unwrap()), &early).unwrap();
    let last = copy.path().join(segments[7].file_name().unwrap());
    fs::rename(PathBuf::from(format!("{}.pending", last.display())), &last).unwrap();
    stray(copy.path(), &early);
}

#[test]
fn bad_headers_are_refused() {
    let (dir, _, segments) = multi_segment_log();
    for index in [0, segments.len() - 1] {
        let name = segments[index].file_name().unwrap();

        let copy = copy_dir(dir.path());
        flip_byte(&copy.path().join(name), 2); // magic
        assert!(matches!(Wal::open(copy.path(), fast()), Err(Error::BadHeader { .. })));

        let copy = copy_dir(dir.path());
        flip_byte(&copy.path().join(name), 14); // first seq
        assert!(matches!(Wal::open(copy.path(), fast()), Err(Error::BadHeader { .. })));

        let copy = copy_dir(dir.path());
        flip_byte(&copy.path().join(name), 8); // version
        assert!(matches!(Wal::open(copy.path(), fast()), Err(Error::UnsupportedVersion { .. })));
    }
}

#[test]
fn a_missing_segment_is_a_gap() {
    let (dir, _, segments) = multi_segment_log();
    fs::remove_file(&segments[3]).unwrap();
    match Wal::open(dir.path(), fast()) {
        Err(Error::OutOfSequence { segment, offset: 0, expected, found }) => {
            assert_eq!(segment, segments[4]);
            assert_eq!((expected, found), (first_seq_of(&segments[3]), first_seq_of(&segments[4])));
        }
        other => panic!("expected a gap, got {other:?}"),
    }
}

#[test]
fn a_segment_renamed_to_the_wrong_seq_is_refused() {
    let (dir, _, segments) = multi_segment_log();
    let last = segments.last().unwrap();
    fs::rename(last, dir.path().join("00000000000000000099.wal")).unwrap();
    assert!(matches!(
        Wal::open(dir.path(), fast()),
        Err(Error::OutOfSequence { .. } | Error::BadHeader { .. })
    ));
}

#[test]
fn many_tiny_segments_rotate_replay_and_get_removed() {
    let dir = tempfile::tempdir().unwrap();
    // Frames of 16..=36 bytes in 64-byte segments: one or two per segment.
    let sizes: Vec<usize> = (0..300).map(|i| i % 21).collect();
    let (log, _) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    let records = append_all(&log, &sizes);
    assert_eq!(records.last().unwrap().0, 300);
    let segments = segment_files(dir.path());
    assert!(segments.len() > 150, "{} segments", segments.len());
    for segment in &segments[..segments.len() - 1] {
        let len = fs::metadata(segment).unwrap().len();
        assert!(len <= 64, "{} is {len} bytes", segment.display());
    }
    assert_eq!(replay(&log, 1), records);
    assert_eq!(replay(&log, 137), records[136..]);
    log.close().unwrap();
    // The last segment may have been pending (its predecessor's seal in
    // flight) until the close.
    let segments = segment_files(dir.path());
    assert!(pending_files(dir.path()).is_empty());

    let (log, recovery) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!((log.first_seq(), log.last_seq()), (1, 300));
    assert_eq!(replay(&log, 0), records);

    // Segment i can go if the next one starts at or before 151.
    let firsts: Vec<Seq> = segments.iter().map(|s| first_seq_of(s)).collect();
    let removable = firsts.windows(2).take_while(|pair| pair[1] - 1 <= 150).count();
    log.remove_through(150).unwrap();
    assert_eq!(segment_files(dir.path()), segments[removable..]);
    let first = firsts[removable];
    assert!(first <= 151 && first > 140, "first seq {first}");
    assert_eq!((log.first_seq(), log.last_seq()), (first, 300));

    match log.replay_from(1) {
        Err(Error::SeqGap { requested: 1, first_available }) => assert_eq!(first_available, first),
        other => panic!("expected a gap, got {other:?}"),
    }
    assert!(matches!(log.replay_from(first - 1), Err(Error::SeqGap { .. })));
    assert_eq!(replay(&log, 0), records[first as usize - 1..]);
    assert_eq!(replay(&log, 151), records[150..]);

    assert_eq!(log.append(b"after removal").unwrap(), 301);
    log.close().unwrap();

    let (log, _) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    assert_eq!((log.first_seq(), log.last_seq()), (first, 301));
    let replayed = replay(&log, 0);
    assert_eq!(replayed[..replayed.len() - 1], records[first as usize - 1..]);
    assert_eq!(replayed.last().unwrap(), &(301, b"after removal".to_vec()));

    // Removing everything keeps the active segment and the numbering.
    log.remove_through(Seq::MAX).unwrap();
    assert_eq!(segment_files(dir.path()).len(), 1);
    assert_eq!(log.last_seq(), 301);
    assert_eq!(log.append(b"x").unwrap(), 302);
}

/// Several threads appending into tiny segments, so that rotations (and
/// in `Never` and `Interval` modes seals on their own threads, each
/// rotation waiting for the seal before it) come one after another, while
/// another thread replays and removes segments: every replay is contiguous
/// and every record survives a reopen.
#[test]
fn concurrent_appends_across_many_seals_keep_every_record() {
    let modes = [SyncMode::Never, SyncMode::Interval(Duration::from_millis(1)), SyncMode::Always];
    for sync in modes {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options { segment_bytes: 128, sync, ..Options::default() };
        let (log, _) = Wal::open(dir.path(), opts()).unwrap();
        let log = Arc::new(log);
        let appenders: Vec<_> = (0..4u8)
            .map(|writer| {
                let log = Arc::clone(&log);
                thread::spawn(move || {
                    let mut mine = Vec::new();
                    for n in 0..150u8 {
                        let data = [writer, n, n ^ writer];
                        mine.push((log.append(&data).unwrap(), data.to_vec()));
                    }
                    mine
                })
            })
            .collect();
        let reader = {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                for round in 0..40u64 {
                    match log.replay_from(0) {
                        Ok(replay) => {
                            let mut expected = None;
                            for record in replay {
                                match record {
                                    Ok((seq, _)) => {
                                        assert!(expected.is_none_or(|e| e == seq), "{seq}");
                                        expected = Some(seq + 1);
                                    }
                                    // Overtaken by the removal below.
                                    Err(Error::SeqGap { .. }) => break,
                                    Err(err) => panic!("replay failed: {err}"),
                                }
                            }
                        }
                        Err(Error::SeqGap { .. }) => {}
                        Err(err) => panic!("replay failed: {err}"),
                    }
                    log.remove_through(round * 10).unwrap();
                }
            })
        };
        let mut appended: Records = appenders.into_iter().flat_map(|h| h.join().unwrap()).collect();
        reader.join().unwrap();
        appended.sort();
        let seqs: Vec<Seq> = appended.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, (1..=600).collect::<Vec<_>>(), "{sync:?}");
        let first = log.first_seq();
        Arc::into_inner(log).unwrap().close().unwrap();
        assert!(pending_files(dir.path()).is_empty(), "{sync:?}");

        let (log, recovery) = Wal::open(dir.path(), opts()).unwrap();
        assert_eq!(recovery, Recovery::default(), "{sync:?}");
        assert_eq!(replay(&log, 0), appended[first as usize - 1..], "{sync:?}");
    }
}

/// Batches written with `append_many` are the same log as one `append`
/// per record: same seqs, same files (segments split where single appends
/// would rotate), same replay after a reopen.
#[test]
fn batched_appends_write_the_same_log_as_single_appends() {
    let sizes: Vec<usize> = (0..200).map(|i| (i * 7) % 40).collect();
    let batches = [1usize, 3, 0, 17, 2, 64, 5, 1, 40, 67];
    assert_eq!(batches.iter().sum::<usize>(), sizes.len());
    for segment_bytes in [64, 200, 1 << 20] {
        let single = tempfile::tempdir().unwrap();
        let (log, _) = Wal::open(single.path(), with_segment_bytes(segment_bytes)).unwrap();
        let records = append_all(&log, &sizes);
        log.close().unwrap();

        let batched = tempfile::tempdir().unwrap();
        let (log, _) = Wal::open(batched.path(), with_segment_bytes(segment_bytes)).unwrap();
        let mut next = 0;
        for &n in &batches {
            let batch = &records[next..next + n];
            let last = log.append_many(batch.iter().map(|(_, data)| data.as_slice())).unwrap();
            next += n;
            assert_eq!(last, next as Seq, "append_many returns the last seq");
        }
        assert_eq!(replay(&log, 1), records);
        log.close().unwrap();

        let names = |dir: &Path| -> Vec<_> {
            segment_files(dir)
                .iter()
                .map(|p| (p.file_name().unwrap().to_owned(), fs::read(p).unwrap()))
                .collect()
        };
        assert_eq!(
            names(batched.path()),
            names(single.path()),
            "segments of {segment_bytes} bytes"
        );
        let (log, recovery) = Wal::open(batched.path(), with_segment_bytes(segment_bytes)).unwrap();
        assert_eq!(recovery.truncated, None);
        assert_eq!(replay(&log, 0), records);
        assert_eq!(log.append(b"after").unwrap(), 201);
    }
}

#[test]
fn an_empty_active_segment_remembers_the_last_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    append_all(&log, &[30, 30, 30]);
    log.close().unwrap();
    // As if the machine crashed right after rotating: the last segment
    // holds only its header.
    let last = segment_files(dir.path()).pop().unwrap();
    assert_eq!(first_seq_of(&last), 3);
    fs::OpenOptions::new().write(true).open(&last).unwrap().set_len(SEGMENT_HEADER).unwrap();

    let (log, recovery) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    assert_eq!(recovery.truncated, None);
    assert_eq!((log.first_seq(), log.last_seq()), (1, 2));
    log.remove_through(Seq::MAX).unwrap();
    assert_eq!(segment_files(dir.path()), [last]);
    assert_eq!((log.first_seq(), log.last_seq()), (0, 2));
    assert_eq!(replay(&log, 0), []);
    assert!(matches!(log.replay_from(2), Err(Error::SeqGap { requested: 2, first_available: 3 })));
    assert_eq!(replay(&log, 3), []);
    drop(log);

    let (log, _) = Wal::open(dir.path(), fast()).unwrap();
    assert_eq!((log.first_seq(), log.last_seq()), (0, 2));
    assert_eq!(log.append(b"three").unwrap(), 3);
    assert_eq!(log.first_seq(), 3);
}

#[test]
fn group_commit_keeps_every_record_in_order() {
    group_commit_in_order(Duration::ZERO, false);
}

/// The same with the sync thread waiting for more writers before each
/// sync (`Options::gather`): nothing is reported durable before its sync.
#[test]
fn group_commit_with_gathering_keeps_every_record_in_order() {
    group_commit_in_order(Duration::from_micros(300), false);
}

/// The same with half the records queued for the sync thread to write
/// (`append_deferred`) and half written by their writers, interleaved.
#[test]
fn group_commit_of_deferred_and_written_records_keeps_them_in_order() {
    group_commit_in_order(Duration::ZERO, true);
    group_commit_in_order(Duration::from_micros(300), true);
}

fn group_commit_in_order(gather: Duration, deferred: bool) {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let reported = Arc::new(Mutex::new(Vec::new()));
    let opts = Options {
        segment_bytes: 1024, // rotations race with the sync thread
        sync: SyncMode::Always,
        on_durable: Some({
            let reported = Arc::clone(&reported);
            Arc::new(move |seq| reported.lock().unwrap().push(seq))
        }),
        gather,
        ..Options::default()
    };
    let (log, _) = Wal::open(dir.path(), opts).unwrap();
    let log = Arc::new(log);
    let writers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..PER_THREAD {
                    let record = format!("{thread}:{i}");
                    let seq = if deferred && (thread + i) % 2 == 0 {
                        log.append_deferred([record.as_bytes()]).unwrap()
                    } else {
                        log.append(record.as_bytes()).unwrap()
                    };
                    log.wait_durable(seq);
                    assert!(log.durable_seq() >= seq);
                    seqs.push(seq);
                }
                seqs
            })
        })
        .collect();
    for writer in writers {
        let seqs = writer.join().unwrap();
        assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]));
    }
    let total = (THREADS * PER_THREAD) as Seq;
    assert_eq!(log.durable_seq(), total);
    Arc::try_unwrap(log).unwrap().close().unwrap();

    let reported = reported.lock().unwrap().clone();
    assert!(reported.windows(2).all(|pair| pair[0] < pair[1]), "{reported:?}");
    assert_eq!(reported.last(), Some(&total));

    let (log, _) = Wal::open(dir.path(), fast()).unwrap();
    let records = replay(&log, 1);
    assert_eq!(records.len() as Seq, total);
    let mut next = [0; THREADS];
    for (index, (seq, data)) in records.iter().enumerate() {
        assert_eq!(*seq, index as Seq + 1);
        let text = String::from_utf8(data.clone()).unwrap();
        let (thread, i) = text.split_once(':').unwrap();
        let (thread, i): (usize, usize) = (thread.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next[thread], "thread {thread}'s records out of order");
        next[thread] += 1;
    }
}

#[test]
fn never_and_interval_modes_are_durable_at_append_and_report_in_order() {
    for sync in [SyncMode::Never, SyncMode::Interval(Duration::from_millis(2))] {
        let dir = tempfile::tempdir().unwrap();
        let reported = Arc::new(Mutex::new(Vec::new()));
        let on_durable: Arc<dyn Fn(Seq) + Send + Sync> = {
            let reported = Arc::clone(&reported);
            Arc::new(move |seq| reported.lock().unwrap().push(seq))
        };
        let opts = Options { sync, on_durable: Some(on_durable), ..Options::default() };
        let (log, _) = Wal::open(dir.path(), opts).unwrap();
        let log = Arc::new(log);
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let log = Arc::clone(&log);
                thread::spawn(move || {
                    for _ in 0..100 {
                        let seq = log.append(b"record").unwrap();
                        assert!(log.durable_seq() >= seq);
                        log.wait_durable(seq); // returns at once
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        thread::sleep(Duration::from_millis(10)); // let the interval thread flush
        Arc::try_unwrap(log).unwrap().close().unwrap();
        let reported = reported.lock().unwrap().clone();
        assert!(reported.windows(2).all(|pair| pair[0] < pair[1]), "{sync:?}: {reported:?}");
        assert_eq!(reported.last(), Some(&400), "{sync:?}");
    }
}

#[test]
fn on_durable_may_call_back_into_the_log() {
    for sync in [SyncMode::Never, SyncMode::Always] {
        let dir = tempfile::tempdir().unwrap();
        let handle: Arc<OnceLock<Weak<Wal>>> = Arc::new(OnceLock::new());
        let reported = Arc::new(Mutex::new(Vec::new()));
        let on_durable: Arc<dyn Fn(Seq) + Send + Sync> = {
            let (handle, reported) = (Arc::clone(&handle), Arc::clone(&reported));
            Arc::new(move |seq| {
                reported.lock().unwrap().push(seq);
                if let Some(log) = handle.get().and_then(Weak::upgrade) {
                    assert!(log.durable_seq() >= seq);
                    if seq == 1 {
                        log.append(b"appended by the callback").unwrap();
                    }
                }
            })
        };
        let opts = Options { sync, on_durable: Some(on_durable), ..Options::default() };
        let (log, _) = Wal::open(dir.path(), opts).unwrap();
        let log = Arc::new(log);
        handle.set(Arc::downgrade(&log)).unwrap();
        let first = log.append(b"first").unwrap();
        log.wait_durable(first + 1);
        assert_eq!(replay(&log, 1)[1].1, b"appended by the callback");
        // The callback may briefly hold the last strong reference: dropping
        // the log on the sync thread must not deadlock or panic.
        drop(log);
        let reported = reported.lock().unwrap().clone();
        assert!(reported.windows(2).all(|pair| pair[0] < pair[1]), "{sync:?}: {reported:?}");
    }
}

#[test]
fn sync_makes_everything_durable_in_every_mode() {
    for sync in [SyncMode::Never, SyncMode::Interval(Duration::from_secs(3600)), SyncMode::Always] {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = Wal::open(dir.path(), Options { sync, ..Options::default() }).unwrap();
        append_all(&log, &[1, 2, 3]);
        log.sync().unwrap();
        assert_eq!(log.durable_seq(), 3);
        // Dropping (not closing) stops the sync thread promptly.
        drop(log);
        let (log, _) = Wal::open(dir.path(), fast()).unwrap();
        assert_eq!(log.last_seq(), 3);
    }
}

/// Records queued with `append_deferred` reach the file at the next sync,
/// `sync`, `append`, `close` or drop, numbered in the order queued.
#[test]
fn deferred_records_are_written_before_anything_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options { segment_bytes: 200, ..Options::default() };
    let (log, _) = Wal::open(dir.path(), opts()).unwrap();
    assert_eq!(log.append_deferred([&b"one"[..], b"two"]).unwrap(), 2);
    assert_eq!(log.append_deferred([]).unwrap(), 2, "nothing queued: the last seq");
    // A direct append comes after what is queued.
    assert_eq!(log.append(b"three").unwrap(), 3);
    assert_eq!(log.last_seq(), 3);
    log.wait_durable(3);
    assert_eq!(log.append_deferred([&b"four"[..]]).unwrap(), 4);
    log.sync().unwrap();
    assert_eq!((log.last_seq(), log.durable_seq()), (4, 4));
    // Enough to rotate (200-byte segments), queued and never waited for:
    // dropping the log still writes and flushes them.
    let big: Vec<Vec<u8>> = (5..25).map(|seq| payload(seq, 30)).collect();
    assert_eq!(log.append_deferred(big.iter().map(Vec::as_slice)).unwrap(), 24);
    drop(log);

    let (log, recovery) = Wal::open(dir.path(), opts()).unwrap();
    assert_eq!(recovery.truncated, None);
    let records = replay(&log, 0);
    let texts: Vec<&[u8]> = records[..4].iter().map(|(_, data)| data.as_slice()).collect();
    assert_eq!(texts, [&b"one"[..], b"two", b"three", b"four"]);
    assert_eq!(records[4..].iter().map(|(_, data)| data.clone()).collect::<Vec<_>>(), big);
    assert!(records.iter().enumerate().all(|(i, (seq, _))| *seq == i as Seq + 1));
    assert!(segment_files(dir.path()).len() > 2, "the batch rotated");

    // In the other modes it is an ordinary append.
    let never = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(never.path(), fast()).unwrap();
    assert_eq!(log.append_deferred([&b"x"[..]]).unwrap(), 1);
    assert_eq!((log.last_seq(), log.durable_seq()), (1, 1));
}

#[test]
fn a_replay_sees_only_records_appended_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), with_segment_bytes(100)).unwrap();
    let records = append_all(&log, &[10; 10]);
    let mut replay = log.replay_from(4).unwrap();
    assert_eq!(replay.next().unwrap().unwrap(), records[3]);
    append_all(&log, &[10; 10]);
    let rest: Records = replay.collect::<Result<_, _>>().unwrap();
    assert_eq!(rest, records[4..]);
    assert_eq!(log.replay_from(21).unwrap().count(), 0);
    assert_eq!(log.replay_from(1000).unwrap().count(), 0);
}

#[test]
fn a_replay_overtaken_by_removal_reports_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), with_segment_bytes(64)).unwrap();
    append_all(&log, &[30; 10]);
    let mut replay = log.replay_from(1).unwrap();
    assert_eq!(replay.next().unwrap().unwrap().0, 1);
    log.remove_through(5).unwrap();
    assert!(matches!(replay.next(), Some(Err(Error::SeqGap { requested: 2, first_available: 6 }))));
    assert!(replay.next().is_none());
}

#[test]
fn open_creates_the_directory_and_ignores_foreign_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a").join("log");
    let (log, recovery) = Wal::open(&dir, fast()).unwrap();
    assert_eq!(recovery, Recovery::default());
    assert_eq!((log.first_seq(), log.last_seq(), log.durable_seq()), (0, 0, 0));
    assert_eq!(log.append(b"one").unwrap(), 1);
    drop(log);

    fs::write(dir.join("README"), "not a segment").unwrap();
    fs::write(dir.join("00000000000000000002.wal.tmp"), "half-made segment").unwrap();
    let (log, _) = Wal::open(&dir, fast()).unwrap();
    assert_eq!(replay(&log, 1), [(1, b"one".to_vec())]);
    assert!(dir.join("README").exists());
    assert!(!dir.join("00000000000000000002.wal.tmp").exists());
}

#[test]
fn the_handle_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Wal>();
}

#[test]
fn a_directory_is_open_in_one_log_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Wal::open(dir.path(), fast()).unwrap();
    match Wal::open(dir.path(), fast()) {
        Err(Error::Locked { dir: locked }) => assert_eq!(locked, dir.path()),
        other => panic!("expected the directory to be locked, got {other:?}"),
    }
    drop(log);
    assert!(Wal::open(dir.path(), fast()).is_ok());
}

#[test]
fn a_segment_named_seq_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("00000000000000000000.wal"), b"").unwrap();
    assert!(matches!(Wal::open(dir.path(), fast()), Err(Error::BadHeader { .. })));
}

/// Garbage after valid frames (random bytes, stray zeros, fragments of
/// frames) must never make recovery panic, and whatever it accepts must
/// still be a prefix of what was written.
#[test]
fn arbitrary_tails_never_panic() {
    let (dir, records) = single_segment_log(&[0, 7, 33, 2, 90]);
    let [segment] = &segment_files(dir.path())[..] else { panic!("expected one segment") };
    let bytes = fs::read(segment).unwrap();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..300 {
        let mut damaged = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = SEGMENT_HEADER as usize + (next() as usize % (damaged.len() - 24));
            match next() % 4 {
                0 => damaged[at] = next() as u8,
                1 => damaged.truncate(at),
                2 => damaged.extend((0..next() % 50).map(|_| next() as u8)),
                _ => {
                    let from = SEGMENT_HEADER as usize + next() as usize % (bytes.len() - 24);
                    let len = (next() as usize % 60).min(bytes.len() - from);
                    damaged.extend_from_slice(&bytes[from..from + len]);
                }
            }
        }
        let copy = tempfile::tempdir().unwrap();
        fs::write(copy.path().join(segment.file_name().unwrap()), &damaged).unwrap();
        if let Ok((log, _)) = Wal::open(copy.path(), fast()) {
            let recovered = replay(&log, 1);
            assert_eq!(recovered, records[..recovered.len()], "round {round}");
        }
    }
}
