//! Artifacts: what agents build in the vault from manual text (flowcharts, structured
//! notes), checked against the lines they cite.
//!
//! Architecture invariant: pure functions over text and values. Nothing here reads a file
//! or knows MCP; the tool layer reads the artifact, answers `line_count_of` for the audit
//! and counts the lines of the file whose coverage it reports.
//!
//! An artifact is written in one of two forms that parse into one model ([`Artifact`]):
//!
//! - **JSON** (`.json`): a document valid against `schemas/common/artifact.json`:
//!   `{"elements": [{"id", "text", "kind"?, "source_lines": [{"path", "start_line",
//!   "end_line"}], "next": [ids], "refs": [ids]}]}`.
//! - **Markdown** (`.md`): a Markdown file with exactly one ```` ```mermaid ```` block
//!   holding a `flowchart` (or `graph`). Nodes are elements, links are `next` edges, and
//!   Mermaid comments carry what a chart cannot show, so the chart renders unchanged:
//!
//! ````markdown
//! # 休暇申請フロー
//!
//! ```mermaid
//! flowchart TD
//!   A([申請]) --> B{上長承認?}
//!   B -->|yes| C[経理へ回付]
//!   B -->|no| D([差戻し])
//!   %% src A: drafts/leave.md#L40-L44
//!   %% src B: drafts/leave.md#L41
//!   %% src C: drafts/leave.md#L45-L47
//!   %% src D: drafts/leave.md#L48
//!   %% ref C: D
//!   %% ref D: C
//! ```
//! ````
//!
//! - `%% src ID: path#Lstart-Lend` (or `#Lline` for one line) cites lines of a vault file
//!   (path relative to the vault root). One range per line; repeat the line for more.
//! - `%% ref ID: OTHER, ...` records cross references from `ID`. References are meant to
//!   be mutual, so write both directions (`%% ref C: D` and `%% ref D: C`).
//! - The shape gives the kind: `{text}` is a decision; `([text])` or `((text))` is an end
//!   when links lead into it and none leaves it, a start otherwise; any other shape (or a
//!   bare id) is a step. The label is the element's text.
//! - Every visible link (`-->`, `---`, `-.->`, `==>`, with or without `|label|`) is a flow
//!   edge from left to right, `<-->` goes both ways, `~~~` is layout only.
//! - Annotations must name nodes of the chart; other `%%` comments, `classDef`, `style`,
//!   `subgraph` and the like are ignored. Parse errors are `invalid_parameter` naming the
//!   line of the Markdown file.
//!
//! Code map: `model` is the shared model; `json`, `markdown` (with `mermaid` and
//! `annotation`) read the two forms; `audit` finds problems; `coverage` and `stop_rule`
//! are `vault_coverage`'s measure and its stop rule; `rounds` is the per-session
//! bookkeeping the stop rule's marginal gain is computed from.

mod annotation;
pub(crate) mod audit;
pub(crate) mod coverage;
mod invalid;
mod json;
mod markdown;
mod mermaid;
mod model;
pub(crate) mod rounds;
pub(crate) mod stop_rule;

pub(crate) use audit::{audit, severe};
pub(crate) use coverage::{coverage, LineProfile, LineRange};
pub(crate) use json::parse_json;
pub(crate) use markdown::parse_markdown;
pub(crate) use model::Artifact;
pub(crate) use rounds::Rounds;
pub(crate) use stop_rule::{est_tokens, marginal_gain, next_step, NextStep};

use serde_json::json;

use crate::error::ToolResult;

/// Parses the artifact at vault path `path` (only its extension matters) from its text.
pub(crate) fn parse(path: &str, text: &str) -> ToolResult<Artifact> {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("json") => parse_json(text),
        Some("md") => parse_markdown(text),
        _ => Err(invalid::in_document(
            "an artifact is a .json or .md file",
            json!({ "path": path, "accepted": [".json", ".md"] }),
        )),
    }
}

#[cfg(test)]
mod tests;
