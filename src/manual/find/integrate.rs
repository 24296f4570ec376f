//! Stage 3.5: the verdict on the candidates of Stages 0-4, run on whatever they produced,
//! also when a stage failed or a budget cut the search short.
//!
//! * **Conflict**: two candidates of the integrated top that both state something about
//!   the same query term (a line of their own prose contains the term as written; heading
//!   lines and lines that refer elsewhere, by a link, 参照 or "see", are not statements)
//!   and disagree:
//!   they give different numbers for the same unit (`20日` against `10日`; no value in
//!   common), or one states the term only with an exception or exclusion term on the same
//!   line while the other states it only plainly, and the two lines share a topic word
//!   besides the term (a rule and an exception to it). A question whose intent is
//!   `exceptions` has no exception conflicts: the exceptions are its answer.
//! * **Gap**: a content term (or strict term) of the query that no candidate matches as
//!   written, loosely or through a synonym (pieces alone do not count), or a reference in
//!   one of the integrated top candidates whose target is not in the manuals.
//! * **Sufficiency**: the weighted share of query terms the candidates cover (pieces count
//!   a third, synonyms three quarters), lowered by a cutoff, conflicts and unresolved
//!   references.
//! * **Status**: `blocked` without candidates; `ready` when sufficiency is at least
//!   [`READY_SUFFICIENCY`] with no conflict, no gap and no cutoff; else `needs_followup`.
//! * **Thin evidence**: candidates found only by closeness in meaning (the `semantic`
//!   signal) may be right, but nothing the query wrote confirms them: a set of only those
//!   is never `ready`, and its sufficiency is at most [`THIN_SUFFICIENCY`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use super::corpus::Corpus;
use super::derived::NodeKey;
use super::derived::RawReference;
use super::plan::Plan;
use super::query::Intent;
use super::score::Way;
use super::stages::{prose_lines, Candidate};
use super::trace::CutoffReason;
use crate::manual::exceptions::{exceptions_in_normalized, ExceptionCategory};
use crate::manual::ManualFile;
use crate::text::lines::LineNo;
use crate::text::normalize::normalize_str;
use crate::text::units::{script_runs, Script};
pub(crate) use crate::verdict::IntegrationStatus;

/// Most candidates in the integrated top.
pub(crate) const TOP_MAX: usize = 10;
/// The integrated top holds at least this many candidates (when there are) ...
const TOP_MIN: usize = 3;
/// ... and beyond them every candidate scoring at least this share of the best one.
const TOP_SHARE: f32 = 0.35;
pub(crate) const READY_SUFFICIENCY: f32 = 0.7;
/// The highest sufficiency of a candidate set found by meaning alone.
pub(crate) const THIN_SUFFICIENCY: f32 = 0.3;

