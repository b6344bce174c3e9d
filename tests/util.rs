//! Test harness: `TestServer` runs the real `natter` binary on 127.0.0.1:0
//! with a temp data dir; `Client` speaks raw HTTP/1.1 to it, so tests can
//! also send malformed requests.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

/// One account printed by `natter --dev`.
#[derive(Clone, Debug)]
pub struct Account {
    pub realm: String,
    pub role: String,
    pub email: String,
    pub key: String,
}

/// A running natter process.
pub struct TestServer {
    child: Option<Child>,
    pub addr: String,
    /// The `--metrics-listen` address, when the server has one.
    pub metrics_addr: Option<String>,
    pub dir: tempfile::TempDir,
    pub accounts: Vec<Account>,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl TestServer {
    /// A dev server on a fresh data dir.
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    /// A dev server on a fresh data dir with extra arguments.
    pub fn start_with(extra: &[&str]) -> TestServer {
        Self::start_with_env(extra, &[])
    }

    /// A dev server on a fresh data dir with extra arguments and
    /// environment variables.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut args: Vec<String> = vec!["--dev".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut server = TestServer {
            child: None,
            addr: String::new(),
            metrics_addr: None,
            dir,
            accounts: Vec::new(),
            args,
            env,
        };
        server.spawn().unwrap_or_else(|e| panic!("natter did not start: {e}"));
        server
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_natter"));
        cmd.arg("--listen").arg("127.0.0.1:0").arg("--data-dir").arg(self.dir.path().join("data"));
        if !args.iter().any(|a| a == "--workers") {
            cmd.arg("--workers").arg("2");
        }
        // The suite sends faster than any person: rate limits are off
        // unless a test asks for them.
        if !args.iter().any(|a| a == "--rate-limit") {
            cmd.arg("--rate-limit").arg("off");
        }
        cmd.args(args);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr.log")
    }

    /// Starts the process with `self.args`; returns stderr on failure.
    fn spawn(&mut self) -> Result<(), String> {
        let args = self.args.clone();
        let stderr = std::fs::File::create(self.stderr_path()).expect("stderr file");
        let mut child = self
            .command(&args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn natter");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut accounts = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(rest) = line.strip_prefix("natter: metrics on http://") {
                        self.metrics_addr = rest.strip_suffix("/metrics").map(str::to_owned);
                    }
                    if let Some(addr) = line.strip_prefix("natter: listening on http://") {
                        self.addr = addr.trim().to_owned();
                        break;
                    }
                    if line.starts_with("  ") {
                        let cols: Vec<&str> = line.split_whitespace().collect();
                        if cols.len() == 4 {
                            accounts.push(Account {
                                realm: cols[0].to_owned(),
                                role: cols[1].to_owned(),
                                email: cols[2].to_owned(),
                                key: cols[3].to_owned(),
                            });
                        }
                    }
                }
                _ => {
                    let _ = child.wait();
                    return Err(self.stderr());
                }
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe,
        // into a file: a crash's report can land there (the coroutine
        // library's SIGSEGV handler prints its backtrace to stdout).
        let mut later = std::fs::File::create(self.stdout_path()).expect("stdout file");
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = writeln!(later, "{line}");
            }
        });
        if !accounts.is_empty() {
            self.accounts = accounts;
        }
        self.child = Some(child);
        Ok(())
    }

    fn stdout_path(&self) -> PathBuf {
        self.dir.path().join("stdout.log")
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    /// Sends `signal` (`TERM`, `INT`, …) to the running process.
    pub fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("running");
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Waits up to `limit` for the process to exit on its own; its status,
    /// or `None` if it is still running (then it is left running).
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        let child = self.child.as_mut().expect("running");
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// SIGKILL: a crash with no clean shutdown.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill");
            child.wait().expect("wait");
        }
    }

    /// SIGTERM and wait: a clean shutdown (final snapshot).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status()
                .expect("run kill");
            assert!(status.success());
            let exit = child.wait().expect("wait");
            assert!(exit.success(), "natter exited with {exit}: {}", self.stderr());
        }
    }

    /// Starts again on the same data dir (after `kill` or `stop`).
    pub fn restart(&mut self) {
        self.restart_with_args(self.args.clone());
    }

    /// Starts again on the same data dir with other arguments.
    pub fn restart_with_args(&mut self, args: Vec<String>) {
        self.args = args;
        self.spawn().unwrap_or_else(|e| panic!("natter did not restart: {e}"));
    }

    /// Runs `natter realm create <args>` on this (stopped) server's data
    /// dir.
    pub fn realm_create(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_natter"))
            .args(["realm", "create"])
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir().join("data"))
            .output()
            .unwrap()
    }

    /// `realm create` with `args`, which must succeed; the owner's API key
    /// it prints.
    pub fn realm_create_ok(&self, args: &[&str]) -> String {
        let out = self.realm_create(args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout.lines().find_map(|l| l.strip_prefix("api_key: ")).unwrap().trim().to_owned()
    }

    /// Starts on the same data dir expecting failure; returns stderr.
    pub fn start_expecting_failure(&mut self) -> String {
        match self.spawn() {
            Ok(()) => panic!("natter started but was expected to refuse"),
            Err(stderr) => stderr,
        }
    }

    /// The account with this email.
    pub fn account(&self, email: &str) -> Account {
        self.accounts
            .iter()
            .find(|a| a.email == email)
            .unwrap_or_else(|| panic!("no account {email}"))
            .clone()
    }

    /// A client authenticated as `email`.
    pub fn client(&self, email: &str) -> Client {
        let a = self.account(email);
        Client { addr: self.addr.clone(), auth: Some((a.email, a.key)), host: None }
    }

    /// A client with no credentials.
    pub fn anonymous(&self) -> Client {
        Client { addr: self.addr.clone(), auth: None, host: None }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A server that died under a test is the likeliest cause of
            // its failure: say so, with what it wrote, before the data dir
            // (and its stderr.log) is deleted.
            if let Ok(Some(status)) = child.try_wait() {
                let stdout = std::fs::read_to_string(self.stdout_path()).unwrap_or_default();
                eprintln!(
                    "natter exited during the test ({status}); its stderr:\n{}\nits stdout after the listening line:\n{stdout}",
                    self.stderr()
                );
            } else if std::thread::panicking() {
                let stderr = self.stderr();
                let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                eprintln!("natter's stderr (last 40 lines):\n{}", tail.join("\n"));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub json: Value,
    pub body: String,
}

impl Response {
    /// Asserts a 200 success envelope and returns the JSON.
    #[track_caller]
    pub fn ok(self) -> Value {
        assert_eq!(self.status, 200, "expected success, got {}: {}", self.status, self.body);
        assert_eq!(self.json["result"], "success", "{}", self.body);
        assert_eq!(self.json["msg"], "", "{}", self.body);
        self.json
    }

    /// Asserts a Zulip error with this status and code; returns the JSON.
    #[track_caller]
    pub fn err(self, status: u16, code: &str) -> Value {
        assert_eq!(self.status, status, "expected {status} {code}, got: {}", self.body);
        assert_eq!(self.json["result"], "error", "{}", self.body);
        assert_eq!(self.json["code"], code, "{}", self.body);
        assert!(self.json["msg"].as_str().is_some_and(|m| !m.is_empty()), "{}", self.body);
        self.json
    }
}

/// Raw HTTP/1.1 client; one connection per request.
#[derive(Clone)]
pub struct Client {
    pub addr: String,
    pub auth: Option<(String, String)>,
    pub host: Option<String>,
}

fn encode(params: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        s.append_pair(k, v);
    }
    s.finish()
}

impl Client {
    /// The same client, sending another Host header.
    pub fn with_host(&self, host: &str) -> Client {
        Client { host: Some(host.to_owned()), ..self.clone() }
    }

    /// The same client with other credentials.
    pub fn with_auth(&self, email: &str, key: &str) -> Client {
        Client { auth: Some((email.to_owned(), key.to_owned())), ..self.clone() }
    }

    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> Response {
        self.request("GET", path, params)
    }

    pub fn post(&self, path: &str, params: &[(&str, &str)]) -> Response {
        self.request("POST", path, params)
    }

    /// `/api/v1` + path; GET params in the query, others form-encoded.
    pub fn request(&self, method: &str, path: &str, params: &[(&str, &str)]) -> Response {
        let encoded = encode(params);
        let (target, body) = if method == "GET" && !params.is_empty() {
            (format!("/api/v1{path}?{encoded}"), String::new())
        } else if method == "GET" {
            (format!("/api/v1{path}"), String::new())
        } else {
            (format!("/api/v1{path}"), encoded)
        };
        let mut head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: NatterTests/1.0\r\n",
            self.host.as_deref().unwrap_or(&self.addr)
        );
        if let Some((email, key)) = &self.auth {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
            head.push_str(&format!("Authorization: Basic {token}\r\n"));
        }
        if !body.is_empty() {
            head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        self.raw(format!("{head}{body}").as_bytes())
    }

    /// Sends raw bytes and parses one response.
    pub fn raw(&self, bytes: &[u8]) -> Response {
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.write_all(bytes).expect("write request");
        read_response(&mut stream)
    }
}

/// Reads one response (headers + Content-Length body).
pub fn read_response(stream: &mut TcpStream) -> Response {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).expect("read response head");
        assert!(n == 1, "connection closed before a response: {:?}", String::from_utf8_lossy(&buf));
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize =
        headers.get("content-length").and_then(|v| v.parse().ok()).expect("content-length");
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).expect("read body");
    let body = String::from_utf8(body).expect("utf-8 body");
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some("application/json"),
        "every response is JSON: {head}{body}"
    );
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    Response { status, json, body }
}

/// A raw connection to `addr` for tests that speak HTTP by hand (several
/// requests on one connection, partial requests); 30 s read time-out, so a
/// server that never answers fails the test instead of hanging it.
pub fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream
}

/// Reads until the server closes the connection; returns what arrived.
pub fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the server closes, never hangs");
    rest
}

/// The `Authorization` header value for HTTP Basic `email:key`.
pub fn basic_auth(email: &str, key: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}")))
}

/// The id of the account `email` (asked as that account).
pub fn user_id(server: &TestServer, email: &str) -> u64 {
    server.client(email).get("/users/me", &[]).ok()["user_id"].as_u64().unwrap()
}

/// The id of the channel `name`, as `c` sees it (`GET /get_stream_id`).
pub fn channel_id(c: &Client, name: &str) -> u64 {
    c.get("/get_stream_id", &[("stream", name)]).ok()["stream_id"].as_u64().unwrap()
}

/// `realm create` arguments for the `acme` realm owned by "The Boss"
/// (boss@acme.test).
pub const ACME: [&str; 8] = [
    "--subdomain",
    "acme",
    "--name",
    "Acme",
    "--owner-email",
    "boss@acme.test",
    "--owner-name",
    "The Boss",
];
