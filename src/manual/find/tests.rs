//! Behaviour of a whole search on small manual trees: stages, budgets, traces, verdicts.

use super::testing::{index, settings};
use super::*;
use crate::error::ErrorCode;
use crate::proposal::Call;

mod references;
mod semantic;

const LEAVE: &str = "# 休暇規程

## 年次有給休暇

入社後に付与する。

### 繰越し

未使用の年次有給休暇は翌年度に限り繰り越す。繰越しは最大20日までとする。

## 特別休暇

慶弔のための休暇。
";

const FAQ: &str = "# FAQ

有給休暇の繰越しは最大10日です。
";

const DEPLOY: &str = "# Deploy

## Rollback

Roll back within 10 minutes. See [who decides](incident.md#who-decides).

## Broken

The broken part, see [gone](missing.md).
";

const INCIDENT: &str = "# Incident

## Who decides

The commander decides on rollbacks. Exception: the security lead decides.

## Paging

Page the commander.
";

const FILES: &[(&str, &str)] = &[
    ("rules/leave.md", LEAVE),
    ("rules/faq.md", FAQ),
    ("ops/deploy.md", DEPLOY),
    ("ops/incident.md", INCIDENT),
];

fn request(query: &str) -> FindRequest {
    FindRequest {
        query: query.to_owned(),
        ..FindRequest::default()
    }
}

/// A request for `query` changed by `change`.
fn with(query: &str, change: impl FnOnce(&mut FindRequest)) -> FindRequest {
    let mut request = request(query);
    change(&mut request);
    request
}

fn hits(finder: &Finder, outcome: &FindOutcome, kind: HitKind) -> Vec<HitItem> {
    finder
        .hits(&outcome.trace_id, kind)
        .expect("the trace is kept")
}

/// `path:line` of each item (`path` for JSON, `-` without a place).
fn places(items: &[HitItem]) -> Vec<String> {
    items
        .iter()
        .map(|item| match &item.place {
            Some(place) => match place.start_line {
                Some(line) => format!("{}:{line}", place.path),
                None => place.path.to_string(),
            },
            None => "-".to_owned(),
        })
        .collect()
}

fn signals_of(items: &[HitItem], place: &str) -> Vec<&'static str> {
    let at = places(items)
        .iter()
        .position(|p| p == place)
        .unwrap_or_else(|| panic!("{place} is not among {:?}", places(items)));
    items[at].signals.clone()
}

/// Every item of the kinds a search lists, in order, with its reason, signals and
/// links, but not its score (see the test below).
fn listed(finder: &Finder, outcome: &FindOutcome) -> String {
    [HitKind::Candidates, HitKind::Conflicts, HitKind::Gaps]
        .into_iter()
        .flat_map(|kind| hits(finder, outcome, kind))
        .map(|item| {
            format!(
                "{:?}",
                HitItem {
                    score: None,
                    ..item
                }
            )
        })
        .collect()
}

/// The candidates are the same; their scores are not quite: the scan records the weak
/// units (a single kanji) of every section it reads, the index only those of the
/// sections a literal or a strong unit brings, and the units' weights count them.
#[test]
fn a_search_before_the_background_index_build_lands_scans_and_lists_what_the_index_lists() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let release = lock(&finder.corpus).hold_next_update();
    let queries = [
        "有給休暇の繰越し",
        "rollback commander",
        "繰越し 10日",
        "broken zeppelin",
    ];
    let find = |query| {
        finder
            .find(&index, &request(query), &CallContext::local())
            .expect("search")
    };
    let scanned: Vec<(String, Summary)> = queries
        .iter()
        .map(|query| {
            let outcome = find(query);
            (listed(&finder, &outcome), outcome.summary)
        })
        .collect();
    let corpus = finder.corpus(&index);
    assert_eq!(
        corpus.unindexed.len(),
        corpus.files.len(),
        "while the build is held, every file is scanned"
    );
    assert!(
        lock(&finder.corpus).sections().is_none(),
        "the build is running"
    );

    release.send(()).expect("the build waits");
    finder.complete_section_index(&index);
    assert_eq!(lock(&finder.corpus).last_update().files, 4);
    for (query, (scanned_items, scanned_summary)) in queries.iter().zip(scanned) {
        let outcome = find(query);
        assert!(
            finder.corpus(&index).unindexed.is_empty(),
            "after the build, the index answers"
        );
        assert_eq!(listed(&finder, &outcome), scanned_items, "{query}");
        assert_eq!(
            format!("{:?}", outcome.summary),
            format!("{scanned_summary:?}"),
            "{query}"
        );
    }
}

