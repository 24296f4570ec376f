//! Source and reference annotations of the Markdown form: Mermaid comments, so the chart
//! still renders unchanged.
//!
//! ```text
//! %% src B: drafts/leave.md#L41-L43     B is grounded in lines 41..=43 of that vault file
//! %% src B: drafts/leave.md#L50         one more range for B (a single line)
//! %% ref C: D, E                        C refers to D and E
//! ```
//!
//! One range per `src` line keeps paths free to hold any character but `#`; a node with
//! several ranges gets several lines. Any other `%%` comment is left alone.

use super::model::SourceLines;

const SOURCE_SYNTAX: &str = "`%% src ID: path#Lstart-Lend` (or `#Lline`)";
const REF_SYNTAX: &str = "`%% ref ID: OTHER_ID, ...`";

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Annotation {
    Source {
        element_id: String,
        lines: SourceLines,
    },
    Refs {
        element_id: String,
        targets: Vec<String>,
    },
}

/// `None` when `line` is not an annotation (not a comment, or another comment); otherwise
/// the annotation or what is wrong with it.
pub(crate) fn parse_annotation(line: &str) -> Option<Result<Annotation, String>> {
    let comment = line.trim().strip_prefix("%%")?.trim();
    let (keyword, rest) = comment.split_once(char::is_whitespace)?;
    let parse = match keyword {
        "src" => parse_source,
        "ref" => parse_refs,
        _ => return None,
    };
    Some(parse(rest))
}

/// Splits `ID: value`; ids hold no whitespace, `:` or `,` in Mermaid.
fn split_subject<'a>(rest: &'a str, syntax: &str) -> Result<(String, &'a str), String> {
    let (id, value) = rest
        .split_once(':')
        .ok_or_else(|| format!("expected {syntax}"))?;
    let id = id.trim();
    if id.is_empty() || id.contains(|c: char| c.is_whitespace() || c == ',') {
        return Err(format!("expected one node id before `:` in {syntax}"));
    }
    Ok((id.to_owned(), value.trim()))
}

fn parse_source(rest: &str) -> Result<Annotation, String> {
    let (element_id, value) = split_subject(rest, SOURCE_SYNTAX)?;
    let (path, fragment) = value
        .rsplit_once('#')
        .ok_or_else(|| format!("expected {SOURCE_SYNTAX}"))?;
    let path = path.trim();
    let (start_line, end_line) = parse_line_fragment(fragment)
        .ok_or_else(|| format!("`#{fragment}` is not a line range; expected {SOURCE_SYNTAX}"))?;
    if path.is_empty() {
        return Err(format!("no path; expected {SOURCE_SYNTAX}"));
    }
    Ok(Annotation::Source {
        element_id,
        lines: SourceLines {
            path: path.to_owned(),
            start_line,
            end_line,
        },
    })
}

/// `L40-L44`, `L40-44` or `L41`; lines are 1-based. A reversed range is accepted here and
/// reported by the audit, as in the JSON form.
fn parse_line_fragment(fragment: &str) -> Option<(u64, u64)> {
    let line_number = |text: &str| text.trim().parse::<u64>().ok().filter(|&n| n >= 1);
    let range = fragment.trim().strip_prefix('L')?;
    match range.split_once('-') {
        Some((start, end)) => {
            let end = end.trim_start().strip_prefix('L').unwrap_or(end);
            Some((line_number(start)?, line_number(end)?))
        }
        None => {
            let line = line_number(range)?;
            Some((line, line))
        }
    }
}

fn parse_refs(rest: &str) -> Result<Annotation, String> {
    let (element_id, value) = split_subject(rest, REF_SYNTAX)?;
    let targets: Vec<String> = value.split(',').map(|id| id.trim().to_owned()).collect();
    if targets
        .iter()
        .any(|id| id.is_empty() || id.contains(char::is_whitespace))
    {
        return Err(format!(
            "expected node ids separated by commas in {REF_SYNTAX}"
        ));
    }
    Ok(Annotation::Refs {
        element_id,
        targets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(id: &str, path: &str, start_line: u64, end_line: u64) -> Annotation {
        Annotation::Source {
            element_id: id.to_owned(),
            lines: SourceLines {
                path: path.to_owned(),
                start_line,
                end_line,
            },
        }
    }

    #[test]
    fn sources_in_every_accepted_spelling() {
        for (line, expected) in [
            (
                "%% src A: drafts/leave.md#L40-L44",
                source("A", "drafts/leave.md", 40, 44),
            ),
            (
                "  %%src B : drafts/leave.md#L41",
                source("B", "drafts/leave.md", 41, 41),
            ),
            (
                "%% src C: drafts/休暇 規程.md#L7-9",
                source("C", "drafts/休暇 規程.md", 7, 9),
            ),
            ("%% src D: a#b.md#L9-L3", source("D", "a#b.md", 9, 3)),
        ] {
            assert_eq!(parse_annotation(line), Some(Ok(expected)), "{line}");
        }
    }

    #[test]
    fn refs_list_targets() {
        let expected = Annotation::Refs {
            element_id: "C".into(),
            targets: vec!["D".into(), "E".into()],
        };
        assert_eq!(parse_annotation("%% ref C: D, E"), Some(Ok(expected)));
    }

    #[test]
    fn other_lines_are_not_annotations() {
        for line in [
            "A --> B",
            "%% just a comment",
            "%%{init: {}}%%",
            "%% source A: x#L1",
        ] {
            assert_eq!(parse_annotation(line), None, "{line}");
        }
    }

    #[test]
    fn malformed_annotations_are_errors() {
        for line in [
            "%% src A drafts/leave.md#L4",
            "%% src A, B: drafts/leave.md#L4",
            "%% src A: drafts/leave.md",
            "%% src A: drafts/leave.md#L0-L4",
            "%% src A: drafts/leave.md#40-44",
            "%% src A: #L4",
            "%% ref C: D,, E",
            "%% ref C:",
        ] {
            assert!(matches!(parse_annotation(line), Some(Err(_))), "{line}");
        }
    }
}
