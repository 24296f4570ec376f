//! Cross references: each points at an element that points back.

use std::collections::HashSet;

use super::{Finding, FindingKind, FindingSeverity, Positions};
use crate::artifact::model::Artifact;

pub(crate) fn check(artifact: &Artifact, positions: &Positions) -> Vec<Finding> {
    let mut findings = Vec::new();
    for element in &artifact.elements {
        let mut seen = HashSet::new();
        for target in element.refs.iter().filter(|t| seen.insert(t.as_str())) {
            let hint = match positions.get(target.as_str()) {
                None => format!("ref to missing element {target}"),
                Some(&at) if !artifact.elements[at].refs.contains(&element.id) => {
                    format!("{target} does not ref back to {}", element.id)
                }
                Some(_) => continue,
            };
            findings.push(Finding::new(
                FindingKind::OneWayRef,
                FindingSeverity::Warning,
                &element.id,
                hint,
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::super::positions;
    use super::*;
    use crate::artifact::json::parse_json;

    #[test]
    fn missing_and_unreturned_refs_are_warnings_once_each() {
        let artifact = parse_json(
            r#"{"elements": [
                {"id": "A", "text": "t", "refs": ["B", "C", "C", "Z", "A"]},
                {"id": "B", "text": "t", "refs": ["A"]},
                {"id": "C", "text": "t"}
            ]}"#,
        )
        .unwrap();
        let found: Vec<(String, FindingSeverity, String)> = check(&artifact, &positions(&artifact))
            .into_iter()
            .map(|f| (f.element_id, f.severity, f.hint))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "A".into(),
                    FindingSeverity::Warning,
                    "C does not ref back to A".into()
                ),
                (
                    "A".into(),
                    FindingSeverity::Warning,
                    "ref to missing element Z".into()
                ),
            ]
        );
    }
}
