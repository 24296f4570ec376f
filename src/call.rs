//! What one tool call carries besides its arguments: who makes it, where its progress
//! goes, and whether the client has cancelled it. The server creates a `CallContext` per
//! request (the actor from the bearer token over HTTP, `local` on stdio and for the CLI;
//! a progress sink when the request has a progress token; a cancellation flag raised by
//! `notifications/cancelled`) and hands it through `App::call_with` to the tool layer.
//!
//! Long loops (`vault_search`, `vault_find`, the `manual_find` scan, `bridge_copy_file`)
//! report work with [`CallContext::expect_work`] / [`CallContext::work_done`] and check
//! [`CallContext::is_cancelled`] between units of work, so a cancelled call stops within
//! one unit. A cancelled call writes nothing: the checks sit before the write, and a
//! write, once begun, is atomic and finishes.
//!
//! Plain Rust: no MCP or HTTP type appears here. Progress is throttled here, once for
//! every caller, and its values only ever grow, as MCP requires.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::{ErrorCode, ToolError, ToolResult};

/// The actor of calls that carry no credentials: stdio, the CLI, a loopback HTTP server
/// without tokens.
pub(crate) const LOCAL_ACTOR: &str = "local";

/// Least time between two progress reports of one call (the first and the last are
/// always sent).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// One progress report: `done` of `total` units (`total` may grow as work is found).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProgressReport {
    pub done: u64,
    pub total: u64,
    pub message: String,
}

type ProgressSink = Box<dyn Fn(ProgressReport) + Send + Sync>;

/// Where a call's progress goes, and what was last sent.
struct Progress {
    sink: ProgressSink,
    state: Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    done: u64,
    total: u64,
    unit: &'static str,
    /// When and at which `done` the last report went out.
    last: Option<(Instant, u64)>,
}

/// The per-call context.
pub struct CallContext {
    actor: String,
    cancelled: Arc<AtomicBool>,
    progress: Option<Progress>,
}

impl CallContext {
    /// A call on behalf of `actor` (a token's name).
    pub(crate) fn for_actor(actor: impl Into<String>) -> CallContext {
        CallContext {
            actor: actor.into(),
            cancelled: Arc::default(),
            progress: None,
        }
    }

    /// A call without credentials ([`LOCAL_ACTOR`]).
    pub fn local() -> CallContext {
        CallContext::for_actor(LOCAL_ACTOR)
    }

    /// Reports progress to `sink`.
    pub(crate) fn with_progress(
        mut self,
        sink: impl Fn(ProgressReport) + Send + Sync + 'static,
    ) -> CallContext {
        self.progress = Some(Progress {
            sink: Box::new(sink),
            state: Mutex::default(),
        });
        self
    }

    /// The flag that cancels the call once raised (by the server, on the client's
    /// `notifications/cancelled`).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }

    /// Who makes the call: a token's name, or [`LOCAL_ACTOR`].
    pub fn actor(&self) -> &str {
        &self.actor
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// `Err(cancelled)` once the client has cancelled the call: for the points where a
    /// call stops before it writes or records anything.
    pub(crate) fn check_cancelled(&self) -> ToolResult<()> {
        if self.is_cancelled() {
            return Err(ToolError::new(
                ErrorCode::Conflict,
                "the call was cancelled by the client; nothing was written",
            )
            .with_details(json!({ "cancelled": true })));
        }
        Ok(())
    }

    /// Announces `units` more units of work, counted in `unit` (`"files"`,
    /// `"sections"`); the first announcement is reported at once.
    pub(crate) fn expect_work(&self, units: u64, unit: &'static str) {
        self.update(|state| {
            state.total += units;
            state.unit = unit;
        });
    }

    /// Counts `units` units of work as done; reported at most every
    /// `PROGRESS_INTERVAL`, and always when all announced work is done.
    pub(crate) fn work_done(&self, units: u64) {
        self.update(|state| state.done = (state.done + units).min(state.total));
    }

    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        let Some(progress) = &self.progress else {
            return;
        };
        let mut state = progress
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        change(&mut state);
        let now = Instant::now();
        let due = match state.last {
            None => true,
            Some((at, done)) => {
                state.done > done
                    && (state.done == state.total || now.duration_since(at) >= PROGRESS_INTERVAL)
            }
        };
        if due {
            state.last = Some((now, state.done));
            (progress.sink)(ProgressReport {
                done: state.done,
                total: state.total,
                message: format!("{} of {} {}", state.done, state.total, state.unit),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording() -> (CallContext, Arc<Mutex<Vec<ProgressReport>>>) {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&reports);
        let call = CallContext::local().with_progress(move |report| {
            sink.lock().unwrap().push(report);
        });
        (call, reports)
    }

    #[test]
    fn the_first_and_last_reports_go_out_and_values_only_grow() {
        let (call, reports) = recording();
        call.expect_work(1000, "files");
        for _ in 0..1000 {
            call.work_done(1);
        }
        let reports = reports.lock().unwrap();
        assert_eq!(reports.first().unwrap().done, 0);
        let last = reports.last().unwrap();
        assert_eq!((last.done, last.total), (1000, 1000));
        assert_eq!(last.message, "1000 of 1000 files");
        assert!(reports.windows(2).all(|pair| pair[0].done < pair[1].done));
        assert!(reports.len() < 50, "throttled: {}", reports.len());
    }

    #[test]
    fn work_announced_later_grows_the_total() {
        let (call, reports) = recording();
        call.expect_work(2, "sections");
        call.work_done(2);
        call.expect_work(3, "sections");
        call.work_done(3);
        let last = reports.lock().unwrap().last().cloned().unwrap();
        assert_eq!((last.done, last.total), (5, 5));
    }

    #[test]
    fn without_a_sink_progress_is_free_and_cancellation_still_works() {
        let call = CallContext::for_actor("alice");
        call.expect_work(10, "files");
        call.work_done(10);
        assert!(call.check_cancelled().is_ok());
        call.cancel_flag().store(true, Ordering::Relaxed);
        assert!(call.is_cancelled());
        let error = call.check_cancelled().unwrap_err();
        assert_eq!(error.details.unwrap()["cancelled"], true);
        assert_eq!(call.actor(), "alice");
    }
}
