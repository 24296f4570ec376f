//! What a vault file's lines are, without holding the file: how many there are (for
//! `vault_ls`, the audit's citation checks and, through `write::append_point`, bridge
//! appends) and which of them hold no
//! evidence (for `vault_coverage`).
//!
//! Lines without evidence are blank lines, a Markdown file's front matter and, in
//! Markdown, lines that are one HTML comment: the places bridge copies record their
//! origin, which a reader never sees.
//!
//! Both stream the file through one buffer, with the line rule of [`super::lines`]: lines
//! end at `\n`, a final line without one still counts, an empty file has no line.

use std::io::{self, BufRead, BufReader, Read};

use crate::artifact::{LineProfile, LineRange};
use crate::error::ToolResult;
use crate::paths::{RelPath, Root};
use crate::text::lines::{self, LineNo};

use super::policy::{extension_of, Access};
use super::target;

const BUFFER_BYTES: usize = 256 * 1024;

/// The line count of a file and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineCount {
    pub lines: LineNo,
    /// False when the last line has no `\n`: text appended must start with one.
    pub ends_with_newline: bool,
}

/// Counts the lines of `reader` (memchr over the buffer, no per-line work).
pub(crate) fn count_lines(reader: impl Read) -> io::Result<LineCount> {
    let mut reader = BufReader::with_capacity(BUFFER_BYTES, reader);
    let (mut newlines, mut last) = (0 as LineNo, None);
    loop {
        let buffer = reader.fill_buf()?;
        let Some(&final_byte) = buffer.last() else {
            break;
        };
        newlines = newlines.saturating_add(lines::newlines(buffer));
        last = Some(final_byte);
        let consumed = buffer.len();
        reader.consume(consumed);
    }
    Ok(match last {
        None => LineCount {
            lines: 0,
            ends_with_newline: true,
        },
        Some(b'\n') => LineCount {
            lines: newlines,
            ends_with_newline: true,
        },
        Some(_) => LineCount {
            lines: newlines.saturating_add(1),
            ends_with_newline: false,
        },
    })
}

/// The line count of the vault file `path` (policy checked first, for reading).
pub(crate) fn line_count(root: &Root, path: &str) -> ToolResult<LineCount> {
    let rel = target(path, Access::Read)?;
    let file = root.open_file(&rel)?;
    count_lines(file).map_err(|error| super::read_failed(&rel, error))
}

/// The profile of the vault file `path` for coverage, with the path as the server spells
/// it. Blank lines are those holding only whitespace (ASCII or U+3000, the ideographic
/// space Japanese text indents with); in a `.md` file, so are its front matter (a first
/// line `---` through the next `---` or `...` line) and lines holding one HTML comment.
pub(crate) fn profile(root: &Root, path: &str) -> ToolResult<(RelPath, LineProfile)> {
    let rel = target(path, Access::Read)?;
    let file = root.open_file(&rel)?;
    let markdown = rel
        .file_name()
        .and_then(extension_of)
        .is_some_and(|extension| extension == "md");
    let profile = profile_lines(file, markdown).map_err(|error| super::read_failed(&rel, error))?;
    Ok((rel, profile))
}

fn profile_lines(reader: impl Read, markdown: bool) -> io::Result<LineProfile> {
    let mut reader = BufReader::with_capacity(BUFFER_BYTES, reader);
    let mut profiler = Profiler::new(markdown);
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let mut rest = buffer;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            profiler.feed(&rest[..newline]);
            profiler.end_line();
            rest = &rest[newline + 1..];
        }
        profiler.feed(rest);
        let consumed = buffer.len();
        reader.consume(consumed);
    }
    Ok(profiler.finish())
}

/// Where a Markdown file's front matter stands while its first lines go by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrontMatter {
    /// Line 1 has not ended yet (Markdown files only).
    Possible,
    /// Line 1 was `---`; the block is open.
    Open,
    /// Closed at some line, absent, or not looked for.
    Settled,
}

/// Bytes kept from the start and the end of each line of a Markdown file: enough for a
/// front-matter delimiter (`---` and trailing whitespace) and for the `<!--` / `-->` of a
/// one-line HTML comment after up to three spaces of indentation.
const HEAD_BYTES: usize = 16;
const TAIL_BYTES: usize = 8;

