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
type OpenedConstraint<P = SegmentPostings> = (u32, Vec<(P, u32)>, u32);

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

    /// Gives `found` each section holding the pattern that `keep` accepts, with how many
    /// times (the starts all constraints agree on), in no particular order; an
    /// inexpressible pattern gives none.
    pub(crate) fn sections(
        &self,
        searcher: &Searcher,
        keys: &DocKeys,
        keep: &dyn Fn(NodeKey) -> bool,
        found: &mut dyn FnMut(NodeKey, u32),
    ) -> tantivy::Result<()> {
        let IndexPattern::Terms(constraints) = self else {
            return Ok(());
        };
        // One constraint alone is counted by its terms' frequencies: its positions are
        // never read, so they are not decoded (a common unit's postings span tens of
        // thousands of sections at 200 MB of manuals).
        let record = if constraints.len() == 1 {
            IndexRecordOption::WithFreqs
        } else {
            IndexRecordOption::WithFreqsAndPositions
        };
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
                counts(postings, &keep_doc, found);
                continue;
            }
            opened.sort_by_key(|(df, _, _)| *df);
            let (driver, rest) = opened.split_first_mut().expect("two or more");
            agreeing((&mut driver.1, driver.2), rest, &keep_doc, found);
        }
        Ok(())
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

/// Gives `found` the occurrences per kept document of one constraint alone (its terms'
/// frequencies). One term's postings name each document once, in order, so they are
/// given as they are read; only an edge word's several terms need their documents
/// merged (a common unit has tens of thousands of documents at 200 MB of manuals, and
/// hashing each was a visible share of a warm search).
fn counts(
    postings: &mut [(SegmentPostings, u32)],
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
    found: &mut dyn FnMut(NodeKey, u32),
) {
    if let [(list, _)] = postings {
        each_kept(list, keep, |_, key, count| found(key, count));
        return;
    }
    let mut merged: Vec<(DocId, NodeKey, u32)> = Vec::new();
    for (list, _) in postings.iter_mut() {
        merged.reserve(list.doc_freq() as usize);
        each_kept(list, keep, |doc, key, count| merged.push((doc, key, count)));
    }
    // Each term's documents are a sorted run, which the stable sort merges.
    merged.sort_by_key(|(doc, _, _)| *doc);
    merged.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            earlier.2 += later.2;
        }
        same
    });
    for (_, key, count) in merged {
        found(key, count);
    }
}

/// Gives `each` every kept document of one term's postings with its key and the term's
/// frequency there, in document order.
fn each_kept(
    list: &mut SegmentPostings,
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
    mut each: impl FnMut(DocId, NodeKey, u32),
) {
    let mut doc = list.doc();
    while doc != TERMINATED {
        if let Some(key) = keep(doc) {
            each(doc, key, list.term_freq());
        }
        doc = list.advance();
    }
}

/// One start the text may have in a kept document: where an occurrence of the driving
/// constraint puts it.
#[derive(Debug, Clone, Copy)]
struct Start {
    doc: DocId,
    at: u32,
    key: NodeKey,
}

/// Gives `found` the kept documents where every constraint agrees on a start, with how
/// many starts, in document order. Only the documents of `driver` (the rarest constraint
/// and its offset) are visited; the others' postings are sought to them. The starts of all documents
/// share one list, narrowed in place by each constraint, so no document costs an
/// allocation (a common literal's driver spans thousands of sections at 200 MB).
fn agreeing<P: Postings>(
    driver: (&mut [(P, u32)], u32),
    rest: &mut [OpenedConstraint<P>],
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
    found: &mut dyn FnMut(NodeKey, u32),
) {
    let mut starts = driving_starts(driver.0, driver.1, keep);
    let mut positions = Vec::new();
    let mut here = Vec::new();
    for (_, postings, offset) in rest {
        if starts.is_empty() {
            break;
        }
        retain_agreeing(&mut starts, postings, *offset, &mut positions, &mut here);
    }
    for run in starts.chunk_by(|one, next| one.doc == next.doc) {
        found(run[0].key, run.len() as u32);
    }
}

/// The starts the driving constraint's occurrences put the text at in each kept
/// document, by document and start, each once.
fn driving_starts<P: Postings>(
    postings: &mut [(P, u32)],
    offset: u32,
    keep: &dyn Fn(DocId) -> Option<NodeKey>,
) -> Vec<Start> {
    let mut starts = Vec::new();
    let mut positions = Vec::new();
    for (list, shift) in postings.iter_mut() {
        let mut doc = list.doc();
        while doc != TERMINATED {
            if let Some(key) = keep(doc) {
                list.positions(&mut positions);
                starts.extend(
                    positions
                        .iter()
                        .filter_map(|&at| (at + *shift).checked_sub(offset))
                        .map(|at| Start { doc, at, key }),
                );
            }
            doc = list.advance();
        }
    }
    // One term's starts come in this order already, which the sort only checks.
    starts.sort_unstable_by_key(|start| (start.doc, start.at));
    starts.dedup_by_key(|start| (start.doc, start.at));
    starts
}

