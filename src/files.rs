//! The file store: the bytes of uploaded files, behind `FileStore`.
//!
//! The records (who uploaded what, which messages reference it) are state
//! (`state::files`), logged like any change; the bytes live here, named by
//! a store key the server chooses (`<realm_id>/<ab>/<token>`, all random
//! but the realm), never by anything the client sends. An upload is first
//! staged (received into a temporary file of the staging directory), then
//! `put` makes it durable under its key **before** the mutation recording
//! it is committed: a crash between the two leaves an orphan file, which
//! `reconcile` removes at the next start, never a record without bytes.
//!
//! `LocalStore` keeps the files in `<data-dir>/uploads/`. Every method is
//! blocking I/O: callers on a coroutine run it through `blocking`.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::state::files::Attachment;
use crate::state::State;

/// A validated store key: `<realm_id>/<ab>/<token>`, where `ab` is two
/// lowercase hex digits and `token` 24 ASCII letters and digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

/// Length of a key's token.
const TOKEN_LEN: usize = 24;

impl StoreKey {
    /// A fresh random key in `realm`.
    pub fn random(realm: u64) -> StoreKey {
        let ab = crate::entropy::token(2, b"0123456789abcdef");
        let token = crate::entropy::token(TOKEN_LEN, ALPHANUMERIC);
        StoreKey(format!("{realm}/{ab}/{token}"))
    }

