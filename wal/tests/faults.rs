//! The log under a failing disk, through the simulated file system
//! (`wal::sim::SimFs`): a power cut at every call in turn (plain, and
//! tearing the write it falls on), a disk that fills, and a failed fsync.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use wal::sim::{Fault, FaultKind, Op, SimFs};
use wal::{Error, Options, Seq, SyncMode, Wal};

/// The payload of record `seq`: its length varies, and its bytes say
/// which record it is.
fn payload(seq: Seq) -> Vec<u8> {
    format!("record {seq} ").repeat(1 + (seq % 7) as usize).into_bytes()
}

fn options(fs: &Arc<SimFs>, sync: SyncMode) -> Options {
    Options { segment_bytes: 1500, sync, fs: Arc::clone(fs) as _, ..Options::default() }
}

/// Opens the log in `dir` again after the test dropped it. Another test
/// of this binary starts a child process: until the child's `exec`, it
/// shares this process's open files, the dropped log's directory lock
/// among them, so the open waits (bounded) while that lock is still held.
fn reopen(dir: &Path, options: Options) -> wal::Result<(Wal, wal::Recovery)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match Wal::open(dir, options.clone()) {
            Err(Error::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            opened => return opened,
        }
    }
}

/// Appends 40 records (about four segments), acknowledging every fourth
/// once durable (or, in `Never` mode, once `sync` returned), and trims the
/// log once; returns
/// the last seq acknowledged while the power was still on.
fn workload(log: &Wal, fs: &SimFs) -> Seq {
    let mut acked = 0;
    for seq in 1..=40 {
        assert_eq!(log.append(&payload(seq)).unwrap(), seq);
        if seq % 4 == 0 {
            match log.sync_mode() {
                SyncMode::Always => log.wait_durable(seq),
                _ => log.sync().unwrap(),
            }
            if fs.powered() {
                acked = seq;
            }
        }
        if seq == 30 {
            log.remove_through(16).unwrap();
        }
    }
    acked
}

/// After the disk came back: every record from the oldest stored to the
/// last is there, whole, in order, every acknowledged one among them, and
/// the next append continues the seqs.
fn check_recovered(dir: &Path, acked: Seq, cut: u64, torn: bool) {
    let (log, _) = reopen(dir, Options { sync: SyncMode::Never, ..Options::default() })
        .unwrap_or_else(|e| panic!("cut at call {cut} (torn: {torn}): recovery failed: {e}"));
    let last = log.last_seq();
    assert!(last >= acked, "cut at call {cut} (torn: {torn}): acked {acked}, recovered {last}");
    let first = log.first_seq().max(1);
    assert!(first <= 17, "cut at call {cut}: records up to {first} are gone");
    let records: Vec<(Seq, Vec<u8>)> = log.replay_from(0).unwrap().map(Result::unwrap).collect();
    let expected: Vec<(Seq, Vec<u8>)> =
        (first..=last).filter(|_| last > 0).map(|seq| (seq, payload(seq))).collect();
    assert_eq!(records, expected, "cut at call {cut} (torn: {torn})");
    assert_eq!(log.append(b"after").unwrap(), last + 1);
}

fn sweep(sync: SyncMode) {
    let mut cuts = 0;
    for torn in [false, true] {
        for cut in 1.. {
            let dir = tempfile::tempdir().unwrap();
            let fs = Arc::new(SimFs::new());
            fs.cut_power_at(cut, torn);
            let (log, _) = Wal::open(dir.path(), options(&fs, sync)).unwrap();
            let acked = workload(&log, &fs);
            drop(log);
            let finished = fs.powered();
            fs.restore_durable().unwrap();
            check_recovered(dir.path(), acked, cut, torn);
            if finished {
                break;
            }
            cuts += 1;
        }
    }
    // Creations, rotations, removals and syncs: well over a hundred calls.
    assert!(cuts > 100, "only {cuts} cut points");
}

#[test]
fn a_power_cut_at_any_call_loses_nothing_acknowledged_with_group_commit() {
    sweep(SyncMode::Always);
}

#[test]
fn a_power_cut_at_any_call_loses_nothing_synced_with_sealing_threads() {
    sweep(SyncMode::Never);
}

/// A full disk fails the append that needs new blocks, with the error; the
/// log is left as it was and appends resume once there is space.
#[test]
fn a_full_disk_refuses_an_append_and_leaves_the_log_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(SimFs::new());
    let (log, _) = Wal::open(dir.path(), options(&fs, SyncMode::Never)).unwrap();
    for seq in 1..=3 {
        log.append(&payload(seq)).unwrap();
    }
    fs.set_full(true);
    let big = vec![7u8; 4000];
    match log.append(&big) {
        Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(28)),
        other => panic!("expected ENOSPC, got {other:?}"),
    }
    assert!(!log.is_poisoned());
    assert_eq!(log.last_seq(), 3);
    fs.set_full(false);
    assert_eq!(log.append(&payload(4)).unwrap(), 4);
    log.close().unwrap();
    let (log, recovery) = reopen(dir.path(), Options::default()).unwrap();
    assert_eq!(recovery.truncated, None, "nothing to repair");
    let seqs: Vec<Seq> = log.replay_from(1).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
}

