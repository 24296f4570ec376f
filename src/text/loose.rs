//! Loose text: normalised text with every separator removed, so `請求 書`, `請求\n書`,
//! `請求・書` and `**請求**書` all read `請求書`, and katakana folded to the form its
//! spelling variants share (`ウィンドウマネージャー` and `ウインドウマネージャ` both read
//! `ウインドウマネジヤ`; see [`fold_kana`]).
//!
//! Manuals break terms with spaces, line wraps, middle dots, brackets and Markdown
//! emphasis; the loose stage finds a term however it was broken. It runs after
//! [`normalize`](super::normalize::normalize), so it only has to know the representatives
//! that normalisation leaves (one `-`, one `・`, one space...).

use std::ops::Range;

use super::bmp::{bmp_set, code_at, BmpSet};
#[cfg(test)]
use super::normalize::normalize;
#[cfg(test)]
use super::normalized::{Normalized, Writer};

/// Whether `c`, in normalised text, only separates words.
///
/// Besides whitespace and punctuation this includes Markdown markup (`*`, `_`, `` ` ``,
/// `#`, `|`, `~`), since emphasis and tables split terms in the source. Symbols that
/// carry meaning of their own (`+`, `=`, `<`, `>`, `&`, `%`, `@`) are kept.
const fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '-' | '・'
                | '/'
                | '\\'
                | '_'
                | '.'
                | ','
                | '、'
                | '。'
                | '('
                | ')'
                | '「'
                | '」'
                | '"'
                | '\''
                | ':'
                | ';'
                | '!'
                | '?'
                | '~'
                | '`'
                | '*'
                | '#'
                | '|'
        )
}

/// Folds a katakana spelling to the form its variants share: no long-vowel mark or
/// sokuon, small kana as large ones, `ヴ` as `ブ` (`ウエッブブラウザー` and `ウェブブラウザ`
/// both fold to `ウエブブラウザ`). `None` drops the character.
pub(crate) const fn fold_kana(c: char) -> Option<char> {
    Some(match c {
        'ー' | 'ッ' => return None,
        'ァ' => 'ア',
        'ィ' => 'イ',
        'ゥ' => 'ウ',
        'ェ' => 'エ',
        'ォ' => 'オ',
        'ャ' => 'ヤ',
        'ュ' => 'ユ',
        'ョ' => 'ヨ',
        'ヮ' => 'ワ',
        'ヴ' => 'ブ',
        c => c,
    })
}

/// What `c` of normalised text becomes in loose text: nothing for a separator (and for
/// the katakana marks folding drops), its folded form otherwise.
pub(crate) const fn loose_char(c: char) -> Option<char> {
    if is_separator(c) {
        None
    } else {
        fold_kana(c)
    }
}

/// Whether loose text holds `c` only where the normalised text holds `c` itself: `c` is
/// no separator, and no other character folds onto it (as `ィ` onto `イ`, `ヴ` onto `ブ`;
/// folding only touches the katakana block). Such a character of a loose needle lets
/// `near::both_forms_around` find the needle's loose occurrences from raw text.
pub(crate) fn only_itself_loosens_to(c: char) -> bool {
    loose_char(c) == Some(c)
        && !KATAKANA
            .filter(|&other| other != c)
            .any(|other| loose_char(other) == Some(c))
}

/// The katakana block, the only characters `fold_kana` changes.
const KATAKANA: std::ops::RangeInclusive<char> = '\u{30A0}'..='\u{30FF}';

/// Loose text of `s`, with a map back to `s`.
#[cfg(test)]
pub(crate) fn loose(s: &str) -> Normalized {
    loose_from(&normalize(s))
}

/// Loose text of a query: the same text as [`loose`], without the map.
#[cfg(test)]
fn loose_str(s: &str) -> String {
    loose(s).text
}

/// Loose text of text that is already normalised, without a map: the search keeps its
/// corpus normalised and only needs to know which section a loose match falls in.
pub(crate) fn loose_normalized(normalized: &str) -> String {
    normalized.chars().filter_map(loose_char).collect()
}

