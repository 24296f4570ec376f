//! The exception vocabulary: words that mark exceptions, exclusions, conditions, cautions,
//! prohibitions and limits in a manual.
//!
//! Exhaustive answers fail most often on the sentence that narrows a rule ("ただし…を除く",
//! "unless…"), so both `manual_excepts` and Stage 2 of `manual_find` scan for these terms.
//! This list is the single source for both; adding a term here changes both.
//!
//! Matching runs on normalised text (`crate::text::normalize`, the same as search), so full-width
//! letters, half-width kana and letter case do not hide a term. English terms must stand
//! as whole words ("note" does not match "notebook"), so inflections are listed
//! explicitly; Japanese has no word breaks, so Japanese terms match anywhere. Terms are
//! chosen to be specific: "限り" alone is left out because "できる限り" (as far as
//! possible) is everywhere, while "に限り" / "に限る" (only when) are in.

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use crate::text::normalize::{normalize, normalize_str};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Japanese,
    English,
}

/// What kind of narrowing a term signals: the schema's `ExceptionCategory` (exception,
/// exclusion, condition, caution, prohibition, limitation).
pub use crate::contract::types::ExceptionCategory;

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ExceptionTerm {
    pub term: &'static str,
    pub language: Language,
    pub category: ExceptionCategory,
}

const fn ja(term: &'static str, category: ExceptionCategory) -> ExceptionTerm {
    ExceptionTerm {
        term,
        language: Language::Japanese,
        category,
    }
}

const fn en(term: &'static str, category: ExceptionCategory) -> ExceptionTerm {
    ExceptionTerm {
        term,
        language: Language::English,
        category,
    }
}

use ExceptionCategory::{Caution, Condition, Exception, Exclusion, Limitation, Prohibition};

pub(crate) const EXCEPTION_TERMS: &[ExceptionTerm] = &[
    ja("例外", Exception),
    ja("特例", Exception),
    ja("除外", Exclusion),
    ja("除く", Exclusion),
    ja("除き", Exclusion),
    ja("除いて", Exclusion),
    ja("場合を除き", Exclusion),
    ja("対象外", Exclusion),
    ja("適用外", Exclusion),
    ja("不適用", Exclusion),
    ja("適用されない", Exclusion),
    ja("適用しない", Exclusion),
    ja("対象とならない", Exclusion),
    ja("含まれない", Exclusion),
    ja("免除", Exclusion),
    ja("ただし", Condition),
    ja("但し", Condition),
    ja("に限り", Condition),
    ja("に限る", Condition),
    ja("条件", Condition),
    ja("注意", Caution),
    ja("留意", Caution),
    ja("警告", Caution),
    ja("禁止", Prohibition),
    ja("不可", Prohibition),
    ja("できません", Prohibition),
    ja("できない", Prohibition),
    ja("してはならない", Prohibition),
    ja("してはいけない", Prohibition),
    ja("認められない", Prohibition),
    ja("認められません", Prohibition),
    ja("許可されない", Prohibition),
    ja("制限", Limitation),
    ja("制約", Limitation),
    ja("上限", Limitation),
    en("except", Exception),
    en("exception", Exception),
    en("exceptions", Exception),
    en("exclude", Exclusion),
    en("excluded", Exclusion),
    en("excluding", Exclusion),
    en("exclusion", Exclusion),
    en("not applicable", Exclusion),
    en("does not apply", Exclusion),
    en("exempt", Exclusion),
    en("exemption", Exclusion),
    en("unless", Condition),
    en("only if", Condition),
    en("provided that", Condition),
    en("subject to", Condition),
    en("however", Condition),
    en("note", Caution),
    en("caution", Caution),
    en("warning", Caution),
    en("must not", Prohibition),
    en("shall not", Prohibition),
    en("cannot", Prohibition),
    en("prohibited", Prohibition),
    en("forbidden", Prohibition),
    en("not permitted", Prohibition),
    en("not allowed", Prohibition),
    en("not eligible", Prohibition),
    en("ineligible", Prohibition),
    en("restriction", Limitation),
    en("restrictions", Limitation),
    en("limited to", Limitation),
];

