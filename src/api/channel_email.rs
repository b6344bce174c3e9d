//! `GET /streams/{stream_id}/email_address`: the address of a channel in
//! Zulip's email gateway, in the form Zulip gives it:
//! `<channel slug>.<token>.show-sender@<host>`.
//!
//! natter has no email gateway (mail sent to the address reaches nobody);
//! the route answers as Zulip does for clients that show the address
//! (zulip-terminal's channel information). As in Zulip (before feature
//! level 448), the caller needs content access to the channel; the token
//! is random, one per channel and sender, made on the first request
//! (durably: the same address is given again after a restart). The
//! default sender is the email gateway (natter's realms have no account
//! for it); `sender_id` may name the caller or a bot they manage.

use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::access::can_read_channel;
use crate::state::features::FeatureChange;
use crate::state::{ChannelId, UserId};

/// Letters of an email token (Zulip's are 32 lowercase hex digits).
const TOKEN_ALPHABET: &[u8] = b"0123456789abcdef";

/// `GET /streams/{stream_id}/email_address` with an optional `sender_id`.
pub fn email_address(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "stream_id")?;
    let me = call.caller().clone();
    let channel = app
        .state
        .channel_in_realm(call.realm.id, ChannelId(id))
        .filter(|c| can_read_channel(&me, c))
        .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?;
    let sender = match call.params.int("sender_id")? {
        None => None,
        Some(id) if id == me.id.0 as i64 => Some(me.id),
        Some(id) => {
            let bot = u64::try_from(id)
                .ok()
                .and_then(|id| app.state.account_in_realm(me.realm, UserId(id)))
                .filter(|u| u.is_bot())
                .ok_or_else(|| ApiError::bad_request("No such bot"))?;
            if !(me.role.is_admin() || bot.bot_owner == Some(me.id)) {
                return Err(ApiError::bad_request("Insufficient permission"));
            }
            Some(bot.id)
        }
    };
    let key = (channel.id, sender);
    if !app.state.features.email_tokens.contains(&key) {
        let token = entropy::token(32, TOKEN_ALPHABET);
        let made = app.committer.commit(|state| {
            // A racing request may have made it meanwhile: that one stays.
            if state.features.email_tokens.contains(&key) {
                return Err(ApiError::bad_request("made meanwhile"));
            }
            let change = FeatureChange::AddEmailToken { channel: channel.id, sender, token };
            Ok((Mutation::features(change), ()))
        });
        if !app.state.features.email_tokens.contains(&key) {
            made?;
        }
    }
    let token = app.state.features.email_tokens.get(&key).ok_or_else(ApiError::internal)?;
    let host = app.external_host();
    let host = host.rsplit_once(':').map_or(host, |(name, _)| name);
    Ok(reply! { "email" => format!("{}@{host}", encode(&channel.name, &token)) })
}

/// Zulip's local part: the channel's name with every run of non-word
/// characters made one hyphen, lowercased, without hyphens at the ends
/// (left out when nothing remains), then the token and `show-sender`.
fn encode(name: &str, token: &str) -> String {
    let mut slug = String::new();
    let mut in_run = false;
    for c in name.chars() {
        if c.is_alphanumeric() || c == '_' {
            slug.extend(c.to_lowercase());
            in_run = false;
        } else if !in_run {
            slug.push('-');
            in_run = true;
        }
    }
    let slug = slug.trim_matches('-');
    if slug.is_empty() {
        format!("{token}.show-sender")
    } else {
        format!("{slug}.{token}.show-sender")
    }
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn the_local_part_is_zulips() {
        assert_eq!(encode("core team", "ab12"), "core-team.ab12.show-sender");
        assert_eq!(encode("  Déjà vu!! (2) ", "t"), "déjà-vu-2.t.show-sender");
        assert_eq!(encode("!!!", "t"), "t.show-sender");
        assert_eq!(encode("snake_case", "t"), "snake_case.t.show-sender");
    }
}
