//! The one place proposals become `next_actions`: each [`Call`] is built as the generated
//! input type of the tool it names and serialised, so a proposed parameter the schema does
//! not have, or a required one left out, does not compile.

use serde::Serialize;
use serde_json::{Map, Value};

use super::rounded;
use crate::contract::types::*;
use crate::proposal::{Call, FindScope, Proposal};

/// Proposals as the contract's `next_actions`, in their order (confidence to two
/// decimals).
pub(crate) fn next_actions(proposals: Vec<Proposal>) -> Vec<NextAction> {
    proposals.into_iter().map(next_action).collect()
}

fn next_action(proposal: Proposal) -> NextAction {
    NextAction {
        type_: proposal.call.tool().to_owned(),
        confidence: rounded(proposal.confidence, 100.0),
        params: params(proposal.call),
    }
}

fn params(call: Call) -> Map<String, Value> {
    match call {
        Call::ManualHits { trace_id, kind } => object(ManualHitsInput {
            trace_id,
            kind: Some(kind),
            offset: None,
            limit: None,
        }),
        Call::ManualRead {
            trace_id,
            manual_id,
            path,
            start_line,
        } => object(ManualReadInput {
            ref_: Ref {
                manual_id: Some(manual_id),
                path,
                start_line: start_line.map(u64::from),
                target: None,
                json_path: None,
                title: None,
                signals: None,
                score: None,
            },
            scope: start_line.map(|_| ReadScope::Section),
            trace_id: Some(trace_id),
            expand: None,
            limits: None,
        }),
        Call::ManualFind {
            query,
            only_unscanned_from,
            max_stage,
        } => object(ManualFindInput {
            query,
            only_unscanned_from_trace_id: only_unscanned_from,
            max_stage: max_stage.map(u64::from),
            manual_id: None,
            intent: None,
            also: None,
            budget: None,
        }),
        Call::VaultRead {
            path,
            start_line,
            end_line,
            max_chars,
        } => object(VaultReadInput {
            path,
            range: Some(VaultReadInputRange {
                start_line: Some(u64::from(start_line)),
                end_line: end_line.map(u64::from),
            }),
            limits: max_chars.map(|max_chars| VaultReadInputLimits {
                max_chars: Some(max_chars),
            }),
            full: None,
        }),
        Call::VaultFind {
            query,
            scope,
            only_unscanned_from,
        } => object(VaultFindInput {
            query,
            scope: scope.map(
                |FindScope {
                     relative_dir,
                     exclude_glob,
                 }| VaultScope {
                    relative_dir,
                    exclude_glob,
                    glob: None,
                },
            ),
            only_unscanned_from_trace_id: only_unscanned_from,
            budget: None,
        }),
        Call::VaultScan {
            path,
            start_line,
            chunk_lines,
            max_chars,
        } => object(VaultScanInput {
            path,
            cursor: start_line.map(|start_line| VaultScanInputCursor {
                start_line: Some(u64::from(start_line)),
            }),
            chunk_lines: chunk_lines.map(u64::from),
            limits: max_chars.map(|max_chars| VaultScanInputLimits {
                max_chars: Some(max_chars),
            }),
        }),
        Call::VaultCoverage {
            path,
            artifact_paths,
        } => object(VaultCoverageInput {
            path,
            artifact_paths: (!artifact_paths.is_empty()).then_some(artifact_paths),
        }),
        Call::VaultReplace { path } => partial(
            VaultReplaceInput {
                path,
                find: String::new(),
                replace: String::new(),
                max_replacements: None,
            },
            &["find", "replace"],
        ),
        Call::VaultAppend { path } => partial(
            VaultWriteInput {
                path,
                mode: WriteMode::Append,
                content: String::new(),
            },
            &["content"],
        ),
        Call::Stop => Map::new(),
    }
}

fn object(input: impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(input).expect("input types serialise") {
        Value::Object(map) => map,
        other => unreachable!("tool inputs are objects, not {other}"),
    }
}

/// An input without the fields the agent fills in (listed as `x-partial-params`).
fn partial(input: impl Serialize, left_to_the_agent: &[&str]) -> Map<String, Value> {
    let mut params = object(input);
    for field in left_to_the_agent {
        assert!(
            params.remove(*field).is_some(),
            "{field} is a field of the input"
        );
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::TOOLS;
    use serde_json::json;

    fn rendered(call: Call) -> (String, Value) {
        let action = next_action(Proposal::new(call, 0.5));
        (action.type_, Value::Object(action.params))
    }

    #[test]
    fn every_proposed_tool_is_served() {
        let calls = [
            Call::ManualHits {
                trace_id: "t".into(),
                kind: HitKind::Gaps,
            },
            Call::VaultReplace {
                path: "a.md".into(),
            },
            Call::VaultAppend {
                path: "a.md".into(),
            },
            Call::VaultCoverage {
                path: "a.md".into(),
                artifact_paths: Vec::new(),
            },
            Call::ManualRead {
                trace_id: "t".into(),
                manual_id: "m".into(),
                path: "a.md".into(),
                start_line: None,
            },
            Call::ManualFind {
                query: "q".into(),
                only_unscanned_from: None,
                max_stage: None,
            },
            Call::VaultRead {
                path: "a.md".into(),
                start_line: 1,
                end_line: None,
                max_chars: None,
            },
            Call::VaultFind {
                query: "q".into(),
                scope: None,
                only_unscanned_from: None,
            },
            Call::VaultScan {
                path: "a.md".into(),
                start_line: None,
                chunk_lines: None,
                max_chars: None,
            },
        ];
        // Every variant but `Stop`, which names no tool: proposals, vault_coverage's
        // included, never name a tool this build does not serve.
        for call in calls {
            assert!(TOOLS.iter().any(|spec| spec.name == call.tool()));
        }
    }

    #[test]
    fn proposals_carry_only_what_they_set() {
        assert_eq!(
            rendered(Call::ManualRead {
                trace_id: "t-1".into(),
                manual_id: "handbook".into(),
                path: "01-leave.md".into(),
                start_line: Some(22),
            }),
            (
                "manual_read".into(),
                json!({"ref": {"manual_id": "handbook", "path": "01-leave.md", "start_line": 22}, "scope": "section", "trace_id": "t-1"})
            )
        );
        assert_eq!(
            rendered(Call::VaultAppend {
                path: "d.md".into()
            }),
            (
                "vault_write".into(),
                json!({"path": "d.md", "mode": "append"})
            )
        );
        assert_eq!(
            rendered(Call::VaultCoverage {
                path: "a.md".into(),
                artifact_paths: Vec::new()
            }),
            ("vault_coverage".into(), json!({"path": "a.md"}))
        );
        assert_eq!(rendered(Call::Stop), ("stop".into(), json!({})));
    }
}
