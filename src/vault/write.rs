//! `vault_create`, `vault_write` and `vault_replace`: every change to the vault.
//!
//! Policy is checked on the path before anything is opened; the bytes then go through
//! [`Root`]'s writers (exclusive create, temp file + rename, locked append), so a crash
//! leaves the old or the new file, never a mix. Rules that depend on the result, a `.json`
//! artifact having to stay valid JSON, are checked on the complete new content before it
//! is written: a refused write writes nothing.

use serde_json::json;

use crate::error::{ToolError, ToolResult};
use crate::paths::{FileInfo, RelPath, Root};

use super::policy::{self, Access};
use super::profile::{count_lines, LineCount};
use super::target;

/// Files larger than this are not edited with `vault_replace` (or appended to as JSON),
/// since the edit holds the whole file in memory twice; the error says so.
pub(crate) const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// The path as the server spells it (normalised, `/`-separated).
    pub path: String,
    pub bytes: u64,
}

/// `vault_write`'s modes: the schema's `WriteMode`.
pub(crate) use crate::contract::types::WriteMode;

/// `vault_create`: a new file, with any missing parent folders; `conflict` if it exists.
pub(crate) fn create(root: &Root, path: &str, content: &str) -> ToolResult<Written> {
    let rel = target(path, Access::Create)?;
    require_json_if_artifact(&rel, content.as_bytes())?;
    let bytes = root.create_new(&rel, content.as_bytes(), true)?;
    Ok(written(&rel, bytes))
}

/// `vault_write`: overwrite or append to an existing file (`not_found` otherwise).
pub(crate) fn write(
    root: &Root,
    path: &str,
    content: &str,
    mode: WriteMode,
) -> ToolResult<Written> {
    let access = match mode {
        WriteMode::Overwrite => Access::Overwrite,
        WriteMode::Append => Access::Append,
    };
    let rel = target(path, access)?;
    let bytes = match mode {
        WriteMode::Overwrite => {
            require_json_if_artifact(&rel, content.as_bytes())?;
            root.replace(&rel, content.as_bytes(), None)?
        }
        WriteMode::Append if json_artifact(&rel) => append_to_json(root, &rel, content)?,
        WriteMode::Append => root.append(&rel, content.as_bytes())?,
    };
    Ok(written(&rel, bytes))
}

/// The line count of `path` before an append to it (where the appended lines will start),
/// checked like the append itself: policy first, and a hard-linked file is refused before
/// it is read, as every read made in order to write is.
pub(crate) fn append_point(root: &Root, path: &str) -> ToolResult<LineCount> {
    let rel = target(path, Access::Append)?;
    root.stat(&rel)?.refuse_hardlinked(&rel)?;
    count_lines(root.open_file(&rel)?).map_err(|error| super::read_failed(&rel, error))
}

