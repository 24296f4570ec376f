//! `manual_find` and `manual_hits`: the recall-first search (spec_manuals §3-§4).
//!
//! One call runs every stage over an in-memory corpus and keeps what it found in a trace;
//! the answer is only the trace id, counts and next actions, so "everything about X"
//! costs the agent a few hundred characters until it chooses what to read.
//!
//! Units, in the order a search uses them:
//! * `query`: intent, strict terms, content terms and their pieces;
//! * `corpus`, `links`, `resolve`: per-file derived text, labels and references, cached by
//!   file generation, and the reference graph resolved from them, rebuilt on change;
//! * `plan`: the literals to look for (terms, pieces, synonym variants) and their automata;
//! * `scan` (Stages 0-1) and `score` (ranking);
//! * `stages`: Stage 2 (exception vocabulary), Stage 3 (references), Stage 4 (widening);
//! * `integrate` (Stage 3.5): conflicts, gaps, sufficiency, status;
//! * `search`: one search from scope to trace, running the units above in order;
//! * `actions`: next_actions from the verdict; `trace`: the trace store; `hits`: what
//!   `manual_hits` lists from a trace.

pub(crate) mod actions;
mod candidates;
pub(crate) mod corpus;
mod derived;
mod fuse;
pub(crate) mod hits;
pub(crate) mod index;
pub(crate) mod integrate;
mod labels;
pub(crate) mod links;
mod outlines;
pub(crate) mod plan;
pub(crate) mod query;
mod refstore;
mod relevance;
pub(crate) mod resolve;
pub(crate) mod scan;
pub(crate) mod score;
mod search;
mod semantic;
pub(crate) mod stages;
mod texts;
pub(crate) mod trace;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use self::corpus::{Corpus, CorpusCache};
use self::integrate::IntegrationStatus;
use self::plan::Plan;
use self::query::{Intent, Query};
use self::search::{log_outcome, Phases, Search};
pub(crate) use self::semantic::SemanticReport;
use self::semantic::SemanticSearch;
use self::trace::{CutoffReason, Place, TraceStore};
use crate::call::CallContext;
use crate::error::{ToolError, ToolResult};
use crate::manual::vectors::SectionVectors;
use crate::manual::{ManualFile, ManualIndex};
use crate::proposal::Proposal;
use crate::text::normalize::normalize_str;
use crate::text::synonyms::Synonyms;

pub(crate) use crate::trace::{DEFAULT_MAX_CANDIDATES, DEFAULT_TIME_MS};
/// The Stage 4 conditions "fewer than `candidate_low` candidates" and "one file holds at
/// least `file_bias` of five or more" (spec_manuals §3), shared with `vault_find`.
pub(crate) use crate::verdict::Thresholds;

/// Evidence kinds of a candidate, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Signals(u16);

impl Signals {
    pub(crate) const HEADING: Signals = Signals(1);
    pub(crate) const NORMALIZED: Signals = Signals(1 << 1);
    pub(crate) const LOOSE: Signals = Signals(1 << 2);
    pub(crate) const SYNONYM: Signals = Signals(1 << 3);
    pub(crate) const EXCEPTIONS: Signals = Signals(1 << 4);
    pub(crate) const REFERENCE: Signals = Signals(1 << 5);
    pub(crate) const STRICT: Signals = Signals(1 << 6);
    pub(crate) const EXPANDED: Signals = Signals(1 << 7);
    pub(crate) const LINK_TEXT: Signals = Signals(1 << 8);
    /// Among the sections closest in meaning to the query (section vectors).
    pub(crate) const SEMANTIC: Signals = Signals(1 << 9);
    /// Evidence of the query's own words (or of a reference from a section holding them).
    pub(crate) const LEXICAL: Signals = Signals(
        Signals::HEADING.0
            | Signals::NORMALIZED.0
            | Signals::LOOSE.0
            | Signals::SYNONYM.0
            | Signals::REFERENCE.0
            | Signals::STRICT.0
            | Signals::LINK_TEXT.0,
    );

