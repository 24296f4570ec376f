//! The schemas are published contract: client authors generate types from them. This
//! checks the house rules on every file of `schemas/`: a `$id` under the versioned base,
//! a `title`, a `description` on the root and on every property, and at least one example
//! at the root that validates against the schema itself.

use std::path::{Path, PathBuf};

use serde_json::Value;

const ID_BASE: &str = "https://manvault.dev/schemas/v1/";

fn schema_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let mut files = Vec::new();
    for folder in ["common", "tools"] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    files.sort();
    files
}

/// Every property of every object schema below `value` must carry a description.
fn undescribed_properties(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    if property
                        .get("description")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        found.push(format!("{at}/properties/{name}"));
                    }
                }
            }
            for (key, child) in map {
                if key != "examples" {
                    undescribed_properties(child, &format!("{at}/{key}"), found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                undescribed_properties(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn every_schema_is_titled_described_versioned_and_exemplified() {
    let mut problems = Vec::new();
    for file in schema_files() {
        let name = file
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .display()
            .to_string();
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let expected_id = format!("{ID_BASE}{}", name.trim_start_matches("schemas/"));
        if schema["$id"] != Value::String(expected_id.clone()) {
            problems.push(format!("{name}: $id should be {expected_id}"));
        }
        for key in ["title", "description"] {
            if schema[key].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{name}: no {key}"));
            }
        }
        let mut undescribed = Vec::new();
        undescribed_properties(&schema, "", &mut undescribed);
        problems.extend(
            undescribed
                .into_iter()
                .map(|at| format!("{name}: {at} has no description")),
        );
        match schema["examples"].as_array() {
            Some(examples) if !examples.is_empty() => {
                if !name.contains("/tools/") {
                    continue; // common schemas are checked through the tool schemas that use them
                }
                let tool = manvault::contract::TOOLS.iter().find(|t| {
                    name.ends_with(&format!("{}.input.json", t.name))
                        || name.ends_with(&format!("{}.output.json", t.name))
                });
                let Some(tool) = tool else { continue };
                let bundled = if name.ends_with(".input.json") {
                    tool.input_schema
                } else {
                    tool.output_schema
                };
                let validator =
                    jsonschema::validator_for(&serde_json::from_str(bundled).unwrap()).unwrap();
                for example in examples {
                    for error in validator.iter_errors(example) {
                        problems.push(format!("{name}: example does not validate: {error}"));
                    }
                }
            }
            _ => problems.push(format!("{name}: no examples")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Characters the served `tools/list` (compact JSON, every tool) may take: a client loads it
/// into the model's context on every session, so growing it is a decision, not a side
/// effect. Half of what it took before the token diet (issue 17): 158,317 for the 27 tools,
/// plus 7,155 that semantic recall (`summary.semantic`) and memory vectors (`vectors`) added
/// in their own wording afterwards (served in 3,604 after trimming), rounded down;
/// `manvault-bench answers` prints the size per tool.
const TOOL_LIST_BUDGET: usize = 82_000;

/// Words that mean something only inside this project: spec section numbers, the seed's
/// file names, planning words.
const JARGON: [&str; 9] = [
    "§",
    "spec_v2",
    "spec_manuals",
    "spec_vault",
    "pce_memory_tools.md",
    "DECISIONS",
    "MVP",
    "issue #",
    "requirements_v2",
];

#[test]
fn the_served_tool_list_stays_within_its_budget_and_speaks_plainly() {
    let tools = manvault::server::served_tools();
    let list = serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap();
    let chars = list.chars().count();
    let sizes: Vec<String> = tools
        .iter()
        .map(|tool| {
            let entry = serde_json::to_string(tool).unwrap().chars().count();
            format!("{} {entry}", tool.name)
        })
        .collect();
    assert!(
        chars <= TOOL_LIST_BUDGET,
        "tools/list is {chars} characters, over its budget of {TOOL_LIST_BUDGET}:\n{}",
        sizes.join("\n")
    );
    let jargon: Vec<String> = tools
        .iter()
        .flat_map(|tool| {
            let entry = serde_json::to_string(tool).unwrap();
            JARGON
                .iter()
                .filter(move |word| entry.contains(*word))
                .map(move |word| format!("{}: {word}", tool.name))
        })
        .collect();
    assert!(jargon.is_empty(), "internal words served: {jargon:?}");
}

/// The served schemas carry no definition they do not use and none of the annotations
/// only typify and people read (`title`, `$id`, `$schema`); the input keeps one example.
#[test]
fn served_schemas_carry_only_what_a_caller_uses() {
    for spec in manvault::contract::TOOLS {
        for (which, text) in [("input", spec.input_schema), ("output", spec.output_schema)] {
            let schema: Value = serde_json::from_str(text).unwrap();
            let name = format!("{} {which}", spec.name);
            for key in ["$id", "$schema", "title", "description"] {
                assert!(schema.get(key).is_none(), "{name}: root {key}");
            }
            let examples = schema["examples"].as_array().map_or(0, Vec::len);
            assert_eq!(examples, usize::from(which == "input"), "{name}: examples");
            for (definition, _) in schema["$defs"].as_object().into_iter().flatten() {
                let reference = format!("\"#/$defs/{definition}\"");
                assert!(
                    text.contains(&reference),
                    "{name}: unused $defs/{definition}"
                );
            }
        }
    }
}
