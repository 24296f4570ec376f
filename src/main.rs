//! The `manvault` command: serve MCP on stdio or HTTP, or try the tools by hand.

use std::process::ExitCode;
use std::sync::Arc;

use manvault::adaptive::{report, StatsFile};
use manvault::app::App;
use manvault::config::{Config, HttpConfig, RootFlags};
use manvault::contract::TOOLS;
use manvault::server::{http, McpServer};

const USAGE: &str = "usage:
  manvault [serve] [--workspace DIR] [--manuals DIR] [--vault DIR]   serve MCP over stdio
  manvault serve --http HOST:PORT [--workspace DIR ...]               serve MCP over streamable HTTP at /mcp
                                                                      (tokens: MANVAULT_HTTP_TOKEN[S_FILE])
  manvault tools                                                      list the tools
  manvault call TOOL 'JSON' [--workspace DIR ...]                     make one call, print the result
                                                                      (exit 1 on a tool error)
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
        ["serve", "--http", bind] => serve_http(config, bind),
        ["serve", flag] if flag.starts_with("--http=") => serve_http(config, &flag[7..]),
        ["tools"] => {
            for spec in TOOLS {
                println!("{:<22} {}", spec.name, spec.title);
            }
            ExitCode::SUCCESS
        }
        ["stats"] => stats(&config),
        ["call", tool] => call(config, tool, "{}"),
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

/// Serves MCP over HTTP until SIGINT/SIGTERM (see `server::http`).
fn serve_http(config: Config, bind: &str) -> ExitCode {
    let settings = match HttpConfig::from_env() {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("manvault: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = McpServer::new(Arc::new(App::new(config)));
    let served = runtime.block_on(http::serve(server, bind, settings));
    // A call cut by the shutdown grace period must not hold the exit: writes are atomic.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("manvault: {message}");
            ExitCode::from(2)
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
