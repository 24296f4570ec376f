//! Stages 0-1 from the section index: which sections hold which of the plan's literals
//! and units, without reading a section's text.
//!
//! Every pattern of the plan becomes an [`IndexPattern`]: a literal (phrase, strict term,
//! term, piece, synonym variant) as the grams and words it is made of, a unit as its
//! token or grams. The index answers each with the sections holding it and how often;
//! the labels (titles, link texts, page titles), small and kept in memory, are matched
//! as the scan matches them. The result has the shape of a scan's ([`ScanResult`]), so
//! ranking, the recall floor and fusion run unchanged over it.
//!
//! The index errs on the side of more sections where its terms and the scan's
//! substrings differ (see `index::literal`), and it cannot tell a loose match from a
//! normalised one, so these hits are *provisional*: the search ranks them, has the scan
//! verify the best ranked on their own text, and replaces their provisional hits by the
//! scan's (`Search::stage01`). Unit hits are exact (the tokens are the units), and so are
//! the document frequencies the units' BM25 is computed with.

use std::cmp::Reverse;

use rustc_hash::FxHashSet;

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::index::literal::IndexPattern;
use super::labels::CorpusLabels;
use super::plan::Plan;
use super::scan::{NodeHits, PageHits, ScanResult, Scope, ScopeFilter};
use super::score::TitleSets;
use crate::text::units::Form;

/// What the index found for a scope.
pub(super) struct IndexHits {
    /// Provisional hits of every section holding a term's literal or a strong unit (and
    /// the weak units of those sections), labels included.
    pub scan: ScanResult,
    /// Sections of the scope holding each unit of the plan (BM25's document frequency).
    pub unit_df: Vec<u32>,
}

/// Asks the section index for every pattern of `plan` within `scope`. `brought` are the
/// sections another source (the semantic one) brings: their weak units count as the
/// scan's would, since fusion adds the units' score to theirs.
pub(super) fn index_hits(
    corpus: &Corpus,
    plan: &Plan,
    scope: &Scope,
    brought: &FxHashSet<NodeKey>,
    titles: &mut TitleSets,
) -> IndexHits {
    let filter = ScopeFilter::new(corpus, scope);
    let keep = |key: NodeKey| filter.contains(key);
    let view = &corpus.sections;
    let found = |pattern: IndexPattern| -> Vec<(NodeKey, u32)> {
        match pattern.sections(&view.searcher, &view.keys, &keep) {
            Ok(found) => found.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %error, "the section index could not be read");
                Vec::new()
            }
        }
    };
    let mut postings: Vec<(NodeKey, Posting)> = Vec::new();
    for (index, pattern) in plan.patterns[..plan.first_unit_pattern].iter().enumerate() {
        let literal = IndexPattern::literal(&pattern.text, &view.fields, view.vocabulary());
        postings.extend(found(literal).into_iter().map(|(key, count)| {
            let posting = Posting {
                pattern: index as u32,
                form: Form::Word,
                count,
            };
            (key, posting)
        }));
    }
    let mut unit_df = vec![0; plan.units.len()];
    let mut weak = Vec::new();
    for (index, planned) in plan.units.iter().enumerate() {
        let sections = found(IndexPattern::unit(&planned.unit, &view.fields));
        unit_df[index] = sections.len() as u32;
        let posting = |count| Posting {
            pattern: (plan.first_unit_pattern + index) as u32,
            form: planned.unit.form(),
            count,
        };
        if planned.unit.kind.is_strong() {
            postings.extend(
                sections
                    .into_iter()
                    .map(|(key, count)| (key, posting(count))),
            );
        } else {
            weak.extend(
                sections
                    .into_iter()
                    .map(|(key, count)| (key, posting(count))),
            );
        }
    }
    let mut hits = SortedHits::of(postings);
    // A weak unit only adds to a section that something else brought.
    let labels = corpus.labels();
    let at = hits.positions(labels);
    let mut brought_weak = Vec::new();
    for (key, posting) in weak {
        match at.of(labels, key) {
            Some(index) => posting.record(&mut hits.0[index].1),
            None if brought.contains(&key) => brought_weak.push((key, posting)),
            None => {}
        }
    }
    hits.add(SortedHits::of(brought_weak));
    add_link_texts(corpus, plan, &filter, &mut hits);
    let mut scan = ScanResult::default();
    let pages = corpus.labels().pages.candidates(plan);
    for (file, nodes) in scope {
        let count = match nodes {
            Some(nodes) => nodes.len(),
            None => corpus.files[*file as usize].outline.node_count(),
        };
        if count == 0 {
            continue;
        }
        scan.scanned_files += 1;
        scan.scanned_nodes += count;
        if pages.binary_search(file).is_err() {
            continue;
        }
        let page = &corpus.files[*file as usize].outline.page;
        let page_hits = PageHits {
            normalized: plan.set_normalized(&page.text),
            loose: plan.set_loose(&page.loose),
        };
        if !page_hits.normalized.is_empty() || !page_hits.loose.is_empty() {
            scan.pages.insert(*file, page_hits);
        }
    }
    scan.hits = hits.0;
    for (key, node) in &mut scan.hits {
        node.counts.sort_unstable();
        node.loose_counts.sort_unstable();
        node.provisional = true;
        let (normal, loose) = titles.of_title(plan, corpus, *key);
        if !normal.is_empty() || !loose.is_empty() {
            node.set_titles(normal.clone(), loose.clone());
        }
    }
    IndexHits { scan, unit_df }
}

