//! The search plan of one query: every literal to look for, what each stands for, and the
//! two automata that find them all in one pass over the normalised text and one over the
//! loose text.
//!
//! A literal (pattern) may play several roles: the whole phrase, a strict term, a content
//! term, a piece of a term (script run or bigram), or a synonym variant of a term (the
//! term with one dictionary word replaced by an alternative). Synonyms are expanded here,
//! after normalisation and separately from it (requirements §6.1), so the normaliser
//! never has to know the dictionary.
//!
//! Beside those, the plan holds the query's *units* (`text::units`): the units of the
//! query, of the synonyms of its dictionary words and of the caller's `also` wordings,
//! each with a weight. A unit is its own pattern, in the one form it matches in (a Latin
//! unit in normalised text as a whole word, a kana or kanji unit in loose text), since
//! its semantics differ from a term's substring match of the same letters.
//!
//! The automata run leftmost-first with the longest patterns first (the fast SIMD path of
//! aho-corasick); after a match the search restarts one character later, so every
//! occurrence of every pattern is found except shorter patterns that start where a longer
//! one matched; those are prefixes of it, recorded by `prefixes` and added on each match.

use super::query::Query;
use crate::text::literals::Literals;
use crate::text::loose::loose_normalized;
use crate::text::normalize::normalize_str;
use crate::text::synonyms::Synonyms;
use crate::text::units::{units, word_matches, Form, Unit};

/// Synonym variants of whole terms stop at this many patterns, so a query of many
/// dictionary words stays a few thousand patterns (any query the schema accepts works;
/// its later variants are simply not searched).
pub(crate) const MAX_PATTERNS: usize = 2048;
/// Units taken from synonyms and from `also`, each at most.
const MAX_EXTRA_UNITS: usize = 256;

/// Weight of a unit that comes from the same word written otherwise (a spelling,
/// abbreviation or translation from the synonym dictionary), from a related word of its
/// synonym group, and from the caller's `also` wordings, relative to the query's own.
pub(crate) const SYNONYM_UNIT_WEIGHT: f32 = 0.5;
pub(crate) const RELATED_UNIT_WEIGHT: f32 = 0.25;
pub(crate) const ALSO_UNIT_WEIGHT: f32 = 0.6;

/// A set of pattern indices, as many as the plan has (it grows on insert). The first
/// [`INLINE_WORDS`] words are held in place: a search builds two sets for each of tens of
/// thousands of sections' hits at 200 MB of manuals, and allocating and freeing each one's
/// words was a visible share of a warm search, while most plans have fewer patterns.
#[derive(Clone, Default)]
pub(crate) struct PatternSet(Words);

/// Words of 64 patterns each held in place, up to this many.
const INLINE_WORDS: usize = 2;

/// A set's words: `len` in place (those after `len` are always zero), or on the heap.
#[derive(Clone)]
enum Words {
    Inline { len: u8, words: [u64; INLINE_WORDS] },
    Heap(Vec<u64>),
}

impl Default for Words {
    fn default() -> Self {
        Words::Inline {
            len: 0,
            words: [0; INLINE_WORDS],
        }
    }
}

impl PatternSet {
    pub(crate) const EMPTY: PatternSet = PatternSet(Words::Inline {
        len: 0,
        words: [0; INLINE_WORDS],
    });

    fn words(&self) -> &[u64] {
        match &self.0 {
            Words::Inline { len, words } => &words[..usize::from(*len)],
            Words::Heap(words) => words,
        }
    }

    /// The words, `len` of them at least (the new ones zero).
    fn words_at_least(&mut self, len: usize) -> &mut [u64] {
        if let Words::Inline { len: held, words } = &mut self.0 {
            if len > INLINE_WORDS {
                let mut heap = words[..usize::from(*held)].to_vec();
                heap.resize(len, 0);
                self.0 = Words::Heap(heap);
            } else {
                *held = (*held).max(len as u8);
            }
        }
        match &mut self.0 {
            Words::Inline { len, words } => &mut words[..usize::from(*len)],
            Words::Heap(words) => {
                if words.len() < len {
                    words.resize(len, 0);
                }
                words
            }
        }
    }

