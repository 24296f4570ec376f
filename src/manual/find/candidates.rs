//! Stages 0-1 from the section index: which sections hold which of the plan's literals
//! and units, without reading a section's text.
//!
//! Every pattern of the plan becomes an [`IndexPattern`]: a literal (phrase, strict term,
//! term, piece, synonym variant) as the grams and words it is made of, a unit as its
//! token or grams. The index answers each with the sections holding it and how often;
//! the labels (titles, link texts, page titles), small and kept in memory, are matched
//! as the scan matches them. The result has the shape of a scan's ([`ScanResult`]), so
//! ranking, the recall floor and fusion run unchanged over it; only the sections that
//! hold strong units and nothing else of the plan, which the evidence score does not
//! rank, stay as flat postings ([`UnitOnly`]) that the units' BM25 reads one at a time.
//!
//! The index errs on the side of more sections where its terms and the scan's
//! substrings differ (see `index::literal`), and it cannot tell a loose match from a
//! normalised one, so these hits are *provisional*: the search ranks them, has the scan
//! verify the best ranked on their own text, and replaces their provisional hits by the
//! scan's (`Search::stage01`). Unit hits are exact (the tokens are the units), and so are
//! the document frequencies the units' BM25 is computed with.

use std::sync::Mutex;

use rustc_hash::FxHashSet;

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::index::literal::IndexPattern;
use super::labels::CorpusLabels;
use super::plan::{PatternSet, Plan};
use super::scan::{NodeHits, PageHits, ScanResult, Scope, ScopeFilter};
use super::score::TitleSets;
use crate::text::units::Form;

/// What the index found for a scope.
pub(super) struct IndexHits {
    /// Provisional hits of every section holding a term's literal (in its body, title or
    /// link texts), of pages' first sections and of sections linked to (with the weak
    /// units of those sections), labels included.
    pub scan: ScanResult,
    /// The sections holding strong units and nothing else of the plan (the bulk of what a
    /// common word brings), kept as their postings: they rank by the units alone.
    pub unit_only: UnitOnly,
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
    let mut lists = KEPT_LISTS.take();
    // Each pattern's sections go straight into the list of their postings: a common
    // unit names tens of thousands of sections at 200 MB of manuals, and a list of its
    // own for each pattern, copied into this one, was a visible share of a warm search.
    let found = |pattern: IndexPattern, posting: Posting, into: &mut Vec<(NodeKey, Posting)>| {
        let before = into.len();
        let mut add = |key, count| into.push((key, Posting { count, ..posting }));
        if let Err(error) = pattern.sections(&view.searcher, &view.keys, &keep, &mut add) {
            tracing::warn!(error = %error, "the section index could not be read");
            into.truncate(before);
        }
        into.len() - before
    };
    for (index, pattern) in plan.patterns[..plan.first_unit_pattern].iter().enumerate() {
        let literal = IndexPattern::literal(&pattern.text, &view.fields, view.vocabulary());
        let posting = Posting {
            pattern: index as u32,
            form: Form::Word,
            weak: false,
            count: 0,
        };
        found(literal, posting, &mut lists.collected);
    }
    let mut unit_df = vec![0; plan.units.len()];
    // The weak units' postings go last, so each section's come after its strong ones.
    for weak in [false, true] {
        for (index, planned) in plan.units.iter().enumerate() {
            if planned.unit.kind.is_strong() == weak {
                continue;
            }
            let posting = Posting {
                pattern: (plan.first_unit_pattern + index) as u32,
                form: planned.unit.form(),
                weak,
                count: 0,
            };
            let unit = IndexPattern::unit(&planned.unit, &view.fields);
            unit_df[index] = found(unit, posting, &mut lists.collected) as u32;
        }
    }
    let mut scan = page_hits(corpus, plan, scope);
    let links = link_texts(corpus, plan, &filter);
    lists.group(corpus.labels());
    let (mut hits, unit_only) = by_section(&lists.grouped, brought, |key, run| {
        needs_hits(corpus, plan, &scan, &links, titles, key, run)
    });
    KEPT_LISTS.keep(lists);
    add_link_texts(links, &mut hits);
    scan.hits = hits.0;
    for (key, node) in &mut scan.hits {
        finish(plan, corpus, titles, *key, node);
    }
    IndexHits {
        scan,
        unit_only,
        unit_df,
    }
}

