//! Stages 0 and 1 of `vault_find` over one file: the query and its terms found in the
//! normalised text (Stage 0) and in the loose text (Stage 1: separators and whitespace
//! removed, so a term broken by a line wrap, `・` or Markdown emphasis is still found),
//! merged as they come into ranges of nearby lines.
//!
//! The file is read in the blocks of `vault_search` (`search::each_block`): whole lines,
//! each block overlapping the previous one so a match across a block boundary is seen
//! once. Both texts come from the one normaliser of every search (`text::normalize`,
//! `text::loose`), and both keep a map back to the original, so a hit is always an
//! original line. The patterns are matched in one pass per text with Aho-Corasick.

use std::ops::Range;
use std::time::Instant;

use aho_corasick::AhoCorasick;

use crate::manual::find::query::split_terms;
use crate::paths::{RelPath, Root};
use crate::text::lines::LineIndex;
use crate::text::loose::{loose_from, loose_normalized};
use crate::text::normalize::normalize;
use crate::trace::Cutoff;
use crate::vault::search::{each_block, Block, Skip};

/// Hits at most this many lines apart belong to one candidate: a heading and the term a
/// few lines into its section, or two terms of one paragraph, are one passage.
pub const MERGE_GAP_LINES: u64 = 5;
/// A candidate spans at most this many lines, so a file that matches on every line still
/// gives places to read rather than one range the size of the file.
pub const MAX_RANGE_LINES: u64 = 40;

/// How a pattern was found, weakest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Way {
    #[default]
    None,
    /// Only in the loose text (Stage 1).
    Loose,
    /// In the normalised text (Stage 0).
    Normalized,
}

/// What one search looks for: the whole query and its terms, each normalised and loose.
#[derive(Debug)]
pub struct Patterns {
    /// Normalised texts: the whole query first, then each term that differs from it.
    texts: Vec<String>,
    /// The patterns that are query terms: what coverage and gaps are counted on. The
    /// whole query is the only term when splitting leaves none.
    pub terms: Vec<usize>,
    normalized: AhoCorasick,
    /// The loose automaton and the pattern each of its literals stands for; a pattern of
    /// separators only has no loose form and is left out of it.
    loose: Option<(AhoCorasick, Vec<usize>)>,
}

impl Patterns {
    /// The patterns of `phrase`, a query already normalised and trimmed (not empty).
    pub fn new(phrase: &str) -> Patterns {
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
        let normalized = AhoCorasick::new(&texts).expect("a few query literals");
        let (loose_texts, loose_ids): (Vec<String>, Vec<usize>) = texts
            .iter()
            .enumerate()
            .map(|(index, text)| (loose_normalized(text), index))
            .filter(|(loose, _)| !loose.is_empty())
            .unzip();
        let loose = (!loose_texts.is_empty()).then(|| {
            (
                AhoCorasick::new(&loose_texts).expect("a few query literals"),
                loose_ids,
            )
        });
        Patterns {
            texts,
            terms,
            normalized,
            loose,
        }
    }

    fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether the whole query counts on its own, beside its terms (a query of several
    /// terms: finding them together, as written, is the strongest evidence).
    pub fn phrase_apart(&self) -> bool {
        !self.terms.contains(&0)
    }

    /// The hits of one block in line order: each occurrence of a pattern in the
    /// normalised text, then in the loose text, as the original line it starts on.
    fn block_hits(&self, block: Block<'_>) -> Vec<Hit> {
        let normalised = normalize(block.text);
        let mut lines: Option<LineIndex> = None;
        let mut hits = Vec::new();
        let mut record = |span: Range<usize>, pattern: usize, way: Way| {
            if block.judged_before(&span) {
                return;
            }
            let lines = lines.get_or_insert_with(|| LineIndex::new(block.text));
            hits.push(Hit {
                line: block.line_of(lines, span.start),
                pattern,
                way,
            });
        };
        for found in self.normalized.find_overlapping_iter(&normalised.text) {
            let span = normalised.original_range(found.range());
            record(span, found.pattern().as_usize(), Way::Normalized);
        }
        if let Some((automaton, ids)) = &self.loose {
            let loose = loose_from(&normalised);
            for found in automaton.find_overlapping_iter(&loose.text) {
                let span = loose.original_range(found.range());
                record(span, ids[found.pattern().as_usize()], Way::Loose);
            }
        }
        hits.sort_by_key(|hit| hit.line);
        hits
    }
}

/// One occurrence of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hit {
    line: u64,
    pattern: usize,
    way: Way,
}

/// Nearby hits of one file, merged: the unit a candidate is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct LineRange {
    pub start_line: u64,
    pub end_line: u64,
    /// Per pattern, the best way it was found in the range.
    pub ways: Vec<Way>,
    /// Occurrences of any pattern in the range.
    pub matches: u32,
}

/// The ranges of one file as they build up, hit by hit.
#[derive(Debug)]
struct Ranges {
    ranges: Vec<LineRange>,
    hit_lines: u64,
    last_hit_line: u64,
    patterns: usize,
}

