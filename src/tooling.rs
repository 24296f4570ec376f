//! The tooling guide: which tool an agent should call first for a request, the standard
//! workflows, and one line per tool. It is meant to be the first call of a conversation,
//! so it is built from the served tool table (it never names a tool this build does not
//! serve) and stays under 2,200 characters (27 tools, each with a few words).

use crate::text::normalize::normalize_str;

/// What the user is after; decides `first_tool`: the schema's `GuideGoal`.
pub(crate) use crate::contract::types::GuideGoal;

/// Cue words per goal, checked in this order on the normalised prompt; the first goal
/// with a cue wins. Daily notes come first because "今日の作業ログを成果物に" is a daily
/// note, not an artifact review.
const CUES: &[(GuideGoal, &[&str])] = &[
    (
        GuideGoal::DailyNote,
        &[
            "日報",
            "日次",
            "作業ログ",
            "作業記録",
            "今日のログ",
            "daily",
            "journal",
            "today's log",
        ],
    ),
    (
        GuideGoal::Transcription,
        &[
            "転記",
            "コピー",
            "写し",
            "複製",
            "書き写",
            "copy",
            "transcri",
            "duplicate into",
        ],
    ),
    (
        GuideGoal::VaultArtifacts,
        &[
            "成果物",
            "フローチャート",
            "監査",
            "網羅性",
            "カバレッジ",
            "artifact",
            "flowchart",
            "audit",
            "coverage",
            "vault",
        ],
    ),
];

/// The goal of a prompt: the first goal whose cue occurs, else an exhaustive look-up.
pub(crate) fn goal_of(prompt: &str) -> GuideGoal {
    let prompt = normalize_str(prompt);
    CUES.iter()
        .find(|(_, cues)| cues.iter().any(|cue| prompt.contains(&normalize_str(cue))))
        .map(|(goal, _)| *goal)
        .unwrap_or(GuideGoal::ExhaustiveLookup)
}

/// A standard chain of tools for a goal, with a one-line note.
pub(crate) struct Workflow {
    pub goal: GuideGoal,
    pub steps: &'static [&'static str],
    pub note: &'static str,
}

/// The standard chains. The first step of the goal's chain that the server serves is the
/// goal's first tool.
pub(crate) const WORKFLOWS: &[Workflow] = &[
    Workflow {
        goal: GuideGoal::ExhaustiveLookup,
        steps: &["manual_find", "manual_hits", "manual_read"],
        note: "follow next_actions; read sections, not files",
    },
    Workflow {
        goal: GuideGoal::Transcription,
        steps: &[
            "manual_find",
            "manual_hits",
            "bridge_copy_section",
            "bridge_copy_file",
        ],
        note: "copies stay server-side; answers carry no text",
    },
    Workflow {
        goal: GuideGoal::VaultArtifacts,
        steps: &[
            "vault_find",
            "vault_scan",
            "vault_create",
            "artifact_audit",
            "vault_coverage",
            "vault_write",
        ],
        note: "cite source_lines; loop until vault_coverage says stop",
    },
    Workflow {
        goal: GuideGoal::DailyNote,
        steps: &["vault_create", "vault_write"],
        note: "artifacts/daily/YYYY-MM-DD.md: create, then append",
    },
];

/// When to use each tool, in at most a few words.
pub(crate) const WHEN: &[(&str, &str)] = &[
    ("get_tooling_guide", "first call"),
    ("manual_list", "manual ids"),
    ("manual_ls", "files of a manual"),
    ("manual_toc", "headings"),
    ("manual_find", "all about a topic"),
    ("manual_hits", "page a trace"),
    ("manual_read", "read a section"),
    ("manual_excepts", "exceptions"),
    ("vault_ls", "vault files"),
    ("vault_read", "read lines"),
    ("vault_scan", "walk a file"),
    ("vault_find", "all about a topic"),
    ("vault_search", "text search"),
    ("vault_create", "new file"),
    ("vault_write", "overwrite/append"),
    ("vault_replace", "edit text"),
    ("vault_coverage", "uncited lines"),
    ("artifact_audit", "check artifact"),
    ("bridge_copy_section", "copy a section"),
    ("bridge_copy_file", "copy a file"),
    ("pce_memory_activate", "recall"),
    ("pce_memory_search", "look up"),
    ("pce_memory_upsert", "remember"),
    ("pce_memory_feedback", "rate"),
    ("pce_memory_boundary_validate", "redact"),
    ("pce_memory_policy_apply", "policy"),
    ("pce_memory_state", "counts"),
];

/// One line on when to use `tool`; every served tool must have one (a test checks).
pub(crate) fn when(tool: &str) -> Option<&'static str> {
    WHEN.iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, when)| *when)
}

/// The goal's workflows that the server can carry out whole, the goal's own first, and
/// the first served tool of the goal's chain.
pub(crate) fn plan(
    goal: GuideGoal,
    served: &dyn Fn(&str) -> bool,
) -> (&'static str, Vec<&'static Workflow>) {
    let mut workflows: Vec<&Workflow> = WORKFLOWS
        .iter()
        .filter(|workflow| workflow.steps.iter().all(|s| served(s)))
        .collect();
    workflows.sort_by_key(|workflow| workflow.goal != goal);
    let first_tool = WORKFLOWS
        .iter()
        .filter(|workflow| workflow.goal == goal)
        .chain(WORKFLOWS.iter())
        .flat_map(|workflow| workflow.steps.iter())
        .find(|step| served(step))
        .copied()
        .unwrap_or("manual_find");
    (first_tool, workflows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_pick_their_goal() {
        assert_eq!(
            goal_of("有給休暇の繰越しについて網羅的に調べて"),
            GuideGoal::ExhaustiveLookup
        );
        assert_eq!(
            goal_of("経費規程の該当節を vault に転記して"),
            GuideGoal::Transcription
        );
        assert_eq!(
            goal_of("申請フローのフローチャートを作って監査して"),
            GuideGoal::VaultArtifacts
        );
        assert_eq!(goal_of("今日の日報に追記して"), GuideGoal::DailyNote);
        assert_eq!(
            goal_of("Copy the rollback section into my notes"),
            GuideGoal::Transcription
        );
        assert_eq!(goal_of("ＤＡＩＬＹ log"), GuideGoal::DailyNote);
    }

    #[test]
    fn plans_name_only_served_tools() {
        let served = |tool: &str| tool.starts_with("manual_");
        let (first, workflows) = plan(GuideGoal::Transcription, &served);
        assert_eq!(first, "manual_find");
        assert!(workflows.iter().all(|w| w.steps.iter().all(|s| served(s))));
        let everything = |_: &str| true;
        let (first, workflows) = plan(GuideGoal::DailyNote, &everything);
        assert_eq!(first, "vault_create");
        assert_eq!(workflows[0].goal, GuideGoal::DailyNote);
        assert_eq!(workflows.len(), 4);
    }

    #[test]
    fn every_served_tool_has_a_when_line() {
        for spec in crate::contract::TOOLS {
            assert!(when(spec.name).is_some(), "{} lacks a when line", spec.name);
        }
    }
}
