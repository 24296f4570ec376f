//! A literal or a unit as index terms, and the sections holding it.
//!
//! A text is cut with the index's own tokenizer functions ([`unit_tokens`],
//! [`word_tokens`]), so each of its tokens must sit in a section at the same distance
//! from where the text starts there: that is a *constraint*, and a section holds the text
//! where all its constraints agree on a start. Positions count loose characters, so a
//! literal found loosely (`請求・書` for `請求書`) is found too. Where the index and the
//! scan's substring semantics differ, the index errs on the side of more sections:
//!
//! * a literal's first or last Latin word may be part of a longer word (`log` in
//!   `syslog`): the constraint accepts every word of the [`Vocabulary`] that ends,
//!   starts or holds it, with the shift that aligns it;
//! * characters the index has no token for (a lone kana, symbols) constrain nothing;
//! * separators between Latin words are not looked at (`apt get` holds `apt-get`).
//!
//! The sections found are then checked by the scan on their own text (`candidates`), so
//! the extra ones cost time, never a wrong answer. What the index cannot express at all
//! (a literal of symbols only) is reported as such.

use rustc_hash::FxHashMap;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Searcher, Term, TERMINATED};

use super::keys::DocKeys;
use super::vocabulary::{Edge, Vocabulary};
use super::Fields;
use crate::manual::find::derived::NodeKey;
use crate::text::units::{unit_tokens, word_tokens, IndexToken, TokenKind, Unit, UnitKind};

/// Longer words an edge word may stand for before it stops constraining (a one-letter
/// word inside thousands of words says nothing).
const MAX_EDGE_WORDS: usize = 400;

/// One token of the text: any of `options` (a term and the characters from its position
/// to the constrained point) at `offset` characters from the text's start.
#[derive(Debug, Clone)]
pub(crate) struct Constraint {
    field: Field,
    offset: u32,
    options: Vec<(Term, u32)>,
}

/// A text as constraints on index terms.
#[derive(Debug, Clone)]
pub(crate) enum IndexPattern {
    /// Sections where every constraint agrees on a start.
    Terms(Vec<Constraint>),
    /// No section can hold it (an edge word no indexed word holds).
    Nowhere,
    /// The index has no token for any part of it.
    Inexpressible,
}

/// A constraint's postings in one segment: its document frequency (the rarest drives
/// the intersection), each option's postings with its position shift, and its offset.
type OpenedConstraint = (u32, Vec<(SegmentPostings, u32)>, u32);

impl IndexPattern {
    /// A normalised literal, found as a substring of the normalised or loose text.
    pub(crate) fn literal(normalized: &str, fields: &Fields, vocabulary: &Vocabulary) -> Self {
        let mut constraints = grams(&unit_tokens(normalized), fields.body);
        let words = word_tokens(normalized);
        for word in &words {
            let first = word.bytes.start == 0;
            let last = word.bytes.end == normalized.len();
            let edge = match (first, last) {
                (true, true) => Some(Edge::Inside),
                (true, false) => Some(Edge::Ending),
                (false, true) => Some(Edge::Starting),
                (false, false) => None,
            };
            let options = match edge {
                None => vec![(Term::from_field_text(fields.words, &word.text), 0)],
                Some(edge) => match vocabulary.holding(&word.text, edge, MAX_EDGE_WORDS) {
                    None => continue,
                    Some(held) if held.is_empty() => return IndexPattern::Nowhere,
                    Some(held) => held
                        .into_iter()
                        .map(|(longer, before)| {
                            (Term::from_field_text(fields.words, longer), before)
                        })
                        .collect(),
                },
            };
            constraints.push(Constraint {
                field: fields.words,
                offset: word.position,
                options,
            });
        }
        Self::of(constraints)
    }

    /// A unit, found exactly where the scan finds it: a Latin unit as its token, a kana
    /// or kanji unit as its grams.
    pub(crate) fn unit(unit: &Unit, fields: &Fields) -> Self {
        let token = |text: &str| Constraint {
            field: fields.body,
            offset: 0,
            options: vec![(Term::from_field_text(fields.body, text), 0)],
        };
        match unit.kind {
            UnitKind::Word => Self::of(vec![token(&unit.text)]),
            UnitKind::Joined => {
                let words = word_tokens(&unit.text);
                if words.len() <= crate::text::units::MAX_JOINED_WORDS {
                    return Self::of(vec![token(&unit.text)]);
                }
                Self::of(
                    words
                        .iter()
                        .map(|word| Constraint {
                            field: fields.words,
                            offset: word.position,
                            options: vec![(Term::from_field_text(fields.words, &word.text), 0)],
                        })
                        .collect(),
                )
            }
            _ => Self::of(grams(&unit_tokens(&unit.text), fields.body)),
        }
    }

    fn of(constraints: Vec<Constraint>) -> Self {
        if constraints.is_empty() {
            IndexPattern::Inexpressible
        } else {
            IndexPattern::Terms(constraints)
        }
    }