/// The scope's sections counted, and the matches of the titles and path words of the
/// pages the label postings admit.
fn page_hits(corpus: &Corpus, plan: &Plan, scope: &Scope) -> ScanResult {
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
            normalized: plan.set_normalized(page.text()),
            loose: plan.set_loose(page.loose()),
        };
        if !page_hits.normalized.is_empty() || !page_hits.loose.is_empty() {
            scan.pages.insert(*file, page_hits);
        }
    }
    scan
}

/// Whether section `key`, with the postings `run`, needs its `NodeHits`: when the
/// evidence score ranks it (a term's literal in its body, a term in its title, its
/// page's title or path words, link texts pointing at it), or when its file is not in
/// the index (the scan's hits replace the index's there). The others hold units alone,
/// and only the units' BM25 reads them.
fn needs_hits(
    corpus: &Corpus,
    plan: &Plan,
    pages: &ScanResult,
    links: &[LinkHits],
    titles: &mut TitleSets,
    key: NodeKey,
    run: &[(NodeKey, Posting)],
) -> bool {
    let terms = plan.first_unit_pattern;
    let (title, title_loose) = titles.of_title(plan, corpus, key);
    run.iter()
        .any(|(_, posting)| (posting.pattern as usize) < terms)
        || title.any_below(terms)
        || title_loose.any_below(terms)
        || (key.node == 0 && pages.pages.contains_key(&key.file))
        || links.binary_search_by_key(&key, |link| link.key).is_ok()
        || corpus.unindexed.binary_search(&key.file).is_ok()
}

/// Completes the hits of section `key` once every posting is recorded: count lists in
/// pattern order, provisional, its title's matches.
fn finish(plan: &Plan, corpus: &Corpus, titles: &mut TitleSets, key: NodeKey, node: &mut NodeHits) {
    node.counts.sort_unstable();
    node.loose_counts.sort_unstable();
    node.provisional = true;
    let (normal, loose) = titles.of_title(plan, corpus, key);
    if !normal.is_empty() || !loose.is_empty() {
        node.set_titles(normal.clone(), loose.clone());
    }
}

/// The sections holding strong units and nothing else of the plan, as their postings
/// (`postings[ends[i - 1]..ends[i]]` are those of `keys[i]`), in key order: a common unit
/// brings tens of thousands of them at 200 MB of manuals, and building heap `NodeHits`
/// (pattern sets, count lists) for each, to score them once by BM25 and set them aside,
/// was a large share of a warm search. The units' ranking builds each one's hits in turn
/// in one reused buffer ([`UnitOnly::hits_into`]).
#[derive(Default)]
pub(crate) struct UnitOnly {
    keys: Vec<NodeKey>,
    ends: Vec<u32>,
    postings: Vec<Posting>,
}

impl UnitOnly {
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn keys(&self) -> &[NodeKey] {
        &self.keys
    }

    fn push(&mut self, key: NodeKey, run: &[(NodeKey, Posting)]) {
        self.keys.push(key);
        self.postings
            .extend(run.iter().map(|(_, posting)| *posting));
        self.ends.push(self.postings.len() as u32);
    }

    /// The hits of the `index`-th section into `node` (emptied first), as they would be
    /// had `index_hits` built them; returns the section.
    pub(crate) fn hits_into(
        &self,
        index: usize,
        plan: &Plan,
        corpus: &Corpus,
        titles: &mut TitleSets,
        node: &mut NodeHits,
    ) -> NodeKey {
        node.clear();
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        for posting in &self.postings[start as usize..self.ends[index] as usize] {
            posting.record(node);
        }
        let key = self.keys[index];
        finish(plan, corpus, titles, key, node);
        key
    }
}

