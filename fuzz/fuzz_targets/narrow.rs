//! A `narrow` parameter (JSON text) parsed for each viewer of a small
//! realm and, when it parses, matched against its messages.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use natter::narrow::Narrow;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let f = common::fixture();
    for viewer in &f.viewers {
        if let Ok(narrow) = Narrow::parse(&f.world.state, viewer, &value) {
            for message in &f.messages {
                narrow.matches(&f.world.state, viewer, message, f.flags);
            }
            let _ = (narrow.channel(), narrow.topic(), narrow.conversation(), narrow.id());
            let _ = narrow.search_stems();
        }
    }
});
