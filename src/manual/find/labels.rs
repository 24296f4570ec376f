//! Page titles and link texts matched through an index instead of walked.
//!
//! Every search matches the plan's literals against the page title of every file in
//! scope and the link texts of every linked section (`candidates::index_hits`). Those
//! labels grow with the corpus while a query's matches do not, so each family gets
//! postings of the characters and character bigrams of its labels' normalised and loose
//! texts, built once per corpus at its first search. A query then runs the plan's
//! automata (`Plan::set_normalized`, `Plan::set_loose`) only over the labels that hold,
//! for at least one literal, its rarest gram.
//!
//! Exact by construction: a literal occurs in a text only if each of its characters and
//! bigrams does, so every label the walk would match is a candidate (the candidates are a
//! superset, which the automata then verify). A one-character literal is looked up by its
//! character; an empty one never matches (`Literals::new`).

use rustc_hash::FxHashMap;

use super::derived::{CorpusFile, Label, NodeKey};
use super::plan::Plan;

/// The labels of a corpus a search matches, with their postings.
#[derive(Debug)]
pub(crate) struct CorpusLabels {
    /// Label `i` is the page title of file `i`.
    pub pages: LabelGrams,
    /// Label `i` is the link text of section `link_keys[i]`.
    pub links: LabelGrams,
    pub link_keys: Vec<NodeKey>,
    /// Every section's title, file after file: the title of section `node` of file `f`
    /// is label `title_starts[f] + node`.
    pub titles: LabelGrams,
    title_starts: Vec<u32>,
    /// Every section's parent node by section number ([`NO_PARENT`] for a top one): a
    /// dense column the ancestors' walk of every section a search ranks reads in key
    /// order, instead of each file's outline.
    parents: Vec<u32>,
    /// Every section's own normalised bytes by section number (0 for the sections of a
    /// file read without its text, whose outline has no lengths: they hold no unit, so
    /// no search scores them): the units' BM25 of every section a search ranks reads its
    /// length in key order, and reading each file's outline for it was two cache misses
    /// a section, most of `unit_item`'s time at 200 MB of manuals.
    own_bytes: Vec<u32>,
}

/// The parent of a section without one, in [`CorpusLabels`]' column.
const NO_PARENT: u32 = u32::MAX;

impl CorpusLabels {
    /// The labels of `files` and of the link texts `links` (a target and its text).
    pub(crate) fn new<'a>(
        files: &[CorpusFile],
        links: impl Iterator<Item = (NodeKey, &'a Label)>,
    ) -> CorpusLabels {
        let mut links: Vec<(NodeKey, &Label)> = links.collect();
        links.sort_unstable_by_key(|(key, _)| *key);
        let mut title_starts = Vec::with_capacity(files.len());
        let mut titles = Vec::new();
        let mut parents = Vec::new();
        let mut own_bytes = Vec::new();
        for file in files {
            title_starts.push(titles.len() as u32);
            titles.extend(file.outline.labels.iter().map(|node| &node.title));
            parents.extend(
                file.outline
                    .labels
                    .iter()
                    .map(|node| node.parent.unwrap_or(NO_PARENT)),
            );
            let lengths = &file.outline.stored.node_bytes;
            own_bytes.extend(
                (0..file.outline.node_count()).map(|node| lengths.get(node).copied().unwrap_or(0)),
            );
        }
        let pages: Vec<&Label> = files.iter().map(|file| &file.outline.page).collect();
        let link_texts: Vec<&Label> = links.iter().map(|(_, label)| *label).collect();
        CorpusLabels {
            pages: LabelGrams::new(&pages),
            links: LabelGrams::new(&link_texts),
            link_keys: links.into_iter().map(|(key, _)| key).collect(),
            titles: LabelGrams::new(&titles),
            title_starts,
            parents,
            own_bytes,
        }
    }

    /// These labels admitting every label to every query: the walk the postings
    /// replace, which tests compare a search's answer with.
    #[cfg(test)]
    pub(crate) fn walking(mut self) -> CorpusLabels {
        for grams in [&mut self.pages, &mut self.links, &mut self.titles] {
            grams.walk = true;
        }
        self
    }

