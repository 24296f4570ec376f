//! Path globs for narrowing vault listings and searches (`scope.glob`, `exclude_glob`).
//!
//! Small on purpose: `*` and `?` within one path component, `**` for any number of whole
//! components, and a pattern without `/` matches the file name at any depth (so `*.md`
//! means every Markdown file). No character classes or braces: none of the documented
//! uses need them, and every extra syntax is one more way for an agent to be surprised.
//!
//! Matching takes time proportional to the pattern's length times the path's, whatever
//! the pattern: repeated `**` are merged when the glob is compiled (`**/**` means what
//! `**` means), and both levels (components under `**`, characters under `*`) use the
//! greedy match that only ever backtracks to the last star. A recursive match used to
//! try every split of the path between the stars: 12 `**` over a 24-folder-deep file did
//! not finish in minutes. Glob length is bounded by the input schemas too.

use serde_json::json;

use crate::error::{ToolError, ToolResult};

#[derive(Debug, Clone)]
pub(crate) struct Glob {
    components: Vec<String>,
    name_only: bool,
}

impl Glob {
    pub(crate) fn new(pattern: &str, field: &str) -> ToolResult<Glob> {
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
        let mut components: Vec<String> = Vec::new();
        for component in trimmed.split('/') {
            let repeated_double_star =
                component == DOUBLE_STAR && components.last().is_some_and(|c| c == DOUBLE_STAR);
            if !repeated_double_star {
                components.push(component.to_string());
            }
        }
        Ok(Glob {
            components,
            name_only: !trimmed.contains('/'),
        })
    }

    /// Whether the vault-relative path (with `/` separators) matches.
    pub(crate) fn matches(&self, path: &str) -> bool {
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

/// The component that matches any number of whole components.
const DOUBLE_STAR: &str = "**";

/// Components of a path against the glob's: `**` takes any run of components, any other
/// pattern component exactly one that [`component_matches`].
fn path_matches(pattern: &[&str], parts: &[&str]) -> bool {
    wildcard_match(
        pattern,
        parts,
        |token| *token == DOUBLE_STAR,
        |token, part| component_matches(token, part),
    )
}

/// Characters of one component: `*` takes any run of characters, `?` exactly one.
fn component_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    wildcard_match(
        &pattern,
        &text,
        |token| *token == '*',
        |token, item| *token == '?' || token == item,
    )
}

/// The classic two-pointer wildcard match: each star first takes nothing, and on a
/// mismatch the last star seen takes one more item. Going back to an earlier star never
/// helps (the last one can take whatever an earlier one would), so it costs at most
/// `pattern.len() * items.len()` comparisons.
fn wildcard_match<P, I>(
    pattern: &[P],
    items: &[I],
    is_star: impl Fn(&P) -> bool,
    matches_one: impl Fn(&P, &I) -> bool,
) -> bool {
    let (mut p, mut i) = (0, 0);
    // The last star's position in the pattern and the item it would take up to next.
    let mut last_star: Option<(usize, usize)> = None;
    while i < items.len() {
        if p < pattern.len() && is_star(&pattern[p]) {
            last_star = Some((p, i));
            p += 1;
        } else if p < pattern.len() && matches_one(&pattern[p], &items[i]) {
            p += 1;
            i += 1;
        } else if let Some((star_p, star_i)) = last_star {
            p = star_p + 1;
            i = star_i + 1;
            last_star = Some((star_p, star_i + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(is_star)
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
    fn repeated_double_stars_mean_one() {
        let merged = glob("**/**/a/**/**/**/*.md");
        assert_eq!(merged.components, ["**", "a", "**", "*.md"]);
        assert!(merged.matches("a/x.md"));
        assert!(merged.matches("p/q/a/r/s/x.md"));
        assert!(!merged.matches("p/q/x.md"));
        assert!(glob("a/**/**").matches("a/b/c"));
    }

    #[test]
    fn stars_backtrack_to_the_right_split() {
        assert!(glob("**/a/b/**/c/*.md").matches("a/a/b/a/b/c/c/x.md"));
        assert!(!glob("**/a/b/**/c/*.md").matches("a/a/b/a/b/c/c/x.json"));
        assert!(glob("a*b*c.md").matches("aXbYbZc.md"));
        assert!(!glob("a*b*c.md").matches("aXbYbZ.md"));
        assert!(glob("*?*?").matches("ab"));
        assert!(!glob("*?*?").matches("a"));
    }

    #[test]
    fn matching_is_not_exponential_in_the_stars() {
        // 40 `*` against a 250-character name with no match, and 30 `**` against a path
        // of 60 components: both are a few thousand steps, not billions.
        let name = "a".repeat(250);
        assert!(!glob(&format!("{}b", "a*".repeat(40))).matches(&name));
        let deep = vec!["d"; 60].join("/");
        let pattern = format!("{}x.md", "**/d/".repeat(30));
        assert!(!glob(&pattern).matches(&deep));
    }

    #[test]
    fn unusable_globs_are_invalid_parameter() {
        for pattern in ["", "/", "a//b", "../x", "a\\b"] {
            assert!(Glob::new(pattern, "scope.glob").is_err(), "{pattern}");
        }
    }
}
