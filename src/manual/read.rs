//! `manual_read`: bounded, stepwise reading (spec_manuals §4, requirements §6.2).
//!
//! The tool exists to stop clients from pulling whole files, so every scope is bounded:
//!
//! * `snippet` (default for `.md`): [`SNIPPET_CHARS`] characters starting at the first
//!   character of `ref.start_line` (any line, not only a heading), plus up to
//!   `expand.before_chars` before and `expand.after_chars` after;
//! * `section`: the deepest node containing `start_line`, heading line through
//!   `line_end`, descendants included;
//! * `sections`: from `start_line`, the rest of the node containing it and the nodes after
//!   it in document order, each contributing its own lines (no overlap), at most
//!   `max_sections` nodes in all;
//! * `file` (default for `.json`): from `start_line` (line 1 when absent) to the end of the
//!   file, cut after `max_sections` nodes. `.md` needs both the server's
//!   `ALLOW_FILE_SCOPE` and the request's `limits.allow_file`.
//!
//! Every text is then cut to `max_chars` characters (after the last whole line that fits
//! when possible). `lines` is the range actually returned and `truncated` says a limit
//! removed text the scope would have included. `sections` and `file` start exactly at
//! `start_line`, so a truncated read of either continues with the same call at
//! `start_line = lines.end_line + 1`; a truncated `section` continues with `sections`
//! there (a `section` always restarts at its heading). Limits above the hard maxima are
//! clamped, not refused; `expand` only shapes snippets and is ignored by other scopes.
//!
//! A file listed with a `problem` is refused as `invalid_parameter` carrying the problem
//! (see [`ManualRef::resolve`]): the request is well-formed, but that ref cannot be read.

use serde_json::json;

use super::excerpt::clip_to_chars;
use super::file::{FileType, ManualFile, ManualText};
use super::index::ManualIndex;
use super::lines::LineSpan;
use super::reference::ManualRef;
use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::text::lines::LineNo;
use crate::text::snippet::{advance_chars, retreat_chars};

/// Size of a snippet before `expand`: about one paragraph, enough to judge a hit without
/// paying for a section.
pub const SNIPPET_CHARS: usize = 300;
pub(crate) const DEFAULT_MAX_CHARS: usize = 8000;
pub(crate) const DEFAULT_MAX_SECTIONS: usize = 20;

/// The server-wide switches and ceilings that bound every read (spec_v2 §3.2-3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    pub hard_max_chars: usize,
    pub(crate) hard_max_sections: usize,
    pub allow_file_scope: bool,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            hard_max_chars: 20_000,
            hard_max_sections: 20,
            allow_file_scope: false,
        }
    }
}

/// How much `manual_read` returns: the schema's `ReadScope`.
pub use crate::contract::types::ReadScope;

/// `limits` of the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestedLimits {
    pub max_sections: Option<usize>,
    pub max_chars: Option<usize>,
    pub allow_file: Option<bool>,
}

/// `expand` of the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expand {
    pub before_chars: Option<usize>,
    pub after_chars: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub reference: ManualRef,
    pub scope: Option<ReadScope>,
    pub limits: RequestedLimits,
    pub expand: Expand,
}

/// The limits a read actually ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedLimits {
    pub scope: ReadScope,
    /// Only for `sections` and `file`, the scopes that count nodes.
    pub max_sections: Option<usize>,
    pub max_chars: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    pub text: String,
    pub truncated: bool,
    pub applied: AppliedLimits,
    pub lines: LineSpan,
}

/// A piece of a file before it becomes an output.
struct Excerpt<'a> {
    text: &'a str,
    truncated: bool,
    lines: LineSpan,
}

pub fn manual_read(
    index: &ManualIndex,
    request: &ReadRequest,
    limits: &ReadLimits,
) -> ToolResult<ReadOutput> {
    let target = request.reference.resolve(index)?;
    let (file, start_line) = (target.file, target.start_line);
    let scope = request.scope.unwrap_or(match file.file_type() {
        FileType::Md => ReadScope::Snippet,
        FileType::Json => ReadScope::File,
    });
    check_scope(scope, file.file_type(), request.limits.allow_file, limits)?;
    let max_chars = applied_limit(
        request.limits.max_chars,
        DEFAULT_MAX_CHARS,
        limits.hard_max_chars,
        "limits.max_chars",
    )?;
    // Read after the request is known to be valid: a refused request reads nothing.
    let original = file.read_text()?;
    let (excerpt, max_sections) = match scope {
        ReadScope::Snippet => (
            snippet(&original, start_line, request.expand, max_chars),
            None,
        ),
        ReadScope::Section => {
            let node = &file.nodes()[containing_node(file, start_line)?];
            (whole_lines(&original, node.span(), false, max_chars), None)
        }
        ReadScope::Sections | ReadScope::File => {
            let max_sections = applied_limit(
                request.limits.max_sections,
                DEFAULT_MAX_SECTIONS,
                limits.hard_max_sections,
                "limits.max_sections",
            )?;
            // `file` may start in front matter that belongs to no node; `sections` may not.
            let first = match scope {
                ReadScope::Sections => containing_node(file, start_line)?,
                _ => file.node_index_from(start_line),
            };
            let (end_line, cut) = end_after_nodes(file, first, max_sections);
            let span = LineSpan {
                start_line,
                end_line,
            };
            (
                whole_lines(&original, span, cut, max_chars),
                Some(max_sections),
            )
        }
    };
    Ok(ReadOutput {
        text: excerpt.text.to_owned(),
        truncated: excerpt.truncated,
        applied: AppliedLimits {
            scope,
            max_sections,
            max_chars,
        },
        lines: excerpt.lines,
    })
}

