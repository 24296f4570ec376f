//! `vault_ls`: the files in a scope with their size, type and line count.
//!
//! Listing is the cheap way to see what the vault holds, so it must stay cheap: sizes come
//! from the walk's `lstat`, and lines are counted (streaming, memchr) only for the files of
//! the page being answered and only up to [`MAX_COUNTED_BYTES`].

use std::io::{BufRead, BufReader};

use crate::error::ToolResult;
use crate::paths::{Entry, Root};

use super::scope::{Scope, ScopeRequest};

/// Files larger than this are listed without a line count: counting a 2 GB log for a
/// listing would cost seconds that nobody asked for.
pub const MAX_COUNTED_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    pub path: String,
    /// The extension in lower case, or `"file"` when the name has none.
    pub file_type: String,
    pub size_bytes: u64,
}

/// Every file in scope, sorted by path.
pub fn list(root: &Root, request: ScopeRequest<'_>) -> ToolResult<Vec<ListedFile>> {
    let scope = Scope::new(request)?;
    Ok(scope.files(root)?.iter().map(listed).collect())
}

fn listed(entry: &Entry) -> ListedFile {
    let file_type = super::policy::extension_of(entry.path.file_name().unwrap_or_default())
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
pub fn line_count(root: &Root, file: &ListedFile) -> Option<u64> {
    if file.size_bytes > MAX_COUNTED_BYTES {
        return None;
    }
    let rel = super::target(&file.path, super::policy::Access::Read).ok()?;
    let mut reader = BufReader::new(root.open_file(&rel).ok()?);
    let (mut newlines, mut last) = (0u64, None);
    loop {
        let buffer = reader.fill_buf().ok()?;
        let Some(&final_byte) = buffer.last() else {
            break;
        };
        newlines += memchr::memchr_iter(b'\n', buffer).count() as u64;
        last = Some(final_byte);
        let consumed = buffer.len();
        reader.consume(consumed);
    }
    Some(match last {
        None => 0,
        Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    })
}
