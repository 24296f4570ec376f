//! A window of lines streamed out of a file: the engine of `vault_read` and `vault_scan`.
//!
//! Vault files can be far larger than memory is willing to hold (a 2 GB log), and a client
//! asks for a few dozen lines at a time. So the file is never loaded: lines before the
//! window are skipped by counting `\n` in the reader's buffer (memchr, no allocation per
//! line), and a line is only ever read as far as the character budget could still use,
//! so peak memory is the buffer plus the answer, whatever the file or line length.
//!
//! Lines end at `\n` (a `\r` before it belongs to the line, as in `text::lines`), and the
//! text is returned verbatim: the lines' bytes with their line breaks, only the last
//! line's break left off, unless the window is the whole file ([`Ending::File`]): then the
//! final break is kept too, so that reading a file and writing the text back changes
//! nothing. Only whole lines are returned, except a first line longer than the whole
//! budget, which is cut; the window then moves past it.

use std::io::{self, BufRead, BufReader, Read};

use crate::error::ToolResult;
use crate::paths::RelPath;
use crate::text::lines::LineNo;

/// Reader buffer: large enough that skipping runs at memchr speed, small enough to be
/// irrelevant beside the answer.
const BUFFER_BYTES: usize = 256 * 1024;

/// A character is at most four bytes of UTF-8, so a line longer than this many bytes per
/// remaining character cannot fit the budget.
const MAX_UTF8_BYTES: usize = 4;

/// Why a window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The file has no line after the window.
    EndOfFile,
    /// The window holds as many lines as asked for, and the file goes on.
    LineLimit,
    /// The next line (or the rest of the first) did not fit the character budget.
    CharLimit,
    /// The window would start after the last line of a file that has `line_count` lines
    /// (an empty file read from line 1 is an empty window, not past its end).
    PastEnd { line_count: LineNo },
}

/// What a window's text ends with when it reaches the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A piece of the file: the last line without its break, like every window.
    Window,
    /// The whole file: its final line break kept, so the text is the file. Each line's
    /// own break then counts toward the character budget.
    File,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub text: String,
    pub chars: usize,
    /// First line of the window (1-based).
    pub first_line: LineNo,
    /// Last line returned; `first_line - 1` when none was.
    pub last_line: LineNo,
    /// The line to continue from, or `None` when the file ends within the window.
    pub next_line: Option<LineNo>,
    pub stop: Stop,
}

/// Up to `max_lines` lines from `first_line` (1-based) of `file`, within `max_chars`
/// characters. A line that is not UTF-8 is an error naming its number.
pub(crate) fn window(
    file: impl Read,
    rel: &RelPath,
    first_line: LineNo,
    max_lines: LineNo,
    max_chars: usize,
    ending: Ending,
) -> ToolResult<Window> {
    let io_failed = |error: io::Error| super::read_failed(rel, error);
    let mut reader = BufReader::with_capacity(BUFFER_BYTES, file);
    let mut builder = Builder::new(first_line, max_chars, ending);
    let skipped = skip_lines(&mut reader, first_line - 1).map_err(io_failed)?;
    if skipped.lines < first_line - 1 {
        let line_count = skipped.lines + LineNo::from(skipped.ends_mid_line);
        return Ok(builder.finish(Stop::PastEnd { line_count }, None));
    }
    let mut line = Vec::new();
    let mut number = first_line;
    loop {
        if number - first_line == max_lines {
            return Ok(if at_end(&mut reader).map_err(io_failed)? {
                builder.finish(Stop::EndOfFile, None)
            } else {
                builder.finish(Stop::LineLimit, Some(number))
            });
        }
        let cap = builder
            .remaining_chars()
            .saturating_add(1)
            .saturating_mul(MAX_UTF8_BYTES);
        let end = read_line_capped(&mut reader, &mut line, cap).map_err(io_failed)?;
        if end == LineEnd::Eof && number == first_line && first_line > 1 {
            let line_count = first_line - 1;
            return Ok(builder.finish(Stop::PastEnd { line_count }, None));
        }
        if end == LineEnd::Eof {
            return Ok(builder.finish(Stop::EndOfFile, None));
        }
        let (content, newline) = split_terminator(&line, end);
        let content = decode(content, end).ok_or_else(|| super::not_text(rel, number))?;
        if !builder.push(content, newline) {
            if number > first_line {
                return Ok(builder.finish(Stop::CharLimit, Some(number)));
            }
            // A first line longer than the whole budget: cut it and move past its rest.
            builder.push_cut(content);
            if end == LineEnd::Capped {
                skip_lines(&mut reader, 1).map_err(io_failed)?;
            }
            let more = !at_end(&mut reader).map_err(io_failed)?;
            return Ok(builder.finish(Stop::CharLimit, more.then_some(number + 1)));
        }
        number += 1;
    }
}

