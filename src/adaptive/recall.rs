//! The recall proxy of requirements §6.1: C_q is the candidate set of a `manual_find`
//! trace, U_q the refs used afterwards under the same `trace_id` (`manual_read`,
//! `manual_hits`, bridge copies), and recall = |C_q ∩ U_q| / |U_q|.
//!
//! The ledger keeps both sets in memory only (they hold paths) and writes one usage
//! record of counts when a trace closes, because recall needs the final U_q and one line
//! a trace keeps the file small. A trace closes when it expires (`TRACE_TTL_SEC` after its
//! search), when more than `TRACE_MAX_KEEP` are open (the oldest), or at a flush (server
//! shutdown): the same limits as the trace store, so a ref can only count toward a trace
//! a client could still name. A trace nothing was used from writes nothing: the spec
//! leaves such queries out of recall.

use std::collections::HashSet;
use std::time::Duration;

use super::record::UsageRecord;
use crate::text::lines::LineNo;
use crate::trace::{TraceKind, TraceStore};

/// The identity of a manual ref (spec_v2 §9.1): `start_line` is `None` for a `.json`
/// file and 1 for a Markdown file without headings. Candidates and uses must be built
/// from the same ref fields, or nothing will ever match.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefKey {
    pub manual_id: String,
    pub path: String,
    pub start_line: Option<LineNo>,
}

struct OpenTrace {
    candidates: HashSet<RefKey>,
    used: HashSet<RefKey>,
}

/// The open traces, in the trace store the find tools use (its expiry and eviction), on
/// the statistics' clock (Unix seconds).
pub(crate) struct UsageLedger {
    traces: TraceStore<OpenTrace, u64>,
}

/// The ledger keys its traces by `manual_find`'s ids; it makes none.
const LEDGER: TraceKind = TraceKind {
    prefix: "t",
    tool: "manual_find",
};

impl UsageLedger {
    pub(crate) fn new(ttl_secs: u64, max_keep: usize) -> UsageLedger {
        UsageLedger {
            traces: TraceStore::new(LEDGER, max_keep, Duration::from_secs(ttl_secs)),
        }
    }

    /// Opens `trace_id` with its candidates; returns the usage of the traces this closes.
    pub(crate) fn record_candidates(
        &mut self,
        trace_id: &str,
        candidates: HashSet<RefKey>,
        now: u64,
    ) -> Vec<UsageRecord> {
        let trace = OpenTrace {
            candidates,
            used: HashSet::new(),
        };
        let closed = self.traces.insert(trace_id.to_string(), trace, now);
        usage(closed, now)
    }

    /// Counts `used` toward `trace_id` if that trace is still open (a use under an
    /// expired or unknown trace counts for nothing); returns the usage of the traces that
    /// expired first.
    pub(crate) fn record_use(
        &mut self,
        trace_id: &str,
        used: RefKey,
        now: u64,
    ) -> Vec<UsageRecord> {
        let closed = self.close_expired(now);
        if let Some(trace) = self.traces.peek_mut(trace_id) {
            trace.used.insert(used);
        }
        closed
    }

    /// Closes the traces whose time is up.
    pub(crate) fn close_expired(&mut self, now: u64) -> Vec<UsageRecord> {
        usage(self.traces.expire(now), now)
    }

    /// Closes every open trace (shutdown).
    pub(crate) fn close_all(&mut self, now: u64) -> Vec<UsageRecord> {
        usage(self.traces.drain(), now)
    }
}

/// The usage records of closed traces: one per trace anything was used from.
fn usage(closed: Vec<(String, OpenTrace)>, now: u64) -> Vec<UsageRecord> {
    closed
        .into_iter()
        .filter(|(_, trace)| !trace.used.is_empty())
        .map(|(trace_id, trace)| UsageRecord {
            ts: now,
            used_refs: trace.used.len() as u64,
            used_found: trace.used.intersection(&trace.candidates).count() as u64,
            trace_id,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str, line: LineNo) -> RefKey {
        RefKey {
            manual_id: "handbook".into(),
            path: path.into(),
            start_line: Some(line),
        }
    }

    fn keys(items: &[(&str, LineNo)]) -> HashSet<RefKey> {
        items.iter().map(|(path, line)| key(path, *line)).collect()
    }

    #[test]
    fn recall_counts_used_refs_that_were_candidates() {
        let mut ledger = UsageLedger::new(1800, 100);
        ledger.record_candidates("t", keys(&[("a.md", 1), ("a.md", 9), ("b.md", 3)]), 0);
        for used in [
            key("a.md", 9),
            key("c.md", 1),
            key("a.md", 9),
            key("b.md", 3),
        ] {
            assert!(ledger.record_use("t", used, 10).is_empty());
        }
        let closed = ledger.close_all(20);
        assert_eq!(closed.len(), 1);
        assert_eq!((closed[0].used_refs, closed[0].used_found), (3, 2));
        assert_eq!(closed[0].trace_id, "t");
    }

    #[test]
    fn traces_without_use_write_nothing() {
        let mut ledger = UsageLedger::new(1800, 100);
        ledger.record_candidates("t", keys(&[("a.md", 1)]), 0);
        assert!(ledger.close_all(5).is_empty());
    }

    #[test]
    fn a_trace_closes_when_its_time_is_up_and_later_uses_do_not_count() {
        let mut ledger = UsageLedger::new(100, 10);
        ledger.record_candidates("t", keys(&[("a.md", 1)]), 0);
        assert!(ledger.record_use("t", key("a.md", 1), 99).is_empty());
        let closed = ledger.record_use("t", key("b.md", 1), 100);
        assert_eq!((closed[0].used_refs, closed[0].used_found), (1, 1));
        assert!(ledger.close_all(200).is_empty());
    }

    #[test]
    fn the_oldest_trace_closes_when_too_many_are_open() {
        let mut ledger = UsageLedger::new(1800, 2);
        let mut closed = Vec::new();
        for (n, trace_id) in ["t1", "t2", "t3", "t4"].iter().enumerate() {
            closed.extend(ledger.record_candidates(trace_id, HashSet::new(), n as u64));
            ledger.record_use(trace_id, key("x.md", 1), n as u64);
        }
        let ids: Vec<&str> = closed.iter().map(|u| u.trace_id.as_str()).collect();
        assert_eq!(ids, ["t1", "t2"]);
    }

    #[test]
    fn uses_of_unknown_traces_are_ignored() {
        let mut ledger = UsageLedger::new(1800, 10);
        ledger.record_use("nobody", key("a.md", 1), 0);
        assert!(ledger.close_all(1).is_empty());
    }
}
