//! Stages 0 and 1: one pass over the normalised own text of every section in scope and one
//! over its loose text, plus its title, the texts of links pointing at it, and its page's
//! title and path words.
//!
//! Stage 0 evidence is a normalised match in the body (a pattern standing for the phrase,
//! a strict term or a term) or in a heading; Stage 1 evidence is a loose match, a synonym
//! variant or a piece of a term. Both come out of the same two passes, because every
//! extra pass over the corpus costs as much as the whole search; the roles of the matched
//! patterns tell the stages apart later (see `score`).
//!
//! The scan walks sections in index order, a chunk at a time, and checks the time budget
//! before each chunk; what it did not reach is returned as unscanned, so the caller can
//! report it and a later search can start from there.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use rustc_hash::FxHashSet;

use super::corpus::Corpus;
use super::derived::{FileText, NodeKey};
use super::plan::{PatternSet, Plan};
use crate::call::CallContext;
use crate::machine::{equal_parts, over_parts};
use crate::manual::ManualFile;

/// Sections scanned between two looks at the clock.
const CHUNK_NODES: usize = 64;

/// Sections of one file to scan: the file index and all its nodes (`None`) or some.
pub(crate) type ScopeEntry = (u32, Option<Vec<u32>>);
/// Which sections to scan, in scan order.
pub(crate) type Scope = Vec<ScopeEntry>;

/// Which nodes of each file a scope holds, indexed by file: whether a section is in
/// the scope without walking it.
pub(super) struct ScopeFilter {
    files: Vec<Option<Option<Vec<u32>>>>,
}

impl ScopeFilter {
    pub(super) fn new(corpus: &Corpus, scope: &Scope) -> ScopeFilter {
        let mut files = vec![None; corpus.files.len()];
        for (file, nodes) in scope {
            files[*file as usize] = Some(nodes.clone());
        }
        ScopeFilter { files }
    }

    /// Whether the scope holds the section `key`: its whole file, or the node among the
    /// file's.
    pub(super) fn contains(&self, key: NodeKey) -> bool {
        match self.files.get(key.file as usize) {
            Some(Some(None)) => true,
            Some(Some(Some(nodes))) => nodes.binary_search(&key.node).is_ok(),
            _ => false,
        }
    }
}

/// What one section matched. Most sections match only in their body, so the label
/// matches live behind a box: the scan keeps one of these for every section with any
/// evidence, tens of thousands for a common word.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeHits {
    pub body: PatternSet,
    pub body_loose: PatternSet,
    /// Occurrences in the normalised body, per pattern that occurred, by pattern.
    pub counts: Vec<(u32, u16)>,
    /// Occurrences in the loose body, per pattern that occurred, by pattern.
    pub loose_counts: Vec<(u32, u16)>,
    labels: Option<Box<LabelHits>>,
    /// Found by the section index and not yet verified by the scan: ranked, never
    /// answered (a flag, not a set beside the hits, so the search's rounds skip these
    /// sections without a lookup each).
    pub provisional: bool,
}

/// Matches in a section's own title and in the texts of links pointing at it.
#[derive(Debug, Clone, Default)]
struct LabelHits {
    title: PatternSet,
    title_loose: PatternSet,
    links: PatternSet,
    links_loose: PatternSet,
}

static NO_LABELS: LabelHits = LabelHits {
    title: PatternSet::EMPTY,
    title_loose: PatternSet::EMPTY,
    links: PatternSet::EMPTY,
    links_loose: PatternSet::EMPTY,
};

impl NodeHits {
    fn labels(&self) -> &LabelHits {
        self.labels.as_deref().unwrap_or(&NO_LABELS)
    }

    pub(crate) fn title(&self) -> &PatternSet {
        &self.labels().title
    }

    pub(crate) fn title_loose(&self) -> &PatternSet {
        &self.labels().title_loose
    }

    pub(crate) fn links(&self) -> &PatternSet {
        &self.labels().links
    }

    pub(crate) fn links_loose(&self) -> &PatternSet {
        &self.labels().links_loose
    }

    fn is_empty(&self) -> bool {
        self.body.is_empty() && self.body_loose.is_empty() && self.labels.is_none()
    }

    /// Empties the hits, keeping the sets' and lists' memory: the units' ranking builds
    /// the hits of many sections in turn in one buffer (`candidates::UnitOnly`).
    pub(crate) fn clear(&mut self) {
        self.body.clear();
        self.body_loose.clear();
        self.counts.clear();
        self.loose_counts.clear();
        self.labels = None;
        self.provisional = false;
    }

