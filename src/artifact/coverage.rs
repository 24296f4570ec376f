//! `vault_coverage`'s measure: which lines of one vault file the artifacts cite.
//!
//! Citations are clipped to the file (a range running past the end still covers the lines
//! that exist) and merged, adjacent ones included, so the answer is the fewest ranges.
//! A reversed range covers nothing here; the audit reports it as `source_out_of_range`.

/// A 1-based inclusive line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub start_line: u64,
    pub end_line: u64,
}

impl LineRange {
    pub fn line_count(self) -> u64 {
        self.end_line - self.start_line + 1
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Merged, ascending, inside `1..=total_lines`.
    pub covered_ranges: Vec<LineRange>,
    /// The rest of `1..=total_lines`, ascending.
    pub uncovered_ranges: Vec<LineRange>,
    /// Covered lines / total lines; 1.0 for an empty file (nothing is left to cite).
    pub coverage_ratio: f64,
}

impl Coverage {
    pub fn covered_line_count(&self) -> u64 {
        self.covered_ranges
            .iter()
            .map(|range| range.line_count())
            .sum()
    }
}

/// The coverage of a file of `total_lines` lines by the `(start_line, end_line)` ranges
/// cited in it (see `Artifact::cited_ranges`).
pub fn coverage(total_lines: u64, cited: impl IntoIterator<Item = (u64, u64)>) -> Coverage {
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
    let uncovered_ranges = gaps(&covered_ranges, total_lines);
    let mut result = Coverage {
        covered_ranges,
        uncovered_ranges,
        coverage_ratio: 1.0,
    };
    if total_lines > 0 {
        result.coverage_ratio = result.covered_line_count() as f64 / total_lines as f64;
    }
    result
}

/// The lines of `1..=total_lines` outside the merged, ascending `covered` ranges.
fn gaps(covered: &[LineRange], total_lines: u64) -> Vec<LineRange> {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ranges(pairs: &[(u64, u64)]) -> Vec<LineRange> {
        pairs
            .iter()
            .map(|&(start_line, end_line)| LineRange {
                start_line,
                end_line,
            })
            .collect()
    }

    #[test]
    fn overlapping_and_adjacent_ranges_merge() {
        let result = coverage(20, [(5, 8), (1, 2), (7, 10), (3, 4), (15, 15)]);
        assert_eq!(result.covered_ranges, ranges(&[(1, 10), (15, 15)]));
        assert_eq!(result.uncovered_ranges, ranges(&[(11, 14), (16, 20)]));
        assert_eq!(result.covered_line_count(), 11);
        assert_eq!(result.coverage_ratio, 11.0 / 20.0);
    }

    #[test]
    fn ranges_are_clipped_to_the_file_and_reversed_ones_ignored() {
        let result = coverage(10, [(0, 2), (8, 40), (50, 60), (6, 5)]);
        assert_eq!(result.covered_ranges, ranges(&[(1, 2), (8, 10)]));
        assert_eq!(result.uncovered_ranges, ranges(&[(3, 7)]));
        assert_eq!(result.coverage_ratio, 0.5);
    }

    #[test]
    fn nothing_cited_leaves_the_whole_file_and_an_empty_file_is_covered() {
        let result = coverage(7, []);
        assert_eq!(result.uncovered_ranges, ranges(&[(1, 7)]));
        assert_eq!(result.coverage_ratio, 0.0);
        let empty = coverage(0, [(1, 3)]);
        assert_eq!(
            (empty.covered_ranges.len(), empty.uncovered_ranges.len()),
            (0, 0)
        );
        assert_eq!(empty.coverage_ratio, 1.0);
        assert_eq!(coverage(3, [(1, 3)]).coverage_ratio, 1.0);
    }

    proptest! {
        /// Covered and uncovered ranges tile the file exactly, and the ratio counts lines.
        #[test]
        fn covered_and_uncovered_tile_the_file(
            total_lines in 0u64..60,
            cited in proptest::collection::vec((0u64..70, 0u64..70), 0..8),
        ) {
            let result = coverage(total_lines, cited.clone());
            let mut tiles: Vec<LineRange> = result
                .covered_ranges
                .iter()
                .chain(&result.uncovered_ranges)
                .copied()
                .collect();
            tiles.sort_by_key(|range| range.start_line);
            let mut next_line = 1;
            for tile in &tiles {
                prop_assert_eq!(tile.start_line, next_line);
                prop_assert!(tile.start_line <= tile.end_line);
                next_line = tile.end_line + 1;
            }
            prop_assert_eq!(next_line, total_lines + 1);
            for pair in result.covered_ranges.windows(2) {
                prop_assert!(pair[1].start_line > pair[0].end_line + 1, "merged: {:?}", pair);
            }
            let cited_lines = (1..=total_lines)
                .filter(|line| cited.iter().any(|&(s, e)| s <= *line && *line <= e))
                .count() as u64;
            prop_assert_eq!(result.covered_line_count(), cited_lines);
        }
    }
}
