//! Channel folders over HTTP: who may create, change, archive and reorder
//! them, the values refused, channels joining folders, other realms,
//! durability. (Events: `verify_organization.rs`.)

use serde_json::{json, Value};

use crate::util::{channel_id, Client, TestServer};

const HAMLET: &str = "hamlet@natter.test";
const IAGO: &str = "iago@natter.test";
const GUEST: &str = "polonius@natter.test";
const KING: &str = "king@lear.test";

fn create(c: &Client, name: &str, description: &str) -> crate::util::Response {
    c.post("/channel_folders/create", &[("name", name), ("description", description)])
}

fn folder_id(body: Value) -> u64 {
    body["channel_folder_id"].as_u64().unwrap()
}

fn names(c: &Client, params: &[(&str, &str)]) -> Vec<String> {
    let list = c.get("/channel_folders", params).ok()["channel_folders"].clone();
    list.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect()
}

fn msg(body: &Value) -> &str {
    body["msg"].as_str().unwrap()
}

#[test]
fn folders_are_seen_by_everyone_and_managed_by_administrators() {
    let mut server = TestServer::start();
    let iago = server.client(IAGO);
    let hamlet = server.client(HAMLET);
    let body = create(&hamlet, "Frontend", "").err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "Must be an organization administrator");
    iago.post("/channel_folders/create", &[("description", "d")])
        .err(400, "REQUEST_VARIABLE_MISSING");
    let refusals = [
        ("  ", "Channel folder name can't be empty."),
        ("abc\u{7}", "Invalid character in channel folder name, at position 4."),
        (&"x".repeat(61), "name is too long (limit: 60 characters)"),
    ];
    for (name, why) in refusals {
        assert_eq!(msg(&create(&iago, name, "").err(400, "BAD_REQUEST")), why);
    }
    let long = "d".repeat(1025);
    let body = create(&iago, "Frontend", &long).err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "description is too long (limit: 1024 characters)");
    assert!(names(&iago, &[]).is_empty(), "refusals created nothing");

    let front = folder_id(create(&iago, "Frontend", "Channels for **frontend** work").ok());
    let body = create(&iago, "frontEND", "").err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "Channel folder name already in use");
    let back = folder_id(create(&iago, " Backend ", "").ok());
    let list = server.client(GUEST).get("/channel_folders", &[]).ok()["channel_folders"].clone();
    let iago_id = crate::util::user_id(&server, IAGO);
    assert_eq!(list[0]["id"], front);
    assert_eq!(list[0]["name"], "Frontend");
    assert_eq!(list[0]["description"], "Channels for **frontend** work");
    assert_eq!(
        list[0]["rendered_description"],
        "<p>Channels for <strong>frontend</strong> work</p>"
    );
    assert_eq!(list[0]["creator_id"], iago_id);
    assert_eq!(list[0]["is_archived"], false);
    assert!(list[0]["date_created"].as_i64().unwrap() > 0);
    assert_eq!(list[1]["name"], "Backend");
    assert_eq!(list[1]["rendered_description"], "");
    assert!(list[0]["order"].as_u64() < list[1]["order"].as_u64());

    // Updates: administrators only, known folders, names still unique.
    let path = format!("/channel_folders/{front}");
    let body = hamlet.request("PATCH", &path, &[("name", "Web")]).err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "Must be an organization administrator");
    let body = iago.request("PATCH", "/channel_folders/999", &[("name", "Web")]);
    assert_eq!(msg(&body.err(400, "BAD_REQUEST")), "Invalid channel folder ID");
    let body = iago.request("PATCH", &path, &[("name", "backEND")]).err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "Channel folder name already in use");
    iago.request("PATCH", &path, &[("name", "")]).err(400, "BAD_REQUEST");
    iago.request("PATCH", &path, &[("is_archived", "maybe")]).err(400, "BAD_REQUEST");
    iago.request("PATCH", &path, &[("name", "Web"), ("description", "")]).ok();
    // Renaming to its own name with other letter case is no clash.
    iago.request("PATCH", &path, &[("name", "WEB")]).ok();
    let list = iago.get("/channel_folders", &[]).ok()["channel_folders"].clone();
    assert_eq!((&list[0]["name"], &list[0]["rendered_description"]), (&json!("WEB"), &json!("")));

    // The order: every folder once.
    let reorder =
        |c: &Client, order: &str| c.request("PATCH", "/channel_folders", &[("order", order)]);
    reorder(&hamlet, &format!("[{back},{front}]")).err(400, "BAD_REQUEST");
    iago.request("PATCH", "/channel_folders", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    reorder(&iago, "[\"a\"]").err(400, "BAD_REQUEST");
    for bad in [format!("[{back}]"), format!("[{back},{back}]"), format!("[{back},{front},999]")] {
        let body = reorder(&iago, &bad).err(400, "BAD_REQUEST");
        assert_eq!(msg(&body), "Invalid order mapping.", "{bad}");
    }
    reorder(&iago, &format!("[{back},{front}]")).ok();
    assert_eq!(names(&hamlet, &[]), ["Backend", "WEB"]);

    // Another realm neither sees nor changes them.
    let king = server.client(KING).with_host("lear.localhost");
    assert!(names(&king, &[]).is_empty());
    let body = king.request("PATCH", &path, &[("name", "Mine")]).err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "Invalid channel folder ID");
    reorder(&king, &format!("[{back},{front}]")).err(400, "BAD_REQUEST");

    // Archiving: only an empty folder; hidden unless asked for.
    let params = [("subscriptions", r#"[{"name": "Verona"}]"#), ("folder_id", &front.to_string())];
    iago.post("/users/me/subscriptions", &params).ok();
    let verona = channel_id(&iago, "Verona");
    let archive = [("is_archived", "true")];
    let body = iago.request("PATCH", &path, &archive).err(400, "BAD_REQUEST");
    assert_eq!(msg(&body), "You need to remove all the channels from this folder to archive it.");
    let stream = format!("/streams/{verona}");
    iago.request("PATCH", &stream, &[("folder_id", "null")]).ok();
    iago.request("PATCH", &path, &archive).ok();
    assert_eq!(names(&hamlet, &[]), ["Backend"]);
    assert_eq!(names(&hamlet, &[("include_archived", "true")]), ["Backend", "WEB"]);
    iago.request("PATCH", &stream, &[("folder_id", &back.to_string())]).ok();

    // All of it survives a crash.
    server.kill();
    server.restart();
    let iago = server.client(IAGO);
    let list = iago.get("/channel_folders", &[("include_archived", "true")]).ok()
        ["channel_folders"]
        .clone();
    assert_eq!(list[0]["name"], "Backend");
    assert_eq!(list[0]["order"], 0);
    assert_eq!(list[1]["is_archived"], true);
    let channel = iago.get(&format!("/streams/{verona}"), &[]).ok()["stream"].clone();
    assert_eq!(channel["folder_id"], back);
    // Ids go on from where they were.
    let third = folder_id(create(&iago, "Design", "").ok());
    assert!(third > front.max(back));
}

#[test]
fn channels_name_only_folders_of_their_realm() {
    let server = TestServer::start();
    let iago = server.client(IAGO);
    let king = server.client(KING).with_host("lear.localhost");
    let theirs = folder_id(create(&king, "Lear's", "").ok());
    let ours = folder_id(create(&iago, "Ours", "").ok());
    // Creation with an unknown or foreign folder creates nothing.
    for bad in ["999", &theirs.to_string(), "\"x\"", "-1"] {
        let params = [("subscriptions", r#"[{"name": "Padua"}]"#), ("folder_id", bad)];
        iago.post("/users/me/subscriptions", &params).err(400, "BAD_REQUEST");
    }
    let streams = iago.get("/streams", &[]).ok()["streams"].clone();
    assert!(!streams.as_array().unwrap().iter().any(|s| s["name"] == "Padua"));
    let params = [("subscriptions", r#"[{"name": "Padua"}]"#), ("folder_id", &ours.to_string())];
    iago.post("/users/me/subscriptions", &params).ok();
    let padua = channel_id(&iago, "Padua");
    let stream = format!("/streams/{padua}");
    assert_eq!(iago.get(&stream, &[]).ok()["stream"]["folder_id"], ours);
    let body = iago.request("PATCH", &stream, &[("folder_id", &theirs.to_string())]);
    assert_eq!(msg(&body.err(400, "BAD_REQUEST")), "Invalid channel folder ID");
    // A member who does not administer the channel may not move it.
    let hamlet = server.client(HAMLET);
    hamlet.request("PATCH", &stream, &[("folder_id", "null")]).err(400, "BAD_REQUEST");
    assert_eq!(iago.get(&stream, &[]).ok()["stream"]["folder_id"], ours);
}