    /// Sets the matches in the section's own title (kept only when there are any).
    pub(super) fn set_titles(&mut self, title: PatternSet, title_loose: PatternSet) {
        if title.is_empty() && title_loose.is_empty() {
            return;
        }
        let labels = self.labels.get_or_insert_with(Box::default);
        labels.title = title;
        labels.title_loose = title_loose;
    }

    /// Sets the matches in the texts of links pointing at the section.
    pub(super) fn set_links(&mut self, links: PatternSet, links_loose: PatternSet) {
        if links.is_empty() && links_loose.is_empty() {
            return;
        }
        let labels = self.labels.get_or_insert_with(Box::default);
        labels.links = links;
        labels.links_loose = links_loose;
    }

    /// Occurrences of `pattern` in the normalised body.
    pub(crate) fn count(&self, pattern: usize) -> u16 {
        count_in(&self.counts, pattern)
    }

    /// Occurrences of `pattern` in the loose body.
    pub(crate) fn loose_count(&self, pattern: usize) -> u16 {
        count_in(&self.loose_counts, pattern)
    }

    /// Patterns matched anywhere, normalised or loose.
    /// The section's pattern sets: normalised and loose body, title and link texts.
    pub(crate) fn sets(&self) -> [&PatternSet; 6] {
        let labels = self.labels();
        [
            &self.body,
            &self.body_loose,
            &labels.title,
            &labels.title_loose,
            &labels.links,
            &labels.links_loose,
        ]
    }

    /// Whether `pattern` matched anywhere in the section.
    pub(crate) fn holds(&self, pattern: usize) -> bool {
        self.sets().into_iter().any(|set| set.contains(pattern))
    }
}

fn count_in(counts: &[(u32, u16)], pattern: usize) -> u16 {
    counts
        .binary_search_by_key(&pattern, |(p, _)| *p as usize)
        .map_or(0, |at| counts[at].1)
}

/// Matches of a page's title and path words (they count for the page's first section).
#[derive(Debug, Clone, Default)]
pub(crate) struct PageHits {
    pub normalized: PatternSet,
    pub loose: PatternSet,
}

#[derive(Debug, Default)]
pub(crate) struct ScanResult {
    /// Sections with evidence, sorted by key (a sorted list, not a map: it is built once
    /// in key order and read in key order, and holds tens of thousands of entries).
    pub hits: Vec<(NodeKey, NodeHits)>,
    pub pages: HashMap<u32, PageHits>,
    pub scanned_files: usize,
    pub scanned_nodes: usize,
    /// Left out because the deadline passed, in scan order.
    pub unscanned: Scope,
}

impl ScanResult {
    /// Adds the results of a scan of other sections (another thread's part, or Stage 4).
    pub(crate) fn merge(&mut self, other: ScanResult) {
        let sorted = self
            .hits
            .last()
            .zip(other.hits.first())
            .is_none_or(|(mine, theirs)| mine.0 < theirs.0);
        self.hits.extend(other.hits);
        if !sorted {
            self.hits.sort_unstable_by_key(|(key, _)| *key);
        }
        self.pages.extend(other.pages);
        self.scanned_files += other.scanned_files;
        self.scanned_nodes += other.scanned_nodes;
        self.unscanned.extend(other.unscanned);
    }

    /// Replaces the hits of the sections `keys` by those of `exact`, a scan of the same
    /// sections (its sections left unscanned lose their hits and are listed unscanned).
    /// The hits stay sorted by merging, not by sorting them all again: a round of
    /// verification replaces a few hundred of the tens of thousands of hits a common
    /// query has at 200 MB of manuals.
    pub(crate) fn replace(&mut self, keys: &FxHashSet<NodeKey>, exact: ScanResult) {
        self.hits.retain(|(key, _)| !keys.contains(key));
        let mut added = exact.hits;
        added.sort_unstable_by_key(|(key, _)| *key);
        let kept = std::mem::take(&mut self.hits);
        self.hits = merge_sorted(kept, added);
        self.pages.extend(exact.pages);
        self.unscanned.extend(exact.unscanned);
    }

    pub(crate) fn get(&self, key: NodeKey) -> Option<&NodeHits> {
        self.hits
            .binary_search_by_key(&key, |(k, _)| *k)
            .ok()
            .map(|at| &self.hits[at].1)
    }
}