/// The label postings only spare the automata labels that hold no literal: a search
/// lists the same items, in the same order, as when every label is walked.
#[test]
fn a_search_answers_the_same_with_the_label_postings_and_with_the_walk() {
    let (_dir, index) = index(FILES);
    let queries = [
        "有給休暇の繰越し",
        "繰越し 10日",
        "rollback commander",
        "ＲＯＬＬＢＡＣＫ",
        "who decides",
        "Who Decides security lead",
        "gone",
        "休暇",
        "繰",
        "faq",
        "deploy incident",
        "broken zeppelin",
    ];
    let answers = |walk: bool| -> Vec<String> {
        let finder = Finder::new(settings());
        lock(&finder.corpus).without_labels_beside();
        finder.complete_section_index(&index);
        let corpus = finder.corpus(&index);
        if walk {
            let walking = corpus.new_labels().walking();
            assert!(corpus.labels.set(walking).is_ok(), "no search ran yet");
        }
        queries
            .iter()
            .map(|query| {
                let outcome = finder
                    .find(&index, &request(query), &CallContext::local())
                    .expect("search");
                assert!(
                    std::sync::Arc::ptr_eq(&finder.corpus(&index), &corpus),
                    "the search read the corpus whose labels were set"
                );
                format!("{}{:?}", listed(&finder, &outcome), outcome.summary)
            })
            .collect()
    };
    let walked = answers(true);
    assert!(walked.iter().any(|answer| answer.contains("incident.md")));
    for ((query, indexed), walked) in queries.iter().zip(answers(false)).zip(walked) {
        assert_eq!(indexed, walked, "{query}");
    }
}

#[test]
fn a_file_changed_under_the_index_is_searched_blank_until_the_refresh() {
    let (dir, mut index) = index(FILES);
    let finder = Finder::new(settings());
    // As long as the indexed text: only the stamp tells it changed.
    let changed = FAQ.replace("繰越し", "買取り");
    assert_eq!(changed.len(), FAQ.len());
    std::fs::write(dir.path().join("rules/faq.md"), &changed).unwrap();
    let search = |index: &ManualIndex, query: &str| {
        let outcome = finder
            .find(index, &request(query), &CallContext::local())
            .unwrap();
        places(&hits(&finder, &outcome, HitKind::Candidates))
    };
    let faq = "faq.md:1".to_owned();
    let before = search(&index, "有給休暇の繰越し");
    assert!(before.contains(&"leave.md:7".to_owned()), "{before:?}");
    assert!(
        !before.contains(&faq),
        "neither the old text nor the new one"
    );
    assert!(!search(&index, "有給休暇の買取り").contains(&faq));
    assert!(index.refresh().unwrap(), "the failed read asked for a walk");
    assert!(search(&index, "有給休暇の買取り").contains(&faq));
}

#[test]
fn the_matching_sub_section_ranks_first_and_the_summary_counts_it() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("有給休暇の繰越し"), &CallContext::local())
        .unwrap();
    let summary = &outcome.summary;
    assert_eq!(summary.intent, Intent::Unknown);
    assert!(summary.intent_inferred);
    assert_eq!((summary.scanned_files, summary.scanned_nodes), (4, 11));
    assert!(summary.cutoff_reason.is_none());
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(
        places(&candidates)[0],
        "leave.md:7",
        "the sub-section, not its parent"
    );
    assert!(places(&candidates).contains(&"faq.md:1".to_owned()));
    assert_eq!(summary.candidates, candidates.len());
    assert!(signals_of(&candidates, "leave.md:7").contains(&"heading"));
    assert!(outcome.trace_id.starts_with("t-"));
}

#[test]
fn different_numbers_for_one_unit_are_a_conflict() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("繰越し"), &CallContext::local())
        .unwrap();
    assert_eq!(outcome.summary.conflict_count, 1);
    assert_eq!(
        outcome.summary.integration_status,
        IntegrationStatus::NeedsFollowup
    );
    let conflicts = hits(&finder, &outcome, HitKind::Conflicts);
    assert_eq!(places(&conflicts), ["leave.md:7", "faq.md:1"]);
    assert_eq!(conflicts[0].conflict_with[0].path.as_ref(), "faq.md");
    let hint = conflicts[0].gap_hint.as_deref().unwrap();
    assert!(hint.starts_with("disagrees on number"), "{hint}");
    let tools: Vec<&str> = outcome.next_actions.iter().map(|a| a.call.tool()).collect();
    assert!(tools.contains(&"manual_hits") && !tools.contains(&"stop"));
}