/// Keeps the `starts` (by document and start) where an occurrence of one of `postings`'
/// terms, at `offset` from the text's start, agrees. `positions` and `here` are buffers
/// reused from document to document.
fn retain_agreeing<P: Postings>(
    starts: &mut Vec<Start>,
    postings: &mut [(P, u32)],
    offset: u32,
    positions: &mut Vec<u32>,
    here: &mut Vec<u32>,
) {
    let mut kept = 0;
    let mut run = 0;
    while run < starts.len() {
        let doc = starts[run].doc;
        let end = run + starts[run..].partition_point(|start| start.doc == doc);
        here.clear();
        for (list, shift) in postings.iter_mut() {
            if list.doc() < doc && list.seek(doc) != doc {
                continue;
            }
            if list.doc() != doc {
                continue;
            }
            list.positions(positions);
            here.extend(
                positions
                    .iter()
                    .filter_map(|&at| (at + *shift).checked_sub(offset)),
            );
        }
        if !here.is_sorted() {
            here.sort_unstable();
        }
        let mut agreeing = here.iter().peekable();
        for index in run..end {
            let start = starts[index];
            while agreeing.next_if(|&&at| at < start.at).is_some() {}
            if agreeing.peek() == Some(&&start.at) {
                starts[kept] = start;
                kept += 1;
            }
        }
        run = end;
    }
    starts.truncate(kept);
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A term's postings as a list of (document, positions).
    #[derive(Debug, Clone)]
    struct Listed {
        docs: Vec<(DocId, Vec<u32>)>,
        at: usize,
    }

    impl Listed {
        fn new(docs: &[(DocId, &[u32])]) -> Listed {
            Listed {
                docs: docs.iter().map(|(doc, at)| (*doc, at.to_vec())).collect(),
                at: 0,
            }
        }
    }

    impl DocSet for Listed {
        fn advance(&mut self) -> DocId {
            self.at += 1;
            self.doc()
        }

        fn doc(&self) -> DocId {
            self.docs.get(self.at).map_or(TERMINATED, |(doc, _)| *doc)
        }

        fn size_hint(&self) -> u32 {
            self.docs.len() as u32
        }
    }

    impl Postings for Listed {
        fn term_freq(&self) -> u32 {
            self.docs[self.at].1.len() as u32
        }

        fn append_positions_with_offset(&mut self, offset: u32, output: &mut Vec<u32>) {
            output.extend(self.docs[self.at].1.iter().map(|at| at + offset));
        }
    }

    /// The intersection as it was written before the starts shared one list (a map entry
    /// and a list per document, `contains` per start): what the new one must answer.
    fn agreeing_per_document(
        driver: (&mut [(Listed, u32)], u32),
        rest: &mut [OpenedConstraint<Listed>],
        keep: &dyn Fn(DocId) -> Option<NodeKey>,
    ) -> Vec<(NodeKey, u32)> {
        let mut by_doc: HashMap<DocId, (NodeKey, Vec<u32>)> = HashMap::new();
        let mut positions = Vec::new();
        for (list, shift) in driver.0.iter_mut() {
            let mut doc = list.doc();
            while doc != TERMINATED {
                if let Some(key) = keep(doc) {
                    list.positions(&mut positions);
                    let anchors = &mut by_doc.entry(doc).or_insert_with(|| (key, Vec::new())).1;
                    anchors.extend(
                        positions
                            .iter()
                            .filter_map(|&at| (at + *shift).checked_sub(driver.1)),
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
        for (_, postings, offset) in rest {
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
        docs.into_iter()
            .map(|(_, key, anchors)| (key, anchors.len() as u32))
            .collect()
    }

    /// A constraint: its terms' postings with their shifts, and its offset.
    type Table = Vec<(Vec<(Listed, u32)>, u32)>;

    fn keep_but_every_seventh(doc: DocId) -> Option<NodeKey> {
        (doc % 7 != 3).then_some(NodeKey {
            file: doc / 4,
            node: doc % 4,
        })
    }

    /// [`agreeing`] and [`agreeing_per_document`] answer the same for `table` (its first
    /// constraint drives); the answer.
    fn both(table: &Table) -> Vec<(NodeKey, u32)> {
        let open = || -> Vec<OpenedConstraint<Listed>> {
            table
                .iter()
                .map(|(postings, offset)| (0, postings.clone(), *offset))
                .collect()
        };
        let mut opened = open();
        let (driver, rest) = opened.split_first_mut().expect("a constraint");
        let mut answer = Vec::new();
        let mut add = |key, count| answer.push((key, count));
        agreeing(
            (&mut driver.1, driver.2),
            rest,
            &keep_but_every_seventh,
            &mut add,
        );
        let mut opened = open();
        let (driver, rest) = opened.split_first_mut().expect("a constraint");
        let oracle =
            agreeing_per_document((&mut driver.1, driver.2), rest, &keep_but_every_seventh);
        assert_eq!(answer, oracle, "{table:?}");
        answer
    }

    fn key(doc: DocId) -> NodeKey {
        keep_but_every_seventh(doc).expect("a kept document")
    }

    #[test]
    fn starts_agree_as_they_did_per_document() {
        let one = |docs: &[(DocId, &[u32])], shift| vec![(Listed::new(docs), shift)];
        // A bigram pair overlapping by a character: starts where the second follows.
        let table = vec![
            (one(&[(1, &[0, 5, 9]), (2, &[4])], 0), 0),
            (one(&[(1, &[1, 6, 20]), (2, &[7])], 0), 1),
        ];
        assert_eq!(both(&table), vec![(key(1), 2)]);
        // The same constraint twice keeps every start, once each.
        let twice = vec![
            (one(&[(0, &[2, 2, 8]), (5, &[1])], 0), 0),
            (one(&[(0, &[2, 2, 8]), (5, &[1])], 0), 0),
        ];
        assert_eq!(both(&twice), vec![(key(0), 2), (key(5), 1)]);
        // A constraint without documents leaves nothing, driving or not.
        let empty = vec![(one(&[], 0), 0), (one(&[(1, &[0])], 0), 0)];
        assert_eq!(both(&empty), vec![]);
        let empty_last = vec![(one(&[(1, &[0])], 0), 0), (one(&[], 0), 0)];
        assert_eq!(both(&empty_last), vec![]);
        // An edge word's terms (shifted) name the same document and the same start.
        let edge = vec![
            (
                vec![
                    (Listed::new(&[(2, &[3, 10]), (9, &[0])]), 2),
                    (Listed::new(&[(2, &[5]), (4, &[1])]), 0),
                ],
                1,
            ),
            (one(&[(2, &[4, 12]), (4, &[0]), (9, &[2])], 0), 0),
        ];
        assert_eq!(both(&edge), vec![(key(2), 1), (key(4), 1)]);
        // Occurrences before the offset put no start; a document `keep` refuses (3, 10)
        // is never named.
        let early = vec![
            (one(&[(3, &[5]), (6, &[0, 4]), (10, &[4])], 0), 3),
            (one(&[(3, &[1]), (6, &[1]), (10, &[1])], 0), 0),
        ];
        assert_eq!(both(&early), vec![(key(6), 1)]);
        // One document, three constraints narrowing its starts one by one.
        let narrowing = vec![
            (one(&[(8, &[0, 3, 6, 9])], 0), 0),
            (one(&[(8, &[2, 5, 11])], 0), 2),
            (one(&[(8, &[7, 12])], 0), 4),
        ];
        assert_eq!(both(&narrowing), vec![(key(8), 1)]);
    }

    #[test]
    fn generated_tables_agree_with_the_intersection_per_document() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |below: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % u64::from(below)) as u32
        };
        let mut found_any = 0;
        for _ in 0..400 {
            let constraints = 2 + next(3);
            let table: Table = (0..constraints)
                .map(|_| {
                    let options = 1 + next(2) * next(3);
                    let postings = (0..options)
                        .map(|_| {
                            let mut docs: Vec<(DocId, Vec<u32>)> = Vec::new();
                            for doc in 0..12 {
                                if next(3) == 0 {
                                    continue;
                                }
                                let mut at: Vec<u32> = (0..1 + next(5)).map(|_| next(12)).collect();
                                at.sort_unstable();
                                docs.push((doc, at));
                            }
                            (Listed { docs, at: 0 }, next(3))
                        })
                        .collect();
                    (postings, next(4))
                })
                .collect();
            found_any += usize::from(!both(&table).is_empty());
        }
        assert!(
            found_any > 40,
            "the tables rarely agree anywhere: {found_any}"
        );
    }
}
