//! Stages 2, 3 and 4, which work on the candidates Stages 0-1 produced.
//!
//! * Stage 2 reads each candidate's own prose for the exception vocabulary shared with
//!   `manual_excepts`: the caveats are what exhaustive answers miss most, and a question
//!   about exceptions (or eligibility) should rank sections that state them first.
//! * Stage 3 follows references from the strongest candidates, out (what they send the
//!   reader to) and in (what sends the reader to them), adding the far ends as
//!   candidates: the rest of an answer is often where a section points.
//! * Stage 4 widens the search when the result looks thin or lopsided (spec_manuals §3):
//!   other manuals when the search was narrowed to some, weaker matches when there are
//!   too few candidates or one file dominates, and the exception vocabulary in the
//!   candidates' whole files when an exceptions question found no exception.
//!
//! Stages 2 and 3 may fail (a defect, an injected failure in tests); the caller keeps the
//! candidates of Stages 0-1 and reports a warning.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use super::corpus::Corpus;
use super::derived::{FileText, NodeKey};
use super::plan::Plan;
use super::query::Intent;
use super::score::{Scored, Way};
use super::Signals;
use crate::manual::exceptions::{exceptions_in_normalized, ExceptionCategory};
use crate::manual::ManualFile;
use crate::text::lines::LineNo;
use crate::verdict::{file_bias_ratio, Thresholds};

/// Candidates whose references Stage 3 follows.
pub(crate) const REFERENCE_SEEDS: usize = 20;
/// Sections that link to one seed that Stage 3 adds at most.
const INBOUND_PER_SEED: usize = 10;
/// Score of a section reached from a seed, as a share of the seed's score.
const OUTBOUND_SHARE: f32 = 0.5;
const INBOUND_SHARE: f32 = 0.3;
/// Extra score for a candidate that a seed also references.
const REFERENCED_BONUS: f32 = 0.05;

/// Stage 2 boosts by intent.
const EXCEPTION_INTENT_BONUS: f32 = 0.25;
const EXCEPTION_WITH_TERM_BONUS: f32 = 0.15;
const ELIGIBILITY_CONDITION_BONUS: f32 = 0.1;

/// A section on its way to becoming a ranked hit.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub key: NodeKey,
    pub score: f32,
    pub signals: Signals,
    pub ways: Vec<Way>,
    /// The part of `score` that closeness in meaning added (the semantic source's
    /// share): `score - meaning` is what the query's own words earned, which the ranking
    /// needs to keep strong lexical evidence first.
    pub meaning: f32,
}

/// The ranking order of scored sections: best score first, ties by place in the corpus.
pub(crate) fn best_first(a: (f32, NodeKey), b: (f32, NodeKey)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

impl Candidate {
    /// The ranking order of candidates: best score first, ties by place in the corpus so
    /// that every sort of the same candidates gives the same list.
    pub(crate) fn best_first(a: &Candidate, b: &Candidate) -> Ordering {
        best_first((a.score, a.key), (b.score, b.key))
    }

    pub(crate) fn from_scored(scored: &Scored) -> Candidate {
        Candidate {
            key: scored.key,
            score: scored.score,
            signals: scored.signals,
            ways: scored.ways.clone(),
            meaning: 0.0,
        }
    }

    /// Found by closeness in meaning and nothing else the query wrote (exception
    /// vocabulary of its own is no evidence for the query): thin evidence.
    pub(crate) fn by_meaning_only(&self) -> bool {
        self.signals.contains(Signals::SEMANTIC) && !self.signals.intersects(Signals::LEXICAL)
    }

    fn reached(key: NodeKey, score: f32, terms: usize) -> Candidate {
        Candidate {
            key,
            score,
            signals: Signals::REFERENCE,
            ways: vec![Way::None; terms],
            meaning: 0.0,
        }
    }
}

/// A stage that did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StageFailure {
    pub stage: u8,
    pub message: String,
}

