//! Bounded excerpts of original text, so a hit costs the caller a few dozen tokens
//! instead of a whole section.
//!
//! Limits are in characters, not bytes: a byte limit would cut Japanese three times
//! shorter than English and could split a character.

use std::ops::Range;

const CUT_MARK: char = '…';

/// At most `max_chars` characters of `original` around `byte`, marks included: `…` at
/// each side where text was cut, line breaks folded to one space. `byte` need not be
/// a character boundary.
pub(crate) fn snippet(original: &str, byte: usize, max_chars: usize) -> String {
    let center = floor_char_boundary(original, byte.min(original.len()));
    let mut marks = 0;
    loop {
        let window = window_around(original, center..center, max_chars.saturating_sub(marks));
        let cut_before = window.start > 0;
        let cut_after = window.end < original.len();
        let needed = usize::from(cut_before) + usize::from(cut_after);
        // Fewer characters can only cut more sides, so this settles within two rounds.
        if needed <= marks || needed > max_chars {
            return render(&original[window], cut_before, cut_after, max_chars);
        }
        marks = needed;
    }
}

/// The first `max_chars` characters of `s`, and whether anything was cut.
pub(crate) fn truncate_chars(s: &str, max_chars: usize) -> (&str, bool) {
    match s.char_indices().nth(max_chars) {
        Some((end, _)) => (&s[..end], true),
        None => (s, false),
    }
}

/// Byte offset `count` characters after `from`, or the end of `text`.
pub(crate) fn advance_chars(text: &str, from: usize, count: usize) -> usize {
    text[from..]
        .char_indices()
        .nth(count)
        .map_or(text.len(), |(offset, _)| from + offset)
}

/// Byte offset `count` characters before `to`, or 0.
pub(crate) fn retreat_chars(text: &str, to: usize, count: usize) -> usize {
    match count {
        0 => to,
        _ => text[..to]
            .char_indices()
            .rev()
            .nth(count - 1)
            .map_or(0, |(offset, _)| offset),
    }
}

/// Byte range of a window of at most `max_chars` characters around `focus`, centred when
/// the text allows and shifted to use the room one side lacks. `focus` itself is kept
/// whole when it fits.
pub(crate) fn window_around(text: &str, focus: Range<usize>, max_chars: usize) -> Range<usize> {
    let spare = max_chars.saturating_sub(text[focus.clone()].chars().count());
    let from = retreat_chars(text, focus.start, spare / 2);
    let used_before = text[from..focus.start].chars().count();
    let to = advance_chars(text, focus.end, spare - used_before);
    let used_after = text[focus.end..to].chars().count();
    retreat_chars(text, focus.start, spare - used_after)..to
}

fn render(window: &str, cut_before: bool, cut_after: bool, max_chars: usize) -> String {
    let mut out = String::with_capacity(window.len() + 2 * CUT_MARK.len_utf8());
    if cut_before {
        out.push(CUT_MARK);
    }
    let mut in_break = false;
    for c in window.chars() {
        let is_break = matches!(c, '\n' | '\r');
        if !is_break {
            out.push(c);
        } else if !in_break {
            out.push(' ');
        }
        in_break = is_break;
    }
    if cut_after {
        out.push(CUT_MARK);
    }
    if out.chars().count() > max_chars {
        // Only when `max_chars` cannot even hold the marks.
        out = truncate_chars(&out, max_chars).0.to_owned();
    }
    out
}

fn floor_char_boundary(s: &str, mut byte: usize) -> usize {
    while !s.is_char_boundary(byte) {
        byte -= 1;
    }
    byte
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_returned_whole_with_breaks_folded() {
        assert_eq!(snippet("請求書\r\nの発行", 3, 50), "請求書 の発行");
        assert_eq!(snippet("a\n\n\nb", 0, 50), "a b");
    }

    #[test]
    fn long_text_is_cut_around_the_byte_with_marks() {
        let text = "あいうえおかきくけこさしすせそ";
        let at = text.find('く').unwrap();
        let s = snippet(text, at, 7);
        assert_eq!(s, "…かきくけこ…");
        assert_eq!(s.chars().count(), 7);
    }

    #[test]
    fn budget_unused_on_one_side_goes_to_the_other() {
        let text = "0123456789";
        assert_eq!(snippet(text, 0, 5), "0123…");
        assert_eq!(snippet(text, 10, 5), "…6789");
        assert_eq!(snippet(text, 9, 5), "…6789");
    }

    #[test]
    fn never_splits_a_character() {
        let text = "漢字漢字漢字";
        for byte in 0..=text.len() + 2 {
            for max in 0..8 {
                let s = snippet(text, byte, max);
                assert!(s.chars().count() <= max, "{byte} {max} {s:?}");
            }
        }
    }

    #[test]
    fn truncate_counts_characters() {
        assert_eq!(truncate_chars("日本語テキスト", 3), ("日本語", true));
        assert_eq!(truncate_chars("abc", 3), ("abc", false));
        assert_eq!(truncate_chars("", 0), ("", false));
    }
}
