//! JSON-RPC on stdio as a careless or hostile client speaks it: every request gets an
//! answer (an error with its id when the id can be read), nothing stops the server, and
//! stdout carries only whole JSON-RPC lines.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::stdio_server::{empty_workspace, RawServer};

const PATIENCE: Duration = Duration::from_secs(20);
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

fn started(workspace: &std::path::Path) -> RawServer {
    let mut server = RawServer::start(workspace, &[]);
    server.initialize(1);
    server
}

/// The server still serves a well-formed request after whatever came before.
fn still_serving(server: &mut RawServer, id: u64) {
    let listed = server.request(id, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}

#[test]
fn notifications_and_responses_before_initialize_are_ignored() {
    let workspace = empty_workspace();
    let mut server = RawServer::start(workspace.path(), &[]);
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    server.send(&json!({"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}}));
    let initialized = server.initialize(1);
    assert!(
        initialized["result"]["capabilities"].is_object(),
        "{initialized}"
    );
    still_serving(&mut server, 2);
}

/// `depth` arrays nested inside each other.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn malformed_lines_are_answered_with_their_id_when_it_can_be_read() {
    let workspace = empty_workspace();
    let mut server = started(workspace.path());
    let call = |id: u64, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"vault_read","arguments":{arguments}}}}}"#
        )
    };
    let cases: Vec<(String, i64, Value)> = vec![
        ("not json at all".into(), PARSE_ERROR, Value::Null),
        ("{\"jsonrpc\":\"2.0\",".into(), PARSE_ERROR, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"#.into(),
            PARSE_ERROR,
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s-8","method":"tools/call","params":{"name":"vault_read","arguments":{"path":"\ud83d"}}}"#.into(),
            PARSE_ERROR,
            json!("s-8"),
        ),
        (
            call(9, &format!(r#"{{"path":"a.md","deep":{}}}"#, nested(200))),
            PARSE_ERROR,
            json!(9),
        ),
        (r#"{"jsonrpc":"2.0","id":10}"#.into(), INVALID_REQUEST, json!(10)),
        (r#"{"jsonrpc":"1.0","id":11,"method":"ping"}"#.into(), INVALID_REQUEST, json!(11)),
        (r#"{"id":12,"method":"ping"}"#.into(), INVALID_REQUEST, json!(12)),
        (r#"[{"jsonrpc":"2.0","id":13,"method":"ping"}]"#.into(), INVALID_REQUEST, Value::Null),
        ("42".into(), INVALID_REQUEST, Value::Null),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.into(), INVALID_REQUEST, Value::Null),
        (r#"{"jsonrpc":"2.0","id":14,"method":5}"#.into(), INVALID_REQUEST, json!(14)),
        (
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":5}}"#.into(),
            INVALID_PARAMS,
            json!(15),
        ),
        (call(16, "[1,2]"), INVALID_PARAMS, json!(16)),
        (r#"{"jsonrpc":"2.0","id":17,"method":"tools/call"}"#.into(), INVALID_PARAMS, json!(17)),
    ];
    for (line, code, id) in cases {
        server.write_raw(format!("{line}\n").as_bytes());
        let reply = server
            .next_message(PATIENCE)
            .unwrap_or_else(|| panic!("no answer to {line:.80}"));
        assert_eq!(reply["jsonrpc"], "2.0", "{line:.80}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{line:.80}: {reply}");
        assert_eq!(reply["id"], id, "{line:.80}: {reply}");
        assert!(reply.to_string().len() < 1000, "{line:.80}: {reply}");
    }
    // Nesting at the limit is still parsed, and the call goes through.
    let at_the_limit = call(
        18,
        &format!(r#"{{"path":"a.md","full":true,"x":{}}}"#, nested(100)),
    );
    server.write_raw(format!("{at_the_limit}\n").as_bytes());
    let reply = server.reply_to(&json!(18), PATIENCE);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    still_serving(&mut server, 19);
}

#[test]
fn a_line_over_16_mib_is_refused_with_its_id_and_the_next_is_served() {
    let workspace = empty_workspace();
    let mut server = started(workspace.path());
    let content = "x".repeat(16 * 1024 * 1024 + 10);
    let huge = json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                      "params": {"name": "vault_create",
                                 "arguments": {"path": "big.md", "content": content}}});
    server.send(&huge);
    let reply = server.reply_to(&json!(21), PATIENCE);
    assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply:.300}");
    assert!(reply.to_string().len() < 1000);
    assert!(!workspace.path().join("vault/big.md").exists());
    still_serving(&mut server, 22);
}

#[test]
fn a_duplicate_id_in_flight_is_refused_and_the_first_answer_still_comes() {
    let workspace = empty_workspace();
    // A search slow enough to be in flight when the duplicate, sent right behind it,
    // is read: 9 MB take 30-70 ms in a release build and many times that in the suite's
    // debug build, while reading the next line takes microseconds.
    let vault = workspace.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    let line = "障害対応の手順を確認する。 Watch the error-rate dashboard.\n";
    std::fs::write(vault.join("big.md"), line.repeat(130_000)).unwrap();
    let mut server = started(workspace.path());
    server.send(&json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
                        "params": {"name": "vault_search", "arguments": {"query": "incident-4711"}}}));
    server.send(&json!({"jsonrpc": "2.0", "id": 30, "method": "tools/list"}));
    // The search's answer may take many times its usual time on a loaded machine.
    let first = server.reply_to(&json!(30), 3 * PATIENCE);
    let second = server.reply_to(&json!(30), 3 * PATIENCE);
    let (refusal, answer) = if first.get("error").is_some() {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(refusal["error"]["code"], INVALID_REQUEST, "{refusal}");
    assert_eq!(
        answer["result"]["structuredContent"]["total"], 0,
        "the first request's answer: {answer:.300}"
    );
    // Once answered, the id may be used again.
    let again = server.request(30, "tools/list", json!({}));
    assert!(again["result"]["tools"].is_array(), "{again:.300}");
}

#[test]
fn answers_and_refusals_of_concurrent_calls_come_as_whole_lines() {
    let workspace = empty_workspace();
    let vault = workspace.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("long.md"), "日本語のテキスト。\n".repeat(5_000)).unwrap();
    let mut server = started(workspace.path());
    const CALLS: u64 = 40;
    let mut burst = String::new();
    for id in 100..100 + CALLS {
        burst.push_str(&format!(
            "{}\n{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "vault_read", "arguments": {"path": "long.md", "full": true}}}),
            id + CALLS
        ));
    }
    server.write_raw(burst.as_bytes());
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < 2 * CALLS as usize {
        // `next_message` fails the test on a line that is not JSON.
        let message = server
            .next_message(PATIENCE)
            .expect("an answer for every line");
        let id = message["id"].as_u64().unwrap();
        if id < 100 + CALLS {
            let text = message["result"]["structuredContent"]["text"].as_str();
            assert!(text.map(|text| text.chars().count()) > Some(10_000));
        } else {
            assert_eq!(message["error"]["code"], PARSE_ERROR);
        }
        answered.insert(id);
    }
}
