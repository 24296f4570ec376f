//! The `manvault` command as a person uses it: `tools`, `call` (exit 1 on a tool error),
//! a bad configuration value refused at start, and stderr carrying only JSON log lines
//! without manual text.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::stdio_server::{RawServer, PROTOCOL_VERSION};
use crate::support::workspace::example_copy;
use crate::support::{assert_temporary_folder_empty, big_manual, folder_names};

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

/// `manvault call` leaves its index to the process's exit, but not the change watch's
/// barrier folder in the system's temporary folder: one was left by every call.
#[test]
fn a_call_leaves_nothing_in_the_temporary_folder() {
    let temp = tempfile::tempdir().unwrap();
    let output = manvault(
        &["call", "manual_find", r#"{"query":"manual"}"#],
        &[("TMPDIR", temp.path().to_str().unwrap())],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_temporary_folder_empty(temp.path());
}

/// A stdio server stopped by SIGTERM (how stdio clients stop servers), its input still
/// open, stops its change watch and exits 0: the signal's default action ended it where
/// it stood, leaving the watch's barrier folder in the temporary folder.
#[test]
fn a_server_stopped_by_sigterm_exits_0_and_leaves_nothing_in_the_temporary_folder() {
    let temp = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    let mut server = RawServer::start(
        &workspace,
        &[
            ("TMPDIR", temp.path().to_str().unwrap()),
            ("VAULT_ROOT", vault.path().to_str().unwrap()),
            ("LOG_LEVEL", "info"),
        ],
    );
    server.initialize(1);
    let found = server.call(2, "manual_find", json!({ "query": "manual" }));
    assert_eq!(found["result"]["isError"], json!(false), "{found}");
    assert!(
        !folder_names(temp.path()).is_empty(),
        "the change watch keeps its barrier folder in the temporary folder while it serves"
    );
    assert_sigterm_ends_gracefully(server, temp.path(), Duration::from_secs(5));
}

/// A stdio server whose client stops reading stdout (hung, crashed) ends on SIGTERM all
/// the same, within the graceful end's bounds, and stops its change watch. Before, the
/// writer blocked on the full pipe, the relay and rmcp behind it, and the end waited for
/// them without a bound: the signal was acted on only by the client's SIGKILL, which
/// left the watch's barrier folder behind.
#[test]
fn a_server_whose_client_stopped_reading_still_ends_on_sigterm() {
    let temp = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    let server = server_with_a_full_stdout(temp.path(), vault.path());
    assert_sigterm_ends_gracefully(server, temp.path(), Duration::from_secs(10));
}

/// Sends SIGTERM and requires the graceful end: exit 0 within `patience`, the "shut down"
/// line, and the change watch's barrier folder gone from the temporary folder `temp`.
fn assert_sigterm_ends_gracefully(server: RawServer, temp: &Path, patience: Duration) {
    let (status, stderr) = server.terminate(patience);
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(0),
        "not ended with 0 within {patience:?} of SIGTERM: {stderr}"
    );
    assert!(stderr.contains(r#""shut down""#), "{stderr}");
    assert_temporary_folder_empty(temp);
}

/// A second signal during a stdio server's graceful end ends it at once with 128 + the
/// signal's number (SIGINT: 130), skipping the rest of the end (no "shut down" line);
/// before, it was swallowed. The end is held by a client that stopped reading: the
/// answers (6 MB) cannot all get through the unread pipe, so the end takes its full 3 s
/// from the first signal, and the second, sent as soon as the "shutting down" line is
/// read, comes about 3 s before the graceful end could be over.
#[test]
fn a_second_sigint_during_a_stdio_servers_graceful_end_exits_at_once_with_130() {
    let temp = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    let server = server_with_a_full_stdout(temp.path(), vault.path());
    server.signal("INT");
    server.await_stderr(
        "shutting down: finishing the calls in flight",
        Duration::from_secs(10),
    );
    server.signal("INT");
    let (status, stderr) = server.exit(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(130),
        "the second SIGINT did not end the server at once: {stderr}"
    );
    assert!(!stderr.contains(r#""shut down""#), "{stderr}");
}

/// A stdio server on the example manuals, its change watch started, whose client never
/// reads stdout: 40 `tools/list` answers (148 KB each) are more than the pipe, the queue
/// of lines and the pipe from rmcp hold, and it waits until the stdout pipe (64 KiB, of
/// which a writer fills a little less: 64,507 bytes here) holds 56 KiB, so the writer is
/// blocked in the first answer.
fn server_with_a_full_stdout(temp: &Path, vault: &Path) -> RawServer {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    let mut server = RawServer::start_unread(
        &workspace,
        &[
            ("TMPDIR", temp.to_str().unwrap()),
            ("VAULT_ROOT", vault.to_str().unwrap()),
            ("LOG_LEVEL", "info"),
        ],
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "hung", "version": "1"}}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in 1..=40 {
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.unread_bytes() < 56 * 1024 || folder_names(temp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the stdout pipe did not fill ({} bytes) or the change watch did not start",
            server.unread_bytes()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

/// A stdio server whose input ends writes the usage of its open traces before it exits
/// (the `App`'s drop, src/adaptive/): a search, its hits and a copy under its trace leave
/// a usage record counting the copy. A merge once dropped the server's last hold on the
/// `App` on the thread that stops the change watch, and the exit raced that drop; only
/// the Python SDK workflow test (CI, network) noticed. The manual of 4 MB (38,000
/// sections) makes the drop of the index, which comes before the statistics', long
/// enough that such a race was lost in 20 runs of 20 (on the example alone, in 2 to 9 of
/// 10, with the load).
#[test]
fn a_stdio_server_writes_the_usage_of_its_open_traces_before_it_exits() {
    let workspace = example_copy();
    let manuals = workspace.path().join("manuals/big");
    std::fs::create_dir_all(&manuals).unwrap();
    std::fs::write(manuals.join("big.md"), big_manual(4_000_000)).unwrap();
    let mut server = RawServer::start(workspace.path(), &[("LOG_LEVEL", "error")]);
    server.initialize(1);
    let structured = |reply: Value| reply["result"]["structuredContent"].clone();
    let found = structured(server.call(
        2,
        "manual_find",
        json!({ "manual_id": "handbook", "query": "休暇の申請手続き" }),
    ));
    let trace_id = found["trace_id"].clone();
    assert!(trace_id.is_string(), "{found}");
    let hits = structured(server.call(
        3,
        "manual_hits",
        json!({ "trace_id": trace_id, "kind": "candidates" }),
    ));
    let copied = structured(server.call(
        4,
        "bridge_copy_section",
        json!({ "ref": hits["items"][0], "dest_path": "drafts/leave.md", "trace_id": trace_id }),
    ));
    assert!(copied["written_lines"].is_object(), "{copied}");
    let (status, stderr) = server.finish(Duration::from_secs(20));
    assert_eq!(status.and_then(|status| status.code()), Some(0), "{stderr}");
    let stats = workspace.path().join("vault/.system/adaptive_stats.jsonl");
    let usage: Vec<Value> = std::fs::read_to_string(stats)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == "usage" && record["trace_id"] == trace_id)
        .collect();
    assert_eq!(usage.len(), 1, "the trace's usage records: {usage:?}");
    assert_eq!(usage[0]["used_refs"], 1, "{usage:?}");
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
        "index_sections",
        "index_hits_ms",
        "ranking_ms",
        "verification_ms",
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

/// Runs the binary in `dir` with only the environment given (no workspace variables).
fn manvault_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manvault"))
        .current_dir(dir)
        .args(args)
        .env_remove("WORKSPACE_ROOT")
        .env_remove("MANUALS_ROOT")
        .env_remove("VAULT_ROOT")
        .env_remove("LOG_FORMAT")
        .envs(env.iter().copied())
        .output()
        .expect("run manvault")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn example_workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace")
}

/// Runs a `call --script` in `workspace`, expecting success; the printed entries.
fn run_script(workspace: &Path, script: &Path) -> Vec<Value> {
    let output = manvault_in(
        workspace,
        &["call", "--script", script.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    entries(&output.stdout)
}

/// The JSON values `call --script` printed, one a call.
fn entries(stdout: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn help_and_version_work_whatever_the_settings_say() {
    let temp = tempfile::tempdir().unwrap();
    let broken = [("LOG_LEVEL", "verbose"), ("HARD_MAX_CHARS", "0")];
    let version = manvault_in(temp.path(), &["--version"], &broken);
    assert!(version.status.success(), "{}", text(&version.stderr));
    assert_eq!(
        text(&version.stdout).trim(),
        format!("manvault {}", env!("CARGO_PKG_VERSION"))
    );
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["call", "--help"],
        &["doctor", "--help"],
        &["stats", "--help"],
        &["help", "serve"],
    ] {
        let output = manvault_in(temp.path(), args, &broken);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        let help = text(&output.stdout);
        for variable in manvault::config::VARIABLES {
            assert!(
                help.contains(variable.name) && help.contains(variable.meaning),
                "{args:?} help lacks {}",
                variable.name
            );
        }
    }
    let tools_help = text(&manvault_in(temp.path(), &["tools", "--help"], &broken).stdout);
    assert!(tools_help.contains("--json"), "{tools_help}");
    let created = folder_names(temp.path());
    assert!(created.is_empty(), "help created {created:?}");
}

#[test]
fn serve_help_shows_a_configuration_per_client() {
    let temp = tempfile::tempdir().unwrap();
    let help = text(&manvault_in(temp.path(), &["serve", "--help"], &[]).stdout);
    for needle in [
        "claude mcp add manvault",
        "\"mcpServers\"",
        "\"servers\"",
        "\"type\": \"stdio\"",
        "tool_timeout_sec",
        env!("CARGO_BIN_EXE_manvault"),
    ] {
        assert!(help.contains(needle), "serve --help lacks {needle}: {help}");
    }
}

#[test]
fn a_mistyped_workspace_is_refused_naming_the_path_and_nothing_is_created() {
    let temp = tempfile::tempdir().unwrap();
    let typo = temp.path().join("worksapce");
    let typo_text = typo.to_str().unwrap();
    for args in [
        &["serve", "--workspace", typo_text][..],
        &["--workspace", typo_text],
        &["call", "manual_list", "{}", "--workspace", typo_text],
    ] {
        let output = manvault_in(temp.path(), args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("MANUALS_ROOT {typo_text}/manuals")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("VAULT_ROOT {typo_text}/vault")),
            "{stderr}"
        );
        assert!(!typo.exists(), "{args:?} created the mistyped workspace");
    }
}

#[test]
fn a_call_in_an_empty_folder_creates_no_vault() {
    let temp = tempfile::tempdir().unwrap();
    let output = manvault_in(temp.path(), &["call", "manual_list", "{}"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    let shown = format!(
        "MANUALS_ROOT ./manuals (= {}/manuals)",
        temp.path().display()
    );
    assert!(stderr.contains(&shown), "{stderr}");
    let created = folder_names(temp.path());
    assert!(created.is_empty(), "created {created:?}");
}

#[test]
fn the_vault_is_created_at_start_only_inside_an_existing_folder_and_said_so() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(temp.path().join("manuals/m")).unwrap();
    let output = manvault_in(
        temp.path(),
        &["call", "manual_list", "{}"],
        &[("LOG_FORMAT", "json")],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(temp.path().join("vault").is_dir());
    assert!(
        text(&output.stderr).contains("created the vault folder ./vault"),
        "{}",
        text(&output.stderr)
    );
    let nested = temp.path().join("missing/vault");
    let output = manvault_in(
        temp.path(),
        &[
            "call",
            "manual_list",
            "{}",
            "--vault",
            nested.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(!temp.path().join("missing").exists());
}

#[test]
fn doctor_exits_0_on_a_good_workspace_and_1_on_a_problem_or_warning() {
    let workspace = example_copy();
    let root = workspace.path().to_str().unwrap();
    let good = manvault_in(workspace.path(), &["doctor", "--workspace", root], &[]);
    let report = text(&good.stdout);
    assert_eq!(good.status.code(), Some(0), "{report}");
    for line in [
        "ok       MANUALS_ROOT",
        "ok       VAULT_ROOT",
        "ok       SYNONYMS_PATH",
        "ok       CACHE_DIR",
        "ok       ADAPTIVE_STATS_PATH",
        "ok       manuals              2 manuals, 7 files",
        "ok       synonyms",
    ] {
        assert!(report.contains(line), "{line:?} missing: {report}");
    }

    std::fs::create_dir(workspace.path().join("synonyms.txt")).unwrap();
    let warned = manvault_in(workspace.path(), &["doctor", "--workspace", root], &[]);
    assert_eq!(warned.status.code(), Some(1));
    assert!(text(&warned.stdout).contains("warn     SYNONYMS_PATH"));

    let typo = format!("{root}/nope");
    let broken = manvault_in(workspace.path(), &["doctor", "--workspace", &typo], &[]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(text(&broken.stdout).contains("problem  MANUALS_ROOT"));
    assert!(!Path::new(&typo).exists(), "doctor created something");

    let bad_setting = manvault_in(workspace.path(), &["doctor"], &[("HARD_MAX_CHARS", "0")]);
    assert_eq!(bad_setting.status.code(), Some(1));
    assert!(text(&bad_setting.stdout).contains("problem  settings"));
}

/// `tools/list` as a client gets it from `manvault serve`.
fn served_tool_list() -> Value {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_manvault"))
        .args(["serve", "--workspace"])
        .arg(example_workspace())
        .env("LOG_LEVEL", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let listed = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "server closed");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message["result"].clone();
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    listed
}

#[test]
fn tools_json_prints_exactly_what_tools_list_serves() {
    let output = manvault(&["tools", "--json"], &[]);
    assert!(output.status.success());
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed["tools"].as_array().unwrap().len(),
        manvault::contract::TOOLS.len()
    );
    // Compared as a whole; printed on failure by tool name only, the list is 100 kB.
    let served = served_tool_list();
    if printed != served {
        let names = |list: &Value| -> Vec<String> {
            list["tools"]
                .as_array()
                .map(|tools| tools.iter().map(|t| t["name"].to_string()).collect())
                .unwrap_or_default()
        };
        let differing: Vec<String> = names(&printed)
            .into_iter()
            .zip(printed["tools"].as_array().unwrap())
            .filter(|(_, tool)| {
                !served["tools"]
                    .as_array()
                    .is_some_and(|served| served.contains(tool))
            })
            .map(|(name, _)| name)
            .collect();
        panic!(
            "tools --json differs from tools/list: keys {:?} vs {:?}; tools {differing:?}",
            printed.as_object().map(|o| o.keys().collect::<Vec<_>>()),
            served.as_object().map(|o| o.keys().collect::<Vec<_>>()),
        );
    }
}

#[test]
fn a_script_runs_manual_find_then_manual_hits_with_its_trace() {
    let workspace = example_copy();
    let script = workspace.path().join("calls.jsonl");
    std::fs::write(
        &script,
        concat!(
            "# search, follow its first proposal, then page what it found\n",
            r#"{"tool": "manual_find", "arguments": {"manual_id": "handbook", "query": "有給休暇の繰越し"}}"#,
            "\n\n",
            r#"{"next_action": 0}"#,
            "\n",
            r#"{"tool": "manual_hits", "arguments": {"trace_id": "$trace_id", "kind": "candidates", "limit": 2}}"#,
            "\n",
        ),
    )
    .unwrap();
    let entries = run_script(workspace.path(), &script);
    assert_eq!(entries.len(), 3, "{entries:#?}");
    assert_eq!(entries[0]["line"], 2);
    assert_eq!(entries[0]["tool"], "manual_find");
    let proposed = &entries[0]["answer"]["next_actions"][0];
    assert_eq!(entries[1]["tool"], proposed["type"]);
    assert!(entries[1]["answer"].is_object(), "{:#?}", entries[1]);
    let trace_id = &entries[0]["answer"]["trace_id"];
    assert!(trace_id.is_string());
    // manual_hits answers (a trace id it did not know would be not_found): "$trace_id"
    // stood for the trace of the find before it.
    assert_eq!(entries[2]["tool"], "manual_hits");
    assert!(entries[2].get("error").is_none(), "{:#?}", entries[2]);
    assert!(!entries[2]["answer"]["items"].as_array().unwrap().is_empty());
}

#[test]
fn calls_on_stdin_share_one_process_and_a_failure_does_not_stop_them() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_manvault"))
        .args(["call", "--workspace"])
        .arg(example_workspace())
        .env("VAULT_ROOT", tempfile::tempdir().unwrap().path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            concat!(
                r#"{"tool": "manual_toc", "arguments": {"manual_id": "nope"}}"#,
                "\n",
                r#"{"tool": "manual_find", "arguments": {"query": "backup"}}"#,
                "\n",
                r#"{"tool": "manual_hits", "arguments": {"trace_id": "$trace_id", "kind": "candidates"}}"#,
                "\n",
            )
            .as_bytes(),
        )
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "a call failed");
    let entries = entries(&output.stdout);
    assert_eq!(entries[0]["error"]["code"], "not_found");
    assert!(
        entries[2]["answer"]["items"].is_array(),
        "{:#?}",
        entries[2]
    );
}

#[test]
fn a_lost_trace_in_a_one_shot_call_points_to_scripts_instead_of_a_loop() {
    let output = manvault(
        &[
            "call",
            "manual_hits",
            r#"{"trace_id": "t-0000000001", "kind": "candidates"}"#,
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("manvault call --script"), "{stderr}");
}

#[test]
fn log_format_pretty_is_one_readable_line_and_json_is_one_object() {
    let pretty = manvault(&["call", "manual_list", "{}"], &[("LOG_FORMAT", "pretty")]);
    assert!(pretty.status.success());
    let stderr = text(&pretty.stderr);
    let call = stderr
        .lines()
        .find(|line| line.contains("tool=manual_list"))
        .unwrap_or_else(|| panic!("no call line: {stderr}"));
    assert!(!call.starts_with('{'), "{call}");
    assert!(
        call.contains(" INFO ") && call.contains("ok=true"),
        "{call}"
    );

    let json = manvault(&["call", "manual_list", "{}"], &[("LOG_FORMAT", "json")]);
    for line in text(&json.stderr).lines() {
        let parsed: Value = serde_json::from_str(line).expect("a JSON line");
        assert!(parsed["ts"].is_string() && parsed["level"].is_string());
    }
}

/// Digits from the first non-zero one to the last, of a number as written.
fn significant_digits(number: &str) -> usize {
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    digits.trim_start_matches('0').trim_end_matches('0').len()
}

#[test]
fn logged_floats_are_rounded_to_what_they_mean() {
    // On the example manuals this search's largest file holds one candidate in three
    // (logged unrounded as 0.3333333432674408 before).
    let output = manvault(
        &["call", "manual_find", r#"{"query": "restore"}"#],
        &[("LOG_FORMAT", "json")],
    );
    assert!(output.status.success());
    let mut floats = 0;
    for line in text(&output.stderr).lines() {
        let parsed: Value = serde_json::from_str(line).unwrap();
        for (key, value) in parsed.as_object().unwrap() {
            if value.is_f64() {
                floats += 1;
                let written = value.to_string();
                assert!(
                    significant_digits(&written) <= 4 || value.as_f64().unwrap() >= 1000.0,
                    "{key}={written} in {line}"
                );
            }
        }
    }
    assert!(floats >= 2, "no float logged: {}", text(&output.stderr));
}

#[test]
fn the_readme_walkthrough_script_runs() {
    let workspace = example_copy();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/walkthrough.jsonl");
    let entries = run_script(workspace.path(), &script);
    let tools: Vec<&str> = entries.iter().filter_map(|e| e["tool"].as_str()).collect();
    assert_eq!(
        tools,
        [
            "manual_find",
            "manual_hits",
            "manual_read",
            "bridge_copy_section",
            "vault_read"
        ]
    );
    let note = entries[4]["answer"]["text"].as_str().unwrap();
    assert!(
        note.contains("source_refs") && note.contains("最大二十日"),
        "{note}"
    );
}

/// A second start takes the outlines from the manual catalog under `CACHE_DIR` (written
/// by the first, which parsed every file) and answers exactly as the first did; a start
/// that parsed nothing leaves the catalog alone.
#[test]
fn a_start_from_the_manual_catalog_answers_as_the_start_that_parsed() {
    let workspace = example_copy();
    let script = workspace.path().join("calls.jsonl");
    let mut calls = vec![r#"{"tool": "manual_list", "arguments": {}}"#.to_owned()];
    for manual_id in ["handbook", "ops-guide"] {
        calls.push(format!(
            r#"{{"tool": "manual_toc", "arguments": {{"manual_id": "{manual_id}", "limit": 1000}}}}"#
        ));
        calls.push(format!(
            r#"{{"tool": "manual_ls", "arguments": {{"manual_id": "{manual_id}"}}}}"#
        ));
    }
    calls.push(
        r#"{"tool": "manual_read", "arguments": {"ref": {"manual_id": "handbook", "path": "01-leave.md", "start_line": 10}, "scope": "section"}}"#.to_owned(),
    );
    std::fs::write(&script, calls.join("\n")).unwrap();
    let catalog = workspace.path().join("vault/.system/cache/catalog.bin");
    let parsed = run_script(workspace.path(), &script);
    let written = std::fs::metadata(&catalog)
        .expect("catalog written")
        .modified()
        .unwrap();
    let restored = run_script(workspace.path(), &script);
    assert_eq!(restored, parsed);
    assert!(
        parsed.iter().all(|entry| entry.get("answer").is_some()),
        "{parsed:#?}"
    );
    assert_eq!(
        std::fs::metadata(&catalog).unwrap().modified().unwrap(),
        written
    );
}

/// `manvault index` keeps the resolved references under `CACHE_DIR`; a start that reads
/// them answers searches (Stage 3's references, link texts, gaps) exactly as a start
/// that resolved every reference, and leaves the file alone.
#[test]
fn a_start_from_the_stored_references_answers_as_the_start_that_resolved_them() {
    let workspace = example_copy();
    let script = workspace.path().join("calls.jsonl");
    let calls: Vec<String> = [
        "年次有給休暇の繰越",
        "incident commander rollback",
        "経費精算の締め日",
        "「申請手続き」",
    ]
    .iter()
    .flat_map(|query| {
        [
            format!(r#"{{"tool": "manual_find", "arguments": {{"query": "{query}"}}}}"#),
            r#"{"tool": "manual_hits", "arguments": {"trace_id": "$trace_id", "kind": "candidates"}}"#.to_owned(),
        ]
    })
    .collect();
    std::fs::write(&script, calls.join("\n")).unwrap();
    let stored = workspace.path().join("vault/.system/cache/references.bin");
    let without_trace_ids = |entries: Vec<Value>| {
        let text = serde_json::to_string(&entries).unwrap();
        let trace_id = regex::Regex::new(r#""t-[0-9a-f]+""#).unwrap();
        trace_id.replace_all(&text, "").into_owned()
    };
    let index = manvault_in(workspace.path(), &["index"], &[]);
    assert_eq!(index.status.code(), Some(0), "{}", text(&index.stderr));
    std::fs::remove_file(&stored).expect("manvault index keeps the references");
    // Both starts search the complete section index; this one resolves every reference.
    let resolved = without_trace_ids(run_script(workspace.path(), &script));
    let written = std::fs::metadata(&stored)
        .expect("a start that resolved keeps the references")
        .modified()
        .unwrap();
    assert_eq!(
        without_trace_ids(run_script(workspace.path(), &script)),
        resolved
    );
    assert!(resolved.contains("\"answer\""), "{resolved}");
    assert_eq!(
        std::fs::metadata(&stored).unwrap().modified().unwrap(),
        written
    );
}
