//! One search from scope to trace: Stages 0-1 (`scan`, `score`), the candidate bar, Stages
//! 2 and 3 (guarded, so a failure keeps the earlier results), Stage 4 when its conditions
//! hold and `max_stage` allows, the candidate cap, Stage 3.5 (`integrate`), and the
//! trace, summary and next actions built from the verdict.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hash::FxHashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::actions::{next_actions, Situation};
use super::candidates::{index_hits, keep_hits, keep_section_set, section_set, UnitOnly};
use super::corpus::Corpus;
use super::derived::NodeKey;
use super::fuse::{
    admitted_alone, fuse, fuse_in_key_order, Evident, Ranked, RankedSource, SourceItem,
};
use super::integrate::{integrate, Gap, Verdict};
use super::plan::Plan;
use super::relevance::{rank_unit_only, rank_units, units_in_key_order};
use super::scan::{scan, NodeHits, ScanResult, Scope, ScopeFilter};
use super::score::{score_all, score_each, Evidence, Scored, TermDf, TitleSets, Way};
use super::semantic::{rank_fused, SemanticSearch, Tuning};
use super::stages::{
    best_first, escalations, exception_neighbours, guarded, relaxed, stage2_exceptions,
    stage3_references, Candidate, Escalation,
};
use super::trace::{ConflictItem, CutoffReason, GapItem, Hit, Place, Trace, Unscanned};
use super::{FindOutcome, FindRequest, SignalCoverage, Signals, Summary, Thresholds};
use crate::call::CallContext;
use crate::error::ToolResult;
use crate::manual::{ManualFile, NodeKind};

/// A section becomes a candidate at this score ...
const MIN_CANDIDATE_SCORE: f32 = 0.25;
/// ... when some term matched it as a whole (as written, loosely or as a synonym), or
/// when pieces alone cover at least this share of the query.
const MIN_PIECES_RELEVANCE: f32 = 0.45;
/// Weaker sections Stage 4 adds at most per condition.
const RELAXED_LIMIT: usize = 10;
/// Sections the scan verifies in one round, per candidate the search may answer: the
/// index's ranking is close to the scan's, so twice the cap holds the scan's best.
const VERIFY_PER_CANDIDATE: usize = 2;
/// Rounds of verification at most (a round verifies the next best of the one ranking
/// when the previous rounds left fewer candidates than the cap).
const VERIFY_ROUNDS: usize = 4;

/// What one search works with.
pub(super) struct Search<'a> {
    pub corpus: &'a Corpus,
    pub files: &'a [&'a ManualFile],
    pub plan: &'a Plan,
    pub request: &'a FindRequest,
    pub deadline: Instant,
    /// The call: its cancellation ends the scan as the deadline does; sections scanned
    /// are its progress.
    pub call: &'a CallContext,
    pub thresholds: Thresholds,
    pub max_stage: u8,
    pub max_candidates: usize,
    /// The `semantic` source, when semantic recall is on.
    pub semantic: Option<&'a SemanticSearch<'a>>,
    /// Where this search's time goes, for its log line.
    pub phases: Phases,
}

/// Where a search's time went, logged with its metrics: the parts whose cost grows with
/// the sections the query's terms flag, and the bounded verification (docs/benchmarks.md,
/// "Where a warm search's time goes"). Wall times, summed when Stage 4 runs Stages 0-1
/// again outside the manual.
#[derive(Default)]
pub(super) struct Phases {
    /// Sections the section index found (with evidence hits or units alone).
    index_sections: Cell<usize>,
    /// The index's postings turned into the found sections' hits.
    index_hits: Cell<Duration>,
    /// The one ranking: every found section scored.
    ranking: Cell<Duration>,
    /// The verification order and rounds: the best sections' files read and scanned.
    verification: Cell<Duration>,
}

impl Phases {
    /// Adds the time since `since` to `phase`, and returns now, the next part's start.
    fn lap(phase: &Cell<Duration>, since: Instant) -> Instant {
        let now = Instant::now();
        phase.set(phase.get() + (now - since));
        now
    }
}

/// Stages 0-1 over a scope: the hits of every section with evidence, exact for the
/// sections the scan verified, provisional (the index's) for the others.
pub(super) struct Stage01 {
    /// The exact hits (of the sections the scan verified, and of files the index does
    /// not hold); until the one ranking, the provisional ones too.
    scanned: ScanResult,
    /// The index's provisional hits, sorted by key, taken out of `scanned` once the one
    /// ranking is made: the verification rounds score only the exact hits, and walking
    /// tens of thousands of provisional ones in every round was a share of a warm search
    /// at 200 MB of manuals. Only those of sections still in `provisional` count.
    unverified: Vec<(NodeKey, NodeHits)>,
    /// The index's sections holding units alone, until the one ranking has ranked them
    /// (they need no hits after it: they hold no term, and the rounds score only
    /// verified sections).
    unit_only: UnitOnly,
    /// Fx-hashed: it holds every section the index found and is probed for each of
    /// them several times a search (SipHash was a visible share of a warm profile).
    provisional: FxHashSet<NodeKey>,
    unit_df: Vec<u32>,
    /// The content terms' document frequency over every section in `scanned` and the
    /// provisional ones of `unverified`, updated with them.
    term_df: TermDf,
    /// The best units score over every section the index found: the verified sections'
    /// unit shares are taken against it, as if every section had been scored.
    units_best: f32,
    /// The candidates of the one ranking, best first: those the scan has not verified
    /// are the overflow, listed unscanned.
    ranked: Vec<NodeKey>,
    /// The titles' matches, kept from the index's hits through every fusion of the
    /// search.
    titles: RefCell<TitleSets>,
}

/// Which sections a fusion scores.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scoring {
    /// Every section the index or the scan found: the one ranking of a search.
    Everything,
    /// Only the sections the scan verified (the others keep their provisional hits).
    Verified,
}

/// The fusion of Stages 0-1 (see `Search::fused`).
struct Fusion {
    scored: Vec<Scored>,
    candidates: Vec<Candidate>,
    alone: Vec<Ranked>,
    units_best: f32,
}

