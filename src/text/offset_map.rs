//! Sparse map from byte offsets in a rewritten text back to byte offsets in its source.
//!
//! Most of a Japanese manual survives normalisation byte for byte, so storing one entry
//! per byte would cost several times the corpus. Instead the map keeps *anchors*: points
//! where the correspondence changes. Between anchors the map is either linear (both
//! sides advance together) or a block (a whole output span came from one source span,
//! e.g. `三万五千` -> `35000`, so no output position inside it has a finer source).
//!
//! Where source bytes were dropped (whitespace collapsed, separators removed from loose
//! text) the output before the gap ends at one source offset and the output after it
//! starts at another. Usually the first is predicted by the anchor before, so only the
//! second is stored, flagged `gap_before`; that halves the anchors of loose text.
//!
//! Offsets are stored as `u32`: texts are single manual files, far below 4 GiB.

use std::ops::Range;

/// How output relates to its source from an anchor (or in a piece) onwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Output and source advance byte for byte. Also used for a single output byte,
    /// which has no inside to map.
    Linear,
    /// Every position inside maps to the whole source span, which ends where the next
    /// anchor's source offset is.
    Block,
}

impl Kind {
    /// The finest kind for `out` replacing `replaced`: linear when no position inside
    /// `out` could be mapped wrongly (one byte, or one char for one char of equal size).
    pub(crate) fn of(out: &str, replaced: &str) -> Kind {
        let one_char = |s: &str| s.chars().nth(1).is_none();
        if out.len() == 1 || out.len() == replaced.len() && one_char(out) && one_char(replaced) {
            Kind::Linear
        } else {
            Kind::Block
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anchor {
    out: u32,
    src: u32,
    kind: Kind,
    /// Source bytes were dropped just before `out`: the output before ends where the
    /// previous anchor predicts, not at `src`.
    gap_before: bool,
}

impl Anchor {
    /// Source offset of `out` if the linear run from this anchor reaches it.
    fn extrapolate(&self, out: usize) -> usize {
        self.src as usize + (out - self.out as usize)
    }
}

/// Anchors are sorted by output offset. Two may share one when a gap follows a piece
/// whose end was not predictable: the first records that end, the second the start of
/// what follows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffsetMap {
    anchors: Vec<Anchor>,
}

fn narrow(offset: usize) -> u32 {
    u32::try_from(offset).expect("texts are single manual files, far below 4 GiB")
}

impl OffsetMap {
    /// Bytes the map holds on the heap (what a cache of normalised text counts).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.anchors.capacity() * std::mem::size_of::<Anchor>()
    }

    /// Source offset where the output at `out` starts: inside a block, the block start.
    pub(crate) fn start(&self, out: usize) -> usize {
        self.segment_at(out, self.first_after(out)).1
    }

    /// Source offset where the output before `out` ends: inside a block, the block end.
    pub(crate) fn end(&self, out: usize) -> usize {
        self.end_before(
            out,
            self.anchors.partition_point(|a| (a.out as usize) < out),
        )
    }

    /// `end(out)`, given the index of the first anchor at or after `out`.
    fn end_before(&self, out: usize, next: usize) -> usize {
        match self.anchors.get(next) {
            Some(a) if a.out as usize == out && !a.gap_before => return a.src as usize,
            _ => {}
        }
        match next.checked_sub(1).map(|i| self.anchors[i]) {
            None => out,
            // A block is always closed by the anchor after it (see `Builder::begin`).
            Some(a) if a.kind == Kind::Block => self.anchors[next].src as usize,
            Some(a) => a.extrapolate(out),
        }
    }

    fn first_after(&self, out: usize) -> usize {
        self.anchors.partition_point(|a| a.out as usize <= out)
    }

    /// The kind in force at `out` and its source start there, given the index of the
    /// first anchor after `out`.
    fn segment_at(&self, out: usize, after: usize) -> (Kind, usize) {
        match after.checked_sub(1).map(|i| self.anchors[i]) {
            None => (Kind::Linear, out),
            Some(a) if a.kind == Kind::Block => (Kind::Block, a.src as usize),
            Some(a) => (Kind::Linear, a.extrapolate(out)),
        }
    }

    /// What copying the non-empty output span `from` needs, found with one binary search
    /// since copies are short and frequent (one per word of loose text).
    fn span(&self, from: Range<usize>) -> Span<'_> {
        let inner_start = self.first_after(from.start);
        let inner_len = self.anchors[inner_start..]
            .iter()
            .take_while(|a| (a.out as usize) < from.end)
            .count();
        let inner_end = inner_start + inner_len;
        let (kind, src_start) = self.segment_at(from.start, inner_start);
        Span {
            kind,
            src_start,
            inner: &self.anchors[inner_start..inner_end],
            src_end: self.end_before(from.end, inner_end),
        }
    }
}

/// How a span of output maps to its source, as `Builder::copy` needs it.
struct Span<'a> {
    /// The kind in force at the span's start.
    kind: Kind,
    src_start: usize,
    /// Anchors strictly inside the span.
    inner: &'a [Anchor],
    src_end: usize,
}

/// Builds an [`OffsetMap`] from output pieces appended in order.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    map: OffsetMap,
    /// Where the previous piece ended, on both sides.
    piece_end: (usize, usize),
    /// The next anchor follows dropped source bytes.
    gap_pending: bool,
}

