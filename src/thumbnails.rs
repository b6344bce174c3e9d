//! Thumbnails of uploaded images, as Zulip (9 and later) makes them: a
//! WebP of at most `BOX_WIDTH` × `BOX_HEIGHT` that a message's `<img>`
//! shows, the original a click away; and avatars, squares of Zulip's two
//! sizes (`make_avatar`).
//!
//! An uploaded file is an attacker's bytes, so the work is bounded before
//! it starts: the format must be PNG, JPEG, GIF or WebP (read from the
//! bytes, never the name), the dimensions are read from the header first
//! and anything over `MAX_PIXELS` is refused without decoding (a small
//! PNG declaring 100,000 × 100,000 pixels is a decompression bomb), the
//! decoder gets allocation limits to match, and the whole job runs on its
//! own OS thread that the caller waits on for at most `TIME_LIMIT`.
//! Everything here is blocking: a coroutine runs it through
//! `files::blocking`.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// The box a thumbnail fits in (Zulip's `840x560`).
pub const BOX_WIDTH: u32 = 840;
/// See `BOX_WIDTH`.
pub const BOX_HEIGHT: u32 = 560;

/// The file name of a thumbnail in its URL (Zulip's).
pub const FILE_NAME: &str = "840x560.webp";

/// The most pixels an image may declare to be thumbnailed (25 megapixels,
/// a big phone photo; larger images are shown as links only).
pub const MAX_PIXELS: u64 = 25_000_000;

/// The longest a thumbnail may take.
pub const TIME_LIMIT: Duration = Duration::from_secs(10);

/// A thumbnail made of an image.
#[derive(Debug)]
pub struct Made {
    /// The WebP's bytes.
    pub webp: Vec<u8>,
    /// The original's width in pixels.
    pub width: u32,
    /// The original's height in pixels.
    pub height: u32,
    /// The original's media type, from its bytes.
    pub content_type: &'static str,
}

/// Why no thumbnail was made.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a PNG, JPEG, GIF or WebP.
    NotAnImage,
    /// The header declares more than `MAX_PIXELS` (width, height).
    TooLarge(u32, u32),
    /// The bytes do not decode (or hit the decoder's limits).
    Undecodable(String),
    /// It took longer than `TIME_LIMIT`.
    TimedOut,
}

/// The media type of the formats thumbnailed.
fn media_type(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Png => Some("image/png"),
        ImageFormat::Jpeg => Some("image/jpeg"),
        ImageFormat::Gif => Some("image/gif"),
        ImageFormat::WebP => Some("image/webp"),
        _ => None,
    }
}

/// The image file at `path` decoded within the bounds above: the image,
/// its media type, width and height.
fn decode(path: &Path) -> Result<(DynamicImage, &'static str), Refused> {
    let open = || {
        ImageReader::open(path)
            .and_then(|r| r.with_guessed_format())
            .map_err(|e| Refused::Undecodable(e.to_string()))
    };
    let reader = open()?;
    let format = reader.format().ok_or(Refused::NotAnImage)?;
    let content_type = media_type(format).ok_or(Refused::NotAnImage)?;
    // The header alone first: a bomb is refused before any pixel.
    let (width, height) =
        reader.into_dimensions().map_err(|e| Refused::Undecodable(e.to_string()))?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Refused::TooLarge(width, height));
    }
    let mut reader = open()?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    // RGBA at 16 bits a channel, with room for the decoder's own buffers.
    limits.max_alloc = Some(MAX_PIXELS * 8 + (64 << 20));
    reader.limits(limits);
    let image = reader.decode().map_err(|e| Refused::Undecodable(e.to_string()))?;
    Ok((image, content_type))
}

/// A thumbnail of the image file at `path`, on this thread (unbounded in
/// time; `make` bounds it).
pub fn make_here(path: &Path) -> Result<Made, Refused> {
    let (image, content_type) = decode(path)?;
    let (width, height) = (image.width(), image.height());
    let small = if width <= BOX_WIDTH && height <= BOX_HEIGHT {
        image
    } else {
        image.thumbnail(BOX_WIDTH, BOX_HEIGHT)
    };
    let rgba = DynamicImage::ImageRgba8(small.to_rgba8());
    let mut webp = Cursor::new(Vec::new());
    rgba.write_to(&mut webp, ImageFormat::WebP).map_err(|e| Refused::Undecodable(e.to_string()))?;
    Ok(Made { webp: webp.into_inner(), width, height, content_type })
}

/// `make_here` on its own OS thread, waited on for at most `limit` (the
/// thread is left to finish and its result dropped if it is late).
pub fn make(path: PathBuf, limit: Duration) -> Result<Made, Refused> {
    bounded(move || make_here(&path), limit)
}

/// The sides of an avatar's two sizes, in pixels (Zulip's).
pub const AVATAR_SIDES: [u32; 2] = [100, 500];

/// An avatar made of an image: PNGs of `AVATAR_SIDES`, each the middle
/// square of the image scaled to fit.
#[derive(Debug)]
pub struct Avatar {
    /// `AVATAR_SIDES[0]` pixels square.
    pub small: Vec<u8>,
    /// `AVATAR_SIDES[1]` pixels square (Zulip's medium).
    pub medium: Vec<u8>,
}

