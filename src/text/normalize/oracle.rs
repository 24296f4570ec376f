//! The normaliser as it was before its fast paths, kept to check them: every input must
//! give the same text and the same map back, byte for byte.

use super::{is_stable, numerals, starts_segment, Normalized, SpaceCollapser};

/// Steps 1-3 a segment at a time, copying only stable characters as they are.
fn fold_text_by_segments(s: &str) -> Normalized {
    let mut out = SpaceCollapser::new(s.len());
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
        out.copy_lowercased(s, stable);
        stable = end..end;
        out.segment(s, start..end, alone && c.is_whitespace());
    }
    out.copy_lowercased(s, stable);
    out.finish(s.len())
}

/// [`normalize`] as it was.
pub(super) fn normalize_by_segments(s: &str) -> Normalized {
    numerals::unify_by_characters(fold_text_by_segments(s))
}

// The oracle's own tests (the file is test code; `mod tests` keeps that visible to the
// architecture tests, which read only production code before it).
#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::text::properties::FRAGMENTS;

    use super::super::{fold_text, normalize};
    use super::*;

    /// Pieces where the fast paths change course, beside the properties' fragments: each
    /// kind of whitespace, ASCII words around eight bytes long (a word-at-a-time step),
    /// brackets, controls, case, more characters NFKC merges or splits, numerals.
    const PIECES: &[&str] = &[
        "\u{0B}",
        "\u{0C}",
        "\u{85}",
        "\u{A0}",
        "\u{1680}",
        "\u{2000}",
        "\u{2028}",
        "\u{0}",
        "\u{1F}",
        "\u{7F}",
        "abcdefg",
        "ABCDEFGH",
        "Manual PDF ",
        "word word",
        "x y z w v",
        "[",
        "]",
        "{",
        "}",
        "\\",
        "1,000",
        "1.5",
        "ﾟ",
        "ｶﾞ",
        "\u{309A}",
        "、",
        "。",
        "々",
        "\u{1100}",
        "\u{1161}",
        "\u{11A8}",
        "가",
        "）",
        "：",
        "”",
        "ﬀ",
        "e\u{301}",
        "\u{301}",
        "ǅ",
        "Ω",
        "Σ",
        "⼗",
        "㈣",
        "\u{1D400}",
        "😀",
        "é",
        "\u{FFFD}",
    ];

    fn tricky_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            2 => prop::sample::select(PIECES).prop_map(str::to_owned),
            2 => prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn the_fast_paths_give_the_text_and_map_of_the_oracle(text in tricky_text()) {
            prop_assert_eq!(fold_text(&text), fold_text_by_segments(&text));
            prop_assert_eq!(normalize(&text), normalize_by_segments(&text));
        }
    }

    #[test]
    fn each_piece_and_pair_of_pieces_matches_the_oracle() {
        let pieces = || PIECES.iter().chain(FRAGMENTS);
        for first in pieces() {
            assert_eq!(normalize(first), normalize_by_segments(first), "{first:?}");
            for second in pieces() {
                for text in [
                    format!("{first}{second}"),
                    format!("abcdefg{first}{second}"),
                ] {
                    assert_eq!(normalize(&text), normalize_by_segments(&text), "{text:?}");
                }
            }
        }
    }

    /// Every UTF-8 file under the folders named in `MANVAULT_NORMALIZE_CORPORA` (separated
    /// by `:`), compared whole with the oracle; docs/checks/normalize-oracle/run.sh runs it
    /// over the bench vault's notes, the handbook and the Debian handbook.
    #[test]
    #[ignore = "reads corpora named in MANVAULT_NORMALIZE_CORPORA"]
    fn whole_corpora_match_the_oracle() {
        let folders = std::env::var("MANVAULT_NORMALIZE_CORPORA")
            .expect("MANVAULT_NORMALIZE_CORPORA names the folders to compare");
        let mut files = 0;
        for folder in folders.split(':').filter(|folder| !folder.is_empty()) {
            for entry in walkdir::WalkDir::new(folder).follow_links(false) {
                let entry = entry.expect("readable folder");
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                assert!(
                    normalize(&text) == normalize_by_segments(&text),
                    "{} normalises differently",
                    entry.path().display()
                );
                files += 1;
            }
        }
        assert!(files > 0, "no file read under {folders}");
        eprintln!("{files} files compared");
    }
}
