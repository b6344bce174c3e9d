//! User groups: list, create, update, members, subgroups (cycles refused),
//! deactivate; system groups are not editable; group-setting values.

use serde_json::{json, Value};

use crate::util::{Client, TestServer};

const OWNER: &str = "desdemona@natter.test";
const ADMIN: &str = "iago@natter.test";
const HAMLET: &str = "hamlet@natter.test";
const OTHELLO: &str = "othello@natter.test";
const CORDELIA: &str = "cordelia@natter.test";
const GUEST: &str = "polonius@natter.test";

fn id(server: &TestServer, email: &str) -> u64 {
    server.client(email).get("/users/me", &[]).ok()["user_id"].as_u64().unwrap()
}

fn groups(c: &Client, extra: &[(&str, &str)]) -> Vec<Value> {
    c.get("/user_groups", extra).ok()["user_groups"].as_array().unwrap().clone()
}

fn group(c: &Client, gid: u64) -> Value {
    groups(c, &[("include_deactivated_groups", "true")])
        .into_iter()
        .find(|g| g["id"] == gid)
        .unwrap()
}

fn create(c: &Client, name: &str, members: &[u64]) -> crate::util::Response {
    c.post(
        "/user_groups/create",
        &[("name", name), ("description", "d"), ("members", &json!(members).to_string())],
    )
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

#[test]
fn creating_and_editing_groups() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (hid, oid) = (id(&server, HAMLET), id(&server, OTHELLO));
    let all = groups(&hamlet, &[]);
    assert!(all.iter().any(|g| g["name"] == "role:members" && g["is_system_group"] == true));
    let admins =
        all.iter().find(|g| g["name"] == "role:administrators").unwrap()["id"].as_u64().unwrap();

    let gid = create(&hamlet, "actors", &[hid, oid]).ok()["group_id"].as_u64().unwrap();
    let g = group(&hamlet, gid);
    assert_eq!((g["name"].as_str(), g["creator_id"].as_u64()), (Some("actors"), Some(hid)));
    assert_eq!(ids(&g["members"]), vec![hid, oid]);
    create(&hamlet, "ACTORS", &[]).err(400, "BAD_REQUEST");
    create(&hamlet, "role:mine", &[]).err(400, "BAD_REQUEST");
    create(&hamlet, "  ", &[]).err(400, "BAD_REQUEST");
    create(&hamlet, &"g".repeat(101), &[]).err(400, "BAD_REQUEST");
    create(&hamlet, "ghosts", &[999_999]).err(400, "BAD_REQUEST");
    create(&server.client(GUEST), "guests", &[]).err(400, "BAD_REQUEST");
    hamlet.post("/user_groups/create", &[("members", "[]")]).err(400, "REQUEST_VARIABLE_MISSING");

    // Rename by the creator and by an administrator; not by others.
    let path = format!("/user_groups/{gid}");
    hamlet.request("PATCH", &path, &[("name", "players"), ("description", "On stage")]).ok();
    server.client(ADMIN).request("PATCH", &path, &[("description", "Backstage")]).ok();
    let g = group(&hamlet, gid);
    assert_eq!(
        (g["name"].as_str(), g["description"].as_str()),
        (Some("players"), Some("Backstage"))
    );
    server.client(OTHELLO).request("PATCH", &path, &[("name", "mine")]).err(400, "BAD_REQUEST");
    hamlet.request("PATCH", &path, &[]).err(400, "BAD_REQUEST");
    hamlet.request("PATCH", "/user_groups/999999", &[("name", "x")]).err(400, "BAD_REQUEST");
    // System groups are not editable, even by the owner.
    server
        .client(OWNER)
        .request("PATCH", &format!("/user_groups/{admins}"), &[("name", "bosses")])
        .err(400, "BAD_REQUEST");
    server
        .client(OWNER)
        .post(&format!("/user_groups/{admins}/members"), &[("add", &format!("[{hid}]"))])
        .err(400, "BAD_REQUEST");
    // Another realm's groups do not exist here.
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    lear.request("PATCH", &path, &[("name", "x")]).err(400, "BAD_REQUEST");
    lear.get(&format!("{path}/members"), &[]).err(400, "BAD_REQUEST");
}

