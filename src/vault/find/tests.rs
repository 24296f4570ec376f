//! `vault_find` from request to outcome over a vault in a temporary folder.

use super::testing::vault;
use super::*;
use crate::call::CallContext;
use crate::error::ErrorCode;
use crate::proposal::Call;

fn finder() -> VaultFinder {
    VaultFinder::new(FindSettings {
        thresholds: Thresholds {
            candidate_low: 3,
            file_bias: 0.8,
        },
        trace_max_keep: 10,
        trace_ttl: Duration::from_secs(60),
        cache_max_bytes: 1 << 30,
    })
}

fn request(query: &str) -> FindRequest<'_> {
    FindRequest {
        query,
        ..FindRequest::default()
    }
}

/// `query` again over what the search `trace_id` left out.
fn continue_from(finder: &VaultFinder, root: &Root, trace_id: &str, query: &str) -> FindOutcome {
    let request = FindRequest {
        only_unscanned_from: Some(trace_id),
        ..request(query)
    };
    finder.find(root, &request, &CallContext::local()).unwrap()
}

/// The paths of the proposed reads, in order.
fn reads(outcome: &FindOutcome) -> Vec<String> {
    outcome
        .next_actions
        .iter()
        .filter_map(|a| match &a.call {
            Call::VaultRead { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

const NOTES: &[(&str, &str)] = &[
    ("notes/leave.md", "# 休暇\n\n有給休暇の繰越しは最大20日。\n"),
    ("drafts/plan.md", "# Plan\n\n有給\n休暇の申請を確認する。\n"),
    (
        "artifacts/flow.md",
        "```mermaid\nflowchart TD\n  A[有給休暇] --> B\n```\n",
    ),
    (
        "artifacts/daily/2026-01-05.md",
        "# 2026-01-05\n- 有給休暇の件を調べた\n",
    ),
    (".system/adaptive_stats.jsonl", "有給休暇\n"),
    ("notes/.hidden.md", "有給休暇\n"),
    (".obsidian/cache.md", "有給休暇\n"),
];

#[test]
fn finds_every_visible_file_loosely_too_and_never_hidden_ones() {
    let (_dir, root) = vault(NOTES);
    let outcome = finder()
        .find(&root, &request("有給休暇"), &CallContext::local())
        .unwrap();
    let summary = &outcome.summary;
    assert_eq!(
        summary.scanned_files, 4,
        "hidden and .system files are not listed"
    );
    assert_eq!((summary.candidates, summary.candidate_files), (4, 4));
    assert_eq!(summary.loose, 1, "有給\\n休暇 across a line break");
    assert_eq!(summary.normalized, 3);
    assert_eq!(summary.integration_status, IntegrationStatus::Ready);
    assert_eq!(summary.cutoff_reason, None);
    let read = reads(&outcome);
    assert_eq!(read.len(), 4);
    assert!(read
        .iter()
        .all(|p| !p.contains(".system") && !p.contains("/.")));
    assert!(outcome.trace_id.starts_with("v-"));
    assert_eq!(outcome.next_actions.last().unwrap().call, Call::Stop);
}

#[test]
fn scope_narrows_and_daily_logs_can_be_left_out() {
    let (_dir, root) = vault(NOTES);
    let no_daily = FindRequest {
        scope: ScopeRequest {
            exclude_glob: Some("artifacts/daily/**"),
            ..ScopeRequest::default()
        },
        ..request("有給休暇")
    };
    let outcome = finder()
        .find(&root, &no_daily, &CallContext::local())
        .unwrap();
    assert_eq!(outcome.summary.scanned_files, 3);
    assert!(!reads(&outcome)
        .iter()
        .any(|p| p.starts_with("artifacts/daily")));

    let artifacts = FindRequest {
        scope: ScopeRequest {
            relative_dir: Some("artifacts"),
            glob: Some("*.md"),
            ..ScopeRequest::default()
        },
        ..request("有給休暇")
    };
    let outcome = finder()
        .find(&root, &artifacts, &CallContext::local())
        .unwrap();
    assert_eq!(outcome.summary.scanned_files, 2);
    assert_eq!(outcome.summary.candidates, 2, "too few: widen");
    let widen = outcome
        .next_actions
        .iter()
        .find_map(|a| match &a.call {
            Call::VaultFind { scope, .. } => Some(scope.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(widen.unwrap().relative_dir.as_deref(), Some("artifacts"));
}

#[test]
fn a_spent_budget_is_reported_and_the_continuation_searches_what_was_left() {
    let (_dir, root) = vault(NOTES);
    let finder = finder();
    let spent = FindRequest {
        time_ms: Some(0),
        ..request("有給休暇")
    };
    let cut = finder.find(&root, &spent, &CallContext::local()).unwrap();
    assert_eq!(cut.summary.cutoff_reason, Some(CutoffReason::TimeBudget));
    assert_eq!(
        (cut.summary.scanned_files, cut.summary.unscanned_files),
        (0, 4)
    );
    assert_eq!(cut.summary.integration_status, IntegrationStatus::Blocked);
    assert!(matches!(
        &cut.next_actions[0].call,
        Call::VaultFind { only_unscanned_from: Some(trace_id), .. } if *trace_id == cut.trace_id
    ));
    let continued = continue_from(&finder, &root, &cut.trace_id, "有給休暇");
    assert_eq!(continued.summary.scanned_files, 4);
    assert_eq!(continued.summary.candidates, 4);
    assert_eq!(continued.summary.cutoff_reason, None);
}

#[test]
fn the_cap_keeps_the_best_of_every_file_and_the_verdict_counts_all() {
    let (_dir, root) = vault(NOTES);
    let capped = finder()
        .find(
            &root,
            &FindRequest {
                max_candidates: Some(1),
                ..request("有給休暇の繰越し")
            },
            &CallContext::local(),
        )
        .unwrap();
    let summary = &capped.summary;
    assert_eq!(summary.cutoff_reason, Some(CutoffReason::CandidateCap));
    assert_eq!((summary.candidates, summary.candidate_files), (4, 4));
    assert_eq!((summary.scanned_files, summary.unscanned_files), (4, 0));
    assert_eq!(summary.gap_count, 0, "繰越し is held by the best candidate");
    assert_eq!(
        reads(&capped),
        ["notes/leave.md"],
        "the last file in path order"
    );
    assert!(
        !capped
            .next_actions
            .iter()
            .any(|a| a.call.tool() == "vault_find"),
        "nothing was left unsearched"
    );
}

#[test]
fn a_term_found_nowhere_is_a_gap_and_the_whole_vault_is_scanned_instead() {
    let (_dir, root) = vault(NOTES);
    let outcome = finder()
        .find(&root, &request("繰越し ゼッペリン"), &CallContext::local())
        .unwrap();
    assert_eq!((outcome.summary.terms, outcome.summary.gap_count), (2, 1));
    assert_eq!(
        outcome.summary.integration_status,
        IntegrationStatus::NeedsFollowup
    );
    let tools: Vec<&str> = outcome.next_actions.iter().map(|a| a.call.tool()).collect();
    assert_eq!(tools, ["vault_read", "vault_scan"]);
    assert_eq!(
        outcome.next_actions[1].call,
        Call::VaultScan {
            path: "notes/leave.md".into(),
            start_line: None,
            chunk_lines: None,
            max_chars: None,
        }
    );
}

#[test]
fn bad_requests_are_refused_before_any_search() {
    let (_dir, root) = vault(NOTES);
    let finder = finder();
    let code = |request: FindRequest<'_>| {
        finder
            .find(&root, &request, &CallContext::local())
            .unwrap_err()
            .code
    };
    assert_eq!(code(request(" \n ")), ErrorCode::InvalidParameter);
    let bad_glob = FindRequest {
        scope: ScopeRequest {
            glob: Some("a/../b"),
            field: "scope.",
            ..ScopeRequest::default()
        },
        ..request("x")
    };
    assert_eq!(code(bad_glob), ErrorCode::InvalidParameter);
    let system = FindRequest {
        scope: ScopeRequest {
            relative_dir: Some(".System"),
            ..ScopeRequest::default()
        },
        ..request("x")
    };
    assert_eq!(code(system), ErrorCode::Forbidden);
    let gone = FindRequest {
        only_unscanned_from: Some("v-000000ffff"),
        ..request("x")
    };
    assert_eq!(code(gone), ErrorCode::NotFound);
    let manual_id = FindRequest {
        only_unscanned_from: Some("t-000000ffff"),
        ..request("x")
    };
    assert_eq!(code(manual_id), ErrorCode::NotFound);
}

#[test]
fn the_best_and_the_tally_do_not_depend_on_the_split_over_cores() {
    let files: Vec<(String, String)> = (0..6)
        .map(|n| {
            let body = "有給休暇\n\n\n\n\n\n\n".repeat(n + 1);
            (format!("notes/{n}.md"), body)
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, body)| (path.as_str(), body.as_str()))
        .collect();
    let (_dir, root) = vault(&borrowed);
    let paths: Vec<RelPath> = files
        .iter()
        .map(|(path, _)| crate::paths::parse_relative(path).unwrap())
        .collect();
    let patterns = Patterns::new("有給休暇");
    let score = |range: &LineRange| score(range, &patterns);
    let later = Instant::now() + Duration::from_secs(60);
    let local = CallContext::local();
    let forms = FormsCache::new(0);
    let reading = Reading {
        forms: &forms,
        call: &local,
        deadline: later,
    };
    let gathered = |split: usize| {
        let runs = paths
            .chunks(split)
            .map(|run| search_run(&root, &reading, run, &patterns, 4, &score))
            .collect();
        Gathered::of(&paths, runs, 4)
    };
    let (one, three) = (gathered(6), gathered(2));
    assert_eq!(one.best, three.best);
    assert_eq!(one.best.len(), 4);
    assert_eq!(one.tally, three.tally);
    assert_eq!(one.tally.ranges, 21, "1 + 2 + ... + 6 ranges");
    assert_eq!(one.per_file, three.per_file);
    assert_eq!(one.dominant().map(RelPath::as_str), Some("notes/5.md"));
}
