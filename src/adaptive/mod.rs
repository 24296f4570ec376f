//! Adaptive tuning of the Stage 4 thresholds from the server's own use (spec_v2 §8.2,
//! requirements §6.1 and §9): the statistics file, the recall proxy, the tuning policy
//! with its rollback, and the `manvault stats` report.
//!
//! Architecture invariant: no MCP, no search. The tool layer hands in counts through
//! [`Adaptive`] and asks it for [`Thresholds`]; everything else here is pure and takes
//! the time as a parameter. No query, path, snippet or body text reaches the statistics
//! file: the record types have no field that could hold one.
//!
//! Code map: `thresholds` is the two tuned values with their bounds and steps;
//! `fingerprint` hashes queries and paths; `record` is the lines of the file; `recall`
//! follows traces to the recall proxy; `store` is the bounded file; `history` joins
//! searches with their recall; `policy` picks a threshold's next value; `rollback`
//! decides a return to the defaults; `tuning` applies the freeze, rollback and daily step
//! limit; `service` is the handle the tool layer holds; `report` is `manvault stats`.

mod fingerprint;
mod history;
mod policy;
mod recall;
mod record;
pub(crate) mod report;
mod rollback;
mod service;
mod store;
mod thresholds;
mod tuning;

#[cfg(test)]
mod test_support;

pub use fingerprint::Fingerprint;
pub use recall::RefKey;
pub use record::{AuditFacts, AuditKind, FindFacts, FindSummary};
pub use service::Adaptive;
pub(crate) use store::StatsFile;
pub use thresholds::Thresholds;
