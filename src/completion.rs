//! Argument completion (`completion/complete`): values for prompt arguments and for the
//! variables of the resource templates, from the tools that list them (`manual_list`,
//! `manual_ls`, `manual_toc`, `vault_ls`), so completion shows only what a client could
//! read anyway. Completion is a convenience: an unknown prompt, template or argument, or
//! a listing that fails (a manual id that does not exist yet), answers an empty list.
//!
//! Plain Rust: the server converts these types to MCP's.

use std::collections::BTreeMap;

use serde_json::json;

use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::{ManualListOutput, ManualLsOutput, ManualTocOutput, VaultLsOutput};
use crate::error::ToolResult;
use crate::prompts::{self, Slot};
use crate::{clock, resources};

/// Most values one answer carries (the MCP limit).
pub(crate) const MAX_VALUES: usize = 100;

/// The largest page the listing tools give.
const LISTING_PAGE: u64 = 1000;

/// Pages of one listing read at most for one completion (a manual of 50,000 files).
const MAX_PAGES: usize = 50;

/// What is being completed.
pub(crate) enum Target {
    Prompt { name: String },
    Resource { uri_template: String },
}

/// Matching values, at most [`MAX_VALUES`], best first.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Completion {
    pub values: Vec<String>,
    pub total: usize,
    pub has_more: bool,
}

/// A value to offer and the text the typed value is matched against (the value itself,
/// or for a heading line `"<line> <title>"`, so digits and words both find it).
struct Candidate {
    value: String,
    label: String,
}

impl Candidate {
    fn plain(value: String) -> Candidate {
        Candidate {
            label: value.clone(),
            value,
        }
    }
}

impl Completion {
    /// Values whose label starts with `typed` (ignoring case) first, then those whose
    /// label contains it, each group in the order given.
    fn ranked(candidates: impl IntoIterator<Item = Candidate>, typed: &str) -> Completion {
        let typed = typed.to_lowercase();
        let (mut starting, mut containing) = (Vec::new(), Vec::new());
        for candidate in candidates {
            let label = candidate.label.to_lowercase();
            if label.starts_with(&typed) {
                starting.push(candidate.value);
            } else if label.contains(&typed) {
                containing.push(candidate.value);
            }
        }
        starting.append(&mut containing);
        let total = starting.len();
        starting.truncate(MAX_VALUES);
        Completion {
            values: starting,
            total,
            has_more: total > MAX_VALUES,
        }
    }
}

/// The slot of `argument` of `target`; `None` when the target or argument is unknown.
fn slot_of(target: &Target, argument: &str) -> Option<Slot> {
    match target {
        Target::Prompt { name } => prompts::prompt(name)?
            .arguments
            .iter()
            .find(|arg| arg.name == argument)
            .map(|arg| arg.kind),
        Target::Resource { uri_template } => {
            let template = resources::TEMPLATES
                .iter()
                .find(|t| t.uri_template == uri_template)?;
            if !template.variables.contains(&argument) {
                return None;
            }
            Some(match (argument, template.uri_template) {
                ("manual_id", _) => Slot::ManualId,
                ("line", _) => Slot::HeadingLine,
                (_, resources::VAULT_FILE_TEMPLATE) => Slot::VaultPath,
                _ => Slot::ManualPath,
            })
        }
    }
}

impl App {
    /// Completes `argument` of `target` from what was `typed`; `resolved` holds the
    /// arguments the client already knows (a path needs its `manual_id`).
    pub(crate) fn complete(
        &self,
        target: &Target,
        argument: &str,
        typed: &str,
        resolved: &BTreeMap<String, String>,
        context: &CallContext,
    ) -> Completion {
        let Some(slot) = slot_of(target, argument) else {
            return Completion::default();
        };
        self.candidates(slot, typed, resolved, context)
            .map(|candidates| Completion::ranked(candidates, typed))
            .unwrap_or_default()
    }

