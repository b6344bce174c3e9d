//! The routing table: every endpoint natter serves, in one greppable list.
//! Paths are relative to `/api/v1`; `{name}` segments match one path
//! segment and are handed to the handler in order.

use crate::api::{self, Handler};

/// Whether a route needs credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No authentication (an `Authorization` header is ignored).
    Public,
    /// HTTP Basic authentication required.
    User,
}

/// One endpoint.
pub struct Route {
    /// HTTP method.
    pub method: &'static str,
    /// Pattern under `/api/v1`.
    pub pattern: &'static str,
    /// Authentication requirement.
    pub access: Access,
    /// The handler.
    pub handler: Handler,
}

/// Every endpoint.
pub static ROUTES: &[Route] = &[
    Route {
        method: "GET",
        pattern: "/server_settings",
        access: Access::Public,
        handler: api::realm::server_settings,
    },
    Route {
        method: "POST",
        pattern: "/dev_fetch_api_key",
        access: Access::Public,
        handler: api::auth::dev_fetch_api_key,
    },
    Route {
        method: "GET",
        pattern: "/users/me",
        access: Access::User,
        handler: api::users::get_me,
    },
    Route { method: "GET", pattern: "/users", access: Access::User, handler: api::users::list },
    Route {
        method: "GET",
        pattern: "/users/{user_id}",
        access: Access::User,
        handler: api::users::get_one,
    },
    Route {
        method: "POST",
        pattern: "/messages",
        access: Access::User,
        handler: api::messages::send,
    },
    Route {
        method: "GET",
        pattern: "/messages/{message_id}",
        access: Access::User,
        handler: api::messages::get_one,
    },
    // --- Real time (realtime branch): register, event queues, presence ---
    Route {
        method: "POST",
        pattern: "/register",
        access: Access::User,
        handler: api::register::register,
    },
    Route {
        method: "GET",
        pattern: "/events",
        access: Access::User,
        handler: api::events::get_events,
    },
    Route {
        method: "DELETE",
        pattern: "/events",
        access: Access::User,
        handler: api::events::delete_queue,
    },
    Route {
        method: "POST",
        pattern: "/users/me/presence",
        access: Access::User,
        handler: api::presence::update_presence,
    },
    // --- end real time ---
    // Reading: message windows and narrows, topics, channel lists, flags.
    Route {
        method: "GET",
        pattern: "/messages",
        access: Access::User,
        handler: api::reading::get_messages,
    },
    Route {
        method: "POST",
        pattern: "/messages/flags",
        access: Access::User,
        handler: api::flags::update,
    },
    Route {
        method: "GET",
        pattern: "/users/me/{stream_id}/topics",
        access: Access::User,
        handler: api::reading::get_topics,
    },
    Route {
        method: "GET",
        pattern: "/users/me/subscriptions",
        access: Access::User,
        handler: api::channels::get_subscriptions,
    },
    Route {
        method: "GET",
        pattern: "/streams",
        access: Access::User,
        handler: api::channels::get_streams,
    },
    // --- Personal settings, typing, invitations and the small per-user
    // --- resources (src/api/settings.rs and siblings).
    Route {
        method: "PATCH",
        pattern: "/settings",
        access: Access::User,
        handler: api::settings::update,
    },
    Route {
        method: "PATCH",
        pattern: "/settings/display",
        access: Access::User,
        handler: api::settings::update,
    },
    Route {
        method: "PATCH",
        pattern: "/settings/notifications",
        access: Access::User,
        handler: api::settings::update,
    },
];

/// The outcome of matching a request path.
pub enum Match {
    /// A route and its path arguments.
    Found(&'static Route, Vec<String>),
    /// The path exists, but not for this method.
    WrongMethod,
    /// No such path.
    NotFound,
}

/// Finds the route for `method` and `path` (the part after `/api/v1`).
/// Literal segments win over `{…}` segments (`/users/me` before `/users/{id}`).
pub fn find(method: &str, path: &str) -> Match {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let mut best: Option<(&'static Route, Vec<String>, usize)> = None;
    let mut path_exists = false;
    for route in ROUTES {
        let Some((args, literals)) = match_pattern(route.pattern, &segments) else { continue };
        path_exists = true;
        if route.method != method {
            continue;
        }
        if best.as_ref().is_none_or(|(_, _, l)| literals > *l) {
            best = Some((route, args, literals));
        }
    }
    match best {
        Some((route, args, _)) => Match::Found(route, args),
        None if path_exists => Match::WrongMethod,
        None => Match::NotFound,
    }
}

/// `Some((args, number of literal segments))` if the pattern matches.
fn match_pattern(pattern: &str, segments: &[&str]) -> Option<(Vec<String>, usize)> {
    let parts: Vec<&str> = pattern.split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut args = Vec::new();
    let mut literals = 0;
    for (part, segment) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            if segment.is_empty() {
                return None;
            }
            args.push(
                percent_encoding::percent_decode_str(segment).decode_utf8().ok()?.into_owned(),
            );
        } else if part == segment {
            literals += 1;
        } else {
            return None;
        }
    }
    Some((args, literals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_segments_win_and_methods_are_checked() {
        match find("GET", "/users/me") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/users/me");
                assert!(args.is_empty());
            }
            _ => panic!("no match"),
        }
        match find("GET", "/users/12") {
            Match::Found(route, args) => {
                assert_eq!(route.pattern, "/users/{user_id}");
                assert_eq!(args, vec!["12".to_owned()]);
            }
            _ => panic!("no match"),
        }
        assert!(matches!(find("DELETE", "/server_settings"), Match::WrongMethod));
        assert!(matches!(find("GET", "/nope"), Match::NotFound));
    }
}