/// The one ranking of a search (see `Search::one_ranking`): what the verification order
/// and the overflow need of the fusion of every section the index found.
struct OneRanking {
    /// Every candidate with its fused score, unordered.
    candidates: Vec<Ranked>,
    /// The best scored sections (candidates or not), best first, at most
    /// `RELAXED_LIMIT * 2`: those Stage 4 may add.
    relaxed: Vec<NodeKey>,
    /// The best units score over every section.
    units_best: f32,
}

/// Stages 0-1 as the later stages take them.
struct Verified {
    candidates: Vec<Candidate>,
    scored: Vec<Scored>,
    overflow: Vec<NodeKey>,
}

impl Stage01 {
    /// The time budget ran out before the scan could verify `keys` (sorted): they are
    /// left unscanned, as a scan cut by the deadline leaves its sections.
    fn left_unverified(&mut self, plan: &Plan, keys: &[NodeKey]) {
        let set: FxHashSet<NodeKey> = keys.iter().copied().collect();
        self.uncount(plan, keys);
        self.provisional.retain(|key| !set.contains(key));
        self.scanned.hits.retain(|(key, _)| !set.contains(key));
        self.scanned.unscanned.extend(scope_of(keys));
    }

    /// Moves the provisional hits out of `scanned` (see `unverified`) and lets the
    /// sections holding units alone go.
    fn set_aside_provisional(&mut self) {
        self.unit_only = UnitOnly::default();
        // The exact hits are few (those of files the index does not hold): taking them
        // out leaves the provisional ones where they are, instead of moving every one.
        let exact: Vec<(NodeKey, NodeHits)> = self
            .scanned
            .hits
            .extract_if(.., |(_, hits)| !hits.provisional)
            .collect();
        self.unverified = std::mem::replace(&mut self.scanned.hits, exact);
    }

    /// The hits of `key`: exact, or provisional while it is unverified.
    fn hits(&self, key: NodeKey) -> Option<&NodeHits> {
        self.scanned.get(key).or_else(|| {
            if !self.provisional.contains(&key) {
                return None;
            }
            let at = self
                .unverified
                .binary_search_by_key(&key, |(k, _)| *k)
                .ok()?;
            Some(&self.unverified[at].1)
        })
    }

    /// The terms' document frequency counted again over every section's hits (what
    /// `term_df` must always be).
    fn recount(&self, plan: &Plan) -> TermDf {
        let mut df = TermDf::of(plan, &self.scanned);
        for (_, hits) in self
            .unverified
            .iter()
            .filter(|(key, _)| self.provisional.contains(key))
        {
            df.add(plan, hits);
        }
        df
    }

    /// Replaces the hits of `keys` (sorted) by those of `exact`, their scan.
    fn verify(&mut self, plan: &Plan, keys: &[NodeKey], exact: ScanResult) {
        let set: FxHashSet<NodeKey> = keys.iter().copied().collect();
        self.uncount(plan, keys);
        self.provisional.retain(|key| !set.contains(key));
        self.scanned.replace(&set, exact);
        for key in keys {
            if let Some(hits) = self.scanned.get(*key) {
                self.term_df.add(plan, hits);
            }
        }
        debug_assert_eq!(self.term_df, self.recount(plan));
    }

    /// Takes the hits of `keys` out of the terms' document frequency.
    fn uncount(&mut self, plan: &Plan, keys: &[NodeKey]) {
        let mut term_df = std::mem::take(&mut self.term_df);
        for key in keys {
            if let Some(hits) = self.hits(*key) {
                term_df.remove(plan, hits);
            }
        }
        self.term_df = term_df;
    }

    fn merge(&mut self, mut other: Stage01) {
        self.term_df.merge(&other.term_df);
        self.scanned.merge(std::mem::take(&mut other.scanned));
        if !other.unverified.is_empty() {
            self.unverified.append(&mut other.unverified);
            self.unverified.sort_unstable_by_key(|(key, _)| *key);
        }
        self.provisional
            .extend(std::mem::take(&mut other.provisional));
        for (mine, theirs) in self.unit_df.iter_mut().zip(&other.unit_df) {
            *mine += theirs;
        }
        self.units_best = self.units_best.max(other.units_best);
        self.ranked.append(&mut other.ranked);
    }
}

/// The index's hits (in `unverified` once set aside) and the set of provisional sections
/// are kept for the next search's: at 200 MB of manuals they take several MB, a fresh
/// page each 4 KiB written.
impl Drop for Stage01 {
    fn drop(&mut self) {
        keep_hits(std::mem::take(&mut self.unverified));
        keep_section_set(std::mem::take(&mut self.provisional));
    }
}

/// The candidates of a search and how they came about.
pub(super) struct SearchResult {
    candidates: Vec<Candidate>,
    /// Candidates the index found but the scan did not verify before the cap: listed
    /// unscanned (`candidate_cap`), never answered on provisional evidence.
    overflow: Vec<NodeKey>,
    scanned_files: usize,
    scanned_nodes: usize,
    unscanned: Vec<Unscanned>,
    weights: Vec<f32>,
    warnings: Vec<String>,
    pub escalations: Vec<Escalation>,
    max_stage_applied: u8,
    scope_expanded: bool,
    time_cut: bool,
    stage_capped: bool,
    integrated: usize,
    stage4_added: usize,
    stage4_added_chars: usize,
}

