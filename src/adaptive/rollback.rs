//! The rollback rule of spec_v2 §8.2: back to the default thresholds when, over the last
//! 100 searches, the recall proxy fell by more than 3 points, or the share of searches
//! cut off (`cutoff_reason` set) rose by more than 5 points, against the 100 before.
//!
//! Points are absolute (0.95 to 0.91 is a 4-point drop). Only searches after the last
//! rollback count, so the searches that caused one cannot cause the next. The recall
//! comparison needs [`MIN_RECALL_SAMPLES`] searches with a recall figure in each window;
//! with fewer, only the cutoff rate is compared.

use super::history::{Observation, Summary};
use super::record::TuningReason;

/// Searches in each of the two windows compared.
pub(crate) const WINDOW: usize = 100;
pub(crate) const MAX_RECALL_DROP: f64 = 0.03;
pub(crate) const MAX_CUTOFF_RISE: f64 = 0.05;
/// Keeps a difference of exactly 3 or 5 points, computed in floating point, from
/// counting as more.
const ROUNDING: f64 = 1e-9;
/// Recall figures each window needs before its recall is compared.
pub(crate) const MIN_RECALL_SAMPLES: u64 = 10;

/// Why the thresholds should go back to their defaults, judging `searches` (oldest
/// first, all after the last rollback); `None` when they should stay.
pub(crate) fn rollback_reason(searches: &[&Observation]) -> Option<TuningReason> {
    if searches.len() < 2 * WINDOW {
        return None;
    }
    let split = searches.len() - WINDOW;
    let before = Summary::of(searches[split - WINDOW..split].iter().copied());
    let last = Summary::of(searches[split..].iter().copied());
    let comparable = |summary: &Summary| summary.recall_samples >= MIN_RECALL_SAMPLES;
    let recall_drop = match (before.recall(), last.recall()) {
        (Some(before_recall), Some(last_recall)) if comparable(&before) && comparable(&last) => {
            before_recall - last_recall
        }
        _ => 0.0,
    };
    let cutoff_rise = last.cutoff_rate().unwrap_or(0.0) - before.cutoff_rate().unwrap_or(0.0);
    if recall_drop > MAX_RECALL_DROP + ROUNDING {
        Some(TuningReason::RecallDrop)
    } else if cutoff_rise > MAX_CUTOFF_RISE + ROUNDING {
        Some(TuningReason::CutoffRise)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::history::History;
    use crate::adaptive::record::Record;
    use crate::adaptive::test_support::{facts, find, usage};
    use crate::trace::CutoffReason;

    /// `count` searches, `missed` of every 100 with recall 0 (others 1), `cut` of every
    /// 100 cut off.
    fn searches(records: &mut Vec<Record>, count: usize, missed: usize, cut: usize) {
        for n in 0..count {
            let trace_id = format!("t{}", records.len());
            let mut search = facts(&trace_id);
            if n % 100 < cut {
                search.summary.cutoff_reason = Some(CutoffReason::TimeBudget);
            }
            records.push(find(0, search));
            let found = u64::from(n % 100 >= missed);
            records.push(usage(0, &trace_id, 1, found));
        }
    }

    fn reason(windows: &[(usize, usize, usize)]) -> Option<TuningReason> {
        let mut records = Vec::new();
        for &(count, missed, cut) in windows {
            searches(&mut records, count, missed, cut);
        }
        let history = History::replay(&records);
        let observations: Vec<&Observation> = history.iter().collect();
        rollback_reason(&observations)
    }

    #[test]
    fn steady_traffic_keeps_the_thresholds() {
        assert_eq!(reason(&[(100, 5, 5), (100, 5, 5)]), None);
    }

    #[test]
    fn a_recall_drop_of_more_than_3_points_rolls_back() {
        assert_eq!(reason(&[(100, 5, 0), (100, 8, 0)]), None);
        assert_eq!(
            reason(&[(100, 5, 0), (100, 9, 0)]),
            Some(TuningReason::RecallDrop)
        );
    }

    #[test]
    fn a_cutoff_rise_of_more_than_5_points_rolls_back() {
        assert_eq!(reason(&[(100, 0, 2), (100, 0, 7)]), None);
        assert_eq!(
            reason(&[(100, 0, 2), (100, 0, 8)]),
            Some(TuningReason::CutoffRise)
        );
    }

    #[test]
    fn only_the_last_two_hundred_count() {
        assert_eq!(reason(&[(100, 50, 50), (100, 5, 5), (100, 5, 5)]), None);
    }

    #[test]
    fn fewer_than_two_windows_decide_nothing() {
        assert_eq!(reason(&[(100, 0, 0), (99, 100, 100)]), None);
    }
}
