//! What the integration verdicts of `manual_find` (Stage 3.5) and `vault_find` (Stage
//! 1.5) share: the status words, the thresholds of "too few" and "one file dominates"
//! (requirements §6.1: fewer than 3 candidates; 80% or more in one file with at least 5
//! candidates), the file bias ratio they are judged on, and how long a query may be to be
//! repeated in a proposal (`crate::proposal`). One definition, so both tools call the same
//! result thin or lopsided.

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

/// The two thresholds: "fewer than `candidate_low` candidates" and "one file holds at
/// least `file_bias` of [`BIAS_MIN_CANDIDATES`] or more". Adaptive tuning moves them for
/// `manual_find` Stage 4 (`crate::adaptive`, which records them under the names of
/// spec_v2 §8.2 and keeps `file_bias` on whole thousandths).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    #[serde(rename = "candidate_low_threshold")]
    pub candidate_low: u32,
    #[serde(rename = "file_bias_threshold")]
    pub file_bias: f64,
}

/// Below this many candidates no file can dominate: two hits in one of three files is
/// not a bias worth widening for.
pub(crate) const BIAS_MIN_CANDIDATES: usize = 5;

impl Thresholds {
    /// Whether `candidates` in all are too few.
    pub fn too_few(&self, candidates: usize) -> bool {
        candidates < self.candidate_low as usize
    }

    /// Whether one file holding `bias` of `candidates` dominates them. The searches
    /// compute shares in `f32`, so the threshold is compared as one.
    pub fn lopsided(&self, candidates: usize, bias: f32) -> bool {
        candidates >= BIAS_MIN_CANDIDATES && bias >= self.file_bias as f32
    }
}

/// The verdict on a search's candidates: the schema's `IntegrationStatus`.
pub(crate) use crate::contract::types::IntegrationStatus;

/// A proposed search repeats the query, so it is left out for longer queries to keep the
/// answer small; the agent still has the query and the trace id.
pub(crate) const MAX_REPEATED_QUERY_CHARS: usize = 200;

/// Share of candidates in the file holding the most of them (0 without candidates);
/// `files` names each candidate's file.
pub(crate) fn file_bias_ratio<K: Eq + Hash>(files: impl IntoIterator<Item = K>) -> f32 {
    let mut per_file: HashMap<K, usize> = HashMap::new();
    for file in files {
        *per_file.entry(file).or_default() += 1;
    }
    bias_of_counts(per_file.into_values())
}

/// The same share from the number of candidates in each file.
pub(crate) fn bias_of_counts(per_file: impl IntoIterator<Item = usize>) -> f32 {
    let (most, total) = per_file.into_iter().fold((0, 0), |(most, total), count| {
        (most.max(count), total + count)
    });
    if total == 0 {
        0.0
    } else {
        most as f32 / total as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_is_the_largest_files_share() {
        assert_eq!(file_bias_ratio(Vec::<&str>::new()), 0.0);
        assert_eq!(file_bias_ratio(["a", "b", "a", "a"]), 0.75);
        assert_eq!(file_bias_ratio([1, 2]), 0.5);
        assert_eq!(bias_of_counts([3, 1]), 0.75);
        assert_eq!(bias_of_counts([0, 0]), 0.0);
    }

    #[test]
    fn thin_and_lopsided_follow_the_thresholds() {
        let thresholds = Thresholds {
            candidate_low: 3,
            file_bias: 0.8,
        };
        assert!(thresholds.too_few(2) && !thresholds.too_few(3));
        assert!(thresholds.lopsided(5, 0.8));
        assert!(!thresholds.lopsided(4, 1.0), "too few candidates to judge");
        assert!(!thresholds.lopsided(10, 0.79));
    }
}
