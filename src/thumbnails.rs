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

/// A reader of the image file at `path`, its format guessed from the bytes.
fn open(path: &Path) -> Result<ImageReader<std::io::BufReader<std::fs::File>>, Refused> {
    ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|e| Refused::Undecodable(e.to_string()))
}

/// The format, media type, width and height of the image file at `path`,
/// from its header alone: a bomb is refused before any pixel is decoded.
fn header(path: &Path) -> Result<(ImageFormat, &'static str, u32, u32), Refused> {
    let reader = open(path)?;
    let format = reader.format().ok_or(Refused::NotAnImage)?;
    let content_type = media_type(format).ok_or(Refused::NotAnImage)?;
    let (width, height) =
        reader.into_dimensions().map_err(|e| Refused::Undecodable(e.to_string()))?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Refused::TooLarge(width, height));
    }
    Ok((format, content_type, width, height))
}

/// The width, height and media type of the image file at `path`, from
/// its header alone (cheap: no pixel is decoded); refused as `make` would
/// refuse it for its format or size.
pub fn inspect(path: &Path) -> Result<(u32, u32, &'static str), Refused> {
    let (_, content_type, width, height) = header(path)?;
    Ok((width, height, content_type))
}

/// The decoder limits for an image of `width` × `height`.
fn limits(width: u32, height: u32) -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    // RGBA at 16 bits a channel, with room for the decoder's own buffers.
    limits.max_alloc = Some(MAX_PIXELS * 8 + (64 << 20));
    limits
}

