//! `manvault doctor`: the start-up checks of `workspace::check`, then what only reading
//! shows (the manuals indexed, the synonyms parsed, the statistics counted), one line a
//! finding on stdout. Exit 1 on any problem or warning, so a script or a person sees at
//! once whether the workspace is as intended. Writes nothing.

use std::process::ExitCode;
use std::time::Instant;

use crate::adaptive::StatsFile;
use crate::config::{Config, LogLevel};
use crate::manual::ManualIndex;
use crate::text::normalize::normalize_str;
use crate::text::synonyms::Synonyms;
use crate::workspace::{self, Severity};

/// Files with a problem named in the manuals line; the log names the rest.
const PROBLEM_FILES_SHOWN: usize = 5;

pub(super) fn run(config: Result<Config, String>) -> ExitCode {
    println!("manvault {} doctor", env!("CARGO_PKG_VERSION"));
    let config = match config {
        Ok(config) => config,
        Err(message) => {
            report(Severity::Problem, "settings", &message);
            return ExitCode::from(1);
        }
    };
    // Warnings about single files (a manual that does not parse, a bad statistics line)
    // go to the log; progress lines would only repeat the report.
    let level = match config.log_level {
        LogLevel::Debug => LogLevel::Debug,
        LogLevel::Error => LogLevel::Error,
        LogLevel::Warn | LogLevel::Info => LogLevel::Warn,
    };
    crate::logging::init(level, config.log_format);
    report(Severity::Ok, "settings", "every variable accepted");
    let mut worst = Severity::Ok;
    let checks = workspace::check(&config);
    for check in &checks {
        report(check.severity, check.setting, &check.finding);
        println!("{:<30}{}", "", workspace::shown_path(&check.path));
        worst = worst.max(check.severity);
    }
    let usable = |setting: &str| {
        checks
            .iter()
            .any(|check| check.setting == setting && check.severity == Severity::Ok)
    };
    if usable("MANUALS_ROOT") {
        worst = worst.max(manuals(&config));
    }
    if usable("SYNONYMS_PATH") {
        worst = worst.max(synonyms(&config));
    }
    if usable("ADAPTIVE_STATS_PATH") && config.adaptive_stats_path.is_file() {
        worst = worst.max(statistics(&config));
    }
    println!(
        "{}",
        match worst {
            Severity::Ok => "no problems found",
            Severity::Warn => "warnings found: the server runs, with what they say is lost",
            Severity::Problem => "problems found: serve and call refuse to start",
        }
    );
    match worst {
        Severity::Ok => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn report(severity: Severity, what: &str, finding: &str) {
    println!("{:<8} {what:<20} {finding}", severity.as_str());
}

/// Indexes the manuals as the server does at start.
fn manuals(config: &Config) -> Severity {
    let started = Instant::now();
    let index = match ManualIndex::build(&config.manuals_root) {
        Ok(index) => index,
        Err(error) => {
            report(
                Severity::Problem,
                "manuals",
                &format!("cannot be indexed: {error}"),
            );
            return Severity::Problem;
        }
    };
    let elapsed_ms = started.elapsed().as_millis();
    let totals = super::totals(&index);
    let files = index.files(None).unwrap_or_default();
    let with_problems: Vec<String> = files
        .iter()
        .filter(|listed| listed.file.problem().is_some())
        .map(|listed| format!("{}/{}", listed.manual_id, listed.file.path()))
        .collect();
    let found = format!("{} indexed in {elapsed_ms} ms", totals.describe());
    if totals.manuals == 0 {
        report(
            Severity::Warn,
            "manuals",
            "no manual found: put each manual in its own sub-folder of MANUALS_ROOT",
        );
        Severity::Warn
    } else if with_problems.is_empty() {
        report(Severity::Ok, "manuals", &found);
        Severity::Ok
    } else {
        let shown: Vec<&str> = with_problems
            .iter()
            .take(PROBLEM_FILES_SHOWN)
            .map(String::as_str)
            .collect();
        report(
            Severity::Warn,
            "manuals",
            &format!(
                "{found}; {} files could not be read as sections (see the log): {}",
                with_problems.len(),
                shown.join(", ")
            ),
        );
        Severity::Warn
    }
}

/// Parses the synonyms file with the builtin table, as the first search does.
fn synonyms(config: &Config) -> Severity {
    let (synonyms, warnings) =
        Synonyms::load(Some(std::fs::read(&config.synonyms_path)), &normalize_str);
    let groups = synonyms.group_count();
    if warnings.is_empty() {
        report(
            Severity::Ok,
            "synonyms",
            &format!("{groups} groups loaded (builtin and yours)"),
        );
        return Severity::Ok;
    }
    report(
        Severity::Warn,
        "synonyms",
        &format!(
            "{groups} groups loaded; {} lines skipped, first: {}",
            warnings.len(),
            warnings[0]
        ),
    );
    Severity::Warn
}

/// Counts the statistics records (unreadable lines are warned about in the log).
fn statistics(config: &Config) -> Severity {
    match StatsFile::locate(config) {
        Ok(mut file) => {
            let records = file.load().len();
            report(
                Severity::Ok,
                "statistics",
                &format!("records: {records} (`manvault stats` reports them)"),
            );
            Severity::Ok
        }
        Err(message) => {
            report(Severity::Warn, "statistics", &message);
            Severity::Warn
        }
    }
}