/// One section's occurrences of one pattern, as the index counted them.
#[derive(Clone, Copy)]
struct Posting {
    pattern: u32,
    /// Where the pattern is looked for: the normalised body (literals, word units) or the
    /// loose one (loose units).
    form: Form,
    /// A weak unit's: it only adds to a section something else brought.
    weak: bool,
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

/// Gives each section of `postings` (grouped by [`PostingLists::group`]) that
/// `needs_hits` accepts (with its postings) its `NodeHits`; the other sections' postings
/// go to a [`UnitOnly`]. A section with weak units' postings alone is left out unless it
/// is `brought`, and then gets its `NodeHits` (`needs_hits` sees only sections with
/// strong postings). Each section's postings are recorded last first (its largest
/// pattern, but where a weak unit precedes a strong one), so a set is mostly sized by its
/// first insert, and its count lists are sized once (the lists are sorted afterwards).
fn by_section(
    postings: &[(NodeKey, Posting)],
    brought: &FxHashSet<NodeKey>,
    mut needs_hits: impl FnMut(NodeKey, &[(NodeKey, Posting)]) -> bool,
) -> (SortedHits, UnitOnly) {
    let mut hits = KEPT_HITS.take();
    let mut unit_only = UnitOnly::default();
    for run in postings.chunk_by(|a, b| a.0 == b.0) {
        let key = run[0].0;
        // A section's strong postings come first: with a weak one first, all are weak.
        let weak_only = run[0].1.weak;
        if weak_only && !brought.contains(&key) {
            continue;
        }
        if !weak_only && !needs_hits(key, run) {
            unit_only.push(key, run);
            continue;
        }
        let loose = run.iter().filter(|(_, p)| p.form == Form::Loose).count();
        let mut node = NodeHits::default();
        node.counts.reserve_exact(run.len() - loose);
        node.loose_counts.reserve_exact(loose);
        for (_, posting) in run.iter().rev() {
            posting.record(&mut node);
        }
        hits.push((key, node));
    }
    (SortedHits(hits), unit_only)
}

/// The lists `index_hits` collects and groups the postings in, kept from one search to
/// the next ([`Kept`]): a common query's postings take several MB at 200 MB of
/// manuals, and every block that large is a mapping of its own (`crate::allocator`), so
/// fresh lists cost a page fault per 4 KiB written at every search (two fifths of a warm
/// search's faults).
#[derive(Default)]
struct PostingLists {
    /// Every pattern's postings in turn, the weak units' last.
    collected: Vec<(NodeKey, Posting)>,
    /// `collected` in key order ([`PostingLists::group`]).
    grouped: Vec<(NodeKey, Posting)>,
    /// Where each section's postings start in `grouped`, by section number.
    starts: Vec<u32>,
}

impl PostingLists {
    /// Sets `grouped` to the postings of `collected` in key order, each section's in the
    /// order collected: one counting pass by section number (numbers follow key order)
    /// instead of a comparison sort of every posting, which was 5-7% of a warm search at
    /// 200 MB of manuals. A key the labels do not number as they number the corpus (a
    /// section beyond its file's outline) falls back to the sort.
    fn group(&mut self, labels: &CorpusLabels) {
        let keyed = self
            .collected
            .iter()
            .map(|entry| (labels.section_id(entry.0) as usize, *entry));
        let count = labels.section_count();
        if !crate::scatter::by_key(keyed, count, &mut self.starts, &mut self.grouped)
            || !self.grouped.is_sorted_by(|a, b| a.0 <= b.0)
        {
            self.sort_by_key();
        }
    }

    /// Sets `grouped` to `collected` sorted by key, each section's postings in the order
    /// collected.
    fn sort_by_key(&mut self) {
        self.grouped.clear();
        self.grouped.extend_from_slice(&self.collected);
        self.grouped.sort_by_key(|(key, _)| *key);
    }
}

impl Reused for PostingLists {
    fn bytes(&self) -> usize {
        let entry = std::mem::size_of::<(NodeKey, Posting)>();
        (self.collected.capacity() + self.grouped.capacity()) * entry
            + self.starts.capacity() * std::mem::size_of::<u32>()
    }

