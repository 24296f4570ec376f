//! The lines of the statistics file (spec_v2 §8.2), one JSON object each, told apart by
//! `kind`.
//!
//! The types are the privacy guarantee: a record holds counts, ratios, times,
//! fingerprints and the trace id the server generated; none of the facts a caller hands
//! in has a place for a query, a path, a snippet or body text.

use serde::{Deserialize, Serialize};

use crate::trace::CutoffReason;

use super::fingerprint::Fingerprint;
use super::thresholds::Thresholds;
use crate::artifact::{est_tokens, marginal_gain};

/// One line of the statistics file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Record {
    /// One `manual_find`.
    Find(FindRecord),
    /// What was used after a `manual_find`, written when its trace closes.
    Usage(UsageRecord),
    /// One `vault_coverage` round.
    VaultCoverage(AuditRecord),
    /// One `artifact_audit` round.
    ArtifactAudit(AuditRecord),
    /// A change of the tuned thresholds, with the state needed to resume after a restart.
    Tuning(TuningRecord),
}

/// The summary of one `manual_find`, as the search engine reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindSummary {
    pub trace_id: String,
    /// [`Fingerprint::of_query`] of the query; the query itself is never kept.
    pub query_hash: Fingerprint,
    /// The thresholds this search ran with.
    #[serde(flatten)]
    pub thresholds: Thresholds,
    /// The `max_stage` the search was allowed (3 turns Stage 4 off, so such a search says
    /// nothing about the thresholds).
    pub max_stage_allowed: u8,
    pub max_stage_applied: u8,
    pub scope_expanded: bool,
    pub scanned_files: u64,
    pub candidates: u64,
    /// The share of candidates in the file holding the most of them (0.0 without any):
    /// what the file-bias threshold is compared with.
    pub file_bias_ratio: f64,
    pub warnings: u64,
    /// `null` when the search was not cut off.
    pub cutoff_reason: Option<CutoffReason>,
    pub unscanned_sections_count: u64,
}

/// What a `manual_find` did and what it cost, handed in by the tool layer.
#[derive(Debug, Clone, PartialEq)]
pub struct FindFacts {
    pub summary: FindSummary,
    /// Characters of the request and of the response the client saw.
    pub chars_in: u64,
    pub chars_out: u64,
    /// Candidates Stage 4 added, and the estimated tokens of what it added (its
    /// sections' characters / 4): the price of Stage 4, which the answer itself, being
    /// counts and a trace id, hardly shows. Both 0 when Stage 4 did not run.
    pub added_evidence_count: u64,
    pub added_est_tokens: u64,
}

/// One `manual_find` as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FindRecord {
    /// Unix seconds (the report turns them into UTC dates).
    pub ts: u64,
    #[serde(flatten)]
    pub summary: FindSummary,
    #[serde(flatten)]
    pub tokens: TokenEstimate,
    #[serde(flatten)]
    pub(crate) gain: Gain,
}

impl FindRecord {
    pub(crate) fn new(facts: FindFacts, ts: u64) -> FindRecord {
        FindRecord {
            ts,
            summary: facts.summary,
            tokens: TokenEstimate::from_chars(facts.chars_in, facts.chars_out),
            gain: Gain::new(facts.added_evidence_count, facts.added_est_tokens),
        }
    }
}

/// `est_tokens = ceil((chars_in + chars_out) / 4)`, with each side estimated the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TokenEstimate {
    pub est_tokens: u64,
    pub est_tokens_in: u64,
    pub est_tokens_out: u64,
}

impl TokenEstimate {
    pub(crate) fn from_chars(chars_in: u64, chars_out: u64) -> TokenEstimate {
        TokenEstimate {
            est_tokens: est_tokens(chars_in + chars_out),
            est_tokens_in: est_tokens(chars_in),
            est_tokens_out: est_tokens(chars_out),
        }
    }
}