#[test]
fn a_rule_and_an_exception_to_it_are_a_conflict() {
    let (_dir, index) = index(&[
        ("ops/a.md", "# Rollbacks\n\n## Rule\n\nEvery rollback needs a ticket.\n"),
        (
            "ops/b.md",
            "# Security\n\n## Rule exception\n\nException: a rollback during an outage needs no ticket.\n",
        ),
    ]);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("rollback"), &CallContext::local())
        .unwrap();
    let conflicts = hits(&finder, &outcome, HitKind::Conflicts);
    assert_eq!(places(&conflicts), ["a.md:3", "b.md:3"]);
    let hint = conflicts[0].gap_hint.as_deref().unwrap();
    assert!(hint.contains("exception"), "{hint}");
}

#[test]
fn unmatched_terms_and_unresolved_references_are_gaps() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("broken zeppelin"), &CallContext::local())
        .unwrap();
    let gaps = hits(&finder, &outcome, HitKind::Gaps);
    let hints: Vec<&str> = gaps.iter().filter_map(|g| g.gap_hint.as_deref()).collect();
    assert!(
        hints.contains(&"no section matches the term 「zeppelin」"),
        "{hints:?}"
    );
    assert!(
        hints.iter().any(|h| h.starts_with("link to missing.md")),
        "{hints:?}"
    );
    assert_eq!(places(&gaps), ["-", "deploy.md:7"]);
    assert_eq!(outcome.summary.gap_count, 2);
    assert!(outcome.summary.sufficiency_score < 0.7);
}

#[test]
fn references_reach_sections_the_query_does_not_mention() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("10 minutes"), &CallContext::local())
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "deploy.md:3");
    assert!(signals_of(&candidates, "incident.md:3").contains(&"reference"));
    assert!(outcome.summary.signal_coverage.reference >= 1);
}

#[test]
fn a_failing_stage_2_or_3_keeps_the_earlier_results_and_warns() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let whole = finder
        .find(&index, &request("10 minutes"), &CallContext::local())
        .unwrap();
    for stage in [2, 3] {
        let failing = FindRequest {
            fail_stage: Some(stage),
            ..request("10 minutes")
        };
        let outcome = finder
            .find(&index, &failing, &CallContext::local())
            .unwrap();
        assert_eq!(outcome.summary.warnings, 1, "stage {stage}");
        assert!(outcome.warnings[0].contains(&format!("stage {stage} failed")));
        let candidates = hits(&finder, &outcome, HitKind::Candidates);
        assert_eq!(places(&candidates)[0], "deploy.md:3", "stage {stage}");
        let lost = if stage == 2 {
            "exceptions"
        } else {
            "reference"
        };
        assert!(candidates.iter().all(|c| !c.signals.contains(&lost)));
    }
    assert_eq!(whole.summary.warnings, 0);
}

#[test]
fn a_spent_time_budget_lists_every_section_and_the_rest_is_searched_later() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let cut = finder
        .find(
            &index,
            &with("繰越し", |r| r.time_ms = Some(0)),
            &CallContext::local(),
        )
        .unwrap();
    assert_eq!(cut.summary.cutoff_reason, Some(CutoffReason::TimeBudget));
    assert_eq!(cut.summary.scanned_nodes, 0);
    assert_eq!(cut.summary.unscanned_sections_count, 11);
    assert_eq!(cut.warnings.len(), 2, "stages 2 and 3 skipped");
    let unscanned = hits(&finder, &cut, HitKind::Unscanned);
    assert!(unscanned.iter().all(|item| item.reason == "time_budget"));
    assert_eq!(cut.next_actions[0].call.tool(), "manual_find");
    let rest = finder
        .find(
            &index,
            &with("繰越し", |r| {
                r.only_unscanned_from = Some(cut.trace_id.clone())
            }),
            &CallContext::local(),
        )
        .unwrap();
    assert_eq!(rest.summary.scanned_nodes, 11);
    assert!(rest.summary.cutoff_reason.is_none());
    assert_eq!(
        places(&hits(&finder, &rest, HitKind::Candidates))[0],
        "leave.md:7"
    );
}

