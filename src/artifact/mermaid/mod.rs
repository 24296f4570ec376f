//! The part of Mermaid's `flowchart` / `graph` syntax an artifact needs: nodes with their
//! labels and shapes, and the links between them.
//!
//! Statements are read per line (and per `;`); `A --> B --> C` and `A & B --> C` make one
//! edge per pair. Styling and structure statements (`classDef`, `class`, `style`,
//! `linkStyle`, `click`, `subgraph`, `end`, `direction`) carry no flow and are skipped,
//! as are `%%` comments and a `---` front matter block. What is not understood is an
//! error naming the line rather than a silently smaller chart: an audit of half a chart
//! would report a clean bill of health it has not earned.

mod cursor;
mod link;
mod node;

use std::collections::HashMap;

pub(crate) use node::Shape;

use cursor::Cursor;
use link::{parse_link, Flow};
use node::{parse_node, NodeSyntax};

use super::invalid;
use crate::error::ToolResult;
use crate::text::lines::LineNo;

const HEADER_KEYWORDS: [&str; 2] = ["flowchart", "graph"];
const DIRECTIONS: [&str; 5] = ["TB", "TD", "BT", "RL", "LR"];
const SKIPPED_KEYWORDS: [&str; 8] = [
    "classDef",
    "class",
    "style",
    "linkStyle",
    "click",
    "subgraph",
    "end",
    "direction",
];

/// A node with everything the chart says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChartNode {
    pub id: String,
    /// The last label written for the node (Mermaid keeps the last); `None` if only bare.
    pub label: Option<(Shape, String)>,
    /// Targets of its outgoing edges, in writing order, without repeats.
    pub next: Vec<String>,
    pub has_incoming: bool,
}

/// Nodes in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Chart {
    pub nodes: Vec<ChartNode>,
    index: HashMap<String, usize>,
}

impl Chart {
    fn declare(&mut self, syntax: NodeSyntax) -> usize {
        let at = *self.index.entry(syntax.id.to_owned()).or_insert_with(|| {
            self.nodes.push(ChartNode {
                id: syntax.id.to_owned(),
                label: None,
                next: Vec::new(),
                has_incoming: false,
            });
            self.nodes.len() - 1
        });
        if syntax.label.is_some() {
            self.nodes[at].label = syntax.label;
        }
        at
    }

    fn connect(&mut self, from: usize, to: usize) {
        let target = self.nodes[to].id.clone();
        if !self.nodes[from].next.contains(&target) {
            self.nodes[from].next.push(target);
        }
        self.nodes[to].has_incoming = true;
    }
}

