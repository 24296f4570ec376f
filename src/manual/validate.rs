//! Shape checks on the names a client sends, delegated to `paths::parse_relative` so that
//! manual paths and vault paths refuse exactly the same forms with the same codes.
//!
//! Lookups are exact matches against the scanned tree, so a bad name could at worst be
//! "not found"; checking the shape first gives the client the right code (`invalid_path`
//! or `out_of_scope`) and a reason it can act on.

use serde_json::json;

use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::paths::parse_relative;

/// A `manual_id` is one folder name under MANUALS_ROOT.
pub(crate) fn validate_manual_id(manual_id: &str) -> ToolResult<()> {
    if manual_id.is_empty() {
        return Err(ToolError::invalid_parameter("manual_id must not be empty")
            .with_details(json!({ "field": "manual_id" })));
    }
    let parsed = parse_relative(manual_id)?;
    if parsed.components().count() != 1 || parsed.as_str() != manual_id {
        return Err(ToolError::new(
            ErrorCode::InvalidPath,
            "manual_id must be a single folder name",
        )
        .with_details(json!({ "field": "manual_id", "path_rule": "single_component" })));
    }
    Ok(())
}

/// The canonical `/`-separated form of a path relative to a manual's folder.
pub(crate) fn normalize_relative_path(path: &str) -> ToolResult<String> {
    Ok(parse_relative(path)?.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code<T>(result: ToolResult<T>) -> Option<ErrorCode> {
        result.err().map(|error| error.code)
    }

    #[test]
    fn manual_ids_are_single_safe_names() {
        assert_eq!(code(validate_manual_id("handbook-ja")), None);
        assert_eq!(
            code(validate_manual_id("")),
            Some(ErrorCode::InvalidParameter)
        );
        for bad in ["a/b", "a\\b", ".", "a\u{7}", "ｈａｎｄｂｏｏｋ"] {
            assert_eq!(
                code(validate_manual_id(bad)),
                Some(ErrorCode::InvalidPath),
                "{bad:?}"
            );
        }
        assert_eq!(code(validate_manual_id("..")), Some(ErrorCode::OutOfScope));
    }

    #[test]
    fn paths_are_normalised_or_refused() {
        assert_eq!(normalize_relative_path("a/./b.md").unwrap(), "a/b.md");
        assert_eq!(normalize_relative_path("a\\b.md").unwrap(), "a/b.md");
        assert_eq!(
            code(normalize_relative_path("a/../b.md")),
            Some(ErrorCode::InvalidPath)
        );
        assert_eq!(
            code(normalize_relative_path("/etc/x.md")),
            Some(ErrorCode::OutOfScope)
        );
        assert_eq!(
            code(normalize_relative_path("a/\nb.md")),
            Some(ErrorCode::InvalidPath)
        );
    }
}
