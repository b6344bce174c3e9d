//! The uploaded files a message links (`/user_uploads/<path_id>` in its
//! content) that its sender may claim: their own, or ones they can already
//! read. Linking lets the message's readers download them.

use crate::state::{access, State, User};

/// The prefix of an uploaded file's URL path.
const PREFIX: &str = "/user_uploads/";

/// The ids of the attachments `content` links that `sender` may claim,
/// ascending, each once.
pub fn claimed(state: &State, sender: &User, content: &str) -> Vec<u64> {
    if !content.contains(PREFIX) {
        return Vec::new();
    }
    let mut ids: Vec<u64> = content
        .match_indices(PREFIX)
        .filter_map(|(at, _)| {
            let rest = &content[at + PREFIX.len()..];
            let end = rest
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, ')' | ']' | '"' | '\'' | '>' | '<' | '?' | '#')
                })
                .unwrap_or(rest.len());
            let path_id = &rest[..end];
            let attachment = state.files.by_path(path_id)?;
            access::can_read_attachment(state, sender, &attachment).then_some(attachment.id)
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}
