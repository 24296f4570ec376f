//! The JSON form: a document valid against `schemas/common/artifact.json`.
//!
//! The published schema itself is the validator (compiled once), so what a client reads in
//! the schema is exactly what is enforced. Violations name their JSON pointer and, when
//! they sit inside an element, that element's id: an agent fixing a long artifact should
//! not have to count array indices. Cross checks the schema cannot express (missing ids,
//! reversed ranges) are left to the audit, where they become findings; only duplicate ids
//! are refused here, because every later check looks elements up by id.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::invalid;
use super::model::Artifact;
use crate::error::ToolResult;

const ARTIFACT_SCHEMA: &str = include_str!("../../schemas/common/artifact.json");

/// Enough violations to fix a document in one round trip, few enough to keep the error small.
const MAX_REPORTED_VIOLATIONS: usize = 5;

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(ARTIFACT_SCHEMA).expect("artifact schema is JSON");
        jsonschema::validator_for(&schema).expect("artifact schema compiles")
    })
}

/// Parses the text of a `.json` artifact.
pub(crate) fn parse_json(text: &str) -> ToolResult<Artifact> {
    // Editors on Windows save JSON with a byte-order mark, which serde_json refuses.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let document: Value = serde_json::from_str(text).map_err(|error| {
        invalid::in_document(
            format!("not valid JSON: {error}"),
            json!({ "line": error.line(), "column": error.column() }),
        )
    })?;
    check_schema(&document)?;
    let artifact: Artifact = serde_json::from_value(document).map_err(|error| {
        invalid::in_document(
            format!("does not fit the artifact model: {error}"),
            json!({}),
        )
    })?;
    refuse_duplicate_ids(&artifact)?;
    Ok(artifact)
}

fn check_schema(document: &Value) -> ToolResult<()> {
    let errors: Vec<_> = validator()
        .iter_errors(document)
        .take(MAX_REPORTED_VIOLATIONS)
        .collect();
    let Some(first) = errors.first() else {
        return Ok(());
    };
    let problem = format!(
        "does not fit the artifact schema at {}: {first}",
        pointer_of(first)
    );
    let violations: Vec<Value> = errors
        .iter()
        .map(|error| {
            let pointer = pointer_of(error);
            let element_id = element_id_at(document, &pointer);
            json!({ "pointer": pointer, "element_id": element_id, "expected": error.to_string() })
        })
        .collect();
    Err(invalid::in_document(
        problem,
        json!({ "violations": violations }),
    ))
}

/// The JSON pointer of a violation, `/` for the document itself.
fn pointer_of(error: &jsonschema::ValidationError) -> String {
    let pointer = error.instance_path().to_string();
    if pointer.is_empty() {
        "/".to_owned()
    } else {
        pointer
    }
}

/// The id of the element a pointer like `/elements/3/source_lines/0` falls in, if it has one.
fn element_id_at(document: &Value, pointer: &str) -> Option<String> {
    let index = pointer.strip_prefix("/elements/")?.split('/').next()?;
    let id = document.pointer(&format!("/elements/{index}/id"))?;
    id.as_str().map(str::to_owned)
}

fn refuse_duplicate_ids(artifact: &Artifact) -> ToolResult<()> {
    let mut seen = HashSet::new();
    match artifact
        .elements
        .iter()
        .find(|element| !seen.insert(element.id.as_str()))
    {
        Some(duplicate) => Err(invalid::at_element(
            &duplicate.id,
            "the id is used by more than one element; ids must be unique",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::audit;
    use crate::artifact::model::Kind;
    use crate::error::ErrorCode;

    #[test]
    fn the_schema_examples_parse_and_audit_clean() {
        let schema: Value = serde_json::from_str(ARTIFACT_SCHEMA).unwrap();
        for example in schema["examples"].as_array().unwrap() {
            let artifact = parse_json(&example.to_string()).unwrap();
            assert_eq!(artifact.elements[1].role(), Kind::Decision);
            assert_eq!(audit(&artifact, &|_| Some(60)), []);
        }
    }

    #[test]
    fn a_byte_order_mark_is_not_an_error() {
        assert!(parse_json("\u{feff}{\"elements\": []}").is_ok());
    }

    #[test]
    fn invalid_json_names_the_line() {
        let error = parse_json("{\n  \"elements\": [,]\n}").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        assert_eq!(error.details.unwrap()["line"], 2);
    }

    #[test]
    fn schema_violations_name_the_pointer_and_the_element() {
        let text = r#"{"elements": [
            {"id": "A", "text": "a"},
            {"id": "B", "text": "b", "source_lines": [{"path": "d.md", "start_line": 0, "end_line": 2}]}
        ]}"#;
        let error = parse_json(text).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        let violation = &error.details.unwrap()["violations"][0];
        assert_eq!(
            violation["pointer"],
            "/elements/1/source_lines/0/start_line"
        );
        assert_eq!(violation["element_id"], "B");
    }

    #[test]
    fn unknown_fields_and_missing_elements_are_refused() {
        for text in [
            r#"{"elements": [{"id": "A", "text": "a", "source": []}]}"#,
            r#"{"title": "no elements"}"#,
            r#"{"elements": [{"id": "A", "text": "a", "kind": "branch"}]}"#,
        ] {
            let error = parse_json(text).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParameter, "{text}");
            assert!(error.details.unwrap()["violations"].is_array(), "{text}");
        }
    }

    #[test]
    fn duplicate_ids_are_refused_by_name() {
        let text = r#"{"elements": [{"id": "A", "text": "a"}, {"id": "A", "text": "b"}]}"#;
        let error = parse_json(text).unwrap_err();
        assert_eq!(error.details.unwrap()["element_id"], "A");
    }
}
