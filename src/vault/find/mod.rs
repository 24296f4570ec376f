//! `vault_find`: find what the vault already holds about a topic (requirements §6.1.1),
//! recall first, and answer with a trace id, counts and next actions only.
//!
//! One call lists the files in scope (`vault::scope`, as `vault_search` does: hidden
//! entries and `.system/` never), searches them over the cores within the time budget
//! (`matcher`: Stage 0 normalised and Stage 1 loose, merged into line ranges), keeps the
//! best `max_candidates` ranges of all files and a tally of every one, judges the tally
//! (`integrate`: Stage 1.5), and turns the verdict into next actions (`actions`). The
//! vault changes under the agent's hands, so nothing is indexed: every call lists and
//! stamps the files again, and searches the normalised and loose text the server keeps
//! for each file still as it was (`vault::forms`, shared with `vault_search`), or the
//! file itself.
//!
//! The cap bounds memory and the ranking, not the search: the best candidates are the
//! best of every file searched, and the verdict counts them all. The time budget does
//! leave files out; the trace keeps them, in the store both find tools share
//! ([`crate::trace::TraceStore`]), and `only_unscanned_from_trace_id` searches exactly
//! those, so a cut search can be finished without starting over.

pub(crate) mod actions;
pub(crate) mod integrate;
pub(crate) mod matcher;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use self::actions::{next_actions, AskedScope, Situation};
use self::integrate::{integrate, score, Best, Candidate};
use self::matcher::{search_file, FileOutcome, Keep, LineRange, Patterns, Reading, Score, Tally};
use crate::call::CallContext;
use crate::error::ToolResult;
use crate::paths::{RelPath, Root};
use crate::proposal::Proposal;
use crate::text::lines::LineNo;
use crate::trace::{CutoffReason, TraceKind, TraceStore, DEFAULT_MAX_CANDIDATES, DEFAULT_TIME_MS};
use crate::vault::forms::FormsCache;
use crate::vault::scope::{Scope, ScopeRequest};
use crate::vault::search::{over_cores, searchable};
use crate::verdict::{IntegrationStatus, Thresholds};

/// Server settings the search depends on (from `Config`).
#[derive(Debug, Clone)]
pub(crate) struct FindSettings {
    /// "Too few" and "one file dominates": the base values `manual_find` starts from
    /// (adaptive tuning moves `manual_find`'s only).
    pub thresholds: Thresholds,
    pub trace_max_keep: usize,
    pub trace_ttl: Duration,
    /// The most bytes the vault's cached forms may hold (`VAULT_CACHE_MAX_BYTES`).
    pub cache_max_bytes: u64,
}

impl FindSettings {
    pub(crate) fn from_config(config: &crate::config::Config) -> FindSettings {
        FindSettings {
            thresholds: Thresholds {
                candidate_low: config.adaptive_candidate_low_base,
                file_bias: config.adaptive_file_bias_base,
            },
            trace_max_keep: config.trace_max_keep,
            trace_ttl: Duration::from_secs(config.trace_ttl_sec),
            cache_max_bytes: config.vault_cache_max_bytes,
        }
    }
}

/// One `vault_find` call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FindRequest<'a> {
    pub query: &'a str,
    pub scope: ScopeRequest<'a>,
    pub only_unscanned_from: Option<&'a str>,
    pub max_candidates: Option<usize>,
    pub time_ms: Option<u64>,
}

/// The summary of a search (schema `VaultFindSummary`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub terms: usize,
    pub scanned_files: usize,
    pub skipped_files: usize,
    pub unscanned_files: usize,
    pub hit_lines: LineNo,
    pub candidates: usize,
    pub candidate_files: usize,
    pub normalized: usize,
    pub loose: usize,
    pub file_bias_ratio: f32,
    pub gap_count: usize,
    pub integration_status: IntegrationStatus,
    pub cutoff_reason: Option<CutoffReason>,
}

#[derive(Debug, Clone)]
pub(crate) struct FindOutcome {
    pub trace_id: String,
    pub summary: Summary,
    pub next_actions: Vec<Proposal>,
}

/// What a vault trace keeps: the files the time budget left out, for a continuation.
struct VaultTrace {
    unscanned: Vec<RelPath>,
}

