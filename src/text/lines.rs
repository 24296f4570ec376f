//! Line numbers for text held in memory: byte offset <-> 1-based line number, for
//! reporting hits and reading line ranges.
//!
//! Every position a client sees is a 1-based line number (refs, node ranges, read ranges,
//! hits), while slicing works on byte offsets. The table is built once per text (memchr
//! finds terminators at several GB/s), so converting either way is a binary search, never
//! a rescan. A terminator at the very end of the text does not start another line ("a\n"
//! is one line); an empty text is one empty line.
//!
//! What ends a line depends on who numbers the lines the client sees: a manual's lines
//! are comrak's (`\n`, `\r\n` and a lone `\r`), a vault file's are those of a line reader
//! (`\n` only; a `\r` before it belongs to the line).

use std::ops::Range;

/// A 1-based line number, or a count of lines, wherever the crate holds one: manual
/// nodes and hits, vault windows and hits, artifact citations, proposals.
///
/// 32 bits because the manual's per-node and per-hit tables hold many of them and four
/// billion lines is far beyond any file the server reads (a vault file that long would
/// hold more than 4 GiB of line breaks; its counts saturate). The generated schema types
/// hold `u64`: tools/ and resources convert once, with [`line_no`] for what a client
/// sends, so a number past the range stays out of range instead of wrapping.
pub(crate) type LineNo = u32;

/// A line number a client sent (the schemas' non-negative integers), kept out of range
/// when it is beyond [`LineNo`]: every file is shorter, so it is refused as past the end.
pub(crate) fn line_no(requested: u64) -> LineNo {
    LineNo::try_from(requested).unwrap_or(LineNo::MAX)
}

/// The `\n` bytes in `bytes`, saturating at [`LineNo::MAX`]: how the vault's readers, the
/// bridge and a file's first bad line count lines (a vault line ends at `\n` only).
pub(crate) fn newlines(bytes: &[u8]) -> LineNo {
    let count = memchr::memchr_iter(b'\n', bytes).count();
    LineNo::try_from(count).unwrap_or(LineNo::MAX)
}

/// What ends a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Breaks {
    /// `\n`, `\r\n` and a lone `\r`, the set comrak counts, so numbers agree with its
    /// source positions.
    Any,
    /// `\n` only, as `BufRead::lines` splits a file.
    Newline,
}

/// Byte range of each line's content (terminator excluded), in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineTable {
    lines: Vec<Range<usize>>,
}

impl LineTable {
    /// The lines of `text` as comrak counts them ([`Breaks::Any`]).
    pub(crate) fn new(text: &str) -> Self {
        LineTable::with_breaks(text, Breaks::Any)
    }

    pub(crate) fn with_breaks(text: &str, breaks: Breaks) -> Self {
        let bytes = text.as_bytes();
        let next_break = |from: usize| match breaks {
            Breaks::Any => memchr::memchr2(b'\n', b'\r', &bytes[from..]),
            Breaks::Newline => memchr::memchr(b'\n', &bytes[from..]),
        };
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(found) = next_break(start) {
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

    /// A table kept on disk (`manual::catalog_store`), read back: the caller has checked
    /// that the ranges are in order and inside the text they number.
    pub(crate) fn from_ranges(lines: Vec<Range<usize>>) -> Self {
        LineTable { lines }
    }

    /// Each line's content range, in order (what `manual::catalog_store` keeps).
    pub(crate) fn ranges(&self) -> &[Range<usize>] {
        &self.lines
    }

    pub(crate) fn line_count(&self) -> LineNo {
        self.lines.len() as LineNo
    }

    /// Byte range from the start of `first` to the end of `last`'s content; both lines
    /// must exist (1-based, `first <= last`).
    pub(crate) fn byte_range(&self, first: LineNo, last: LineNo) -> Range<usize> {
        self.lines[first as usize - 1].start..self.lines[last as usize - 1].end
    }

    /// The line holding byte `offset`; an offset inside a terminator belongs to the line
    /// it ends.
    pub(crate) fn line_at(&self, offset: usize) -> LineNo {
        self.lines
            .partition_point(|line| line.start <= offset)
            .max(1) as LineNo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(text: &str, breaks: Breaks) -> Vec<&str> {
        let table = LineTable::with_breaks(text, breaks);
        (1..=table.line_count())
            .map(|n| &text[table.byte_range(n, n)])
            .collect()
    }

    #[test]
    fn every_terminator_style_ends_a_line() {
        assert_eq!(contents("a\nb\r\nc\rd", Breaks::Any), ["a", "b", "c", "d"]);
    }

    #[test]
    fn a_line_reader_breaks_at_newlines_only() {
        assert_eq!(
            contents("a\nb\r\nc\rd", Breaks::Newline),
            ["a", "b\r", "c\rd"]
        );
    }

    #[test]
    fn trailing_terminator_does_not_add_a_line() {
        for breaks in [Breaks::Any, Breaks::Newline] {
            assert_eq!(contents("a\n", breaks), ["a"]);
            assert_eq!(contents("a\n\n", breaks), ["a", ""]);
            assert_eq!(contents("", breaks), [""]);
        }
    }

    #[test]
    fn line_at_maps_offsets_back() {
        let table = LineTable::new("ab\r\ncd\nef");
        assert_eq!(table.line_at(0), 1);
        assert_eq!(table.line_at(3), 1);
        assert_eq!(table.line_at(4), 2);
        assert_eq!(table.line_at(8), 3);
        let text = "一行目\r\n二行目\n\n四";
        let table = LineTable::with_breaks(text, Breaks::Newline);
        assert_eq!(table.line_at(text.find('\r').unwrap()), 1);
        assert_eq!(table.line_at(text.find('二').unwrap()), 2);
        assert_eq!(table.line_at(text.find('四').unwrap()), 4);
    }

    #[test]
    fn byte_range_spans_several_lines_without_final_terminator() {
        let text = "a\nb\nc\n";
        let table = LineTable::new(text);
        assert_eq!(&text[table.byte_range(1, 2)], "a\nb");
        assert_eq!(&text[table.byte_range(3, 3)], "c");
    }
}