/// Runs `stage`, turning a panic into a failure so the earlier stages' results survive.
pub(crate) fn guarded<T>(
    stage: u8,
    run: impl FnOnce() -> Result<T, String>,
) -> Result<T, StageFailure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(message)) => Err(StageFailure { stage, message }),
        Err(panic) => Err(StageFailure {
            stage,
            message: panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "internal error".to_owned()),
        }),
    }
}

/// The own lines of a section that are prose (code blocks hold no caveats), normalised.
pub(crate) fn prose_lines<'a>(
    text: &'a FileText,
    file: &'a ManualFile,
    node: u32,
) -> impl Iterator<Item = (LineNo, &'a str)> {
    text.own_lines(node, file)
        .filter(move |(line, _)| !file.is_code_line(*line))
}

/// Categories of the exception terms in a section's prose.
fn exception_categories(
    corpus: &Corpus,
    files: &[&ManualFile],
    key: NodeKey,
) -> Vec<ExceptionCategory> {
    let source = files[key.file as usize];
    let text = corpus.text(key.file, source);
    prose_lines(&text, source, key.node)
        .flat_map(|(_, text)| exceptions_in_normalized(text).map(|hit| hit.term.category))
        .collect()
}

/// Stage 2: marks candidates with exception vocabulary and ranks them by intent.
/// Returns how many candidates carry an exception term.
pub(crate) fn stage2_exceptions(
    corpus: &Corpus,
    files: &[&ManualFile],
    plan: &Plan,
    candidates: &mut [Candidate],
) -> usize {
    let mut with_exceptions = 0;
    for candidate in candidates.iter_mut() {
        let categories = exception_categories(corpus, files, candidate.key);
        let with_term = !categories.is_empty()
            && prose_lines(
                &corpus.text(candidate.key.file, files[candidate.key.file as usize]),
                files[candidate.key.file as usize],
                candidate.key.node,
            )
            .any(|(_, text)| {
                exceptions_in_normalized(text).next().is_some() && {
                    let present = plan.set_normalized(text);
                    plan.terms.iter().any(|term| present.contains(term.exact))
                }
            });
        if categories.is_empty() {
            continue;
        }
        with_exceptions += 1;
        candidate.signals.insert(Signals::EXCEPTIONS);
        candidate.score += match plan.query.intent {
            Intent::Exceptions => {
                EXCEPTION_INTENT_BONUS
                    + if with_term {
                        EXCEPTION_WITH_TERM_BONUS
                    } else {
                        0.0
                    }
            }
            Intent::Eligibility
                if categories.iter().any(|c| {
                    matches!(
                        c,
                        ExceptionCategory::Condition
                            | ExceptionCategory::Exclusion
                            | ExceptionCategory::Limitation
                    )
                }) =>
            {
                ELIGIBILITY_CONDITION_BONUS
            }
            _ => 0.0,
        };
    }
    with_exceptions
}

