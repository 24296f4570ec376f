//! The memory tools through the built binary: several processes on one database (the
//! store's promise that two servers lose nothing), the example claims loaded with
//! `manvault call --script`, and the seed's payload limit.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn manvault(workspace: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_manvault"));
    command
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .env("LOG_LEVEL", "error");
    command
}

fn answer(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn call(workspace: &Path, tool: &str, arguments: Value) -> (bool, Value) {
    let output = manvault(workspace, &["call", tool, &arguments.to_string()])
        .output()
        .unwrap();
    (output.status.success(), answer(&output))
}

/// Twenty processes start at once on a workspace whose store does not exist yet: each
/// creates or opens it, migrates it, applies the policy file, and upserts the same text.
#[test]
fn twenty_processes_upserting_one_text_store_it_once() {
    let workspace = crate::support::workspace::example_copy();
    let arguments = json!({
        "text": "二つのプロセスが同じ主張を同時に保存しても一件になる",
        "provenance": {"at": "2026-11-20T09:00:00Z"}
    })
    .to_string();
    let children: Vec<_> = (0..20)
        .map(|_| {
            manvault(workspace.path(), &["call", "pce_memory_upsert", &arguments])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let answers: Vec<Value> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stdout)
            );
            answer(&output)
        })
        .collect();
    assert_eq!(
        answers
            .iter()
            .filter(|a| a["is_new"] == json!(true))
            .count(),
        1
    );
    assert!(answers.iter().all(|a| a["id"] == answers[0]["id"]));
    let (ok, state) = call(workspace.path(), "pce_memory_state", json!({}));
    assert!(ok);
    assert_eq!(state["claims"]["total"], 1);
    assert_eq!(
        state["policy_version"], "0.1.1",
        "the policy file was applied once"
    );
    let audit =
        std::fs::read_to_string(workspace.path().join("vault/.system/memory_audit.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 21, "one audit line a call");
}

/// The answers of `manvault call --script` with the workspace's example claims.
fn load_example_claims(workspace: &Path) -> Vec<Value> {
    let claims = workspace.join("memory-claims.jsonl");
    let output = manvault(workspace, &["call", "--script", claims.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::Deserializer::from_slice(&output.stdout)
        .into_iter::<Value>()
        .map(|printed| printed.unwrap()["answer"].clone())
        .collect()
}

#[test]
fn the_example_claims_load_and_are_recalled() {
    let workspace = crate::support::workspace::example_copy();
    let answers = load_example_claims(workspace.path());
    assert_eq!(answers.len(), 6);
    assert!(answers.iter().all(|answer| answer["is_new"] == json!(true)));
    let (ok, found) = call(
        workspace.path(),
        "pce_memory_activate",
        json!({"q": "解約の通知", "allow": ["answer:task"]}),
    );
    assert!(ok, "{found}");
    assert!(found["claims"][0]["claim"]["text"]
        .as_str()
        .unwrap()
        .contains("/cancel"));
    let (_, contact) = call(
        workspace.path(),
        "pce_memory_search",
        json!({"query": "refund escalations", "allow": ["tool:contact-lookup"]}),
    );
    let text = contact["items"][0]["claim"]["text"].as_str().unwrap();
    assert!(
        text.contains("[REDACTED:email]") && !text.contains("taro@"),
        "{text}"
    );
    // Loading again changes nothing.
    let again = load_example_claims(workspace.path());
    assert!(again.iter().all(|answer| answer["is_new"] == json!(false)));
}

#[test]
fn an_upsert_over_64_kb_is_refused_with_413() {
    let workspace = crate::support::workspace::example_copy();
    let (ok, error) = call(
        workspace.path(),
        "pce_memory_upsert",
        json!({"text": "長".repeat(22_000), "provenance": {"at": "2026-11-20T09:00:00Z"}}),
    );
    assert!(!ok);
    assert_eq!(error["code"], "VALIDATION_ERROR");
    assert_eq!(error["details"]["http_status"], 413);
    assert_eq!(error["details"]["limit_bytes"], 65_536);
    let (ok, _) = call(
        workspace.path(),
        "pce_memory_upsert",
        json!({"text": "長".repeat(21_000), "provenance": {"at": "2026-11-20T09:00:00Z"}}),
    );
    assert!(ok, "63 KB of text fits");
}
