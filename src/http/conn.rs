//! natter's HTTP/1.1 connection loop, on may coroutines (`may::net`) and
//! `httparse`: one coroutine per connection, reading requests, handing each
//! to a `Handler`, and writing the replies in order.
//!
//! What it guarantees on the wire (each shown by a test in
//! `tests/api_wire.rs`): keep-alive and in-order pipelining; at most
//! `max_headers` headers and `max_head_bytes` of request head, beyond either
//! a 431 with a Zulip-shaped body; `Content-Length` and chunked bodies up to
//! `max_body_bytes` (413 beyond); `Expect: 100-continue` answered before the
//! body is read; `Connection: close` and HTTP/1.0 honoured; a head not
//! complete within `read_timeout` of its first byte, or a body that makes no
//! progress for `read_timeout`, gets a 408 and the connection is closed; a connection with no request in progress for `idle_timeout` is
//! closed (a handler that parks, such as a long-poll, is not idle: nothing
//! is read while it runs); past `max_connections` open connections a new
//! one gets a 503 and is closed. A reply is written with the coroutine's
//! own blocking write, so a slow reader only holds its own coroutine.
//!
//! Every connection that is closed by the server after an error reply is
//! closed gracefully: the write side is shut down and what the client still
//! sends is read and dropped for a short, bounded time, so the client sees
//! the reply instead of a reset.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use may::net::{TcpListener, TcpStream};

use super::alarm::{AlarmSlot, Alarms};
use super::response::{self, Response};
use super::spawn::SpawnCo;
use crate::config::WireLimits;
use crate::error::ApiError;
use crate::files::Staged;

/// The clock time of `at` as `HH:MM:SS.mmm`, UTC: for lining a log line up
/// with other records of the same moment.
pub fn clock_time(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        since.subsec_millis()
    )
}

/// With `--slow-request-ms`: when the request read at `began` took at
/// least that long, one line on stderr with its method, path (never the
/// query) and time.
fn note_slow(
    limits: &WireLimits,
    method: &str,
    target: &str,
    began: Option<(Instant, SystemTime)>,
) {
    let (Some(limit), Some((started, at))) = (limits.slow_request, began) else { return };
    let took = started.elapsed();
    if took >= limit {
        let path = target.split('?').next().unwrap_or("");
        tracing::warn!(
            target: "natter::request",
            "slow request: {method} {path} took {:.1} ms (read at {} UTC)",
            took.as_secs_f64() * 1000.0,
            clock_time(at)
        );
    }
}

/// One request, borrowed from the connection's buffers.
pub struct Request<'a> {
    /// `GET`, `POST`, …
    pub method: &'a str,
    /// The request target as sent (path and query).
    pub target: &'a str,
    /// The headers in the order sent.
    pub headers: &'a [httparse::Header<'a>],
    /// The body (chunked encoding already removed); empty when it was
    /// streamed to a file (`spooled`).
    pub body: &'a [u8],
    /// On a route that streams its body to a file (`Handler::spool`):
    /// that file, complete.
    pub spooled: Option<&'a Staged>,
    /// The client's address as the connection was accepted from it.
    pub peer: Option<IpAddr>,
}

/// How a route's body is received when it is streamed to a file instead of
/// memory (uploads): decided from the request line before the body is read.
pub struct Spool {
    /// The directory the body's file is created in.
    pub dir: PathBuf,
    /// The largest body accepted.
    pub limit: u64,
    /// The reply to a body over `limit`.
    pub too_large: Response,
}

impl Request<'_> {
    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
}

/// What answers requests: natter's `Service`, or a fixed reply in the
/// ceiling benchmark. Runs on the connection's coroutine and may park it.
pub trait Handler: Send + Sync + 'static {
    /// What one connection keeps from one request to the next (natter:
    /// the realm and account its headers resolved to); starts as default.
    type Session: Default;
    /// The reply to one request.
    fn handle(&self, req: &Request<'_>, session: &mut Self::Session) -> Response;

    /// Whether the request with this method, target (path and query) and
    /// headers streams its body to a file, as it arrives, instead of
    /// buffering it under `max_body_bytes`.
    fn spool(&self, _method: &str, _target: &str, _headers: &[httparse::Header]) -> Option<Spool> {
        None
    }
}

/// Connection counts of a listener, for monitoring.
#[derive(Default)]
pub struct ConnFigures {
    /// Connections open now (refused ones not counted).
    pub open: AtomicUsize,
    /// Connections accepted since start.
    pub accepted: AtomicU64,
    /// Connections refused since start: past `max_connections`, answered
    /// 503 or closed.
    pub refused: AtomicU64,
}

/// Starts accepting on `listener`, counting into `figures`; returns the
/// accept coroutine's handle.
pub fn serve<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    limits: WireLimits,
    figures: Arc<ConnFigures>,
) -> io::Result<may::coroutine::JoinHandle<()>> {
    let limits = Arc::new(limits);
    may::coroutine::Builder::new().name("natter-accept".into()).spawn_co(move || {
        accept_loop(listener, handler, limits, figures);
    })
}

