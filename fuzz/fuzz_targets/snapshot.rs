//! Snapshot decoding of arbitrary bytes: an error, never a panic or an
//! allocation bomb. Inputs starting with `F` are framed first: the rest,
//! split at `~`, becomes the image block, a messages block, a rows block
//! and the files block of a snapshot whose lengths and checksums are right
//! (so the fuzzer reaches the decoders behind the checksums); any other
//! input is the file as it stands.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn framed(data: &[u8]) -> Vec<u8> {
    let mut parts = data.split(|&b| b == b'~').take(4);
    let mut block = |payload: &mut Vec<u8>, counted: bool| {
        let bytes = parts.next().unwrap_or(&[]);
        payload.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        if counted {
            // The item count: the block's first byte, or none.
            let items = bytes.first().map_or(0, |&b| u64::from(b % 8));
            payload.extend_from_slice(&items.to_le_bytes());
        }
        payload.extend_from_slice(&crc32fast::hash(bytes).to_le_bytes());
        payload.extend_from_slice(bytes);
    };
    let mut payload = Vec::new();
    block(&mut payload, false);
    for _ in 0..2 {
        payload.extend_from_slice(&1u64.to_le_bytes());
        block(&mut payload, true);
    }
    block(&mut payload, false);
    let mut file = b"NATSNAP\0".to_vec();
    file.extend_from_slice(&natter::persist::FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(&0u64.to_le_bytes());
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    file.extend_from_slice(&payload);
    file
}

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.bin");
    let bytes = match data.strip_prefix(b"F") {
        Some(rest) => framed(rest),
        None => data.to_vec(),
    };
    let _ = natter::persist::snapshot::decode_on(&bytes, path, 1);
});