    pub(crate) fn insert(&mut self, pattern: usize) {
        let word = pattern / 64;
        self.words_at_least(word + 1)[word] |= 1 << (pattern % 64);
    }

    pub(crate) fn contains(&self, pattern: usize) -> bool {
        self.words()
            .get(pattern / 64)
            .is_some_and(|word| word & (1 << (pattern % 64)) != 0)
    }

    pub(crate) fn union(&mut self, other: &PatternSet) {
        let theirs = other.words();
        let mine = self.words_at_least(theirs.len());
        for (mine, theirs) in mine.iter_mut().zip(theirs) {
            *mine |= theirs;
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words().iter().all(|word| *word == 0)
    }

    /// Empties the set, keeping its memory for the next use.
    pub(crate) fn clear(&mut self) {
        match &mut self.0 {
            Words::Inline { len, words } => {
                *len = 0;
                *words = [0; INLINE_WORDS];
            }
            Words::Heap(words) => words.clear(),
        }
    }

    /// The patterns in the set from `start` on, in order.
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        self.words()
            .iter()
            .enumerate()
            .skip(start / 64)
            .flat_map(|(index, &word)| {
                let mut rest = word;
                std::iter::from_fn(move || {
                    (rest != 0).then(|| {
                        let bit = rest.trailing_zeros() as usize;
                        rest &= rest - 1;
                        index * 64 + bit
                    })
                })
            })
            .filter(move |&pattern| pattern >= start)
    }

    /// Whether any pattern below `end` is in the set.
    pub(crate) fn any_below(&self, end: usize) -> bool {
        self.words().iter().enumerate().any(|(index, &word)| {
            let below = match end.saturating_sub(index * 64) {
                0 => 0,
                bits @ 1..=63 => (1u64 << bits) - 1,
                _ => u64::MAX,
            };
            word & below != 0
        })
    }
}

/// Sets are equal when they hold the same words (as when they were a `Vec` of them).
impl PartialEq for PatternSet {
    fn eq(&self, other: &Self) -> bool {
        self.words() == other.words()
    }
}

impl Eq for PatternSet {}

impl std::fmt::Debug for PatternSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PatternSet").field(&self.words()).finish()
    }
}

/// What a pattern stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Phrase,
    PhraseSynonym,
    Strict(usize),
    Term(usize),
    Piece(usize),
    Synonym(usize),
    /// A unit: index into [`Plan::units`].
    Unit(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub text: String,
    pub loose: String,
    pub roles: Vec<Role>,
}

/// Where a unit of the plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Query,
    /// The same word written otherwise (Sudachi's vocabulary number, a user line).
    Synonym,
    /// Another word of the same synonym group.
    Related,
    Also,
}

/// A unit the search looks for, its weight and its pattern.
#[derive(Debug, Clone)]
pub(crate) struct PlanUnit {
    pub(crate) unit: Unit,
    pub origin: Origin,
    /// The unit kind's weight times the origin's.
    pub weight: f32,
}

/// Pattern indices that stand for each content term.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermPatterns {
    pub exact: usize,
    /// Piece groups (see `query::pieces_of`).
    pub pieces: Vec<Vec<usize>>,
    pub synonyms: Vec<usize>,
}

pub(crate) struct Plan {
    pub query: Query,
    pub patterns: Vec<Pattern>,
    pub terms: Vec<TermPatterns>,
    pub phrase: Option<usize>,
    /// The query's phrase in loose form (whether or not it is a pattern): what a label's
    /// loose text is compared with, once per plan rather than once per section.
    pub phrase_loose: String,
    /// The phrase with one dictionary word replaced (`security レビュー` ->
    /// `セキュリティ レビュー`), so a heading written in the other script still counts as
    /// the whole phrase.
    pub phrase_synonyms: Vec<usize>,
    pub strict: Vec<usize>,
    pub units: Vec<PlanUnit>,
    /// The pattern of unit `i` is `first_unit_pattern + i`; every pattern before it is a
    /// term's (phrase, strict term, term, piece, synonym variant).
    pub first_unit_pattern: usize,
    /// How many `also` wordings the caller gave and were searched.
    pub also: usize,
    normalized: Matcher,
    loose: Matcher,
}