    const NAMES: [(Signals, &'static str); 10] = [
        (Signals::HEADING, "heading"),
        (Signals::NORMALIZED, "normalized"),
        (Signals::LOOSE, "loose"),
        (Signals::SYNONYM, "synonym"),
        (Signals::EXCEPTIONS, "exceptions"),
        (Signals::REFERENCE, "reference"),
        (Signals::LINK_TEXT, "link_text"),
        (Signals::SEMANTIC, "semantic"),
        (Signals::STRICT, "strict"),
        (Signals::EXPANDED, "expanded"),
    ];

    pub(crate) fn insert(&mut self, other: Signals) {
        self.0 |= other.0;
    }

    pub(crate) const fn with(self, other: Signals) -> Signals {
        Signals(self.0 | other.0)
    }

    pub(crate) fn contains(self, other: Signals) -> bool {
        other.0 != 0 && self.0 & other.0 == other.0
    }

    pub(crate) fn intersects(self, other: Signals) -> bool {
        self.0 & other.0 != 0
    }

    pub(crate) fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(signal, _)| self.contains(*signal))
            .map(|(_, name)| *name)
            .collect()
    }
}

/// Server settings the search depends on (from `Config`).
#[derive(Debug, Clone)]
pub(crate) struct FindSettings {
    pub default_manual_id: Option<String>,
    pub default_max_stage: u8,
    pub hard_max_stage: u8,
    /// Stage 4 thresholds used when a request brings none.
    pub thresholds: Thresholds,
    pub trace_max_keep: usize,
    pub trace_ttl: Duration,
    /// The team's synonyms file (may be absent).
    pub synonyms_path: Option<PathBuf>,
    /// Where the section index is kept (`CACHE_DIR`); `None` keeps it in memory.
    pub cache_dir: Option<PathBuf>,
    /// The vault's root: a `CACHE_DIR` inside it is walked from there without following
    /// links.
    pub vault_root: Option<PathBuf>,
}

impl FindSettings {
    pub(crate) fn from_config(config: &crate::config::Config) -> FindSettings {
        FindSettings {
            default_manual_id: config.default_manual_id.clone(),
            default_max_stage: config.default_max_stage,
            hard_max_stage: config.hard_max_stage,
            thresholds: Thresholds {
                candidate_low: config.adaptive_candidate_low_base,
                file_bias: config.adaptive_file_bias_base,
            },
            trace_max_keep: config.trace_max_keep,
            trace_ttl: Duration::from_secs(config.trace_ttl_sec),
            synonyms_path: Some(config.synonyms_path.clone()),
            cache_dir: Some(config.cache_dir.clone()),
            vault_root: Some(config.vault_root.clone()),
        }
    }
}

/// One `manual_find` call.
#[derive(Debug, Clone, Default)]
pub(crate) struct FindRequest {
    pub manual_id: Option<String>,
    pub query: String,
    pub intent: Option<Intent>,
    pub max_stage: Option<u8>,
    pub only_unscanned_from: Option<String>,
    pub max_candidates: Option<usize>,
    pub time_ms: Option<u64>,
    /// Stage 4 thresholds in force for this search (tuned ones); the settings' otherwise.
    pub thresholds: Option<Thresholds>,
    /// The caller's alternative wordings (searched as units of lower weight).
    pub also: Vec<String>,
    /// Makes Stage 2 or 3 fail as a defect would, so tests can check that the earlier
    /// stages' results survive; absent from the server's build.
    #[cfg(test)]
    pub fail_stage: Option<u8>,
}

/// Counts per signal over the candidates (schema `signal_coverage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SignalCoverage {
    pub heading: usize,
    pub normalized: usize,
    pub loose: usize,
    pub synonym: usize,
    pub exceptions: usize,
    pub reference: usize,
    /// `None` when semantic recall is off (`EMBEDDINGS_URL` unset).
    pub semantic: Option<usize>,
}

/// The summary of a search (schema `FindSummary`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub intent: Intent,
    pub intent_inferred: bool,
    pub strict_terms: usize,
    /// `also` wordings that were searched.
    pub also_used: usize,
    pub scanned_files: usize,
    pub scanned_nodes: usize,
    pub candidates: usize,
    pub warnings: usize,
    pub max_stage_applied: u8,
    pub scope_expanded: bool,
    pub unscanned_sections_count: usize,
    pub integrated_nodes: usize,
    pub signal_coverage: SignalCoverage,
    pub file_bias_ratio: f32,
    pub conflict_count: usize,
    pub gap_count: usize,
    pub sufficiency_score: f32,
    pub integration_status: IntegrationStatus,
    pub cutoff_reason: Option<CutoffReason>,
    /// `None` when semantic recall is off (`EMBEDDINGS_URL` unset).
    pub semantic: Option<SemanticReport>,
}

