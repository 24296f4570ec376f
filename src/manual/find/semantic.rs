//! The `semantic` source: the sections whose vectors are closest to the query's, as one
//! more ranked list for `fuse`.
//!
//! The query's vector is asked for on a thread of its own when the search starts, so the
//! embedding call (tens of milliseconds, at most `EMBEDDINGS_TIMEOUT_MS`) overlaps the
//! lexical stages; the list is taken when Stages 0-1 are fused. When the provider is down
//! or slow the search goes on lexically and the summary says why.

use std::collections::BTreeSet;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::fuse::{RankedSource, SourceItem};
use super::scan::{Scope, ScopeFilter};
use super::stages::Candidate;
use super::Signals;
use crate::embed::EmbedErrorKind;
use crate::manual::vectors::{QueryVector, SectionVectors, Unavailable};
use crate::manual::ManualFile;
use crate::text::lines::LineNo;

/// How the semantic list joins the others. The defaults are measured on bench-dah
/// (`manvault-bench dah --semantic`, docs/search.md, "Semantic recall"): cosines scaled between
/// the list's last and best beat reciprocal ranks on R@20 (0.880 against 0.844) and keep
/// exact queries at R@20 1.00 (RRF: 0.975); weight 0.5 beats 1.0 (R@20 0.856); admitting
/// 30 instead of 20 adds candidates and no recall. The ranking rule (lead 1 at lexical
/// score 1.0, meaning alone at half weight) is measured on both benches (`manvault-bench
/// find --semantic` and `dah --semantic`): without it the handbook bench lost R@1 in every
/// category (0.839 to 0.807) and lang=en R@20 (1.000 to 0.982); with it no category loses
/// more than 0.008 at any R@k and bench-dah keeps R@all 0.966, R@20 0.880.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tuning {
    /// Sections listed (they add to the fused score of candidates found otherwise).
    pub listed: usize,
    /// Of those, the best this many become candidates on their own.
    pub admitted: usize,
    /// The list's weight in the fused score.
    pub weight: f32,
    /// Reciprocal-rank shares (`true`) or cosines scaled between the list's last and best.
    pub by_rank: bool,
    /// `listed` and `admitted` per manual searched (`true`) or over all of them.
    pub per_manual: bool,
    /// The lexical lead ([`rank_fused`]): at most this many first ranks go to the
    /// sections the query's words rank best ...
    pub lead: usize,
    /// ... each with a lexical score (evidence and word relevance, without the semantic
    /// share) of at least this ...
    pub lead_strength: f32,
    /// ... above every other candidate (`true`), or only above those found by meaning
    /// alone (`false`: the semantic share still reorders lexical candidates).
    pub lead_over_all: bool,
    /// The share of its semantic score a candidate found by meaning alone keeps (1: the
    /// whole; less puts it lower among candidates with lexical evidence).
    pub alone: f32,
    /// Stage 3 follows the references of the sections ranked best by their lexical score
    /// (`true`) or by their fused score.
    pub lexical_seeds: bool,
}

/// The variable `manvault-bench` sets to measure other tunings
/// (`listed=N,admitted=N,weight=X,rank=0|1,per_manual=0|1,lead=N,strength=X,over_all=0|1,`
/// `alone=X,lexical_seeds=0|1`); read once per process.
const TUNING_VARIABLE: &str = "MANVAULT_SEMANTIC_TUNING";

impl Tuning {
    /// The measured tuning (see the type's documentation).
    const CHOSEN: Tuning = Tuning {
        listed: 50,
        admitted: 20,
        weight: 0.5,
        by_rank: false,
        per_manual: false,
        lead: 1,
        lead_strength: 1.0,
        lead_over_all: true,
        alone: 0.5,
        lexical_seeds: false,
    };

