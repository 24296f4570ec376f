//! `next_actions` of `vault_find`: the Stage 1.5 verdict turned into the calls an agent
//! should make next (requirements §6.1.1, spec_v2 §7), each with the fewest parameters
//! that make a valid call.
//!
//! There is no paging tool for vault traces (the catalog has twenty tools), so the top
//! candidates themselves are the first actions: a `vault_read` of the lines around each.
//!
//! | verdict | action |
//! |---|---|
//! | candidates found | `vault_read` of up to [`READS`] candidates (path and range) |
//! | cut by the time budget | `vault_find` `only_unscanned_from_trace_id` |
//! | fill_gaps (a term found nowhere, or too few), scope narrowed | `vault_find` one step wider |
//! | fill_gaps, nothing wider to search | `vault_scan` of the best file from line 1 (the words may differ from the query's) |
//! | reduce_file_bias, scope narrowed | `vault_find` one step wider |
//! | reduce_file_bias, whole vault | `vault_find` with the dominant file excluded (when no exclusion is set yet) |
//! | ready: verify_coverage | `vault_coverage` of the best candidate that is not an artifact (when served) |
//! | ready: vault_completed, or nothing found and nothing wider | `stop` |
//!
//! Actions come best first (by confidence).

use super::integrate::{Candidate, Verdict};
use crate::paths::RelPath;
use crate::proposal::{Call, FindScope, Proposal};
use crate::text::lines::LineNo;
use crate::trace::CutoffReason;
use crate::vault::policy::is_artifact;
use crate::verdict::{IntegrationStatus, MAX_REPEATED_QUERY_CHARS};

/// Reads proposed at most: with the summary, about 1,200 characters.
pub(crate) const READS: usize = 5;
/// Reads of one file among them while other files have candidates too: the agent should
/// see the spread, not one file five times.
pub(crate) const READS_PER_FILE: usize = 2;
/// Lines of context proposed before a candidate's first line and after its last.
pub(crate) const READ_CONTEXT_LINES: LineNo = 5;

/// The scope a request searched, as the client spelled it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AskedScope<'a> {
    /// The folder, parsed (the root when none was given).
    pub dir: &'a RelPath,
    pub glob: Option<&'a str>,
    pub exclude_glob: Option<&'a str>,
}

impl AskedScope<'_> {
    /// The scope one step wider: without the glob; else the folder's parent (the whole
    /// vault above a top folder). The exclusion stays: leaving daily logs out is the
    /// client's choice, not a narrowing to undo. `None` when nothing is wider.
    pub(crate) fn widened(&self) -> Option<FindScope> {
        let components: Vec<&str> = self.dir.components().collect();
        let relative_dir = if self.glob.is_some() {
            (!self.dir.is_root()).then(|| self.dir.as_str().to_owned())
        } else if let Some((_, parent)) = components.split_last() {
            (!parent.is_empty()).then(|| parent.join("/"))
        } else {
            return None;
        };
        Some(FindScope {
            relative_dir,
            exclude_glob: self.exclude_glob.map(str::to_owned),
        })
    }
}

/// What the actions are derived from.
pub(crate) struct Situation<'a> {
    pub trace_id: &'a str,
    pub query: &'a str,
    pub verdict: &'a Verdict,
    /// The best candidates, ranked.
    pub candidates: &'a [Candidate],
    /// The file holding the most candidates of all found.
    pub dominant: Option<&'a RelPath>,
    pub cutoff: Option<CutoffReason>,
    pub scope: AskedScope<'a>,
}

