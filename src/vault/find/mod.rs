//! `vault_find`: find what the vault already holds about a topic (requirements §6.1.1),
//! recall first, and answer with a trace id, counts and next actions only.
//!
//! One call lists the files in scope (`vault::scope`, as `vault_search` does: hidden
//! entries and `.system/` never), searches them over the cores within the time budget
//! (`matcher`: Stage 0 normalised and Stage 1 loose, merged into line ranges), keeps the
//! first `max_candidates` ranges in path order, ranks them and judges them (`integrate`:
//! Stage 1.5), and turns the verdict into next actions (`actions`). The vault changes
//! under the agent's hands, so nothing is indexed: every call reads the files again.
//!
//! The trace keeps the files the budget or the cap left out, in the store both find
//! tools share ([`crate::trace::TraceStore`]): `only_unscanned_from_trace_id` searches
//! exactly those, so a cut search can be finished without starting over.

pub mod actions;
pub mod integrate;
pub mod matcher;

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use self::actions::{next_actions, AskedScope, Situation};
use self::integrate::{integrate, rank, Candidate};
use self::matcher::{search_run, FileOutcome, Patterns};
use crate::error::ToolResult;
use crate::paths::{RelPath, Root};
use crate::trace::{Cutoff, TraceKind, TraceStore, DEFAULT_MAX_CANDIDATES, DEFAULT_TIME_MS};
use crate::vault::scope::{Scope, ScopeRequest};
use crate::vault::search::{over_cores, searchable};
use crate::verdict::{NextAction, Status, Thresholds};

/// Server settings the search depends on (from `Config`).
#[derive(Debug, Clone)]
pub struct FindSettings {
    /// "Too few" and "one file dominates": the base values `manual_find` starts from
    /// (adaptive tuning moves `manual_find`'s only).
    pub thresholds: Thresholds,
    pub trace_max_keep: usize,
    pub trace_ttl: Duration,
}

impl FindSettings {
    pub fn from_config(config: &crate::config::Config) -> FindSettings {
        FindSettings {
            thresholds: Thresholds {
                candidate_low: config.adaptive_candidate_low_base as usize,
                file_bias: config.adaptive_file_bias_base as f32,
            },
            trace_max_keep: config.trace_max_keep,
            trace_ttl: Duration::from_secs(config.trace_ttl_sec),
        }
    }
}

/// One `vault_find` call.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindRequest<'a> {
    pub query: &'a str,
    pub scope: ScopeRequest<'a>,
    pub only_unscanned_from: Option<&'a str>,
    pub max_candidates: Option<usize>,
    pub time_ms: Option<u64>,
    /// Whether the server serves `vault_coverage`, which verify_coverage proposes.
    pub coverage_served: bool,
}

/// The summary of a search (schema `VaultFindSummary`).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub terms: usize,
    pub scanned_files: usize,
    pub skipped_files: usize,
    pub unscanned_files: usize,
    pub hit_lines: u64,
    pub candidates: usize,
    pub candidate_files: usize,
    pub normalized: usize,
    pub loose: usize,
    pub file_bias_ratio: f32,
    pub gap_count: usize,
    pub integration_status: Status,
    pub cutoff_reason: Option<Cutoff>,
}

#[derive(Debug, Clone)]
pub struct FindOutcome {
    pub trace_id: String,
    pub summary: Summary,
    pub next_actions: Vec<NextAction>,
}

/// What a vault trace keeps: the files the search left out, for a continuation.
struct VaultTrace {
    unscanned: Vec<RelPath>,
}

const KIND: TraceKind = TraceKind {
    prefix: "v",
    tool: "vault_find",
};

/// The search state of a server: the settings and the traces.
pub struct VaultFinder {
    settings: FindSettings,
    traces: Mutex<TraceStore<VaultTrace>>,
}

impl VaultFinder {
    pub fn new(settings: FindSettings) -> VaultFinder {
        VaultFinder {
            traces: Mutex::new(TraceStore::new(
                KIND,
                settings.trace_max_keep,
                settings.trace_ttl,
            )),
            settings,
        }
    }

