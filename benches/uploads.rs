//! Uploaded files through the real server: natter started in this process
//! on a loopback port (a seeded dev realm, `--fsync always`), driven by a
//! plain HTTP/1.1 client over keep-alive connections, each request
//! carrying HTTP Basic credentials as the `zulip` bindings send them.
//! - `upload 10 MiB`: `POST /api/v1/user_uploads` of one 10 MiB file (the
//!   body streamed to the staging directory, the file fsynced and renamed
//!   into the store, its record committed) until the reply.
//! - `download 10 MiB`: `GET /user_uploads/…` of that file, every byte read.
//! - `upload 1,000 small`: 1,000 uploads of 2 KiB one after another (each
//!   with its own fsyncs and commit), and `download 1,000 small`: reading
//!   them back.
//!
//! The figures for docs/PERFORMANCE.md are measured on a quiet machine
//! with `cargo bench --bench uploads`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use base64::Engine;
use clap::Parser;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const BOUNDARY: &str = "natter-bench-boundary-41c9";

/// One keep-alive connection to the server, as one account.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    authorization: String,
    host: String,
}

/// A reply: its status and body.
struct Reply {
    status: u16,
    body: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr, email: &str, key: &str) -> Client {
        let stream = TcpStream::connect(addr).expect("a connection to the server");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
        Client {
            reader: BufReader::new(stream.try_clone().expect("a second handle")),
            writer: stream,
            authorization: format!("Basic {token}"),
            host: addr.to_string(),
        }
    }

    /// Sends one request (`body` after the head) and reads the whole reply.
    fn request(&mut self, method: &str, path: &str, content_type: &str, body: &[u8]) -> Reply {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
             User-Agent: natter-bench\r\n",
            self.host, self.authorization
        );
        if !content_type.is_empty() {
            head.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        self.writer.write_all(head.as_bytes()).expect("the request head");
        self.writer.write_all(body).expect("the request body");
        self.read_reply()
    }

    fn read_reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a status line");
        let status = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let mut length = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("a header line");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("a Content-Length");
                }
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("the reply body");
        Reply { status, body }
    }

    /// Uploads `bytes` as one file; the download path the reply names.
    fn upload(&mut self, bytes: &[u8]) -> String {
        let mut body = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"bench.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
        let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
        let reply = self.request("POST", "/api/v1/user_uploads", &content_type, &body);
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        let json: serde_json::Value = serde_json::from_slice(&reply.body).expect("a JSON reply");
        json["url"].as_str().expect("a url").to_owned()
    }

    /// Downloads `path`; how many bytes came.
    fn download(&mut self, path: &str) -> usize {
        let reply = self.request("GET", path, "", b"");
        assert_eq!(reply.status, 200, "{path}");
        reply.body.len()
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary data dir");
    let data = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let args = [
        "natter",
        "--dev",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        &data,
        "--fsync",
        "always",
        "--rate-limit",
        "off",
        "--snapshot-every",
        "0",
    ];
    let config = natter::config::Cli::parse_from(args).resolve().expect("valid flags");
    let server = natter::server::start(config).expect("the server starts");
    let hamlet = server
        .credentials
        .iter()
        .find(|c| c.email == "hamlet@natter.test")
        .expect("the dev realm's hamlet");
    let mut client = Client::connect(server.addr, &hamlet.email, &hamlet.api_key);

    let mut group = c.benchmark_group("uploads");
    group.sample_size(10).measurement_time(Duration::from_secs(20));

    let big = vec![0x5a_u8; 10 << 20];
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("upload 10 MiB", |b| b.iter(|| client.upload(&big)));
    let stored = client.upload(&big);
    group.bench_function("download 10 MiB", |b| {
        b.iter(|| assert_eq!(client.download(&stored), big.len()))
    });

    let small = vec![0x33_u8; 2048];
    group.throughput(Throughput::Elements(1000));
    group.bench_function("upload 1,000 small", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                client.upload(&small);
            }
        })
    });
    let paths: Vec<String> = (0..1000).map(|_| client.upload(&small)).collect();
    group.bench_function("download 1,000 small", |b| {
        b.iter(|| {
            for path in &paths {
                assert_eq!(client.download(path), small.len());
            }
        })
    });
    group.finish();
    natter::server::shutdown(&server.app);
}

criterion_group!(benches, bench);
criterion_main!(benches);
