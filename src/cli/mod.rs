//! The `manvault` command line: clap types, then one function a subcommand.
//!
//! Arguments are parsed before any setting is read, so `--help` and `--version` work
//! whatever the environment holds (`LOG_LEVEL=verbose manvault --help` prints help). The
//! help of every subcommand that reads settings lists them all, generated from
//! [`config::VARIABLES`](crate::config::VARIABLES).
//!
//! Exit codes: 0 success; 1 a tool call failed, `doctor` found a problem or an `index` step
//! failed; 2 the command line, a setting or the workspace is wrong (nothing was started).
//!
//! Adding a subcommand is a variant of [`Command`] with its own `Args` struct (flatten
//! [`RootArgs`] when it reads the workspace) and an arm in [`main`]; a `serve` flag is a
//! field of [`ServeArgs`], which also applies to a bare `manvault`.

mod doctor;
mod help;
mod index;
mod script;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use crate::adaptive::{report, StatsFile};
use crate::app::App;
use crate::call::CallContext;
use crate::config::{Config, HttpConfig, RootFlags};
use crate::contract::TOOLS;
use crate::manual::find::index::COMMIT_EVERY;
use crate::manual::ManualIndex;
use crate::progress::{IndexProgress, ProgressLog};
use crate::server::{http, served_tools, McpServer};
use crate::workspace;

/// Exit code of a wrong command line, setting or workspace (clap's own is 2 too).
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "manvault",
    version,
    about = "An MCP server (stdio) for exhaustive, token-frugal search of Markdown/JSON \
             manuals and a writable vault.",
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = help::settings()
)]
struct Cli {
    /// Without a subcommand, manvault serves (the options of `serve`).
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP on stdin/stdout (the default)
    #[command(after_help = help::serve())]
    Serve(ServeArgs),
    /// Check the workspace and settings; exit 1 on a problem or warning
    #[command(after_help = help::settings())]
    Doctor(RootArgs),
    /// List the tools this build serves
    Tools(ToolsArgs),
    /// Call tools without an MCP client: one call, or several in one process
    #[command(after_help = help::call())]
    Call(CallArgs),
    /// Report what adaptive tuning did, per day (reads the statistics file only)
    #[command(after_help = help::settings())]
    Stats(RootArgs),
    /// Build the caches a server would otherwise fill itself (the section index under
    /// CACHE_DIR; section vectors when EMBEDDINGS_URL is set), with a progress bar; exit 1
    /// when a step failed
    #[command(after_help = help::settings())]
    Index(IndexArgs),
}

/// The three roots; each flag overrides its variable.
#[derive(Debug, Clone, Default, Args)]
struct RootArgs {
    /// Folder holding manuals/ and vault/ [overrides WORKSPACE_ROOT]
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Folder with one sub-folder per manual [overrides MANUALS_ROOT]
    #[arg(long, value_name = "DIR")]
    manuals: Option<PathBuf>,
    /// The writable vault [overrides VAULT_ROOT]
    #[arg(long, value_name = "DIR")]
    vault: Option<PathBuf>,
}

impl RootArgs {
    fn flags(&self) -> RootFlags {
        RootFlags {
            workspace: self.workspace.clone(),
            manuals: self.manuals.clone(),
            vault: self.vault.clone(),
        }
    }
}

#[derive(Debug, Clone, Args)]
struct IndexArgs {
    /// Seconds of indexing between two commits of the section index: a killed run loses
    /// at most that much work, and committing more often costs time in segment merges
    #[arg(long, value_name = "SECONDS", default_value_t = COMMIT_EVERY.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    commit_every: u64,
    #[command(flatten)]
    roots: RootArgs,
}

#[derive(Debug, Clone, Default, Args)]
struct ServeArgs {
    /// Serve MCP over streamable HTTP at http://HOST:PORT/mcp instead of stdio (tokens:
    /// MANVAULT_HTTP_TOKEN or MANVAULT_HTTP_TOKENS_FILE; without one, loopback only)
    #[arg(long, value_name = "HOST:PORT")]
    http: Option<String>,
    #[command(flatten)]
    roots: RootArgs,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    /// Print the full tool list (names, descriptions, input and output schemas) exactly
    /// as tools/list serves it
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool to call (see `manvault tools`); without it, calls are read one a line
    /// from --script or stdin
    #[arg(value_name = "TOOL")]
    tool: Option<String>,
    /// The tool's arguments as one JSON object
    #[arg(value_name = "JSON", default_value = "{}", requires = "tool")]
    arguments: String,
    /// Run the calls in FILE, one JSON object a line (`-`: stdin)
    #[arg(long, value_name = "FILE", conflicts_with = "tool")]
    script: Option<PathBuf>,
    #[command(flatten)]
    roots: RootArgs,
}

