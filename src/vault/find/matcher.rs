//! Stages 0 and 1 of `vault_find` over one file: the query and its terms found in the
//! normalised text (Stage 0) and in the loose text (Stage 1: separators and whitespace
//! removed, so a term broken by a line wrap, `・` or Markdown emphasis is still found),
//! merged as they come into ranges of nearby lines.
//!
//! The file is read in the blocks of `vault_search` (`blocks::each_block`): whole lines,
//! each block overlapping the previous one so a match across a block boundary is seen
//! once. Both texts come from the one normaliser of every search (`text::normalize`,
//! `text::loose`), and both lead back to the original, so a hit is always an original
//! line. Each pattern is found only in the windows around its raw candidates
//! (`text::prefilter`, `text::near`, as `vault_search` finds its query) when every
//! pattern has an anchor; otherwise the whole block is normalised, its loose text taken
//! as runs (`text::loose::LooseRuns`, no second map), and the patterns matched in one
//! pass per text. `text::literals` matches them, as it does for `manual_find`.

use std::cmp::Ordering;
use std::ops::Range;
use std::time::Instant;

use memchr::memmem::Finder;

use crate::call::CallContext;
use crate::paths::{FileOpener, RelPath};
use crate::text::lines::{Breaks, LineNo, LineTable};
use crate::text::literals::Literals;
use crate::text::loose::{loose_normalized, only_itself_loosens_to, LooseRuns};
use crate::text::near::{both_forms_around, loose_anchor, Anchored};
use crate::text::normalize::{normalize, Normalized};
use crate::text::prefilter::{Prefilter, Prefilters};
use crate::text::terms::split_terms;
use crate::vault::blocks::{each_block_in, Block, Place, Skip};
use crate::vault::forms::{BlockForms, FormsCache, Source};

/// Hits at most this many lines apart belong to one candidate: a heading and the term a
/// few lines into its section, or two terms of one paragraph, are one passage.
pub(crate) const MERGE_GAP_LINES: LineNo = 5;
/// A candidate spans at most this many lines, so a file that matches on every line still
/// gives places to read rather than one range the size of the file.
pub(crate) const MAX_RANGE_LINES: LineNo = 40;

/// How a pattern was found, weakest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Way {
    #[default]
    None,
    /// Only in the loose text (Stage 1).
    Loose,
    /// In the normalised text (Stage 0).
    Normalized,
}

/// What one search looks for: the whole query and its terms, each normalised and loose.
#[derive(Debug)]
pub(crate) struct Patterns {
    /// Normalised texts: the whole query first, then each term that differs from it.
    texts: Vec<String>,
    /// The patterns that are query terms: what coverage and gaps are counted on. The
    /// whole query is the only term when splitting leaves none.
    pub terms: Vec<usize>,
    normalized: Literals,
    /// The loose literals; a pattern of separators only has no loose form, so it never
    /// matches there.
    loose: Literals,
    /// What finds each pattern around its raw candidates, when every pattern has an
    /// anchor in both forms; `None`: the whole block is normalised and searched.
    near: Option<Near>,
    /// What finds the patterns in a whole block's normalised and loose text.
    whole: [EachLiteral; 2],
    /// Per pattern, whether each of its occurrences in a whole block's normalised text
    /// has a twin in the loose text ([`loose_twins`]).
    twins: Vec<bool>,
}

/// Whether every occurrence of `text` in normalised text has a twin in its loose text
/// that leads back to the same place, and every loose occurrence within one run of the
/// loose text is such a twin: `text` is its own loose form (no separator, nothing that
/// folds) and no other character loosens to one of its characters (`text::loose`). Then a
/// loose occurrence is either a normalised one seen again, or one that spans a
/// separator.
fn loose_twins(text: &str, loose: &str) -> bool {
    !text.is_empty() && text == loose && text.chars().all(only_itself_loosens_to)
}