impl Search<'_> {
    /// Every section of `manual_id` (or of every manual); with `inside` false, every
    /// section outside it instead.
    pub(super) fn scope_of_manual(&self, manual_id: Option<&str>, inside: bool) -> Scope {
        self.corpus
            .files
            .iter()
            .enumerate()
            .filter(|(_, file)| manual_id.is_none_or(|id| (&*file.manual_id == id) == inside))
            .map(|(index, _)| (index as u32, None))
            .collect()
    }

    /// The sections `trace` left unscanned, located in the current corpus (a section
    /// whose file changed since is found by the line it started at).
    pub(super) fn scope_of_unscanned(&self, trace: &Trace) -> Scope {
        let mut by_file: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (file, line) in trace.unscanned_places() {
            let Some(index) = self.corpus.file_index(&file.manual_id, &file.path) else {
                continue;
            };
            let manual_file = self.files[index as usize];
            if manual_file.nodes().is_empty() {
                continue;
            }
            let node = manual_file
                .node_index_from(line)
                .min(manual_file.nodes().len() - 1);
            by_file.entry(index).or_default().push(node as u32);
        }
        by_file
            .into_iter()
            .map(|(file, mut nodes)| {
                nodes.sort_unstable();
                nodes.dedup();
                (file, Some(nodes))
            })
            .collect()
    }

    /// Stages 0-1 over `scope`: the section index's provisional hits, ranked once (the
    /// expensive evidence scoring runs over every section the index found only here),
    /// then rounds of the scan over the best of that ranking (and over every section of
    /// files the index does not hold), until the verified candidates fill the cap or
    /// none are left. Each round counts the verified candidates by scoring only the
    /// verified sections.
    fn stage01(&self, scope: &Scope, extra: &[RankedSource]) -> Stage01 {
        if self.out_of_time() {
            return Stage01 {
                scanned: ScanResult {
                    unscanned: scope.clone(),
                    ..ScanResult::default()
                },
                unverified: Vec::new(),
                unit_only: UnitOnly::default(),
                provisional: FxHashSet::default(),
                unit_df: vec![0; self.plan.units.len()],
                term_df: TermDf::of(self.plan, &ScanResult::default()),
                units_best: 0.0,
                ranked: Vec::new(),
                titles: RefCell::default(),
            };
        }
        let brought: FxHashSet<NodeKey> = extra
            .iter()
            .flat_map(|source| source.items.iter().map(|item| item.key))
            .collect();
        let mut titles = TitleSets::default();
        let started = Instant::now();
        let found = index_hits(self.corpus, self.plan, scope, &brought, &mut titles);
        Phases::lap(&self.phases.index_hits, started);
        let phases = &self.phases;
        phases.index_sections.set(
            phases.index_sections.get() + found.scan.hits.len() + found.unit_only.keys().len(),
        );
        let mut stage = Stage01 {
            provisional: {
                let mut provisional = section_set();
                provisional.extend(
                    found
                        .scan
                        .hits
                        .iter()
                        .map(|(key, _)| *key)
                        .chain(found.unit_only.keys().iter().copied()),
                );
                provisional
            },
            unit_only: found.unit_only,
            term_df: TermDf::of(self.plan, &ScanResult::default()),
            scanned: found.scan,
            unverified: Vec::new(),
            unit_df: found.unit_df,
            units_best: 0.0,
            ranked: Vec::new(),
            titles: RefCell::new(titles),
        };
        let unindexed: Scope = scope
            .iter()
            .filter(|(file, _)| self.corpus.unindexed.binary_search(file).is_ok())
            .cloned()
            .collect();
        if !unindexed.is_empty() {
            let direct = scan(
                self.corpus,
                self.files,
                self.plan,
                &unindexed,
                self.deadline,
                self.call,
            );
            let filter = ScopeFilter::new(self.corpus, &unindexed);
            stage.provisional.retain(|key| !filter.contains(*key));
            for (key, hits) in &mut stage.scanned.hits {
                hits.provisional &= !filter.contains(*key);
            }
            let keys: FxHashSet<NodeKey> = direct.hits.iter().map(|(key, _)| *key).collect();
            stage.scanned.replace(&keys, direct);
        }
        stage.term_df = TermDf::of(self.plan, &stage.scanned);
        let started = Instant::now();
        let ranking = self.one_ranking(&stage, extra);
        let verifying = Phases::lap(&self.phases.ranking, started);
        stage.units_best = ranking.units_best;
        // Only the first VERIFY_ROUNDS chunks of the order are ever scanned.
        let chunk = self.max_candidates * VERIFY_PER_CANDIDATE;
        stage.ranked = ranking.candidates.iter().map(|c| c.key).collect();
        let order = verification_order(
            ranking,
            |key| stage.provisional.contains(&key),
            chunk * VERIFY_ROUNDS,
        );
        stage.set_aside_provisional();
        let mut order = order.chunks(chunk);
        for _ in 0..VERIFY_ROUNDS {
            let candidates = self.fused(&stage, extra, Scoring::Verified).candidates;
            let verified = candidates
                .iter()
                .filter(|c| !stage.provisional.contains(&c.key))
                .count();
            if verified >= self.max_candidates {
                break;
            }
            let Some(next) = order.next() else {
                break;
            };
            let mut next = next.to_vec();
            next.sort_unstable();
            if self.out_of_time() {
                stage.left_unverified(self.plan, &next);
                break;
            }
            let exact = scan(
                self.corpus,
                self.files,
                self.plan,
                &scope_of(&next),
                self.deadline,
                self.call,
            );
            stage.verify(self.plan, &next, exact);
        }
        Phases::lap(&self.phases.verification, verifying);
        stage
    }

    /// Whether the time budget is spent or the call cancelled.
    fn out_of_time(&self) -> bool {
        Instant::now() >= self.deadline || self.call.is_cancelled()
    }

    /// The evidence scores and the fused candidates of Stages 0-1, best first, the
    /// candidates only the units list among the index's sections holding units alone
    /// (`alone`, unordered, when no other source lists sections), and the best units
    /// score of the sections scored.
    fn fused(&self, stage: &Stage01, extra: &[RankedSource], scoring: Scoring) -> Fusion {
        // A page's first section without hits of its own is provisional when the index
        // found it, and its hits are then set aside.
        let keep = |key: NodeKey, hits: &NodeHits| match scoring {
            Scoring::Everything => true,
            Scoring::Verified => !hits.provisional && !stage.provisional.contains(&key),
        };
        let mut titles = stage.titles.borrow_mut();
        let weights = stage.term_df.weights(self.corpus.node_count);
        let scored = score_all(
            self.plan,
            self.corpus,
            &stage.scanned,
            &weights,
            &keep,
            &mut titles,
        );
        let mut units = rank_units(
            self.plan,
            self.corpus,
            &stage.scanned,
            Some(&stage.unit_df),
            &keep,
            &mut titles,
        );
        let alone_items = rank_unit_only(
            self.plan,
            self.corpus,
            &stage.scanned,
            &stage.unit_only,
            &stage.unit_df,
            &mut titles,
        );
        drop(titles);
        let units_best = alone_items
            .iter()
            .map(|item| item.score)
            .fold(units.items.first().map_or(0.0, |item| item.score), f32::max);
        units.best_of_list = match scoring {
            Scoring::Everything => units_best,
            Scoring::Verified => stage.units_best,
        };
        // Only the units list these sections, unless another source does too.
        let alone = if extra.is_empty() {
            admitted_alone(&alone_items, units.weight, units_best)
        } else {
            units.items.extend(alone_items);
            Vec::new()
        };
        let mut sources = vec![units];
        sources.extend(extra.iter().cloned());
        let mut candidates = fuse(
            &scored,
            &sources,
            self.plan.terms.len(),
            is_scored_candidate,
        );
        candidates.sort_by(Candidate::best_first);
        Fusion {
            scored,
            candidates,
            alone,
            units_best,
        }
    }

    /// The one ranking of every section the index or the scan found. With the units as
    /// the only other source, it is made without `fuse`'s map and `Candidate`s: the
    /// evidence scores and the units' items are joined in key order, and only the best
    /// scored sections are put in order (see `ranked_in_key_order`).
    fn one_ranking(&self, stage: &Stage01, extra: &[RankedSource]) -> OneRanking {
        if !extra.is_empty() {
            let fusion = self.fused(stage, extra, Scoring::Everything);
            let candidates = fusion.candidates.iter().map(|c| Ranked {
                key: c.key,
                score: c.score,
            });
            return OneRanking {
                candidates: candidates.chain(fusion.alone).collect(),
                relaxed: fusion
                    .scored
                    .iter()
                    .take(RELAXED_LIMIT * 2)
                    .map(|s| s.key)
                    .collect(),
                units_best: fusion.units_best,
            };
        }
        let (plan, corpus) = (self.plan, self.corpus);
        let mut titles = stage.titles.borrow_mut();
        let weights = stage.term_df.weights(corpus.node_count);
        let every = |_: NodeKey, _: &NodeHits| true;
        let mut scored = Vec::new();
        score_each(
            plan,
            corpus,
            &stage.scanned,
            &weights,
            &every,
            &mut titles,
            |key, evidence, ways| {
                scored.push(Evident {
                    key,
                    score: evidence.score,
                    candidate: is_candidate(&evidence, ways),
                })
            },
        );
        let df = Some(&stage.unit_df[..]);
        let units = units_in_key_order(plan, corpus, &stage.scanned, df, &every, &mut titles);
        let alone = rank_unit_only(
            plan,
            corpus,
            &stage.scanned,
            &stage.unit_only,
            &stage.unit_df,
            &mut titles,
        );
        ranked_in_key_order(scored, &units, &alone)
    }

    /// `Err(cancelled)` as soon as the call is cancelled after Stages 0-1: the scoring and
    /// the stages after them take a large share of a warm search, and a cancelled search
    /// answers nothing anyway.
    pub(super) fn run(
        &self,
        scope: Scope,
        narrowed: bool,
        manual_id: Option<&str>,
    ) -> ToolResult<SearchResult> {
        let mut warnings = Vec::new();
        // The semantic source joins every fusion, so the verification rounds also check
        // the sections it ranks high. Waiting for the query's vector is pointless once
        // the call is cancelled.
        self.call.check_cancelled()?;
        let mut extra = Vec::new();
        if let Some(semantic) = self.semantic {
            extra.extend(semantic.source(self.corpus, self.files, &scope));
            if let Some(warning) = semantic.report().warning {
                warnings.push(format!("semantic signal missing: {warning}"));
            }
        }
        let mut stage = self.stage01(&scope, &extra);
        self.call.check_cancelled()?;
        let Verified {
            mut candidates,
            scored,
            overflow,
        } = self.verified(&stage, &extra);
        self.call.check_cancelled()?;
        let filter = ScopeFilter::new(self.corpus, &scope);
        let in_scope = |key: NodeKey| filter.contains(key);
        self.stage2(&mut candidates, &mut warnings);
        self.stage3(&scored, &mut candidates, &mut warnings, &in_scope);
        // Sections found by meaning alone are thin evidence: Stage 4's conditions (too
        // few candidates, one file, no exception) look at the others.
        let evident: Vec<Candidate> = candidates
            .iter()
            .filter(|c| !c.by_meaning_only())
            .cloned()
            .collect();
        let mut result = SearchResult {
            escalations: escalations(&evident, self.plan.query.intent, self.thresholds),
            time_cut: !stage.scanned.unscanned.is_empty(),
            candidates,
            overflow,
            scanned_files: 0,
            scanned_nodes: 0,
            unscanned: Vec::new(),
            weights: Vec::new(),
            warnings,
            max_stage_applied: 3,
            scope_expanded: false,
            stage_capped: false,
            integrated: 0,
            stage4_added: 0,
            stage4_added_chars: 0,
        };
        let outside = narrowed.then(|| self.scope_of_manual(manual_id, false));
        if !result.escalations.is_empty() && !result.time_cut {
            if self.max_stage < 4 {
                result.stage_capped = true;
                if let Some(outside) = &outside {
                    result
                        .unscanned
                        .extend(self.unscanned(outside, CutoffReason::StageCap));
                }
            } else {
                let widened_scored = outside.map(|outside| {
                    stage.merge(self.stage01(&outside, &[]));
                    self.verified(&stage, &[]).scored
                });
                let all_scored = widened_scored.as_deref().unwrap_or(&scored);
                self.stage4(all_scored, &mut result);
                result.time_cut = !stage.scanned.unscanned.is_empty();
            }
        }
        result.scanned_files = stage.scanned.scanned_files;
        result.scanned_nodes = stage.scanned.scanned_nodes;
        result.weights = stage.term_df.weights(self.corpus.node_count);
        let left = self.unscanned(&stage.scanned.unscanned, CutoffReason::TimeBudget);
        result.unscanned.splice(0..0, left);
        self.call.check_cancelled()?;
        Ok(result)
    }

    /// The fused candidates and evidence scores of the sections the scan verified, and
    /// the provisional candidates beyond them.
    fn verified(&self, stage: &Stage01, extra: &[RankedSource]) -> Verified {
        let Fusion {
            scored, candidates, ..
        } = self.fused(stage, extra, Scoring::Verified);
        let candidates: Vec<Candidate> = candidates
            .into_iter()
            .filter(|c| !stage.provisional.contains(&c.key))
            .collect();
        Verified {
            candidates,
            scored,
            overflow: stage
                .ranked
                .iter()
                .filter(|key| stage.provisional.contains(key))
                .copied()
                .collect(),
        }
    }

    fn stage2(&self, candidates: &mut Vec<Candidate>, warnings: &mut Vec<String>) {
        if self.out_of_time() {
            warnings.push("stage 2 skipped: time budget spent".into());
            return;
        }
        let mut updated = candidates.clone();
        let outcome = guarded(2, || {
            if self.injected_failure(2) {
                return Err("injected failure".into());
            }
            Ok(stage2_exceptions(
                self.corpus,
                self.files,
                self.plan,
                &mut updated,
            ))
        });
        match outcome {
            Ok(_) => *candidates = updated,
            Err(failure) => warnings.push(format!("stage 2 failed: {}", failure.message)),
        }
    }

    /// Whether a test asked Stage `stage` to fail (never in the server's build).
    fn injected_failure(&self, stage: u8) -> bool {
        #[cfg(test)]
        return self.request.fail_stage == Some(stage);
        #[cfg(not(test))]
        {
            let _ = stage;
            false
        }
    }

    fn stage3(
        &self,
        scored: &[Scored],
        candidates: &mut Vec<Candidate>,
        warnings: &mut Vec<String>,
        in_scope: &dyn Fn(NodeKey) -> bool,
    ) {
        if self.out_of_time() {
            warnings.push("stage 3 skipped: time budget spent".into());
            return;
        }
        let known: HashMap<NodeKey, &Scored> = scored.iter().map(|s| (s.key, s)).collect();
        let mut updated = candidates.clone();
        let outcome = guarded(3, || {
            if self.injected_failure(3) {
                return Err("injected failure".into());
            }
            let terms = self.plan.terms.len();
            let lexical_seeds = self.semantic.is_some() && Tuning::current().lexical_seeds;
            stage3_references(
                self.corpus,
                &known,
                &mut updated,
                terms,
                in_scope,
                lexical_seeds,
            );
            Ok(())
        });
        match outcome {
            Ok(()) => *candidates = updated,
            Err(failure) => warnings.push(format!("stage 3 failed: {}", failure.message)),
        }
    }

    /// Stage 4: adds weaker matches and exception statements per the conditions that hold.
    fn stage4(&self, scored: &[Scored], result: &mut SearchResult) {
        result.max_stage_applied = 4;
        result.scope_expanded = true;
        let before = result.candidates.len();
        let keys: HashSet<NodeKey> = result.candidates.iter().map(|c| c.key).collect();
        let mut added: Vec<Candidate> = scored
            .iter()
            .filter(|s| is_scored_candidate(s) && !keys.contains(&s.key))
            .map(|s| {
                let mut candidate = Candidate::from_scored(s);
                candidate.signals.insert(Signals::EXPANDED);
                candidate
            })
            .collect();
        result.candidates.append(&mut added);
        for escalation in result.escalations.clone() {
            let more = match escalation {
                Escalation::NoCandidates | Escalation::FewCandidates => {
                    relaxed(scored, &result.candidates, false, RELAXED_LIMIT)
                }
                Escalation::FileBias => relaxed(scored, &result.candidates, true, RELAXED_LIMIT),
                Escalation::NoExceptionHit => exception_neighbours(
                    self.corpus,
                    self.files,
                    &result.candidates,
                    self.plan.terms.len(),
                ),
            };
            result.candidates.extend(more);
        }
        let mut fresh = result.candidates.split_off(before);
        self.stage2(&mut fresh, &mut result.warnings);
        result.stage4_added = fresh.len();
        result.stage4_added_chars = fresh
            .iter()
            .map(|c| {
                let text = self
                    .corpus
                    .text(c.key.file, self.files[c.key.file as usize]);
                let chars = text.own_text(c.key.node).chars().count();
                chars
            })
            .sum();
        result.candidates.append(&mut fresh);
    }

    /// Unscanned entries for the sections of `scope`.
    fn unscanned(&self, scope: &Scope, reason: CutoffReason) -> Vec<Unscanned> {
        scope
            .iter()
            .map(|(file, nodes)| {
                let manual_file = self.files[*file as usize];
                let corpus_file = &self.corpus.files[*file as usize];
                let lines = match nodes {
                    Some(nodes) => nodes
                        .iter()
                        .map(|&node| manual_file.nodes()[node as usize].line_start)
                        .collect(),
                    None => manual_file
                        .nodes()
                        .iter()
                        .map(|node| node.line_start)
                        .collect(),
                };
                Unscanned {
                    manual_id: Arc::clone(&corpus_file.manual_id),
                    path: Arc::clone(&corpus_file.path),
                    json: is_json(manual_file),
                    lines,
                    reason,
                }
            })
            .filter(|unscanned| !unscanned.lines.is_empty())
            .collect()
    }

    fn place(&self, key: NodeKey) -> Place {
        let corpus_file = &self.corpus.files[key.file as usize];
        let file = self.files[key.file as usize];
        let node = &file.nodes()[key.node as usize];
        Place {
            manual_id: Arc::clone(&corpus_file.manual_id),
            path: Arc::clone(&corpus_file.path),
            start_line: (node.kind != NodeKind::JsonFile).then_some(node.line_start),
            title: node.title.as_str().to_owned(),
        }
    }
}

