//! When the thresholds change: the freeze, the rollback, and the one-step-a-day limit
//! around the [`policy`](super::policy).
//!
//! A review runs each time a search asks for its thresholds, at the time `now` the caller
//! gives (so tests can run a simulated week). In order:
//!
//! 1. `ADAPTIVE_TUNING=false`: nothing changes and searches get the defaults.
//! 2. Thresholds away from the defaults and [`rollback_reason`] says so: back to the
//!    defaults at once (a rollback may jump more than one step), the 24 h clock of both
//!    thresholds restarts, and for a week neither is loosened back to where it was.
//! 3. Each threshold whose last change is at least [`STEP_INTERVAL_SECS`] old moves to
//!    what the policy picks from the searches of the last [`EVIDENCE_WINDOW_SECS`] that
//!    were allowed Stage 4.
//!
//! Every change is one [`TuningRecord`] holding the whole new state, so the newest one
//! restores the state after a restart.

use super::history::{History, Observation};
use super::policy::next_value;
pub(crate) use super::record::TuningState;
use super::record::{TuningReason, TuningRecord};
use super::rollback::rollback_reason;
use super::thresholds::{Dial, Thresholds};
use crate::config::Config;

/// A threshold moves at most one step in this long (spec_v2 §8.2: ±1 or ±0.03 per 24 h).
pub(crate) const STEP_INTERVAL_SECS: u64 = 24 * 3600;

/// How far back the policy looks: a week covers the values of recent days, and values
/// tried longer ago are forgotten, so they can be tried again.
pub(crate) const EVIDENCE_WINDOW_SECS: u64 = 7 * 24 * 3600;

/// The operator's settings for tuning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Policy {
    pub enabled: bool,
    pub(crate) min_recall: f64,
    pub defaults: Thresholds,
}

impl Policy {
    pub(crate) fn from_config(config: &Config) -> Policy {
        Policy {
            enabled: config.adaptive_tuning,
            min_recall: config.adaptive_min_recall,
            defaults: Thresholds::defaults(config),
        }
    }
}

impl TuningState {
    /// The state before any change: the defaults, free to move.
    pub(crate) fn initial(policy: &Policy) -> TuningState {
        TuningState {
            thresholds: policy.defaults,
            candidate_low_changed_at: None,
            file_bias_changed_at: None,
            rolled_back_at: None,
            rolled_back_from: None,
        }
    }

    /// The state a tuning record left, pulled back inside the bounds in case the file
    /// was edited by hand.
    pub(crate) fn restored(record: &TuningRecord) -> TuningState {
        let mut state = record.state.clone();
        state.thresholds = state.thresholds.clamped();
        state
    }

    /// The thresholds a search runs with now.
    pub(crate) fn in_force(&self, policy: &Policy) -> Thresholds {
        if policy.enabled {
            self.thresholds
        } else {
            policy.defaults
        }
    }

    fn changed_at(&self, dial: Dial) -> Option<u64> {
        match dial {
            Dial::CandidateLow => self.candidate_low_changed_at,
            Dial::FileBias => self.file_bias_changed_at,
        }
    }

    /// Whether the last rollback bars `dial` from moving to `units` at `now`.
    fn bars(&self, dial: Dial, units: i64, policy: &Policy, now: u64) -> bool {
        let (Some(left), Some(at)) = (self.rolled_back_from, self.rolled_back_at) else {
            return false;
        };
        let left = dial.units(&left);
        now < at.saturating_add(EVIDENCE_WINDOW_SECS)
            && dial.is_looser(left, dial.units(&policy.defaults))
            && !dial.is_looser(left, units)
    }

    fn set(&mut self, dial: Dial, units: i64, now: u64) {
        self.thresholds = dial.set(self.thresholds, units);
        match dial {
            Dial::CandidateLow => self.candidate_low_changed_at = Some(now),
            Dial::FileBias => self.file_bias_changed_at = Some(now),
        }
    }