#[test]
fn members_and_subgroups() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let (hid, oid, cid) = (id(&server, HAMLET), id(&server, OTHELLO), id(&server, CORDELIA));
    let a = create(&hamlet, "a", &[hid]).ok()["group_id"].as_u64().unwrap();
    let b = create(&hamlet, "b", &[oid]).ok()["group_id"].as_u64().unwrap();
    let c = create(&hamlet, "c", &[cid]).ok()["group_id"].as_u64().unwrap();
    let members = |g: u64| format!("/user_groups/{g}/members");
    let subgroups = |g: u64| format!("/user_groups/{g}/subgroups");

    hamlet.post(&members(a), &[("add", &format!("[{cid}]")), ("delete", &format!("[{hid}]"))]).ok();
    assert_eq!(ids(&hamlet.get(&members(a), &[]).ok()["members"]), vec![cid]);
    hamlet.post(&members(a), &[("add", &format!("[{cid}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&members(a), &[("delete", &format!("[{oid}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&members(a), &[("add", "[999999]")]).err(400, "BAD_REQUEST");
    hamlet.post(&members(a), &[]).err(400, "BAD_REQUEST");
    server
        .client(OTHELLO)
        .post(&members(a), &[("add", &format!("[{oid}]"))])
        .err(400, "BAD_REQUEST");

    // a ⊃ b ⊃ c; c ⊃ a would be a cycle, as would a ⊃ a.
    hamlet.post(&subgroups(a), &[("add", &format!("[{b}]"))]).ok();
    hamlet.post(&subgroups(b), &[("add", &format!("[{c}]"))]).ok();
    hamlet.post(&subgroups(c), &[("add", &format!("[{a}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&subgroups(a), &[("add", &format!("[{a}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&subgroups(a), &[("add", &format!("[{b}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&subgroups(a), &[("delete", &format!("[{c}]"))]).err(400, "BAD_REQUEST");
    hamlet.post(&subgroups(a), &[("add", "[999999]")]).err(400, "BAD_REQUEST");
    assert_eq!(ids(&hamlet.get(&subgroups(a), &[]).ok()["subgroups"]), vec![b, c]);
    assert_eq!(
        ids(&hamlet.get(&subgroups(a), &[("direct_subgroup_only", "true")]).ok()["subgroups"]),
        vec![b]
    );
    let mut all = ids(&hamlet.get(&members(a), &[]).ok()["members"]);
    all.sort();
    assert_eq!(all, vec![oid, cid]);
    assert_eq!(
        ids(&hamlet.get(&members(a), &[("direct_member_only", "true")]).ok()["members"]),
        vec![cid]
    );
    assert_eq!(ids(&group(&hamlet, a)["direct_subgroup_ids"]), vec![b]);

    // A group in use cannot be deactivated: as a subgroup, or in a channel setting.
    hamlet.post(&format!("/user_groups/{b}/deactivate"), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&subgroups(a), &[("delete", &format!("[{b}]"))]).ok();
    let setting = json!({"direct_members": [hid], "direct_subgroups": [b]}).to_string();
    hamlet
        .post(
            "/users/me/subscriptions",
            &[("subscriptions", r#"[{"name": "stage"}]"#), ("can_send_message_group", &setting)],
        )
        .ok();
    hamlet.post(&format!("/user_groups/{b}/deactivate"), &[]).err(400, "BAD_REQUEST");
    hamlet.post(&format!("/user_groups/{a}/deactivate"), &[]).ok();
    hamlet.post(&format!("/user_groups/{a}/deactivate"), &[]).err(400, "BAD_REQUEST");
    assert!(groups(&hamlet, &[]).iter().all(|g| g["id"] != a));
    assert_eq!(group(&hamlet, a)["deactivated"], true);
    // A deactivated group is not picked for new settings or subgroups.
    hamlet.post(&subgroups(c), &[("add", &format!("[{a}]"))]).err(400, "BAD_REQUEST");
    hamlet
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "stage2"}]"#),
                ("can_send_message_group", &a.to_string()),
            ],
        )
        .err(400, "BAD_REQUEST");
}

#[test]
fn group_settings_grant_permissions() {
    let server = TestServer::start();
    let hamlet = server.client(HAMLET);
    let oid = id(&server, OTHELLO);
    let g = create(&hamlet, "posters", &[oid]).ok()["group_id"].as_u64().unwrap();
    hamlet
        .post(
            "/users/me/subscriptions",
            &[
                ("subscriptions", r#"[{"name": "board"}]"#),
                ("can_send_message_group", &g.to_string()),
                ("principals", &format!("[{}, {oid}]", id(&server, HAMLET))),
            ],
        )
        .ok();
    let send = |c: &Client| {
        c.post(
            "/messages",
            &[("type", "stream"), ("to", "board"), ("topic", "t"), ("content", "x")],
        )
    };
    send(&server.client(OTHELLO)).ok();
    send(&hamlet).err(400, "BAD_REQUEST");
    // Membership changes take effect at once.
    hamlet
        .post(
            &format!("/user_groups/{g}/members"),
            &[("add", &format!("[{}]", id(&server, HAMLET)))],
        )
        .ok();
    send(&hamlet).ok();
}
