//! The load generator's HTTP/1.1 client: one keep-alive connection, one
//! request at a time, over any byte stream — a may socket read wait-first
//! ([`Socket`]) for the coroutine-based clients (thousands of connections
//! on one or two OS threads), or a script in the tests. Replies are read
//! into one reusable buffer and parsed with `httparse`; only
//! `Content-Length` bodies are understood (natter never chunks its
//! replies).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use may::net::TcpStream;
use natter::http::alarm::{AlarmSlot, Alarms};

/// One keep-alive connection.
pub struct Client<S> {
    stream: S,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed by earlier replies.
    start: usize,
    /// Bytes of `buf` filled.
    end: usize,
}

/// A coroutine client connection (parks its coroutine, never its thread).
pub type MayClient = Client<Socket>;

impl MayClient {
    /// Connects to `addr`; a read or a write that makes no progress for
    /// `timeout` fails with `ErrorKind::TimedOut`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<MayClient> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let alarm = alarms().register(&stream);
        Ok(Client::new(Socket { stream, alarm, timeout, pending: true }))
    }
}

/// The time-outs of every client connection (one sweeper coroutine).
fn alarms() -> &'static Arc<Alarms> {
    static ALARMS: OnceLock<Arc<Alarms>> = OnceLock::new();
    ALARMS.get_or_init(Alarms::start)
}

/// A may socket read and written with plain non-blocking system calls,
/// waiting first: natter's connection loop does the same
/// (`natter::http::alarm`). may's own `read` tries the socket before it
/// parks — twice, and with a timer added and removed for its time-out —
/// and a client that has just sent a request almost never finds its reply
/// there yet: about two wasted system calls per request, and a share of
/// the box the server under test then does not get.
pub struct Socket {
    stream: TcpStream,
    alarm: AlarmSlot,
    timeout: Duration,
    /// Whether the socket may hold bytes no readiness event announces:
    /// at first, and after a read that filled the buffer or a wait for
    /// writing (which clears the same readiness flag).
    pending: bool,
}

