//! The audit log: one JSON line per memory call, appended, never rewritten, at
//! MEMORY_AUDIT_PATH (default `${VAULT_ROOT}/.system/memory_audit.jsonl`, hidden from the
//! vault tools). A line says who did what under which policy and what the boundary
//! decided: time, request id, actor, tool, outcome, scopes, decision, reason, redacted
//! count, policy version, content hashes. Never claim text, never a query: the log can be
//! shared with an auditor who may not read the memory.
//!
//! Appends go through `paths::Root` (one locked, whole write each, so two servers never
//! interleave lines), without an fsync each: like the store's commits (WAL,
//! `synchronous=NORMAL`), a line survives a crash of the process, and a power loss may
//! drop the last ones. An fsync a call cost more than the call itself (about 6 ms here,
//! twelve times an upsert). A failed append is logged and does not fail the call.

use serde::Serialize;

use crate::error::ToolResult;
use crate::paths::{RelPath, Root};

/// What a call records beside who and when; filled by the call as it goes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub(crate) struct Facts {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// allow, deny, redact, store, existing, feedback, ignored, apply ... (what happened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub redacted_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
    /// Content hashes of the claims stored, returned or rated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content_hashes: Vec<String>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// One line of the log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Record<'a> {
    pub ts: String,
    pub request_id: &'a str,
    pub actor: &'a str,
    pub tool: &'a str,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'a str>,
    #[serde(flatten)]
    pub facts: &'a Facts,
}

/// The log file, reached through the root that holds it.
pub(crate) struct AuditLog {
    root: Root,
    file: RelPath,
}

impl AuditLog {
    pub(crate) fn new(root: Root, file: RelPath) -> AuditLog {
        AuditLog { root, file }
    }

    /// Appends `record` as one line, creating the file (and its folder) on first use.
    pub(crate) fn append(&self, record: &Record) -> ToolResult<()> {
        let mut line = serde_json::to_string(record).expect("audit records serialise");
        line.push('\n');
        match self.root.append_unsynced(&self.file, line.as_bytes()) {
            Err(error) if error.code == crate::error::ErrorCode::NotFound => {
                match self.root.create_new(&self.file, line.as_bytes(), true) {
                    // Another process created it first: append after its line.
                    Err(error) if error.code == crate::error::ErrorCode::Conflict => self
                        .root
                        .append_unsynced(&self.file, line.as_bytes())
                        .map(drop),
                    other => other.map(drop),
                }
            }
            other => other.map(drop),
        }
    }
}
