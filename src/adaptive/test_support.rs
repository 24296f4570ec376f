//! Record builders for the unit tests: plain defaults, changed field by field where a test
//! cares.

use super::fingerprint::Fingerprint;
use super::record::{FindFacts, FindRecord, FindSummary, Record, UsageRecord};
use super::thresholds::Thresholds;

pub(super) const DEFAULTS: Thresholds = Thresholds {
    candidate_low: 3,
    file_bias: 0.8,
};

/// A search with ten candidates spread over files, no Stage 4, no cutoff, 200 tokens.
pub(super) fn facts(trace_id: &str) -> FindFacts {
    FindFacts {
        summary: FindSummary {
            trace_id: trace_id.to_string(),
            query_hash: Fingerprint::of_query(trace_id),
            thresholds: DEFAULTS,
            max_stage_allowed: 4,
            max_stage_applied: 3,
            scope_expanded: false,
            scanned_files: 12,
            candidates: 10,
            file_bias_ratio: 0.3,
            warnings: 0,
            cutoff_reason: None,
            unscanned_sections_count: 0,
        },
        chars_in: 400,
        chars_out: 400,
        added_evidence_count: 0,
        added_est_tokens: 0,
    }
}

pub(super) fn find(ts: u64, facts: FindFacts) -> Record {
    Record::Find(FindRecord::new(facts, ts))
}

pub(super) fn usage(ts: u64, trace_id: &str, used_refs: u64, used_found: u64) -> Record {
    Record::Usage(UsageRecord {
        ts,
        trace_id: trace_id.to_string(),
        used_refs,
        used_found,
    })
}
