//! The statistics as the real tools write them: a `manual_find` through `App::call`
//! leaves one `find` record, a `manual_read` under its trace counts as used, and the file
//! holds neither the query nor any manual text.

use std::path::Path;

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::{json, Value};

use crate::support::workspace::example_copy;

fn app(workspace: &Path) -> App {
    let flags = RootFlags {
        workspace: Some(workspace.to_path_buf()),
        ..RootFlags::default()
    };
    App::new(Config::load(&|_| None, &flags).unwrap())
}

#[test]
fn find_and_read_leave_records_without_text() {
    let workspace = example_copy();
    let stats = workspace.path().join("vault/.system/adaptive_stats.jsonl");
    {
        let app = app(workspace.path());
        let found = app
            .call(
                "manual_find",
                json!({"manual_id": "handbook", "query": "有給休暇の繰越し"}),
            )
            .unwrap()
            .unwrap();
        let trace_id = found["trace_id"].as_str().unwrap().to_string();
        let hits = app
            .call("manual_hits", json!({"trace_id": trace_id}))
            .unwrap()
            .unwrap();
        // A candidate is itself a ref, passed on as it is.
        let top = hits["items"][0].clone();
        let read = app
            .call(
                "manual_read",
                json!({"ref": top, "scope": "section", "trace_id": trace_id}),
            )
            .unwrap()
            .unwrap();
        assert!(!read["text"].as_str().unwrap().is_empty());
        app.adaptive.flush(manvault::clock::now());
    }
    let text = std::fs::read_to_string(&stats).expect("the statistics file was written");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let find = records
        .iter()
        .find(|r| r["kind"] == "find")
        .expect("a find record");
    for key in [
        "query_hash",
        "est_tokens",
        "est_tokens_in",
        "est_tokens_out",
        "candidates",
        "marginal_gain",
    ] {
        assert!(find.get(key).is_some(), "find record lacks {key}: {find}");
    }
    let usage = records
        .iter()
        .find(|r| r["kind"] == "usage")
        .expect("a usage record");
    assert_eq!(usage["used_refs"], 1, "{usage}");
    assert_eq!(
        usage["used_found"], 1,
        "the read ref was a candidate: {usage}"
    );
    for needle in ["有給休暇", "繰越し", "01-leave.md", "handbook/"] {
        assert!(
            !text.contains(needle),
            "{needle:?} leaked into the statistics file"
        );
    }
}
