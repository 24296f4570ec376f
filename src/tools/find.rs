//! `manual_find` and `manual_hits` on `App`: contract types to the search engine
//! (`manual::find`) and back, defaults and paging. The trait methods in `manual.rs` call
//! these.

use std::collections::HashSet;

use super::{flag, next_actions, nonzero, page, rounded, significant, trim_actions};
use crate::adaptive::{FindFacts, FindSummary as AdaptiveSummary, Fingerprint, RefKey};
use crate::app::App;
use crate::artifact::est_tokens;
use crate::call::CallContext;
use crate::clock;
use crate::contract::types::*;
use crate::error::ToolResult;
use crate::manual::find::trace::Place;
use crate::manual::find::{FindOutcome, FindRequest, HitItem as FoundItem};
use crate::text::lines::LineNo;

/// Characters a `manual_find` answer may take: about 300 tokens, whatever the query.
pub(crate) const MAX_FIND_RESPONSE_CHARS: usize = 1200;

pub(crate) fn manual_find(
    app: &App,
    input: ManualFindInput,
    call: &CallContext,
) -> ToolResult<ManualFindOutput> {
    let now = clock::now();
    let chars_in = json_chars(&input);
    let query_hash = Fingerprint::of_query(&input.query);
    let tuned = app.adaptive.thresholds(now);
    let budget = input.budget.unwrap_or_default();
    let request = FindRequest {
        manual_id: input.manual_id,
        query: input.query,
        intent: input.intent,
        max_stage: input
            .max_stage
            .map(|stage| stage.min(u64::from(u8::MAX)) as u8),
        only_unscanned_from: input.only_unscanned_from_trace_id,
        also: input.also.unwrap_or_default(),
        max_candidates: budget.max_candidates.map(|n| n as usize),
        time_ms: budget.time_ms,
        thresholds: Some(tuned),
        #[cfg(test)]
        fail_stage: None,
    };
    let outcome = app.with_manuals(call, |index| app.finder.find(index, &request, call))?;
    // A cancelled search is cut, not finished: it must not count in the statistics.
    call.check_cancelled()?;
    let facts = FindFacts {
        summary: AdaptiveSummary {
            trace_id: outcome.trace_id.clone(),
            query_hash,
            thresholds: tuned,
            max_stage_allowed: outcome.max_stage_allowed,
            max_stage_applied: outcome.summary.max_stage_applied,
            scope_expanded: outcome.summary.scope_expanded,
            scanned_files: outcome.summary.scanned_files as u64,
            candidates: outcome.summary.candidates as u64,
            file_bias_ratio: f64::from(outcome.summary.file_bias_ratio),
            warnings: outcome.summary.warnings as u64,
            cutoff_reason: outcome.summary.cutoff_reason,
            unscanned_sections_count: outcome.summary.unscanned_sections_count as u64,
        },
        chars_in,
        chars_out: 0,
        added_evidence_count: outcome.stage4_added as u64,
        added_est_tokens: est_tokens(outcome.stage4_added_chars as u64),
    };
    let candidates = candidate_keys(app, &outcome.trace_id)?;
    let mut output = find_output(outcome);
    trim_actions(&mut output, MAX_FIND_RESPONSE_CHARS, |output| {
        &mut output.next_actions
    });
    app.adaptive.record_find(
        FindFacts {
            chars_out: json_chars(&output),
            ..facts
        },
        candidates,
        now,
    );
    Ok(output)
}

/// The candidate set C_q of a trace, as the recall proxy compares it with used refs.
fn candidate_keys(app: &App, trace_id: &str) -> ToolResult<HashSet<RefKey>> {
    Ok(app
        .finder
        .hits(trace_id, HitKind::Candidates)?
        .into_iter()
        .filter_map(|item| item.place)
        .map(|place| ref_key(&place.manual_id, &place.path, place.start_line))
        .collect())
}

fn ref_key(manual_id: &str, path: &str, start_line: Option<LineNo>) -> RefKey {
    RefKey {
        manual_id: manual_id.to_string(),
        path: path.to_string(),
        start_line,
    }
}

/// Characters of a request or answer as JSON: what `est_tokens` is estimated from.
fn json_chars(value: &impl serde::Serialize) -> u64 {
    serde_json::to_string(value).map_or(0, |text| text.chars().count() as u64)
}

