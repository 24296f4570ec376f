//! The `manvault` command: serve MCP on stdio, or try the tools by hand.

use std::process::ExitCode;
use std::sync::Arc;

use manvault::adaptive::{report, StatsFile};
use manvault::app::App;
use manvault::config::{Config, RootFlags};
use manvault::contract::TOOLS;
use manvault::server::McpServer;

const USAGE: &str = "usage:
  manvault [serve] [--workspace DIR] [--manuals DIR] [--vault DIR]   serve MCP over stdio
  manvault tools                                                      list the tools
  manvault call TOOL 'JSON' [--workspace DIR ...]                     make one call, print the result
                                                                      (exit 1 on a tool error)
  manvault call TOOL --jsonl FILE [--workspace DIR ...]               one call per line of FILE (e.g. the example
                                                                      workspace's memory claims), one result line each
  manvault stats [--workspace DIR ...]                                what adaptive tuning did, per day
Configuration comes from the environment (see README.md); the flags override the roots.";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let flags = match RootFlags::extract(&mut args) {
        Ok(flags) => flags,
        Err(message) => return usage_error(&message),
    };
    let config = match Config::from_env(&flags) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("manvault: {message}");
            return ExitCode::from(2);
        }
    };
    manvault::logging::init(config.log_level);
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["serve"] => serve(config),
        ["tools"] => {
            for spec in TOOLS {
                println!("{:<22} {}", spec.name, spec.title);
            }
            ExitCode::SUCCESS
        }
        ["stats"] => stats(&config),
        ["call", tool] => call(config, tool, "{}"),
        ["call", tool, "--jsonl", file] => call_lines(config, tool, file),
        ["call", tool, arguments] => call(config, tool, arguments),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage_error("unrecognised arguments"),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("manvault: {message}\n{USAGE}");
    ExitCode::from(2)
}

fn serve(config: Config) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = McpServer::new(Arc::new(App::new(config)));
    match runtime.block_on(server.serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("manvault: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the statistics report; reads the file and writes nothing.
fn stats(config: &Config) -> ExitCode {
    match StatsFile::locate(config) {
        Ok(mut file) => {
            print!("{}", report::render(&file.load()));
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("manvault: {message}");
            ExitCode::FAILURE
        }
    }
}

fn call(config: Config, tool: &str, arguments: &str) -> ExitCode {
    let arguments = match serde_json::from_str(arguments) {
        Ok(value) => value,
        Err(error) => return usage_error(&format!("the arguments are not JSON: {error}")),
    };
    let app = App::new(config);
    match app.call(tool, arguments) {
        None => usage_error(&format!("no tool named {tool:?} (see `manvault tools`)")),
        Some(Ok(value)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&value).expect("JSON value")
            );
            ExitCode::SUCCESS
        }
        Some(Err(error)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&error.to_json()).expect("JSON value")
            );
            ExitCode::from(1)
        }
    }
}

/// Runs `tool` once per non-empty line of `file` (each a JSON object of arguments), in
/// order, printing each answer as one compact line; exit 1 if any call failed.
fn call_lines(config: Config, tool: &str, file: &str) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) => return usage_error(&format!("{file} cannot be read: {}", error.kind())),
    };
    let app = App::new(config);
    let mut failed = false;
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let arguments = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(error) => return usage_error(&format!("line {} is not JSON: {error}", number + 1)),
        };
        let answer = match app.call(tool, arguments) {
            None => return usage_error(&format!("no tool named {tool:?} (see `manvault tools`)")),
            Some(Ok(value)) => value,
            Some(Err(error)) => {
                failed = true;
                error.to_json()
            }
        };
        println!("{answer}");
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
