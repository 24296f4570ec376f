//! Operational logs: one JSON object per line on stderr, because stdout carries the MCP
//! protocol and anything else written there corrupts the session.
//!
//! Every line has `ts` (RFC 3339, UTC), `level` (`error|warn|info|debug`) and the event's
//! own fields flattened beside them (`tool`, `ok`, `elapsed_ms` for tool calls; spec_v2
//! §8.1). Callers log counts and ids only, never body text or candidate lists; libraries,
//! which log what they like, are held at `warn` (see [`filter`]).

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use crate::clock;
use crate::config::LogLevel;

/// Installs the stderr JSON-lines logger at `level`; later calls are ignored.
pub fn init(level: LogLevel) {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(JsonLine)
        .finish()
        .with(filter(level))
        .try_init();
}

/// Our own events at `level`; every library's at `warn` at most, whatever `level` says.
/// Libraries do not share the rule that logs carry no body text: rmcp logs each request
/// and response whole at `debug` and each notification at `info`, so `LOG_LEVEL=debug`
/// would otherwise put vault and manual text on stderr.
fn filter(level: LogLevel) -> Targets {
    let ours = match level {
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
    };
    Targets::new()
        .with_default(ours.min(LevelFilter::WARN))
        .with_target(env!("CARGO_CRATE_NAME"), ours)
}

struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        line.insert("ts".into(), Value::String(clock::rfc3339(clock::now())));
        line.insert(
            "level".into(),
            Value::String(event.metadata().level().as_str().to_ascii_lowercase()),
        );
        event.record(&mut FieldCollector(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// Collects an event's fields as JSON values; numbers and booleans stay typed, and a field
/// recorded with `%` or `?` whose text is JSON (e.g. a serialised list) is kept as JSON.
struct FieldCollector<'a>(&'a mut Map<String, Value>);

impl Visit for FieldCollector<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        let parsed = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
        self.0.insert(field.name().into(), parsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_never_log_below_warn() {
        let debug = filter(LogLevel::Debug);
        assert!(debug.would_enable("manvault::app", &tracing::Level::DEBUG));
        assert!(!debug.would_enable("rmcp::service", &tracing::Level::DEBUG));
        assert!(!debug.would_enable("rmcp::service", &tracing::Level::INFO));
        assert!(debug.would_enable("rmcp::service", &tracing::Level::WARN));
        let error = filter(LogLevel::Error);
        assert!(!error.would_enable("rmcp::service", &tracing::Level::WARN));
        assert!(!error.would_enable("manvault", &tracing::Level::WARN));
    }
}