/// Loose text without a map of its own, for a search that maps only its few matches
/// back: each stretch the normalised text keeps byte for byte (folded katakana keep their
/// length) is one run, and a loose range leads back to the normalised range it came from,
/// then through the normalised text's map to the original. Composing a map for the loose
/// text ([`loose_from`]) was most of what searching the loose text of a whole block cost.
#[derive(Debug)]
pub(crate) struct LooseRuns {
    pub(crate) text: String,
    /// Where each run starts: in `text`, and in the normalised text. 32 bits each: the
    /// texts are blocks of a file or windows of one (at most tens of MiB), and the vault's
    /// cache of forms holds a run per word of English text.
    runs: Vec<[u32; 2]>,
}

/// The characters of the Basic Multilingual Plane that loose text keeps as they are: no
/// separator, not folded.
static KEPT_BMP: BmpSet = bmp_set!(|c| matches!(loose_char(c), Some(kept) if kept == c));

/// The length of the character that starts at `at` of `bytes` (UTF-8 text) if loose
/// text keeps it as it is, from its bytes alone: the Basic Multilingual Plane (nearly
/// all text) through [`KEPT_BMP`]. `None`: a separator, a character that folds, or one
/// past the plane (those are asked of [`loose_char`]).
fn kept_len(bytes: &[u8], at: usize) -> Option<usize> {
    let (code, len) = code_at(bytes, at)?;
    KEPT_BMP.contains(code).then_some(len)
}

/// An offset of a block's text, which is far below 4 GiB.
fn narrow(offset: usize) -> u32 {
    u32::try_from(offset).expect("a block of text is far below 4 GiB")
}

impl LooseRuns {
    /// The loose text of `normalized`, the same text as [`loose_from`] gives.
    /// Characters loose text keeps as they are are copied a stretch at a time, not one
    /// by one, and most are known as such from their bytes ([`kept_len`]): only the
    /// others are decoded and asked of [`loose_char`]. Asking it of every character was
    /// most of what building the vault's cached forms cost.
    pub(crate) fn of(normalized: &str) -> LooseRuns {
        let bytes = normalized.as_bytes();
        let mut text = String::with_capacity(normalized.len());
        let mut runs = Vec::new();
        let mut in_run = false;
        // Where the stretch of characters kept as they are, not yet copied, starts.
        let mut kept_from = 0;
        let mut at = 0;
        while at < bytes.len() {
            if let Some(len) = kept_len(bytes, at) {
                if !in_run {
                    runs.push([narrow(text.len() + (at - kept_from)), narrow(at)]);
                    in_run = true;
                }
                at += len;
                continue;
            }
            let c = normalized[at..]
                .chars()
                .next()
                .expect("a character starts here");
            let becomes = loose_char(c);
            if !in_run && becomes.is_some() {
                runs.push([narrow(text.len() + (at - kept_from)), narrow(at)]);
                in_run = true;
            }
            let end = at + c.len_utf8();
            if becomes != Some(c) {
                text.push_str(&normalized[kept_from..at]);
                kept_from = end;
                match becomes {
                    Some(folded) => {
                        debug_assert_eq!(
                            folded.len_utf8(),
                            c.len_utf8(),
                            "folding keeps the length"
                        );
                        text.push(folded);
                    }
                    None => in_run = false,
                }
            }
            at = end;
        }
        text.push_str(&normalized[kept_from..]);
        LooseRuns { text, runs }
    }

    /// The loose text of `normalized` decided character by character through
    /// [`loose_char`]: what [`LooseRuns::of`] is checked against.
    #[cfg(test)]
    fn of_each_character(normalized: &str) -> LooseRuns {
        let mut text = String::with_capacity(normalized.len());
        let mut runs = Vec::new();
        let mut in_run = false;
        let mut kept_from = 0;
        for (at, c) in normalized.char_indices() {
            let becomes = loose_char(c);
            if !in_run && becomes.is_some() {
                runs.push([narrow(text.len() + (at - kept_from)), narrow(at)]);
                in_run = true;
            }
            if becomes == Some(c) {
                continue;
            }
            text.push_str(&normalized[kept_from..at]);
            kept_from = at + c.len_utf8();
            match becomes {
                Some(folded) => text.push(folded),
                None => in_run = false,
            }
        }
        text.push_str(&normalized[kept_from..]);
        LooseRuns { text, runs }
    }

