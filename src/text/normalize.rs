//! The one normalisation applied to manuals at index time and to queries at search time.
//!
//! Both sides go through exactly this function, so a rule only has to make spellings
//! that mean the same thing land on the same text; it does not have to be linguistically
//! exact. In order:
//!
//! 1. NFKC, then lowercase (full-width ASCII -> half width, `ｶ` -> `カ`, `Ａ` -> `a`).
//! 2. Representatives for look-alike punctuation (see `variants`).
//! 3. Every run of whitespace, line breaks included, becomes one ASCII space.
//! 4. Kanji numerals become ASCII digits (see `numerals`).
//!
//! The result is a fixed point: normalising it again changes nothing.

use std::ops::Range;

use super::bmp::{bmp_set, code_at, three_byte_code_at, BmpSet};
use super::fold::{is_stable, starts_segment, Folder};
pub(crate) use super::normalized::Normalized;
use super::normalized::Writer;
use super::numerals;
use super::offset_map::Kind;

/// Normalises `s`, keeping a map from the result back to `s`.
pub(crate) fn normalize(s: &str) -> Normalized {
    numerals::unify(fold_text(s))
}

/// Normalises a query: the same text as [`normalize`], without the map.
pub(crate) fn normalize_str(s: &str) -> String {
    normalize(s).text
}

/// Steps 1-3: folds `s` segment by segment, copying runs of characters that fold in place
/// as they are (ASCII lowercased), which is most of a manual.
fn fold_text(s: &str) -> Normalized {
    let mut out = SpaceCollapser::new(s.len());
    let mut in_place = 0..0;
    loop {
        in_place.end = in_place_end(s, in_place.end, in_place.is_empty() && out.space_open());
        let start = in_place.end;
        let Some(c) = s[start..].chars().next() else {
            break;
        };
        let mut end = start + c.len_utf8();
        let alone = s[end..].chars().next().is_none_or(starts_segment);
        while let Some(next) = s[end..].chars().next() {
            if starts_segment(next) {
                break;
            }
            end += next.len_utf8();
        }
        out.copy_lowercased(s, in_place);
        in_place = end..end;
        out.segment(s, start..end, alone && c.is_whitespace());
    }
    out.copy_lowercased(s, in_place);
    out.finish(s.len())
}

/// End of the characters from `at` on that are alone in their segment and fold in place
/// (see [`folds_in_place`]); `space_open` tells whether whitespace is open before `at`.
///
/// ASCII goes eight bytes at a time while it is printable without brackets and its spaces
/// are single, kana and kanji a stretch at a time; everything else a character at a time.
fn in_place_end(s: &str, mut at: usize, space_open: bool) -> usize {
    let bytes = s.as_bytes();
    let first = at;
    loop {
        let Some(&lead) = bytes.get(at) else {
            return at;
        };
        if let Some(word) = bytes.get(at..at + 8).filter(|_| lead.is_ascii()) {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            if ascii_word_in_place(word, bytes.get(at + 8).copied(), at == first && space_open) {
                at += 8;
                continue;
            }
        }
        let stretch_end = stable_three_byte_end(bytes, at);
        if stretch_end > at {
            // Each but the last is followed by a stable character, which starts a segment.
            let last = stretch_end - 3;
            let end = if char_at(s, stretch_end).is_none_or(starts_segment) {
                stretch_end
            } else {
                last
            };
            if end > at {
                at = end;
                continue;
            }
        }
        let Some(c) = char_at(s, at) else {
            return at;
        };
        let next = char_at(s, at + c.len_utf8());
        let alone = next.is_none_or(starts_segment);
        if !(alone && folds_in_place(c, next, at == first && space_open)) {
            return at;
        }
        at += c.len_utf8();
    }
}

/// End of the stretch of stable three-byte characters (kana, kanji, Japanese punctuation)
/// from `at`, each decoded once.
fn stable_three_byte_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(code) = three_byte_code_at(bytes, at) {
        if !STABLE_BMP.contains(code) {
            break;
        }
        at += 3;
    }
    at
}

/// The characters of the plane where [`is_stable`] holds.
static STABLE_BMP: BmpSet = bmp_set!(|c| is_stable(c));

/// The character of `s` at the char boundary `at`, if any; characters of the plane
/// (ASCII, kana, kanji) are decoded here, without the checks of a general decoder.
fn char_at(s: &str, at: usize) -> Option<char> {
    match code_at(s.as_bytes(), at) {
        Some((code, _)) => char::from_u32(code),
        None => s.get(at..)?.chars().next(),
    }
}

