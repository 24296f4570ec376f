use super::*;
use crate::artifact::json::parse_json;

#[test]
fn findings_come_in_element_order_then_table_order() {
    let artifact = parse_json(
        r#"{"elements": [
            {"id": "A", "text": "t", "kind": "decision", "next": ["B"], "refs": ["B"]},
            {"id": "B", "text": "t", "source_lines": [{"path": "gone.md", "start_line": 1, "end_line": 1}]}
        ]}"#,
    )
    .unwrap();
    let findings = audit(&artifact, &|_| None);
    let found: Vec<(&str, FindingKind)> = findings
        .iter()
        .map(|f| (f.element_id.as_str(), f.kind))
        .collect();
    assert_eq!(
        found,
        [
            ("A", FindingKind::NoSource),
            ("A", FindingKind::OrphanBranch),
            ("A", FindingKind::OneWayRef),
            ("B", FindingKind::SourceMissing),
        ]
    );
}

fn finding(severity: FindingSeverity) -> Finding {
    Finding::new(FindingKind::OneWayRef, severity, "A", String::new())
}

#[test]
fn only_errors_are_severe() {
    assert!(!severe(&[]));
    assert!(!severe(&[finding(FindingSeverity::Warning)]));
    assert!(severe(&[
        finding(FindingSeverity::Warning),
        finding(FindingSeverity::Error)
    ]));
}