/// Counts a connection as open until dropped.
struct OpenSlot(Arc<AtomicUsize>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts a connection as open in the listener's figures until dropped.
struct Counted(Arc<ConnFigures>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

fn accept_loop<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    limits: Arc<WireLimits>,
    figures: Arc<ConnFigures>,
) {
    let open = &figures.open;
    let alarms = Alarms::start();
    // Connections being refused with a 503 (bounded, so a flood cannot
    // pile up refusing coroutines or file descriptors either).
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut warned = false;
    loop {
        let (stream, peer) = match listener.accept() {
            Ok((stream, peer)) => (stream, Some(peer.ip())),
            Err(e) => {
                // Out of file descriptors or a transient error: say so once,
                // back off briefly, keep serving the open connections.
                if !warned {
                    tracing::warn!("accept failed: {e}");
                    warned = true;
                }
                may::coroutine::sleep(Duration::from_millis(20));
                continue;
            }
        };
        warned = false;
        if open.fetch_add(1, Ordering::AcqRel) >= limits.max_connections {
            open.fetch_sub(1, Ordering::AcqRel);
            figures.refused.fetch_add(1, Ordering::Relaxed);
            if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
                refusing.fetch_sub(1, Ordering::AcqRel);
                continue; // dropped: closes at once
            }
            let slot = OpenSlot(Arc::clone(&refusing));
            let limits = Arc::clone(&limits);
            let alarm = alarms.register(&stream);
            let spawned = may::coroutine::Builder::new().spawn_co(move || {
                let _slot = slot;
                let mut conn = Conn::new(stream, alarm, &limits, peer);
                conn.refuse(response::error(&response::too_many_connections()));
            });
            if let Err(e) = spawned {
                tracing::warn!("cannot start a coroutine: {e}");
            }
            continue;
        }
        figures.accepted.fetch_add(1, Ordering::Relaxed);
        let slot = Counted(Arc::clone(&figures));
        let (handler, limits) = (Arc::clone(&handler), Arc::clone(&limits));
        let alarm = alarms.register(&stream);
        let spawned = may::coroutine::Builder::new().spawn_co(move || {
            let _slot = slot;
            Conn::new(stream, alarm, &limits, peer).run(&*handler);
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start a coroutine: {e}");
        }
    }
}

/// Most connections being answered 503 at once; past this, a connection
/// over the cap is closed without a reply.
pub const MAX_REFUSING: usize = 64;
/// Initial size of a connection's read buffer; it grows for a large head or
/// body and shrinks back once that request is done.
const READ_BUF: usize = 8 * 1024;
/// Buffers larger than this are released after the request that grew them.
const KEEP_BUF: usize = 64 * 1024;
/// Replies larger than this are written straight from the handler's buffer
/// instead of being copied behind the head.
const COPY_REPLY: usize = 16 * 1024;
/// Replies of at least this size are copied to the socket by a writer
/// thread at nice 19 (`Socket::write_in_background`).
const BACKGROUND_REPLY: usize = 32 * 1024;
/// Writer threads for large replies.
const WRITER_THREADS: usize = 2;
/// Headers parsed in a stack array (2 KiB); more come from the heap.
const INLINE_HEADERS: usize = 64;
/// Longest a chunk-size line may be.
const MAX_CHUNK_LINE: usize = 1024;
/// After an error reply, how long to keep reading (and dropping) what the
/// client still sends before closing, so it sees the reply, not a reset.
const LINGER: Duration = Duration::from_secs(2);
/// Bytes dropped at most while lingering.
const LINGER_BYTES: usize = 4 * 1024 * 1024;
/// A body over the limit by at most this factor is read and dropped so the
/// connection stays usable; larger ones close it.
const DISCARD_FACTOR: usize = 4;

/// How a request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    Length(usize),
    Chunked,
}

/// What the head says about framing and the connection, copied out so the
/// buffer can be read into while the body arrives.
#[derive(Clone, Copy, Debug)]
struct Framing {
    head_len: usize,
    body: Body,
    keep_alive: bool,
    http10: bool,
    expect_continue: bool,
    head_method: bool,
}

/// Why a request cannot be served: answered, then the connection closes.
struct Refusal(Response);

impl From<crate::error::ApiError> for Refusal {
    fn from(e: crate::error::ApiError) -> Self {
        Refusal(response::error(&e))
    }
}

/// The outcome of reading from the socket.
enum Fill {
    Data,
    Eof,
    TimedOut,
    Failed,
}

struct Conn<'l> {
    stream: Socket,
    limits: &'l WireLimits,
    /// Received bytes are `buf[start..end]`; `buf` is always initialized.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Replies not yet written.
    out: Vec<u8>,
    /// A decoded chunked body.
    body: Vec<u8>,
    /// The client's address.
    peer: Option<IpAddr>,
}

/// The socket, read and written with plain non-blocking system calls; a
/// wait for either direction parks in `WaitIo::wait_io` until the next
/// readiness event or the alarm's deadline.
///
/// may's readiness flag (set by its event loop on each readiness event,
/// edge-triggered, for reading and writing alike) is what `wait_io` parks
/// on and clears. So `pending` records whether the socket may hold bytes
/// that no flag announces: true at first, after a read that filled the
/// buffer, and after a wait for writing (which may have cleared a flag a
/// read event raised); false after a read found the socket drained. While
/// it is false, waiting before reading loses nothing: bytes that arrive
/// later raise the flag.
///
/// **No may call with a time-out is ever made on it** (no `set_read_timeout`
/// or `set_write_timeout`): such a call parks with a timer in the timer
/// list of the worker that owns the socket, and the alarm's sweeper wakes
/// a connection through `WaitIoWaker::wakeup`, which removes that timer
/// from whichever thread the sweeper runs on. may's timer list may only
/// be changed by its own worker, so a sweep that met a write parked that
/// way would corrupt it. Every wait here is `wait_io`, which sets no timer.
struct Socket {
    stream: TcpStream,
    pending: bool,
    /// Ends a wait (for bytes to read, or for room to write) at its deadline.
    alarm: AlarmSlot,
    /// The longest a write may make no progress before the reply is
    /// abandoned.
    write_timeout: Duration,
}

