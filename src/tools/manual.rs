//! `ManualTools` on `App`: the catalog, reads and exception extraction; the search tools
//! delegate to `find.rs`.

use super::{find, flag, page};
use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::*;
use crate::contract::ManualTools;
use crate::error::ToolResult;
use crate::manual::{self, ManualRef, ReadLimits, RequestedLimits};
use crate::text::lines::line_no;

const DEFAULT_LS_LIMIT: u64 = 200;
const DEFAULT_TOC_LIMIT: u64 = 200;

impl ManualTools for App {
    fn manual_list(
        &self,
        _input: ManualListInput,
        call: &CallContext,
    ) -> ToolResult<ManualListOutput> {
        self.with_manuals(call, |index| {
            let items = index
                .manual_ids()
                .map(|id| {
                    Ok(ManualListItem {
                        manual_id: id.to_string(),
                        file_count: index.files(Some(id))?.len() as u64,
                        skipped: index
                            .oversized(id)?
                            .map(|(path, bytes)| SkippedFile {
                                path: path.to_string(),
                                size_bytes: bytes,
                                reason: SkippedFileReason::TooLarge,
                            })
                            .collect(),
                    })
                })
                .collect::<ToolResult<Vec<_>>>()?;
            Ok(ManualListOutput { items })
        })
    }

    fn manual_ls(&self, input: ManualLsInput, call: &CallContext) -> ToolResult<ManualLsOutput> {
        self.with_manuals(call, |index| {
            let files = index
                .files(input.manual_id.as_deref())?
                .into_iter()
                .map(|listed| ManualLsItem {
                    // Said by the request when it named the manual.
                    manual_id: input
                        .manual_id
                        .is_none()
                        .then(|| listed.manual_id.to_string()),
                    path: listed.file.path().to_string(),
                    problem: listed.file.problem().map(str::to_string),
                });
            let page = page(files, input.offset, input.limit, DEFAULT_LS_LIMIT);
            Ok(ManualLsOutput {
                items: page.items,
                total: page.total,
                next_offset: page.next_offset,
            })
        })
    }

    fn manual_toc(&self, input: ManualTocInput, call: &CallContext) -> ToolResult<ManualTocOutput> {
        self.with_manuals(call, |index| {
            let only_path = match &input.path {
                Some(path) => Some(index.file(&input.manual_id, path)?.path().to_string()),
                None => None,
            };
            let max_level = input.max_level.unwrap_or(6);
            let nodes = index
                .toc(&input.manual_id)?
                .filter(|(path, _)| only_path.as_deref().is_none_or(|only| *path == only))
                .filter(|(_, node)| node.level == 0 || u64::from(node.level) <= max_level)
                .map(|(path, node)| TocNode {
                    path: path.to_owned(),
                    title: node.title.as_str().to_owned(),
                    level: u64::from(node.level),
                    line_start: u64::from(node.line_start),
                    line_end: u64::from(node.line_end),
                });
            let page = page(nodes, input.offset, input.limit, DEFAULT_TOC_LIMIT);
            Ok(ManualTocOutput {
                items: page.items,
                total: page.total,
                next_offset: page.next_offset,
            })
        })
    }

    fn manual_read(
        &self,
        input: ManualReadInput,
        call: &CallContext,
    ) -> ToolResult<ManualReadOutput> {
        let limits = input.limits.unwrap_or_default();
        let expand = input.expand.unwrap_or_default();
        let request = manual::ReadRequest {
            reference: manual_ref(input.ref_),
            scope: input.scope,
            limits: RequestedLimits {
                max_sections: limits.max_sections.map(|n| n as usize),
                max_chars: limits.max_chars.map(|n| n as usize),
                allow_file: limits.allow_file,
            },
            expand: manual::Expand {
                before_chars: expand.before_chars.map(|n| n as usize),
                after_chars: expand.after_chars.map(|n| n as usize),
            },
        };
        let server_limits = ReadLimits {
            hard_max_chars: self.config.hard_max_chars as usize,
            hard_max_sections: self.config.hard_max_sections as usize,
            allow_file_scope: self.config.allow_file_scope,
        };
        let read = self.with_manuals(call, |index| {
            manual::manual_read(index, &request, &server_limits)
        })?;
        if let (Some(trace_id), Some(manual_id)) = (&input.trace_id, &request.reference.manual_id) {
            let path = &request.reference.path;
            find::record_read(self, trace_id, manual_id, path, read.lines.start_line);
        }
        // The limits in force matter only when one cut the text.
        let cut = read.truncated;
        Ok(ManualReadOutput {
            text: read.text,
            scope: read.applied.scope,
            lines: LineRange {
                start_line: u64::from(read.lines.start_line),
                end_line: u64::from(read.lines.end_line),
            },
            truncated: flag(cut),
            max_chars: cut.then_some(read.applied.max_chars as u64),
            max_sections: read.applied.max_sections.filter(|_| cut).map(|n| n as u64),
        })
    }

    fn manual_find(
        &self,
        input: ManualFindInput,
        call: &CallContext,
    ) -> ToolResult<ManualFindOutput> {
        find::manual_find(self, input, call)
    }

    fn manual_hits(
        &self,
        input: ManualHitsInput,
        _call: &CallContext,
    ) -> ToolResult<ManualHitsOutput> {
        find::manual_hits(self, input)
    }

    fn manual_excepts(
        &self,
        input: ManualExceptsInput,
        call: &CallContext,
    ) -> ToolResult<ManualExceptsOutput> {
        let request = manual::ExceptsRequest {
            manual_id: &input.manual_id,
            node_id: input.node_id.as_deref(),
            offset: input.offset.unwrap_or(0) as usize,
            limit: input.limit.map(|n| n as usize),
        };
        let found = self.with_manuals(call, |index| manual::manual_excepts(index, &request))?;
        let end = (found.offset + found.items.len()) as u64;
        let total = found.total as u64;
        Ok(ManualExceptsOutput {
            items: found
                .items
                .into_iter()
                .map(|item| ExceptItem {
                    path: item.path,
                    start_line: u64::from(item.start_line),
                    snippet: item.snippet,
                    term: item.term.to_string(),
                    category: item.category,
                })
                .collect(),
            total,
            next_offset: (end < total).then_some(end),
        })
    }
}

/// A client's `ref` as the manual domain resolves it (`manual_read`, bridge copies). A
/// line beyond [`LineNo`](crate::text::lines::LineNo) is kept out of range rather than
/// wrapped, so it is refused as such.
pub(super) fn manual_ref(reference: Ref) -> ManualRef {
    ManualRef {
        target: reference.target.unwrap_or(RefTarget::Manual),
        manual_id: reference.manual_id,
        path: reference.path,
        start_line: reference.start_line.map(line_no),
    }
}
