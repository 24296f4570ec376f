//! The byte layout of the persisted catalog's entries, in the little-endian integers and
//! length-prefixed UTF-8 strings of [`crate::manual::cache_file`], read back with bounds
//! checks only.
//!
//! Why a hand-written binary layout: a start reads one entry per manual file (5,000 at
//! 55 MB, 20,000 at 220 MB) with its line table (100,000 lines per 13 MB of Markdown)
//! and its nodes; this layout is decoded at memory speed with no parser, no per-field
//! allocation beside the strings a [`Node`] owns, and one integrity check over the
//! whole file (CRC-32, see `catalog_store`). A node is stored as [`Node`] holds it: its id
//! and path follow from its file's path and its line, its parent is a position.
//!
//! An entry's body is length-prefixed, so a malformed body is caught at its own end
//! (every byte of it read, none past it). Its strings are stored apart from its numbers
//! ([`Writer::strings_apart`]), so a body's strings are checked as UTF-8 in one pass.

use std::sync::Arc;

use crate::manual::cache_file::{Reader, Writer};
use crate::manual::file::{FileType, StoredParse};
use crate::manual::lines::LineSpan;
use crate::manual::node::{Node, NodeKind};
use crate::manual::sections::Outline;
use crate::text::lines::{LineNo, LineTable};
use crate::text::shared::SharedStr;

/// Marks a parent-less node and an absent string.
const NONE: u32 = u32::MAX;

impl Writer {
    fn optional_str(&mut self, value: Option<&str>) {
        match value {
            Some(value) => self.str(value),
            None => self.u32(NONE),
        }
    }

    /// One entry's body, its strings apart: see [`read_parse`].
    pub(super) fn parse(&mut self, stored: &ParseRef<'_>) {
        self.strings_apart(|out| out.parse_fields(stored));
    }

    fn parse_fields(&mut self, stored: &ParseRef<'_>) {
        self.u8(match stored.file_type {
            FileType::Md => 0,
            FileType::Json => 1,
        });
        self.u64(stored.text_len as u64);
        // A line as its length and whether a two-byte terminator (`\r\n`) follows it:
        // the next line starts after the terminator, so starts need not be stored.
        self.u32(stored.lines.line_count());
        let mut ranges = stored.lines.ranges().peekable();
        while let Some(line) = ranges.next() {
            let two_byte_break = ranges.peek().is_some_and(|next| next.start == line.end + 2);
            self.u32(((line.end - line.start) as u32) << 1 | u32::from(two_byte_break));
        }
        self.optional_str(stored.outline.page_title.as_deref());
        self.u32(stored.outline.code_blocks.len() as u32);
        for block in &stored.outline.code_blocks {
            self.u32(block.start_line);
            self.u32(block.end_line);
        }
        let nodes = &stored.outline.nodes;
        self.u32(nodes.len() as u32);
        for node in nodes {
            self.u8(match node.kind {
                NodeKind::Heading => 0,
                NodeKind::Preamble => 1,
                NodeKind::JsonFile => 2,
            });
            self.u8(node.level);
            self.u32(node.line_start);
            self.u32(node.line_end);
            self.u32(node.parent.unwrap_or(NONE));
            self.str(&node.title);
            self.optional_str(node.anchor.as_deref());
        }
    }
}

/// What [`Writer::parse`] takes from a file.
pub(super) struct ParseRef<'a> {
    pub(super) file_type: FileType,
    pub(super) text_len: usize,
    pub(super) lines: &'a LineTable,
    pub(super) outline: &'a Outline,
}

impl<'a> Reader<'a> {
    /// A string that may be absent (written as [`NONE`] instead of its length), read by
    /// `read` once its length is known.
    fn optional<T>(&mut self, read: impl FnOnce(&mut Self, u32) -> Option<T>) -> Option<Option<T>> {
        match self.u32()? {
            NONE => Some(None),
            len => Some(Some(read(self, len)?)),
        }
    }

    fn optional_str(&mut self) -> Option<Option<&'a str>> {
        self.optional(Self::str_of_len)
    }

    /// The next string of the open part as a place in `strings`, that part's strings.
    fn shared_str(&mut self, strings: &Arc<str>) -> Option<SharedStr> {
        SharedStr::within(Arc::clone(strings), self.str_span()?)
    }

    /// [`Reader::shared_str`] of a string that may be absent.
    fn optional_shared_str(&mut self, strings: &Arc<str>) -> Option<Option<SharedStr>> {
        self.optional(|reader, len| {
            SharedStr::within(Arc::clone(strings), reader.str_span_of_len(len)?)
        })
    }
}

/// Decodes one entry's body (written by [`Writer::parse`]), or `None` when it is
/// malformed. The nodes' titles and anchors share one copy of the body's strings.
pub(super) fn read_parse(body: &[u8]) -> Option<StoredParse> {
    let mut reader = Reader::new(body);
    let strings: Arc<str> = reader.strings_apart()?.into();
    let file_type = match reader.u8()? {
        0 => FileType::Md,
        1 => FileType::Json,
        _ => return None,
    };
    let text_len = usize::try_from(reader.u64()?).ok()?;
    let lines = read_lines(&mut reader, text_len)?;
    let page_title = reader.optional_str()?.map(str::to_owned);
    let block_count = reader.u32()? as usize;
    let mut code_blocks = Vec::with_capacity(block_count.min(body.len() / 8));
    for _ in 0..block_count {
        code_blocks.push(LineSpan {
            start_line: reader.u32()?,
            end_line: reader.u32()?,
        });
    }
    let node_count = reader.u32()? as usize;
    let mut nodes: Vec<Node> = Vec::with_capacity(node_count.min(body.len() / 18));
    for index in 0..node_count {
        let kind = match reader.u8()? {
            0 => NodeKind::Heading,
            1 => NodeKind::Preamble,
            2 => NodeKind::JsonFile,
            _ => return None,
        };
        let level = reader.u8()?;
        let line_start: LineNo = reader.u32()?;
        let line_end: LineNo = reader.u32()?;
        let parent = reader.u32()?;
        // A parent comes before its children.
        let parent = match parent {
            NONE => None,
            parent if (parent as usize) < index => Some(parent),
            _ => return None,
        };
        nodes.push(Node {
            kind,
            title: reader.shared_str(&strings)?,
            anchor: reader.optional_shared_str(&strings)?,
            level,
            parent,
            line_start,
            line_end,
        });
    }
    reader.is_empty().then_some(StoredParse {
        file_type,
        text_len,
        lines,
        outline: Outline {
            nodes,
            page_title,
            code_blocks,
        },
    })
}

/// The line table written by [`Writer::parse`], checked to lie in order inside a text of
/// `text_len` bytes (never more than the writer's limit, which fits 32-bit offsets).
fn read_lines(reader: &mut Reader<'_>, text_len: usize) -> Option<LineTable> {
    let text_len = u32::try_from(text_len).ok()?;
    let count = reader.u32()? as usize;
    let packed = reader.take(count.checked_mul(4)?)?;
    let mut lines = Vec::with_capacity(count);
    let mut start = 0u32;
    for word in packed.chunks_exact(4) {
        let word = u32::from_le_bytes(word.try_into().ok()?);
        let end = start.checked_add(word >> 1)?;
        if end > text_len {
            return None;
        }
        lines.push([start, end]);
        // A start past the text (after its last terminator) is caught at the next line's end.
        start = end.checked_add(1 + (word & 1))?;
    }
    (!lines.is_empty()).then(|| LineTable::from_narrow(lines))
}