/// Appending to a `.json` artifact is only allowed when the result is still JSON, so it is
/// a replace of the whole file, conditional on the file not changing meanwhile.
fn append_to_json(root: &Root, rel: &RelPath, content: &str) -> ToolResult<u64> {
    let (mut bytes, seen) = read_for_edit(root, rel)?;
    bytes.extend_from_slice(content.as_bytes());
    require_json_if_artifact(rel, &bytes)?;
    root.replace(rel, &bytes, Some(&seen))?;
    Ok(content.len() as u64)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replaced {
    pub path: String,
    pub replacements: u64,
    pub occurrences: u64,
}

/// A `vault_replace` computed against one version of the file, not yet written.
///
/// Split from [`Edit::commit`] so that the read and the write are visibly two steps: the
/// commit succeeds only if the file is still the version that was read (`conflict`
/// otherwise, and the newer content stays).
#[derive(Debug)]
pub(crate) struct Edit {
    rel: RelPath,
    seen: FileInfo,
    content: Vec<u8>,
    replacements: u64,
    occurrences: u64,
}

impl Edit {
    /// Reads `path` and replaces the first `max_replacements` literal occurrences of
    /// `find`; `not_found` when there is none.
    pub(crate) fn prepare(
        root: &Root,
        path: &str,
        find: &str,
        replace: &str,
        max_replacements: u64,
    ) -> ToolResult<Edit> {
        let rel = target(path, Access::Replace)?;
        let (old, seen) = read_for_edit(root, &rel)?;
        let old = super::decode_text(&rel, old)?.into_bytes();
        let finder = memchr::memmem::Finder::new(find.as_bytes());
        let positions: Vec<usize> = finder.find_iter(&old).collect();
        if positions.is_empty() {
            return Err(ToolError::not_found(format!(
                "the text to find does not occur in '{}'; the file is unchanged",
                rel.as_str()
            ))
            .with_details(json!({ "path": rel.as_str(), "field": "find" })));
        }
        let replaced = positions
            .len()
            .min(max_replacements.try_into().unwrap_or(usize::MAX));
        let mut content = Vec::with_capacity(old.len());
        let mut copied = 0;
        for &position in &positions[..replaced] {
            content.extend_from_slice(&old[copied..position]);
            content.extend_from_slice(replace.as_bytes());
            copied = position + find.len();
        }
        content.extend_from_slice(&old[copied..]);
        require_json_if_artifact(&rel, &content)?;
        Ok(Edit {
            rel,
            seen,
            content,
            replacements: replaced as u64,
            occurrences: positions.len() as u64,
        })
    }

    /// Writes the edit atomically if the file is still the version read.
    pub(crate) fn commit(self, root: &Root) -> ToolResult<Replaced> {
        root.replace(&self.rel, &self.content, Some(&self.seen))?;
        Ok(Replaced {
            path: self.rel.as_str().to_string(),
            replacements: self.replacements,
            occurrences: self.occurrences,
        })
    }
}

/// `vault_replace`.
pub(crate) fn replace(
    root: &Root,
    path: &str,
    find: &str,
    replace: &str,
    max_replacements: u64,
) -> ToolResult<Replaced> {
    Edit::prepare(root, path, find, replace, max_replacements)?.commit(root)
}

/// The whole file and the version it was read at. The version is taken first: whatever
/// changes the file after that makes the later conditional replace a `conflict`.
fn read_for_edit(root: &Root, rel: &RelPath) -> ToolResult<(Vec<u8>, FileInfo)> {
    let seen = root.stat(rel)?;
    seen.refuse_hardlinked(rel)?;
    let limit = super::WholeFileLimit {
        max_bytes: MAX_EDIT_BYTES,
        rule: "max_edit_bytes",
        refused: "it cannot be edited in place",
    };
    let bytes = super::read_whole(root, rel, &seen, limit)?;
    Ok((bytes, seen))
}

fn json_artifact(rel: &RelPath) -> bool {
    let components: Vec<&str> = rel.components().collect();
    policy::requires_valid_json(&components)
}

/// A `.json` artifact's new content must parse (DECISIONS.md), or nothing is written.
fn require_json_if_artifact(rel: &RelPath, content: &[u8]) -> ToolResult<()> {
    if !json_artifact(rel) {
        return Ok(());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(content)
        .map(drop)
        .map_err(|error| {
            ToolError::invalid_parameter(format!(
                "'{}' would not be valid JSON after this write ({error}); nothing was written",
                rel.as_str()
            ))
            .with_details(json!({
                "path": rel.as_str(),
                "rule": "artifact_json",
                "line": error.line(),
                "column": error.column(),
            }))
        })
}

fn written(rel: &RelPath, bytes: u64) -> Written {
    Written {
        path: rel.as_str().to_string(),
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::paths::parse_relative;

    #[test]
    fn a_replace_whose_file_changed_after_its_read_is_a_conflict_and_keeps_the_newer_content() {
        let vault = crate::test_support::tree(&[("drafts/a.md", "draft one\n")]);
        let root = Root::open(vault.path()).unwrap();
        let read = || std::fs::read_to_string(vault.path().join("drafts/a.md")).unwrap();
        let edit = Edit::prepare(&root, "drafts/a.md", "one", "two", 1).unwrap();
        root.append(&parse_relative("drafts/a.md").unwrap(), b"newer line\n")
            .unwrap();
        let error = edit.commit(&root).unwrap_err();
        assert_eq!(error.code, ErrorCode::Conflict);
        assert_eq!(read(), "draft one\nnewer line\n");
        // Prepared against the current version, the same edit goes through.
        let edit = Edit::prepare(&root, "drafts/a.md", "one", "two", 1).unwrap();
        assert_eq!(edit.commit(&root).unwrap().replacements, 1);
        assert_eq!(read(), "draft two\nnewer line\n");
    }
}
