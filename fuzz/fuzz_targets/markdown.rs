//! Message Markdown rendered plain and with a resolver that knows a few
//! users, a group, channels, custom emoji and the realm's URL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natter::markdown::{self, Resolver};

struct Names;

impl Resolver for Names {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        name.eq_ignore_ascii_case("hamlet").then(|| (8, "Hamlet".to_owned()))
    }
    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        (id == 8).then(|| (8, "Hamlet".to_owned()))
    }
    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name == "support").then(|| (3, "support".to_owned()))
    }
    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        name.eq_ignore_ascii_case("general").then(|| (1, "general".to_owned()))
    }
    fn realm_url(&self) -> Option<String> {
        Some("https://chat.example.com".to_owned())
    }
    fn realm_emoji(&self, name: &str) -> Option<(u64, String)> {
        (name == "natter").then(|| (1, "/user_avatars/2/emoji/images/1.png".to_owned()))
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let _ = markdown::render(source);
    let _ = markdown::render_message(source, &Names);
    let _ = markdown::is_me_message(source);
});
