//! The `manvault` command as a person uses it: `tools`, `call` (exit 1 on a tool error),
//! a bad configuration value refused at start, and stderr carrying only JSON log lines
//! without manual text.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary on the example manuals with a throw-away vault, so calls (and the
/// statistics they record) never write into the repository.
fn manvault(args: &[&str], env: &[(&str, &str)]) -> Output {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    let vault = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_manvault"))
        .args(args)
        .env("WORKSPACE_ROOT", workspace)
        .env("VAULT_ROOT", vault.path())
        .envs(env.iter().copied())
        .output()
        .expect("run manvault")
}

#[test]
fn tools_lists_every_served_tool() {
    let output = manvault(&["tools"], &[]);
    assert!(output.status.success());
    let listed = String::from_utf8(output.stdout).unwrap();
    for spec in manvault::contract::TOOLS {
        assert!(
            listed.contains(spec.name),
            "{} missing from `manvault tools`",
            spec.name
        );
    }
}

#[test]
fn call_prints_the_result_and_logs_json_without_text() {
    let input = r#"{"ref":{"target":"manual","manual_id":"handbook","path":"01-leave.md","start_line":22},"scope":"section"}"#;
    let output = manvault(&["call", "manual_read", input], &[]);
    assert!(output.status.success());
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(result["text"].as_str().unwrap().contains("最大二十日"));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("stderr line is JSON"))
        .collect();
    let call = lines
        .iter()
        .find(|l| l["tool"] == "manual_read")
        .expect("a log line for the call");
    for key in ["ts", "level", "ok", "elapsed_ms"] {
        assert!(!call[key].is_null(), "log line lacks {key}: {call}");
    }
    assert!(
        !stderr.contains("最大二十日") && !stderr.contains("繰越し"),
        "body text in the log: {stderr}"
    );
}

#[test]
fn call_exits_1_on_a_tool_error_with_the_error_body() {
    let output = manvault(&["call", "manual_toc", r#"{"manual_id":"nope"}"#], &[]);
    assert_eq!(output.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(body["code"], "not_found");
}

#[test]
fn a_bad_setting_stops_the_server_with_one_line() {
    let output = manvault(&["serve"], &[("HARD_MAX_CHARS", "0")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("HARD_MAX_CHARS") && stderr.contains("100 ..= 1000000"),
        "{stderr}"
    );
}

#[test]
fn manual_find_logs_its_metrics_but_no_query_or_candidates() {
    let output = manvault(
        &[
            "call",
            "manual_find",
            r#"{"manual_id":"handbook","query":"有給休暇の繰越し"}"#,
        ],
        &[("LOG_LEVEL", "info")],
    );
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let info = lines
        .iter()
        .find(|l| l["message"] == "manual_find")
        .expect("the manual_find info line");
    for key in [
        "trace_id",
        "scanned_files",
        "candidates",
        "integration_status",
        "sufficiency_score",
        "next_actions",
    ] {
        assert!(!info[key].is_null(), "info line lacks {key}: {info}");
    }
    for needle in ["有給", "繰越", "01-leave.md", "年次"] {
        assert!(!stderr.contains(needle), "{needle:?} in the log: {stderr}");
    }
}

#[test]
fn log_level_error_silences_info_lines() {
    let output = manvault(&["call", "manual_list", "{}"], &[("LOG_LEVEL", "error")]);
    assert!(output.status.success());
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
