//! `next_actions`: the Stage 3.5 verdict turned into the calls an agent should make next,
//! each with the fewest parameters that make a valid call (spec_v2 §7).
//!
//! | verdict (requirements §6.1) | action |
//! |---|---|
//! | candidates found | `manual_hits` `integrated_top`, `manual_read` `section` of the top one |
//! | cut by the time budget | `manual_find` `only_unscanned_from_trace_id` |
//! | insufficient_candidates, search capped at Stage 3 | `manual_find` `max_stage: 4` |
//! | resolve_conflicts | `manual_hits` `conflicts` |
//! | fill_gaps | `manual_hits` `gaps` |
//! | more candidates than the cap | `manual_hits` `candidates`, `manual_find` `only_unscanned_from_trace_id` |
//! | manual_completed (status ready) | `stop` |
//!
//! Actions come best first (by confidence). A `manual_find` proposal repeats the query, so
//! it is left out for queries longer than [`MAX_REPEATED_QUERY_CHARS`] to keep the answer
//! small; the agent still has the query and the trace id.

use super::integrate::{IntegrationStatus, Verdict};
use super::trace::{CutoffReason, Place};
use crate::contract::types::HitKind;
use crate::proposal::{Call, Proposal};
pub(crate) use crate::verdict::MAX_REPEATED_QUERY_CHARS;

/// What the actions are derived from.
pub(crate) struct Situation<'a> {
    pub trace_id: &'a str,
    pub query: &'a str,
    pub verdict: &'a Verdict,
    pub candidates: usize,
    pub top: Option<&'a Place>,
    pub cutoff: Option<CutoffReason>,
}

pub(crate) fn next_actions(situation: &Situation) -> Vec<Proposal> {
    let trace_id = situation.trace_id;
    let hits = |kind: HitKind, confidence: f32| {
        let trace_id = trace_id.to_owned();
        Proposal::new(Call::ManualHits { trace_id, kind }, confidence)
    };
    let can_repeat = situation.query.chars().count() <= MAX_REPEATED_QUERY_CHARS;
    let find = |only_unscanned_from: Option<&str>, max_stage: Option<u8>, confidence: f32| {
        let call = Call::ManualFind {
            query: situation.query.to_owned(),
            only_unscanned_from: only_unscanned_from.map(str::to_owned),
            max_stage,
        };
        Proposal::new(call, confidence)
    };
    let verdict = situation.verdict;
    let mut actions = Vec::new();
    if let Some(top) = situation.top {
        actions.push(hits(HitKind::IntegratedTop, 0.9));
        actions.push(Proposal::new(read_section(top, trace_id), 0.8));
    }
    match situation.cutoff {
        Some(CutoffReason::TimeBudget) if can_repeat => {
            actions.push(find(Some(trace_id), None, 0.95))
        }
        Some(CutoffReason::TimeBudget) => actions.push(hits(HitKind::Unscanned, 0.95)),
        Some(CutoffReason::CandidateCap) => {
            actions.push(hits(HitKind::Candidates, 0.5));
            if can_repeat {
                actions.push(find(Some(trace_id), None, 0.45));
            }
        }
        Some(CutoffReason::StageCap) if can_repeat => {
            let confidence = if situation.candidates == 0 { 0.9 } else { 0.6 };
            actions.push(find(None, Some(4), confidence));
        }
        // No search stops on `hard_limit` (the schema keeps the word for the answer's
        // own bound): nothing to propose for it.
        Some(CutoffReason::StageCap | CutoffReason::HardLimit) | None => {}
    }
    if !verdict.conflicts.is_empty() {
        actions.push(hits(HitKind::Conflicts, 0.75));
    }
    if !verdict.gaps.is_empty() {
        actions.push(hits(
            HitKind::Gaps,
            if situation.candidates == 0 { 0.6 } else { 0.7 },
        ));
    }
    if verdict.status == IntegrationStatus::Ready {
        actions.push(Proposal::new(Call::Stop, 0.2 + 0.5 * verdict.sufficiency));
    }
    actions.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    actions
}

