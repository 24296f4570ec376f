//! `VaultTools` on `App`: converts requests to `vault::` calls and their results back,
//! and words the domain's follow-ups as `next_actions` whose params fit the proposed
//! tool's input schema. Reads and scans also count the characters they return per file,
//! the cost side of `vault_coverage`'s stop rule; `vault_coverage` and `artifact_audit`
//! live in `audit.rs`.

use super::find::MAX_FIND_RESPONSE_CHARS;
use super::{next_actions, nonzero, page, rounded, trim_actions};
use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::*;
use crate::contract::VaultTools;
use crate::error::ToolResult;
use crate::proposal::{Call, Proposal};
use crate::text::lines::line_no;
use crate::vault::find::FindRequest;
use crate::vault::listing::{self, ListedFile};
use crate::vault::read::{self, CharLimit, ChunkBounds, Edit, Lines, Reason, Span};
use crate::vault::scope::ScopeRequest;
use crate::vault::search::{self, SearchRequest};
use crate::vault::write;

const DEFAULT_LS_LIMIT: u64 = 200;
const DEFAULT_SEARCH_LIMIT: u64 = 20;

/// Confidence of the proposed next calls: continuing a scan is the point of scanning;
/// reading on is likely when a limit cut the read; an edit is only an offer.
const SCAN_ON: f32 = 0.9;
const READ_ON_AFTER_CUT: f32 = 0.6;
const READ_ON_AFTER_RANGE: f32 = 0.4;
const OFFER_EDIT: f32 = 0.3;
const STOP_AT_END: f32 = 1.0;

impl VaultTools for App {
    fn vault_ls(&self, input: VaultLsInput, _call: &CallContext) -> ToolResult<VaultLsOutput> {
        let root = self.vault()?;
        let files = listing::list(
            root,
            ScopeRequest {
                relative_dir: input.relative_dir.as_deref(),
                glob: input.glob.as_deref(),
                exclude_glob: None,
                field: "",
            },
        )?;
        let page = page(files, input.offset, input.limit, DEFAULT_LS_LIMIT);
        let items = page
            .items
            .into_iter()
            .map(|file: ListedFile| VaultLsItem {
                line_count: listing::line_count(root, &file).map(u64::from),
                path: file.path,
                size_bytes: file.size_bytes,
            })
            .collect();
        Ok(VaultLsOutput {
            items,
            total: page.total,
            next_offset: page.next_offset,
        })
    }

    fn vault_read(
        &self,
        input: VaultReadInput,
        _call: &CallContext,
    ) -> ToolResult<VaultReadOutput> {
        let span = Span::new(
            input.full,
            input
                .range
                .map(|range| (range.start_line.map(line_no), range.end_line.map(line_no))),
        )?;
        let max_chars = input.limits.and_then(|limits| limits.max_chars);
        let read = read::read(self.vault()?, &input.path, span, self.char_limit(max_chars))?;
        self.rounds()
            .note_read(&read.path, read.window.chars as u64);
        let mut next_actions = Vec::new();
        if let Some(start_line) = read.window.next_line {
            let confidence = if read.reason.truncated() {
                READ_ON_AFTER_CUT
            } else {
                READ_ON_AFTER_RANGE
            };
            let call = Call::VaultRead {
                path: read.path.clone(),
                start_line,
                end_line: None,
                max_chars,
            };
            next_actions.push(Proposal::new(call, confidence));
        }
        next_actions.extend(edit_offer(&read));
        let next_actions = super::next_actions(next_actions);
        // Only a limit that cut the text is a reason; where the read stopped on its own,
        // next_offset says whether the file goes on.
        let reason = match read.reason {
            Reason::None | Reason::LinesDone => None,
            Reason::MaxChars => Some(TruncatedReason::MaxChars),
            Reason::HardLimit => Some(TruncatedReason::HardLimit),
        };
        Ok(VaultReadOutput {
            truncated_reason: reason,
            applied_range: VaultReadOutputAppliedRange {
                start_line: u64::from(read.window.first_line),
                end_line: u64::from(read.window.last_line),
            },
            next_offset: read
                .window
                .next_line
                .map(|start_line| VaultReadOutputNextOffset {
                    start_line: u64::from(start_line),
                }),
            text: read.window.text,
            next_actions,
        })
    }

