//! `multipart/form-data` bodies → request variables. The input's first
//! line is the `Content-Type` header's boundary parameter, the rest the
//! body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (boundary, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&data[..0], data),
    };
    let content_type = format!("multipart/form-data; {}", String::from_utf8_lossy(boundary));
    if let Ok(mut params) = natter::http::decode_params("", &content_type, body) {
        for name in params.unused() {
            let _ = params.json(&name);
        }
    }
});