    /// The change due at `now`, if any; the caller applies it with [`TuningState::restored`]
    /// and writes it.
    pub(crate) fn review(
        &self,
        history: &History,
        policy: &Policy,
        now: u64,
    ) -> Option<TuningRecord> {
        if !policy.enabled {
            return None;
        }
        if self.thresholds != policy.defaults {
            let since_rollback: Vec<&Observation> = history
                .iter()
                .filter(|o| self.rolled_back_at.is_none_or(|at| o.find.ts > at))
                .collect();
            if let Some(reason) = rollback_reason(&since_rollback) {
                return Some(self.rolled_back(policy, reason, now));
            }
        }
        let evidence: Vec<&Observation> = history
            .iter()
            .filter(|o| {
                o.find.summary.max_stage_allowed >= 4
                    && o.find.ts.saturating_add(EVIDENCE_WINDOW_SECS) >= now
            })
            .collect();
        let mut next = self.clone();
        for dial in Dial::ALL {
            let may_move = self
                .changed_at(dial)
                .is_none_or(|at| now >= at.saturating_add(STEP_INTERVAL_SECS));
            let current = dial.units(&self.thresholds);
            if let Some(units) = may_move
                .then(|| next_value(dial, current, &evidence, policy.min_recall))
                .flatten()
                .filter(|&units| !self.bars(dial, units, policy, now))
            {
                next.set(dial, units, now);
            }
        }
        (next != *self).then_some(TuningRecord {
            ts: now,
            reason: TuningReason::Policy,
            state: next,
        })
    }