    /// The range of the normalised text that `range` (not empty) of the loose text came
    /// from: from its first character to its last, the separators between them included.
    pub(crate) fn normalized_range(&self, range: Range<usize>) -> Range<usize> {
        let normalized_at = |at: usize| {
            let run = self
                .runs
                .partition_point(|&[start, _]| start as usize <= at)
                - 1;
            let [loose_start, normalized_start] = self.runs[run].map(|offset| offset as usize);
            normalized_start + (at - loose_start)
        };
        normalized_at(range.start)..normalized_at(range.end - 1) + 1
    }

    /// Gives back the room reserved while building (the loose text is shorter than the
    /// normalised one it was reserved for), for text that is kept.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.runs.shrink_to_fit();
    }

    /// Bytes the text and its runs hold on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.runs.capacity() * std::mem::size_of::<[u32; 2]>()
    }

    /// How many bytes of the loose text come from the normalised text before
    /// `normalized_at`.
    pub(crate) fn loose_before(&self, normalized_at: usize) -> usize {
        let run = self
            .runs
            .partition_point(|&[_, normalized_start]| (normalized_start as usize) < normalized_at);
        let Some([loose_start, normalized_start]) = run
            .checked_sub(1)
            .map(|at| self.runs[at].map(|offset| offset as usize))
        else {
            return 0;
        };
        let run_end = self
            .runs
            .get(run)
            .map_or(self.text.len(), |&[next_start, _]| next_start as usize);
        (loose_start + (normalized_at - normalized_start)).min(run_end)
    }
}

