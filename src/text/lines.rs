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
///
/// Held as 32-bit offsets whenever the text is shorter than 4 GiB (every manual file, and
/// any vault file in practice): 8 bytes a line instead of 16. A start keeps one table per
/// manual file, millions of lines at a few hundred megabytes of manuals, so the width is
/// a fifth of the catalog's memory. A longer text (a vault file read whole) keeps full
/// offsets, so no position ever wraps.
#[derive(Debug, Clone)]
pub(crate) struct LineTable {
    lines: Offsets,
}

#[derive(Debug, Clone)]
enum Offsets {
    /// `[start, end)` of each line, for texts of at most `u32::MAX` bytes.
    Narrow(Vec<[u32; 2]>),
    Wide(Vec<Range<usize>>),
}

impl Offsets {
    /// An empty table for a text of `text_len` bytes, in the narrowest form that holds
    /// its offsets.
    fn for_text(text_len: usize) -> Offsets {
        if u32::try_from(text_len).is_ok() {
            Offsets::Narrow(Vec::new())
        } else {
            Offsets::Wide(Vec::new())
        }
    }

    /// Appends a line; `end` must be within the text the table was made for.
    fn push(&mut self, line: Range<usize>) {
        match self {
            // The text is at most u32::MAX bytes long, so both offsets fit.
            Offsets::Narrow(lines) => lines.push([line.start as u32, line.end as u32]),
            Offsets::Wide(lines) => lines.push(line),
        }
    }

    fn len(&self) -> usize {
        match self {
            Offsets::Narrow(lines) => lines.len(),
            Offsets::Wide(lines) => lines.len(),
        }
    }

    /// Line `index` (0-based).
    fn get(&self, index: usize) -> Range<usize> {
        match self {
            Offsets::Narrow(lines) => lines[index][0] as usize..lines[index][1] as usize,
            Offsets::Wide(lines) => lines[index].clone(),
        }
    }

    /// How many lines start at or before `offset`.
    fn starting_at_or_before(&self, offset: usize) -> usize {
        match self {
            Offsets::Narrow(lines) => lines.partition_point(|line| line[0] as usize <= offset),
            Offsets::Wide(lines) => lines.partition_point(|line| line.start <= offset),
        }
    }
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
        let mut lines = Offsets::for_text(bytes.len());
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
        if start < bytes.len() || lines.len() == 0 {
            lines.push(start..bytes.len());
        }
        if let Offsets::Narrow(narrow) = &mut lines {
            narrow.shrink_to_fit();
        }
        LineTable { lines }
    }

    /// A table kept on disk (`manual::catalog_store`), read back: the caller has checked
    /// that the lines are in order and inside a text of at most `u32::MAX` bytes, and that
    /// there is at least one.
    pub(crate) fn from_narrow(lines: Vec<[u32; 2]>) -> Self {
        LineTable {
            lines: Offsets::Narrow(lines),
        }
    }

    /// Each line's content range, in order (what `manual::catalog_store` keeps).
    pub(crate) fn ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        (0..self.lines.len()).map(|index| self.lines.get(index))
    }

    pub(crate) fn line_count(&self) -> LineNo {
        self.lines.len() as LineNo
    }

    /// Byte range from the start of `first` to the end of `last`'s content; both lines
    /// must exist (1-based, `first <= last`).
    pub(crate) fn byte_range(&self, first: LineNo, last: LineNo) -> Range<usize> {
        self.lines.get(first as usize - 1).start..self.lines.get(last as usize - 1).end
    }

    /// Bytes the table holds on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.lines {
            Offsets::Narrow(lines) => lines.capacity() * std::mem::size_of::<[u32; 2]>(),
            Offsets::Wide(lines) => lines.capacity() * std::mem::size_of::<Range<usize>>(),
        }
    }

    /// The line holding byte `offset`; an offset inside a terminator belongs to the line
    /// it ends.
    pub(crate) fn line_at(&self, offset: usize) -> LineNo {
        self.lines.starting_at_or_before(offset).max(1) as LineNo
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
    fn full_offsets_number_lines_as_narrow_ones_do() {
        let text = "一\r\n\nab\rc\n\r\nd";
        let narrow = LineTable::new(text);
        assert!(matches!(narrow.lines, Offsets::Narrow(_)));
        let wide = LineTable {
            lines: Offsets::Wide(narrow.ranges().collect()),
        };
        assert_eq!(wide.line_count(), narrow.line_count());
        for offset in 0..=text.len() {
            assert_eq!(wide.line_at(offset), narrow.line_at(offset));
        }
        for line in 1..=narrow.line_count() {
            assert_eq!(wide.byte_range(1, line), narrow.byte_range(1, line));
        }
    }

    #[test]
    fn byte_range_spans_several_lines_without_final_terminator() {
        let text = "a\nb\nc\n";
        let table = LineTable::new(text);
        assert_eq!(&text[table.byte_range(1, 2)], "a\nb");
        assert_eq!(&text[table.byte_range(3, 3)], "c");
    }
}
