//! `application/x-www-form-urlencoded` bodies (and query strings) →
//! request variables, and the typed getters handlers read them with.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let content_type = "application/x-www-form-urlencoded";
    let Ok(mut params) = natter::http::decode_params("", content_type, data) else {
        panic!("a form body is never refused");
    };
    for name in params.unused() {
        let _ = params.json(&name);
        let _ = params.int(&name);
        let _ = params.bool(&name);
    }
    assert!(params.unused().is_empty());
});
