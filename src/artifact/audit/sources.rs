//! Citations: every element cites lines, and every cited range lies inside an existing file.

use std::collections::HashMap;

use super::{Finding, FindingKind, FindingSeverity};
use crate::artifact::model::Artifact;
use crate::text::lines::LineNo;

pub(crate) fn check(
    artifact: &Artifact,
    line_count_of: &dyn Fn(&str) -> Option<LineNo>,
) -> Vec<Finding> {
    let mut line_counts: HashMap<&str, Option<LineNo>> = HashMap::new();
    let mut findings = Vec::new();
    for element in &artifact.elements {
        let error = |kind, hint| Finding::new(kind, FindingSeverity::Error, &element.id, hint);
        if element.source_lines.is_empty() {
            findings.push(error(
                FindingKind::NoSource,
                "no source_lines: cite the vault lines this element comes from".to_owned(),
            ));
        }
        for cited in &element.source_lines {
            let line_count = *line_counts
                .entry(cited.path.as_str())
                .or_insert_with(|| line_count_of(&cited.path));
            let range = format!("{}#L{}-L{}", cited.path, cited.start_line, cited.end_line);
            let problem = match line_count {
                None => Some((FindingKind::SourceMissing, format!("{range}: no such file"))),
                Some(_) if cited.start_line == 0 || cited.start_line > cited.end_line => Some((
                    FindingKind::SourceOutOfRange,
                    format!("{range}: start_line must be 1..=end_line"),
                )),
                Some(total) if cited.end_line > u64::from(total) => Some((
                    FindingKind::SourceOutOfRange,
                    format!("{range}: the file has {total} lines"),
                )),
                Some(_) => None,
            };
            findings.extend(problem.map(|(kind, hint)| error(kind, hint)));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::artifact::json::parse_json;

    fn kinds(findings: &[Finding]) -> Vec<(&str, FindingKind)> {
        findings
            .iter()
            .map(|f| (f.element_id.as_str(), f.kind))
            .collect()
    }

    #[test]
    fn missing_reversed_and_overlong_citations_are_errors() {
        let artifact = parse_json(
            r#"{"elements": [
                {"id": "bare", "text": "t"},
                {"id": "ok", "text": "t", "source_lines": [{"path": "d.md", "start_line": 1, "end_line": 10}]},
                {"id": "gone", "text": "t", "source_lines": [{"path": "gone.md", "start_line": 1, "end_line": 1}]},
                {"id": "reversed", "text": "t", "source_lines": [{"path": "d.md", "start_line": 5, "end_line": 4}]},
                {"id": "long", "text": "t", "source_lines": [{"path": "d.md", "start_line": 9, "end_line": 11}]}
            ]}"#,
        )
        .unwrap();
        let asked = RefCell::new(Vec::new());
        let line_count_of = |path: &str| {
            asked.borrow_mut().push(path.to_owned());
            (path == "d.md").then_some(10)
        };
        let findings = check(&artifact, &line_count_of);
        assert_eq!(
            kinds(&findings),
            [
                ("bare", FindingKind::NoSource),
                ("gone", FindingKind::SourceMissing),
                ("reversed", FindingKind::SourceOutOfRange),
                ("long", FindingKind::SourceOutOfRange),
            ]
        );
        assert!(findings
            .iter()
            .all(|f| f.severity == FindingSeverity::Error));
        assert_eq!(findings[3].hint, "d.md#L9-L11: the file has 10 lines");
        assert_eq!(*asked.borrow(), ["d.md", "gone.md"], "one look-up per path");
    }

    #[test]
    fn an_empty_file_has_no_line_to_cite() {
        let artifact = parse_json(
            r#"{"elements": [{"id": "A", "text": "t", "source_lines": [{"path": "e.md", "start_line": 1, "end_line": 1}]}]}"#,
        )
        .unwrap();
        let findings = check(&artifact, &|_| Some(0));
        assert_eq!(kinds(&findings), [("A", FindingKind::SourceOutOfRange)]);
    }
}
