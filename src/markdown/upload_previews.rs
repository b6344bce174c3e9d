//! The previews of uploaded images, as Zulip (9 and later) writes them:
//! the writer previews every link to an image
//! (`<div class="message_inline_image"><a href="…"><img src="…"></a></div>`);
//! for links to this server's uploads (`/user_uploads/<path_id>`) the
//! resolver then says what the preview is (`Resolver::upload_preview`):
//! the thumbnail, with the original's dimensions and media type
//! (`<img data-original-content-type="image/png"
//! data-original-dimensions="1000x800" src="/user_uploads/thumbnail/…">`),
//! or none at all for a file that is not a thumbnailed image (Zulip shows
//! those as links only: a decompression bomb is never handed to a browser).

use super::{escape_attr, Resolver};

/// How a link to an uploaded file is previewed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadPreview {
    /// With the linked file itself (the resolver knows no uploads).
    AsLinked,
    /// Not previewed: the link only.
    None,
    /// With a thumbnail.
    Thumbnail {
        /// The thumbnail's URL.
        src: String,
        /// The original's width and height in pixels.
        dimensions: (u32, u32),
        /// The original's media type.
        content_type: String,
    },
}

const OPEN: &str = "<div class=\"message_inline_image\"><a href=\"";

/// `html` with the previews of uploaded files as `resolver` says.
pub(super) fn apply(html: String, resolver: &dyn Resolver) -> String {
    if !html.contains("user_uploads/") {
        return html;
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html.as_str();
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let div = &rest[at..];
        let Some((consumed, replaced)) = preview(div, &out, resolver) else {
            out.push_str(OPEN);
            rest = &div[OPEN.len()..];
            continue;
        };
        out.push_str(&replaced);
        rest = &div[consumed..];
    }
    out.push_str(rest);
    out
}

/// The preview `div` starts with, rewritten: (bytes it took, new text);
/// `None` to leave it.
fn preview(div: &str, before: &str, resolver: &dyn Resolver) -> Option<(usize, String)> {
    let href_len = div[OPEN.len()..].find('"')?;
    let href = &div[OPEN.len()..OPEN.len() + href_len];
    let path_id = href.strip_prefix('/').unwrap_or(href).strip_prefix("user_uploads/")?;
    let img = format!("<img src=\"{href}\"></a></div>");
    let img_at = div.find(&img)?;
    let end = img_at + img.len();
    match resolver.upload_preview(path_id) {
        UploadPreview::AsLinked => None,
        UploadPreview::Thumbnail { src, dimensions: (width, height), content_type } => {
            let thumb = format!(
                "<img data-original-content-type=\"{}\" data-original-dimensions=\"{width}x{height}\" src=\"{}\"></a></div>",
                escape_attr(&content_type),
                escape_attr(&src),
            );
            Some((end, format!("{}{thumb}", &div[..img_at])))
        }
        UploadPreview::None => {
            let newline = usize::from(div[end..].starts_with('\n'));
            // A paragraph that was only the link gave way to the preview:
            // the link comes back as the paragraph.
            let linked = before.contains(&format!("href=\"{href}\""));
            let text = if linked {
                String::new()
            } else {
                format!("<p><a href=\"{href}\">{href}</a></p>\n")
            };
            Some((end + newline, text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::{render_message, NoResolver};

    struct Uploads;

    impl Resolver for Uploads {
        fn user_by_name(&self, _: &str) -> Option<(u64, String)> {
            None
        }
        fn user_by_id(&self, _: u64) -> Option<(u64, String)> {
            None
        }
        fn group_by_name(&self, _: &str) -> Option<(u64, String)> {
            None
        }
        fn channel_by_name(&self, _: &str) -> Option<(u64, String)> {
            None
        }
        fn realm_url(&self) -> Option<String> {
            Some("https://chat.example.com".into())
        }
        fn upload_preview(&self, path_id: &str) -> UploadPreview {
            match path_id {
                "2/ab/T/a.png" => UploadPreview::Thumbnail {
                    src: "/user_uploads/thumbnail/2/ab/T/a.png/840x560.webp".into(),
                    dimensions: (1000, 800),
                    content_type: "image/png".into(),
                },
                _ => UploadPreview::None,
            }
        }
    }

    #[test]
    fn thumbnails_replace_the_original_and_others_are_links_only() {
        let html = render_message("[a.png](/user_uploads/2/ab/T/a.png)", &Uploads).html;
        assert_eq!(
            html,
            "<p><a href=\"/user_uploads/2/ab/T/a.png\">a.png</a></p>\n\
             <div class=\"message_inline_image\"><a href=\"/user_uploads/2/ab/T/a.png\" title=\"a.png\">\
             <img data-original-content-type=\"image/png\" data-original-dimensions=\"1000x800\" \
             src=\"/user_uploads/thumbnail/2/ab/T/a.png/840x560.webp\"></a></div>"
        );
        let html = render_message("[b.png](/user_uploads/2/ab/U/b.png) after", &Uploads).html;
        assert_eq!(html, "<p><a href=\"/user_uploads/2/ab/U/b.png\">b.png</a> after</p>");
        // A bare link alone in its paragraph stays a link.
        let html =
            render_message("https://chat.example.com/user_uploads/2/ab/U/b.png", &Uploads).html;
        assert!(!html.contains("<img"), "{html}");
        assert!(html.starts_with("<p><a href=\"user_uploads/2/ab/U/b.png\">"), "{html}");
        // Other images and resolvers that know no uploads are as before.
        let other = "[c](https://e.com/c.png)";
        assert_eq!(render_message(other, &Uploads).html, render_message(other, &NoResolver).html);
        let upload = "[a.png](/user_uploads/2/ab/T/a.png)";
        assert!(render_message(upload, &NoResolver).html.contains("<img src=\"/user_uploads/"));
    }
}
