//! What a copy writes, and how a Markdown destination records where its text came from.
//!
//! - **Create / overwrite of a Markdown file** (`.md`, `.markdown`): YAML front matter
//!   first, then the copied text:
//!
//!   ```markdown
//!   ---
//!   source_manual_ids: ["handbook"]
//!   source_refs: ["handbook/01-leave.md#L40-L44"]
//!   ---
//!   ## 申請手続き
//!   ...
//!   ```
//!
//!   Values are JSON strings, which YAML reads as double-quoted scalars, so no manual id
//!   or path can break the block. When the copied text opens with front matter of its
//!   own (a whole-file copy of a manual page that has some), the two keys go into that
//!   block instead, since a file has one front matter; the page's own `source_manual_ids`
//!   / `source_refs` entries, if any, give way to the new origin.
//! - **Append to a Markdown file**: front matter cannot be rewritten by an append (daily
//!   logs allow nothing else), so an HTML comment line goes before the appended text:
//!   `<!-- source_refs: ["handbook/01-leave.md#L40-L44"] -->`. It is invisible when the
//!   file is rendered.
//! - **Other files** (`.json`, `.txt`, ...): the copied text alone, so a JSON manual file
//!   copied whole stays valid JSON (and an artifact that would not be JSON is refused by
//!   the vault's write rules, not written).
//!
//! Every copy ends with a line break, and an append first ends the file's last line if it
//! has no break, so the copied lines always start a line of their own.

use super::{Copy, Mode};
use crate::text::lines::{newlines, LineNo};
use crate::vault::profile::LineCount;

/// How the origin was recorded: the schema's `CopyOrigin`.
pub(crate) use crate::contract::types::CopyOrigin;

/// What to write, and where the copied text lands in the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Composed {
    pub content: String,
    pub origin: CopyOrigin,
    /// Destination lines (vault numbering, 1-based) holding the copied text; inserted
    /// front-matter keys lie inside them when the text opened with its own front matter.
    pub first_line: LineNo,
    pub last_line: LineNo,
}

/// The front-matter keys that record a copy's origin.
const ORIGIN_KEYS: [&str; 2] = ["source_manual_ids", "source_refs"];

/// Composes the content a copy writes to a destination that is Markdown or not, in
/// `mode`; `existing` is the destination's line count, for appends.
pub(crate) fn compose(
    copy: &Copy,
    markdown: bool,
    mode: Mode,
    existing: Option<LineCount>,
) -> Composed {
    let (head, body, origin) = match (markdown, mode) {
        (true, Mode::Append) => (
            format!("<!-- source_refs: {} -->\n", quoted_ref(copy)),
            copy.text.clone(),
            CopyOrigin::Comment,
        ),
        (true, _) => {
            let (head, body) = with_front_matter(copy);
            (head, body, CopyOrigin::FrontMatter)
        }
        (false, _) => (String::new(), copy.text.clone(), CopyOrigin::None),
    };
    let existing = existing.filter(|_| mode == Mode::Append);
    let lines_before = existing.map_or(0, |existing| existing.lines);
    let separator = match existing {
        Some(existing) if !existing.ends_with_newline => "\n",
        _ => "",
    };
    let first_line = lines_before + newlines(head.as_bytes()) + 1;
    let last_line = first_line + newlines(body.as_bytes());
    Composed {
        content: format!("{separator}{head}{body}\n"),
        origin,
        first_line,
        last_line,
    }
}

/// A JSON string of the copy's ref, with `-->` escaped so it cannot end an HTML comment.
fn quoted_ref(copy: &Copy) -> String {
    let quoted = serde_json::Value::String(copy.source_ref()).to_string();
    format!("[{}]", quoted.replace("-->", "--\\u003e"))
}

fn origin_keys(copy: &Copy) -> String {
    let manual_ids = serde_json::json!([copy.manual_id]);
    format!(
        "{}: {manual_ids}\n{}: {}\n",
        ORIGIN_KEYS[0],
        ORIGIN_KEYS[1],
        quoted_ref(copy)
    )
}

/// The text before the copy (a front-matter block) and the copy itself; or, when the copy
/// opens with its own front matter, nothing before and the copy with the keys merged in.
fn with_front_matter(copy: &Copy) -> (String, String) {
    let keys = origin_keys(copy);
    match own_front_matter(&copy.text).filter(|_| copy.lines.start_line == 1) {
        None => (format!("---\n{keys}---\n"), copy.text.clone()),
        Some((opening, inner, rest)) => {
            let kept = without_origin_entries(inner);
            (String::new(), format!("{opening}{keys}{kept}{rest}"))
        }
    }
}

/// Splits text that opens with a front-matter block into its opening `---` line, the
/// lines inside, and the closing line with everything after it.
fn own_front_matter(text: &str) -> Option<(&str, &str, &str)> {
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next()?;
    if opening.trim_end() != "---" || !opening.ends_with('\n') {
        return None;
    }
    let mut inner_end = opening.len();
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            return Some((
                &text[..opening.len()],
                &text[opening.len()..inner_end],
                &text[inner_end..],
            ));
        }
        inner_end += line.len();
    }
    None
}

/// Front-matter lines without the top-level entries of [`ORIGIN_KEYS`] (a key line and
/// the indented or `- ` lines that continue it).
fn without_origin_entries(inner: &str) -> String {
    let mut kept = String::with_capacity(inner.len());
    let mut dropping = false;
    for line in inner.split_inclusive('\n') {
        let continues = line.starts_with([' ', '\t', '-']);
        if !continues {
            dropping = ORIGIN_KEYS.iter().any(|key| {
                line.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
            });
        }
        if !dropping {
            kept.push_str(line);
        }
    }
    kept
}
