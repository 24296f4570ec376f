//! References between sections as written: Markdown links and the textual references
//! manuals write in prose (「申請手続き」参照, 第2章, 2.3節, "see Who decides").
//!
//! They serve the search twice. Stage 3 follows them in both directions from strong
//! candidates, because a section that sends readers elsewhere ("see section 2.3 for who
//! decides") is telling us where the rest of the answer is. And the text of every link
//! is kept as a label of the section it points to: authors describe a target in their
//! own words ("請求書の承認・支払い" for a section titled "購買から支払いまで"), which is
//! exactly the paraphrase a reader's query tends to use.
//!
//! This unit extracts them from one file (once per file, see `corpus`); `resolve` finds
//! their targets once per corpus generation, since a target may be in another file.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};

use super::derived::{FileText, RawReference, RawTarget};
use crate::manual::file::ManualText;
use crate::manual::ManualFile;
use crate::text::lines::LineNo;
use crate::text::normalize::normalize_str;

/// Characters of context a textual reference reads before `参照` or after `see` (enough
/// for "section 2.3 of the incident guide for who decides").
const CUE_WINDOW_CHARS: usize = 80;

/// Links and cues in the prose of a Markdown file (code blocks skipped).
///
/// Only lines that can hold one are read: a whole-file search for `](` in the original
/// text and for the cue words in the normalised text picks them, since nearly every line
/// of a manual has neither and reading each line costs more than the rest of indexing.
/// `original` is the file's text, `derived` its normalised form.
pub(crate) fn extract_references(
    file: &ManualFile,
    original: &ManualText<'_>,
    derived: &FileText,
) -> Vec<RawReference> {
    let link_lines = memchr::memmem::find_iter(original.whole().as_bytes(), b"](")
        .map(|at| original.line_at_offset(at));
    let cue_lines = cue_finder()
        .find_iter(&derived.body)
        .map(|hit| derived.line_at(hit.start()));
    let mut lines: Vec<(LineNo, bool)> = link_lines
        .map(|line| (line, true))
        .chain(cue_lines.map(|line| (line, false)))
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let mut found = Vec::new();
    for (line, is_link) in lines {
        let own = file.node_index_from(line);
        let inside = file
            .nodes()
            .get(own)
            .is_some_and(|node| node.line_start <= line);
        if !inside || line < derived.first_line || file.is_code_line(line) {
            continue;
        }
        let node = own as u32;
        if is_link {
            for (text, destination) in links_in_line(original.lines(line, line)) {
                found.push(RawReference {
                    node,
                    line,
                    target: RawTarget::Link {
                        destination: destination.to_owned(),
                        text: normalize_str(&strip_markup(text)).trim().to_owned(),
                    },
                });
            }
        } else {
            for target in cues_in_line(derived.line_text(line)) {
                found.push(RawReference { node, line, target });
            }
        }
    }
    found
}

/// Finds the words that may start a textual reference, in normalised text.
fn cue_finder() -> &'static AhoCorasick {
    static FINDER: OnceLock<AhoCorasick> = OnceLock::new();
    FINDER.get_or_init(|| {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build([
                sansho(),
                "see ",
                "refer to ",
                "第",
                "節",
                "section ",
                "§",
                "chapter ",
            ])
            .expect("a few literal cue words")
    })
}

/// `[text](destination)` pairs of one line; images are skipped, a link inside an image
/// or with nested brackets in its text is read as well as a one-line scan allows.
fn links_in_line(line: &str) -> Vec<(&str, &str)> {
    let bytes = line.as_bytes();
    let mut links = Vec::new();
    for close in memchr::memmem::find_iter(bytes, b"](") {
        let Some(open) = matching_open_bracket(bytes, close) else {
            continue;
        };
        if open > 0 && bytes[open - 1] == b'!' {
            continue;
        }
        if let Some(destination) = destination_at(&line[close + 2..]) {
            links.push((&line[open + 1..close], destination));
        }
    }
    links
}

fn matching_open_bracket(bytes: &[u8], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for at in (0..close).rev() {
        match bytes[at] {
            b']' => depth += 1,
            b'[' if depth == 0 => return Some(at),
            b'[' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The destination at the start of `rest` (just after `](`): `<…>`, a Hugo
/// `{{< ref "…" >}}` shortcode, or a bare destination with balanced parentheses.
fn destination_at(rest: &str) -> Option<&str> {
    if let Some(inner) = rest.strip_prefix('<') {
        return inner.find('>').map(|end| &inner[..end]);
    }
    if rest.starts_with("{{") {
        let end = rest.find("}}")?;
        let shortcode = &rest[..end];
        let start = shortcode.find('"')? + 1;
        let length = shortcode[start..].find('"')?;
        return Some(&shortcode[start..start + length]);
    }
    let mut depth = 0usize;
    for (at, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(&rest[..at]).filter(|d| !d.is_empty()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(&rest[..at]).filter(|d| !d.is_empty()),
            _ => {}
        }
    }
    None
}

/// Link text without emphasis and code markup.
fn strip_markup(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '*' | '`' | '_' | '[' | ']'))
        .collect()
}

/// `参照` as normalisation writes it (its `参` is also a formal numeral, so it reads `3照`).
fn sansho() -> &'static str {
    static SANSHO: OnceLock<String> = OnceLock::new();
    SANSHO.get_or_init(|| normalize_str("参照"))
}