#[test]
fn the_candidate_cap_keeps_the_best_and_the_rest_can_be_searched_again() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let capped = finder
        .find(
            &index,
            &with("繰越し", |r| r.max_candidates = Some(1)),
            &CallContext::local(),
        )
        .unwrap();
    assert_eq!(
        capped.summary.cutoff_reason,
        Some(CutoffReason::CandidateCap)
    );
    assert_eq!(capped.summary.candidates, 1);
    assert!(capped.summary.integrated_nodes > 1);
    let left = hits(&finder, &capped, HitKind::Unscanned);
    assert!(!left.is_empty() && left.iter().all(|item| item.reason == "candidate_cap"));
    let rest = finder
        .find(
            &index,
            &with("繰越し", |r| {
                r.only_unscanned_from = Some(capped.trace_id.clone())
            }),
            &CallContext::local(),
        )
        .unwrap();
    assert_eq!(rest.summary.scanned_nodes, left.len());
    assert!(!places(&hits(&finder, &rest, HitKind::Candidates)).contains(&"leave.md:7".into()));
}

/// A cancelled search stops after its scan, before the scoring and the stages, and
/// leaves no trace: nobody will page it.
#[test]
fn a_cancelled_search_answers_cancelled_and_keeps_no_trace() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let call = CallContext::local();
    call.cancel_flag()
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let error = finder
        .find(&index, &request("有給休暇の繰越し"), &call)
        .unwrap_err();
    assert_eq!(error.details.unwrap()["cancelled"], true);
    let next = finder
        .find(&index, &request("有給休暇の繰越し"), &CallContext::local())
        .unwrap();
    assert!(next.trace_id.ends_with('1'), "{}", next.trace_id);
}

#[test]
fn unknown_traces_are_not_found_without_fallback() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let error = finder
        .find(
            &index,
            &with("繰越し", |r| {
                r.only_unscanned_from = Some("t-000000nope".into())
            }),
            &CallContext::local(),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    assert_eq!(
        error.details.unwrap()["field"],
        "only_unscanned_from_trace_id"
    );
    let error = finder
        .hits("t-000000nope", HitKind::Candidates)
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
}

#[test]
fn max_stage_is_three_or_four_within_the_hard_limit() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    for stage in [2, 5] {
        let error = finder
            .find(
                &index,
                &with("x", |r| r.max_stage = Some(stage)),
                &CallContext::local(),
            )
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter, "{stage}");
    }
    let capped = Finder::new(FindSettings {
        hard_max_stage: 3,
        default_max_stage: 3,
        ..settings()
    });
    let error = capped
        .find(
            &index,
            &with("x", |r| r.max_stage = Some(4)),
            &CallContext::local(),
        )
        .unwrap_err();
    assert_eq!(error.details.unwrap()["accepted"], serde_json::json!([3]));
}

#[test]
fn stage_4_widens_a_narrowed_search_and_stage_3_only_reports_the_cap() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let narrowed = |max_stage| FindRequest {
        manual_id: Some("rules".into()),
        max_stage: Some(max_stage),
        ..request("rollback")
    };
    let capped = finder
        .find(&index, &narrowed(3), &CallContext::local())
        .unwrap();
    assert_eq!(capped.summary.candidates, 0);
    assert_eq!(capped.summary.max_stage_applied, 3);
    assert_eq!(capped.summary.cutoff_reason, Some(CutoffReason::StageCap));
    assert_eq!(
        capped.summary.integration_status,
        IntegrationStatus::Blocked
    );
    let unscanned = hits(&finder, &capped, HitKind::Unscanned);
    assert_eq!(unscanned.len(), 6, "the sections of the other manual");
    assert!(unscanned.iter().all(|item| item.reason == "stage_cap"));
    assert!(matches!(
        capped.next_actions[0].call,
        Call::ManualFind {
            max_stage: Some(4),
            ..
        }
    ));
    let widened = finder
        .find(&index, &narrowed(4), &CallContext::local())
        .unwrap();
    assert!(widened.summary.scope_expanded);
    assert_eq!(widened.summary.max_stage_applied, 4);
    let candidates = hits(&finder, &widened, HitKind::Candidates);
    assert!(signals_of(&candidates, "deploy.md:3").contains(&"expanded"));
}

#[test]
fn an_exceptions_question_ranks_stated_exceptions_first() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(
            &index,
            &request("rollback exceptions"),
            &CallContext::local(),
        )
        .unwrap();
    assert_eq!(outcome.summary.intent, Intent::Exceptions);
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "incident.md:3");
    assert!(candidates[0].signals.contains(&"exceptions"));
}

