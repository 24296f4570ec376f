//! `vault_coverage` and `artifact_audit`: the files come through `vault::` (policy first,
//! streamed where they can be large), the judgement from `artifact::`, and this layer adds
//! the stop rule's rounds, the statistics record and the `next_actions` that word the
//! verdict as ready-to-call params.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::adaptive::{AuditFacts, AuditKind, Fingerprint};
use crate::app::App;
use crate::artifact::{self, Artifact, LineProfile, NextStep};
use crate::clock;
use crate::contract::types::*;
use crate::error::{ErrorCode, ToolError, ToolResult};
use crate::paths::{parse_relative, RelPath, Root};
use crate::text::lines::LineNo;
use crate::vault::{listing, profile, read};

use super::{next_actions, nonzero, significant};
use crate::proposal::{Call, Proposal};

/// Skipped artifacts named in one answer; the count has them all.
const SKIPPED_SHOWN: usize = 20;
/// Cited files an audit proposes work on: the first ones cited, enough for one round.
const SOURCES_PROPOSED: usize = 5;

/// Confidence of the proposals: the stop rule's scan and stop are its verdict; a full scan
/// after a severe finding is what the spec prescribes; a coverage check is the usual next
/// step after an audit, not a necessity.
const SCAN_UNCOVERED: f32 = 0.8;
const STOP_COVERED: f32 = 0.8;
const FULL_SCAN: f32 = 0.8;
const CHECK_COVERAGE: f32 = 0.6;

pub(super) fn vault_coverage(
    app: &App,
    input: VaultCoverageInput,
) -> ToolResult<VaultCoverageOutput> {
    let root = app.vault()?;
    let (rel, line_profile) = profile::profile(root, &input.path)?;
    let explicit = input.artifact_paths.is_some();
    let artifact_paths = match input.artifact_paths {
        Some(paths) => paths,
        None => listing::artifacts(root)?,
    };
    let mut cited = Vec::new();
    let mut citing_artifacts = Vec::new();
    let mut skipped = Vec::new();
    for (at, path) in artifact_paths.iter().enumerate() {
        match read_artifact(root, path) {
            Ok((artifact_rel, artifact)) => {
                let before = cited.len();
                cited.extend(artifact.cited_ranges(rel.as_str()));
                if cited.len() > before {
                    citing_artifacts.push(artifact_rel.as_str().to_owned());
                }
            }
            // A path the client named that cannot be an artifact is the client's mistake;
            // an artifact that does not parse is the vault's state, reported not fatal.
            Err(error) if explicit && error.code != ErrorCode::InvalidParameter => {
                return Err(naming_field(error, &format!("artifact_paths[{at}]")));
            }
            Err(error) => skipped.push(SkippedArtifact {
                path: path.clone(),
                reason: error.message,
            }),
        }
    }
    let coverage = artifact::coverage(&line_profile, cited);
    let check = format!(
        "vault_coverage {} <- {}",
        rel.as_str(),
        if explicit {
            artifact_paths.join(", ")
        } else {
            "artifacts/".to_owned()
        }
    );
    let added = app.rounds().round(
        check,
        [rel.as_str()],
        u64::from(coverage.covered_evidence_lines),
    );
    let added_est_tokens = artifact::est_tokens(added.read_chars);
    let marginal_gain = artifact::marginal_gain(added.evidence, added_est_tokens);
    app.adaptive.record_audit(
        AuditFacts {
            kind: AuditKind::VaultCoverage,
            path_hash: Fingerprint::of_path(rel.as_str()),
            coverage_ratio: Some(coverage.coverage_ratio),
            added_evidence_count: added.evidence,
            added_est_tokens,
        },
        clock::now(),
    );
    let step = artifact::next_step(
        &coverage,
        marginal_gain,
        app.config.coverage_min_ratio,
        app.config.marginal_gain_min,
    );
    let next_action = match step {
        NextStep::Scan(range) => {
            let chunk_lines = range
                .line_count()
                .min(app.config.vault_scan_max_chunk_lines);
            let call = scan(&rel, range.start_line, Some(chunk_lines));
            Proposal::new(call, SCAN_UNCOVERED)
        }
        NextStep::Stop => Proposal::new(Call::Stop, STOP_COVERED),
    };
    let skipped_count = nonzero(skipped.len());
    skipped.truncate(SKIPPED_SHOWN);
    Ok(VaultCoverageOutput {
        path: rel.as_str().to_owned(),
        total_lines: u64::from(line_profile.total_lines),
        evidence_lines: u64::from(line_profile.evidence_lines()),
        covered_ranges: coverage.covered_ranges.iter().map(|r| wire(*r)).collect(),
        uncovered_ranges: coverage.uncovered_ranges.iter().map(|r| wire(*r)).collect(),
        coverage_ratio: significant(coverage.coverage_ratio, 3),
        marginal_gain: marginal_gain.map(|gain| significant(gain, 3)),
        citing_artifacts,
        skipped_artifacts: skipped,
        skipped_count,
        next_actions: next_actions(vec![next_action]),
    })
}