/// Collects whole lines within the budget. The previous line's break is held back until
/// another line follows, so the text never ends with a line break.
struct Builder {
    text: String,
    chars: usize,
    max_chars: usize,
    first_line: LineNo,
    lines: LineNo,
    pending_break: &'static str,
    ending: Ending,
}

impl Builder {
    fn new(first_line: LineNo, max_chars: usize, ending: Ending) -> Builder {
        Builder {
            text: String::new(),
            chars: 0,
            max_chars,
            first_line,
            lines: 0,
            pending_break: "",
            ending,
        }
    }

    fn remaining_chars(&self) -> usize {
        self.max_chars - self.chars
    }

    /// Adds a whole line if it fits; false (and nothing added) otherwise.
    fn push(&mut self, content: &str, line_break: &'static str) -> bool {
        let added = self.pending_break.len() + content.chars().count();
        let own_break = match self.ending {
            Ending::File => line_break.len(),
            Ending::Window => 0,
        };
        if self.chars + added + own_break > self.max_chars {
            return false;
        }
        self.text.push_str(self.pending_break);
        self.text.push_str(content);
        self.chars += added;
        self.lines += 1;
        self.pending_break = line_break;
        true
    }

    /// Adds as much of the window's only line as the budget holds.
    fn push_cut(&mut self, content: &str) {
        let (kept, _) = crate::text::snippet::truncate_chars(content, self.max_chars);
        self.text.push_str(kept);
        self.chars = kept.chars().count();
        self.lines = 1;
    }

    fn finish(mut self, stop: Stop, next_line: Option<LineNo>) -> Window {
        if stop == Stop::EndOfFile && self.ending == Ending::File {
            self.text.push_str(self.pending_break);
            self.chars += self.pending_break.len();
        }
        Window {
            text: self.text,
            chars: self.chars,
            first_line: self.first_line,
            last_line: self.first_line + self.lines - 1,
            next_line,
            stop,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnd {
    /// Nothing left to read.
    Eof,
    /// The line ended with `\n` (included in the buffer).
    Newline,
    /// The file ended without a final `\n`.
    Unterminated,
    /// The line goes on beyond the cap; the buffer holds its first bytes.
    Capped,
}

/// How far [`skip_lines`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Skipped {
    /// Line breaks passed: fewer than asked at end of file, where an unterminated last
    /// line does not count (there is no line after it to start at).
    lines: LineNo,
    /// Bytes follow the last break passed: the file's unterminated last line, when the
    /// end was reached.
    ends_mid_line: bool,
}

/// Skips up to `lines` lines. Whole buffers are passed by a vectorised count of their
/// line breaks; only the buffer holding the last line to skip is walked break by break.
fn skip_lines(reader: &mut impl BufRead, lines: LineNo) -> io::Result<Skipped> {
    let mut skipped = Skipped {
        lines: 0,
        ends_mid_line: false,
    };
    while skipped.lines < lines {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let wanted = lines - skipped.lines;
        let breaks = memchr::memchr_iter(b'\n', buffer).count() as LineNo;
        let consumed = if breaks < wanted {
            skipped.lines += breaks;
            buffer.len()
        } else {
            skipped.lines = lines;
            let last = (wanted - 1) as usize;
            let newline = memchr::memchr_iter(b'\n', buffer)
                .nth(last)
                .expect("counted");
            newline + 1
        };
        skipped.ends_mid_line = buffer[consumed - 1] != b'\n';
        reader.consume(consumed);
    }
    Ok(skipped)
}

fn at_end(reader: &mut impl BufRead) -> io::Result<bool> {
    Ok(reader.fill_buf()?.is_empty())
}

/// Reads one line into `line` (cleared first), up to and including its `\n`, or its first
/// `cap` bytes when it is longer.
fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<LineEnd> {
    line.clear();
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(if line.is_empty() {
                LineEnd::Eof
            } else {
                LineEnd::Unterminated
            });
        }
        let room = cap - line.len();
        if let Some(newline) = memchr::memchr(b'\n', &buffer[..buffer.len().min(room + 1)]) {
            line.extend_from_slice(&buffer[..=newline]);
            reader.consume(newline + 1);
            return Ok(LineEnd::Newline);
        }
        let taken = buffer.len().min(room);
        line.extend_from_slice(&buffer[..taken]);
        reader.consume(taken);
        if line.len() == cap {
            return Ok(LineEnd::Capped);
        }
    }
}

