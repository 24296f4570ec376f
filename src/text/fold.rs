//! Character folding: NFKC, lowercase, then one representative per look-alike family.
//!
//! NFKC can merge a character with the marks that follow it (`ｶ` + `ﾞ` -> `ガ`), so
//! folding works on *segments*: a character plus every following character that NFKC
//! could attach to it. Segments are folded independently, which is what lets each
//! normalised piece point back to a whole original span.

use unicode_normalization::char::{
    canonical_combining_class, decompose_compatible, is_combining_mark,
};
use unicode_normalization::UnicodeNormalization;

use super::variants::representative;

/// Whether `c`, alone in its segment, folds to itself and is not whitespace.
///
/// This is the fast path: ASCII, kana and kanji make up almost all of a Japanese manual,
/// and copying them in runs is what keeps normalisation at memory-bandwidth speeds.
pub(crate) const fn is_stable(c: char) -> bool {
    match c {
        '!'..='~' => !(c.is_ascii_uppercase() || matches!(c, '[' | ']' | '{' | '}')),
        '、' | '。' | '「' | '」' | 'ー' | '・' => true,
        '\u{3041}'..='\u{3096}' | '\u{30A1}'..='\u{30FA}' => true,
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' => true,
        _ => false,
    }
}

/// Whether NFKC can never merge `c` into the segment before it: its decomposition starts
/// with a starter that is not the second half of any composition.
#[inline]
pub(crate) fn starts_segment(c: char) -> bool {
    c.is_ascii() || is_stable(c) || decomposition_starts_segment(c)
}

/// [`starts_segment`] for characters that are neither ASCII nor stable: asks the
/// decomposition tables.
fn decomposition_starts_segment(c: char) -> bool {
    let mut first = c;
    let mut seen = false;
    decompose_compatible(c, |d| {
        if !seen {
            first = d;
            seen = true;
        }
    });
    canonical_combining_class(first) == 0
        && !is_combining_mark(first)
        && !is_conjoining_hangul_vowel_or_final(first)
}

/// Hangul medial vowels and final consonants compose with the syllable before them.
fn is_conjoining_hangul_vowel_or_final(c: char) -> bool {
    matches!(c, '\u{1161}'..='\u{1175}' | '\u{11A8}'..='\u{11C2}')
}

/// Reusable scratch space, so folding a segment allocates nothing once warmed up.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    lowered: String,
}

impl Folder {
    /// Folds one segment into `out`.
    pub(crate) fn fold(&mut self, segment: &str, out: &mut String) {
        self.lowered.clear();
        let mut recompose = false;
        for c in segment.nfkc() {
            for lower in c.to_lowercase() {
                // A lowered non-ASCII letter may decompose differently (e.g. `İ` -> `i̇`);
                // normalising again keeps the result a fixed point.
                recompose |= lower != c && !lower.is_ascii();
                self.lowered.push(lower);
            }
        }
        if recompose {
            out.extend(self.lowered.nfkc().map(representative));
        } else {
            out.extend(self.lowered.chars().map(representative));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(s: &str) -> String {
        let mut out = String::new();
        Folder::default().fold(s, &mut out);
        out
    }

    #[test]
    fn full_width_becomes_half_width_and_half_width_kana_full_width() {
        assert_eq!(fold("Ａ"), "a");
        assert_eq!(fold("１"), "1");
        assert_eq!(fold("ｶ"), "カ");
        assert_eq!(fold("ｶﾞ"), "ガ");
        assert_eq!(fold("（"), "(");
    }

    #[test]
    fn compatibility_forms_expand() {
        assert_eq!(fold("㍻"), "平成");
        assert_eq!(fold("①"), "1");
        assert_eq!(fold("㈱"), "(株)");
    }

    #[test]
    fn stable_characters_fold_to_themselves() {
        for c in ['a', '0', '-', '~', 'あ', 'ア', 'ー', '・', '漢', '「', '。'] {
            assert!(is_stable(c), "{c}");
            assert_eq!(fold(&c.to_string()), c.to_string());
        }
        for c in ['A', '[', ' ', 'ｶ', '〜', '【', '﨑'] {
            assert!(!is_stable(c), "{c}");
        }
    }

    #[test]
    fn marks_attach_to_the_preceding_segment() {
        assert!(!starts_segment('\u{3099}'), "combining voiced mark");
        assert!(
            !starts_segment('ﾞ'),
            "half-width voiced mark decomposes to a combining one"
        );
        assert!(!starts_segment('\u{0301}'));
        assert!(!starts_segment('\u{1161}'), "Hangul vowel jamo");
        assert!(starts_segment('か'));
        assert!(starts_segment('Ａ'));
        assert!(starts_segment('가'));
    }
}
