//! `multipart/form-data` request bodies → request variables.
//!
//! The npm `zulip-js` bindings send every POST this way, and so does
//! `curl -F`. The body is already in memory (bounded by `--max-body-bytes`),
//! so the `multer` parser is driven by polling its future once over a
//! one-item stream: no async runtime is involved and nothing can wait.
//! A part with a filename is a file, not a variable: it is skipped here.
//!
//! An upload route's body is streamed to a file first (`conn::Spool`);
//! `spooled_parts` reads it back a piece at a time, copying each file part
//! into a staged file of its own: blocking I/O, run through
//! `files::blocking`, never on a coroutine.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use bytes::Bytes;

use crate::files::{Staged, Upload};

/// The text parts of a multipart body, in order, as (name, value).
pub fn text_fields(content_type: &str, body: &[u8]) -> Result<Vec<(String, String)>, String> {
    let boundary =
        multer::parse_boundary(content_type).map_err(|_| "no multipart boundary".to_owned())?;
    let chunk: Result<Bytes, std::convert::Infallible> = Ok(Bytes::copy_from_slice(body));
    let stream = futures_util::stream::iter([chunk]);
    let mut multipart = multer::Multipart::new(stream, boundary);
    let parse = async move {
        let mut fields = Vec::new();
        while let Some(field) = multipart.next_field().await.map_err(|e| e.to_string())? {
            let Some(name) = field.name().map(str::to_owned) else { continue };
            if field.file_name().is_some() {
                continue;
            }
            fields.push((name, field.text().await.map_err(|e| e.to_string())?));
        }
        Ok(fields)
    };
    // Boxed: the parser's state machine stays off the small coroutine stack.
    poll_ready(Box::pin(parse)).unwrap_or_else(|| Err("incomplete multipart body".to_owned()))
}

/// An upload route's body, split: its text fields and its file parts.
#[derive(Debug, Default)]
pub struct SpooledParts {
    /// Text parts, in order, as (name, value).
    pub fields: Vec<(String, String)>,
    /// File parts, each in a staged file.
    pub files: Vec<Upload>,
}

/// Why a streamed multipart body was refused.
#[derive(Debug)]
pub enum PartsError {
    /// Not a well-formed multipart body.
    Malformed(String),
    /// A file part is larger than the limit.
    FileTooLarge,
    /// The staging directory could not be read or written.
    Io(std::io::Error),
}

/// Most bytes of text fields an upload body may hold, all together.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// Bytes read from a spooled body at a time.
const READ_PIECE: usize = 64 * 1024;

/// Reads the multipart body in the file `body`: text parts become fields,
/// file parts are copied to staged files in `staging`, each at most
/// `max_file` bytes. Blocking: run it off the coroutines.
pub fn spooled_parts(
    content_type: &str,
    body: &Path,
    staging: &Path,
    max_file: u64,
) -> Result<SpooledParts, PartsError> {
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| PartsError::Malformed("no multipart boundary".to_owned()))?;
    let mut file = File::open(body).map_err(PartsError::Io)?;
    let pieces = std::iter::from_fn(move || {
        let mut piece = vec![0u8; READ_PIECE];
        match file.read(&mut piece) {
            Ok(0) => None,
            Ok(n) => {
                piece.truncate(n);
                Some(Ok::<Bytes, std::io::Error>(Bytes::from(piece)))
            }
            Err(e) => Some(Err(e)),
        }
    });
    let mut multipart = multer::Multipart::new(futures_util::stream::iter(pieces), boundary);
    let parse = async move {
        let mut parts = SpooledParts::default();
        let mut text_bytes = 0;
        let malformed = |e: multer::Error| PartsError::Malformed(e.to_string());
        while let Some(mut field) = multipart.next_field().await.map_err(malformed)? {
            let name = field.name().map(str::to_owned);
            if let Some(filename) = field.file_name().map(str::to_owned) {
                let declared = field.content_type().map(|m| m.essence_str().to_owned());
                let (staged, mut out) = Staged::create(staging).map_err(PartsError::Io)?;
                let mut size = 0u64;
                while let Some(chunk) = field.chunk().await.map_err(malformed)? {
                    size += chunk.len() as u64;
                    if size > max_file {
                        return Err(PartsError::FileTooLarge);
                    }
                    out.write_all(&chunk).map_err(PartsError::Io)?;
                }
                parts.files.push(Upload { staged, filename, content_type: declared, size });
                continue;
            }
            let mut value = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(malformed)? {
                text_bytes += chunk.len();
                if text_bytes > MAX_TEXT_BYTES {
                    return Err(PartsError::Malformed("text fields too long".to_owned()));
                }
                value.extend_from_slice(&chunk);
            }
            let value = String::from_utf8(value)
                .map_err(|_| PartsError::Malformed("a text field is not UTF-8".to_owned()))?;
            if let Some(name) = name {
                parts.fields.push((name, value));
            }
        }
        Ok(parts)
    };
    // Every piece is read when polled, so the parser never waits for
    // input; a parser that kept asking would be a bug, not a slow body.
    let mut future = Box::pin(parse);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1000 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
    Err(PartsError::Malformed("incomplete multipart body".to_owned()))
}