/// The literals of one form (normalised or loose) and the whole-word rule of each.
struct Matcher {
    literals: Literals,
    /// Per plan pattern: the unit whose whole-word rule a match must pass, if any.
    words: Vec<Option<Unit>>,
    /// The non-empty texts: what a label must contain to match (`labels` looks them up).
    needles: Vec<String>,
}

impl Matcher {
    /// `texts[i]` is pattern i's text in this form; empty texts are left out.
    fn new(texts: &[&str], words: Vec<Option<Unit>>) -> Matcher {
        Matcher {
            literals: Literals::new(texts),
            words,
            needles: texts
                .iter()
                .filter(|text| !text.is_empty())
                .map(|&text| text.to_owned())
                .collect(),
        }
    }

    /// Calls `found(pattern, offset)` for every occurrence of every pattern in `text`.
    fn for_each(&self, text: &str, mut found: impl FnMut(usize, usize)) {
        self.literals.for_each(text, |pattern, range| {
            let stands = self.words[pattern].as_ref().is_none_or(|unit| {
                word_matches(text, range.start..range.start + unit.needle().len(), unit)
            });
            if stands {
                found(pattern, range.start);
            }
        });
    }

    fn set_of(&self, text: &str) -> PatternSet {
        let mut set = PatternSet::default();
        self.for_each(text, |pattern, _| set.insert(pattern));
        set
    }
}

impl Plan {
    /// The plan of `query`; `also` are the caller's alternative wordings (searched as
    /// units of lower weight).
    pub(crate) fn new(query: Query, synonyms: &Synonyms, also: &[String]) -> Plan {
        let mut builder = Builder::default();
        let multi_word = query.terms.len() > 1;
        let phrase = (multi_word && !query.phrase.is_empty())
            .then(|| builder.add(&query.phrase, Role::Phrase));
        let strict: Vec<usize> = query
            .strict
            .iter()
            .enumerate()
            .map(|(index, text)| builder.add(text, Role::Strict(index)))
            .collect();
        let mut terms: Vec<TermPatterns> = query
            .terms
            .iter()
            .enumerate()
            .map(|(index, term)| TermPatterns {
                exact: builder.add(&term.text, Role::Term(index)),
                ..TermPatterns::default()
            })
            .collect();
        for (index, term) in query.terms.iter().enumerate() {
            for group in &term.pieces {
                let patterns = group
                    .iter()
                    .map(|piece| builder.add(piece, Role::Piece(index)))
                    .collect();
                terms[index].pieces.push(patterns);
            }
        }
        let mut phrase_synonyms = Vec::new();
        if phrase.is_some() {
            for variant in synonym_variants(&query.phrase, synonyms) {
                if builder.patterns.len() >= MAX_PATTERNS / 2 {
                    break;
                }
                phrase_synonyms.push(builder.add(&variant, Role::PhraseSynonym));
            }
        }
        for (index, term) in query.terms.iter().enumerate() {
            for variant in synonym_variants(&term.text, synonyms) {
                if builder.patterns.len() >= MAX_PATTERNS {
                    break;
                }
                let pattern = builder.add(&variant, Role::Synonym(index));
                terms[index].synonyms.push(pattern);
            }
        }
        let legacy = builder.patterns.len();
        let (units, also_used) = plan_units(&query, synonyms, also, &mut builder);
        let patterns = builder.patterns;
        let unit_of = |index: usize| -> Option<&Unit> {
            patterns[index].roles.iter().find_map(|role| match role {
                Role::Unit(unit) => Some(&units[*unit].unit),
                _ => None,
            })
        };
        // Pieces are too short to gain from loose matching; everything else may be split
        // by a line break or markup in the source. A unit is in the one form it matches in.
        let mut normal_texts: Vec<&str> = Vec::with_capacity(patterns.len());
        let mut loose_texts: Vec<&str> = Vec::with_capacity(patterns.len());
        let mut words: Vec<Option<Unit>> = Vec::with_capacity(patterns.len());
        for (index, pattern) in patterns.iter().enumerate() {
            match unit_of(index) {
                Some(unit) if unit.form() == Form::Word => {
                    normal_texts.push(unit.needle());
                    loose_texts.push("");
                    words.push(Some(unit.clone()));
                }
                Some(_) => {
                    normal_texts.push("");
                    loose_texts.push(&pattern.loose);
                    words.push(None);
                }
                None => {
                    let whole = index < legacy
                        && pattern
                            .roles
                            .iter()
                            .any(|role| !matches!(role, Role::Piece(_)));
                    normal_texts.push(&pattern.text);
                    loose_texts.push(if whole { &pattern.loose } else { "" });
                    words.push(None);
                }
            }
        }
        let no_words = vec![None; patterns.len()];
        let phrase_loose = phrase.map_or_else(
            || crate::text::loose::loose_normalized(&query.phrase),
            |p| patterns[p].loose.clone(),
        );
        Plan {
            normalized: Matcher::new(&normal_texts, words),
            loose: Matcher::new(&loose_texts, no_words),
            query,
            phrase_loose,
            patterns,
            terms,
            phrase,
            phrase_synonyms,
            strict,
            units,
            first_unit_pattern: legacy,
            also: also_used,
        }
    }

