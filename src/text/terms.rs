//! The words of a query: what both searches (manuals and vault) treat as one term.
//! Pure functions of the text, like the rest of `text/`.

use super::units::{is_function_word, script, Script, PARTICLES};

/// Splits on whitespace, punctuation and particles; drops single kana or ASCII
/// characters and English function words ([`is_function_word`], the list the units use
/// too; a single kanji is a word and stays).
pub(crate) fn split_terms(phrase: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut rest = phrase;
    let flush = |current: &mut String, terms: &mut Vec<String>| {
        let term = std::mem::take(current);
        if keeps_term(&term) && !terms.contains(&term) {
            terms.push(term);
        }
    };
    while let Some(c) = rest.chars().next() {
        if let Some(particle) = PARTICLES.iter().find(|p| rest.starts_with(**p)) {
            flush(&mut current, &mut terms);
            rest = &rest[particle.len()..];
            continue;
        }
        if is_term_separator(c) {
            flush(&mut current, &mut terms);
        } else {
            current.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    flush(&mut current, &mut terms);
    terms
}

fn keeps_term(term: &str) -> bool {
    let mut chars = term.chars();
    match (chars.next(), chars.next()) {
        (None, _) => false,
        (Some(c), None) => script(c) == Script::Kanji,
        _ => !is_function_word(term),
    }
}

fn is_term_separator(c: char) -> bool {
    c.is_whitespace()
        || (c.is_ascii_punctuation() && !matches!(c, '&' | '+' | '#' | '@'))
        || matches!(
            c,
            '、' | '。' | '・' | '「' | '」' | '…' | '※' | '→' | '⇒' | '?' | '!' | '~'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_kana_and_letters_are_dropped_single_kanji_kept() {
        assert_eq!(split_terms("a 株 の x"), ["株"]);
    }

    #[test]
    fn terms_and_units_drop_the_same_english_words() {
        assert_eq!(
            split_terms("which files should be rotated"),
            ["files", "rotated"]
        );
        for word in super::super::units::ENGLISH_FUNCTION_WORDS {
            assert!(split_terms(word).is_empty(), "{word} is a term");
        }
    }

    #[test]
    fn particles_and_punctuation_split_terms() {
        assert_eq!(
            split_terms("有給休暇の繰越し、申請"),
            ["有給休暇", "繰越し", "申請"]
        );
    }
}
