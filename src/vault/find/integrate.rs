//! Stage 1.5 of `vault_find`: the verdict on the merged candidates (requirements §6.1.1),
//! run on whatever Stages 0-1 produced, also when the time budget cut them short.
//!
//! * **Rank**: the share of query terms a candidate holds (as written 1, only loosely
//!   0.8), plus half that for the whole query of several terms found together, plus a
//!   little for more occurrences; ties go by path and line, so answers are stable. Only
//!   the best `max_candidates` are kept for ranking; the verdict counts every candidate.
//! * **Gap**: a query term that no candidate holds in any way.
//! * **Too few** and **file bias** with the thresholds `manual_find` uses
//!   ([`crate::verdict`]).
//! * **Status**: `blocked` without candidates; `ready` with no gap, not too few, not
//!   lopsided and no cutoff; else `needs_followup`.

use std::cmp::Ordering;

use super::matcher::{LineRange, Patterns, Tally, Way};
use crate::paths::RelPath;
use crate::trace::CutoffReason;
use crate::verdict::{bias_of_counts, IntegrationStatus, Thresholds};

/// Weight of a loose-only find against one as written.
const LOOSE_WEIGHT: f32 = 0.8;
/// Weight of the whole query found together, beside its terms.
const PHRASE_WEIGHT: f32 = 0.5;
/// Weight of the number of occurrences (logarithmic): a tie-breaker, not a reason.
const MATCHES_WEIGHT: f32 = 0.05;

/// How strongly a range answers the query (see the module documentation).
pub(crate) fn score(range: &LineRange, patterns: &Patterns) -> f32 {
    let weight = |way: Way| match way {
        Way::Normalized => 1.0,
        Way::Loose => LOOSE_WEIGHT,
        Way::None => 0.0,
    };
    let terms = &patterns.terms;
    let coverage = terms.iter().map(|&t| weight(range.ways[t])).sum::<f32>() / terms.len() as f32;
    let phrase = if patterns.phrase_apart() {
        PHRASE_WEIGHT * weight(range.ways[0])
    } else {
        0.0
    };
    coverage + phrase + MATCHES_WEIGHT * (1.0 + range.matches as f32).ln()
}

/// One candidate: a range of nearby lines of one file where the query's patterns occur.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    pub path: RelPath,
    pub range: LineRange,
    pub score: f32,
}

impl Candidate {
    #[cfg(test)]
    pub(crate) fn new(path: RelPath, range: LineRange, patterns: &Patterns) -> Candidate {
        Candidate {
            path,
            score: score(&range, patterns),
            range,
        }
    }
}

/// Best first; ties by path, then line.
pub(crate) fn rank(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| order(a.score, &a.path, &a.range, b));
}

/// Where a candidate of `score`, `path` and `range` ranks against `other` ([`rank`]).
fn order(score: f32, path: &RelPath, range: &LineRange, other: &Candidate) -> Ordering {
    other
        .score
        .total_cmp(&score)
        .then_with(|| path.cmp(&other.path))
        .then(range.start_line.cmp(&other.range.start_line))
}

/// The best `cap` candidates offered so far, by [`rank`]: memory stays at about twice the
/// cap however many candidates a common query finds.
#[derive(Debug)]
pub(crate) struct Best {
    cap: usize,
    kept: Vec<Candidate>,
    /// Whether the first `cap` kept are the best so far, in rank order (after a cut that
    /// kept `cap`): any candidate ranked after the last of them can never be kept.
    ranked_to_cap: bool,
}

impl Best {
    pub(crate) fn new(cap: usize) -> Best {
        Best {
            cap,
            kept: Vec::new(),
            ranked_to_cap: false,
        }
    }

    pub(crate) fn offer(&mut self, candidates: impl IntoIterator<Item = Candidate>) {
        self.kept.extend(candidates);
        if self.kept.len() > 2 * self.cap {
            self.cut();
        }
    }