/// Two candidates (indices into the ranked list) that disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub first: usize,
    pub second: usize,
    /// `number:<unit>` or `exception`.
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Gap {
    /// Content term (or strict term) index into the query's terms or strict list.
    Term { text: String, strict: bool },
    /// An unresolved reference written in a top candidate.
    Reference {
        from: NodeKey,
        line: LineNo,
        description: String,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub top: usize,
    pub file_bias: f32,
    pub conflicts: Vec<Conflict>,
    pub gaps: Vec<Gap>,
    pub sufficiency: f32,
    pub status: IntegrationStatus,
}

/// Judges the ranked `candidates` (best first).
pub(crate) fn integrate(
    plan: &Plan,
    corpus: &Corpus,
    files: &[&ManualFile],
    candidates: &[Candidate],
    weights: &[f32],
    cutoff: Option<CutoffReason>,
) -> Verdict {
    let top = integrated_top(candidates);
    let conflicts = conflicts(plan, corpus, files, &candidates[..top]);
    let mut gaps = term_gaps(plan, corpus, files, candidates);
    let reference_gaps = reference_gaps(corpus, &candidates[..top]);
    let unresolved = reference_gaps.len();
    gaps.extend(reference_gaps);
    let sufficiency = if candidates.is_empty() {
        0.0
    } else {
        let factor = match cutoff {
            // `hard_limit` is never a search's cutoff; were it one, it left text unread.
            Some(CutoffReason::TimeBudget | CutoffReason::HardLimit) => 0.5,
            Some(CutoffReason::StageCap) => 0.8,
            Some(CutoffReason::CandidateCap) => 0.9,
            None => 1.0,
        } * 0.9f32.powi(conflicts.len().min(3) as i32)
            * 0.95f32.powi(unresolved.min(3) as i32);
        (coverage(candidates, weights) * factor).clamp(0.0, 1.0)
    };
    let thin = candidates.iter().all(Candidate::by_meaning_only);
    let sufficiency = if thin {
        sufficiency.min(THIN_SUFFICIENCY)
    } else {
        sufficiency
    };
    let status = if candidates.is_empty() {
        IntegrationStatus::Blocked
    } else if !thin
        && sufficiency >= READY_SUFFICIENCY
        && conflicts.is_empty()
        && gaps.is_empty()
        && cutoff.is_none()
    {
        IntegrationStatus::Ready
    } else {
        IntegrationStatus::NeedsFollowup
    };
    Verdict {
        top,
        file_bias: super::stages::file_bias(candidates),
        conflicts,
        gaps,
        sufficiency,
        status,
    }
}

/// How many leading candidates form the integrated top.
fn integrated_top(candidates: &[Candidate]) -> usize {
    let Some(best) = candidates.first() else {
        return 0;
    };
    let strong = candidates
        .iter()
        .take(TOP_MAX)
        .take_while(|c| c.score >= best.score * TOP_SHARE)
        .count();
    strong.max(TOP_MIN.min(candidates.len()))
}

/// Weighted share of the terms the best candidate for each term covers.
fn coverage(candidates: &[Candidate], weights: &[f32]) -> f32 {
    let total: f32 = weights.iter().sum();
    if total <= 0.0 {
        return 1.0;
    }
    let covered: f32 = weights
        .iter()
        .enumerate()
        .map(|(term, weight)| {
            let best = candidates
                .iter()
                .filter_map(|c| c.ways.get(term).copied())
                .max()
                .unwrap_or_default();
            weight
                * match best {
                    Way::Exact | Way::Loose => 1.0,
                    Way::Synonym => 0.75,
                    Way::Pieces => 0.33,
                    Way::None => 0.0,
                }
        })
        .sum();
    covered / total
}

/// Terms no candidate matches, and strict terms no candidate holds as written.
fn term_gaps(
    plan: &Plan,
    corpus: &Corpus,
    files: &[&ManualFile],
    candidates: &[Candidate],
) -> Vec<Gap> {
    let mut gaps = Vec::new();
    for (index, term) in plan.query.terms.iter().enumerate() {
        let matched = candidates
            .iter()
            .any(|c| c.ways.get(index).is_some_and(|way| *way >= Way::Synonym));
        if !matched {
            gaps.push(Gap::Term {
                text: term.text.clone(),
                strict: false,
            });
        }
    }
    for (index, strict) in plan.query.strict.iter().enumerate() {
        let pattern = plan.strict[index];
        let held = candidates.iter().any(|c| {
            let label = &corpus.files[c.key.file as usize].outline.labels[c.key.node as usize];
            plan.set_normalized(label.title.text()).contains(pattern) || {
                let source = files[c.key.file as usize];
                let text = corpus.text(c.key.file, source);
                let in_prose = prose_lines(&text, source, c.key.node)
                    .any(|(_, text)| plan.set_normalized(text).contains(pattern));
                in_prose
            }
        });
        let already = gaps
            .iter()
            .any(|gap| matches!(gap, Gap::Term { text, .. } if text == strict));
        if !held && !already {
            gaps.push(Gap::Term {
                text: strict.clone(),
                strict: true,
            });
        }
    }
    gaps
}

/// Unresolved references written in `top` candidates.
fn reference_gaps(corpus: &Corpus, top: &[Candidate]) -> Vec<Gap> {
    let mut gaps = Vec::new();
    for candidate in top {
        for reference in corpus.references.outbound(candidate.key) {
            if reference.to.is_some() {
                continue;
            }
            let raw: &RawReference = &corpus.files[reference.from.file as usize]
                .outline
                .references()[reference.raw as usize];
            gaps.push(Gap::Reference {
                from: reference.from,
                line: reference.line,
                description: raw.describe(),
            });
        }
    }
    gaps
}

/// What one candidate states about each query term (see the module documentation).
#[derive(Debug, Default, Clone, PartialEq)]
struct Statements {
    /// Unit -> values given on lines that contain the term.
    quantities: BTreeMap<String, BTreeSet<String>>,
    /// Topic words of the lines that state the term with an exception or exclusion term.
    exception_words: BTreeSet<String>,
    /// Topic words of the lines that state the term plainly.
    plain_words: BTreeSet<String>,
}

impl Statements {
    fn with_exception(&self) -> bool {
        !self.exception_words.is_empty()
    }

    fn plain(&self) -> bool {
        !self.plain_words.is_empty()
    }
}

/// Whether a normalised line refers elsewhere (a link, 参照, see): it points at a
/// statement rather than making one.
fn is_reference_line(line: &str) -> bool {
    static CUES: OnceLock<Vec<String>> = OnceLock::new();
    let cues = CUES.get_or_init(|| {
        ["参照", "see ", "refer to ", ")("]
            .iter()
            .map(|cue| normalize_str(cue))
            .collect()
    });
    cues.iter().any(|cue| line.contains(cue.as_str()))
}

/// Words that tell what a line is about: kanji bigrams, katakana words of three or more
/// characters, Latin words of four or more letters; without the query's terms and the
/// exception vocabulary, which every compared line shares by construction. An empty set
/// stands for "stated, topic unknown" as one placeholder word, so a line still counts.
fn topic_words(line: &str, plan: &Plan) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (kind, run) in script_runs(line) {
        let chars: Vec<char> = run.chars().collect();
        match kind {
            Script::Kanji => words.extend(chars.windows(2).map(|pair| pair.iter().collect())),
            Script::Katakana if chars.len() >= 3 => {
                words.insert(run.to_owned());
            }
            Script::Latin => words.extend(
                run.split(|c: char| !c.is_alphanumeric())
                    .filter(|word| word.chars().count() >= 4)
                    .map(str::to_owned),
            ),
            _ => {}
        }
    }
    words.retain(|word: &String| {
        let query_word = plan
            .query
            .terms
            .iter()
            .any(|term| word.contains(term.text.as_str()) || term.text.contains(word.as_str()));
        !query_word && exceptions_in_normalized(word).next().is_none()
    });
    if words.is_empty() {
        words.insert(String::new());
    }
    words
}

