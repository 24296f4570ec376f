//! Ranking of the sections Stages 0 and 1 matched.
//!
//! A section's relevance is the share of the query's content terms it covers, each term
//! weighted by its rarity (idf over sections) and credited by the best place and way it
//! matched:
//!
//! | where | weight |  | how | strength |
//! |---|---|---|---|---|
//! | own heading | 1.00 | | normalised | 1.00 |
//! | text of links to it | 0.95 | | loose | 0.90 |
//! | page title / path words (first section of the page) | 0.85 | | synonym variant | 0.75 |
//! | own body (more with repeats) | 0.55..0.70 | | pieces (mean share per group) | 0.70 × share |
//! | an ancestor's heading | 0.35 | | | |
//! | page title / path words (other sections) | 0.30 | | | |
//!
//! Bonuses then reward the whole query as one phrase (equal to the heading or a link text,
//! contained in them, or in the body) and strict terms found as written. Ranking on the
//! section's own text and own heading, not its descendants', puts the most specific
//! section first: a query matching a sub-heading ranks that sub-section, while its parent
//! is credited only through the weaker ancestor row.

use rustc_hash::FxHashMap;

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::plan::{PatternSet, Plan};
use super::scan::{NodeHits, PageHits, ScanResult};
use super::Signals;

const TITLE_WEIGHT: f32 = 1.0;
const LINK_WEIGHT: f32 = 0.95;
const PAGE_TOP_WEIGHT: f32 = 0.85;
const BODY_WEIGHT: f32 = 0.55;
const BODY_REPEAT_WEIGHT: f32 = 0.15;
const ANCESTOR_WEIGHT: f32 = 0.35;
const PAGE_OTHER_WEIGHT: f32 = 0.30;

const EXACT: f32 = 1.0;
const LOOSE: f32 = 0.9;
const SYNONYM: f32 = 0.75;
const PIECES: f32 = 0.7;

const PHRASE_EQUALS_LABEL: f32 = 0.6;
const PHRASE_IN_LABEL: f32 = 0.3;
const PHRASE_IN_BODY: f32 = 0.15;
const STRICT_BONUS: f32 = 0.4;

/// How a term matched, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Way {
    #[default]
    None,
    Pieces,
    Synonym,
    Loose,
    Exact,
}

/// A ranked section.
#[derive(Debug, Clone)]
pub(crate) struct Scored {
    pub key: NodeKey,
    pub score: f32,
    /// Weighted share of the query's terms covered, 0..1.
    pub relevance: f32,
    pub signals: Signals,
    /// Best way each content term matched here.
    pub ways: Vec<Way>,
}

impl Scored {
    /// The section's evidence, without its ways.
    pub(crate) fn evidence(&self) -> Evidence {
        Evidence {
            score: self.score,
            relevance: self.relevance,
            signals: self.signals,
        }
    }
}

/// How many sections of a scan hold each content term: the document frequency of the
/// terms' weights ([`TermDf::weights`]). A search keeps it beside its hits and updates it for the few hundred
/// sections each verification round replaces, instead of counting the terms in tens of
/// thousands of sections again every round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TermDf(Vec<usize>);

impl TermDf {
    pub(crate) fn of(plan: &Plan, scan: &ScanResult) -> TermDf {
        let mut df = TermDf(vec![0; plan.terms.len()]);
        for (_, hits) in &scan.hits {
            df.add(plan, hits);
        }
        df
    }

    /// Counts the terms `hits` hold.
    pub(crate) fn add(&mut self, plan: &Plan, hits: &NodeHits) {
        for (term, count) in plan.terms.iter().zip(self.0.iter_mut()) {
            *count += usize::from(hits.holds(term.exact));
        }
    }

    /// Takes back what [`TermDf::add`] counted for `hits`.
    pub(crate) fn remove(&mut self, plan: &Plan, hits: &NodeHits) {
        for (term, count) in plan.terms.iter().zip(self.0.iter_mut()) {
            *count -= usize::from(hits.holds(term.exact));
        }
    }

    /// Adds the counts of other sections.
    pub(crate) fn merge(&mut self, other: &TermDf) {
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine += theirs;
        }
    }

    /// Weight of each content term: its idf over the sections of the corpus (a term found
    /// nowhere weighs most: it is what the reader asked and what is hardest to find).
    pub(crate) fn weights(&self, node_count: usize) -> Vec<f32> {
        self.0
            .iter()
            .map(|&df| (1.0 + node_count as f32 / (1.0 + df as f32)).ln())
            .collect()
    }
}

