//! The vault's policy rules, decided on a path's normalised components before any file
//! is touched (spec_v2 §4, requirements §2, DECISIONS.md):
//!
//! - `.system` as any component, in any letter case, is internal: every tool refuses it
//!   and no listing or search shows it.
//! - `artifacts/daily/` is append-only: only `vault_create` of `YYYY-MM-DD.md` (a real
//!   calendar date, directly in that folder) and appends. Both components are compared
//!   casefolded, so `ARTIFACTS/Daily/..` cannot slip past as "not the daily folder"; a
//!   spelling other than the canonical one is then refused outright.
//! - Under `artifacts/` only `.md` and `.json` files may be written.
//!
//! `.` components and separators are already normalised away by `paths::parse_relative`,
//! and symlinks are refused by `paths::Root`, so comparing components here is the same
//! as comparing the resolved location.

use serde_json::json;

use crate::clock::is_calendar_date;
use crate::config::ARTIFACTS_DIR;
use crate::error::{ErrorCode, ToolError, ToolResult};

const SYSTEM_DIR: &str = ".system";
const DAILY_DIR: &str = "daily";

/// What a tool is about to do to a vault path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Create,
    Overwrite,
    Append,
    Replace,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Create => "create",
            Access::Overwrite => "overwrite",
            Access::Append => "append",
            Access::Replace => "replace",
        }
    }
}

fn forbidden(rule: &str, message: String) -> ToolError {
    ToolError::new(ErrorCode::Forbidden, message).with_details(json!({ "rule": rule }))
}

/// True when any component is `.system` in any letter case.
pub(crate) fn is_system(components: &[&str]) -> bool {
    components.iter().any(|c| c.to_lowercase() == SYSTEM_DIR)
}

/// True when the path lies under `artifacts/`, whatever its letter case.
pub(crate) fn is_artifact(components: &[&str]) -> bool {
    components
        .first()
        .is_some_and(|c| c.to_lowercase() == ARTIFACTS_DIR)
}

/// True when the path lies in the daily-log folder, whatever its spelling.
pub(crate) fn is_daily(components: &[&str]) -> bool {
    is_artifact(components)
        && components
            .get(1)
            .is_some_and(|c| c.to_lowercase() == DAILY_DIR)
}

/// The extension of a file name in lower case, without the dot; `None` when the name has
/// none (a leading dot, as in `.env`, starts a name rather than an extension).
pub(crate) fn extension_of(name: &str) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_lowercase())
}

fn extension(components: &[&str]) -> Option<String> {
    extension_of(components.last()?)
}

/// True for a `.json` file under `artifacts/`, which must stay valid JSON.
pub(crate) fn requires_valid_json(components: &[&str]) -> bool {
    is_artifact(components) && extension(components).as_deref() == Some("json")
}

/// `YYYY-MM-DD.md` with a real calendar date.
pub(crate) fn is_daily_file_name(name: &str) -> bool {
    let Some(date) = name.strip_suffix(".md") else {
        return false;
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return false;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(year, 4) && digits(month, 2) && digits(day, 2)) {
        return false;
    }
    is_calendar_date(
        year.parse().unwrap_or(0),
        month.parse().unwrap_or(0),
        day.parse().unwrap_or(0),
    )
}

/// Checks `access` to the vault path made of `components`.
pub(crate) fn check(components: &[&str], access: Access) -> ToolResult<()> {
    if is_system(components) {
        return Err(forbidden(
            "system_folder",
            ".system/ is internal to the server".into(),
        ));
    }
    if access == Access::Read {
        return Ok(());
    }
    if is_daily(components) {
        if components[0] != ARTIFACTS_DIR || components[1] != DAILY_DIR {
            return Err(forbidden(
                "daily_spelling",
                "the daily log folder is spelled artifacts/daily/".into(),
            ));
        }
        if components.len() != 3 || !is_daily_file_name(components[2]) {
            return Err(forbidden(
                "daily_name",
                "daily logs are artifacts/daily/YYYY-MM-DD.md with a real calendar date".into(),
            ));
        }
        if !matches!(access, Access::Create | Access::Append) {
            return Err(forbidden(
                "daily_append_only",
                format!(
                    "daily logs are append-only: {} is refused; use vault_write with mode append",
                    access.name()
                ),
            ));
        }
    }
    if is_artifact(components) && !matches!(extension(components).as_deref(), Some("md" | "json")) {
        return Err(forbidden(
            "artifact_extension",
            "only .md and .json files may be written under artifacts/".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(path: &str, access: Access) -> Result<(), String> {
        let components: Vec<&str> = path.split('/').collect();
        check(&components, access)
            .map_err(|e| e.details.unwrap()["rule"].as_str().unwrap().to_string())
    }

    #[test]
    fn system_folder_is_refused_in_any_case_and_place() {
        for path in [
            ".system/x",
            ".SYSTEM/stats.jsonl",
            "notes/.System/a.md",
            "artifacts/.system",
        ] {
            assert_eq!(
                verdict(path, Access::Read),
                Err("system_folder".into()),
                "{path}"
            );
        }
    }

    #[test]
    fn daily_folder_is_append_only() {
        assert_eq!(
            verdict("artifacts/daily/2026-11-25.md", Access::Create),
            Ok(())
        );
        assert_eq!(
            verdict("artifacts/daily/2026-11-25.md", Access::Append),
            Ok(())
        );
        assert_eq!(
            verdict("artifacts/daily/2026-11-25.md", Access::Read),
            Ok(())
        );
        for access in [Access::Overwrite, Access::Replace] {
            assert_eq!(
                verdict("artifacts/daily/2026-11-25.md", access),
                Err("daily_append_only".into())
            );
        }
    }

    #[test]
    fn daily_names_are_real_dates_directly_in_the_folder() {
        for path in [
            "artifacts/daily/2026-02-30.md",
            "artifacts/daily/2026-13-01.md",
            "artifacts/daily/26-11-25.md",
            "artifacts/daily/2026-11-25.txt",
            "artifacts/daily/notes.md",
            "artifacts/daily/sub/2026-11-25.md",
        ] {
            assert_eq!(
                verdict(path, Access::Create),
                Err("daily_name".into()),
                "{path}"
            );
        }
        assert_eq!(
            verdict("artifacts/daily/2024-02-29.md", Access::Create),
            Ok(())
        );
    }

    #[test]
    fn other_spellings_of_daily_are_refused() {
        for path in [
            "ARTIFACTS/Daily/2026-11-25.md",
            "artifacts/DAILY/2026-11-25.md",
        ] {
            assert_eq!(
                verdict(path, Access::Overwrite),
                Err("daily_spelling".into()),
                "{path}"
            );
            assert_eq!(
                verdict(path, Access::Create),
                Err("daily_spelling".into()),
                "{path}"
            );
        }
    }

    #[test]
    fn artifacts_take_markdown_and_json_only() {
        assert_eq!(verdict("artifacts/flow.json", Access::Create), Ok(()));
        assert_eq!(verdict("artifacts/sub/flow.MD", Access::Overwrite), Ok(()));
        for path in ["artifacts/run.sh", "artifacts/noext", "Artifacts/x.txt"] {
            assert_eq!(
                verdict(path, Access::Create),
                Err("artifact_extension".into()),
                "{path}"
            );
        }
        assert_eq!(verdict("drafts/run.sh", Access::Create), Ok(()));
        assert!(requires_valid_json(&["artifacts", "a.json"]));
        assert!(!requires_valid_json(&["drafts", "a.json"]));
    }
}