/// Whether `c`, alone in its segment and followed by `next`, folds to itself with its
/// ASCII lowercased and maps back byte for byte: a stable character, an uppercase ASCII
/// letter, or a single ASCII space that no whitespace is open before (`space_open`) and
/// none follows, which the space collapser would write as it is.
fn folds_in_place(c: char, next: Option<char>, space_open: bool) -> bool {
    is_stable(c)
        || c.is_ascii_uppercase()
        || c == ' ' && !space_open && !next.is_some_and(char::is_whitespace)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether the eight bytes of `word` (first byte lowest), followed by the byte `next`,
/// are eight characters that [`folds_in_place`] accepts, each alone in its segment: all
/// ASCII (and `next` too, so the last is alone), printable, no bracket (those fold to a
/// parenthesis), no space beside another space or open whitespace, or before whitespace.
fn ascii_word_in_place(word: u64, next: Option<u8>, space_open: bool) -> bool {
    let Some(next) = next.filter(u8::is_ascii) else {
        return false;
    };
    // For ASCII bytes adding 0x60 sets the high bit from 0x20 (space) up, with no carry.
    let printable = word & HIGH == 0
        && word.wrapping_add(ONES * 0x60) & HIGH == HIGH
        && bytes_equal(word, 0x7F) == 0;
    if !printable {
        return false;
    }
    // `[` and `{`, `]` and `}` differ only in 0x20.
    let folded_case = word | (ONES * 0x20);
    if bytes_equal(folded_case, b'{') | bytes_equal(folded_case, b'}') != 0 {
        return false;
    }
    let spaces = bytes_equal(word, b' ');
    let first_space = spaces & 0x80 != 0;
    let last_space = spaces >> 56 != 0;
    spaces & (spaces >> 8) == 0
        && !(first_space && space_open)
        && !(last_space && char::from(next).is_whitespace())
}

/// The high bit of every byte of `word` that equals `byte`, exactly (no false positives
/// after a match, unlike the shorter subtraction trick).
fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    !(((x & !HIGH) + !HIGH) | x) & HIGH
}

/// Writes folded pieces, turning each whitespace run into one space that maps back to
/// the whole run.
struct SpaceCollapser {
    writer: Writer,
    folder: Folder,
    /// Scratch for the fold of one segment.
    folded: String,
    /// Original span of a whitespace run not yet written.
    pending_space: Option<Range<usize>>,
    collapsed: String,
}

impl SpaceCollapser {
    fn new(capacity: usize) -> Self {
        SpaceCollapser {
            writer: Writer::with_capacity(capacity),
            folder: Folder::default(),
            folded: String::new(),
            pending_space: None,
            collapsed: String::new(),
        }
    }

    /// Writes `s[span]`, its ASCII lowercased: characters that fold in place.
    fn copy_lowercased(&mut self, s: &str, span: Range<usize>) {
        if !span.is_empty() {
            self.flush_space();
            self.writer
                .push_ascii_lowercased(&s[span.clone()], span, Kind::Linear);
        }
    }

    /// Writes the segment `s[span]`: a whitespace character alone joins the whitespace
    /// run; anything else is folded.
    fn segment(&mut self, s: &str, span: Range<usize>, lone_whitespace: bool) {
        if lone_whitespace {
            return self.space(span);
        }
        let mut folded = std::mem::take(&mut self.folded);
        folded.clear();
        self.folder.fold(&s[span.clone()], &mut folded);
        self.replace(&folded, &s[span.clone()], span);
        self.folded = folded;
    }

    /// Whether a space written now would join whitespace before it: a run not yet
    /// written, or a folded piece that ended in a space.
    fn space_open(&self) -> bool {
        self.pending_space.is_some() || self.writer.text().ends_with(' ')
    }

    fn space(&mut self, span: Range<usize>) {
        match &mut self.pending_space {
            Some(pending) => pending.end = span.end,
            // A folded piece already ended in a space: this one adds nothing.
            None if self.writer.text().ends_with(' ') => {}
            None => self.pending_space = Some(span),
        }
    }

    /// Writes `folded`, the fold of `original` at `span`. Rare compatibility characters
    /// fold to text containing spaces (`¨` -> space + diaeresis); those collapse too.
    fn replace(&mut self, folded: &str, original: &str, span: Range<usize>) {
        self.flush_space();
        let mut out = folded;
        if folded.contains(char::is_whitespace) {
            let mut after_space = self.writer.text().ends_with(' ');
            self.collapsed.clear();
            for c in folded.chars() {
                let space = c.is_whitespace();
                if !(space && after_space) {
                    self.collapsed.push(if space { ' ' } else { c });
                }
                after_space = space;
            }
            out = &self.collapsed;
        }
        if !out.is_empty() {
            self.writer.push(out, span, Kind::of(out, original));
        }
    }

    fn flush_space(&mut self) {
        if let Some(span) = self.pending_space.take() {
            self.writer.push(" ", span, Kind::Linear);
        }
    }

    fn finish(mut self, original_len: usize) -> Normalized {
        self.flush_space();
        self.writer.finish(original_len)
    }
}

