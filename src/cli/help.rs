//! The text after the options in `--help`: the settings (from `config::VARIABLES`, the
//! one list), client configurations for `serve`, and the script format for `call`. An
//! installed binary has no README beside it, so its help has to be enough to start.

use crate::config::VARIABLES;

/// Width of the variable-name column.
const NAME_WIDTH: usize = 31;

/// Every setting with its meaning, default and accepted values.
pub(super) fn settings() -> String {
    let mut text = String::from(
        "Settings: environment variables, all optional. A value out of range stops manvault\n\
         with one line naming it.\n",
    );
    for variable in VARIABLES {
        text.push_str(&format!(
            "  {:<NAME_WIDTH$} {}\n  {:<NAME_WIDTH$} default: {}; accepted: {}\n",
            variable.name, variable.meaning, "", variable.default, variable.accepted
        ));
    }
    text
}

/// Client configuration snippets for this very binary, then the settings.
pub(super) fn serve() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|path| path.to_str().map(str::to_string))
        .unwrap_or_else(|| "manvault".to_string());
    format!(
        r#"Client configuration (stdio). Use absolute paths: clients start servers in a folder of
their own choosing. Settings go in "env" (JSON) or `env` (TOML).

  Claude Code:
    claude mcp add manvault -- {binary} serve --workspace /path/to/workspace

  Claude Desktop (claude_desktop_config.json) and Cursor (.cursor/mcp.json):
    {{"mcpServers": {{"manvault": {{
      "command": "{binary}",
      "args": ["serve", "--workspace", "/path/to/workspace"],
      "env": {{"LOG_LEVEL": "info"}}}}}}}}

  VS Code (.vscode/mcp.json):
    {{"servers": {{"manvault": {{"type": "stdio",
      "command": "{binary}",
      "args": ["serve", "--workspace", "/path/to/workspace"]}}}}}}

  Codex (~/.codex/config.toml; give tools longer than manual_find's 60 s budget):
    [mcp_servers.manvault]
    command = "{binary}"
    args = ["serve", "--workspace", "/path/to/workspace"]
    tool_timeout_sec = 120

Check the workspace first: {binary} doctor --workspace /path/to/workspace

{}"#,
        settings()
    )
}

/// The script format of `manvault call`, then the settings.
pub(super) fn call() -> String {
    format!(
        r#"Examples:
  manvault call manual_list
  manvault call manual_toc '{{"manual_id": "handbook"}}' --workspace examples/workspace

Several calls in one process: search traces live in the server's memory, so manual_hits
works only in the process whose manual_find made the trace. Give no TOOL and write one
JSON object a line, in --script FILE or on stdin:
  {{"tool": "manual_find", "arguments": {{"query": "paid leave carry-over"}}}}
  {{"tool": "manual_hits", "arguments": {{"trace_id": "$trace_id", "kind": "candidates"}}}}
  {{"next_action": 0}}
"$trace_id" as an argument value stands for the trace_id of the latest answer that had one;
{{"next_action": N}} runs the Nth of the latest answer's next_actions as proposed. Blank lines
and lines starting with # are skipped. Each call prints {{"line", "tool", "answer"}} or
{{"line", "tool", "error"}} as pretty JSON (`| jq` reads the stream). Exit 1 if a call failed,
2 if a line is not a call.

{}"#,
        settings()
    )
}

/// Said after a one-shot call names a trace that does not exist, instead of the error's
/// "run manual_find again", which in a new process would fail the same way.
pub(super) const LOST_TRACE: &str = "each `manvault call TOOL` is a new process and search \
traces live in memory, so a trace from an earlier command is gone. Run the search and the \
calls that use its trace in one process: `manvault call --script FILE` or JSON lines on \
stdin, with \"$trace_id\" for the latest trace (see `manvault call --help`).";
