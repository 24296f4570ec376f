//! The tool contract generated from `schemas/` by build.rs: request/response types, the
//! tool table, one trait per domain and `dispatch`. Nothing here is written by hand except
//! the two small pieces the generated code calls into.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Number, Value};

use crate::error::{ToolError, ToolResult};

/// Request and response types, one per schema title (and per nested titled object).
#[allow(clippy::all, clippy::pedantic, dead_code, missing_docs)]
pub mod types {
    include!(concat!(env!("OUT_DIR"), "/types.rs"));
}

/// What `tools/list` publishes about one tool; the schemas are bundled (self-contained).
#[derive(Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub domain: &'static str,
    pub input_schema: &'static str,
    pub output_schema: &'static str,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

include!(concat!(env!("OUT_DIR"), "/tools.rs"));

/// Looks a tool up by name.
pub fn tool(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|spec| spec.name == name)
}

/// Deserialises already-validated arguments, runs the handler, serialises its answer.
/// A deserialisation failure here means the schema accepted something the types cannot
/// hold, so it is reported as invalid_parameter rather than a crash.
fn call_typed<I: DeserializeOwned, O: Serialize>(
    mut arguments: Value,
    handler: impl FnOnce(I) -> ToolResult<O>,
) -> ToolResult<Value> {
    whole_floats_as_integers(&mut arguments);
    let input = serde_json::from_value(arguments).map_err(|e| {
        ToolError::invalid_parameter(format!(
            "arguments do not fit the input schema: {}",
            crate::error::clip(&e.to_string())
        ))
    })?;
    let output = handler(input)?;
    Ok(serde_json::to_value(output).expect("generated response types always serialise"))
}

/// JSON Schema counts `1.0` as an integer (a number whose fraction is zero) and the
/// validator accepts it, but serde will not put a float into an integer field. So every
/// whole float is written as the integer it equals before the arguments are typed: an
/// `integer` field takes `1.0` like `1`, and a `number` field takes the integer as well.
fn whole_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let whole = number
                .as_f64()
                .filter(|float| number.is_f64() && float.fract() == 0.0);
            if let Some(integer) = whole.and_then(exact_integer) {
                *number = integer;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_floats_as_integers),
        _ => {}
    }
}

/// The integer a whole float equals, when one of JSON's integer types holds it.
fn exact_integer(float: f64) -> Option<Number> {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    if (0.0..TWO_POW_64).contains(&float) {
        Some(Number::from(float as u64))
    } else if (-TWO_POW_63..0.0).contains(&float) {
        Some(Number::from(float as i64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_floats_become_integers_everywhere_and_fractions_stay() {
        let mut arguments = json!({
            "a": 1.0, "b": [2.0, 2.5, -3.0], "c": { "d": 0.0 }, "e": 7, "f": 1e300, "g": "1.0"
        });
        whole_floats_as_integers(&mut arguments);
        assert_eq!(
            arguments,
            json!({ "a": 1, "b": [2, 2.5, -3], "c": { "d": 0 }, "e": 7, "f": 1e300, "g": "1.0" })
        );
        assert!(arguments["a"].is_u64() && arguments["b"][2].is_i64());
    }
}
