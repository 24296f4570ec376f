//! `vault_ls`: the files in a scope with their size, type and line count.
//!
//! Listing is the cheap way to see what the vault holds, so it must stay cheap: sizes come
//! from the walk's `lstat`, and lines are counted (streaming, memchr) only for the files of
//! the page being answered and only up to [`MAX_COUNTED_BYTES`].

use crate::config::ARTIFACTS_DIR;
use crate::error::{ErrorCode, ToolResult};
use crate::paths::{Entry, Root};
use crate::text::lines::LineNo;

use super::policy;
use super::scope::{Scope, ScopeRequest};

/// Files larger than this are listed without a line count: counting a 2 GB log for a
/// listing would cost seconds that nobody asked for.
pub(crate) const MAX_COUNTED_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedFile {
    pub path: String,
    /// The extension in lower case, or `"file"` when the name has none.
    pub file_type: String,
    pub size_bytes: u64,
}

/// Every file in scope, sorted by path.
pub(crate) fn list(root: &Root, request: ScopeRequest<'_>) -> ToolResult<Vec<ListedFile>> {
    let scope = Scope::new(request)?;
    Ok(scope.files(root)?.iter().map(listed).collect())
}

/// The artifacts `vault_coverage` reads by default: every `.md` and `.json` file under
/// `artifacts/` but the daily logs (journal entries, not charts), sorted by path; none when
/// the folder does not exist yet.
pub(crate) fn artifacts(root: &Root) -> ToolResult<Vec<String>> {
    let request = ScopeRequest {
        relative_dir: Some(ARTIFACTS_DIR),
        ..ScopeRequest::default()
    };
    let files = match Scope::new(request)?.files(root) {
        Err(error) if error.code == ErrorCode::NotFound => return Ok(Vec::new()),
        files => files?,
    };
    Ok(files
        .iter()
        .filter(|entry| !policy::is_daily(&entry.path.components().collect::<Vec<_>>()))
        .map(listed)
        .filter(|file| matches!(file.file_type.as_str(), "md" | "json"))
        .map(|file| file.path)
        .collect())
}

fn listed(entry: &Entry) -> ListedFile {
    let file_type = policy::extension_of(entry.path.file_name().unwrap_or_default())
        .filter(|extension| !extension.is_empty())
        .unwrap_or_else(|| "file".to_string());
    ListedFile {
        path: entry.path.as_str().to_string(),
        file_type,
        size_bytes: entry.info.size,
    }
}

/// Lines of a listed file as an editor counts them (a final `\n` does not start another
/// line), or `None` above [`MAX_COUNTED_BYTES`] or when the file cannot be read any more
/// (it changed since the listing; the listing still shows it).
pub(crate) fn line_count(root: &Root, file: &ListedFile) -> Option<LineNo> {
    if file.size_bytes > MAX_COUNTED_BYTES {
        return None;
    }
    let counted = super::profile::line_count(root, &file.path);
    counted.ok().map(|counted| counted.lines)
}
