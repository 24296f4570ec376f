//! Hostile or careless arguments through the real tool layer (`App::call`: schema
//! validation, dispatch): what an agent reads back, what a bad value costs in the answer.

use serde_json::{json, Value};

use crate::support::workspace::Workspace;

/// Most characters of a client's value an error may echo (the server clips at 200 plus a
/// note of the length); the answer as a whole stays far below it.
const ECHO_ALLOWANCE: usize = 400;

#[test]
fn a_full_read_written_back_leaves_the_file_unchanged() {
    let workspace = Workspace::new(None);
    for content in ["a\nb\nc\n", "a\nb\nc", "a\r\nb\r\n", "\n\n", "only\n"] {
        workspace.write("notes/x.md", content);
        let read = workspace
            .call("vault_read", json!({ "path": "notes/x.md", "full": true }))
            .unwrap();
        assert_eq!(read["text"], content, "{content:?}");
        assert!(read.get("next_offset").is_none(), "{content:?}: {read}");
        workspace
            .call(
                "vault_write",
                json!({ "path": "notes/x.md", "content": read["text"], "mode": "overwrite" }),
            )
            .unwrap();
        let on_disk = std::fs::read_to_string(workspace.vault.join("notes/x.md")).unwrap();
        assert_eq!(on_disk, content);
    }
}

#[test]
fn a_start_line_past_the_end_is_an_error_naming_the_line_count() {
    let workspace = Workspace::new(None);
    workspace.write("notes/x.md", "a\nb\nc\n");
    workspace.write("notes/cut.md", "a\nb\nc");
    for (path, start) in [("notes/x.md", 4), ("notes/x.md", 10), ("notes/cut.md", 5)] {
        let error = workspace
            .call(
                "vault_read",
                json!({ "path": path, "range": { "start_line": start } }),
            )
            .unwrap_err();
        assert_eq!(error["code"], "invalid_parameter", "{error}");
        assert_eq!(error["details"]["field"], "range.start_line", "{error}");
        assert_eq!(error["details"]["line_count"], 3, "{error}");
        let error = workspace
            .call(
                "vault_scan",
                json!({ "path": path, "cursor": { "start_line": start } }),
            )
            .unwrap_err();
        assert_eq!(error["details"]["field"], "cursor.start_line", "{error}");
        assert_eq!(error["details"]["line_count"], 3, "{error}");
    }
    // The last line itself, and an empty file from its start, are not past the end.
    let last = workspace
        .call(
            "vault_read",
            json!({ "path": "notes/cut.md", "range": { "start_line": 3 } }),
        )
        .unwrap();
    assert_eq!(last["text"], "c");
    workspace.write("notes/empty.md", "");
    let empty = workspace
        .call("vault_scan", json!({ "path": "notes/empty.md" }))
        .unwrap();
    assert_eq!(empty["text"], "");
    assert!(
        empty.get("next_cursor").is_none(),
        "the end of the file: {empty}"
    );
}

#[test]
fn integers_written_as_whole_floats_are_accepted_like_integers() {
    let workspace = Workspace::new(None);
    workspace.write("notes/x.md", "a\nb\nc\n");
    let as_float = workspace
        .call(
            "vault_read",
            json!({ "path": "notes/x.md", "range": { "start_line": 2.0, "end_line": 3.0 } }),
        )
        .unwrap();
    let as_integer = workspace
        .call(
            "vault_read",
            json!({ "path": "notes/x.md", "range": { "start_line": 2, "end_line": 3 } }),
        )
        .unwrap();
    assert_eq!(as_float, as_integer);
    let paged = workspace
        .call("vault_ls", json!({ "limit": 1.0, "offset": 0.0 }))
        .unwrap();
    assert_eq!(paged["items"].as_array().unwrap().len(), 1);
    // A fraction is still refused by the schema, as `invalid_parameter` naming the field.
    let error = workspace
        .call(
            "vault_read",
            json!({ "path": "notes/x.md", "range": { "start_line": 1.5 } }),
        )
        .unwrap_err();
    assert_eq!(error["code"], "invalid_parameter");
    assert_eq!(
        error["details"]["violations"][0]["pointer"],
        "/range/start_line"
    );
}

#[test]
fn names_with_bidi_controls_or_line_separators_are_refused() {
    let workspace = Workspace::new(None);
    for path in ["notes/a\u{202e}dm.exe", "a\u{2066}b.md", "a\u{2028}b.md"] {
        let error = workspace
            .call("vault_create", json!({ "path": path, "content": "x" }))
            .unwrap_err();
        assert_eq!(error["code"], "invalid_path", "{path:?}: {error}");
    }
    assert!(!workspace.vault.join("notes").exists());
}

/// Every string inside an error body, and the body as a whole.
fn longest_string(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| key.chars().count().max(longest_string(value)))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn errors_echo_at_most_a_clip_of_a_huge_bad_value() {
    let workspace = Workspace::new(None);
    workspace.write("notes/x.md", "a\n");
    let huge = "x".repeat(1_000_000);
    let huge_path = format!("{}/{}", "d".repeat(300), "e".repeat(300));
    let calls = [
        ("vault_read", json!({ "path": "notes/x.md", "full": huge })),
        (
            "vault_read",
            json!({ "path": "notes/x.md", huge.clone(): 1 }),
        ),
        ("vault_ls", json!({ "glob": huge })),
        (
            "vault_search",
            json!({ "query": "a", "scope": { "glob": huge } }),
        ),
        ("vault_read", json!({ "path": huge, "full": true })),
        ("vault_read", json!({ "path": huge_path, "full": true })),
        (
            "vault_create",
            json!({ "path": format!("{}.md", "n".repeat(900)), "content": "x" }),
        ),
        (
            "vault_write",
            json!({ "path": "notes/x.md", "content": "x", "mode": huge }),
        ),
        ("manual_find", json!({ "query": "q", "intent": huge })),
        ("manual_toc", json!({ "manual_id": huge, "path": "a.md" })),
        (
            "manual_hits",
            json!({ "trace_id": huge, "kind": "candidates" }),
        ),
        (
            "vault_find",
            json!({ "query": "a", "only_unscanned_from_trace_id": huge }),
        ),
    ];
    for (tool, arguments) in calls {
        let error = workspace.call(tool, arguments).unwrap_err();
        let body = error.to_string();
        assert!(
            longest_string(&error) <= ECHO_ALLOWANCE,
            "{tool}: a string of {} characters in the error",
            longest_string(&error)
        );
        assert!(
            body.len() < 8 * ECHO_ALLOWANCE,
            "{tool}: an error of {} bytes",
            body.len()
        );
    }
}