fn check_scope(
    scope: ReadScope,
    file_type: FileType,
    allow_file: Option<bool>,
    limits: &ReadLimits,
) -> ToolResult<()> {
    if file_type == FileType::Json && matches!(scope, ReadScope::Section | ReadScope::Sections) {
        let message = format!("scope {:?} does not apply to a JSON file", scope.as_str());
        return Err(
            ToolError::new(ErrorCode::InvalidScope, message).with_details(json!({
                "scope": scope.as_str(),
                "file_type": "json",
                "allowed": ["snippet", "file"],
            })),
        );
    }
    let file_scope_allowed = limits.allow_file_scope && allow_file == Some(true);
    if file_type == FileType::Md && scope == ReadScope::File && !file_scope_allowed {
        let message = "scope \"file\" on a Markdown file needs ALLOW_FILE_SCOPE=true on the \
                       server and limits.allow_file=true";
        return Err(
            ToolError::new(ErrorCode::Forbidden, message).with_details(json!({
                "ALLOW_FILE_SCOPE": limits.allow_file_scope,
                "limits.allow_file": allow_file,
                "alternative": "scope=\"sections\"",
            })),
        );
    }
    Ok(())
}

/// `requested` (or `default`) clamped to `hard_max`; zero is refused, since a read of
/// nothing is always a client mistake.
fn applied_limit(
    requested: Option<usize>,
    default: usize,
    hard_max: usize,
    field: &str,
) -> ToolResult<usize> {
    match requested {
        Some(0) => Err(
            ToolError::invalid_parameter(format!("{field} must be at least 1"))
                .with_details(json!({ "field": field, "min": 1, "max": hard_max })),
        ),
        Some(value) => Ok(value.min(hard_max)),
        None => Ok(default.min(hard_max)),
    }
}

/// Index of the deepest node containing `line`; front-matter lines above the first
/// heading belong to no section.
pub(crate) fn containing_node(file: &ManualFile, line: LineNo) -> ToolResult<usize> {
    let index = file.node_index_from(line);
    match file.nodes().get(index) {
        Some(node) if node.span().contains(line) => Ok(index),
        next => Err(
            ToolError::not_found(format!("no section contains line {line}")).with_details(json!({
                "field": "ref.start_line",
                "start_line": line,
                "next_section_line": next.map(|node| node.line_start),
            })),
        ),
    }
}

/// Last line of the `max_sections`-th node from `first`, or the file's last line when
/// fewer nodes remain; and whether nodes were left out.
fn end_after_nodes(file: &ManualFile, first: usize, max_sections: usize) -> (LineNo, bool) {
    let last = first + max_sections - 1;
    if last + 1 >= file.nodes().len() {
        (file.line_count(), false)
    } else {
        (file.own_end(last), true)
    }
}

fn whole_lines<'a>(
    original: &'a ManualText<'_>,
    span: LineSpan,
    cut_by_sections: bool,
    max_chars: usize,
) -> Excerpt<'a> {
    let full = original.lines(span.start_line, span.end_line);
    let text = clip_to_chars(full, max_chars);
    let clipped = text.len() < full.len();
    let start = original.line_start_offset(span.start_line);
    let end_line = if clipped {
        last_line_of(original, start, start + text.len())
    } else {
        span.end_line
    };
    Excerpt {
        text,
        truncated: cut_by_sections || clipped,
        lines: LineSpan {
            start_line: span.start_line,
            end_line,
        },
    }
}

/// The snippet window. The part from `start_line` on is served first; `before_chars` gets
/// what `max_chars` leaves.
fn snippet<'a>(
    original: &'a ManualText<'_>,
    start_line: LineNo,
    expand: Expand,
    max_chars: usize,
) -> Excerpt<'a> {
    // The whole text but its final line terminator, like every other scope returns.
    let text = original.lines(1, original.line_count());
    let anchor = original.line_start_offset(start_line);
    let wanted_after = SNIPPET_CHARS.saturating_add(expand.after_chars.unwrap_or(0));
    let wanted_before = expand.before_chars.unwrap_or(0);
    let after = wanted_after.min(max_chars);
    let before = wanted_before.min(max_chars - after);
    let from = retreat_chars(text, anchor, before);
    let to = advance_chars(text, anchor, after);
    let truncated = advance_chars(text, anchor, wanted_after) != to
        || retreat_chars(text, anchor, wanted_before) != from;
    let lines = LineSpan {
        start_line: original.line_at_offset(from),
        end_line: last_line_of(original, from, to),
    };
    Excerpt {
        text: &text[from..to],
        truncated,
        lines,
    }
}

/// Line of the last character in `from..to` (of `from` when empty).
fn last_line_of(original: &ManualText<'_>, from: usize, to: usize) -> LineNo {
    original.line_at_offset(if to > from { to - 1 } else { from })
}