    /// The sections holding the pattern that `keep` accepts, with how many times (the
    /// starts all constraints agree on), in no particular order. `None` when the
    /// pattern is inexpressible.
    pub(crate) fn sections(
        &self,
        searcher: &Searcher,
        keys: &DocKeys,
        keep: &dyn Fn(NodeKey) -> bool,
    ) -> tantivy::Result<Option<Vec<(NodeKey, u32)>>> {
        let constraints = match self {
            IndexPattern::Terms(constraints) => constraints,
            IndexPattern::Nowhere => return Ok(Some(Vec::new())),
            IndexPattern::Inexpressible => return Ok(None),
        };
        // One constraint alone is counted by its terms' frequencies: its positions are
        // never read, so they are not decoded (a common unit's postings span tens of
        // thousands of sections at 200 MB of manuals).
        let record = if constraints.len() == 1 {
            IndexRecordOption::WithFreqs
        } else {
            IndexRecordOption::WithFreqsAndPositions
        };
        let mut found = Vec::new();
        for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
            let keep_doc = |doc: DocId| keys.key(segment_ord, doc).filter(|key| keep(*key));
            let mut opened: Vec<OpenedConstraint> = Vec::new();
            for constraint in constraints {
                let inverted = segment.inverted_index(constraint.field)?;
                let mut postings = Vec::new();
                let mut df = 0;
                for (term, shift) in &constraint.options {
                    if let Some(list) = inverted.read_postings(term, record)? {
                        df += list.doc_freq();
                        postings.push((list, *shift));
                    }
                }
                if postings.is_empty() {
                    opened.clear();
                    break;
                }
                opened.push((df, postings, constraint.offset));
            }
            if opened.len() < constraints.len() {
                continue;
            }
            if let [(_, postings, _)] = opened.as_mut_slice() {
                found.extend(counts(postings, &keep_doc));
                continue;
            }
            opened.sort_by_key(|(df, _, _)| *df);
            let (driver, rest) = opened.split_first_mut().expect("two or more");
            let mut docs = anchored(&mut driver.1, driver.2, &keep_doc);
            let mut positions = Vec::new();
            for (_, postings, offset) in rest {
                if docs.is_empty() {
                    break;
                }
                for (doc, _, anchors) in docs.iter_mut() {
                    let mut here = Vec::new();
                    for (list, shift) in postings.iter_mut() {
                        if list.doc() < *doc && list.seek(*doc) != *doc {
                            continue;
                        }
                        if list.doc() != *doc {
                            continue;
                        }
                        list.positions(&mut positions);
                        here.extend(
                            positions
                                .iter()
                                .filter_map(|&at| (at + *shift).checked_sub(*offset)),
                        );
                    }
                    anchors.retain(|anchor| here.contains(anchor));
                }
                docs.retain(|(_, _, anchors)| !anchors.is_empty());
            }
            found.extend(
                docs.into_iter()
                    .map(|(_, key, anchors)| (key, anchors.len() as u32)),
            );
        }
        Ok(Some(found))
    }
}

/// The gram constraints of a text's unit tokens: its bigrams, and a lone kanji where no
/// bigram covers it (a bigram already says which kanji stand there).
fn grams(tokens: &[IndexToken], field: Field) -> Vec<Constraint> {
    let grams: Vec<&IndexToken> = tokens
        .iter()
        .filter(|token| token.kind == TokenKind::Gram)
        .collect();
    let is_bigram = |token: &IndexToken| token.text.chars().count() == 2;
    let covered = |position: u32| {
        grams.iter().any(|other| {
            is_bigram(other) && (other.position == position || other.position + 1 == position)
        })
    };
    grams
        .iter()
        .filter(|token| is_bigram(token) || !covered(token.position))
        .map(|token| Constraint {
            field,
            offset: token.position,
            options: vec![(Term::from_field_text(field, &token.text), 0)],
        })
        .collect()
}

/// Occurrences per kept document of one constraint alone (its terms' frequencies). One
/// term's postings name each document once, in order, so they are read straight into
/// the list; only an edge word's several terms need their documents merged (a common
/// unit has tens of thousands of documents at 200 MB of manuals, and hashing each was a
/// visible share of a warm search).
fn counts(
    postings: &mut [(SegmentPostings, u32)],
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
) -> Vec<(NodeKey, u32)> {
    let mut found: Vec<(DocId, NodeKey, u32)> = Vec::new();
    for (list, _) in postings.iter_mut() {
        found.reserve(list.doc_freq() as usize);
        let mut doc = list.doc();
        while doc != TERMINATED {
            if let Some(key) = keep(doc) {
                found.push((doc, key, list.term_freq()));
            }
            doc = list.advance();
        }
    }
    if postings.len() > 1 {
        found.sort_unstable_by_key(|(doc, _, _)| *doc);
        found.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.2 += later.2;
            }
            same
        });
    }
    found
        .into_iter()
        .map(|(_, key, count)| (key, count))
        .collect()
}

/// The kept documents of the driving constraint, by document id, each with the starts
/// its occurrences put the text at.
fn anchored(
    postings: &mut [(SegmentPostings, u32)],
    offset: u32,
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
) -> Vec<(DocId, NodeKey, Vec<u32>)> {
    let mut by_doc: FxHashMap<DocId, (NodeKey, Vec<u32>)> = FxHashMap::default();
    let mut positions = Vec::new();
    for (list, shift) in postings.iter_mut() {
        let mut doc = list.doc();
        while doc != TERMINATED {
            if let Some(key) = keep(doc) {
                list.positions(&mut positions);
                let anchors = &mut by_doc.entry(doc).or_insert_with(|| (key, Vec::new())).1;
                anchors.extend(
                    positions
                        .iter()
                        .filter_map(|&at| (at + *shift).checked_sub(offset)),
                );
            }
            doc = list.advance();
        }
    }
    let mut docs: Vec<(DocId, NodeKey, Vec<u32>)> = by_doc
        .into_iter()
        .map(|(doc, (key, mut anchors))| {
            anchors.sort_unstable();
            anchors.dedup();
            (doc, key, anchors)
        })
        .collect();
    docs.sort_unstable_by_key(|(doc, _, _)| *doc);
    docs
}