/// Two lists sorted by distinct keys as one sorted list.
fn merge_sorted(
    left: Vec<(NodeKey, NodeHits)>,
    right: Vec<(NodeKey, NodeHits)>,
) -> Vec<(NodeKey, NodeHits)> {
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let next = if l.0 < r.0 { left.next() } else { right.next() };
        merged.extend(next);
    }
    merged.extend(left);
    merged.extend(right);
    merged
}

/// Below this many bytes of text a second thread costs more than it saves.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// Scans `scope` until done, `deadline` or the call's cancellation, on every available
/// core: the scope is cut into consecutive parts of about equal text size, one per
/// thread, and the parts' results are joined in scope order (so unscanned sections stay
/// in scan order). Sections scanned are the call's progress.
pub(crate) fn scan(
    corpus: &Corpus,
    files: &[&ManualFile],
    plan: &Plan,
    scope: &Scope,
    deadline: Instant,
    call: &CallContext,
) -> ScanResult {
    let total: usize = scope.iter().map(|entry| text_size(corpus, entry)).sum();
    let threads = crate::machine::cores().min(total / PARALLEL_MIN_BYTES + 1);
    let sections = scope
        .iter()
        .map(|(file, nodes)| match nodes {
            Some(nodes) => nodes.len(),
            None => corpus.files[*file as usize].outline.node_count(),
        })
        .sum::<usize>();
    call.expect_work(sections as u64, "sections");
    scan_in_parts(corpus, files, plan, scope, deadline, threads, call)
}

fn text_size(corpus: &Corpus, entry: &ScopeEntry) -> usize {
    corpus.files[entry.0 as usize].outline.stored.body_bytes as usize
}

fn scan_in_parts(
    corpus: &Corpus,
    files: &[&ManualFile],
    plan: &Plan,
    scope: &Scope,
    deadline: Instant,
    threads: usize,
    call: &CallContext,
) -> ScanResult {
    if threads <= 1 {
        return scan_part(corpus, files, plan, scope, deadline, call);
    }
    let parts = equal_parts(scope, threads, |entry| text_size(corpus, entry));
    let mut result = ScanResult::default();
    for part in over_parts(parts, |part| {
        scan_part(corpus, files, plan, &scope[part], deadline, call)
    }) {
        result.merge(part);
    }
    result
}

fn scan_part(
    corpus: &Corpus,
    files: &[&ManualFile],
    plan: &Plan,
    scope: &[ScopeEntry],
    deadline: Instant,
    call: &CallContext,
) -> ScanResult {
    let mut result = ScanResult::default();
    let mut cut = false;
    for (file, nodes) in scope {
        let all: Vec<u32>;
        let nodes: &[u32] = match nodes {
            Some(nodes) => nodes,
            None => {
                all = (0..corpus.files[*file as usize].outline.node_count() as u32).collect();
                &all
            }
        };
        let mut scanned_here = 0;
        // Read (derived when the cache has none) only once a chunk is to be scanned.
        let mut text: Option<Arc<FileText>> = None;
        for chunk in nodes.chunks(CHUNK_NODES) {
            if cut || Instant::now() >= deadline || call.is_cancelled() {
                cut = true;
                break;
            }
            let text = text.get_or_insert_with(|| corpus.text(*file, files[*file as usize]));
            scan_nodes(corpus, text, plan, *file, chunk, &mut result);
            scanned_here += chunk.len();
            call.work_done(chunk.len() as u64);
        }
        if scanned_here > 0 {
            result.scanned_files += 1;
            result.scanned_nodes += scanned_here;
            page_hits(corpus, plan, *file, &mut result);
        }
        if scanned_here < nodes.len() {
            result
                .unscanned
                .push((*file, Some(nodes[scanned_here..].to_vec())));
        }
    }
    result
}

fn page_hits(corpus: &Corpus, plan: &Plan, file: u32, result: &mut ScanResult) {
    let page = &corpus.files[file as usize].outline.page;
    let hits = PageHits {
        normalized: plan.set_normalized(page.text()),
        loose: plan.set_loose(page.loose()),
    };
    if !hits.normalized.is_empty() || !hits.loose.is_empty() {
        result.pages.insert(file, hits);
    }
}

