//! The vault's files read as blocks of whole lines, for `vault_search`, `vault_find` and
//! the cache of their normalised forms (`vault::forms`): the one reader, so that all three
//! see the same blocks, overlaps and line numbers.
//!
//! A block is about [`BLOCK_BYTES`] extended to the end of its line, and starts with the
//! last [`OVERLAP_BYTES`] of the one before, so that a match across a block boundary (the
//! normaliser joins lines with a space) is still found once. A file whose first bytes hold
//! a NUL or are not UTF-8 is binary and skipped. Memory stays at a block, however large a
//! file.

use std::io::{BufRead, BufReader, Read};
use std::ops::Range;

use crate::paths::{FileOpener, OpenedFile, RelPath};
use crate::text::lines::{newlines, LineNo, LineTable};

/// Bytes read per block before extending it to the end of the line.
pub(super) const BLOCK_BYTES: usize = 1024 * 1024;

/// The read buffer of a file at least this large (a smaller file gets one of its size).
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A line longer than this is split across blocks, so one block never grows past it.
const MAX_BLOCK_BYTES: usize = 16 * 1024 * 1024;

/// Text carried from one block into the next. A match whose original text straddles a
/// block boundary and is longer than this (a query across a thousand blank lines) is the
/// one thing the block-wise search can miss.
const OVERLAP_BYTES: usize = 4096;

/// The first bytes of a file decide whether it is text: a NUL there (as ripgrep does) or
/// bytes that are not UTF-8 mark it binary and it is skipped, not searched.
const SNIFF_BYTES: usize = 8192;

/// A file that is not searched: binary, or not readable.
pub(crate) struct Skip;

/// Calls `on_block` with each block of `rel`, in order, until it returns false. A file
/// that cannot be opened or whose first block is not text is skipped; a read failure
/// later ends the file where it failed.
pub(super) fn each_block(
    opener: &mut FileOpener<'_>,
    rel: &RelPath,
    on_block: impl FnMut(Block<'_>) -> bool,
) -> Result<(), Skip> {
    let (file, size) = open(opener, rel)?;
    each_block_in(file, size, rel, on_block).map(drop)
}

/// Opens `rel` for a search, with its size when opened; a file that cannot be opened
/// (gone, a link, not a regular file) is skipped.
pub(super) fn open(opener: &mut FileOpener<'_>, rel: &RelPath) -> Result<(OpenedFile, u64), Skip> {
    opener.open(rel).map_err(|_| {
        tracing::warn!(
            path = rel.as_str(),
            "search skipped a file it could not open"
        );
        Skip
    })
}

/// [`each_block`] over `file`, opened as `rel` when it was `size` bytes long: true when
/// every block was read and offered (none refused, no read failed).
pub(super) fn each_block_in(
    file: impl Read,
    size: u64,
    rel: &RelPath,
    mut on_block: impl FnMut(Block<'_>) -> bool,
) -> Result<bool, Skip> {
    let mut blocks = Blocks::new(file, size);
    match blocks.advance() {
        Advance::Block if is_text(blocks.raw(), blocks.decoded_whole) => {}
        Advance::End => return Ok(true),
        Advance::Block | Advance::Failed => return Err(Skip),
    }
    loop {
        if !on_block(blocks.current()) {
            return Ok(false);
        }
        match blocks.advance() {
            Advance::Block => {}
            Advance::End => return Ok(true),
            Advance::Failed => {
                tracing::warn!(path = rel.as_str(), "search stopped reading a file");
                return Ok(false);
            }
        }
    }
}

/// What moving to the next block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Advance {
    Block,
    End,
    Failed,
}

/// Whether a file whose first block is `start` is text. `known_utf8`: the whole of
/// `start` was checked already (then so is every prefix, cut inside a character or not).
pub(super) fn is_text(start: &[u8], known_utf8: bool) -> bool {
    let sniffed = &start[..start.len().min(SNIFF_BYTES)];
    if memchr::memchr(0, sniffed).is_some() {
        return false;
    }
    if known_utf8 {
        return true;
    }
    match simdutf8::compat::from_utf8(sniffed) {
        Ok(_) => true,
        // Cut inside a character at the sniff boundary is still text.
        Err(error) => error.error_len().is_none(),
    }
}

/// A block of text: the overlap carried from the previous block, then new lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block<'t> {
    pub text: &'t str,
    pub place: Place,
}

/// Where a block's text stands in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    /// The line on which the text starts.
    pub(super) first_line: LineNo,
    /// Where the new bytes start in the text.
    pub(super) new_from: usize,
}

impl Place {
    /// Whether a match over `span` of the text lies wholly inside the overlap: the
    /// previous block judged it, with more context, so it must not count twice.
    pub(crate) fn judged_before(&self, span: &Range<usize>) -> bool {
        span.end <= self.new_from
    }

    /// The file's line holding byte `at` of the text; `lines` indexes the text.
    pub(crate) fn line_of(&self, lines: &LineTable, at: usize) -> LineNo {
        self.first_line.saturating_add(lines.line_at(at) - 1)
    }
}

/// Reads a file as consecutive blocks of whole lines (a line longer than
/// [`MAX_BLOCK_BYTES`] is split), each starting with the tail of the one before.
pub(super) struct Blocks<R: Read> {
    reader: BufReader<R>,
    bytes: Vec<u8>,
    text: String,
    first_line: LineNo,
    new_from: usize,
    /// Whether the latest block's bytes were UTF-8 as read.
    decoded_whole: bool,
}