    /// The number of the title text of section `key` (equal titles, one number), as
    /// [`LabelGrams::candidate_texts`] of `titles` gives them.
    pub(crate) fn title_id(&self, key: NodeKey) -> u32 {
        self.titles.text_of[self.section_id(key) as usize]
    }

    /// The number of the text of link label `link` (the link text of section
    /// `link_keys[link]`; equal texts, one number).
    pub(crate) fn link_text_id(&self, link: usize) -> u32 {
        self.links.text_of[link]
    }

    /// The number of section `key` among every section of the corpus, file after file:
    /// an index into arrays with one entry a section (below [`Self::section_count`]).
    pub(crate) fn section_id(&self, key: NodeKey) -> u32 {
        self.title_starts[key.file as usize] + key.node
    }

    /// The parent node of section `key`, if it has one (none for a key past its file's
    /// outline).
    pub(crate) fn parent(&self, key: NodeKey) -> Option<u32> {
        let id = self.column_index(key)?;
        Some(self.parents[id]).filter(|&node| node != NO_PARENT)
    }

    /// The bytes of section `key`'s own normalised text (its outline's `node_bytes`); 0
    /// for a key past its file's outline.
    pub(crate) fn own_bytes(&self, key: NodeKey) -> u32 {
        self.column_index(key).map_or(0, |id| self.own_bytes[id])
    }

    /// Where section `key` is in the columns by section number, unless it is past its
    /// file's outline.
    fn column_index(&self, key: NodeKey) -> Option<usize> {
        let id = self.section_id(key) as usize;
        let end = self
            .title_starts
            .get(key.file as usize + 1)
            .map_or(self.parents.len(), |&start| start as usize);
        (id < end).then_some(id)
    }

    /// How many sections the corpus holds.
    pub(crate) fn section_count(&self) -> usize {
        self.titles.text_of.len()
    }
}

/// Character and bigram postings of one family of labels, in both forms. The postings
/// are of the distinct texts: equal labels (a link text repeated on many pages, a
/// sub-heading under every chapter) are posted once.
#[derive(Debug, Default)]
pub(crate) struct LabelGrams {
    normalized: Grams,
    loose: Grams,
    /// Per label: the number of its text.
    text_of: Vec<u32>,
    /// The labels of text `t` are `members[starts[t]..starts[t + 1]]`, ascending.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// Set by [`CorpusLabels::walking`]: admit every label.
    #[cfg(test)]
    walk: bool,
}

impl LabelGrams {
    fn new(labels: &[&Label]) -> LabelGrams {
        let mut numbers: FxHashMap<&str, u32> = FxHashMap::default();
        let mut texts: Vec<&Label> = Vec::new();
        let text_of: Vec<u32> = labels
            .iter()
            .map(|label| {
                *numbers.entry(label.text()).or_insert_with(|| {
                    texts.push(label);
                    texts.len() as u32 - 1
                })
            })
            .collect();
        drop(numbers);
        let mut starts = vec![0u32; texts.len() + 1];
        for &text in &text_of {
            starts[text as usize + 1] += 1;
        }
        for at in 1..starts.len() {
            starts[at] += starts[at - 1];
        }
        let mut next = starts.clone();
        let mut members = vec![0u32; text_of.len()];
        for (label, &text) in text_of.iter().enumerate() {
            members[next[text as usize] as usize] = label as u32;
            next[text as usize] += 1;
        }
        let forms = |form: fn(&Label) -> &str| -> Vec<&str> {
            texts.iter().map(|label| form(label)).collect()
        };
        LabelGrams {
            normalized: Grams::new(&forms(|label| label.text())),
            loose: Grams::new(&forms(|label| label.loose())),
            text_of,
            starts,
            members,
            #[cfg(test)]
            walk: false,
        }
    }

    /// Numbers of the distinct texts that may hold a literal of `plan` in either form,
    /// ascending: every text whose pattern sets are not empty is among them.
    pub(crate) fn candidate_texts(&self, plan: &Plan) -> Vec<u32> {
        #[cfg(test)]
        if self.walk {
            return (0..self.starts.len() as u32 - 1).collect();
        }
        let mut texts = Vec::new();
        self.normalized
            .candidates(plan.needles_normalized(), &mut texts);
        self.loose.candidates(plan.needles_loose(), &mut texts);
        texts.sort_unstable();
        texts.dedup();
        texts
    }