fn is_json(file: &ManualFile) -> bool {
    file.nodes()
        .first()
        .is_some_and(|node| node.kind == NodeKind::JsonFile)
}

/// The scope of `keys` (sorted).
fn scope_of(keys: &[NodeKey]) -> Scope {
    keys.chunk_by(|a, b| a.file == b.file)
        .map(|run| (run[0].file, Some(run.iter().map(|key| key.node).collect())))
        .collect()
}

/// The one ranking `fused` makes of the evidence scores `scored` and the units' items of
/// the sections with hits (`units`), both in key order, and of the index's sections
/// holding units alone (`alone`), when no other source lists sections: the same
/// candidates with the same scores, the same best units score, and the best scored
/// sections in order, selected instead of sorting every scored section.
fn ranked_in_key_order(
    mut scored: Vec<Evident>,
    units: &RankedSource,
    alone: &[SourceItem],
) -> OneRanking {
    let best_item = units
        .items
        .iter()
        .map(|item| item.score)
        .max_by(f32::total_cmp);
    let units_best = alone
        .iter()
        .map(|item| item.score)
        .fold(best_item.unwrap_or(0.0), f32::max);
    let mut candidates = fuse_in_key_order(&scored, &units.items, units.weight, units_best);
    candidates.extend(admitted_alone(alone, units.weight, units_best));
    let relaxed = best_ranked(&mut scored, RELAXED_LIMIT * 2, |s| (s.score, s.key));
    OneRanking {
        candidates,
        relaxed: relaxed.iter().map(|s| s.key).collect(),
        units_best,
    }
}

