//! Operational logs: one JSON object per line on stderr, because stdout carries the MCP
//! protocol and anything else written there corrupts the session.
//!
//! Every line has `ts` (RFC 3339, UTC), `level` (`error|warn|info|debug`) and the event's
//! own fields flattened beside them (`tool`, `ok`, `elapsed_ms` for tool calls; spec_v2
//! §8.1). Callers log counts and ids only, never body text or candidate lists.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::clock;
use crate::config::LogLevel;

/// Installs the stderr JSON-lines logger at `level`; later calls are ignored.
pub fn init(level: LogLevel) {
    let max = match level {
        LogLevel::Error => Level::ERROR,
        LogLevel::Warn => Level::WARN,
        LogLevel::Info => Level::INFO,
        LogLevel::Debug => Level::DEBUG,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(max)
        .event_format(JsonLine)
        .try_init();
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