/// Scores every section with evidence of a term that `keep` accepts, best first (a
/// section that only holds units is ranked by `relevance`). `weights` are the terms'
/// [`TermDf::weights`] over every section of `scan`, kept or not.
pub(crate) fn score_all(
    plan: &Plan,
    corpus: &Corpus,
    scan: &ScanResult,
    weights: &[f32],
    keep: &dyn Fn(NodeKey, &NodeHits) -> bool,
    titles: &mut TitleSets,
) -> Vec<Scored> {
    let mut scored = Vec::new();
    score_each(
        plan,
        corpus,
        scan,
        weights,
        keep,
        titles,
        |key, evidence, ways| {
            scored.push(Scored {
                key,
                score: evidence.score,
                relevance: evidence.relevance,
                signals: evidence.signals,
                ways: ways.to_vec(),
            });
        },
    );
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    scored
}

/// A section's evidence: a [`Scored`] without the ways its terms matched, which
/// [`score_each`] hands over in a buffer it reuses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence {
    pub score: f32,
    pub relevance: f32,
    pub signals: Signals,
}

/// Scores the sections [`score_all`] scores, in key order, handing each one's evidence
/// and ways to `visit` without keeping them: the one ranking of a search scores tens of
/// thousands of sections at 200 MB of manuals and needs only their scores and
/// candidacy, and a `Scored` (with its heap `ways`) for each, sorted, was a visible
/// share of a warm search.
pub(crate) fn score_each(
    plan: &Plan,
    corpus: &Corpus,
    scan: &ScanResult,
    weights: &[f32],
    keep: &dyn Fn(NodeKey, &NodeHits) -> bool,
    titles: &mut TitleSets,
    mut visit: impl FnMut(NodeKey, Evidence, &[Way]),
) {
    let no_page = PageHits::default();
    let empty = NodeHits::default();
    let mut pages = PageCursor::new(scan);
    let mut links = LinkCursor::new(corpus);
    let mut above = Vec::new();
    let mut ways = Vec::with_capacity(plan.terms.len());
    for (key, hits) in sections_to_score(plan.first_unit_pattern, scan, keep, &empty) {
        if corpus.files[key.file as usize].outline.node_count() <= key.node as usize {
            continue;
        }
        let page = pages.of(key.file).unwrap_or(&no_page);
        titles.ancestors_into(plan, corpus, key, &mut above);
        let node = Node {
            key,
            hits,
            page,
            title_is_phrase: titles.phrase.equals(plan, corpus, key),
            link_is_phrase: links
                .of(key)
                .is_some_and(|link| titles.phrase.link_equals(plan, corpus, key, link)),
        };
        let evidence = score_node(plan, weights, &node, &above, titles, &mut ways);
        visit(key, evidence, &ways);
    }
}

/// The sections `score_all` scores, in key order: those `keep` accepts with evidence of
/// a term (a pattern below `terms`), and the first section of every page whose title or
/// path words matched (with its hits, or `empty`). One walk over the hits beside the few
/// pages, so no section's hits are searched for; given as it walks, not gathered in a
/// list first (tens of thousands of sections at 200 MB of manuals, several times a
/// search).
fn sections_to_score<'a>(
    terms: usize,
    scan: &'a ScanResult,
    keep: &'a dyn Fn(NodeKey, &NodeHits) -> bool,
    empty: &'a NodeHits,
) -> impl Iterator<Item = (NodeKey, &'a NodeHits)> + 'a {
    let mut page_keys: Vec<NodeKey> = scan
        .pages
        .keys()
        .map(|&file| NodeKey { file, node: 0 })
        .collect();
    page_keys.sort_unstable();
    let mut page_keys = page_keys.into_iter().peekable();
    let mut hits = scan.hits.iter().peekable();
    std::iter::from_fn(move || loop {
        let Some(&&(key, ref node)) = hits.peek() else {
            let page = page_keys.next()?;
            if keep(page, empty) {
                return Some((page, empty));
            }
            continue;
        };
        if let Some(page) = page_keys.next_if(|page| *page < key) {
            if keep(page, empty) {
                return Some((page, empty));
            }
            continue;
        }
        let page = page_keys.next_if_eq(&key).is_some();
        hits.next();
        if keep(key, node) && (page || node.sets().into_iter().any(|set| set.any_below(terms))) {
            return Some((key, node));
        }
    })
}

/// The page hits of files asked in ascending order.
struct PageCursor<'a> {
    pages: std::iter::Peekable<std::vec::IntoIter<(u32, &'a PageHits)>>,
}

impl<'a> PageCursor<'a> {
    fn new(scan: &'a ScanResult) -> Self {
        let mut pages: Vec<(u32, &PageHits)> = scan.pages.iter().map(|(&f, p)| (f, p)).collect();
        pages.sort_unstable_by_key(|(file, _)| *file);
        PageCursor {
            pages: pages.into_iter().peekable(),
        }
    }

    /// The page hits of `file`, no smaller than the file asked before.
    fn of(&mut self, file: u32) -> Option<&'a PageHits> {
        while self.pages.next_if(|(page, _)| *page < file).is_some() {}
        self.pages
            .peek()
            .filter(|(page, _)| *page == file)
            .map(|(_, hits)| *hits)
    }
}