/// Parses the command line and runs the subcommand.
pub fn main() -> ExitCode {
    crate::allocator::return_freed_memory();
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Tools(args) => tools(&args),
        Command::Serve(args) => with_config(&args.roots, |config| serve(config, &args)),
        Command::Doctor(roots) => doctor::run(Config::from_env(&roots.flags())),
        Command::Call(args) => with_config(&args.roots, |config| call(config, &args)),
        Command::Stats(roots) => with_config(&roots, |config| stats(&config)),
        Command::Index(args) => with_config(&args.roots, |config| {
            let options = index::Options {
                commit_every: Duration::from_secs(args.commit_every),
            };
            prepare_workspace(&config).map_or_else(|code| code, |()| index::run(&config, &options))
        }),
    }
}

/// Loads the settings and starts logging, then runs `run`; a bad setting is one line and
/// exit 2.
fn with_config(roots: &RootArgs, run: impl FnOnce(Config) -> ExitCode) -> ExitCode {
    match Config::from_env(&roots.flags()) {
        Ok(config) => {
            crate::logging::init(config.log_level, config.log_format);
            run(config)
        }
        Err(message) => usage_error(&message),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("manvault: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// Checks the workspace and creates the vault if it may ([`workspace::prepare`]); the
/// problems are printed, one a line.
fn prepare_workspace(config: &Config) -> Result<(), ExitCode> {
    workspace::prepare(config).map_err(|problems| {
        for problem in problems {
            eprintln!("manvault: {problem}");
        }
        eprintln!("manvault: nothing was started; `manvault doctor` checks every setting");
        ExitCode::from(EXIT_USAGE)
    })
}

fn tools(args: &ToolsArgs) -> ExitCode {
    if args.json {
        // The result of `tools/list` (without the `resultType` envelope field that only
        // the newest protocol version adds).
        println!(
            "{}",
            pretty(&serde_json::json!({ "tools": served_tools() }))
        );
    } else {
        for spec in TOOLS {
            println!("{:<22} {}", spec.name, spec.title);
        }
    }
    ExitCode::SUCCESS
}

fn serve(config: Config, args: &ServeArgs) -> ExitCode {
    // HTTP settings first: a bad one is a start error like any other setting.
    let http = match args
        .http
        .as_deref()
        .map(|bind| HttpConfig::from_env().map(|s| (bind, s)))
    {
        None => None,
        Some(Ok(http)) => Some(http),
        Some(Err(message)) => return usage_error(&message),
    };
    if let Err(code) = prepare_workspace(&config) {
        return code;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let app = Arc::new(App::new(config));
    prepare_search_in_background(Arc::clone(&app));
    index_in_background(Arc::clone(&app));
    let server = McpServer::new(Arc::clone(&app));
    let served = match http {
        None => runtime
            .block_on(server.serve_stdio())
            .map_err(|error| (error.to_string(), ExitCode::FAILURE)),
        Some((bind, settings)) => runtime
            .block_on(http::serve(server, bind, settings))
            .map_err(|message| (message, ExitCode::from(EXIT_USAGE))),
    };
    // A call cut by the shutdown grace period must not hold the exit: writes are atomic.
    // A second SIGINT/SIGTERM still ends the process at once from here on: the signals are
    // watched on a thread of their own, not on this runtime (`server::ShutdownSignals`).
    runtime.shutdown_timeout(Duration::from_secs(1));
    stop_watching(app);
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err((message, code)) => {
            eprintln!("manvault: {message}");
            code
        }
    }
}

/// How long a server's end waits for a build of the manual index in progress before it
/// exits without stopping the change watch (the next start's sweep removes the folder).
const WATCH_STOP_WAIT: Duration = Duration::from_secs(2);

/// Stops the manual index's change watch at a server's end (stdin ended, or SIGINT /
/// SIGTERM), so its barrier folder does not outlive the process, then drops the server's
/// hold on `app` here, before the exit: when no background thread holds it any more, its
/// drop writes what is due at a server's end (the open traces' usage statistics, the
/// memory worker's stop), as a server's `App` always is dropped.
fn stop_watching(app: Arc<App>) {
    let (stopped, done) = std::sync::mpsc::channel();
    let watched = Arc::clone(&app);
    std::thread::spawn(move || {
        watched.stop_watching();
        // Not the last hold: the drop, if it is due, happens on the calling thread.
        drop(watched);
        let _ = stopped.send(());
    });
    if done.recv_timeout(WATCH_STOP_WAIT).is_err() {
        tracing::warn!(
            "the manual index is still being built; its change watch's folder is left to the next start"
        );
    }
    drop(app);
}

/// Reads what the first search needs from the cache and the dictionaries on a thread of
/// its own, while the manual index is built on another (issue 16: a server's first
/// answer waited for both in turn).
fn prepare_search_in_background(app: Arc<App>) {
    std::thread::Builder::new()
        .name("search-prepare".into())
        .spawn(move || app.prepare_search())
        .expect("spawn the search preparation thread");
}

/// Builds the manual index on its own thread, so `initialize` is answered at once (a
/// tool call that needs the index waits for it), logs the one line that says the server
/// is ready and what it found, then syncs the search's corpus with the index it built
/// (`App::sync_search`): the first `manual_find` reuses it.
fn index_in_background(app: Arc<App>) {
    std::thread::Builder::new()
        .name("manual-index".into())
        .spawn(move || {
            let log = ProgressLog::start();
            let built = app.with_manuals(&CallContext::local(), |index| Ok(totals(index)));
            let elapsed_ms = log.elapsed().as_millis();
            let roots = format!(
                "manuals {}, vault {}",
                workspace::shown_path(&app.config.manuals_root),
                workspace::shown_path(&app.config.vault_root)
            );
            match built {
                Ok(totals) => {
                    tracing::info!(
                        "manvault {} ready: {} indexed in {elapsed_ms} ms; {roots}",
                        env!("CARGO_PKG_VERSION"),
                        totals.describe()
                    );
                    app.sync_search();
                }
                Err(error) => tracing::error!(
                    "manvault {}: the manuals cannot be indexed ({}); {roots}",
                    env!("CARGO_PKG_VERSION"),
                    error.message
                ),
            }
        })
        .expect("spawn the index thread");
}

/// What the index holds: manuals, files, sections and bytes of text.
fn totals(index: &ManualIndex) -> IndexProgress {
    let files = index.files(None).unwrap_or_default();
    IndexProgress {
        manuals: index.manual_ids().count() as u64,
        files_found: files.len() as u64,
        files: files.len() as u64,
        sections: files.iter().map(|f| f.file.nodes().len() as u64).sum(),
        bytes: files.iter().map(|f| f.file.text_len() as u64).sum(),
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

fn call(config: Config, args: &CallArgs) -> ExitCode {
    if let Err(code) = prepare_workspace(&config) {
        return code;
    }
    let app = App::new(config);
    let code = match (&args.tool, &args.script) {
        (Some(tool), _) => call_once(&app, tool, &args.arguments),
        (None, Some(path)) if path.as_os_str() != "-" => match std::fs::File::open(path) {
            Ok(file) => script::run(&app, std::io::BufReader::new(file)),
            Err(error) => usage_error(&format!("--script {}: {error}", path.display())),
        },
        (None, _) => {
            if std::io::stdin().is_terminal() {
                eprintln!(
                    "manvault: reading calls from stdin, one JSON object a line \
                     (Ctrl-D ends; see `manvault call --help`)"
                );
            }
            script::run(&app, std::io::stdin().lock())
        }
    };
    app.end_process();
    code
}

/// One call: the answer (or the error body) pretty-printed on stdout; exit 1 on an error.
fn call_once(app: &App, tool: &str, arguments: &str) -> ExitCode {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(value) => value,
        Err(error) => return usage_error(&format!("the arguments are not JSON: {error}")),
    };
    match app.call(tool, arguments) {
        None => usage_error(&format!("no tool named {tool:?} (see `manvault tools`)")),
        Some(Ok(value)) => {
            println!("{}", pretty(&value));
            ExitCode::SUCCESS
        }
        Some(Err(error)) => {
            let body = error.to_json();
            println!("{}", pretty(&body));
            if script::is_lost_trace(&body) {
                eprintln!("manvault: {}", help::LOST_TRACE);
            }
            ExitCode::from(1)
        }
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON value")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_bare_manvault_serves_with_the_roots_given() {
        let cli = Cli::try_parse_from(["manvault", "--workspace", "w"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.roots.workspace, Some(PathBuf::from("w")));
        let cli = Cli::try_parse_from(["manvault", "serve", "--vault=v", "--http", "127.0.0.1:0"])
            .unwrap();
        let Some(Command::Serve(args)) = cli.command else {
            panic!("serve")
        };
        assert_eq!(args.roots.vault, Some(PathBuf::from("v")));
        assert_eq!(args.http.as_deref(), Some("127.0.0.1:0"));
    }

    #[test]
    fn call_takes_a_tool_with_json_or_a_script_but_not_both() {
        let cli = Cli::try_parse_from(["manvault", "call", "manual_list"]).unwrap();
        let Some(Command::Call(args)) = cli.command else {
            panic!("call")
        };
        assert_eq!(
            (args.tool.as_deref(), args.arguments.as_str()),
            (Some("manual_list"), "{}")
        );
        assert!(Cli::try_parse_from(["manvault", "call", "--script", "f"]).is_ok());
        assert!(Cli::try_parse_from(["manvault", "call", "manual_list", "--script", "f"]).is_err());
    }
}
