//! Properties every caller relies on, checked over random mixes of the characters the
//! rules treat specially.

use proptest::prelude::*;

use super::clean::is_clean;
use super::lines::{Breaks, LineNo, LineTable};
use super::loose::{loose, LooseRuns};
use super::near::{both_forms_around, loose_anchor, normalize_where_needed, Anchored, Piece};
use super::normalize::{normalize, Normalized};
use super::prefilter::Prefilter;
use super::snippet::snippet;

pub(super) const FRAGMENTS: &[&str] = &[
    "a",
    "Z",
    "7",
    "0",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\u{3000}",
    "\u{00A0}",
    "-",
    "–",
    "—",
    "−",
    "－",
    "ー",
    "ｰ",
    "─",
    "〜",
    "～",
    "~",
    "・",
    "･",
    "·",
    ",",
    ".",
    "/",
    "／",
    "(",
    "（",
    "【",
    "】",
    "「",
    "『",
    "」",
    "“",
    "'",
    "あ",
    "か",
    "\u{3099}",
    "ｶ",
    "ﾞ",
    "ア",
    "漢",
    "字",
    "請求",
    "書",
    "一",
    "二",
    "三",
    "〇",
    "十",
    "百",
    "千",
    "万",
    "億",
    "兆",
    "壱",
    "弐",
    "拾",
    "萬",
    "１",
    "９",
    "Ａ",
    "ｂ",
    "㍻",
    "㈱",
    "①",
    "¨",
    "e\u{0301}",
    "İ",
    "ß",
    "ﬁ",
];

fn mixed_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|parts| parts.concat())
}

/// More of what a prefilter must see through: plain runs between the special cases (so
/// that windows are apart), spellings that fold onto ASCII letters, compositions.
const NEAR_FRAGMENTS: &[&str] = &[
    "incident",
    "ncide",
    "INCIDENT",
    "ｉｎｃｉｄｅｎｔ",
    "\u{1D422}",
    "ⅰ",
    "ﬁ",
    "İ",
    "\u{0307}",
    "の手順です",
    "手順",
    "障害対応",
    "障害",
    "対応する",
    "ｶﾞｲﾄﾞ",
    "がいど",
    "か\u{3099}",
    "\u{1100}\u{1161}",
    "가",
    "【注】",
    "[注]",
    "二十件",
    "20件",
    "四千七百十一",
    "二千二千",
    "五十五十",
    "九十九",
    "百",
    "七",
    "4,711",
    "1.5万",
    "㈣",
    "①⑦",
    "⼗",
    "は十分",
    "は㈩分",
    "は十",
    "七十",
    "十七",
    "十\u{301}",
    "4十",
    "incident-4711",
    "cite",
    "Cite ",
    "c\u{0301}i",
    "traffic, ",
    "traffic first ",
    "c - i",
    "c\n\ti",
    "c.(d",
    "c ,5",
    "c -\u{301}x",
    "in-c i-dent",
    "plain words here ",
    "more plain text and ",
];

/// Fragments between arbitrary characters, which reach what no list of fragments names.
fn near_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
        prop::sample::select(NEAR_FRAGMENTS).prop_map(str::to_owned),
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(fragment, 0..120).prop_map(|parts| parts.concat())
}

