//! Globs an agent can write that used to take exponential time.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::support::workspace::Workspace;

/// Far beyond what the linear matcher needs (milliseconds), far below what the old
/// backtracking one took (it did not return within minutes).
const PATIENCE: Duration = Duration::from_secs(20);

#[test]
fn repeated_double_stars_over_a_deep_tree_answer_at_once() {
    let workspace = Arc::new(Workspace::new(None));
    let deep: Vec<String> = (0..24).map(|level| format!("d{level}")).collect();
    workspace.write(&format!("{}/x.md", deep.join("/")), "deep\n");
    workspace.write("top/y.md", "top\n");
    let glob = format!("{}y.md", "**/".repeat(12));
    let calls = [
        ("vault_ls", json!({ "glob": glob })),
        (
            "vault_search",
            json!({ "query": "deep", "scope": { "glob": glob } }),
        ),
        (
            "vault_find",
            json!({ "query": "deep", "scope": { "exclude_glob": glob } }),
        ),
    ];
    for (tool, arguments) in calls {
        let (sender, receiver) = mpsc::channel();
        let shared = Arc::clone(&workspace);
        // A detached thread: if the matcher hangs, the test fails instead of hanging too.
        std::thread::spawn(move || {
            let _ = sender.send(shared.call(tool, arguments));
        });
        let answer = receiver
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("{tool} did not answer within {PATIENCE:?}"))
            .unwrap();
        match tool {
            "vault_ls" => {
                assert_eq!(answer["total"], 1, "{answer}");
                assert_eq!(answer["items"][0]["path"], "top/y.md");
            }
            "vault_search" => assert_eq!(answer["total"], 0, "{answer}"),
            _ => assert!(
                answer["summary"]["candidates"].as_u64().unwrap() >= 1,
                "{answer}"
            ),
        }
    }
}

#[test]
fn globs_longer_than_the_schema_bound_are_refused_before_matching() {
    let workspace = Workspace::new(None);
    let glob = "*/".repeat(600) + "x";
    let error = workspace
        .call("vault_ls", json!({ "glob": glob }))
        .unwrap_err();
    assert_eq!(error["code"], "invalid_parameter");
    assert_eq!(error["details"]["violations"][0]["pointer"], "/glob");
}
