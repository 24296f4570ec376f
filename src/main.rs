//! The `manvault` command: serve MCP on stdio, check the workspace, or try the tools by
//! hand. Everything lives in `manvault::cli`.

fn main() -> std::process::ExitCode {
    manvault::cli::main()
}
