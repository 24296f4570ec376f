//! `pce_memory_feedback`: a signal moves a claim's utility, confidence and recency anchor
//! within bounds, once per (claim, signal, time bucket). The check and the update are one
//! immediate transaction, so concurrent feedback (threads or processes) serialises and no
//! update is lost; a repeat in the same bucket is recorded nowhere and changes nothing.

use rusqlite::params;

use super::claims;
use super::store::internal;
use super::{Call, Memory};
use crate::contract::types::PceMemoryFeedbackInputSignal as Signal;
use crate::error::ToolResult;

/// Utility stays in this range (the z-score needs no more; a runaway loop of signals
/// cannot make one claim dominate forever).
pub(crate) const UTILITY_BOUND: f64 = 5.0;

/// (utility, confidence) change of a signal at full strength (the reference's values).
fn deltas(signal: Signal) -> (f64, f64) {
    match signal {
        Signal::Helpful => (0.10, 0.05),
        Signal::Harmful => (-0.20, -0.10),
        Signal::Outdated => (0.0, -0.20),
        Signal::Duplicate => (-0.05, 0.0),
    }
}

/// The claim's state after a feedback call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FeedbackOutcome {
    pub applied: bool,
    pub utility: f64,
    pub confidence: f64,
}

impl Memory {
    /// Applies `signal` at strength `weight` (0..=1) to claim `claim_id`.
    pub(crate) fn feedback(
        &self,
        call: &mut Call,
        claim_id: &str,
        signal: Signal,
        weight: f64,
    ) -> ToolResult<(FeedbackOutcome, String)> {
        let policy = self.policy()?;
        call.facts.policy_version = Some(policy.version.clone());
        let bucket = call.now_ms.div_euclid(self.settings.feedback_bucket_ms);
        let outcome = self.store.write(|transaction| {
            let seq = claims::seq_of(transaction, claim_id)?;
            let (utility, confidence, hash): (f64, f64, String) = transaction
                .query_row("SELECT utility, confidence, content_hash FROM claims WHERE seq = ?1", [seq], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })
                .map_err(internal)?;
            call.facts.content_hashes = vec![hash];
            let recorded = transaction
                .execute(
                    "INSERT OR IGNORE INTO feedback (claim_seq, signal, bucket, weight, actor, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![seq, signal.to_string(), bucket, weight, call.actor, call.now_ms],
                )
                .map_err(internal)?;
            if recorded == 0 {
                return Ok(FeedbackOutcome { applied: false, utility, confidence });
            }
            let (utility_delta, confidence_delta) = deltas(signal);
            let new_utility = (utility + weight * utility_delta).clamp(-UTILITY_BOUND, UTILITY_BOUND);
            let new_confidence = (confidence + weight * confidence_delta).clamp(0.0, 1.0);
            let counter = match signal {
                Signal::Helpful => "helpful",
                Signal::Harmful => "harmful",
                Signal::Outdated => "outdated",
                Signal::Duplicate => "duplicate",
            };
            transaction
                .execute(
                    &format!(
                        "UPDATE claims SET utility = ?1, confidence = ?2, {counter} = {counter} + 1, updated_ms = ?3, \
                         recency_anchor_ms = CASE WHEN ?4 THEN ?3 ELSE recency_anchor_ms END WHERE seq = ?5"
                    ),
                    params![new_utility, new_confidence, call.now_ms, signal == Signal::Helpful, seq],
                )
                .map_err(internal)?;
            transaction
                .execute(
                    "UPDATE scope_utility SET sum = sum + ?1, sum_sq = sum_sq + ?2 \
                     WHERE scope = (SELECT scope FROM claims WHERE seq = ?3)",
                    params![new_utility - utility, new_utility * new_utility - utility * utility, seq],
                )
                .map_err(internal)?;
            Ok(FeedbackOutcome { applied: true, utility: new_utility, confidence: new_confidence })
        })?;
        call.facts.decision = Some(if outcome.applied {
            "feedback"
        } else {
            "repeat"
        });
        call.facts.reason = Some(signal.to_string());
        Ok((outcome, policy.version.clone()))
    }
}
