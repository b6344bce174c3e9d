//! A group-setting value (JSON text: a group id or `{direct_members,
//! direct_subgroups}`) checked against a small realm.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let f = common::fixture();
    let state = &f.world.state;
    let realm = state.realm_by_subdomain("").expect("the fixture's realm");
    let _ = natter::api::group_setting::parse(state, &realm, "can_manage_group", &value);
});
