//! One manual file as the index holds it: line table, nodes, or the problem that kept it
//! from being read. Not its text: a reader reads that again, checked against the file's
//! stamp ([`ManualFile::read_text`], see `source`).
//!
//! A bad file must never take the server down or hide its neighbours, so decoding and
//! validation failures become a `problem` string on a listed file with no nodes (and an
//! empty text: with no nodes nothing could map a search hit in it anyway).

use std::io;
use std::sync::Arc;

use super::node::{Node, NodeKind};
use super::sections::{outline_markdown, Outline};
use crate::error::ToolResult;
use crate::text::lines::{LineNo, LineTable};

/// The two formats a manual may contain (requirements §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileType {
    Md,
    Json,
}

impl FileType {
    /// By extension, in any letter case; `None` for files that are not manual content.
    pub(crate) fn from_path(path: &str) -> Option<Self> {
        let (_, extension) = path.rsplit_once('.')?;
        if extension.eq_ignore_ascii_case("md") {
            Some(FileType::Md)
        } else if extension.eq_ignore_ascii_case("json") {
            Some(FileType::Json)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FileType::Md => "md",
            FileType::Json => "json",
        }
    }
}

/// What the persisted catalog (`catalog_store`) keeps of one file: enough to rebuild its
/// [`ManualFile`] from its text without parsing it. Defined here, beside what it
/// rebuilds, so that the catalog depends on the file model and not the reverse.
#[derive(Debug)]
pub(crate) struct StoredParse {
    pub(crate) file_type: FileType,
    /// Bytes of the decoded text (a byte-order mark removed): a text of another length
    /// is not the one the outline was made from.
    pub(crate) text_len: usize,
    pub(crate) lines: LineTable,
    pub(crate) outline: Outline,
}

/// Reads a file's text again, checked to be the version indexed (`source::ManualsSource`,
/// the manuals root). A trait so that the file model does not depend on the reading,
/// which depends on discovery, which depends on the file model.
pub(crate) trait TextSource: std::fmt::Debug + Send + Sync {
    /// The decoded text of `manual_id/path` at stamp fingerprint `version`, `text_len`
    /// bytes long, or `conflict`.
    fn read_checked(
        &self,
        manual_id: &str,
        path: &str,
        version: u64,
        text_len: usize,
    ) -> ToolResult<String>;
}

/// Where a file's text is read again from: its manual under the index's manuals root.
#[derive(Debug, Clone)]
pub(crate) struct FileOrigin {
    pub(super) source: Arc<dyn TextSource>,
    pub(super) manual_id: Arc<str>,
}

#[derive(Debug)]
pub struct ManualFile {
    origin: FileOrigin,
    path: String,
    file_type: FileType,
    problem: Option<String>,
    /// Bytes of the decoded text the line table was made from: a text read again must
    /// have as many.
    text_len: usize,
    lines: LineTable,
    outline: Outline,
    generation: u64,
    /// Fingerprint of the file's stamp when it was read (0 when built from bytes): the
    /// section index keeps it with the file's sections to know them current after a
    /// restart.
    version: u64,
}

impl ManualFile {
    /// The file `path` (relative to its manual) rebuilt from the persisted catalog's
    /// entry for this version of the file, without reading it (the entry is claimed only
    /// for the stamp the scan found, and a later read checks the text's length against
    /// the entry's); `None` when the entry is for another type. `generation` is the index
    /// generation that loaded it.
    pub(crate) fn restore(
        origin: FileOrigin,
        path: String,
        file_type: FileType,
        stored: StoredParse,
        generation: u64,
    ) -> Option<Self> {
        (stored.file_type == file_type).then_some(ManualFile {
            origin,
            path,
            file_type,
            problem: None,
            text_len: stored.text_len,
            lines: stored.lines,
            outline: stored.outline,
            generation,
            version: 0,
        })
    }

    /// Builds the file `path` (relative to its manual) from what reading it returned; the
    /// text is dropped once parsed.
    pub(crate) fn load(
        origin: FileOrigin,
        path: String,
        file_type: FileType,
        content: io::Result<Vec<u8>>,
        generation: u64,
    ) -> Self {
        let text = content
            .map_err(|error| format!("unreadable: {}", error.kind()))
            .and_then(decode);
        match text {
            Ok(text) => Self::parse(origin, path, file_type, &text, generation),
            Err(problem) => Self::with_problem(origin, path, file_type, problem, generation),
        }
    }

    fn parse(
        origin: FileOrigin,
        path: String,
        file_type: FileType,
        text: &str,
        generation: u64,
    ) -> Self {
        let lines = LineTable::new(text);
        let outline = match file_type {
            FileType::Md => outline_markdown(&path, text, &lines),
            FileType::Json => match check_json(text) {
                Ok(()) => json_outline(&path, lines.line_count()),
                Err(problem) => {
                    return Self::with_problem(origin, path, file_type, problem, generation)
                }
            },
        };
        ManualFile {
            origin,
            path,
            file_type,
            problem: None,
            text_len: text.len(),
            lines,
            outline,
            generation,
            version: 0,
        }
    }

    fn with_problem(
        origin: FileOrigin,
        path: String,
        file_type: FileType,
        problem: String,
        generation: u64,
    ) -> Self {
        ManualFile {
            origin,
            path,
            file_type,
            problem: Some(problem),
            text_len: 0,
            lines: LineTable::new(""),
            outline: Outline::default(),
            generation,
            version: 0,
        }
    }

