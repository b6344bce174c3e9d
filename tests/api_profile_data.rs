//! `PATCH` and `DELETE /users/me/profile_data`: users set and clear their
//! own values of custom profile fields they may edit.

use serde_json::json;

use crate::util::TestServer;

const ADMIN: &str = "iago@natter.test";
const HAMLET: &str = "hamlet@natter.test";
const BOT: &str = "helper-bot@natter.test";

#[test]
fn users_edit_their_own_profile_data() {
    let server = TestServer::start();
    let admin = server.client(ADMIN);
    let hamlet = server.client(HAMLET);
    let me = hamlet.get("/users/me", &[]).ok()["user_id"].as_u64().unwrap();
    let create = |p: &[(&str, &str)]| admin.post("/realm/profile_fields", p).ok()["id"].as_u64();
    let team = create(&[("name", "Team"), ("field_type", "1")]).unwrap();
    let locked =
        create(&[("name", "Badge"), ("field_type", "1"), ("editable_by_user", "false")]).unwrap();
    let mine = || {
        let user =
            hamlet.get(&format!("/users/{me}"), &[("include_custom_profile_fields", "true")]).ok();
        user["user"]["profile_data"].clone()
    };
    let data = |v: serde_json::Value| v.to_string();

    hamlet
        .request(
            "PATCH",
            "/users/me/profile_data",
            &[("data", &data(json!([{"id": team, "value": "Players"}])))],
        )
        .ok();
    assert_eq!(mine()[team.to_string()]["value"], "Players");

    // Refusals: a field users may not edit, an unknown field, a bad value,
    // no data, a bot. Nothing changes.
    let patch = |who: &crate::util::Client, d: serde_json::Value| {
        who.request("PATCH", "/users/me/profile_data", &[("data", &data(d))])
    };
    let e = patch(&hamlet, json!([{"id": locked, "value": "Gold"}])).err(400, "BAD_REQUEST");
    assert!(e["msg"].as_str().unwrap().contains("not allowed"), "{e}");
    patch(&hamlet, json!([{"id": 99_999, "value": "x"}])).err(400, "BAD_REQUEST");
    patch(&hamlet, json!([{"id": team, "value": "x".repeat(51)}])).err(400, "BAD_REQUEST");
    patch(&hamlet, json!({"id": team})).err(400, "BAD_REQUEST");
    hamlet.request("PATCH", "/users/me/profile_data", &[]).err(400, "REQUEST_VARIABLE_MISSING");
    patch(&server.client(BOT), json!([{"id": team, "value": "Bots"}])).err(400, "BAD_REQUEST");
    assert_eq!(mine()[team.to_string()]["value"], "Players");
    assert!(mine().get(locked.to_string()).is_none());
    // Another realm's user cannot name this realm's field.
    let lear = server.client("king@lear.test").with_host("lear.localhost");
    patch(&lear, json!([{"id": team, "value": "x"}])).err(400, "BAD_REQUEST");

    // An administrator edits even a locked field of their own.
    patch(&admin, json!([{"id": locked, "value": "Gold"}])).ok();

    // DELETE clears the caller's values.
    let delete = |d: serde_json::Value| {
        hamlet.request("DELETE", "/users/me/profile_data", &[("data", &data(d))])
    };
    delete(json!([locked])).err(400, "BAD_REQUEST");
    delete(json!(["x"])).err(400, "BAD_REQUEST");
    delete(json!([team])).ok();
    assert!(mine().get(team.to_string()).is_none());
}