const KIND: TraceKind = TraceKind {
    prefix: "v",
    tool: "vault_find",
};

/// The search state of a server: the settings, the traces, and the cache of the vault's
/// normalised text that `vault_find` and `vault_search` share.
pub(crate) struct VaultFinder {
    settings: FindSettings,
    traces: Mutex<TraceStore<VaultTrace>>,
    pub(crate) forms: Arc<FormsCache>,
}

impl VaultFinder {
    pub(crate) fn new(settings: FindSettings) -> VaultFinder {
        VaultFinder {
            traces: Mutex::new(TraceStore::new(
                KIND,
                settings.trace_max_keep,
                settings.trace_ttl,
            )),
            forms: Arc::new(FormsCache::new(settings.cache_max_bytes)),
            settings,
        }
    }

    /// Runs `search` over the cache's forms of the vault `root`: the cache's background
    /// fill gives way while it runs and starts again when it ends (`vault::forms`). Both
    /// `vault_find` and `vault_search` search through here.
    pub(crate) fn searching<T>(&self, root: &Root, search: impl FnOnce(&FormsCache) -> T) -> T {
        let running = self.forms.searching();
        let found = search(&self.forms);
        drop(running);
        self.forms.fill_in_background(root);
        found
    }

    /// Runs `vault_find` over the vault `root`; `call` receives progress per file and,
    /// once cancelled, ends the search as the time budget does (the answer is then the
    /// cancellation error, and no trace is kept).
    pub(crate) fn find(
        &self,
        root: &Root,
        request: &FindRequest<'_>,
        call: &CallContext,
    ) -> ToolResult<FindOutcome> {
        self.searching(root, |forms| self.find_in(forms, root, request, call))
    }

    fn find_in(
        &self,
        forms: &FormsCache,
        root: &Root,
        request: &FindRequest<'_>,
        call: &CallContext,
    ) -> ToolResult<FindOutcome> {
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
        let mut files = scope.file_paths(root)?;
        if let Some(left) = &left_by {
            files.retain(|path| left.contains(path.as_str()));
        }
        let patterns = Patterns::new(&phrase);
        let deadline = started + Duration::from_millis(request.time_ms.unwrap_or(DEFAULT_TIME_MS));
        let cap = request
            .max_candidates
            .unwrap_or(DEFAULT_MAX_CANDIDATES)
            .max(1);
        let score = |range: &LineRange| score(range, &patterns);
        call.expect_work(files.len() as u64, "files");
        let runs = over_cores(&files, |run| {
            let reading = Reading {
                forms,
                call,
                deadline,
            };
            search_run(root, &reading, run, &patterns, cap, &score)
        });
        call.check_cancelled()?;
        let found = Gathered::of(&files, runs, cap);
        let cutoff = if !found.unscanned.is_empty() {
            Some(CutoffReason::TimeBudget)
        } else {
            (found.tally.ranges > cap).then_some(CutoffReason::CandidateCap)
        };
        let per_file: Vec<usize> = found.per_file.iter().map(|(_, count)| *count).collect();
        let verdict = integrate(
            &found.tally,
            &per_file,
            &patterns,
            self.settings.thresholds,
            cutoff,
        );
        let trace_id = {
            let mut traces = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
            let id = traces.next_id();
            let trace = VaultTrace {
                unscanned: found.unscanned.clone(),
            };
            traces.insert(id.clone(), trace, Instant::now());
            id
        };
        let next_actions = next_actions(&Situation {
            trace_id: &trace_id,
            query: request.query,
            verdict: &verdict,
            candidates: &found.best,
            dominant: found.dominant(),
            cutoff,
            scope: AskedScope {
                dir: scope.dir(),
                glob: request.scope.glob,
                exclude_glob: request.scope.exclude_glob,
            },
        });
        let summary = Summary {
            terms: patterns.terms.len(),
            scanned_files: found.scanned,
            skipped_files: found.skipped,
            unscanned_files: found.unscanned.len(),
            hit_lines: found.hit_lines,
            candidates: found.tally.ranges,
            candidate_files: found.per_file.len(),
            normalized: found.tally.normalized,
            loose: found.tally.loose,
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
        log_outcome(&outcome, left_by.is_some(), forms.held_bytes());
        Ok(outcome)
    }
}

/// What one run of files (one core's share) gave: each file's outcome, with its ranges
/// moved into the run's best candidates.
struct Run {
    outcomes: Vec<FileOutcome>,
    best: Best,
}

fn search_run(
    root: &Root,
    reading: &Reading<'_>,
    run: &[RelPath],
    patterns: &Patterns,
    cap: usize,
    score: Score<'_>,
) -> Run {
    let mut best = Best::new(cap);
    let mut opener = root.file_opener();
    let outcomes = run
        .iter()
        .map(|path| {
            let keep = Keep {
                floor: best.floor(),
                ..Keep::best(cap, score)
            };
            let mut outcome = search_file(reading, &mut opener, path, patterns, keep);
            reading.call.work_done(1);
            if let FileOutcome::Searched { ranges, .. } = &mut outcome {
                best.offer_ranges(path, std::mem::take(ranges), patterns);
            }
            outcome
        })
        .collect();
    Run { outcomes, best }
}

/// The runs put together in path order.
#[derive(Debug, Default)]
struct Gathered {
    /// The best `cap` candidates of all files, ranked.
    best: Vec<Candidate>,
    /// Every candidate found, added up.
    tally: Tally,
    /// Candidates per file that has any, in path order.
    per_file: Vec<(RelPath, usize)>,
    scanned: usize,
    skipped: usize,
    hit_lines: LineNo,
    /// Files the time budget left out.
    unscanned: Vec<RelPath>,
}

impl Gathered {
    /// The runs' best candidates pooled into the best `cap` of all (the same whatever
    /// the split over the cores: each run kept its best by the one total order), and
    /// the files' outcomes added up.
    fn of(files: &[RelPath], runs: Vec<Run>, cap: usize) -> Self {
        let mut best = Best::new(cap);
        let mut outcomes = Vec::with_capacity(files.len());
        for run in runs {
            best.offer(run.best.ranked());
            outcomes.extend(run.outcomes);
        }
        let mut found = Gathered::default();
        for (path, outcome) in files.iter().zip(outcomes) {
            match outcome {
                FileOutcome::Searched {
                    tally, hit_lines, ..
                } => {
                    found.scanned += 1;
                    found.hit_lines += hit_lines;
                    if tally.ranges > 0 {
                        found.per_file.push((path.clone(), tally.ranges));
                    }
                    found.tally.add(&tally);
                }
                FileOutcome::Skipped => found.skipped += 1,
                FileOutcome::Unscanned => found.unscanned.push(path.clone()),
            }
        }
        found.best = best.ranked();
        found
    }

