//! The searches the tuning policy, the rollback check and the report look at: each find
//! record, with the recall of its trace attached once the trace has closed.
//!
//! Built the same way from the file at start and from records as they are written, so
//! what the server decides live is what a restart would decide.

use std::collections::VecDeque;

use super::record::{FindRecord, Record};
use super::store::MAX_LINES;

/// The most searches kept: as many as the statistics file holds lines, so a history
/// replayed from it is never cut.
const MAX_OBSERVATIONS: usize = MAX_LINES;

/// One search and, once known, its recall proxy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    pub find: FindRecord,
    pub recall: Option<f64>,
}

/// Recent searches, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    observations: VecDeque<Observation>,
}

impl History {
    pub(crate) fn replay<'a>(records: impl IntoIterator<Item = &'a Record>) -> History {
        let mut history = History::default();
        records.into_iter().for_each(|record| history.add(record));
        history
    }

    /// Takes in a search or the usage of one; other records are not about searches.
    pub(crate) fn add(&mut self, record: &Record) {
        match record {
            Record::Find(find) => {
                if self.observations.len() == MAX_OBSERVATIONS {
                    self.observations.pop_front();
                }
                self.observations.push_back(Observation {
                    find: find.clone(),
                    recall: None,
                });
            }
            // Usage arrives within a trace's lifetime of its search, so it is found by
            // looking back from the newest; usage of a search no longer held is dropped.
            Record::Usage(usage) => {
                if let Some(observation) = self
                    .observations
                    .iter_mut()
                    .rev()
                    .find(|o| o.find.summary.trace_id == usage.trace_id)
                {
                    observation.recall = usage.recall();
                }
            }
            Record::VaultCoverage(_) | Record::ArtifactAudit(_) | Record::Tuning(_) => {}
        }
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &Observation> + ExactSizeIterator {
        self.observations.iter()
    }
}

/// Totals over a set of searches, for the figures every consumer compares.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Summary {
    pub searches: u64,
    stage4_fired: u64,
    cut_off: u64,
    est_tokens: u64,
    added_est_tokens: u64,
    /// Searches with a recall figure (something was used under their trace).
    pub(crate) recall_samples: u64,
    recall_total: f64,
}

impl Summary {
    pub(crate) fn of<'a>(observations: impl IntoIterator<Item = &'a Observation>) -> Summary {
        let mut summary = Summary::default();
        observations.into_iter().for_each(|o| summary.add(o));
        summary
    }

    pub(crate) fn add(&mut self, observation: &Observation) {
        let find = &observation.find;
        self.searches += 1;
        self.stage4_fired += u64::from(find.summary.scope_expanded);
        self.cut_off += u64::from(find.summary.cutoff_reason.is_some());
        self.est_tokens += find.tokens.est_tokens;
        self.added_est_tokens += find.gain.added_est_tokens;
        if let Some(recall) = observation.recall {
            self.recall_samples += 1;
            self.recall_total += recall;
        }
    }

    /// The mean recall proxy of the searches that have one (queries with empty U_q are
    /// left out, requirements §6.1).
    pub(crate) fn recall(&self) -> Option<f64> {
        (self.recall_samples > 0).then(|| self.recall_total / self.recall_samples as f64)
    }

    pub(crate) fn mean_est_tokens(&self) -> Option<f64> {
        self.mean(self.est_tokens)
    }

    pub(crate) fn mean_added_est_tokens(&self) -> Option<f64> {
        self.mean(self.added_est_tokens)
    }

    pub(crate) fn stage4_rate(&self) -> Option<f64> {
        self.mean(self.stage4_fired)
    }

    pub(crate) fn cutoff_rate(&self) -> Option<f64> {
        self.mean(self.cut_off)
    }

    fn mean(&self, total: u64) -> Option<f64> {
        (self.searches > 0).then(|| total as f64 / self.searches as f64)
    }
}
