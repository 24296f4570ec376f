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

use rustc_hash::{FxHashMap, FxHashSet};

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::index::literal::IndexPattern;
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
    let mut hits: FxHashMap<NodeKey, NodeHits> = FxHashMap::default();
    let found = |pattern: IndexPattern| -> Vec<(NodeKey, u32)> {
        match pattern.sections(&view.searcher, &view.keys, &keep) {
            Ok(found) => found.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %error, "the section index could not be read");
                Vec::new()
            }
        }
    };
    for (index, pattern) in plan.patterns[..plan.first_unit_pattern].iter().enumerate() {
        let literal = IndexPattern::literal(&pattern.text, &view.fields, view.vocabulary());
        for (key, count) in found(literal) {
            let node = hits.entry(key).or_default();
            node.body.insert(index);
            node.counts.push((index as u32, clamp(count)));
        }
    }
    let mut unit_df = vec![0; plan.units.len()];
    let mut weak = Vec::new();
    for (index, planned) in plan.units.iter().enumerate() {
        let sections = found(IndexPattern::unit(&planned.unit, &view.fields));
        unit_df[index] = sections.len() as u32;
        if planned.unit.kind.is_strong() {
            for (key, count) in sections {
                record_unit(
                    hits.entry(key).or_default(),
                    plan.first_unit_pattern + index,
                    planned.unit.form(),
                    count,
                );
            }
        } else {
            weak.push((
                plan.first_unit_pattern + index,
                planned.unit.form(),
                sections,
            ));
        }
    }
    // A weak unit only adds to a section that something else brought.
    for (pattern, form, sections) in weak {
        for (key, count) in sections {
            let node = if brought.contains(&key) {
                Some(hits.entry(key).or_default())
            } else {
                hits.get_mut(&key)
            };
            if let Some(node) = node {
                record_unit(node, pattern, form, count);
            }
        }
    }
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
    scan.hits = hits
        .into_iter()
        .map(|(key, mut node)| {
            node.counts.sort_unstable();
            node.loose_counts.sort_unstable();
            node.provisional = true;
            let (normal, loose) = titles.of_title(plan, corpus, key);
            if !normal.is_empty() || !loose.is_empty() {
                node.set_titles(normal.clone(), loose.clone());
            }
            (key, node)
        })
        .collect();
    scan.hits.sort_unstable_by_key(|(key, _)| *key);
    IndexHits { scan, unit_df }
}

fn record_unit(node: &mut NodeHits, pattern: usize, form: Form, count: u32) {
    let (set, counts) = match form {
        Form::Word => (&mut node.body, &mut node.counts),
        Form::Loose => (&mut node.body_loose, &mut node.loose_counts),
    };
    set.insert(pattern);
    counts.push((pattern as u32, clamp(count)));
}

fn clamp(count: u32) -> u16 {
    count.min(u32::from(u16::MAX)) as u16
}

/// The sections of the scope that links point at with text holding a pattern (only the
/// link texts the label postings admit are matched).
fn add_link_texts(
    corpus: &Corpus,
    plan: &Plan,
    filter: &ScopeFilter,
    hits: &mut FxHashMap<NodeKey, NodeHits>,
) {
    let labels = corpus.labels();
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
        hits.entry(key).or_default().set_links(normalized, loose);
    }
}
