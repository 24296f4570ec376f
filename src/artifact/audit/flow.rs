//! The flow: edges lead somewhere, decisions branch, and every element can be reached.
//!
//! Starts are the elements of kind `start` and every element nothing leads into, so a
//! chart drawn without explicit start nodes still has its entry points. A chart that is
//! one loop has neither; it is read from its first element, as a person would. What stays
//! unreached is then a part cut off behind a cycle of its own. Notes stand outside the
//! flow and outside this walk.

use std::collections::HashSet;

use super::{Finding, FindingKind, FindingSeverity, Positions};
use crate::artifact::model::{Artifact, Element, Kind};

/// A decision needs at least this many distinct outcomes.
const DECISION_MIN_BRANCHES: usize = 2;

pub(crate) fn check(artifact: &Artifact, positions: &Positions) -> Vec<Finding> {
    let reached = reachable(artifact, positions);
    let mut findings = Vec::new();
    for (at, element) in artifact.elements.iter().enumerate() {
        let finding =
            |severity, hint| Finding::new(FindingKind::OrphanBranch, severity, &element.id, hint);
        let targets = distinct_targets(element);
        for target in targets.iter().filter(|t| !positions.contains_key(*t)) {
            findings.push(finding(
                FindingSeverity::Error,
                format!("edge to missing element {target}"),
            ));
        }
        if element.role() == Kind::Decision && targets.len() < DECISION_MIN_BRANCHES {
            findings.push(finding(
                FindingSeverity::Error,
                format!(
                    "decision with {} outgoing edge(s); each outcome needs its branch",
                    targets.len()
                ),
            ));
        }
        if !reached[at] {
            findings.push(finding(
                FindingSeverity::Warning,
                "not reachable from any start".to_owned(),
            ));
        }
    }
    findings
}

fn distinct_targets(element: &Element) -> Vec<&str> {
    let mut seen = HashSet::new();
    element
        .next
        .iter()
        .map(String::as_str)
        .filter(|target| seen.insert(*target))
        .collect()
}

/// Which elements (by position) a walk along `next` from the starts visits. Notes stand
/// outside the flow: never a start, never reported, their edges not followed.
fn reachable(artifact: &Artifact, positions: &Positions) -> Vec<bool> {
    let elements = &artifact.elements;
    let in_flow = |at: usize| elements[at].role() != Kind::Note;
    let successors: Vec<Vec<usize>> = (0..elements.len())
        .map(|at| match in_flow(at) {
            true => (elements[at].next.iter())
                .filter_map(|target| positions.get(target.as_str()).copied())
                .collect(),
            false => Vec::new(),
        })
        .collect();
    let mut has_incoming = vec![false; elements.len()];
    successors
        .iter()
        .flatten()
        .for_each(|&to| has_incoming[to] = true);
    let mut pending: Vec<usize> = (0..elements.len())
        .filter(|&at| in_flow(at) && (!has_incoming[at] || elements[at].role() == Kind::Start))
        .collect();
    if pending.is_empty() {
        pending.extend((0..elements.len()).find(|&at| in_flow(at)));
    }
    let mut reached: Vec<bool> = (0..elements.len()).map(|at| !in_flow(at)).collect();
    while let Some(at) = pending.pop() {
        if !std::mem::replace(&mut reached[at], true) {
            pending.extend(&successors[at]);
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::super::positions;
    use super::*;
    use crate::artifact::json::parse_json;

    fn orphan_branches(json: &str) -> Vec<(String, FindingSeverity, String)> {
        let artifact = parse_json(json).unwrap();
        check(&artifact, &positions(&artifact))
            .into_iter()
            .map(|f| (f.element_id, f.severity, f.hint))
            .collect()
    }

    #[test]
    fn a_well_formed_flow_has_no_orphans() {
        let found = orphan_branches(
            r#"{"elements": [
                {"id": "A", "text": "t", "next": ["B"]},
                {"id": "B", "text": "t", "kind": "decision", "next": ["C", "A"]},
                {"id": "C", "text": "t", "kind": "end"},
                {"id": "N", "text": "a note", "kind": "note"}
            ]}"#,
        );
        assert_eq!(found, []);
    }

    #[test]
    fn edges_to_nothing_and_one_way_decisions_are_errors() {
        let found = orphan_branches(
            r#"{"elements": [
                {"id": "A", "text": "t", "kind": "start", "next": ["B", "Z"]},
                {"id": "B", "text": "t", "kind": "decision", "next": ["C", "C"]},
                {"id": "C", "text": "t", "kind": "decision"}
            ]}"#,
        );
        assert_eq!(
            found,
            [
                (
                    "A".into(),
                    FindingSeverity::Error,
                    "edge to missing element Z".into()
                ),
                (
                    "B".into(),
                    FindingSeverity::Error,
                    "decision with 1 outgoing edge(s); each outcome needs its branch".into()
                ),
                (
                    "C".into(),
                    FindingSeverity::Error,
                    "decision with 0 outgoing edge(s); each outcome needs its branch".into()
                ),
            ]
        );
    }

    /// A flow A -> B beside a cycle X <-> Y, with X of the given kind.
    fn flow_beside_a_cycle(x_kind: &str) -> String {
        format!(
            r#"{{"elements": [
                {{"id": "A", "text": "t", "next": ["B"]}},
                {{"id": "B", "text": "t", "kind": "end"}},
                {{"id": "X", "text": "t", "kind": "{x_kind}", "next": ["Y"]}},
                {{"id": "Y", "text": "t", "next": ["X"]}}
            ]}}"#
        )
    }

    #[test]
    fn a_cycle_nothing_leads_into_is_unreachable_unless_it_holds_a_start() {
        let found = orphan_branches(&flow_beside_a_cycle("step"));
        let unreachable: Vec<(&str, FindingSeverity, &str)> = found
            .iter()
            .map(|(id, severity, hint)| (id.as_str(), *severity, hint.as_str()))
            .collect();
        let hint = "not reachable from any start";
        assert_eq!(
            unreachable,
            [
                ("X", FindingSeverity::Warning, hint),
                ("Y", FindingSeverity::Warning, hint)
            ]
        );
        assert_eq!(orphan_branches(&flow_beside_a_cycle("start")), []);
    }
}