pub(crate) fn next_actions(situation: &Situation) -> Vec<Proposal> {
    let verdict = situation.verdict;
    let can_repeat = situation.query.chars().count() <= MAX_REPEATED_QUERY_CHARS;
    let find = |scope: FindScope, only_unscanned_from: Option<&str>| Call::VaultFind {
        query: situation.query.to_owned(),
        // An empty scope is the whole vault, said by leaving it out.
        scope: Some(scope).filter(|scope| *scope != FindScope::default()),
        only_unscanned_from: only_unscanned_from.map(str::to_owned),
    };
    let mut actions: Vec<Proposal> = reads(situation.candidates)
        .into_iter()
        .enumerate()
        .map(|(rank, window)| {
            let call = Call::VaultRead {
                path: window.path.to_owned(),
                start_line: window.start_line,
                end_line: Some(window.end_line),
                max_chars: None,
            };
            Proposal::new(call, 0.8 - 0.05 * rank as f32)
        })
        .collect();
    let best = situation.candidates.first();
    if situation.cutoff == Some(CutoffReason::TimeBudget) && can_repeat {
        let call = find(FindScope::default(), Some(situation.trace_id));
        actions.push(Proposal::new(call, 0.95));
    }
    let wider = situation.scope.widened().filter(|_| can_repeat);
    let nothing = situation.candidates.is_empty();
    if verdict.fill_gaps() || verdict.lopsided {
        match (&wider, best) {
            (Some(scope), _) => {
                let confidence = if nothing { 0.9 } else { 0.7 };
                actions.push(Proposal::new(find(scope.clone(), None), confidence));
            }
            (None, Some(best)) if verdict.fill_gaps() => {
                let call = Call::VaultScan {
                    path: best.path.as_str().to_owned(),
                    start_line: None,
                    chunk_lines: None,
                    max_chars: None,
                };
                actions.push(Proposal::new(call, 0.55));
            }
            _ => {}
        }
    }
    if verdict.lopsided && wider.is_none() && situation.scope.exclude_glob.is_none() && can_repeat {
        if let Some(dominant) = situation.dominant {
            let dir = situation.scope.dir;
            let scope = FindScope {
                relative_dir: (!dir.is_root()).then(|| dir.as_str().to_owned()),
                exclude_glob: Some(dominant.as_str().to_owned()),
            };
            actions.push(Proposal::new(find(scope, None), 0.5));
        }
    }
    if verdict.status == IntegrationStatus::Ready {
        let source = situation
            .candidates
            .iter()
            .find(|c| !is_artifact(&c.path.components().collect::<Vec<_>>()));
        if let Some(source) = source {
            let call = Call::VaultCoverage {
                path: source.path.as_str().to_owned(),
                artifact_paths: Vec::new(),
            };
            actions.push(Proposal::new(call, 0.6));
        }
        actions.push(Proposal::new(Call::Stop, 0.5));
    } else if nothing && wider.is_none() && situation.cutoff.is_none() {
        // The whole scope was searched and holds nothing: there is nothing left to try.
        actions.push(Proposal::new(Call::Stop, 0.3));
    }
    actions.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    actions
}

/// Lines of one file proposed for reading.
#[derive(Debug, Clone, PartialEq)]
struct Window<'a> {
    path: &'a str,
    start_line: LineNo,
    end_line: LineNo,
    /// The best score of the candidates it covers.
    score: f32,
}

impl<'a> Window<'a> {
    /// A candidate's lines with [`READ_CONTEXT_LINES`] on each side.
    fn around(candidate: &'a Candidate) -> Window<'a> {
        let range = &candidate.range;
        Window {
            path: candidate.path.as_str(),
            start_line: range.start_line.saturating_sub(READ_CONTEXT_LINES).max(1),
            end_line: range.end_line + READ_CONTEXT_LINES,
            score: candidate.score,
        }
    }

    /// Joins `other` when both are of one file and overlap or touch; false otherwise.
    fn absorb(&mut self, other: &Window<'a>) -> bool {
        let joins = self.path == other.path
            && other.start_line <= self.end_line + 1
            && self.start_line <= other.end_line + 1;
        if joins {
            self.start_line = self.start_line.min(other.start_line);
            self.end_line = self.end_line.max(other.end_line);
            self.score = self.score.max(other.score);
        }
        joins
    }
}

/// Up to [`READS`] windows around the ranked candidates, best first: a window that
/// overlaps one already picked joins it (no line is proposed twice); at most
/// [`READS_PER_FILE`] of one file until the other files' windows are in, then the ones
/// passed over fill what room is left.
fn reads(candidates: &[Candidate]) -> Vec<Window<'_>> {
    let mut picked: Vec<Window> = Vec::with_capacity(READS);
    let mut passed_over = Vec::new();
    for window in candidates.iter().map(Window::around) {
        if picked.iter_mut().any(|p| p.absorb(&window)) {
            continue;
        }
        if picked.len() == READS {
            break;
        }
        if picked.iter().filter(|p| p.path == window.path).count() < READS_PER_FILE {
            picked.push(window);
        } else {
            passed_over.push(window);
        }
    }
    for window in passed_over {
        if !picked.iter_mut().any(|p| p.absorb(&window)) && picked.len() < READS {
            picked.push(window);
        }
    }
    picked.sort_by(|a, b| b.score.total_cmp(&a.score));
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::parse_relative;
    use crate::vault::find::integrate::{integrate, rank};
    use crate::vault::find::matcher::{LineRange, Patterns, Tally, Way};
    use crate::verdict::Thresholds;

