//! A rewritten text that still knows where each of its bytes came from.
//!
//! Searches run over normalised text, but hits must be reported as lines and snippets
//! of the file the user can open, so every rewrite keeps a map back to the original.

use std::ops::Range;

use super::offset_map::{Builder, Kind, OffsetMap};

/// Normalised (or loose) text and a sparse map back to the original it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Normalized {
    /// The text to search; never shown to users, who see the original.
    pub text: String,
    map: OffsetMap,
}

impl Normalized {
    /// Bytes the text and its map hold on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.map.heap_bytes()
    }

    /// Byte offset in the original string where the text at `norm_byte` comes from.
    ///
    /// Inside output produced from a multi-character original sequence (a kanji numeral,
    /// a ligature) this is the start of that sequence; `text.len()` maps to the original
    /// length. `norm_byte` must not exceed `text.len()`.
    pub(crate) fn original_offset(&self, norm_byte: usize) -> usize {
        debug_assert!(norm_byte <= self.text.len(), "offset past the text");
        self.map.start(norm_byte)
    }

    /// Original byte range a match over `norm` came from: the start rounds down and the
    /// end rounds up to whole original sequences, so the original slice normalises to
    /// text that contains the match.
    pub(crate) fn original_range(&self, norm: Range<usize>) -> Range<usize> {
        self.map.start(norm.start)..self.map.end(norm.end)
    }
}

/// Appends output pieces while recording where each came from.
///
/// Used both against an original string (normalisation) and against an earlier
/// [`Normalized`] (numerals, loose text), in which case the maps are composed so the
/// result points into the first original.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    text: String,
    map: Builder,
}

impl Writer {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Writer {
            text: String::with_capacity(bytes),
            map: Builder::default(),
        }
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Appends `out`, produced from original bytes `src`.
    pub(crate) fn push(&mut self, out: &str, src: Range<usize>, kind: Kind) {
        let start = self.text.len();
        self.text.push_str(out);
        self.map.piece(start..self.text.len(), src, kind);
    }

    /// Appends `out` with its ASCII letters lowercased, produced from original bytes `src`.
    pub(crate) fn push_ascii_lowercased(&mut self, out: &str, src: Range<usize>, kind: Kind) {
        let start = self.text.len();
        self.push(out, src, kind);
        self.text[start..].make_ascii_lowercase();
    }

    /// Appends `source.text[from]` unchanged, keeping its map into the original.
    pub(crate) fn copy_from(&mut self, source: &Normalized, from: Range<usize>) {
        let start = self.text.len();
        self.text.push_str(&source.text[from.clone()]);
        self.map.copy(start, &source.map, from);
    }

    /// Appends `out` in place of `source.text[from]`.
    pub(crate) fn replace_from(&mut self, source: &Normalized, from: Range<usize>, out: &str) {
        let kind = Kind::of(out, &source.text[from.clone()]);
        self.push(out, source.original_range(from), kind);
    }

    pub(crate) fn finish(mut self, original_len: usize) -> Normalized {
        let map = self.map.finish(self.text.len(), original_len);
        // Loose text is shorter than the capacity reserved for it; the index keeps it.
        self.text.shrink_to_fit();
        Normalized {
            text: self.text,
            map,
        }
    }
}
