//! The Markdown form: the one ```` ```mermaid ```` flowchart block of a Markdown file,
//! with its `%% src` / `%% ref` annotations, read into the artifact model.
//!
//! comrak finds the fenced blocks, so a fence inside a list or a quote counts and a fence
//! shown as an example inside another code block does not. Exactly one flowchart block is
//! accepted: with two, an audit could not tell which chart the annotations belong to.
//! Every annotation must name a node of the chart; a typo would otherwise drop a citation
//! without a trace.

use std::collections::HashMap;

use comrak::nodes::NodeValue;
use comrak::{parse_document, Arena, Options};
use serde_json::json;

use super::annotation::{parse_annotation, Annotation};
use super::invalid;
use super::mermaid::{declares_flowchart, parse_chart, ChartNode, Shape};
use super::model::{Artifact, Element, Kind};
use crate::error::ToolResult;
use crate::text::lines::LineNo;

/// A fenced block's content lines with their line numbers in the Markdown file.
type NumberedLines = Vec<(LineNo, String)>;

/// Parses the text of a `.md` artifact.
pub(crate) fn parse_markdown(text: &str) -> ToolResult<Artifact> {
    let owned = flowchart_block(text)?;
    let lines = borrowed(&owned);
    let chart = parse_chart(&lines)?;
    let mut elements: Vec<Element> = chart.nodes.into_iter().map(element_of).collect();
    annotate(&mut elements, &lines)?;
    Ok(Artifact {
        elements,
        source_manual_ids: Vec::new(),
        title: None,
    })
}

fn flowchart_block(text: &str) -> ToolResult<NumberedLines> {
    let arena = Arena::new();
    let mut options = Options::default();
    options.extension.front_matter_delimiter = Some("---".to_owned());
    let root = parse_document(&arena, text, &options);
    let mut mermaid_blocks = 0;
    let mut flowcharts: Vec<(LineNo, NumberedLines)> = Vec::new();
    for node in root.descendants() {
        let data = node.data.borrow();
        let NodeValue::CodeBlock(block) = &data.value else {
            continue;
        };
        if !block.fenced || block.info.split_whitespace().next() != Some("mermaid") {
            continue;
        }
        mermaid_blocks += 1;
        let fence_line = data.sourcepos.start.line as LineNo;
        let lines: NumberedLines = (fence_line + 1..)
            .zip(block.literal.lines().map(str::to_owned))
            .collect();
        if declares_flowchart(&borrowed(&lines)) {
            flowcharts.push((fence_line, lines));
        }
    }
    match flowcharts.len() {
        1 => Ok(flowcharts.remove(0).1),
        0 => Err(invalid::in_document(
            "no ```mermaid block holding a `flowchart` (or `graph`)",
            json!({ "mermaid_blocks": mermaid_blocks }),
        )),
        _ => {
            let fence_lines: Vec<LineNo> = flowcharts.iter().map(|(fence, _)| *fence).collect();
            Err(invalid::in_document(
                "more than one mermaid flowchart; an artifact holds one chart",
                json!({ "flowchart_lines": fence_lines }),
            ))
        }
    }
}

fn borrowed(lines: &[(LineNo, String)]) -> Vec<(LineNo, &str)> {
    lines.iter().map(|(n, l)| (*n, l.as_str())).collect()
}

/// A stadium or circle that links lead into and none leaves ends the flow; any other one
/// starts it (a "resubmit" link back to the first node does not make it an end).
fn element_of(node: ChartNode) -> Element {
    let (shape, text) = node.label.unwrap_or_else(|| (Shape::Step, node.id.clone()));
    let kind = match shape {
        Shape::Terminal if node.has_incoming && node.next.is_empty() => Kind::End,
        Shape::Terminal => Kind::Start,
        Shape::Decision => Kind::Decision,
        Shape::Step => Kind::Step,
    };
    Element {
        id: node.id,
        text,
        kind: Some(kind),
        source_lines: Vec::new(),
        next: node.next,
        refs: Vec::new(),
    }
}

