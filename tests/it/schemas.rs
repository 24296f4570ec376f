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