/// Whether sections asked in ascending order are the target of link texts (the corpus's
/// link keys, sorted), and which link label theirs is.
struct LinkCursor<'a> {
    keys: std::iter::Peekable<std::iter::Enumerate<std::slice::Iter<'a, NodeKey>>>,
}

impl<'a> LinkCursor<'a> {
    fn new(corpus: &'a Corpus) -> Self {
        LinkCursor {
            keys: corpus.labels().link_keys.iter().enumerate().peekable(),
        }
    }

    /// The link label of `key` (its index in the link keys), no smaller than the key
    /// asked before, if links point at it.
    fn of(&mut self, key: NodeKey) -> Option<usize> {
        while self.keys.next_if(|(_, next)| **next < key).is_some() {}
        self.keys
            .peek()
            .filter(|(_, next)| **next == key)
            .map(|(link, _)| *link)
    }
}

/// A section being scored and its matches.
struct Node<'a> {
    key: NodeKey,
    hits: &'a NodeHits,
    page: &'a PageHits,
    /// Whether its own heading equals the query's phrase.
    title_is_phrase: bool,
    /// Whether the text of a link pointing at it equals the query's phrase.
    link_is_phrase: bool,
}

/// Whether sections' own headings equal the query's phrase (the phrase bonus), decided
/// once a search per distinct heading text: equal headings share a number in the
/// labels' column, which the scoring reads in key order, while loading every section's
/// heading from its file's outline was a cache miss a section (a third of
/// `score_node`'s own time at 200 MB of manuals). A heading's loose form is made from
/// its text, so one answer serves every heading of that text. The same holds of the
/// texts of links pointing at a section (equal texts share a number in the link labels'
/// column): looking each linked section's text up in the reference graph's map was a
/// cache miss a section too.
#[derive(Default)]
struct PhraseTitles {
    /// By title number: whether it equals the phrase, once compared.
    known: Vec<Option<bool>>,
    /// By link text number: whether a line of it equals the phrase, once compared.
    links: Vec<Option<bool>>,
}

impl PhraseTitles {
    /// Whether the heading of section `key` (one of its file's outline) equals the phrase.
    fn equals(&mut self, plan: &Plan, corpus: &Corpus, key: NodeKey) -> bool {
        let id = corpus.labels().title_id(key);
        once(&mut self.known, id, || {
            let title = &corpus.files[key.file as usize].outline.labels[key.node as usize].title;
            equals_phrase(plan, title.text(), title.loose())
        })
    }

    /// Whether a line of the link text of section `key` (link label `link` of the
    /// corpus's labels) equals the phrase.
    fn link_equals(&mut self, plan: &Plan, corpus: &Corpus, key: NodeKey, link: usize) -> bool {
        let id = corpus.labels().link_text_id(link);
        once(&mut self.links, id, || {
            corpus.references.link_text(key).is_some_and(|links| {
                links
                    .text()
                    .lines()
                    .zip(links.loose().lines())
                    .any(|(text, loose)| equals_phrase(plan, text, loose))
            })
        })
    }
}

/// The answer of label text `id` in `known`, from `compare` the first time it is asked.
fn once(known: &mut Vec<Option<bool>>, id: u32, compare: impl FnOnce() -> bool) -> bool {
    let id = id as usize;
    if known.len() <= id {
        known.resize(id + 1, None);
    }
    *known[id].get_or_insert_with(compare)
}

/// Whether a label (its text and loose form) is the query's phrase, as written or
/// loosely.
fn equals_phrase(plan: &Plan, text: &str, loose: &str) -> bool {
    text == plan.query.phrase || (!loose.is_empty() && loose == plan.phrase_loose)
}

