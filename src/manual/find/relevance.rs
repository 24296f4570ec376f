//! Word-level relevance: BM25 over the query's units (`text::units`), the ranked list
//! behind the recall floor.
//!
//! The evidence score (`score`) rewards sections that hold the query's terms as written,
//! loosely or as synonyms; a question in everyday words ("毎晩決まった時刻に自作のスクリプト
//! を自動で走らせたい") rarely has one. Units cut it into the words a section may share with
//! it, and BM25 weighs them the way a reader would: a rare unit (`スクリプト`) says more than
//! a common one (`設定`), a unit repeated in a short section more than one in passing in a
//! long one, and a unit in the section's heading (or its parents' headings, or the text
//! of links pointing to it) more than one in the body.
//!
//! Every section holding a strong unit of the query is *significant*: the recall floor
//! admits it as a candidate whatever its evidence score, ranked by this score (see
//! `fuse`). Weak units (single kanji, kana bigrams) only add to a significant section's
//! score.

use super::candidates::UnitOnly;
use super::corpus::Corpus;
use super::derived::NodeKey;
use super::fuse::{RankedSource, SourceItem, UNITS_WEIGHT};
use super::plan::{Origin, PatternSet, Plan};
use super::scan::{NodeHits, ScanResult};
use super::score::TitleSets;
use super::Signals;
use crate::text::units::Form;

/// BM25 term-frequency saturation and length normalisation (the usual values).
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Occurrences a unit in the section's own heading, in link texts pointing to it and in
/// an ancestor's heading count as (BM25F-style field weights over the body's one).
const TITLE_TF: f32 = 3.0;
const LINK_TF: f32 = 2.0;
const ANCESTOR_TF: f32 = 1.0;

/// Scores every scanned section holding any unit of the plan, best first, as a source
/// for `fuse` that admits the sections holding a strong unit of their own. `df` are the
/// units' document frequencies when known (from the section index, which counts every
/// section, not only those `scan` kept); otherwise they are counted over the sections
/// met. Only the sections `keep` accepts are scored (the sections a search verified).
/// The index's sections holding units alone are ranked apart ([`rank_unit_only`]).
pub(crate) fn rank_units(
    plan: &Plan,
    corpus: &Corpus,
    scan: &ScanResult,
    df: Option<&[u32]>,
    keep: &dyn Fn(NodeKey, &NodeHits) -> bool,
    titles: &mut TitleSets,
) -> RankedSource {
    let mut source = units_in_key_order(plan, corpus, scan, df, keep, titles);
    source
        .items
        .sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    source
}

/// [`rank_units`]' source with its items in key order (the order of `scan`'s hits), not
/// best first: the one ranking of a search joins them with the evidence scores by key.
pub(crate) fn units_in_key_order(
    plan: &Plan,
    corpus: &Corpus,
    scan: &ScanResult,
    df: Option<&[u32]>,
    keep: &dyn Fn(NodeKey, &NodeHits) -> bool,
    titles: &mut TitleSets,
) -> RankedSource {
    let mut source = RankedSource {
        weight: UNITS_WEIGHT,
        items: Vec::new(),
        marks: Signals::default(),
        best_of_list: 0.0,
    };
    if plan.units.is_empty() {
        return source;
    }
    let sections = section_total(scan);
    let mut ranking =
        UnitRanking::new(plan, corpus, df.map(|df| inverse_frequencies(df, sections)));
    for (key, hits) in scan.hits.iter().filter(|(key, hits)| keep(*key, hits)) {
        ranking.meet(titles, *key, hits);
    }
    source.items = ranking.items(sections);
    source
}

/// The units' items of the index's sections holding units alone (`unit_only`, found
/// beside `scan`), in no particular order: scored as [`rank_units`] scores them with the
/// index's document frequencies `df`, but left unsorted, since tens of thousands of them
/// come with a common unit and the search only needs the best of them in order.
pub(crate) fn rank_unit_only(
    plan: &Plan,
    corpus: &Corpus,
    scan: &ScanResult,
    unit_only: &UnitOnly,
    df: &[u32],
    titles: &mut TitleSets,
) -> Vec<SourceItem> {
    let sections = section_total(scan);
    let mut ranking = UnitRanking::new(plan, corpus, Some(inverse_frequencies(df, sections)));
    let mut hits = NodeHits::default();
    for index in 0..unit_only.len() {
        let key = unit_only.hits_into(index, plan, corpus, titles, &mut hits);
        ranking.meet(titles, key, &hits);
    }
    ranking.items(sections)
}