impl Socket {
    /// Writes `head` then `body`, as `write_all` does, but has a writer
    /// thread at nice 19 copy into the socket what it takes without
    /// waiting, while this coroutine parks; what is left (a client slow
    /// to read) this coroutine writes itself. A large reply costs its
    /// sender a kernel copy and, on the loopback, the receiver's side of
    /// TCP too: done at background priority, a box saturated by large
    /// reads keeps its cores for the requests that change state (and for
    /// small replies), and large replies slow down instead. Gives `head`
    /// back for reuse; the outer error is the hand-off's, the inner the
    /// write's.
    fn write_in_background(
        &mut self,
        head: Vec<u8>,
        body: Vec<u8>,
    ) -> io::Result<(Vec<u8>, io::Result<()>)> {
        static WRITERS: std::sync::OnceLock<crate::priority::Pool> = std::sync::OnceLock::new();
        let writers = WRITERS.get_or_init(|| {
            crate::priority::Pool::start(
                "writer",
                WRITER_THREADS,
                crate::priority::Priority::Background,
                None,
            )
        });
        // A second descriptor of the same socket (non-blocking like the
        // first); nobody else writes meanwhile: this coroutine owns the
        // connection and parks until the job is done.
        let socket = self.stream.inner().try_clone()?;
        let job = move || {
            let written = write_without_waiting(&socket, &head, &body);
            (head, body, written)
        };
        let Some((head, body, written)) = writers.run(job) else {
            return Err(io::Error::other("the writer thread failed"));
        };
        let result = written.and_then(|n| {
            let (head_rest, body_rest) = match n.checked_sub(head.len()) {
                None => (&head[n..], &body[..]),
                Some(k) => (&[][..], &body[k..]),
            };
            self.write_all(head_rest)?;
            self.write_all(body_rest)
        });
        Ok((head, result))
    }