/// The best `wanted` of `items` in ranking order (`rank` gives each one's score and
/// place), the rest dropped: a selection, then a sort of those selected only.
fn best_ranked<T>(items: &mut Vec<T>, wanted: usize, rank: impl Fn(&T) -> (f32, NodeKey)) -> &[T] {
    let by_rank = |a: &T, b: &T| best_first(rank(a), rank(b));
    if wanted < items.len() {
        items.select_nth_unstable_by(wanted, by_rank);
        items.truncate(wanted);
    }
    items.sort_unstable_by(by_rank);
    items
}

/// The sections the scan verifies, best first, at most `wanted` of them, each once and
/// only those `unverified` accepts: the candidates of the one ranking, then the best
/// scored of the rest, which Stage 4 may add. Only the first `wanted` of the candidates
/// `unverified` accepts are put in order: no candidate after them can come before any
/// of them, so they are the whole ranking's up to that point, and `wanted` sections of
/// the order come before the rest. (The candidates are distinct sections: the index's
/// sections holding units alone are in no other list.)
fn verification_order(
    ranking: OneRanking,
    unverified: impl Fn(NodeKey) -> bool,
    wanted: usize,
) -> Vec<NodeKey> {
    let mut candidates = ranking.candidates;
    candidates.retain(|c| unverified(c.key));
    let best = best_ranked(&mut candidates, wanted, |c| (c.score, c.key));
    let mut seen = FxHashSet::default();
    best.iter()
        .map(|c| c.key)
        .chain(ranking.relaxed)
        .filter(|key| unverified(*key) && seen.insert(*key))
        .take(wanted)
        .collect()
}

