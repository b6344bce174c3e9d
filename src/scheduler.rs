//! The scheduler: delivers scheduled messages and reminders when they
//! fall due, and (every minute) deletes uploaded files no message has
//! referenced for the grace period (`api::uploads::reclaim_unclaimed`).
//!
//! It is the only place that reads the clock for delivery. `apply` never
//! does: the scheduler decides that a message is due, and commits one
//! `Mutation::DeliverScheduled` (the message, with a new id, plus the
//! removal from the scheduled list) or `FailScheduled` through the
//! ordinary write path (`api::scheduled::deliver`). Replaying the log
//! therefore reproduces exactly the deliveries that happened, and a
//! delivery is either wholly in the log or not at all: after a crash,
//! anything still pending and due is delivered once, on the first pass
//! after start-up. Reminders go the same way (`api::reminders::deliver`:
//! the Notification Bot's message and the reminder's removal, one
//! record).
//!
//! It runs on its own OS thread (never on a coroutine): it sleeps until
//! the earliest pending delivery time (at most `MAX_SLEEP`, so a changed
//! wall clock is noticed), or until a `scheduled_messages` event says
//! the list changed (or a `reminders` event, the reminders); it hears
//! those on the event hub like any client.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::api::reminders;
use crate::api::scheduled::{deliver, Delivery};
use crate::api::App;
use crate::entropy;
use crate::events::Event;

/// Seconds between looks for unclaimed uploaded files to delete.
const RECLAIM_EVERY_SECS: i64 = 60;

/// Longest sleep between looks at the clock.
const MAX_SLEEP: Duration = Duration::from_secs(5);

/// Starts the scheduler thread for `app`; it runs for the life of the
/// process.
pub fn start(app: Arc<App>) -> std::thread::JoinHandle<()> {
    // Subscribe before the first pass, so that no change is missed; to
    // changes of the scheduled list only (not a wake-up per message sent).
    let events = app.hub.subscribe_where(changes_schedule);
    let mut next_reclaim = 0;
    std::thread::Builder::new()
        .name("natter-scheduler".into())
        .spawn(move || loop {
            let next = deliver_due(&app);
            let now = entropy::now();
            if now >= next_reclaim {
                let reclaimed = crate::api::uploads::reclaim_unclaimed(&app, now);
                if reclaimed > 0 {
                    eprintln!("natter: deleted {reclaimed} unclaimed uploaded file(s)");
                }
                next_reclaim = now + RECLAIM_EVERY_SECS;
            }
            // Sleep until the next delivery is due or the scheduled list
            // changes (the only events this subscription receives).
            match events.recv_timeout(until(next)) {
                Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
            }
        })
        .expect("spawn the scheduler thread")
}

/// Starts the thread that makes uploaded images' thumbnails after their
/// uploads' replies (`api::uploads::make_thumbnail`), oldest first: at
/// start-up every thumbnail recorded but not made (a crash or a stop
/// came first), then each new upload's as it is recorded. It runs for the
/// life of the process.
pub fn start_thumbnails(app: Arc<App>) -> std::thread::JoinHandle<()> {
    // Subscribed before the first pass, so that no upload is missed.
    let uploads = app.hub.subscribe_where(is_new_upload);
    std::thread::Builder::new()
        .name("natter-thumbnails".into())
        .spawn(move || {
            // The highest attachment id looked at: one whose thumbnail
            // cannot be made is tried once per start, not in a loop.
            let mut done = 0;
            loop {
                for id in app.state.files.thumbnails_to_make(done) {
                    crate::api::uploads::make_thumbnail(&app, id);
                    done = done.max(id);
                }
                if uploads.recv().is_err() {
                    return;
                }
            }
        })
        .expect("spawn the thumbnail thread")
}

/// Whether `event` tells of a new uploaded file.
fn is_new_upload(event: &Event) -> bool {
    matches!(event, Event::Broadcast { event, .. }
        if event["type"] == "attachment" && event["op"] == "add")
}

