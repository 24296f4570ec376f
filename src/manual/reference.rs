//! `ref` (spec_v2 §9.1) for the manual target: resolving it to a file and a line.
//!
//! `manual_read` and the bridge copies both start from a ref, so the rules of what makes
//! one valid live here once: `target` is `"manual"`, `manual_id` is required, the path
//! names a readable file, and `start_line` (line 1 when absent) lies inside it.

use serde_json::json;

use super::file::ManualFile;
use super::index::ManualIndex;
use crate::contract::types::RefTarget;
use crate::error::{ToolError, ToolResult};
use crate::text::lines::LineNo;

/// A position in a manual, as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualRef {
    /// Must be `manual`; kept as sent so a wrong value can be reported.
    pub target: RefTarget,
    pub manual_id: Option<String>,
    pub path: String,
    pub start_line: Option<LineNo>,
}

/// A ref checked against the index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResolvedRef<'a> {
    pub file: &'a ManualFile,
    pub start_line: LineNo,
}

impl ManualRef {
    pub(crate) fn resolve<'a>(&self, index: &'a ManualIndex) -> ToolResult<ResolvedRef<'a>> {
        if self.target != RefTarget::Manual {
            return Err(
                ToolError::invalid_parameter("ref.target must be \"manual\"").with_details(
                    json!({ "field": "ref.target", "value": self.target.as_str(), "allowed": ["manual"] }),
                ),
            );
        }
        let manual_id = self.manual_id.as_deref().ok_or_else(|| {
            ToolError::invalid_parameter("ref.manual_id is required for target \"manual\"")
                .with_details(json!({ "field": "ref.manual_id" }))
        })?;
        let file = index.file(manual_id, &self.path)?;
        if let Some(problem) = file.problem() {
            let message = format!("{} cannot be read: {problem}", self.path);
            return Err(ToolError::invalid_parameter(message).with_details(json!({
                "field": "ref.path",
                "path": self.path,
                "problem": problem,
            })));
        }
        let start_line = self.start_line.unwrap_or(1);
        if start_line == 0 || start_line > file.line_count() {
            let message = "ref.start_line is outside the file";
            return Err(ToolError::invalid_parameter(message).with_details(json!({
                "field": "ref.start_line",
                "value": start_line,
                "min": 1,
                "max": file.line_count(),
            })));
        }
        Ok(ResolvedRef { file, start_line })
    }
}
