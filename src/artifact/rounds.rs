//! The bookkeeping behind the stop rule's marginal gain (see [`super::stop_rule`]): what
//! the agent has read from each vault file, and what the previous round of a check saw.
//!
//! Reading is counted as a running total of characters per vault path, fed by every
//! `vault_read` and `vault_scan`. A round of a check (`vault_coverage` of one file and
//! artifact set, `artifact_audit` of one artifact) keeps a snapshot of the totals it
//! depends on and of the evidence it counted; the next round of the same check subtracts
//! the snapshot. Totals only grow, so rounds of different checks over the same file never
//! consume each other's reading.
//!
//! Everything is in memory and per server process: the numbers describe one agent's
//! session, and what is written to the statistics file is only their difference. One entry
//! per path read and per check run; both are bounded by what the vault holds.

use std::collections::HashMap;

#[derive(Debug, Default)]
pub(crate) struct Rounds {
    /// Characters returned by reads of each (canonical) vault path, ever.
    read_chars: HashMap<String, u64>,
    /// Per check: evidence and read characters at its last round.
    last: HashMap<String, Snapshot>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Snapshot {
    evidence: u64,
    read_chars: u64,
}

/// What a round added since the previous round of the same check (everything, for the
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Added {
    /// Evidence now minus evidence then; 0 when evidence shrank.
    pub evidence: u64,
    /// Characters read from the check's files in between.
    pub read_chars: u64,
}

impl Rounds {
    /// Counts `chars` characters returned from the vault file `path`.
    pub(crate) fn note_read(&mut self, path: &str, chars: u64) {
        *self.read_chars.entry(path.to_owned()).or_default() += chars;
    }

    /// Closes a round of `check`, which counted `evidence` and depends on reading of
    /// `paths`, and says what it added.
    pub(crate) fn round<'a>(
        &mut self,
        check: String,
        paths: impl IntoIterator<Item = &'a str>,
        evidence: u64,
    ) -> Added {
        let read_chars = paths
            .into_iter()
            .map(|path| self.read_chars.get(path).copied().unwrap_or(0))
            .sum();
        let now = Snapshot {
            evidence,
            read_chars,
        };
        let then = self.last.insert(check, now).unwrap_or_default();
        Added {
            evidence: now.evidence.saturating_sub(then.evidence),
            read_chars: now.read_chars.saturating_sub(then.read_chars),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(evidence: u64, read_chars: u64) -> Added {
        Added {
            evidence,
            read_chars,
        }
    }

    #[test]
    fn a_round_adds_what_happened_since_the_last_round_of_the_same_check() {
        let mut rounds = Rounds::default();
        rounds.note_read("drafts/a.md", 400);
        assert_eq!(
            rounds.round("a".into(), ["drafts/a.md"], 10),
            added(10, 400)
        );
        assert_eq!(rounds.round("a".into(), ["drafts/a.md"], 10), added(0, 0));
        rounds.note_read("drafts/a.md", 100);
        rounds.note_read("drafts/b.md", 50);
        assert_eq!(rounds.round("a".into(), ["drafts/a.md"], 14), added(4, 100));
        // Lost citations add nothing rather than a negative count.
        assert_eq!(rounds.round("a".into(), ["drafts/a.md"], 3), added(0, 0));
    }

    #[test]
    fn checks_over_the_same_files_keep_their_own_snapshots() {
        let mut rounds = Rounds::default();
        rounds.note_read("drafts/a.md", 40);
        rounds.note_read("drafts/b.md", 60);
        assert_eq!(
            rounds.round("coverage".into(), ["drafts/a.md"], 2),
            added(2, 40)
        );
        let audit = rounds.round("audit".into(), ["drafts/a.md", "drafts/b.md"], 5);
        assert_eq!(audit, added(5, 100));
        rounds.note_read("drafts/a.md", 8);
        assert_eq!(
            rounds.round("coverage".into(), ["drafts/a.md"], 2),
            added(0, 8)
        );
        let audit = rounds.round("audit".into(), ["drafts/a.md", "drafts/b.md"], 5);
        assert_eq!(audit, added(0, 8));
    }
}