#[test]
fn strict_terms_are_marked_and_other_matches_stay() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("「繰越し」 休暇"), &CallContext::local())
        .unwrap();
    assert_eq!(outcome.summary.strict_terms, 1);
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert!(candidates[0].signals.contains(&"strict"));
    assert!(signals_of(&candidates, "leave.md:11")
        .iter()
        .all(|s| *s != "strict"));
}

#[test]
fn user_synonyms_find_other_wordings() {
    let (dir, index) = index(&[(
        "m/a.md",
        "# Policy\n\n## Carry\n\nキャリーオーバーは翌年まで。\n",
    )]);
    let synonyms = dir.path().join("synonyms.txt");
    std::fs::write(&synonyms, "繰越し, キャリーオーバー\n").unwrap();
    let finder = Finder::new(FindSettings {
        synonyms_path: Some(synonyms),
        ..settings()
    });
    let outcome = finder
        .find(&index, &request("繰越し"), &CallContext::local())
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates), ["a.md:3"]);
    assert!(candidates[0].signals.contains(&"synonym"));
    assert_eq!(outcome.summary.signal_coverage.synonym, 1);
}

#[test]
fn a_covered_query_without_conflicts_or_gaps_is_ready_to_stop() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let outcome = finder
        .find(&index, &request("特別休暇"), &CallContext::local())
        .unwrap();
    assert_eq!(outcome.summary.integration_status, IntegrationStatus::Ready);
    assert_eq!(outcome.summary.sufficiency_score, 1.0);
    let tools: Vec<&str> = outcome.next_actions.iter().map(|a| a.call.tool()).collect();
    assert_eq!(tools, ["manual_hits", "manual_read", "stop"]);
    let top = hits(&finder, &outcome, HitKind::IntegratedTop);
    assert_eq!(places(&top)[0], "leave.md:11");
}

#[test]
fn tuned_thresholds_decide_stage_4_and_its_cost_is_reported() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let with_low = |candidate_low| {
        with("慶弔の日", |r| {
            r.thresholds = Some(Thresholds {
                candidate_low,
                file_bias: 0.8,
            })
        })
    };
    let few = finder
        .find(&index, &with_low(10), &CallContext::local())
        .unwrap();
    assert!(few.summary.scope_expanded, "fewer than 10 candidates");
    assert_eq!(few.max_stage_allowed, 4);
    assert!(few.stage4_added >= 1 && few.stage4_added_chars > 0);
    let enough = finder
        .find(&index, &with_low(1), &CallContext::local())
        .unwrap();
    assert!(!enough.summary.scope_expanded);
    assert_eq!((enough.stage4_added, enough.stage4_added_chars), (0, 0));
}

