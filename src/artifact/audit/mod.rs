//! `artifact_audit`'s judgement: what is wrong with an artifact, element by element.
//!
//! | kind | severity | when |
//! |---|---|---|
//! | `no_source` | error | an element cites no lines |
//! | `source_missing` | error | a cited file does not exist |
//! | `source_out_of_range` | error | `start_line` after `end_line`, or `end_line` past the end of the file |
//! | `orphan_branch` | error | an edge to a missing id, or a decision with fewer than two distinct outgoing edges |
//! | `orphan_branch` | warning | an element no start reaches (starts: kind `start`, or no incoming edge) |
//! | `one_way_ref` | warning | a ref to a missing id, or A refs B while B does not ref A |
//!
//! Errors are what [`severe`] reacts to: each says either that the artifact is not grounded
//! (no or broken citations) or that a branch of the procedure is missing, and both are
//! what a full `vault_scan` of the source finds. Warnings are structure a person should
//! look at (a detached part, a see-also that only goes one way) but that reading more of
//! the source would not fix. No finding is `info` yet; the published vocabulary keeps the
//! word for findings that are neither.
//!
//! Hints are short and hold ids, paths and line numbers only, never element or source
//! text. Findings come in element order, and per element in the order of the table.

mod flow;
mod refs;
mod sources;

use std::collections::HashMap;

use super::model::Artifact;
use crate::text::lines::LineNo;

/// What a finding is about, and how bad it is: the schema's words (the table above).
pub(crate) use crate::contract::types::{FindingKind, FindingSeverity};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub kind: FindingKind,
    pub severity: FindingSeverity,
    pub element_id: String,
    pub hint: String,
}

impl Finding {
    fn new(
        kind: FindingKind,
        severity: FindingSeverity,
        element_id: &str,
        hint: String,
    ) -> Finding {
        Finding {
            kind,
            severity,
            element_id: element_id.to_owned(),
            hint,
        }
    }
}

/// Where each element id stands in the artifact (ids are unique once parsed).
type Positions<'a> = HashMap<&'a str, usize>;

fn positions(artifact: &Artifact) -> Positions<'_> {
    (0..)
        .zip(&artifact.elements)
        .map(|(at, element)| (element.id.as_str(), at))
        .collect()
}

/// Audits `artifact`. `line_count_of(path)` gives the number of lines of the vault file a
/// `source_lines.path` names, or `None` when it does not exist (or cannot be read: an
/// unreadable citation is as broken as a missing one). It is asked once per distinct path.
pub(crate) fn audit(
    artifact: &Artifact,
    line_count_of: &dyn Fn(&str) -> Option<LineNo>,
) -> Vec<Finding> {
    let positions = positions(artifact);
    let mut findings = sources::check(artifact, line_count_of);
    findings.extend(flow::check(artifact, &positions));
    findings.extend(refs::check(artifact, &positions));
    findings.sort_by_key(|finding| positions.get(finding.element_id.as_str()).copied());
    findings
}

/// True when a finding calls for a full `vault_scan` of the sources: any error.
pub(crate) fn severe(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|finding| finding.severity == FindingSeverity::Error)
}

#[cfg(test)]
mod tests;