/// Whether Stages 0-1 evidence (with the way each term matched) makes a section a
/// candidate (see the constants).
fn is_candidate(evidence: &Evidence, ways: &[Way]) -> bool {
    let whole_term = ways.iter().any(|way| *way >= Way::Synonym);
    let strong = evidence
        .signals
        .intersects(Signals::STRICT.with(Signals::LINK_TEXT));
    evidence.score >= MIN_CANDIDATE_SCORE
        && (whole_term || strong || evidence.relevance >= MIN_PIECES_RELEVANCE)
}

/// [`is_candidate`] of a scored section.
fn is_scored_candidate(scored: &Scored) -> bool {
    is_candidate(&scored.evidence(), &scored.ways)
}

impl SearchResult {
    /// Ranks the candidates and keeps the best `max_candidates`; the rest become
    /// unscanned with reason `candidate_cap`. Returns the cutoff that applies.
    pub(super) fn cap(&mut self, search: &Search, max_candidates: usize) -> Option<CutoffReason> {
        self.candidates.sort_by(Candidate::best_first);
        self.candidates.dedup_by_key(|c| c.key);
        if search.semantic.is_some() {
            rank_fused(&mut self.candidates, &Tuning::current());
        }
        self.integrated = self.candidates.len();
        let over = self.candidates.len() > max_candidates || !self.overflow.is_empty();
        if over {
            let mut by_file: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            let cut = self
                .candidates
                .split_off(max_candidates.min(self.candidates.len()))
                .into_iter()
                .map(|candidate| candidate.key)
                .chain(std::mem::take(&mut self.overflow));
            for key in cut {
                by_file.entry(key.file).or_default().push(key.node);
            }
            let scope: Scope = by_file
                .into_iter()
                .map(|(file, mut nodes)| {
                    nodes.sort_unstable();
                    nodes.dedup();
                    (file, Some(nodes))
                })
                .collect();
            self.unscanned
                .extend(search.unscanned(&scope, CutoffReason::CandidateCap));
        }
        if self.time_cut {
            Some(CutoffReason::TimeBudget)
        } else if over {
            Some(CutoffReason::CandidateCap)
        } else if self.stage_capped {
            Some(CutoffReason::StageCap)
        } else {
            None
        }
    }

    pub(super) fn conclude(
        &mut self,
        search: &Search,
        id: String,
        cutoff: Option<CutoffReason>,
    ) -> (Trace, FindOutcome) {
        let verdict = integrate(
            search.plan,
            search.corpus,
            search.files,
            &self.candidates,
            &self.weights,
            cutoff,
        );
        let hits: Vec<Hit> = self
            .candidates
            .iter()
            .map(|c| Hit {
                place: search.place(c.key),
                signals: c.signals,
                score: c.score,
            })
            .collect();
        let trace = Trace {
            id: id.clone(),
            conflicts: conflict_items(&verdict, &hits),
            gaps: gap_items(&verdict, search),
            unscanned: std::mem::take(&mut self.unscanned),
            top: verdict.top,
            candidates: hits,
        };
        let summary = self.summary(search, &verdict, &trace, cutoff);
        let next_actions = next_actions(&Situation {
            trace_id: &id,
            query: &search.request.query,
            verdict: &verdict,
            candidates: trace.candidates.len(),
            top: trace.candidates.first().map(|hit| &hit.place),
            cutoff,
        });
        let outcome = FindOutcome {
            trace_id: id,
            summary,
            next_actions,
            warnings: self.warnings.clone(),
            max_stage_allowed: search.max_stage,
            stage4_added: self.stage4_added,
            stage4_added_chars: self.stage4_added_chars,
        };
        (trace, outcome)
    }