fn statements(
    plan: &Plan,
    corpus: &Corpus,
    files: &[&ManualFile],
    key: NodeKey,
) -> Vec<Statements> {
    let mut per_term = vec![Statements::default(); plan.terms.len()];
    let heading_line = files[key.file as usize].nodes()[key.node as usize].line_start;
    let source = files[key.file as usize];
    let text = corpus.text(key.file, source);
    let lines = prose_lines(&text, source, key.node)
        .filter(|(line, text)| *line != heading_line && !is_reference_line(text));
    for (_, text) in lines {
        let present = plan.set_normalized(text);
        let terms: Vec<usize> = (0..plan.terms.len())
            .filter(|&t| present.contains(plan.terms[t].exact))
            .collect();
        if terms.is_empty() {
            continue;
        }
        let exception = exceptions_in_normalized(text).any(|hit| {
            matches!(
                hit.term.category,
                ExceptionCategory::Exception | ExceptionCategory::Exclusion
            )
        });
        let quantities = quantities(text);
        let words = topic_words(text, plan);
        for term in terms {
            let statement = &mut per_term[term];
            let side = if exception {
                &mut statement.exception_words
            } else {
                &mut statement.plain_words
            };
            side.extend(words.iter().cloned());
            for (value, unit) in &quantities {
                statement
                    .quantities
                    .entry(unit.clone())
                    .or_default()
                    .insert(value.clone());
            }
        }
    }
    per_term
}

fn conflicts(
    plan: &Plan,
    corpus: &Corpus,
    files: &[&ManualFile],
    candidates: &[Candidate],
) -> Vec<Conflict> {
    let said: Vec<Vec<Statements>> = candidates
        .iter()
        .map(|c| statements(plan, corpus, files, c.key))
        .collect();
    // A question about exceptions asks for them: stating one is the answer, not a conflict.
    let exceptions_count = plan.query.intent != Intent::Exceptions;
    let mut found = Vec::new();
    for first in 0..said.len() {
        for second in first + 1..said.len() {
            let kind = (0..plan.terms.len()).find_map(|term| {
                disagreement(&said[first][term], &said[second][term], exceptions_count)
            });
            if let Some(kind) = kind {
                found.push(Conflict {
                    first,
                    second,
                    kind,
                });
            }
        }
    }
    found
}

/// How two statements about one term disagree, if they do.
fn disagreement(a: &Statements, b: &Statements, exceptions_count: bool) -> Option<String> {
    for (unit, values) in &a.quantities {
        if let Some(others) = b.quantities.get(unit) {
            if values.is_disjoint(others) {
                return Some(format!("number:{unit}"));
            }
        }
    }
    let rule_and_exception = |x: &Statements, y: &Statements| {
        x.with_exception()
            && !x.plain()
            && y.plain()
            && !y.with_exception()
            && !x.exception_words.is_disjoint(&y.plain_words)
    };
    let found = rule_and_exception(a, b) || rule_and_exception(b, a);
    (exceptions_count && found).then(|| "exception".to_owned())
}

