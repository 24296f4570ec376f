//! The unit a client navigates by: one entry of `manual_toc`.
//!
//! Node ids are derived from data the file itself fixes, never from parse order or a
//! counter, so an unchanged file keeps its ids across refreshes and server restarts and
//! a `node_id` kept by a client (or a trace) stays valid:
//!
//! * Markdown node: `"<path>#L<line_start>"`, e.g. `"guide/setup.md#L12"`;
//! * JSON file node: `"<path>"` (a JSON file is one node).
//!
//! `path` is relative to the manual's folder with `/` separators. Editing a file above a
//! heading moves the heading's line and therefore its id; that is intended, since the id
//! is also a readable position (`ref.start_line`).

use super::lines::LineSpan;
use crate::text::lines::LineNo;

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A Markdown heading, or the whole file (level 0) when it has no heading.
    Heading,
    /// The text before the first heading of a file that has headings (level 0).
    Preamble,
    /// A whole JSON file (level 0).
    JsonFile,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Heading => "heading",
            NodeKind::Preamble => "preamble",
            NodeKind::JsonFile => "json_file",
        }
    }
}

/// One section (or file) of a manual. `line_start..=line_end` covers the heading line and
/// all its descendants, which is the range `manual_read(scope="section")` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    pub node_id: String,
    pub path: String,
    /// Plain text of the heading (markup and a trailing `{#id}` removed).
    pub title: String,
    /// The heading's `{#id}` if it had one, else its GitHub-style slug; `None` for
    /// level-0 nodes, which have no heading to link to.
    pub anchor: Option<String>,
    /// 1..=6 for headings, 0 for whole-file, preamble and JSON nodes.
    pub level: u8,
    /// `node_id` of the nearest enclosing heading.
    pub parent_id: Option<String>,
    pub line_start: LineNo,
    pub line_end: LineNo,
}

impl Node {
    /// A level-0 node from line 1 to `line_end` that stands for the page itself: a
    /// Markdown file without headings, the preamble before the first heading, or a JSON
    /// file (whose id is its path).
    pub(crate) fn page_level(kind: NodeKind, path: &str, title: String, line_end: LineNo) -> Node {
        let node_id = match kind {
            NodeKind::JsonFile => Node::json_id(path),
            _ => Node::markdown_id(path, 1),
        };
        Node {
            kind,
            node_id,
            path: path.to_owned(),
            title,
            anchor: None,
            level: 0,
            parent_id: None,
            line_start: 1,
            line_end,
        }
    }

    pub(crate) fn markdown_id(path: &str, line_start: LineNo) -> String {
        format!("{path}#L{line_start}")
    }

    pub(crate) fn json_id(path: &str) -> String {
        path.to_owned()
    }

    pub fn span(&self) -> LineSpan {
        LineSpan {
            start_line: self.line_start,
            end_line: self.line_end,
        }
    }
}