/// One section's occurrences of one pattern, as the index counted them.
#[derive(Clone, Copy)]
struct Posting {
    pattern: u32,
    /// Where the pattern is looked for: the normalised body (literals, word units) or the
    /// loose one (loose units).
    form: Form,
    count: u32,
}

impl Posting {
    fn record(self, node: &mut NodeHits) {
        let (set, counts) = match self.form {
            Form::Word => (&mut node.body, &mut node.counts),
            Form::Loose => (&mut node.body_loose, &mut node.loose_counts),
        };
        set.insert(self.pattern as usize);
        counts.push((self.pattern, clamp(self.count)));
    }
}

/// The index's hits by section, sorted by key: built from all postings at once by one
/// sort, not entry by entry in a hash map (tens of thousands of sections for a common
/// unit at 200 MB of manuals, where the map's growth and hashing were a visible share of
/// a warm search), and already in the order `ScanResult` keeps.
struct SortedHits(Vec<(NodeKey, NodeHits)>);

impl SortedHits {
    /// Each section's patterns come largest first, so each set is sized by its first
    /// insert, and its count lists are sized once (the lists are sorted afterwards).
    fn of(mut postings: Vec<(NodeKey, Posting)>) -> SortedHits {
        postings.sort_unstable_by_key(|(key, posting)| (*key, Reverse(posting.pattern)));
        let mut hits: Vec<(NodeKey, NodeHits)> = Vec::new();
        for run in postings.chunk_by(|a, b| a.0 == b.0) {
            let loose = run.iter().filter(|(_, p)| p.form == Form::Loose).count();
            let mut node = NodeHits::default();
            node.counts.reserve_exact(run.len() - loose);
            node.loose_counts.reserve_exact(loose);
            for (_, posting) in run {
                posting.record(&mut node);
            }
            hits.push((run[0].0, node));
        }
        SortedHits(hits)
    }

    /// Where each section's hits are, by section number: a weak unit's postings name a
    /// large share of the corpus's sections, and a binary search over the hits for each
    /// was a visible share of a warm search.
    fn positions(&self, labels: &CorpusLabels) -> Positions {
        let mut at = vec![u32::MAX; labels.section_count()];
        for (index, (key, _)) in self.0.iter().enumerate() {
            at[labels.section_id(*key) as usize] = index as u32;
        }
        Positions(at)
    }

    fn get_mut(&mut self, key: NodeKey) -> Option<&mut NodeHits> {
        let at = self.0.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some(&mut self.0[at].1)
    }

    /// Adds hits of sections these do not hold.
    fn add(&mut self, other: SortedHits) {
        if other.0.is_empty() {
            return;
        }
        self.0.extend(other.0);
        self.0.sort_by_key(|(key, _)| *key);
    }
}

/// The index of each section's hits in a [`SortedHits`], by section number (`u32::MAX`:
/// none).
struct Positions(Vec<u32>);

impl Positions {
    fn of(&self, labels: &CorpusLabels, key: NodeKey) -> Option<usize> {
        let index = self.0[labels.section_id(key) as usize];
        (index != u32::MAX).then_some(index as usize)
    }
}

fn clamp(count: u32) -> u16 {
    count.min(u32::from(u16::MAX)) as u16
}

/// The sections of the scope that links point at with text holding a pattern (only the
/// link texts the label postings admit are matched).
fn add_link_texts(corpus: &Corpus, plan: &Plan, filter: &ScopeFilter, hits: &mut SortedHits) {
    let labels = corpus.labels();
    let mut fresh = Vec::new();
    for id in labels.links.candidates(plan) {
        let key = labels.link_keys[id as usize];
        if !filter.contains(key) {
            continue;
        }
        let Some(label) = corpus.references.link_text(key) else {
            continue;
        };
        let normalized = plan.set_normalized(&label.text);
        let loose = plan.set_loose(&label.loose);
        if normalized.is_empty() && loose.is_empty() {
            continue;
        }
        match hits.get_mut(key) {
            Some(node) => node.set_links(normalized, loose),
            None => {
                let mut node = NodeHits::default();
                node.set_links(normalized, loose);
                fresh.push((key, node));
            }
        }
    }
    // A section two link ids name keeps the last one's sets, as setting them in turn would.
    fresh.sort_by_key(|(key, _)| *key);
    fresh.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            std::mem::swap(later, earlier);
        }
        same
    });
    hits.add(SortedHits(fresh));
}
