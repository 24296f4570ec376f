//! Search traces: what one `manual_find` found, kept in memory so the answer itself can
//! stay a few hundred characters and the agent pages through the rest with `manual_hits`.
//!
//! The keeping (ids, `TRACE_MAX_KEEP`, `TRACE_TTL_SEC`, `not_found` for a trace that is
//! gone) is the shared [`crate::trace::TraceStore`], which `vault_find` uses too; this
//! module holds what a manual trace is.
//!
//! A trace also collects the refs read later with that `trace_id` (`manual_read`, bridge
//! copies): the recall statistics of issue #6 compare them with the candidates.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Signals;
use crate::error::ToolResult;
use crate::text::lines::LineNo;
pub(crate) use crate::trace::CutoffReason;
use crate::trace::TraceKind;

/// A place in a manual, as a trace keeps it: independent of later index changes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Place {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    /// `None` for a JSON file (read whole).
    pub start_line: Option<LineNo>,
    pub title: String,
}

/// One ranked candidate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub place: Place,
    pub signals: Signals,
    pub score: f32,
}

/// Sections of one file left out of a search, by their first line (1 for JSON files).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unscanned {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    pub json: bool,
    pub lines: Vec<LineNo>,
    pub reason: CutoffReason,
}

/// A candidate whose statements disagree with others (see docs/search.md: conflict).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConflictItem {
    pub place: Place,
    pub signals: Signals,
    pub score: f32,
    pub with: Vec<Place>,
    /// What disagrees, e.g. `number:日` or `exception`.
    pub kind: String,
}

/// Something the query asks for that no candidate holds (see docs/search.md: gap).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GapItem {
    /// Where the gap shows: the referring section of an unresolved reference; `None`
    /// for a query term that matched nowhere.
    pub place: Option<Place>,
    pub hint: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trace {
    pub id: String,
    pub candidates: Vec<Hit>,
    /// The first `top` candidates are the integrated top.
    pub top: usize,
    pub conflicts: Vec<ConflictItem>,
    pub gaps: Vec<GapItem>,
    pub unscanned: Vec<Unscanned>,
}

impl Trace {
    pub(crate) fn unscanned_count(&self) -> usize {
        self.unscanned.iter().map(|file| file.lines.len()).sum()
    }

    /// Unscanned sections as (file, line) pairs, in order.
    pub(crate) fn unscanned_places(&self) -> impl Iterator<Item = (&Unscanned, LineNo)> {
        self.unscanned
            .iter()
            .flat_map(|file| file.lines.iter().map(move |&line| (file, line)))
    }
}

/// The `manual_find` traces, on the shared store ([`crate::trace::TraceStore`]). Refs used
/// after a search are counted by the statistics (`adaptive`), not here.
pub(crate) struct TraceStore {
    traces: crate::trace::TraceStore<Arc<Trace>>,
}

const KIND: TraceKind = TraceKind {
    prefix: "t",
    tool: "manual_find",
};

impl TraceStore {
    pub(crate) fn new(max_keep: usize, ttl: Duration) -> TraceStore {
        TraceStore {
            traces: crate::trace::TraceStore::new(KIND, max_keep, ttl),
        }
    }

    /// A fresh id, unique in this process and unlikely to recur in another.
    pub(crate) fn next_id(&mut self) -> String {
        self.traces.next_id()
    }

    /// Keeps `trace`, evicting expired traces and then the oldest beyond the limit.
    pub(crate) fn insert(&mut self, trace: Trace, now: Instant) -> Arc<Trace> {
        let trace = Arc::new(trace);
        self.traces
            .insert(trace.id.clone(), Arc::clone(&trace), now);
        trace
    }

    /// The trace `id` if it is kept and younger than the TTL, else `not_found` naming
    /// the parameter that carried it.
    pub(crate) fn get(&mut self, id: &str, now: Instant, field: &str) -> ToolResult<Arc<Trace>> {
        self.traces.get(id, now, field).map(|kept| Arc::clone(kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn trace(store: &mut TraceStore) -> Trace {
        Trace {
            id: store.next_id(),
            candidates: Vec::new(),
            top: 0,
            conflicts: Vec::new(),
            gaps: Vec::new(),
            unscanned: Vec::new(),
        }
    }

    #[test]
    fn ids_are_distinct_and_shaped() {
        let mut store = TraceStore::new(10, Duration::from_secs(60));
        let first = store.next_id();
        let second = store.next_id();
        assert_ne!(first, second);
        assert!(first.starts_with("t-") && first.len() == 12, "{first}");
    }

    #[test]
    fn traces_expire_after_the_ttl() {
        let start = Instant::now();
        let mut store = TraceStore::new(10, Duration::from_secs(30));
        let new = trace(&mut store);
        let id = store.insert(new, start).id.clone();
        assert!(store
            .get(&id, start + Duration::from_secs(29), "trace_id")
            .is_ok());
        let error = store
            .get(&id, start + Duration::from_secs(30), "trace_id")
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::NotFound);
        assert_eq!(error.details.unwrap()["field"], "trace_id");
    }

    #[test]
    fn the_oldest_trace_is_evicted_beyond_max_keep() {
        let now = Instant::now();
        let mut store = TraceStore::new(2, Duration::from_secs(60));
        let ids: Vec<String> = (0..3)
            .map(|_| {
                let new = trace(&mut store);
                store.insert(new, now).id.clone()
            })
            .collect();
        assert!(store.get(&ids[0], now, "trace_id").is_err());
        assert!(store.get(&ids[1], now, "trace_id").is_ok());
        assert!(store.get(&ids[2], now, "trace_id").is_ok());
    }
}
