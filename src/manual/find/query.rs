//! Query understanding: what the question is after (intent), which parts must match as
//! written (strict terms), and which words to look for (content terms and their parts).
//!
//! Manual questions are short phrases in Japanese, English or both ("有給休暇の繰越し",
//! "rollback rules", "Zip リクエストの提出方法"). Japanese has no spaces, so terms are cut
//! where the naive baseline cuts them (whitespace, punctuation, particles) and each term
//! is further cut into script runs (`検証パイプライン` -> `検証`, `パイプライン`) and, for
//! kanji runs, character bigrams, so a section that words the idea differently still
//! shares pieces with the query. Everything here works on normalised text, the same text
//! the corpus was indexed as.

use crate::manual::exceptions::{exceptions_in_normalized, ExceptionCategory};
use crate::text::normalize::normalize_str;
use crate::text::terms::split_terms;
use crate::text::units::{script_runs, Script};

/// What the question is after: the schema's `Intent`.
pub(crate) use crate::contract::types::Intent;

/// Cue words per intent, lowercase (matched as written and as normalised, since
/// normalisation turns some kanji into digits). Checked in this order, so a query
/// that asks for the exceptions of a procedure is about exceptions. The exception cues
/// come from the shared exception vocabulary (see [`infer_intent`]).
const INTENT_CUES: &[(Intent, &[&str])] = &[
    (
        Intent::Compare,
        &[
            "違い",
            "比較",
            "相違",
            "差異",
            "どちら",
            " vs",
            "versus",
            "compare",
            "comparison",
            "difference",
        ],
    ),
    (
        Intent::Definition,
        &[
            "とは",
            "意味",
            "定義",
            "what is",
            "what's",
            "definition",
            "meaning of",
            "define",
        ],
    ),
    (
        Intent::Eligibility,
        &[
            "対象者",
            "資格",
            "要件",
            "誰が",
            "対象となる",
            "受けられる",
            "利用できる",
            "eligible",
            "eligibility",
            "who can",
            "qualify",
            "requirement",
        ],
    ),
    (
        Intent::Procedure,
        &[
            "手順",
            "方法",
            "やり方",
            "手続",
            "流れ",
            "how to",
            "how do",
            "steps",
            "procedure",
        ],
    ),
];

/// A query as the search uses it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    /// Normalised whole query, quotes removed; the phrase whose exact occurrence counts most.
    pub phrase: String,
    pub intent: Intent,
    pub intent_inferred: bool,
    /// Quoted parts (「…」, "…"), normalised.
    pub strict: Vec<String>,
    /// Content terms in query order, unique.
    pub terms: Vec<Term>,
}

/// One content term of the query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Term {
    /// Normalised text.
    pub text: String,
    /// Pieces a section may share with the term when it words it differently, grouped by
    /// script run: a short run is one piece, a long run its character n-grams (see
    /// [`pieces_of`]). Empty when the term is a single short run.
    pub pieces: Vec<Vec<String>>,
}

impl Query {
    /// Understands `raw`; `intent` is the caller's, or `None` to infer it.
    pub(crate) fn parse(raw: &str, intent: Option<Intent>) -> Query {
        let normalized = normalize_str(raw);
        let strict = strict_terms(&normalized);
        let phrase = normalized
            .chars()
            .filter(|c| !matches!(c, '「' | '」' | '"'))
            .collect::<String>()
            .trim()
            .to_owned();
        let (intent, intent_inferred) = match intent {
            Some(intent) => (intent, false),
            None => (infer_intent(&phrase), true),
        };
        let mut terms: Vec<Term> = Vec::new();
        for text in strict.iter().cloned().chain(split_terms(&phrase)) {
            if !terms.iter().any(|term| term.text == text) {
                terms.push(Term {
                    pieces: pieces_of(&text),
                    text,
                });
            }
        }
        Query {
            phrase,
            intent,
            intent_inferred,
            strict,
            terms,
        }
    }
}

/// The intent a query's wording signals; `Unknown` when none does. Exceptions are
/// recognised by the shared exception vocabulary (exception and exclusion terms), so a
/// word `manual_excepts` treats as an exception is one here too.
pub(crate) fn infer_intent(phrase: &str) -> Intent {
    let asks_exceptions = exceptions_in_normalized(phrase).any(|found| {
        matches!(
            found.term.category,
            ExceptionCategory::Exception | ExceptionCategory::Exclusion
        )
    });
    if asks_exceptions {
        return Intent::Exceptions;
    }
    let padded = format!(" {phrase} ");
    INTENT_CUES
        .iter()
        .find(|(_, cues)| {
            cues.iter()
                .any(|cue| padded.contains(cue) || padded.contains(&normalize_str(cue)))
        })
        .map_or(Intent::Unknown, |(intent, _)| *intent)
}