    /// [`Tuning::CHOSEN`] with the changes `MANVAULT_SEMANTIC_TUNING` asks for.
    pub(crate) fn current() -> Tuning {
        static CURRENT: OnceLock<Tuning> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let mut tuning = Tuning::CHOSEN;
            let text = std::env::var(TUNING_VARIABLE).unwrap_or_default();
            for pair in text.split(',').filter(|pair| !pair.is_empty()) {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                match key {
                    "listed" => tuning.listed = value.parse().unwrap_or(tuning.listed),
                    "admitted" => tuning.admitted = value.parse().unwrap_or(tuning.admitted),
                    "weight" => tuning.weight = value.parse().unwrap_or(tuning.weight),
                    "rank" => tuning.by_rank = value == "1",
                    "per_manual" => tuning.per_manual = value == "1",
                    "lead" => tuning.lead = value.parse().unwrap_or(tuning.lead),
                    "strength" => {
                        tuning.lead_strength = value.parse().unwrap_or(tuning.lead_strength)
                    }
                    "over_all" => tuning.lead_over_all = value == "1",
                    "alone" => tuning.alone = value.parse().unwrap_or(tuning.alone),
                    "lexical_seeds" => tuning.lexical_seeds = value == "1",
                    _ => {}
                }
            }
            tuning
        })
    }
}

/// Reciprocal rank fusion's constant: the first rank weighs 61/60 of the second's share.
const RRF_K: f32 = 60.0;

/// What the summary says about the semantic source of one search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SemanticReport {
    /// Whether the list took part in the search.
    pub used: bool,
    /// Sections not embedded yet (they cannot be found by meaning).
    pub pending_sections: usize,
    /// Why the list is missing, in words for the client (no address, no text).
    pub warning: Option<&'static str>,
}

/// The semantic side of one search, from its start to the fusion of Stages 0-1.
pub(super) struct SemanticSearch<'a> {
    vectors: &'a SectionVectors,
    /// Where the thread asking for the query's vector sends it.
    pending: Mutex<Option<Receiver<Result<QueryVector, Unavailable>>>>,
    report: Mutex<Option<SemanticReport>>,
}