    fn summary(
        &self,
        search: &Search,
        verdict: &Verdict,
        trace: &Trace,
        cutoff: Option<CutoffReason>,
    ) -> Summary {
        let count = |signal: Signals| {
            self.candidates
                .iter()
                .filter(|c| c.signals.intersects(signal))
                .count()
        };
        let query = &search.plan.query;
        Summary {
            intent: query.intent,
            intent_inferred: query.intent_inferred,
            strict_terms: query.strict.len(),
            also_used: search.plan.also,
            scanned_files: self.scanned_files,
            scanned_nodes: self.scanned_nodes,
            candidates: self.candidates.len(),
            warnings: self.warnings.len(),
            max_stage_applied: self.max_stage_applied,
            scope_expanded: self.scope_expanded,
            unscanned_sections_count: trace.unscanned_count(),
            integrated_nodes: self.integrated,
            signal_coverage: SignalCoverage {
                heading: count(Signals::HEADING),
                normalized: count(Signals::NORMALIZED),
                loose: count(Signals::LOOSE),
                synonym: count(Signals::SYNONYM),
                exceptions: count(Signals::EXCEPTIONS),
                reference: count(Signals::REFERENCE.with(Signals::LINK_TEXT)),
                semantic: search.semantic.map(|_| count(Signals::SEMANTIC)),
            },
            file_bias_ratio: verdict.file_bias,
            conflict_count: verdict.conflicts.len(),
            gap_count: verdict.gaps.len(),
            sufficiency_score: verdict.sufficiency,
            integration_status: verdict.status,
            cutoff_reason: cutoff,
            semantic: search.semantic.map(SemanticSearch::report),
        }
    }
}

fn conflict_items(verdict: &Verdict, hits: &[Hit]) -> Vec<ConflictItem> {
    let mut items: BTreeMap<usize, ConflictItem> = BTreeMap::new();
    for conflict in &verdict.conflicts {
        for (own, other) in [
            (conflict.first, conflict.second),
            (conflict.second, conflict.first),
        ] {
            let item = items.entry(own).or_insert_with(|| ConflictItem {
                place: hits[own].place.clone(),
                signals: hits[own].signals,
                score: hits[own].score,
                with: Vec::new(),
                kind: String::new(),
            });
            item.with.push(hits[other].place.clone());
            if !item.kind.split(',').any(|kind| kind == conflict.kind) {
                if !item.kind.is_empty() {
                    item.kind.push(',');
                }
                item.kind.push_str(&conflict.kind);
            }
        }
    }
    items.into_values().collect()
}

fn gap_items(verdict: &Verdict, search: &Search) -> Vec<GapItem> {
    verdict
        .gaps
        .iter()
        .map(|gap| match gap {
            Gap::Term {
                text,
                strict: false,
            } => GapItem {
                place: None,
                hint: format!("no section matches the term 「{text}」"),
            },
            Gap::Term { text, strict: true } => GapItem {
                place: None,
                hint: format!("no candidate contains the strict term 「{text}」 as written"),
            },
            Gap::Reference {
                from,
                line,
                description,
            } => GapItem {
                place: Some(search.place(*from)),
                hint: format!("{description} (line {line}) is not found in the manuals"),
            },
        })
        .collect()
}