#[cfg(test)]
mod oracle;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stable_table_agrees_with_is_stable() {
        for code in 0..0x10000 {
            let stable = char::from_u32(code).is_some_and(is_stable);
            assert_eq!(STABLE_BMP.contains(code), stable, "U+{code:04X}");
        }
    }

    #[test]
    fn words_of_eight_ascii_bytes_fold_in_place_only_when_plain() {
        // (word, next byte, whitespace open before, in place, why)
        let cases: &[(&str, Option<u8>, bool, bool, &str)] = &[
            ("Manual P", Some(b'D'), false, true, "letters and one space"),
            (
                " anual P",
                Some(b'D'),
                false,
                true,
                "a first space, nothing open",
            ),
            (
                " anual P",
                Some(b'D'),
                true,
                false,
                "a first space after open whitespace",
            ),
            ("Manual  ", Some(b'D'), false, false, "two spaces"),
            (
                "Manual P",
                None,
                false,
                false,
                "the last may join what follows",
            ),
            ("Manual P", Some(0xE3), false, false, "a mark may follow"),
            (
                "Manuals ",
                Some(b'x'),
                false,
                true,
                "a last space before a letter",
            ),
            (
                "Manuals ",
                Some(0x0B),
                false,
                false,
                "\\v is whitespace to char's test",
            ),
            ("Manual ]", Some(b'x'), false, false, "a bracket"),
            ("Manual\tx", Some(b'x'), false, false, "a tab"),
        ];
        for &(word, next, open, expected, why) in cases {
            let bytes = u64::from_le_bytes(word.as_bytes().try_into().unwrap());
            assert_eq!(ascii_word_in_place(bytes, next, open), expected, "{why}");
        }
    }

    fn n(s: &str) -> String {
        normalize_str(s)
    }

    #[test]
    fn width_and_case_are_unified() {
        assert_eq!(n("ＡＢＣ１２３"), "abc123");
        assert_eq!(n("ﾃﾞｰﾀﾍﾞｰｽ"), "データベース");
        assert_eq!(n("Manual PDF"), "manual pdf");
        assert_eq!(n("ＭＣＰサーバ"), "mcpサーバ");
    }

    #[test]
    fn whitespace_runs_become_one_space() {
        assert_eq!(n("請求\r\n書"), "請求 書");
        assert_eq!(n("請求\n\n\t 書"), "請求 書");
        assert_eq!(n("請求\u{3000}書"), "請求 書");
        assert_eq!(n("a\u{00A0}\u{2003}b"), "a b");
        assert_eq!(n("  lead and trail  "), " lead and trail ");
    }

    #[test]
    fn punctuation_variants_meet() {
        assert_eq!(n("A–B—C−D－E"), "a-b-c-d-e");
        assert_eq!(n("10〜20～30"), "10~20~30");
        assert_eq!(n("請求･書·表"), "請求・書・表");
        assert_eq!(n("【重要】［注］（例）"), "(重要)(注)(例)");
        assert_eq!(n("『資料』"), "「資料」");
        assert_eq!(n("入力／出力"), "入力/出力");
        assert_eq!(n("“quoted” ‘single’"), "\"quoted\" 'single'");
        assert_eq!(n("ｺｰﾄﾞ コ─ド"), "コード コード");
        assert_eq!(n("a-b"), "a-b", "a plain hyphen is not a long vowel");
        assert_eq!(n("C:\\path"), "c:\\path", "backslash stays");
    }

    #[test]
    fn kanji_numerals_become_digits() {
        assert_eq!(n("二〇二六年"), "2026年");
        assert_eq!(n("三万五千円"), "35000円");
        assert_eq!(n("第１２条"), "第12条");
    }

    #[test]
    fn original_offsets_point_into_the_source() {
        let src = "ＡＢ\r\n【漢字】";
        let norm = normalize(src);
        assert_eq!(norm.text, "ab (漢字)");
        assert_eq!(norm.original_offset(1), "Ａ".len());
        assert_eq!(
            norm.original_offset(2),
            "ＡＢ".len(),
            "space starts at the CR"
        );
        assert_eq!(norm.original_offset(3), "ＡＢ\r\n".len());
        let kanji = norm.text.find("漢字").unwrap();
        let range = norm.original_range(kanji..kanji + "漢字".len());
        assert_eq!(&src[range], "漢字");
        assert_eq!(norm.original_offset(norm.text.len()), src.len());
    }

    #[test]
    fn multi_char_sources_map_to_their_start() {
        let src = "元号㍻";
        let norm = normalize(src);
        assert_eq!(norm.text, "元号平成");
        let sei = norm.text.find('成').unwrap();
        assert_eq!(norm.original_offset(sei), "元号".len());
        assert_eq!(
            norm.original_range(sei..norm.text.len()),
            "元号".len()..src.len()
        );
    }

    #[test]
    fn empty_input() {
        let norm = normalize("");
        assert_eq!(norm.text, "");
        assert_eq!(norm.original_offset(0), 0);
    }
}
