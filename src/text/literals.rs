//! Every occurrence of a few literals in a text: the one literal matcher of the manual
//! and vault searches.
//!
//! Aho-Corasick reports overlapping matches only in its `Standard` mode, which runs at
//! about 0.37 GB/s; `LeftmostFirst` takes its SIMD prefilter path at about 2.4 GB/s
//! (STACK.md). So the literals are searched leftmost-first, longest first, one start
//! position at a time: the match found at a position is the longest literal there, and
//! every other literal that occurs at the same position is a prefix of it, known in
//! advance. Together that is every occurrence of every literal, as the overlapping
//! search would report them (in start order).

use std::ops::Range;

use aho_corasick::{AhoCorasick, Input, MatchKind};

/// The automaton of a list of literals and what turns its leftmost matches into all
/// matches.
#[derive(Debug, Clone)]
pub(crate) struct Literals {
    automaton: Option<AhoCorasick>,
    /// Automaton pattern id -> literal index.
    ids: Vec<usize>,
    /// Per literal: the other literals that are prefixes of it (equal texts included, so
    /// a duplicate left out of the automaton is still reported).
    prefixes: Vec<Vec<usize>>,
    /// Per literal: its length in bytes.
    lengths: Vec<usize>,
}

impl Literals {
    /// The matcher of `texts`; literal `i` is `texts[i]`, and empty texts never match.
    pub(crate) fn new<S: AsRef<str>>(texts: &[S]) -> Literals {
        let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let mut ids: Vec<usize> = (0..texts.len()).filter(|&i| !texts[i].is_empty()).collect();
        ids.sort_by_key(|&i| (std::cmp::Reverse(texts[i].len()), texts[i]));
        ids.dedup_by_key(|&mut i| texts[i]);
        let automaton = (!ids.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(ids.iter().map(|&i| texts[i]))
                .expect("query literals are short")
        });
        let prefixes = (0..texts.len())
            .map(|long| {
                (0..texts.len())
                    .filter(|&short| {
                        short != long
                            && !texts[short].is_empty()
                            && texts[short].len() <= texts[long].len()
                            && texts[long].starts_with(texts[short])
                    })
                    .collect()
            })
            .collect();
        Literals {
            automaton,
            ids,
            prefixes,
            lengths: texts.iter().map(|text| text.len()).collect(),
        }
    }

    /// Whether no literal can match (all were empty).
    pub(crate) fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// Calls `found(literal, range)` for every occurrence of every literal in `text`, in
    /// order of start (at one start, the longest literal first).
    pub(crate) fn for_each(&self, text: &str, mut found: impl FnMut(usize, Range<usize>)) {
        let Some(automaton) = &self.automaton else {
            return;
        };
        let mut at = 0;
        while at < text.len() {
            let Some(hit) = automaton.find(Input::new(text).range(at..)) else {
                break;
            };
            let literal = self.ids[hit.pattern().as_usize()];
            let start = hit.start();
            for literal in std::iter::once(literal).chain(self.prefixes[literal].iter().copied()) {
                found(literal, start..start + self.lengths[literal]);
            }
            at = start + text[start..].chars().next().map_or(1, char::len_utf8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(literals: &[&str], text: &str) -> Vec<(usize, Range<usize>)> {
        let mut found = Vec::new();
        Literals::new(literals).for_each(text, |literal, range| found.push((literal, range)));
        found.sort_by_key(|(literal, range)| (range.start, *literal));
        found
    }

    /// What the overlapping search of the slow mode reports.
    fn overlapping(literals: &[&str], text: &str) -> Vec<(usize, Range<usize>)> {
        let automaton = AhoCorasick::new(literals).unwrap();
        let mut found: Vec<(usize, Range<usize>)> = automaton
            .find_overlapping_iter(text)
            .map(|hit| (hit.pattern().as_usize(), hit.range()))
            .collect();
        found.sort_by_key(|(literal, range)| (range.start, *literal));
        found
    }

    #[test]
    fn finds_what_the_overlapping_search_finds() {
        let cases: [(&[&str], &str); 4] = [
            (
                &["有給休暇", "有給", "休暇"],
                "有給休暇の繰越しと有給の申請、休暇",
            ),
            (&["aa", "a", "aaa"], "aaaa"),
            (
                &["rollback rules", "rollback", "rules", "rollback"],
                "rollback rules: rollback",
            ),
            (&["x", "y"], "no match here"),
        ];
        for (literals, text) in cases {
            assert_eq!(
                all(literals, text),
                overlapping(literals, text),
                "{literals:?}"
            );
        }
    }

    #[test]
    fn empty_literals_never_match() {
        assert_eq!(all(&["", "b"], "abc"), [(1, 1..2)]);
        assert!(all(&[""], "abc").is_empty());
    }
}
