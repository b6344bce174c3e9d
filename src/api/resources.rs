//! The seed's small resources: navigation views, saved snippets, code
//! playgrounds and push-device tokens (stored per user; natter sends no
//! pushes). Their register sections are in `personal::register_state`.

use iri_string::template::UriTemplateStr;

use super::personal::{commit_change, not_found};
use super::{App, Call, Reply};
use crate::entropy;
use crate::error::{ApiError, ApiResult};
use crate::mutation::Mutation;
use crate::reply;
use crate::state::personal::{
    LocalIdKind, NavigationView, PersonalChange, Playground, PushKind, PushToken, SavedSnippet,
};
use crate::state::{State, UserId};

/// Fragments of Zulip's built-in views: they take no custom name.
pub const BUILT_IN_VIEWS: &[&str] = &[
    "inbox",
    "recent",
    "feed",
    "drafts",
    "scheduled",
    "reminders",
    "narrow/is/mentioned",
    "narrow/is/starred",
    "narrow/has/reaction",
    "narrow/is/followed",
];
/// Longest view fragment.
pub const MAX_FRAGMENT_LENGTH: usize = 255;
/// Longest view name.
pub const MAX_VIEW_NAME_LENGTH: usize = 100;
/// Longest snippet title (Zulip's).
pub const MAX_SNIPPET_TITLE_LENGTH: usize = 60;
/// Longest snippet content (as messages).
pub const MAX_SNIPPET_CONTENT_LENGTH: usize = super::messages::MAX_MESSAGE_LENGTH;
/// Longest playground name.
pub const MAX_PLAYGROUND_NAME_LENGTH: usize = 100;
/// Longest Pygments language name.
pub const MAX_PYGMENTS_LANGUAGE_LENGTH: usize = 40;
/// Longest playground URL template.
pub const MAX_URL_TEMPLATE_LENGTH: usize = 1024;
/// Longest push token (Zulip's limit).
pub const MAX_PUSH_TOKEN_LENGTH: usize = 4096;

// ------------------------------------------------------------ navigation views

fn views_of(state: &State, user: UserId) -> Vec<NavigationView> {
    state.settings.navigation_views.get(&user).unwrap_or_default()
}

fn check_view_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Name cannot be blank").with("var_name", "name"));
    }
    if name.chars().count() > MAX_VIEW_NAME_LENGTH {
        return Err(ApiError::invalid("name", "too long"));
    }
    Ok(name.to_owned())
}

/// `GET /navigation_views`.
pub fn get_navigation_views(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let views = views_of(&app.state, call.caller().id);
    Ok(reply! { "navigation_views" => views.iter().map(|v| v.to_json()).collect::<Vec<_>>() })
}

/// `POST /navigation_views`: `fragment`, `is_pinned`, `name` (custom views
/// need one; built-in views take none).
pub fn add_navigation_view(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let fragment = call.params.required_string("fragment")?.trim().to_owned();
    let is_pinned = call.params.bool("is_pinned")?.ok_or_else(|| ApiError::missing("is_pinned"))?;
    let name = call.params.json_or_string("name")?.filter(|v| !v.is_null());
    if fragment.is_empty() {
        return Err(ApiError::bad_request("fragment cannot be blank").with("var_name", "fragment"));
    }
    if fragment.chars().count() > MAX_FRAGMENT_LENGTH {
        return Err(ApiError::invalid("fragment", "too long"));
    }
    let built_in = BUILT_IN_VIEWS.contains(&fragment.as_str());
    let name = match (name, built_in) {
        (Some(_), true) => {
            return Err(ApiError::bad_request("Built-in views cannot have a custom name"))
        }
        (None, true) => None,
        (None, false) => return Err(ApiError::bad_request("Custom views must have a name")),
        (Some(v), false) => {
            let text = v.as_str().ok_or_else(|| ApiError::invalid("name", "not a string"))?;
            Some(check_view_name(text)?)
        }
    };
    let me = call.caller().id;
    let view = NavigationView { fragment, is_pinned, name };
    commit_change(app, |state| {
        let views = views_of(state, me);
        if views.iter().any(|v| v.fragment == view.fragment) {
            return Err(ApiError::bad_request("Navigation view already exists for this fragment"));
        }
        if view.name.is_some() && views.iter().any(|v| v.name == view.name) {
            return Err(ApiError::bad_request("Navigation view with this name already exists"));
        }
        Ok(PersonalChange::PutNavigationView { user: me, view, update: false })
    })?;
    Ok(Reply::new())
}