/// The `manual_find` info line (spec_manuals §6), and a warn line with the escalation
/// reasons and signal counts when the search had to escalate or degrade.
pub(super) fn log_outcome(outcome: &FindOutcome, escalations: &[Escalation], phases: &Phases) {
    let summary = &outcome.summary;
    let actions: Vec<&str> = outcome.next_actions.iter().map(|a| a.call.tool()).collect();
    let millis = |phase: &Cell<Duration>| phase.get().as_secs_f64() * 1000.0;
    tracing::info!(
        trace_id = %outcome.trace_id,
        scanned_files = summary.scanned_files,
        scanned_nodes = summary.scanned_nodes,
        candidates = summary.candidates,
        warnings = summary.warnings,
        max_stage_applied = summary.max_stage_applied,
        scope_expanded = summary.scope_expanded,
        cutoff_reason = summary.cutoff_reason.map(CutoffReason::as_str),
        unscanned_sections_count = summary.unscanned_sections_count,
        integrated_nodes = summary.integrated_nodes,
        file_bias_ratio = summary.file_bias_ratio,
        conflict_count = summary.conflict_count,
        gap_count = summary.gap_count,
        sufficiency_score = summary.sufficiency_score,
        integration_status = summary.integration_status.as_str(),
        next_actions = ?actions,
        index_sections = phases.index_sections.get(),
        index_hits_ms = millis(&phases.index_hits),
        ranking_ms = millis(&phases.ranking),
        verification_ms = millis(&phases.verification),
        "manual_find"
    );
    if !escalations.is_empty() || !outcome.warnings.is_empty() {
        let coverage = summary.signal_coverage;
        tracing::warn!(
            trace_id = %outcome.trace_id,
            escalation_reasons = ?escalations.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            counts_by_signal = ?[
                ("heading", coverage.heading),
                ("normalized", coverage.normalized),
                ("loose", coverage.loose),
                ("synonym", coverage.synonym),
                ("exceptions", coverage.exceptions),
                ("reference", coverage.reference),
                ("semantic", coverage.semantic.unwrap_or(0)),
            ],
            warnings = ?outcome.warnings,
            "manual_find escalated"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::fuse::{FLOOR_SHARE, UNITS_WEIGHT};

    fn key(node: u32) -> NodeKey {
        NodeKey { file: 0, node }
    }

    fn candidate(node: u32, score: f32) -> Candidate {
        Candidate {
            key: key(node),
            score,
            signals: Signals::default(),
            ways: Vec::new(),
            meaning: 0.0,
        }
    }

    fn scored(node: u32, score: f32) -> Scored {
        Scored {
            key: key(node),
            score,
            relevance: 0.0,
            signals: Signals::default(),
            ways: Vec::new(),
        }
    }

    /// The order the whole ranking gives: every candidate sorted, then the best scored
    /// (`relaxed`), each once, only the unverified ones, the first `wanted`.
    fn whole_order(
        candidates: &[Candidate],
        relaxed: &[NodeKey],
        unverified: &dyn Fn(NodeKey) -> bool,
        wanted: usize,
    ) -> Vec<NodeKey> {
        let mut all = candidates.to_vec();
        all.sort_by(Candidate::best_first);
        let mut seen = FxHashSet::default();
        all.iter()
            .map(|c| c.key)
            .chain(relaxed.iter().copied())
            .filter(|key| unverified(*key) && seen.insert(*key))
            .take(wanted)
            .collect()
    }

    /// Only the best candidates are put in order; the verification order is still the
    /// whole ranking's for every length, with candidates just above, at and just below
    /// the score where the order is cut, ties broken by place, and a verified candidate
    /// skipped.
    #[test]
    fn the_order_is_the_whole_rankings_with_only_the_best_candidates_sorted() {
        let candidates = [
            (3, 0.9),
            (8, 0.5),
            (1, 0.5),
            (20, 0.3),
            (4, 0.2999),
            (12, 0.5),
            (2, 0.5),
            (30, 0.3),
            (9, 0.3),
            (11, 0.30001),
            (13, 0.29999),
            (7, 0.1),
            (5, 0.5),
        ]
        .map(|(node, score)| candidate(node, score));
        let relaxed = [40, 3, 41].map(key);
        let ranking = || OneRanking {
            candidates: candidates
                .iter()
                .map(|c| Ranked {
                    key: c.key,
                    score: c.score,
                })
                .collect(),
            relaxed: relaxed.to_vec(),
            units_best: 1.0,
        };
        let unverified = |key: NodeKey| key.node != 1;
        for wanted in 0..=candidates.len() + 3 {
            assert_eq!(
                verification_order(ranking(), unverified, wanted),
                whole_order(&candidates, &relaxed, &unverified, wanted),
                "wanted {wanted}"
            );
        }
        assert_eq!(
            verification_order(ranking(), unverified, 6),
            [3, 2, 5, 8, 12, 11].map(key),
            "ties by place, the verified section 1 skipped"
        );
    }

    /// What the one ranking makes of the evidence scores and the units' items joined in
    /// key order is what `fuse` makes of them: the same candidates (by the evidence bar or
    /// admitted by the units at, just above and just below the floor's share; listed
    /// before, between and after the scored sections; or holding units alone) with the
    /// same scores to the bit, the same best units score and the same best scored
    /// sections in order (more than `RELAXED_LIMIT * 2` of them, with ties).
    #[test]
    fn the_one_ranking_joined_in_key_order_is_fusions() {
        let strong = |node: u32, score: f32| Scored {
            ways: vec![Way::Exact],
            relevance: 0.5,
            ..scored(node, score)
        };
        let mut sections: Vec<Scored> = (0..30u32)
            .map(|n| match n % 3 {
                0 => strong(n * 4, 0.1 + (n % 7) as f32 * 0.1),
                1 => scored(n * 4, 0.2 + (n % 5) as f32 * 0.05),
                _ => scored(n * 4, 0.3),
            })
            .collect();
        sections.push(Scored {
            ways: vec![Way::Pieces],
            relevance: 0.45,
            ..scored(200, MIN_CANDIDATE_SCORE)
        });
        let best = 2.0;
        let floor = best * FLOOR_SHARE;
        let above = f32::from_bits(floor.to_bits() + 1);
        let below = f32::from_bits(floor.to_bits() - 1);
        let item = |node: u32, score: f32, admits: bool| SourceItem {
            key: key(node),
            score,
            admits,
            signals: Signals::default(),
        };
        // Keys 4n are scored; the others are listed by the units only.
        let items = vec![
            item(0, floor, true),
            item(1, best, true),
            item(4, below, true),
            item(5, above, true),
            item(6, below, true),
            item(8, 0.9, false),
            item(12, above, true),
            item(13, floor, false),
            item(16, 1.5, true),
            item(201, floor, true),
            item(300, 0.7, true),
        ];
        let alone = [
            item(7, 0.5, true),
            item(9, below, true),
            item(400, 0.3, true),
        ];
        let units = RankedSource {
            weight: UNITS_WEIGHT,
            items,
            marks: Signals::default(),
            best_of_list: 0.0,
        };
        for scale in [1.0, 0.0] {
            let mut units = units.clone();
            for item in &mut units.items {
                item.score *= scale;
            }
            let alone: Vec<SourceItem> = alone
                .iter()
                .map(|item| SourceItem {
                    score: item.score * scale,
                    ..*item
                })
                .collect();
            let mut sorted = sections.clone();
            sorted.sort_by(|a, b| best_first((a.score, a.key), (b.score, b.key)));
            let mut source = units.clone();
            source
                .items
                .sort_by(|a, b| best_first((a.score, a.key), (b.score, b.key)));
            let units_best = alone
                .iter()
                .map(|item| item.score)
                .fold(source.items[0].score, f32::max);
            source.best_of_list = units_best;
            let mut fused: Vec<(NodeKey, u32)> = fuse(&sorted, &[source], 1, is_scored_candidate)
                .iter()
                .map(|c| (c.key, c.score.to_bits()))
                .chain(
                    admitted_alone(&alone, UNITS_WEIGHT, units_best)
                        .iter()
                        .map(|c| (c.key, c.score.to_bits())),
                )
                .collect();
            fused.sort();
            let evident = sections
                .iter()
                .map(|s| Evident {
                    key: s.key,
                    score: s.score,
                    candidate: is_scored_candidate(s),
                })
                .collect();
            let ranking = ranked_in_key_order(evident, &units, &alone);
            let mut joined: Vec<(NodeKey, u32)> = ranking
                .candidates
                .iter()
                .map(|c| (c.key, c.score.to_bits()))
                .collect();
            joined.sort();
            assert_eq!(joined, fused, "scale {scale}");
            assert_eq!(ranking.units_best.to_bits(), units_best.to_bits());
            let relaxed: Vec<NodeKey> = sorted
                .iter()
                .take(RELAXED_LIMIT * 2)
                .map(|s| s.key)
                .collect();
            assert_eq!(ranking.relaxed, relaxed, "scale {scale}");
            let admitted: Vec<u32> = joined.iter().map(|(key, _)| key.node).collect();
            if scale == 1.0 {
                for node in [0, 1, 5, 12, 16, 201, 300, 7, 400, 200] {
                    assert!(admitted.contains(&node), "{node} is a candidate");
                }
                for node in [6, 13, 9] {
                    assert!(!admitted.contains(&node), "{node} is not");
                }
            }
        }
    }
}
