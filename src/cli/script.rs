//! `manvault call` with several calls in one process, read one JSON object a line.
//!
//! Search traces live in the server's memory, so `manual_find` then `manual_hits` only
//! works inside one process. A script line is `{"tool": NAME, "arguments": {...}}` or
//! `{"next_action": N}` (the Nth next action the latest answer proposed, run as it is),
//! and an argument value `"$trace_id"` stands for the trace id of the latest answer that
//! carried one, so a script can be written before the ids exist.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::app::App;

/// The placeholder for the latest trace id.
const TRACE_ID: &str = "$trace_id";

/// What earlier answers left for the lines after them.
#[derive(Debug, Default)]
struct Carried {
    trace_id: Option<String>,
    next_actions: Vec<Value>,
}

impl Carried {
    fn remember(&mut self, answer: &Value) {
        if let Some(id) = answer.get("trace_id").and_then(Value::as_str) {
            self.trace_id = Some(id.to_string());
        }
        self.next_actions = answer
            .get("next_actions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
    }
}

/// One call to make.
#[derive(Debug, PartialEq)]
struct Call {
    tool: String,
    arguments: Value,
}

/// The call a line asks for, `None` for a blank or comment line.
fn parse_line(line: &str, carried: &Carried) -> Result<Option<Call>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let object = match serde_json::from_str(line) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err("not a JSON object".into()),
        Err(error) => return Err(format!("not JSON: {error}")),
    };
    let call = match object.get("next_action") {
        Some(index) => proposed_action(&object, index, carried)?,
        None => written_call(&object)?,
    };
    Ok(Some(Call {
        arguments: with_trace_id(call.arguments, carried)?,
        ..call
    }))
}

fn written_call(object: &Map<String, Value>) -> Result<Call, String> {
    if let Some(unknown) = object
        .keys()
        .find(|key| !["tool", "arguments"].contains(&key.as_str()))
    {
        return Err(format!(
            "unknown key {unknown:?}; a line is {{\"tool\": NAME, \"arguments\": {{...}}}} \
             or {{\"next_action\": N}}"
        ));
    }
    let tool = object
        .get("tool")
        .and_then(Value::as_str)
        .ok_or("\"tool\" (a tool name) is missing")?;
    let arguments = match object.get("arguments") {
        None => json!({}),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => return Err("\"arguments\" must be a JSON object".into()),
    };
    Ok(Call {
        tool: tool.to_string(),
        arguments,
    })
}

fn proposed_action(
    object: &Map<String, Value>,
    index: &Value,
    carried: &Carried,
) -> Result<Call, String> {
    if object.len() > 1 {
        return Err("a {\"next_action\": N} line has no other keys".into());
    }
    let index = index
        .as_u64()
        .ok_or("\"next_action\" is the index of a proposed action (0 is the first)")?;
    let action = carried.next_actions.get(index as usize).ok_or_else(|| {
        format!(
            "the latest answer proposed {} next actions; there is no next_action {index}",
            carried.next_actions.len()
        )
    })?;
    match (
        action.get("type").and_then(Value::as_str),
        action.get("params"),
    ) {
        (Some(tool), Some(params)) => Ok(Call {
            tool: tool.to_string(),
            arguments: params.clone(),
        }),
        _ => Err(format!("next action {index} names no tool and params")),
    }
}

/// `arguments` with every `"$trace_id"` value replaced by the latest trace id.
fn with_trace_id(arguments: Value, carried: &Carried) -> Result<Value, String> {
    Ok(match arguments {
        Value::String(text) if text == TRACE_ID => match &carried.trace_id {
            Some(id) => Value::String(id.clone()),
            None => {
                return Err(format!(
                    "{TRACE_ID} is used before any answer had a trace_id"
                ))
            }
        },
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| with_trace_id(item, carried))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| Ok((key, with_trace_id(item, carried)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other,
    })
}

/// What a script prints for one call, the line and tool first so a reader sees which
/// call an answer belongs to before the answer.
#[derive(Serialize)]
struct Entry<'a> {
    line: u64,
    tool: &'a str,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Answer(Value),
    Error(Value),
}

/// Whether an error body says a trace is unknown or expired.
pub(super) fn is_lost_trace(error: &Value) -> bool {
    error["code"] == "not_found" && error["details"]["trace_id"].is_string()
}