/// Evidence added for tokens spent: the stop signal of vault audit rounds and the price
/// of Stage 4 in searches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Gain {
    pub added_evidence_count: u64,
    pub added_est_tokens: u64,
    /// `added_evidence_count / added_est_tokens`; `null` when no tokens were added.
    pub marginal_gain: Option<f64>,
}

impl Gain {
    pub(crate) fn new(added_evidence_count: u64, added_est_tokens: u64) -> Gain {
        Gain {
            added_evidence_count,
            added_est_tokens,
            marginal_gain: marginal_gain(added_evidence_count, added_est_tokens),
        }
    }
}

/// The recall proxy of one trace: of the `used_refs` refs used under it, `used_found`
/// were among its candidates (requirements §6.1: |U_q| and |C_q ∩ U_q|).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct UsageRecord {
    pub ts: u64,
    pub trace_id: String,
    pub used_refs: u64,
    pub used_found: u64,
}

impl UsageRecord {
    /// |C_q ∩ U_q| / |U_q|, or `None` for a trace nothing was used from.
    pub(crate) fn recall(&self) -> Option<f64> {
        (self.used_refs > 0).then(|| self.used_found as f64 / self.used_refs as f64)
    }
}

/// Which vault audit a round belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditKind {
    VaultCoverage,
    ArtifactAudit,
}

/// One vault audit round, handed in by the tool layer.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditFacts {
    pub kind: AuditKind,
    /// [`Fingerprint::of_path`] of the audited file.
    pub path_hash: Fingerprint,
    pub coverage_ratio: Option<f64>,
    pub added_evidence_count: u64,
    pub added_est_tokens: u64,
}

/// One vault audit round as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AuditRecord {
    pub ts: u64,
    pub path_hash: Fingerprint,
    pub coverage_ratio: Option<f64>,
    #[serde(flatten)]
    pub(crate) gain: Gain,
}

impl Record {
    /// The record of one audit round, of the kind the round names.
    pub(crate) fn audit(facts: AuditFacts, ts: u64) -> Record {
        let record = AuditRecord {
            ts,
            path_hash: facts.path_hash,
            coverage_ratio: facts.coverage_ratio,
            gain: Gain::new(facts.added_evidence_count, facts.added_est_tokens),
        };
        match facts.kind {
            AuditKind::VaultCoverage => Record::VaultCoverage(record),
            AuditKind::ArtifactAudit => Record::ArtifactAudit(record),
        }
    }
}

/// What moved the thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TuningReason {
    /// The policy found a cheaper setting that keeps recall, or recall below the floor.
    Policy,
    /// Rollback: recall over the last 100 searches fell by more than 3 points.
    RecallDrop,
    /// Rollback: the cutoff rate over the last 100 searches rose by more than 5 points.
    CutoffRise,
}

/// A change of the thresholds, holding the whole new state, so that the newest tuning
/// record alone restores it after a restart (older ones may have been compacted away).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TuningRecord {
    pub ts: u64,
    pub reason: TuningReason,
    #[serde(flatten)]
    pub state: TuningState,
}

