//! natter's log: `tracing` events on stderr, filtered RUST_LOG-style, as
//! text (the default: `natter: <message> key=value…`, `natter: warning: …`
//! for warnings, `natter: error: …` for errors; no time stamp, which the
//! service manager's journal adds) or as one JSON object per line
//! (`--log-format json`, with a time stamp).
//!
//! Targets: `natter::request` has one `info` event per request (off by
//! default: the default filter is [`DEFAULT_FILTER`]) and the
//! `--slow-request-ms` warnings; `natter::recovery` the restart progress;
//! the rest are lifecycle events (start-up, snapshots, queue collection,
//! shutdown). No event carries an API key, password, cookie or message
//! content: request lines name the route pattern, never the path or query.

use std::fmt;
use std::io::Write;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Everything at `info` and above, but not the per-request lines.
pub const DEFAULT_FILTER: &str = "info,natter::request=warn";

/// The format of log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `natter: …` lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl Format {
    /// `--log-format`.
    pub fn parse(name: &str) -> Result<Format, String> {
        match name {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(format!("--log-format must be text or json, not {other:?}")),
        }
    }
}

/// Installs the process's logger: `filter` (RUST_LOG syntax) or, when it
/// is `None`, `$RUST_LOG` or [`DEFAULT_FILTER`].
pub fn init(format: Format, filter: Option<&str>) -> Result<(), String> {
    let spec = match filter {
        Some(spec) => spec.to_owned(),
        None => std::env::var("RUST_LOG").unwrap_or_else(|_| DEFAULT_FILTER.to_owned()),
    };
    let filter = EnvFilter::try_new(&spec).map_err(|e| format!("bad log filter {spec:?}: {e}"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let installed = match format {
        Format::Text => builder.event_format(Text).try_init(),
        Format::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
    };
    installed.map_err(|e| format!("cannot install the logger: {e}"))
}

/// The text format: `natter: [warning: |error: ]<message>[ key=value…]`.
struct Text;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            _ => "",
        };
        write!(writer, "natter: {level}")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// A `Write` that turns each line written to it into an `info` event of
/// the target `natter::recovery` (the restart progress of
/// `persist::open_reporting`), without its `natter: ` prefix.
#[derive(Default)]
pub struct ProgressLines {
    pending: Vec<u8>,
}

impl Write for ProgressLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]);
            let line = line.strip_prefix("natter: ").unwrap_or(&line);
            tracing::info!(target: "natter::recovery", "{line}");
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            self.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_filters() {
        assert_eq!(Format::parse("text"), Ok(Format::Text));
        assert_eq!(Format::parse("json"), Ok(Format::Json));
        assert!(Format::parse("xml").is_err());
        assert!(EnvFilter::try_new(DEFAULT_FILTER).is_ok());
    }
}