/// A line's content and the break that ended it (`\n` or `\r\n`; none when the line ended
/// at end of file or was capped).
fn split_terminator(line: &[u8], end: LineEnd) -> (&[u8], &'static str) {
    if end != LineEnd::Newline {
        return (line, "");
    }
    let content = &line[..line.len() - 1];
    match content.strip_suffix(b"\r") {
        Some(content) => (content, "\r\n"),
        None => (content, "\n"),
    }
}

/// The content as text; a capped line may end inside a character, which is dropped.
fn decode(content: &[u8], end: LineEnd) -> Option<&str> {
    match std::str::from_utf8(content) {
        Ok(text) => Some(text),
        Err(error) if end == LineEnd::Capped && error.error_len().is_none() => {
            Some(std::str::from_utf8(&content[..error.valid_up_to()]).expect("valid prefix"))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::paths::parse_relative;

    fn read(text: &str, first: LineNo, lines: LineNo, chars: usize) -> Window {
        window(
            text.as_bytes(),
            &parse_relative("f.md").unwrap(),
            first,
            lines,
            chars,
            Ending::Window,
        )
        .unwrap()
    }

    fn summary(w: &Window) -> (String, LineNo, LineNo, Option<LineNo>, Stop) {
        (
            w.text.clone(),
            w.first_line,
            w.last_line,
            w.next_line,
            w.stop,
        )
    }

    #[test]
    fn windows_hold_whole_lines_verbatim_without_the_last_break() {
        let text = "a\nb\r\nc\nd";
        assert_eq!(
            summary(&read(text, 1, 2, 100)),
            ("a\nb".into(), 1, 2, Some(3), Stop::LineLimit)
        );
        assert_eq!(
            summary(&read(text, 2, 2, 100)),
            ("b\r\nc".into(), 2, 3, Some(4), Stop::LineLimit)
        );
        assert_eq!(
            summary(&read(text, 3, 5, 100)),
            ("c\nd".into(), 3, 4, None, Stop::EndOfFile)
        );
    }

    #[test]
    fn a_window_ending_on_the_last_line_reports_the_end() {
        assert_eq!(
            summary(&read("a\nb\n", 1, 2, 100)),
            ("a\nb".into(), 1, 2, None, Stop::EndOfFile)
        );
        assert_eq!(read("a\nb\n", 1, 2, 100).chars, 3);
    }

    #[test]
    fn past_the_end_reports_the_line_count_and_an_empty_file_no_line() {
        for (text, first, line_count) in [
            ("a\nb\n", 3, 2),
            ("a\nb", 3, 2),
            ("a\nb", 4, 2),
            ("a\n", 9, 1),
            ("", 2, 0),
        ] {
            assert_eq!(
                read(text, first, 5, 100).stop,
                Stop::PastEnd { line_count },
                "{text:?} from {first}"
            );
        }
        assert_eq!(
            summary(&read("", 1, 5, 100)),
            (String::new(), 1, 0, None, Stop::EndOfFile)
        );
    }

    #[test]
    fn a_whole_file_keeps_its_final_break_within_the_budget() {
        let whole = |text: &str, chars: usize| {
            let rel = parse_relative("f.md").unwrap();
            window(text.as_bytes(), &rel, 1, LineNo::MAX, chars, Ending::File).unwrap()
        };
        for text in ["a\nb\n", "a\r\nb\r\n", "a\nb", "\n", ""] {
            let read = whole(text, 100);
            assert_eq!((read.text.as_str(), read.chars), (text, text.len()));
        }
        // Each line costs its own break: "a\n" fits 2, "a\nb\n" needs 4.
        let cut = whole("a\nb\n", 3);
        assert_eq!((cut.text.as_str(), cut.stop), ("a", Stop::CharLimit));
        assert_eq!(cut.next_line, Some(2));
    }

    #[test]
    fn the_character_budget_keeps_whole_lines() {
        // "日本\n" is 3 characters; the next line would exceed 7.
        let text = "日本\n語の\nテキスト\n";
        assert_eq!(
            summary(&read(text, 1, 10, 7)),
            ("日本\n語の".into(), 1, 2, Some(3), Stop::CharLimit)
        );
        assert_eq!(read(text, 1, 10, 7).chars, 5);
    }

    #[test]
    fn a_first_line_longer_than_the_budget_is_cut_and_skipped() {
        let long = "あ".repeat(10_000);
        let text = format!("{long}\nnext\n");
        assert_eq!(
            summary(&read(&text, 1, 10, 5)),
            ("あああああ".into(), 1, 1, Some(2), Stop::CharLimit)
        );
        let only = format!("x{long}");
        assert_eq!(
            summary(&read(&only, 1, 10, 3)),
            ("xああ".into(), 1, 1, None, Stop::CharLimit)
        );
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let bytes: &[u8] = b"ok\nfine\nbad \xff byte\n";
        let rel = parse_relative("bin.md").unwrap();
        let error = window(bytes, &rel, 1, 10, 100, Ending::Window).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        assert_eq!(error.details.unwrap()["line"], 3);
        // Lines before the bad one are readable.
        let before = window(bytes, &rel, 1, 2, 100, Ending::Window).unwrap();
        assert_eq!(before.text, "ok\nfine");
    }

    #[test]
    fn skipping_stops_after_the_last_line_asked_for_at_any_buffer_size() {
        let text = "a\n\nbcd\nefghij\n\nk";
        let rest_after: Vec<usize> = text.match_indices('\n').map(|(at, _)| at + 1).collect();
        for capacity in 1..=text.len() + 1 {
            for lines in 0..=rest_after.len() as LineNo + 2 {
                let mut reader = BufReader::with_capacity(capacity, text.as_bytes());
                let skipped = skip_lines(&mut reader, lines).unwrap();
                let mut rest = String::new();
                reader.read_to_string(&mut rest).unwrap();
                let case = format!("capacity {capacity}, lines {lines}");
                match lines
                    .checked_sub(1)
                    .map(|last| rest_after.get(last as usize))
                {
                    None => assert_eq!((skipped.lines, rest.as_str()), (0, text), "{case}"),
                    Some(Some(&at)) => {
                        assert_eq!(
                            (skipped.lines, rest.as_str()),
                            (lines, &text[at..]),
                            "{case}"
                        );
                        assert!(!skipped.ends_mid_line, "{case}");
                    }
                    Some(None) => {
                        let all = rest_after.len() as LineNo;
                        assert_eq!((skipped.lines, rest.as_str()), (all, ""), "{case}");
                        assert!(skipped.ends_mid_line, "{case}");
                    }
                }
            }
        }
    }

    #[test]
    fn skipping_crosses_buffer_boundaries() {
        let text: String = (1..=100_000).map(|n| format!("line {n}\n")).collect();
        let w = read(&text, 99_999, 5, 1000);
        assert_eq!(
            summary(&w),
            (
                "line 99999\nline 100000".into(),
                99_999,
                100_000,
                None,
                Stop::EndOfFile
            )
        );
    }
}
