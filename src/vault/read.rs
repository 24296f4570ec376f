//! `vault_read` (a line range, or the whole file, within a character limit) and
//! `vault_scan` (fixed-size chunks from a cursor, so a file can be walked end to end
//! without relying on headings or search terms). Both stream through [`super::lines`].

use serde_json::json;

use crate::error::{ToolError, ToolResult};
use crate::paths::{RelPath, Root};
use crate::text::lines::LineNo;

use super::lines::{self, Ending, Stop, Window};
use super::policy::{self, Access};
use super::target;

/// Lines a range without `end_line` covers.
pub(crate) const DEFAULT_RANGE_LINES: LineNo = 200;

/// How the character limit was set, which decides the reason reported when it cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharLimit {
    /// The client's `limits.max_chars`, at or below the server's cap.
    Client(usize),
    /// `HARD_MAX_CHARS`: the default, or what a larger client value was capped to.
    Hard(usize),
}

impl CharLimit {
    /// The limit for a client's `max_chars` under the server's `hard_max_chars`.
    pub(crate) fn new(requested: Option<u64>, hard_max_chars: usize) -> CharLimit {
        match requested {
            Some(chars) if chars as usize <= hard_max_chars => CharLimit::Client(chars as usize),
            _ => CharLimit::Hard(hard_max_chars),
        }
    }

    fn chars(self) -> usize {
        match self {
            CharLimit::Client(chars) | CharLimit::Hard(chars) => chars,
        }
    }
}

/// Why a read or scan stopped where it did (the schemas' `truncated_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The file ended.
    None,
    /// The requested lines were all returned and the file goes on (`range_end` for reads,
    /// `chunk_end` for scans).
    LinesDone,
    MaxChars,
    HardLimit,
}

impl Reason {
    fn of(stop: Stop, limit: CharLimit) -> Reason {
        match (stop, limit) {
            (Stop::EndOfFile | Stop::PastEnd { .. }, _) => Reason::None,
            (Stop::LineLimit, _) => Reason::LinesDone,
            (Stop::CharLimit, CharLimit::Client(_)) => Reason::MaxChars,
            (Stop::CharLimit, CharLimit::Hard(_)) => Reason::HardLimit,
        }
    }

    pub(crate) fn truncated(self) -> bool {
        matches!(self, Reason::MaxChars | Reason::HardLimit)
    }
}

/// What the client may do with the file next, by the vault policy: edit it with
/// `vault_replace`, only append to it (daily logs), or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edit {
    Replace,
    Append,
    None,
}

