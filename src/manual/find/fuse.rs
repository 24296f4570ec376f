//! One ranking from several ranked sources of candidates.
//!
//! Stages 0-1 give every section with evidence an *evidence score* (`score`): terms as
//! written, loosely or as synonyms, in headings, links and bodies, with the phrase and
//! strict-term bonuses; Stages 2-4 add to that score. Other sources rank sections their
//! own way: word-level relevance (`relevance`, BM25 over the query's units) and closeness
//! in meaning (`semantic`, a vector top-K). Each source is a ranked list; fusion keeps the
//! evidence score on its own scale (the later stages' bonuses are sized for it) and adds
//! each other source's score divided by that source's best, times the source's weight. So
//! a section a source ranks first gains the source's whole weight, and a new source joins
//! by adding one list, without touching the others.
//!
//! The recall floor lives here too: a section a source *admits* (for units: one holding a
//! significant unit, scoring at least [`FLOOR_SHARE`] of the source's best) is a
//! candidate even when its evidence score is below the candidate bar; it is ranked by its
//! fused score, so the cap cuts the weakest of them first.

use rustc_hash::FxHashMap;

use super::derived::NodeKey;
use super::score::{Scored, Way};
use super::stages::Candidate;
use super::Signals;

/// Weight of word-level relevance beside the evidence score (which reaches about 1 for
/// a section holding every term, up to 2 with the phrase bonuses). Measured on both
/// benchmarks (docs/benchmarks.md): 0.3 keeps the link-text queries' top ranks while
/// lifting questions in everyday words; 0.45-0.6 lift those a little more and start to
/// reorder the first ranks of queries the evidence already answers.
pub(crate) const UNITS_WEIGHT: f32 = 0.3;
/// A source admits sections scoring at least this share of its best: the tail of
/// sections sharing one common unit with the query is left out (a tenth of the best
/// keeps recall and cuts the mean candidates of bench-dah from 150 to 136).
pub(crate) const FLOOR_SHARE: f32 = 0.1;

/// One section in a source's ranked list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SourceItem {
    pub key: NodeKey,
    pub score: f32,
    /// Whether this source alone makes the section a candidate.
    pub admits: bool,
    /// The evidence kinds to report for a section this source admitted.
    pub signals: Signals,
}

/// A ranked list of sections from one source, with its weight in the fused score.
#[derive(Debug, Clone)]
pub(crate) struct RankedSource {
    pub weight: f32,
    pub items: Vec<SourceItem>,
    /// A signal every candidate this source admits carries, whatever else found it (the
    /// items' own `signals` are reported only where no evidence made the candidate).
    pub marks: Signals,
    /// The best score of the whole list when `items` are only part of it (the sections
    /// a search verified): shares stay what they were in the whole list.
    pub best_of_list: f32,
}

/// What the other sources add to one section.
#[derive(Default)]
struct Contribution {
    score: f32,
    /// The part of `score` from the semantic source.
    meaning: f32,
    admitted: bool,
    signals: Signals,
    marks: Signals,
}