    /// Offers the ranges of `path`, each made a candidate only if it can still be among
    /// the best: a common query finds tens of thousands, and making each (a copy of its
    /// path) and ranking it among the others was a tenth of a warm `vault_find`.
    pub(crate) fn offer_ranges(
        &mut self,
        path: &RelPath,
        ranges: Vec<LineRange>,
        patterns: &Patterns,
    ) {
        for range in ranges {
            let score = score(&range, patterns);
            let floor = self.ranked_to_cap.then(|| &self.kept[self.cap - 1]);
            if floor.is_some_and(|floor| order(score, path, &range, floor) == Ordering::Greater) {
                continue;
            }
            self.offer([Candidate {
                path: path.clone(),
                range,
                score,
            }]);
        }
    }

    /// The score a candidate needs to be kept now: the last kept one's once `cap` are
    /// ranked (a lower score ranks after it, whatever its path and line), else none.
    pub(crate) fn floor(&self) -> f32 {
        match self.ranked_to_cap {
            true => self.kept[self.cap - 1].score,
            false => f32::NEG_INFINITY,
        }
    }

    fn cut(&mut self) {
        rank(&mut self.kept);
        self.kept.truncate(self.cap);
        // The first `cap` stay where they are until the next cut: appending keeps them.
        self.ranked_to_cap = self.kept.len() == self.cap;
    }