/// Every occurrence of each of a few literals, overlapping ones included, found with
/// memchr's `memmem`: what [`Literals::for_each`] finds, literal by literal instead of in
/// order of start (a block's hits are put in line order afterwards, and a range takes its
/// hits' lines, ways and count, so the order within a line changes nothing). Over a whole
/// block's text this runs at memmem's speed, where the automaton's prefilter stops at
/// every byte a literal starts with (the `i` of `incident` and the `4` of `4711`: about a
/// tenth of English text). A literal that starts with another one (`incident-4711` with
/// `incident`) is not searched on its own: it can only occur where the shorter one does,
/// and is checked there.
#[derive(Debug)]
struct EachLiteral {
    /// The literals searched on their own: what finds each, and the literal it is.
    searched: Vec<(Finder<'static>, usize)>,
    /// Per searched literal, the longer literals (or equal ones) that start with it.
    extending: Vec<Vec<usize>>,
    texts: Vec<String>,
}

impl EachLiteral {
    fn new(texts: &[String]) -> EachLiteral {
        // The literal a longer one is checked at: the first, shortest non-empty one it
        // starts with (itself if none).
        let root = |literal: usize| {
            let text = &texts[literal];
            (0..texts.len())
                .filter(|&other| {
                    !texts[other].is_empty() && text.starts_with(texts[other].as_str())
                })
                .min_by_key(|&other| (texts[other].len(), other))
                .unwrap_or(literal)
        };
        let mut searched = Vec::new();
        let mut extending: Vec<Vec<usize>> = Vec::new();
        let non_empty = (0..texts.len()).filter(|&literal| !texts[literal].is_empty());
        for literal in non_empty
            .clone()
            .filter(|&literal| root(literal) == literal)
        {
            searched.push((Finder::new(texts[literal].as_bytes()).into_owned(), literal));
            let longer = non_empty
                .clone()
                .filter(|&other| other != literal && root(other) == literal);
            extending.push(longer.collect());
        }
        EachLiteral {
            searched,
            extending,
            texts: texts.to_vec(),
        }
    }

    /// Calls `found(literal, range)` for every occurrence of every literal in `text`.
    fn for_each(&self, text: &str, mut found: impl FnMut(usize, Range<usize>)) {
        let bytes = text.as_bytes();
        for ((finder, literal), longer) in self.searched.iter().zip(&self.extending) {
            let len = finder.needle().len();
            let mut at = 0;
            while let Some(start) = finder.find(&bytes[at..]).map(|offset| at + offset) {
                found(*literal, start..start + len);
                for &other in longer {
                    let other_text = self.texts[other].as_bytes();
                    if bytes[start..].starts_with(other_text) {
                        found(other, start..start + other_text.len());
                    }
                }
                // The next occurrence may overlap this one.
                at = start + 1;
            }
        }
    }
}

/// The patterns found around the raw candidates of all of them, normalised and loose
/// (those loose forms that are not empty). The anchors of both forms are searched
/// together, in one pass over a block for all their fingerprints (`Prefilters`).
#[derive(Debug)]
struct Near {
    prefilters: Prefilters,
    /// How many of `prefilters` are the normalised form's; the loose form's follow.
    normalized_anchors: usize,
    normalized_reach: usize,
    loose_reach: usize,
}

impl Near {
    fn new(normalized: Anchors, loose: Anchors) -> Near {
        let normalized_anchors = normalized.prefilters.len();
        let mut prefilters = normalized.prefilters;
        prefilters.extend(loose.prefilters);
        Near {
            prefilters: Prefilters::new(prefilters),
            normalized_anchors,
            normalized_reach: normalized.reach,
            loose_reach: loose.reach,
        }
    }

    /// The candidates of the normalised form's anchors and of the loose form's, each
    /// in order.
    fn candidates(&self, text: &str) -> [Vec<Range<usize>>; 2] {
        let mut each = self.prefilters.candidates(text);
        let loose = each.split_off(self.normalized_anchors);
        [each, loose].map(|lists| {
            let several = lists.len() > 1;
            let mut candidates: Vec<Range<usize>> = lists.into_iter().flatten().collect();
            if several {
                candidates.sort_unstable_by_key(|range| (range.start, range.end));
            }
            candidates
        })
    }
}

/// The patterns found the way `vault_search` finds its query: the raw candidates of
/// every pattern first, then all patterns in the windows around them (`text::near`),
/// which hold every occurrence the whole block's text holds, at the same places. One
/// set of windows for all patterns: each normalised once, and searched in one pass.
#[derive(Debug)]
struct Anchors {
    prefilters: Vec<Prefilter>,
    /// The longest pattern's text (normalised or loose), in bytes: how far an
    /// occurrence reaches.
    reach: usize,
}

/// The anchors of `texts` (empty ones never match) by `anchor`, or `None` if one needs
/// an anchor and has none. A text that holds another one (the whole query holds its
/// terms) needs none of its own: each of its occurrences holds one of the other's, next
/// to a candidate of the other's anchor, and the windows hold the longest text's reach on
/// each side of every candidate. Each anchor is one more search of every block.
fn locate(texts: &[String], anchor: impl Fn(&str) -> Option<Prefilter>) -> Option<Anchors> {
    let texts: Vec<&str> = texts
        .iter()
        .map(String::as_str)
        .filter(|text| !text.is_empty())
        .collect();
    let holds_another = |at: usize| {
        let text = texts[at];
        texts.iter().enumerate().any(|(other_at, other)| {
            other_at != at && text.contains(other) && (other.len() < text.len() || other_at < at)
        })
    };
    let own = (0..texts.len()).filter(|&at| !holds_another(at));
    let prefilters = own.map(|at| anchor(texts[at])).collect::<Option<_>>()?;
    let reach = texts.iter().map(|text| text.len()).max().unwrap_or(0);
    Some(Anchors { prefilters, reach })
}

impl Patterns {
    /// The patterns of `phrase`, a query already normalised and trimmed (not empty).
    pub(crate) fn new(phrase: &str) -> Patterns {
        let mut texts = vec![phrase.to_owned()];
        let mut terms = Vec::new();
        for term in split_terms(phrase) {
            let index = match texts.iter().position(|text| *text == term) {
                Some(index) => index,
                None => {
                    texts.push(term);
                    texts.len() - 1
                }
            };
            terms.push(index);
        }
        if terms.is_empty() {
            terms.push(0);
        }
        let normalized = Literals::new(&texts);
        let loose_texts: Vec<String> = texts.iter().map(|text| loose_normalized(text)).collect();
        let loose = Literals::new(&loose_texts);
        let near = locate(&texts, Prefilter::new).and_then(|normalized| {
            let loose = locate(&loose_texts, loose_anchor)?;
            Some(Near::new(normalized, loose))
        });
        let whole = [EachLiteral::new(&texts), EachLiteral::new(&loose_texts)];
        let twins = texts
            .iter()
            .zip(&loose_texts)
            .map(|(text, loose)| loose_twins(text, loose))
            .collect();
        Patterns {
            texts,
            terms,
            normalized,
            loose,
            near,
            whole,
            twins,
        }
    }

    fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether the whole query counts on its own, beside its terms (a query of several
    /// terms: finding them together, as written, is the strongest evidence).
    pub(crate) fn phrase_apart(&self) -> bool {
        !self.terms.contains(&0)
    }

    /// The hits of one block in line order: each occurrence of a pattern in the
    /// normalised text and in the loose text, as the original line it starts on.
    ///
    /// Normalising is what a search costs, and a pattern occurs in little of most text,
    /// so where every pattern has an anchor in both forms each is found in the windows
    /// around its raw candidates only (as `vault_search` finds its query); otherwise the
    /// whole block is normalised once, and its loose text comes from that normalisation.
    fn block_hits(&self, block: Block<'_>) -> Vec<Hit> {
        let mut hits = BlockHits {
            place: block.place,
            lines: Lines::Text(block.text),
            hits: Vec::new(),
        };
        match &self.near {
            Some(near) => {
                let [normalized, loose] = near.candidates(block.text);
                let windows = both_forms_around(
                    block.text,
                    Anchored {
                        candidates: &normalized,
                        reach: near.normalized_reach,
                    },
                    Anchored {
                        candidates: &loose,
                        reach: near.loose_reach,
                    },
                );
                for piece in windows.iter().map(|window| &window.normalized) {
                    self.normalized
                        .for_each(&piece.normalized.text, |index, range| {
                            let span = piece.original_range(range);
                            hits.record(index, span, Way::Normalized, 1);
                        });
                }
                for window in &windows {
                    self.loose.for_each(&window.loose.text, |index, range| {
                        let span = window.loose_original_range(range);
                        hits.record(index, span, Way::Loose, 1);
                    });
                }
            }
            None => {
                let normalised = normalize(block.text);
                let loose = (!self.loose.is_empty()).then(|| LooseRuns::of(&normalised.text));
                self.whole_hits(&normalised, loose.as_ref(), &mut hits);
            }
        }
        hits.in_line_order()
    }

    /// The hits of a block whose forms the cache holds: those [`Patterns::block_hits`]
    /// finds in its text.
    fn cached_hits(&self, forms: &BlockForms) -> Vec<Hit> {
        let mut hits = BlockHits {
            place: forms.place,
            lines: Lines::Given(&forms.lines),
            hits: Vec::new(),
        };
        self.whole_hits(&forms.normalized, Some(&forms.loose), &mut hits);
        hits.in_line_order()
    }

    /// Records every occurrence of the patterns in a whole block's normalisation and in
    /// its loose text.
    ///
    /// A pattern with loose twins ([`loose_twins`]) is found once for both texts where
    /// it can be: each normalised occurrence counts twice (its loose twin is on the same
    /// line, and a range takes the best way of each pattern and the number of
    /// occurrences, so the twin changes only that number), and the loose occurrences are
    /// only counted. As many loose occurrences as normalised ones means none spans a
    /// separator; otherwise each is led back to the normalised text, and those that span
    /// one are recorded. Leading every loose occurrence back (a search of the runs, then
    /// of the map) was most of what a warm `vault_find` of a common word cost.
    fn whole_hits(
        &self,
        normalised: &Normalized,
        loose: Option<&LooseRuns>,
        hits: &mut BlockHits<'_>,
    ) {
        let [normalized_literals, loose_literals] = &self.whole;
        let loose = loose.filter(|_| !self.loose.is_empty());
        let mut counted = vec![[0usize; 2]; self.len()];
        normalized_literals.for_each(&normalised.text, |index, range| {
            let twinned = loose.is_some() && self.twins[index];
            counted[index][0] += 1;
            let occurrences = if twinned { 2 } else { 1 };
            hits.record(
                index,
                normalised.original_range(range),
                Way::Normalized,
                occurrences,
            );
        });
        let Some(loose) = loose else {
            return;
        };
        let mut twin_candidates = Vec::new();
        loose_literals.for_each(&loose.text, |index, range| {
            if self.twins[index] {
                counted[index][1] += 1;
                twin_candidates.push((index, range));
            } else {
                let span = normalised.original_range(loose.normalized_range(range));
                hits.record(index, span, Way::Loose, 1);
            }
        });
        for (index, range) in twin_candidates {
            let [as_written, loosely] = counted[index];
            if as_written == loosely {
                continue;
            }
            let from = loose.normalized_range(range.clone());
            if from.len() > range.len() {
                hits.record(index, normalised.original_range(from), Way::Loose, 1);
            }
        }
    }
}

/// Where a block's lines start: built from its text at the first hit (most blocks of a
/// rare pattern have none), or held by the cache.
enum Lines<'b> {
    Text(&'b str),
    Built(LineTable),
    Given(&'b LineTable),
}

impl Lines<'_> {
    fn table(&mut self) -> &LineTable {
        if let Lines::Text(text) = *self {
            *self = Lines::Built(LineTable::with_breaks(text, Breaks::Newline));
        }
        match self {
            Lines::Built(table) => table,
            Lines::Given(table) => table,
            Lines::Text(_) => unreachable!("built above"),
        }
    }
}

/// The hits of one block as they are found.
struct BlockHits<'b> {
    place: Place,
    lines: Lines<'b>,
    hits: Vec<Hit>,
}

impl BlockHits<'_> {
    /// Records `occurrences` of `pattern` over `span` of the block's text, unless the
    /// previous block judged it.
    fn record(&mut self, pattern: usize, span: Range<usize>, way: Way, occurrences: u32) {
        if self.place.judged_before(&span) {
            return;
        }
        let line = self.place.line_of(self.lines.table(), span.start);
        self.hits.push(Hit {
            line,
            pattern,
            way,
            occurrences,
        });
    }

