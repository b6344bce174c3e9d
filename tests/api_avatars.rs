//! Avatars: POST/DELETE /users/me/avatar, the image served at
//! `/user_avatars/…` without credentials, `GET /avatar/{id or email}`
//! redirecting to it (or to the gravatar), `avatar_url` and
//! `avatar_version` in user objects, register and messages, restarts, and
//! each refusal.

use crate::api_uploads::{bomb, download, download_on, multipart, png, post_multipart, PNG};
use crate::util::{user_id, Response, TestServer, ACME};

const HAMLET: &str = "hamlet@natter.test"; // member
const OTHELLO: &str = "othello@natter.test"; // member
const IAGO: &str = "iago@natter.test"; // administrator

/// `POST /users/me/avatar` as `email` with one image part.
fn post_avatar(server: &TestServer, email: Option<&str>, bytes: &[u8]) -> Response {
    let body = multipart(&[("me.png", "image/png", bytes)], &[]);
    post_multipart(server, "/users/me/avatar", email, &body)
}

fn creds(server: &TestServer, email: &str) -> (String, String) {
    let a = server.account(email);
    (a.email, a.key)
}

#[test]
fn upload_serve_redirect_and_delete() {
    let mut server = TestServer::start();
    let hamlet_id = user_id(&server, HAMLET);
    let hamlet = server.client(HAMLET);
    let me = hamlet.get("/users/me", &[]).ok();
    assert_eq!(me["avatar_version"], 1);
    let gravatar = me["avatar_url"].as_str().unwrap().to_owned();
    assert!(gravatar.starts_with("https://secure.gravatar.com/avatar/"), "{gravatar}");

    let reply = post_avatar(&server, Some(HAMLET), &png(300, 200)).ok();
    let url = reply["avatar_url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("/user_avatars/") && url.ends_with("?version=2"), "{url}");
    // Served without credentials, as Zulip's squares: 100 pixels, and 500
    // for the medium one.
    let d = download(&server, &url, None, &[]);
    assert_eq!(d.status, 200);
    assert_eq!(d.headers["content-type"], "image/png");
    assert_eq!(d.headers["x-content-type-options"], "nosniff");
    let image = image::load_from_memory_with_format(&d.body, image::ImageFormat::Png).unwrap();
    assert_eq!((image.width(), image.height()), (100, 100));
    let reg = hamlet.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    let medium = reg["avatar_url_medium"].as_str().unwrap().to_owned();
    assert_ne!(medium, url);
    let d = download(&server, &medium, None, &[]);
    let image = image::load_from_memory_with_format(&d.body, image::ImageFormat::Png).unwrap();
    assert_eq!((image.width(), image.height()), (500, 500));
    // Every user object shows it, whatever `client_gravatar` says.
    let me = hamlet.get("/users/me", &[]).ok();
    assert_eq!(me["avatar_url"], url.as_str());
    assert_eq!(me["avatar_version"], 2);
    let othello = server.client(OTHELLO);
    for client_gravatar in ["true", "false"] {
        let params = [("client_gravatar", client_gravatar)];
        let one = othello.get(&format!("/users/{hamlet_id}"), &params).ok();
        assert_eq!(one["user"]["avatar_url"], url.as_str());
        let all = othello.get("/users", &params).ok();
        let listed = all["members"].as_array().unwrap().iter().find(|u| u["user_id"] == hamlet_id);
        assert_eq!(listed.unwrap()["avatar_url"], url.as_str());
        let reg = othello
            .post("/register", &[("fetch_event_types", r#"["realm_user"]"#), params[0]])
            .ok();
        let listed =
            reg["realm_users"].as_array().unwrap().iter().find(|u| u["user_id"] == hamlet_id);
        assert_eq!(listed.unwrap()["avatar_url"], url.as_str());
    }
    let reg = hamlet.post("/register", &[("fetch_event_types", r#"["realm_user"]"#)]).ok();
    assert_eq!(reg["avatar_source"], "U");
    assert_eq!(reg["avatar_url"], url.as_str());
    // Messages carry it too.
    let sent = hamlet
        .post(
            "/messages",
            &[("type", "stream"), ("to", "general"), ("topic", "a"), ("content", "hi")],
        )
        .ok()["id"]
        .as_u64()
        .unwrap();
    let m = othello.get(&format!("/messages/{sent}"), &[("client_gravatar", "true")]).ok();
    assert_eq!(m["message"]["avatar_url"], url.as_str());

    // `/avatar/{id}`, `/avatar/{email}` and `/medium` redirect to it, the
    // query kept; an unknown address to its gravatar.
    let (email, key) = creds(&server, OTHELLO);
    for (path, to) in [
        (format!("/avatar/{hamlet_id}"), &url),
        (format!("/avatar/{HAMLET}"), &url),
        (format!("/avatar/{hamlet_id}/medium"), &medium),
    ] {
        let d = download(&server, &path, Some((&email, &key)), &[]);
        assert_eq!(d.status, 302, "{path}");
        assert_eq!(&d.headers["location"], to);
    }
    let d = download(&server, &format!("/avatar/{hamlet_id}?s=50"), Some((&email, &key)), &[]);
    assert_eq!(d.headers["location"], format!("{url}&s=50"));
    let d = download(&server, "/avatar/nobody@natter.test", Some((&email, &key)), &[]);
    assert_eq!(d.status, 302);
    // md5("nobody@natter.test")
    assert!(d.headers["location"].starts_with("https://secure.gravatar.com/avatar/"));
    // Spectators (the dev realm allows them) by id only; never by address.
    assert_eq!(download(&server, &format!("/avatar/{hamlet_id}"), None, &[]).status, 302);
    assert_eq!(download(&server, &format!("/avatar/{HAMLET}"), None, &[]).status, 401);
    server.client(IAGO).request("PATCH", "/realm", &[("enable_spectator_access", "false")]).ok();
    assert_eq!(download(&server, &format!("/avatar/{hamlet_id}"), None, &[]).status, 401);
    let bad = download(&server, &format!("/avatar/{hamlet_id}"), Some((&email, "wrong")), &[]);
    assert_eq!(bad.status, 401);

    // A new image replaces the old one, whose file goes.
    let second =
        post_avatar(&server, Some(HAMLET), &gif()).ok()["avatar_url"].as_str().unwrap().to_owned();
    assert!(second.ends_with("?version=3"));
    assert_eq!(download(&server, &url, None, &[]).status, 404);
    assert_eq!(download(&server, &medium, None, &[]).status, 404);
    assert_eq!(download(&server, &second, None, &[]).status, 200);

    // It survives a restart (log replay and snapshot alike).
    server.kill();
    server.restart();
    assert_eq!(server.client(HAMLET).get("/users/me", &[]).ok()["avatar_url"], second.as_str());
    server.stop();
    server.restart();
    assert_eq!(server.client(HAMLET).get("/users/me", &[]).ok()["avatar_url"], second.as_str());
    assert_eq!(download(&server, &second, None, &[]).status, 200);

    // DELETE: back to the gravatar, the image gone.
    let hamlet = server.client(HAMLET);
    let back = hamlet.request("DELETE", "/users/me/avatar", &[]).ok();
    assert!(back["avatar_url"].as_str().unwrap().starts_with("https://secure.gravatar.com/"));
    assert!(back["avatar_url"].as_str().unwrap().ends_with("version=4"));
    assert_eq!(download(&server, &second, None, &[]).status, 404);
    let path = format!("/users/{hamlet_id}");
    let seen = server.client(OTHELLO).get(&path, &[("client_gravatar", "true")]).ok();
    assert_eq!(seen["user"]["avatar_url"], serde_json::Value::Null);
    assert_eq!(seen["user"]["avatar_version"], 4);
}

/// A small GIF.
fn gif() -> Vec<u8> {
    let image = image::RgbImage::from_pixel(40, 40, image::Rgb([200, 10, 10]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image).write_to(&mut out, image::ImageFormat::Gif).unwrap();
    out.into_inner()
}

#[test]
fn avatar_refusals() {
    let mut server = TestServer::start();
    // Not an image, one that only starts like one, a decompression bomb,
    // two files, none, too large, no credentials, a bot.
    let fake = b"\x89PNG\r\n\x1a\n not the rest of a png";
    for bytes in [&b"<svg><script>alert(1)</script></svg>"[..], fake] {
        let e = post_avatar(&server, Some(HAMLET), bytes).err(400, "BAD_REQUEST");
        assert_eq!(e["msg"], "Could not decode image; did you upload an image file?");
    }
    let e = post_avatar(&server, Some(HAMLET), &bomb(100_000)).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Image size exceeds limit.");
    let two = multipart(&[("a.png", "image/png", PNG), ("b.png", "image/png", PNG)], &[]);
    let e = post_multipart(&server, "/users/me/avatar", Some(HAMLET), &two).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You must upload exactly one avatar.");
    let none = multipart(&[], &[("x", "y")]);
    post_multipart(&server, "/users/me/avatar", Some(HAMLET), &none).err(400, "BAD_REQUEST");
    let mut big = png(10, 10);
    big.resize((5 << 20) + 1, 0);
    let e = post_avatar(&server, Some(HAMLET), &big).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Uploaded file is larger than the allowed limit of 5 MiB");
    post_avatar(&server, None, &png(10, 10)).err(401, "UNAUTHORIZED");
    // Nothing was recorded: still the gravatar, version 1.
    let me = server.client(HAMLET).get("/users/me", &[("client_gravatar", "false")]).ok();
    assert_eq!(me["avatar_version"], 1);

    // `avatar_changes_disabled`: members refused, administrators not; only
    // administrators may set it.
    server
        .client(HAMLET)
        .request("PATCH", "/realm", &[("avatar_changes_disabled", "true")])
        .err(400, "BAD_REQUEST");
    let iago = server.client(IAGO);
    let changed = iago.request("PATCH", "/realm", &[("avatar_changes_disabled", "true")]).ok();
    assert_eq!(changed["avatar_changes_disabled"], true);
    let reg =
        server.client(HAMLET).post("/register", &[("fetch_event_types", r#"["realm"]"#)]).ok();
    assert_eq!(reg["realm_avatar_changes_disabled"], true);
    let e = post_avatar(&server, Some(HAMLET), &png(10, 10)).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Avatar changes are disabled in this organization.");
    let e =
        server.client(HAMLET).request("DELETE", "/users/me/avatar", &[]).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Avatar changes are disabled in this organization.");
    let reply = post_avatar(&server, Some(IAGO), &png(10, 10)).ok();
    let url = reply["avatar_url"].as_str().unwrap().to_owned();

    // Another realm: its host does not serve this realm's avatar, and its
    // users' ids do not name this realm's users.
    server.stop();
    let key = server.realm_create_ok(&ACME);
    server.restart_with_args(vec![]);
    assert_eq!(server.client(HAMLET).get("/users/me", &[]).ok()["avatar_version"], 1);
    let boss = ("boss@acme.test", key.as_str());
    assert_eq!(download_on(&server, &url, "acme.localhost", boss), 404);
    let iago_id = user_id(&server, IAGO);
    let (status, location) = crate::api_uploads::redirect_on(
        &server,
        &format!("/avatar/{iago_id}"),
        "acme.localhost",
        boss,
    );
    assert_eq!(status, 302);
    assert!(location.starts_with("https://secure.gravatar.com/avatar/"), "{location}");
    // The restart kept the setting.
    post_avatar(&server, Some(HAMLET), &png(10, 10)).err(400, "BAD_REQUEST");
}

/// `PATCH /api/v1/bots/{bot}` as `email` with a multipart `body`.
fn patch_bot(server: &TestServer, bot: u64, email: &str, body: &[u8]) -> Response {
    let a = server.account(email);
    let mut head = format!(
        "PATCH /api/v1/bots/{bot} HTTP/1.1\r\nHost: {}\r\n\
         Content-Type: multipart/form-data; boundary={}\r\nContent-Length: {}\r\n\
         Authorization: {}\r\n\r\n",
        server.addr,
        crate::api_uploads::BOUNDARY,
        body.len(),
        crate::util::basic_auth(&a.email, &a.key)
    );
    let mut bytes = std::mem::take(&mut head).into_bytes();
    bytes.extend_from_slice(body);
    server.anonymous().raw(&bytes)
}

/// Bots' avatars: a bot sets its own with `POST /users/me/avatar`; its
/// owner or an administrator with a file part of `PATCH /bots/{bot_id}`;
/// anyone else, a guest included, is refused and changes nothing.
#[test]
fn bot_avatars() {
    let server = TestServer::start();
    let helper = "helper-bot@natter.test";
    let helper_id = user_id(&server, helper);
    // The bot itself.
    let url = post_avatar(&server, Some(helper), &png(40, 40)).ok()["avatar_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.starts_with("/user_avatars/") && url.ends_with("?version=2"), "{url}");
    let seen = server.client(HAMLET).get(&format!("/users/{helper_id}"), &[]).ok();
    assert_eq!(seen["user"]["avatar_url"], url.as_str());
    let owner = "desdemona@natter.test";
    let bots = server.client(owner).get("/bots", &[]).ok();
    let listed = bots["bots"].as_array().unwrap().iter().find(|b| b["user_id"] == helper_id);
    assert_eq!(listed.unwrap()["avatar_url"], url.as_str());

    // Hamlet's own bot, changed by its owner: a new name and an avatar in
    // one multipart body.
    let hamlet = server.client(HAMLET);
    let created = hamlet
        .post("/bots", &[("full_name", "Yorick"), ("short_name", "yorick"), ("bot_type", "1")])
        .ok();
    let bot = created["user_id"].as_u64().unwrap();
    let body = multipart(&[("y.png", "image/png", &png(300, 120))], &[("full_name", "Yorick II")]);
    patch_bot(&server, bot, HAMLET, &body).ok();
    let user = hamlet.get(&format!("/users/{bot}"), &[]).ok()["user"].clone();
    assert_eq!(user["full_name"], "Yorick II");
    let first = user["avatar_url"].as_str().unwrap().to_owned();
    assert!(first.starts_with("/user_avatars/"), "{first}");
    let d = download(&server, &first, None, &[]);
    let image = image::load_from_memory_with_format(&d.body, image::ImageFormat::Png).unwrap();
    assert_eq!((image.width(), image.height()), (100, 100));
    // An administrator may too; the replaced image goes.
    let body = multipart(&[("z.gif", "image/gif", &gif())], &[]);
    patch_bot(&server, bot, IAGO, &body).ok();
    let second = hamlet.get(&format!("/users/{bot}"), &[]).ok()["user"]["avatar_url"].clone();
    assert_ne!(second, first.as_str());
    assert_eq!(download(&server, &first, None, &[]).status, 404);
    // A form body (no file) is read as before.
    hamlet.request("PATCH", &format!("/bots/{bot}"), &[("full_name", "Yorick III")]).ok();

    // Refusals: someone else's bot, a guest, two files, a bomb, not an
    // image; none changes the avatar.
    let one = multipart(&[("y.png", "image/png", &png(10, 10))], &[]);
    let e = patch_bot(&server, bot, OTHELLO, &one).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    let e = patch_bot(&server, bot, "polonius@natter.test", &one).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    let e = patch_bot(&server, helper_id, HAMLET, &one).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
    let two = multipart(&[("a.png", "image/png", &png(10, 10)), ("b.png", "image/png", PNG)], &[]);
    let e = patch_bot(&server, bot, HAMLET, &two).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "You may only upload one file at a time");
    let bomb = multipart(&[("b.png", "image/png", &bomb(100_000))], &[]);
    let e = patch_bot(&server, bot, HAMLET, &bomb).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Image size exceeds limit.");
    let svg = multipart(&[("x.svg", "image/svg+xml", b"<svg/>")], &[("full_name", "Nope")]);
    let e = patch_bot(&server, bot, HAMLET, &svg).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Could not decode image; did you upload an image file?");
    let user = hamlet.get(&format!("/users/{bot}"), &[]).ok()["user"].clone();
    assert_eq!(user["avatar_url"], second);
    assert_eq!(user["full_name"], "Yorick III", "a refused change is not half applied");
    // A bot may not change another bot's avatar through its own route.
    let e = patch_bot(&server, bot, helper, &one).err(400, "BAD_REQUEST");
    assert_eq!(e["msg"], "Insufficient permission");
}