    /// Ids of the labels that may hold a literal of `plan`, ascending.
    pub(crate) fn candidates(&self, plan: &Plan) -> Vec<u32> {
        let mut labels: Vec<u32> = self
            .candidate_texts(plan)
            .into_iter()
            .flat_map(|text| {
                let members = self.starts[text as usize]..self.starts[text as usize + 1];
                self.members[members.start as usize..members.end as usize]
                    .iter()
                    .copied()
            })
            .collect();
        labels.sort_unstable();
        labels
    }
}

/// Gram -> the texts holding it: `ids[span.0..span.1]`, ascending. One flat list, sized
/// exactly, so the postings cost four bytes an entry and a few a gram.
#[derive(Debug, Default)]
struct Grams {
    spans: FxHashMap<u64, (u32, u32)>,
    ids: Vec<u32>,
}

/// A character (`second` = `None`) or a bigram as one key; no character is `u32::MAX`.
fn gram(first: char, second: Option<char>) -> u64 {
    (u64::from(first) << 32) | second.map_or(u64::from(u32::MAX), u64::from)
}

/// The grams a text holding `text` must hold: its bigrams, or its one character.
fn grams_of(text: &str) -> Vec<u64> {
    let chars: Vec<char> = text.chars().collect();
    match chars.as_slice() {
        [] => Vec::new(),
        [only] => vec![gram(*only, None)],
        _ => chars
            .windows(2)
            .map(|pair| gram(pair[0], Some(pair[1])))
            .collect(),
    }
}

/// Calls `post` with every character and bigram of `text`.
fn each_gram(text: &str, mut post: impl FnMut(u64)) {
    let mut previous = None;
    for char in text.chars() {
        post(gram(char, None));
        if let Some(previous) = previous {
            post(gram(previous, Some(char)));
        }
        previous = Some(char);
    }
}

impl Grams {
    /// Two passes: count each gram's texts, then place them, so no list grows.
    fn new(texts: &[&str]) -> Grams {
        // First pass: (texts counted, last text counted + 1).
        let mut spans: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
        for (id, text) in texts.iter().enumerate() {
            let mark = id as u32 + 1;
            each_gram(text, |key| {
                let span = spans.entry(key).or_insert((0, 0));
                if span.1 != mark {
                    *span = (span.0 + 1, mark);
                }
            });
        }
        spans.shrink_to_fit();
        let mut total = 0u32;
        for span in spans.values_mut() {
            let count = span.0;
            *span = (total, total);
            total += count;
        }
        let mut ids = vec![0u32; total as usize];
        for (id, text) in texts.iter().enumerate() {
            let id = id as u32;
            each_gram(text, |key| {
                let span = spans.get_mut(&key).expect("counted in the first pass");
                if span.1 > span.0 && ids[span.1 as usize - 1] == id {
                    return;
                }
                ids[span.1 as usize] = id;
                span.1 += 1;
            });
        }
        Grams { spans, ids }
    }

    fn postings(&self, key: u64) -> Option<&[u32]> {
        let &(start, end) = self.spans.get(&key)?;
        Some(&self.ids[start as usize..end as usize])
    }