    /// The defaults again, with both 24 h clocks restarted so the policy waits a day.
    fn rolled_back(&self, policy: &Policy, reason: TuningReason, now: u64) -> TuningRecord {
        TuningRecord {
            ts: now,
            reason,
            state: TuningState {
                thresholds: policy.defaults,
                candidate_low_changed_at: Some(now),
                file_bias_changed_at: Some(now),
                rolled_back_at: Some(now),
                rolled_back_from: Some(self.thresholds),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::record::Record;
    use crate::adaptive::test_support::{facts, find, usage, DEFAULTS};

    const HOUR: u64 = 3600;
    const START: u64 = 1_795_132_800;

    fn policy(enabled: bool) -> Policy {
        Policy {
            enabled,
            min_recall: 0.9,
            defaults: DEFAULTS,
        }
    }

    /// `count` searches at `ts` under `thresholds`, all used refs found (recall 1), or
    /// none found when `missed`. One in four has two candidates; the others eight, with
    /// the largest file's share at 0.81, 0.84 or 0.87, so each looser step of either
    /// threshold would stop Stage 4 on some of them.
    fn searches(ts: u64, thresholds: Thresholds, count: usize, missed: bool) -> Vec<Record> {
        (0..count)
            .flat_map(|n| {
                let trace_id = format!("{ts}-{n}");
                let mut search = facts(&trace_id);
                search.summary.thresholds = thresholds;
                search.summary.candidates = if n % 4 == 0 { 2 } else { 8 };
                search.summary.file_bias_ratio = [0.3, 0.81, 0.84, 0.87][n % 4];
                [
                    find(ts, search),
                    usage(ts, &trace_id, 1, u64::from(!missed)),
                ]
            })
            .collect()
    }

    fn review(
        state: &TuningState,
        records: &[Record],
        enabled: bool,
        now: u64,
    ) -> Option<TuningRecord> {
        state.review(&History::replay(records), &policy(enabled), now)
    }

    #[test]
    fn a_frozen_policy_changes_nothing_and_serves_the_defaults() {
        let records = searches(START, DEFAULTS, 50, false);
        let moved = TuningState {
            thresholds: Thresholds {
                candidate_low: 5,
                ..DEFAULTS
            },
            ..TuningState::initial(&policy(false))
        };
        assert_eq!(review(&moved, &records, false, START + HOUR), None);
        assert_eq!(moved.in_force(&policy(false)), DEFAULTS);
        assert_eq!(moved.in_force(&policy(true)).candidate_low, 5);
    }

    #[test]
    fn each_threshold_moves_one_step_at_most_once_a_day() {
        let records = searches(START, DEFAULTS, 50, false);
        let initial = TuningState::initial(&policy(true));
        let change =
            review(&initial, &records, true, START + HOUR).expect("a looser value is tried");
        assert_eq!(change.state.thresholds.candidate_low, 2);
        assert_eq!(Dial::FileBias.units(&change.state.thresholds), 830);
        assert_eq!(change.state.candidate_low_changed_at, Some(START + HOUR));

        let state = TuningState::restored(&change);
        let mut later = records.clone();
        later.extend(searches(START + 2 * HOUR, state.thresholds, 50, false));
        assert_eq!(review(&state, &later, true, START + 24 * HOUR), None);
        let next = review(&state, &later, true, START + 25 * HOUR).expect("a day has passed");
        assert_eq!(Dial::FileBias.units(&next.state.thresholds), 860);
        assert_eq!(
            next.state.thresholds.candidate_low, 2,
            "2 is the lower bound"
        );
    }

    #[test]
    fn evidence_leaves_out_old_searches_and_searches_without_stage4() {
        let initial = TuningState::initial(&policy(true));
        let old = searches(START, DEFAULTS, 50, false);
        assert_eq!(
            review(&initial, &old, true, START + EVIDENCE_WINDOW_SECS + 1),
            None
        );
        let mut without_stage4 = old.clone();
        for record in without_stage4.iter_mut() {
            if let Record::Find(find) = record {
                find.summary.max_stage_allowed = 3;
            }
        }
        assert_eq!(review(&initial, &without_stage4, true, START + HOUR), None);
    }

    #[test]
    fn rollback_restores_the_defaults_and_restarts_both_clocks() {
        let tuned = Thresholds {
            candidate_low: 2,
            ..DEFAULTS
        };
        let state = TuningState {
            thresholds: tuned,
            candidate_low_changed_at: Some(START),
            ..TuningState::initial(&policy(true))
        };
        let mut records = searches(START, tuned, 100, false);
        records.extend(searches(START + HOUR, tuned, 100, true));
        let now = START + 2 * HOUR;
        let change = review(&state, &records, true, now).expect("recall fell by 100 points");
        assert_eq!(change.reason, TuningReason::RecallDrop);
        assert_eq!(change.state.thresholds, DEFAULTS);
        assert_eq!(change.state.file_bias_changed_at, Some(now));
        assert_eq!(change.state.rolled_back_at, Some(now));

        // The searches behind a rollback do not count toward the next one.
        let after = TuningState {
            thresholds: tuned,
            ..TuningState::restored(&change)
        };
        assert_eq!(review(&after, &records, true, now + HOUR), None);
    }

    #[test]
    fn a_rollback_bars_the_setting_it_left_for_a_week() {
        let left = Thresholds {
            candidate_low: 2,
            ..DEFAULTS
        };
        let rolled_back = TuningState {
            candidate_low_changed_at: Some(START),
            file_bias_changed_at: Some(START),
            rolled_back_at: Some(START),
            rolled_back_from: Some(left),
            ..TuningState::initial(&policy(true))
        };
        // Fine traffic at the defaults: the file-bias threshold (at its default then)
        // loosens after a day; the candidate-low threshold may not go back to 2 for a week.
        let records = searches(START + HOUR, DEFAULTS, 50, false);
        let day_later = review(&rolled_back, &records, true, START + 25 * HOUR).unwrap();
        assert_eq!(day_later.state.thresholds.candidate_low, 3);
        assert_eq!(Dial::FileBias.units(&day_later.state.thresholds), 830);
        let week_later = START + EVIDENCE_WINDOW_SECS;
        let records = searches(week_later, DEFAULTS, 50, false);
        let change = review(&rolled_back, &records, true, week_later + HOUR).unwrap();
        assert_eq!(change.state.thresholds.candidate_low, 2);
    }
}