struct Profiler {
    profile: LineProfile,
    markdown: bool,
    front_matter: FrontMatter,
    /// The current line: whether it has bytes, a character other than whitespace, its
    /// byte length, and (Markdown only) its first and last bytes.
    open: bool,
    has_text: bool,
    length: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Profiler {
    fn new(markdown: bool) -> Profiler {
        Profiler {
            profile: LineProfile::default(),
            markdown,
            front_matter: if markdown {
                FrontMatter::Possible
            } else {
                FrontMatter::Settled
            },
            open: false,
            has_text: false,
            length: 0,
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.open = true;
        self.length += bytes.len();
        if !self.has_text {
            self.has_text = !only_whitespace(bytes);
        }
        if self.markdown {
            let room = HEAD_BYTES.saturating_sub(self.head.len());
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
            self.tail
                .extend_from_slice(&bytes[bytes.len().saturating_sub(TAIL_BYTES)..]);
            let excess = self.tail.len().saturating_sub(TAIL_BYTES);
            self.tail.drain(..excess);
        }
    }

    fn end_line(&mut self) {
        self.profile.total_lines += 1;
        let line = self.profile.total_lines;
        if !self.has_text || self.is_comment_line() {
            push_line(&mut self.profile.blank_ranges, line);
        }
        let delimiter = if self.length > HEAD_BYTES {
            &[][..]
        } else {
            self.head.trim_ascii_end()
        };
        self.front_matter = match self.front_matter {
            FrontMatter::Possible if delimiter == b"---" => FrontMatter::Open,
            FrontMatter::Open if delimiter == b"---" || delimiter == b"..." => {
                // Everything so far is front matter: one blank range from line 1.
                self.profile.blank_ranges = vec![LineRange {
                    start_line: 1,
                    end_line: line,
                }];
                FrontMatter::Settled
            }
            FrontMatter::Open => FrontMatter::Open,
            _ => FrontMatter::Settled,
        };
        self.open = false;
        self.has_text = false;
        self.length = 0;
        self.head.clear();
        self.tail.clear();
    }

    /// A Markdown line holding one HTML comment and nothing else (such as the origin line
    /// of a bridge append): invisible when rendered, so no evidence.
    fn is_comment_line(&self) -> bool {
        self.markdown
            && self.head.trim_ascii_start().starts_with(b"<!--")
            && self.tail.trim_ascii_end().ends_with(b"-->")
            && self.length >= "<!---->".len()
    }

    fn finish(mut self) -> LineProfile {
        if self.open {
            self.end_line();
        }
        self.profile
    }
}

/// Adds `line` to ascending `ranges`, extending the last one when adjacent.
fn push_line(ranges: &mut Vec<LineRange>, line: LineNo) {
    match ranges.last_mut() {
        Some(last) if last.end_line + 1 == line => last.end_line = line,
        _ => ranges.push(LineRange {
            start_line: line,
            end_line: line,
        }),
    }
}

const IDEOGRAPHIC_SPACE: &[u8] = "\u{3000}".as_bytes();

/// True when `bytes` hold only ASCII whitespace and U+3000. A character split across two
/// reads counts as text: at worst a rare blank line is counted as one to cite.
fn only_whitespace(mut bytes: &[u8]) -> bool {
    loop {
        match bytes.iter().position(|byte| !byte.is_ascii_whitespace()) {
            None => return true,
            Some(at) => match bytes[at..].strip_prefix(IDEOGRAPHIC_SPACE) {
                Some(rest) => bytes = rest,
                None => return false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile_of(text: &str, markdown: bool) -> (LineNo, Vec<LineRange>) {
        let profile = profile_lines(text.as_bytes(), markdown).unwrap();
        (profile.total_lines, profile.blank_ranges)
    }

    #[test]
    fn counts_lines_like_the_reader() {
        let count = |text: &str| {
            let counted = count_lines(text.as_bytes()).unwrap();
            (counted.lines, counted.ends_with_newline)
        };
        assert_eq!(count(""), (0, true));
        assert_eq!(count("a"), (1, false));
        assert_eq!(count("a\n"), (1, true));
        assert_eq!(count("a\n\nb"), (3, false));
        for text in ["", "a", "a\n", "a\n\nb", "\n\n"] {
            assert_eq!(profile_of(text, false).0, count(text).0, "{text:?}");
        }
    }

    #[test]
    fn whitespace_lines_are_blank() {
        let text = "# T\n\n  \t\r\ntext\n\u{3000}\u{3000}\n\u{3000}x\n";
        assert_eq!(
            profile_of(text, false),
            (6, LineRange::from_pairs(&[(2, 3), (5, 5)]))
        );
    }

    #[test]
    fn markdown_front_matter_is_blank_through_its_closing_line() {
        let text = "---\nsource_refs: [\"h/a.md#L1-L2\"]\n---\n\n# A\nbody\n";
        assert_eq!(
            profile_of(text, true),
            (6, LineRange::from_pairs(&[(1, 4)]))
        );
        let dotted = "---\r\ntitle: x\r\n...\r\nbody";
        assert_eq!(
            profile_of(dotted, true),
            (4, LineRange::from_pairs(&[(1, 3)]))
        );
        // Only Markdown, only from line 1, only when closed.
        assert_eq!(
            profile_of(text, false),
            (6, LineRange::from_pairs(&[(4, 4)]))
        );
        assert_eq!(profile_of("x\n---\na\n---\n", true), (4, vec![]));
        assert_eq!(profile_of("---\nno end\n", true), (2, vec![]));
        assert_eq!(profile_of("----\na\n----\n", true), (3, vec![]));
        let long_first = format!("---{}x\na\n---\n", " ".repeat(HEAD_BYTES));
        assert_eq!(profile_of(&long_first, true), (3, vec![]));
    }

    #[test]
    fn markdown_comment_lines_are_blank() {
        let text =
            "a\n<!-- source_refs: [\"h/a.md#L1-L2\"] -->\n  <!--x-->  \n<!-- open\nb <!-- c -->\n";
        assert_eq!(
            profile_of(text, true),
            (5, LineRange::from_pairs(&[(2, 3)]))
        );
        assert_eq!(profile_of(text, false), (5, vec![]));
        let long = format!("<!-- {} -->\n", "注".repeat(BUFFER_BYTES));
        assert_eq!(
            profile_of(&long, true),
            (1, LineRange::from_pairs(&[(1, 1)]))
        );
    }

    #[test]
    fn lines_longer_than_the_buffer_are_judged_whole() {
        let long_blank = " ".repeat(BUFFER_BYTES * 2);
        let long_text = format!("{}x", " ".repeat(BUFFER_BYTES + 3));
        let text = format!("{long_blank}\n{long_text}\n\n");
        assert_eq!(
            profile_of(&text, true),
            (3, LineRange::from_pairs(&[(1, 1), (3, 3)]))
        );
    }
}
