//! `manual_excepts`: every line of a manual (or of one node) that carries an exception
//! term, as bounded snippets.
//!
//! The point is completeness, so the scan covers every line and reports a `total`; the
//! items are paged so a manual with thousands of caveats does not flood a client. Lines in
//! code blocks are skipped: an `except` in a code sample is not a caveat of the manual.

use super::exceptions::{first_exception, ExceptionCategory, ExceptionMatch};
use super::file::ManualFile;
use super::index::ManualIndex;
use super::lines::LineSpan;
use crate::error::ToolResult;
use crate::text::lines::LineNo;
use crate::text::snippet::window_around;

/// Characters of context a snippet may hold, term included.
pub(crate) const EXCEPT_SNIPPET_CHARS: usize = 160;
pub(crate) const DEFAULT_EXCEPTS_LIMIT: usize = 50;
/// Larger pages are clamped to this.
pub(crate) const MAX_EXCEPTS_LIMIT: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptsRequest<'a> {
    pub manual_id: &'a str,
    /// Narrows the scan to this node's range (descendants included).
    pub node_id: Option<&'a str>,
    pub offset: usize,
    /// [`DEFAULT_EXCEPTS_LIMIT`] when absent; 0 returns only the total.
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExceptItem {
    pub path: String,
    pub start_line: LineNo,
    pub snippet: String,
    pub term: &'static str,
    pub category: ExceptionCategory,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExceptsPage {
    /// Matching lines in the whole scope, not only this page.
    pub total: usize,
    pub offset: usize,
    /// The page size applied (after clamping).
    pub limit: usize,
    /// Sorted by (path, line).
    pub items: Vec<ExceptItem>,
}

struct Hit<'a> {
    file: &'a ManualFile,
    line: LineNo,
    /// The line's text: each file is read once, its text dropped after its scan.
    text: String,
    found: ExceptionMatch,
}

/// An offset past the end is not an error: the page is empty and `total` is real, so a
/// client can tell "done" from "nothing found".
pub fn manual_excepts(index: &ManualIndex, request: &ExceptsRequest) -> ToolResult<ExceptsPage> {
    let scopes: Vec<(&ManualFile, LineSpan)> = match request.node_id {
        Some(node_id) => {
            let (file, node) = index.node(request.manual_id, node_id)?;
            vec![(file, node.span())]
        }
        None => index
            .files(Some(request.manual_id))?
            .into_iter()
            .map(|listed| {
                (
                    listed.file,
                    LineSpan {
                        start_line: 1,
                        end_line: listed.file.line_count(),
                    },
                )
            })
            .collect(),
    };
    let limit = request
        .limit
        .unwrap_or(DEFAULT_EXCEPTS_LIMIT)
        .min(MAX_EXCEPTS_LIMIT);
    let mut hits: Vec<Hit> = Vec::new();
    for (file, span) in scopes {
        hits.extend(hits_in(file, span)?);
    }
    let items = hits
        .iter()
        .skip(request.offset)
        .take(limit)
        .map(item)
        .collect();
    Ok(ExceptsPage {
        total: hits.len(),
        offset: request.offset,
        limit,
        items,
    })
}

fn hits_in(file: &ManualFile, span: LineSpan) -> ToolResult<Vec<Hit<'_>>> {
    // A file with a problem has no text to scan.
    if file.problem().is_some() {
        return Ok(Vec::new());
    }
    let original = file.read_text()?;
    Ok((span.start_line..=span.end_line)
        .filter(|&line| !file.is_code_line(line))
        .filter_map(|line| {
            let text = original.lines(line, line);
            let found = first_exception(text)?;
            Some(Hit {
                file,
                line,
                text: text.to_owned(),
                found,
            })
        })
        .collect())
}

fn item(hit: &Hit) -> ExceptItem {
    let text = hit.text.as_str();
    let window = window_around(text, hit.found.range.clone(), EXCEPT_SNIPPET_CHARS);
    ExceptItem {
        path: hit.file.path().to_owned(),
        start_line: hit.line,
        snippet: text[window].trim().to_owned(),
        term: hit.found.term.term,
        category: hit.found.term.category,
    }
}