/// Units a quantity may carry, longest spelling first so `営業日` wins over `日`.
const UNITS: &[&str] = &[
    "営業日",
    "か月",
    "ヶ月",
    "カ月",
    "ヵ月",
    "週間",
    "時間",
    "minutes",
    "percent",
    "months",
    "hours",
    "weeks",
    "days",
    "日",
    "円",
    "%",
    "分",
    "回",
    "名",
    "人",
    "割",
];

/// `(value, unit)` pairs of a normalised line: a number (digits, `,` and `.` inside)
/// followed by a unit, or `$` / `¥` before it. A day number right after `月` is a date,
/// not a quantity.
pub(crate) fn quantities(line: &str) -> Vec<(String, String)> {
    let bytes = line.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len()
            && (bytes[at].is_ascii_digit()
                || (matches!(bytes[at], b',' | b'.')
                    && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)))
        {
            at += 1;
        }
        let value: String = line[start..at].chars().filter(|c| *c != ',').collect();
        let before = &line[..start];
        let after = line[at..].trim_start();
        let is_date = before.ends_with('月');
        if let Some(currency) = ["$", "¥"].iter().find(|c| before.ends_with(**c)) {
            found.push((value, (*currency).to_owned()));
        } else if let Some(unit) = UNITS.iter().find(|unit| after.starts_with(**unit)) {
            let digit_before = start > 0 && bytes[start - 1].is_ascii_alphabetic();
            if !(digit_before || is_date && *unit == "日") {
                found.push((value, (*unit).to_owned()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(quantities: &[(&str, &str)], exception: &[&str], plain: &[&str]) -> Statements {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (value, unit) in quantities {
            map.entry(unit.to_string())
                .or_default()
                .insert(value.to_string());
        }
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect();
        Statements {
            quantities: map,
            exception_words: words(exception),
            plain_words: words(plain),
        }
    }

    #[test]
    fn quantities_read_numbers_with_units() {
        assert_eq!(
            quantities("繰越しは最大20日まで、35,000円、50%、3営業日前"),
            [
                ("20".into(), "日".into()),
                ("35000".into(), "円".into()),
                ("50".into(), "%".into()),
                ("3".into(), "営業日".into())
            ]
        );
        assert_eq!(
            quantities("within 10 minutes, $25"),
            [
                ("10".to_string(), "minutes".to_string()),
                ("25".to_string(), "$".to_string())
            ]
        );
        assert!(
            quantities("4月1日から").is_empty(),
            "a date is not a quantity"
        );
        assert!(
            quantities("s1 and v2 days").is_empty(),
            "digits inside a word"
        );
    }

    #[test]
    fn different_numbers_for_one_unit_conflict() {
        let a = statement(&[("20", "日")], &[], &["上限"]);
        let b = statement(&[("10", "日")], &[], &["上限"]);
        assert_eq!(disagreement(&a, &b, true).as_deref(), Some("number:日"));
        let shared = statement(&[("10", "日"), ("20", "日")], &[], &["上限"]);
        assert_eq!(
            disagreement(&a, &shared, true),
            None,
            "a shared value agrees"
        );
        let other_unit = statement(&[("10", "円")], &[], &["上限"]);
        assert_eq!(disagreement(&a, &other_unit, true), None);
    }

    #[test]
    fn a_rule_and_its_exception_on_the_same_topic_conflict() {
        let rule = statement(&[], &[], &["ticket"]);
        let exception = statement(&[], &["ticket", "lead"], &[]);
        let elsewhere = statement(&[], &["canary"], &[]);
        let both = statement(&[], &["ticket"], &["ticket"]);
        assert_eq!(
            disagreement(&rule, &exception, true).as_deref(),
            Some("exception")
        );
        assert_eq!(
            disagreement(&exception, &rule, true).as_deref(),
            Some("exception")
        );
        assert_eq!(disagreement(&rule, &elsewhere, true), None, "another topic");
        assert_eq!(
            disagreement(&rule, &both, true),
            None,
            "states both sides itself"
        );
        assert_eq!(
            disagreement(&rule, &exception, false),
            None,
            "asked for exceptions"
        );
        assert_eq!(disagreement(&rule, &Statements::default(), true), None);
    }

    #[test]
    fn reference_lines_are_not_statements() {
        assert!(is_reference_line(&normalize_str(
            "詳細は「申請手続き」参照。"
        )));
        assert!(is_reference_line("see [the guide](a.md) for 5 days"));
        assert!(!is_reference_line("繰越しは最大20日"));
    }
}
