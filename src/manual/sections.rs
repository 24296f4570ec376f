//! The section model of a Markdown file, read from comrak's AST.
//!
//! Headings are whatever CommonMark says they are (DECISIONS.md), so we ask comrak instead
//! of matching `#` lines: a `#` line in a fenced block or indented four spaces is not a
//! heading, setext headings are, and YAML front matter (`---` … `---` at the top) is
//! neither a section nor a setext underline. Line numbers come from comrak's source
//! positions, which count front-matter lines, so they are file line numbers.
//!
//! A section runs from its heading line to the line before the next heading of the same
//! or a higher level (or the last line): it includes its descendants, which is what
//! `manual_read(scope="section")` must return. Text above the first heading becomes a
//! level-0 preamble node when it is not blank, so every line of prose belongs to a node
//! and a search hit there still maps to something readable. A file without headings is a
//! single level-0 node, so it is still listed, searched and read by node.

use comrak::nodes::{AstNode, NodeValue};
use comrak::{parse_document, Arena, Options};

use super::front_matter::front_matter_title;
use super::heading::{heading_text, Slugs};
use super::lines::LineSpan;
use super::node::{Node, NodeKind};
use crate::text::lines::{LineNo, LineTable};

/// Everything the index keeps from parsing one Markdown file.
#[derive(Debug, Default)]
pub(crate) struct Outline {
    /// In document order (ascending `line_start`).
    pub nodes: Vec<Node>,
    /// The front matter's `title:`, if any.
    pub page_title: Option<String>,
    /// Code blocks (fenced or indented), fences included: not prose, so scans for
    /// exception terms skip them.
    pub(crate) code_blocks: Vec<LineSpan>,
}

/// A heading as found in the AST, before its range and parent are known.
struct FoundHeading {
    line: LineNo,
    level: u8,
    title: String,
    anchor: String,
}

/// Builds the outline of the Markdown file `path` (relative, used in node ids) whose
/// content is `text`, with `lines` its line table.
pub(crate) fn outline_markdown(path: &str, text: &str, lines: &LineTable) -> Outline {
    let arena = Arena::new();
    let root = parse_document(&arena, text, &parse_options());
    let mut outline = Outline::default();
    let mut front_matter_end = 0;
    let mut headings = Vec::new();
    let mut slugs = Slugs::default();
    for block in root.descendants() {
        let data = block.data.borrow();
        match &data.value {
            NodeValue::FrontMatter(raw) => {
                front_matter_end = data.sourcepos.end.line as LineNo;
                outline.page_title = front_matter_title(raw);
            }
            NodeValue::Heading(heading) => {
                headings.push(found_heading(block, heading.level, &mut slugs))
            }
            NodeValue::CodeBlock(_) => outline.code_blocks.push(LineSpan {
                start_line: data.sourcepos.start.line as LineNo,
                end_line: data.sourcepos.end.line as LineNo,
            }),
            _ => {}
        }
    }
    let fallback_title = outline
        .page_title
        .clone()
        .unwrap_or_else(|| file_stem(path).to_owned());
    let last_line = lines.line_count();
    outline.nodes = match headings.first() {
        None => vec![Node::page_level(
            NodeKind::Heading,
            fallback_title,
            last_line,
        )],
        Some(first) => {
            let preamble_end = first.line - 1;
            let has_preamble = (front_matter_end + 1..=preamble_end)
                .any(|line| !text[lines.byte_range(line, line)].trim().is_empty());
            let preamble = has_preamble
                .then(|| Node::page_level(NodeKind::Preamble, fallback_title, preamble_end));
            let mut nodes: Vec<Node> = preamble.into_iter().collect();
            heading_nodes(&mut nodes, headings, last_line);
            nodes
        }
    };
    outline
}

fn parse_options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.front_matter_delimiter = Some("---".to_owned());
    options
}

fn found_heading<'a>(heading: &'a AstNode<'a>, level: u8, slugs: &mut Slugs) -> FoundHeading {
    let line = heading.data.borrow().sourcepos.start.line as LineNo;
    let text = heading_text(heading, slugs);
    FoundHeading {
        line,
        level,
        title: text.title,
        anchor: text.anchor,
    }
}

/// Turns headings into nodes appended to `nodes` (which holds the preamble, if any). A
/// stack of open headings gives both the parent (the top after popping deeper-or-equal
/// levels) and each popped heading's end (the line before the heading that closed it).
fn heading_nodes(nodes: &mut Vec<Node>, headings: Vec<FoundHeading>, last_line: LineNo) {
    nodes.reserve(headings.len());
    let mut open: Vec<usize> = Vec::new();
    for heading in headings {
        while let Some(&top) = open.last() {
            if nodes[top].level < heading.level {
                break;
            }
            nodes[top].line_end = heading.line - 1;
            open.pop();
        }
        let parent = open.last().map(|&parent| parent as u32);
        open.push(nodes.len());
        nodes.push(Node {
            kind: NodeKind::Heading,
            title: heading.title.into(),
            anchor: Some(heading.anchor.into()),
            level: heading.level,
            parent,
            line_start: heading.line,
            line_end: last_line,
        });
    }
}

/// File name without its extension: the title of a page that has no better one.
fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}