/// An exception term found in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExceptionMatch {
    pub term: &'static ExceptionTerm,
    /// Byte range of the matched text: in the original line from [`first_exception`], in
    /// the normalised text from [`exceptions_in_normalized`].
    pub range: Range<usize>,
}

/// The leftmost exception term of `line` (the longest one there, when several start at
/// the same place), or `None`.
pub(crate) fn first_exception(line: &str) -> Option<ExceptionMatch> {
    let folded = normalize(line);
    exceptions_in_normalized(&folded.text)
        .min_by_key(|found| (found.range.start, std::cmp::Reverse(found.range.end)))
        .map(|found| ExceptionMatch {
            term: found.term,
            range: folded.original_range(found.range),
        })
}

/// Every exception term in `normalized`, which must already be normalised (the search
/// keeps its corpus that way, so Stage 2 of `manual_find` scans without normalising
/// again). Overlapping terms are all reported; ranges are bytes of `normalized`.
pub(crate) fn exceptions_in_normalized(
    normalized: &str,
) -> impl Iterator<Item = ExceptionMatch> + '_ {
    matcher()
        .find_overlapping_iter(normalized)
        .filter(move |found| {
            let term = &EXCEPTION_TERMS[found.pattern().as_usize()];
            term.language != Language::English || is_whole_word(normalized, found.range())
        })
        .map(|found| ExceptionMatch {
            term: &EXCEPTION_TERMS[found.pattern().as_usize()],
            range: found.range(),
        })
}

fn matcher() -> &'static AhoCorasick {
    static MATCHER: OnceLock<AhoCorasick> = OnceLock::new();
    MATCHER.get_or_init(|| {
        let folded_terms = EXCEPTION_TERMS.iter().map(|term| normalize_str(term.term));
        AhoCorasick::new(folded_terms).expect("the exception vocabulary is a small literal list")
    })
}

fn is_whole_word(text: &str, range: Range<usize>) -> bool {
    let bytes = text.as_bytes();
    let is_word_byte = |at: Option<&u8>| at.is_some_and(u8::is_ascii_alphanumeric);
    !is_word_byte(
        range
            .start
            .checked_sub(1)
            .and_then(|before| bytes.get(before)),
    ) && !is_word_byte(bytes.get(range.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(line: &str) -> Option<(&'static str, &str)> {
        first_exception(line).map(|found| (found.term.term, &line[found.range]))
    }

    #[test]
    fn vocabulary_is_folded_unique_and_sized_to_stay_reviewable() {
        let mut folded: Vec<String> = EXCEPTION_TERMS
            .iter()
            .map(|term| normalize_str(term.term))
            .collect();
        assert!(
            EXCEPTION_TERMS
                .iter()
                .zip(&folded)
                .all(|(term, folded)| term.term == folded),
            "store terms folded"
        );
        folded.sort();
        folded.dedup();
        assert_eq!(folded.len(), EXCEPTION_TERMS.len(), "no duplicates");
        assert!((40..=70).contains(&EXCEPTION_TERMS.len()));
    }

    #[test]
    fn english_terms_match_whole_words_in_any_case_or_width() {
        assert_eq!(found("See NOTE below"), Some(("note", "NOTE")));
        assert_eq!(found("a notebook"), None);
        assert_eq!(
            found("Ｅｘｃｅｐｔｉｏｎｓ apply"),
            Some(("exceptions", "Ｅｘｃｅｐｔｉｏｎｓ"))
        );
        assert_eq!(found("注意:unless paid"), Some(("注意", "注意")));
        assert_eq!(found("paid,unless"), Some(("unless", "unless")));
    }

    #[test]
    fn leftmost_then_longest_term_wins() {
        assert_eq!(
            found("出張の場合を除き、例外"),
            Some(("場合を除き", "場合を除き"))
        );
        assert_eq!(
            found("これは適用されない"),
            Some(("適用されない", "適用されない"))
        );
        assert_eq!(found("できる限り早く"), None);
    }

    #[test]
    fn folding_maps_back_to_the_original_text() {
        assert_eq!(found("ﾃﾞｷﾅｲ"), None, "katakana is not the hiragana term");
        assert_eq!(found("ｶﾞ例外"), Some(("例外", "例外")));
    }
}