    /// The kept candidates, ranked.
    pub(crate) fn ranked(mut self) -> Vec<Candidate> {
        self.cut();
        self.kept
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub status: IntegrationStatus,
    pub file_bias: f32,
    pub too_few: bool,
    pub lopsided: bool,
    /// Query terms no candidate holds.
    pub gaps: usize,
}

impl Verdict {
    /// The conditions of `fill_gaps`: something the query asks for is missing, or too
    /// little was found.
    pub(crate) fn fill_gaps(&self) -> bool {
        self.gaps > 0 || self.too_few
    }
}

/// Judges every candidate found: `tally` adds them up, `per_file` counts them in each
/// file that has any.
pub(crate) fn integrate(
    tally: &Tally,
    per_file: &[usize],
    patterns: &Patterns,
    thresholds: Thresholds,
    cutoff: Option<CutoffReason>,
) -> Verdict {
    let gaps = patterns
        .terms
        .iter()
        .filter(|&&term| tally.held.get(term).is_none_or(|way| *way == Way::None))
        .count();
    let file_bias = bias_of_counts(per_file.iter().copied());
    let too_few = thresholds.too_few(tally.ranges);
    let lopsided = thresholds.lopsided(tally.ranges, file_bias);
    let status = if tally.ranges == 0 {
        IntegrationStatus::Blocked
    } else if gaps == 0 && !too_few && !lopsided && cutoff.is_none() {
        IntegrationStatus::Ready
    } else {
        IntegrationStatus::NeedsFollowup
    };
    Verdict {
        status,
        file_bias,
        too_few,
        lopsided,
        gaps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::parse_relative;
    use crate::text::lines::LineNo;

    const THRESHOLDS: Thresholds = Thresholds {
        candidate_low: 3,
        file_bias: 0.8,
    };

    /// Patterns of "rollback rules": the whole query, "rollback", "rules".
    fn patterns() -> Patterns {
        Patterns::new("rollback rules")
    }

    fn range(line: LineNo, ways: [Way; 3]) -> LineRange {
        LineRange {
            start_line: line,
            end_line: line,
            ways: ways.to_vec(),
            matches: 1,
        }
    }

    fn candidate(path: &str, line: LineNo, ways: [Way; 3]) -> Candidate {
        Candidate::new(
            parse_relative(path).unwrap(),
            range(line, ways),
            &patterns(),
        )
    }

    fn tally(ranges: &[[Way; 3]]) -> Tally {
        let mut tally = Tally::default();
        for ways in ranges {
            tally.count(&range(1, *ways));
        }
        tally
    }

    use Way::{Loose, None as No, Normalized as Yes};

    #[test]
    fn ranges_offered_past_the_floor_keep_what_offering_every_candidate_keeps() {
        let ways = [
            [Yes, Yes, Yes],
            [No, Yes, No],
            [No, Loose, Yes],
            [No, Yes, No],
        ];
        for cap in [1, 3, 7, 50] {
            let (mut each, mut past_floor) = (Best::new(cap), Best::new(cap));
            // Offered only the ranges that score at least its floor, as a file's search
            // keeps them (`matcher::Keep`).
            let mut at_floor = Best::new(cap);
            for file in ["b.md", "a.md", "c/d.md", "a.md", "c.md"] {
                let path = parse_relative(file).unwrap();
                let ranges: Vec<LineRange> = (0..40)
                    .map(|n| {
                        range(
                            n * 7 + file.len() as LineNo,
                            ways[(n as usize * 5 + file.len()) % 4],
                        )
                    })
                    .collect();
                each.offer(
                    ranges
                        .iter()
                        .map(|r| Candidate::new(path.clone(), r.clone(), &patterns())),
                );
                let floor = at_floor.floor();
                let above: Vec<LineRange> = ranges
                    .iter()
                    .filter(|range| score(range, &patterns()) >= floor)
                    .cloned()
                    .collect();
                at_floor.offer_ranges(&path, above, &patterns());
                past_floor.offer_ranges(&path, ranges, &patterns());
            }
            let ranked = each.ranked();
            assert_eq!(ranked, at_floor.ranked(), "cap {cap}");
            assert_eq!(ranked, past_floor.ranked(), "cap {cap}");
        }
    }

    #[test]
    fn scores_count_terms_then_the_whole_query_and_prefer_as_written() {
        let together = candidate("a.md", 1, [Yes, Yes, Yes]);
        let apart = candidate("a.md", 9, [No, Yes, Yes]);
        let loosely = candidate("a.md", 20, [No, Loose, Yes]);
        let half = candidate("a.md", 30, [No, Yes, No]);
        assert!(together.score > apart.score);
        assert!(apart.score > loosely.score);
        assert!(loosely.score > half.score);
    }

    #[test]
    fn the_best_are_kept_in_rank_order_ties_by_path_then_line() {
        let mut best = Best::new(3);
        best.offer([
            candidate("b.md", 1, [No, Yes, No]),
            candidate("a.md", 7, [No, Yes, No]),
            candidate("c.md", 1, [Yes, Yes, Yes]),
        ]);
        best.offer([
            candidate("a.md", 3, [No, Yes, No]),
            candidate("d.md", 1, [No, Loose, No]),
        ]);
        let ranked = best.ranked();
        let order: Vec<(&str, LineNo)> = ranked
            .iter()
            .map(|c| (c.path.as_str(), c.range.start_line))
            .collect();
        assert_eq!(order, [("c.md", 1), ("a.md", 3), ("a.md", 7)]);
    }

    #[test]
    fn verdicts() {
        let patterns = patterns();
        let all = tally(&[[Yes, Yes, Yes]; 3]);
        let ready = integrate(&all, &[1, 1, 1], &patterns, THRESHOLDS, None);
        assert_eq!((ready.status, ready.gaps), (IntegrationStatus::Ready, 0));
        let cut = integrate(
            &all,
            &[1, 1, 1],
            &patterns,
            THRESHOLDS,
            Some(CutoffReason::TimeBudget),
        );
        assert_eq!(
            cut.status,
            IntegrationStatus::NeedsFollowup,
            "a cutoff is never ready"
        );

        let one_term = tally(&[[No, Loose, No]; 3]);
        let gapped = integrate(&one_term, &[1, 1, 1], &patterns, THRESHOLDS, None);
        assert_eq!(
            (gapped.status, gapped.gaps),
            (IntegrationStatus::NeedsFollowup, 1)
        );
        assert!(gapped.fill_gaps());

        let two = tally(&[[Yes, Yes, Yes]; 2]);
        let few = integrate(&two, &[1, 1], &patterns, THRESHOLDS, None);
        assert!(few.too_few && few.fill_gaps() && few.status == IntegrationStatus::NeedsFollowup);

        let six = tally(&[[No, Yes, Yes]; 6]);
        let biased = integrate(&six, &[5, 1], &patterns, THRESHOLDS, None);
        assert!(biased.lopsided && !biased.fill_gaps());
        assert!((biased.file_bias - 5.0 / 6.0).abs() < 1e-6);

        let nothing = integrate(&Tally::default(), &[], &patterns, THRESHOLDS, None);
        assert_eq!(
            (nothing.status, nothing.gaps),
            (IntegrationStatus::Blocked, 2)
        );
    }
}