    /// Every occurrence in normalised text: `found(pattern, byte offset)`.
    pub(crate) fn scan_normalized(&self, text: &str, found: impl FnMut(usize, usize)) {
        self.normalized.for_each(text, found);
    }

    /// Every occurrence in loose text.
    pub(crate) fn scan_loose(&self, text: &str, found: impl FnMut(usize, usize)) {
        self.loose.for_each(text, found);
    }

    /// Patterns occurring in a short normalised text (a title, a link text).
    pub(crate) fn set_normalized(&self, text: &str) -> PatternSet {
        self.normalized.set_of(text)
    }

    pub(crate) fn set_loose(&self, text: &str) -> PatternSet {
        self.loose.set_of(text)
    }

    /// The literals [`Plan::set_normalized`] looks for: a text holding none of them
    /// matches nothing.
    pub(crate) fn needles_normalized(&self) -> &[String] {
        &self.normalized.needles
    }

    /// The literals [`Plan::set_loose`] looks for.
    pub(crate) fn needles_loose(&self) -> &[String] {
        &self.loose.needles
    }
}

#[derive(Default)]
struct Builder {
    patterns: Vec<Pattern>,
}

impl Builder {
    /// A new pattern for a unit (never shared with a term's pattern of the same letters,
    /// whose match rule differs).
    fn add_unit(&mut self, unit: &Unit, index: usize) -> usize {
        self.patterns.push(Pattern {
            text: unit.text.clone(),
            loose: loose_normalized(&unit.text),
            roles: vec![Role::Unit(index)],
        });
        self.patterns.len() - 1
    }

    /// Index of the pattern with `text`, adding it (or the role to it) as needed.
    fn add(&mut self, text: &str, role: Role) -> usize {
        if let Some(index) = self.patterns.iter().position(|p| p.text == text) {
            if !self.patterns[index].roles.contains(&role) {
                self.patterns[index].roles.push(role);
            }
            return index;
        }
        self.patterns.push(Pattern {
            text: text.to_owned(),
            loose: loose_normalized(text),
            roles: vec![role],
        });
        self.patterns.len() - 1
    }
}