    /// Runs `vault_find` over the vault `root`.
    pub fn find(&self, root: &Root, request: &FindRequest<'_>) -> ToolResult<FindOutcome> {
        let started = Instant::now();
        let phrase = searchable(request.query)?;
        let left_by: Option<HashSet<String>> = match request.only_unscanned_from {
            Some(id) => {
                let mut traces = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
                let trace = traces.get(id, started, "only_unscanned_from_trace_id")?;
                Some(
                    trace
                        .unscanned
                        .iter()
                        .map(|p| p.as_str().to_owned())
                        .collect(),
                )
            }
            None => None,
        };
        let scope = Scope::new(request.scope)?;
        let mut files: Vec<RelPath> = scope
            .files(root)?
            .into_iter()
            .map(|entry| entry.path)
            .collect();
        if let Some(left) = &left_by {
            files.retain(|path| left.contains(path.as_str()));
        }
        let patterns = Patterns::new(&phrase);
        let deadline = started + Duration::from_millis(request.time_ms.unwrap_or(DEFAULT_TIME_MS));
        let cap = request
            .max_candidates
            .unwrap_or(DEFAULT_MAX_CANDIDATES)
            .max(1);
        let outcomes = over_cores(&files, |run| {
            search_run(root, run, &patterns, deadline, cap)
        });
        let mut found = Gathered::of(&files, outcomes, &patterns, cap);
        rank(&mut found.candidates);
        let cutoff = found.unscanned.iter().map(|(_, reason)| *reason).min();
        let verdict = integrate(
            &found.candidates,
            &patterns,
            self.settings.thresholds,
            cutoff,
        );
        let trace_id = {
            let mut traces = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
            let id = traces.next_id();
            let unscanned = found.unscanned.iter().map(|(path, _)| path.clone());
            let trace = VaultTrace {
                unscanned: unscanned.collect(),
            };
            traces.insert(id.clone(), trace, Instant::now());
            id
        };
        let next_actions = next_actions(&Situation {
            trace_id: &trace_id,
            query: request.query,
            verdict: &verdict,
            candidates: &found.candidates,
            cutoff,
            scope: AskedScope {
                dir: scope.dir(),
                glob: request.scope.glob,
                exclude_glob: request.scope.exclude_glob,
            },
            coverage_served: request.coverage_served,
        });
        let candidates = &found.candidates;
        let files_with: HashSet<&RelPath> = candidates.iter().map(|c| &c.path).collect();
        let summary = Summary {
            terms: patterns.terms.len(),
            scanned_files: found.scanned,
            skipped_files: found.skipped,
            unscanned_files: found.unscanned.len(),
            hit_lines: found.hit_lines,
            candidates: candidates.len(),
            candidate_files: files_with.len(),
            normalized: candidates.iter().filter(|c| c.normalized()).count(),
            loose: candidates.iter().filter(|c| c.loose()).count(),
            file_bias_ratio: verdict.file_bias,
            gap_count: verdict.gaps,
            integration_status: verdict.status,
            cutoff_reason: cutoff,
        };
        let outcome = FindOutcome {
            trace_id,
            summary,
            next_actions,
        };
        log_outcome(&outcome, left_by.is_some());
        Ok(outcome)
    }
}

/// The files' outcomes put together in path order, up to the candidate cap.
#[derive(Debug, Default)]
struct Gathered {
    candidates: Vec<Candidate>,
    /// Files whose every candidate was kept.
    scanned: usize,
    skipped: usize,
    hit_lines: u64,
    /// Files not searched to the end, or whose candidates the cap set aside.
    unscanned: Vec<(RelPath, Cutoff)>,
}

impl Gathered {
    /// Keeps candidates file by file until `cap`: the file that crosses it keeps what
    /// fits, and it and every later file are left for a continuation (which searches the
    /// crossing file again whole). Whatever the later files gave is set aside, so the
    /// answer does not depend on how the files were split over the cores.
    fn of(files: &[RelPath], outcomes: Vec<FileOutcome>, patterns: &Patterns, cap: usize) -> Self {
        let mut found = Gathered::default();
        let mut capped = false;
        for (path, outcome) in files.iter().zip(outcomes) {
            match outcome {
                FileOutcome::Unscanned(reason) => found.unscanned.push((path.clone(), reason)),
                _ if capped => found.unscanned.push((path.clone(), Cutoff::CandidateCap)),
                FileOutcome::Skipped => found.skipped += 1,
                FileOutcome::Searched { ranges, hit_lines } => {
                    let room = cap - found.candidates.len();
                    capped = ranges.len() > room;
                    if capped {
                        found.unscanned.push((path.clone(), Cutoff::CandidateCap));
                    } else {
                        found.scanned += 1;
                        found.hit_lines += hit_lines;
                    }
                    found.candidates.extend(
                        ranges
                            .into_iter()
                            .take(room)
                            .map(|range| Candidate::new(path.clone(), range, patterns)),
                    );
                }
            }
        }
        found
    }
}

/// The `vault_find` log line: counts only, never the query or a path.
fn log_outcome(outcome: &FindOutcome, continued: bool) {
    let summary = &outcome.summary;
    let actions: Vec<&str> = outcome.next_actions.iter().map(|a| a.tool).collect();
    tracing::info!(
        trace_id = %outcome.trace_id,
        continued,
        scanned_files = summary.scanned_files,
        skipped_files = summary.skipped_files,
        unscanned_files = summary.unscanned_files,
        candidates = summary.candidates,
        file_bias_ratio = summary.file_bias_ratio,
        gap_count = summary.gap_count,
        integration_status = summary.integration_status.as_str(),
        cutoff_reason = summary.cutoff_reason.map(Cutoff::as_str),
        next_actions = ?actions,
        "vault_find"
    );
}

/// Vaults for the unit tests of this module.
#[cfg(test)]
pub(crate) mod testing {
    use crate::paths::Root;

    /// A vault in a temporary folder holding `files` (`"path"`, content).
    pub fn vault(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let dir = crate::test_support::tree(files);
        let root = Root::open(dir.path()).expect("root");
        (dir, root)
    }
}

#[cfg(test)]
mod tests;
