//! The statistics file as the tool layer will use it: free of corpus text, bounded,
//! tolerant of damage, and the tuning state surviving a restart.

use std::collections::HashSet;
use std::path::Path;

use crate::support::adaptive::{Traffic, Workspace, DAY, DEFAULTS, HOUR, START};
use manvault::adaptive::{
    Adaptive, AuditFacts, AuditKind, FindFacts, FindSummary, Fingerprint, RefKey, Thresholds,
};

const EXAMPLE_MANUALS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/workspace/manuals");

/// Every line of every example manual file, with its manual id and relative path.
fn corpus() -> Vec<(String, String, Vec<String>)> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(EXAMPLE_MANUALS) {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let relative = entry.path().strip_prefix(EXAMPLE_MANUALS).unwrap();
        let mut components = relative.components();
        let manual_id = components
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let path = components.as_path().to_string_lossy().to_string();
        let lines = std::fs::read_to_string(entry.path())
            .unwrap()
            .lines()
            .map(str::trim)
            .filter(|line| line.chars().count() >= 6)
            .map(String::from)
            .collect();
        files.push((manual_id, path, lines));
    }
    files
}

fn find_facts(trace_id: &str, query: &str, thresholds: Thresholds) -> FindFacts {
    FindFacts {
        summary: FindSummary {
            trace_id: trace_id.to_string(),
            query_hash: Fingerprint::of_query(query),
            thresholds,
            max_stage_allowed: 4,
            max_stage_applied: 4,
            scope_expanded: true,
            scanned_files: 7,
            candidates: 3,
            file_bias_ratio: 0.67,
            warnings: 1,
            cutoff_reason: None,
            unscanned_sections_count: 0,
        },
        chars_in: query.chars().count() as u64 + 40,
        chars_out: 600,
        added_evidence_count: 2,
        added_est_tokens: 120,
    }
}

#[test]
fn no_query_path_or_corpus_text_reaches_the_file() {
    let workspace = Workspace::new(&[]);
    let adaptive = Adaptive::open(&workspace.config);
    let corpus = corpus();
    assert!(corpus.len() >= 5, "the example manuals are there");
    let mut needles: Vec<String> = Vec::new();
    for (n, (manual_id, path, lines)) in corpus.iter().enumerate() {
        let now = START + n as u64 * 60;
        let query = lines.first().cloned().unwrap_or_else(|| path.clone());
        let trace_id = format!("trace-{n}");
        let refs: HashSet<RefKey> = (1..=3)
            .map(|line| RefKey {
                manual_id: manual_id.clone(),
                path: path.clone(),
                start_line: Some(line),
            })
            .collect();
        let thresholds = adaptive.thresholds(now);
        adaptive.record_find(find_facts(&trace_id, &query, thresholds), refs.clone(), now);
        for used in refs {
            adaptive.record_use(&trace_id, used, now + 1);
        }
        adaptive.record_audit(
            AuditFacts {
                kind: AuditKind::VaultCoverage,
                path_hash: Fingerprint::of_path(&format!("notes/{path}")),
                coverage_ratio: Some(0.5),
                added_evidence_count: 1,
                added_est_tokens: 30,
            },
            now + 2,
        );
        needles.extend([manual_id.clone(), path.clone(), query]);
        needles.extend(lines.iter().cloned());
    }
    adaptive.flush(START + DAY);

    let written = std::fs::read_to_string(workspace.stats_path()).unwrap();
    let kinds: HashSet<String> = workspace
        .records()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["find", "usage", "vault_coverage"].map(String::from).into()
    );
    for needle in needles {
        assert!(
            !written.contains(&needle),
            "{needle:?} is in the statistics file"
        );
    }
}

#[test]
fn a_damaged_file_is_read_around_and_appended_after() {
    let workspace = Workspace::new(&[]);
    {
        let adaptive = Adaptive::open(&workspace.config);
        let thresholds = adaptive.thresholds(START);
        adaptive.record_find(find_facts("first", "q", thresholds), HashSet::new(), START);
    }
    let path = workspace.stats_path();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("this is not a record\n{\"kind\":\"find\",\"ts\":17");
    std::fs::write(&path, text).unwrap();

    let adaptive = Adaptive::open(&workspace.config);
    let thresholds = adaptive.thresholds(START + HOUR);
    adaptive.record_find(
        find_facts("second", "q", thresholds),
        HashSet::new(),
        START + HOUR,
    );
    let trace_ids: Vec<String> = workspace
        .records()
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(trace_ids, ["first", "second"]);
}

#[test]
fn the_file_stays_bounded_and_keeps_the_tuning_state() {
    let workspace = Workspace::new(&[]);
    let tuned = {
        let adaptive = Adaptive::open(&workspace.config);
        (0..100).for_each(|n| {
            Traffic::EASY.search(&adaptive, n, START + n * 300);
        });
        adaptive.thresholds(START + 100 * 300)
    };
    assert_ne!(tuned.candidate_low, 3, "the tuning moved");

    // Fill the file to its bound with searches from before, as if written long ago.
    let path = workspace.stats_path();
    let old_line = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .find(|line| line.contains("\"kind\":\"find\""))
        .unwrap()
        .to_string();
    let mut text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().count();
    text.extend((lines..5_000).map(|_| format!("{old_line}\n")));
    std::fs::write(&path, text).unwrap();
    assert_eq!(line_count(&path), 5_000);

    let adaptive = Adaptive::open(&workspace.config);
    assert_eq!(
        adaptive.thresholds(START + 100 * 300),
        tuned,
        "restored from the file"
    );
    Traffic::EASY.search(&adaptive, 100, START + 101 * 300);
    let lines = line_count(&path);
    assert!(lines <= 4_001, "{lines} lines after compaction");
    drop(adaptive);
    let reopened = Adaptive::open(&workspace.config);
    assert_eq!(
        reopened.thresholds(START + 102 * 300),
        tuned,
        "the tuning record survived compaction"
    );
}

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

#[test]
fn a_missing_file_is_no_history_and_is_created_on_first_record() {
    let workspace = Workspace::new(&[]);
    let adaptive = Adaptive::open(&workspace.config);
    assert_eq!(adaptive.thresholds(START), DEFAULTS);
    assert!(!workspace.stats_path().exists(), "nothing written yet");
    adaptive.record_find(
        find_facts("t", "q", adaptive.thresholds(START)),
        HashSet::new(),
        START,
    );
    assert_eq!(workspace.records().len(), 1);
}

#[test]
fn a_file_outside_the_vault_is_written_in_its_own_folder() {
    let elsewhere = tempfile::tempdir().unwrap();
    let path = elsewhere.path().join("stats.jsonl");
    let workspace = Workspace::new(&[("ADAPTIVE_STATS_PATH", path.to_str().unwrap())]);
    let adaptive = Adaptive::open(&workspace.config);
    adaptive.record_find(
        find_facts("t", "q", adaptive.thresholds(START)),
        HashSet::new(),
        START,
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    assert!(!workspace.dir.path().join("vault/.system").exists());
}