#[derive(Debug, Clone)]
pub(crate) struct FindOutcome {
    pub trace_id: String,
    pub summary: Summary,
    pub next_actions: Vec<Proposal>,
    /// Why stages failed or were skipped (counted in `summary.warnings`).
    pub warnings: Vec<String>,
    /// What the search was allowed and what Stage 4 cost, for the statistics of
    /// adaptive tuning: the `max_stage` in force, and the candidates Stage 4 added with
    /// the characters of their own text.
    pub max_stage_allowed: u8,
    pub stage4_added: usize,
    pub stage4_added_chars: usize,
}

/// What `manual_hits` lists: the schema's `HitKind`.
pub(crate) use crate::contract::types::HitKind;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HitItem {
    pub place: Option<Place>,
    pub reason: &'static str,
    /// For an unscanned place: the cutoff that left it out (its `reason` in words).
    pub cutoff: Option<CutoffReason>,
    pub signals: Vec<&'static str>,
    pub score: Option<f32>,
    pub conflict_with: Vec<Place>,
    pub gap_hint: Option<String>,
}

/// The loaded synonym dictionary and the user file's modification time it reflects.
struct LoadedSynonyms {
    stamp: Option<SystemTime>,
    synonyms: Arc<Synonyms>,
}

/// The search state of a server: corpus cache, traces, synonyms, and the section vectors
/// when semantic recall is on.
pub(crate) struct Finder {
    settings: FindSettings,
    corpus: Mutex<CorpusCache>,
    traces: Mutex<TraceStore>,
    synonyms: Mutex<Option<LoadedSynonyms>>,
    vectors: Option<Arc<SectionVectors>>,
}

impl Finder {
    /// A lexical search (no semantic signal); the server always goes through
    /// [`Finder::with_vectors`].
    #[cfg(test)]
    pub(crate) fn new(settings: FindSettings) -> Finder {
        Finder::with_vectors(settings, None)
    }

    /// A search that adds the `semantic` signal from `vectors` when given.
    pub(crate) fn with_vectors(
        settings: FindSettings,
        vectors: Option<Arc<SectionVectors>>,
    ) -> Finder {
        Finder {
            traces: Mutex::new(TraceStore::new(settings.trace_max_keep, settings.trace_ttl)),
            corpus: Mutex::new(CorpusCache::new(
                settings.cache_dir.clone(),
                settings.vault_root.clone(),
            )),
            settings,
            synonyms: Mutex::new(None),
            vectors,
        }
    }

    /// The section vectors of semantic recall, when it is on.
    pub(crate) fn vectors(&self) -> Option<&Arc<SectionVectors>> {
        self.vectors.as_ref()
    }

    /// The corpus for the index as it is now (building or updating the derived data).
    pub(crate) fn corpus(&self, index: &ManualIndex) -> Arc<Corpus> {
        lock(&self.corpus).sync(index)
    }

    /// How many manuals' references the corpus's syncs resolved (tests tell a sync that
    /// did the work from one that reused it).
    #[cfg(test)]
    pub(crate) fn manuals_resolved(&self) -> usize {
        lock(&self.corpus).manuals_resolved
    }

    /// Brings the section index in line with `index` and waits for it (a background
    /// update runs after a start without an index, or after manuals changed); the next
    /// search uses it. For benchmarks and tests: a server never waits.
    pub(crate) fn complete_section_index(&self, index: &ManualIndex) {
        let mut corpus = lock(&self.corpus);
        corpus.sync(index);
        corpus.wait_for_sections();
        corpus.sync(index);
    }

    /// Reads what the first search needs before it needs it: the search's stores under
    /// `CACHE_DIR` ([`CorpusCache::prepare`]) and the synonym dictionary. A server runs
    /// it on a thread of its own at start, beside the manual index's build; a search
    /// that comes first waits for it rather than doing the same work again.
    pub(crate) fn prepare(&self) {
        lock(&self.corpus).prepare();
        self.synonyms();
    }

