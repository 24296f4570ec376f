//! Ranges of a manual's lines (`crate::text::lines::LineTable` numbers them).

use crate::text::lines::LineNo;

/// An inclusive range of 1-based lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSpan {
    pub start_line: LineNo,
    pub end_line: LineNo,
}

impl LineSpan {
    pub fn contains(&self, line: LineNo) -> bool {
        self.start_line <= line && line <= self.end_line
    }
}