pub(super) fn artifact_audit(
    app: &App,
    input: ArtifactAuditInput,
) -> ToolResult<ArtifactAuditOutput> {
    let root = app.vault()?;
    let (rel, artifact) = read_artifact(root, &input.path)?;
    let sources = CitedFiles::count(root, &artifact);
    let findings = artifact::audit(&artifact, &|path| sources.line_count(path));
    let severe = artifact::severe(&findings);
    let existing = sources.existing();
    // Cited lines that exist, per file: what the statistics count as this round's evidence.
    let evidence = existing
        .iter()
        .map(|(path, lines)| {
            let cited = artifact.cited_ranges(path);
            let covered = artifact::coverage(&LineProfile::plain(*lines), cited);
            u64::from(covered.covered_evidence_lines)
        })
        .sum();
    let check = format!("artifact_audit {}", rel.as_str());
    let added = app.rounds().round(
        check,
        existing.iter().map(|(path, _)| path.as_str()),
        evidence,
    );
    app.adaptive.record_audit(
        AuditFacts {
            kind: AuditKind::ArtifactAudit,
            path_hash: Fingerprint::of_path(rel.as_str()),
            coverage_ratio: None,
            added_evidence_count: added.evidence,
            added_est_tokens: artifact::est_tokens(added.read_chars),
        },
        clock::now(),
    );
    let mut proposals = Vec::new();
    for (path, _) in existing.iter().take(SOURCES_PROPOSED) {
        let source = parse_relative(path).expect("canonical paths parse");
        if severe {
            proposals.push(Proposal::new(scan(&source, 1, None), FULL_SCAN));
        }
        let call = Call::VaultCoverage {
            path: path.clone(),
            artifact_paths: vec![rel.as_str().to_owned()],
        };
        proposals.push(Proposal::new(call, CHECK_COVERAGE));
    }
    if existing.is_empty() && !severe {
        proposals.push(Proposal::new(Call::Stop, STOP_COVERED));
    }
    Ok(ArtifactAuditOutput {
        path: rel.as_str().to_owned(),
        element_count: artifact.elements.len() as u64,
        findings: findings
            .into_iter()
            .map(|finding| AuditFinding {
                kind: finding.kind,
                severity: finding.severity,
                element_id: finding.element_id,
                hint: finding.hint,
            })
            .collect(),
        severe: super::flag(severe),
        next_actions: next_actions(proposals),
    })
}

/// Reads and parses the artifact at `path`.
fn read_artifact(root: &Root, path: &str) -> ToolResult<(RelPath, Artifact)> {
    let (rel, text) = read::artifact_text(root, path)?;
    let artifact = artifact::parse(rel.as_str(), &text)?;
    Ok((rel, artifact))
}

/// The files an artifact cites, each counted once: as written (the audit asks by the
/// citation's spelling) and in canonical form.
struct CitedFiles {
    /// Line count per spelling; `None` for a path that is invalid, `.system`, missing or
    /// unreadable: a citation of it is as broken as one of a missing file.
    by_spelling: HashMap<String, Option<LineNo>>,
    /// Canonical paths of the existing files with their line counts, first cited first.
    existing: Vec<(String, LineNo)>,
}

impl CitedFiles {
    fn count(root: &Root, artifact: &Artifact) -> CitedFiles {
        let mut files = CitedFiles {
            by_spelling: HashMap::new(),
            existing: Vec::new(),
        };
        let spellings = artifact
            .elements
            .iter()
            .flat_map(|element| &element.source_lines)
            .map(|cited| cited.path.as_str());
        for spelling in spellings {
            if files.by_spelling.contains_key(spelling) {
                continue;
            }
            let counted = profile::line_count(root, spelling).ok();
            let lines = counted.map(|counted| counted.lines);
            files.by_spelling.insert(spelling.to_owned(), lines);
            let canonical = parse_relative(spelling).map(|rel| rel.as_str().to_owned());
            if let (Some(lines), Ok(canonical)) = (lines, canonical) {
                if !files.existing.iter().any(|(path, _)| *path == canonical) {
                    files.existing.push((canonical, lines));
                }
            }
        }
        files
    }

    fn line_count(&self, spelling: &str) -> Option<LineNo> {
        self.by_spelling.get(spelling).copied().flatten()
    }

    fn existing(&self) -> &[(String, LineNo)] {
        &self.existing
    }
}

fn wire(range: artifact::LineRange) -> LineRange {
    LineRange {
        start_line: u64::from(range.start_line),
        end_line: u64::from(range.end_line),
    }
}

/// `vault_scan` of `path` from `start_line`.
fn scan(path: &RelPath, start_line: LineNo, chunk_lines: Option<LineNo>) -> Call {
    Call::VaultScan {
        path: path.as_str().to_owned(),
        start_line: Some(start_line),
        chunk_lines,
        max_chars: None,
    }
}

/// `error` with `details.field` naming the input field it is about.
fn naming_field(error: ToolError, field: &str) -> ToolError {
    let mut details = match error.details.clone() {
        Some(Value::Object(details)) => details,
        _ => Map::new(),
    };
    details.insert("field".into(), json!(field));
    error.with_details(Value::Object(details))
}
