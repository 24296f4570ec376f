//! The two forms against each other, and the documented Markdown example as a fixture.

use super::*;
use crate::error::ErrorCode;

/// The Markdown example of the module documentation, which the README copies.
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

#[test]
fn both_forms_of_the_documented_chart_give_one_model() {
    let from_markdown = parse("artifacts/leave.md", &documented_example()).unwrap();
    let from_json = parse("artifacts/leave.JSON", DOCUMENTED_EXAMPLE_AS_JSON).unwrap();
    assert_eq!(from_markdown, from_json);
}

#[test]
fn other_extensions_are_not_artifacts() {
    let error = parse("artifacts/leave.txt", "{}").unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidParameter);
}