/// The tuned thresholds and the times the rules count from (a tuning record's state;
/// `tuning` moves it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TuningState {
    #[serde(flatten)]
    pub thresholds: Thresholds,
    /// When each threshold last changed.
    pub(crate) candidate_low_changed_at: Option<u64>,
    pub(crate) file_bias_changed_at: Option<u64>,
    /// The last rollback: rollback windows only look at searches after it.
    pub rolled_back_at: Option<u64>,
    /// The thresholds that rollback left. For `tuning::EVIDENCE_WINDOW_SECS` after it, a
    /// threshold that was looser than its default then is not loosened back to that value
    /// (or past it): the policy judges by an absolute floor, the rollback by a relative
    /// drop, and without this bar the policy would walk straight back into the setting
    /// the rollback just left.
    pub(crate) rolled_back_from: Option<Thresholds>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::test_support::facts;
    use serde_json::Value;

    #[test]
    fn find_record_carries_every_field_of_spec_8_2() {
        let record = Record::Find(FindRecord::new(
            FindFacts {
                chars_in: 101,
                added_evidence_count: 3,
                ..facts("t1")
            },
            1_700_000_000,
        ));
        let json = serde_json::to_value(&record).unwrap();
        for field in [
            "ts",
            "query_hash",
            "scanned_files",
            "candidates",
            "warnings",
            "max_stage_applied",
            "scope_expanded",
            "cutoff_reason",
            "unscanned_sections_count",
            "est_tokens",
            "est_tokens_in",
            "est_tokens_out",
            "added_evidence_count",
            "added_est_tokens",
            "marginal_gain",
            "trace_id",
            "candidate_low_threshold",
            "file_bias_threshold",
        ] {
            assert!(json.get(field).is_some(), "missing {field}: {json}");
        }
        assert_eq!(json["kind"], "find");
        assert_eq!(json["cutoff_reason"], Value::Null);
        assert_eq!(json["marginal_gain"], Value::Null);
        // ceil(501 / 4) = 126; each side rounds up on its own.
        assert_eq!(json["est_tokens"], 126);
        assert_eq!(json["est_tokens_in"], 26);
        assert_eq!(json["est_tokens_out"], 100);
    }

    #[test]
    fn marginal_gain_is_evidence_per_added_token() {
        assert_eq!(Gain::new(3, 150).marginal_gain, Some(0.02));
        assert_eq!(Gain::new(3, 0).marginal_gain, None);
    }

    #[test]
    fn every_kind_round_trips() {
        let mut find = facts("t2");
        find.summary.cutoff_reason = Some(CutoffReason::TimeBudget);
        let records = vec![
            Record::Find(FindRecord::new(find, 5)),
            Record::Usage(UsageRecord {
                ts: 6,
                trace_id: "t2".into(),
                used_refs: 4,
                used_found: 3,
            }),
            Record::audit(
                AuditFacts {
                    kind: AuditKind::ArtifactAudit,
                    path_hash: Fingerprint::of_path("artifacts/flow.json"),
                    coverage_ratio: Some(0.75),
                    added_evidence_count: 2,
                    added_est_tokens: 40,
                },
                7,
            ),
            Record::Tuning(TuningRecord {
                ts: 8,
                reason: TuningReason::RecallDrop,
                state: TuningState {
                    thresholds: Thresholds {
                        candidate_low: 4,
                        file_bias: 0.77,
                    },
                    candidate_low_changed_at: Some(8),
                    file_bias_changed_at: None,
                    rolled_back_at: Some(8),
                    rolled_back_from: Some(Thresholds {
                        candidate_low: 2,
                        file_bias: 0.83,
                    }),
                },
            }),
        ];
        for record in records {
            let line = serde_json::to_string(&record).unwrap();
            assert_eq!(
                serde_json::from_str::<Record>(&line).unwrap(),
                record,
                "{line}"
            );
        }
    }

    #[test]
    fn audit_kind_names_the_tool() {
        let facts = AuditFacts {
            kind: AuditKind::VaultCoverage,
            path_hash: Fingerprint::of_path("notes/a.md"),
            coverage_ratio: None,
            added_evidence_count: 0,
            added_est_tokens: 0,
        };
        let json = serde_json::to_value(Record::audit(facts, 1)).unwrap();
        assert_eq!(json["kind"], "vault_coverage");
    }

    #[test]
    fn recall_leaves_out_traces_without_use() {
        let usage = |used_refs, used_found| UsageRecord {
            ts: 0,
            trace_id: String::new(),
            used_refs,
            used_found,
        };
        assert_eq!(usage(4, 3).recall(), Some(0.75));
        assert_eq!(usage(0, 0).recall(), None);
    }
}