/// Loose text of an already normalised text, with a map composed through the
/// normalised text's back to its original: what [`LooseRuns`] is checked against.
#[cfg(test)]
pub(crate) fn loose_from(normalized: &Normalized) -> Normalized {
    let text = normalized.text.as_str();
    let mut writer = Writer::with_capacity(text.len());
    let mut kept_from = 0;
    for (at, c) in text.char_indices() {
        let becomes = loose_char(c);
        if becomes == Some(c) {
            continue;
        }
        if kept_from < at {
            writer.copy_from(normalized, kept_from..at);
        }
        let end = at + c.len_utf8();
        if let Some(folded) = becomes {
            writer.replace_from(normalized, at..end, folded.encode_utf8(&mut [0; 4]));
        }
        kept_from = end;
    }
    if kept_from < text.len() {
        writer.copy_from(normalized, kept_from..text.len());
    }
    writer.finish(normalized.original_offset(text.len()))
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy;

    use super::*;

    #[test]
    fn only_katakana_fold_and_only_onto_katakana() {
        let changed = (0..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| !KATAKANA.contains(&c) && fold_kana(c) != Some(c));
        assert_eq!(changed.count(), 0);
        for c in ['障', 'a', 'カ', 'ン', '4'] {
            assert!(only_itself_loosens_to(c), "{c}");
        }
        for c in ['イ', 'ブ', 'ヤ', 'ィ', 'ー', '-', '・', ' '] {
            assert!(!only_itself_loosens_to(c), "{c}");
        }
    }

    #[test]
    fn kept_len_knows_every_character_loose_text_keeps_in_the_plane() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let mut buffer = [0; 4];
            let bytes = c.encode_utf8(&mut buffer).as_bytes();
            let kept = u32::from(c) <= 0xFFFF && loose_char(c) == Some(c);
            assert_eq!(kept_len(bytes, 0), kept.then_some(bytes.len()), "{c:?}");
        }
    }

    /// Pieces of normalised text: every kind of character loose text drops, folds or
    /// keeps, of each UTF-8 length.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "0",
        " ",
        "\t",
        "\n",
        "\r",
        "\u{b}",
        "\u{c}",
        "-",
        "/",
        "\\",
        "_",
        ".",
        ",",
        "(",
        ")",
        "\"",
        "'",
        ":",
        ";",
        "!",
        "?",
        "~",
        "`",
        "*",
        "#",
        "|",
        "+",
        "=",
        "<",
        "&",
        "%",
        "@",
        "[",
        "{",
        "\u{7f}",
        "\u{0}",
        "\u{85}",
        "\u{a0}",
        "é",
        "ß",
        "\u{bf}",
        "\u{7ff}",
        "\u{800}",
        "\u{1680}",
        "\u{2000}",
        "\u{200a}",
        "\u{2028}",
        "\u{2029}",
        "\u{202f}",
        "\u{205f}",
        "\u{3000}",
        "・",
        "、",
        "。",
        "「",
        "」",
        "あ",
        "っ",
        "ゔ",
        "ア",
        "ァ",
        "ィ",
        "ゥ",
        "ェ",
        "ォ",
        "ャ",
        "ュ",
        "ョ",
        "ヮ",
        "ヴ",
        "ー",
        "ッ",
        "カ",
        "ン",
        "ブ",
        "\u{30a0}",
        "\u{30ff}",
        "障",
        "害",
        "Ａ",
        "\u{ffff}",
        "\u{fffd}",
        "𠮷",
        "😀",
        "\u{10ffff}",
        "incident",
        "ウィンドウマネージャー",
        "e-mail, E mail",
    ];

    #[test]
    fn each_piece_and_pair_of_pieces_loosen_as_character_by_character() {
        let check = |text: &str| {
            let (fast, each) = (LooseRuns::of(text), LooseRuns::of_each_character(text));
            assert_eq!((fast.text, fast.runs), (each.text, each.runs), "{text:?}");
        };
        for first in PIECES {
            check(first);
            for second in PIECES {
                check(&format!("{first}{second}"));
                check(&format!("ab {first}{second} 障"));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn runs_of_any_text_are_those_character_by_character(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(PIECES).prop_map(str::to_owned),
                    proptest::char::any().prop_map(String::from),
                ],
                0..40,
            )
        ) {
            let text = pieces.concat();
            let (fast, each) = (LooseRuns::of(&text), LooseRuns::of_each_character(&text));
            proptest::prop_assert_eq!((fast.text, fast.runs), (each.text, each.runs));
        }
    }

    #[test]
    fn separators_vanish() {
        for s in [
            "請求書",
            "請求 書",
            "請求\n書",
            "請求\r\n 書",
            "請求・書",
            "請求／書",
            "「請求」書",
            "**請求**書",
            "請求-書",
            "請求_書",
            "【請求】書",
        ] {
            assert_eq!(loose_str(s), "請求書", "{s:?}");
        }
    }

    #[test]
    fn loose_of_normalised_text_equals_loose_of_the_original() {
        for s in [
            "「請求\n書」へ",
            "（三万五千）円",
            "e-mail, E mail",
            "ﾃﾞｰﾀ・ﾍﾞｰｽ",
        ] {
            assert_eq!(loose_normalized(&normalize(s).text), loose_str(s), "{s:?}");
        }
    }

    #[test]
    fn katakana_variants_fold_and_map_back() {
        assert_eq!(
            loose_str("ウィンドウマネージャー"),
            loose_str("ウインドウ・マネージャ")
        );
        assert_eq!(loose_str("ウエッブ"), "ウエブ");
        let src = "新しいウェブ";
        let loose = loose(src);
        assert_eq!(loose.text, "新しいウエブ");
        let at = loose.text.find("エ").unwrap();
        assert_eq!(&src[loose.original_range(at..at + 3)], "ェ");
    }

    #[test]
    fn english_and_numbers() {
        assert_eq!(loose_str("e-mail, E mail"), "emailemail");
        assert_eq!(loose_str("1,000円"), "1000円");
        assert_eq!(loose_str("C++ & a=b"), "c++&a=b");
    }

    #[test]
    fn map_leads_to_the_original() {
        let src = "詳細は「請求\n書」へ";
        let loose = loose(src);
        assert_eq!(loose.text, "詳細は請求書へ");
        let at = loose.text.find("請求書").unwrap();
        let range = loose.original_range(at..at + "請求書".len());
        assert_eq!(&src[range], "請求\n書");
        assert_eq!(loose.original_offset(loose.text.len()), src.len());
    }

    #[test]
    fn map_composes_through_numerals() {
        let src = "（三万五千）円";
        let loose = loose(src);
        assert_eq!(loose.text, "35000円");
        assert_eq!(&src[loose.original_range(1..3)], "三万五千");
        assert_eq!(&src[loose.original_range(5..8)], "円");
    }
}
