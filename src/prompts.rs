//! The standard workflows as MCP prompts: one prompt per goal of the tooling guide
//! (`tooling::GuideGoal`), with arguments, rendered as numbered steps that name the tools to
//! call and their arguments as JSON ready to pass. A client shows them as slash commands
//! (`/exhaustive_lookup 有給休暇の繰越し`), so a user starts a workflow without knowing
//! the tools.
//!
//! Plain Rust: the server converts these to MCP types. A prompt names only served tools (a
//! test checks), and an argument's `Slot` says what completion offers for it (the
//! vocabulary lives here, below completion, which reads this table and the resources').

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::error::{ToolError, ToolResult};
use crate::tooling::GuideGoal;

/// What a value is, which decides where completion takes candidates from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Free text (a topic, a note): nothing to offer.
    Text,
    ManualId,
    /// A file of the manual named by the `manual_id` argument.
    ManualPath,
    /// A heading line of the file named by `manual_id` and `path`: the value typed is the
    /// beginning of a line number or words of the heading.
    HeadingLine,
    /// A vault file, listed from the folder typed so far.
    VaultPath,
    /// A file under `artifacts/`, daily logs left out.
    ArtifactPath,
    /// `YYYY-MM-DD`: today (UTC).
    Date,
}

pub(crate) struct PromptArg {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    /// What the value is, which decides what completion offers.
    pub kind: Slot,
}

pub(crate) struct PromptSpec {
    pub name: &'static str,
    pub goal: GuideGoal,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: &'static [PromptArg],
}

/// Longest argument value accepted: a topic becomes a `manual_find` query, which takes
/// at most 1,000 characters.
const MAX_ARGUMENT_CHARS: usize = 1000;

const TOPIC: PromptArg = PromptArg {
    name: "topic",
    description: "What to look up, in words (Japanese or English).",
    required: true,
    kind: Slot::Text,
};

const MANUAL_ID: PromptArg = PromptArg {
    name: "manual_id",
    description: "Only this manual (default: DEFAULT_MANUAL_ID, else every manual).",
    required: false,
    kind: Slot::ManualId,
};

pub(crate) const PROMPTS: &[PromptSpec] = &[
    PromptSpec {
        name: "exhaustive_lookup",
        goal: GuideGoal::ExhaustiveLookup,
        title: "Find everything the manuals say",
        description: "Exhaustive look-up of a topic in the manuals, reading sections instead of files: manual_find, its next_actions, manual_hits, manual_read.",
        arguments: &[TOPIC, MANUAL_ID],
    },
    PromptSpec {
        name: "transcription",
        goal: GuideGoal::Transcription,
        title: "Copy manual sections into the vault",
        description: "Find the sections about a topic and copy them into a vault file server-side (bridge_copy_section / bridge_copy_file), so the text never passes through the conversation.",
        arguments: &[
            TOPIC,
            PromptArg {
                name: "dest_path",
                description: "Vault file to copy into, e.g. drafts/leave.md (created by the first copy).",
                required: true,
                kind: Slot::VaultPath,
            },
            MANUAL_ID,
        ],
    },
    PromptSpec {
        name: "artifact_audit",
        goal: GuideGoal::VaultArtifacts,
        title: "Audit an artifact against its sources",
        description: "Check an artifact under artifacts/ (artifact_audit), fix its severe findings, and close the gaps vault_coverage reports until it proposes stop.",
        arguments: &[PromptArg {
            name: "artifact_path",
            description: "The artifact, e.g. artifacts/leave-flow.md.",
            required: true,
            kind: Slot::ArtifactPath,
        }],
    },
    PromptSpec {
        name: "daily_log",
        goal: GuideGoal::DailyNote,
        title: "Write the daily log",
        description: "Create or append to the day's log artifacts/daily/YYYY-MM-DD.md (append-only once created).",
        arguments: &[
            PromptArg {
                name: "date",
                description: "The day, YYYY-MM-DD (default: today, UTC).",
                required: false,
                kind: Slot::Date,
            },
            PromptArg {
                name: "note",
                description: "What to log (default: ask the user).",
                required: false,
                kind: Slot::Text,
            },
        ],
    },
];

