//! Frames: how one record is laid out in a segment file.
//!
//! This is the only module that knows the frame's byte layout. Everything
//! else hands it a payload to [`encode`] or a byte slice to [`decode`], and
//! gets back either a verified [`Frame`] or the reason the bytes are not one
//! ([`Invalid`]). The layout itself is specified in the crate documentation.
//!
//! Decoding never panics and never reads outside the slice it is given, no
//! matter what the bytes are: a damaged length field just makes the frame
//! [`Invalid::Truncated`].

use std::ops::RangeInclusive;

use crate::{Error, Result, Seq};

/// Bytes in front of the payload: length (4), CRC (4), seq (8).
pub(crate) const HEADER_LEN: usize = 16;

/// A verified frame, borrowing its payload from the bytes it was decoded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    /// The record's sequence number (never 0).
    pub(crate) seq: Seq,
    /// The record's bytes.
    pub(crate) payload: &'a [u8],
}

impl Frame<'_> {
    /// How many bytes the frame occupies on disk, header included.
    pub(crate) fn encoded_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }
}

/// Why some bytes are not a valid frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// The header is all zeros: space the file system allocated but whose
    /// data never reached the disk.
    Zeroed,
    /// The frame claims more bytes than there are.
    Truncated,
    /// The bytes are all there but the checksum (or the seq) is wrong.
    Damaged,
}

impl Invalid {
    /// A lowercase description for warnings.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Invalid::Zeroed => "zero-filled",
            Invalid::Truncated => "incomplete frame",
            Invalid::Damaged => "checksum mismatch",
        }
    }
}

/// Appends the frame for record `seq` with `payload` to `out`.
///
/// Fails only if the payload is too long for the 32-bit length field.
pub(crate) fn encode(seq: Seq, payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let len =
        u32::try_from(payload.len()).map_err(|_| Error::RecordTooLarge { len: payload.len() })?;
    let len = len.to_le_bytes();
    let seq = seq.to_le_bytes();
    out.reserve(HEADER_LEN + payload.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(len, seq, payload).to_le_bytes());
    out.extend_from_slice(&seq);
    out.extend_from_slice(payload);
    Ok(())
}

/// Decodes the frame at the start of `bytes` (which may continue past it).
pub(crate) fn decode(bytes: &[u8]) -> Result<Frame<'_>, Invalid> {
    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Err(if bytes.iter().all(|&b| b == 0) {
            Invalid::Zeroed
        } else {
            Invalid::Truncated
        });
    };
    if header.iter().all(|&b| b == 0) {
        return Err(Invalid::Zeroed);
    }
    let len = le_bytes::<4>(header, 0);
    let stored_crc = u32::from_le_bytes(le_bytes::<4>(header, 4));
    let seq = le_bytes::<8>(header, 8);
    let payload = usize::try_from(u32::from_le_bytes(len))
        .ok()
        .and_then(|n| bytes.get(HEADER_LEN..HEADER_LEN.checked_add(n)?))
        .ok_or(Invalid::Truncated)?;
    if checksum(len, seq, payload) != stored_crc {
        return Err(Invalid::Damaged);
    }
    match u64::from_le_bytes(seq) {
        0 => Err(Invalid::Damaged),
        seq => Ok(Frame { seq, payload }),
    }
}

/// Finds the first offset in `bytes` at which a valid frame whose seq lies in
/// `seqs` begins.
///
/// Recovery uses this to tell a torn tail (nothing valid follows the damage)
/// from corruption in the middle of the log (something valid does). Every
/// byte offset is a candidate, so the seq is checked before the checksum:
/// with a narrow `seqs` range almost every offset is rejected after reading
/// eight bytes, which keeps the search linear in practice.
pub(crate) fn find(bytes: &[u8], seqs: RangeInclusive<Seq>) -> Option<usize> {
    let last_start = bytes.len().checked_sub(HEADER_LEN)?;
    (0..=last_start).find(|&offset| {
        let seq = u64::from_le_bytes(le_bytes::<8>(&bytes[offset..], 8));
        seqs.contains(&seq) && decode(&bytes[offset..]).is_ok()
    })
}

/// The CRC-32 of the length field, the seq field and the payload, in that
/// order: everything in the frame except the CRC itself.
fn checksum(len: [u8; 4], seq: [u8; 8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(&seq);
    hasher.update(payload);
    hasher.finalize()
}

/// The `N` bytes of `header` starting at `at`. Callers guarantee
/// `at + N <= HEADER_LEN <= header.len()`.
fn le_bytes<const N: usize>(header: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&header[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: Seq, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(seq, payload, &mut out).unwrap();
        out
    }

    #[test]
    fn round_trips() {
        for payload in [&b""[..], b"x", b"hello world", &[0xff; 1000]] {
            let bytes = frame(42, payload);
            assert_eq!(bytes.len(), HEADER_LEN + payload.len());
            let decoded = decode(&bytes).unwrap();
            assert_eq!(decoded, Frame { seq: 42, payload });
            assert_eq!(decoded.encoded_len(), bytes.len());
        }
    }

    #[test]
    fn decodes_a_frame_followed_by_more_bytes() {
        let mut bytes = frame(1, b"first");
        bytes.extend(frame(2, b"second"));
        let first = decode(&bytes).unwrap();
        assert_eq!(first.payload, b"first");
        assert_eq!(decode(&bytes[first.encoded_len()..]).unwrap().seq, 2);
    }

    #[test]
    fn layout_is_little_endian_len_crc_seq_payload() {
        let bytes = frame(0x0102_0304_0506_0708, b"ab");
        assert_eq!(&bytes[0..4], &[2, 0, 0, 0]);
        assert_eq!(&bytes[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&bytes[16..], b"ab");
        let crc = crc32fast::hash(&[&bytes[0..4], &bytes[8..]].concat());
        assert_eq!(&bytes[4..8], &crc.to_le_bytes());
    }

    #[test]
    fn zeros_are_never_a_frame() {
        for n in 0..40 {
            assert_eq!(decode(&vec![0; n]), Err(Invalid::Zeroed), "{n} zero bytes");
        }
    }

    #[test]
    fn every_truncation_is_detected() {
        let bytes = frame(7, b"some payload");
        for cut in 1..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), Err(Invalid::Truncated), "cut at {cut}");
        }
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let bytes = frame(7, b"some payload");
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[i] ^= 1 << bit;
                assert!(decode(&damaged).is_err(), "flip bit {bit} of byte {i}");
            }
        }
    }

    #[test]
    fn a_valid_checksum_over_seq_zero_is_still_rejected() {
        assert_eq!(decode(&frame(0, b"x")), Err(Invalid::Damaged));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small xorshift generator: deterministic, no dependency.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len >= 4 && next() % 2 == 0 {
                // Make the length field small enough to be plausible.
                bytes[..4].copy_from_slice(&((next() % 64) as u32).to_le_bytes());
            }
            let _ = decode(&bytes);
            let _ = find(&bytes, 0..=u64::MAX);
        }
    }

    #[test]
    fn find_locates_the_next_frame_in_range() {
        let mut bytes = b"garbage!".to_vec();
        bytes.extend(frame(5, b"five"));
        bytes.extend(frame(6, b"six"));
        assert_eq!(find(&bytes, 1..=10), Some(8));
        assert_eq!(find(&bytes, 6..=6), Some(8 + HEADER_LEN + 4));
        assert_eq!(find(&bytes, 7..=10), None);
        assert_eq!(find(&bytes[..10], 1..=10), None);
    }
}