/// Scans `nodes` (sorted) of `file`, runs of consecutive nodes as one text.
fn scan_nodes(
    corpus: &Corpus,
    derived: &FileText,
    plan: &Plan,
    file: u32,
    nodes: &[u32],
    result: &mut ScanResult,
) {
    let labels = &corpus.files[file as usize].outline.labels;
    let mut local: HashMap<u32, NodeHits> = HashMap::new();
    let mut tally = Tally::new(plan.patterns.len());
    for run in consecutive_runs(nodes) {
        let (first, last) = (
            run[0] as usize,
            *run.last().expect("runs are not empty") as usize,
        );
        // The run's loose text, loosened now (the corpus keeps only the normalised one).
        let mut loose_text = String::new();
        let mut loose_starts = Vec::with_capacity(run.len() + 1);
        for node in first..=last {
            loose_starts.push(loose_text.len() as u32);
            loose_text.push_str(&derived.own_loose(node as u32));
        }
        loose_starts.push(loose_text.len() as u32);
        for loose in [false, true] {
            // Where each node of the run starts in the text scanned, the run's first at 0.
            let (text, starts) = if loose {
                (loose_text.as_str(), &loose_starts[..])
            } else {
                (
                    derived.body.as_str(),
                    &derived.node_starts[first..=last + 1],
                )
            };
            let base = starts[0] as usize;
            let mut node = 0;
            let mut found = |pattern: usize, at: usize| {
                // Matches come in text order, so the node only moves forward.
                while starts[node + 1] as usize <= base + at {
                    tally.flush((first + node) as u32, loose, &mut local);
                    node += 1;
                }
                tally.add(pattern);
            };
            let run_text = &text[base..starts[starts.len() - 1] as usize];
            if loose {
                plan.scan_loose(run_text, &mut found);
            } else {
                plan.scan_normalized(run_text, &mut found);
            }
            tally.flush((first + node) as u32, loose, &mut local);
        }
    }
    for &node in nodes {
        let key = NodeKey { file, node };
        let title = &labels[node as usize].title;
        let mut hits = local.remove(&node).unwrap_or_default();
        hits.set_titles(
            plan.set_normalized(title.text()),
            plan.set_loose(title.loose()),
        );
        if let Some(links) = corpus.references.link_text(key) {
            hits.set_links(
                plan.set_normalized(links.text()),
                plan.set_loose(links.loose()),
            );
        }
        if !hits.is_empty() {
            result.hits.push((key, hits));
        }
    }
}

/// Occurrences per pattern in the node being scanned: a counter per pattern and the list
/// of those touched, so a node with a handful of matches costs a handful of writes
/// however many patterns the plan has.
struct Tally {
    counts: Vec<u16>,
    touched: Vec<u32>,
}

impl Tally {
    fn new(patterns: usize) -> Tally {
        Tally {
            counts: vec![0; patterns],
            touched: Vec::new(),
        }
    }

    fn add(&mut self, pattern: usize) {
        if self.counts[pattern] == 0 {
            self.touched.push(pattern as u32);
        }
        self.counts[pattern] = self.counts[pattern].saturating_add(1);
    }

    /// Moves the counts into `node`'s hits (normalised or loose) and clears them.
    fn flush(&mut self, node: u32, loose: bool, local: &mut HashMap<u32, NodeHits>) {
        if self.touched.is_empty() {
            return;
        }
        self.touched.sort_unstable();
        let hits = local.entry(node).or_default();
        let (set, counts) = if loose {
            (&mut hits.body_loose, &mut hits.loose_counts)
        } else {
            (&mut hits.body, &mut hits.counts)
        };
        for &pattern in &self.touched {
            set.insert(pattern as usize);
            counts.push((pattern, self.counts[pattern as usize]));
            self.counts[pattern as usize] = 0;
        }
        self.touched.clear();
    }
}