    /// Writes all of `bytes`; a zero-length write is a closed peer, and a
    /// client that takes no bytes for `write_timeout` a time-out.
    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let mut deadline = None;
        while !bytes.is_empty() {
            match self.stream.inner().write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    bytes = &bytes[n..];
                    deadline = None;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The client is slow to read: wait for room (any
                    // readiness event wakes the wait; the write says
                    // whether there is room) until the deadline.
                    let due = *deadline.get_or_insert_with(|| Instant::now() + self.write_timeout);
                    if Instant::now() >= due {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    self.pending = true;
                    self.alarm.wait(&self.stream, due);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl<'l> Conn<'l> {
    fn new(
        stream: TcpStream,
        alarm: AlarmSlot,
        limits: &'l WireLimits,
        peer: Option<IpAddr>,
    ) -> Self {
        let _ = stream.set_nodelay(true);
        // A reply that makes no progress for this long is abandoned.
        let write_timeout = limits.read_timeout;
        Conn {
            stream: Socket { stream, pending: true, alarm, write_timeout },
            limits,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            out: Vec::new(),
            body: Vec::new(),
            peer,
        }
    }

    /// Serves requests until the client closes, an idle time-out, or an
    /// error closes the connection.
    fn run<H: Handler>(&mut self, handler: &H) {
        let mut head_deadline: Option<Instant> = None;
        let mut session = H::Session::default();
        loop {
            match self.next_request(handler, &mut session) {
                Ok(Some(true)) => {
                    head_deadline = None;
                    continue;
                }
                Ok(Some(false)) => {
                    // Connection: close or HTTP/1.0: the reply is queued.
                    if self.flush().is_ok() {
                        self.linger();
                    }
                    return;
                }
                Ok(None) => {}
                Err(Refusal(reply)) => return self.refuse(reply),
            }
            // Need more bytes: send what is ready first.
            if self.flush().is_err() {
                return;
            }
            let deadline = if self.start == self.end {
                None
            } else {
                Some(
                    *head_deadline.get_or_insert_with(|| Instant::now() + self.limits.read_timeout),
                )
            };
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Eof | Fill::Failed => return,
                Fill::TimedOut if deadline.is_some() => {
                    return self.refuse(response::error(&response::request_timeout()))
                }
                Fill::TimedOut => return, // idle keep-alive connection
            }
        }
    }

    /// Answers one complete request from the buffer. `Ok(None)`: the head is
    /// not complete yet; `Ok(Some(keep_alive))`: answered.
    fn next_request<H: Handler>(
        &mut self,
        handler: &H,
        session: &mut H::Session,
    ) -> Result<Option<bool>, Refusal> {
        let limits = self.limits;
        let framing = {
            let data = &self.buf[self.start..self.end];
            let mut inline = [MaybeUninit::<httparse::Header>::uninit(); INLINE_HEADERS];
            let mut heap = Vec::new();
            let slots: &mut [MaybeUninit<httparse::Header>] =
                if limits.max_headers <= INLINE_HEADERS {
                    &mut inline[..limits.max_headers]
                } else {
                    heap.resize(limits.max_headers, MaybeUninit::uninit());
                    &mut heap
                };
            let mut req = httparse::Request::new(&mut []);
            let head_len = match req.parse_with_uninit_headers(data, slots) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => {
                    if data.len() > limits.max_head_bytes {
                        return Err(response::head_too_large(limits).into());
                    }
                    return Ok(None);
                }
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(response::too_many_headers(limits).into())
                }
                Err(e) => return Err(response::malformed(&e.to_string()).into()),
            };
            if head_len > limits.max_head_bytes {
                return Err(response::head_too_large(limits).into());
            }
            let framing = framing(&req, head_len)?;
            let spool =
                handler.spool(req.method.unwrap_or(""), req.path.unwrap_or(""), req.headers);
            if let Some(plan) = spool {
                return self.spooled_request(handler, session, framing, plan);
            }
            // The common case: the whole body is already here.
            if let Body::Length(n) = framing.body {
                if n <= limits.max_body_bytes && data.len() >= head_len + n {
                    let request = Request {
                        method: req.method.unwrap_or(""),
                        target: req.path.unwrap_or(""),
                        headers: req.headers,
                        body: &data[head_len..head_len + n],
                        spooled: None,
                        peer: self.peer,
                    };
                    if !self.out.is_empty() {
                        // The handler may park (long-poll): earlier replies
                        // must not wait behind it.
                        self.stream.write_all(&self.out).map_err(|_| closed())?;
                        self.out.clear();
                    }
                    let began = limits.slow_request.map(|_| (Instant::now(), SystemTime::now()));
                    let mut reply = handler.handle(&request, session);
                    let written = encode(&mut self.out, &mut self.stream, &mut reply, &framing);
                    note_slow(limits, request.method, request.target, began);
                    self.consume(head_len + n);
                    written.map_err(|_| closed())?;
                    return Ok(Some(framing.keep_alive));
                }
            }
            framing
        };
        // The body is still arriving (or is chunked, or too large).
        let body_len = match framing.body {
            Body::Length(n) if n > limits.max_body_bytes => {
                let mut reply = response::error(&response::body_too_large(limits));
                if framing.expect_continue
                    || n > limits.max_body_bytes.saturating_mul(DISCARD_FACTOR)
                {
                    return Err(Refusal(reply));
                }
                // Read and drop the body so the connection stays in step.
                self.discard(framing.head_len + n)?;
                encode(&mut self.out, &mut self.stream, &mut reply, &framing)
                    .map_err(|_| closed())?;
                return Ok(Some(framing.keep_alive));
            }
            Body::Length(n) => {
                self.send_continue(&framing)?;
                self.await_bytes(framing.head_len + n)?;
                n
            }
            Body::Chunked => {
                self.send_continue(&framing)?;
                self.read_chunked(framing.head_len)?
            }
        };
        // Parse the head again over the (possibly moved) buffer and answer.
        let data = &self.buf[self.start..self.end];
        let mut heap = vec![httparse::EMPTY_HEADER; limits.max_headers];
        let mut req = httparse::Request::new(&mut heap);
        if !matches!(req.parse(data), Ok(httparse::Status::Complete(_))) {
            return Err(response::malformed("request head changed").into());
        }
        let (body, consumed) = match framing.body {
            Body::Length(n) => {
                (&data[framing.head_len..framing.head_len + n], framing.head_len + n)
            }
            Body::Chunked => (&self.body[..], body_len),
        };
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).map_err(|_| closed())?;
            self.out.clear();
        }
        let request = Request {
            method: req.method.unwrap_or(""),
            target: req.path.unwrap_or(""),
            headers: req.headers,
            body,
            spooled: None,
            peer: self.peer,
        };
        let began = limits.slow_request.map(|_| (Instant::now(), SystemTime::now()));
        let mut reply = handler.handle(&request, session);
        let written = encode(&mut self.out, &mut self.stream, &mut reply, &framing);
        note_slow(limits, request.method, request.target, began);
        self.consume(consumed);
        self.body.clear();
        if self.body.capacity() > KEEP_BUF {
            self.body = Vec::new();
        }
        written.map_err(|_| closed())?;
        Ok(Some(framing.keep_alive))
    }

    /// Answers a request whose body streams to a file (`Handler::spool`):
    /// the body is handed to a writer thread piece by piece as it arrives
    /// (at most `SPOOL_AHEAD` pieces waiting), so neither the whole body
    /// nor a blocking write is ever on this coroutine.
    fn spooled_request<H: Handler>(
        &mut self,
        handler: &H,
        session: &mut H::Session,
        framing: Framing,
        plan: Spool,
    ) -> Result<Option<bool>, Refusal> {
        let n = match framing.body {
            Body::Chunked => return Err(response::length_required().into()),
            Body::Length(n) if n as u64 > plan.limit => return Err(Refusal(plan.too_large)),
            Body::Length(n) => n,
        };
        self.send_continue(&framing)?;
        let head_len = framing.head_len;
        if self.buf.len() - self.start < head_len + SPOOL_PIECE {
            self.compact();
            let want = head_len + SPOOL_PIECE;
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
        }
        let mut spooler = Spooler::start(&plan.dir);
        let mut remaining = n;
        while remaining > 0 {
            let body_at = self.start + head_len;
            let have = self.end - body_at;
            if have == 0 {
                self.body_read()?;
                continue;
            }
            let take = have.min(remaining);
            spooler.push(self.buf[body_at..body_at + take].to_vec())?;
            // What follows the body (a pipelined request) moves up.
            self.buf.copy_within(body_at + take..self.end, body_at);
            self.end -= take;
            remaining -= take;
        }
        let staged = spooler.finish()?;
        let data = &self.buf[self.start..self.end];
        let mut heap = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut req = httparse::Request::new(&mut heap);
        if !matches!(req.parse(data), Ok(httparse::Status::Complete(_))) {
            return Err(response::malformed("request head changed").into());
        }
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).map_err(|_| closed())?;
            self.out.clear();
        }
        let request = Request {
            method: req.method.unwrap_or(""),
            target: req.path.unwrap_or(""),
            headers: req.headers,
            body: &[],
            spooled: Some(&staged),
            peer: self.peer,
        };
        let began = self.limits.slow_request.map(|_| (Instant::now(), SystemTime::now()));
        let mut reply = handler.handle(&request, session);
        let written = encode(&mut self.out, &mut self.stream, &mut reply, &framing);
        note_slow(self.limits, request.method, request.target, began);
        self.consume(head_len);
        written.map_err(|_| closed())?;
        Ok(Some(framing.keep_alive))
    }

    /// `100 Continue` when the client waits for it and the body is not here.
    fn send_continue(&mut self, framing: &Framing) -> Result<(), Refusal> {
        let have = self.end - self.start - framing.head_len;
        if framing.expect_continue && have == 0 {
            self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            self.flush().map_err(|_| closed())?;
        }
        Ok(())
    }

    /// Reads until `len` bytes of the current request are buffered.
    fn await_bytes(&mut self, len: usize) -> Result<(), Refusal> {
        if self.buf.len() - self.start < len {
            // Make room for the whole request at once.
            self.compact();
            if self.buf.len() < len {
                self.buf.resize(len, 0);
            }
        }
        while self.end - self.start < len {
            self.body_read()?;
        }
        Ok(())
    }

    /// Reads and drops the current request (`len` bytes from `start`).
    fn discard(&mut self, mut len: usize) -> Result<(), Refusal> {
        loop {
            let have = (self.end - self.start).min(len);
            self.consume(have);
            len -= have;
            if len == 0 {
                return Ok(());
            }
            self.body_read()?;
        }
    }

    /// Decodes a chunked body that starts `head_len` bytes into the request
    /// into `self.body`; returns how many request bytes it spanned.
    fn read_chunked(&mut self, head_len: usize) -> Result<usize, Refusal> {
        let limits = self.limits;
        self.body.clear();
        let mut off = head_len;
        // The raw chunked bytes stay buffered until the request is answered;
        // tiny chunks with long extensions could make them far larger than
        // the decoded body, so they are bounded too.
        let raw_limit =
            limits.max_body_bytes.saturating_mul(2).saturating_add(head_len + 64 * 1024);
        loop {
            if off > raw_limit {
                return Err(response::body_too_large(limits).into());
            }
            let data = &self.buf[self.start + off..self.end];
            match next_chunk(data, self.body.len(), limits)? {
                Chunk::Partial(want) => {
                    if let Some(want) = want.map(|n| off + n) {
                        if self.buf.len() - self.start < want {
                            self.compact();
                            if self.buf.len() < want {
                                self.buf.resize(want, 0);
                            }
                        }
                    }
                    self.body_read()?;
                }
                Chunk::Data { start, size } => {
                    self.body.extend_from_slice(&data[start..start + size]);
                    off += start + size + 2;
                }
                Chunk::Last(len) => return Ok(off + len),
            }
        }
    }

    /// One read of a request body: it may take up to the read time-out (so
    /// a slow but moving upload is not cut off); a time-out or close is
    /// final.
    fn body_read(&mut self) -> Result<(), Refusal> {
        match self.fill(Some(Instant::now() + self.limits.read_timeout)) {
            Fill::Data => Ok(()),
            Fill::TimedOut => Err(response::request_timeout().into()),
            Fill::Eof | Fill::Failed => Err(closed()),
        }
    }

    /// Reads what is available, waiting until `deadline` (a request in
    /// progress) or for the idle time-out (between requests).
    fn fill(&mut self, deadline: Option<Instant>) -> Fill {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.compact();
            } else {
                let bigger = self.buf.len() * 2;
                self.buf.resize(bigger, 0);
            }
        }
        let deadline = deadline.unwrap_or_else(|| Instant::now() + self.limits.idle_timeout);
        loop {
            if !self.stream.pending {
                if Instant::now() >= deadline {
                    return Fill::TimedOut;
                }
                // Drained: wait for the next readiness event (or the alarm).
                self.stream.alarm.wait(&self.stream.stream, deadline);
            }
            let space = self.buf.len() - self.end;
            match self.stream.stream.inner().read(&mut self.buf[self.end..]) {
                Ok(0) => return Fill::Eof,
                Ok(n) => {
                    self.end += n;
                    self.stream.pending = n == space;
                    return Fill::Data;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.stream.pending = false;
                    if Instant::now() >= deadline {
                        return Fill::TimedOut;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Fill::Failed,
            }
        }
    }

    /// Moves the unconsumed bytes to the front of the buffer.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    /// Drops `n` handled bytes; releases a buffer a big request grew.
    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > KEEP_BUF {
                self.buf = vec![0; READ_BUF];
            }
        }
    }

    /// Writes the queued replies.
    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
            if self.out.capacity() > KEEP_BUF {
                self.out = Vec::new();
            }
        }
        Ok(())
    }

    /// Answers with `reply` (after any queued replies) and closes.
    fn refuse(&mut self, mut reply: Response) {
        if reply.status == 0 {
            return; // the peer is gone: nothing to say
        }
        let framing = Framing {
            head_len: 0,
            body: Body::Length(0),
            keep_alive: false,
            http10: false,
            expect_continue: false,
            head_method: false,
        };
        if encode(&mut self.out, &mut self.stream, &mut reply, &framing).is_ok()
            && self.flush().is_ok()
        {
            self.linger();
        }
    }

    /// Half-closes, then reads and drops what the client still sends for a
    /// short, bounded time before the socket is closed.
    fn linger(&mut self) {
        let _ = self.stream.stream.shutdown(std::net::Shutdown::Write);
        let deadline = Instant::now() + LINGER.min(self.limits.read_timeout);
        let mut dropped = 0;
        while dropped < LINGER_BYTES {
            self.start = 0;
            self.end = 0;
            match self.fill(Some(deadline)) {
                Fill::Data => dropped += self.end,
                _ => break,
            }
        }
    }
}

