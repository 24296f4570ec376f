//! `vault_coverage`'s measure: which lines of one vault file the artifacts cite.
//!
//! Citations are clipped to the file (a range running past the end still covers the lines
//! that exist) and merged, adjacent ones included, so the answer is the fewest ranges.
//! A reversed range covers nothing here; the audit reports it as `source_out_of_range`.
//!
//! Not every line can ground an element: blank lines, a Markdown file's front matter and
//! its one-line HTML comments (where bridge copies record their origin) hold no evidence.
//! Counting them would keep a short draft below `COVERAGE_MIN_RATIO` however carefully it
//! is cited, and propose scans of nothing but empty lines. So the ratio counts only lines
//! with evidence, and an uncovered range starts and ends on such a line (blank lines inside
//! it stay, so a paragraph break does not split a gap in two); a gap of blank lines only is
//! no gap.

use crate::text::lines::LineNo;

/// A 1-based inclusive line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineRange {
    pub start_line: LineNo,
    pub end_line: LineNo,
}

impl LineRange {
    pub(crate) fn line_count(self) -> LineNo {
        self.end_line - self.start_line + 1
    }

    /// Lines shared with `other`.
    fn overlap(self, other: LineRange) -> LineNo {
        let start = self.start_line.max(other.start_line);
        let end = self.end_line.min(other.end_line);
        if start <= end {
            end - start + 1
        } else {
            0
        }
    }
}

#[cfg(test)]
impl LineRange {
    /// Ranges from `(start_line, end_line)` pairs, for tests.
    pub(crate) fn from_pairs(pairs: &[(LineNo, LineNo)]) -> Vec<LineRange> {
        pairs
            .iter()
            .map(|&(start_line, end_line)| LineRange {
                start_line,
                end_line,
            })
            .collect()
    }
}

/// What coverage needs to know about a file's lines: how many there are, and which hold
/// no evidence (the tool layer streams the file once to find out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LineProfile {
    pub total_lines: LineNo,
    /// Lines without evidence (blank, front matter, comment lines; see
    /// `vault::profile`): ascending, disjoint, adjacent ones merged, inside
    /// `1..=total_lines`.
    pub blank_ranges: Vec<LineRange>,
}

impl LineProfile {
    /// A file of `total_lines` lines that all hold text.
    pub(crate) fn plain(total_lines: LineNo) -> LineProfile {
        LineProfile {
            total_lines,
            blank_ranges: Vec::new(),
        }
    }

    /// Lines that hold text: the denominator of the coverage ratio.
    pub(crate) fn evidence_lines(&self) -> LineNo {
        let blank: LineNo = self
            .blank_ranges
            .iter()
            .map(|range| range.line_count())
            .sum();
        self.total_lines - blank
    }

    /// The blank range holding `line`, if any.
    fn blank_at(&self, line: LineNo) -> Option<LineRange> {
        let after = self
            .blank_ranges
            .partition_point(|range| range.start_line <= line);
        self.blank_ranges[..after]
            .last()
            .filter(|range| line <= range.end_line)
            .copied()
    }