/// The lines that hold statements: without blank lines, `%%` comments and front matter.
fn statement_lines<'a>(
    lines: &'a [(LineNo, &'a str)],
) -> impl Iterator<Item = (LineNo, &'a str)> + 'a {
    let mut in_front_matter = false;
    let mut seen_statement = false;
    lines.iter().filter_map(move |&(number, text)| {
        let trimmed = text.trim();
        if trimmed == "---" && (in_front_matter || !seen_statement) {
            in_front_matter = !in_front_matter;
            return None;
        }
        if in_front_matter || trimmed.is_empty() || trimmed.starts_with("%%") {
            return None;
        }
        seen_statement = true;
        Some((number, trimmed))
    })
}

fn first_word(text: &str) -> &str {
    let end = text
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(text.len());
    &text[..end]
}

/// True when the block's first statement is a `flowchart` or `graph` header.
pub(crate) fn declares_flowchart(lines: &[(LineNo, &str)]) -> bool {
    statement_lines(lines)
        .next()
        .is_some_and(|(_, header)| HEADER_KEYWORDS.contains(&first_word(header)))
}

/// Parses the lines of a block for which [`declares_flowchart`] holds; each line comes
/// with its line number in the Markdown file, for errors.
pub(crate) fn parse_chart(lines: &[(LineNo, &str)]) -> ToolResult<Chart> {
    let mut chart = Chart::default();
    let mut statements = statement_lines(lines);
    if let Some((number, header)) = statements.next() {
        let after_header = skip_header(header)
            .ok_or_else(|| invalid::at_line(number, "expected `flowchart TD` or `graph LR`"))?;
        parse_statements(after_header, &mut chart)
            .map_err(|problem| invalid::at_line(number, problem))?;
    }
    for (number, text) in statements {
        parse_statements(text, &mut chart).map_err(|problem| invalid::at_line(number, problem))?;
    }
    Ok(chart)
}

/// What follows `flowchart [direction]` on the header line: nothing, or `; statements`.
fn skip_header(header: &str) -> Option<&str> {
    let rest = header[first_word(header).len()..].trim_start();
    let rest = match DIRECTIONS.iter().find(|d| first_word(rest) == **d) {
        Some(direction) => rest[direction.len()..].trim_start(),
        None => rest,
    };
    (rest.is_empty() || rest.starts_with(';')).then_some(rest)
}

fn parse_statements(text: &str, chart: &mut Chart) -> Result<(), String> {
    let mut cursor = Cursor::new(text);
    loop {
        cursor.skip_whitespace();
        if cursor.eat(";") {
            continue;
        }
        if cursor.at_statement_end() || SKIPPED_KEYWORDS.contains(&first_word(cursor.rest())) {
            return Ok(());
        }
        parse_statement(&mut cursor, chart)?;
    }
}

/// `group (link group)*` where a group is `node (& node)*`.
fn parse_statement(cursor: &mut Cursor, chart: &mut Chart) -> Result<(), String> {
    let mut sources = parse_group(cursor, chart)?;
    loop {
        cursor.skip_whitespace();
        if cursor.at_statement_end() {
            return Ok(());
        }
        let flow = parse_link(cursor)?;
        let targets = parse_group(cursor, chart)?;
        for &from in &sources {
            for &to in &targets {
                match flow {
                    Flow::Forward => chart.connect(from, to),
                    Flow::BothWays => {
                        chart.connect(from, to);
                        chart.connect(to, from);
                    }
                    Flow::None => {}
                }
            }
        }
        sources = targets;
    }
}

fn parse_group(cursor: &mut Cursor, chart: &mut Chart) -> Result<Vec<usize>, String> {
    let mut group = vec![chart.declare(parse_node(cursor)?)];
    loop {
        cursor.skip_whitespace();
        if !cursor.eat("&") {
            return Ok(group);
        }
        cursor.skip_whitespace();
        group.push(chart.declare(parse_node(cursor)?));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn numbered(block: &str) -> Vec<(LineNo, &str)> {
        (1..).zip(block.lines()).collect()
    }

    fn chart(block: &str) -> Chart {
        let lines = numbered(block);
        assert!(declares_flowchart(&lines), "{block}");
        parse_chart(&lines).unwrap()
    }

    fn edges(chart: &Chart) -> Vec<String> {
        chart
            .nodes
            .iter()
            .flat_map(|node| node.next.iter().map(move |to| format!("{}>{to}", node.id)))
            .collect()
    }

    #[test]
    fn chains_groups_and_one_liners() {
        let parsed = chart("graph LR; A --> B --> C; A & B --> D\n");
        assert_eq!(edges(&parsed), ["A>B", "A>D", "B>C", "B>D"]);
        assert!(!parsed.nodes[0].has_incoming);
        assert!(parsed.nodes[3].has_incoming);
    }

    #[test]
    fn nodes_keep_first_order_and_last_label() {
        let parsed = chart("flowchart TD\n  A --> B\n  B{ok?} -->|yes| A\n  B[late]\n");
        let ids: Vec<&str> = parsed.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["A", "B"]);
        assert_eq!(parsed.nodes[1].label, Some((Shape::Step, "late".into())));
        assert_eq!(parsed.nodes[0].label, None);
    }

    #[test]
    fn styling_comments_front_matter_and_invisible_links_make_no_edges() {
        let parsed = chart(
            "---\ntitle: Leave\n---\nflowchart TD\n%% a comment\nsubgraph one [Phase]\n  A --> B\nend\n  A ~~~ C\n  A --> A\n  A --> B\nclassDef warn fill:#f96\nclass A warn\nstyle B fill:#fff\nclick A call()\n",
        );
        assert_eq!(edges(&parsed), ["A>B", "A>A"]);
        assert_eq!(parsed.nodes.len(), 3);
    }

    #[test]
    fn both_way_links_connect_both_nodes() {
        let parsed = chart("flowchart\nA <--> B\n");
        assert_eq!(edges(&parsed), ["A>B", "B>A"]);
    }

    #[test]
    fn only_flowcharts_are_declared() {
        assert!(!declares_flowchart(&numbered(
            "sequenceDiagram\nA->>B: hi\n"
        )));
        assert!(!declares_flowchart(&numbered("%% only a comment\n")));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        for (block, line) in [
            ("flowchart TD\nA --> B\nA -> B\n", 3),
            ("flowchart TD\n\nA[open --> B\n", 3),
            ("flowchart sideways\n", 1),
            ("flowchart TD\nA --> \n", 2),
        ] {
            let error = parse_chart(&numbered(block)).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParameter, "{block}");
            assert_eq!(error.details.unwrap()["line"], line, "{block}");
        }
    }
}