/// Splits sorted node indices into runs of consecutive ones.
fn consecutive_runs(nodes: &[u32]) -> impl Iterator<Item = &[u32]> {
    nodes.chunk_by(|a, b| a + 1 == *b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::corpus::CorpusCache;
    use crate::manual::find::query::Query;
    use crate::manual::find::testing::{index, sources};
    use crate::manual::ManualIndex;
    use crate::text::synonyms::Synonyms;
    use std::time::Duration;

    #[test]
    fn replacing_hits_keeps_them_sorted_as_a_full_sort_would() {
        let key = |file, node| NodeKey { file, node };
        let hits = |keys: &[NodeKey]| -> Vec<(NodeKey, NodeHits)> {
            keys.iter().map(|&k| (k, NodeHits::default())).collect()
        };
        let before = [key(0, 1), key(0, 4), key(1, 0), key(2, 7), key(3, 3)];
        let mut scanned = ScanResult {
            hits: hits(&before),
            ..ScanResult::default()
        };
        // The scan verified three sections, found one of them again and one new, out of order.
        let verified: FxHashSet<NodeKey> = [key(0, 4), key(2, 7), key(5, 0)].into_iter().collect();
        let exact = ScanResult {
            hits: hits(&[key(5, 0), key(0, 4)]),
            ..ScanResult::default()
        };
        scanned.replace(&verified, exact);
        let keys: Vec<NodeKey> = scanned.hits.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [key(0, 1), key(0, 4), key(1, 0), key(3, 3), key(5, 0)]
        );
    }

    fn setup() -> (tempfile::TempDir, ManualIndex, std::sync::Arc<Corpus>, Plan) {
        let files: Vec<(String, String)> = (0..6)
            .map(|n| {
                (
                    format!("m/f{n}.md"),
                    format!("# 休暇 {n}\n\n有給休暇の繰越し\n\n## 別\n\n繰\n越し\n"),
                )
            })
            .collect();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let (dir, index) = index(&borrowed);
        let corpus = CorpusCache::default().sync(&index);
        let plan = Plan::new(
            Query::parse("有給休暇の繰越し", None),
            &Synonyms::load(None, &crate::text::normalize::normalize_str).0,
            &[],
        );
        (dir, index, corpus, plan)
    }

    fn all(corpus: &Corpus) -> Scope {
        (0..corpus.files.len() as u32)
            .map(|file| (file, None))
            .collect()
    }

    #[test]
    fn every_section_is_scanned_with_body_loose_and_title_evidence() {
        let (_dir, index, corpus, plan) = setup();
        let later = Instant::now() + Duration::from_secs(60);
        let result = scan(
            &corpus,
            &sources(&index),
            &plan,
            &all(&corpus),
            later,
            &CallContext::local(),
        );
        assert_eq!((result.scanned_files, result.scanned_nodes), (6, 12));
        assert!(result.unscanned.is_empty());
        let term = plan.terms[1].exact;
        let first = result.get(NodeKey { file: 0, node: 0 }).unwrap();
        assert!(first.body.contains(term) && first.title().contains(plan.terms[0].pieces[0][2]));
        let split = result.get(NodeKey { file: 0, node: 1 }).unwrap();
        assert!(
            !split.body.contains(term) && split.body_loose.contains(term),
            "繰\\n越し is loose only"
        );
    }

    #[test]
    fn parts_on_several_threads_give_the_same_result() {
        let (_dir, index, corpus, plan) = setup();
        let later = Instant::now() + Duration::from_secs(60);
        let local = CallContext::local();
        let in_parts = |parts| {
            scan_in_parts(
                &corpus,
                &sources(&index),
                &plan,
                &all(&corpus),
                later,
                parts,
                &local,
            )
        };
        let (one, three) = (in_parts(1), in_parts(3));
        assert_eq!(one.scanned_nodes, three.scanned_nodes);
        let keys: Vec<_> = three.hits.iter().map(|(key, _)| *key).collect();
        let expected: Vec<_> = one.hits.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, expected);
        assert!(keys.is_sorted());
        assert!(keys
            .iter()
            .all(|&key| one.get(key).unwrap().sets() == three.get(key).unwrap().sets()));
    }

    #[test]
    fn a_spent_budget_leaves_everything_unscanned_in_order() {
        let (_dir, index, corpus, plan) = setup();
        let local = CallContext::local();
        let result = scan_in_parts(
            &corpus,
            &sources(&index),
            &plan,
            &all(&corpus),
            Instant::now(),
            2,
            &local,
        );
        assert_eq!(result.scanned_nodes, 0);
        assert!(result.hits.is_empty());
        let files: Vec<u32> = result.unscanned.iter().map(|(file, _)| *file).collect();
        assert_eq!(files, [0, 1, 2, 3, 4, 5]);
        assert_eq!(result.unscanned[0].1.as_deref(), Some(&[0, 1][..]));
    }

    #[test]
    fn a_cancelled_call_stops_the_scan_as_a_spent_budget_does() {
        let (_dir, index, corpus, plan) = setup();
        let later = Instant::now() + Duration::from_secs(60);
        let call = CallContext::local();
        call.cancel_flag()
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let result = scan(
            &corpus,
            &sources(&index),
            &plan,
            &all(&corpus),
            later,
            &call,
        );
        assert_eq!(result.scanned_nodes, 0);
        assert_eq!(result.unscanned.len(), corpus.files.len());
    }

    #[test]
    fn runs_split_at_gaps() {
        let runs: Vec<&[u32]> = consecutive_runs(&[1, 2, 3, 7, 8, 10]).collect();
        assert_eq!(runs, [&[1, 2, 3][..], &[7, 8], &[10]]);
    }
}