    fn in_line_order(mut self) -> Vec<Hit> {
        self.hits.sort_by_key(|hit| hit.line);
        self.hits
    }
}

/// One occurrence of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hit {
    line: LineNo,
    pattern: usize,
    way: Way,
    /// How many occurrences it stands for: 2 for a normalised one and its loose twin.
    occurrences: u32,
}

/// Nearby hits of one file, merged: the unit a candidate is made of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineRange {
    pub start_line: LineNo,
    pub end_line: LineNo,
    /// Per pattern, the best way it was found in the range.
    pub ways: Vec<Way>,
    /// Occurrences of any pattern in the range.
    pub matches: u32,
}

/// What ranges add up to, counted as each range is finished, so the verdict is judged
/// on every candidate even where only the best are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tally {
    pub ranges: usize,
    /// Ranges with a pattern found as written (Stage 0).
    pub normalized: usize,
    /// Ranges with a pattern found only loosely (Stage 1).
    pub loose: usize,
    /// Per pattern, the best way it was found anywhere.
    pub held: Vec<Way>,
}

impl Tally {
    pub(crate) fn count(&mut self, range: &LineRange) {
        self.ranges += 1;
        self.normalized += usize::from(range.ways.contains(&Way::Normalized));
        self.loose += usize::from(range.ways.contains(&Way::Loose));
        if self.held.len() < range.ways.len() {
            self.held.resize(range.ways.len(), Way::None);
        }
        for (held, way) in self.held.iter_mut().zip(&range.ways) {
            *held = (*held).max(*way);
        }
    }

    pub(crate) fn add(&mut self, other: &Tally) {
        self.ranges += other.ranges;
        self.normalized += other.normalized;
        self.loose += other.loose;
        self.held
            .resize(self.held.len().max(other.held.len()), Way::None);
        for (held, way) in self.held.iter_mut().zip(&other.held) {
            *held = (*held).max(*way);
        }
    }
}

/// How candidates are ordered: best score first, then line (and path, across files).
pub(crate) type Score<'s> = &'s (dyn Fn(&LineRange) -> f32 + Sync);

/// Which ranges of a file a search keeps: the best `count` by `score`, of those that
/// score at least `floor`. The floor is what the search's best candidates so far already
/// hold (`integrate::Best::floor`): a range scoring less can never be among them, so it
/// is only counted.
#[derive(Clone, Copy)]
pub(crate) struct Keep<'s> {
    pub count: usize,
    pub score: Score<'s>,
    pub floor: f32,
}

