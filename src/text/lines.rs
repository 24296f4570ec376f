//! Byte offset <-> 1-based line number, for reporting hits and reading line ranges.
//!
//! Built once per file (memchr finds newlines at several GB/s), then every lookup is a
//! binary search instead of a rescan from the top of the file.

/// Line starts of one text. A line ends at `\n`; a `\r` before it belongs to the line.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Byte offset where each line starts; the first is always 0.
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// The 1-based line holding `byte`. The end of a text that ends with `\n` is on
    /// line `line_count() + 1`, the empty line an editor shows there.
    pub fn line_of(&self, byte: usize) -> usize {
        self.starts.partition_point(|&start| start <= byte)
    }

    /// Byte offset where `line` (1-based) starts. Lines past the end start at the end of
    /// the text, so `line_start(n)..line_start(n + 1)` is always a valid range.
    pub fn line_start(&self, line: usize) -> usize {
        assert!(line >= 1, "lines are numbered from 1");
        self.starts.get(line - 1).copied().unwrap_or(self.len)
    }

    /// Number of lines as an editor counts them: a final `\n` does not open a new line,
    /// and an empty text has none.
    pub fn line_count(&self) -> usize {
        let ends_with_newline = self.starts.last() == Some(&self.len);
        self.starts.len() - usize::from(ends_with_newline)
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn counts_lines_like_an_editor() {
        assert_eq!(LineIndex::new("").line_count(), 0);
        assert_eq!(LineIndex::new("a").line_count(), 1);
        assert_eq!(LineIndex::new("a\n").line_count(), 1);
        assert_eq!(LineIndex::new("a\nb").line_count(), 2);
        assert_eq!(LineIndex::new("\n\n").line_count(), 2);
    }

    #[test]
    fn maps_bytes_to_lines_and_back() {
        let text = "一行目\r\n二行目\n\n四";
        let index = LineIndex::new(text);
        assert_eq!(index.line_of(0), 1);
        assert_eq!(index.line_of(text.find('\r').unwrap()), 1);
        assert_eq!(index.line_of(text.find('二').unwrap()), 2);
        assert_eq!(index.line_of(text.find('四').unwrap()), 4);
        assert_eq!(index.line_start(2), text.find('二').unwrap());
        assert_eq!(index.line_start(3), text.find("\n\n").unwrap() + 1);
        assert_eq!(index.line_start(5), text.len());
        assert_eq!(index.line_count(), 4);
    }
}
