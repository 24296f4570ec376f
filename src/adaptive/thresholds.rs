//! The two Stage 4 thresholds the server tunes, with the fixed bounds and daily steps of
//! spec_v2 §8.2.
//!
//! The tuning code steps, clamps and groups records by "the value in force", so each
//! threshold is handled as a whole number of its unit (candidates; thousandths of a
//! share): stepping 0.80 down by 0.03 three times and back up lands on 0.80 exactly, which
//! floating point does not promise, and two records under the same setting always group
//! together. [`Dial`] describes both thresholds the same way, so one policy serves both.

use crate::config::Config;
/// The Stage 4 thresholds in force for one search: the verdicts' own type.
pub use crate::verdict::Thresholds;

impl Thresholds {
    /// The operator's starting point (`ADAPTIVE_*_BASE`), also what a rollback returns to.
    pub fn defaults(config: &Config) -> Thresholds {
        let unclamped = Thresholds {
            candidate_low: config.adaptive_candidate_low_base,
            file_bias: config.adaptive_file_bias_base,
        };
        unclamped.clamped()
    }

    /// The same thresholds moved inside their bounds and onto their units (a record
    /// edited by hand, or a base between two thousandths).
    pub(crate) fn clamped(self) -> Thresholds {
        Dial::ALL.iter().fold(self, |thresholds, dial| {
            dial.set(thresholds, dial.units(&thresholds))
        })
    }
}

/// One tunable threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Dial {
    CandidateLow,
    FileBias,
}

/// The fixed rules of one dial, in its units.
struct Rules {
    min: i64,
    max: i64,
    /// The most one day may move it.
    daily_step: i64,
    /// +1 when raising the value makes Stage 4 fire more often, -1 when lowering does.
    firing_direction: i64,
    /// Units in 1.0 of the published value. Dividing by it (not multiplying by its
    /// inverse) gives the double nearest the decimal, so 770 is written as `0.77`.
    units_per_one: f64,
}

impl Dial {
    pub(crate) const ALL: [Dial; 2] = [Dial::CandidateLow, Dial::FileBias];

    fn rules(self) -> Rules {
        match self {
            Dial::CandidateLow => Rules {
                min: 2,
                max: 6,
                daily_step: 1,
                firing_direction: 1,
                units_per_one: 1.0,
            },
            Dial::FileBias => Rules {
                min: 700,
                max: 900,
                daily_step: 30,
                firing_direction: -1,
                units_per_one: 1000.0,
            },
        }
    }

    /// This dial's value in `thresholds`, in whole units (rounded to the nearest).
    pub(crate) fn units(self, thresholds: &Thresholds) -> i64 {
        match self {
            Dial::CandidateLow => i64::from(thresholds.candidate_low),
            Dial::FileBias => (thresholds.file_bias * self.rules().units_per_one).round() as i64,
        }
    }

    /// `thresholds` with this dial set to `units`, clamped to its bounds.
    pub(crate) fn set(self, thresholds: Thresholds, units: i64) -> Thresholds {
        let rules = self.rules();
        let units = units.clamp(rules.min, rules.max);
        match self {
            Dial::CandidateLow => Thresholds {
                candidate_low: units as u32,
                ..thresholds
            },
            Dial::FileBias => Thresholds {
                file_bias: units as f64 / rules.units_per_one,
                ..thresholds
            },
        }
    }

    /// The value one daily step from `units`: toward firing Stage 4 more often (`tighter`)
    /// or less often, clamped to the bounds (so at a bound it may equal `units`).
    pub(crate) fn step(self, units: i64, tighter: bool) -> i64 {
        let rules = self.rules();
        let direction = if tighter {
            rules.firing_direction
        } else {
            -rules.firing_direction
        };
        (units + direction * rules.daily_step).clamp(rules.min, rules.max)
    }

    /// Whether `units` fires Stage 4 less often than `than`.
    pub(crate) fn is_looser(self, units: i64, than: i64) -> bool {
        (units - than) * self.rules().firing_direction < 0
    }

    /// Whether this dial at `units` would fire Stage 4 for a search with `candidates`
    /// candidates, the largest file holding `file_bias_ratio` of them (requirements §6.1).
    pub(crate) fn fires_at(self, units: i64, candidates: u64, file_bias_ratio: f64) -> bool {
        match self {
            Dial::CandidateLow => (candidates as i64) < units,
            Dial::FileBias => {
                candidates >= 5
                    && file_bias_ratio >= units as f64 / self.rules().units_per_one - 1e-9
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(candidate_low: u32, file_bias: f64) -> Thresholds {
        Thresholds {
            candidate_low,
            file_bias,
        }
    }

    #[test]
    fn steps_stay_inside_the_fixed_ranges() {
        assert_eq!(Dial::CandidateLow.step(3, true), 4);
        assert_eq!(Dial::CandidateLow.step(6, true), 6);
        assert_eq!(Dial::CandidateLow.step(2, false), 2);
        assert_eq!(Dial::FileBias.step(800, true), 770);
        assert_eq!(Dial::FileBias.step(710, true), 700);
        assert_eq!(Dial::FileBias.step(890, false), 900);
    }

    #[test]
    fn file_bias_round_trips_exactly_through_units() {
        let mut thresholds = at(3, 0.80);
        for tighter in [true, true, true, false, false, false] {
            let units = Dial::FileBias.step(Dial::FileBias.units(&thresholds), tighter);
            thresholds = Dial::FileBias.set(thresholds, units);
        }
        assert_eq!(Dial::FileBias.units(&thresholds), 800);
        assert!((thresholds.file_bias - 0.80).abs() < 1e-12);
    }

    #[test]
    fn clamped_pulls_values_into_range() {
        let clamped = at(9, 0.5).clamped();
        assert_eq!(clamped.candidate_low, 6);
        assert_eq!(Dial::FileBias.units(&clamped), 700);
    }

    #[test]
    fn looser_means_firing_less() {
        assert!(Dial::CandidateLow.is_looser(2, 3));
        assert!(!Dial::CandidateLow.is_looser(3, 3));
        assert!(Dial::FileBias.is_looser(830, 800));
        assert!(!Dial::FileBias.is_looser(770, 800));
    }

    #[test]
    fn firing_conditions_follow_the_requirements() {
        assert!(Dial::CandidateLow.fires_at(3, 2, 0.0));
        assert!(!Dial::CandidateLow.fires_at(3, 3, 0.0));
        assert!(Dial::FileBias.fires_at(800, 5, 0.80));
        assert!(!Dial::FileBias.fires_at(800, 4, 1.0));
        assert!(!Dial::FileBias.fires_at(800, 9, 0.79));
    }
}
