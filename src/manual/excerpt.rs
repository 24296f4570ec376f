//! Character-counted cuts of text held in memory.
//!
//! Limits are in characters (what `max_chars` promises a client), while slicing is by
//! byte; these helpers turn one into the other without ever splitting a UTF-8 sequence,
//! which matters for Japanese text where every character is three bytes.

use crate::text::snippet::advance_chars;

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
    use crate::text::snippet::{retreat_chars, window_around};

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
    fn window_is_centred_and_uses_room_the_other_side_lacks() {
        let text = "0123456789例外0123456789";
        let focus = 10..16;
        assert_eq!(
            &text[window_around(text, focus.clone(), 10)],
            "6789例外0123"
        );
        assert_eq!(&text[window_around(text, focus.clone(), 2)], "例外");
        let head = "例外0123456789";
        assert_eq!(&head[window_around(head, 0..6, 6)], "例外0123");
        let tail = "0123456789例外";
        assert_eq!(&tail[window_around(tail, 10..16, 6)], "6789例外");
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