    /// The file with the fingerprint of the stamp it was read at.
    pub(crate) fn with_version(mut self, version: u64) -> Self {
        self.version = version;
        self
    }

    /// See the field: what the section index compares to tell current sections.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Relative to the manual's folder, `/`-separated.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// Why the file could not be used (e.g. "invalid UTF-8 at byte 12"); such a file has
    /// no text and no nodes.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// The index generation that (re)loaded this file: derived data cached under this
    /// number stays valid until the file changes.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes of the whole text (a leading byte-order mark removed), known without
    /// reading it.
    pub fn text_len(&self) -> usize {
        self.text_len
    }

    /// The whole text, a leading byte-order mark removed, read again from the manuals
    /// root: `conflict` when the file is no longer the one indexed (see `source`). A file
    /// with a problem has an empty text and is not read.
    pub(crate) fn read_text(&self) -> ToolResult<ManualText<'_>> {
        let text = if self.problem.is_some() {
            String::new()
        } else {
            self.origin.source.read_checked(
                &self.origin.manual_id,
                &self.path,
                self.version,
                self.text_len,
            )?
        };
        Ok(ManualText { file: self, text })
    }

    pub fn line_count(&self) -> LineNo {
        self.lines.line_count()
    }

    /// What the persisted catalog keeps of the file, with [`Self::outline`].
    pub(super) fn line_table(&self) -> &LineTable {
        &self.lines
    }

    pub(super) fn outline(&self) -> &Outline {
        &self.outline
    }

    /// In document order.
    pub fn nodes(&self) -> &[Node] {
        &self.outline.nodes
    }

    pub fn page_title(&self) -> Option<&str> {
        self.outline.page_title.as_deref()
    }

    pub(crate) fn is_code_line(&self, line: LineNo) -> bool {
        let blocks = &self.outline.code_blocks;
        let candidate = blocks.partition_point(|block| block.start_line <= line);
        candidate > 0 && blocks[candidate - 1].contains(line)
    }

    /// The deepest node whose range contains `line` (front-matter lines above the first
    /// heading belong to no node).
    pub fn node_at(&self, line: LineNo) -> Option<&Node> {
        self.nodes()
            .get(self.node_index_from(line))
            .filter(|node| node.span().contains(line))
    }

    /// Index into [`Self::nodes`] of the deepest node containing `line`, or else of the
    /// first node after it. Nodes are sorted and each range reaches at least to the next
    /// node's start, so the deepest container is the last node starting at or before
    /// `line`, if its range still covers `line`.
    pub(crate) fn node_index_from(&self, line: LineNo) -> usize {
        let nodes = self.nodes();
        let after = nodes.partition_point(|node| node.line_start <= line);
        match nodes[..after].last() {
            Some(node) if node.span().contains(line) => after - 1,
            _ => after,
        }
    }

    /// The last line that belongs to node `index` itself, not to the node after it.
    pub(crate) fn own_end(&self, index: usize) -> LineNo {
        let nodes = self.nodes();
        let next_start = nodes
            .get(index + 1)
            .map_or(LineNo::MAX, |next| next.line_start);
        nodes[index].line_end.min(next_start - 1)
    }
}

/// A file's text as read for one reader, with the file's line table: checked to be the
/// text that table was made from, so lines cut from it are the indexed lines.
#[derive(Debug)]
pub(crate) struct ManualText<'a> {
    file: &'a ManualFile,
    text: String,
}

impl ManualText<'_> {
    /// The whole text, a leading byte-order mark removed.
    pub(crate) fn whole(&self) -> &str {
        &self.text
    }

    /// Lines `first..=last` without the final terminator; both must exist.
    pub(crate) fn lines(&self, first: LineNo, last: LineNo) -> &str {
        &self.text[self.file.lines.byte_range(first, last)]
    }

    pub(crate) fn line_count(&self) -> LineNo {
        self.file.line_count()
    }

    /// Byte offset in [`Self::whole`] where line `line` starts.
    pub(crate) fn line_start_offset(&self, line: LineNo) -> usize {
        self.file.lines.byte_range(line, line).start
    }

    /// The line holding byte `offset` of [`Self::whole`].
    pub(crate) fn line_at_offset(&self, offset: usize) -> LineNo {
        self.file.lines.line_at(offset)
    }
}

/// UTF-8 text without a leading byte-order mark (JSON parsers and comrak alike would
/// otherwise see it as content).
pub(super) fn decode(bytes: Vec<u8>) -> Result<String, String> {
    let mut text = String::from_utf8(bytes)
        .map_err(|error| format!("invalid UTF-8 at byte {}", error.utf8_error().valid_up_to()))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

fn check_json(text: &str) -> Result<(), String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(drop)
        .map_err(|error| {
            format!(
                "invalid JSON: line {} column {}",
                error.line(),
                error.column()
            )
        })
}

/// A JSON file is one node: the spec reads JSON as a whole (requirements §4).
fn json_outline(path: &str, line_count: LineNo) -> Outline {
    let title = path.rsplit('/').next().unwrap_or(path).to_owned();
    let node = Node::page_level(NodeKind::JsonFile, title, line_count);
    Outline {
        nodes: vec![node],
        ..Outline::default()
    }
}