    /// `range` without blank lines at either end; `None` when nothing else is left.
    fn trimmed(&self, range: LineRange) -> Option<LineRange> {
        let start_line = match self.blank_at(range.start_line) {
            Some(blank) => blank.end_line + 1,
            None => range.start_line,
        };
        let end_line = match self.blank_at(range.end_line) {
            Some(blank) => blank.start_line.checked_sub(1)?,
            None => range.end_line,
        };
        (start_line <= end_line).then_some(LineRange {
            start_line,
            end_line,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Coverage {
    /// Merged, ascending, inside `1..=total_lines`.
    pub covered_ranges: Vec<LineRange>,
    /// The uncited runs of lines that hold evidence, ascending (see the module doc).
    pub uncovered_ranges: Vec<LineRange>,
    /// Covered lines with evidence, the numerator of `coverage_ratio`.
    pub covered_evidence_lines: LineNo,
    /// Covered / all lines with evidence; 1.0 when the file has none (nothing is left to
    /// cite).
    pub coverage_ratio: f64,
}

/// The coverage of a file by the `(start_line, end_line)` ranges cited in it (see
/// `Artifact::cited_ranges`).
pub(crate) fn coverage(
    profile: &LineProfile,
    cited: impl IntoIterator<Item = (LineNo, LineNo)>,
) -> Coverage {
    let total_lines = profile.total_lines;
    let mut clipped: Vec<LineRange> = cited
        .into_iter()
        .map(|(start, end)| LineRange {
            start_line: start.max(1),
            end_line: end.min(total_lines),
        })
        .filter(|range| range.start_line <= range.end_line)
        .collect();
    clipped.sort_by_key(|range| range.start_line);
    let mut covered_ranges: Vec<LineRange> = Vec::with_capacity(clipped.len());
    for range in clipped {
        match covered_ranges.last_mut() {
            Some(last) if range.start_line <= last.end_line + 1 => {
                last.end_line = last.end_line.max(range.end_line);
            }
            _ => covered_ranges.push(range),
        }
    }
    let uncovered_ranges = gaps(&covered_ranges, total_lines)
        .into_iter()
        .filter_map(|gap| profile.trimmed(gap))
        .collect();
    let covered_blank = shared_lines(&covered_ranges, &profile.blank_ranges);
    let covered_lines: LineNo = covered_ranges.iter().map(|range| range.line_count()).sum();
    let covered_evidence_lines = covered_lines - covered_blank;
    let evidence_lines = profile.evidence_lines();
    let coverage_ratio = if evidence_lines == 0 {
        1.0
    } else {
        covered_evidence_lines as f64 / evidence_lines as f64
    };
    Coverage {
        covered_ranges,
        uncovered_ranges,
        covered_evidence_lines,
        coverage_ratio,
    }
}

/// The lines of `1..=total_lines` outside the merged, ascending `covered` ranges.
fn gaps(covered: &[LineRange], total_lines: LineNo) -> Vec<LineRange> {
    let mut gaps = Vec::new();
    let mut next_uncovered = 1;
    for range in covered {
        if range.start_line > next_uncovered {
            gaps.push(LineRange {
                start_line: next_uncovered,
                end_line: range.start_line - 1,
            });
        }
        next_uncovered = range.end_line + 1;
    }
    if next_uncovered <= total_lines {
        gaps.push(LineRange {
            start_line: next_uncovered,
            end_line: total_lines,
        });
    }
    gaps
}

/// Lines in both of two ascending lists of disjoint ranges, in one pass over each.
fn shared_lines(a: &[LineRange], b: &[LineRange]) -> LineNo {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        shared += a[i].overlap(b[j]);
        if a[i].end_line < b[j].end_line {
            i += 1;
        } else {
            j += 1;
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ranges(pairs: &[(LineNo, LineNo)]) -> Vec<LineRange> {
        LineRange::from_pairs(pairs)
    }

    fn plain(total_lines: LineNo, cited: &[(LineNo, LineNo)]) -> Coverage {
        coverage(&LineProfile::plain(total_lines), cited.iter().copied())
    }

    #[test]
    fn overlapping_and_adjacent_ranges_merge() {
        let result = plain(20, &[(5, 8), (1, 2), (7, 10), (3, 4), (15, 15)]);
        assert_eq!(result.covered_ranges, ranges(&[(1, 10), (15, 15)]));
        assert_eq!(result.uncovered_ranges, ranges(&[(11, 14), (16, 20)]));
        assert_eq!(result.covered_evidence_lines, 11);
        assert_eq!(result.coverage_ratio, 11.0 / 20.0);
    }

    #[test]
    fn ranges_are_clipped_to_the_file_and_reversed_ones_ignored() {
        let result = plain(10, &[(0, 2), (8, 40), (50, 60), (6, 5)]);
        assert_eq!(result.covered_ranges, ranges(&[(1, 2), (8, 10)]));
        assert_eq!(result.uncovered_ranges, ranges(&[(3, 7)]));
        assert_eq!(result.coverage_ratio, 0.5);
    }

    #[test]
    fn nothing_cited_leaves_the_whole_file_and_an_empty_file_is_covered() {
        let result = plain(7, &[]);
        assert_eq!(result.uncovered_ranges, ranges(&[(1, 7)]));
        assert_eq!(result.coverage_ratio, 0.0);
        let empty = plain(0, &[(1, 3)]);
        assert_eq!(
            (empty.covered_ranges.len(), empty.uncovered_ranges.len()),
            (0, 0)
        );
        assert_eq!(empty.coverage_ratio, 1.0);
        assert_eq!(plain(3, &[(1, 3)]).coverage_ratio, 1.0);
    }

    #[test]
    fn blank_lines_neither_count_nor_open_a_gap() {
        // Front matter 1-4, blank 5, text 6-9, blank 10, text 11-12, blank 13-14.
        let profile = LineProfile {
            total_lines: 14,
            blank_ranges: ranges(&[(1, 5), (10, 10), (13, 14)]),
        };
        let result = coverage(&profile, [(6, 9)]);
        assert_eq!(result.uncovered_ranges, ranges(&[(11, 12)]));
        assert_eq!(result.covered_evidence_lines, 4);
        assert_eq!(result.coverage_ratio, 4.0 / 6.0);
        // A gap inside text keeps its inner blank line; a gap of blank lines is none.
        let result = coverage(&profile, [(11, 11)]);
        assert_eq!(result.uncovered_ranges, ranges(&[(6, 9), (12, 12)]));
        let result = coverage(&profile, [(6, 9), (11, 12)]);
        assert_eq!(result.uncovered_ranges, []);
        assert_eq!(result.coverage_ratio, 1.0);
        // Citing blank lines covers them without counting them.
        let result = coverage(&profile, [(1, 9)]);
        assert_eq!(result.covered_evidence_lines, 4);
        let all_blank = LineProfile {
            total_lines: 3,
            blank_ranges: ranges(&[(1, 3)]),
        };
        assert_eq!(coverage(&all_blank, []).coverage_ratio, 1.0);
        assert_eq!(coverage(&all_blank, []).uncovered_ranges, []);
    }

    /// A profile of `total_lines` whose lines in `blank` (any order, any values) are
    /// blank, with the ranges built the way the tool layer builds them.
    fn profile_of(total_lines: LineNo, blank: &[LineNo]) -> LineProfile {
        let mut blank_ranges: Vec<LineRange> = Vec::new();
        for line in 1..=total_lines {
            if !blank.contains(&line) {
                continue;
            }
            match blank_ranges.last_mut() {
                Some(last) if last.end_line + 1 == line => last.end_line = line,
                _ => blank_ranges.push(LineRange {
                    start_line: line,
                    end_line: line,
                }),
            }
        }
        LineProfile {
            total_lines,
            blank_ranges,
        }
    }

    proptest! {
        /// Every line is covered, inside exactly one uncovered range, or blank and outside
        /// both; uncovered ranges start and end on text; the ratio counts text lines.
        #[test]
        fn covered_uncovered_and_blank_account_for_every_line(
            total_lines in 0 as LineNo..60,
            cited in proptest::collection::vec((0 as LineNo..70, 0 as LineNo..70), 0..8),
            blank in proptest::collection::vec(1 as LineNo..60, 0..30),
        ) {
            let profile = profile_of(total_lines, &blank);
            let is_blank = |line: LineNo| blank.contains(&line);
            let result = coverage(&profile, cited.clone());
            let is_cited = |line: LineNo| cited.iter().any(|&(s, e)| s <= line && line <= e);
            for line in 1..=total_lines {
                let covered = result.covered_ranges.iter().any(|r| r.start_line <= line && line <= r.end_line);
                let uncovered = result.uncovered_ranges.iter().filter(|r| r.start_line <= line && line <= r.end_line).count();
                prop_assert_eq!(covered, is_cited(line), "line {}", line);
                prop_assert!(uncovered <= 1);
                prop_assert!(!(covered && uncovered == 1), "line {} both", line);
                if !covered && !is_blank(line) {
                    prop_assert_eq!(uncovered, 1, "text line {} unaccounted", line);
                }
            }
            for range in &result.uncovered_ranges {
                prop_assert!(!is_blank(range.start_line) && !is_blank(range.end_line), "{:?}", range);
            }
            for pair in result.covered_ranges.windows(2) {
                prop_assert!(pair[1].start_line > pair[0].end_line + 1, "merged: {:?}", pair);
            }
            let text_lines = (1..=total_lines).filter(|l| !is_blank(*l)).count() as LineNo;
            let covered_text = (1..=total_lines).filter(|l| !is_blank(*l) && is_cited(*l)).count() as LineNo;
            prop_assert_eq!(result.covered_evidence_lines, covered_text);
            if text_lines > 0 {
                prop_assert_eq!(result.coverage_ratio, covered_text as f64 / text_lines as f64);
            } else {
                prop_assert_eq!(result.coverage_ratio, 1.0);
            }
        }
    }
}
