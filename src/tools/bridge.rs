//! `BridgeTools` on `App`: resolves the manual side under the index lock, lets `bridge`
//! compose what to write, and writes it with the vault's own write functions, so a
//! destination meets exactly the rules `vault_create` / `vault_write` enforce. Answers
//! carry metadata only.

use super::manual::manual_ref;
use crate::app::App;
use crate::bridge::{self, Copy, CopyOrigin, Mode, Selection};
use crate::call::CallContext;
use crate::contract::types::*;
use crate::contract::BridgeTools;
use crate::error::{ToolError, ToolResult};
use crate::manual::ManualRef;
use crate::paths::parse_relative;
use crate::text::lines::line_no;
use crate::vault::policy::extension_of;
use crate::vault::write::{self, WriteMode};

/// What both copy tools answer; their two generated output types have the same fields.
struct CopyWritten {
    written_path: String,
    written_bytes: u64,
    mode: CopyMode,
    source: CopySource,
    written_lines: LineRange,
    origin: CopyOrigin,
}

macro_rules! from_copy_written {
    ($($output:ident),*) => {$(
        impl From<CopyWritten> for $output {
            fn from(written: CopyWritten) -> $output {
                $output {
                    written_path: written.written_path,
                    written_bytes: written.written_bytes,
                    mode: written.mode,
                    source: written.source,
                    written_lines: written.written_lines,
                    // Not recorded is the default, said by leaving it out.
                    origin: (written.origin != CopyOrigin::None)
                        .then_some(written.origin),
                }
            }
        }
    )*};
}

from_copy_written!(BridgeCopySectionOutput, BridgeCopyFileOutput);

impl BridgeTools for App {
    fn bridge_copy_section(
        &self,
        input: BridgeCopySectionInput,
        call: &CallContext,
    ) -> ToolResult<BridgeCopySectionOutput> {
        let selection = match (input.end_line, input.include_descendants) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid_parameter(
                    "include_descendants applies to section copies; leave it out with end_line",
                )
                .with_details(serde_json::json!({ "field": "include_descendants" })))
            }
            (Some(end_line), None) => Selection::Range {
                end_line: line_no(end_line),
            },
            (None, descendants) => Selection::Section {
                include_descendants: descendants.unwrap_or(true),
            },
        };
        let written = self.copy(
            manual_ref(input.ref_),
            selection,
            &input.dest_path,
            input.mode,
            input.trace_id.as_deref(),
            call,
        )?;
        Ok(written.into())
    }

    fn bridge_copy_file(
        &self,
        input: BridgeCopyFileInput,
        call: &CallContext,
    ) -> ToolResult<BridgeCopyFileOutput> {
        let reference = ManualRef {
            target: RefTarget::Manual,
            manual_id: Some(input.manual_id),
            path: input.path,
            start_line: None,
        };
        let written = self.copy(
            reference,
            Selection::File,
            &input.dest_path,
            input.mode,
            input.trace_id.as_deref(),
            call,
        )?;
        Ok(written.into())
    }
}

impl App {
    /// Copies the `selection` at `reference` to `dest_path`. The manual text is taken out
    /// of the index first, so the index lock is not held while the vault is written.
    /// Progress is the three steps (take the text, compose, write); a call cancelled
    /// before the write writes nothing, and the write itself is atomic.
    fn copy(
        &self,
        reference: ManualRef,
        selection: Selection,
        dest_path: &str,
        mode: Option<CopyMode>,
        trace_id: Option<&str>,
        call: &CallContext,
    ) -> ToolResult<CopyWritten> {
        let mode = mode.unwrap_or(CopyMode::Create);
        call.expect_work(3, "steps");
        let copy = self.with_manuals(call, |index| {
            let resolved = reference.resolve(index)?;
            let lines = bridge::select(resolved.file, resolved.start_line, selection)?;
            let manual_id = reference.manual_id.as_deref().expect("resolve checked it");
            Copy::of(manual_id, resolved.file, lines)
        })?;
        let root = self.vault()?;
        let domain_mode = match mode {
            CopyMode::Create => Mode::Create,
            CopyMode::Overwrite => Mode::Overwrite,
            CopyMode::Append => Mode::Append,
        };
        let existing = match domain_mode {
            Mode::Append => Some(write::append_point(root, dest_path)?),
            _ => None,
        };
        let markdown = parse_relative(dest_path)?
            .file_name()
            .and_then(extension_of)
            .is_some_and(|extension| matches!(extension.as_str(), "md" | "markdown"));
        let composed = bridge::compose(&copy, markdown, domain_mode, existing);
        call.work_done(2);
        call.check_cancelled()?;
        let written = match domain_mode {
            Mode::Create => write::create(root, dest_path, &composed.content)?,
            Mode::Overwrite => {
                write::write(root, dest_path, &composed.content, WriteMode::Overwrite)?
            }
            Mode::Append => write::write(root, dest_path, &composed.content, WriteMode::Append)?,
        };
        self.vault_finder.forms.forget(&written.path);
        call.work_done(1);
        if let Some(trace_id) = trace_id {
            // The ref of the first line copied, as `manual_read` counts its first line.
            super::find::record_read(
                self,
                trace_id,
                &copy.manual_id,
                &copy.path,
                copy.lines.start_line,
            );
        }
        Ok(CopyWritten {
            written_path: written.path,
            written_bytes: written.bytes,
            mode,
            source: CopySource {
                manual_id: copy.manual_id,
                path: copy.path,
                start_line: u64::from(copy.lines.start_line),
                end_line: u64::from(copy.lines.end_line),
            },
            written_lines: LineRange {
                start_line: u64::from(composed.first_line),
                end_line: u64::from(composed.last_line),
            },
            origin: composed.origin,
        })
    }
}
