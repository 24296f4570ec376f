//! The conformance suite: starts the built `manvault` binary as a real MCP client would
//! (newline-delimited JSON-RPC over stdio), then runs every case of `conformance/cases/`.
//!
//! Each case file gets a fresh copy of `examples/workspace/` and its own server process;
//! its cases run in order, so a file can create, then read, then replace. Every
//! `structuredContent` is validated against the tool's published outputSchema, every
//! error body against `schemas/common/error.json`, and every proposed `next_action`
//! against the input schema of the tool it names. Case format: conformance/README.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::stdio_session::Session;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Setup steps of a case file: shape the workspace before the server starts.
fn apply_setup(workspace: &Path, steps: &[Value]) {
    for step in steps {
        if let Some(link) = step.get("symlink") {
            let path = workspace.join(link["link"].as_str().unwrap());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let target = link["target"]
                .as_str()
                .unwrap()
                .replace("${workspace}", workspace.to_str().unwrap());
            std::os::unix::fs::symlink(target, path).unwrap();
        } else if let Some(write) = step.get("write") {
            let path = workspace.join(write["path"].as_str().unwrap());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let content = match write.get("repeat_line") {
                Some(line) => (1..=write["lines"].as_u64().unwrap())
                    .map(|n| format!("{} {n}\n", line.as_str().unwrap()))
                    .collect::<String>(),
                None => write["content"].as_str().unwrap().to_string(),
            };
            std::fs::write(path, content).unwrap();
        } else if let Some(dir) = step.get("mkdir") {
            std::fs::create_dir_all(workspace.join(dir.as_str().unwrap())).unwrap();
        } else {
            panic!("unknown setup step {step}");
        }
    }
}

/// Replaces `${name}` in every string of `value` by a captured or built-in variable.
fn substitute(value: &Value, variables: &BTreeMap<String, Value>) -> Value {
    match value {
        Value::String(text) => {
            if let Some(name) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
                if let Some(whole) = variables.get(name) {
                    return whole.clone();
                }
            }
            let mut out = text.clone();
            for (name, variable) in variables {
                let replacement = variable
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| variable.to_string());
                out = out.replace(&format!("${{{name}}}"), &replacement);
            }
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute(v, variables)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, variables)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    manvault::clock::date(secs)
}

fn schema_errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Checks one assertion `{pointer, op: value}` against `answer`; returns a failure text.
fn check_assertion(answer: &Value, assertion: &Value) -> Option<String> {
    let pointer = assertion["pointer"].as_str().unwrap_or("");
    let found = answer.pointer(pointer);
    let fail = |what: String| {
        Some(format!(
            "{pointer}: {what}; found {}",
            found.map(Value::to_string).unwrap_or("nothing".into())
        ))
    };
    if let Some(expected) = assertion.get("equals") {
        if found != Some(expected) {
            return fail(format!("expected {expected}"));
        }
    }
    if let Some(needle) = assertion.get("contains") {
        let ok = match (found, needle) {
            (Some(Value::String(text)), Value::String(n)) => text.contains(n.as_str()),
            (Some(Value::Array(items)), n) => items.contains(n),
            _ => false,
        };
        if !ok {
            return fail(format!("expected to contain {needle}"));
        }
    }
    if let Some(needle) = assertion.get("not_contains").and_then(Value::as_str) {
        let text = found.map(Value::to_string).unwrap_or_default();
        if text.contains(needle) {
            return fail(format!("must not contain {needle:?}"));
        }
    }
    if let Some(length) = assertion.get("length") {
        let actual = found.and_then(|v| {
            v.as_array()
                .map(Vec::len)
                .or_else(|| v.as_str().map(|s| s.chars().count()))
        });
        if actual.map(|n| n as u64) != length.as_u64() {
            return fail(format!("expected length {length}"));
        }
    }
    // A number is compared as is, an array by its length, a string by its characters.
    let measure = found.and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_array().map(|a| a.len() as f64))
            .or_else(|| v.as_str().map(|s| s.chars().count() as f64))
    });
    if let Some(min) = assertion.get("min").and_then(Value::as_f64) {
        if !measure.is_some_and(|m| m >= min) {
            return fail(format!("expected at least {min}"));
        }
    }
    if let Some(max) = assertion.get("max").and_then(Value::as_f64) {
        if !measure.is_some_and(|m| m <= max) {
            return fail(format!("expected at most {max}"));
        }
    }
    if assertion.get("absent") == Some(&Value::Bool(true)) && found.is_some() {
        return fail("expected no value".into());
    }
    if assertion.get("present") == Some(&Value::Bool(true)) && found.is_none() {
        return fail("expected a value".into());
    }
    None
}

