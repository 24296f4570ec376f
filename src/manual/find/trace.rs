//! Search traces: what one `manual_find` found, kept in memory so the answer itself can
//! stay a few hundred characters and the agent pages through the rest with `manual_hits`.
//!
//! Bounded in both count (`TRACE_MAX_KEEP`, oldest evicted first) and age
//! (`TRACE_TTL_SEC`); an evicted or expired trace is gone, and asking for it is
//! `not_found` rather than a silent re-search. Ids carry a per-process salt, so a trace id
//! kept by a client across a server restart never names another search.
//!
//! A trace also collects the refs read later with that `trace_id` (`manual_read`, bridge
//! copies): the recall statistics of issue #6 compare them with the candidates.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::Signals;
use crate::error::{ToolError, ToolResult};

/// A place in a manual, as a trace keeps it: independent of later index changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    /// `None` for a JSON file (read whole).
    pub start_line: Option<u32>,
    pub title: String,
}

/// One ranked candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub place: Place,
    pub signals: Signals,
    pub score: f32,
}

/// Why sections were left out of a search (schema `cutoff_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cutoff {
    TimeBudget,
    CandidateCap,
    StageCap,
}

impl Cutoff {
    pub fn as_str(self) -> &'static str {
        match self {
            Cutoff::TimeBudget => "time_budget",
            Cutoff::CandidateCap => "candidate_cap",
            Cutoff::StageCap => "stage_cap",
        }
    }
}

/// Sections of one file left out of a search, by their first line (1 for JSON files).
#[derive(Debug, Clone, PartialEq)]
pub struct Unscanned {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    pub json: bool,
    pub lines: Vec<u32>,
    pub reason: Cutoff,
}

/// A candidate whose statements disagree with others (see README: conflict).
#[derive(Debug, Clone, PartialEq)]
pub struct ConflictItem {
    pub place: Place,
    pub signals: Signals,
    pub score: f32,
    pub with: Vec<Place>,
    /// What disagrees, e.g. `number:日` or `exception`.
    pub kind: String,
}

/// Something the query asks for that no candidate holds (see README: gap).
#[derive(Debug, Clone, PartialEq)]
pub struct GapItem {
    /// Where the gap shows: the referring section of an unresolved reference; `None`
    /// for a query term that matched nowhere.
    pub place: Option<Place>,
    pub hint: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub id: String,
    pub candidates: Vec<Hit>,
    /// The first `top` candidates are the integrated top.
    pub top: usize,
    pub conflicts: Vec<ConflictItem>,
    pub gaps: Vec<GapItem>,
    pub unscanned: Vec<Unscanned>,
}

impl Trace {
    pub fn unscanned_count(&self) -> usize {
        self.unscanned.iter().map(|file| file.lines.len()).sum()
    }

    /// Unscanned sections as (file, line) pairs, in order.
    pub fn unscanned_places(&self) -> impl Iterator<Item = (&Unscanned, u32)> {
        self.unscanned
            .iter()
            .flat_map(|file| file.lines.iter().map(move |&line| (file, line)))
    }
}

struct Entry {
    created: Instant,
    trace: Arc<Trace>,
    used: Vec<Place>,
}

/// The in-memory trace store.
pub struct TraceStore {
    max_keep: usize,
    ttl: Duration,
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
    salt: u32,
    next: u64,
}

impl TraceStore {
    pub fn new(max_keep: usize, ttl: Duration) -> TraceStore {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        TraceStore {
            max_keep: max_keep.max(1),
            ttl,
            entries: HashMap::new(),
            order: VecDeque::new(),
            salt: (nanos ^ std::process::id().rotate_left(16)) & 0x00ff_ffff,
            next: 1,
        }
    }

    /// A fresh id, unique in this process and unlikely to recur in another.
    pub fn next_id(&mut self) -> String {
        let id = format!("t-{:06x}{:04x}", self.salt, self.next);
        self.next += 1;
        id
    }

    /// Keeps `trace`, evicting expired traces and then the oldest beyond the limit.
    pub fn insert(&mut self, trace: Trace, now: Instant) -> Arc<Trace> {
        self.expire(now);
        while self.order.len() >= self.max_keep {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
        let trace = Arc::new(trace);
        self.order.push_back(trace.id.clone());
        self.entries.insert(
            trace.id.clone(),
            Entry {
                created: now,
                trace: Arc::clone(&trace),
                used: Vec::new(),
            },
        );
        trace
    }

    /// The trace `id` if it is kept and younger than the TTL, else `not_found` naming
    /// the parameter that carried it.
    pub fn get(&mut self, id: &str, now: Instant, field: &str) -> ToolResult<Arc<Trace>> {
        self.expire(now);
        self.entries
            .get(id)
            .map(|entry| Arc::clone(&entry.trace))
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "trace {id:?} is unknown or expired; run manual_find again"
                ))
                .with_details(json!({
                    "field": field,
                    "trace_id": id,
                    "ttl_sec": self.ttl.as_secs(),
                    "max_keep": self.max_keep,
                }))
            })
    }

    /// Notes that `place` was used after the search `id`; false when the trace is gone.
    pub fn record_used(&mut self, id: &str, place: Place, now: Instant) -> bool {
        self.expire(now);
        match self.entries.get_mut(id) {
            Some(entry) => {
                if !entry.used.contains(&place) {
                    entry.used.push(place);
                }
                true
            }
            None => false,
        }
    }

    /// Places used after the search `id` (empty when none or when the trace is gone).
    pub fn used(&self, id: &str) -> &[Place] {
        self.entries.get(id).map_or(&[], |entry| &entry.used)
    }

    fn expire(&mut self, now: Instant) {
        while let Some(oldest) = self.order.front() {
            let expired = self
                .entries
                .get(oldest)
                .is_none_or(|entry| now.saturating_duration_since(entry.created) >= self.ttl);
            if !expired {
                break;
            }
            let oldest = self.order.pop_front().expect("checked above");
            self.entries.remove(&oldest);
        }
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

    fn place(line: u32) -> Place {
        Place {
            manual_id: "m".into(),
            path: "a.md".into(),
            start_line: Some(line),
            title: "A".into(),
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

    #[test]
    fn used_refs_are_recorded_once_per_live_trace() {
        let now = Instant::now();
        let mut store = TraceStore::new(2, Duration::from_secs(60));
        let new = trace(&mut store);
        let id = store.insert(new, now).id.clone();
        assert!(store.record_used(&id, place(3), now));
        assert!(store.record_used(&id, place(3), now));
        assert!(store.record_used(&id, place(9), now));
        assert_eq!(store.used(&id), [place(3), place(9)]);
        assert!(!store.record_used("t-nope", place(1), now));
    }
}
