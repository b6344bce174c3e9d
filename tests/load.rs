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