/// The candidates of Stages 0-1: every section whose evidence passes the bar
/// (`by_evidence`) or that a source admits, each scored by evidence plus the sources'
/// weighted shares. Unordered; the caller ranks.
pub(crate) fn fuse(
    scored: &[Scored],
    sources: &[RankedSource],
    terms: usize,
    by_evidence: impl Fn(&Scored) -> bool,
) -> Vec<Candidate> {
    // Fx-hashed and sized once: a common unit's list holds tens of thousands of sections
    // at 200 MB of manuals.
    let listed = sources.iter().map(|source| source.items.len()).sum();
    let mut added: FxHashMap<NodeKey, Contribution> =
        FxHashMap::with_capacity_and_hasher(listed, Default::default());
    for source in sources {
        let best = source
            .items
            .iter()
            .map(|item| item.score)
            .fold(source.best_of_list, f32::max);
        if best <= 0.0 {
            continue;
        }
        let share = SourceShare {
            weight: source.weight,
            best,
        };
        for item in &source.items {
            let (score, admitted) = share.listed(item);
            let entry = added.entry(item.key).or_default();
            entry.score += score;
            if source.marks.intersects(Signals::SEMANTIC) {
                entry.meaning += score;
            }
            if admitted {
                entry.admitted = true;
                entry.signals.insert(item.signals);
                entry.marks.insert(source.marks);
            }
        }
    }
    let mut candidates = Vec::new();
    for scored in scored {
        let contribution = added.remove(&scored.key).unwrap_or_default();
        let evident = by_evidence(scored);
        if !evident && !contribution.admitted {
            continue;
        }
        let mut candidate = Candidate::from_scored(scored);
        candidate.score += contribution.score;
        candidate.meaning = contribution.meaning;
        if !evident {
            candidate.signals.insert(contribution.signals);
        }
        candidate.signals.insert(contribution.marks);
        candidates.push(candidate);
    }
    let mut rest: Vec<(NodeKey, Contribution)> = added
        .into_iter()
        .filter(|(_, contribution)| contribution.admitted)
        .collect();
    rest.sort_by_key(|(key, _)| *key);
    candidates.extend(rest.into_iter().map(|(key, contribution)| Candidate {
        key,
        score: contribution.score,
        signals: contribution.signals.with(contribution.marks),
        ways: vec![Way::None; terms],
        meaning: contribution.meaning,
    }));
    candidates
}

/// Whether `item`, at `share` of its source's best, is a candidate by that source alone.
fn admits(item: &SourceItem, share: f32) -> bool {
    item.admits && share >= FLOOR_SHARE
}

/// A candidate's section and the score `fuse` gives it, without the rest of a
/// `Candidate`: what the one ranking of a search needs of each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ranked {
    pub key: NodeKey,
    pub score: f32,
}

/// The candidates among `items`, sections that only a source of weight `weight` and best
/// score `best` lists, as `fuse` would score them, unordered: tens of thousands of the
/// units' items are such sections at 200 MB of manuals, and the search needs only their
/// scores, not a `Candidate` (nor a map entry) for each.
pub(crate) fn admitted_alone(items: &[SourceItem], weight: f32, best: f32) -> Vec<Ranked> {
    let source = SourceShare { weight, best };
    items.iter().filter_map(|item| source.alone(item)).collect()
}

/// What one source's item adds to a section, as `fuse` reckons it: its score's share of
/// the source's best, times the source's weight. The one place [`fuse`],
/// [`admitted_alone`] and [`fuse_in_key_order`] take that rule from.
#[derive(Clone, Copy)]
struct SourceShare {
    weight: f32,
    /// The source's best score; unless it is above zero the source adds nothing.
    best: f32,
}

impl SourceShare {
    /// The score `item` adds and whether it makes its section a candidate by itself.
    fn listed(self, item: &SourceItem) -> (f32, bool) {
        if self.best > 0.0 {
            let share = item.score / self.best;
            (self.weight * share, admits(item, share))
        } else {
            (0.0, false)
        }
    }

    /// `item`'s section as a candidate that no other evidence lists, if it is one.
    fn alone(self, item: &SourceItem) -> Option<Ranked> {
        let (score, admitted) = self.listed(item);
        admitted.then_some(Ranked {
            key: item.key,
            score,
        })
    }
}

/// A scored section as [`fuse_in_key_order`] takes it: its evidence score and whether
/// that evidence makes it a candidate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evident {
    pub key: NodeKey,
    pub score: f32,
    pub candidate: bool,
}

