//! Shape checks on the names a client sends (spec_v2 §4: relative only, no `..`).
//!
//! Lookups are exact matches against the scanned tree, so a bad name could at worst be
//! "not found"; checking the shape first gives the client the right code (`invalid_path`)
//! and a reason it can act on, and keeps any odd name away from the file system.

use serde_json::json;

use crate::error::{ErrorCode, ToolError, ToolResult};

/// A `manual_id` is one folder name: non-empty, no separators, not `.`/`..`, no control
/// characters.
pub(crate) fn validate_manual_id(manual_id: &str) -> ToolResult<()> {
    if manual_id.is_empty() {
        return Err(ToolError::invalid_parameter("manual_id must not be empty")
            .with_details(json!({ "field": "manual_id" })));
    }
    let rule = if manual_id.contains(['/', '\\']) {
        Some("a manual_id is a single folder name without '/' or '\\'")
    } else {
        component_violation(manual_id)
    };
    reject_if(rule, "manual_id", manual_id)
}

/// A path is relative to the manual folder, `/`-separated, without empty, `.` or `..`
/// components, backslashes or control characters.
pub(crate) fn validate_relative_path(path: &str) -> ToolResult<()> {
    let rule = if path.is_empty() {
        Some("the path must not be empty")
    } else if path.starts_with('/') || path.as_bytes().get(1) == Some(&b':') {
        Some("the path must be relative to the manual folder")
    } else if path.contains('\\') {
        Some("use '/' as the path separator")
    } else {
        path.split('/').find_map(component_violation)
    };
    reject_if(rule, "path", path)
}

fn component_violation(component: &str) -> Option<&'static str> {
    if component.is_empty() || component == "." {
        Some("empty and '.' path components are not allowed")
    } else if component == ".." {
        Some("'..' is not allowed")
    } else if component.chars().any(char::is_control) {
        Some("control characters are not allowed")
    } else {
        None
    }
}

fn reject_if(rule: Option<&str>, field: &str, value: &str) -> ToolResult<()> {
    match rule {
        None => Ok(()),
        Some(rule) => Err(ToolError::new(
            ErrorCode::InvalidPath,
            format!("invalid {field}: {rule}"),
        )
        .with_details(json!({ "field": field, "value": value, "rule": rule }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: ToolResult<()>) -> Option<ErrorCode> {
        result.err().map(|error| error.code)
    }

    #[test]
    fn manual_ids_are_single_safe_names() {
        assert_eq!(code(validate_manual_id("handbook-ja")), None);
        assert_eq!(
            code(validate_manual_id("")),
            Some(ErrorCode::InvalidParameter)
        );
        for bad in ["a/b", "a\\b", "..", ".", "a\u{7}"] {
            assert_eq!(
                code(validate_manual_id(bad)),
                Some(ErrorCode::InvalidPath),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paths_are_relative_and_clean() {
        assert_eq!(code(validate_relative_path("a/b.md")), None);
        assert_eq!(code(validate_relative_path("a..b/c.md")), None);
        for bad in [
            "",
            "/etc/x.md",
            "C:/x.md",
            "a\\b.md",
            "a/../b.md",
            "./a.md",
            "a//b.md",
            "a/\nb.md",
        ] {
            assert_eq!(
                code(validate_relative_path(bad)),
                Some(ErrorCode::InvalidPath),
                "{bad:?}"
            );
        }
    }
}