/// Text inside 「…」 or "…" (after normalisation, which maps 『』 and curly quotes to these).
fn strict_terms(normalized: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (open, close) in [('「', '」'), ('"', '"')] {
        let mut rest = normalized;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let inner = after[..end].trim();
            if !inner.is_empty() && !found.iter().any(|seen| seen == inner) {
                found.push(inner.to_owned());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    found
}

/// Pieces of a term, one group per script run (hiragana runs are okurigana or particles,
/// not content, and are left out):
///
/// * kanji runs of three or more characters: every bigram (`組織変更` -> `組織`, `織変`,
///   `変更`), since kanji compounds recombine two-character words;
/// * katakana runs of five or more and Latin words of six or more: every trigram, which
///   survives spelling variants and typos (`スクリーン` / `スクリーニング`, `miliary`);
/// * shorter runs: the run itself, when the term has several runs.
///
/// A section's partial match is the mean share of each group it contains, so a long
/// word does not outweigh a short one.
pub(crate) fn pieces_of(term: &str) -> Vec<Vec<String>> {
    let runs = script_runs(term);
    let several_runs = runs.len() > 1;
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (kind, run) in runs {
        let chars: Vec<char> = run.chars().collect();
        let grams = |n: usize| -> Vec<String> {
            let mut grams: Vec<String> = Vec::new();
            for window in chars.windows(n) {
                let gram: String = window.iter().collect();
                if !grams.contains(&gram) {
                    grams.push(gram);
                }
            }
            grams
        };
        let group = match kind {
            Script::Hiragana | Script::Other => continue,
            Script::Kanji if chars.len() >= 3 => grams(2),
            Script::Katakana if chars.len() >= 5 => grams(3),
            Script::Latin if chars.len() >= 6 && !run.contains(' ') => grams(3),
            _ if several_runs && chars.len() >= 2 => vec![run.to_owned()],
            _ => continue,
        };
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(query: &Query) -> Vec<&str> {
        query.terms.iter().map(|term| term.text.as_str()).collect()
    }

    #[test]
    fn japanese_terms_split_on_particles_and_punctuation() {
        let query = Query::parse("有給休暇の繰越し", None);
        assert_eq!(texts(&query), ["有給休暇", "繰越し"]);
        assert_eq!(query.phrase, "有給休暇の繰越し");
        let query = Query::parse("請求書の承認・支払い", None);
        assert_eq!(texts(&query), ["請求書", "承認", "支払い"]);
    }

    #[test]
    fn english_terms_drop_stopwords_and_fold_case() {
        let query = Query::parse("Rollback of the Deploy", None);
        assert_eq!(texts(&query), ["rollback", "deploy"]);
        assert_eq!(query.phrase, "rollback of the deploy");
    }

    #[test]
    fn quoted_parts_are_strict_terms_and_terms_too() {
        let query = Query::parse("「申請手続き」と \"Who decides\"", None);
        assert_eq!(query.strict, ["申請手続き", "who decides"]);
        assert_eq!(texts(&query)[..2], ["申請手続き", "who decides"]);
        assert_eq!(query.phrase, "申請手続きと who decides");
        let query = Query::parse("『経費』", None);
        assert_eq!(query.strict, ["経費"], "『』 is normalised to 「」");
    }

    #[test]
    fn an_unclosed_quote_is_not_strict() {
        assert!(Query::parse("「申請", None).strict.is_empty());
    }

    #[test]
    fn pieces_are_script_runs_and_character_grams() {
        assert_eq!(pieces_of("検証パイプ"), [vec!["検証"], vec!["パイプ"]]);
        assert_eq!(
            pieces_of("検証パイプライン"),
            [vec!["検証"], vec!["パイプ", "イプラ", "プライ", "ライン"]]
        );
        assert_eq!(
            pieces_of("組織変更管理"),
            [vec!["組織", "織変", "変更", "更管", "管理"]]
        );
        assert_eq!(
            pieces_of("miliary"),
            [vec!["mil", "ili", "lia", "iar", "ary"]]
        );
        assert_eq!(
            pieces_of("失敗した"),
            [vec!["失敗"]],
            "the stem without okurigana"
        );
        assert!(pieces_of("休暇").is_empty());
        assert_eq!(Query::parse("スクリーン", None).terms[0].pieces.len(), 1);
    }

    #[test]
    fn intent_is_inferred_from_cue_words() {
        let cases = [
            ("対象外の経費", Intent::Exceptions),
            ("deploy exceptions", Intent::Exceptions),
            ("経費の精算手順", Intent::Procedure),
            ("how to roll back", Intent::Procedure),
            ("有給休暇とは", Intent::Definition),
            ("what is a canary", Intent::Definition),
            ("慶弔休暇の対象者", Intent::Eligibility),
            ("who can approve", Intent::Eligibility),
            ("S1 と S2 の違い", Intent::Compare),
            ("canary vs rollback", Intent::Compare),
            ("有給休暇の繰越し", Intent::Unknown),
        ];
        for (raw, expected) in cases {
            let query = Query::parse(raw, None);
            assert_eq!(query.intent, expected, "{raw}");
            assert!(query.intent_inferred);
        }
    }

    #[test]
    fn a_given_intent_is_kept() {
        let query = Query::parse("対象外の経費", Some(Intent::Definition));
        assert_eq!(query.intent, Intent::Definition);
        assert!(!query.intent_inferred);
    }
}