/// Runs every line of `input` in order; a failed call or a bad line does not stop the
/// ones after it (their traces are still here). Exit 2 if a line was not a call, else 1
/// if a call failed.
pub(super) fn run(app: &App, input: impl BufRead) -> ExitCode {
    let mut carried = Carried::default();
    let (mut bad_lines, mut failed_calls) = (0, 0);
    let mut stdout = std::io::stdout().lock();
    for (number, line) in (1u64..).zip(input.lines()) {
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                eprintln!("manvault: reading line {number}: {error}");
                bad_lines += 1;
                break;
            }
        };
        let call = match parse_line(&line, &carried) {
            Ok(Some(call)) => call,
            Ok(None) => continue,
            Err(problem) => {
                eprintln!("manvault: line {number}: {problem}");
                bad_lines += 1;
                continue;
            }
        };
        let outcome = match app.call(&call.tool, call.arguments) {
            None => {
                eprintln!(
                    "manvault: line {number}: no tool named {:?} (see `manvault tools`)",
                    call.tool
                );
                bad_lines += 1;
                continue;
            }
            Some(Ok(answer)) => {
                carried.remember(&answer);
                Outcome::Answer(answer)
            }
            Some(Err(error)) => {
                failed_calls += 1;
                Outcome::Error(error.to_json())
            }
        };
        let entry = Entry {
            line: number,
            tool: &call.tool,
            outcome,
        };
        let written = serde_json::to_string_pretty(&entry).expect("JSON value");
        if writeln!(stdout, "{written}").is_err() {
            break; // stdout closed (e.g. `| head`): nobody reads the rest
        }
    }
    match (bad_lines, failed_calls) {
        (0, 0) => ExitCode::SUCCESS,
        (0, _) => ExitCode::from(1),
        _ => ExitCode::from(super::EXIT_USAGE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carried() -> Carried {
        let mut carried = Carried::default();
        carried.remember(&json!({
            "trace_id": "t-1",
            "next_actions": [{"type": "manual_hits", "params": {"trace_id": "t-1", "kind": "candidates"}}]
        }));
        carried
    }

    #[test]
    fn a_line_is_a_call_with_the_latest_trace_id_put_in() {
        let call = parse_line(
            r#"{"tool": "manual_hits", "arguments": {"trace_id": "$trace_id", "kind": "gaps"}}"#,
            &carried(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            call,
            Call {
                tool: "manual_hits".into(),
                arguments: json!({"trace_id": "t-1", "kind": "gaps"})
            }
        );
        let bare = parse_line(r#"{"tool": "manual_list"}"#, &carried())
            .unwrap()
            .unwrap();
        assert_eq!(bare.arguments, json!({}));
    }

    #[test]
    fn next_action_runs_what_the_latest_answer_proposed() {
        let call = parse_line(r#"{"next_action": 0}"#, &carried())
            .unwrap()
            .unwrap();
        assert_eq!(call.tool, "manual_hits");
        assert_eq!(
            call.arguments,
            json!({"trace_id": "t-1", "kind": "candidates"})
        );
        let error = parse_line(r#"{"next_action": 3}"#, &carried()).unwrap_err();
        assert!(error.contains("proposed 1 next actions"), "{error}");
    }

    #[test]
    fn a_trace_id_is_kept_until_another_answer_brings_one() {
        let mut carried = carried();
        carried.remember(&json!({"text": "a read has no trace"}));
        assert_eq!(carried.trace_id.as_deref(), Some("t-1"));
        assert!(carried.next_actions.is_empty());
    }

    #[test]
    fn blank_comment_and_bad_lines() {
        let empty = Carried::default();
        assert_eq!(parse_line("   ", &empty), Ok(None));
        assert_eq!(parse_line("# find first", &empty), Ok(None));
        for (line, says) in [
            ("manual_list", "not JSON"),
            ("[1]", "not a JSON object"),
            (
                r#"{"tool": "manual_list", "args": {}}"#,
                "unknown key \"args\"",
            ),
            (r#"{"arguments": {}}"#, "\"tool\""),
            (r#"{"tool": "manual_list", "arguments": []}"#, "JSON object"),
            (
                r#"{"tool": "manual_hits", "arguments": {"trace_id": "$trace_id"}}"#,
                "before any answer",
            ),
            (r#"{"next_action": 0}"#, "proposed 0 next actions"),
        ] {
            let error = parse_line(line, &empty).unwrap_err();
            assert!(error.contains(says), "{line}: {error}");
        }
    }
}