    fn vault_scan(
        &self,
        input: VaultScanInput,
        _call: &CallContext,
    ) -> ToolResult<VaultScanOutput> {
        let max_chars = input.limits.and_then(|limits| limits.max_chars);
        let bounds = ChunkBounds {
            default: self.config.vault_scan_default_chunk_lines,
            max: self.config.vault_scan_max_chunk_lines,
        };
        let scan = read::scan(
            self.vault()?,
            &input.path,
            input
                .cursor
                .and_then(|cursor| cursor.start_line)
                .map(line_no),
            input.chunk_lines.map(line_no),
            bounds,
            self.char_limit(max_chars),
        )?;
        self.rounds()
            .note_read(&scan.path, scan.window.chars as u64);
        let next_action = match scan.window.next_line {
            Some(start_line) => {
                let call = Call::VaultScan {
                    path: scan.path.clone(),
                    start_line: Some(start_line),
                    chunk_lines: input.chunk_lines.map(line_no),
                    max_chars,
                };
                Proposal::new(call, SCAN_ON)
            }
            None => Proposal::new(Call::Stop, STOP_AT_END),
        };
        let next_actions = super::next_actions(vec![next_action]);
        // Only a limit that cut the chunk is a reason; next_cursor says whether the file
        // goes on.
        let reason = match scan.reason {
            Reason::None | Reason::LinesDone => None,
            Reason::MaxChars => Some(TruncatedReason::MaxChars),
            Reason::HardLimit => Some(TruncatedReason::HardLimit),
        };
        Ok(VaultScanOutput {
            truncated_reason: reason,
            applied_range: VaultScanOutputAppliedRange {
                start_line: u64::from(scan.window.first_line),
                end_line: u64::from(scan.window.last_line),
            },
            next_cursor: scan
                .window
                .next_line
                .map(|start_line| VaultScanOutputNextCursor {
                    start_line: u64::from(start_line),
                }),
            text: scan.window.text,
            next_actions,
        })
    }

    fn vault_search(
        &self,
        input: VaultSearchInput,
        call: &CallContext,
    ) -> ToolResult<VaultSearchOutput> {
        let scope = input.scope.unwrap_or_default();
        let offset = input.offset.unwrap_or(0);
        let request = SearchRequest {
            query: &input.query,
            scope: search_scope(&scope),
            offset,
            limit: input.limit.unwrap_or(DEFAULT_SEARCH_LIMIT),
        };
        let root = self.vault()?;
        let searched = self
            .vault_finder
            .searching(root, |forms| search::search(root, forms, &request, call));
        let found = searched?;
        let end = offset + found.hits.len() as u64;
        Ok(VaultSearchOutput {
            items: found
                .hits
                .into_iter()
                .map(|hit| VaultSearchHit {
                    path: hit.path,
                    start_line: u64::from(hit.start_line),
                    snippet: hit.snippet,
                })
                .collect(),
            total: found.total,
            next_offset: (end < found.total).then_some(end),
            scanned_files: found.scanned_files,
            skipped_files: nonzero(found.skipped_files),
        })
    }

