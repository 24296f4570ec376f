//! Path globs for narrowing vault listings and searches (`scope.glob`, `exclude_glob`).
//!
//! Small on purpose: `*` and `?` within one path component, `**` for any number of whole
//! components, and a pattern without `/` matches the file name at any depth (so `*.md`
//! means every Markdown file). No character classes or braces: none of the documented
//! uses need them, and every extra syntax is one more way for an agent to be surprised.

use serde_json::json;

use crate::error::{ToolError, ToolResult};

#[derive(Debug, Clone)]
pub struct Glob {
    components: Vec<String>,
    name_only: bool,
}

impl Glob {
    pub fn new(pattern: &str, field: &str) -> ToolResult<Glob> {
        let trimmed = pattern.trim_matches('/');
        if trimmed.is_empty()
            || trimmed.contains('\\')
            || trimmed.split('/').any(|c| c.is_empty() || c == "..")
        {
            return Err(ToolError::invalid_parameter(format!("{field} is not a usable glob")).with_details(json!({
                "field": field,
                "rule": "`*` and `?` within a component, `**` across components, `/` separators, no `..` or `\\`",
            })));
        }
        Ok(Glob {
            components: trimmed.split('/').map(str::to_string).collect(),
            name_only: !trimmed.contains('/'),
        })
    }

    /// Whether the vault-relative path (with `/` separators) matches.
    pub fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        if self.name_only {
            return parts
                .last()
                .is_some_and(|name| component_matches(&self.components[0], name));
        }
        let pattern: Vec<&str> = self.components.iter().map(String::as_str).collect();
        path_matches(&pattern, &parts)
    }
}

fn path_matches(pattern: &[&str], parts: &[&str]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| path_matches(rest, &parts[skip..])),
        Some((first, rest)) => parts.split_first().is_some_and(|(part, remaining)| {
            component_matches(first, part) && path_matches(rest, remaining)
        }),
    }
}

fn component_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Classic two-pointer wildcard match with backtracking to the last `*`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(pattern: &str) -> Glob {
        Glob::new(pattern, "glob").unwrap()
    }

    #[test]
    fn name_patterns_match_at_any_depth() {
        assert!(glob("*.md").matches("a/b/c.md"));
        assert!(glob("*.md").matches("c.md"));
        assert!(!glob("*.md").matches("a/c.json"));
        assert!(glob("202?-*.md").matches("artifacts/daily/2026-11-25.md"));
    }

    #[test]
    fn path_patterns_anchor_at_the_vault_root() {
        assert!(glob("artifacts/*.json").matches("artifacts/flow.json"));
        assert!(!glob("artifacts/*.json").matches("artifacts/sub/flow.json"));
        assert!(glob("artifacts/**/*.json").matches("artifacts/sub/deep/flow.json"));
        assert!(glob("artifacts/**/*.json").matches("artifacts/flow.json"));
        assert!(glob("artifacts/daily/**").matches("artifacts/daily/2026-11-25.md"));
        assert!(!glob("artifacts/daily/**").matches("artifacts/notes.md"));
        assert!(glob("**/日報*.md").matches("notes/日報-1.md"));
    }

    #[test]
    fn unusable_globs_are_invalid_parameter() {
        for pattern in ["", "/", "a//b", "../x", "a\\b"] {
            assert!(Glob::new(pattern, "scope.glob").is_err(), "{pattern}");
        }
    }
}
