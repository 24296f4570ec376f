//! When to stop scanning a file (requirements §6.1.2, DECISIONS.md `vault_coverage`): not
//! after a fixed number of rounds, but once coverage is high enough *and* the last round
//! brought too little new evidence for what it cost.
//!
//! ## What a round added
//!
//! A round is one `vault_coverage` call; [`super::rounds::Rounds`] remembers the previous
//! one of the same file and artifact set. Between two rounds:
//!
//! - `added_evidence_count` = covered lines with evidence now − then (0 if artifacts lost
//!   citations): the newly grounded lines;
//! - `added_est_tokens` = [`est_tokens`] of the characters the agent read from the file
//!   with `vault_read` / `vault_scan` since then: what the new evidence cost. (Counting
//!   the characters of the newly covered lines instead would price evidence by its own
//!   size, so every round would look equally worth it.)
//!
//! [`marginal_gain`] of the two is the `last_marginal_gain` of the next [`next_step`]. A
//! round in which nothing was read has no gain (`None`): the artifacts changed without new
//! reading, which at sufficient coverage stops.

use super::coverage::{Coverage, LineRange};

/// What `vault_coverage` proposes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextStep {
    /// `vault_scan` this range: the first one no artifact cites.
    Scan(LineRange),
    Stop,
}

/// Below `min_ratio`: scan the first uncovered range. At or above it: stop when the last
/// gain is under `marginal_gain_min` or unknown, otherwise keep scanning while anything is
/// uncovered. While nothing is covered yet the scan starts at line 1 (requirements
/// §6.1.2: the first scan of a file starts at the top, front matter included), later
/// rounds at the first uncovered range.
pub(crate) fn next_step(
    coverage: &Coverage,
    last_marginal_gain: Option<f64>,
    min_ratio: f64,
    marginal_gain_min: f64,
) -> NextStep {
    let coverage_reached = coverage.coverage_ratio >= min_ratio;
    let gain_exhausted = last_marginal_gain.is_none_or(|gain| gain < marginal_gain_min);
    match coverage.uncovered_ranges.first() {
        Some(&range) if !(coverage_reached && gain_exhausted) => {
            let start_line = if coverage.covered_ranges.is_empty() {
                1
            } else {
                range.start_line
            };
            NextStep::Scan(LineRange {
                start_line,
                ..range
            })
        }
        _ => NextStep::Stop,
    }
}

/// New evidence per added token (spec_v2 §8.2); `None` when no token was added.
pub(crate) fn marginal_gain(added_evidence_count: u64, added_est_tokens: u64) -> Option<f64> {
    (added_est_tokens > 0).then(|| added_evidence_count as f64 / added_est_tokens as f64)
}

/// The token estimate of requirements §9: `ceil(chars / 4)`.
pub(crate) fn est_tokens(chars: u64) -> u64 {
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::coverage::{coverage, LineProfile};
    use crate::text::lines::LineNo;

    const MIN_RATIO: f64 = 0.9;
    const GAIN_MIN: f64 = 0.02;

    fn plain(total_lines: LineNo, cited: &[(LineNo, LineNo)]) -> Coverage {
        coverage(&LineProfile::plain(total_lines), cited.iter().copied())
    }

    /// 9 of 10 lines covered (exactly MIN_RATIO), line 10 uncovered.
    fn at_min_ratio() -> Coverage {
        plain(10, &[(1, 9)])
    }

    fn scan(start_line: LineNo, end_line: LineNo) -> NextStep {
        NextStep::Scan(LineRange {
            start_line,
            end_line,
        })
    }

    #[test]
    fn below_the_ratio_scans_the_first_uncovered_range_whatever_the_gain() {
        let below = plain(10, &[(3, 4), (7, 8)]);
        for gain in [None, Some(0.0), Some(1.0)] {
            assert_eq!(next_step(&below, gain, MIN_RATIO, GAIN_MIN), scan(1, 2));
        }
        assert_eq!(
            next_step(&plain(10, &[]), None, MIN_RATIO, GAIN_MIN),
            scan(1, 10)
        );
    }

    #[test]
    fn the_first_scan_of_a_file_starts_at_line_1_even_above_blank_lines() {
        let front_matter = LineProfile {
            total_lines: 10,
            blank_ranges: vec![LineRange {
                start_line: 1,
                end_line: 4,
            }],
        };
        let nothing_cited = coverage(&front_matter, []);
        assert_eq!(nothing_cited.uncovered_ranges[0].start_line, 5);
        assert_eq!(
            next_step(&nothing_cited, None, MIN_RATIO, GAIN_MIN),
            scan(1, 10)
        );
        let later_round = coverage(&front_matter, [(5, 6)]);
        assert_eq!(
            next_step(&later_round, None, MIN_RATIO, GAIN_MIN),
            scan(7, 10)
        );
    }

    #[test]
    fn at_the_ratio_a_low_or_missing_gain_stops() {
        let covered = at_min_ratio();
        assert_eq!(
            next_step(&covered, None, MIN_RATIO, GAIN_MIN),
            NextStep::Stop
        );
        assert_eq!(
            next_step(&covered, Some(0.019), MIN_RATIO, GAIN_MIN),
            NextStep::Stop
        );
    }

    #[test]
    fn at_the_ratio_a_gain_at_or_above_the_minimum_keeps_scanning() {
        let covered = at_min_ratio();
        assert_eq!(
            next_step(&covered, Some(GAIN_MIN), MIN_RATIO, GAIN_MIN),
            scan(10, 10)
        );
        assert_eq!(
            next_step(&covered, Some(0.5), MIN_RATIO, GAIN_MIN),
            scan(10, 10)
        );
    }

    #[test]
    fn nothing_left_to_scan_stops() {
        let full = plain(10, &[(1, 10)]);
        assert_eq!(
            next_step(&full, Some(0.5), MIN_RATIO, GAIN_MIN),
            NextStep::Stop
        );
        let empty_file = plain(0, &[]);
        assert_eq!(next_step(&empty_file, None, 1.0, GAIN_MIN), NextStep::Stop);
    }

    #[test]
    fn gain_and_tokens() {
        assert_eq!(marginal_gain(3, 0), None);
        assert_eq!(marginal_gain(0, 10), Some(0.0));
        assert_eq!(marginal_gain(5, 10), Some(0.5));
        assert_eq!([0, 1, 4, 5, 8].map(est_tokens), [0, 1, 1, 2, 2]);
    }
}