/// `PATCH /navigation_views/{fragment}`: `is_pinned`, `name`.
pub fn update_navigation_view(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let fragment = call.path.first().cloned().unwrap_or_default();
    let is_pinned = call.params.bool("is_pinned")?;
    let name = match call.params.string("name") {
        Some(name) => Some(check_view_name(&name)?),
        None => None,
    };
    if is_pinned.is_none() && name.is_none() {
        return Err(ApiError::bad_request("Nothing to update: send is_pinned or name"));
    }
    let me = call.caller().id;
    commit_change(app, |state| {
        let views = views_of(state, me);
        let mut view = views
            .iter()
            .find(|v| v.fragment == fragment)
            .cloned()
            .ok_or_else(|| not_found("Navigation view does not exist."))?;
        if name.is_some() && BUILT_IN_VIEWS.contains(&fragment.as_str()) {
            return Err(ApiError::bad_request("Built-in views cannot have a custom name"));
        }
        if name.is_some() && views.iter().any(|v| v.fragment != fragment && v.name == name) {
            return Err(ApiError::bad_request("Navigation view with this name already exists"));
        }
        if let Some(pinned) = is_pinned {
            view.is_pinned = pinned;
        }
        if name.is_some() {
            view.name = name.clone();
        }
        Ok(PersonalChange::PutNavigationView { user: me, view, update: true })
    })?;
    Ok(Reply::new())
}

/// `DELETE /navigation_views/{fragment}`.
pub fn remove_navigation_view(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let fragment = call.path.first().cloned().unwrap_or_default();
    let me = call.caller().id;
    commit_change(app, |state| {
        if !views_of(state, me).iter().any(|v| v.fragment == fragment) {
            return Err(not_found("Navigation view does not exist."));
        }
        Ok(PersonalChange::RemoveNavigationView { user: me, fragment })
    })?;
    Ok(Reply::new())
}

// -------------------------------------------------------------- saved snippets

fn check_title(title: &str) -> ApiResult<String> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::bad_request("Title cannot be empty.").with("var_name", "title"));
    }
    if title.chars().count() > MAX_SNIPPET_TITLE_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Title is too long (limit: {MAX_SNIPPET_TITLE_LENGTH} characters)"
        ))
        .with("var_name", "title"));
    }
    Ok(title.to_owned())
}

fn check_content(content: &str) -> ApiResult<String> {
    if content.trim().is_empty() {
        return Err(ApiError::bad_request("Content cannot be empty.").with("var_name", "content"));
    }
    if content.chars().count() > MAX_SNIPPET_CONTENT_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Content is too long (limit: {MAX_SNIPPET_CONTENT_LENGTH} characters)"
        ))
        .with("var_name", "content"));
    }
    Ok(content.to_owned())
}

/// `GET /saved_snippets`.
pub fn get_saved_snippets(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let snippets = app.state.settings.snippets.get(&call.caller().id).unwrap_or_default();
    let list: Vec<_> = snippets.values().map(|s| s.to_json()).collect();
    Ok(reply! { "saved_snippets" => list })
}

/// `POST /saved_snippets`: `title`, `content` → `saved_snippet_id`.
pub fn create_saved_snippet(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let title = check_title(&call.params.required_string("title")?)?;
    let content = check_content(&call.params.required_string("content")?)?;
    let me = call.caller().id;
    let now = entropy::now();
    let id = app.committer.commit(|state| {
        let id = state.settings.peek_id(LocalIdKind::Snippet);
        let snippet = SavedSnippet { id, title, content, date_created: now };
        Ok((
            Mutation::personal(PersonalChange::PutSnippet { user: me, snippet, update: false }),
            id,
        ))
    })?;
    Ok(reply! { "saved_snippet_id" => id })
}

fn snippet_id(call: &Call) -> ApiResult<u64> {
    call.path_id(0, "saved_snippet_id")
}

