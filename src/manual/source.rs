//! A manual file's text, read again from the manuals root when a reader needs it.
//!
//! The index keeps each file's line table and outline, not its text (issue 16): a corpus
//! of manuals held whole in memory is what the server's memory must not grow to, and a
//! start from the catalog would otherwise read every file before its first answer. A
//! reader (`manual_read`, `manual_excepts`, a copy into the vault, a search deriving a
//! candidate's text) reads its file when it needs it, through the path layer (no link
//! followed), and checks that the file is still the one the line table was made from:
//! the file's status before and after the read against the stamp the index recorded,
//! and the decoded length against the indexed text's. Serving a newer text under the
//! old line table would cut lines and sections at the wrong bytes, so a mismatch is an
//! error (`conflict`), and the index is told to walk the tree again on its next refresh
//! (the change watch usually sees the event too; this does not depend on it).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::catalog::read_manual_file_at;
use super::file::{decode, TextSource};
use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::paths::Root;

/// The manuals root one index reads its files from, shared by the index and every
/// snapshot of it.
#[derive(Debug)]
pub(crate) struct ManualsSource {
    root: PathBuf,
    /// Set by a read that found its file changed: the next refresh walks the tree even if
    /// the change watch saw nothing.
    stale: AtomicBool,
    /// Files opened and read since the index was made, at load and on demand (logged
    /// with each update; tests tell a start that read nothing by it).
    reads: AtomicUsize,
}

impl ManualsSource {
    pub(super) fn new(root: PathBuf) -> Arc<ManualsSource> {
        Arc::new(ManualsSource {
            root,
            stale: AtomicBool::new(false),
            reads: AtomicUsize::new(0),
        })
    }

    pub(super) fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Whether a read found a file changed since the last refresh; clears the mark.
    pub(super) fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::Relaxed)
    }

    /// See the field.
    pub(crate) fn reads(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }

    /// Counts one file read (the loader's reads go through its own opener).
    pub(super) fn count_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }
}

impl TextSource for ManualsSource {
    /// The decoded text of `manual_id/path` if the file is still at stamp fingerprint
    /// `version` and its text `text_len` bytes long; else a `conflict` naming the file
    /// and why, and the index marked for a walk.
    fn read_checked(
        &self,
        manual_id: &str,
        path: &str,
        version: u64,
        text_len: usize,
    ) -> ToolResult<String> {
        self.count_read();
        let read = || -> Result<String, String> {
            let root = Root::open(&self.root)
                .map_err(|error| format!("manuals root unreadable: {}", error.kind()))?;
            let bytes = read_manual_file_at(&mut root.file_opener(), manual_id, path, version)?;
            let text = decode(bytes)?;
            if text.len() != text_len {
                return Err(format!(
                    "its text is {} bytes, the indexed text {text_len}",
                    text.len()
                ));
            }
            Ok(text)
        };
        read().map_err(|reason| {
            self.stale.store(true, Ordering::Relaxed);
            tracing::warn!(manual_id, path, reason = %reason, "manual file changed under the index");
            ToolError::new(
                ErrorCode::Conflict,
                format!(
                    "{manual_id}/{path} changed since the server indexed it ({reason}); \
                     the next call reads it again"
                ),
            )
            .with_details(json!({ "manual_id": manual_id, "path": path, "reason": reason }))
        })
    }
}

#[cfg(test)]
mod tests;