    /// The synonym dictionary, reloaded when the user file changed since the last load.
    fn synonyms(&self) -> Arc<Synonyms> {
        let path = self.settings.synonyms_path.as_deref();
        let stamp = path
            .and_then(|path| std::fs::metadata(path).ok())
            .and_then(|meta| meta.modified().ok());
        let mut slot = lock(&self.synonyms);
        match slot.as_ref() {
            Some(loaded) if loaded.stamp == stamp => Arc::clone(&loaded.synonyms),
            _ => {
                let (synonyms, warnings) = Synonyms::load(path.map(std::fs::read), &normalize_str);
                for warning in warnings {
                    tracing::warn!(warning, "synonyms");
                }
                let synonyms = Arc::new(synonyms);
                *slot = Some(LoadedSynonyms {
                    stamp,
                    synonyms: Arc::clone(&synonyms),
                });
                synonyms
            }
        }
    }

    /// Runs `manual_find`; `call` can cut the scan short (see `scan`).
    pub(crate) fn find(
        &self,
        index: &ManualIndex,
        request: &FindRequest,
        call: &CallContext,
    ) -> ToolResult<FindOutcome> {
        let started = Instant::now();
        let max_stage = self.max_stage(request.max_stage)?;
        let base = match &request.only_unscanned_from {
            Some(id) => {
                Some(lock(&self.traces).get(id, started, "only_unscanned_from_trace_id")?)
            }
            None => None,
        };
        let manual_id = request
            .manual_id
            .clone()
            .or_else(|| self.settings.default_manual_id.clone());
        if let Some(id) = &manual_id {
            index.files(Some(id))?;
        }
        let corpus = self.corpus(index);
        // The budget bounds the search, not the derivation of changed files before it.
        let searching = Instant::now();
        let listed = index.files(None)?;
        let files: Vec<&ManualFile> = listed.iter().map(|entry| entry.file).collect();
        let plan = Plan::new(
            Query::parse(&request.query, request.intent),
            &self.synonyms(),
            &request.also,
        );
        let deadline =
            searching + Duration::from_millis(request.time_ms.unwrap_or(DEFAULT_TIME_MS));
        let max_candidates = request
            .max_candidates
            .unwrap_or(DEFAULT_MAX_CANDIDATES)
            .max(1);
        // The query's vector is asked for while the lexical stages run.
        let semantic = self
            .vectors
            .as_ref()
            .map(|vectors| SemanticSearch::start(vectors, &request.query));
        let search = Search {
            corpus: &corpus,
            files: &files,
            plan: &plan,
            request,
            deadline,
            call,
            thresholds: request.thresholds.unwrap_or(self.settings.thresholds),
            max_stage,
            max_candidates,
            semantic: semantic.as_ref(),
            phases: Phases::default(),
        };
        let scope = match &base {
            Some(trace) => search.scope_of_unscanned(trace),
            None => search.scope_of_manual(manual_id.as_deref(), true),
        };
        let narrowed = base.is_none() && manual_id.is_some();
        let mut result = search.run(scope, narrowed, manual_id.as_deref())?;
        let cut = result.cap(&search, max_candidates);
        let id = lock(&self.traces).next_id();
        let (trace, outcome) = result.conclude(&search, id, cut);
        lock(&self.traces).insert(trace, Instant::now());
        log_outcome(&outcome, &result.escalations, &search.phases);
        Ok(outcome)
    }

    /// Runs `manual_hits`: every item of `kind` in the trace `trace_id`, in order (the
    /// caller pages them).
    pub(crate) fn hits(&self, trace_id: &str, kind: HitKind) -> ToolResult<Vec<HitItem>> {
        let trace = lock(&self.traces).get(trace_id, Instant::now(), "trace_id")?;
        Ok(hits::items(&trace, kind))
    }

    fn max_stage(&self, requested: Option<u8>) -> ToolResult<u8> {
        let stage = requested.unwrap_or(self.settings.default_max_stage);
        let hard = self.settings.hard_max_stage;
        if (3..=hard).contains(&stage) {
            return Ok(stage);
        }
        let accepted: Vec<u8> = (3..=hard).collect();
        Err(ToolError::invalid_parameter(format!(
            "max_stage must be {}",
            accepted
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        ))
        .with_details(json!({ "pointer": "/max_stage", "value": stage, "accepted": accepted, "setting": "HARD_MAX_STAGE" })))
    }
}