    fn clear(&mut self) {
        self.collected.clear();
        self.grouped.clear();
        self.starts.clear();
    }
}

impl Reused for Vec<(NodeKey, NodeHits)> {
    fn bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<(NodeKey, NodeHits)>()
    }

    fn clear(&mut self) {
        Vec::clear(self);
    }
}

/// Memory a search fills and empties, kept for the next search.
trait Reused: Default {
    /// The memory held.
    fn bytes(&self) -> usize;

    /// Empties it, keeping the memory.
    fn clear(&mut self);
}

/// Buffers kept between searches, at most [`KEPT_SETS`] of at most [`KEPT_BYTES`] each: a
/// buffer a larger query grew is freed, so one huge query does not hold its memory for
/// the life of the process. What stays is what the largest ordinary query grew them to
/// (docs/benchmarks.md, "Fewer fresh pages a query").
struct Kept<T>(Mutex<Vec<T>>);

/// Buffers kept of each kind: two searches at once find theirs kept (the machine this is
/// measured on has two cores); more allocate fresh ones.
const KEPT_SETS: usize = 2;

/// The largest buffer kept. At 220 MB of manuals the 80 speed queries' grouped postings
/// take up to 20 MB, and the collected ones as much again and up to twice as much
/// capacity (a list doubles as it grows): 32 MB kept the lists of only the ordinary
/// queries, and each larger one then left the next without lists.
const KEPT_BYTES: usize = 64 << 20;

/// The posting lists of [`index_hits`].
static KEPT_LISTS: Kept<PostingLists> = Kept(Mutex::new(Vec::new()));

/// The index's hits (tens of thousands of sections for a common query at 200 MB of
/// manuals), given back by the search when it has answered ([`keep_hits`]).
static KEPT_HITS: Kept<Vec<(NodeKey, NodeHits)>> = Kept(Mutex::new(Vec::new()));

impl<T: Reused> Kept<T> {
    /// A kept buffer, or a new one.
    fn take(&self) -> T {
        self.sets().pop().unwrap_or_default()
    }

    /// Keeps `buffer` emptied for the next search, unless it holds no memory, too much,
    /// or enough are kept.
    fn keep(&self, mut buffer: T) {
        let bytes = buffer.bytes();
        if bytes == 0 || bytes > KEPT_BYTES {
            return;
        }
        buffer.clear();
        let mut sets = self.sets();
        if sets.len() < KEPT_SETS {
            sets.push(buffer);
        }
    }

