//! A full disk under a running server, in-process on the simulated file
//! system (`wal::sim::SimFs`): changes are refused with 503 `NOT_READY`
//! and nothing of them is applied or logged, reads go on, the log stays
//! whole, and changes are taken again once space returns.

use std::sync::Arc;

use natter::api::params::Params;
use natter::api::{self, App, Call, Handler, Reply};
use natter::error::ApiResult;
use wal::sim::SimFs;

const HAMLET: &str = "hamlet@natter.test";

fn call(app: &App, handler: Handler, path: &[&str], params: &[(&str, &str)]) -> ApiResult<Reply> {
    let realm = app.state.realm_by_subdomain("").unwrap();
    let caller = app.state.user_by_email(realm.id, HAMLET).unwrap();
    let mut call = Call {
        realm: realm.into(),
        caller: Some(caller.into()),
        params: Params::from_pairs(params.iter().copied()),
        path: path.iter().map(|p| p.to_string()).collect(),
        client: "test".into(),
        raw_fields: Vec::new(),
        sorted_reply: None,
        files: Vec::new(),
    };
    let mut reply = handler(app, &mut call)?;
    // A reply the handler wrote as text (`POST /messages`).
    if let Some(members) = &call.sorted_reply {
        reply.extend(members.to_map());
    }
    Ok(reply)
}

fn send(app: &App, content: &str) -> ApiResult<Reply> {
    let params = [("type", "stream"), ("to", "general"), ("topic", "disk"), ("content", content)];
    call(app, api::messages::send, &[], &params)
}

#[test]
fn a_full_disk_refuses_changes_with_503_serves_reads_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let fs = Arc::new(SimFs::new());
    let app = natter::testkit::in_process_dev_app_on(&data, &["--fsync", "always"], fs.clone());
    let before = send(&app, "before the disk filled").unwrap();
    let id = before["id"].as_u64().unwrap().to_string();
    let seq = app.state.applied_seq();

    // The free space drops under the reserve. The server looks at it
    // every 256 KiB of log (and at every commit while it is low): the
    // change that finds it low, and every one after, is refused before
    // anything is applied or logged.
    fs.set_free(Some(natter::commit::DISK_RESERVE - 1));
    let long = "a fairly long message to fill the log ".repeat(50);
    let mut accepted = 0;
    let err = loop {
        match send(&app, &long) {
            Ok(_) => accepted += 1,
            Err(err) => break err,
        }
        assert!(accepted <= 150, "still accepting after {accepted} sends of 2 KB");
    };
    assert_eq!((err.status, err.code), (503, "NOT_READY"));
    assert!(err.msg.contains("disk is full"), "{}", err.msg);
    let seq = seq + accepted;
    assert_eq!(app.state.applied_seq(), seq, "nothing applied");
    assert_eq!(send(&app, "while the disk is full").unwrap_err().status, 503);
    // Other changes too (a reaction), while reads are served.
    let reaction = [("emoji_name", "smile")];
    let err = call(&app, api::reactions::add, &[&id], &reaction).unwrap_err();
    assert_eq!(err.status, 503);
    let read = call(&app, api::messages::get_one, &[&id], &[]).unwrap();
    assert_eq!(read["message"]["content"], "<p>before the disk filled</p>");
    assert_eq!(app.state.applied_seq(), seq);

    // Space returns: the next change goes through, with the next seq.
    fs.set_free(None);
    let after = send(&app, "after space returned").unwrap();
    assert!(after["id"].as_u64().unwrap() > before["id"].as_u64().unwrap());
    assert_eq!(app.state.applied_seq(), seq + 1);

    // The log on disk is whole and ends with that change.
    let checked = wal::check(&natter::persist::wal_dir(&data), |_, _, _, _| true).unwrap();
    assert_eq!((checked.last_seq, checked.torn_tail), (seq + 1, None));
}
