//! The one model both artifact forms parse into.
//!
//! The model *is* the type generated from `schemas/common/artifact.json`: the published
//! format and the code cannot drift apart, and a JSON artifact needs no conversion step.
//! The Markdown form builds the same values from a Mermaid chart.

use crate::paths::parse_relative;
use crate::text::lines::{line_no, LineNo};

pub(crate) use crate::contract::types::{
    Artifact, ArtifactElement as Element, ArtifactElementKind as Kind,
    ArtifactSourceLines as SourceLines,
};

impl Element {
    /// The element's role; an absent `kind` means a step, as the schema documents.
    pub fn role(&self) -> Kind {
        self.kind.unwrap_or(Kind::Step)
    }
}

impl Artifact {
    /// The `(start_line, end_line)` ranges this artifact cites in the vault file `path`,
    /// for [`super::coverage::coverage`]. `path` is a canonical vault path (as
    /// `RelPath::as_str` spells it); cited paths are compared in their canonical form too,
    /// so a hand-written `./drafts/leave.md` still counts for `drafts/leave.md`.
    pub fn cited_ranges<'a>(
        &'a self,
        path: &'a str,
    ) -> impl Iterator<Item = (LineNo, LineNo)> + 'a {
        self.elements
            .iter()
            .flat_map(|element| &element.source_lines)
            .filter(move |cited| parse_relative(&cited.path).is_ok_and(|p| p.as_str() == path))
            .map(|cited| (line_no(cited.start_line), line_no(cited.end_line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cites(path: &str, start_line: u64, end_line: u64) -> SourceLines {
        SourceLines {
            path: path.to_owned(),
            start_line,
            end_line,
        }
    }

    #[test]
    fn cited_ranges_keep_only_the_asked_file_in_any_spelling() {
        let element = Element {
            id: "A".into(),
            text: "a".into(),
            kind: None,
            source_lines: vec![
                cites("drafts/leave.md", 1, 3),
                cites("./drafts//leave.md", 7, 9),
                cites("drafts/other.md", 4, 5),
                cites("../drafts/leave.md", 10, 12),
            ],
            next: vec![],
            refs: vec![],
        };
        let artifact = Artifact {
            elements: vec![element],
            source_manual_ids: vec![],
            title: None,
        };
        let ranges: Vec<_> = artifact.cited_ranges("drafts/leave.md").collect();
        assert_eq!(ranges, [(1, 3), (7, 9)]);
        assert_eq!(artifact.elements[0].role(), Kind::Step);
    }
}