/// Room kept for reading a streamed body: pieces of up to this size go to
/// the writer thread.
const SPOOL_PIECE: usize = 256 * 1024;
/// Pieces of a streamed body waiting for the writer thread, at most; the
/// connection reads no further until it catches up.
const SPOOL_AHEAD: usize = 4;

/// What a spooling writer thread reports.
enum Spooled {
    /// A piece was written (or not).
    Wrote(io::Result<()>),
    /// No piece follows: the file, complete (or why not).
    Done(io::Result<Staged>),
}

/// A body being written to a staged file by a thread of its own, fed
/// through a may channel (the coroutine parks, never its worker).
struct Spooler {
    pieces: Option<may::sync::mpsc::Sender<Vec<u8>>>,
    reports: may::sync::mpsc::Receiver<Spooled>,
    waiting: usize,
}

impl Spooler {
    fn start(dir: &Path) -> Spooler {
        let (pieces, receive) = may::sync::mpsc::channel::<Vec<u8>>();
        let (report, reports) = may::sync::mpsc::channel();
        let dir = dir.to_owned();
        std::thread::spawn(move || {
            let (staged, mut file) = match Staged::create(&dir) {
                Ok(created) => created,
                Err(e) => {
                    let _ = report.send(Spooled::Done(Err(e)));
                    return;
                }
            };
            let mut failed = None;
            for piece in receive {
                let wrote = match &failed {
                    Some(_) => Ok(()),
                    None => file.write_all(&piece),
                };
                if let Err(e) = &wrote {
                    failed = Some(io::Error::new(e.kind(), e.to_string()));
                }
                let _ = report.send(Spooled::Wrote(wrote));
            }
            let _ = report.send(Spooled::Done(match failed {
                Some(e) => Err(e),
                None => Ok(staged),
            }));
        });
        Spooler { pieces: Some(pieces), reports, waiting: 0 }
    }

