//! The errors an unreadable artifact produces. All are `invalid_parameter` (the artifact is
//! the argument a client handed in, by path), and each names where to look: a line of the
//! Markdown file, or an element of the JSON document.

use serde_json::{json, Value};

use crate::error::ToolError;
use crate::text::lines::LineNo;

/// A problem at `line` (1-based, counted in the whole Markdown file).
pub(crate) fn at_line(line: LineNo, problem: impl Into<String>) -> ToolError {
    let problem = problem.into();
    ToolError::invalid_parameter(format!("artifact line {line}: {problem}"))
        .with_details(json!({ "line": line, "problem": problem }))
}

/// A problem with the element `element_id` as a whole.
pub(crate) fn at_element(element_id: &str, problem: impl Into<String>) -> ToolError {
    let problem = problem.into();
    ToolError::invalid_parameter(format!("artifact element {element_id}: {problem}"))
        .with_details(json!({ "element_id": element_id, "problem": problem }))
}

/// A problem with the document as a whole; `details` says what was found.
pub(crate) fn in_document(problem: impl Into<String>, details: Value) -> ToolError {
    ToolError::invalid_parameter(format!("artifact: {}", problem.into())).with_details(details)
}