struct Contract {
    outputs: BTreeMap<String, jsonschema::Validator>,
    inputs: BTreeMap<String, jsonschema::Validator>,
    /// Per tool, the next-action types whose params its output schema declares partial
    /// (`next_actions.x-partial-params`): the caller completes them (vault_read offers
    /// vault_replace with only `path`), so only their required fields may be missing.
    partial: BTreeMap<String, Vec<String>>,
    error: jsonschema::Validator,
}

impl Contract {
    fn from_tools_list(tools: &[Value]) -> Contract {
        let compile =
            |schema: &Value| jsonschema::validator_for(schema).expect("published schema compiles");
        let error_schema: Value = serde_json::from_str(
            &std::fs::read_to_string(repo().join("schemas/common/error.json")).unwrap(),
        )
        .unwrap();
        Contract {
            outputs: tools
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        compile(&t["outputSchema"]),
                    )
                })
                .collect(),
            inputs: tools
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        compile(&t["inputSchema"]),
                    )
                })
                .collect(),
            partial: tools
                .iter()
                .map(|t| {
                    let declared =
                        &t["outputSchema"]["properties"]["next_actions"]["x-partial-params"];
                    let kinds = declared
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|kind| kind.as_str().unwrap().to_string())
                        .collect();
                    (t["name"].as_str().unwrap().to_string(), kinds)
                })
                .collect(),
            error: compile(&error_schema),
        }
    }

    /// Every proposed action names a real tool (or stop) and its params are valid input
    /// (only required fields may be missing, and only where `tool` declares it partial).
    fn check_next_actions(&self, tool: &str, answer: &Value) -> Vec<String> {
        let partial = &self.partial[tool];
        let mut problems = Vec::new();
        for action in answer["next_actions"].as_array().into_iter().flatten() {
            let kind = action["type"].as_str().unwrap_or("");
            if kind == "stop" {
                continue;
            }
            match self.inputs.get(kind) {
                None => problems.push(format!("next_action names no tool: {kind}")),
                Some(validator) => {
                    let params = if action["params"].is_null() {
                        json!({})
                    } else {
                        action["params"].clone()
                    };
                    let may_be_incomplete = partial.iter().any(|p| p == kind);
                    for error in validator.iter_errors(&params) {
                        let missing = matches!(
                            error.kind(),
                            jsonschema::error::ValidationErrorKind::Required { .. }
                        );
                        if !(missing && may_be_incomplete) {
                            problems.push(format!(
                                "next_action {kind} params invalid: {error} at {}",
                                error.instance_path()
                            ));
                        }
                    }
                }
            }
        }
        problems
    }
}

/// Runs one case; returns its failures (empty when it passed).
fn run_case(
    session: &mut Session,
    contract: &Contract,
    case: &Value,
    variables: &mut BTreeMap<String, Value>,
) -> Vec<String> {
    let tool = case["tool"].as_str().expect("case.tool");
    let input = substitute(&case["input"], variables);
    let response = session.request("tools/call", json!({"name": tool, "arguments": input}));
    let mut failures = Vec::new();
    if let Some(code) = case["expect"].get("protocol_error") {
        if response["error"]["code"] != *code {
            failures.push(format!("expected JSON-RPC error {code}, got {response}"));
        }
        return failures;
    }
    let result = &response["result"];
    if result.is_null() {
        return vec![format!("no result: {response}")];
    }
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    let is_error = result["isError"] == json!(true);
    let answer = if is_error {
        if !result["structuredContent"].is_null() {
            failures.push("an error result must not carry structuredContent".into());
        }
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        failures.extend(
            schema_errors(&contract.error, &body)
                .into_iter()
                .map(|e| format!("error body: {e}")),
        );
        match case["expect"].get("error") {
            Some(code) if body["code"] == *code => {}
            Some(code) => failures.push(format!("expected error {code}, got {body}")),
            None => failures.push(format!("expected success, got error {body}")),
        }
        body
    } else {
        let structured = result["structuredContent"].clone();
        failures.extend(
            schema_errors(&contract.outputs[tool], &structured)
                .into_iter()
                .map(|e| format!("outputSchema: {e}")),
        );
        if serde_json::from_str::<Value>(text).ok() != Some(structured.clone()) {
            failures.push("the text block must mirror structuredContent".into());
        }
        if let Some(code) = case["expect"].get("error") {
            failures.push(format!("expected error {code}, got success"));
        }
        failures.extend(contract.check_next_actions(tool, &structured));
        structured
    };
    let assertions = substitute(&case["assert"], variables);
    for assertion in assertions.as_array().into_iter().flatten() {
        failures.extend(check_assertion(&answer, assertion));
    }
    if let Some(limit) = case.get("max_response_chars").and_then(Value::as_u64) {
        if text.chars().count() as u64 > limit {
            failures.push(format!(
                "response is {} characters, limit {limit}",
                text.chars().count()
            ));
        }
    }
    for (name, pointer) in case["capture"].as_object().into_iter().flatten() {
        match answer.pointer(pointer.as_str().unwrap()) {
            Some(value) => {
                variables.insert(name.clone(), value.clone());
            }
            None => failures.push(format!("capture {name}: nothing at {pointer}")),
        }
    }
    failures
}

