//! The one model both artifact forms parse into.
//!
//! The model *is* the type generated from `schemas/common/artifact.json`: the published
//! format and the code cannot drift apart, and a JSON artifact needs no conversion step.
//! The Markdown form builds the same values from a Mermaid chart.

pub use crate::contract::types::{
    Artifact, ArtifactElement as Element, ArtifactElementKind as Kind,
    ArtifactSourceLines as SourceLines,
};

impl Element {
    /// The element's role; an absent `kind` means a step, as the schema documents.
    pub fn role(&self) -> Kind {
        self.kind.unwrap_or(Kind::Step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_without_kind_is_a_step() {
        let element: Element = serde_json::from_str(r#"{"id": "A", "text": "a"}"#).unwrap();
        assert_eq!(element.role(), Kind::Step);
    }
}
