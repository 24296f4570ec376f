//! The MCP features beside tools, over stdio against the built binary: resources (paged
//! listing, reads equal to the tools' answers, the tools' refusals), resource templates,
//! prompts, completion and logging.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use serde_json::{json, Value};

use crate::support::stdio_session::Session;
use crate::support::workspace::example_copy;

fn start(workspace: &std::path::Path) -> Session {
    Session::start(workspace, &BTreeMap::new())
}

/// The structured answer of a tool call.
fn tool(session: &mut Session, name: &str, arguments: Value) -> Value {
    let answer = session.request(
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    );
    assert_eq!(answer["result"]["isError"], false, "{name}: {answer}");
    answer["result"]["structuredContent"].clone()
}

#[test]
fn resources_list_every_manual_and_vault_file_in_pages() {
    let workspace = example_copy();
    for n in 0..250 {
        fs::write(
            workspace.path().join(format!("vault/notes/n{n:03}.md")),
            "# note\n",
        )
        .unwrap();
    }
    let mut session = start(workspace.path());
    let manual_total = tool(&mut session, "manual_ls", json!({}))["total"]
        .as_u64()
        .unwrap();
    let vault_total = tool(&mut session, "vault_ls", json!({}))["total"]
        .as_u64()
        .unwrap();
    let mut uris = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Value::Null => json!({}),
            cursor => json!({ "cursor": cursor }),
        };
        let page = session.request("resources/list", params);
        let result = &page["result"];
        let resources = result["resources"].as_array().expect("resources");
        assert!(resources.len() <= 200, "a page holds at most 200");
        for resource in resources {
            assert!(resource["name"].is_string() && resource["mimeType"].is_string());
            uris.push(resource["uri"].as_str().unwrap().to_owned());
        }
        pages += 1;
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(uris.len() as u64, manual_total + vault_total);
    assert_eq!(uris.iter().collect::<BTreeSet<_>>().len(), uris.len());
    assert!(uris.contains(&"manual://handbook/01-leave.md".to_owned()));
    assert!(uris.contains(&"vault://notes/n249.md".to_owned()));
    assert!(!uris.iter().any(|uri| uri.contains(".system")));
    let bad = session.request("resources/list", json!({ "cursor": "z9" }));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn resource_reads_are_the_tools_reads() {
    let workspace = example_copy();
    let mut session = start(workspace.path());
    let section = session.request(
        "resources/read",
        json!({ "uri": "manual://handbook/01-leave.md#L10" }),
    );
    let contents = &section["result"]["contents"][0];
    let read = tool(
        &mut session,
        "manual_read",
        json!({ "ref": { "target": "manual", "manual_id": "handbook", "path": "01-leave.md", "start_line": 10 }, "scope": "section" }),
    );
    assert_eq!(contents["text"], read["text"]);
    assert_eq!(contents["uri"], "manual://handbook/01-leave.md#L10");
    assert_eq!(contents["mimeType"], "text/markdown");
    assert_eq!(contents["_meta"]["lines"], read["lines"]);

    let file = session.request(
        "resources/read",
        json!({ "uri": "manual://handbook/01-leave.md" }),
    );
    let file = &file["result"]["contents"][0];
    assert!(
        file["text"].as_str().unwrap().starts_with("# 休暇規程"),
        "{file}"
    );
    assert_eq!(file["_meta"]["truncated"], false);

    let json_file = session.request(
        "resources/read",
        json!({ "uri": "manual://handbook/forms/leave-request.json" }),
    );
    let text = json_file["result"]["contents"][0]["text"].as_str().unwrap();
    serde_json::from_str::<Value>(text).expect("a whole JSON file");

    let vault = session.request(
        "resources/read",
        json!({ "uri": "vault://notes/welcome.md" }),
    );
    let read = tool(
        &mut session,
        "vault_read",
        json!({ "path": "notes/welcome.md", "full": true }),
    );
    assert_eq!(vault["result"]["contents"][0]["text"], read["text"]);
}

#[test]
fn resource_reads_refuse_what_the_tools_refuse() {
    let workspace = example_copy();
    fs::create_dir_all(workspace.path().join("vault/.system")).unwrap();
    fs::write(workspace.path().join("vault/.system/secret.md"), "secret").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", workspace.path().join("vault/notes/link.md"))
        .unwrap();
    let mut session = start(workspace.path());
    for (uri, rpc_code, code) in [
        ("vault://notes/missing.md", -32002, "not_found"),
        ("manual://nobody/a.md", -32002, "not_found"),
        ("vault://%2e%2e/%2e%2e/etc/passwd", -32602, "out_of_scope"),
        ("vault://../x.md", -32602, "out_of_scope"),
        ("vault://.system/secret.md", -32602, "forbidden"),
        ("vault://notes/link.md", -32602, "forbidden"),
        (
            "manual://handbook/..%2F..%2Fvault%2Fnotes%2Fwelcome.md",
            -32602,
            "out_of_scope",
        ),
        ("file:///etc/passwd", -32602, "invalid_parameter"),
        (
            "manual://handbook/01-leave.md#L0",
            -32602,
            "invalid_parameter",
        ),
    ] {
        let answer = session.request("resources/read", json!({ "uri": uri }));
        let error = &answer["error"];
        assert_eq!(error["code"], rpc_code, "{uri}: {answer}");
        assert_eq!(error["data"]["code"], code, "{uri}: {answer}");
        let said = answer.to_string();
        assert!(
            !said.contains("secret") || uri.contains("secret.md"),
            "{said}"
        );
        assert!(!said.contains("root:"), "{said}");
        assert!(!said.contains(workspace.path().to_str().unwrap()), "{said}");
    }
}