/// A short write (part of the frame written, then `ENOSPC`) is cut back:
/// the next append follows the last whole frame.
#[test]
fn a_short_write_is_cut_back() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(SimFs::new());
    let (log, _) = Wal::open(dir.path(), options(&fs, SyncMode::Never)).unwrap();
    log.append(&payload(1)).unwrap();
    fs.inject(Fault {
        op: Op::Write,
        path_contains: ".wal".into(),
        kind: FaultKind::ShortWrite(10),
        times: 1,
    });
    assert!(log.append(&payload(2)).is_err());
    assert_eq!(log.append(&payload(2)).unwrap(), 2);
    log.close().unwrap();
    let (log, recovery) = reopen(dir.path(), Options::default()).unwrap();
    assert_eq!(recovery.truncated, None);
    let records: Vec<(Seq, Vec<u8>)> = log.replay_from(1).unwrap().map(Result::unwrap).collect();
    assert_eq!(records, [(1, payload(1)), (2, payload(2))]);
}

/// A failed rename of a pending segment (its seal) poisons the log rather
/// than make a second pending segment; what was synced is recovered.
#[test]
fn a_failed_seal_rename_stops_appends_and_recovery_keeps_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(SimFs::new());
    let (log, _) = Wal::open(dir.path(), options(&fs, SyncMode::Never)).unwrap();
    fs.inject(Fault {
        op: Op::Rename,
        path_contains: ".pending".into(),
        kind: FaultKind::Eio,
        times: 1,
    });
    let mut refused = None;
    for seq in 1..=200 {
        if log.append(&payload(seq)).is_err() {
            refused = Some(seq);
            break;
        }
    }
    let refused = refused.expect("the failed seal stopped appends");
    assert!(log.is_poisoned());
    drop(log);
    let (log, _) = reopen(dir.path(), Options::default()).unwrap();
    assert_eq!(log.last_seq(), refused - 1);
    let records: Vec<(Seq, Vec<u8>)> = log.replay_from(1).unwrap().map(Result::unwrap).collect();
    let expected: Vec<(Seq, Vec<u8>)> = (1..refused).map(|seq| (seq, payload(seq))).collect();
    assert_eq!(records, expected);
}

/// The child half of `a_failed_fsync_aborts_the_process`.
#[test]
fn fsync_failure_child() {
    let Some(dir) = std::env::var_os("WAL_FSYNC_FAILURE_DIR") else { return };
    let fs = Arc::new(SimFs::new());
    let (log, _) = Wal::open(&dir, options(&fs, SyncMode::Always)).unwrap();
    fs.inject(Fault { op: Op::Sync, path_contains: String::new(), kind: FaultKind::Eio, times: 1 });
    let seq = log.append(b"never acknowledged").unwrap();
    log.wait_durable(seq);
    println!("ACKNOWLEDGED");
}

/// An fsync that fails ends the process with a message, before anything
/// waiting for it is told its record is durable: never retried.
#[test]
fn a_failed_fsync_aborts_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fsync_failure_child", "--nocapture", "--test-threads=1"])
        .env("WAL_FSYNC_FAILURE_DIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child should abort: {stdout}");
    assert!(!stdout.contains("ACKNOWLEDGED"), "{stdout}");
    assert!(stderr.contains("fsync of") && stderr.contains("Aborting"), "{stderr}");
}

/// With group commit too: a failed append (here the rotation its big
/// record needs cannot create the next segment) is the caller's error,
/// and the next append takes the next seq.
#[test]
fn a_full_disk_refuses_an_append_with_group_commit_and_numbering_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(SimFs::new());
    let (log, _) = Wal::open(dir.path(), options(&fs, SyncMode::Always)).unwrap();
    assert_eq!(log.append(b"one").unwrap(), 1);
    fs.set_full(true);
    match log.append(&vec![7u8; 4 << 20]) {
        Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(28)),
        other => panic!("expected ENOSPC, got {other:?}"),
    }
    fs.set_full(false);
    let seq = log.append(b"two").unwrap();
    assert_eq!(seq, 2);
    log.wait_durable(seq);
    let queued = log.append_deferred([&b"three"[..]]).unwrap();
    assert_eq!(queued, 3);
    log.wait_durable(queued);
    let records: Vec<(Seq, Vec<u8>)> = log.replay_from(1).unwrap().map(Result::unwrap).collect();
    assert_eq!(records, [(1, b"one".to_vec()), (2, b"two".to_vec()), (3, b"three".to_vec())]);
}