fn unknown_snippet() -> ApiError {
    ApiError::bad_request("Saved snippet does not exist.")
}

/// `PATCH /saved_snippets/{saved_snippet_id}`: `title`, `content`.
pub fn edit_saved_snippet(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = snippet_id(call)?;
    let title = call.params.string("title").map(|t| check_title(&t)).transpose()?;
    let content = call.params.string("content").map(|c| check_content(&c)).transpose()?;
    if title.is_none() && content.is_none() {
        return Err(ApiError::bad_request("Nothing to update: send title or content"));
    }
    let me = call.caller().id;
    commit_change(app, |state| {
        let mut snippet = state
            .settings
            .snippets
            .read(&me, |m| m.get(&id).cloned())
            .flatten()
            .ok_or_else(unknown_snippet)?;
        if let Some(t) = title {
            snippet.title = t;
        }
        if let Some(c) = content {
            snippet.content = c;
        }
        Ok(PersonalChange::PutSnippet { user: me, snippet, update: true })
    })?;
    Ok(Reply::new())
}

/// `DELETE /saved_snippets/{saved_snippet_id}`.
pub fn delete_saved_snippet(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = snippet_id(call)?;
    let me = call.caller().id;
    commit_change(app, |state| {
        if state.settings.snippets.read(&me, |m| m.contains_key(&id)) != Some(true) {
            return Err(unknown_snippet());
        }
        Ok(PersonalChange::DeleteSnippet { user: me, id })
    })?;
    Ok(Reply::new())
}

// ------------------------------------------------------------ code playgrounds

/// An RFC 6570 template whose only variable is `code`, for an http(s) URL.
pub fn check_url_template(template: &str) -> Result<(), String> {
    if template.len() > MAX_URL_TEMPLATE_LENGTH {
        return Err("too long".into());
    }
    let parsed =
        UriTemplateStr::new(template).map_err(|e| format!("not an RFC 6570 template: {e}"))?;
    let mut names: Vec<&str> = parsed.variables().map(|v| v.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if names != ["code"] {
        return Err("must contain exactly one variable, named 'code'".into());
    }
    let lower = template.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        return Err("must be an http or https URL".into());
    }
    Ok(())
}

fn require_admin(call: &Call) -> ApiResult<()> {
    if call.caller().role.is_admin() {
        Ok(())
    } else {
        Err(ApiError::bad_request("Must be an organization administrator"))
    }
}

/// `POST /realm/playgrounds` (administrators): `name`, `pygments_language`,
/// `url_template` → `id`.
pub fn add_playground(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let name = call.params.required_string("name")?.trim().to_owned();
    let language = call.params.required_string("pygments_language")?.trim().to_owned();
    let template = call.params.required_string("url_template")?.trim().to_owned();
    require_admin(call)?;
    if name.is_empty() || name.chars().count() > MAX_PLAYGROUND_NAME_LENGTH {
        return Err(ApiError::invalid("name", "must be 1 to 100 characters"));
    }
    let language_ok = !language.is_empty()
        && language.len() <= MAX_PYGMENTS_LANGUAGE_LENGTH
        && language.chars().all(|c| c.is_ascii_alphanumeric() || " _+-./#".contains(c));
    if !language_ok {
        return Err(ApiError::invalid("pygments_language", "not a language name"));
    }
    check_url_template(&template).map_err(|why| ApiError::invalid("url_template", &why))?;
    let realm = call.realm.id;
    let id = app.committer.commit(|state| {
        let duplicate = state.settings.playgrounds.collect_sorted(|_, p| {
            p.realm == realm && p.name == name && p.pygments_language == language
        });
        if !duplicate.is_empty() {
            return Err(ApiError::bad_request(
                "A playground with this name and language already exists",
            ));
        }
        let id = state.settings.peek_id(LocalIdKind::Playground);
        let playground =
            Playground { id, realm, name, pygments_language: language, url_template: template };
        Ok((Mutation::personal(PersonalChange::AddPlayground(playground)), id))
    })?;
    Ok(reply! { "id" => id })
}

