//! What every `manvault-bench` subcommand needs: a scratch folder, tool calls through
//! `App::call` as a client would make them, peak memory, and the ripgrep to compare with.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::Value;

/// A folder under the system's temporary directory, removed when dropped (also on a
/// panic). The bench is a binary, so the `tempfile` dev-dependency is not available.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(purpose: &str) -> Scratch {
        let path =
            std::env::temp_dir().join(format!("manvault-bench-{purpose}-{}", std::process::id()));
        fs::create_dir_all(&path).expect("temporary folder");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The answer of a successful call; a failure ends the bench.
/// Says what is wrong with a subcommand's arguments and exits 2 (a usage error, beside
/// 1 for a bench that ran and failed).
pub fn usage_error(subcommand: &str, message: &str) -> ExitCode {
    eprintln!("manvault-bench {subcommand}: {message}");
    ExitCode::from(2)
}

pub fn call(app: &App, tool: &str, arguments: Value) -> Value {
    match app.call(tool, arguments).expect("a listed tool") {
        Ok(answer) => answer,
        Err(error) => panic!("{tool} failed: {error}"),
    }
}

/// Resets `VmHWM` to the current resident size (Linux 4.0 and later).
pub fn reset_peak_memory() {
    if fs::write("/proc/self/clear_refs", "5").is_err() {
        eprintln!("could not reset the peak memory counter; peaks include earlier phases");
    }
}

/// `VmHWM` of this process, in bytes.
pub fn peak_memory() -> u64 {
    memory_status("VmHWM")
}

/// The field `name` of this process's `/proc/self/status` (in kB there), in bytes.
pub fn memory_status(name: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// `rg --version`'s first line, or `None` when ripgrep is not installed.
pub fn ripgrep_version() -> Option<String> {
    let output = Command::new("rg").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    Some(text.lines().next()?.to_string())
}

/// How long `rg -j1 -F -c LITERAL ROOT` takes for each of `literals` (a fresh process each,
/// one thread: the baseline the search benches compare with); `None` without ripgrep.
pub fn ripgrep_times<'a>(
    root: &Path,
    literals: impl Iterator<Item = &'a str>,
) -> Option<Vec<Duration>> {
    ripgrep_version()?;
    let times = literals
        .map(|literal| {
            let started = std::time::Instant::now();
            Command::new("rg")
                .args(["-j1", "-F", "-c", "--", literal])
                .arg(root)
                .output()
                .expect("rg runs");
            started.elapsed()
        })
        .collect();
    Some(times)
}

/// The `p`-th percentile of `times` (sorts them).
pub fn percentile(times: &mut [Duration], p: usize) -> Duration {
    times.sort_unstable();
    times[(times.len() * p / 100).min(times.len() - 1)]
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// An `App` over `manuals`, with its workspace (and vault, unless given) in `workspace`,
/// logging errors only; `settings` are extra environment settings (name, value).
pub fn app_for(
    manuals: &Path,
    workspace: &Path,
    vault: Option<&Path>,
    settings: &[(&str, &str)],
) -> App {
    App::new(config_for(manuals, workspace, vault, settings))
}

/// The configuration [`app_for`] starts its `App` with.
pub fn config_for(
    manuals: &Path,
    workspace: &Path,
    vault: Option<&Path>,
    settings: &[(&str, &str)],
) -> Config {
    let flags = RootFlags {
        workspace: Some(workspace.to_path_buf()),
        manuals: Some(manuals.to_path_buf()),
        vault: vault.map(Path::to_path_buf),
    };
    let lookup = |name: &str| {
        if name == "LOG_LEVEL" {
            return Some("error".to_owned());
        }
        settings
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    };
    Config::load(&lookup, &flags).expect("bench configuration")
}

/// Today's date (UTC), for the heading of a report.
pub fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    manvault::clock::date(seconds)
}

/// Runs a bench's Python baseline `script` with `--bench-dir bench --runs FILE` and
/// returns the per-query JSON lines it wrote.
pub fn baseline_runs(script: &Path, bench: &Path) -> Result<String, String> {
    let scratch = Scratch::new("baseline");
    let runs = scratch.0.join("runs.jsonl");
    let output = Command::new("python3")
        .arg(script)
        .arg("--bench-dir")
        .arg(bench)
        .arg("--runs")
        .arg(&runs)
        .output()
        .map_err(|error| error.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    std::fs::read_to_string(&runs).map_err(|error| error.to_string())
}
