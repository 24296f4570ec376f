//! Search traces shared by `manual_find` and `vault_find`: what a search found or left
//! out, kept in memory under an id, so the answer itself can stay a few hundred
//! characters and a later call can refer back to it.
//!
//! Bounded in both count (`TRACE_MAX_KEEP`, oldest evicted first) and age
//! (`TRACE_TTL_SEC`); an evicted or expired trace is gone, and asking for it is
//! `not_found` rather than a silent re-search. Ids carry a per-store prefix (so an id of
//! one tool's traces is never found in another's) and a per-process salt (so an id kept by
//! a client across a server restart never names another search).
//!
//! The store knows nothing of what a trace holds: each search keeps its own payload `T`.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::error::{ToolError, ToolResult};

/// Time budget of a search when the request brings none (requirements §6.1, §6.1.1).
pub(crate) const DEFAULT_TIME_MS: u64 = 60_000;
/// Most candidates a search keeps when the request brings no cap.
pub(crate) const DEFAULT_MAX_CANDIDATES: usize = 200;

/// Why a search left part of its scope out: the schema's `CutoffReason` (also the word
/// the statistics file records).
pub(crate) use crate::contract::types::CutoffReason;

/// Whose traces a store keeps: the id prefix, and the tool named in the `not_found`
/// message, since running it again is the way to a fresh trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TraceKind {
    pub prefix: &'static str,
    pub tool: &'static str,
}

/// A point in time a store counts its TTL from: an [`Instant`] for the trace stores of
/// the find tools, Unix seconds (`u64`) for the statistics, whose clock is a parameter so
/// tests can drive days.
pub(crate) trait Moment: Copy {
    /// Time from `earlier` to `self` (zero if `earlier` is later).
    fn since(self, earlier: Self) -> Duration;
}

impl Moment for Instant {
    fn since(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Unix seconds.
impl Moment for u64 {
    fn since(self, earlier: u64) -> Duration {
        Duration::from_secs(self.saturating_sub(earlier))
    }
}

struct Entry<T, M> {
    created: M,
    value: T,
}

/// The in-memory trace store of one search tool (and of the statistics' open traces):
/// at most `max_keep` entries, each for `ttl`, the oldest leaving first.
pub(crate) struct TraceStore<T, M: Moment = Instant> {
    kind: TraceKind,
    max_keep: usize,
    ttl: Duration,
    entries: HashMap<String, Entry<T, M>>,
    order: VecDeque<String>,
    salt: u32,
    next: u64,
}

impl<T, M: Moment> TraceStore<T, M> {
    pub(crate) fn new(kind: TraceKind, max_keep: usize, ttl: Duration) -> TraceStore<T, M> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        TraceStore {
            kind,
            max_keep: max_keep.max(1),
            ttl,
            entries: HashMap::new(),
            order: VecDeque::new(),
            salt: (nanos ^ std::process::id().rotate_left(16)) & 0x00ff_ffff,
            next: 1,
        }
    }

    /// A fresh id, unique in this process and unlikely to recur in another.
    pub(crate) fn next_id(&mut self) -> String {
        let id = format!("{}-{:06x}{:04x}", self.kind.prefix, self.salt, self.next);
        self.next += 1;
        id
    }

    /// Keeps `value` under `id`, and returns what that closed, oldest first: the expired
    /// entries, the one kept under `id` before, then the oldest beyond the limit.
    pub(crate) fn insert(&mut self, id: String, value: T, now: M) -> Vec<(String, T)> {
        let mut closed = self.expire(now);
        closed.extend(self.remove(&id).map(|value| (id.clone(), value)));
        while self.order.len() >= self.max_keep {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            closed.extend(
                self.entries
                    .remove(&oldest)
                    .map(|entry| (oldest, entry.value)),
            );
        }
        self.order.push_back(id.clone());
        self.entries.insert(
            id,
            Entry {
                created: now,
                value,
            },
        );
        closed
    }

    /// The trace `id` if it is kept and younger than the TTL, else `not_found` naming
    /// the parameter that carried it.
    pub(crate) fn get(&mut self, id: &str, now: M, field: &str) -> ToolResult<&mut T> {
        self.expire(now);
        let (ttl, max_keep, tool) = (self.ttl, self.max_keep, self.kind.tool);
        self.entries
            .get_mut(id)
            .map(|entry| &mut entry.value)
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "trace {:?} is unknown or expired; run {tool} again",
                    crate::error::clip(id)
                ))
                .with_details(json!({
                    "field": field,
                    "trace_id": id,
                    "ttl_sec": ttl.as_secs(),
                    "max_keep": max_keep,
                }))
            })
    }

    /// The trace `id` as kept, to change in place, without expiring anything first (for
    /// callers that must not change which traces the store keeps, such as statistics
    /// looking back).
    pub(crate) fn peek_mut(&mut self, id: &str) -> Option<&mut T> {
        self.entries.get_mut(id).map(|entry| &mut entry.value)
    }

    /// Takes out the entry `id`.
    pub(crate) fn remove(&mut self, id: &str) -> Option<T> {
        let entry = self.entries.remove(id)?;
        self.order.retain(|kept| kept != id);
        Some(entry.value)
    }

    /// Takes out every entry whose time is up, oldest first.
    pub(crate) fn expire(&mut self, now: M) -> Vec<(String, T)> {
        let mut expired = Vec::new();
        while let Some(oldest) = self.order.front() {
            let due = self
                .entries
                .get(oldest)
                .is_none_or(|entry| now.since(entry.created) >= self.ttl);
            if !due {
                break;
            }
            let oldest = self.order.pop_front().expect("checked above");
            expired.extend(
                self.entries
                    .remove(&oldest)
                    .map(|entry| (oldest, entry.value)),
            );
        }
        expired
    }

    /// Takes out every entry, oldest first.
    pub(crate) fn drain(&mut self) -> Vec<(String, T)> {
        let order: Vec<String> = self.order.drain(..).collect();
        order
            .into_iter()
            .filter_map(|id| self.entries.remove(&id).map(|entry| (id, entry.value)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    const KIND: TraceKind = TraceKind {
        prefix: "x",
        tool: "some_find",
    };

    fn keep(store: &mut TraceStore<u32>, value: u32, now: Instant) -> String {
        let id = store.next_id();
        store.insert(id.clone(), value, now);
        id
    }

    // Id shape, expiry and eviction are tested through the manual store
    // (manual::find::trace).

    #[test]
    fn an_expired_trace_is_not_found_and_the_error_names_the_tool() {
        let start = Instant::now();
        let mut store = TraceStore::new(KIND, 10, Duration::from_secs(30));
        let id = keep(&mut store, 7, start);
        assert_eq!(
            store
                .get(&id, start + Duration::from_secs(29), "trace_id")
                .copied(),
            Ok(7)
        );
        let error = store
            .get(&id, start + Duration::from_secs(30), "trace_id")
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::NotFound);
        assert!(
            error.message.contains("run some_find again"),
            "{}",
            error.message
        );
        assert_eq!(error.details.unwrap()["field"], "trace_id");
    }

    #[test]
    fn a_kept_trace_can_be_updated_in_place() {
        let now = Instant::now();
        let mut store = TraceStore::new(KIND, 2, Duration::from_secs(60));
        let id = keep(&mut store, 1, now);
        assert!(id.starts_with("x-"), "{id}");
        *store.get(&id, now, "trace_id").unwrap() += 1;
        assert_eq!(store.peek_mut(&id), Some(&mut 2));
        assert_eq!(store.peek_mut("x-nope"), None);
    }
}