fn case_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("conformance/cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_case_conforms() {
    let mut failures = Vec::new();
    let mut succeeded: BTreeSet<String> = BTreeSet::new();
    let mut listed = Vec::new();
    let mut cases_run = 0;
    for file in case_files() {
        let suite: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let workspace = tempfile::tempdir().unwrap();
        copy_tree(&repo().join("examples/workspace"), workspace.path());
        apply_setup(
            workspace.path(),
            suite["setup"].as_array().map(Vec::as_slice).unwrap_or(&[]),
        );
        let env: BTreeMap<String, String> = suite["env"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let mut session = Session::start(workspace.path(), &env);
        let tools = session.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap();
        listed = tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        let contract = Contract::from_tools_list(&tools);
        let mut variables = BTreeMap::from([
            ("today".to_string(), Value::String(today())),
            (
                "workspace".to_string(),
                Value::String(workspace.path().display().to_string()),
            ),
        ]);
        for case in suite["cases"].as_array().expect("cases") {
            cases_run += 1;
            let name = format!(
                "{}: {}",
                file.file_name().unwrap().to_string_lossy(),
                case["name"].as_str().unwrap_or("?")
            );
            let problems = run_case(&mut session, &contract, case, &mut variables);
            if problems.is_empty() && case["expect"] == json!("ok") {
                succeeded.insert(case["tool"].as_str().unwrap().to_string());
            }
            failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
        }
    }
    for tool in &listed {
        if !succeeded.contains(tool) {
            failures.push(format!("{tool}: no passing success case"));
        }
    }
    eprintln!("conformance: {cases_run} cases, {} tools", listed.len());
    assert!(
        failures.is_empty(),
        "{} conformance failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn tools_list_is_complete_and_stable() {
    let workspace = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("examples/workspace"), workspace.path());
    let mut session = Session::start(workspace.path(), &BTreeMap::new());
    let first = session.request("tools/list", json!({}))["result"]["tools"].clone();
    let second = session.request("tools/list", json!({}))["result"]["tools"].clone();
    assert_eq!(first, second, "tools/list must be stable");
    for tool in first.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{name}"
        );
        for key in [
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert!(!tool[key].is_null(), "{name} lacks {key}");
        }
        let spec = manvault::contract::tool(name).expect("a tool of the table");
        let hint = |key: &str, default: bool| {
            let served = &tool["annotations"][key];
            assert!(served.is_null() || served.is_boolean(), "{name}: {key}");
            served.as_bool().unwrap_or(default)
        };
        // A hint left out means MCP's default; each must come out as the schema's x-tool says.
        assert_eq!(hint("openWorldHint", true), spec.open_world, "{name}");
        assert!(
            !spec.open_world,
            "{name}: every tool works on the workspace only"
        );
        assert_eq!(hint("readOnlyHint", false), spec.read_only, "{name}");
        if !spec.read_only {
            assert_eq!(hint("destructiveHint", true), spec.destructive, "{name}");
            assert_eq!(hint("idempotentHint", false), spec.idempotent, "{name}");
        }
        assert_eq!(tool["outputSchema"]["type"], json!("object"), "{name}");
    }
    let unknown = session.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(
        unknown["error"]["code"],
        json!(-32602),
        "unknown tool is invalid params: {unknown}"
    );
}
