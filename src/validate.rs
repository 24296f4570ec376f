//! Input validation against the published schemas, before any handler runs.
//!
//! The generated types accept less than the schemas say (typify drops bounds and string
//! constraints), so this check is what enforces the contract. A violation is
//! `invalid_parameter` whose details name each JSON pointer and what was expected, and,
//! for a value outside a vocabulary, the values accepted.

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::{json, Value};

use crate::contract::TOOLS;
use crate::error::{clip, clip_to, ToolError};

/// At most this many violations are reported at once: enough to fix a call in one round
/// trip, few enough to keep the error small.
const MAX_REPORTED_VIOLATIONS: usize = 5;

/// Most characters of the offending value a violation shows: enough to recognise it, while
/// the rule it broke ("is longer than 1000 characters") still fits the clipped message.
const SHOWN_VALUE_CHARS: usize = 60;

/// The offending value as a violation shows it: its JSON, or the start of it and its size.
fn shown_value(instance: &Value) -> String {
    clip_to(&instance.to_string(), SHOWN_VALUE_CHARS)
}

/// The values a vocabulary accepts when `error` is a value outside it: an `enum` itself, or
/// an `anyOf` / `oneOf` with an `enum` branch (an optional vocabulary is `anyOf: [enum,
/// null]`, whose own message says only that no branch matched).
fn accepted_values(error: &ValidationError) -> Option<Vec<Value>> {
    match error.kind() {
        ValidationErrorKind::Enum { options } => options.as_array().cloned(),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            context.iter().flatten().find_map(accepted_values)
        }
        _ => None,
    }
}

/// Up to [`MAX_REPORTED_VIOLATIONS`] violations of `instance`, each `{pointer, expected}`
/// (the root is pointer `/`), plus `accepted` for a value outside a vocabulary.
pub(crate) fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<Value> {
    validator
        .iter_errors(instance)
        .take(MAX_REPORTED_VIOLATIONS)
        .map(|error| {
            let pointer = error.instance_path().to_string();
            let pointer = if pointer.is_empty() {
                "/".to_string()
            } else {
                clip(&pointer)
            };
            let shown = shown_value(error.instance());
            match accepted_values(&error) {
                Some(accepted) => {
                    let words: Vec<String> = accepted.iter().map(Value::to_string).collect();
                    let expected = format!("{shown} is not one of {}", words.join(", "));
                    json!({ "pointer": pointer, "expected": clip(&expected), "accepted": accepted })
                }
                None => {
                    let expected = error.masked_with(shown).to_string();
                    json!({ "pointer": pointer, "expected": clip(&expected) })
                }
            }
        })
        .collect()
}

/// `pointer: expected` of the first violation, the one-line message of an error.
pub(crate) fn first_violation(violations: &[Value]) -> Option<String> {
    let first = violations.first()?;
    Some(format!(
        "{}: {}",
        first["pointer"].as_str().unwrap_or("/"),
        first["expected"].as_str().unwrap_or("")
    ))
}

/// A compiled validator for every tool's input schema.
pub(crate) struct InputValidators {
    by_tool: HashMap<&'static str, jsonschema::Validator>,
}

impl InputValidators {
    /// Compiles every input schema; a schema that does not compile is a build defect.
    pub(crate) fn compile() -> InputValidators {
        let by_tool = TOOLS
            .iter()
            .map(|spec| {
                let schema: Value =
                    serde_json::from_str(spec.input_schema).expect("bundled schema is JSON");
                let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| {
                    panic!("input schema of {} does not compile: {e}", spec.name)
                });
                (spec.name, validator)
            })
            .collect();
        InputValidators { by_tool }
    }

    /// Checks `arguments` against `tool`'s input schema.
    pub(crate) fn check(&self, tool: &str, arguments: &Value) -> Result<(), ToolError> {
        let Some(validator) = self.by_tool.get(tool) else {
            return Err(ToolError::invalid_parameter(format!("unknown tool {tool}")));
        };
        let violations = violations(validator, arguments);
        let Some(message) = first_violation(&violations) else {
            return Ok(());
        };
        Err(ToolError::invalid_parameter(message).with_details(json!({ "violations": violations })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn every_schema_compiles_and_reports_pointers() {
        let validators = InputValidators::compile();
        assert!(validators.check("manual_list", &json!({})).is_ok());
        let error = validators
            .check("manual_list", &json!({"surprise": 1}))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        let error = validators
            .check(
                "manual_read",
                &json!({"ref": {"target": "manual", "path": "a.md", "start_line": 0}}),
            )
            .unwrap_err();
        assert_eq!(
            error.details.unwrap()["violations"][0]["pointer"],
            "/ref/start_line"
        );
        let error = validators.check("manual_toc", &json!({})).unwrap_err();
        assert_eq!(error.details.unwrap()["violations"][0]["pointer"], "/");
    }

    #[test]
    fn a_value_outside_a_vocabulary_lists_the_accepted_ones() {
        let validators = InputValidators::compile();
        for (tool, arguments, pointer) in [
            // an optional vocabulary: anyOf [enum, null]
            (
                "manual_hits",
                json!({"trace_id": "t-1", "kind": "exceptions"}),
                "/kind",
            ),
            // a required one
            (
                "vault_write",
                json!({"path": "a.md", "content": "x", "mode": "add"}),
                "/mode",
            ),
        ] {
            let error = validators.check(tool, &arguments).unwrap_err();
            let violation = &error.details.unwrap()["violations"][0];
            assert_eq!(violation["pointer"], pointer, "{tool}");
            let accepted = violation["accepted"].as_array().expect("accepted values");
            assert!(accepted.len() >= 2, "{tool}: {violation}");
            let expected = violation["expected"].as_str().unwrap();
            for value in accepted {
                assert!(
                    expected.contains(value.as_str().unwrap()),
                    "{tool}: {expected}"
                );
            }
            assert!(error.message.contains("is not one of"), "{}", error.message);
        }
    }
}