pub(crate) fn prompt(name: &str) -> Option<&'static PromptSpec> {
    PROMPTS.iter().find(|spec| spec.name == name)
}

/// A rendered prompt: its description and the one user message.
pub(crate) struct Rendered {
    pub description: &'static str,
    pub text: String,
}

/// Renders prompt `name` with `arguments`; `today` (`YYYY-MM-DD`) is the default date.
/// Unknown prompts and arguments, missing required ones and bad values are
/// `invalid_parameter` naming the argument.
pub(crate) fn render(
    name: &str,
    arguments: &BTreeMap<String, String>,
    today: &str,
) -> ToolResult<Rendered> {
    let spec = prompt(name).ok_or_else(|| {
        ToolError::invalid_parameter(format!("no prompt named {name:?}")).with_details(json!({
            "field": "name",
            "accepted": PROMPTS.iter().map(|p| p.name).collect::<Vec<_>>(),
        }))
    })?;
    let args = Arguments::check(spec, arguments)?;
    let text = match spec.goal {
        GuideGoal::ExhaustiveLookup => exhaustive_lookup(&args),
        GuideGoal::Transcription => transcription(&args),
        GuideGoal::VaultArtifacts => artifact_audit(&args),
        GuideGoal::DailyNote => daily_log(&args, today)?,
    };
    Ok(Rendered {
        description: spec.description,
        text,
    })
}

/// Checked arguments of one prompt.
struct Arguments<'a>(&'a BTreeMap<String, String>);

impl<'a> Arguments<'a> {
    fn check(
        spec: &PromptSpec,
        arguments: &'a BTreeMap<String, String>,
    ) -> ToolResult<Arguments<'a>> {
        for (name, value) in arguments {
            let Some(arg) = spec.arguments.iter().find(|arg| arg.name == name) else {
                return Err(bad_argument(
                    name,
                    format!("prompt {} takes no argument {name:?}", spec.name),
                )
                .with_details(json!({
                    "field": name,
                    "accepted": spec.arguments.iter().map(|a| a.name).collect::<Vec<_>>(),
                })));
            };
            if value.chars().count() > MAX_ARGUMENT_CHARS {
                return Err(bad_argument(
                    arg.name,
                    format!(
                        "{} is longer than {MAX_ARGUMENT_CHARS} characters",
                        arg.name
                    ),
                ));
            }
        }
        for arg in spec.arguments.iter().filter(|arg| arg.required) {
            if arguments.get(arg.name).is_none_or(|v| v.trim().is_empty()) {
                return Err(bad_argument(
                    arg.name,
                    format!(
                        "prompt {} needs {}: {}",
                        spec.name, arg.name, arg.description
                    ),
                ));
            }
        }
        Ok(Arguments(arguments))
    }

    /// The value of `name`, trimmed; `None` when absent or blank.
    fn get(&self, name: &str) -> Option<&'a str> {
        self.0
            .get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    }

    fn required(&self, name: &str) -> &'a str {
        self.get(name).expect("checked by Arguments::check")
    }
}

fn bad_argument(name: &str, message: String) -> ToolError {
    ToolError::invalid_parameter(message).with_details(json!({ "field": name }))
}

/// `tool {json}` on one line, the arguments as a client passes them.
fn call(tool: &str, arguments: Value) -> String {
    format!("{tool} {arguments}")
}

fn find_arguments(args: &Arguments) -> Value {
    let mut arguments = json!({ "query": args.required("topic") });
    if let Some(manual_id) = args.get("manual_id") {
        arguments["manual_id"] = json!(manual_id);
    }
    arguments
}

