//! Operational logs: one JSON object per line on stderr, because stdout carries the MCP
//! protocol and anything else written there corrupts the session.
//!
//! Every line has `ts` (RFC 3339, UTC), `level` (`error|warn|info|debug`) and the event's
//! own fields flattened beside them (`tool`, `ok`, `elapsed_ms` for tool calls; spec_v2
//! §8.1). Callers log counts and ids only, never body text or candidate lists; libraries,
//! which log what they like, are held at `warn` (see [`filter`]).
//!
//! The same events can also reach an MCP client (`notifications/message`): an event of
//! manvault's own code emitted inside a span carrying a `log_session` id goes to the sink
//! registered under that id, if its severity reaches the sink's threshold. Only the
//! session's own requests run inside its span, so one client never sees another's
//! events, and library events (which may carry protocol bodies) are never forwarded.

use std::collections::HashMap;
use std::fmt;
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
use crate::config::LogLevel;

/// The span field that routes the events inside the span to a session's sink.
pub(crate) const SESSION_FIELD: &str = "log_session";

/// Installs the stderr JSON-lines logger at `level`, and the forwarding of manvault's
/// events to registered sessions; later calls are ignored.
pub fn init(level: LogLevel) {
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(JsonLine)
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