    /// The file holding the most candidates (the first in path order on a tie).
    fn dominant(&self) -> Option<&RelPath> {
        let mut most: Option<&(RelPath, usize)> = None;
        for entry in &self.per_file {
            if most.is_none_or(|(_, count)| entry.1 > *count) {
                most = Some(entry);
            }
        }
        most.map(|(path, _)| path)
    }
}

/// The `vault_find` log line: counts only, never the query or a path (`cached_bytes`:
/// what the cache of the vault's forms holds after the search).
fn log_outcome(outcome: &FindOutcome, continued: bool, cached_bytes: u64) {
    let summary = &outcome.summary;
    let actions: Vec<&str> = outcome.next_actions.iter().map(|a| a.call.tool()).collect();
    tracing::info!(
        trace_id = %outcome.trace_id,
        continued,
        cached_bytes,
        scanned_files = summary.scanned_files,
        skipped_files = summary.skipped_files,
        unscanned_files = summary.unscanned_files,
        candidates = summary.candidates,
        file_bias_ratio = summary.file_bias_ratio,
        gap_count = summary.gap_count,
        integration_status = summary.integration_status.as_str(),
        cutoff_reason = summary.cutoff_reason.map(CutoffReason::as_str),
        next_actions = ?actions,
        "vault_find"
    );
}

/// Vaults for the unit tests of this module.
#[cfg(test)]
pub(crate) mod testing {
    use crate::paths::Root;

    /// A vault in a temporary folder holding `files` (`"path"`, content).
    pub(crate) fn vault(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let dir = crate::test_support::tree(files);
        let root = Root::open(dir.path()).expect("root");
        (dir, root)
    }
}

#[cfg(test)]
mod tests;