    /// Adds to `ids` the texts holding the rarest gram of each of `needles` (none for a
    /// needle with a gram no text holds).
    fn candidates(&self, needles: &[String], ids: &mut Vec<u32>) {
        for needle in needles {
            let rarest = grams_of(needle)
                .into_iter()
                .map(|key| self.postings(key))
                .try_fold(None::<&[u32]>, |rarest, found| {
                    let found = found?;
                    Some(Some(match rarest {
                        Some(known) if known.len() <= found.len() => known,
                        _ => found,
                    }))
                });
            if let Some(Some(found)) = rarest {
                ids.extend_from_slice(found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::testing;
    use crate::text::normalize::normalize_str;

    /// Raw label texts (normalised here, as `derive` does) in several scripts, widths,
    /// cases and kana forms.
    const LABELS: &[&str] = &[
        "出張旅費の精算",
        "ｼｭｯﾁｮｳ ﾘｮﾋ",
        "シュッチョウ 旅費",
        "しゅっちょう",
        "Rollback Procedure",
        "ROLLBACK",
        "roll-back within 10 minutes",
        "セキュリティ レビュー",
        "security review\nsecurity lead",
        "ＡＰＩキー",
        "api key",
        "経",
        "",
        "概要",
        "手順",
        "ウィンドウズ",
        "ウインドウズ",
        "概要",
        "出張旅費の精算",
    ];

    const QUERIES: &[&str] = &[
        "出張旅費",
        "しゅっちょう",
        "シュッチョウ",
        "rollback",
        "Roll back",
        "API",
        "ａｐｉ　ｋｅｙ",
        "security レビュー",
        "経",
        "費",
        "x",
        "概要 手順",
        "ウインドウズ",
        "旅費精算手続",
        "10",
    ];

    #[test]
    fn candidates_hold_every_label_the_walk_matches() {
        let labels: Vec<Label> = LABELS
            .iter()
            .map(|text| Label::new(normalize_str(text)))
            .collect();
        let grams = LabelGrams::new(&labels.iter().collect::<Vec<_>>());
        for query in QUERIES {
            let plan = testing::plan(query);
            let candidates = grams.candidates(&plan);
            let mut matched = 0;
            for (id, label) in labels.iter().enumerate() {
                let normalized = plan.set_normalized(label.text());
                let loose = plan.set_loose(label.loose());
                if normalized.is_empty() && loose.is_empty() {
                    continue;
                }
                matched += 1;
                assert!(
                    candidates.binary_search(&(id as u32)).is_ok(),
                    "{query:?} matches {:?} but the postings left it out",
                    label.text()
                );
            }
            assert!(candidates.len() <= labels.len(), "ids are distinct labels");
            if *query != "x" {
                assert!(
                    matched > 0,
                    "{query:?} should match some label of the table"
                );
            }
        }
    }

    /// Section numbers count every section once, file after file, in key order.
    #[test]
    fn sections_are_numbered_densely_in_key_order() {
        let (_dir, index) = testing::index(&[
            ("m/a.md", "# A\n\n## A1\n\n## A2\n"),
            ("m/b.md", "no heading\n"),
            ("n/c.md", "# C\n\n### C1\n"),
        ]);
        let corpus = crate::manual::find::corpus::CorpusCache::default().sync(&index);
        let labels = corpus.labels();
        let mut numbers = Vec::new();
        for (file, corpus_file) in corpus.files.iter().enumerate() {
            for node in 0..corpus_file.outline.node_count() as u32 {
                let key = NodeKey {
                    file: file as u32,
                    node,
                };
                numbers.push(labels.section_id(key));
            }
        }
        let expected: Vec<u32> = (0..labels.section_count() as u32).collect();
        assert_eq!(numbers, expected);
        assert!(labels.section_count() >= 5);
    }

    /// Each section's parent is its outline's, file by file; a key past its file's
    /// outline (numbered like the next file's first section) has none.
    #[test]
    fn the_parents_column_is_every_outlines_parents() {
        let (_dir, index) = testing::index(&[
            ("m/a.md", "# A\n\n## A1\n\n### A11\n\n## A2\n"),
            ("n/c.md", "# C\n\n### C1\n"),
        ]);
        let corpus = crate::manual::find::corpus::CorpusCache::default().sync(&index);
        let labels = corpus.labels();
        let mut parents = Vec::new();
        for (file, corpus_file) in corpus.files.iter().enumerate() {
            for (node, label) in corpus_file.outline.labels.iter().enumerate() {
                let key = NodeKey {
                    file: file as u32,
                    node: node as u32,
                };
                assert_eq!(labels.parent(key), label.parent, "{key:?}");
                parents.push(labels.parent(key));
            }
        }
        assert_eq!(parents, [None, Some(0), Some(1), Some(0), None, Some(0)]);
        let past = NodeKey {
            file: 0,
            node: corpus.files[0].outline.node_count() as u32 + 1,
        };
        assert_eq!(labels.parent(past), None);
    }

    #[test]
    fn a_literal_no_label_holds_admits_no_label() {
        let labels = [Label::new(normalize_str("出張旅費"))];
        let grams = LabelGrams::new(&labels.iter().collect::<Vec<_>>());
        let plan = testing::plan("rollback");
        assert!(grams.candidates(&plan).is_empty());
        let plan = testing::plan("旅費");
        assert_eq!(grams.candidates(&plan), [0]);
    }
}
