//! Stage 1.5 of `vault_find`: the verdict on the merged candidates (requirements §6.1.1),
//! run on whatever Stages 0-1 produced, also when a budget cut them short.
//!
//! * **Rank**: the share of query terms a candidate holds (as written 1, only loosely
//!   0.8), plus half that for the whole query of several terms found together, plus a
//!   little for more occurrences; ties go by path and line, so answers are stable.
//! * **Gap**: a query term that no candidate holds in any way.
//! * **Too few** and **file bias** with the thresholds `manual_find` uses
//!   ([`crate::verdict`]).
//! * **Status**: `blocked` without candidates; `ready` with no gap, not too few, not
//!   lopsided and no cutoff; else `needs_followup`.

use super::matcher::{LineRange, Patterns, Way};
use crate::paths::RelPath;
use crate::trace::Cutoff;
use crate::verdict::{file_bias_ratio, Status, Thresholds};

/// Weight of a loose-only find against one as written.
const LOOSE_WEIGHT: f32 = 0.8;
/// Weight of the whole query found together, beside its terms.
const PHRASE_WEIGHT: f32 = 0.5;
/// Weight of the number of occurrences (logarithmic): a tie-breaker, not a reason.
const MATCHES_WEIGHT: f32 = 0.05;

/// One candidate: a range of nearby lines of one file where the query's patterns occur.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub path: RelPath,
    pub range: LineRange,
    pub score: f32,
}

impl Candidate {
    pub fn new(path: RelPath, range: LineRange, patterns: &Patterns) -> Candidate {
        let weight = |way: Way| match way {
            Way::Normalized => 1.0,
            Way::Loose => LOOSE_WEIGHT,
            Way::None => 0.0,
        };
        let terms = &patterns.terms;
        let coverage =
            terms.iter().map(|&t| weight(range.ways[t])).sum::<f32>() / terms.len() as f32;
        let phrase = if patterns.phrase_apart() {
            PHRASE_WEIGHT * weight(range.ways[0])
        } else {
            0.0
        };
        let matches = MATCHES_WEIGHT * (1.0 + range.matches as f32).ln();
        Candidate {
            path,
            score: coverage + phrase + matches,
            range,
        }
    }

    /// Whether any pattern was found as written (Stage 0 evidence).
    pub fn normalized(&self) -> bool {
        self.range.ways.contains(&Way::Normalized)
    }

    /// Whether some pattern was found only loosely (Stage 1 evidence).
    pub fn loose(&self) -> bool {
        self.range.ways.contains(&Way::Loose)
    }
}

/// Best first; ties by path, then line.
pub fn rank(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.range.start_line.cmp(&b.range.start_line))
    });
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub status: Status,
    pub file_bias: f32,
    pub too_few: bool,
    pub lopsided: bool,
    /// Query terms no candidate holds.
    pub gaps: usize,
}

impl Verdict {
    /// The conditions of `fill_gaps`: something the query asks for is missing, or too
    /// little was found.
    pub fn fill_gaps(&self) -> bool {
        self.gaps > 0 || self.too_few
    }
}

/// Judges the ranked `candidates`.
pub fn integrate(
    candidates: &[Candidate],
    patterns: &Patterns,
    thresholds: Thresholds,
    cutoff: Option<Cutoff>,
) -> Verdict {
    let gaps = patterns
        .terms
        .iter()
        .filter(|&&term| candidates.iter().all(|c| c.range.ways[term] == Way::None))
        .count();
    let file_bias = file_bias_ratio(candidates.iter().map(|c| &c.path));
    let too_few = thresholds.too_few(candidates.len());
    let lopsided = thresholds.lopsided(candidates.len(), file_bias);
    let status = if candidates.is_empty() {
        Status::Blocked
    } else if gaps == 0 && !too_few && !lopsided && cutoff.is_none() {
        Status::Ready
    } else {
        Status::NeedsFollowup
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

    const THRESHOLDS: Thresholds = Thresholds {
        candidate_low: 3,
        file_bias: 0.8,
    };

    /// Patterns of "rollback rules": the whole query, "rollback", "rules".
    fn patterns() -> Patterns {
        Patterns::new("rollback rules")
    }

    fn candidate(path: &str, line: u64, ways: [Way; 3]) -> Candidate {
        let range = LineRange {
            start_line: line,
            end_line: line,
            ways: ways.to_vec(),
            matches: 1,
        };
        Candidate::new(parse_relative(path).unwrap(), range, &patterns())
    }

    use Way::{Loose, None as No, Normalized as Yes};

    #[test]
    fn scores_count_terms_then_the_whole_query_and_prefer_as_written() {
        let together = candidate("a.md", 1, [Yes, Yes, Yes]);
        let apart = candidate("a.md", 9, [No, Yes, Yes]);
        let loosely = candidate("a.md", 20, [No, Loose, Yes]);
        let half = candidate("a.md", 30, [No, Yes, No]);
        assert!(together.score > apart.score);
        assert!(apart.score > loosely.score);
        assert!(loosely.score > half.score);
        assert!(loosely.loose() && loosely.normalized() && !apart.loose());
    }

    #[test]
    fn ties_rank_by_path_then_line() {
        let mut candidates = vec![
            candidate("b.md", 1, [No, Yes, No]),
            candidate("a.md", 7, [No, Yes, No]),
            candidate("a.md", 3, [No, Yes, No]),
        ];
        rank(&mut candidates);
        let order: Vec<(&str, u64)> = candidates
            .iter()
            .map(|c| (c.path.as_str(), c.range.start_line))
            .collect();
        assert_eq!(order, [("a.md", 3), ("a.md", 7), ("b.md", 1)]);
    }

    #[test]
    fn verdicts() {
        let patterns = patterns();
        let spread: Vec<Candidate> = ["a.md", "b.md", "c.md"]
            .iter()
            .map(|p| candidate(p, 1, [Yes, Yes, Yes]))
            .collect();
        let ready = integrate(&spread, &patterns, THRESHOLDS, None);
        assert_eq!((ready.status, ready.gaps), (Status::Ready, 0));
        let cut = integrate(&spread, &patterns, THRESHOLDS, Some(Cutoff::TimeBudget));
        assert_eq!(cut.status, Status::NeedsFollowup, "a cutoff is never ready");

        let one_term: Vec<Candidate> = ["a.md", "b.md", "c.md"]
            .iter()
            .map(|p| candidate(p, 1, [No, Loose, No]))
            .collect();
        let gapped = integrate(&one_term, &patterns, THRESHOLDS, None);
        assert_eq!((gapped.status, gapped.gaps), (Status::NeedsFollowup, 1));
        assert!(gapped.fill_gaps());

        let few = integrate(&spread[..2], &patterns, THRESHOLDS, None);
        assert!(few.too_few && few.fill_gaps() && few.status == Status::NeedsFollowup);

        let mut one_file: Vec<Candidate> = (1..=5)
            .map(|n| candidate("a.md", n * 10, [No, Yes, Yes]))
            .collect();
        one_file.push(candidate("b.md", 1, [No, Yes, Yes]));
        let biased = integrate(&one_file, &patterns, THRESHOLDS, None);
        assert!(biased.lopsided && !biased.fill_gaps());
        assert!((biased.file_bias - 5.0 / 6.0).abs() < 1e-6);

        let nothing = integrate(&[], &patterns, THRESHOLDS, None);
        assert_eq!((nothing.status, nothing.gaps), (Status::Blocked, 2));
    }
}