impl Ranges {
    fn new(patterns: usize) -> Ranges {
        Ranges {
            ranges: Vec::new(),
            hit_lines: 0,
            last_hit_line: 0,
            patterns,
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
        let joins = self.ranges.last().is_some_and(|last| {
            let start = last.start_line.min(hit.line);
            let end = last.end_line.max(hit.line);
            hit.line <= last.end_line + MERGE_GAP_LINES && end - start < MAX_RANGE_LINES
        });
        if !joins {
            self.ranges.push(LineRange {
                start_line: hit.line,
                end_line: hit.line,
                ways: vec![Way::None; self.patterns],
                matches: 0,
            });
        }
        let range = self.ranges.last_mut().expect("pushed above");
        range.start_line = range.start_line.min(hit.line);
        range.end_line = range.end_line.max(hit.line);
        range.ways[hit.pattern] = range.ways[hit.pattern].max(hit.way);
        range.matches = range.matches.saturating_add(1);
    }
}

/// What searching one file gave.
#[derive(Debug, Clone, PartialEq)]
pub enum FileOutcome {
    /// Read to its end, or until it held more ranges than the room left (the caller then
    /// sees more ranges than it can keep and sets the file aside as cut by the cap).
    Searched {
        ranges: Vec<LineRange>,
        hit_lines: u64,
    },
    /// Binary, or gone or unreadable since the listing (as `vault_search` counts them).
    Skipped,
    /// Not searched, or not to its end: what a continuation searches again, whole.
    Unscanned(Cutoff),
}

/// Searches the files of one run in order, within the time budget, keeping track of the
/// ranges found so far: once the run alone holds more than `cap`, every later file of the
/// run would be past the cap in path order too, so it is not read.
pub fn search_run(
    root: &Root,
    run: &[RelPath],
    patterns: &Patterns,
    deadline: Instant,
    cap: usize,
) -> Vec<FileOutcome> {
    let mut kept = 0;
    run.iter()
        .map(|rel| {
            if kept > cap {
                return FileOutcome::Unscanned(Cutoff::CandidateCap);
            }
            let outcome = search_file(root, rel, patterns, deadline, cap - kept);
            if let FileOutcome::Searched { ranges, .. } = &outcome {
                kept += ranges.len();
            }
            outcome
        })
        .collect()
}

/// Searches one file until its end, the deadline, or more than `room` ranges.
fn search_file(
    root: &Root,
    rel: &RelPath,
    patterns: &Patterns,
    deadline: Instant,
    room: usize,
) -> FileOutcome {
    if Instant::now() >= deadline {
        return FileOutcome::Unscanned(Cutoff::TimeBudget);
    }
    let mut found = Ranges::new(patterns.len());
    let mut out_of_time = false;
    let read = each_block(root, rel, |block| {
        if Instant::now() >= deadline {
            out_of_time = true;
            return false;
        }
        for hit in patterns.block_hits(block) {
            found.add(hit);
        }
        found.ranges.len() <= room
    });
    match read {
        Err(Skip) => FileOutcome::Skipped,
        Ok(()) if out_of_time => FileOutcome::Unscanned(Cutoff::TimeBudget),
        Ok(()) => FileOutcome::Searched {
            ranges: found.ranges,
            hit_lines: found.hit_lines,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize::normalize_str;
    use crate::vault::find::testing::vault;

    fn ranges_of(content: &str, query: &str) -> Vec<LineRange> {
        let (_dir, root) = vault(&[("a.md", content)]);
        let patterns = Patterns::new(&normalize_str(query));
        let rel = crate::paths::parse_relative("a.md").unwrap();
        let later = Instant::now() + std::time::Duration::from_secs(60);
        match search_file(&root, &rel, &patterns, later, usize::MAX) {
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
        let spans: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start_line, r.end_line)).collect();
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
        assert_eq!(ranges[0].start_line, filler_lines as u64 + 1);
    }

    #[test]
    fn a_spent_budget_leaves_the_file_unscanned_and_a_full_run_stops_reading() {
        let (_dir, root) = vault(&[("a.md", "term\n"), ("b.md", "term\n"), ("c.md", "x\n")]);
        let patterns = Patterns::new("term");
        let run: Vec<RelPath> = ["a.md", "b.md", "c.md"]
            .iter()
            .map(|p| crate::paths::parse_relative(p).unwrap())
            .collect();
        let spent = search_run(&root, &run, &patterns, Instant::now(), 10);
        assert!(spent
            .iter()
            .all(|o| *o == FileOutcome::Unscanned(Cutoff::TimeBudget)));
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let capped = search_run(&root, &run, &patterns, later, 0);
        assert!(matches!(&capped[0], FileOutcome::Searched { ranges, .. } if ranges.len() == 1));
        assert_eq!(capped[1], FileOutcome::Unscanned(Cutoff::CandidateCap));
        assert_eq!(capped[2], FileOutcome::Unscanned(Cutoff::CandidateCap));
    }
}