/// Stage 3: follows references from the strongest candidates. `known` holds the Stage
/// 0-1 evidence of every section that had some, so a referenced section keeps it.
pub(crate) fn stage3_references(
    corpus: &Corpus,
    known: &HashMap<NodeKey, &Scored>,
    candidates: &mut Vec<Candidate>,
    terms: usize,
    in_scope: &dyn Fn(NodeKey) -> bool,
    lexical_seeds: bool,
) {
    let seed_score = |c: &Candidate| {
        if lexical_seeds {
            c.score - c.meaning
        } else {
            c.score
        }
    };
    candidates.sort_by(|a, b| seed_score(b).total_cmp(&seed_score(a)));
    let seeds: Vec<(NodeKey, Reached)> = candidates
        .iter()
        .take(REFERENCE_SEEDS)
        .map(|c| {
            let reached = Reached {
                score: c.score,
                meaning: c.meaning,
            };
            (c.key, reached)
        })
        .collect();
    let mut position: HashMap<NodeKey, usize> = candidates
        .iter()
        .enumerate()
        .map(|(index, c)| (c.key, index))
        .collect();
    let mut reach = |key: NodeKey, reached: Reached, candidates: &mut Vec<Candidate>| {
        if !in_scope(key) {
            return;
        }
        match position.get(&key) {
            Some(&index) => {
                let candidate = &mut candidates[index];
                candidate.signals.insert(Signals::REFERENCE);
                reached.raise(candidate);
                candidate.score += REFERENCED_BONUS;
            }
            None => {
                let mut candidate = match known.get(&key) {
                    Some(scored) => Candidate::from_scored(scored),
                    None => Candidate::reached(key, 0.0, terms),
                };
                candidate.signals.insert(Signals::REFERENCE);
                reached.raise(&mut candidate);
                position.insert(key, candidates.len());
                candidates.push(candidate);
            }
        }
    };
    let seed_keys: HashSet<NodeKey> = seeds.iter().map(|(key, _)| *key).collect();
    for (seed, score) in seeds {
        for reference in corpus.references.outbound(seed) {
            if let Some(to) = reference.to {
                reach(to, score.share(OUTBOUND_SHARE), candidates);
            }
        }
        let mut inbound: Vec<NodeKey> = corpus
            .references
            .inbound(seed)
            .map(|reference| reference.from)
            .filter(|from| !seed_keys.contains(from))
            .collect();
        inbound.sort_by(|a, b| {
            let strength = |key: &NodeKey| known.get(key).map_or(0.0, |s| s.score);
            strength(b).total_cmp(&strength(a)).then(a.cmp(b))
        });
        inbound.dedup();
        for from in inbound.into_iter().take(INBOUND_PER_SEED) {
            reach(from, score.share(INBOUND_SHARE), candidates);
        }
    }
}

/// The score a reference passes on from its seed, and the part of it that closeness in
/// meaning gave the seed (so a section reached from a section found by meaning does not
/// count as strong lexical evidence).
#[derive(Debug, Clone, Copy)]
struct Reached {
    score: f32,
    meaning: f32,
}

impl Reached {
    fn share(self, share: f32) -> Reached {
        Reached {
            score: self.score * share,
            meaning: self.meaning * share,
        }
    }

    /// Raises `candidate` to this score when that is higher.
    fn raise(self, candidate: &mut Candidate) {
        if self.score > candidate.score {
            candidate.score = self.score;
            candidate.meaning = self.meaning;
        }
    }
}

/// Why Stage 4 would widen the search (spec_manuals §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escalation {
    NoCandidates,
    FewCandidates,
    FileBias,
    NoExceptionHit,
}

impl Escalation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Escalation::NoCandidates => "no_candidates",
            Escalation::FewCandidates => "few_candidates",
            Escalation::FileBias => "file_bias",
            Escalation::NoExceptionHit => "no_exception_hit",
        }
    }
}

/// Share of candidates in the file holding the most of them (0 without candidates).
pub(crate) fn file_bias(candidates: &[Candidate]) -> f32 {
    file_bias_ratio(candidates.iter().map(|candidate| candidate.key.file))
}

/// The Stage 4 conditions that hold, with the thresholds in force.
pub(crate) fn escalations(
    candidates: &[Candidate],
    intent: Intent,
    thresholds: Thresholds,
) -> Vec<Escalation> {
    let mut found = Vec::new();
    if candidates.is_empty() {
        found.push(Escalation::NoCandidates);
    } else if thresholds.too_few(candidates.len()) {
        found.push(Escalation::FewCandidates);
    }
    if thresholds.lopsided(candidates.len(), file_bias(candidates)) {
        found.push(Escalation::FileBias);
    }
    let exception_hit = candidates
        .iter()
        .any(|c| c.signals.contains(Signals::EXCEPTIONS));
    if intent == Intent::Exceptions && !exception_hit {
        found.push(Escalation::NoExceptionHit);
    }
    found
}

/// Stage 4, weaker matches: sections Stages 0-1 matched but left below the candidate bar,
/// best first, `only_other_files` excluding the files that already hold candidates.
pub(crate) fn relaxed(
    scored: &[Scored],
    candidates: &[Candidate],
    only_other_files: bool,
    limit: usize,
) -> Vec<Candidate> {
    let taken: HashSet<NodeKey> = candidates.iter().map(|c| c.key).collect();
    let busy_files: HashSet<u32> = candidates.iter().map(|c| c.key.file).collect();
    scored
        .iter()
        .filter(|s| !taken.contains(&s.key))
        .filter(|s| !only_other_files || !busy_files.contains(&s.key.file))
        .take(limit)
        .map(|s| {
            let mut candidate = Candidate::from_scored(s);
            candidate.signals.insert(Signals::EXPANDED);
            candidate
        })
        .collect()
}