    /// Hands a piece to the writer; parks while `SPOOL_AHEAD` wait.
    fn push(&mut self, piece: Vec<u8>) -> Result<(), Refusal> {
        let sent = self.pieces.as_ref().is_some_and(|pieces| pieces.send(piece).is_ok());
        if !sent {
            return Err(spool_failed());
        }
        self.waiting += 1;
        while self.waiting >= SPOOL_AHEAD {
            match self.reports.recv() {
                Ok(Spooled::Wrote(Ok(()))) => self.waiting -= 1,
                _ => return Err(spool_failed()),
            }
        }
        Ok(())
    }

    /// Waits for every piece to be written; the staged file.
    fn finish(mut self) -> Result<Staged, Refusal> {
        self.pieces = None;
        loop {
            match self.reports.recv() {
                Ok(Spooled::Wrote(Ok(()))) => {}
                Ok(Spooled::Done(Ok(staged))) => return Ok(staged),
                _ => return Err(spool_failed()),
            }
        }
    }
}

/// The body could not be written to disk.
fn spool_failed() -> Refusal {
    tracing::error!("cannot write an upload's body to the staging directory");
    Refusal(response::error(&crate::error::ApiError::internal()))
}

/// The connection is gone: nothing more can be written.
fn closed() -> Refusal {
    Refusal(Response::json(0, Vec::new()))
}