/// What `manvault index` reports of the section index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SectionIndexBuilt {
    /// Files, sections and bytes of text indexed now.
    pub files: u64,
    pub sections: u64,
    pub bytes: u64,
    /// Files whose sections the index already held.
    pub current: u64,
    pub disk_bytes: u64,
}

/// Brings the section index under `cache_dir` in line with `index` (`manvault index`),
/// committing every `commit_every` of indexing time; `progress` gets the running totals.
/// An error says why the index cannot be kept there or was not completed.
pub(crate) fn build_section_index(
    cache_dir: &std::path::Path,
    vault_root: &std::path::Path,
    index: &ManualIndex,
    commit_every: Duration,
    progress: &mut dyn FnMut(self::index::Written),
) -> Result<SectionIndexBuilt, String> {
    let sections = self::index::SectionIndex::open_on_disk(cache_dir)
        .map_err(|error| format!("the section index cannot be kept under CACHE_DIR: {error}"))?
        .committing_every(commit_every);
    let mut cache = CorpusCache::with_sections(sections, cache_dir, vault_root);
    let corpus = cache.sync_reporting(index, progress);
    if !corpus.unindexed.is_empty() {
        return Err(format!(
            "{} files could not be indexed (the log says why); a server scans them directly",
            corpus.unindexed.len()
        ));
    }
    let written = cache.last_update();
    Ok(SectionIndexBuilt {
        files: written.files,
        sections: written.sections,
        bytes: written.bytes,
        current: corpus.files.len() as u64 - written.files,
        disk_bytes: cache.sections().map_or(0, |s| s.disk_bytes()),
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Manual trees for the unit tests of this module.
#[cfg(test)]
pub(crate) mod testing {
    use super::derived::NodeKey;
    use super::*;
    use crate::text::lines::LineNo;

    /// A manuals root in a temporary folder holding `files` (`"manual/path"`, content).
    pub(crate) fn index(files: &[(&str, &str)]) -> (tempfile::TempDir, ManualIndex) {
        let dir = crate::test_support::tree(files);
        let index = ManualIndex::build(dir.path()).expect("index");
        (dir, index)
    }

    pub(crate) fn settings() -> FindSettings {
        FindSettings {
            default_manual_id: None,
            default_max_stage: 4,
            hard_max_stage: 4,
            thresholds: Thresholds {
                candidate_low: 3,
                file_bias: 0.8,
            },
            trace_max_keep: 10,
            trace_ttl: Duration::from_secs(60),
            synonyms_path: None,
            cache_dir: None,
            vault_root: None,
        }
    }

    /// The files of `index` in corpus order, what a search's `files` are.
    pub(crate) fn sources(index: &ManualIndex) -> Vec<&ManualFile> {
        let listed = index.files(None).expect("every manual lists");
        listed.into_iter().map(|entry| entry.file).collect()
    }

    /// The plan of `query` with the built-in synonyms and no `also` wordings.
    pub(crate) fn plan(query: &str) -> super::plan::Plan {
        super::plan::Plan::new(
            super::query::Query::parse(query, None),
            &crate::text::synonyms::Synonyms::load(None, &crate::text::normalize::normalize_str).0,
            &[],
        )
    }

    /// Every whole file of `corpus`.
    pub(crate) fn every_file(corpus: &Corpus) -> super::scan::Scope {
        (0..corpus.files.len() as u32)
            .map(|file| (file, None))
            .collect()
    }

    /// The corpus of `index` and the key of the node of `path` starting at `line`.
    pub(crate) fn key(
        corpus: &Corpus,
        index: &ManualIndex,
        manual: &str,
        path: &str,
        line: LineNo,
    ) -> NodeKey {
        let file = corpus.file_index(manual, path).expect("file in corpus");
        let node = index
            .file(manual, path)
            .expect("file")
            .nodes()
            .iter()
            .position(|node| node.line_start == line)
            .expect("a node starts there");
        NodeKey {
            file,
            node: node as u32,
        }
    }
}

#[cfg(test)]
mod tests;
