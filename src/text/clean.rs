//! Clean boundaries: where a text can be cut so that its normalisation is that of the
//! part before followed by that of the part after (see `near`), and characters that
//! stand alone between them (see `prefilter`). Apart from both so that each can use it.

use super::fold::{is_stable, starts_segment};
use super::numerals::is_numeral;

/// Whether normalisation keeps `c` as it is and no rule looks across it: it is stable,
/// no whitespace, and can be no part of a numeral run.
fn is_plain(c: char) -> bool {
    is_stable(c) && !is_numeral(c) && !matches!(c, ',' | '.')
}

/// Whether the character `c` at `at` of `text` stands alone between clean boundaries
/// with one plain character after it: the boundary before it is clean, and so is the
/// one after the character that follows it (or the text ends after `c`). Its
/// normalisation there is then that of `c` alone followed by that plain character as it
/// is (the plain character ends any numeral run and starts a segment of its own), so a
/// `十` in `は十分` is `10` and can put no `7` into the text.
pub(super) fn stands_alone(text: &str, at: usize, c: char) -> bool {
    let after = at + c.len_utf8();
    if !is_clean(text, at) {
        return false;
    }
    match text[after..].chars().next() {
        None => true,
        Some(next) => is_plain(next) && is_clean(text, after + next.len_utf8()),
    }
}

/// Whether `at` (a character boundary) is a clean boundary of `text`.
pub(super) fn is_clean(text: &str, at: usize) -> bool {
    let (Some(before), Some(after)) = (text[..at].chars().next_back(), text[at..].chars().next())
    else {
        return true;
    };
    is_plain(before) && starts_segment(after)
}