/// `manual_read` of a whole section; a JSON file is read whole (its default scope).
fn read_section(place: &Place, trace_id: &str) -> Call {
    Call::ManualRead {
        trace_id: trace_id.to_owned(),
        manual_id: place.manual_id.to_string(),
        path: place.path.to_string(),
        start_line: place.start_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::integrate::{Conflict, Gap};

    fn verdict(status: IntegrationStatus, conflicts: usize, gaps: usize) -> Verdict {
        Verdict {
            top: 1,
            file_bias: 0.5,
            conflicts: (0..conflicts)
                .map(|_| Conflict {
                    first: 0,
                    second: 1,
                    kind: "exception".into(),
                })
                .collect(),
            gaps: (0..gaps)
                .map(|_| Gap::Term {
                    text: "x".into(),
                    strict: false,
                })
                .collect(),
            sufficiency: 0.9,
            status,
        }
    }

    fn place() -> Place {
        Place {
            manual_id: "handbook".into(),
            path: "01-leave.md".into(),
            start_line: Some(22),
            title: "繰越し".into(),
        }
    }

    fn situation<'a>(
        verdict: &'a Verdict,
        top: Option<&'a Place>,
        cutoff: Option<CutoffReason>,
    ) -> Situation<'a> {
        Situation {
            trace_id: "t-1",
            query: "繰越し",
            verdict,
            candidates: usize::from(top.is_some()) * 3,
            top,
            cutoff,
        }
    }

    fn tools(actions: &[Proposal]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match &a.call {
                Call::ManualHits { kind, .. } => format!("manual_hits:{kind}"),
                call => call.tool().to_string(),
            })
            .collect()
    }

    fn find(only_unscanned_from: Option<&str>, max_stage: Option<u8>) -> Call {
        Call::ManualFind {
            query: "繰越し".into(),
            only_unscanned_from: only_unscanned_from.map(str::to_owned),
            max_stage,
        }
    }

    #[test]
    fn a_ready_result_proposes_the_top_then_stop() {
        let verdict = verdict(IntegrationStatus::Ready, 0, 0);
        let top = place();
        let actions = next_actions(&situation(&verdict, Some(&top), None));
        assert_eq!(
            tools(&actions),
            ["manual_hits:integrated_top", "manual_read", "stop"]
        );
        assert_eq!(
            actions[1].call,
            Call::ManualRead {
                trace_id: "t-1".into(),
                manual_id: "handbook".into(),
                path: "01-leave.md".into(),
                start_line: Some(22),
            }
        );
        assert_eq!(actions[2].call, Call::Stop);
    }

    #[test]
    fn conflicts_and_gaps_are_proposed_and_block_stop() {
        let verdict = verdict(IntegrationStatus::NeedsFollowup, 1, 2);
        let top = place();
        let actions = next_actions(&situation(&verdict, Some(&top), None));
        assert_eq!(
            tools(&actions),
            [
                "manual_hits:integrated_top",
                "manual_read",
                "manual_hits:conflicts",
                "manual_hits:gaps"
            ]
        );
    }

    #[test]
    fn a_time_cutoff_continues_with_the_unscanned_sections_first() {
        let verdict = verdict(IntegrationStatus::NeedsFollowup, 0, 0);
        let actions = next_actions(&situation(&verdict, None, Some(CutoffReason::TimeBudget)));
        assert_eq!(actions[0].call, find(Some("t-1"), None));
    }

    #[test]
    fn nothing_found_widens_by_stage_or_shows_the_gaps() {
        let verdict = verdict(IntegrationStatus::Blocked, 0, 1);
        let capped = situation(&verdict, None, Some(CutoffReason::StageCap));
        let actions = next_actions(&capped);
        assert_eq!(actions[0].call, find(None, Some(4)));
        // Stage 4 ran (every manual searched): what is missing is the next thing to read.
        let actions = next_actions(&situation(&verdict, None, None));
        assert_eq!(tools(&actions), ["manual_hits:gaps"]);
    }

    #[test]
    fn long_queries_are_not_repeated() {
        let verdict = verdict(IntegrationStatus::NeedsFollowup, 0, 0);
        let query = "x".repeat(MAX_REPEATED_QUERY_CHARS + 1);
        let long = Situation {
            query: &query,
            ..situation(&verdict, None, Some(CutoffReason::TimeBudget))
        };
        assert_eq!(tools(&next_actions(&long)), ["manual_hits:unscanned"]);
    }
}