fn exhaustive_lookup(args: &Arguments) -> String {
    let topic = args.required("topic");
    format!(
        "Find everything the manuals say about: {topic}\n\
         Be exhaustive, but read as little as possible: never read whole files.\n\n\
         1. Call {find}. It answers a trace_id, counts and next_actions, not text.\n\
         2. Follow next_actions in order: manual_hits {{\"trace_id\": ...}} pages the candidates \
         (paths, lines, short snippets); manual_read {{\"ref\": ..., \"scope\": \"section\", \"trace_id\": ...}} \
         reads one section. Pass the trace_id so the reads count for the search.\n\
         3. While the summary's integration_status is needs_followup, call what next_actions \
         proposes (a wider manual_find, only_unscanned_from_trace_id after a cutoff) before concluding; \
         manual_excepts lists the exceptions of a section when conditions matter.\n\
         4. Answer with every finding cited as manual_id/path#Lline, and say what the manuals do not cover.",
        find = call("manual_find", find_arguments(args)),
    )
}

fn transcription(args: &Arguments) -> String {
    let topic = args.required("topic");
    let dest_path = args.required("dest_path");
    format!(
        "Copy what the manuals say about \"{topic}\" into the vault file {dest_path}, \
         without the text passing through this conversation.\n\n\
         1. Call {find} and follow its next_actions; manual_hits {{\"trace_id\": ...}} lists the \
         candidate sections to choose from.\n\
         2. Copy each chosen section with {section} (mode \"create\" for the first copy when the \
         file does not exist yet, \"append\" after it); copy a whole file with {file}.\n\
         3. The answers say where each copy landed (written_lines) and never carry the text; \
         cite those lines instead of reading them back.\n\
         4. Report what was copied from where (the answers' source fields).",
        find = call("manual_find", find_arguments(args)),
        section = call(
            "bridge_copy_section",
            json!({ "ref": "<ref from manual_hits>", "dest_path": dest_path, "mode": "append", "trace_id": "<trace_id>" })
        ),
        file = call(
            "bridge_copy_file",
            json!({ "manual_id": "<manual_id>", "path": "<path>", "dest_path": dest_path, "mode": "append" })
        ),
    )
}

fn artifact_audit(args: &Arguments) -> String {
    let path = args.required("artifact_path");
    format!(
        "Audit the artifact {path} against the vault files it cites, and close its gaps.\n\n\
         1. Call {audit}. Each finding names an element and a kind (no_source, source_missing, \
         source_out_of_range, orphan_branch, one_way_ref).\n\
         2. While it reports severe findings, follow its next_actions: vault_scan the cited file from \
         line 1, then fix the artifact with vault_replace (or vault_write), and audit again.\n\
         3. For each cited source file, call {coverage} and scan the uncovered range it proposes; \
         cite what you find in the artifact.\n\
         4. Repeat step 3 until vault_coverage proposes stop, then report the coverage_ratio of each source.",
        audit = call("artifact_audit", json!({ "path": path })),
        coverage = call(
            "vault_coverage",
            json!({ "path": "<cited source>", "artifact_paths": [path] })
        ),
    )
}

