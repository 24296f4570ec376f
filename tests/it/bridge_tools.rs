//! Bridge copies and vault audits through the real tool layer (`App::call`), over every
//! section and file of the example manuals: what the conformance cases show for a few
//! refs, here for all of them.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::workspace::Workspace;

/// The example manuals (read in place; nothing writes them) and an empty vault.
fn workspace() -> Workspace {
    Workspace::new(Some(manuals_root()))
}

/// The answer of a call that must succeed.
#[track_caller]
fn ok(workspace: &Workspace, tool: &str, arguments: Value) -> Value {
    workspace
        .call(tool, arguments.clone())
        .unwrap_or_else(|error| panic!("{tool} {arguments}: {error}"))
}

/// Lines `first..=last` (1-based) of the vault file `path`.
fn vault_lines(workspace: &Workspace, path: &str, first: u64, last: u64) -> Vec<String> {
    lines_of(&workspace.vault.join(path), first, last)
}

fn manuals_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace/manuals")
}

/// Lines `first..=last` of a manual file, as the index numbers them (no file here uses a
/// lone `\r`, so `\n` splitting agrees).
fn manual_lines(manual_id: &str, path: &str, first: u64, last: u64) -> Vec<String> {
    lines_of(&manuals_root().join(manual_id).join(path), first, last)
}

fn lines_of(file: &Path, first: u64, last: u64) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    lines[first as usize - 1..last as usize]
        .iter()
        .map(|line| line.to_string())
        .collect()
}

/// Every section of every example manual: (manual_id, path, heading line).
fn every_section(workspace: &Workspace) -> Vec<(String, String, u64)> {
    let mut sections = Vec::new();
    let manuals = ok(workspace, "manual_list", json!({}));
    for manual in manuals["items"].as_array().unwrap() {
        let manual_id = manual["manual_id"].as_str().unwrap();
        let toc = ok(workspace, "manual_toc", json!({ "manual_id": manual_id }));
        for node in toc["items"].as_array().unwrap() {
            sections.push((
                manual_id.to_owned(),
                node["path"].as_str().unwrap().to_owned(),
                node["line_start"].as_u64().unwrap(),
            ));
        }
    }
    sections
}

/// Asserts that no copied line with some substance (four characters or more once trimmed;
/// a lone `}` could be the answer's own) occurs in the answer.
#[track_caller]
fn assert_no_copied_line(answer: &Value, copied: &[String]) {
    let text = answer.to_string();
    for line in copied.iter().map(|line| line.trim()) {
        if line.chars().count() >= 4 {
            assert!(!text.contains(line), "the answer holds {line:?}: {text}");
        }
    }
}

#[test]
fn every_section_copy_answers_with_metadata_and_lands_where_it_says() {
    let workspace = workspace();
    let sections = every_section(&workspace);
    assert!(sections.len() > 15, "{sections:?}");
    for (n, (manual_id, path, line)) in sections.iter().enumerate() {
        for include_descendants in [true, false] {
            // Markdown destinations get front matter, text destinations none.
            let extension = if n % 2 == 0 { "md" } else { "txt" };
            let dest_path = format!("drafts/{n}-{include_descendants}.{extension}");
            let answer = ok(
                &workspace,
                "bridge_copy_section",
                json!({
                    "ref": { "target": "manual", "manual_id": manual_id, "path": path, "start_line": line },
                    "include_descendants": include_descendants,
                    "dest_path": dest_path,
                }),
            );
            let source = &answer["source"];
            let (first, last) = (
                source["start_line"].as_u64().unwrap(),
                source["end_line"].as_u64().unwrap(),
            );
            let copied = manual_lines(manual_id, path, first, last);
            assert_no_copied_line(&answer, &copied);
            let written = &answer["written_lines"];
            let landed = vault_lines(
                &workspace,
                &dest_path,
                written["start_line"].as_u64().unwrap(),
                written["end_line"].as_u64().unwrap(),
            );
            assert_eq!(landed, copied, "{answer}");
            // A destination that records no origin says so by leaving it out.
            let expected_origin = (extension == "md").then_some("front_matter");
            assert_eq!(answer["origin"].as_str(), expected_origin, "{answer}");
        }
    }
}

