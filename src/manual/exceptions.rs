//! The exception vocabulary: words that mark exceptions, exclusions, conditions, cautions,
//! prohibitions and limits in a manual.
//!
//! Exhaustive answers fail most often on the sentence that narrows a rule ("ただし…を除く",
//! "unless…"), so both `manual_excepts` and Stage 2 of `manual_find` scan for these terms.
//! This list is the single source for both; adding a term here changes both.
//!
//! Matching runs on folded text ([`fold_for_matching`]: NFKC + lowercase), so full-width
//! letters, half-width kana and letter case do not hide a term. English terms must stand
//! as whole words ("note" does not match "notebook"), so inflections are listed
//! explicitly; Japanese has no word breaks, so Japanese terms match anywhere. Terms are
//! chosen to be specific: "限り" alone is left out because "できる限り" (as far as
//! possible) is everywhere, while "に限り" / "に限る" (only when) are in.

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Japanese,
    English,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Japanese => "ja",
            Language::English => "en",
        }
    }
}

/// What kind of narrowing a term signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExceptionCategory {
    /// An explicit exception or special case.
    Exception,
    /// Something left out of a rule's scope.
    Exclusion,
    /// A rule that holds only under a condition.
    Condition,
    /// A warning or point to keep in mind.
    Caution,
    /// Something not allowed or not possible.
    Prohibition,
    /// A cap or restriction.
    Limitation,
}

impl ExceptionCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            ExceptionCategory::Exception => "exception",
            ExceptionCategory::Exclusion => "exclusion",
            ExceptionCategory::Condition => "condition",
            ExceptionCategory::Caution => "caution",
            ExceptionCategory::Prohibition => "prohibition",
            ExceptionCategory::Limitation => "limitation",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct ExceptionTerm {
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

pub const EXCEPTION_TERMS: &[ExceptionTerm] = &[
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
pub struct ExceptionMatch {
    pub term: &'static ExceptionTerm,
    /// Byte range of the matched text in the original line.
    pub range: Range<usize>,
}

/// The leftmost exception term of `line` (the longest one there, when several start at
/// the same place), or `None`.
pub fn first_exception(line: &str) -> Option<ExceptionMatch> {
    let folded = fold_for_matching(line);
    matcher()
        .find_overlapping_iter(&folded.text)
        .filter(|found| {
            let term = &EXCEPTION_TERMS[found.pattern().as_usize()];
            term.language != Language::English || is_whole_word(&folded.text, found.range())
        })
        .min_by_key(|found| (found.start(), std::cmp::Reverse(found.end())))
        .map(|found| ExceptionMatch {
            term: &EXCEPTION_TERMS[found.pattern().as_usize()],
            range: folded.original_range(found.range()),
        })
}

fn matcher() -> &'static AhoCorasick {
    static MATCHER: OnceLock<AhoCorasick> = OnceLock::new();
    MATCHER.get_or_init(|| {
        let folded_terms = EXCEPTION_TERMS
            .iter()
            .map(|term| fold_for_matching(term.term).text);
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

/// Text folded for matching, with the way back to the original.
#[derive(Debug)]
pub struct Folded {
    pub text: String,
    /// For each byte of `text`, the index in `cluster_starts` of the cluster it came from.
    cluster_of_byte: Vec<u32>,
    /// Byte offset in the original where each cluster starts, then the original's length.
    cluster_starts: Vec<usize>,
}

impl Folded {
    /// The original bytes that folded into the non-empty range `folded`, widened to whole
    /// clusters.
    pub fn original_range(&self, folded: Range<usize>) -> Range<usize> {
        let first = self.cluster_of_byte[folded.start] as usize;
        let last = self.cluster_of_byte[folded.end - 1] as usize;
        self.cluster_starts[first]..self.cluster_starts[last + 1]
    }
}

/// The one normalisation used for exception matching: NFKC, then lowercase. Kept in one
/// place so the crate-wide normaliser (`crate::text`) can replace it.
///
/// NFKC is applied per cluster (a character with the combining marks that follow it, the
/// half-width voiced marks ﾞ/ﾟ included, so ﾃﾞ still folds to デ), which keeps a map from
/// every folded byte back to the original text for snippets.
pub fn fold_for_matching(original: &str) -> Folded {
    let mut folded = Folded {
        text: String::with_capacity(original.len()),
        cluster_of_byte: Vec::with_capacity(original.len()),
        cluster_starts: Vec::new(),
    };
    let mut chars = original.char_indices().peekable();
    while let Some((start, first)) = chars.next() {
        let mut end = start + first.len_utf8();
        while let Some(&(next_start, next)) = chars.peek() {
            if !joins_previous(next) {
                break;
            }
            end = next_start + next.len_utf8();
            chars.next();
        }
        let cluster = folded.cluster_starts.len() as u32;
        folded.cluster_starts.push(start);
        // Most characters are already NFKC; skipping the normaliser for them is what
        // keeps a whole-manual scan fast.
        let single = end == start + first.len_utf8();
        if single && is_nfkc_quick(std::iter::once(first)) == IsNormalized::Yes {
            folded.text.extend(first.to_lowercase());
        } else {
            folded
                .text
                .extend(original[start..end].nfkc().flat_map(char::to_lowercase));
        }
        folded.cluster_of_byte.resize(folded.text.len(), cluster);
    }
    folded.cluster_starts.push(original.len());
    folded
}

fn joins_previous(character: char) -> bool {
    is_combining_mark(character) || matches!(character, '\u{ff9e}' | '\u{ff9f}')
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
            .map(|term| fold_for_matching(term.term).text)
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
        let folded = fold_for_matching("ｶﾞ例外");
        assert_eq!(folded.text, "ガ例外");
        assert_eq!(folded.original_range(3..9), 6..12);
        assert_eq!(folded.original_range(0..3), 0..6, "ｶﾞ is one cluster");
        assert_eq!(fold_for_matching("").text, "");
    }
}
