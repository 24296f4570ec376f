//! `manual_find` and `manual_hits` on `App`: contract types to the search engine
//! (`manual::find`) and back, defaults and paging. The trait methods in `manual.rs` call
//! these.

use std::collections::HashSet;

use super::{next_actions, page, rounded, trim_actions, wire_enum};
use crate::adaptive::{FindFacts, FindSummary as AdaptiveSummary, Fingerprint, RefKey};
use crate::app::App;
use crate::artifact::est_tokens;
use crate::call::CallContext;
use crate::clock;
use crate::contract::types::*;
use crate::error::ToolResult;
use crate::manual::find::query::Intent as QueryIntent;
use crate::manual::find::trace::Place;
use crate::manual::find::{
    FindOutcome, FindRequest, HitItem as FoundItem, HitKind as FoundKind, Thresholds,
};

/// Characters a `manual_find` answer may take: about 300 tokens, whatever the query.
pub const MAX_FIND_RESPONSE_CHARS: usize = 1200;

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
        intent: input
            .intent
            .map(|intent| QueryIntent::parse(&intent.to_string()).expect("same vocabulary")),
        max_stage: input
            .max_stage
            .map(|stage| stage.min(u64::from(u8::MAX)) as u8),
        only_unscanned_from: input.only_unscanned_from_trace_id,
        also: input.also.unwrap_or_default(),
        max_candidates: budget.max_candidates.map(|n| n as usize),
        time_ms: budget.time_ms,
        thresholds: Some(Thresholds {
            candidate_low: tuned.candidate_low as usize,
            file_bias: tuned.file_bias as f32,
        }),
        fail_stage: None,
    };
    let outcome = app.with_manuals(|index| app.finder.find(index, &request, call))?;
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
        .hits(trace_id, FoundKind::Candidates)?
        .into_iter()
        .filter_map(|item| item.place)
        .map(|place| ref_key(&place.manual_id, &place.path, place.start_line))
        .collect())
}

fn ref_key(manual_id: &str, path: &str, start_line: Option<u32>) -> RefKey {
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
    ManualFindOutput {
        trace_id: outcome.trace_id,
        summary: FindSummary {
            intent: wire_enum(summary.intent.as_str()),
            intent_inferred: summary.intent_inferred,
            strict_terms: summary.strict_terms as u64,
            also_used: summary.also_used as u64,
            scanned_files: summary.scanned_files as u64,
            scanned_nodes: summary.scanned_nodes as u64,
            candidates: summary.candidates as u64,
            warnings: summary.warnings as u64,
            max_stage_applied: u64::from(summary.max_stage_applied),
            scope_expanded: summary.scope_expanded,
            unscanned_sections_count: summary.unscanned_sections_count as u64,
            integrated_nodes: summary.integrated_nodes as u64,
            signal_coverage: FindSummarySignalCoverage {
                heading: coverage.heading as u64,
                normalized: coverage.normalized as u64,
                loose: coverage.loose as u64,
                synonym: coverage.synonym as u64,
                exceptions: coverage.exceptions as u64,
                reference: coverage.reference as u64,
                semantic: coverage.semantic.map(|count| count as u64),
            },
            file_bias_ratio: rounded(summary.file_bias_ratio, 100.0),
            conflict_count: summary.conflict_count as u64,
            gap_count: summary.gap_count as u64,
            sufficiency_score: rounded(summary.sufficiency_score, 100.0),
            integration_status: wire_enum(summary.integration_status.as_str()),
            cutoff_reason: summary
                .cutoff_reason
                .map(|cutoff| wire_enum(cutoff.as_str())),
            semantic: summary.semantic.map(|report| FindSemantic {
                used: report.used,
                pending_sections: report.pending_sections as u64,
                warning: report.warning.map(str::to_owned),
            }),
        },
        next_actions: next_actions(outcome.next_actions),
    }
}

pub(crate) fn manual_hits(app: &App, input: ManualHitsInput) -> ToolResult<ManualHitsOutput> {
    let kind = match input.kind.unwrap_or(HitKind::Candidates) {
        HitKind::Candidates => FoundKind::Candidates,
        HitKind::Unscanned => FoundKind::Unscanned,
        HitKind::Conflicts => FoundKind::Conflicts,
        HitKind::Gaps => FoundKind::Gaps,
        HitKind::IntegratedTop => FoundKind::IntegratedTop,
    };
    let items = app.finder.hits(&input.trace_id, kind)?;
    let limit = input.limit.unwrap_or(DEFAULT_HITS_LIMIT);
    let page = page(items, input.offset, Some(limit), DEFAULT_HITS_LIMIT);
    Ok(ManualHitsOutput {
        trace_id: input.trace_id,
        kind: wire_enum(&input.kind.unwrap_or(HitKind::Candidates).to_string()),
        offset: input.offset.unwrap_or(0),
        limit,
        total: page.total,
        next_offset: page.next_offset,
        items: page.items.into_iter().map(hit_item).collect(),
    })
}

const DEFAULT_HITS_LIMIT: u64 = 50;

fn hit_item(item: FoundItem) -> HitItem {
    HitItem {
        path: item.place.as_ref().map(|place| place.path.to_string()),
        start_line: item
            .place
            .as_ref()
            .and_then(|place| place.start_line)
            .map(u64::from),
        ref_: item.place.as_ref().map(reference),
        reason: Some(wire_enum(item.reason)),
        signals: item.signals.into_iter().map(str::to_owned).collect(),
        score: item.score.map(|score| rounded(score, 1000.0)),
        conflict_with: item.conflict_with.iter().map(reference).collect(),
        gap_hint: item.gap_hint,
    }
}

/// A ref ready for `manual_read` (and later `bridge_copy_section`).
fn reference(place: &Place) -> Ref {
    Ref {
        target: RefTarget::Manual,
        manual_id: Some(place.manual_id.to_string()),
        path: place.path.to_string(),
        start_line: place.start_line.map(u64::from),
        json_path: None,
        title: (!place.title.is_empty()).then(|| place.title.clone()),
        signals: Vec::new(),
    }
}

/// Records a ref read with a `trace_id` as used after that search (U_q of the recall
/// proxy). A JSON file is keyed without a line, as its candidates are.
pub(crate) fn record_read(app: &App, trace_id: &str, manual_id: &str, path: &str, line: u32) {
    let is_json = path.to_ascii_lowercase().ends_with(".json");
    let key = ref_key(manual_id, path, (!is_json).then_some(line));
    app.adaptive.record_use(trace_id, key, clock::now());
}