#[test]
fn every_file_copy_answers_with_metadata_only() {
    let workspace = workspace();
    let files = ok(&workspace, "manual_ls", json!({}));
    for (n, file) in files["items"].as_array().unwrap().iter().enumerate() {
        let (manual_id, path) = (
            file["manual_id"].as_str().unwrap(),
            file["path"].as_str().unwrap(),
        );
        let dest_path = format!("copies/{n}-{}", path.replace('/', "-"));
        let answer = ok(
            &workspace,
            "bridge_copy_file",
            json!({ "manual_id": manual_id, "path": path, "dest_path": dest_path }),
        );
        let end_line = answer["source"]["end_line"].as_u64().unwrap();
        assert_no_copied_line(&answer, &manual_lines(manual_id, path, 1, end_line));
        let original = fs::read_to_string(manuals_root().join(manual_id).join(path)).unwrap();
        let copy = fs::read_to_string(workspace.vault.join(&dest_path)).unwrap();
        if path.ends_with(".json") {
            assert_eq!(copy, original, "a JSON file is copied byte for byte");
        } else {
            assert!(
                copy.contains(original.trim_start_matches("---\n")),
                "{copy}"
            );
        }
    }
}

#[test]
fn appends_start_on_a_line_of_their_own_after_the_origin_comment() {
    let workspace = workspace();
    fs::create_dir_all(workspace.vault.join("notes")).unwrap();
    fs::write(workspace.vault.join("notes/log.md"), "first\nsecond").unwrap();
    let answer = ok(
        &workspace,
        "bridge_copy_section",
        json!({
            "ref": { "target": "manual", "manual_id": "ops-guide", "path": "deploy.md", "start_line": 1 },
            "end_line": 2,
            "dest_path": "notes/log.md",
            "mode": "append",
        }),
    );
    assert_eq!(
        answer["written_lines"],
        json!({ "start_line": 4, "end_line": 5 })
    );
    let text = fs::read_to_string(workspace.vault.join("notes/log.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["first", "second"]);
    assert_eq!(
        lines[2],
        "<!-- source_refs: [\"ops-guide/deploy.md#L1-L2\"] -->"
    );
    assert_eq!(
        lines[3..],
        manual_lines("ops-guide", "deploy.md", 1, 2)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()[..]
    );
    assert_eq!(
        answer["written_bytes"].as_u64().unwrap() as usize,
        text.len() - "first\nsecond".len()
    );
}

#[test]
fn audit_rounds_are_recorded_as_counts_without_paths() {
    let workspace = workspace();
    ok(
        &workspace,
        "bridge_copy_section",
        json!({
            "ref": { "target": "manual", "manual_id": "handbook", "path": "01-leave.md", "start_line": 40 },
            "dest_path": "drafts/leave.md",
        }),
    );
    let artifact = json!({ "elements": [
        { "id": "A", "text": "apply", "source_lines": [{ "path": "drafts/leave.md", "start_line": 5, "end_line": 6 }] }
    ]});
    ok(
        &workspace,
        "vault_create",
        json!({ "path": "artifacts/leave.json", "content": artifact.to_string() }),
    );
    ok(
        &workspace,
        "vault_scan",
        json!({ "path": "drafts/leave.md", "chunk_lines": 9 }),
    );
    ok(
        &workspace,
        "artifact_audit",
        json!({ "path": "artifacts/leave.json" }),
    );
    let coverage = ok(
        &workspace,
        "vault_coverage",
        json!({ "path": "drafts/leave.md" }),
    );
    let stats = fs::read_to_string(workspace.vault.join(".system/adaptive_stats.jsonl")).unwrap();
    let records: Vec<Value> = stats
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|record| record["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["artifact_audit", "vault_coverage"]);
    // The audit counts the two cited lines that exist and the characters the scan read.
    assert_eq!(records[0]["added_evidence_count"], 2);
    assert!(records[0]["added_est_tokens"].as_u64().unwrap() > 0);
    // The answer states the record's numbers to three significant digits.
    let close = |recorded: &serde_json::Value, answered: &serde_json::Value| match (
        recorded.as_f64(),
        answered.as_f64(),
    ) {
        (Some(recorded), Some(answered)) => (recorded - answered).abs() <= recorded.abs() * 5e-3,
        (recorded, answered) => recorded == answered,
    };
    assert!(close(
        &records[1]["coverage_ratio"],
        &coverage["coverage_ratio"]
    ));
    assert!(close(
        &records[1]["marginal_gain"],
        &coverage["marginal_gain"]
    ));
    for forbidden in ["drafts", "leave", "artifacts", "申請"] {
        assert!(!stats.contains(forbidden), "{forbidden} in {stats}");
    }
}