impl<'a> SemanticSearch<'a> {
    /// Asks for the query's vector on a thread of its own, which nobody joins: a search
    /// that ends early (cancelled, or a failed stage) does not wait for the embedding.
    pub(super) fn start(vectors: &'a Arc<SectionVectors>, query: &str) -> SemanticSearch<'a> {
        let (send, receive) = channel();
        let worker = Arc::clone(vectors);
        let query = query.to_owned();
        let spawned = std::thread::Builder::new()
            .name("query-vector".to_owned())
            .spawn(move || {
                // The search may have ended without waiting: fine.
                let _ = send.send(worker.query_vector(&query));
            });
        SemanticSearch {
            vectors,
            pending: Mutex::new(spawned.ok().map(|_| receive)),
            report: Mutex::new(None),
        }
    }

    /// The ranked list over the sections of `scope` (waiting for the query's vector, at
    /// most `EMBEDDINGS_TIMEOUT_MS` from the start); `None` when there is none, the
    /// reason kept for the summary. Taken once; later calls answer `None`.
    pub(super) fn source(
        &self,
        corpus: &Corpus,
        files: &[&ManualFile],
        scope: &Scope,
    ) -> Option<RankedSource> {
        let pending = lock(&self.pending).take()?;
        let vector = pending.recv().unwrap_or(Err(Unavailable::NoVectorsYet));
        let pending_sections = self.vectors.pending();
        let (source, warning) = match vector {
            Ok(vector) => (Some(self.ranked(&vector, corpus, files, scope)), None),
            Err(unavailable) => {
                tracing::warn!(reason = %unavailable, "manual_find answered without the semantic signal");
                (None, Some(warning(&unavailable)))
            }
        };
        *lock(&self.report) = Some(SemanticReport {
            used: source.is_some(),
            pending_sections,
            warning,
        });
        source
    }

    /// What the summary says; the state before any list was taken when the search never
    /// reached the fusion.
    pub(super) fn report(&self) -> SemanticReport {
        lock(&self.report).clone().unwrap_or(SemanticReport {
            used: false,
            pending_sections: self.vectors.pending(),
            warning: None,
        })
    }

    fn ranked(
        &self,
        vector: &QueryVector,
        corpus: &Corpus,
        files: &[&ManualFile],
        scope: &Scope,
    ) -> RankedSource {
        let tuning = Tuning::current();
        let manual_ids: BTreeSet<&str> = scope
            .iter()
            .map(|(file, _)| &*corpus.files[*file as usize].manual_id)
            .collect();
        let manual_ids: Vec<&str> = manual_ids.into_iter().collect();
        let hits = self.vectors.top_k(vector, &manual_ids, tuning.listed);
        let filter = ScopeFilter::new(corpus, scope);
        let mut kept_per_manual: std::collections::HashMap<&str, usize> = Default::default();
        let mut items = Vec::new();
        let lowest = hits.last().map_or(0.0, |hit| hit.score);
        for hit in &hits {
            let Some(key) = node_key(corpus, files, &hit.manual_id, &hit.path, hit.line_start)
            else {
                continue;
            };
            if !filter.contains(key) {
                continue;
            }
            let rank = if tuning.per_manual {
                kept_per_manual.entry(&*hit.manual_id).or_default()
            } else {
                kept_per_manual.entry("").or_default()
            };
            if *rank >= tuning.listed {
                continue;
            }
            let score = if tuning.by_rank {
                1.0 / (RRF_K + *rank as f32 + 1.0)
            } else {
                (hit.score - lowest).max(0.0) + f32::EPSILON
            };
            items.push(SourceItem {
                key,
                score,
                admits: *rank < tuning.admitted,
                signals: Signals::SEMANTIC,
            });
            *rank += 1;
        }
        RankedSource {
            weight: tuning.weight,
            items,
            marks: Signals::SEMANTIC,
            best_of_list: 0.0,
        }
    }
}

/// The ranking rule of the fused candidates (`ranked`, best fused score first), so that
/// closeness in meaning adds recall without costing the lexical first hit:
/// * a candidate found by meaning alone keeps `alone` of its semantic score, so it ranks
///   below candidates holding the query's words unless their evidence is weak;
/// * the lead (the best `lead` candidates by lexical score, `score - meaning`, while that
///   reaches `lead_strength`) stays above every other candidate (`lead_over_all`), or
///   above those found by meaning alone.
///
/// A candidate found by meaning alone still joins the candidates and ranks first when no
/// lexical evidence is strong. Scores are lowered where needed to stay in rank order.
pub(super) fn rank_fused(ranked: &mut Vec<Candidate>, tuning: &Tuning) {
    if tuning.alone != 1.0 {
        for candidate in ranked.iter_mut().filter(|c| c.by_meaning_only()) {
            candidate.score -= candidate.meaning * (1.0 - tuning.alone);
            candidate.meaning *= tuning.alone;
        }
        ranked.sort_by(Candidate::best_first);
    }
    let lexical = |candidate: &Candidate| candidate.score - candidate.meaning;
    let mut lead: Vec<usize> = (0..ranked.len())
        .filter(|&at| !ranked[at].by_meaning_only())
        .collect();
    lead.sort_by(|&a, &b| {
        lexical(&ranked[b])
            .total_cmp(&lexical(&ranked[a]))
            .then(a.cmp(&b))
    });
    let strong = lead
        .iter()
        .take(tuning.lead)
        .take_while(|&&at| lexical(&ranked[at]) >= tuning.lead_strength.max(f32::EPSILON))
        .count();
    lead.truncate(strong);
    let Some(&last) = lead.iter().max() else {
        return;
    };
    let mut order: Vec<usize> = if tuning.lead_over_all {
        lead.clone()
    } else {
        (0..=last)
            .filter(|&at| !ranked[at].by_meaning_only())
            .collect()
    };
    let mut placed = vec![false; ranked.len()];
    for &at in &order {
        placed[at] = true;
    }
    order.extend((0..ranked.len()).filter(|&at| !placed[at]));
    let mut taken: Vec<Option<Candidate>> = ranked.drain(..).map(Some).collect();
    let mut ceiling = f32::INFINITY;
    for at in order {
        let mut candidate = taken[at].take().expect("each position once");
        candidate.score = candidate.score.min(ceiling);
        ceiling = candidate.score;
        ranked.push(candidate);
    }
}

/// The node of `manual_id`/`path` starting at `line`, if the corpus still has it.
fn node_key(
    corpus: &Corpus,
    files: &[&ManualFile],
    manual_id: &str,
    path: &str,
    line: LineNo,
) -> Option<NodeKey> {
    let file = corpus.file_index(manual_id, path)?;
    let node = files[file as usize]
        .nodes()
        .binary_search_by_key(&line, |node| node.line_start)
        .ok()?;
    Some(NodeKey {
        file,
        node: node as u32,
    })
}

/// The client's words for why a search had no semantic signal: what happened and that
/// the answer is lexical, naming the setting to check but never its value (the log line
/// has the details for the operator).
fn warning(unavailable: &Unavailable) -> &'static str {
    match unavailable {
        Unavailable::Provider(error) => match error.kind {
            EmbedErrorKind::Unreachable => {
                "the embeddings server cannot be reached (EMBEDDINGS_URL); answered lexically"
            }
            EmbedErrorKind::Timeout => {
                "the embeddings server did not answer within EMBEDDINGS_TIMEOUT_MS; answered lexically"
            }
            EmbedErrorKind::Rejected => {
                "the embeddings server refused the request (EMBEDDINGS_* settings); answered lexically"
            }
            EmbedErrorKind::Failed => "the embeddings server failed; answered lexically",
        },
        Unavailable::Paused => {
            "the embeddings server timed out recently and is left alone a while; answered lexically"
        }
        Unavailable::NoVectorsYet => {
            "no section vectors yet (the embeddings server has not answered); answered lexically"
        }
        Unavailable::ModelChanged => {
            "the embeddings model changed and section vectors are being redone; answered lexically"
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::score::Way;

    /// A candidate of node `node` whose fused `score` holds `meaning` from the semantic
    /// list, found by the query's words unless `signals` says otherwise.
    fn candidate(node: u32, score: f32, meaning: f32, signals: Signals) -> Candidate {
        Candidate {
            key: NodeKey { file: 0, node },
            score,
            signals,
            ways: vec![Way::None],
            meaning,
        }
    }

    fn ranked(mut candidates: Vec<Candidate>) -> Vec<(u32, f32)> {
        candidates.sort_by(Candidate::best_first);
        rank_fused(&mut candidates, &Tuning::CHOSEN);
        candidates.iter().map(|c| (c.key.node, c.score)).collect()
    }

    #[test]
    fn a_strong_lexical_first_hit_stays_first_and_meaning_alone_counts_half() {
        let words = Signals::HEADING.with(Signals::SEMANTIC);
        let order = ranked(vec![
            // Lexical score 1.2: strong.
            candidate(0, 1.3, 0.1, words),
            // Lexical score 0.9, lifted above it by meaning: held at its score.
            candidate(1, 1.4, 0.5, words),
            // Found by meaning alone: half of 0.5.
            candidate(2, 0.5, 0.5, Signals::SEMANTIC),
            candidate(3, 0.3, 0.0, Signals::LOOSE),
        ]);
        assert_eq!(order, [(0, 1.3), (1, 1.3), (3, 0.3), (2, 0.25)]);
    }

    #[test]
    fn below_the_strength_mark_meaning_may_reorder_the_first_rank() {
        let words = Signals::LOOSE.with(Signals::SEMANTIC);
        let order = ranked(vec![
            candidate(0, 0.8, 0.0, Signals::LOOSE),
            candidate(1, 1.1, 0.5, words),
            candidate(2, 0.9, 0.9, Signals::SEMANTIC),
        ]);
        assert_eq!(order, [(1, 1.1), (0, 0.8), (2, 0.45)]);
    }
}
