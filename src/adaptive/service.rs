//! [`Adaptive`]: the one handle the tool layer holds. It hands out the thresholds for the
//! next search and takes in what searches and audits did and what was used after them.
//!
//! Every method takes the time as `now` (Unix seconds), so the tool layer passes
//! [`clock::now`] and tests drive a simulated clock. Methods take `&self` and share one
//! mutex: each call is a little bookkeeping and at most a few appends. Statistics never
//! fail a tool call: if the file cannot be opened or written, a warning is logged and
//! tuning carries on in memory.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::history::History;
use super::recall::{RefKey, UsageLedger};
use super::record::{AuditFacts, FindFacts, FindRecord, Record, UsageRecord};
use super::store::StatsFile;
use super::thresholds::Thresholds;
use super::tuning::{Policy, TuningState};
use crate::clock;
use crate::config::Config;

pub struct Adaptive {
    policy: Policy,
    inner: Mutex<Inner>,
}

struct Inner {
    store: Option<StatsFile>,
    ledger: UsageLedger,
    history: History,
    state: TuningState,
}

impl Adaptive {
    /// Reads the statistics file (if any) to restore the tuning state and the recent
    /// searches; creates nothing until the first record. The vault folder the default
    /// path lies in is created at start (`workspace::prepare`), never here.
    pub fn open(config: &Config) -> Adaptive {
        let policy = Policy::from_config(config);
        let mut store = StatsFile::locate(config)
            .inspect_err(|message| {
                tracing::warn!("adaptive statistics: {message}; statistics are kept in memory only")
            })
            .ok();
        let records = store.as_mut().map(StatsFile::load).unwrap_or_default();
        let state = records
            .iter()
            .rev()
            .find_map(|record| match record {
                Record::Tuning(tuning) => Some(TuningState::restored(tuning)),
                _ => None,
            })
            .unwrap_or_else(|| TuningState::initial(&policy));
        Adaptive {
            inner: Mutex::new(Inner {
                store,
                ledger: UsageLedger::new(config.trace_ttl_sec, config.trace_max_keep),
                history: History::replay(&records),
                state,
            }),
            policy,
        }
    }

    /// The thresholds the next search runs with, after applying any change due now.
    pub fn thresholds(&self, now: u64) -> Thresholds {
        let mut inner = self.lock(now);
        if let Some(change) = inner.state.review(&inner.history, &self.policy, now) {
            tracing::info!(
                reason = ?change.reason,
                candidate_low_threshold = change.state.thresholds.candidate_low,
                file_bias_threshold = change.state.thresholds.file_bias,
                "adaptive: Stage 4 thresholds changed"
            );
            inner.state = TuningState::restored(&change);
            inner.write(Record::Tuning(change));
        }
        inner.state.in_force(&self.policy)
    }

    /// Records one `manual_find` and starts following its trace with `candidates` (C_q),
    /// which stay in memory.
    pub fn record_find(&self, facts: FindFacts, candidates: HashSet<RefKey>, now: u64) {
        let mut inner = self.lock(now);
        let trace_id = facts.summary.trace_id.clone();
        inner.write(Record::Find(FindRecord::new(facts, now)));
        let closed = inner.ledger.record_candidates(&trace_id, candidates, now);
        inner.write_usage(closed);
    }

    /// Counts a ref read, paged or copied under `trace_id` toward its U_q.
    pub fn record_use(&self, trace_id: &str, used: RefKey, now: u64) {
        let mut inner = self.lock(now);
        let closed = inner.ledger.record_use(trace_id, used, now);
        inner.write_usage(closed);
    }

    /// Records one `vault_coverage` or `artifact_audit` round.
    pub fn record_audit(&self, facts: AuditFacts, now: u64) {
        self.lock(now).write(Record::audit(facts, now));
    }

    /// Writes the usage of every open trace (at shutdown; dropping the handle does it).
    pub fn flush(&self, now: u64) {
        let mut inner = self.lock(now);
        let closed = inner.ledger.close_all(now);
        inner.write_usage(closed);
    }

    /// The state, with the traces whose time is up already closed.
    fn lock(&self, now: u64) -> MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let closed = inner.ledger.close_expired(now);
        inner.write_usage(closed);
        inner
    }
}

impl Drop for Adaptive {
    fn drop(&mut self) {
        self.flush(clock::now());
    }
}

impl Inner {
    /// Feeds `record` to the history and appends it to the file.
    fn write(&mut self, record: Record) {
        self.history.add(&record);
        if let Some(store) = self.store.as_mut() {
            if let Err(error) = store.append(&record) {
                tracing::warn!(
                    code = error.code.as_str(),
                    "adaptive statistics: a record could not be written"
                );
            }
        }
    }

    fn write_usage(&mut self, closed: Vec<UsageRecord>) {
        closed
            .into_iter()
            .for_each(|usage| self.write(Record::Usage(usage)));
    }
}