impl Edit {
    fn allowed_for(rel: &RelPath) -> Edit {
        let components: Vec<&str> = rel.components().collect();
        if policy::check(&components, Access::Replace).is_ok() {
            Edit::Replace
        } else if policy::check(&components, Access::Append).is_ok() {
            Edit::Append
        } else {
            Edit::None
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Lines {
    /// The path as the server spells it (normalised, `/`-separated).
    pub path: String,
    pub window: Window,
    pub reason: Reason,
    pub edit: Edit,
}

/// The lines `vault_read` was asked for: a range, or everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    Full,
    Range {
        start_line: Option<LineNo>,
        end_line: Option<LineNo>,
    },
}

impl Span {
    /// `full` and `range` as the client gave them: the range is required unless `full`
    /// is true, and the two together are ambiguous.
    pub(crate) fn new(
        full: Option<bool>,
        range: Option<(Option<LineNo>, Option<LineNo>)>,
    ) -> ToolResult<Span> {
        match (full.unwrap_or(false), range) {
            (true, None) => Ok(Span::Full),
            (true, Some(_)) => Err(ToolError::invalid_parameter(
                "give either full=true or a range, not both",
            )
            .with_details(json!({ "field": "range", "rule": "absent when full is true" }))),
            (false, None) => Err(ToolError::invalid_parameter(
                "range is required unless full is true",
            )
            .with_details(json!({
                "field": "range",
                "rule": "required when full is false (the default)",
                "example": { "range": { "start_line": 1, "end_line": DEFAULT_RANGE_LINES } },
            }))),
            (false, Some((start_line, end_line))) => Ok(Span::Range {
                start_line,
                end_line,
            }),
        }
    }

    /// First line, line count and how the text ends.
    fn lines(self) -> ToolResult<(LineNo, LineNo, Ending)> {
        match self {
            Span::Full => Ok((1, LineNo::MAX, Ending::File)),
            Span::Range {
                start_line,
                end_line,
            } => {
                let start = start_line.unwrap_or(1);
                let end = end_line.unwrap_or(start.saturating_add(DEFAULT_RANGE_LINES - 1));
                if end < start {
                    return Err(ToolError::invalid_parameter(format!(
                        "range.end_line ({end}) is before range.start_line ({start})"
                    ))
                    .with_details(json!({ "field": "range.end_line", "rule": ">= start_line" })));
                }
                Ok((start, end - start + 1, Ending::Window))
            }
        }
    }
}

/// `vault_read`: the lines of `span` within `limit`.
pub(crate) fn read(root: &Root, path: &str, span: Span, limit: CharLimit) -> ToolResult<Lines> {
    let (start, count, ending) = span.lines()?;
    let request = WindowRequest {
        start,
        count,
        ending,
        start_field: "range.start_line",
    };
    window_of(root, path, request, limit)
}

/// `vault_scan`'s chunk size bounds, from the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkBounds {
    pub default: LineNo,
    pub max: LineNo,
}

/// `vault_scan`: `chunk_lines` lines (default and bounds from the configuration) from
/// `start_line` (default 1) within `limit`.
pub(crate) fn scan(
    root: &Root,
    path: &str,
    start_line: Option<LineNo>,
    chunk_lines: Option<LineNo>,
    bounds: ChunkBounds,
    limit: CharLimit,
) -> ToolResult<Lines> {
    let chunk = chunk_lines.unwrap_or(LineNo::from(bounds.default));
    if !(1..=LineNo::from(bounds.max)).contains(&chunk) {
        return Err(ToolError::invalid_parameter(format!(
            "chunk_lines must be between 1 and {} (VAULT_SCAN_MAX_CHUNK_LINES)",
            bounds.max
        ))
        .with_details(
            json!({ "field": "chunk_lines", "accepted": { "min": 1, "max": bounds.max } }),
        ));
    }
    let request = WindowRequest {
        start: start_line.unwrap_or(1),
        count: chunk,
        ending: Ending::Window,
        start_field: "cursor.start_line",
    };
    window_of(root, path, request, limit)
}

/// The lines a read or a scan asks for, and the name of the field its first line came
/// from (for the error when that line is past the end).
struct WindowRequest {
    start: LineNo,
    count: LineNo,
    ending: Ending,
    start_field: &'static str,
}

fn window_of(
    root: &Root,
    path: &str,
    request: WindowRequest,
    limit: CharLimit,
) -> ToolResult<Lines> {
    let rel = target(path, Access::Read)?;
    let file = root.open_file(&rel)?;
    let window = lines::window(
        file,
        &rel,
        request.start,
        request.count,
        limit.chars(),
        request.ending,
    )?;
    if let Stop::PastEnd { line_count } = window.stop {
        return Err(past_end(&rel, &request, line_count));
    }
    Ok(Lines {
        path: rel.as_str().to_string(),
        reason: Reason::of(window.stop, limit),
        edit: Edit::allowed_for(&rel),
        window,
    })
}

/// A first line after the file's last: an error rather than an empty window, whose range
/// (`start_line` after `end_line`) would read as inverted, and which a client following
/// it would take for the end of a file that has lines.
fn past_end(rel: &RelPath, request: &WindowRequest, line_count: LineNo) -> ToolError {
    ToolError::invalid_parameter(format!(
        "{} ({}) is past the end of '{}', which has {line_count} lines",
        request.start_field,
        request.start,
        rel.as_str()
    ))
    .with_details(json!({
        "field": request.start_field,
        "rule": "<= line_count",
        "line_count": line_count,
        "path": rel.as_str(),
    }))
}

/// Artifacts are parsed whole; a chart or note larger than this is not an artifact.
pub(crate) const MAX_ARTIFACT_BYTES: u64 = 8 * 1024 * 1024;

/// The whole text of the vault file `path`, for the artifact parsers, with the path as the
/// server spells it.
pub(crate) fn artifact_text(root: &Root, path: &str) -> ToolResult<(RelPath, String)> {
    let rel = target(path, Access::Read)?;
    let seen = root.stat(&rel)?;
    let limit = super::WholeFileLimit {
        max_bytes: MAX_ARTIFACT_BYTES,
        rule: "max_artifact_bytes",
        refused: "it is too large to be read as an artifact",
    };
    let bytes = super::read_whole(root, &rel, &seen, limit)?;
    let text = super::decode_text(&rel, bytes)?;
    Ok((rel, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn the_client_limit_counts_only_up_to_the_hard_cap() {
        assert_eq!(CharLimit::new(Some(10), 100), CharLimit::Client(10));
        assert_eq!(CharLimit::new(Some(100), 100), CharLimit::Client(100));
        assert_eq!(CharLimit::new(Some(101), 100), CharLimit::Hard(100));
        assert_eq!(CharLimit::new(None, 100), CharLimit::Hard(100));
    }

    #[test]
    fn spans_need_a_range_unless_full() {
        assert_eq!(Span::new(Some(true), None), Ok(Span::Full));
        for (full, range) in [
            (None, None),
            (Some(false), None),
            (Some(true), Some((None, None))),
        ] {
            assert_eq!(
                Span::new(full, range).unwrap_err().code,
                ErrorCode::InvalidParameter
            );
        }
        let span = Span::new(None, Some((Some(5), None))).unwrap();
        assert_eq!(span.lines(), Ok((5, DEFAULT_RANGE_LINES, Ending::Window)));
        let span = Span::new(None, Some((Some(5), Some(4)))).unwrap();
        assert_eq!(span.lines().unwrap_err().code, ErrorCode::InvalidParameter);
        assert_eq!(Span::Full.lines(), Ok((1, LineNo::MAX, Ending::File)));
    }

    #[test]
    fn daily_logs_are_offered_appends_and_other_files_replaces() {
        let edit = |path: &str| Edit::allowed_for(&crate::paths::parse_relative(path).unwrap());
        assert_eq!(edit("drafts/a.md"), Edit::Replace);
        assert_eq!(edit("artifacts/daily/2026-11-25.md"), Edit::Append);
        assert_eq!(edit("artifacts/run.sh"), Edit::None);
    }
}
