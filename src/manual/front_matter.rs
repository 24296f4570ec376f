//! The one front-matter field the manual model uses: `title`.
//!
//! Manuals converted from static-site sources carry YAML front matter whose `title` is the
//! page's real name, while the file stem is often `_index`. We read only a top-level
//! `title: value` line (quotes stripped) instead of parsing YAML: no YAML crate is
//! available, and anything richer would be a second, partial YAML parser to maintain.

/// The `title:` value of a raw front-matter block (delimiters included or not).
pub(crate) fn front_matter_title(front_matter: &str) -> Option<String> {
    front_matter.lines().find_map(|line| {
        let value = line.strip_prefix("title:")?.trim();
        let unquoted = strip_matching_quotes(value).trim();
        (!unquoted.is_empty()).then(|| unquoted.to_owned())
    })
}

fn strip_matching_quotes(value: &str) -> &str {
    ['"', '\'']
        .iter()
        .find_map(|&quote| value.strip_prefix(quote)?.strip_suffix(quote))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::front_matter_title;

    #[test]
    fn reads_plain_and_quoted_titles() {
        assert_eq!(
            front_matter_title("---\ntitle: 会計\n---\n").as_deref(),
            Some("会計")
        );
        assert_eq!(
            front_matter_title("title: \"A: B\"\n").as_deref(),
            Some("A: B")
        );
        assert_eq!(front_matter_title("title: 'x'").as_deref(), Some("x"));
    }

    #[test]
    fn ignores_nested_empty_and_missing_titles() {
        assert_eq!(front_matter_title("meta:\n  title: nested\n"), None);
        assert_eq!(front_matter_title("title:   \n"), None);
        assert_eq!(front_matter_title("description: x\n"), None);
    }
}