impl Socket {
    /// Parks until the socket's next readiness event or `deadline`: on
    /// the alarm in a coroutine, in poll(2) for `interest` on a plain
    /// thread (the setup connection), where may cannot park.
    fn wait(&self, deadline: Instant, interest: nix::poll::PollFlags) {
        if may::coroutine::is_coroutine() {
            self.alarm.wait(&self.stream, deadline);
            return;
        }
        use std::os::fd::AsFd;
        let left = deadline.saturating_duration_since(Instant::now()).as_millis();
        let timeout = nix::poll::PollTimeout::try_from(left.min(i32::MAX as u128) as i32)
            .unwrap_or(nix::poll::PollTimeout::MAX);
        let mut fds = [nix::poll::PollFd::new(self.stream.inner().as_fd(), interest)];
        let _ = nix::poll::poll(&mut fds, timeout);
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if !self.pending {
                if Instant::now() >= deadline {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                self.wait(deadline, nix::poll::PollFlags::POLLIN);
            }
            match self.stream.inner().read(buf) {
                Ok(n) => {
                    self.pending = n == buf.len();
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.pending = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for Socket {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.stream.inner().write(bytes) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    self.pending = true;
                    self.wait(deadline, nix::poll::PollFlags::POLLOUT);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                done => return done,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<S: Read + Write> Client<S> {
    /// Wraps a connected stream.
    pub fn new(stream: S) -> Self {
        Client { stream, buf: vec![0; 16 * 1024], start: 0, end: 0 }
    }

    /// Sends one request and returns `(status, body)`. A connection the
    /// server closed before any byte of the reply (an idle keep-alive
    /// connection it timed out) fails with `ErrorKind::ConnectionAborted`:
    /// the request was not processed, so it may be sent again.
    pub fn call(&mut self, request: &[u8]) -> io::Result<(u16, Vec<u8>)> {
        let closed = |e: io::Error, nothing_read: bool| match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
                if nothing_read =>
            {
                io::Error::new(io::ErrorKind::ConnectionAborted, e)
            }
            _ => e,
        };
        if let Err(e) = self.stream.write_all(request) {
            return Err(closed(e, self.start == self.end));
        }
        loop {
            let buffered = self.end - self.start;
            match self.parse_head()? {
                Some((status, head, length)) if buffered >= head + length => {
                    let body = self.buf[self.start + head..self.start + head + length].to_vec();
                    self.start += head + length;
                    if self.start == self.end {
                        (self.start, self.end) = (0, 0);
                    }
                    return Ok((status, body));
                }
                Some((_, head, length)) => self.fill(head + length)?,
                None => self.fill(buffered + 1).map_err(|e| closed(e, buffered == 0))?,
            }
        }
    }

    /// `(status, head length, body length)` once a whole head is buffered.
    fn parse_head(&self) -> io::Result<Option<(u16, usize, usize)>> {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        let parsed = response
            .parse(&self.buf[self.start..self.end])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let httparse::Status::Complete(head) = parsed else { return Ok(None) };
        let mut length = 0usize;
        for header in response.headers.iter() {
            if header.name.eq_ignore_ascii_case("content-length") {
                length = std::str::from_utf8(header.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "content-length"))?;
            }
        }
        Ok(Some((response.code.unwrap_or(0), head, length)))
    }

    /// Reads more bytes, first making room for `need` bytes from the
    /// start of the unconsumed part.
    fn fill(&mut self, need: usize) -> io::Result<()> {
        if self.start + need > self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        if need > self.buf.len() {
            self.buf.resize(need.max(self.buf.len() * 2), 0);
        }
        let n = self.stream.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.end += n;
        Ok(())
    }
}

/// An HTTP/1.1 request; `auth` is the base64 of `email:key`.
pub fn request(method: &str, path: &str, auth: Option<&str>, body: &str) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: load\r\nUser-Agent: NatterLoad/1.0\r\n");
    if let Some(auth) = auth {
        r.push_str(&format!("Authorization: Basic {auth}\r\n"));
    }
    if !body.is_empty() {
        r.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    r.into_bytes()
}

/// A form body or query string from name/value pairs.
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        s.append_pair(name, value);
    }
    s.finish()
}

/// The Basic credentials of `email:key`.
pub fn basic(email: &str, key: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that returns scripted bytes in small pieces.
    struct Script {
        input: Vec<u8>,
        at: usize,
        piece: usize,
        written: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.piece.min(out.len()).min(self.input.len() - self.at);
            out[..n].copy_from_slice(&self.input[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    impl Write for Script {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A server that accepts and never answers: a call times out, from a
    /// coroutine (the alarm) and from a plain thread (poll(2)); a reply
    /// that does come is read in both.
    #[test]
    fn a_silent_server_times_out_and_a_reply_is_read() {
        may::config().set_stack_size(0x8000);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut held = Vec::new();
            for (i, stream) in listener.incoming().take(4).enumerate() {
                let mut stream = stream.unwrap();
                if i >= 2 {
                    let mut request = [0u8; 64];
                    let _ = stream.read(&mut request);
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
                }
                held.push(stream);
            }
            held
        });
        let timeout = Duration::from_millis(200);
        let silent = move |client: &mut MayClient| {
            let started = Instant::now();
            let e = client.call(b"GET / HTTP/1.1\r\n\r\n").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut);
            assert!(started.elapsed() >= timeout);
        };
        // Plain thread, then coroutine: silent; then the same, answered.
        silent(&mut MayClient::connect(addr, timeout).unwrap());
        let mut client = MayClient::connect(addr, timeout).unwrap();
        may::go!(move || silent(&mut client)).join().unwrap();
        let reply = MayClient::connect(addr, timeout).unwrap().call(b"GET /\r\n\r\n").unwrap();
        assert_eq!(reply, (200, b"ok".to_vec()));
        let mut client = MayClient::connect(addr, timeout).unwrap();
        let reply = may::go!(move || client.call(b"GET /\r\n\r\n").unwrap()).join().unwrap();
        assert_eq!(reply, (200, b"ok".to_vec()));
        drop(server.join().unwrap());
    }

    #[test]
    fn replies_split_across_reads_and_pipelined_are_parsed() {
        let big = "x".repeat(40_000);
        let input = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 400 Bad\r\ncontent-length: {}\r\n\r\n{big}HTTP/1.1 204 No\r\n\r\n",
            big.len()
        );
        for piece in [1, 7, 100_000] {
            let script =
                Script { input: input.clone().into_bytes(), at: 0, piece, written: Vec::new() };
            let mut c = Client::new(script);
            assert_eq!(c.call(b"A").unwrap(), (200, b"hi".to_vec()));
            let (status, body) = c.call(b"B").unwrap();
            assert_eq!((status, body.len()), (400, big.len()));
            assert_eq!(c.call(b"C").unwrap(), (204, Vec::new()));
            let e = c.call(b"D").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "closed before replying");
            assert_eq!(c.stream.written, b"ABCD");
            // Cut inside a reply: not retryable.
            let cut = Script {
                input: b"HTTP/1.1 200 OK\r\nContent-Le".to_vec(),
                at: 0,
                piece,
                written: Vec::new(),
            };
            let e = Client::new(cut).call(b"E").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        }
    }
}
