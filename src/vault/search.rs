//! `vault_search`: every line of the vault's text files where a query occurs, after the
//! same normalisation the manual search uses (`text::normalize`), in pages.
//!
//! The vault changes under the agent's hands, so there is no index to keep fresh: each
//! call streams the files in scope in blocks of whole lines and finds the query in their
//! normalisation with memchr's `memmem`. Normalising is what a scan costs, and the query
//! occurs in little of most text, so a block is normalised only around the raw places
//! where the query can occur (`text::prefilter`, `text::near`: exact, the same hits at
//! the same places as normalising it whole). Memory stays at a block, however large a
//! file. A server keeps each file's normalised blocks between calls while the file is
//! unchanged (`vault::forms`, within `VAULT_CACHE_MAX_BYTES`); the query is then found
//! in them with no normalising at all.
//! A block overlaps the previous one by [`OVERLAP_BYTES`] so that a match across a block
//! boundary (the normaliser joins lines with a space) is still found; hits are one per
//! line, in path then line order. Files are counted in parallel over the available cores;
//! then only the files holding the requested page are read again for snippets, so a
//! query that matches a million lines costs a count, not a million strings.
//!
//! `vault_find` reads files the same way: [`each_block`], [`Block`] and [`over_cores`]
//! are shared with it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::ops::Range;

use memchr::memmem::Finder;
use serde_json::json;

use crate::call::CallContext;
use crate::error::{ToolError, ToolResult};
use crate::paths::{FileOpener, RelPath, Root};
use crate::text::lines::{newlines, LineNo, LineTable};
use crate::text::near::normalize_where_needed;
use crate::text::normalize::normalize_str;
use crate::text::prefilter::Prefilter;
use crate::text::snippet::snippet;

use super::forms::{FormsCache, Source};

use super::scope::{Scope, ScopeRequest};

/// Characters of a hit's snippet (the published `snippet` bound).
pub(crate) const SNIPPET_CHARS: usize = 160;

/// Bytes read per block before extending it to the end of the line.
const BLOCK_BYTES: usize = 1024 * 1024;

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

#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchRequest<'a> {
    pub query: &'a str,
    pub scope: ScopeRequest<'a>,
    pub offset: u64,
    pub limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub path: String,
    pub start_line: LineNo,
    pub snippet: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchPage {
    pub hits: Vec<Hit>,
    pub total: u64,
    /// Text files searched.
    pub scanned_files: u64,
    /// Files in scope left out: binary, or gone or unreadable since the listing.
    pub skipped_files: u64,
}

/// The normalised query without its outer spaces; `invalid_parameter` when nothing is
/// left to look for.
pub(super) fn searchable(query: &str) -> ToolResult<String> {
    let normalised = normalize_str(query);
    let needle = normalised.trim_matches(' ');
    if needle.is_empty() {
        return Err(ToolError::invalid_parameter(
            "query has no searchable characters once whitespace is normalised",
        )
        .with_details(json!({ "field": "query", "rule": "contains a non-space character" })));
    }
    Ok(needle.to_owned())
}

/// The normalised query, what finds it in normalised text, and where in raw text it may
/// be.
struct Needle {
    finder: Finder<'static>,
    prefilter: Option<Prefilter>,
}

impl Needle {
    fn new(needle: &str) -> Needle {
        Needle {
            finder: Finder::new(needle.as_bytes()).into_owned(),
            prefilter: Prefilter::new(needle),
        }
    }

    /// Where the needle occurs in `normalized` text, in order, as the ranges `original`
    /// maps its normalised ranges to.
    fn spans<'t>(
        &'t self,
        normalized: &'t str,
        original: impl Fn(Range<usize>) -> Range<usize> + 't,
    ) -> impl Iterator<Item = Range<usize>> + 't {
        let len = self.finder.needle().len();
        let found = self.finder.find_iter(normalized.as_bytes());
        found.map(move |start| original(start..start + len))
    }
}

