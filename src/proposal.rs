//! A call the server proposes as the agent's next step (`next_actions`, spec_v2 §7), as the
//! domains decide it: which tool, with which values, how sure.
//!
//! The domains (the two find verdicts, the vault reads, the audits) say *what* to call in
//! their own terms; `tools::proposal` renders each `Call` through the generated input type
//! of the tool it names, so the compiler checks every proposed parameter against the
//! published schema, and no domain module spells another tool's parameter names.

use crate::contract::types::HitKind;
use crate::text::lines::LineNo;

/// A proposed call and how confident the server is that it is the right next step (0..1;
/// the answer states it to two decimals). Proposals are listed best first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proposal {
    pub call: Call,
    pub confidence: f32,
}

impl Proposal {
    pub(crate) fn new(call: Call, confidence: f32) -> Proposal {
        Proposal { call, confidence }
    }
}

/// The calls the server proposes, each with the fewest parameters that make it valid
/// (the edits leave the text to the agent: the output schema lists them under
/// `x-partial-params`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    /// `manual_hits`: one list of a trace.
    ManualHits { trace_id: String, kind: HitKind },
    /// `manual_read` of the section whose heading is `start_line`; without a line, the
    /// (JSON) file whole, its default scope.
    ManualRead {
        trace_id: String,
        manual_id: String,
        path: String,
        start_line: Option<LineNo>,
    },
    /// `manual_find` of the same query: continuing a trace, or one stage further.
    ManualFind {
        query: String,
        only_unscanned_from: Option<String>,
        max_stage: Option<u8>,
    },
    /// `vault_read` from `start_line` (to `end_line`, or on), with the client's own
    /// `max_chars`.
    VaultRead {
        path: String,
        start_line: LineNo,
        end_line: Option<LineNo>,
        max_chars: Option<u64>,
    },
    /// `vault_find` of the same query: continuing a trace, or in another scope.
    VaultFind {
        query: String,
        scope: Option<FindScope>,
        only_unscanned_from: Option<String>,
    },
    /// `vault_scan` of a file from `start_line` (absent: line 1).
    VaultScan {
        path: String,
        start_line: Option<LineNo>,
        chunk_lines: Option<LineNo>,
        max_chars: Option<u64>,
    },
    /// `vault_coverage` of a source file, optionally by the artifacts named.
    VaultCoverage {
        path: String,
        artifact_paths: Vec<String>,
    },
    /// `vault_replace` in a file: the agent supplies what to find and its replacement.
    VaultReplace { path: String },
    /// `vault_write` appending to a file: the agent supplies the content.
    VaultAppend { path: String },
    /// Nothing more to do.
    Stop,
}

/// A `vault_find` scope, as the client spells one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FindScope {
    pub relative_dir: Option<String>,
    pub exclude_glob: Option<String>,
}

impl Call {
    /// The tool it calls (`stop` for [`Call::Stop`]).
    pub(crate) fn tool(&self) -> &'static str {
        match self {
            Call::ManualHits { .. } => "manual_hits",
            Call::ManualRead { .. } => "manual_read",
            Call::ManualFind { .. } => "manual_find",
            Call::VaultRead { .. } => "vault_read",
            Call::VaultFind { .. } => "vault_find",
            Call::VaultScan { .. } => "vault_scan",
            Call::VaultCoverage { .. } => "vault_coverage",
            Call::VaultReplace { .. } => "vault_replace",
            Call::VaultAppend { .. } => "vault_write",
            Call::Stop => "stop",
        }
    }
}
