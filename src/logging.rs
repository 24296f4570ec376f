//! Operational logs on stderr, because stdout carries the MCP protocol and anything else
//! written there corrupts the session.
//!
//! Two formats of the same events (`LOG_FORMAT`): JSON lines for collectors and MCP
//! clients that keep stderr in a file, one readable line an event for a person at a
//! terminal (the default when stderr is one). A JSON line has `ts` (RFC 3339, UTC),
//! `level` (`error|warn|info|debug`), `message` when the event has one, and the event's
//! own fields flattened beside them (`tool`, `ok`, `elapsed_ms` for tool calls; spec_v2
//! §8.1). Callers log counts and ids only, never body text or candidate lists; libraries,
//! which log what they like, are held at `warn` (see [`filter`]).
//!
//! Floats are rounded to four significant digits (never into the integer part) before
//! any line or notification carries them: a ratio computed in `f32` and widened reads
//! 0.4, not 0.4000000059604645, and no log field means anything finer.
//!
//! The same events can also reach an MCP client (`notifications/message`): an event of
//! manvault's own code emitted inside a span carrying a `log_session` id goes to the sink
//! registered under that id, if its severity reaches the sink's threshold. Only the
//! session's own requests run inside its span, so one client never sees another's
//! events, and library events (which may carry protocol bodies) are never forwarded.

use std::collections::HashMap;
use std::fmt;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::clock;
use crate::config::{LogFormat, LogLevel};

/// The span field that routes the events inside the span to a session's sink.
pub(crate) const SESSION_FIELD: &str = "log_session";

/// Installs the stderr logger at `level` in `format` (`None`: pretty when stderr is a
/// terminal, else JSON lines), and the forwarding of manvault's events to registered
/// sessions; later calls are ignored.
pub(crate) fn init(level: LogLevel, format: Option<LogFormat>) {
    let format = format.unwrap_or_else(|| {
        if std::io::stderr().is_terminal() {
            LogFormat::Pretty
        } else {
            LogFormat::Json
        }
    });
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Line { format })
        .with_filter(filter(level));
    let own_events = Targets::new().with_target(env!("CARGO_CRATE_NAME"), Level::DEBUG);
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(SessionForwarder.with_filter(own_events))
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

/// Severities in the order of RFC 5424 (and of MCP's logging levels), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl Severity {
    const ALL: [Severity; 8] = [
        Severity::Debug,
        Severity::Info,
        Severity::Notice,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
        Severity::Alert,
        Severity::Emergency,
    ];

    fn of(level: &Level) -> Severity {
        match *level {
            Level::ERROR => Severity::Error,
            Level::WARN => Severity::Warning,
            Level::INFO => Severity::Info,
            _ => Severity::Debug,
        }
    }
}

/// Where one session's events go, and from which severity on.
pub(crate) struct SessionSink {
    threshold: AtomicU8,
    send: Box<dyn Fn(Severity, Map<String, Value>) + Send + Sync>,
}

impl SessionSink {
    pub(crate) fn new(
        threshold: Severity,
        send: impl Fn(Severity, Map<String, Value>) + Send + Sync + 'static,
    ) -> SessionSink {
        SessionSink {
            threshold: AtomicU8::new(threshold as u8),
            send: Box::new(send),
        }
    }

    /// Events below `threshold` are no longer sent.
    pub(crate) fn set_threshold(&self, threshold: Severity) {
        self.threshold.store(threshold as u8, Ordering::Relaxed);
    }

    fn accepts(&self, severity: Severity) -> bool {
        let threshold = Severity::ALL[usize::from(self.threshold.load(Ordering::Relaxed))];
        severity >= threshold
    }
}

static SESSION_SINKS: LazyLock<Mutex<HashMap<u64, Arc<SessionSink>>>> =
    LazyLock::new(Mutex::default);

fn session_sinks() -> std::sync::MutexGuard<'static, HashMap<u64, Arc<SessionSink>>> {
    SESSION_SINKS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Routes the events of spans with `log_session = session` to `sink` until
/// [`unregister_session`].
pub(crate) fn register_session(session: u64, sink: Arc<SessionSink>) {
    session_sinks().insert(session, sink);
}

pub(crate) fn unregister_session(session: u64) {
    session_sinks().remove(&session);
}

/// The session id recorded on a span, kept in the span's extensions.
struct SessionOfSpan(u64);

struct SessionIdVisitor(Option<u64>);

impl Visit for SessionIdVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == SESSION_FIELD {
            self.0 = Some(value);
        }
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn fmt::Debug) {}
}

/// The layer that forwards events to the sink of the session whose span they occur in.
struct SessionForwarder;

impl<S> Layer<S> for SessionForwarder
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut visitor = SessionIdVisitor(None);
        attributes.record(&mut visitor);
        if let (Some(session), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(SessionOfSpan(session));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(session) = ctx.event_scope(event).and_then(|scope| {
            scope
                .into_iter()
                .find_map(|span| span.extensions().get::<SessionOfSpan>().map(|s| s.0))
        }) else {
            return;
        };
        let Some(sink) = session_sinks().get(&session).cloned() else {
            return;
        };
        let severity = Severity::of(event.metadata().level());
        if sink.accepts(severity) {
            let mut fields = Map::new();
            event.record(&mut FieldCollector(&mut fields));
            (sink.send)(severity, fields);
        }
    }
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