/// Textual references in one normalised line: `参照` with the prose before it, `see` /
/// `refer to` with the prose after it, and chapter or section numbers anywhere.
fn cues_in_line(line: &str) -> Vec<RawTarget> {
    let mut cues = Vec::new();
    for (at, _) in line.match_indices(sansho()) {
        let window = tail_chars(clause_before(&line[..at]), CUE_WINDOW_CHARS);
        cues.push(cue(window));
    }
    for word in ["see ", "refer to "] {
        for (at, _) in line.match_indices(word) {
            let word_start = at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric();
            if word_start {
                let after = &line[at + word.len()..];
                let sentence = after.find(". ").map_or(after, |end| &after[..end]);
                cues.push(cue(head_chars(sentence, CUE_WINDOW_CHARS)));
            }
        }
    }
    let has_window_cue = !cues.is_empty();
    if !has_window_cue && (chapter_number(line).is_some() || section_number(line).is_some()) {
        cues.push(RawTarget::Cue {
            quoted: Vec::new(),
            chapter: chapter_number(line),
            section: section_number(line),
            window: String::new(),
        });
    }
    cues
}

fn cue(window: &str) -> RawTarget {
    RawTarget::Cue {
        quoted: quoted_in(window),
        chapter: chapter_number(window),
        section: section_number(window),
        window: window.trim().to_owned(),
    }
}

/// The clause that ends at the end of `text`: after the last `。` or sentence stop.
fn clause_before(text: &str) -> &str {
    let start = text.rfind(['。', '!', '?']).map_or(0, |at| {
        at + text[at..].chars().next().map_or(1, char::len_utf8)
    });
    &text[start..]
}

fn tail_chars(text: &str, count: usize) -> &str {
    let start = text
        .char_indices()
        .rev()
        .nth(count.saturating_sub(1))
        .map_or(0, |(at, _)| at);
    &text[start..]
}

fn head_chars(text: &str, count: usize) -> &str {
    let end = text
        .char_indices()
        .nth(count)
        .map_or(text.len(), |(at, _)| at);
    &text[..end]
}

fn quoted_in(window: &str) -> Vec<String> {
    let mut quoted = Vec::new();
    let mut rest = window;
    while let Some(open) = rest.find('「') {
        let after = &rest[open + '「'.len_utf8()..];
        let Some(close) = after.find('」') else {
            break;
        };
        let inner = after[..close].trim();
        if !inner.is_empty() {
            quoted.push(inner.to_owned());
        }
        rest = &after[close + '」'.len_utf8()..];
    }
    quoted
}

/// `第N章` or `chapter N`.
pub(super) fn chapter_number(text: &str) -> Option<u32> {
    let after_dai = text.match_indices('第').find_map(|(at, _)| {
        let digits = leading_digits(&text[at + '第'.len_utf8()..]);
        let rest = &text[at + '第'.len_utf8() + digits.len()..];
        (!digits.is_empty() && rest.starts_with('章')).then_some(digits)
    });
    let after_word = || {
        text.match_indices("chapter ")
            .map(|(at, _)| leading_digits(&text[at + "chapter ".len()..]))
            .find(|digits| !digits.is_empty())
    };
    after_dai.or_else(after_word)?.parse().ok()
}

/// `N.N節`, `section N.N` or `§N.N`: the dotted number, e.g. `"2.3"`.
pub(super) fn section_number(text: &str) -> Option<String> {
    let dotted = |rest: &str| {
        let number = rest
            .char_indices()
            .take_while(|&(_, c)| c.is_ascii_digit() || c == '.')
            .last()
            .map_or("", |(at, c)| &rest[..at + c.len_utf8()])
            .trim_end_matches('.');
        number.contains('.').then(|| number.to_owned())
    };
    for marker in ["section ", "§"] {
        if let Some(found) = text
            .match_indices(marker)
            .find_map(|(at, _)| dotted(&text[at + marker.len()..]))
        {
            return Some(found);
        }
    }
    text.match_indices('節').find_map(|(at, _)| {
        let before = text[..at].trim_end();
        let start = before
            .char_indices()
            .rev()
            .take_while(|&(_, c)| c.is_ascii_digit() || c == '.')
            .last()
            .map(|(start, _)| start)?;
        dotted(&before[start..])
    })
}

pub(super) fn leading_digits(text: &str) -> &str {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize::normalize_str;

    #[test]
    fn links_are_read_with_nesting_images_and_shortcodes() {
        let line = "See [the *guide*](../a/b.md#x \"title\"), ![img](i.png), [[x]](<c d.md>) and [r]({{< ref \"p.md\" >}}).";
        assert_eq!(
            links_in_line(line),
            [
                ("the *guide*", "../a/b.md#x"),
                ("[x]", "c d.md"),
                ("r", "p.md")
            ]
        );
        assert_eq!(strip_markup("the *guide* `x`"), "the guide x");
    }

    #[test]
    fn cues_carry_quotes_numbers_and_prose() {
        let cues = cues_in_line(&normalize_str("経費の扱いは第2章「経費精算規程」を参照。"));
        assert_eq!(
            cues,
            [RawTarget::Cue {
                quoted: vec!["経費精算規程".into()],
                chapter: Some(2),
                section: None,
                window: "経費の扱いは第2章「経費精算規程」を".into(),
            }]
        );
        let cues = cues_in_line("see section 2.3 of the incident guide for who decides.");
        let RawTarget::Cue {
            section, window, ..
        } = &cues[0]
        else {
            panic!("a cue")
        };
        assert_eq!(section.as_deref(), Some("2.3"));
        assert_eq!(window, "section 2.3 of the incident guide for who decides.");
        assert_eq!(section_number("詳細は3.1節"), Some("3.1".into()));
        assert_eq!(section_number("version 2 is"), None);
        assert!(
            cues_in_line("oversee the rollout").is_empty(),
            "whole word only"
        );
    }
}