/// Delivers every scheduled message and reminder due now; returns the
/// earliest delivery time still to come.
pub fn deliver_due(app: &App) -> Option<i64> {
    loop {
        let now = entropy::now();
        let (due, next) = app.state.scheduled.due(now);
        let (reminders, next_reminder) = app.state.features.due(now);
        if due.is_empty() && reminders.is_empty() {
            return match (next, next_reminder) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        for id in reminders {
            reminders::deliver(app, id, now);
        }
        for id in due {
            match deliver(app, id, now) {
                Delivery::Sent(_) | Delivery::Gone => {}
                Delivery::Failed(why) => {
                    tracing::warn!("scheduled message {id} not delivered: {why}");
                }
            }
        }
    }
}

/// How long to sleep before `next` (UNIX seconds) falls due.
fn until(next: Option<i64>) -> Duration {
    let Some(next) = next else { return MAX_SLEEP };
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let wait_ms = (next.saturating_mul(1000) - now_ms).max(0) as u64;
    Duration::from_millis(wait_ms).min(MAX_SLEEP)
}

/// Whether an event says a scheduled message or a reminder was added or
/// changed.
fn changes_schedule(event: &Event) -> bool {
    matches!(event, Event::Broadcast { event, .. }
        if event["type"] == "scheduled_messages" || event["type"] == "reminders")
}

#[cfg(test)]
mod thumbnail_tests {
    use crate::api::uploads;
    use crate::files::{self, Upload};
    use crate::testkit;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([9, 99, 199]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(image).write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// An upload's reply comes before its thumbnail is made; the record
    /// says what is to be made, so a thumbnail thread started later (as
    /// after a restart) makes it; a file that is no image gets none.
    #[test]
    fn thumbnails_are_made_after_the_upload_and_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let app = testkit::in_process_dev_app(dir.path(), &[]);
        let realm = app.state.realm_by_subdomain("").unwrap();
        let hamlet = app.state.user_by_email(realm.id, "hamlet@natter.test").unwrap();
        let stored = |bytes: &[u8], name: &str| {
            let upload = Upload {
                staged: files::stage_bytes(&*app.files, bytes).unwrap(),
                filename: name.to_owned(),
                content_type: None,
                size: bytes.len() as u64,
            };
            uploads::store(&app, &hamlet, upload).unwrap()
        };
        let image = stored(&png(1200, 300), "wide.png");
        let text = stored(b"plain words", "notes.txt");
        let pending = app.state.files.thumbnail(image.id).unwrap();
        assert!(!pending.is_made());
        assert_eq!(
            (pending.width, pending.height, pending.content_type.as_str()),
            (1200, 300, "image/png")
        );
        assert_eq!(app.state.files.thumbnail(text.id), None);
        assert_eq!(app.state.files.thumbnails_to_make(0), vec![image.id]);

        // The thread finds it at its start, and each new upload as it comes.
        super::start_thumbnails(std::sync::Arc::clone(&app));
        let later = stored(&png(10, 20), "small.png");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !app.state.files.thumbnails_to_make(0).is_empty() {
            assert!(std::time::Instant::now() < deadline, "thumbnails not made");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for (id, size) in [(image.id, (840, 210)), (later.id, (10, 20))] {
            let made = app.state.files.thumbnail(id).unwrap();
            assert!(made.is_made());
            let key = files::StoreKey::parse(&made.key).unwrap();
            let webp = app.files.read(&key, 0, made.size).unwrap();
            let small =
                image::load_from_memory_with_format(&webp, image::ImageFormat::WebP).unwrap();
            assert_eq!((small.width(), small.height()), size);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::events::Audience;
    use crate::state::{MessageId, UserId};

    #[test]
    fn sleeps_until_the_next_due_time_but_never_long() {
        assert_eq!(until(None), MAX_SLEEP);
        assert_eq!(until(Some(0)), Duration::ZERO, "overdue: no sleep");
        let soon = until(Some(entropy::now() + 2));
        assert!(soon > Duration::ZERO && soon <= Duration::from_secs(2), "{soon:?}");
        assert_eq!(until(Some(entropy::now() + 3600)), MAX_SLEEP);
    }

    #[test]
    fn only_schedule_changes_wake_it() {
        let broadcast = |kind: &str| Event::Broadcast {
            audience: Audience::Users(vec![UserId(1)]),
            event: json!({"type": kind, "op": "add"}),
        };
        assert!(changes_schedule(&broadcast("scheduled_messages")));
        assert!(changes_schedule(&broadcast("reminders")));
        assert!(!changes_schedule(&broadcast("reaction")));
        assert!(!changes_schedule(&Event::Message { message: MessageId(1), recipients: vec![] }));
    }

    #[test]
    fn its_subscription_receives_schedule_changes_only() {
        let hub = crate::events::Hub::new();
        let scheduler = hub.subscribe_where(changes_schedule);
        let everything = hub.subscribe();
        let broadcast = |kind: &str| Event::Broadcast {
            audience: Audience::Users(vec![UserId(1)]),
            event: json!({"type": kind, "op": "add"}),
        };
        hub.publish(vec![
            Event::Message { message: MessageId(1), recipients: vec![] },
            broadcast("reaction"),
            broadcast("scheduled_messages"),
        ]);
        let got = scheduler.try_recv().expect("the schedule change");
        assert!(changes_schedule(&got));
        assert!(scheduler.try_recv().is_err(), "nothing else reaches the scheduler");
        assert_eq!(std::iter::from_fn(|| everything.try_recv().ok()).count(), 3);
    }
}