/// The image file at `path` decoded within the bounds above: the image
/// and its media type.
fn decode(path: &Path) -> Result<(DynamicImage, &'static str), Refused> {
    let (_, content_type, width, height) = header(path)?;
    let mut reader = open(path)?;
    reader.limits(limits(width, height));
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

/// The side of a custom emoji's image, in pixels (Zulip's).
pub const EMOJI_SIDE: u32 = 64;

/// A custom emoji's image made of an upload, as Zulip stores it.
#[derive(Debug)]
pub struct Emoji {
    /// The image: `EMOJI_SIDE` pixels square (the middle of a still
    /// image), or an animated GIF's every frame fit in that square.
    pub bytes: Vec<u8>,
    /// Its media type: the upload's.
    pub content_type: &'static str,
}

/// `Emoji` of the image file at `path`, bounded as `make` is; an animated
/// GIF's frames count together against `MAX_PIXELS`.
pub fn make_emoji(path: PathBuf, limit: Duration) -> Result<Emoji, Refused> {
    bounded(move || make_emoji_here(&path), limit)
}

fn make_emoji_here(path: &Path) -> Result<Emoji, Refused> {
    let (format, content_type, width, height) = header(path)?;
    if format == ImageFormat::Gif {
        if let Some(bytes) = animated_emoji(path, width, height, MAX_PIXELS)? {
            return Ok(Emoji { bytes, content_type });
        }
    }
    let (image, _) = decode(path)?;
    let square =
        image.resize_to_fill(EMOJI_SIDE, EMOJI_SIDE, image::imageops::FilterType::Triangle);
    // JPEG has no alpha channel; the other formats keep theirs.
    let square = match format {
        ImageFormat::Jpeg => DynamicImage::ImageRgb8(square.to_rgb8()),
        _ => DynamicImage::ImageRgba8(square.to_rgba8()),
    };
    let mut out = Cursor::new(Vec::new());
    square.write_to(&mut out, format).map_err(|e| Refused::Undecodable(e.to_string()))?;
    Ok(Emoji { bytes: out.into_inner(), content_type })
}

/// A GIF of more than one frame, every frame fit in `EMOJI_SIDE` pixels
/// (its proportions kept, as Zulip resizes animated emoji); `None` for a
/// GIF of one frame (a still image). Refused once its frames come to more
/// than `budget` pixels.
fn animated_emoji(
    path: &Path,
    width: u32,
    height: u32,
    budget: u64,
) -> Result<Option<Vec<u8>>, Refused> {
    use image::codecs::gif::{GifDecoder, GifEncoder, Repeat};
    use image::{AnimationDecoder, Frame, ImageDecoder};
    let undecodable = |e: image::ImageError| Refused::Undecodable(e.to_string());
    let file = std::fs::File::open(path).map_err(|e| Refused::Undecodable(e.to_string()))?;
    let mut decoder = GifDecoder::new(std::io::BufReader::new(file)).map_err(undecodable)?;
    decoder.set_limits(limits(width, height)).map_err(undecodable)?;
    let scale = f64::from(EMOJI_SIDE) / f64::from(width.max(height).max(1));
    let fit = |side: u32| ((f64::from(side) * scale).round() as u32).clamp(1, EMOJI_SIDE);
    let (small_width, small_height) = (fit(width), fit(height));
    let frame_pixels = u64::from(width) * u64::from(height);
    let mut frames = Vec::new();
    for (n, frame) in decoder.into_frames().enumerate() {
        // Every frame is the whole canvas once decoded: the pixels of all
        // of them are what a bomb would cost.
        if (n as u64 + 1) * frame_pixels > budget {
            return Err(Refused::TooLarge(width, height));
        }
        let frame = frame.map_err(undecodable)?;
        let delay = frame.delay();
        let small = image::imageops::resize(
            frame.buffer(),
            small_width,
            small_height,
            image::imageops::FilterType::Triangle,
        );
        frames.push(Frame::from_parts(small, 0, 0, delay));
    }
    if frames.len() < 2 {
        return Ok(None);
    }
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new_with_speed(&mut out, 10);
        encoder.set_repeat(Repeat::Infinite).map_err(undecodable)?;
        encoder.encode_frames(frames).map_err(undecodable)?;
    }
    Ok(Some(out))
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

    /// A GIF of `frames` frames of `width` × `height`, each a colour of
    /// its own.
    pub(crate) fn animated_gif(width: u32, height: u32, frames: u8) -> Vec<u8> {
        use image::codecs::gif::GifEncoder;
        let mut out = Vec::new();
        {
            let mut encoder = GifEncoder::new(&mut out);
            for n in 0..frames {
                let colour = image::Rgba([n * 40, 9, 9, 255]);
                let buffer = image::RgbaImage::from_pixel(width, height, colour);
                let delay = image::Delay::from_numer_denom_ms(100, 1);
                encoder.encode_frame(image::Frame::from_parts(buffer, 0, 0, delay)).unwrap();
            }
        }
        out
    }

    /// A GIF whose screen is `side` pixels square and whose `frames`
    /// frames are one pixel each (a few bytes, whatever the side).
    fn sparse_gif(side: u16, frames: usize) -> Vec<u8> {
        let mut out = b"GIF89a".to_vec();
        out.extend(side.to_le_bytes());
        out.extend(side.to_le_bytes());
        out.extend([0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff]);
        for _ in 0..frames {
            out.extend([0x21, 0xf9, 4, 0, 10, 0, 0, 0]);
            out.extend([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0]);
        }
        out.push(0x3b);
        out
    }

    #[test]
    fn emoji_are_64_pixel_squares() {
        let made = make_emoji(file(&png(300, 120)).path().to_owned(), TIME_LIMIT).unwrap();
        assert_eq!(made.content_type, "image/png");
        let image = image::load_from_memory_with_format(&made.bytes, ImageFormat::Png).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
        // A small one is scaled up to the same square, as Zulip does.
        let made = make_emoji_here(file(&png(16, 16)).path()).unwrap();
        let image = image::load_from_memory(&made.bytes).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
        // A JPEG stays a JPEG.
        let mut jpeg = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(image::RgbImage::new(100, 100))
            .write_to(&mut jpeg, ImageFormat::Jpeg)
            .unwrap();
        let made = make_emoji_here(file(jpeg.get_ref()).path()).unwrap();
        assert_eq!(made.content_type, "image/jpeg");
        let image = image::load_from_memory_with_format(&made.bytes, ImageFormat::Jpeg).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
    }

    #[test]
    fn animated_emoji_keep_their_frames() {
        use image::AnimationDecoder;
        let made = make_emoji_here(file(&animated_gif(200, 100, 3)).path()).unwrap();
        assert_eq!(made.content_type, "image/gif");
        let decoder = image::codecs::gif::GifDecoder::new(Cursor::new(made.bytes)).unwrap();
        let frames = decoder.into_frames().collect_frames().unwrap();
        assert_eq!(frames.len(), 3);
        for frame in &frames {
            assert_eq!(frame.buffer().dimensions(), (64, 32));
        }
        // One frame is a still image: the middle square.
        let made = make_emoji_here(file(&animated_gif(200, 100, 1)).path()).unwrap();
        let image = image::load_from_memory_with_format(&made.bytes, ImageFormat::Gif).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
    }

    #[test]
    fn emoji_bombs_are_refused() {
        let refused = make_emoji_here(file(&bomb(100_000, 100_000)).path()).unwrap_err();
        assert_eq!(refused, Refused::TooLarge(100_000, 100_000));
        // Frames of a size allowed one by one, too many of them together.
        let many = file(&sparse_gif(100, 7));
        let refused = animated_emoji(many.path(), 100, 100, 60_000).unwrap_err();
        assert_eq!(refused, Refused::TooLarge(100, 100));
        let made = animated_emoji(many.path(), 100, 100, 70_000).unwrap().unwrap();
        assert!(image::load_from_memory_with_format(&made, ImageFormat::Gif).is_ok());
        let mut cut = animated_gif(40, 40, 3);
        cut.truncate(cut.len() / 2);
        let refused = make_emoji_here(file(&cut).path()).unwrap_err();
        assert!(matches!(refused, Refused::Undecodable(_)), "{refused:?}");
        let refused = make_emoji_here(file(b"<svg/>").path()).unwrap_err();
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