    const THRESHOLDS: Thresholds = Thresholds {
        candidate_low: 3,
        file_bias: 0.8,
    };

    fn candidates(paths: &[(&str, LineNo)], ways: &[Way]) -> Vec<Candidate> {
        let patterns = Patterns::new("rollback rules");
        let mut found: Vec<Candidate> = paths
            .iter()
            .map(|(path, line)| {
                let range = LineRange {
                    start_line: *line,
                    end_line: *line,
                    ways: ways.to_vec(),
                    matches: 1,
                };
                Candidate::new(parse_relative(path).unwrap(), range, &patterns)
            })
            .collect();
        rank(&mut found);
        found
    }

    const ALL: [Way; 3] = [Way::Normalized; 3];
    const ONE_TERM: [Way; 3] = [Way::None, Way::Normalized, Way::None];

    struct Case<'a> {
        found: Vec<Candidate>,
        cutoff: Option<CutoffReason>,
        dir: RelPath,
        glob: Option<&'a str>,
        exclude_glob: Option<&'a str>,
    }

    impl<'a> Case<'a> {
        fn new(found: Vec<Candidate>) -> Case<'a> {
            Case {
                found,
                cutoff: None,
                dir: RelPath::root(),
                glob: None,
                exclude_glob: None,
            }
        }

        /// The actions for `found` as every candidate there is.
        fn actions(&self) -> Vec<Proposal> {
            let patterns = Patterns::new("rollback rules");
            let mut tally = Tally::default();
            let mut per_file: Vec<(&RelPath, usize)> = Vec::new();
            for candidate in &self.found {
                tally.count(&candidate.range);
                match per_file
                    .iter_mut()
                    .find(|(path, _)| *path == &candidate.path)
                {
                    Some((_, count)) => *count += 1,
                    None => per_file.push((&candidate.path, 1)),
                }
            }
            let counts: Vec<usize> = per_file.iter().map(|(_, count)| *count).collect();
            let verdict = integrate(&tally, &counts, &patterns, THRESHOLDS, self.cutoff);
            let most = counts.iter().copied().max().unwrap_or(0);
            let dominant = per_file.iter().find(|(_, count)| *count == most);
            next_actions(&Situation {
                trace_id: "v-1",
                query: "rollback rules",
                verdict: &verdict,
                candidates: &self.found,
                dominant: dominant.map(|(path, _)| *path),
                cutoff: self.cutoff,
                scope: AskedScope {
                    dir: &self.dir,
                    glob: self.glob,
                    exclude_glob: self.exclude_glob,
                },
            })
        }
    }

    fn tools(actions: &[Proposal]) -> Vec<&'static str> {
        actions.iter().map(|a| a.call.tool()).collect()
    }

    fn read(path: &str, start_line: LineNo, end_line: LineNo) -> Call {
        Call::VaultRead {
            path: path.into(),
            start_line,
            end_line: Some(end_line),
            max_chars: None,
        }
    }

    fn find(relative_dir: Option<&str>, exclude_glob: Option<&str>) -> Call {
        let scope = FindScope {
            relative_dir: relative_dir.map(str::to_owned),
            exclude_glob: exclude_glob.map(str::to_owned),
        };
        Call::VaultFind {
            query: "rollback rules".into(),
            scope: Some(scope).filter(|scope| *scope != FindScope::default()),
            only_unscanned_from: None,
        }
    }

    fn scan(path: &str) -> Call {
        Call::VaultScan {
            path: path.into(),
            start_line: None,
            chunk_lines: None,
            max_chars: None,
        }
    }

    #[test]
    fn a_ready_result_reads_the_top_then_verifies_coverage_and_stops() {
        let found = candidates(
            &[("notes/a.md", 12), ("notes/b.md", 3), ("drafts/c.md", 1)],
            &ALL,
        );
        let actions = Case::new(found).actions();
        assert_eq!(
            tools(&actions),
            [
                "vault_read",
                "vault_read",
                "vault_read",
                "vault_coverage",
                "stop"
            ]
        );
        assert_eq!(actions[0].call, read("drafts/c.md", 1, 6));
        assert_eq!(actions[1].call, read("notes/a.md", 7, 17));
        assert_eq!(
            actions[3].call,
            Call::VaultCoverage {
                path: "drafts/c.md".into(),
                artifact_paths: Vec::new()
            }
        );
        assert_eq!(actions[4].call, Call::Stop);
    }

    #[test]
    fn overlapping_reads_of_one_file_are_one_read() {
        let found = candidates(
            &[("a.md", 3), ("a.md", 12), ("a.md", 40), ("b.md", 3)],
            &ALL,
        );
        let reads: Vec<Call> = Case::new(found)
            .actions()
            .into_iter()
            .filter(|a| a.call.tool() == "vault_read")
            .map(|a| a.call)
            .collect();
        assert_eq!(
            reads,
            [
                read("a.md", 1, 17),
                read("a.md", 35, 45),
                read("b.md", 1, 8)
            ]
        );
    }

    #[test]
    fn coverage_is_for_sources_not_artifacts() {
        let found = candidates(
            &[
                ("artifacts/a.md", 1),
                ("artifacts/b.json", 1),
                ("artifacts/c.md", 1),
            ],
            &ALL,
        );
        assert!(!tools(&Case::new(found).actions()).contains(&"vault_coverage"));
    }

    #[test]
    fn gaps_in_a_narrowed_scope_widen_it_one_step_keeping_the_exclusion() {
        let found = candidates(
            &[
                ("notes/x/a.md", 1),
                ("notes/x/b.md", 1),
                ("notes/x/c.md", 1),
            ],
            &ONE_TERM,
        );
        let case = Case {
            dir: parse_relative("notes/x").unwrap(),
            exclude_glob: Some("artifacts/daily/**"),
            ..Case::new(found)
        };
        let actions = case.actions();
        let widen = actions.iter().find(|a| a.call.tool() == "vault_find");
        assert_eq!(
            widen.unwrap().call,
            find(Some("notes"), Some("artifacts/daily/**"))
        );
        assert!(
            !tools(&actions).contains(&"stop"),
            "a gap is not completion"
        );
        let globbed = Case {
            glob: Some("*.md"),
            dir: parse_relative("notes").unwrap(),
            ..Case::new(Vec::new())
        };
        let actions = globbed.actions();
        assert_eq!(actions[0].call, find(Some("notes"), None));
        assert_eq!(actions[0].confidence, 0.9, "nothing found: widening first");
        let top = Case {
            dir: parse_relative("notes").unwrap(),
            ..Case::new(Vec::new())
        };
        assert_eq!(top.actions()[0].call, find(None, None));
    }

    #[test]
    fn gaps_over_the_whole_vault_scan_the_best_file_and_nothing_found_stops() {
        let found = candidates(&[("a.md", 40), ("b.md", 1)], &ALL);
        let actions = Case::new(found).actions();
        assert_eq!(tools(&actions), ["vault_read", "vault_read", "vault_scan"]);
        assert_eq!(actions[2].call, scan("a.md"));
        assert_eq!(tools(&Case::new(Vec::new()).actions()), ["stop"]);
    }

    #[test]
    fn a_dominant_file_is_excluded_to_see_the_others() {
        let places: Vec<(&str, LineNo)> = (1..=5)
            .map(|n| ("big.md", n * 100))
            .chain([("small.md", 1)])
            .collect();
        let found = candidates(&places, &ALL);
        let actions = Case::new(found.clone()).actions();
        let reads: Vec<&str> = actions
            .iter()
            .filter_map(|a| match &a.call {
                Call::VaultRead { path, .. } => Some(path.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reads, ["big.md", "big.md", "small.md", "big.md", "big.md"]);
        let exclude = actions.iter().find(|a| a.call.tool() == "vault_find");
        assert_eq!(exclude.unwrap().call, find(None, Some("big.md")));
        let excluded = Case {
            exclude_glob: Some("artifacts/daily/**"),
            ..Case::new(found)
        };
        assert!(
            !tools(&excluded.actions()).contains(&"vault_find"),
            "one exclusion only"
        );
    }

    #[test]
    fn a_cutoff_continues_with_what_was_left() {
        let found = candidates(&[("a.md", 1), ("b.md", 1), ("c.md", 1)], &ALL);
        let timed = Case {
            cutoff: Some(CutoffReason::TimeBudget),
            ..Case::new(found.clone())
        };
        let actions = timed.actions();
        assert_eq!(
            actions[0].call,
            Call::VaultFind {
                query: "rollback rules".into(),
                scope: None,
                only_unscanned_from: Some("v-1".into()),
            }
        );
        assert!(!tools(&actions).contains(&"stop"));
        // Past the candidate cap everything was searched: nothing to continue, and no
        // stop either (the best were ranked, not all).
        let capped = Case {
            cutoff: Some(CutoffReason::CandidateCap),
            ..Case::new(found)
        };
        assert_eq!(
            tools(&capped.actions()),
            ["vault_read", "vault_read", "vault_read"]
        );
    }
}