    fn vault_find(&self, input: VaultFindInput, call: &CallContext) -> ToolResult<VaultFindOutput> {
        let scope = input.scope.unwrap_or_default();
        let budget = input.budget.unwrap_or_default();
        let request = FindRequest {
            query: &input.query,
            scope: search_scope(&scope),
            only_unscanned_from: input.only_unscanned_from_trace_id.as_deref(),
            max_candidates: budget.max_candidates.map(|n| n as usize),
            time_ms: budget.time_ms,
        };
        let outcome = self.vault_finder.find(self.vault()?, &request, call)?;
        let summary = outcome.summary;
        let mut output = VaultFindOutput {
            trace_id: outcome.trace_id,
            summary: VaultFindSummary {
                terms: summary.terms as u64,
                scanned_files: summary.scanned_files as u64,
                skipped_files: nonzero(summary.skipped_files),
                unscanned_files: nonzero(summary.unscanned_files),
                hit_lines: u64::from(summary.hit_lines),
                candidates: summary.candidates as u64,
                candidate_files: summary.candidate_files as u64,
                signal_coverage: (summary.normalized + summary.loose > 0).then_some(
                    VaultFindSignalCoverage {
                        normalized: nonzero(summary.normalized),
                        loose: nonzero(summary.loose),
                    },
                ),
                file_bias_ratio: Some(rounded(summary.file_bias_ratio, 100.0))
                    .filter(|&ratio| ratio > 0.0),
                gap_count: nonzero(summary.gap_count),
                integration_status: summary.integration_status,
                cutoff_reason: summary.cutoff_reason,
            },
            next_actions: next_actions(outcome.next_actions),
        };
        trim_actions(&mut output, MAX_FIND_RESPONSE_CHARS, |output| {
            &mut output.next_actions
        });
        Ok(output)
    }

    fn vault_create(
        &self,
        input: VaultCreateInput,
        _call: &CallContext,
    ) -> ToolResult<VaultCreateOutput> {
        let written = write::create(self.vault()?, &input.path, &input.content)?;
        self.vault_finder.forms.forget(&written.path);
        Ok(VaultCreateOutput {
            written_path: written.path,
            written_bytes: written.bytes,
        })
    }

    fn vault_write(
        &self,
        input: VaultWriteInput,
        _call: &CallContext,
    ) -> ToolResult<VaultWriteOutput> {
        let written = write::write(self.vault()?, &input.path, &input.content, input.mode)?;
        self.vault_finder.forms.forget(&written.path);
        Ok(VaultWriteOutput {
            written_path: written.path,
            written_bytes: written.bytes,
            mode: input.mode,
        })
    }

    fn vault_coverage(
        &self,
        input: VaultCoverageInput,
        _call: &CallContext,
    ) -> ToolResult<VaultCoverageOutput> {
        super::audit::vault_coverage(self, input)
    }

    fn artifact_audit(
        &self,
        input: ArtifactAuditInput,
        _call: &CallContext,
    ) -> ToolResult<ArtifactAuditOutput> {
        super::audit::artifact_audit(self, input)
    }

    fn vault_replace(
        &self,
        input: VaultReplaceInput,
        _call: &CallContext,
    ) -> ToolResult<VaultReplaceOutput> {
        let replaced = write::replace(
            self.vault()?,
            &input.path,
            &input.find,
            &input.replace,
            input.max_replacements.unwrap_or(1),
        )?;
        self.vault_finder.forms.forget(&replaced.path);
        Ok(VaultReplaceOutput {
            written_path: replaced.path,
            replacements: replaced.replacements,
            occurrences: replaced.occurrences,
        })
    }
}

impl App {
    fn char_limit(&self, max_chars: Option<u64>) -> CharLimit {
        CharLimit::new(max_chars, self.config.hard_max_chars as usize)
    }
}

/// A search scope as the client spelled it; errors name its fields `scope.*`.
fn search_scope(scope: &VaultScope) -> ScopeRequest<'_> {
    ScopeRequest {
        relative_dir: scope.relative_dir.as_deref(),
        glob: scope.glob.as_deref(),
        exclude_glob: scope.exclude_glob.as_deref(),
        field: "scope.",
    }
}

/// The edit the vault allows on the file read: `vault_replace`, or an append where only
/// appends are allowed (daily logs). The caller supplies the text (see the output
/// schema's `x-partial-params`).
fn edit_offer(read: &Lines) -> Option<Proposal> {
    let path = read.path.clone();
    let call = match read.edit {
        Edit::Replace => Call::VaultReplace { path },
        Edit::Append => Call::VaultAppend { path },
        Edit::None => return None,
    };
    Some(Proposal::new(call, OFFER_EDIT))
}
