//! The tuning policy of requirements §9, "the lowest estimated tokens whose recall stays
//! at or above `ADAPTIVE_MIN_RECALL`", decided for one threshold at a time.
//!
//! Tokens: a threshold only decides whether Stage 4 fires, and Stage 4 only adds tokens,
//! so a looser value (firing less) costs less exactly when it would have stopped Stage 4
//! on some recent search. That is known for every search from its `candidates` and
//! `file_bias_ratio`, whatever value was in force, whereas mean costs measured under
//! different values mix in whatever else changed in the traffic between them.
//!
//! Recall can only be measured under the value that was in force, so evidence is the
//! recent searches that were allowed Stage 4, grouped by the value of the threshold when
//! they ran. A value *has evidence* when at least [`MIN_RECALL_SAMPLES`] of its searches
//! have a recall figure. With `v` the current value, `looser` one daily step toward
//! firing less and `tighter` one step toward firing more (clamped to the bounds):
//!
//! 1. `v` has no evidence: stay.
//! 2. recall(v) is below the floor: move to `tighter` if some search under `v` missed refs
//!    (recall < 1) without Stage 4 and `tighter`, unlike `v`, would have fired on it;
//!    else stay, because this threshold cannot reach those misses (the other one may).
//! 3. Otherwise move to `looser` if it would have stopped Stage 4 on at least one recent
//!    search (it saves tokens) and it keeps recall: measured at or above the floor when
//!    `looser` has evidence, or, untried, recall(v) at least the floor plus
//!    [`EXPLORE_MARGIN`], so a value that barely meets the floor is not gambled.
//!
//! The two thresholds are judged apart, each grouping by its own value, so a change of
//! one blurs the other's recall groups for a while; step 2 is what keeps a recall
//! shortfall from pushing a threshold that could not have helped.

use std::collections::BTreeMap;

use super::history::{Observation, Summary};
use super::thresholds::Dial;

/// Searches with a recall figure a value needs before it is judged.
pub(crate) const MIN_RECALL_SAMPLES: u64 = 20;

/// How far above the floor recall must be before a looser, untried value is tried.
pub(crate) const EXPLORE_MARGIN: f64 = 0.02;

/// The value `dial` should move to from `current`, judged on `evidence`; `None` to stay.
pub(crate) fn next_value(
    dial: Dial,
    current: i64,
    evidence: &[&Observation],
    min_recall: f64,
) -> Option<i64> {
    let groups = group_by_value(dial, evidence);
    let measured_recall = |units: i64| {
        groups
            .get(&units)
            .filter(|summary| summary.recall_samples >= MIN_RECALL_SAMPLES)
            .and_then(Summary::recall)
    };
    let recall_here = measured_recall(current)?;
    let fires = |units: i64, o: &Observation| {
        dial.fires_at(
            units,
            o.find.summary.candidates,
            o.find.summary.file_bias_ratio,
        )
    };
    let target = if recall_here < min_recall {
        let tighter = dial.step(current, true);
        let catches_a_miss = evidence.iter().any(|o| {
            dial.units(&o.find.summary.thresholds) == current
                && missed_without_stage4(o)
                && fires(tighter, o)
                && !fires(current, o)
        });
        if catches_a_miss {
            tighter
        } else {
            current
        }
    } else {
        let looser = dial.step(current, false);
        let saves_tokens = evidence
            .iter()
            .any(|o| fires(current, o) && !fires(looser, o));
        let keeps_recall = match measured_recall(looser) {
            Some(recall) => recall >= min_recall,
            None => recall_here >= min_recall + EXPLORE_MARGIN,
        };
        if saves_tokens && keeps_recall {
            looser
        } else {
            current
        }
    };
    (target != current).then_some(target)
}

fn group_by_value(dial: Dial, evidence: &[&Observation]) -> BTreeMap<i64, Summary> {
    let mut groups: BTreeMap<i64, Summary> = BTreeMap::new();
    for observation in evidence {
        let units = dial.units(&observation.find.summary.thresholds);
        groups.entry(units).or_default().add(observation);
    }
    groups
}

