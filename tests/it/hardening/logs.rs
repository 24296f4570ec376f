//! `LOG_LEVEL=debug` shows the server's own debug events, never a request's or a
//! response's body (rmcp logs both whole at debug, notifications at info).

use std::time::Duration;

use serde_json::json;

use crate::support::stdio_server::{empty_workspace, RawServer};

const MARKER: &str = "MARKER-4c1d-body-text";

#[test]
fn debug_logs_carry_no_request_or_response_text() {
    let workspace = empty_workspace();
    let mut server = RawServer::start(workspace.path(), &[("LOG_LEVEL", "debug")]);
    server.initialize(1);
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 999, "reason": MARKER}}),
    );
    let created = server.call(
        2,
        "vault_create",
        json!({"path": "notes/m.md", "content": format!("{MARKER}\n")}),
    );
    assert_eq!(created["result"]["isError"], false, "{created}");
    let read = server.call(3, "vault_read", json!({"path": "notes/m.md", "full": true}));
    assert!(read.to_string().contains(MARKER), "{read}");
    let refused = server.call(4, "vault_read", json!({"path": MARKER, "full": 1}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let (_, stderr) = server.finish(Duration::from_secs(10));
    assert!(
        stderr.contains("\"level\":\"debug\"") || stderr.contains("\"tool\":\"vault_read\""),
        "the server logged nothing: {stderr}"
    );
    assert!(
        !stderr.contains(MARKER),
        "a body reached the log:\n{stderr}"
    );
    for line in stderr.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line}"));
    }
}