impl Builder {
    /// Records that output `out` came from source `src`.
    pub(crate) fn piece(&mut self, out: Range<usize>, src: Range<usize>, kind: Kind) {
        self.begin(out.start, src.start);
        self.anchor(out.start, src.start, kind);
        self.piece_end = (out.end, src.end);
    }

    /// Appends `source`'s output `from` at output offset `out_start`, keeping the
    /// source's own mapping so the result still points into the source's source.
    pub(crate) fn copy(&mut self, out_start: usize, source: &OffsetMap, from: Range<usize>) {
        let span = source.span(from.clone());
        self.begin(out_start, span.src_start);
        self.anchor(out_start, span.src_start, span.kind);
        for a in span.inner {
            let out = narrow(out_start + (a.out as usize - from.start));
            self.map.anchors.push(Anchor { out, ..*a });
        }
        self.piece_end = (out_start + from.len(), span.src_end);
    }

    /// Closes the map: the end of the output maps to the end of the source.
    pub(crate) fn finish(mut self, out_len: usize, src_len: usize) -> OffsetMap {
        self.begin(out_len, src_len);
        self.anchor(out_len, src_len, Kind::Linear);
        self.map.anchors.shrink_to_fit();
        self.map
    }

    /// Before a piece starting at (`out`, `src`): if source bytes were skipped since the
    /// previous piece, make sure that piece's end stays recoverable.
    fn begin(&mut self, out: usize, src: usize) {
        let (end_out, end_src) = self.piece_end;
        debug_assert_eq!(end_out, out, "pieces must be appended contiguously");
        if end_src != src {
            if !self.predicts(end_out, end_src) {
                self.push(end_out, end_src, Kind::Linear);
            }
            self.gap_pending = true;
        }
    }

    fn anchor(&mut self, out: usize, src: usize, kind: Kind) {
        if kind == Kind::Linear && !self.gap_pending && self.predicts(out, src) {
            return;
        }
        self.push(out, src, kind);
    }

    fn predicts(&self, out: usize, src: usize) -> bool {
        match self.map.anchors.last() {
            None => out == src,
            Some(a) => a.kind == Kind::Linear && a.extrapolate(out) == src,
        }
    }

    fn push(&mut self, out: usize, src: usize, kind: Kind) {
        self.map.anchors.push(Anchor {
            out: narrow(out),
            src: narrow(src),
            kind,
            gap_before: std::mem::take(&mut self.gap_pending),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_needs_no_anchors() {
        let mut b = Builder::default();
        b.piece(0..5, 0..5, Kind::Linear);
        b.piece(5..9, 5..9, Kind::Linear);
        let map = b.finish(9, 9);
        assert!(map.anchors.is_empty());
        assert_eq!(map.start(7), 7);
        assert_eq!(map.end(9), 9);
    }

    #[test]
    fn block_interior_maps_to_block_bounds() {
        // "x" + "35000" (from 12 source bytes) + "y"
        let mut b = Builder::default();
        b.piece(0..1, 0..1, Kind::Linear);
        b.piece(1..6, 1..13, Kind::Block);
        b.piece(6..7, 13..14, Kind::Linear);
        let map = b.finish(7, 14);
        assert_eq!(map.start(1), 1);
        assert_eq!(map.start(3), 1);
        assert_eq!(map.end(3), 13);
        assert_eq!(map.start(6), 13);
        assert_eq!(map.end(6), 13);
        assert_eq!(map.start(7), 14);
    }

    #[test]
    fn dropped_source_keeps_both_ends_tight() {
        // "ab" then source bytes 2..5 dropped, then "c" from 5..6.
        let mut b = Builder::default();
        b.piece(0..2, 0..2, Kind::Linear);
        b.piece(2..3, 5..6, Kind::Linear);
        let map = b.finish(3, 8);
        assert_eq!(map.end(2), 2, "the end of `b` excludes the dropped bytes");
        assert_eq!(map.start(2), 5, "the start of `c` excludes them too");
        assert_eq!(map.end(3), 6);
        assert_eq!(
            map.start(3),
            8,
            "the end of the output is the end of the source"
        );
    }

    #[test]
    fn an_unpredictable_end_before_a_gap_is_stored() {
        // "(" from three source bytes, two source bytes dropped, then "x".
        let mut b = Builder::default();
        b.piece(0..1, 0..3, Kind::Linear);
        b.piece(1..2, 5..6, Kind::Linear);
        let map = b.finish(2, 6);
        assert_eq!(map.end(1), 3);
        assert_eq!(map.start(1), 5);
        assert_eq!(map.end(2), 6);
    }

    #[test]
    fn copy_composes_with_the_source_map() {
        // Source map: "(" "35000" ")" where "35000" is a block from 3..15.
        let mut first = Builder::default();
        first.piece(0..1, 0..3, Kind::Linear);
        first.piece(1..6, 3..15, Kind::Block);
        first.piece(6..7, 15..18, Kind::Linear);
        let first = first.finish(7, 18);
        // Keep only "35000" and ")".
        let mut second = Builder::default();
        second.copy(0, &first, 1..7);
        let second = second.finish(6, 18);
        assert_eq!(second.start(0), 3);
        assert_eq!(second.start(2), 3);
        assert_eq!(second.end(2), 15);
        assert_eq!(second.start(5), 15);
        assert_eq!(second.end(6), 18);
    }
}