fn find_output(outcome: FindOutcome) -> ManualFindOutput {
    let summary = outcome.summary;
    let coverage = summary.signal_coverage;
    let signal_coverage = FindSummarySignalCoverage {
        heading: nonzero(coverage.heading),
        normalized: nonzero(coverage.normalized),
        loose: nonzero(coverage.loose),
        synonym: nonzero(coverage.synonym),
        exceptions: nonzero(coverage.exceptions),
        reference: nonzero(coverage.reference),
        // Present whenever semantic recall is on: 0 says it found nothing.
        semantic: coverage.semantic.map(|count| count as u64),
    };
    let file_bias_ratio = rounded(summary.file_bias_ratio, 100.0);
    ManualFindOutput {
        trace_id: outcome.trace_id,
        summary: FindSummary {
            intent: summary.intent,
            intent_inferred: flag(summary.intent_inferred),
            strict_terms: nonzero(summary.strict_terms),
            also_used: nonzero(summary.also_used),
            scanned_files: summary.scanned_files as u64,
            scanned_nodes: summary.scanned_nodes as u64,
            candidates: summary.candidates as u64,
            warnings: nonzero(summary.warnings),
            max_stage_applied: u64::from(summary.max_stage_applied),
            scope_expanded: flag(summary.scope_expanded),
            unscanned_sections_count: nonzero(summary.unscanned_sections_count),
            integrated_nodes: nonzero(summary.integrated_nodes),
            signal_coverage: (signal_coverage != FindSummarySignalCoverage::default())
                .then_some(signal_coverage),
            file_bias_ratio: (file_bias_ratio > 0.0).then_some(file_bias_ratio),
            conflict_count: nonzero(summary.conflict_count),
            gap_count: nonzero(summary.gap_count),
            sufficiency_score: rounded(summary.sufficiency_score, 100.0),
            integration_status: summary.integration_status,
            cutoff_reason: summary.cutoff_reason,
            semantic: summary.semantic.map(|report| FindSemantic {
                used: report.used,
                pending_sections: nonzero(report.pending_sections),
                warning: report.warning.map(str::to_owned),
            }),
        },
        next_actions: next_actions(outcome.next_actions),
    }
}

pub(crate) fn manual_hits(app: &App, input: ManualHitsInput) -> ToolResult<ManualHitsOutput> {
    let kind = input.kind.unwrap_or(HitKind::Candidates);
    let items = app.finder.hits(&input.trace_id, kind)?;
    // Every unscanned place of a trace was left out by the one cutoff that ended its
    // search: said once for the page.
    let cutoff_reason = match kind {
        HitKind::Unscanned => items.first().and_then(|item| item.cutoff),
        _ => None,
    };
    let page = page(items, input.offset, input.limit, DEFAULT_HITS_LIMIT);
    Ok(ManualHitsOutput {
        kind: (kind != HitKind::Candidates).then_some(kind),
        total: page.total,
        next_offset: page.next_offset,
        cutoff_reason,
        items: page
            .items
            .into_iter()
            .filter_map(|item| hit_item(kind, item))
            .collect(),
    })
}

const DEFAULT_HITS_LIMIT: u64 = 50;

/// One listed item in the shape of its kind: a place is a ref carrying its score and
/// evidence; a conflict names its place and the places it disagrees with (whose score,
/// evidence and headings the candidates and the other conflicts give); a gap says what is
/// missing.
fn hit_item(kind: HitKind, item: FoundItem) -> Option<HitItem> {
    Some(match kind {
        HitKind::Candidates | HitKind::IntegratedTop | HitKind::Unscanned => HitItem::Ref(Ref {
            score: item.score.map(|score| significant(f64::from(score), 2)),
            signals: (!item.signals.is_empty()).then(|| item.signals.join(" ")),
            ..reference(item.place.as_ref()?)
        }),
        HitKind::Conflicts => HitItem::ConflictHit(ConflictHit {
            ref_: reference(item.place.as_ref()?),
            conflict_with: item
                .conflict_with
                .iter()
                .map(|place| Ref {
                    title: None,
                    ..reference(place)
                })
                .collect(),
            hint: item.gap_hint.unwrap_or_default(),
        }),
        HitKind::Gaps => HitItem::GapHit(GapHit {
            ref_: item.place.as_ref().map(reference),
            hint: item.gap_hint.unwrap_or_default(),
        }),
    })
}

/// A ref ready for `manual_read` and `bridge_copy_section` as it is: the place and its
/// heading, without the defaults (`target` manual, line 1; a JSON file has no line).
fn reference(place: &Place) -> Ref {
    Ref {
        target: None,
        manual_id: Some(place.manual_id.to_string()),
        path: place.path.to_string(),
        start_line: place.start_line.filter(|&line| line > 1).map(u64::from),
        json_path: None,
        title: (!place.title.is_empty()).then(|| place.title.clone()),
        signals: None,
        score: None,
    }
}

/// Records a ref read with a `trace_id` as used after that search (U_q of the recall
/// proxy). A JSON file is keyed without a line, as its candidates are.
pub(crate) fn record_read(app: &App, trace_id: &str, manual_id: &str, path: &str, line: LineNo) {
    let is_json = path.to_ascii_lowercase().ends_with(".json");
    let key = ref_key(manual_id, path, (!is_json).then_some(line));
    app.adaptive.record_use(trace_id, key, clock::now());
}
