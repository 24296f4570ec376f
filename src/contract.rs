//! The tool contract generated from `schemas/` by build.rs: request/response types, the
//! tool table, one trait per domain and `dispatch`. Nothing here is written by hand except
//! the two small pieces the generated code calls into.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

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
    arguments: Value,
    handler: impl FnOnce(I) -> ToolResult<O>,
) -> ToolResult<Value> {
    let input = serde_json::from_value(arguments).map_err(|e| {
        ToolError::invalid_parameter(format!("arguments do not fit the input schema: {e}"))
    })?;
    let output = handler(input)?;
    Ok(serde_json::to_value(output).expect("generated response types always serialise"))
}
