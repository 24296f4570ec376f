//! Vault domain: the writable folder's policy, listing, reads, scans, search and writes.
//!
//! Architecture invariant: nothing here knows MCP or JSON-RPC, and every file is reached
//! through [`crate::paths::Root`]. Each entry point takes the client's path string and
//! runs it through [`target`] first, so spelling rules (`paths`) and vault policy
//! (`policy`) are decided before any byte is read or written.
//!
//! Code map: `policy` says what may be done where; `glob` and `scope` narrow listings and
//! searches; `listing` is `vault_ls`; `lines` streams a window of lines out of a file and
//! is shared by `read` (`vault_read`, `vault_scan`); `profile` counts lines and finds the
//! blank ones without holding a file; `blocks` reads a file as blocks of whole lines for
//! `search` (`vault_search`), `find` (`vault_find`) and `forms` (the cache of their
//! normalised text); `write` is `vault_create`, `vault_write` and `vault_replace`.

mod blocks;
pub(crate) mod find;
pub(crate) mod forms;
pub(crate) mod glob;
mod lines;
pub(crate) mod listing;
pub(crate) mod policy;
pub(crate) mod profile;
pub(crate) mod read;
pub(crate) mod scope;
pub(crate) mod search;
pub(crate) mod write;

use std::io::Read;
use std::path::Path;

use serde_json::json;

use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::paths::{parse_relative, RelPath, Root};
use crate::text::lines::{newlines, LineNo};
use policy::Access;

/// Opens the vault root. The folder is created at start when missing
/// (`workspace::prepare`), never here: a vault that is gone while the server runs was
/// removed or moved by someone, and recreating it empty would hide that. Failure names
/// the setting, never the server path.
pub(crate) fn open_root(path: &Path) -> ToolResult<Root> {
    Root::open(path).map_err(|error| {
        ToolError::new(
            ErrorCode::NotFound,
            "VAULT_ROOT cannot be opened; check the server's configuration (`manvault doctor`)",
        )
        .with_details(json!({ "setting": "VAULT_ROOT", "error": error.kind().to_string() }))
    })
}

/// A client's vault path, checked for spelling and then for `access` by the policy.
pub(crate) fn target(path: &str, access: Access) -> ToolResult<RelPath> {
    let rel = parse_relative(path)?;
    let components: Vec<&str> = rel.components().collect();
    policy::check(&components, access)?;
    Ok(rel)
}

/// The error for a file that is not UTF-8 text: vault tools handle text, and the line
/// tells the client where the offending bytes are.
pub(crate) fn not_text(rel: &RelPath, line: LineNo) -> ToolError {
    ToolError::invalid_parameter(format!(
        "'{}' is not UTF-8 text (line {line}); vault tools read and edit text files only",
        rel.as_str()
    ))
    .with_details(json!({ "path": rel.as_str(), "line": line, "rule": "utf8" }))
}

/// The bound on a file read whole (edits and artifacts are; reads and scans stream).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WholeFileLimit {
    pub max_bytes: u64,
    /// The `rule` named in the error's details.
    pub rule: &'static str,
    /// What cannot be done to a larger file, for the message.
    pub refused: &'static str,
}

/// The whole file `rel`, whose status `seen` the caller took (and checked) first;
/// `invalid_parameter` above `limit.max_bytes`, since the file would be held in memory.
pub(crate) fn read_whole(
    root: &Root,
    rel: &RelPath,
    seen: &crate::paths::FileInfo,
    limit: WholeFileLimit,
) -> ToolResult<Vec<u8>> {
    if seen.size > limit.max_bytes {
        return Err(ToolError::invalid_parameter(format!(
            "'{}' is larger than {} MiB; {}",
            rel.as_str(),
            limit.max_bytes / (1024 * 1024),
            limit.refused
        ))
        .with_details(json!({
            "path": rel.as_str(),
            "rule": limit.rule,
            "max_bytes": limit.max_bytes,
        })));
    }
    let mut bytes = Vec::with_capacity(seen.size as usize);
    root.open_file(rel)?
        .take(limit.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| read_failed(rel, error))?;
    Ok(bytes)
}

/// `bytes` of the file `rel` as text, or the error naming the first line that is not UTF-8.
pub(crate) fn decode_text(rel: &RelPath, bytes: Vec<u8>) -> ToolResult<String> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        not_text(rel, newlines(valid).saturating_add(1))
    })
}

/// A read that failed after the file was opened (an I/O error, not a refusal): reported
/// as `conflict`, like the path module's other unexpected I/O failures, since retrying
/// may help.
pub(crate) fn read_failed(rel: &RelPath, error: std::io::Error) -> ToolError {
    tracing::warn!(path = rel.as_str(), error = %error, "reading a vault file failed");
    ToolError::new(
        ErrorCode::Conflict,
        format!("reading '{}' failed: {error}", rel.as_str()),
    )
    .with_details(json!({ "path": rel.as_str(), "rule": "io_error" }))
}

/// Whether a listed name is hidden (`.obsidian`, `.git`, `.system`): hidden entries are
/// neither listed nor searched, so tool folders and the server's own state stay out of
/// the agent's way.
pub(crate) fn is_hidden(name: &str) -> bool {
    name.starts_with('.')
}