impl<'s> Keep<'s> {
    /// The best `count` by `score`, with no floor.
    pub(crate) fn best(count: usize, score: Score<'s>) -> Keep<'s> {
        Keep {
            count,
            score,
            floor: f32::NEG_INFINITY,
        }
    }
}

/// The ranges of one file as they build up, hit by hit: the finished ones that may be
/// kept (at most the best `keep.count` once there are many), the one still open, and the
/// tally of all.
struct Ranges<'s> {
    done: Vec<LineRange>,
    open: Option<LineRange>,
    tally: Tally,
    hit_lines: LineNo,
    last_hit_line: LineNo,
    patterns: usize,
    keep: Keep<'s>,
    /// The ways of the last range finished below the floor, for the next one: a common
    /// word opens tens of thousands of ranges per search, nearly all only counted.
    spare_ways: Vec<Way>,
}

impl<'s> Ranges<'s> {
    fn new(patterns: usize, keep: Keep<'s>) -> Ranges<'s> {
        Ranges {
            done: Vec::new(),
            open: None,
            tally: Tally::default(),
            hit_lines: 0,
            last_hit_line: 0,
            patterns,
            keep,
            spare_ways: Vec::new(),
        }
    }

    /// Adds a hit, nearly in line order: a match that starts in a block's overlap and
    /// ends in its new text may lie a line or two before the previous block's last hit,
    /// and still joins the range it belongs to.
    fn add(&mut self, hit: Hit) {
        if hit.line > self.last_hit_line {
            self.hit_lines += 1;
            self.last_hit_line = hit.line;
        }
        let joins = self.open.as_ref().is_some_and(|open| {
            let start = open.start_line.min(hit.line);
            let end = open.end_line.max(hit.line);
            hit.line <= open.end_line + MERGE_GAP_LINES && end - start < MAX_RANGE_LINES
        });
        if !joins {
            self.finish_open();
            let mut ways = std::mem::take(&mut self.spare_ways);
            ways.clear();
            ways.resize(self.patterns, Way::None);
            self.open = Some(LineRange {
                start_line: hit.line,
                end_line: hit.line,
                ways,
                matches: 0,
            });
        }
        let range = self.open.as_mut().expect("opened above");
        range.start_line = range.start_line.min(hit.line);
        range.end_line = range.end_line.max(hit.line);
        range.ways[hit.pattern] = range.ways[hit.pattern].max(hit.way);
        range.matches = range.matches.saturating_add(hit.occurrences);
    }

    fn finish_open(&mut self) {
        if let Some(range) = self.open.take() {
            self.tally.count(&range);
            if (self.keep.score)(&range).total_cmp(&self.keep.floor) == Ordering::Less {
                self.spare_ways = range.ways;
                return;
            }
            self.done.push(range);
            if self.done.len() > 2 * self.keep.count {
                self.prune();
            }
        }
    }

    /// Keeps the best `keep.count` finished ranges: a file matching on a million lines
    /// holds a few hundred ranges, not a million.
    fn prune(&mut self) {
        let score = self.keep.score;
        self.done.sort_by(|a, b| {
            score(b)
                .total_cmp(&score(a))
                .then(a.start_line.cmp(&b.start_line))
        });
        self.done.truncate(self.keep.count);
    }

    fn finish(mut self) -> FileOutcome {
        self.finish_open();
        self.prune();
        self.done.sort_by_key(|range| range.start_line);
        FileOutcome::Searched {
            ranges: self.done,
            tally: self.tally,
            hit_lines: self.hit_lines,
        }
    }
}

/// What searching one file gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FileOutcome {
    /// Read to its end: the ranges kept ([`Keep`]) in line order, and the tally of all.
    Searched {
        ranges: Vec<LineRange>,
        tally: Tally,
        hit_lines: LineNo,
    },
    /// Binary, or gone or unreadable since the listing (as `vault_search` counts them).
    Skipped,
    /// Not searched to its end within the time budget: a continuation searches it again,
    /// whole.
    Unscanned,
}

/// What a search reads its files with: the cache of their forms, and when to stop (the
/// call cancelled or the deadline passed).
pub(crate) struct Reading<'a> {
    pub forms: &'a FormsCache,
    pub call: &'a CallContext,
    pub deadline: Instant,
}