/// The evidence of `node`, and the best way each term matched into `ways` (emptied
/// first); `ancestors` are the ids of the matching headings above it in `titles`.
fn score_node(
    plan: &Plan,
    weights: &[f32],
    node: &Node,
    ancestors: &[u32],
    titles: &TitleSets,
    ways: &mut Vec<Way>,
) -> Evidence {
    let Node {
        key,
        hits,
        page,
        title_is_phrase,
        link_is_phrase,
    } = *node;
    let top_of_page = key.node == 0;
    let page_weight = if top_of_page {
        PAGE_TOP_WEIGHT
    } else {
        PAGE_OTHER_WEIGHT
    };
    let mut signals = Signals::default();
    ways.clear();
    let mut covered = 0.0;
    for (index, weight) in weights.iter().enumerate() {
        let term = index;
        let repeats = f32::from(hits.count(plan.terms[term].exact).saturating_sub(1).min(3));
        let body_weight = BODY_WEIGHT + BODY_REPEAT_WEIGHT * repeats / 3.0;
        let mut best = (0.0f32, Way::None, Field::Body);
        let mut consider =
            |field: Field, field_weight: f32, normal: &PatternSet, loose: &PatternSet| {
                // A field without matches credits nothing (most sections' title, links
                // and page hold none): its strength would be 0, `Way::None`.
                if normal.is_empty() && loose.is_empty() {
                    return;
                }
                let (strength, way) = strength(plan, term, normal, loose);
                if strength * field_weight > best.0 {
                    best = (strength * field_weight, way, field);
                }
                if way == Way::Synonym {
                    signals.insert(Signals::SYNONYM);
                }
            };
        consider(Field::Title, TITLE_WEIGHT, hits.title(), hits.title_loose());
        consider(Field::Links, LINK_WEIGHT, hits.links(), hits.links_loose());
        consider(Field::Page, page_weight, &page.normalized, &page.loose);
        consider(Field::Body, body_weight, &hits.body, &hits.body_loose);
        for &id in ancestors {
            let (normal, loose) = titles.sets(id);
            consider(Field::Ancestor, ANCESTOR_WEIGHT, normal, loose);
        }
        let (credit, way, field) = best;
        covered += weight * credit;
        ways.push(way);
        signals.insert(match (field, way) {
            (_, Way::None) => Signals::default(),
            (_, Way::Pieces) => Signals::LOOSE,
            (Field::Links, _) => Signals::LINK_TEXT,
            (Field::Title | Field::Page | Field::Ancestor, _) => Signals::HEADING,
            (Field::Body, Way::Loose) => Signals::LOOSE,
            (Field::Body, _) => Signals::NORMALIZED,
        });
    }
    let total: f32 = weights.iter().sum();
    let relevance = if total > 0.0 { covered / total } else { 0.0 };
    let bonus = phrase_bonus(plan, title_is_phrase, link_is_phrase, hits, &mut signals)
        + strict_bonus(plan, hits, page, &mut signals);
    Evidence {
        score: relevance + bonus,
        relevance,
        signals,
    }
}

#[derive(Clone, Copy)]
enum Field {
    Title,
    Links,
    Page,
    Body,
    Ancestor,
}

/// Strength with which term `term` matched in a field, and how.
fn strength(plan: &Plan, term: usize, normal: &PatternSet, loose: &PatternSet) -> (f32, Way) {
    let patterns = &plan.terms[term];
    if normal.contains(patterns.exact) {
        return (EXACT, Way::Exact);
    }
    if loose.contains(patterns.exact) {
        return (LOOSE, Way::Loose);
    }
    if patterns
        .synonyms
        .iter()
        .any(|&p| normal.contains(p) || loose.contains(p))
    {
        return (SYNONYM, Way::Synonym);
    }
    let shares: f32 = patterns
        .pieces
        .iter()
        .map(|group| {
            let found = group.iter().filter(|&&p| normal.contains(p)).count();
            found as f32 / group.len() as f32
        })
        .sum();
    if shares == 0.0 {
        return (0.0, Way::None);
    }
    (PIECES * shares / patterns.pieces.len() as f32, Way::Pieces)
}

/// The whole query as one phrase: equal to the heading (`title_is_phrase`) or a link
/// text (`link_is_phrase`), or inside them, or inside the body; a synonym variant of the
/// phrase inside them counts three quarters.
fn phrase_bonus(
    plan: &Plan,
    title_is_phrase: bool,
    link_is_phrase: bool,
    hits: &NodeHits,
    signals: &mut Signals,
) -> f32 {
    let mut bonus = 0.0f32;
    if title_is_phrase {
        bonus = bonus.max(PHRASE_EQUALS_LABEL);
        signals.insert(Signals::HEADING);
    }
    if link_is_phrase {
        bonus = bonus.max(PHRASE_EQUALS_LABEL);
        signals.insert(Signals::LINK_TEXT);
    }
    let variants = plan.phrase.iter().map(|&p| (p, 1.0));
    let synonyms = plan.phrase_synonyms.iter().map(|&p| (p, SYNONYM));
    for (pattern, strength) in variants.chain(synonyms) {
        let in_set = |normal: &PatternSet, loose: &PatternSet| {
            normal.contains(pattern) || loose.contains(pattern)
        };
        if in_set(hits.title(), hits.title_loose()) || in_set(hits.links(), hits.links_loose()) {
            bonus = bonus.max(PHRASE_IN_LABEL * strength);
        } else if in_set(&hits.body, &hits.body_loose) {
            bonus = bonus.max(PHRASE_IN_BODY * strength);
        }
    }
    bonus
}