/// Searches the vault; `call` receives progress per file and stops the search between
/// blocks once cancelled (the answer is then the cancellation error).
pub(crate) fn search(
    root: &Root,
    forms: &FormsCache,
    request: &SearchRequest<'_>,
    call: &CallContext,
) -> ToolResult<SearchPage> {
    let needle = Needle::new(&searchable(request.query)?);
    let files = Scope::new(request.scope)?.file_paths(root)?;
    call.expect_work(files.len() as u64, "files");
    let outcomes = count_in_parallel(root, forms, &files, &needle, call);
    call.check_cancelled()?;
    let window = request.offset..request.offset.saturating_add(request.limit);
    let mut opener = root.file_opener();
    let mut page = SearchPage {
        hits: Vec::new(),
        total: 0,
        scanned_files: 0,
        skipped_files: 0,
    };
    for (file, outcome) in files.iter().zip(outcomes) {
        let Outcome::Searched { hits } = outcome else {
            page.skipped_files += 1;
            continue;
        };
        page.scanned_files += 1;
        let first = page.total;
        page.total += hits;
        if first < window.end && window.start < page.total {
            // Only the files holding the page are read a second time, for snippets.
            let wanted = window.start.saturating_sub(first)..window.end - first;
            page.hits
                .extend(snippets(&mut opener, file, &needle, wanted, call));
        }
    }
    Ok(page)
}

/// What searching one file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Searched {
        hits: u64,
    },
    /// Binary, or gone or unreadable since the listing.
    Skipped,
}

/// Counts the hits of every file over the available cores.
fn count_in_parallel(
    root: &Root,
    forms: &FormsCache,
    files: &[RelPath],
    needle: &Needle,
    call: &CallContext,
) -> Vec<Outcome> {
    let runs = over_cores(files, |run| {
        let mut opener = root.file_opener();
        run.iter()
            .map(|file| {
                if call.is_cancelled() {
                    return Outcome::Skipped;
                }
                let outcome = match count_hits(forms, &mut opener, file, needle, call) {
                    Ok(hits) => Outcome::Searched { hits },
                    Err(Skip) => Outcome::Skipped,
                };
                call.work_done(1);
                outcome
            })
            .collect::<Vec<_>>()
    });
    runs.into_iter().flatten().collect()
}

/// The lines of `rel` where the needle occurs: in its cached forms, or in its blocks.
fn count_hits(
    forms: &FormsCache,
    opener: &mut FileOpener<'_>,
    rel: &RelPath,
    needle: &Needle,
    call: &CallContext,
) -> Result<u64, Skip> {
    let mut hits = 0;
    let mut last_hit_line = 0;
    match forms.source(opener, rel)? {
        Source::Forms(file) => {
            for block in &file.blocks {
                if call.is_cancelled() {
                    break;
                }
                let normalized = &block.normalized;
                let spans =
                    needle.spans(&normalized.text, |found| normalized.original_range(found));
                let line_of = |at: usize| block.place.line_of(&block.lines, at);
                first_per_line(spans, block.place, line_of, &mut last_hit_line, |_, _| {
                    hits += 1;
                    true
                });
            }
        }
        Source::File(file, size) => {
            each_block_in(file, size, rel, |block| {
                !call.is_cancelled()
                    && search_block(block, needle, &mut last_hit_line, &mut |_| {
                        hits += 1;
                        true
                    })
            })?;
        }
    }
    Ok(hits)
}

/// Runs `work` on contiguous runs of `items`, one run per available core (normalising is
/// the cost of a search, and it is per file), and returns each run's result in item
/// order. A run's result is whatever its work gathers over its files (one outcome per
/// file, the best candidates of all of them).
pub(super) fn over_cores<E: Sync, T: Send>(items: &[E], work: impl Fn(&[E]) -> T + Sync) -> Vec<T> {
    let workers = crate::machine::cores();
    let run = items.len().div_ceil(workers).max(1);
    crate::machine::over_parts(items.chunks(run).collect(), work)
}

/// The hits of `rel` whose index within the file is in `wanted`, with snippets. A file
/// changed since it was counted yields what it holds now.
fn snippets(
    opener: &mut FileOpener<'_>,
    rel: &RelPath,
    needle: &Needle,
    wanted: Range<u64>,
    call: &CallContext,
) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut index = 0;
    let _ = each_hit(opener, rel, needle, call, |found| {
        if wanted.contains(&index) {
            hits.push(Hit {
                path: rel.as_str().to_string(),
                start_line: found.line,
                snippet: snippet(found.block, found.original, SNIPPET_CHARS),
            });
        }
        index += 1;
        index < wanted.end
    });
    hits
}