fn missed_without_stage4(observation: &Observation) -> bool {
    !observation.find.summary.scope_expanded && observation.recall.is_some_and(|r| r < 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::history::History;
    use crate::adaptive::record::Record;
    use crate::adaptive::test_support::{facts, find, usage, DEFAULTS};
    use crate::adaptive::thresholds::Thresholds;

    /// `count` alike searches under `thresholds`, each with `recall` as (found, used).
    struct Batch {
        thresholds: Thresholds,
        count: usize,
        recall: (u64, u64),
        candidates: u64,
        file_bias_ratio: f64,
        fired: bool,
    }

    impl Batch {
        /// Ten candidates spread over files: neither threshold fires.
        fn at(thresholds: Thresholds) -> Batch {
            Batch {
                thresholds,
                count: 30,
                recall: (1, 1),
                candidates: 10,
                file_bias_ratio: 0.3,
                fired: false,
            }
        }

        /// Two candidates: Stage 4 fires at a candidate-low threshold of 3, not at 2.
        fn few_candidates(thresholds: Thresholds) -> Batch {
            Batch {
                candidates: 2,
                fired: true,
                ..Batch::at(thresholds)
            }
        }
    }

    fn history(batches: &[Batch]) -> History {
        let mut records: Vec<Record> = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            for n in 0..batch.count {
                let trace_id = format!("b{b}-{n}");
                let mut search = facts(&trace_id);
                search.summary.thresholds = batch.thresholds;
                search.summary.candidates = batch.candidates;
                search.summary.file_bias_ratio = batch.file_bias_ratio;
                search.summary.scope_expanded = batch.fired;
                records.push(find(0, search));
                records.push(usage(0, &trace_id, batch.recall.1, batch.recall.0));
            }
        }
        History::replay(&records)
    }

    fn decide(dial: Dial, current: i64, batches: &[Batch]) -> Option<i64> {
        let history = history(batches);
        let evidence: Vec<&Observation> = history.iter().collect();
        next_value(dial, current, &evidence, 0.90)
    }

    fn with_low(candidate_low: u32) -> Thresholds {
        Thresholds {
            candidate_low,
            ..DEFAULTS
        }
    }

    #[test]
    fn without_evidence_nothing_moves() {
        let few = Batch {
            count: 5,
            ..Batch::few_candidates(DEFAULTS)
        };
        assert_eq!(decide(Dial::CandidateLow, 3, &[few]), None);
    }

    #[test]
    fn comfortable_recall_tries_a_looser_value_that_saves_tokens() {
        let few = Batch::few_candidates(DEFAULTS);
        assert_eq!(decide(Dial::CandidateLow, 3, &[few]), Some(2));
        let one_file = Batch {
            candidates: 8,
            file_bias_ratio: 0.81,
            fired: true,
            ..Batch::at(DEFAULTS)
        };
        assert_eq!(decide(Dial::FileBias, 800, &[one_file]), Some(830));
    }

    #[test]
    fn a_looser_value_that_saves_nothing_is_not_taken() {
        assert_eq!(decide(Dial::CandidateLow, 3, &[Batch::at(DEFAULTS)]), None);
        assert_eq!(decide(Dial::FileBias, 800, &[Batch::at(DEFAULTS)]), None);
    }

    #[test]
    fn recall_just_above_the_floor_is_not_gambled() {
        let batch = Batch {
            recall: (91, 100),
            ..Batch::few_candidates(DEFAULTS)
        };
        assert_eq!(decide(Dial::CandidateLow, 3, &[batch]), None);
    }

    #[test]
    fn recall_below_the_floor_tightens_the_threshold_that_would_have_fired() {
        // Three candidates, Stage 4 silent, half the used refs missed: a candidate-low
        // threshold of 4 would have fired; the file-bias threshold never could.
        let missing = || Batch {
            recall: (1, 2),
            candidates: 3,
            ..Batch::at(DEFAULTS)
        };
        assert_eq!(decide(Dial::CandidateLow, 3, &[missing()]), Some(4));
        assert_eq!(decide(Dial::FileBias, 800, &[missing()]), None);
    }

    #[test]
    fn a_looser_value_that_lost_recall_is_not_taken_again() {
        let looser_was_bad = Batch {
            recall: (1, 2),
            ..Batch::at(with_low(2))
        };
        let here = Batch::few_candidates(DEFAULTS);
        assert_eq!(decide(Dial::CandidateLow, 3, &[looser_was_bad, here]), None);
    }

    #[test]
    fn a_looser_value_measured_above_the_floor_is_taken_again() {
        let looser_was_fine = Batch {
            recall: (91, 100),
            ..Batch::at(with_low(2))
        };
        let here = Batch {
            recall: (91, 100),
            ..Batch::few_candidates(DEFAULTS)
        };
        assert_eq!(
            decide(Dial::CandidateLow, 3, &[looser_was_fine, here]),
            Some(2)
        );
    }

    #[test]
    fn bounds_hold_at_the_ends_of_the_range() {
        let at_bottom = Batch::few_candidates(with_low(2));
        assert_eq!(decide(Dial::CandidateLow, 2, &[at_bottom]), None);
        let at_top = Thresholds {
            file_bias: 0.9,
            ..DEFAULTS
        };
        let one_file = Batch {
            candidates: 8,
            file_bias_ratio: 0.95,
            fired: true,
            ..Batch::at(at_top)
        };
        assert_eq!(decide(Dial::FileBias, 900, &[one_file]), None);
    }
}