/// Strict terms all present as written (normalised, not loose) in the section.
fn strict_bonus(plan: &Plan, hits: &NodeHits, page: &PageHits, signals: &mut Signals) -> f32 {
    if plan.strict.is_empty() {
        return 0.0;
    }
    let present = [&hits.body, hits.title(), hits.links(), &page.normalized];
    if plan
        .strict
        .iter()
        .all(|&p| present.iter().any(|set| set.contains(p)))
    {
        signals.insert(Signals::STRICT);
        STRICT_BONUS
    } else {
        0.0
    }
}

/// The plan's matches in section titles, computed once per distinct title and search:
/// the section index's hits, the evidence score and the units' BM25 of every round read
/// the same titles, and titles repeat across sections ("概要", "手順", the same
/// sub-headings under every chapter). Titles are known by their id in the corpus's label
/// postings (`labels`), and only those the postings admit for the plan are matched; the
/// others hold no pattern.
#[derive(Default)]
pub(crate) struct TitleSets {
    /// The titles that may hold a pattern of the plan, one bit a title id (at first
    /// use): every section a search ranks asks this of its title and its ancestors'
    /// in key order, and a binary search of the ids (thousands for a common term) was
    /// a cache miss a probe, over half of `match_title`'s time at 200 MB of manuals.
    admitted: Option<TitleBits>,
    memo: FxHashMap<u32, (PatternSet, PatternSet)>,
    /// Which titles equal the query's phrase: kept for every scoring of the search (the
    /// list has a place for every title of the corpus, fresh pages each time it was
    /// made anew).
    phrase: PhraseTitles,
}

/// A set of title ids as one bit each, up to the largest id it holds.
struct TitleBits(Vec<u64>);