/// Polls a future whose inputs are all in memory; `None` if it still waits
/// (it cannot be woken: there is nothing left to arrive).
fn poll_ready<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..4 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What curl 7.88.1 sent for
    /// `curl -F type=stream -F to=general -F 'content=hi there' -F f=@a.txt`.
    const CURL: &[u8] = b"--------------------------17d3911e391b957c\r\n\
Content-Disposition: form-data; name=\"type\"\r\n\r\n\
stream\r\n\
--------------------------17d3911e391b957c\r\n\
Content-Disposition: form-data; name=\"to\"\r\n\r\n\
general\r\n\
--------------------------17d3911e391b957c\r\n\
Content-Disposition: form-data; name=\"content\"\r\n\r\n\
hi there\r\n\
--------------------------17d3911e391b957c\r\n\
Content-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\
Content-Type: text/plain\r\n\r\n\
file body\n\r\n\
--------------------------17d3911e391b957c--\r\n";
    const CURL_TYPE: &str =
        "multipart/form-data; boundary=------------------------17d3911e391b957c";

    /// What zulip-js 2.1.0 (the npm `form-data` package under node-fetch)
    /// sent for `messages.send({type, to: ["general"], topic, content})`;
    /// note the Content-Type has no space before `boundary`.
    const FORM_DATA: &[u8] = b"----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"type\"\r\n\r\n\
stream\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"to\"\r\n\r\n\
[\"general\"]\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"topic\"\r\n\r\n\
t\r\n\
----------------------------5d5416eb0d4caab829b80c6c\r\n\
Content-Disposition: form-data; name=\"content\"\r\n\r\n\
multi\r\nline \xc3\xa9\r\n\
----------------------------5d5416eb0d4caab829b80c6c--\r\n";
    const FORM_DATA_TYPE: &str =
        "multipart/form-data;boundary=--------------------------5d5416eb0d4caab829b80c6c";

    #[test]
    fn curl_and_form_data_bodies() {
        let fields = text_fields(CURL_TYPE, CURL).unwrap();
        assert_eq!(
            fields,
            vec![
                ("type".to_owned(), "stream".to_owned()),
                ("to".to_owned(), "general".to_owned()),
                ("content".to_owned(), "hi there".to_owned()),
            ],
            "the file part is not a variable"
        );
        let fields = text_fields(FORM_DATA_TYPE, FORM_DATA).unwrap();
        assert_eq!(fields[1], ("to".to_owned(), "[\"general\"]".to_owned()));
        assert_eq!(fields[3], ("content".to_owned(), "multi\r\nline é".to_owned()));
    }

    /// A spooled body: text fields, the file part copied to a staged file,
    /// a file over the limit refused, a broken body refused.
    #[test]
    fn spooled_bodies_split_into_fields_and_staged_files() {
        let dir = tempfile::tempdir().unwrap();
        let body = dir.path().join("body");
        std::fs::write(&body, CURL).unwrap();
        let parts = spooled_parts(CURL_TYPE, &body, dir.path(), 100).unwrap();
        assert_eq!(parts.fields.len(), 3);
        assert_eq!(parts.fields[2], ("content".to_owned(), "hi there".to_owned()));
        assert_eq!(parts.files.len(), 1);
        let upload = &parts.files[0];
        assert_eq!((upload.filename.as_str(), upload.size), ("a.txt", 10));
        assert_eq!(upload.content_type.as_deref(), Some("text/plain"));
        assert_eq!(std::fs::read(upload.staged.path()).unwrap(), b"file body\n");
        let staged = upload.staged.path().to_owned();
        drop(parts);
        assert!(!staged.exists(), "a staged file no one took is removed");
        assert!(matches!(
            spooled_parts(CURL_TYPE, &body, dir.path(), 9),
            Err(PartsError::FileTooLarge)
        ));
        std::fs::write(&body, &CURL[..CURL.len() - 10]).unwrap();
        assert!(matches!(
            spooled_parts(CURL_TYPE, &body, dir.path(), 100),
            Err(PartsError::Malformed(_))
        ));
        assert!(matches!(
            spooled_parts("multipart/form-data", &body, dir.path(), 100),
            Err(PartsError::Malformed(_))
        ));
        // Nothing is left in the staging directory but the body.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn broken_bodies_are_errors() {
        assert!(text_fields("multipart/form-data", CURL).is_err(), "no boundary");
        assert!(text_fields(CURL_TYPE, &CURL[..CURL.len() - 10]).is_err(), "truncated");
        assert!(text_fields(CURL_TYPE, b"garbage").is_err());
        assert!(text_fields(CURL_TYPE, b"").is_err());
    }

    /// Random and truncated input never panics or waits (a small,
    /// deterministic fuzz: xorshift-generated bodies and every prefix of
    /// real ones, with bytes flipped).
    #[test]
    fn fuzzed_bodies_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for real in [CURL, FORM_DATA] {
            for cut in 0..real.len() {
                let _ = text_fields(CURL_TYPE, &real[..cut]);
                let mut flipped = real.to_vec();
                let at = (next() as usize) % flipped.len();
                flipped[at] = next() as u8;
                let _ = text_fields(CURL_TYPE, &flipped[..cut.max(at)]);
            }
        }
        let alphabet: &[&[u8]] =
            &[b"--", b"\r\n", b"Content-Disposition: form-data; name=\"", b"\"", b"x", b"\xff"];
        for _ in 0..3000 {
            let mut body = b"--------------------------17d3911e391b957c".to_vec();
            for _ in 0..(next() % 40) {
                body.extend_from_slice(alphabet[(next() as usize) % alphabet.len()]);
                if next() % 5 == 0 {
                    body.extend_from_slice(b"\r\n--------------------------17d3911e391b957c");
                }
            }
            let _ = text_fields(CURL_TYPE, &body);
        }
    }
}