/// Reads framing and connection handling from a parsed head.
fn framing(req: &httparse::Request, head_len: usize) -> Result<Framing, Refusal> {
    let http10 = req.version == Some(0);
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut close = false;
    let mut keep_alive = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let n = parse_content_length(h.value)
                .ok_or_else(|| response::malformed("Invalid Content-Length header"))?;
            if length.is_some_and(|m| m != n) {
                return Err(response::malformed("Conflicting Content-Length headers").into());
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Only `chunked` (last) is a coding natter decodes.
            let value = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            let last = value.rsplit(',').next().unwrap_or("").trim();
            if last != "chunked" || value.split(',').filter(|c| c.trim() == "chunked").count() > 1 {
                return Err(response::not_implemented_coding().into());
            }
            if http10 {
                return Err(response::malformed("Chunked bodies need HTTP/1.1").into());
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    if chunked && length.is_some() {
        // Both framings at once is how requests are smuggled: refuse.
        return Err(response::malformed("Both Transfer-Encoding and Content-Length").into());
    }
    let body = if chunked { Body::Chunked } else { Body::Length(length.unwrap_or(0)) };
    Ok(Framing {
        head_len,
        body,
        keep_alive: if http10 { keep_alive && !close } else { !close },
        http10,
        expect_continue: expect_continue && !http10,
        head_method: req.method == Some("HEAD"),
    })
}

/// A Content-Length value: ASCII digits only (no sign, no spaces inside).
pub(crate) fn parse_content_length(raw: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(raw).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Appends the reply's head (and a small body) to `out`; a large body is
/// written straight to the socket after `out`.
fn encode(
    out: &mut Vec<u8>,
    stream: &mut Socket,
    reply: &mut Response,
    framing: &Framing,
) -> io::Result<()> {
    response::write_head(out, reply, framing.keep_alive, framing.http10);
    if framing.head_method {
        return Ok(());
    }
    if reply.body.len() <= COPY_REPLY {
        out.extend_from_slice(&reply.body);
        return Ok(());
    }
    if reply.body.len() >= BACKGROUND_REPLY {
        let head = std::mem::take(out);
        let body = std::mem::take(&mut reply.body);
        let (head, written) = stream.write_in_background(head, body)?;
        *out = head;
        out.clear();
        return written;
    }
    stream.write_all(out)?;
    out.clear();
    stream.write_all(&reply.body)
}

/// Writes `head` then `body` to the non-blocking `socket` until done or
/// until it would block; the bytes written.
fn write_without_waiting(
    mut socket: &std::net::TcpStream,
    head: &[u8],
    body: &[u8],
) -> io::Result<usize> {
    let total = head.len() + body.len();
    let mut done = 0;
    while done < total {
        let parts = match done.checked_sub(head.len()) {
            None => [io::IoSlice::new(&head[done..]), io::IoSlice::new(body)],
            Some(k) => [io::IoSlice::new(&body[k..]), io::IoSlice::new(&[])],
        };
        match socket.write_vectored(&parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// What the bytes at the start of a chunked body's remainder hold.
#[derive(Debug, PartialEq, Eq)]
enum Chunk {
    /// Not enough bytes yet; when known, how many the next chunk needs.
    Partial(Option<usize>),
    /// A chunk whose data is `start..start + size`, followed by CRLF.
    Data { start: usize, size: usize },
    /// The last chunk and its trailer fields (ignored): `len` bytes.
    Last(usize),
}

/// Reads the next chunk of a chunked body from `data` (which starts at a
/// chunk-size line), `decoded` bytes of the body having been decoded.
fn next_chunk(data: &[u8], decoded: usize, limits: &WireLimits) -> Result<Chunk, ApiError> {
    let (line, size) = match httparse::parse_chunk_size(data) {
        Ok(httparse::Status::Complete(found)) => found,
        Ok(httparse::Status::Partial) if data.len() <= MAX_CHUNK_LINE => {
            return Ok(Chunk::Partial(None))
        }
        _ => return Err(response::malformed("bad chunk size line")),
    };
    if size == 0 {
        // Trailer fields (ignored) end with an empty line.
        let trailers = &data[line..];
        if trailers.starts_with(b"\r\n") {
            return Ok(Chunk::Last(line + 2));
        }
        if let Some(at) = find(trailers, b"\r\n\r\n") {
            return Ok(Chunk::Last(line + at + 4));
        }
        if trailers.len() > limits.max_head_bytes {
            return Err(response::head_too_large(limits));
        }
        return Ok(Chunk::Partial(None));
    }
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if size > limits.max_body_bytes - decoded.min(limits.max_body_bytes) {
        return Err(response::body_too_large(limits));
    }
    if data.len() < line + size + 2 {
        return Ok(Chunk::Partial(Some(line + size + 2)));
    }
    if &data[line + size..line + size + 2] != b"\r\n" {
        return Err(response::malformed("chunk not followed by CRLF"));
    }
    Ok(Chunk::Data { start: line, size })
}

/// A request decoded from bytes in memory by `decode_request`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Decoded {
    /// The method.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// The headers in the order sent, as (name, value).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, chunked encoding removed.
    pub body: Vec<u8>,
    /// Bytes of `bytes` the request spans.
    pub len: usize,
}

/// Decodes the request at the start of `bytes` as the connection loop
/// does — the head (within `limits`), its framing, a `Content-Length` or
/// chunked body — with every byte already in memory: `Ok(None)` when
/// more bytes would be needed, `Err` with the reply's status when the
/// connection would refuse it. Not API: the fuzz targets' entry point.
#[doc(hidden)]
pub fn decode_request(bytes: &[u8], limits: &WireLimits) -> Result<Option<Decoded>, u16> {
    let refused = |e: ApiError| e.status;
    let mut slots = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut slots);
    let head_len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n > limits.max_head_bytes => {
            return Err(refused(response::head_too_large(limits)))
        }
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if bytes.len() > limits.max_head_bytes => {
            return Err(refused(response::head_too_large(limits)))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(refused(response::too_many_headers(limits)))
        }
        Err(e) => return Err(refused(response::malformed(&e.to_string()))),
    };
    let framing = framing(&req, head_len).map_err(|Refusal(reply)| reply.status)?;
    let (body, len) = match framing.body {
        Body::Length(n) if n > limits.max_body_bytes => {
            return Err(refused(response::body_too_large(limits)))
        }
        Body::Length(n) => match bytes.get(head_len..head_len + n) {
            Some(body) => (body.to_vec(), head_len + n),
            None => return Ok(None),
        },
        Body::Chunked => {
            let mut body = Vec::new();
            let mut off = head_len;
            loop {
                match next_chunk(&bytes[off..], body.len(), limits).map_err(refused)? {
                    Chunk::Partial(_) => return Ok(None),
                    Chunk::Data { start, size } => {
                        body.extend_from_slice(&bytes[off + start..off + start + size]);
                        off += start + size + 2;
                    }
                    Chunk::Last(n) => break (body, off + n),
                }
            }
        }
    };
    Ok(Some(Decoded {
        method: req.method.unwrap_or("").to_owned(),
        target: req.path.unwrap_or("").to_owned(),
        headers: req.headers.iter().map(|h| (h.name.to_owned(), h.value.to_vec())).collect(),
        body,
        len,
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-memory decoder the fuzz targets drive: a whole request, a
    /// partial one, a chunked body, and each refusal with its status.
    #[test]
    fn requests_decode_from_bytes_as_the_connection_reads_them() {
        let limits = WireLimits { max_body_bytes: 16, ..WireLimits::default() };
        let decode = |bytes: &[u8]| decode_request(bytes, &limits);
        let got =
            decode(b"POST /a?x=1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nb=cGET").unwrap().unwrap();
        assert_eq!((got.method.as_str(), got.target.as_str()), ("POST", "/a?x=1"));
        assert_eq!((&got.body[..], got.len), (&b"b=c"[..], 46));
        assert!(decode(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap().is_none());
        assert!(decode(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab").unwrap().is_none());
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                        3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\nrest";
        let got = decode(chunked).unwrap().unwrap();
        assert_eq!((&got.body[..], got.len), (&b"abcde"[..], chunked.len() - 4));
        assert!(decode(&chunked[..chunked.len() - 8]).unwrap().is_none());
        let refused = |bytes: &[u8]| decode(bytes).unwrap_err();
        assert_eq!(
            refused(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 17\r\n\r\n"), 413);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n"), 413);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
        assert_eq!(
            refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"),
            400
        );
        assert_eq!(refused(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501);
        assert_eq!(refused(b"G\x01T / HTTP/1.1\r\n\r\n"), 400);
        let many: String = (0..70).map(|i| format!("X-{i}: v\r\n")).collect();
        assert_eq!(refused(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()), 431);
    }

    /// The connection loop relies on may's socket waits being safe when a
    /// connection is woken on another worker and ends at once; may 0.3.51
    /// is not (vendor/may/NATTER-PATCH.md). Fails if the build stops using
    /// the patched copy, e.g. after a may upgrade: check that the new
    /// release fixes the race before dropping the patch.
    #[test]
    fn may_is_the_patched_copy() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
            .expect("Cargo.lock");
        let may = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"may\"\n"))
            .expect("may in Cargo.lock");
        assert!(may.contains("version = \"0.3.51\""), "may changed version: {may}");
        assert!(!may.contains("source ="), "may comes from the registry, not vendor/may: {may}");
    }

    fn parse(raw: &[u8]) -> Result<Framing, u16> {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut req = httparse::Request::new(&mut headers);
        let n = match req.parse(raw).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("partial"),
        };
        framing(&req, n).map_err(|Refusal(r)| r.status)
    }

    #[test]
    fn framing_of_heads() {
        let f = parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!((f.body, f.keep_alive, f.http10), (Body::Length(0), true, false));
        let f =
            parse(b"POST / HTTP/1.1\r\nContent-Length: 12\r\nConnection: close\r\n\r\n").unwrap();
        assert_eq!((f.body, f.keep_alive), (Body::Length(12), false));
        let f = parse(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(!f.keep_alive && f.http10);
        let f = parse(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").unwrap();
        assert!(f.keep_alive);
        let f =
            parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
                .unwrap();
        assert_eq!(f.body, Body::Chunked);
        assert!(f.expect_continue);
        let f =
            parse(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").unwrap();
        assert_eq!(f.body, Body::Length(3));
        assert!(parse(b"HEAD / HTTP/1.1\r\n\r\n").unwrap().head_method);
    }

    #[test]
    fn framing_refusals() {
        for raw in [
            &b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(parse(raw).unwrap_err(), 400, "{}", String::from_utf8_lossy(raw));
        }
        for raw in [
            &b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        ] {
            assert_eq!(parse(raw).unwrap_err(), 501, "{}", String::from_utf8_lossy(raw));
        }
    }

    /// A handler that answers `/fast` at once and parks on `/park` until
    /// the test fires `release` (as a long-poll waits for an event).
    struct Parking {
        release: may::sync::SyncFlag,
    }

    impl Handler for Parking {
        type Session = ();

        fn handle(&self, req: &Request<'_>, _: &mut ()) -> Response {
            if req.target == "/park" {
                self.release.wait();
            }
            Response::json(200, format!("{{\"t\":\"{}\"}}", req.target).into_bytes())
        }
    }

    fn start(handler: Arc<Parking>, limits: WireLimits) -> std::net::SocketAddr {
        may::config().set_stack_size(0x8000);
        let listener = may::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, handler, limits, Arc::default()).unwrap();
        addr
    }

    /// Reads one reply (head + Content-Length body) as text.
    fn reply(stream: &mut std::net::TcpStream) -> String {
        let mut text = Vec::new();
        let mut byte = [0u8; 1];
        while !text.ends_with(b"\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed early");
            text.push(byte[0]);
        }
        let head = String::from_utf8(text.clone()).unwrap();
        let len: usize =
            head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
        let mut body = vec![0; len];
        stream.read_exact(&mut body).unwrap();
        text.extend(body);
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn a_parked_handler_is_not_idle_and_earlier_replies_are_not_held() {
        let handler = Arc::new(Parking { release: may::sync::SyncFlag::new() });
        let limits =
            WireLimits { idle_timeout: Duration::from_millis(100), ..WireLimits::default() };
        let addr = start(Arc::clone(&handler), limits);
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream
            .write_all(
                b"GET /fast HTTP/1.1\r\n\r\nGET /park HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\n\r\n",
            )
            .unwrap();
        // The first reply arrives while the second request is parked.
        assert!(reply(&mut stream).ends_with("{\"t\":\"/fast\"}"));
        // Parked for several idle time-outs: the connection stays open
        // (the peer would see EOF otherwise). Wait for the idle time-out to
        // pass on another connection, as an observable clock.
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        for _ in 0..3 {
            let mut rest = Vec::new();
            idle.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty(), "an idle connection is closed silently");
            idle = std::net::TcpStream::connect(addr).unwrap();
            idle.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        handler.release.fire();
        assert!(reply(&mut stream).ends_with("{\"t\":\"/park\"}"));
        assert!(reply(&mut stream).ends_with("{\"t\":\"/after\"}"), "in order");
    }

    #[test]
    fn content_length_must_be_digits() {
        assert_eq!(parse_content_length(b"12"), Some(12));
        assert_eq!(parse_content_length(b" 7 "), Some(7));
        for bad in [&b"abc"[..], b"-1", b"", b"1 2", b"+3", b"99999999999999999999999"] {
            assert_eq!(parse_content_length(bad), None, "{bad:?}");
        }
    }
}
