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
//! A block (`vault::blocks`) overlaps the previous one by a few kilobytes so that a match
//! across a block boundary (the normaliser joins lines with a space) is still found; hits
//! are one per line, in path then line order. Files are counted in parallel over the available cores;
//! then only the files holding the requested page are read again for snippets, so a
//! query that matches a million lines costs a count, not a million strings.
//!
//! `vault_find` reads files the same way (`vault::blocks`) and shares [`over_cores`].

use std::ops::Range;

use memchr::memmem::Finder;
use serde_json::json;

use crate::call::CallContext;
use crate::error::{ToolError, ToolResult};
use crate::paths::{FileOpener, RelPath, Root};
use crate::text::lines::{newlines, LineNo};
use crate::text::near::normalize_where_needed;
use crate::text::normalize::normalize_str;
use crate::text::prefilter::Prefilter;
use crate::text::snippet::snippet;

use super::blocks::{each_block, each_block_in, Block, Place, Skip};
use super::forms::{FormsCache, Source};
use super::scope::{Scope, ScopeRequest};

/// Characters of a hit's snippet (the published `snippet` bound).
pub(crate) const SNIPPET_CHARS: usize = 160;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::blocks::{Advance, Blocks, BLOCK_BYTES};

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
}
