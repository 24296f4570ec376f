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

/// Steps 1-3: folds `s` segment by segment, copying stable runs as they are.
fn fold_text(s: &str) -> Normalized {
    let mut out = SpaceCollapser::new(s.len());
    let mut folder = Folder::default();
    let mut folded = String::new();
    let mut stable = 0..0;
    let mut chars = s.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        let alone = chars.peek().is_none_or(|&(_, next)| starts_segment(next));
        if alone && is_stable(c) {
            stable.end = end;
            continue;
        }
        while let Some(&(next_start, next)) = chars.peek() {
            if starts_segment(next) {
                break;
            }
            end = next_start + next.len_utf8();
            chars.next();
        }
        out.copy(s, stable);
        stable = end..end;
        if alone && c.is_whitespace() {
            out.space(start..end);
        } else {
            folded.clear();
            folder.fold(&s[start..end], &mut folded);
            out.replace(&folded, &s[start..end], start..end);
        }
    }
    out.copy(s, stable);
    out.finish(s.len())
}

/// Writes folded pieces, turning each whitespace run into one space that maps back to
/// the whole run.
struct SpaceCollapser {
    writer: Writer,
    /// Original span of a whitespace run not yet written.
    pending_space: Option<Range<usize>>,
    collapsed: String,
}

impl SpaceCollapser {
    fn new(capacity: usize) -> Self {
        SpaceCollapser {
            writer: Writer::with_capacity(capacity),
            pending_space: None,
            collapsed: String::new(),
        }
    }

    fn copy(&mut self, s: &str, span: Range<usize>) {
        if !span.is_empty() {
            self.flush_space();
            self.writer.push(&s[span.clone()], span, Kind::Linear);
        }
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
mod tests {
    use super::*;

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
