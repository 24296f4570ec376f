//! The workspace as the operator configured it, checked before anything is served.
//!
//! A mistyped `--workspace` used to start anyway, create `<typo>/vault/` and answer every
//! manual call with an error that could not name the path. Now `serve` and `call` run
//! [`check`] first and refuse to start on a [`Severity::Problem`] with one line per
//! problem naming the setting and the path; `manvault doctor` prints the same checks.
//!
//! The vault is the one folder the server creates, and only here ([`prepare`]): when it
//! is missing and its parent folder exists, with a log line saying so. A missing parent
//! means a mistyped path, which must not be silently created.
//!
//! The paths in these lines are the operator's own settings shown on the operator's
//! terminal; tool answers never carry them.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use rustix::fs::Access;

use crate::config::Config;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Ok,
    /// The server runs, but something is lost (synonyms, cached data, statistics).
    Warn,
    /// The server cannot do its job: `serve` and `call` refuse to start.
    Problem,
}

impl Severity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warn => "warn",
            Severity::Problem => "problem",
        }
    }
}

/// One finding about one setting's path.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub setting: &'static str,
    pub path: PathBuf,
    pub severity: Severity,
    /// What was found, without the path (e.g. "does not exist").
    pub finding: String,
}

impl Check {
    fn new(
        setting: &'static str,
        path: &Path,
        severity: Severity,
        finding: impl Into<String>,
    ) -> Check {
        Check {
            setting,
            path: path.to_path_buf(),
            severity,
            finding: finding.into(),
        }
    }

    /// `MANUALS_ROOT typo/manuals (= /home/me/typo/manuals): does not exist ...`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} {}: {}",
            self.setting,
            shown_path(&self.path),
            self.finding
        )
    }
}

/// `path` as configured, and where it leads when relative: clients start servers in a
/// folder of their choosing, which is the usual reason a relative root is not found.
pub(crate) fn shown_path(path: &Path) -> String {
    match std::path::absolute(path) {
        Ok(absolute) if path.is_relative() => {
            format!("{} (= {})", path.display(), absolute.display())
        }
        _ => path.display().to_string(),
    }
}

/// The checks of every path setting, without reading any file's content.
pub(crate) fn check(config: &Config) -> Vec<Check> {
    vec![
        manuals_root(&config.manuals_root),
        vault_root(&config.vault_root),
        synonyms(&config.synonyms_path),
        cache_dir(config),
        statistics(config),
    ]
}

/// What `serve` and `call` do before anything else: refuse on a problem (the lines to
/// print), log the warnings, and create the vault when it is missing and may be.
pub(crate) fn prepare(config: &Config) -> Result<(), Vec<String>> {
    let checks = check(config);
    let problems: Vec<String> = checks
        .iter()
        .filter(|check| check.severity == Severity::Problem)
        .map(Check::describe)
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    for warning in checks.iter().filter(|c| c.severity == Severity::Warn) {
        tracing::warn!("{}", warning.describe());
    }
    create_vault_if_missing(&config.vault_root).map_err(|problem| vec![problem])
}

/// The one place the vault folder is created: only when missing and only inside an
/// existing folder (`create_dir`, not `create_dir_all`), with a log line.
fn create_vault_if_missing(vault_root: &Path) -> Result<(), String> {
    match std::fs::create_dir(vault_root) {
        Ok(()) => {
            tracing::info!("created the vault folder {}", shown_path(vault_root));
            Ok(())
        }
        Err(error) if error.kind() == ErrorKind::AlreadyExists && vault_root.is_dir() => Ok(()),
        Err(error) => Err(format!(
            "VAULT_ROOT {}: cannot be created: {error}",
            shown_path(vault_root)
        )),
    }
}

/// What is at a path, links followed (the roots are operator configuration).
enum Found {
    Missing,
    Folder,
    File,
    Other,
    Unreadable(std::io::Error),
}

fn found(path: &Path) -> Found {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Found::Folder,
        Ok(meta) if meta.is_file() => Found::File,
        Ok(_) => Found::Other,
        Err(error) if error.kind() == ErrorKind::NotFound => Found::Missing,
        Err(error) => Found::Unreadable(error),
    }
}

fn allowed(path: &Path, access: Access) -> bool {
    rustix::fs::access(path, access).is_ok()
}