fn daily_log(args: &Arguments, today: &str) -> ToolResult<String> {
    let date = args.get("date").unwrap_or(today);
    let path = format!("artifacts/daily/{date}.md");
    if !crate::vault::policy::is_daily_file_name(&format!("{date}.md")) {
        return Err(bad_argument(
            "date",
            format!("date {date:?} is not a calendar date written YYYY-MM-DD"),
        ));
    }
    let what = match args.get("note") {
        Some(note) => format!("What to log: {note}"),
        None => "Ask the user what to log if it is not clear from the conversation.".to_owned(),
    };
    Ok(format!(
        "Write the daily log for {date} in {path}. Daily logs are append-only: once created \
         they are never overwritten or edited.\n{what}\n\n\
         1. Call {read} to see whether the log exists and where it ends.\n\
         2. If that is not_found, create it with {create}.\n\
         3. Otherwise append with {append}; keep each entry short, with a time and links to the \
         notes or artifacts it concerns.",
        read = call(
            "vault_read",
            json!({ "path": path, "range": { "start_line": 1 } })
        ),
        create = call(
            "vault_create",
            json!({ "path": path, "content": format!("# {date}\n\n<entry>\n") })
        ),
        append = call(
            "vault_write",
            json!({ "path": path, "mode": "append", "content": "<entry>\n" })
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The tools a rendered prompt calls: every word written as `name {arguments}`.
    fn called_tools(text: &str) -> Vec<&str> {
        let pieces: Vec<&str> = text.split(" {").collect();
        pieces[..pieces.len() - 1]
            .iter()
            .filter_map(|before| before.rsplit(char::is_whitespace).next())
            .collect()
    }

    fn sample(spec: &PromptSpec) -> BTreeMap<String, String> {
        let values = [
            ("topic", "有給休暇の繰越し"),
            ("manual_id", "handbook"),
            ("dest_path", "drafts/leave.md"),
            ("artifact_path", "artifacts/leave-flow.md"),
            ("date", "2026-11-26"),
            ("note", "reviewed the leave flow"),
        ];
        args(
            &values
                .into_iter()
                .filter(|(name, _)| spec.arguments.iter().any(|a| a.name == *name))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn every_prompt_renders_its_arguments_and_names_only_served_tools() {
        for spec in PROMPTS {
            let arguments = sample(spec);
            let rendered = render(spec.name, &arguments, "2026-01-01").unwrap();
            for value in arguments.values() {
                assert!(
                    rendered.text.contains(value.as_str()),
                    "{}: {value}",
                    spec.name
                );
            }
            let called = called_tools(&rendered.text);
            assert!(called.len() >= 2, "{}: {called:?}", spec.name);
            for tool in called {
                assert!(
                    crate::contract::tool(tool).is_some(),
                    "{}: {tool}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn tool_arguments_are_json_with_the_values_escaped() {
        let rendered = render(
            "exhaustive_lookup",
            &args(&[("topic", "say \"hi\"\nnow")]),
            "2026-01-01",
        )
        .unwrap();
        let line = rendered
            .text
            .lines()
            .find(|line| line.contains("manual_find {"))
            .unwrap();
        let json_start = line.find('{').unwrap();
        let json_end = line.rfind('}').unwrap();
        let value: Value = serde_json::from_str(&line[json_start..=json_end]).unwrap();
        assert_eq!(value["query"], "say \"hi\"\nnow");
    }

    #[test]
    fn bad_arguments_name_the_argument() {
        let cases = [
            ("exhaustive_lookup", args(&[])),
            ("exhaustive_lookup", args(&[("topic", "  ")])),
            (
                "exhaustive_lookup",
                args(&[("topic", "x"), ("colour", "red")]),
            ),
            ("transcription", args(&[("topic", "x")])),
            ("daily_log", args(&[("date", "2026-02-30")])),
            ("daily_log", args(&[("date", "../../etc")])),
            ("exhaustive_lookup", args(&[("topic", &"x".repeat(1001))])),
        ];
        for (name, arguments) in cases {
            let error = render(name, &arguments, "2026-01-01").err().unwrap();
            assert_eq!(error.code.as_str(), "invalid_parameter");
            assert!(error.details.unwrap()["field"].is_string(), "{name}");
        }
        let error = render("nope", &args(&[]), "2026-01-01").err().unwrap();
        assert_eq!(error.details.unwrap()["field"], "name");
    }

    #[test]
    fn the_daily_log_defaults_to_today() {
        let rendered = render("daily_log", &args(&[]), "2026-03-04").unwrap();
        assert!(rendered.text.contains("artifacts/daily/2026-03-04.md"));
        assert!(rendered.text.contains("Ask the user"));
    }
}
