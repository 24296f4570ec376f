//! The two forms against each other, and the documented Markdown example as a fixture.

use super::*;
use crate::error::ErrorCode;
use crate::text::lines::LineNo;

/// The Markdown example of the module documentation, which docs/artifacts.md copies.
fn documented_example() -> String {
    let source = include_str!("mod.rs");
    let lines: Vec<&str> = source
        .lines()
        .skip_while(|line| *line != "//! ````markdown")
        .skip(1)
        .take_while(|line| *line != "//! ````")
        .map(|line| {
            line.strip_prefix("//!")
                .unwrap_or(line)
                .strip_prefix(' ')
                .unwrap_or("")
        })
        .collect();
    assert!(lines.len() > 5, "the module doc holds the example");
    lines.join("\n") + "\n"
}

/// The same chart as the documented example, in the JSON form.
const DOCUMENTED_EXAMPLE_AS_JSON: &str = r#"{"elements": [
    {"id": "A", "text": "申請", "kind": "start", "next": ["B"],
     "source_lines": [{"path": "drafts/leave.md", "start_line": 40, "end_line": 44}]},
    {"id": "B", "text": "上長承認?", "kind": "decision", "next": ["C", "D"],
     "source_lines": [{"path": "drafts/leave.md", "start_line": 41, "end_line": 41}]},
    {"id": "C", "text": "経理へ回付", "kind": "step", "refs": ["D"],
     "source_lines": [{"path": "drafts/leave.md", "start_line": 45, "end_line": 47}]},
    {"id": "D", "text": "差戻し", "kind": "end", "refs": ["C"],
     "source_lines": [{"path": "drafts/leave.md", "start_line": 48, "end_line": 48}]}
]}"#;

/// drafts/leave.md has 60 lines; nothing else exists.
fn leave_draft(path: &str) -> Option<LineNo> {
    (path == "drafts/leave.md").then_some(60)
}

#[test]
fn both_forms_of_the_documented_chart_give_one_model() {
    let from_markdown = parse("artifacts/leave.md", &documented_example()).unwrap();
    let from_json = parse("artifacts/leave.JSON", DOCUMENTED_EXAMPLE_AS_JSON).unwrap();
    assert_eq!(from_markdown, from_json);
}

#[test]
fn the_documented_chart_audits_clean_and_covers_its_lines() {
    let artifact = parse("artifacts/leave.md", &documented_example()).unwrap();
    let findings = audit(&artifact, &leave_draft);
    assert_eq!(findings, []);
    assert!(!severe(&findings));
    let covered = coverage(
        &LineProfile::plain(60),
        artifact.cited_ranges("drafts/leave.md"),
    );
    assert_eq!(
        covered.covered_ranges,
        [LineRange {
            start_line: 40,
            end_line: 48
        }]
    );
    assert_eq!(covered.coverage_ratio, 9.0 / 60.0);
    let first_gap = LineRange {
        start_line: 1,
        end_line: 39,
    };
    assert_eq!(
        next_step(&covered, None, 0.9, 0.02),
        NextStep::Scan(first_gap)
    );
}

#[test]
fn both_forms_of_a_flawed_chart_get_the_same_findings() {
    let markdown = documented_example()
        .replace("  %% src C: drafts/leave.md#L45-L47\n", "")
        .replace("#L48", "#L48-L61")
        .replace("B -->|no| D([差戻し])", "D([差戻し])")
        .replace("  %% ref D: C\n", "");
    let json = DOCUMENTED_EXAMPLE_AS_JSON
        .replace(
            r#"
     "source_lines": [{"path": "drafts/leave.md", "start_line": 45, "end_line": 47}]"#,
            "\n     \"source_lines\": []",
        )
        .replace(r#""end_line": 48"#, r#""end_line": 61"#)
        .replace(r#""next": ["C", "D"]"#, r#""next": ["C"]"#)
        .replace(r#", "refs": ["C"]"#, "")
        .replace(r#""kind": "end""#, r#""kind": "start""#);
    let from_markdown = audit(&parse("a.md", &markdown).unwrap(), &leave_draft);
    let from_json = audit(&parse("a.json", &json).unwrap(), &leave_draft);
    assert_eq!(from_markdown, from_json);
    let found: Vec<(&str, &str, &str)> = from_json
        .iter()
        .map(|f| (f.element_id.as_str(), f.kind.as_str(), f.severity.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("B", "orphan_branch", "error"),
            ("C", "no_source", "error"),
            ("C", "one_way_ref", "warning"),
            ("D", "source_out_of_range", "error"),
        ]
    );
    assert!(severe(&from_json));
}

#[test]
fn other_extensions_are_not_artifacts() {
    let error = parse("artifacts/leave.txt", "{}").unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidParameter);
}
