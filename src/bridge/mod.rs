//! Bridge copies (requirements §6.3): manual text into the vault without it passing
//! through the model. This module decides *which* lines a copy takes and *what* is written
//! (the text with its origin); the tool layer writes it through `vault::write`, so every
//! vault rule (daily logs append-only, `.system/`, artifact extensions and JSON validity,
//! no links) applies to a destination exactly as to `vault_create` / `vault_write`.
//!
//! Architecture invariant: no file access and no MCP here; the manual's text comes from
//! the in-memory index, the destination's line count from the caller.
//!
//! Code map: this file selects the lines and holds the copy; `origin` composes what is
//! written, with the origin recorded in Markdown destinations.

mod origin;

use serde_json::json;

use crate::error::{ToolError, ToolResult};
use crate::manual::read::containing_node;
use crate::manual::{LineSpan, ManualFile};
use crate::text::lines::LineNo;

pub(crate) use origin::{compose, CopyOrigin};

/// Which lines of a manual file a copy takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selection {
    /// The deepest section holding the ref's line, from its heading, with or without the
    /// sections below it (`manual_read` scope `section` is the former).
    Section { include_descendants: bool },
    /// Exactly the ref's line through `end_line` (a hit range).
    Range { end_line: LineNo },
    /// The whole file.
    File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Create,
    Overwrite,
    Append,
}

/// The lines of `file` that `selection` takes from `start_line` (already checked to lie
/// inside the file).
pub(crate) fn select(
    file: &ManualFile,
    start_line: LineNo,
    selection: Selection,
) -> ToolResult<LineSpan> {
    match selection {
        Selection::File => Ok(LineSpan {
            start_line: 1,
            end_line: file.line_count(),
        }),
        Selection::Range { end_line } => {
            if end_line < start_line || end_line > file.line_count() {
                let message = format!(
                    "end_line must lie between ref.start_line ({start_line}) and the file's last \
                     line ({})",
                    file.line_count()
                );
                return Err(ToolError::invalid_parameter(message).with_details(json!({
                    "field": "end_line",
                    "value": end_line,
                    "min": start_line,
                    "max": file.line_count(),
                })));
            }
            Ok(LineSpan {
                start_line,
                end_line,
            })
        }
        Selection::Section {
            include_descendants,
        } => {
            let index = containing_node(file, start_line)?;
            let node = &file.nodes()[index];
            let end_line = if include_descendants {
                node.line_end
            } else {
                file.own_end(index)
            };
            Ok(LineSpan {
                start_line: node.line_start,
                end_line,
            })
        }
    }
}

/// The manual text a copy takes, owned so that the index can be released before writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Copy {
    pub manual_id: String,
    /// Relative to the manual's folder, as the index spells it.
    pub path: String,
    pub lines: LineSpan,
    /// The lines' text without the last line's break.
    pub text: String,
}

impl Copy {
    /// The `lines` of `file`, read now (`conflict` when the file changed since indexed).
    pub(crate) fn of(manual_id: &str, file: &ManualFile, lines: LineSpan) -> ToolResult<Copy> {
        let original = file.read_text()?;
        Ok(Copy {
            manual_id: manual_id.to_owned(),
            path: file.path().to_owned(),
            lines,
            text: original.lines(lines.start_line, lines.end_line).to_owned(),
        })
    }

    /// `handbook/01-leave.md#L40-L44`: the manual, the path in it and the lines, in the
    /// `path#Lstart-Lend` spelling artifacts cite vault lines with.
    pub(crate) fn source_ref(&self) -> String {
        format!(
            "{}/{}#L{}-L{}",
            self.manual_id, self.path, self.lines.start_line, self.lines.end_line
        )
    }
}

#[cfg(test)]
mod tests;