/// A file that is not searched: binary, or not readable.
pub(crate) struct Skip;

/// One hit: the line it starts on, and where in which block text.
struct Found<'b> {
    line: LineNo,
    block: &'b str,
    original: usize,
}

/// Calls `on_hit` for the first match on each line of `rel`, in order, until it returns
/// false or the call is cancelled.
fn each_hit(
    opener: &mut FileOpener<'_>,
    rel: &RelPath,
    needle: &Needle,
    call: &CallContext,
    mut on_hit: impl FnMut(Found<'_>) -> bool,
) -> Result<(), Skip> {
    let mut last_hit_line = 0;
    each_block(opener, rel, |block| {
        !call.is_cancelled() && search_block(block, needle, &mut last_hit_line, &mut on_hit)
    })
}

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
pub(super) fn open(opener: &mut FileOpener<'_>, rel: &RelPath) -> Result<(File, u64), Skip> {
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
enum Advance {
    Block,
    End,
    Failed,
}

/// Reports the first match of each line of `block` after `last_hit_line`; false when
/// `on_hit` asked to stop.
fn search_block(
    block: Block<'_>,
    needle: &Needle,
    last_hit_line: &mut LineNo,
    on_hit: &mut impl FnMut(Found<'_>) -> bool,
) -> bool {
    let mut lines = LineCursor::new(block);
    let pieces = normalize_where_needed(block.text, needle.prefilter.as_ref());
    let spans = pieces.iter().flat_map(|piece| {
        needle.spans(&piece.normalized.text, move |found| {
            piece.original_range(found)
        })
    });
    let line_of = |at: usize| lines.line_of(at);
    first_per_line(
        spans,
        block.place,
        line_of,
        last_hit_line,
        |line, original| {
            on_hit(Found {
                line,
                block: block.text,
                original,
            })
        },
    )
}

/// Calls `on_hit` with the line and the start of the first of `spans` (original ranges,
/// in order) on each line after `last_hit_line`, leaving out those the previous block
/// judged; false when `on_hit` asked to stop.
fn first_per_line(
    spans: impl Iterator<Item = Range<usize>>,
    place: Place,
    mut line_of: impl FnMut(usize) -> LineNo,
    last_hit_line: &mut LineNo,
    mut on_hit: impl FnMut(LineNo, usize) -> bool,
) -> bool {
    for span in spans {
        if place.judged_before(&span) {
            continue;
        }
        let line = line_of(span.start);
        if line <= *last_hit_line {
            continue;
        }
        *last_hit_line = line;
        if !on_hit(line, span.start) {
            return false;
        }
    }
    true
}

/// The lines of a block counted forward to each hit: a needle's hits come in order, so
/// counting the newlines up to each reads the block once, to its last hit, with no table
/// of every line (building one for each block with a hit was a twentieth of a search).
struct LineCursor<'b> {
    block: Block<'b>,
    at: usize,
    line: LineNo,
}

impl<'b> LineCursor<'b> {
    fn new(block: Block<'b>) -> Self {
        LineCursor {
            block,
            at: 0,
            line: block.place.first_line,
        }
    }

    /// The file's line holding byte `at` of the block's text.
    fn line_of(&mut self, at: usize) -> LineNo {
        if at < self.at {
            *self = LineCursor::new(self.block);
        }
        let between = &self.block.text.as_bytes()[self.at..at];
        self.line = self.line.saturating_add(newlines(between));
        self.at = at;
        self.line
    }
}

/// Whether a file whose first block is `start` is text. `known_utf8`: the whole of
/// `start` was checked already (then so is every prefix, cut inside a character or not).
fn is_text(start: &[u8], known_utf8: bool) -> bool {
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
    first_line: LineNo,
    /// Where the new bytes start in the text.
    new_from: usize,
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
struct Blocks<R: Read> {
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
    fn new(file: R, size: u64) -> Self {
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

    fn current(&self) -> Block<'_> {
        Block {
            text: &self.text,
            place: Place {
                first_line: self.first_line,
                new_from: self.new_from,
            },
        }
    }

    /// Moves to the next block (read it with [`Blocks::current`]).
    fn advance(&mut self) -> Advance {
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

    /// The line and the first characters of each hit `search_block` reports in `text`.
    fn hits(text: &str, needle: &Needle) -> Vec<(LineNo, String)> {
        let mut blocks = Blocks::new(text.as_bytes(), text.len() as u64);
        let (mut last_hit_line, mut hits) = (0, Vec::new());
        while blocks.advance() == Advance::Block {
            search_block(blocks.current(), needle, &mut last_hit_line, &mut |found| {
                let start = found.block[found.original..].chars().take(4).collect();
                hits.push((found.line, start));
                true
            });
        }
        hits
    }

    #[test]
    fn the_prefilter_finds_what_normalising_every_block_finds() {
        let spellings = [
            "see INCIDENT-4711 now",
            "ｉｎｃｉｄｅｎｔ－４７１１",
            "㏌cident-四七一一 and incident-4711 twice",
            "incident-４７１１ with full-width digits",
            "incident 4711 is no hit",
        ];
        let mut text = String::new();
        for line in 0..60_000 {
            text.push_str(if line % 7 == 0 {
                spellings[line / 7 % spellings.len()]
            } else {
                "障害対応の手順を確認する。"
            });
            text.push('\n');
        }
        let with_prefilter = Needle::new(&searchable("Incident-4711").unwrap());
        assert!(with_prefilter.prefilter.is_some());
        let whole = Needle {
            prefilter: None,
            ..Needle::new(&searchable("Incident-4711").unwrap())
        };
        let found = hits(&text, &with_prefilter);
        assert!(
            text.len() > 2 * BLOCK_BYTES,
            "the text must span several blocks"
        );
        let hit_lines = (0..60_000).filter(|line| line % 7 == 0 && line / 7 % 5 != 4);
        assert_eq!(found.len(), hit_lines.count(), "four of five spellings");
        assert_eq!(found, hits(&text, &whole));
        let lines: Vec<&str> = text.lines().collect();
        for (line, start) in &found {
            assert!(lines[*line as usize - 1].contains(start.as_str()), "{line}");
        }
    }

    #[test]
    fn cached_forms_give_the_pages_that_windows_give() {
        let mut long = String::new();
        for line in 0..120_000 {
            long.push_str(match line % 9 {
                0 => "ＩＮＣＩＤＥＮＴ－４７１１ and 障害\n対応",
                4 => "incident-四七一一、incident 4711",
                _ => "障害対応の手順を確認する。",
            });
            long.push('\n');
        }
        assert!(long.len() > 2 * BLOCK_BYTES, "several blocks");
        let files = [
            ("a.md", long.as_str()),
            ("b/c.md", "incident-4711\n\n障害対応\n"),
            ("d.bin", "text\0binary incident-4711\n"),
        ];
        let (_dir, root) = crate::vault::find::testing::vault(&files);
        let cache = FormsCache::settling(1 << 30, std::time::Duration::ZERO);
        let off = FormsCache::new(0);
        let call = CallContext::local();
        for query in ["incident-4711", "障害対応", "4711", "障害 対応"] {
            let request = SearchRequest {
                query,
                scope: ScopeRequest::default(),
                offset: 40_000,
                limit: 30,
            };
            let windows = search(&root, &off, &request, &call).unwrap();
            assert!(
                windows.total > 0 && windows.skipped_files == 1,
                "{query}: {windows:?}"
            );
            let seen = search(&root, &cache, &request, &call).unwrap();
            let built = search(&root, &cache, &request, &call).unwrap();
            assert!(cache.held_bytes() > 0);
            let held = search(&root, &cache, &request, &call).unwrap();
            assert_eq!(seen, windows, "{query}: first sight");
            assert_eq!(built, windows, "{query}: forms built");
            assert_eq!(held, windows, "{query}: forms held");
        }
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