/// The units of the query, then of the alternatives of its dictionary words, then of the
/// `also` wordings; a unit already planned keeps its first (highest) weight. Returns the
/// units and how many `also` wordings gave any.
fn plan_units(
    query: &Query,
    synonyms: &Synonyms,
    also: &[String],
    builder: &mut Builder,
) -> (Vec<PlanUnit>, usize) {
    let mut planned: Vec<PlanUnit> = Vec::new();
    let mut add = |unit: Unit, origin: Origin, builder: &mut Builder| -> bool {
        if planned.iter().any(|known| known.unit == unit) {
            return false;
        }
        let factor = match origin {
            Origin::Query => 1.0,
            Origin::Synonym => SYNONYM_UNIT_WEIGHT,
            Origin::Related => RELATED_UNIT_WEIGHT,
            Origin::Also => ALSO_UNIT_WEIGHT,
        };
        let pattern = builder.add_unit(&unit, planned.len());
        debug_assert_eq!(pattern + 1, builder.patterns.len(), "units come last");
        planned.push(PlanUnit {
            weight: unit.kind.weight() * factor,
            unit,
            origin,
        });
        true
    };
    for unit in units(&query.phrase) {
        add(unit, Origin::Query, builder);
    }
    let mut extra = 0;
    // The found word written otherwise (a spelling, abbreviation or translation) first,
    // then related words of its dictionary groups (ケア for care, but also 世話 and 介護),
    // which match more of a manual and weigh less.
    'synonyms: for expansion in synonyms.expansions(&query.phrase) {
        for (rank, alternative) in expansion.alternatives.iter().enumerate() {
            let origin = if rank < expansion.same_word {
                Origin::Synonym
            } else {
                Origin::Related
            };
            for unit in units(alternative) {
                if extra == MAX_EXTRA_UNITS {
                    break 'synonyms;
                }
                extra += usize::from(add(unit, origin, builder));
            }
        }
    }
    let mut also_used = 0;
    let mut also_units = 0;
    for wording in also {
        let found = units(&normalize_str(wording));
        also_used += usize::from(!found.is_empty());
        for unit in found {
            if also_units == MAX_EXTRA_UNITS {
                break;
            }
            also_units += usize::from(add(unit, Origin::Also, builder));
        }
    }
    (planned, also_used)
}