const LIST: Access = Access::READ_OK.union(Access::EXEC_OK);
const WRITE_IN: Access = Access::WRITE_OK.union(Access::EXEC_OK);

fn manuals_root(path: &Path) -> Check {
    let (severity, finding) = match found(path) {
        Found::Folder if allowed(path, LIST) => (Severity::Ok, "a readable folder".to_string()),
        Found::Folder => (
            Severity::Problem,
            "cannot be listed (no read permission)".into(),
        ),
        Found::Missing => (
            Severity::Problem,
            "does not exist; point --workspace (WORKSPACE_ROOT) at a folder holding \
             manuals/, or --manuals (MANUALS_ROOT) at the manuals folder"
                .into(),
        ),
        Found::File | Found::Other => (Severity::Problem, "is not a folder".into()),
        Found::Unreadable(error) => (Severity::Problem, format!("cannot be read: {error}")),
    };
    Check::new("MANUALS_ROOT", path, severity, finding)
}

/// The folder `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn vault_root(path: &Path) -> Check {
    let (severity, finding) = match found(path) {
        Found::Folder if allowed(path, WRITE_IN) => (Severity::Ok, "a writable folder".to_string()),
        Found::Folder => (
            Severity::Problem,
            "is not writable (no write permission)".into(),
        ),
        Found::Missing => {
            let parent = parent_of(path);
            match found(parent) {
                Found::Folder if allowed(parent, WRITE_IN) => {
                    (Severity::Ok, "does not exist yet; created at start".into())
                }
                Found::Folder => (
                    Severity::Problem,
                    "does not exist, and its parent folder is not writable".into(),
                ),
                _ => (
                    Severity::Problem,
                    "does not exist, nor does its parent folder; the vault is created only \
                     inside an existing folder, so a mistyped path is not created"
                        .into(),
                ),
            }
        }
        Found::File | Found::Other => (Severity::Problem, "is not a folder".into()),
        Found::Unreadable(error) => (Severity::Problem, format!("cannot be read: {error}")),
    };
    Check::new("VAULT_ROOT", path, severity, finding)
}

fn synonyms(path: &Path) -> Check {
    let (severity, finding) = match found(path) {
        Found::Missing => (
            Severity::Ok,
            "not present (missing is fine: the builtin table is used)".to_string(),
        ),
        Found::File if allowed(path, Access::READ_OK) => (Severity::Ok, "a readable file".into()),
        Found::File => (
            Severity::Warn,
            "cannot be read (no read permission); only the builtin table is used".into(),
        ),
        Found::Folder | Found::Other => (
            Severity::Warn,
            "is not a file; only the builtin table is used".into(),
        ),
        Found::Unreadable(error) => (
            Severity::Warn,
            format!("cannot be read: {error}; only the builtin table is used"),
        ),
    };
    Check::new("SYNONYMS_PATH", path, severity, finding)
}

/// The nearest folder that exists at or above `path`, and whether anything can be created
/// in it (then the missing rest can be).
fn creatable_below(path: &Path) -> bool {
    path.ancestors()
        .map(|ancestor| {
            if ancestor.as_os_str().is_empty() {
                Path::new(".")
            } else {
                ancestor
            }
        })
        .find(|ancestor| !matches!(found(ancestor), Found::Missing))
        .is_some_and(|existing| {
            matches!(found(existing), Found::Folder) && allowed(existing, WRITE_IN)
        })
}

fn cache_dir(config: &Config) -> Check {
    let path = &config.cache_dir;
    let lost = "derived data is rebuilt at every start";
    let (severity, finding) = match found(path) {
        Found::Folder if allowed(path, WRITE_IN) => (Severity::Ok, "a writable folder".to_string()),
        Found::Folder => (Severity::Warn, format!("is not writable; {lost}")),
        Found::Missing if creatable_below(path) => {
            (Severity::Ok, "does not exist yet; created on demand".into())
        }
        Found::Missing => (
            Severity::Warn,
            format!("does not exist and cannot be created; {lost}"),
        ),
        Found::File | Found::Other => (Severity::Warn, format!("is not a folder; {lost}")),
        Found::Unreadable(error) => (Severity::Warn, format!("cannot be read: {error}; {lost}")),
    };
    Check::new("CACHE_DIR", path, severity, finding)
}

