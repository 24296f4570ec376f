//! The items `manual_hits` pages through, read from a trace: ranked candidates (and their
//! integrated top), conflicts with the refs they disagree with, gaps with a hint, and the
//! sections a budget left unscanned with its reason.

use std::sync::Arc;

use super::trace::{ConflictItem, GapItem, Hit, Place, Trace, Unscanned};
use super::{HitItem, HitKind};
use crate::text::lines::LineNo;

/// Every item of `kind` in `trace`, in order.
pub(crate) fn items(trace: &Trace, kind: HitKind) -> Vec<HitItem> {
    match kind {
        HitKind::Candidates => candidate_items(&trace.candidates).collect(),
        HitKind::IntegratedTop => candidate_items(&trace.candidates[..trace.top]).collect(),
        HitKind::Conflicts => trace.conflicts.iter().map(conflict_item).collect(),
        HitKind::Gaps => trace.gaps.iter().map(gap_item).collect(),
        HitKind::Unscanned => trace
            .unscanned_places()
            .map(|(file, line)| unscanned_item(file, line))
            .collect(),
    }
}

fn candidate_items(hits: &[Hit]) -> impl Iterator<Item = HitItem> + '_ {
    hits.iter().map(|hit| HitItem {
        place: Some(hit.place.clone()),
        reason: "ranked_by_integration",
        cutoff: None,
        signals: hit.signals.names(),
        score: Some(hit.score),
        conflict_with: Vec::new(),
        gap_hint: None,
    })
}

/// A conflict: its evidence, and what disagrees in the hint (said once there, not again
/// as a signal).
fn conflict_item(item: &ConflictItem) -> HitItem {
    HitItem {
        place: Some(item.place.clone()),
        reason: "conflict",
        cutoff: None,
        signals: item.signals.names(),
        score: Some(item.score),
        conflict_with: item.with.clone(),
        gap_hint: Some(format!("disagrees on {}", item.kind)),
    }
}

fn gap_item(item: &GapItem) -> HitItem {
    HitItem {
        place: item.place.clone(),
        reason: "gap",
        cutoff: None,
        signals: Vec::new(),
        score: None,
        conflict_with: Vec::new(),
        gap_hint: Some(item.hint.clone()),
    }
}

fn unscanned_item(file: &Unscanned, line: LineNo) -> HitItem {
    HitItem {
        place: Some(Place {
            manual_id: Arc::clone(&file.manual_id),
            path: Arc::clone(&file.path),
            start_line: (!file.json).then_some(line),
            title: String::new(),
        }),
        reason: file.reason.as_str(),
        cutoff: Some(file.reason),
        signals: Vec::new(),
        score: None,
        conflict_with: Vec::new(),
        gap_hint: None,
    }
}
