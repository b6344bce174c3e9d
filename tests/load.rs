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
