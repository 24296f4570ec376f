//! Ranges of a manual's lines (`crate::text::lines::LineTable` numbers them).

/// An inclusive range of 1-based lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSpan {
    pub start_line: u32,
    pub end_line: u32,
}

impl LineSpan {
    pub fn contains(&self, line: u32) -> bool {
        self.start_line <= line && line <= self.end_line
    }
}