#[test]
fn templates_prompts_and_completion() {
    let workspace = example_copy();
    let mut session = start(workspace.path());
    let templates = session.request("resources/templates/list", json!({}));
    let templates: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        templates,
        [
            "manual://{manual_id}/{path}#L{line}",
            "manual://{manual_id}/{path}",
            "vault://{path}"
        ]
    );

    let prompts = session.request("prompts/list", json!({}));
    let prompts = prompts["result"]["prompts"].as_array().unwrap().clone();
    let names: Vec<&str> = prompts
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "exhaustive_lookup",
            "transcription",
            "artifact_audit",
            "daily_log"
        ]
    );
    for prompt in &prompts {
        assert!(
            prompt["description"].as_str().unwrap().len() > 20,
            "{prompt}"
        );
        assert!(prompt["arguments"].is_array(), "{prompt}");
    }
    let got = session.request(
        "prompts/get",
        json!({ "name": "transcription", "arguments": { "topic": "年次有給休暇", "dest_path": "drafts/leave.md" } }),
    );
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("年次有給休暇") && text.contains("bridge_copy_section"),
        "{text}"
    );
    assert_eq!(got["result"]["messages"][0]["role"], "user");
    let missing = session.request(
        "prompts/get",
        json!({ "name": "transcription", "arguments": { "topic": "x" } }),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(missing["error"]["data"]["details"]["field"], "dest_path");

    let mut complete = |reference: Value, name: &str, value: &str, context: Value| -> Vec<String> {
        let answer = session.request(
            "completion/complete",
            json!({ "ref": reference, "argument": { "name": name, "value": value }, "context": { "arguments": context } }),
        );
        serde_json::from_value(answer["result"]["completion"]["values"].clone())
            .unwrap_or_else(|_| panic!("{answer}"))
    };
    let section = json!({ "type": "ref/resource", "uri": "manual://{manual_id}/{path}#L{line}" });
    assert_eq!(
        complete(section.clone(), "manual_id", "ha", json!({})),
        ["handbook"]
    );
    assert_eq!(
        complete(
            section.clone(),
            "path",
            "note",
            json!({ "manual_id": "handbook" })
        ),
        ["notes/faq.md"]
    );
    assert_eq!(
        complete(
            section.clone(),
            "line",
            "繰越",
            json!({ "manual_id": "handbook", "path": "01-leave.md" })
        ),
        ["22"]
    );
    let prompt = json!({ "type": "ref/prompt", "name": "exhaustive_lookup" });
    assert_eq!(
        complete(prompt.clone(), "manual_id", "", json!({})),
        ["handbook", "ops-guide"]
    );
    assert!(complete(prompt, "topic", "有給", json!({})).is_empty());
    let vault = json!({ "type": "ref/resource", "uri": "vault://{path}" });
    assert_eq!(
        complete(vault, "path", "notes/w", json!({})),
        ["notes/welcome.md"]
    );
    // Unknown references answer an empty list, not an error.
    let unknown_prompt = json!({ "type": "ref/prompt", "name": "test_prompt_with_arguments" });
    assert!(complete(unknown_prompt, "arg1", "test", json!({})).is_empty());
    let unknown_template = json!({ "type": "ref/resource", "uri": "file:///{path}" });
    assert!(complete(unknown_template, "path", "", json!({})).is_empty());
}

#[test]
fn log_events_reach_the_client_at_the_level_it_sets() {
    let workspace = example_copy();
    let mut session = start(workspace.path());
    tool(&mut session, "manual_list", json!({}));
    let refused = session.request(
        "tools/call",
        json!({ "name": "vault_read", "arguments": { "path": "notes/missing.md", "full": true } }),
    );
    assert_eq!(refused["result"]["isError"], true);
    // Before setLevel: warnings only (the failed read), not the info line of the list.
    let before = wait_for_message(&mut session, |m| m["data"]["tool"] == "vault_read");
    assert_eq!(before["level"], "warning");
    assert_eq!(before["data"]["code"], "not_found");
    assert!(messages(&session).iter().all(|m| m["level"] == "warning"));
    let set = session.request("logging/setLevel", json!({ "level": "info" }));
    assert_eq!(set["result"], json!({}), "{set}");
    tool(&mut session, "manual_list", json!({}));
    let call = wait_for_message(&mut session, |m| {
        m["level"] == "info" && m["data"]["tool"] == "manual_list"
    });
    assert_eq!(call["logger"], "manvault");
    let fields: BTreeSet<&str> = call["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from(["actor", "elapsed_ms", "ok", "tool"])
    );
    let set = session.request("logging/setLevel", json!({ "level": "error" }));
    assert_eq!(set["result"], json!({}));
    let count = messages(&session).len();
    session.request(
        "tools/call",
        json!({ "name": "vault_read", "arguments": { "path": "notes/missing.md", "full": true } }),
    );
    for _ in 0..5 {
        session.request("ping", json!({}));
    }
    assert_eq!(messages(&session).len(), count, "warnings are below error");
}

/// The `notifications/message` params received so far.
fn messages(session: &Session) -> Vec<Value> {
    session
        .notifications
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"].clone())
        .collect()
}

/// The first log message matching `wanted`, pinging while it is on its way (messages are
/// forwarded beside the answers, not before them).
fn wait_for_message(session: &mut Session, wanted: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        if let Some(found) = messages(session).into_iter().find(|m| wanted(m)) {
            return found;
        }
        session.request("ping", json!({}));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no such log message in {:?}", messages(session));
}