impl<R: Read> Blocks<R> {
    /// Blocks of `file`, whose size was `size` when opened: the buffers are sized by it,
    /// so a file smaller than the read buffer is read straight into its block, without
    /// a copy through the buffer or a block grown step by step (most vault files are
    /// small, and each allocation is paid per file). A file that has grown since is
    /// still read whole.
    pub(super) fn new(file: R, size: u64) -> Self {
        let expected = usize::try_from(size).map_or(BLOCK_BYTES, |size| size.min(BLOCK_BYTES));
        Blocks {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES.min(expected + 1), file),
            bytes: Vec::with_capacity(expected + 1),
            text: String::with_capacity(expected),
            first_line: 1,
            new_from: 0,
            decoded_whole: false,
        }
    }

    /// The bytes of the latest block as read, before decoding (which would hide bytes
    /// that are not UTF-8 behind U+FFFD).
    fn raw(&self) -> &[u8] {
        &self.bytes
    }

    pub(super) fn current(&self) -> Block<'_> {
        Block {
            text: &self.text,
            place: Place {
                first_line: self.first_line,
                new_from: self.new_from,
            },
        }
    }

    /// Moves to the next block (read it with [`Blocks::current`]).
    pub(super) fn advance(&mut self) -> Advance {
        self.carry_overlap();
        self.new_from = self.text.len();
        self.bytes.clear();
        match self.fill() {
            Err(()) => return Advance::Failed,
            Ok(0) => return Advance::End,
            Ok(_) => {}
        }
        // Bytes that are not UTF-8 after the first block (which decided the file is text),
        // and a character split with a line longer than MAX_BLOCK_BYTES, are searched as
        // U+FFFD rather than dropping the rest of the file.
        let decoded = simdutf8::basic::from_utf8(&self.bytes);
        self.decoded_whole = decoded.is_ok();
        match decoded {
            Ok(text) => self.text.push_str(text),
            Err(_) => self.text.push_str(&String::from_utf8_lossy(&self.bytes)),
        }
        Advance::Block
    }

    /// Reads about [`BLOCK_BYTES`], then on to the end of that line.
    fn fill(&mut self) -> Result<usize, ()> {
        (&mut self.reader)
            .take(BLOCK_BYTES as u64)
            .read_to_end(&mut self.bytes)
            .map_err(drop)?;
        while self.bytes.last().is_some_and(|&b| b != b'\n') && self.bytes.len() < MAX_BLOCK_BYTES {
            let buffer = self.reader.fill_buf().map_err(drop)?;
            if buffer.is_empty() {
                break;
            }
            let room = MAX_BLOCK_BYTES - self.bytes.len();
            let (taken, done) = match memchr::memchr(b'\n', buffer) {
                Some(newline) if newline < room => (newline + 1, true),
                _ => (buffer.len().min(room), false),
            };
            self.bytes.extend_from_slice(&buffer[..taken]);
            self.reader.consume(taken);
            if done {
                break;
            }
        }
        Ok(self.bytes.len())
    }

    /// Keeps the last [`OVERLAP_BYTES`] (whole characters) of the current text, and moves
    /// `first_line` to the line they start on.
    fn carry_overlap(&mut self) {
        let mut keep_from = self.text.len().saturating_sub(OVERLAP_BYTES);
        while !self.text.is_char_boundary(keep_from) {
            keep_from += 1;
        }
        let dropped_lines = newlines(&self.text.as_bytes()[..keep_from]);
        self.first_line = self.first_line.saturating_add(dropped_lines);
        self.text.drain(..keep_from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_utf8_without_nul_even_when_cut_inside_a_character() {
        assert!(is_text("日本語 text\n".as_bytes(), false));
        assert!(is_text(&"日本語".as_bytes()[..4], false));
        assert!(!is_text(b"caf\xe9\n", false));
        assert!(!is_text(b"text\0more", false));
        assert!(
            !is_text(b"text\0more", true),
            "a NUL marks it binary whatever the rest"
        );
        // Only the first SNIFF_BYTES decide.
        let mut late = vec![b'a'; SNIFF_BYTES];
        late.push(0);
        assert!(is_text(&late, false));
    }

    #[test]
    fn blocks_carry_an_overlap_and_count_its_lines() {
        let text: String = (1..=300_000).map(|n| format!("{n}\n")).collect();
        let mut blocks = Blocks::new(text.as_bytes(), 0);
        let mut starts = Vec::new();
        while blocks.advance() == Advance::Block {
            let block = blocks.current();
            let first = block.text.lines().next().unwrap();
            // A block starts mid-line only inside its overlap; the line it is on is right.
            let whole_first_line = text
                .lines()
                .nth(block.place.first_line as usize - 1)
                .unwrap();
            assert!(
                whole_first_line.ends_with(first),
                "{first} in {whole_first_line}"
            );
            assert!(block.text[block.place.new_from..].ends_with('\n'));
            starts.push(block.place.first_line);
        }
        assert!(
            starts.len() > 1,
            "the text fits one block: the test proves nothing"
        );
        assert!(starts.windows(2).all(|pair| pair[0] < pair[1]));
    }
}