    /// `key` if it has exactly a key's shape (no other text can name a
    /// stored file).
    pub fn parse(key: &str) -> Option<StoreKey> {
        let mut parts = key.split('/');
        let (realm, ab, token) = (parts.next()?, parts.next()?, parts.next()?);
        let ok = parts.next().is_none()
            && !realm.is_empty()
            && realm.len() <= 20
            && realm.bytes().all(|b| b.is_ascii_digit())
            && ab.len() == 2
            && ab.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && token.len() == TOKEN_LEN
            && token.bytes().all(|b| b.is_ascii_alphanumeric());
        ok.then(|| StoreKey(key.to_owned()))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A file received into the staging directory, removed when dropped
/// unless a store took it.
#[derive(Debug)]
pub struct Staged {
    path: Option<PathBuf>,
}

impl Staged {
    /// A new, empty file with a random name in `dir`, open for writing.
    pub fn create(dir: &Path) -> io::Result<(Staged, File)> {
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("in-{}", crate::entropy::token(TOKEN_LEN, ALPHANUMERIC)));
        let file = fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        Ok((Staged { path: Some(path) }, file))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.path.as_deref().expect("a staged file not yet taken")
    }

    /// Hands the file over (the caller now owns removing it).
    fn take(mut self) -> PathBuf {
        self.path.take().expect("a staged file not yet taken")
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// One file part of an upload route's multipart body.
#[derive(Debug)]
pub struct Upload {
    /// Its bytes.
    pub staged: Staged,
    /// The filename the client gave (unsanitised).
    pub filename: String,
    /// The media type the client declared, if any.
    pub content_type: Option<String>,
    /// Size in bytes.
    pub size: u64,
}

/// Where uploaded bytes are kept. A local directory today; an
/// S3-compatible backend implements the same five methods (ARCHITECTURE.md).
pub trait FileStore: Send + Sync + 'static {
    /// A local directory for request bodies and files being received.
    fn staging(&self) -> &Path;
    /// Makes `staged` durable under `key`: when this returns `Ok`, a crash
    /// cannot lose it.
    fn put(&self, staged: Staged, key: &StoreKey) -> io::Result<()>;
    /// `len` bytes of the file at `key` from `offset`.
    fn read(&self, key: &StoreKey, offset: u64, len: u64) -> io::Result<Vec<u8>>;
    /// Removes the file at `key` (absent already is fine).
    fn delete(&self, key: &StoreKey) -> io::Result<()>;
    /// Every stored key.
    fn list(&self) -> io::Result<Vec<StoreKey>>;
}

/// Files in a local directory: `<root>/<realm_id>/<ab>/<token>`, staging
/// in `<root>/tmp/`. What makes a file durable (its flush, its rename into
/// place, the directories' flushes) and removals go through the log's
/// file-system seam, `wal::Fs`.
pub struct LocalStore {
    root: PathBuf,
    staging: PathBuf,
    fs: Arc<dyn wal::Fs>,
}

impl LocalStore {
    /// The store of a data dir (`<data-dir>/uploads`); the staging
    /// directory is emptied (what is there is from requests a stop cut
    /// short).
    pub fn open(data_dir: &Path) -> io::Result<LocalStore> {
        LocalStore::open_on(data_dir, Arc::new(wal::RealFs))
    }

    /// `open`, flushing, renaming and removing through `fs`.
    pub fn open_on(data_dir: &Path, fs: Arc<dyn wal::Fs>) -> io::Result<LocalStore> {
        let root = data_dir.join("uploads");
        let staging = root.join("tmp");
        if staging.exists() {
            fs::remove_dir_all(&staging)?;
        }
        fs::create_dir_all(&staging)?;
        Ok(LocalStore { root, staging, fs })
    }

    fn path(&self, key: &StoreKey) -> PathBuf {
        self.root.join(key.as_str())
    }
}

impl FileStore for LocalStore {
    fn staging(&self) -> &Path {
        &self.staging
    }

    fn put(&self, staged: Staged, key: &StoreKey) -> io::Result<()> {
        let target = self.path(key);
        let dir = target.parent().expect("a key has directories");
        let created = !dir.exists();
        self.fs.create_dir_all(dir)?;
        self.fs.sync_all(&File::open(staged.path())?, staged.path())?;
        let from = staged.take();
        if let Err(e) = self.fs.rename(&from, &target) {
            let _ = self.fs.remove_file(&from);
            return Err(e);
        }
        self.fs.sync_dir(dir)?;
        if created {
            // The new directories' entries in their parents.
            let mut at = dir;
            while let Some(parent) = at.parent() {
                self.fs.sync_dir(parent)?;
                if parent == self.root {
                    break;
                }
                at = parent;
            }
        }
        Ok(())
    }

    fn read(&self, key: &StoreKey, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut file = File::open(self.path(key))?;
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(len).read_to_end(&mut bytes)?;
        if (bytes.len() as u64) < len {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stored file shorter"));
        }
        Ok(bytes)
    }

    fn delete(&self, key: &StoreKey) -> io::Result<()> {
        let path = self.path(key);
        match self.fs.remove_file(&path) {
            Ok(()) => self.fs.sync_dir(path.parent().expect("a key has directories")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn list(&self) -> io::Result<Vec<StoreKey>> {
        let mut keys = Vec::new();
        let entries = |dir: &Path| -> io::Result<Vec<(String, PathBuf)>> {
            let mut out = Vec::new();
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                out.push((entry.file_name().to_string_lossy().into_owned(), entry.path()));
            }
            Ok(out)
        };
        for (realm, realm_dir) in entries(&self.root)? {
            if realm == "tmp" || !realm_dir.is_dir() {
                continue;
            }
            for (ab, ab_dir) in entries(&realm_dir)? {
                if !ab_dir.is_dir() {
                    continue;
                }
                for (token, _) in entries(&ab_dir)? {
                    if let Some(key) = StoreKey::parse(&format!("{realm}/{ab}/{token}")) {
                        keys.push(key);
                    }
                }
            }
        }
        keys.sort();
        Ok(keys)
    }
}

/// What `reconcile` found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Stored files no record names (a crash after `put`), removed.
    pub orphans_removed: Vec<String>,
    /// Recorded files whose bytes are missing: (attachment or emoji id,
    /// or for an avatar its user's id; the URL path it is served at).
    pub missing: Vec<(u64, String)>,
}

/// Compares the store with the recorded attachments at start-up: removes
/// orphan files, reports records whose file is missing.
pub fn reconcile(store: &dyn FileStore, state: &State) -> io::Result<Reconciled> {
    let recorded: FxHashMap<String, Option<u64>> =
        state.files.store_keys().into_iter().map(|(id, key)| (key, id)).collect();
    let stored = store.list()?;
    let mut report = Reconciled::default();
    let mut present = rustc_hash::FxHashSet::default();
    for key in stored {
        if recorded.contains_key(key.as_str()) {
            present.insert(key.as_str().to_owned());
        } else {
            store.delete(&key)?;
            report.orphans_removed.push(key.as_str().to_owned());
        }
    }
    let mut missing: Vec<(u64, String)> = recorded
        .iter()
        .filter(|(key, _)| !present.contains(*key))
        .filter_map(|(key, id)| match id {
            Some(id) => state.files.get(*id).map(|a| {
                let what = if a.store_key() == key.as_str() { "" } else { "thumbnail/" };
                (a.id, format!("/user_uploads/{what}{}", a.path_id))
            }),
            None => state
                .files
                .emoji_by_key(key)
                .map(|e| e.id)
                .or_else(|| state.files.avatar_by_key(key).map(|(user, _)| user.0))
                .map(|id| (id, format!("/user_avatars/{key}"))),
        })
        .collect();
    missing.sort();
    report.missing = missing;
    Ok(report)
}

/// Blocking file work run at once, at most.
const BLOCKING_SLOTS: usize = 8;

/// Runs blocking I/O `f` on its own OS thread while the calling coroutine
/// parks (at most `BLOCKING_SLOTS` at once; more park until one ends).
/// Called off a coroutine (a test's thread), it works the same.
pub fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    static SLOTS: OnceLock<may::sync::Semphore> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| may::sync::Semphore::new(BLOCKING_SLOTS));
    slots.wait();
    let (tx, rx) = may::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    let result = rx.recv();
    slots.post();
    result.expect("a file I/O thread panicked")
}

/// The longest display name kept, in bytes.
pub const MAX_NAME_BYTES: usize = 200;

/// A client's filename made safe for a URL segment and a
/// `Content-Disposition`: the part after the last `/` or `\`, only
/// letters, digits, `.`, `-` and `_` (runs of anything else become one
/// `-`), no leading dots, at most `MAX_NAME_BYTES`; `uploaded-file` if
/// nothing is left.
pub fn sanitize_name(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let mut out = String::new();
    let mut gap = false;
    for c in base.chars() {
        if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            if out.len() + c.len_utf8() > MAX_NAME_BYTES {
                break;
            }
            out.push(c);
        } else {
            gap = true;
        }
    }
    let trimmed = out.trim_start_matches(['.', '-']).trim_end_matches(['.', '-']);
    if trimmed.is_empty() {
        "uploaded-file".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The media type to record: the client's when it is a plain
/// `type/subtype` (lowercased, parameters dropped), else one guessed from
/// the name's extension.
pub fn content_type(declared: Option<&str>, name: &str) -> String {
    if let Some(declared) = declared {
        let media = declared.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let token = |t: &str| {
            !t.is_empty()
                && t.len() <= 100
                && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
        };
        if let Some((kind, sub)) = media.split_once('/') {
            if token(kind) && token(sub) && media != "application/octet-stream" {
                return media;
            }
        }
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "bmp" => "image/bmp",
        "svg" => "image/svg+xml",
        "mp4" | "m4v" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "mp3" => "audio/mpeg",
        "m4a" => "audio/mp4",
        "ogg" | "oga" => "audio/ogg",
        "wav" => "audio/wav",
        "flac" => "audio/flac",
        "pdf" => "application/pdf",
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => "application/octet-stream",
    }
    .to_owned()
}

/// Media types served inline (shown in the browser): images that cannot
/// run script, audio, video and PDF. Everything else (SVG and HTML
/// included) is served as a download.
pub fn is_inline(content_type: &str) -> bool {
    matches!(
        content_type,
        "image/png"
            | "image/jpeg"
            | "image/gif"
            | "image/webp"
            | "image/avif"
            | "image/bmp"
            | "video/mp4"
            | "video/webm"
            | "audio/mpeg"
            | "audio/mp4"
            | "audio/ogg"
            | "audio/wav"
            | "audio/flac"
            | "audio/webm"
            | "application/pdf"
    )
}

/// How long a temporary download URL stays valid.
pub const TEMPORARY_URL_LIFE: Duration = Duration::from_secs(60);

/// Short-lived download tokens (`GET /api/v1/user_uploads/…`): token →
/// (attachment id, expiry). In memory only: a restart ends them early.
#[derive(Default)]
pub struct TemporaryUrls {
    tokens: Mutex<FxHashMap<String, (u64, Instant)>>,
}

impl TemporaryUrls {
    /// A new token for attachment `id`, valid for `TEMPORARY_URL_LIFE`.
    pub fn issue(&self, id: u64) -> String {
        let token = crate::entropy::token(32, ALPHANUMERIC);
        let now = Instant::now();
        let mut tokens = self.tokens.lock();
        tokens.retain(|_, (_, expiry)| *expiry > now);
        tokens.insert(token.clone(), (id, now + TEMPORARY_URL_LIFE));
        token
    }

    /// The attachment a live token names.
    pub fn resolve(&self, token: &str) -> Option<u64> {
        let tokens = self.tokens.lock();
        tokens.get(token).filter(|(_, expiry)| *expiry > Instant::now()).map(|(id, _)| *id)
    }
}

/// Whether an attachment's bytes are where its record says (used by
/// tests and the start-up report).
pub fn is_stored(store: &dyn FileStore, attachment: &Attachment) -> bool {
    StoreKey::parse(attachment.store_key())
        .is_some_and(|key| store.read(&key, 0, attachment.size.min(1)).is_ok())
}

/// Writes all of `bytes` to a staged file (tests and fixtures).
pub fn stage_bytes(store: &dyn FileStore, bytes: &[u8]) -> io::Result<Staged> {
    let (staged, mut file) = Staged::create(store.staging())?;
    file.write_all(bytes)?;
    Ok(staged)
}

/// A shared store.
pub type Store = Arc<dyn FileStore>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_one_shape() {
        let key = StoreKey::random(7);
        assert!(StoreKey::parse(key.as_str()).is_some(), "{key:?}");
        assert!(key.as_str().starts_with("7/"));
        for bad in [
            "",
            "7",
            "7/ab",
            "7/ab/../../etc/passwd",
            "../ab/ABCDEFGHIJKLMNOPQRSTUVWX",
            "/7/ab/ABCDEFGHIJKLMNOPQRSTUVWX",
            "7/AB/ABCDEFGHIJKLMNOPQRSTUVWX",
            "7/ab/ABCDEFGHIJKLMNOPQRSTUVW\0",
            "7/ab/ABCDEFGHIJKLMNOPQRSTUVWX/x",
            "7/ab/ABCDEFGHIJKLMNOPQRSTUVWXY",
            "x7/ab/ABCDEFGHIJKLMNOPQRSTUVWX",
        ] {
            assert!(StoreKey::parse(bad).is_none(), "{bad:?}");
        }
        assert!(StoreKey::parse("7/ab/ABCDEFGHIJKLMNOPQRSTUVWX").is_some());
    }

    #[test]
    fn names_are_sanitised() {
        assert_eq!(sanitize_name("report 2024.pdf"), "report-2024.pdf");
        assert_eq!(sanitize_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_name("C:\\Users\\x\\photo.png"), "photo.png");
        assert_eq!(sanitize_name("/abs/path"), "path");
        assert_eq!(sanitize_name(".."), "uploaded-file");
        assert_eq!(sanitize_name(".hidden"), "hidden");
        assert_eq!(sanitize_name("a\0b"), "a-b");
        assert_eq!(sanitize_name("<script>.html"), "script-.html");
        assert_eq!(sanitize_name("résumé.txt"), "résumé.txt");
        assert_eq!(sanitize_name(""), "uploaded-file");
        assert_eq!(sanitize_name("a\"b;c\r\nd"), "a-b-c-d");
        let long = "x".repeat(5000) + ".txt";
        assert_eq!(sanitize_name(&long).len(), MAX_NAME_BYTES);
    }

    #[test]
    fn content_types_are_plain_or_guessed() {
        assert_eq!(content_type(Some("image/PNG"), "x"), "image/png");
        assert_eq!(content_type(Some("text/html; charset=utf-8"), "x"), "text/html");
        assert_eq!(content_type(Some("text/html\r\nX-Evil: 1"), "a.png"), "image/png");
        assert_eq!(content_type(None, "a.SVG"), "image/svg+xml");
        assert_eq!(content_type(Some("application/octet-stream"), "a.jpg"), "image/jpeg");
        assert_eq!(content_type(None, "noext"), "application/octet-stream");
        assert!(is_inline("image/png") && is_inline("video/mp4"));
        assert!(!is_inline("image/svg+xml") && !is_inline("text/html"));
    }

    #[test]
    fn local_store_puts_reads_lists_and_reconciles() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path()).unwrap();
        let key = StoreKey::random(3);
        store.put(stage_bytes(&store, b"hello world").unwrap(), &key).unwrap();
        assert_eq!(store.read(&key, 6, 5).unwrap(), b"world");
        assert!(store.read(&key, 6, 50).is_err(), "past the end");
        assert_eq!(store.list().unwrap(), vec![key.clone()]);
        assert_eq!(fs::read_dir(store.staging()).unwrap().count(), 0, "the staged file moved");
        // A staged file that is dropped is removed.
        drop(stage_bytes(&store, b"x").unwrap());
        assert_eq!(fs::read_dir(store.staging()).unwrap().count(), 0);
        // No record names it: an orphan.
        let state = State::new();
        let report = reconcile(&store, &state).unwrap();
        assert_eq!(report.orphans_removed, vec![key.as_str().to_owned()]);
        assert!(store.list().unwrap().is_empty());
        store.delete(&key).unwrap();
    }

    /// A stored file survives a power cut right after `put` returned; a
    /// failed rename into place is an error and leaves no staged file.
    #[test]
    fn a_put_file_survives_a_power_cut_and_a_failed_rename_is_refused() {
        use wal::sim::{Fault, FaultKind, Op, SimFs};
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(SimFs::new());
        let store = LocalStore::open_on(dir.path(), sim.clone()).unwrap();
        let key = StoreKey::random(3);
        store.put(stage_bytes(&store, b"hello world").unwrap(), &key).unwrap();
        sim.inject(Fault {
            op: Op::Rename,
            path_contains: "in-".into(),
            kind: FaultKind::Eio,
            times: 1,
        });
        let refused = StoreKey::random(3);
        assert!(store.put(stage_bytes(&store, b"lost").unwrap(), &refused).is_err());
        assert_eq!(fs::read_dir(store.staging()).unwrap().count(), 0);
        sim.cut_power_now();
        drop(store);
        sim.restore_durable().unwrap();
        let store = LocalStore::open(dir.path()).unwrap();
        assert_eq!(store.list().unwrap(), vec![key.clone()]);
        assert_eq!(store.read(&key, 0, 11).unwrap(), b"hello world");
    }

    #[test]
    fn temporary_urls_resolve_their_attachment_only() {
        let urls = TemporaryUrls::default();
        let token = urls.issue(5);
        assert_eq!(urls.resolve(&token), Some(5));
        assert_eq!(urls.resolve("nope"), None);
        assert_ne!(urls.issue(5), token);
    }
}
