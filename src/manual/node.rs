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
use crate::text::shared::SharedStr;

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
///
/// A node does not hold its id, its path or its parent's id: all three follow from its
/// file's path, its line and its parent's position ([`Node::id`]), and a start holds
/// hundreds of thousands of nodes, so three strings each were a third of the catalog's
/// memory and most of its decode time. For the same reason a node read back from the
/// catalog holds its title and anchor as places in one text its file's nodes share
/// ([`SharedStr`]), not as two allocations of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    /// Plain text of the heading (markup and a trailing `{#id}` removed).
    pub title: SharedStr,
    /// The heading's `{#id}` if it had one, else its GitHub-style slug; `None` for
    /// level-0 nodes, which have no heading to link to.
    pub anchor: Option<SharedStr>,
    /// 1..=6 for headings, 0 for whole-file, preamble and JSON nodes.
    pub level: u8,
    /// Position, among its file's nodes, of the nearest enclosing heading (always an
    /// earlier node).
    pub parent: Option<u32>,
    pub line_start: LineNo,
    pub line_end: LineNo,
}

impl Node {
    /// A level-0 node from line 1 to `line_end` that stands for the page itself: a
    /// Markdown file without headings, the preamble before the first heading, or a JSON
    /// file (whose id is its path).
    pub(crate) fn page_level(kind: NodeKind, title: String, line_end: LineNo) -> Node {
        Node {
            kind,
            title: title.into(),
            anchor: None,
            level: 0,
            parent: None,
            line_start: 1,
            line_end,
        }
    }

    /// The node's id in the file `path` (see the module doc).
    pub fn id(&self, path: &str) -> String {
        match self.kind {
            NodeKind::JsonFile => path.to_owned(),
            _ => format!("{path}#L{}", self.line_start),
        }
    }

    /// Whether `id` is this node's id in the file `path`, without building it.
    pub(crate) fn has_id(&self, path: &str, id: &str) -> bool {
        match self.kind {
            NodeKind::JsonFile => id == path,
            _ => id
                .strip_prefix(path)
                .and_then(|rest| rest.strip_prefix("#L"))
                .is_some_and(|line| line == self.line_start.to_string()),
        }
    }

    pub fn span(&self) -> LineSpan {
        LineSpan {
            start_line: self.line_start,
            end_line: self.line_end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_recognised_without_building_it() {
        let heading = Node::page_level(NodeKind::Heading, "t".to_owned(), 9);
        let heading = Node {
            line_start: 12,
            ..heading
        };
        assert_eq!(heading.id("a/b.md"), "a/b.md#L12");
        assert!(heading.has_id("a/b.md", "a/b.md#L12"));
        for other in [
            "a/b.md#L1",
            "a/b.md#L012",
            "a/b.md",
            "a/c.md#L12",
            "a/b.md#L12x",
        ] {
            assert!(!heading.has_id("a/b.md", other), "{other}");
        }
        let json = Node::page_level(NodeKind::JsonFile, "c.json".to_owned(), 3);
        assert_eq!(json.id("d/c.json"), "d/c.json");
        assert!(json.has_id("d/c.json", "d/c.json"));
        assert!(!json.has_id("d/c.json", "d/c.json#L1"));
    }
}