/// The number of sections BM25's idf is taken over: every section of the scope.
fn section_total(scan: &ScanResult) -> f32 {
    scan.scanned_nodes.max(1) as f32
}

/// The units' ranking as it meets the sections, with the buffers it reuses for each.
struct UnitRanking<'a> {
    plan: &'a Plan,
    corpus: &'a Corpus,
    mean_length: f32,
    /// The units' idf when the index gives their document frequencies: each section is
    /// then scored as it is met, without keeping what it holds.
    known: Option<Vec<f32>>,
    items: Vec<SourceItem>,
    /// Otherwise the sections met and their units, scored once every section is counted.
    pending: Vec<(NodeKey, Vec<Frequency>)>,
    counted: Vec<u32>,
    ids: Vec<u32>,
    present: Vec<usize>,
    above: PatternSet,
    found: Vec<Frequency>,
}

impl<'a> UnitRanking<'a> {
    fn new(plan: &'a Plan, corpus: &'a Corpus, known: Option<Vec<f32>>) -> Self {
        UnitRanking {
            plan,
            corpus,
            mean_length: corpus.mean_node_bytes.max(1.0),
            known,
            items: Vec::new(),
            pending: Vec::new(),
            counted: vec![0; plan.units.len()],
            ids: Vec::new(),
            present: Vec::new(),
            above: PatternSet::default(),
            found: Vec::new(),
        }
    }

    /// Scores (or keeps for scoring) section `key` holding `hits`, if it holds a unit.
    fn meet(&mut self, titles: &mut TitleSets, key: NodeKey, hits: &NodeHits) {
        let (plan, corpus) = (self.plan, self.corpus);
        titles.ancestors_into(plan, corpus, key, &mut self.ids);
        self.above.clear();
        for &id in &self.ids {
            let (normal, loose) = titles.sets(id);
            self.above.union(normal);
            self.above.union(loose);
        }
        unit_frequencies(plan, hits, &self.above, &mut self.present, &mut self.found);
        if self.found.is_empty() {
            return;
        }
        match &self.known {
            Some(idf) => self.items.push(unit_item(
                plan,
                corpus,
                key,
                &self.found,
                idf,
                self.mean_length,
            )),
            None => {
                for frequency in self.found.iter().filter(|frequency| frequency.own) {
                    self.counted[frequency.unit] += 1;
                }
                self.pending.push((key, std::mem::take(&mut self.found)));
            }
        }
    }

    /// The items of every section met, in the order met.
    fn items(self, sections: f32) -> Vec<SourceItem> {
        if self.known.is_some() {
            return self.items;
        }
        let idf = inverse_frequencies(&self.counted, sections);
        self.pending
            .into_iter()
            .map(|(key, found)| {
                unit_item(self.plan, self.corpus, key, &found, &idf, self.mean_length)
            })
            .collect()
    }
}

/// Each unit's BM25 idf over `sections` sections, from how many hold it.
fn inverse_frequencies(df: &[u32], sections: f32) -> Vec<f32> {
    df.iter()
        .map(|&df| {
            let df = df as f32;
            (1.0 + (sections - df + 0.5) / (df + 0.5)).ln()
        })
        .collect()
}

/// The units' BM25 score of section `key` holding `found`, as the source's item.
fn unit_item(
    plan: &Plan,
    corpus: &Corpus,
    key: NodeKey,
    found: &[Frequency],
    idf: &[f32],
    mean_length: f32,
) -> SourceItem {
    let length = corpus.labels().own_bytes(key) as f32;
    let norm = K1 * (1.0 - B + B * length / mean_length);
    let mut score = 0.0;
    let mut significant = false;
    let mut signals = Signals::default();
    for &Frequency {
        unit,
        tf,
        own,
        signals: kinds,
    } in found
    {
        let planned = &plan.units[unit];
        score += planned.weight * idf[unit] * tf * (K1 + 1.0) / (tf + norm);
        significant |= own && planned.unit.kind.is_strong();
        signals.insert(kinds);
        if matches!(planned.origin, Origin::Synonym | Origin::Related) {
            signals.insert(Signals::SYNONYM);
        }
    }
    SourceItem {
        key,
        score,
        admits: significant,
        signals,
    }
}