    fn sets(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        // Buffers are emptied before they are kept: a panic elsewhere leaves none
        // half-filled.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Keeps the index's hits `hits` (those [`index_hits`] gave, in whatever list they ended
/// up) for the next search's.
pub(super) fn keep_hits(hits: Vec<(NodeKey, NodeHits)>) {
    KEPT_HITS.keep(hits);
}

impl Reused for FxHashSet<NodeKey> {
    fn bytes(&self) -> usize {
        // A key and a control byte a place.
        self.capacity() * (std::mem::size_of::<NodeKey>() + 1)
    }

    fn clear(&mut self) {
        FxHashSet::clear(self);
    }
}

/// Sets of sections a search keeps (every section the index found: tens of thousands
/// for a common query at 200 MB of manuals), given back by [`keep_section_set`].
static KEPT_SECTION_SETS: Kept<FxHashSet<NodeKey>> = Kept(Mutex::new(Vec::new()));

/// An empty set of sections, with the memory of a set a search before gave back.
pub(super) fn section_set() -> FxHashSet<NodeKey> {
    KEPT_SECTION_SETS.take()
}

/// Keeps `set` for a search after.
pub(super) fn keep_section_set(set: FxHashSet<NodeKey>) {
    KEPT_SECTION_SETS.keep(set);
}

impl SortedHits {
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

fn clamp(count: u32) -> u16 {
    count.min(u32::from(u16::MAX)) as u16
}

/// A section of the scope that links point at with text holding a pattern.
struct LinkHits {
    key: NodeKey,
    normalized: PatternSet,
    loose: PatternSet,
}

/// The sections of the scope that links point at with text holding a pattern (only the
/// link texts the label postings admit are matched), sorted by key. A section two link
/// ids name keeps the last one's sets, as setting them in turn would.
fn link_texts(corpus: &Corpus, plan: &Plan, filter: &ScopeFilter) -> Vec<LinkHits> {
    let labels = corpus.labels();
    let mut found = Vec::new();
    for id in labels.links.candidates(plan) {
        let key = labels.link_keys[id as usize];
        if !filter.contains(key) {
            continue;
        }
        let Some(label) = corpus.references.link_text(key) else {
            continue;
        };
        let normalized = plan.set_normalized(label.text());
        let loose = plan.set_loose(label.loose());
        if normalized.is_empty() && loose.is_empty() {
            continue;
        }
        found.push(LinkHits {
            key,
            normalized,
            loose,
        });
    }
    found.sort_by_key(|link| link.key);
    found.dedup_by(|later, earlier| {
        let same = later.key == earlier.key;
        if same {
            std::mem::swap(later, earlier);
        }
        same
    });
    found
}

/// Sets the link texts' matches on the sections' hits (new hits for sections without).
fn add_link_texts(links: Vec<LinkHits>, hits: &mut SortedHits) {
    let mut fresh = Vec::new();
    for link in links {
        match hits.get_mut(link.key) {
            Some(node) => node.set_links(link.normalized, link.loose),
            None => {
                let mut node = NodeHits::default();
                node.set_links(link.normalized, link.loose);
                fresh.push((link.key, node));
            }
        }
    }
    hits.add(SortedHits(fresh));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::corpus::CorpusCache;
    use crate::manual::find::testing;

    fn posting(pattern: u32) -> Posting {
        Posting {
            pattern,
            form: Form::Word,
            weak: false,
            count: pattern + 1,
        }
    }

    fn order(postings: &[(NodeKey, Posting)]) -> Vec<(NodeKey, u32)> {
        postings.iter().map(|(key, p)| (*key, p.pattern)).collect()
    }

    /// `collected` grouped by [`PostingLists::group`] in lists that held another
    /// search's postings.
    fn group_anew(
        labels: &CorpusLabels,
        collected: &[(NodeKey, Posting)],
    ) -> Vec<(NodeKey, Posting)> {
        let stale = (NodeKey { file: 9, node: 9 }, posting(9));
        let mut lists = PostingLists {
            collected: vec![stale; 7],
            grouped: vec![stale; 3],
            starts: vec![5; 2],
        };
        lists.clear();
        lists.collected.extend_from_slice(collected);
        lists.group(labels);
        lists.grouped
    }

    /// Grouping by section number gives what a stable sort by key gives, and a key past
    /// its file's outline (numbered like another file's section) falls back to the sort.
    #[test]
    fn postings_are_grouped_by_section_in_key_order_keeping_their_order() {
        let (_dir, index) = testing::index(&[
            ("m/a.md", "# A\n\n## A1\n\n## A2\n"),
            ("m/b.md", "# B\n\n## B1\n"),
        ]);
        let corpus = CorpusCache::default().sync(&index);
        let labels = corpus.labels();
        let at = |file, node| NodeKey { file, node };
        let postings = vec![
            (at(1, 1), posting(0)),
            (at(0, 2), posting(0)),
            (at(1, 1), posting(1)),
            (at(0, 0), posting(2)),
            (at(0, 2), posting(3)),
            (at(1, 0), posting(3)),
        ];
        let mut sorted = postings.clone();
        sorted.sort_by_key(|(key, _)| *key);
        let grouped = group_anew(labels, &postings);
        assert_eq!(order(&grouped), order(&sorted));
        assert_eq!(
            order(&grouped)[1..3],
            [(at(0, 2), 0), (at(0, 2), 3)],
            "a section's postings keep their order"
        );
        assert_eq!(corpus.files[0].outline.node_count(), 3);
        let mut stray = postings;
        stray.push((at(0, 3), posting(4)));
        let mut sorted = stray.clone();
        sorted.sort_by_key(|(key, _)| *key);
        assert_eq!(order(&group_anew(labels, &stray)), order(&sorted));
    }

    /// Kept lists come back emptied with their memory, each set once; a set over the
    /// bound, and sets beyond those kept, are freed.
    #[test]
    fn posting_lists_are_kept_emptied_within_bounds() {
        let kept = Kept::<PostingLists>(Mutex::new(Vec::new()));
        let filled = |entries: usize| {
            let mut lists = PostingLists {
                collected: Vec::with_capacity(entries),
                ..PostingLists::default()
            };
            lists
                .collected
                .push((NodeKey { file: 0, node: 0 }, posting(0)));
            lists
        };
        kept.keep(filled(1000));
        let again = kept.take();
        assert!(again.collected.is_empty());
        assert!(again.collected.capacity() >= 1000);
        assert_eq!(kept.take().collected.capacity(), 0, "a set is taken once");
        let over = KEPT_BYTES / std::mem::size_of::<(NodeKey, Posting)>() + 1;
        kept.keep(filled(over));
        assert_eq!(kept.take().collected.capacity(), 0, "too large to keep");
        kept.keep(PostingLists::default());
        assert!(kept.sets().is_empty(), "no memory to keep");
        for _ in 0..=KEPT_SETS {
            kept.keep(filled(10));
        }
        assert_eq!(kept.sets().len(), KEPT_SETS);
    }

    /// Weak units' postings, grouped after the strong ones, add to the sections the
    /// strong ones bring (hits and units alone alike), give a brought section its hits,
    /// and are dropped elsewhere; only sections with strong postings are asked whether
    /// they need hits.
    #[test]
    fn weak_postings_add_to_sections_something_else_brought() {
        let (_dir, index) = testing::index(&[
            ("m/a.md", "# A\n\n## A1\n\n## A2\n"),
            ("m/b.md", "# B\n\n## B1\n"),
        ]);
        let corpus = CorpusCache::default().sync(&index);
        let at = |file, node| NodeKey { file, node };
        let weak = |pattern| Posting {
            weak: true,
            form: Form::Loose,
            ..posting(pattern)
        };
        let strong = [
            (at(0, 0), posting(0)),
            (at(0, 1), posting(2)),
            (at(1, 1), posting(2)),
        ];
        let weak = [
            (at(1, 1), weak(3)),
            (at(0, 0), weak(3)),
            (at(0, 1), weak(3)),
            (at(0, 2), weak(3)),
            (at(1, 0), weak(4)),
        ];
        let brought: FxHashSet<NodeKey> = [at(1, 0), at(1, 2)].into_iter().collect();
        let grouped = group_anew(corpus.labels(), &[&strong[..], &weak[..]].concat());
        let mut asked = Vec::new();
        let (hits, unit_only) = by_section(&grouped, &brought, |key, run| {
            asked.push((key, run.len()));
            key == at(0, 0)
        });
        assert_eq!(asked, [(at(0, 0), 2), (at(0, 1), 2), (at(1, 1), 2)]);
        let found: Vec<_> = hits
            .0
            .iter()
            .map(|(key, node)| (*key, node.counts.clone(), node.loose_counts.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (at(0, 0), vec![(0, 1)], vec![(3, 4)]),
                (at(1, 0), vec![], vec![(4, 5)]),
            ]
        );
        assert!(hits.0[0].1.body.contains(0) && hits.0[0].1.body_loose.contains(3));
        assert_eq!(unit_only.keys(), [at(0, 1), at(1, 1)]);
        let patterns: Vec<(u32, bool)> = unit_only
            .postings
            .iter()
            .map(|p| (p.pattern, p.weak))
            .collect();
        assert_eq!(patterns, [(2, false), (3, true), (2, false), (3, true)]);
        assert_eq!(unit_only.ends, [2, 4]);
    }
}
