//! What every `manvault-bench` subcommand needs: a scratch folder, tool calls through
//! `App::call` as a client would make them, peak memory, and the ripgrep to compare with.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use manvault::app::App;
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
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// `rg --version`'s first line, or `None` when ripgrep is not installed.
pub fn ripgrep_version() -> Option<String> {
    let output = Command::new("rg").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    Some(text.lines().next()?.to_string())
}

/// The `p`-th percentile of `times` (sorts them).
pub fn percentile(times: &mut [Duration], p: usize) -> Duration {
    times.sort_unstable();
    times[(times.len() * p / 100).min(times.len() - 1)]
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