/// A unit present in or above a section.
#[derive(Clone, Copy)]
struct Frequency {
    /// Index into the plan's units.
    unit: usize,
    /// Occurrences, headings and link texts weighted as their fields.
    tf: f32,
    /// In the section's own text, heading or link texts (not only an ancestor's heading):
    /// what document frequency counts.
    own: bool,
    signals: Signals,
}

/// The units present in or above the section, with their field-weighted frequency, into
/// `found` (cleared first). Only the units the section's hits name are looked at, so the
/// cost follows the section's matches, not the query's length. `present` and `found` are
/// buffers the caller reuses across sections.
fn unit_frequencies(
    plan: &Plan,
    hits: &NodeHits,
    ancestors: &PatternSet,
    present: &mut Vec<usize>,
    found: &mut Vec<Frequency>,
) {
    found.clear();
    let first = plan.first_unit_pattern;
    present.clear();
    present.extend(
        hits.counts
            .iter()
            .chain(&hits.loose_counts)
            .map(|&(pattern, _)| pattern as usize)
            .filter(|&pattern| pattern >= first)
            .chain(
                [
                    &hits.body,
                    &hits.body_loose,
                    hits.title(),
                    hits.title_loose(),
                    hits.links(),
                    hits.links_loose(),
                    ancestors,
                ]
                .into_iter()
                .flat_map(|set| set.iter_from(first)),
            ),
    );
    present.sort_unstable();
    present.dedup();
    for &pattern in present.iter() {
        let index = pattern - first;
        let planned = &plan.units[index];
        let (body, in_body, title, links, body_signal) = match planned.unit.form() {
            Form::Word => (
                hits.count(pattern),
                &hits.body,
                hits.title(),
                hits.links(),
                Signals::NORMALIZED,
            ),
            Form::Loose => (
                hits.loose_count(pattern),
                &hits.body_loose,
                hits.title_loose(),
                hits.links_loose(),
                Signals::LOOSE,
            ),
        };
        let mut tf = 0.0;
        let mut signals = Signals::default();
        if body > 0 || in_body.contains(pattern) {
            tf += f32::from(body.max(1));
            signals.insert(body_signal);
        }
        if title.contains(pattern) {
            tf += TITLE_TF;
            signals.insert(Signals::HEADING);
        }
        if links.contains(pattern) {
            tf += LINK_TF;
            signals.insert(Signals::LINK_TEXT);
        }
        let own = tf > 0.0;
        if ancestors.contains(pattern) {
            tf += ANCESTOR_TF;
            signals.insert(Signals::HEADING);
        }
        if tf > 0.0 {
            found.push(Frequency {
                unit: index,
                tf,
                own,
                signals,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::manual::find::corpus::CorpusCache;
    use crate::manual::find::query::Query;
    use crate::manual::find::scan::scan;
    use crate::manual::find::testing::index;
    use crate::text::normalize::normalize_str;
    use crate::text::synonyms::Synonyms;

    /// The units' ranking of every section `result` holds, `df` given or counted.
    fn every_section_ranked(
        plan: &Plan,
        corpus: &Corpus,
        result: &ScanResult,
        df: Option<&[u32]>,
    ) -> RankedSource {
        let keep_all = |_: NodeKey, _: &NodeHits| true;
        let mut titles = TitleSets::default();
        rank_units(plan, corpus, result, df, &keep_all, &mut titles)
    }

    /// The files of the fixture (one section each), ranked for `query`: file names, best
    /// first, with whether the floor admits each.
    fn ranked(files: &[(&str, &str)], query: &str) -> Vec<(String, bool)> {
        let (_dir, index) = index(files);
        let corpus = CorpusCache::default().sync(&index);
        let synonyms = Synonyms::load(None, &normalize_str).0;
        let plan = Plan::new(Query::parse(query, None), &synonyms, &[]);
        let scope = (0..corpus.files.len() as u32)
            .map(|file| (file, None))
            .collect();
        let later = Instant::now() + Duration::from_secs(60);
        let result = scan(
            &corpus,
            &crate::manual::find::testing::sources(&index),
            &plan,
            &scope,
            later,
            &crate::call::CallContext::local(),
        );
        every_section_ranked(&plan, &corpus, &result, None)
            .items
            .iter()
            .map(|item| {
                let path = &corpus.files[item.key.file as usize].path;
                (path.trim_end_matches(".md").to_owned(), item.admits)
            })
            .collect()
    }

    #[test]
    fn rare_units_headings_and_short_sections_rank_first() {
        let filler = "filler words here. ".repeat(12);
        let daily: Vec<(String, String)> = (0..6)
            .map(|n| {
                let text = format!("# Task {n}\n\n{filler}A daily task.\n");
                (format!("m/daily{n}.md"), text)
            })
            .collect();
        let long = format!("# Long\n\n{filler}anacron once.\n");
        let mut files = vec![
            ("m/heading.md", "# Anacron\n\nRuns jobs.\n"),
            ("m/short.md", "# Periodic\n\nanacron runs jobs.\n"),
            ("m/long.md", &long),
            ("m/none.md", "# Other\n\nNothing here.\n"),
        ];
        files.extend(
            daily
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_str())),
        );
        let order: Vec<String> = ranked(&files, "anacron daily")
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(order[..3], ["heading", "short", "long"], "{order:?}");
        assert!(
            order[3..].iter().all(|name| name.starts_with("daily")),
            "{order:?}"
        );
        assert_eq!(order.len(), 9, "the section without a unit is not ranked");
    }

    /// The index's document frequencies, when they are those of the scan, rank as the
    /// counted ones do: scored as met or after counting, the same items.
    #[test]
    fn given_document_frequencies_rank_as_counted_ones() {
        let files = [
            ("m/a.md", "# Anacron\n\nanacron runs daily jobs.\n"),
            ("m/b.md", "# Daily\n\nA daily task, daily.\n"),
            ("m/c.md", "# Other\n\nanacron once.\n## Daily\n\nmore.\n"),
        ];
        let (_dir, index) = index(&files);
        let corpus = CorpusCache::default().sync(&index);
        let plan = crate::manual::find::testing::plan("anacron daily");
        let result = scan(
            &corpus,
            &crate::manual::find::testing::sources(&index),
            &plan,
            &crate::manual::find::testing::every_file(&corpus),
            Instant::now() + Duration::from_secs(60),
            &crate::call::CallContext::local(),
        );
        let first = plan.first_unit_pattern;
        let df: Vec<u32> = (0..plan.units.len())
            .map(|unit| {
                let pattern = first + unit;
                let holding = |hits: &NodeHits| {
                    hits.holds(pattern) || hits.count(pattern) > 0 || hits.loose_count(pattern) > 0
                };
                result.hits.iter().filter(|(_, hits)| holding(hits)).count() as u32
            })
            .collect();
        assert!(df.iter().any(|&df| df > 1), "the fixture repeats units");
        let items = |df: Option<&[u32]>| {
            every_section_ranked(&plan, &corpus, &result, df)
                .items
                .iter()
                .map(|item| (item.key, item.score.to_bits(), item.admits, item.signals))
                .collect::<Vec<_>>()
        };
        let counted = items(None);
        assert!(!counted.is_empty());
        assert_eq!(items(Some(&df)), counted);
    }

    #[test]
    fn weak_units_alone_do_not_admit_a_section() {
        let files = [
            ("m/run.md", "# 実行\n\n毎晩スクリプトを走らせる。\n"),
            ("m/walk.md", "# 歩行\n\n廊下を走らないこと。\n"),
        ];
        let ranked = ranked(&files, "スクリプトを走らせたい");
        assert_eq!(ranked[0], ("run".to_owned(), true));
        assert_eq!(
            ranked[1],
            ("walk".to_owned(), false),
            "only the stem 走 is shared"
        );
    }
}