#[test]
fn edits_added_and_deleted_files_show_in_the_next_search() {
    let (dir, mut index) = index(FILES);
    let finder = Finder::new(settings());
    let before = finder
        .find(&index, &request("ゼッペリン"), &CallContext::local())
        .unwrap();
    assert_eq!(before.summary.candidates, 0);
    std::fs::write(
        dir.path().join("rules/faq.md"),
        "# FAQ\n\n## 飛行船\n\nゼッペリンの利用は禁止。\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("rules/new.md"), "# 新規\n\nゼッペリン。\n").unwrap();
    index.refresh().unwrap();
    let after = finder
        .find(&index, &request("ゼッペリン"), &CallContext::local())
        .unwrap();
    let mut found = places(&hits(&finder, &after, HitKind::Candidates));
    found.sort();
    assert_eq!(found, ["faq.md:3", "new.md:1"]);
    std::fs::remove_file(dir.path().join("rules/new.md")).unwrap();
    index.refresh().unwrap();
    let gone = finder
        .find(&index, &request("ゼッペリン"), &CallContext::local())
        .unwrap();
    assert_eq!(
        places(&hits(&finder, &gone, HitKind::Candidates)),
        ["faq.md:3"]
    );
}

const SCHEDULING: &[(&str, &str)] = &[
    (
        "admin/tasks.md",
        "# Tasks\n\n## Scheduling\n\nUse anacron to run the daily maintenance of a machine that is not always on.\n\n## Users\n\nCreate users with adduser.\n",
    ),
    (
        "admin/disks.md",
        "# Disks\n\n## Quotas\n\nLimit the disk space of each user.\n",
    ),
];

#[test]
fn a_section_sharing_one_rare_unit_with_the_query_is_a_candidate() {
    let (_dir, index) = index(SCHEDULING);
    let finder = Finder::new(settings());
    let query = "when does anacron start the backups in the night";
    let outcome = finder
        .find(&index, &request(query), &CallContext::local())
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(
        places(&candidates)[0],
        "tasks.md:3",
        "{:?}",
        places(&candidates)
    );
    assert!(signals_of(&candidates, "tasks.md:3").contains(&"normalized"));
    assert!(
        !places(&candidates).contains(&"disks.md:3".to_owned()),
        "a section sharing no unit is no candidate"
    );
}

#[test]
fn japanese_everyday_wording_finds_the_section_by_its_units() {
    let (_dir, index) = index(&[
        (
            "m/cron.md",
            "# 定期実行\n\n## スケジューリング\n\n夜間に決まった時刻でスクリプトを実行するには cron を使う。\n",
        ),
        ("m/quota.md", "# クォータ\n\n利用者ごとのディスク容量に上限を設ける。\n"),
    ]);
    let finder = Finder::new(settings());
    let query = "毎晩決まった時刻に自作のスクリプトを自動で走らせたい";
    let outcome = finder
        .find(&index, &request(query), &CallContext::local())
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(
        places(&candidates)[0],
        "cron.md:3",
        "{:?}",
        places(&candidates)
    );
    let outcome = finder
        .find(
            &index,
            &request("フォルダごとの容量を調べる"),
            &CallContext::local(),
        )
        .unwrap();
    let candidates = hits(&finder, &outcome, HitKind::Candidates);
    assert_eq!(places(&candidates)[0], "quota.md:1");
}

#[test]
fn also_wordings_are_searched_with_a_lower_weight_and_counted() {
    let (_dir, index) = index(SCHEDULING);
    let finder = Finder::new(settings());
    let query = "keep a nightly job from being skipped";
    let plain = finder
        .find(&index, &request(query), &CallContext::local())
        .unwrap();
    let plain_places = places(&hits(&finder, &plain, HitKind::Candidates));
    assert!(
        !plain_places.contains(&"tasks.md:3".to_owned()),
        "{plain_places:?}"
    );
    assert_eq!(plain.summary.also_used, 0);
    let helped = finder
        .find(
            &index,
            &with(query, |request| {
                request.also = vec!["anacron".into(), "・".into(), "cron.daily".into()]
            }),
            &CallContext::local(),
        )
        .unwrap();
    let candidates = hits(&finder, &helped, HitKind::Candidates);
    assert!(
        places(&candidates).contains(&"tasks.md:3".to_owned()),
        "{:?}",
        places(&candidates)
    );
    assert_eq!(
        helped.summary.also_used, 2,
        "a wording without units is not counted"
    );
}

#[test]
fn the_longest_and_most_fragmented_queries_work() {
    let (_dir, index) = index(FILES);
    let finder = Finder::new(settings());
    let words: Vec<String> = (0..200).map(|n| format!("word{n}")).collect();
    let kanji: String = ('\u{4E00}'..).step_by(7).take(1000).collect();
    let mixed: String = "ア漢a・".repeat(250);
    let cycled: String = "有給休暇の繰越し、rollback-deploy "
        .chars()
        .cycle()
        .take(1000)
        .collect();
    let english = "how do I make sure that the commander decides on every rollback of a broken deploy when the security lead is away and nobody else can page the team at night or on the weekend so that the incident is handled within ten minutes as the runbook says and the customers notice nothing of what happened before the next release goes out to production with all the fixes";
    for query in [
        words.join(" ")[..1000].to_owned(),
        kanji,
        mixed,
        cycled,
        english.to_owned(),
    ] {
        assert!(query.chars().count() <= 1000);
        let outcome = finder.find(&index, &request(&query), &CallContext::local());
        assert!(outcome.is_ok(), "{:?}", &query[..40.min(query.len())]);
    }
}

/// A finder keeping its section index under `cache`, as a server with `CACHE_DIR` does.
fn finder_on_disk(cache: &std::path::Path) -> Finder {
    Finder::new(FindSettings {
        cache_dir: Some(cache.to_path_buf()),
        ..settings()
    })
}

/// Every reference of a corpus as `Debug` text, link texts sorted by their target.
fn reference_graph(corpus: &Corpus) -> String {
    let mut link_texts: Vec<_> = corpus
        .references
        .link_texts()
        .map(|(key, label)| (key, label.text().to_owned(), label.loose().to_owned()))
        .collect();
    link_texts.sort();
    format!("{:?} {link_texts:?}", corpus.references.references())
}

#[test]
fn a_start_over_a_current_index_derives_no_text_and_a_search_only_its_candidates_files() {
    let (dir, mut index) = index(FILES);
    let cache = tempfile::tempdir().unwrap();
    let first = finder_on_disk(cache.path());
    first.complete_section_index(&index);
    let derived = first.corpus(&index);
    assert!(derived.unindexed.is_empty());
    drop(first);

    let finder = finder_on_disk(cache.path());
    let corpus = finder.corpus(&index);
    assert!(corpus.unindexed.is_empty(), "the index holds every file");
    assert!(
        corpus.files.iter().all(|file| file.pinned.is_none()),
        "no file was derived at start"
    );
    assert_eq!(corpus.texts().derived_count(), 0);
    assert_eq!(reference_graph(&corpus), reference_graph(&derived));
    assert_eq!(corpus.mean_node_bytes, derived.mean_node_bytes);
    for (read, made) in corpus.files.iter().zip(&derived.files) {
        assert_eq!(read.outline.stored, made.outline.stored, "{}", read.path);
        assert_eq!(
            format!("{:?} {:?}", read.outline.labels, read.outline.page),
            format!("{:?} {:?}", made.outline.labels, made.outline.page)
        );
    }

    let outcome = finder
        .find(
            &index,
            &request("rollback commander"),
            &CallContext::local(),
        )
        .expect("search");
    let candidates = places(&hits(&finder, &outcome, HitKind::Candidates));
    assert!(
        candidates.contains(&"incident.md:3".to_owned()),
        "{candidates:?}"
    );
    let texts = corpus.texts();
    assert!(texts.holds("ops", "incident.md") && texts.holds("ops", "deploy.md"));
    assert!(
        !texts.holds("rules", "leave.md") && !texts.holds("rules", "faq.md"),
        "files without a candidate are not derived"
    );
    assert_eq!(texts.derived_count(), 2);
    finder
        .find(
            &index,
            &request("rollback commander"),
            &CallContext::local(),
        )
        .expect("search");
    assert_eq!(texts.derived_count(), 2, "kept across searches");

    std::fs::write(
        dir.path().join("ops/incident.md"),
        INCIDENT.replace("Page the commander.", "Page the deputy."),
    )
    .unwrap();
    assert!(index.refresh().unwrap());
    let changed = finder.corpus(&index);
    let at = changed.file_index("ops", "incident.md").unwrap() as usize;
    let text = changed.files[at]
        .pinned
        .as_ref()
        .expect("a changed file is derived again, whole, until the index holds it");
    assert!(text.body.contains("deputy"));
    assert!(changed.unindexed.contains(&(at as u32)));
}

const LABELLED: &[(&str, &str)] = &[
    (
        "m/keihi.md",
        "# 経費\n\n経費の話。\n\n## 出張旅費\n\n出張の旅費は精算する。\n\n## 会議\n\n[出張と旅費の規則](#出張旅費)を見る。[ﾛｰﾙﾊﾞｯｸ](ops.md#rollback)\n",
    ),
    ("m/ryoko.md", "# 旅行\n\n## 概要\n\nその他。\n"),
    (
        "m/ops.md",
        "# Operations\n\n## 概要\n\nSee [Rollback steps](#rollback).\n\n## Rollback\n\nRoll back within 10 minutes.\n",
    ),
];

/// The index's hits of a search of every file, with the corpus's labels as built or
/// walked.
fn index_hits_of(query: &str, walk: bool) -> String {
    let (_dir, index) = index(LABELLED);
    let corpus = CorpusCache::default().sync(&index);
    if walk {
        assert!(corpus.labels.set(corpus.new_labels().walking()).is_ok());
    }
    let plan = testing::plan(query);
    let scope = testing::every_file(&corpus);
    let found = candidates::index_hits(
        &corpus,
        &plan,
        &scope,
        &Default::default(),
        &mut score::TitleSets::default(),
    );
    let mut pages: Vec<_> = found.scan.pages.iter().collect();
    pages.sort_unstable_by_key(|(file, _)| **file);
    let hits = every_sections_hits(&found, &plan, &corpus);
    format!("{hits:?} {pages:?} {:?}", found.unit_df)
}

/// The hits of every section `found` names, those holding units alone built as the
/// units' ranking builds them, in key order.
fn every_sections_hits(
    found: &candidates::IndexHits,
    plan: &plan::Plan,
    corpus: &Corpus,
) -> Vec<(derived::NodeKey, scan::NodeHits)> {
    let mut titles = score::TitleSets::default();
    let mut hits = found.scan.hits.clone();
    for index in 0..found.unit_only.len() {
        let mut node = scan::NodeHits::default();
        let key = found
            .unit_only
            .hits_into(index, plan, corpus, &mut titles, &mut node);
        hits.push((key, node));
    }
    hits.sort_by_key(|(key, _)| *key);
    hits
}

/// The sections kept as postings are those the evidence score does not rank (no term
/// anywhere, not a page's first, not linked to), and the units rank them, weak units
/// included, as they would rank their hits.
#[test]
fn sections_holding_units_alone_rank_as_their_hits_would() {
    let mut files = LABELLED.to_vec();
    files.push((
        "m/logs.md",
        "# Logs\n\nLogs are kept.\n\n## Retention\n\nOld logs are rotated daily.\n\n## Schedule\n\nA job runs every night.\n",
    ));
    let (_dir, index) = index(&files);
    let corpus = CorpusCache::default().sync(&index);
    let scope = testing::every_file(&corpus);
    let synonyms =
        crate::text::synonyms::Synonyms::load(None, &crate::text::normalize::normalize_str).0;
    let mut unit_only = 0;
    // `also` wordings are searched as units only: "Schedule" holds them and no term.
    for (query, also) in [
        ("retention", &["job", "every night"][..]),
        ("rotated logs", &["night"][..]),
        ("出張の旅費を精算する規則", &["会議", "概要"][..]),
        ("rollback within minutes", &[][..]),
    ] {
        let also: Vec<String> = also.iter().map(|wording| wording.to_string()).collect();
        let plan = plan::Plan::new(query::Query::parse(query, None), &synonyms, &also);
        let mut titles = score::TitleSets::default();
        let found =
            candidates::index_hits(&corpus, &plan, &scope, &Default::default(), &mut titles);
        unit_only += found.unit_only.len();
        let whole = scan::ScanResult {
            hits: every_sections_hits(&found, &plan, &corpus),
            pages: found.scan.pages.clone(),
            scanned_files: found.scan.scanned_files,
            scanned_nodes: found.scan.scanned_nodes,
            unscanned: Vec::new(),
        };
        let df = score::TermDf::of(&plan, &whole);
        assert_eq!(df, score::TermDf::of(&plan, &found.scan), "{query}");
        let weights = df.weights(corpus.node_count);
        let scored = score::score_all(&plan, &corpus, &whole, &weights, &|_, _| true, &mut titles);
        let alone = found.unit_only.keys();
        assert!(
            scored.iter().all(|s| !alone.contains(&s.key)),
            "{query}: the evidence score ranks none of {alone:?}"
        );
        let mut units = |scan: &scan::ScanResult, unit_only: &candidates::UnitOnly| {
            let df = Some(&found.unit_df[..]);
            let mut items =
                relevance::rank_units(&plan, &corpus, scan, df, &|_, _| true, &mut titles).items;
            items.extend(relevance::rank_unit_only(
                &plan,
                &corpus,
                scan,
                unit_only,
                &found.unit_df,
                &mut titles,
            ));
            items.sort_by(|a, b| stages::best_first((a.score, a.key), (b.score, b.key)));
            items
                .iter()
                .map(|item| (item.key, item.score.to_bits(), item.admits, item.signals))
                .collect::<Vec<_>>()
        };
        let ranked = units(&found.scan, &found.unit_only);
        assert!(alone
            .iter()
            .all(|key| ranked.iter().any(|item| item.0 == *key)));
        assert_eq!(ranked, units(&whole, &Default::default()), "{query}");
    }
    assert!(unit_only > 0, "some sections hold units alone");
}

#[test]
fn the_index_hits_are_the_same_with_the_postings_and_with_the_walk() {
    for query in [
        "出張旅費",
        "旅費の規則",
        "rollback",
        "ロールバック",
        "ＲＯＬＬＢＡＣＫ steps",
        "概要",
        "旅",
        "operations",
        "経費 会議",
    ] {
        let walked = index_hits_of(query, true);
        assert!(walked.contains("NodeHits"), "{query} finds something");
        assert_eq!(index_hits_of(query, false), walked, "{query}");
    }
}
