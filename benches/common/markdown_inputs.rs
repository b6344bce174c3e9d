//! Inputs shared by `benches/markdown.rs` and `examples/markdown_timing.rs`:
//! the resolver and the typical message both time.

use natter::markdown::Resolver;

/// A realm with a few names, like the send handler's resolver answers.
pub struct Names;

impl Resolver for Names {
    fn user_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name.eq_ignore_ascii_case("King Hamlet")).then(|| (12, "King Hamlet".into()))
    }
    fn user_by_id(&self, id: u64) -> Option<(u64, String)> {
        (id == 12).then(|| (12, "King Hamlet".into()))
    }
    fn group_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name == "backend").then(|| (30, "backend".into()))
    }
    fn channel_by_name(&self, name: &str) -> Option<(u64, String)> {
        (name.eq_ignore_ascii_case("Denmark")).then(|| (9, "Denmark".into()))
    }
}

/// A typical chat message: a mention, a channel link, an emoji, a URL, a
/// one-line Rust code block and a quote.
pub const TYPICAL: &str = "@**King Hamlet** the build on #**Denmark>ci** is green again :tada: — \
see https://example.com/builds/1234 for the log.\n\n\
The fix was a **one-line** change:\n\n```rust\nlet limit = config.limit.max(1);\n```\n\n\
> was it the cache?\n\nNo, the `limit` was zero. Thanks @*backend*!";
