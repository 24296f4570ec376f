//! The MCP logging capability: `logging/setLevel` and `notifications/message`.
//!
//! Each MCP session (the one stdio session, or one per HTTP client) registers a sink with
//! `logging` under its own id, and its requests run inside a span carrying that id, so the
//! events manvault logs while serving them (the per-call line, skipped entries, failed
//! reads: the same fields as stderr, never body text) also reach that session, and no
//! other. Until the client sets a level, warnings and errors are sent.

// rmcp marks MCP logging deprecated: SEP-2577 drops it from protocol 2026-07-28. Clients
// on 2025-11-25 and earlier (every client today) use it, so it is served until then.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::logging::{self, SessionSink, Severity};

/// What a session is sent before it asks for more or less.
const DEFAULT_THRESHOLD: Severity = Severity::Warning;

/// The logger name on every message.
const LOGGER: &str = env!("CARGO_PKG_NAME");

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// One session's log forwarding. Messages queue until the session's first request hands
/// over its peer; dropping the session (the last clone of its server) stops them.
pub(crate) struct SessionLog {
    id: u64,
    sink: Arc<SessionSink>,
    pending: Mutex<Option<mpsc::UnboundedReceiver<LoggingMessageNotificationParam>>>,
}

impl SessionLog {
    pub(crate) fn open() -> SessionLog {
        let id = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        let sink = Arc::new(SessionSink::new(
            DEFAULT_THRESHOLD,
            move |severity, fields| {
                let message =
                    LoggingMessageNotificationParam::new(level_of(severity), Value::Object(fields))
                        .with_logger(LOGGER);
                // A closed channel means the session is going away; the event stays on stderr.
                let _ = sender.send(message);
            },
        ));
        logging::register_session(id, Arc::clone(&sink));
        SessionLog {
            id,
            sink,
            pending: Mutex::new(Some(receiver)),
        }
    }

    /// The span the session's work runs in, so its events find this sink.
    pub(crate) fn span(&self) -> tracing::Span {
        tracing::info_span!("mcp_session", log_session = self.id)
    }

    /// Starts delivering to `peer` (once; later calls do nothing).
    pub(crate) fn attach(&self, peer: &Peer<RoleServer>) {
        let receiver = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut receiver) = receiver {
            let peer = peer.clone();
            tokio::spawn(async move {
                while let Some(message) = receiver.recv().await {
                    if peer.notify_logging_message(message).await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    /// `logging/setLevel`.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.sink.set_threshold(severity_of(level));
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        logging::unregister_session(self.id);
    }
}

fn severity_of(level: LoggingLevel) -> Severity {
    match level {
        LoggingLevel::Debug => Severity::Debug,
        LoggingLevel::Info => Severity::Info,
        LoggingLevel::Notice => Severity::Notice,
        LoggingLevel::Warning => Severity::Warning,
        LoggingLevel::Error => Severity::Error,
        LoggingLevel::Critical => Severity::Critical,
        LoggingLevel::Alert => Severity::Alert,
        LoggingLevel::Emergency => Severity::Emergency,
    }
}

fn level_of(severity: Severity) -> LoggingLevel {
    match severity {
        Severity::Debug => LoggingLevel::Debug,
        Severity::Info => LoggingLevel::Info,
        Severity::Notice => LoggingLevel::Notice,
        Severity::Warning => LoggingLevel::Warning,
        Severity::Error => LoggingLevel::Error,
        Severity::Critical => LoggingLevel::Critical,
        Severity::Alert => LoggingLevel::Alert,
        Severity::Emergency => LoggingLevel::Emergency,
    }
}
