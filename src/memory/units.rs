//! Text units: what the full-text index stores for a claim and what a query looks for.
//!
//! SQLite's FTS5 `trigram` tokenizer finds nothing for a query term under three characters,
//! and two-character words carry much of Japanese (解約, 規約, 命名). So the index is an ordinary
//! FTS5 table (`unicode61`, no stemming: Porter changed nothing on the recall set and would
//! hide the indexed terms from `fts5vocab`) over units made here, after the shared
//! normalisation (`text::normalize`: NFKC, case, numerals): a run of Han, hiragana and
//! katakana becomes its overlapping character bigrams (a one-character run stays one unit),
//! the CJK bigram scheme of Lucene's CJKBigramFilter; a run of other letters and digits
//! becomes one word. `解約APIの命名規約` gives 解約 api の命 命名 名規 規約, and a claim holding 解約 anywhere
//! shares the unit. `manvault-bench memory` measures this against the trigram tokenizer on
//! the recall set.

use crate::text::normalize::normalize_str;
use crate::text::units::is_cjk;

/// At most this many distinct units of a query are looked up: enough for any question,
/// and a pasted page does not turn into a thousand-term OR.
pub(crate) const MAX_QUERY_UNITS: usize = 64;

/// The units of `text`, in order, repeats kept (term frequency counts for BM25).
pub(crate) fn units(text: &str) -> Vec<String> {
    let normalized = normalize_str(text);
    let mut units = Vec::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let mut word = String::new();
    let flush_cjk = |run: &mut Vec<char>, units: &mut Vec<String>| {
        match run.len() {
            0 => {}
            1 => units.push(run[0].to_string()),
            _ => units.extend(run.windows(2).map(|pair| pair.iter().collect())),
        }
        run.clear();
    };
    for c in normalized.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                units.push(std::mem::take(&mut word));
            }
            cjk_run.push(c);
        } else {
            flush_cjk(&mut cjk_run, &mut units);
            if c.is_alphanumeric() {
                word.push(c);
            } else if !word.is_empty() {
                units.push(std::mem::take(&mut word));
            }
        }
    }
    flush_cjk(&mut cjk_run, &mut units);
    if !word.is_empty() {
        units.push(word);
    }
    units
}

/// The document the index stores for a text: its units separated by spaces.
pub(crate) fn document(text: &str) -> String {
    units(text).join(" ")
}

/// The distinct units of a query, in order, at most [`MAX_QUERY_UNITS`].
pub(crate) fn query_units(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    units(text)
        .into_iter()
        .filter(|unit| seen.insert(unit.clone()))
        .take(MAX_QUERY_UNITS)
        .collect()
}

/// An FTS5 query matching any of `units` (each quoted, so no unit is read as query
/// syntax); `None` when there is none.
pub(crate) fn match_any(units: &[String]) -> Option<String> {
    let quoted: Vec<String> = units.iter().map(|unit| format!("\"{unit}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn japanese_runs_become_bigrams_and_words_stay_whole() {
        assert_eq!(
            units("解約APIの命名規約"),
            ["解約", "api", "の命", "命名", "名規", "規約"]
        );
        assert_eq!(
            units("POST /subscriptions/{id}/cancel"),
            ["post", "subscriptions", "id", "cancel"]
        );
        assert_eq!(units("10分 日"), ["10", "分", "日"]);
        // Full-width letters and half-width katakana meet their usual forms.
        assert_eq!(units("ＡＰＩ ｶｲﾔｸ"), ["api", "カイ", "イヤ", "ヤク"]);
    }

    #[test]
    fn a_two_character_word_is_one_unit_of_a_longer_text() {
        let claim = units("サブスクリプションの解約は非同期で処理される");
        assert!(claim.contains(&"解約".to_string()));
        assert_eq!(
            match_any(&query_units("解約")),
            Some("\"解約\"".to_string())
        );
    }

    #[test]
    fn queries_are_deduplicated_and_bounded() {
        assert_eq!(query_units("cancel cancel"), ["cancel"]);
        assert_eq!(match_any(&query_units("。、!?")), None);
        let long: String = (0..500).map(|n| format!("w{n} ")).collect();
        assert_eq!(query_units(&long).len(), MAX_QUERY_UNITS);
        assert_eq!(
            match_any(&["a".into(), "b".into()]).unwrap(),
            "\"a\" OR \"b\""
        );
    }
}