/// Stage 4, exceptions: sections of the candidates' files that state an exception or
/// exclusion, scored below the candidates of their file.
pub(crate) fn exception_neighbours(
    corpus: &Corpus,
    files: &[&ManualFile],
    candidates: &[Candidate],
    terms: usize,
) -> Vec<Candidate> {
    let taken: HashSet<NodeKey> = candidates.iter().map(|c| c.key).collect();
    let mut best_in_file: HashMap<u32, f32> = HashMap::new();
    for candidate in candidates {
        let best = best_in_file.entry(candidate.key.file).or_default();
        *best = best.max(candidate.score);
    }
    let mut found = Vec::new();
    let mut files_in_order: Vec<(&u32, &f32)> = best_in_file.iter().collect();
    files_in_order.sort_by(|a, b| a.0.cmp(b.0));
    for (&file, &best) in files_in_order {
        for node in 0..corpus.files[file as usize].outline.node_count() as u32 {
            let key = NodeKey { file, node };
            if taken.contains(&key) {
                continue;
            }
            let states_exception = exception_categories(corpus, files, key).iter().any(|c| {
                matches!(
                    c,
                    ExceptionCategory::Exception | ExceptionCategory::Exclusion
                )
            });
            if states_exception {
                found.push(Candidate {
                    key,
                    score: best * 0.3,
                    signals: Signals::EXCEPTIONS.with(Signals::EXPANDED),
                    ways: vec![Way::None; terms],
                    meaning: 0.0,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(candidate_low: u32, file_bias: f64) -> Thresholds {
        Thresholds {
            candidate_low,
            file_bias,
        }
    }

    fn candidate(file: u32, node: u32, signals: Signals) -> Candidate {
        Candidate {
            key: NodeKey { file, node },
            score: 1.0,
            signals,
            ways: Vec::new(),
            meaning: 0.0,
        }
    }

    #[test]
    fn escalation_conditions_follow_the_spec() {
        let none = Signals::default();
        assert_eq!(
            escalations(&[], Intent::Unknown, at(3, 0.8)),
            [Escalation::NoCandidates]
        );
        let two: Vec<Candidate> = (0..2).map(|n| candidate(n, 0, none)).collect();
        assert_eq!(
            escalations(&two, Intent::Unknown, at(3, 0.8)),
            [Escalation::FewCandidates]
        );
        let lopsided: Vec<Candidate> = (0..5)
            .map(|n| candidate(u32::from(n == 4), n, none))
            .collect();
        assert!((file_bias(&lopsided) - 0.8).abs() < 1e-6);
        assert_eq!(
            escalations(&lopsided, Intent::Unknown, at(3, 0.8)),
            [Escalation::FileBias]
        );
        assert_eq!(
            escalations(&lopsided[..4], Intent::Unknown, at(3, 0.8)),
            [],
            "fewer than five"
        );
        assert_eq!(
            escalations(&lopsided, Intent::Exceptions, at(3, 0.9)),
            [Escalation::NoExceptionHit]
        );
        let mut with_exception = lopsided.clone();
        with_exception[0].signals = Signals::EXCEPTIONS;
        assert_eq!(
            escalations(&with_exception, Intent::Exceptions, at(3, 0.9)),
            []
        );
    }

    #[test]
    fn a_panicking_stage_becomes_a_failure() {
        let failure = guarded::<()>(3, || panic!("boom")).unwrap_err();
        assert_eq!(
            failure,
            StageFailure {
                stage: 3,
                message: "boom".into()
            }
        );
        assert_eq!(guarded(2, || Ok(7)), Ok(7));
        assert_eq!(
            guarded::<()>(2, || Err("no".into())).unwrap_err().message,
            "no"
        );
    }
}