    fn candidates(
        &self,
        slot: Slot,
        typed: &str,
        resolved: &BTreeMap<String, String>,
        context: &CallContext,
    ) -> ToolResult<Vec<Candidate>> {
        let manual_id = || resolved.get("manual_id").map(String::as_str);
        let values = match slot {
            Slot::Text => Vec::new(),
            Slot::Date => vec![clock::date(clock::now())],
            Slot::ManualId => {
                let list: ManualListOutput = self.call_for("manual_list", json!({}), context)?;
                list.items.into_iter().map(|item| item.manual_id).collect()
            }
            Slot::ManualPath => {
                let Some(manual_id) = manual_id() else {
                    return Ok(Vec::new());
                };
                pages(|offset| {
                    let page: ManualLsOutput = self.call_for(
                        "manual_ls",
                        json!({ "manual_id": manual_id, "offset": offset, "limit": LISTING_PAGE }),
                        context,
                    )?;
                    let paths = page.items.into_iter().map(|item| item.path).collect();
                    Ok((paths, page.next_offset))
                })?
            }
            Slot::HeadingLine => {
                let (Some(manual_id), Some(path)) = (manual_id(), resolved.get("path")) else {
                    return Ok(Vec::new());
                };
                let nodes = pages(|offset| {
                    let page: ManualTocOutput = self.call_for(
                        "manual_toc",
                        json!({ "manual_id": manual_id, "path": path, "offset": offset, "limit": LISTING_PAGE }),
                        context,
                    )?;
                    Ok((page.items, page.next_offset))
                })?;
                return Ok(nodes
                    .into_iter()
                    .map(|node| Candidate {
                        label: format!("{} {}", node.line_start, node.title),
                        value: node.line_start.to_string(),
                    })
                    .collect());
            }
            Slot::VaultPath => self.vault_paths(folder_of(typed), context)?,
            Slot::ArtifactPath => {
                let folder = folder_of(typed).or(Some("artifacts"));
                self.vault_paths(folder, context)?
                    .into_iter()
                    .filter(|path| path.starts_with("artifacts/"))
                    .filter(|path| !path.starts_with("artifacts/daily/"))
                    .collect()
            }
        };
        Ok(values.into_iter().map(Candidate::plain).collect())
    }

    /// The first `LISTING_PAGE` vault files under `folder` (the whole vault when `None`).
    fn vault_paths(&self, folder: Option<&str>, context: &CallContext) -> ToolResult<Vec<String>> {
        let page: VaultLsOutput = self.call_for(
            "vault_ls",
            json!({ "relative_dir": folder, "limit": LISTING_PAGE }),
            context,
        )?;
        Ok(page.items.into_iter().map(|item| item.path).collect())
    }
}

/// Every item of a paged listing, reading at most `MAX_PAGES` pages.
fn pages<T>(mut page: impl FnMut(u64) -> ToolResult<(Vec<T>, Option<u64>)>) -> ToolResult<Vec<T>> {
    let mut items = Vec::new();
    let mut offset = 0;
    for _ in 0..MAX_PAGES {
        let (mut more, next) = page(offset)?;
        items.append(&mut more);
        match next {
            Some(next) => offset = next,
            None => break,
        }
    }
    Ok(items)
}

/// The folder part of a typed path (`drafts/le` -> `drafts`), `None` at the top.
fn folder_of(typed: &str) -> Option<&str> {
    typed
        .rsplit_once('/')
        .map(|(folder, _)| folder)
        .filter(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_matches_come_before_substring_matches() {
        let completion = Completion::ranked(
            ["a/leave.md", "leave/x.md", "notes/Leave.md", "other.md"]
                .map(|value| Candidate::plain(value.into())),
            "leave",
        );
        assert_eq!(
            completion.values,
            ["leave/x.md", "a/leave.md", "notes/Leave.md"]
        );
        assert_eq!((completion.total, completion.has_more), (3, false));
    }

    #[test]
    fn answers_stop_at_the_mcp_limit_and_say_so() {
        let completion =
            Completion::ranked((0..250).map(|n| Candidate::plain(format!("f{n}"))), "f");
        assert_eq!(completion.values.len(), MAX_VALUES);
        assert_eq!((completion.total, completion.has_more), (250, true));
    }

    fn prompt(name: &str) -> Target {
        Target::Prompt { name: name.into() }
    }

    fn template(uri_template: &str) -> Target {
        Target::Resource {
            uri_template: uri_template.into(),
        }
    }

    #[test]
    fn unknown_targets_and_arguments_have_no_slot() {
        for (target, argument) in [
            (prompt("test_prompt_with_arguments"), "arg1"),
            (prompt("exhaustive_lookup"), "colour"),
            (template("file:///{path}"), "path"),
            (template(resources::VAULT_FILE_TEMPLATE), "line"),
        ] {
            assert_eq!(slot_of(&target, argument), None);
        }
        assert_eq!(
            slot_of(&template(resources::MANUAL_SECTION_TEMPLATE), "line"),
            Some(Slot::HeadingLine)
        );
        assert_eq!(
            slot_of(&prompt("transcription"), "dest_path"),
            Some(Slot::VaultPath)
        );
    }

    #[test]
    fn a_typed_path_is_listed_from_its_folder() {
        assert_eq!(folder_of("drafts/le"), Some("drafts"));
        assert_eq!(folder_of("a/b/"), Some("a/b"));
        assert_eq!(folder_of("leave"), None);
        assert_eq!(folder_of("/x"), None);
    }
}