fn annotate(elements: &mut [Element], lines: &[(LineNo, &str)]) -> ToolResult<()> {
    let position: HashMap<String, usize> = (0..)
        .zip(elements.iter())
        .map(|(at, element)| (element.id.clone(), at))
        .collect();
    for &(number, text) in lines {
        let Some(parsed) = parse_annotation(text) else {
            continue;
        };
        let annotation = parsed.map_err(|problem| invalid::at_line(number, problem))?;
        let known = |id: &str| {
            position
                .get(id)
                .copied()
                .ok_or_else(|| invalid::at_line(number, format!("no node `{id}` in the flowchart")))
        };
        match annotation {
            Annotation::Source { element_id, lines } => {
                elements[known(&element_id)?].source_lines.push(lines);
            }
            Annotation::Refs {
                element_id,
                targets,
            } => {
                let at = known(&element_id)?;
                for target in &targets {
                    known(target)?;
                }
                elements[at].refs.extend(targets);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    const LEAVE: &str = "---\ntitle: 休暇申請\n---\n# 休暇申請フロー\n\n```mermaid\nflowchart TD\n  A([申請]) --> B{上長承認?}\n  B -->|yes| C[経理へ回付]\n  B -->|no| D([差戻し])\n  %% src A: drafts/leave.md#L40-L44\n  %% src B: drafts/leave.md#L41\n  %% src B: drafts/leave.md#L50-L51\n  %% ref C: D\n```\n";

    #[test]
    fn the_leave_chart_reads_into_elements() {
        let artifact = parse_markdown(LEAVE).unwrap();
        let summary: Vec<(&str, &str, Kind, usize, Vec<String>)> = artifact
            .elements
            .iter()
            .map(|e| {
                (
                    e.id.as_str(),
                    e.text.as_str(),
                    e.role(),
                    e.source_lines.len(),
                    e.next.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("A", "申請", Kind::Start, 1, vec!["B".to_owned()]),
                (
                    "B",
                    "上長承認?",
                    Kind::Decision,
                    2,
                    vec!["C".into(), "D".into()]
                ),
                ("C", "経理へ回付", Kind::Step, 0, vec![]),
                ("D", "差戻し", Kind::End, 0, vec![]),
            ]
        );
        assert_eq!(artifact.elements[1].source_lines[0].start_line, 41);
        assert_eq!(artifact.elements[1].source_lines[0].end_line, 41);
        assert_eq!(artifact.elements[2].refs, ["D"]);
    }

    #[test]
    fn a_terminal_that_a_loop_returns_to_is_still_the_start() {
        let text = "```mermaid\nflowchart TD\nA([申請]) --> B{ok?}\nB -->|no| A\nB -->|yes| C([完了])\n```\n";
        let kinds: Vec<Kind> = parse_markdown(text)
            .unwrap()
            .elements
            .iter()
            .map(Element::role)
            .collect();
        assert_eq!(kinds, [Kind::Start, Kind::Decision, Kind::End]);
    }

    fn error_of(text: &str) -> serde_json::Value {
        let error = parse_markdown(text).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        error.details.unwrap()
    }

    #[test]
    fn annotation_errors_name_the_markdown_line() {
        let unknown_source =
            LEAVE.replace("src B: drafts/leave.md#L41", "src Z: drafts/leave.md#L41");
        assert_eq!(error_of(&unknown_source)["line"], 12);
        let unknown_ref = LEAVE.replace("ref C: D", "ref C: D, Q");
        assert_eq!(error_of(&unknown_ref)["line"], 14);
        let malformed = LEAVE.replace("#L41\n", "#41\n");
        assert_eq!(error_of(&malformed)["line"], 12);
        let chart_error = LEAVE.replace("B -->|yes| C", "B -> C");
        assert_eq!(error_of(&chart_error)["line"], 9);
    }

    #[test]
    fn the_document_needs_exactly_one_flowchart() {
        assert_eq!(error_of("# no chart\n")["mermaid_blocks"], 0);
        let sequence = "```mermaid\nsequenceDiagram\nA->>B: hi\n```\n";
        assert_eq!(error_of(sequence)["mermaid_blocks"], 1);
        let shown = "````markdown\n```mermaid\nflowchart TD\nA-->B\n```\n````\n";
        assert_eq!(error_of(shown)["mermaid_blocks"], 0);
        let two = "```mermaid\ngraph TD\nA-->B\n```\n\n```mermaid\nflowchart LR\nC-->D\n```\n";
        assert_eq!(error_of(two)["flowchart_lines"], serde_json::json!([1, 6]));
    }

    #[test]
    fn a_fence_inside_a_list_keeps_file_line_numbers() {
        let text =
            "- chart:\n\n  ```mermaid\n  flowchart TD\n  A --> B\n  %% src Q: x.md#L1\n  ```\n";
        assert_eq!(error_of(text)["line"], 6);
    }
}