/// The candidates `fuse` makes of `scored` and of one source's `items` (weight `weight`,
/// best score `best`), both in key order, with the scores `fuse` gives them, in key
/// order: one merge of the two lists instead of a map entry for every item and a
/// `Candidate` (with its ways) for every section, since the one ranking of a search
/// only orders them.
pub(crate) fn fuse_in_key_order(
    scored: &[Evident],
    items: &[SourceItem],
    weight: f32,
    best: f32,
) -> Vec<Ranked> {
    debug_assert!(scored.is_sorted_by(|a, b| a.key < b.key));
    debug_assert!(items.is_sorted_by(|a, b| a.key < b.key));
    let source = SourceShare { weight, best };
    let mut items = items.iter().peekable();
    let mut ranked = Vec::new();
    for section in scored {
        while let Some(item) = items.next_if(|item| item.key < section.key) {
            ranked.extend(source.alone(item));
        }
        let (added, admitted) = items
            .next_if(|item| item.key == section.key)
            .map_or((0.0, false), |item| source.listed(item));
        if section.candidate || admitted {
            ranked.push(Ranked {
                key: section.key,
                score: section.score + added,
            });
        }
    }
    ranked.extend(items.filter_map(|item| source.alone(item)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(node: u32) -> NodeKey {
        NodeKey { file: 0, node }
    }

    fn item(node: u32, score: f32, admits: bool) -> SourceItem {
        SourceItem {
            key: key(node),
            score,
            admits,
            signals: Signals::SEMANTIC,
        }
    }

    /// Node 0 has evidence; nodes 1 and 2 only the semantic list (2 not admitted).
    #[test]
    fn a_source_admits_its_items_and_marks_every_candidate_it_admits() {
        let scored = [Scored {
            key: key(0),
            score: 1.0,
            relevance: 1.0,
            signals: Signals::HEADING,
            ways: vec![Way::Exact],
        }];
        let semantic = RankedSource {
            weight: 0.5,
            items: vec![item(1, 1.0, true), item(0, 0.5, true), item(2, 0.4, false)],
            marks: Signals::SEMANTIC,
            best_of_list: 0.0,
        };
        let mut candidates = fuse(&scored, &[semantic], 1, |_| true);
        candidates.sort_by_key(|c| c.key);
        let found: Vec<(u32, f32, Vec<&str>)> = candidates
            .iter()
            .map(|c| (c.key.node, c.score, c.signals.names()))
            .collect();
        assert_eq!(
            found,
            [
                (0, 1.25, vec!["heading", "semantic"]),
                (1, 0.5, vec!["semantic"]),
            ]
        );
        assert!(candidates[1].by_meaning_only() && !candidates[0].by_meaning_only());
    }

    /// Sections only one source lists are scored and admitted as `fuse` scores and
    /// admits them: at, just above and just below the floor's share, scores to the bit.
    #[test]
    fn sections_one_source_alone_lists_are_admitted_as_fusion_admits_them() {
        let best = 0.5;
        let floor = best * FLOOR_SHARE;
        let items = vec![
            item(0, best, true),
            item(1, floor, true),
            item(2, f32::from_bits(floor.to_bits() + 1), true),
            item(3, f32::from_bits(floor.to_bits() - 1), true),
            item(4, 0.5, false),
            item(5, 0.03, true),
        ];
        let source = RankedSource {
            weight: UNITS_WEIGHT,
            items: items.clone(),
            marks: Signals::default(),
            best_of_list: best,
        };
        let mut fused: Vec<(NodeKey, u32)> = fuse(&[], &[source], 0, |_| true)
            .iter()
            .map(|c| (c.key, c.score.to_bits()))
            .collect();
        fused.sort();
        let mut alone: Vec<(NodeKey, u32)> = admitted_alone(&items, UNITS_WEIGHT, best)
            .iter()
            .map(|a| (a.key, a.score.to_bits()))
            .collect();
        alone.sort();
        assert_eq!(alone, fused);
        let admitted: Vec<u32> = alone.iter().map(|(key, _)| key.node).collect();
        assert_eq!(admitted, [0, 1, 2], "at the floor's share or above");
    }
}
