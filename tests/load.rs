//! The `natter-load` generator against a live server.

use std::process::Command;

use crate::util::TestServer;

#[test]
fn load_generator_sends_reads_and_refuses_remote_targets() {
    let server = TestServer::start();
    for kind in ["send", "read", "settings"] {
        let out = Command::new(env!("CARGO_BIN_EXE_natter-load"))
            .args([
                "--addr",
                &server.addr,
                "--connections",
                "4",
                "--requests",
                "40",
                "--kind",
                kind,
            ])
            .output()
            .expect("run natter-load");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("40 ok, 0 errors"), "{kind}: {stdout}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_natter-load"))
        .args(["--addr", "192.0.2.1:80", "--requests", "1"])
        .output()
        .expect("run natter-load");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only loopback"));
}

#[test]
fn ceiling_comparison_runs_both_servers_and_prints_a_ratio() {
    use std::io::{BufRead, BufReader};
    let mut ceiling = Command::new(env!("CARGO_BIN_EXE_natter-ceiling"))
        .args(["--seconds", "120"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run natter-ceiling");
    let mut lines = BufReader::new(ceiling.stdout.take().unwrap()).lines();
    let mut addr = |prefix: &str| -> String {
        let line = lines.next().expect("a line").expect("utf-8");
        line.strip_prefix(prefix).unwrap_or_else(|| panic!("{line}")).to_owned()
    };
    let natter = addr("natter-ceiling: natter loop http://");
    let bare = addr("natter-ceiling: may_minihttp http://");
    let out = Command::new(env!("CARGO_BIN_EXE_natter-load"))
        .args(["--kind", "fixed", "--connections", "4", "--requests", "400", "--rounds", "2"])
        .args(["--addr", &natter, "--versus", &bare])
        .output()
        .expect("run natter-load");
    let _ = ceiling.kill();
    let _ = ceiling.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("ratio {natter} / {bare} = ")), "{stdout}");
    assert_eq!(stdout.matches("200 ok, 0 errors").count(), 4, "{stdout}");
}

/// `(ok, errors)` of an endpoint's line in a mix report.
fn counts(report: &str, endpoint: &str) -> Option<(u64, u64)> {
    report.lines().rev().find_map(|line| {
        let rest = line.trim_start().strip_prefix(endpoint)?;
        match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [ok, "ok", errors, "errors", ..] => Some((ok.parse().ok()?, errors.parse().ok()?)),
            _ => None,
        }
    })
}

#[test]
fn mix_simulates_users_with_long_polls_and_reports_per_endpoint() {
    let server = TestServer::start();
    let out = Command::new(env!("CARGO_BIN_EXE_natter-load"))
        .args(["--addr", &server.addr, "--kind", "mix", "--users", "6", "--group-size", "3"])
        .args(["--rate", "10", "--warmup", "1", "--window", "3", "--connections", "2"])
        .output()
        .expect("run natter-load");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("mix: 6 users in 2 channels ready"), "{stdout}");
    // Sends reach the other members' long-polls; every action succeeds.
    for endpoint in ["POST /messages", "GET /messages (narrow)", "delivery (send → event)"] {
        let (ok, errors) = counts(&stdout, endpoint).unwrap_or_else(|| panic!("{stdout}"));
        assert!(ok > 0 && errors == 0, "{endpoint}: {stdout}{stderr}");
    }
    let (ok, errors) = counts(&stdout, "ALL REQUESTS").expect("a total line");
    assert!(ok > 0 && errors == 0, "{stdout}{stderr}");
    assert!(stdout.contains("mix: 6 users supported") || stdout.contains("NOT supported"));

    // The simulated users were created through the API and kept: a ramp
    // reuses them and reports the supported-users figure.
    let out = Command::new(env!("CARGO_BIN_EXE_natter-load"))
        .args(["--addr", &server.addr, "--kind", "mix", "--group-size", "3"])
        .args(["--ramp-from", "3", "--ramp-to", "6", "--step", "3", "--rate", "5"])
        .args(["--warmup", "0", "--window", "1", "--connections", "2"])
        .output()
        .expect("run natter-load");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("-- 3 users"), "{stdout}");
    assert!(stdout.contains("supported users: "), "{stdout}");
    let who = server.client("iago@natter.test").get("/users", &[]).ok();
    let loads = who["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["email"].as_str().is_some_and(|e| e.starts_with("load")))
        .count();
    assert_eq!(loads, 6, "no user created twice");
}
