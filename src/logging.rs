//! Operational logs on stderr, because stdout carries the MCP protocol and anything else
//! written there corrupts the session.
//!
//! Two formats of the same events (`LOG_FORMAT`): JSON lines for collectors and MCP
//! clients that keep stderr in a file, one readable line an event for a person at a
//! terminal (the default when stderr is one). A JSON line has `ts` (RFC 3339, UTC),
//! `level` (`error|warn|info|debug`), `message` when the event has one, and the event's
//! own fields flattened beside them (`tool`, `ok`, `elapsed_ms` for tool calls; spec_v2
//! §8.1). Callers log counts and ids only, never body text or candidate lists.
//!
//! Floats are rounded to four significant digits (never into the integer part) before
//! either format writes them: a ratio computed in `f32` and widened reads 0.4, not
//! 0.4000000059604645, and no log field means anything finer.
//!
//! Which events pass is one [`Targets`] filter ([`event_filter`]): ours at `LOG_LEVEL`,
//! every library (rmcp, tantivy, ...) at `warn` unless `LOG_LEVEL=debug`, because
//! libraries' `info` lines are debug dumps of protocol structures. Rules for particular
//! library targets (e.g. one that would log message bodies) belong in that same filter.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::clock;
use crate::config::{LogFormat, LogLevel};

/// The target prefix of every event this package logs (the library, `manvault` and
/// `manvault-bench`).
const OWN_TARGET: &str = "manvault";

/// Installs the stderr logger at `level` in `format` (`None`: pretty when stderr is a
/// terminal, else JSON); later calls are ignored.
pub fn init(level: LogLevel, format: Option<LogFormat>) {
    let format = format.unwrap_or_else(|| {
        if std::io::stderr().is_terminal() {
            LogFormat::Pretty
        } else {
            LogFormat::Json
        }
    });
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Line { format })
        .with_filter(event_filter(level));
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// Which events are written: this package's at `level`, libraries' at `warn`, or at
/// `debug` too when `level` is debug.
pub fn event_filter(level: LogLevel) -> Targets {
    let (own, libraries) = match level {
        LogLevel::Error => (LevelFilter::ERROR, LevelFilter::ERROR),
        LogLevel::Warn => (LevelFilter::WARN, LevelFilter::WARN),
        LogLevel::Info => (LevelFilter::INFO, LevelFilter::WARN),
        LogLevel::Debug => (LevelFilter::DEBUG, LevelFilter::DEBUG),
    };
    Targets::new()
        .with_target(OWN_TARGET, own)
        .with_default(libraries)
}

struct Line {
    format: LogFormat,
}

impl<S, N> FormatEvent<S, N> for Line
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
        let mut fields = Map::new();
        event.record(&mut FieldCollector(&mut fields));
        let level = event.metadata().level();
        let now = clock::rfc3339(clock::now());
        match self.format {
            LogFormat::Json => writeln!(writer, "{}", json_line(&now, level, fields)),
            LogFormat::Pretty => writeln!(writer, "{}", pretty_line(&now, level, fields)),
        }
    }
}

fn json_line(ts: &str, level: &Level, fields: Map<String, Value>) -> Value {
    let mut line = Map::new();
    line.insert("ts".into(), Value::String(ts.to_string()));
    line.insert(
        "level".into(),
        Value::String(level.as_str().to_ascii_lowercase()),
    );
    line.extend(fields);
    Value::Object(line)
}

/// `hh:mm:ss LEVEL message key=value ...`: the time of day (UTC), since a person reading
/// a terminal knows the date; strings with spaces or quotes are quoted JSON-style.
fn pretty_line(ts: &str, level: &Level, mut fields: Map<String, Value>) -> String {
    let time = ts
        .split_once('T')
        .map_or(ts, |(_, time)| time.trim_end_matches('Z'));
    let mut line = format!("{time} {:<5}", level.as_str());
    if let Some(Value::String(message)) = fields.remove("message") {
        line.push(' ');
        line.push_str(&message);
    }
    for (key, value) in fields {
        let shown = match value {
            Value::String(text) if !text.is_empty() && !text.contains([' ', '"', '=']) => text,
            other => other.to_string(),
        };
        line.push_str(&format!(" {key}={shown}"));
    }
    line
}

/// `value` rounded to four significant digits, never into its integer part (12.345678 ->
/// 12.35, 1234.5678 -> 1235, 0.4000000059604645 -> 0.4).
pub(crate) fn round_for_log(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 15);
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Rounds every float inside `value` (a field logged as JSON text may hold some).
fn round_floats(value: Value) -> Value {
    match value {
        Value::Number(number) if number.is_f64() => number
            .as_f64()
            .map(round_for_log)
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(round_floats).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| (key, round_floats(item)))
                .collect(),
        ),
        other => other,
    }
}

/// Collects an event's fields as JSON values; numbers and booleans stay typed, and a field
/// recorded with `%` or `?` whose text is JSON (e.g. a serialised list) is kept as JSON.
struct FieldCollector<'a>(&'a mut Map<String, Value>);

impl Visit for FieldCollector<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0
            .insert(field.name().into(), round_floats(Value::from(value)));
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
        let parsed = serde_json::from_str::<Value>(&text).map_or(Value::String(text), round_floats);
        self.0.insert(field.name().into(), parsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_keep_four_significant_digits_and_their_integer_part() {
        for (raw, shown) in [
            (0.4000000059604645, 0.4),
            (0.30000000000000004, 0.3),
            (12.345678, 12.35),
            (1234.5678, 1235.0),
            (1_234_567.8, 1_234_568.0),
            (0.000123456, 0.0001235),
            (-2.34567, -2.346),
            (0.0, 0.0),
        ] {
            assert_eq!(round_for_log(raw), shown, "{raw}");
        }
        assert_eq!(json!(round_for_log(f64::from(0.4f32))).to_string(), "0.4");
        assert!(round_for_log(f64::NAN).is_nan());
    }

    #[test]
    fn floats_inside_json_fields_are_rounded_too() {
        let value = json!({"ratio": 0.4000000059604645, "list": [1, 0.30000000000000004]});
        assert_eq!(round_floats(value), json!({"ratio": 0.4, "list": [1, 0.3]}));
    }

    #[test]
    fn libraries_log_at_warn_unless_debug() {
        fn passes(filter: &Targets, target: &str, level: Level) -> bool {
            filter.would_enable(target, &level)
        }
        let info = event_filter(LogLevel::Info);
        assert!(passes(&info, "manvault::app", Level::INFO));
        assert!(passes(&info, "manvault", Level::INFO));
        assert!(!passes(&info, "manvault::app", Level::DEBUG));
        assert!(!passes(&info, "rmcp::service", Level::INFO));
        assert!(passes(&info, "rmcp::service", Level::WARN));
        let debug = event_filter(LogLevel::Debug);
        assert!(passes(&debug, "rmcp::service", Level::DEBUG));
        let error = event_filter(LogLevel::Error);
        assert!(!passes(&error, "rmcp::service", Level::WARN));
        assert!(passes(&error, "manvault::app", Level::ERROR));
    }

    #[test]
    fn pretty_lines_read_as_text() {
        let fields = json!({"message": "ready", "tool": "manual_find", "ok": true,
                            "elapsed_ms": 12, "note": "two words"});
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        assert_eq!(
            pretty_line("2026-11-27T10:03:04Z", &Level::INFO, fields),
            "10:03:04 INFO  ready elapsed_ms=12 note=\"two words\" ok=true tool=manual_find"
        );
    }
}