fn statistics(config: &Config) -> Check {
    let path = &config.adaptive_stats_path;
    let lost = "statistics are kept in memory only";
    // Inside the vault the missing folders are created by the vault's own walk; elsewhere
    // the file's folder must exist (see `adaptive::store`).
    let can_create = if path.starts_with(&config.vault_root) {
        creatable_below(path)
    } else {
        let parent = parent_of(path);
        matches!(found(parent), Found::Folder) && allowed(parent, WRITE_IN)
    };
    let (severity, finding) = match found(path) {
        Found::File if allowed(path, Access::READ_OK.union(Access::WRITE_OK)) => {
            (Severity::Ok, "a readable, writable file".to_string())
        }
        Found::File => (
            Severity::Warn,
            format!("is not readable and writable; {lost}"),
        ),
        Found::Missing if can_create => (
            Severity::Ok,
            "does not exist yet; created by the first search".into(),
        ),
        Found::Missing => (
            Severity::Warn,
            format!("does not exist and its folder cannot be written; {lost}"),
        ),
        Found::Folder | Found::Other => (Severity::Warn, format!("is not a file; {lost}")),
        Found::Unreadable(error) => (Severity::Warn, format!("cannot be read: {error}; {lost}")),
    };
    Check::new("ADAPTIVE_STATS_PATH", path, severity, finding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RootFlags;

    fn config(workspace: &Path) -> Config {
        let flags = RootFlags {
            workspace: Some(workspace.to_path_buf()),
            ..RootFlags::default()
        };
        Config::load(&|_| None, &flags).unwrap()
    }

    fn severity_of(checks: &[Check], setting: &str) -> Severity {
        checks
            .iter()
            .find(|check| check.setting == setting)
            .unwrap()
            .severity
    }

    #[test]
    fn a_fresh_workspace_with_manuals_is_fine_and_gets_its_vault() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("manuals")).unwrap();
        let config = config(temp.path());
        let checks = check(&config);
        assert!(
            checks.iter().all(|c| c.severity == Severity::Ok),
            "{checks:#?}"
        );
        prepare(&config).unwrap();
        assert!(temp.path().join("vault").is_dir());
    }

    #[test]
    fn a_mistyped_workspace_is_refused_and_nothing_is_created() {
        let temp = tempfile::tempdir().unwrap();
        let typo = temp.path().join("typo");
        let problems = prepare(&config(&typo)).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("MANUALS_ROOT"), "{problems:?}");
        assert!(problems[0].contains(&*typo.to_string_lossy()));
        assert!(problems[1].starts_with("VAULT_ROOT"), "{problems:?}");
        assert!(!typo.exists());
    }

    #[test]
    fn files_in_place_of_folders_are_named() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(temp.path().join("manuals"), "").unwrap();
        std::fs::write(temp.path().join("vault"), "").unwrap();
        std::fs::create_dir(temp.path().join("synonyms.txt")).unwrap();
        let checks = check(&config(temp.path()));
        assert_eq!(severity_of(&checks, "MANUALS_ROOT"), Severity::Problem);
        assert_eq!(severity_of(&checks, "VAULT_ROOT"), Severity::Problem);
        assert_eq!(severity_of(&checks, "SYNONYMS_PATH"), Severity::Warn);
        // The cache and statistics would live under the vault, which is a file.
        assert_eq!(severity_of(&checks, "CACHE_DIR"), Severity::Warn);
        assert_eq!(severity_of(&checks, "ADAPTIVE_STATS_PATH"), Severity::Warn);
    }

    #[test]
    fn a_dangling_link_in_place_of_the_vault_is_not_taken_for_one() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("manuals")).unwrap();
        std::os::unix::fs::symlink(temp.path().join("gone"), temp.path().join("vault")).unwrap();
        let problems = prepare(&config(temp.path())).unwrap_err();
        assert!(problems[0].starts_with("VAULT_ROOT"), "{problems:?}");
        assert!(!temp.path().join("gone").exists());
    }

    #[test]
    fn relative_paths_show_where_they_lead() {
        let shown = shown_path(Path::new("some/where"));
        assert!(shown.starts_with("some/where (= /"), "{shown}");
        assert_eq!(shown_path(Path::new("/abs")), "/abs");
    }
}