impl TitleBits {
    fn of(ids: &[u32]) -> TitleBits {
        let words = ids.last().map_or(0, |&last| last as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for &id in ids {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        TitleBits(bits)
    }

    fn contains(&self, id: u32) -> bool {
        self.0
            .get(id as usize / 64)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }
}

/// The sets of a title that holds no pattern.
static NO_SETS: (PatternSet, PatternSet) = (PatternSet::EMPTY, PatternSet::EMPTY);

impl TitleSets {
    /// The (normalised, loose) pattern sets of the title of section `key`.
    pub(crate) fn of_title(
        &mut self,
        plan: &Plan,
        corpus: &Corpus,
        key: NodeKey,
    ) -> &(PatternSet, PatternSet) {
        let id = self.match_title(plan, corpus, key);
        id.map_or(&NO_SETS, |id| &self.memo[&id])
    }

    /// Matches the title of `key` unless known; its id when it may hold a pattern.
    fn match_title(&mut self, plan: &Plan, corpus: &Corpus, key: NodeKey) -> Option<u32> {
        let labels = corpus.labels();
        let id = labels.title_id(key);
        let admitted = self
            .admitted
            .get_or_insert_with(|| TitleBits::of(&labels.titles.candidate_texts(plan)));
        if !admitted.contains(id) {
            return None;
        }
        self.memo.entry(id).or_insert_with(|| {
            let title = &corpus.files[key.file as usize].outline.labels[key.node as usize].title;
            (
                plan.set_normalized(title.text()),
                plan.set_loose(title.loose()),
            )
        });
        Some(id)
    }

    /// The ids of the headings above `key` that match any pattern, into `ids` (cleared
    /// first): a buffer the caller reuses, since every section of a search asks this, and
    /// the sets themselves are read with [`TitleSets::sets`].
    pub(crate) fn ancestors_into(
        &mut self,
        plan: &Plan,
        corpus: &Corpus,
        key: NodeKey,
        ids: &mut Vec<u32>,
    ) {
        ids.clear();
        // The parents come from the labels' column by section number, not from each
        // file's outline: every section of a search asks this, in key order, and reading
        // each one's outline entry was most of the walk's time (a cache miss each).
        let labels = corpus.labels();
        let mut parent = labels.parent(key);
        while let Some(node) = parent {
            let above = NodeKey {
                file: key.file,
                node,
            };
            if let Some(id) = self.match_title(plan, corpus, above) {
                let (normal, loose) = &self.memo[&id];
                if !normal.is_empty() || !loose.is_empty() {
                    ids.push(id);
                }
            }
            parent = labels.parent(above);
        }
    }

    /// The (normalised, loose) pattern sets of a title [`TitleSets::ancestors_into`] named.
    pub(crate) fn sets(&self, id: u32) -> &(PatternSet, PatternSet) {
        &self.memo[&id]
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::manual::find::corpus::CorpusCache;
    use crate::manual::find::scan::scan;
    use crate::manual::find::testing::{self, index, key};

    const FILES: &[(&str, &str)] = &[
        (
            "m/a.md",
            "# 経費\n\n経費の話。\n\n## 出張旅費\n\n出張の旅費は精算する。\n\n## 会議\n\n[出張と旅費の規則](#出張旅費)を見る。\n",
        ),
        ("m/b.md", "# 旅行\n\nその他。\n"),
    ];

    fn ranked(
        query: &str,
    ) -> (
        Vec<(NodeKey, Scored)>,
        std::sync::Arc<Corpus>,
        tempfile::TempDir,
        crate::manual::ManualIndex,
    ) {
        let (dir, index) = index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let plan = testing::plan(query);
        let scope = testing::every_file(&corpus);
        let result = scan(
            &corpus,
            &crate::manual::find::testing::sources(&index),
            &plan,
            &scope,
            Instant::now() + Duration::from_secs(60),
            &crate::call::CallContext::local(),
        );
        let weights = TermDf::of(&plan, &result).weights(corpus.node_count);
        let scored = score_all(
            &plan,
            &corpus,
            &result,
            &weights,
            &|_, _| true,
            &mut TitleSets::default(),
        )
        .into_iter()
        .map(|s| (s.key, s))
        .collect();
        (scored, corpus, dir, index)
    }

    /// A heading equals the phrase as written or loosely; every heading of one text
    /// answers alike whichever of its sections asks first, as comparing each section's
    /// own heading does.
    #[test]
    fn headings_equal_to_the_phrase_are_known_by_their_text() {
        let (_dir, index) = index(&[
            ("m/a.md", "# 出張旅費\n\n本文。\n\n## 会議\n\n本文。\n"),
            (
                "m/b.md",
                "# 手順\n\n## 出張旅費\n\n本文。\n\n## 出張・旅費\n\n本文。\n\n## 会議\n\n本文。\n",
            ),
        ]);
        let corpus = CorpusCache::default().sync(&index);
        let keys: Vec<NodeKey> = (0..corpus.files.len() as u32)
            .flat_map(|file| {
                let nodes = corpus.files[file as usize].outline.node_count() as u32;
                (0..nodes).map(move |node| NodeKey { file, node })
            })
            .collect();
        // The headings: 出張旅費, 会議; 手順, 出張旅費, 出張・旅費 (loosely equal), 会議.
        let phrase = [true, false, false, true, true, false];
        let meeting = [false, true, false, false, false, true];
        for (query, expected) in [
            ("出張旅費", phrase),
            ("出張 旅費", phrase),
            ("会議", meeting),
        ] {
            let plan = testing::plan(query);
            let direct: Vec<bool> = keys
                .iter()
                .map(|key| {
                    let title =
                        &corpus.files[key.file as usize].outline.labels[key.node as usize].title;
                    equals_phrase(&plan, title.text(), title.loose())
                })
                .collect();
            let mut forward = PhraseTitles::default();
            let ahead: Vec<bool> = keys
                .iter()
                .map(|key| forward.equals(&plan, &corpus, *key))
                .collect();
            let mut backward = PhraseTitles::default();
            let mut behind: Vec<bool> = keys
                .iter()
                .rev()
                .map(|key| backward.equals(&plan, &corpus, *key))
                .collect();
            behind.reverse();
            assert_eq!(ahead, direct, "{query}");
            assert_eq!(behind, direct, "{query}");
            assert_eq!(direct, expected, "{query}");
        }
    }

    /// The headings above a section are its own parents': siblings share them, a
    /// section of another file with the same parent number does not, a top section has
    /// none; asked in turn of one `TitleSets`, each as a fresh one finds them.
    #[test]
    fn ancestors_are_those_of_each_sections_own_parents() {
        let (_dir, index) = index(&[
            ("m/a.md", "# 経費\n\n## 一\n\n本文。\n\n## 二\n\n本文。\n"),
            ("m/b.md", "# 旅行\n\n## 一\n\n本文。\n\n## 二\n\n本文。\n"),
            (
                "m/c.md",
                "# 経費\n\n## 一\n\n### 旅行\n\n#### 三\n\n本文。\n",
            ),
        ]);
        let corpus = CorpusCache::default().sync(&index);
        let plan = testing::plan("経費 旅行");
        let at = |file, node| NodeKey { file, node };
        let mut titles = TitleSets::default();
        let mut ids = Vec::new();
        let mut found = Vec::new();
        for (file, node) in [
            (0, 1),
            (0, 2),
            (1, 1),
            (1, 2),
            (1, 0),
            (2, 3),
            (2, 1),
            (0, 2),
        ] {
            titles.ancestors_into(&plan, &corpus, at(file, node), &mut ids);
            let mut fresh = Vec::new();
            TitleSets::default().ancestors_into(&plan, &corpus, at(file, node), &mut fresh);
            assert_eq!(ids, fresh, "({file}, {node})");
            found.push(ids.len());
        }
        assert_eq!(found, [1, 1, 1, 1, 0, 2, 1, 1]);
        titles.ancestors_into(&plan, &corpus, at(0, 1), &mut ids);
        let first = ids.clone();
        titles.ancestors_into(&plan, &corpus, at(1, 1), &mut ids);
        assert_ne!(ids, first, "another file's parent of the same number");
    }

    /// Sections with a term's evidence and pages' first sections (with their own hits
    /// when they have some, even of units only), in key order, as `keep` allows.
    #[test]
    fn the_sections_scored_are_those_with_a_terms_evidence_and_the_pages_first() {
        let at = |file, node| NodeKey { file, node };
        let holding = |pattern: usize| {
            let mut hits = NodeHits::default();
            hits.body.insert(pattern);
            hits
        };
        // Patterns 0 and 1 are terms', 2 a unit's.
        let scan = ScanResult {
            hits: vec![
                (at(0, 1), holding(0)),
                (at(1, 0), holding(2)),
                (at(1, 3), holding(2)),
                (at(3, 2), holding(1)),
            ],
            pages: [1, 2, 4]
                .into_iter()
                .map(|file| (file, PageHits::default()))
                .collect(),
            ..ScanResult::default()
        };
        let empty = NodeHits::default();
        let sections = |keep: &dyn Fn(NodeKey, &NodeHits) -> bool| {
            sections_to_score(2, &scan, keep, &empty)
                .map(|(key, hits)| (key, hits.body.contains(2)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sections(&|_, _| true),
            [
                (at(0, 1), false),
                (at(1, 0), true),
                (at(2, 0), false),
                (at(3, 2), false),
                (at(4, 0), false),
            ]
        );
        let kept = sections(&|key, _| key != at(1, 0) && key != at(2, 0));
        assert_eq!(
            kept,
            [(at(0, 1), false), (at(3, 2), false), (at(4, 0), false)]
        );
    }

    /// The counts a search keeps up to date are the counts over the hits it holds.
    #[test]
    fn term_document_frequencies_follow_added_removed_and_merged_hits() {
        let (_dir, index) = index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let plan = testing::plan("出張 旅費");
        let result = scan(
            &corpus,
            &testing::sources(&index),
            &plan,
            &testing::every_file(&corpus),
            Instant::now() + Duration::from_secs(60),
            &crate::call::CallContext::local(),
        );
        let full = TermDf::of(&plan, &result);
        let none = TermDf::of(&plan, &ScanResult::default());
        assert_ne!(full, none, "the fixture holds the terms");
        let (first, second) = result.hits.split_at(result.hits.len() / 2);
        let part = |hits: &[(NodeKey, NodeHits)]| ScanResult {
            hits: hits.to_vec(),
            ..ScanResult::default()
        };
        let mut merged = TermDf::of(&plan, &part(first));
        merged.merge(&TermDf::of(&plan, &part(second)));
        assert_eq!(merged, full);
        let mut counted = full.clone();
        for (_, hits) in &result.hits {
            counted.remove(&plan, hits);
        }
        assert_eq!(counted, none);
        for (_, hits) in &result.hits {
            counted.add(&plan, hits);
        }
        assert_eq!(counted, full);
        assert_eq!(
            counted.weights(corpus.node_count),
            full.weights(corpus.node_count)
        );
    }

    /// The admitted titles' bits hold exactly the ids listed: each listed one, none
    /// between them, none past the last, at and around the words' edges.
    #[test]
    fn title_bits_hold_the_ids_listed() {
        for ids in [
            vec![],
            vec![0],
            vec![63],
            vec![64],
            vec![1, 62, 63, 64, 65, 127, 128, 300],
        ] {
            let bits = TitleBits::of(&ids);
            for id in 0..400 {
                assert_eq!(
                    bits.contains(id),
                    ids.binary_search(&id).is_ok(),
                    "{id} of {ids:?}"
                );
            }
            assert!(!bits.contains(u32::MAX));
        }
    }

    /// A link text equals the phrase when one of its lines does, as written or loosely;
    /// every link text of one text answers alike whichever of its sections asks first,
    /// as reading each section's link text from the reference graph does.
    #[test]
    fn link_texts_equal_to_the_phrase_are_known_by_their_text() {
        let (_dir, index) = index(&[
            (
                "m/a.md",
                "# 表紙\n\n[出張旅費](#出張旅費) と [会議](#会議)。\n\n## 出張旅費\n\n本文。\n\n## 会議\n\n本文。\n",
            ),
            (
                "m/b.md",
                "# 手順\n\n[出張・旅費](#旅) と [会議](#会)。\n\n## 旅\n\n本文。\n\n## 会\n\n本文。\n",
            ),
        ]);
        let corpus = CorpusCache::default().sync(&index);
        let links = &corpus.labels().link_keys;
        assert_eq!(links.len(), 4, "{links:?}");
        for query in ["出張旅費", "出張 旅費", "会議", "表紙"] {
            let plan = testing::plan(query);
            let direct: Vec<bool> = links
                .iter()
                .map(|key| {
                    let label = corpus.references.link_text(*key).expect("a link text");
                    label
                        .text()
                        .lines()
                        .zip(label.loose().lines())
                        .any(|(text, loose)| equals_phrase(&plan, text, loose))
                })
                .collect();
            let mut forward = PhraseTitles::default();
            let ahead: Vec<bool> = links
                .iter()
                .enumerate()
                .map(|(link, key)| forward.link_equals(&plan, &corpus, *key, link))
                .collect();
            let mut backward = PhraseTitles::default();
            let mut behind: Vec<bool> = links
                .iter()
                .enumerate()
                .rev()
                .map(|(link, key)| backward.link_equals(&plan, &corpus, *key, link))
                .collect();
            behind.reverse();
            assert_eq!(ahead, direct, "{query}");
            assert_eq!(behind, direct, "{query}");
            let equal = direct.iter().filter(|equal| **equal).count();
            let expected = match query {
                "会議" => 2,
                "表紙" => 0,
                _ => 2,
            };
            assert_eq!(equal, expected, "{query}: {direct:?}");
        }
    }

    #[test]
    fn a_heading_match_ranks_its_own_section_above_its_parent() {
        let (scored, corpus, _dir, index) = ranked("出張旅費");
        let travel = key(&corpus, &index, "m", "a.md", 5);
        let parent = key(&corpus, &index, "m", "a.md", 1);
        assert_eq!(scored[0].0, travel);
        assert!(scored[0].1.signals.contains(Signals::HEADING));
        let parent_score = scored
            .iter()
            .find(|(k, _)| *k == parent)
            .map(|(_, s)| s.score);
        assert!(parent_score.is_none_or(|score| score < scored[0].1.score / 2.0));
    }

    #[test]
    fn link_texts_count_as_evidence_for_their_target() {
        let (scored, corpus, _dir, index) = ranked("出張と旅費の規則");
        let travel = key(&corpus, &index, "m", "a.md", 5);
        assert_eq!(
            scored[0].0, travel,
            "the linked section, not the one holding the link"
        );
        assert!(scored[0].1.signals.contains(Signals::LINK_TEXT));
        assert!(scored[0].1.score > 1.0, "whole text equal: phrase bonus");
    }

    #[test]
    fn pieces_give_partial_credit_and_are_marked_loose() {
        let (scored, corpus, _dir, index) = ranked("旅費精算手続");
        let travel = key(&corpus, &index, "m", "a.md", 5);
        let (_, best) = scored.iter().find(|(k, _)| *k == travel).unwrap();
        assert_eq!(best.ways, [Way::Pieces]);
        assert!(best.signals.contains(Signals::LOOSE));
        assert!(
            best.relevance > 0.1 && best.relevance < 0.5,
            "{}",
            best.relevance
        );
    }

    #[test]
    fn page_titles_and_path_words_count_for_the_first_section() {
        let (scored, corpus, _dir, index) = ranked("旅行");
        let page = key(&corpus, &index, "m", "b.md", 1);
        assert_eq!(scored[0].0, page);
    }
}
