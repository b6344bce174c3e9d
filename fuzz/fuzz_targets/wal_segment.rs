//! A log segment whose frames are arbitrary bytes, opened (recovery reads
//! and verifies every frame, cutting a torn tail) and replayed; every
//! record replayed is decoded as a `Mutation`. An error is fine; a panic,
//! a hang or an allocation bomb is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wal::{Options, SyncMode, Wal};

/// A valid header for the segment whose first seq is 1 (the crate
/// documentation's layout: magic, version, first seq, CRC of those).
fn header() -> Vec<u8> {
    let mut h = b"NATTRWAL".to_vec();
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&1u64.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

fuzz_target!(|data: &[u8]| {
    // Memory-backed when /dev/shm exists: the log flushes what it repairs.
    let base = std::path::Path::new("/dev/shm");
    let dir = if base.is_dir() { tempfile::tempdir_in(base) } else { tempfile::tempdir() };
    let dir = dir.expect("a temporary directory");
    // The input is the segment's frames, unless it starts with a header
    // of its own (the corpus holds whole segments too).
    let mut segment = if data.starts_with(b"NATTRWAL") { Vec::new() } else { header() };
    segment.extend_from_slice(data);
    std::fs::write(dir.path().join("00000000000000000001.wal"), &segment).expect("write");
    let options = Options { sync: SyncMode::Never, ..Options::default() };
    let Ok((log, _)) = Wal::open(dir.path(), options) else { return };
    if let Ok(records) = log.replay_from(1) {
        for record in records {
            let Ok((seq, payload)) = record else { break };
            let _ = natter::persist::decode_mutation(seq, &payload);
        }
    }
    let _ = log.close();
});