/// `DELETE /realm/playgrounds/{playground_id}` (administrators).
pub fn remove_playground(app: &App, call: &mut Call) -> ApiResult<Reply> {
    let id = call.path_id(0, "playground_id")?;
    require_admin(call)?;
    let realm = call.realm.id;
    commit_change(app, |state| {
        if state.settings.playgrounds.read(&id, |p| p.realm) != Some(realm) {
            return Err(ApiError::bad_request("Invalid playground"));
        }
        Ok(PersonalChange::RemovePlayground { realm, id })
    })?;
    Ok(Reply::new())
}

// ----------------------------------------------------------------- push tokens

fn token_param(call: &mut Call, kind: PushKind) -> ApiResult<String> {
    let token = call.params.required_string("token")?;
    if token.is_empty() || token.len() > MAX_PUSH_TOKEN_LENGTH {
        return Err(
            ApiError::bad_request("Empty or invalid length token").with("var_name", "token")
        );
    }
    let ok = match kind {
        // APNs tokens are hex strings.
        PushKind::Apns => token.bytes().all(|b| b.is_ascii_hexdigit()),
        PushKind::Android => token.bytes().all(|b| b.is_ascii_graphic()),
    };
    if !ok {
        let msg = match kind {
            PushKind::Apns => "Invalid APNS token",
            PushKind::Android => "Invalid FCM token",
        };
        return Err(ApiError::bad_request(msg).with("var_name", "token"));
    }
    Ok(token)
}

fn add_token(app: &App, call: &mut Call, kind: PushKind) -> ApiResult<Reply> {
    let token = token_param(call, kind)?;
    let appid = match kind {
        PushKind::Apns => {
            let appid = call.params.required_string("appid")?;
            let ok = !appid.is_empty()
                && appid.len() <= 255
                && appid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            if !ok {
                return Err(ApiError::bad_request("Invalid app ID").with("var_name", "appid"));
            }
            Some(appid)
        }
        PushKind::Android => None,
    };
    let me = call.caller().id;
    let token = PushToken { kind, token, appid };
    commit_change(app, |_| Ok(PersonalChange::AddPushToken { user: me, token }))?;
    Ok(Reply::new())
}

fn remove_token(app: &App, call: &mut Call, kind: PushKind) -> ApiResult<Reply> {
    let token = token_param(call, kind)?;
    let me = call.caller().id;
    commit_change(app, |state| {
        let known = state
            .settings
            .push_tokens
            .read(&me, |ts| ts.iter().any(|t| t.kind == kind && t.token == token))
            .unwrap_or(false);
        if !known {
            return Err(ApiError::bad_request("Token does not exist"));
        }
        Ok(PersonalChange::RemovePushToken { user: me, kind, token })
    })?;
    Ok(Reply::new())
}

/// `POST /users/me/apns_device_token` (deprecated): `token` (hex), `appid`.
pub fn add_apns_token(app: &App, call: &mut Call) -> ApiResult<Reply> {
    add_token(app, call, PushKind::Apns)
}

/// `DELETE /users/me/apns_device_token`: `token`.
pub fn remove_apns_token(app: &App, call: &mut Call) -> ApiResult<Reply> {
    remove_token(app, call, PushKind::Apns)
}

/// `POST /users/me/android_gcm_reg_id` (deprecated): `token`.
pub fn add_android_token(app: &App, call: &mut Call) -> ApiResult<Reply> {
    add_token(app, call, PushKind::Android)
}

/// `DELETE /users/me/android_gcm_reg_id`: `token`.
pub fn remove_android_token(app: &App, call: &mut Call) -> ApiResult<Reply> {
    remove_token(app, call, PushKind::Android)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_templates_need_exactly_the_code_variable() {
        for ok in [
            "https://play.rust-lang.org/?code={code}",
            "https://example.com/run{?code}",
            "http://x.test/{+code}",
            "https://x.test/?a={code}&b={code}",
        ] {
            assert_eq!(check_url_template(ok), Ok(()), "{ok}");
        }
        for bad in [
            "https://x.test/?code=",
            "https://x.test/{lang}",
            "https://x.test/{code}/{lang}",
            "https://x.test/{code",
            "https://x.test/{co de}",
            "ftp://x.test/{code}",
            "{code}",
        ] {
            assert!(check_url_template(bad).is_err(), "{bad}");
        }
    }
}