/// `Avatar` of the image file at `path`, bounded as `make` is.
pub fn make_avatar(path: PathBuf, limit: Duration) -> Result<Avatar, Refused> {
    bounded(
        move || {
            let (image, _) = decode(&path)?;
            let png = |side: u32| -> Result<Vec<u8>, Refused> {
                let square =
                    image.resize_to_fill(side, side, image::imageops::FilterType::Triangle);
                let mut out = Cursor::new(Vec::new());
                square
                    .write_to(&mut out, ImageFormat::Png)
                    .map_err(|e| Refused::Undecodable(e.to_string()))?;
                Ok(out.into_inner())
            };
            Ok(Avatar { small: png(AVATAR_SIDES[0])?, medium: png(AVATAR_SIDES[1])? })
        },
        limit,
    )
}

/// `job` on its own OS thread, waited on for at most `limit`.
fn bounded<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, Refused> + Send + 'static,
    limit: Duration,
) -> Result<T, Refused> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("natter-thumbnail".into()).spawn(move || {
        let _ = tx.send(job());
    });
    if let Err(e) = spawned {
        return Err(Refused::Undecodable(format!("no thread: {e}")));
    }
    rx.recv_timeout(limit).unwrap_or(Err(Refused::TimedOut))
}

/// The URL path of an attachment's thumbnail (`path_id` as in
/// `/user_uploads/<path_id>`).
pub fn url(path_id: &str) -> String {
    format!("/user_uploads/thumbnail/{path_id}/{FILE_NAME}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image =
            image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 7]));
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(image).write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// A PNG whose header declares `width` × `height` (with a valid
    /// header checksum) and whose data is a few bytes.
    pub(crate) fn bomb(width: u32, height: u32) -> Vec<u8> {
        let mut ihdr = b"IHDR".to_vec();
        ihdr.extend(width.to_be_bytes());
        ihdr.extend(height.to_be_bytes());
        ihdr.extend([8, 2, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        out.extend(13u32.to_be_bytes());
        out.extend(&ihdr);
        out.extend(crc32fast::hash(&ihdr).to_be_bytes());
        let idat = b"IDAT\x78\x9c\x03\x00\x00\x00\x00\x01";
        out.extend(((idat.len() - 4) as u32).to_be_bytes());
        out.extend(idat);
        out.extend(crc32fast::hash(idat).to_be_bytes());
        out
    }

    #[test]
    fn a_big_image_becomes_a_small_webp() {
        let f = file(&png(1680, 600));
        let made = make(f.path().to_owned(), TIME_LIMIT).unwrap();
        assert_eq!((made.width, made.height, made.content_type), (1680, 600, "image/png"));
        let thumb = image::load_from_memory_with_format(&made.webp, ImageFormat::WebP).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (840, 300));
        // A small one keeps its size.
        let made = make_here(file(&png(20, 10)).path()).unwrap();
        let thumb = image::load_from_memory(&made.webp).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (20, 10));
    }

    #[test]
    fn avatars_are_squares_of_two_sizes() {
        let made = make_avatar(file(&png(300, 120)).path().to_owned(), TIME_LIMIT).unwrap();
        for (bytes, side) in [(&made.small, 100), (&made.medium, 500)] {
            let image = image::load_from_memory_with_format(bytes, ImageFormat::Png).unwrap();
            assert_eq!((image.width(), image.height()), (side, side));
        }
        let bomb = file(&bomb(100_000, 100_000));
        let refused = make_avatar(bomb.path().to_owned(), TIME_LIMIT).unwrap_err();
        assert_eq!(refused, Refused::TooLarge(100_000, 100_000));
        let mut cut = png(50, 50);
        cut.truncate(cut.len() / 2);
        let truncated = file(&cut);
        let refused = make_avatar(truncated.path().to_owned(), TIME_LIMIT).unwrap_err();
        assert!(matches!(refused, Refused::Undecodable(_)), "{refused:?}");
        let text = file(b"just text");
        let refused = make_avatar(text.path().to_owned(), TIME_LIMIT).unwrap_err();
        assert_eq!(refused, Refused::NotAnImage);
    }

    #[test]
    fn bombs_and_non_images_are_refused() {
        let f = file(&bomb(100_000, 100_000));
        assert_eq!(make_here(f.path()).unwrap_err(), Refused::TooLarge(100_000, 100_000));
        let f = file(&bomb(5001, 5000));
        assert_eq!(make_here(f.path()).unwrap_err(), Refused::TooLarge(5001, 5000));
        for bytes in [&b"hello, world"[..], b"<svg xmlns='http://www.w3.org/2000/svg'/>", b""] {
            assert!(make_here(file(bytes).path()).is_err());
        }
        // A truncated image: its header is fine, its data is not.
        let mut cut = png(50, 50);
        cut.truncate(cut.len() / 2);
        assert!(matches!(make_here(file(&cut).path()), Err(Refused::Undecodable(_))));
        // A job that outlasts its limit is refused as late, not waited for.
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let slow = move || {
            let _ = wait.recv();
            Ok(())
        };
        assert_eq!(bounded(slow, Duration::from_millis(1)), Err(Refused::TimedOut));
        drop(release);
    }
}