/// Searches one file until its end or the deadline, keeping the ranges `keep` says.
pub(crate) fn search_file(
    reading: &Reading<'_>,
    opener: &mut FileOpener<'_>,
    rel: &RelPath,
    patterns: &Patterns,
    keep: Keep<'_>,
) -> FileOutcome {
    let stop = || Instant::now() >= reading.deadline || reading.call.is_cancelled();
    if stop() {
        return FileOutcome::Unscanned;
    }
    let mut found = Ranges::new(patterns.len(), keep);
    let mut out_of_time = false;
    let mut on_block = |hits: Vec<Hit>| {
        for hit in hits {
            found.add(hit);
        }
    };
    match reading.forms.source(opener, rel) {
        Err(Skip) => return FileOutcome::Skipped,
        Ok(Source::Forms(file)) => {
            for block in &file.blocks {
                if stop() {
                    out_of_time = true;
                    break;
                }
                on_block(patterns.cached_hits(block));
            }
        }
        Ok(Source::File(file, size)) => {
            let read = each_block_in(file, size, rel, |block| {
                if stop() {
                    out_of_time = true;
                    return false;
                }
                on_block(patterns.block_hits(block));
                true
            });
            if read.is_err() {
                return FileOutcome::Skipped;
            }
        }
    }
    if out_of_time {
        FileOutcome::Unscanned
    } else {
        found.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::text::normalize::normalize_str;
    use crate::vault::find::testing::vault;

    #[test]
    fn each_literal_finds_what_the_automaton_finds() {
        let cases: [(&[&str], &str); 6] = [
            (
                &["有給休暇", "有給", "休暇"],
                "有給休暇の繰越しと有給の申請、休暇",
            ),
            (&["aa", "a", "aaa"], "aaaa"),
            (
                &["rollback rules", "rollback", "rules", "rollback"],
                "rollback rules: rollback",
            ),
            (
                &["incident-4711", "incident", "4711", ""],
                "incident-4711 incidentincident 47114711",
            ),
            (&["abab", "ab", "ab", "b", "abab"], "abababab bab"),
            (&["x", "y"], "no match here"),
        ];
        for (literals, text) in cases {
            let texts: Vec<String> = literals.iter().map(|literal| literal.to_string()).collect();
            let all = |each: bool| {
                let mut found = Vec::new();
                let push =
                    |literal, range: Range<usize>| found.push((range.start, literal, range.end));
                if each {
                    EachLiteral::new(&texts).for_each(text, push);
                } else {
                    Literals::new(&texts).for_each(text, push);
                }
                found.sort_unstable();
                found
            };
            assert_eq!(all(true), all(false), "{literals:?}");
            assert!(!all(true).is_empty() || literals == ["x", "y"]);
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// The outcome of searching `content` for `query`, keeping `keep` ranges by `score`.
    fn outcome(content: &str, query: &str, keep: usize, score: Score<'_>) -> FileOutcome {
        let patterns = Patterns::new(&normalize_str(query));
        searched_by(content, &patterns, Keep::best(keep, score))
    }

    /// The outcome of searching `content` for `patterns` (by windows, or whole blocks when
    /// they have no `near`), keeping what `keep` says.
    fn searched_by(content: &str, patterns: &Patterns, keep: Keep<'_>) -> FileOutcome {
        let (_dir, root) = vault(&[("a.md", content)]);
        let rel = crate::paths::parse_relative("a.md").unwrap();
        let (forms, call) = (FormsCache::new(0), CallContext::local());
        let reading = Reading {
            forms: &forms,
            call: &call,
            deadline: later(),
        };
        search_file(&reading, &mut root.file_opener(), &rel, patterns, keep)
    }

    #[test]
    fn patterns_spelled_as_their_loose_form_with_no_character_folded_onto_them_have_twins() {
        for (query, twins) in [
            ("incident", true),
            ("4711", true),
            ("障害対応", true),
            ("カンバン", true),
            ("incident-4711", false),
            ("on call", false),
            ("ウインドウ", false),
            ("ブラウザ", false),
        ] {
            let patterns = Patterns::new(&normalize_str(query));
            assert_eq!(patterns.twins[0], twins, "{query}");
        }
        assert!(!loose_twins("", ""));
    }

    /// Pieces of text that spell a few queries as written, loosely across separators and
    /// line breaks, folded, or not at all.
    const TWIN_PIECES: &[&str] = &[
        "incident",
        "in-ci-dent",
        "inci\ndent",
        "INCIDENT",
        "ｉｎｃｉｄｅｎｔ",
        "incidentincident",
        "4711",
        "47・11",
        "障害",
        "障\n害",
        "障・害",
        "対応",
        "ウィンドウ",
        "ウインドウ",
        "ウイン\nドウ",
        " ",
        "\n",
        "\n\n\n\n\n\n",
        "-",
        "**",
        "。",
        "x",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn whole_blocks_count_loose_twins_as_windows_find_them(
            pieces in proptest::collection::vec(proptest::sample::select(TWIN_PIECES), 1..60)
        ) {
            let text = pieces.concat();
            for query in ["incident", "incident-4711", "障害対応", "ウインドウ", "障害 4711"] {
                let near = Patterns::new(&normalize_str(query));
                let whole = Patterns {
                    near: None,
                    ..Patterns::new(&normalize_str(query))
                };
                let keep = Keep::best(1000, &|_| 0.0);
                proptest::prop_assert_eq!(
                    searched_by(&text, &near, keep),
                    searched_by(&text, &whole, keep),
                    "{:?} in {:?}",
                    query,
                    text
                );
            }
        }
    }

    fn ranges_of(content: &str, query: &str) -> Vec<LineRange> {
        match outcome(content, query, 1000, &|_| 0.0) {
            FileOutcome::Searched { ranges, .. } => ranges,
            other => panic!("not searched: {other:?}"),
        }
    }

    #[test]
    fn the_whole_query_comes_first_then_its_distinct_terms() {
        let patterns = Patterns::new(&normalize_str("有給休暇の繰越し"));
        assert_eq!(patterns.texts, ["有給休暇の繰越し", "有給休暇", "繰越し"]);
        assert_eq!(patterns.terms, [1, 2]);
        assert!(patterns.phrase_apart());
        let single = Patterns::new("rollback");
        assert_eq!((single.len(), single.terms.clone()), (1, vec![0]));
        assert!(!single.phrase_apart());
        let particles_only = Patterns::new("の");
        assert_eq!(
            particles_only.terms,
            [0],
            "the query itself when no term is left"
        );
    }

    #[test]
    fn a_word_broken_by_a_line_break_is_found_loosely_on_its_first_line() {
        let ranges = ranges_of("# Notes\n\n障害\n対応の手順\n", "障害対応");
        assert_eq!(ranges.len(), 1);
        assert_eq!((ranges[0].start_line, ranges[0].end_line), (3, 3));
        assert_eq!(ranges[0].ways, [Way::Loose]);
    }

    #[test]
    fn normalised_matches_outrank_loose_ones_of_the_same_pattern() {
        let ranges = ranges_of("ＤＲＡＦＴＳ here\n", "drafts");
        assert_eq!(ranges[0].ways, [Way::Normalized]);
    }

    #[test]
    fn nearby_hits_merge_and_distant_ones_do_not() {
        let mut text = String::from("rollback\nfirst\n\nrules\n");
        text.push_str(&"filler\n".repeat(10));
        text.push_str("rollback again\n");
        let ranges = ranges_of(&text, "rollback rules");
        let spans: Vec<(LineNo, LineNo)> =
            ranges.iter().map(|r| (r.start_line, r.end_line)).collect();
        assert_eq!(spans, [(1, 4), (15, 15)]);
        // Patterns: the whole query, then "rollback", then "rules".
        assert_eq!(
            ranges[0].ways,
            [Way::None, Way::Normalized, Way::Normalized]
        );
        assert_eq!(ranges[1].ways, [Way::None, Way::Normalized, Way::None]);
    }

    #[test]
    fn a_range_stops_growing_at_its_line_limit() {
        let text = "term\n".repeat(MAX_RANGE_LINES as usize + 5);
        let ranges = ranges_of(&text, "term");
        assert_eq!(ranges.len(), 2);
        assert_eq!(
            ranges[0].end_line - ranges[0].start_line + 1,
            MAX_RANGE_LINES
        );
        assert_eq!(ranges[1].start_line, MAX_RANGE_LINES + 1);
    }

    #[test]
    fn a_match_across_a_block_boundary_is_counted_once() {
        // A block is a MiB and then the rest of its last line: the first block ends with
        // "障害\n" and the next one brings "対応".
        let filler_lines = (1024 * 1024 - 2) / 2;
        let mut text = "x\n".repeat(filler_lines);
        text.push_str("障害\n対応\n");
        let ranges = ranges_of(&text, "障害対応");
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].matches, 1);
        assert_eq!(ranges[0].start_line, filler_lines as LineNo + 1);
    }

    /// Lines that spell the fixture's queries in many ways: full width and capitals,
    /// half-width and small katakana, long-vowel marks, words broken by separators and
    /// line wraps, numerals in kanji.
    const SPELLINGS: &[&str] = &[
        "障害対応の手順を確認する。",
        "障害\n対応は・障・害・対・応とも書く",
        "ＩＮＣＩＤＥＮＴ－４７１１ and Incident-4711, incident 4711",
        "ｉｎｃｉｄｅｎｔ－四七一一 in-ci-dent",
        "ウィンドウマネージャー、ウインドウマネジャ、ｳｨﾝﾄﾞｳﾏﾈｰｼﾞｬｰ",
        "ウインドウ\nマネージャ",
        "サーバー障害、ｻｰﾊﾞ 障害、サーバ",
        "有給休暇の繰越しと有給　休暇",
        "繰越し(くりこし) **有給**休暇",
        "Rollback rules: ROLLBACK, roll-back, ＲＵＬＥＳ",
        "filler text without any term at all",
        "二十件の障害",
        "四千七百十一、4千7百11、㈣七一一、4,711 and ①⑦ incident",
        "INCIDENT4711 Incidents cite in-cid-ent, inc\u{301}ident, traffic",
    ];

    #[test]
    fn windows_around_candidates_find_what_whole_blocks_find() {
        // More than a block (a MiB), so the overlap between blocks is crossed too.
        let mut text = String::new();
        let mut line = 0;
        while text.len() < 1024 * 1024 + 300_000 {
            text.push_str(SPELLINGS[line % SPELLINGS.len()]);
            text.push_str(if line % 5 == 0 { "\n\n" } else { "\n" });
            text.push_str(&"plain words here. ".repeat(line % 40));
            text.push('\n');
            line += 1;
        }
        let (_dir, root) = vault(&[("a.md", &text)]);
        let rel = crate::paths::parse_relative("a.md").unwrap();
        let (cache, off) = (
            FormsCache::settling(1 << 30, Duration::ZERO),
            FormsCache::new(0),
        );
        let call = CallContext::local();
        let search = |patterns: &Patterns, forms: &FormsCache| {
            let reading = Reading {
                forms,
                call: &call,
                deadline: later(),
            };
            let mut opener = root.file_opener();
            search_file(
                &reading,
                &mut opener,
                &rel,
                patterns,
                Keep::best(100_000, &|_| 0.0),
            )
        };
        let queries = [
            "障害対応",
            "ウィンドウマネージャー",
            "有給休暇の繰越し",
            "Rollback Rules",
            "サーバー 障害",
            "二十件",
            "二十",
            "incident-4711",
            "4711",
            "Cite",
        ];
        assert!(Patterns::new(". ,").near.is_none(), "nothing to anchor");
        for query in queries {
            let near = Patterns::new(&normalize_str(query));
            assert!(near.near.is_some(), "{query}");
            let whole = Patterns {
                near: None,
                ..Patterns::new(&normalize_str(query))
            };
            let found = search(&near, &off);
            let FileOutcome::Searched { tally, .. } = &found else {
                panic!("not searched: {found:?}");
            };
            assert!(tally.ranges > 10, "{query}: {tally:?}");
            assert_eq!(found, search(&whole, &off), "{query}");
            // Seen once, then its forms built, then those held: each finds the same.
            assert_eq!(found, search(&near, &cache), "{query}: first sight");
            assert_eq!(found, search(&near, &cache), "{query}: forms built");
            assert!(cache.held_bytes() > 0, "the file's forms are kept");
            assert_eq!(found, search(&near, &cache), "{query}: forms held");
        }
    }

    #[test]
    fn a_spent_budget_leaves_the_file_unscanned() {
        let (_dir, root) = vault(&[("a.md", "term\n")]);
        let rel = crate::paths::parse_relative("a.md").unwrap();
        let patterns = Patterns::new("term");
        let (forms, call) = (FormsCache::new(1 << 20), CallContext::local());
        let reading = Reading {
            forms: &forms,
            call: &call,
            deadline: Instant::now(),
        };
        let spent = search_file(
            &reading,
            &mut root.file_opener(),
            &rel,
            &patterns,
            Keep::best(10, &|_| 0.0),
        );
        assert_eq!(spent, FileOutcome::Unscanned);
    }

    #[test]
    fn ranges_below_the_floor_are_counted_and_not_kept() {
        // 50 ranges, one every 10 lines; the score prefers later lines.
        let text: String = (0..500)
            .map(|n| if n % 10 == 0 { "term\n" } else { "x\n" })
            .collect();
        let patterns = Patterns::new("term");
        let later_first = |range: &LineRange| range.start_line as f32;
        let all = searched_by(&text, &patterns, Keep::best(1000, &later_first));
        let floored = Keep {
            floor: 251.0,
            ..Keep::best(1000, &later_first)
        };
        let (
            FileOutcome::Searched {
                ranges,
                tally,
                hit_lines,
            },
            FileOutcome::Searched {
                ranges: above,
                tally: counted,
                hit_lines: lines,
            },
        ) = (all, searched_by(&text, &patterns, floored))
        else {
            panic!("not searched");
        };
        assert_eq!((counted, lines), (tally, hit_lines));
        let starts = |ranges: &[LineRange]| -> Vec<LineNo> {
            ranges.iter().map(|range| range.start_line).collect()
        };
        assert_eq!(starts(&above), (251..500).step_by(10).collect::<Vec<_>>());
        let at_least = ranges.into_iter().filter(|range| range.start_line >= 251);
        assert_eq!(above, at_least.collect::<Vec<_>>());
    }

    #[test]
    fn many_ranges_keep_the_best_in_line_order_and_tally_all() {
        // 50 ranges, one every 10 lines; the score prefers later lines.
        let text: String = (0..500)
            .map(|n| if n % 10 == 0 { "term\n" } else { "x\n" })
            .collect();
        let later_first = |range: &LineRange| range.start_line as f32;
        let FileOutcome::Searched {
            ranges,
            tally,
            hit_lines,
        } = outcome(&text, "term", 3, &later_first)
        else {
            panic!("not searched");
        };
        let starts: Vec<LineNo> = ranges.iter().map(|r| r.start_line).collect();
        assert_eq!(starts, [471, 481, 491]);
        assert_eq!((tally.ranges, tally.normalized, tally.loose), (50, 50, 0));
        assert_eq!(tally.held, [Way::Normalized]);
        assert_eq!(hit_lines, 50);
    }
}
