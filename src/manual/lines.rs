//! Line numbers for text held in memory.
//!
//! Every position a client sees is a 1-based line number (refs, node ranges, read ranges),
//! while slicing works on byte offsets. The table is built once per file so converting
//! either way is a binary search, never a rescan. Line breaks are `\n`, `\r\n` and a lone
//! `\r`, the same set comrak counts, so our numbers agree with comrak's source positions.
//! A terminator at the very end of the text does not start another line ("a\n" is one
//! line); an empty text is one empty line.

use std::ops::Range;

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

/// Byte range of each line's content (terminator excluded), in order.
#[derive(Debug, Clone, Default)]
pub struct LineTable {
    lines: Vec<Range<usize>>,
}

impl LineTable {
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
            let end = start + found;
            let terminator = if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            lines.push(start..end);
            start = end + terminator;
        }
        if start < bytes.len() || lines.is_empty() {
            lines.push(start..bytes.len());
        }
        LineTable { lines }
    }

    pub fn line_count(&self) -> u32 {
        self.lines.len() as u32
    }

    /// Byte range from the start of `first` to the end of `last`'s content; both lines
    /// must exist (1-based, `first <= last`).
    pub fn byte_range(&self, first: u32, last: u32) -> Range<usize> {
        self.lines[first as usize - 1].start..self.lines[last as usize - 1].end
    }

    /// The line holding byte `offset`; an offset inside a terminator belongs to the line
    /// it ends.
    pub fn line_at(&self, offset: usize) -> u32 {
        self.lines
            .partition_point(|line| line.start <= offset)
            .max(1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(text: &str) -> Vec<&str> {
        let table = LineTable::new(text);
        (1..=table.line_count())
            .map(|n| &text[table.byte_range(n, n)])
            .collect()
    }

    #[test]
    fn every_terminator_style_ends_a_line() {
        assert_eq!(contents("a\nb\r\nc\rd"), ["a", "b", "c", "d"]);
    }

    #[test]
    fn trailing_terminator_does_not_add_a_line() {
        assert_eq!(contents("a\n"), ["a"]);
        assert_eq!(contents("a\n\n"), ["a", ""]);
        assert_eq!(contents(""), [""]);
    }

    #[test]
    fn line_at_maps_offsets_back() {
        let table = LineTable::new("ab\r\ncd\nef");
        assert_eq!(table.line_at(0), 1);
        assert_eq!(table.line_at(3), 1);
        assert_eq!(table.line_at(4), 2);
        assert_eq!(table.line_at(8), 3);
    }

    #[test]
    fn byte_range_spans_several_lines_without_final_terminator() {
        let text = "a\nb\nc\n";
        let table = LineTable::new(text);
        assert_eq!(&text[table.byte_range(1, 2)], "a\nb");
        assert_eq!(&text[table.byte_range(3, 3)], "c");
    }
}