/// The original ranges of the needle's occurrences in the normalisation of `text`, found
/// in the pieces `normalize_where_needed` gives.
fn found_near(text: &str, needle: &str) -> Vec<std::ops::Range<usize>> {
    let prefilter = Prefilter::new(needle);
    normalize_where_needed(text, prefilter.as_ref())
        .iter()
        .flat_map(|piece| {
            piece
                .normalized
                .text
                .match_indices(needle)
                .map(|(at, _)| piece.original_range(at..at + needle.len()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The original ranges of the occurrences of the normalised `needle` in the normalisation
/// of `text` (`None` when it has no prefilter) and of the loose `loose_needle` in its
/// loose text, found in the windows `both_forms_around` gives for both; `None` when the
/// loose needle has no anchor.
fn found_both_near(text: &str, needle: &str, loose_needle: &str) -> Option<BothFound> {
    let loose = loose_anchor(loose_needle)?.candidates(text);
    let prefilter = Prefilter::new(needle);
    let normalized = prefilter
        .as_ref()
        .map(|prefilter| prefilter.candidates(text));
    let windows = both_forms_around(
        text,
        Anchored {
            candidates: normalized.as_deref().unwrap_or_default(),
            reach: needle.len(),
        },
        Anchored {
            candidates: &loose,
            reach: loose_needle.len(),
        },
    );
    let found = |pieces: Vec<&Piece>, needle: &str| -> Vec<std::ops::Range<usize>> {
        let found = pieces.into_iter().flat_map(|piece| {
            let at = piece.normalized.text.match_indices(needle);
            at.map(|(at, _)| piece.original_range(at..at + needle.len()))
                .collect::<Vec<_>>()
        });
        found.collect()
    };
    Some(BothFound {
        normalized: prefilter
            .map(|_| found(windows.iter().map(|w| &w.normalized).collect(), needle)),
        loose: windows
            .iter()
            .flat_map(|window| {
                let at = window.loose.text.match_indices(loose_needle);
                at.map(|(at, _)| window.loose_original_range(at..at + loose_needle.len()))
                    .collect::<Vec<_>>()
            })
            .collect(),
    })
}

/// What [`found_both_near`] found.
struct BothFound {
    normalized: Option<Vec<std::ops::Range<usize>>>,
    loose: Vec<std::ops::Range<usize>>,
}

fn found_loose_whole(text: &str, needle: &str) -> Vec<std::ops::Range<usize>> {
    let whole = loose(text);
    let at = whole.text.match_indices(needle);
    at.map(|(at, _)| whole.original_range(at..at + needle.len()))
        .collect()
}

fn found_whole(text: &str, needle: &str) -> Vec<std::ops::Range<usize>> {
    let normalized = normalize(text);
    normalized
        .text
        .match_indices(needle)
        .map(|(at, _)| normalized.original_range(at..at + needle.len()))
        .collect()
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![mixed_text(), any::<String>()]
}

fn char_boundaries(s: &str) -> impl Iterator<Item = usize> + '_ {
    s.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
}

/// Every boundary of the rewritten text maps to a boundary of the original, in order,
/// and the ends of the texts correspond.
fn assert_map_exact(original: &str, rewritten: &Normalized) {
    let mut previous = 0;
    for n in char_boundaries(&rewritten.text) {
        let start = rewritten.original_offset(n);
        let range = rewritten.original_range(n..n);
        assert!(original.is_char_boundary(start), "{n} -> {start}");
        assert!(
            original.is_char_boundary(range.end),
            "{n} -> end {}",
            range.end
        );
        assert!(
            start >= previous,
            "offsets go back at {n}: {previous} then {start}"
        );
        previous = start;
    }
    assert_eq!(
        rewritten.original_offset(rewritten.text.len()),
        original.len()
    );
}

/// Each occurrence of a needle taken from the rewritten text maps to an original slice
/// that rewrites to text containing the needle.
fn assert_matches_map_back(
    original: &str,
    rewritten: &Normalized,
    rewrite: fn(&str) -> Normalized,
    needle_at: usize,
    needle_chars: usize,
) {
    let text = &rewritten.text;
    let Some(start) = text.char_indices().map(|(i, _)| i).nth(needle_at) else {
        return;
    };
    let end = text[start..]
        .char_indices()
        .nth(needle_chars)
        .map_or(text.len(), |(i, _)| start + i);
    let needle = &text[start..end];
    for (at, _) in text.match_indices(needle) {
        let range = rewritten.original_range(at..at + needle.len());
        let back = rewrite(&original[range.clone()]).text;
        assert!(
            back.contains(needle),
            "{needle:?} at {at} -> {range:?} -> {back:?}"
        );
    }
}

proptest! {
    #[test]
    fn normalisation_is_idempotent(s in any_text()) {
        let once = normalize(&s).text;
        prop_assert_eq!(normalize(&once).text, once);
    }

    #[test]
    fn normalised_offsets_are_exact(s in any_text()) {
        assert_map_exact(&s, &normalize(&s));
    }

    #[test]
    fn loose_offsets_are_exact(s in any_text()) {
        assert_map_exact(&s, &loose(&s));
    }

    #[test]
    fn normalised_matches_map_back(s in mixed_text(), at in 0..60usize, len in 1..6usize) {
        assert_matches_map_back(&s, &normalize(&s), normalize, at, len);
    }

    /// Loose runs give the loose text and, through the normalised text's map, the
    /// original range of every loose range that the composed map of `loose` gives.
    #[test]
    fn loose_runs_map_back_as_the_composed_map_does(s in any_text()) {
        let normalized = normalize(&s);
        let composed = loose(&s);
        let runs = LooseRuns::of(&normalized.text);
        prop_assert_eq!(&runs.text, &composed.text);
        let boundaries: Vec<usize> = char_boundaries(&runs.text).collect();
        for (i, &start) in boundaries.iter().enumerate() {
            for &end in boundaries[i + 1..].iter().take(8) {
                let through_runs = normalized.original_range(runs.normalized_range(start..end));
                prop_assert_eq!(through_runs, composed.original_range(start..end), "{}..{}", start, end);
            }
        }
    }

    #[test]
    fn loose_matches_map_back(s in mixed_text(), at in 0..60usize, len in 1..6usize) {
        assert_matches_map_back(&s, &loose(&s), loose, at, len);
    }

    /// At a clean boundary the normalisation of a text is that of the part before it
    /// followed by that of the part after, offsets included.
    #[test]
    fn clean_boundaries_split_the_normalisation(s in near_text()) {
        let whole = normalize(&s);
        for at in char_boundaries(&s).filter(|&at| is_clean(&s, at)) {
            let (before, after) = (normalize(&s[..at]), normalize(&s[at..]));
            prop_assert_eq!(format!("{}{}", before.text, after.text), whole.text.clone());
            for (n, c) in whole.text.char_indices() {
                let span = n..n + c.len_utf8();
                let split = if n < before.text.len() {
                    before.original_range(span)
                } else {
                    let range = after.original_range(span.start - before.text.len()..span.end - before.text.len());
                    range.start + at..range.end + at
                };
                prop_assert_eq!(split, whole.original_range(n..n + c.len_utf8()), "at {} char {}", at, n);
            }
        }
    }

    /// Normalising only near a prefilter's candidates finds every occurrence, at the
    /// same original range, that normalising the whole text finds; and so does taking
    /// the loose text near the candidates of one of a loose needle's characters,
    /// however many separators stand between the others, from windows that serve a
    /// normalised needle too (the normalised needle is still found exactly).
    #[test]
    fn searching_near_candidates_finds_what_the_whole_does(
        s in near_text(),
        at in 0..400usize,
        len in 1..12usize,
        fragment in prop::sample::select(NEAR_FRAGMENTS),
    ) {
        let taken = |whole: &str| -> String { whole.chars().skip(at).take(len).collect() };
        let normalized = normalize(&s).text;
        let taken_normalized = taken(&normalized);
        for needle in [taken_normalized.trim_matches(' '), normalize(fragment).text.trim_matches(' ')] {
            if !needle.is_empty() {
                prop_assert_eq!(found_near(&s, needle), found_whole(&s, needle), "{:?}", needle);
            }
        }
        let needles = [taken_normalized.trim_matches(' ').to_owned(), normalize(fragment).text];
        let loose_needles = [taken(&loose(&s).text), loose(fragment).text];
        for (needle, loose_needle) in needles.iter().zip(&loose_needles) {
            if let Some(found) = found_both_near(&s, needle, loose_needle) {
                prop_assert_eq!(found.loose, found_loose_whole(&s, loose_needle), "loose {:?}", loose_needle);
                if let Some(normalized) = found.normalized.filter(|_| !needle.is_empty()) {
                    prop_assert_eq!(normalized, found_whole(&s, needle), "beside loose {:?}", needle);
                }
            }
        }
    }

    #[test]
    fn lines_of_mapped_offsets_match_a_hand_count(s in mixed_text()) {
        let norm = normalize(&s);
        let lines = LineTable::with_breaks(&s, Breaks::Newline);
        // Offsets where a match can start: the end of the text is none.
        for n in char_boundaries(&norm.text).filter(|&n| n < norm.text.len()) {
            let o = norm.original_offset(n);
            let by_hand = 1 + s[..o].matches('\n').count();
            prop_assert_eq!(lines.line_at(o) as usize, by_hand);
            prop_assert!(lines.byte_range(by_hand as LineNo, by_hand as LineNo).start <= o);
        }
    }

    #[test]
    fn snippets_respect_the_budget(s in mixed_text(), byte in 0..200usize, max in 0..30usize) {
        let out = snippet(&s, byte, max);
        prop_assert!(out.chars().count() <= max);
        prop_assert!(!out.contains(['\n', '\r']));
    }
}