/// The term with one dictionary word replaced by each of its alternatives, in the
/// dictionary's order of preference.
fn synonym_variants(term: &str, synonyms: &Synonyms) -> Vec<String> {
    let mut variants = Vec::new();
    for expansion in synonyms.expansions(term) {
        for alternative in &expansion.alternatives {
            let variant = format!(
                "{}{alternative}{}",
                &term[..expansion.byte_range.start],
                &term[expansion.byte_range.end..]
            );
            if variant != term && !variants.contains(&variant) {
                variants.push(variant);
            }
        }
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize::normalize_str;

    fn synonyms(user: &str) -> Synonyms {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("synonyms.txt");
        std::fs::write(&path, user).unwrap();
        Synonyms::load(Some(std::fs::read(&path)), &normalize_str).0
    }

    #[test]
    fn a_pattern_set_lists_its_patterns_in_order_and_bounds_them() {
        let patterns = [0, 5, 63, 64, 65, 127, 128, 300];
        let mut set = PatternSet::default();
        for pattern in patterns {
            set.insert(pattern);
        }
        for start in [0, 1, 63, 64, 66, 129, 301] {
            let expected: Vec<usize> = patterns.into_iter().filter(|&p| p >= start).collect();
            assert_eq!(
                set.iter_from(start).collect::<Vec<_>>(),
                expected,
                "from {start}"
            );
        }
        for end in [0, 1, 5, 6, 64, 65, 128, 129, 300, 301, 1000] {
            let expected = patterns.iter().any(|&p| p < end);
            assert_eq!(set.any_below(end), expected, "below {end}");
        }
        assert!(!PatternSet::default().any_below(64));
    }

    fn all_hits(plan: &Plan, text: &str) -> Vec<(String, usize)> {
        let mut hits = Vec::new();
        plan.scan_normalized(text, |pattern, at| {
            hits.push((plan.patterns[pattern].text.clone(), at))
        });
        hits.sort_by_key(|(text, at)| (*at, text.clone()));
        hits
    }

    #[test]
    fn every_occurrence_is_found_including_overlaps_and_prefixes() {
        let plan = Plan::new(Query::parse("有給休暇の繰越し", None), &synonyms(""), &[]);
        let text = "年次有給休暇の繰越しと有給";
        let hits = all_hits(&plan, text);
        let at = |s: &str| text.find(s).unwrap();
        assert!(hits.contains(&("有給休暇の繰越し".into(), at("有給休暇の"))));
        assert!(
            hits.contains(&("有給休暇".into(), at("有給休暇"))),
            "prefix"
        );
        assert!(hits.contains(&("繰越し".into(), at("繰越し"))), "overlap");
    }

    #[test]
    fn roles_are_merged_per_literal() {
        let plan = Plan::new(Query::parse("「休暇」 休暇規程", None), &synonyms(""), &[]);
        let holiday = plan.patterns.iter().find(|p| p.text == "休暇").unwrap();
        assert!(holiday.roles.contains(&Role::Strict(0)));
        assert!(holiday.roles.contains(&Role::Term(0)));
        assert!(holiday.roles.contains(&Role::Piece(1)));
        assert_eq!(plan.strict.len(), 1);
        assert!(plan.phrase.is_some());
    }

    #[test]
    fn synonym_variants_replace_one_dictionary_word() {
        let plan = Plan::new(
            Query::parse("稟議手順", None),
            &synonyms("稟議,決裁\n"),
            &[],
        );
        let variants: Vec<&str> = plan.terms[0]
            .synonyms
            .iter()
            .map(|&p| plan.patterns[p].text.as_str())
            .collect();
        assert!(variants.contains(&"決裁手順"), "{variants:?}");
        let set = plan.set_normalized("部長の決裁手順");
        assert!(set.contains(plan.terms[0].synonyms[0]));
        assert!(!set.contains(plan.terms[0].exact));
    }

    #[test]
    fn the_phrase_gets_synonym_variants_too() {
        let plan = Plan::new(
            Query::parse("稟議 手順", None),
            &synonyms("稟議,決裁\n"),
            &[],
        );
        let variants: Vec<&str> = plan
            .phrase_synonyms
            .iter()
            .map(|&p| plan.patterns[p].text.as_str())
            .collect();
        assert_eq!(variants, ["決裁 手順"]);
        let set = plan.set_loose(&loose_normalized("決裁手順について"));
        assert!(set.contains(plan.phrase_synonyms[0]), "found loosely too");
    }

    #[test]
    fn loose_scan_finds_terms_split_by_separators() {
        let plan = Plan::new(Query::parse("請求書", None), &synonyms(""), &[]);
        let set = plan.set_loose(&loose_normalized("請求 書・は"));
        assert!(set.contains(plan.terms[0].exact));
        assert!(!plan.set_normalized("請求 書").contains(plan.terms[0].exact));
    }

    #[test]
    fn pattern_sets_hold_every_index() {
        let mut set = PatternSet::default();
        for index in [0, 63, 64, 255, 5000] {
            set.insert(index);
        }
        assert!(set.contains(255) && set.contains(64) && set.contains(5000));
        assert!(!set.contains(1) && !set.contains(4999) && !set.contains(9000));
        assert_eq!(set.iter_from(64).collect::<Vec<_>>(), [64, 255, 5000]);
        assert!(set.any_below(1) && !PatternSet::default().any_below(9000));
        let mut other = PatternSet::default();
        other.insert(1);
        set.union(&other);
        assert!(set.contains(1));
    }

    /// A set held in place and one moved to the heap (a pattern past the words held in
    /// place, inserted or brought by a union) answer alike, compare as their words do,
    /// and are empty again once cleared.
    #[test]
    fn sets_in_place_and_on_the_heap_answer_alike() {
        let last_in_place = INLINE_WORDS * 64 - 1;
        let mut small = PatternSet::default();
        small.insert(3);
        small.insert(last_in_place);
        let mut large = small.clone();
        large.insert(last_in_place + 1);
        assert!(large.contains(last_in_place + 1) && !small.contains(last_in_place + 1));
        assert_eq!(
            large.iter_from(0).collect::<Vec<_>>(),
            [3, last_in_place, last_in_place + 1]
        );
        let mut united = PatternSet::default();
        united.insert(7);
        united.union(&large);
        assert_eq!(
            united.iter_from(0).collect::<Vec<_>>(),
            [3, 7, last_in_place, last_in_place + 1]
        );
        assert_ne!(small, large);
        let mut same = PatternSet::default();
        same.insert(last_in_place);
        same.insert(3);
        assert_eq!(same, small);
        assert_eq!(
            format!("{small:?}"),
            format!("PatternSet({:?})", small.words())
        );
        let mut one_word = PatternSet::default();
        one_word.insert(3);
        assert_ne!(
            one_word,
            PatternSet::default(),
            "a set with words is not empty's"
        );
        for set in [&mut small, &mut large, &mut united] {
            set.clear();
            assert!(set.is_empty() && set.iter_from(0).next().is_none());
            assert_eq!(*set, PatternSet::EMPTY);
            set.insert(1);
            assert_eq!(set.iter_from(0).collect::<Vec<_>>(), [1]);
        }
    }
}
