//! Character-counted cuts of text held in memory.
//!
//! Limits are in characters (what `max_chars` promises a client), while slicing is by
//! byte; these helpers turn one into the other without ever splitting a UTF-8 sequence,
//! which matters for Japanese text where every character is three bytes.

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

/// The longest prefix of `text` of at most `max_chars` characters. When a cut is needed it
/// falls after the last complete line that fits, so a client continuing at the next line
/// misses nothing; only a first line longer than the limit is cut inside the line.
pub(crate) fn clip_to_chars(text: &str, max_chars: usize) -> &str {
    let limit = advance_chars(text, 0, max_chars);
    if limit == text.len() {
        return text;
    }
    match text[..limit].rfind(['\n', '\r']) {
        Some(break_at) if break_at > 0 => {
            let kept = &text[..break_at];
            kept.strip_suffix('\r').unwrap_or(kept)
        }
        _ => &text[..limit],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_characters_not_bytes() {
        let text = "例外として除く";
        assert_eq!(&text[..advance_chars(text, 0, 2)], "例外");
        assert_eq!(&text[retreat_chars(text, text.len(), 2)..], "除く");
        assert_eq!(advance_chars(text, 0, 99), text.len());
        assert_eq!(retreat_chars(text, text.len(), 99), 0);
        assert_eq!(retreat_chars(text, 6, 0), 6);
    }

    #[test]
    fn clip_prefers_a_line_boundary() {
        assert_eq!(clip_to_chars("ab\ncd\nef", 7), "ab\ncd");
        assert_eq!(clip_to_chars("ab\r\ncd", 4), "ab");
        assert_eq!(clip_to_chars("ab\ncd", 5), "ab\ncd");
    }

    #[test]
    fn clip_cuts_a_long_first_line_on_a_char_boundary() {
        assert_eq!(clip_to_chars("固定資産台帳\n次", 4), "固定資産");
        assert_eq!(clip_to_chars("\n固定資産台帳", 3), "\n固定");
    }
}
