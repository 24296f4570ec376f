//! Search units: the pieces of normalised text that a query and a section are compared
//! by, so a question worded the way people ask it ("フォルダごとの容量を調べる", "how do I
//! rotate the logs") still meets sections that say the same thing in other words.
//!
//! Japanese has no spaces, and a whole query phrase almost never occurs in a manual, so
//! the phrase is cut into units by writing system, the way a reader sees words:
//!
//! | text | units | strength |
//! |---|---|---|
//! | Latin and digit words (`apt-get`, `rotating`) | the joined form, and each part stemmed lightly (`apt`, `get`, `rotat`) | strong |
//! | katakana runs (`ファイヤーウォール`) | the run, folded (`フアイヤウオル`: no long vowel or sokuon, small kana as large) | strong |
//! | | its bigrams, for spelling variants (`フア`, `アイ`...) | weak |
//! | kanji runs (`時刻`, `自動起動`) | the run, and its bigrams (`自動`, `起動`; of four kanji not the middle one, `動起`, which spans the join of two words) | strong |
//! | a kanji run of 3+ before okurigana (`毎晩決まった`) | also the run without its last kanji as a word (`毎晩`) and that kanji as a stem (`決`) | strong / weak |
//! | a single kanji (`調べる` -> `調`, `戻す` -> `戻`) | the kanji: an okurigana-insensitive stem | weak |
//! | hiragana (particles, okurigana, function words), punctuation | nothing | |
//!
//! English function words (a closed list) are no units either. A strong unit is
//! *significant*: a section containing one is a candidate in its own right; a weak unit
//! only adds to the rank of a section (a single kanji or a kana bigram occurs almost
//! everywhere).
//!
//! How a unit matches is part of its definition ([`Unit::form`]): Latin units match whole
//! words of the normalised text (a corpus word matches when its own stem is the unit);
//! kana and kanji units match anywhere in the loose text (separators removed, kana folded
//! by the same [`fold_kana`]), so a line break or a middle dot inside a compound does not
//! hide it. Everything here is a pure function of normalised text: the query side and
//! the corpus side go through the same functions.

use super::loose::{fold_kana, loose_char};

/// Writing systems whose boundaries mark word boundaries in Japanese text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Script {
    Kanji,
    Katakana,
    Hiragana,
    Latin,
    Other,
}

pub(crate) fn script(c: char) -> Script {
    match c {
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' => {
            Script::Kanji
        }
        '々' | '〆' | 'ヶ' => Script::Kanji,
        '\u{30A0}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' => Script::Katakana,
        '\u{3040}'..='\u{309F}' => Script::Hiragana,
        c if c.is_alphanumeric() => Script::Latin,
        _ => Script::Other,
    }
}

/// Han (with 々 and 〆), hiragana and katakana (with ー): the scripts without spaces
/// between words (the memory domain's text units and the
/// built-in `hashgram` vectors cut these runs into bigrams).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}' | '\u{3006}' | '\u{3040}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}'
        | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FFFF}')
}

/// Maximal runs of one script; a long-vowel mark belongs to the katakana word it follows.
pub(crate) fn script_runs(text: &str) -> Vec<(Script, &str)> {
    runs(text)
        .map(|run| (run.script, &text[run.bytes]))
        .collect()
}

/// One maximal run of a script in a text ([`runs`]).
#[derive(Debug, Clone)]
struct Run {
    script: Script,
    bytes: std::ops::Range<usize>,
    /// Whether every character of the run joins Latin words ([`is_joiner`]).
    joiners_only: bool,
}

/// The runs of [`script_runs`], as byte ranges, without collecting them.
fn runs(text: &str) -> impl Iterator<Item = Run> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, first) = chars.next()?;
        let script = run_script(first);
        let mut joiners_only = is_joiner(first);
        let mut end = text.len();
        while let Some(&(at, c)) = chars.peek() {
            if run_script(c) != script {
                end = at;
                break;
            }
            joiners_only &= is_joiner(c);
            chars.next();
        }
        Some(Run {
            script,
            bytes: start..end,
            joiners_only,
        })
    })
}

/// The script a character's run is cut by: a long-vowel mark goes with katakana.
fn run_script(c: char) -> Script {
    match script(c) {
        Script::Other if c == 'ー' => Script::Katakana,
        kind => kind,
    }
}

/// What a unit is, which fixes how it matches and how much it weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum UnitKind {
    /// A Latin or digit word, stemmed (`rotating` -> `rotat`).
    Word,
    /// Words joined by `-`, `_`, `.`, `/`, `:`, `@` or `+` as written (`apt-get`,
    /// `nsswitch.conf`), matched as a whole.
    Joined,
    /// A katakana run, folded.
    Kana,
    /// Two folded katakana characters of a longer run.
    KanaBigram,
    /// A run of two or more kanji.
    KanjiRun,
    /// Two kanji of a longer run.
    KanjiBigram,
    /// A lone kanji: a word of one character or the stem of an inflected word.
    KanjiStem,
}

/// Where a unit is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Whole words of the normalised text.
    Word,
    /// Anywhere in the loose text.
    Loose,
}

impl UnitKind {
    pub(crate) fn form(self) -> Form {
        match self {
            UnitKind::Word | UnitKind::Joined => Form::Word,
            _ => Form::Loose,
        }
    }

    /// Strong units make a section a candidate; weak ones only rank it.
    pub(crate) fn is_strong(self) -> bool {
        !matches!(self, UnitKind::KanaBigram | UnitKind::KanjiStem)
    }

    /// Relative weight in ranking: whole words and runs count fully, pieces of longer
    /// runs less (a run's bigrams together already weigh more than the run), single
    /// characters least.
    pub(crate) fn weight(self) -> f32 {
        match self {
            UnitKind::Word | UnitKind::Joined | UnitKind::Kana | UnitKind::KanjiRun => 1.0,
            UnitKind::KanjiBigram => 0.6,
            UnitKind::KanaBigram => 0.25,
            UnitKind::KanjiStem => 0.3,
        }
    }
}

/// One unit of a text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Unit {
    /// The text the unit matches: a stem for `Word`, the folded run for kana.
    pub(crate) text: String,
    pub(crate) kind: UnitKind,
}

impl Unit {
    pub(crate) fn form(&self) -> Form {
        self.kind.form()
    }

    /// The literal to look for: the unit's text, except that a stem ending in `y` is
    /// looked for without it (`policy` is the stem of `policies`, which starts `polic`);
    /// [`word_matches`] then checks the stem of the word found.
    pub(crate) fn needle(&self) -> &str {
        match self.kind {
            UnitKind::Word if self.text.len() > 3 => {
                self.text.strip_suffix('y').unwrap_or(&self.text)
            }
            _ => &self.text,
        }
    }
}

/// English function words: never query terms ([`super::terms::split_terms`]) nor units
/// (they still count inside the whole-query phrase). The one English stopword list of the
/// crate: the closed classes (articles, pronouns, prepositions, conjunctions, auxiliaries
/// and modals, question words, quantifiers such as `all`, `each`, `only`), the common
/// stopword lists' core without their contractions. Such a word occurs in nearly every
/// section of a manual, so as a term it finds everything and ranks nothing, and a question
/// worded as people ask it (`how do I ...`, `what should ...`) would otherwise bring its
/// wording into the search. Content words stay out of it even when frequent in manuals
/// (`file`, `use`, `set`): those are what a query is about.
pub(super) const ENGLISH_FUNCTION_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "either", "even",
    "every", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "may", "me",
    "might", "more", "most", "must", "my", "no", "nor", "not", "of", "off", "on", "once", "one",
    "only", "or", "other", "our", "ours", "out", "over", "own", "same", "shall", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "us", "very", "was", "we",
    "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "why", "will",
    "with", "without", "would", "you", "your", "yours",
];

/// Particles and function words that separate Japanese terms (the baseline's list): query
/// terms are split on them ([`super::terms::split_terms`]), and a kanji run followed by
/// one ends with a noun, not with the stem of an inflected word ([`units`]).
pub(crate) const PARTICLES: &[&str] = &[
    "について",
    "における",
    "によって",
    "による",
    "として",
    "および",
    "または",
    "から",
    "まで",
    "より",
    "など",
    "の",
    "を",
    "に",
    "は",
    "が",
    "と",
    "で",
    "へ",
    "や",
    "も",
];

/// Whether `word` (lowercase) is an English function word.
pub(crate) fn is_function_word(word: &str) -> bool {
    ENGLISH_FUNCTION_WORDS.contains(&word)
}

/// Characters that join Latin words into one written form (`apt-get`, `/etc/skel`).
fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '.' | '/' | ':' | '@' | '+')
}

/// Whether `c` belongs to a Latin word (letters and digits outside the Japanese scripts).
pub(crate) fn is_word_char(c: char) -> bool {
    script(c) == Script::Latin
}

/// Light English stemming: plural, past and progressive endings, `-tion`/`-sion` and a
/// final `e` come off, so `rotate`, `rotating`, `rotated` and `rotation` meet at `rotat`
/// and `install`, `installed` and `installation` at `install`. The stem is always a prefix
/// of the word, except that `-ies` becomes `y` (see [`Unit::needle`]). Words of three
/// letters or fewer, and words with digits, are kept as written.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if let Some(base) = w.strip_suffix("ies") {
        w = format!("{base}y");
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    }
    for suffix in ["ion", "ing", "ed"] {
        let Some(base) = w.strip_suffix(suffix) else {
            continue;
        };
        let nominal = suffix != "ion" || base.ends_with(['t', 's']);
        if nominal && base.len() >= 3 && base.bytes().any(is_vowel) {
            w = base.to_owned();
            let bytes = w.as_bytes();
            let n = bytes.len();
            let doubled = n >= 4
                && bytes[n - 1] == bytes[n - 2]
                && !is_vowel(bytes[n - 1])
                && !matches!(bytes[n - 1], b'l' | b's' | b'z');
            if doubled && suffix != "ion" {
                w.truncate(n - 1);
            }
        }
        break;
    }
    if w.len() > 4 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
    // `-ate` verbs and their `-ation` nouns: `validat(e|ion)` -> `valid`, while short
    // bases keep it (`rotat`, `updat`).
    if w.len() >= 7 && w.ends_with("at") {
        w.truncate(w.len() - 2);
    }
    w
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// The units of a normalised text, unique, in order of first appearance.
pub(crate) fn units(normalized: &str) -> Vec<Unit> {
    let mut found: Vec<Unit> = Vec::new();
    let mut add = |text: String, kind: UnitKind| {
        // A compound's head found as a word is a word, not a piece of the longer run.
        if let Some(piece) = found.iter_mut().find(|known| {
            kind == UnitKind::KanjiRun && known.kind == UnitKind::KanjiBigram && known.text == text
        }) {
            piece.kind = kind;
            return;
        }
        let unit = Unit { text, kind };
        if !unit.text.is_empty() && !found.contains(&unit) {
            found.push(unit);
        }
    };
    let mut forms = latin_forms(normalized).into_iter().peekable();
    let runs = script_runs(normalized);
    for (position, &(kind, run)) in runs.iter().enumerate() {
        let start = run.as_ptr() as usize - normalized.as_ptr() as usize;
        match kind {
            Script::Katakana => kana_units(run, &mut add),
            Script::Kanji => {
                kanji_units(run, &mut add);
                let inflected = runs.get(position + 1).is_some_and(|&(next, text)| {
                    next == Script::Hiragana && !PARTICLES.iter().any(|p| text.starts_with(p))
                });
                if inflected {
                    stem_units(run, &mut add);
                }
            }
            Script::Latin if forms.peek().is_some_and(|form| form[0].start == start) => {
                let form = forms.next().expect("peeked");
                if form.len() > 1 {
                    let joined = &normalized[form[0].start..form[form.len() - 1].end];
                    add(joined.to_owned(), UnitKind::Joined);
                }
                for part in form {
                    let word = &normalized[part];
                    if keeps_word(word) {
                        add(stem(word), UnitKind::Word);
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// The Latin written forms of a normalised text, in order: words joined by `-`, `_`, `.`,
/// `/`, `:`, `@` or `+` (`apt-get`, `/etc/skel`), each as the byte ranges of its words.
/// Query units and index tokens both cut Latin text here ([`LatinForms`]), so they agree
/// on what a joined form is.
fn latin_forms(normalized: &str) -> Vec<Vec<std::ops::Range<usize>>> {
    let mut forms = LatinForms::default();
    for run in runs(normalized) {
        forms.read(&run, 0);
    }
    forms
        .forms()
        .map(|form| form.iter().map(|(word, _)| word.clone()).collect())
        .collect()
}

/// The Latin forms of one text, gathered run by run into buffers kept from text to text:
/// each word's byte range and loose position, and where each form ends.
#[derive(Debug, Default, Clone)]
struct LatinForms {
    words: Vec<(std::ops::Range<usize>, u32)>,
    /// The end of each form in `words`, the last one included once it is closed.
    ends: Vec<usize>,
}

impl LatinForms {
    fn clear(&mut self) {
        self.words.clear();
        self.ends.clear();
    }

    /// Whether the last form takes another word.
    fn open(&self) -> bool {
        self.ends.last().copied().unwrap_or(0) < self.words.len()
    }

    /// Takes the next run of the text, which starts at loose position `position`: a Latin
    /// run is a word of the open form (or starts one), a run of joiners keeps the form
    /// open, anything else closes it.
    fn read(&mut self, run: &Run, position: u32) {
        match run.script {
            Script::Latin => self.words.push((run.bytes.clone(), position)),
            Script::Other if run.joiners_only && self.open() => {}
            _ => self.close(),
        }
    }

    fn close(&mut self) {
        if self.open() {
            self.ends.push(self.words.len());
        }
    }

    /// The forms read, in order (the last one closed first).
    fn forms(&mut self) -> impl Iterator<Item = &[(std::ops::Range<usize>, u32)]> + '_ {
        self.close();
        let words = &self.words;
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let form = &words[start..end];
            start = end;
            form
        })
    }
}

fn kana_units(run: &str, add: &mut impl FnMut(String, UnitKind)) {
    let folded: Vec<char> = run.chars().filter_map(fold_kana).collect();
    if folded.len() < 2 {
        return;
    }
    add(folded.iter().collect(), UnitKind::Kana);
    if folded.len() >= 4 {
        for pair in folded.windows(2) {
            add(pair.iter().collect(), UnitKind::KanaBigram);
        }
    }
}

fn kanji_units(run: &str, add: &mut impl FnMut(String, UnitKind)) {
    let chars: Vec<char> = run.chars().collect();
    match chars.len() {
        0 => {}
        1 => add(run.to_owned(), UnitKind::KanjiStem),
        2 => add(run.to_owned(), UnitKind::KanjiRun),
        _ => {
            add(run.to_owned(), UnitKind::KanjiRun);
            for (at, pair) in chars.windows(2).enumerate() {
                // A four-kanji compound is two two-kanji words (自動 + 起動); the pair
                // across the join (動起) is no word of it.
                if chars.len() == 4 && at == 1 {
                    continue;
                }
                add(pair.iter().collect(), UnitKind::KanjiBigram);
            }
        }
    }
}

/// A kanji run of three or more followed by okurigana (hiragana that is no particle)
/// ends with the stem of an inflected word: 毎晩決まった is 毎晩 + 決まる, 組織向け is
/// 組織 + 向け. The run before the stem is a word (a run unit, not a bigram piece) and
/// the stem a stem unit, as a lone kanji before okurigana is.
fn stem_units(run: &str, add: &mut impl FnMut(String, UnitKind)) {
    let chars: Vec<char> = run.chars().collect();
    if let [head @ .., stem] = chars.as_slice() {
        if head.len() >= 2 {
            add(head.iter().collect(), UnitKind::KanjiRun);
            add(stem.to_string(), UnitKind::KanjiStem);
        }
    }
}

/// A word is a unit unless it is a function word, a single letter or a single digit.
fn keeps_word(word: &str) -> bool {
    word.chars().count() >= 2 && !is_function_word(word)
}

/// Whether the match of a word-form unit at `range` of `text` stands as the unit: for
/// `Joined`, the written form with no letter or digit on either side; for `Word`, a whole
/// word whose stem is the unit.
pub(crate) fn word_matches(text: &str, range: std::ops::Range<usize>, unit: &Unit) -> bool {
    let starts_word = text[..range.start]
        .chars()
        .next_back()
        .is_none_or(|c| !is_word_char(c));
    if !starts_word {
        return false;
    }
    let rest = &text[range.end..];
    let word_end = rest
        .char_indices()
        .find(|&(_, c)| !is_word_char(c))
        .map_or(rest.len(), |(at, _)| at);
    match unit.kind {
        UnitKind::Word => stem(&text[range.start..range.end + word_end]) == unit.text,
        _ => word_end == 0,
    }
}

/// What a section index's tokens are: bump it whenever this module, `loose` or
/// `normalize` changes the tokens of a text, so a stored index is rebuilt instead of
/// being read with other terms than the queries look for.
pub(crate) const INDEX_TOKENS_VERSION: u32 = 1;

/// The longest joined form, in words, indexed as one token (`a/b/c/d`); a query's
/// longer joined form is looked for as its words.
pub(crate) const MAX_JOINED_WORDS: usize = 4;

/// What an index token stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Two consecutive kanji or kana of the loose text (kana folded), or a lone kanji:
    /// kana and kanji units are their grams, and so is any Japanese literal.
    Gram,
    /// The stem of a Latin word that can be a unit ([`UnitKind::Word`]).
    Stem,
    /// Two to [`MAX_JOINED_WORDS`] consecutive words of a joined form, as written
    /// ([`UnitKind::Joined`]).
    Joined,
    /// A Latin word as written, for literals (a stream of its own).
    Word,
}

/// One token of a text for the section index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexToken {
    pub(crate) text: String,
    pub(crate) kind: TokenKind,
    /// Index of the token's first character in the loose text, so grams, words and
    /// their gaps keep the distances a literal has (`請求・書` and `請求書` alike).
    pub(crate) position: u32,
    /// Byte range in the normalised text.
    pub(crate) bytes: std::ops::Range<usize>,
}

/// Whether a loose character takes part in grams.
fn is_gram_char(c: char) -> bool {
    matches!(
        script(c),
        Script::Kanji | Script::Katakana | Script::Hiragana
    )
}

/// The unit tokens of a normalised text, by position: the grams of its loose text, the
/// stems of its Latin words and its joined forms. Every unit of [`units`] is one token
/// or (a kana or kanji run longer than two) consecutive grams, matching exactly where
/// the unit matches (Latin units on whole words, kana and kanji anywhere in the loose
/// text); any Japanese literal is a run of grams too.
pub(crate) fn unit_tokens(normalized: &str) -> Vec<IndexToken> {
    let mut tokens = IndexTokens::default();
    tokens.units(normalized);
    tokens.owned()
}

/// The Latin words of a normalised text as written, at their loose positions: what a
/// literal's Latin part is looked for by (its first and last word may be parts of
/// longer words).
pub(crate) fn word_tokens(normalized: &str) -> Vec<IndexToken> {
    let mut tokens = IndexTokens::default();
    tokens.words(normalized);
    tokens.owned()
}

/// An index token whose text lies in the [`IndexTokens`] that made it.
#[derive(Debug, Clone)]
pub(crate) struct TokenSpan {
    /// Byte range of the token's text in its [`IndexTokens`]' text buffer.
    text: std::ops::Range<usize>,
    pub(crate) kind: TokenKind,
    /// As [`IndexToken::position`].
    pub(crate) position: u32,
    /// Byte range in the normalised text.
    pub(crate) bytes: std::ops::Range<usize>,
}

/// The index tokens of one text at a time ([`IndexTokens::units`] as [`unit_tokens`],
/// [`IndexTokens::words`] as [`word_tokens`]), made in one pass over the text into
/// buffers kept from text to text: the section index tokenizes every section twice,
/// and a string per token, a position table per text and a sort per text were a
/// quarter of a build's CPU (docs/benchmarks.md, "Index build on two cores").
#[derive(Debug, Default, Clone)]
pub(crate) struct IndexTokens {
    /// The tokens' texts, one after another.
    text: String,
    /// The tokens of the last text, by position.
    tokens: Vec<TokenSpan>,
    /// Grams and Latin tokens of the text, each by position, before they are merged.
    grams: Vec<TokenSpan>,
    latin: Vec<TokenSpan>,
    forms: LatinForms,
}

impl IndexTokens {
    /// The tokens of the last text, in order.
    pub(crate) fn tokens(&self) -> &[TokenSpan] {
        &self.tokens
    }

    /// The text of `token`, one of [`IndexTokens::tokens`].
    pub(crate) fn text_of(&self, token: &TokenSpan) -> &str {
        &self.text[token.text.clone()]
    }

    /// Makes the unit tokens of `normalized` (see [`unit_tokens`]); ties of position
    /// keep grams first.
    pub(crate) fn units(&mut self, normalized: &str) {
        self.clear();
        let mut loose_at = 0u32;
        // The last gram character: its loose form, byte offset and loose position.
        let mut previous: Option<(char, usize, u32)> = None;
        for run in runs(normalized) {
            self.forms.read(&run, loose_at);
            for (offset, c) in normalized[run.bytes.clone()].char_indices() {
                let Some(loose) = loose_char(c) else {
                    continue;
                };
                let at = run.bytes.start + offset;
                if is_gram_char(loose) {
                    let end = at + c.len_utf8();
                    if let Some((before, start, position)) = previous {
                        let text = self.push_text(&[before, loose]);
                        self.grams.push(TokenSpan {
                            text,
                            kind: TokenKind::Gram,
                            position,
                            bytes: start..end,
                        });
                    }
                    if script(loose) == Script::Kanji {
                        let text = self.push_text(&[loose]);
                        self.grams.push(TokenSpan {
                            text,
                            kind: TokenKind::Gram,
                            position: loose_at,
                            bytes: at..end,
                        });
                    }
                    previous = Some((loose, at, loose_at));
                } else {
                    previous = None;
                }
                loose_at += 1;
            }
        }
        self.latin_tokens(normalized);
        self.merge();
    }

    /// Makes the word tokens of `normalized` (see [`word_tokens`]).
    pub(crate) fn words(&mut self, normalized: &str) {
        self.clear();
        let mut loose_at = 0u32;
        for run in runs(normalized) {
            let written = &normalized[run.bytes.clone()];
            if run.script == Script::Latin {
                let start = self.text.len();
                self.text.push_str(written);
                self.tokens.push(TokenSpan {
                    text: start..self.text.len(),
                    kind: TokenKind::Word,
                    position: loose_at,
                    bytes: run.bytes.clone(),
                });
            }
            loose_at += written.chars().filter(|&c| loose_char(c).is_some()).count() as u32;
        }
    }

    /// The tokens as owned [`IndexToken`]s.
    fn owned(&self) -> Vec<IndexToken> {
        self.tokens
            .iter()
            .map(|token| IndexToken {
                text: self.text_of(token).to_owned(),
                kind: token.kind,
                position: token.position,
                bytes: token.bytes.clone(),
            })
            .collect()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.tokens.clear();
        self.grams.clear();
        self.latin.clear();
        self.forms.clear();
    }

    fn push_text(&mut self, chars: &[char]) -> std::ops::Range<usize> {
        let start = self.text.len();
        self.text.extend(chars);
        start..self.text.len()
    }

    /// The stems and joined forms of the Latin forms read.
    fn latin_tokens(&mut self, normalized: &str) {
        let IndexTokens {
            text, latin, forms, ..
        } = self;
        let mut push = |written: &str, kind, position, bytes| {
            let start = text.len();
            text.push_str(written);
            latin.push(TokenSpan {
                text: start..text.len(),
                kind,
                position,
                bytes,
            });
        };
        for form in forms.forms() {
            for (index, (part, position)) in form.iter().enumerate() {
                let word = &normalized[part.clone()];
                if keeps_word(word) {
                    push(&stem(word), TokenKind::Stem, *position, part.clone());
                }
                let longest = form.len().min(index + MAX_JOINED_WORDS);
                for (last, _) in form.iter().take(longest).skip(index + 1) {
                    let bytes = part.start..last.end;
                    push(
                        &normalized[bytes.clone()],
                        TokenKind::Joined,
                        *position,
                        bytes,
                    );
                }
            }
        }
    }

    /// `grams` and `latin` into `tokens` by position, grams first on a tie (both are in
    /// position order already).
    fn merge(&mut self) {
        let mut grams = self.grams.drain(..).peekable();
        let mut latin = self.latin.drain(..).peekable();
        loop {
            let next = match (grams.peek(), latin.peek()) {
                (Some(gram), Some(word)) if word.position < gram.position => latin.next(),
                (Some(_), _) => grams.next(),
                (None, _) => latin.next(),
            };
            match next {
                Some(token) => self.tokens.push(token),
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize::normalize_str;
    use proptest::strategy::Strategy;

    fn shown(query: &str) -> Vec<String> {
        units(&normalize_str(query))
            .into_iter()
            .map(|unit| {
                let mark = match unit.kind {
                    UnitKind::Word => "w",
                    UnitKind::Joined => "j",
                    UnitKind::Kana => "k",
                    UnitKind::KanaBigram => "k2",
                    UnitKind::KanjiRun => "K",
                    UnitKind::KanjiBigram => "K2",
                    UnitKind::KanjiStem => "K1",
                };
                format!("{mark}:{}", unit.text)
            })
            .collect()
    }

    /// One row a query: the units it yields (kind:text), in order.
    #[test]
    fn japanese_queries_yield_content_units() {
        let table: &[(&str, &[&str])] = &[
            (
                "フォルダごとの容量を調べる",
                &[
                    "k:フオルダ",
                    "k2:フオ",
                    "k2:オル",
                    "k2:ルダ",
                    "K:容量",
                    "K1:調",
                ],
            ),
            ("古い版に戻す", &["K1:古", "K1:版", "K1:戻"]),
            (
                "毎晩決まった時刻に自作のスクリプトを自動で走らせたい",
                &[
                    "K:毎晩決",
                    "K:毎晩",
                    "K2:晩決",
                    "K1:決",
                    "K:時刻",
                    "K:自作",
                    "k:スクリプト",
                    "k2:スク",
                    "k2:クリ",
                    "k2:リプ",
                    "k2:プト",
                    "K:自動",
                    "K1:走",
                ],
            ),
            (
                "自動起動の設定",
                &["K:自動起動", "K2:自動", "K2:起動", "K:設定"],
            ),
            (
                "設定方法を調べる",
                &["K:設定方法", "K2:設定", "K2:方法", "K1:調"],
            ),
            (
                "組織向けの資料",
                &["K:組織向", "K:組織", "K2:織向", "K1:向", "K:資料"],
            ),
            (
                "暗号化が必要",
                &["K:暗号化", "K2:暗号", "K2:号化", "K:必要"],
            ),
            (
                "ウエッブブラウザーは何を選べばいい",
                &[
                    "k:ウエブブラウザ",
                    "k2:ウエ",
                    "k2:エブ",
                    "k2:ブブ",
                    "k2:ブラ",
                    "k2:ラウ",
                    "k2:ウザ",
                    "K1:何",
                    "K1:選",
                ],
            ),
            ("ﾒｼﾞｬｰ", &["k:メジヤ"]),
        ];
        for (query, expected) in table {
            assert_eq!(shown(query), *expected, "{query}");
        }
    }

    #[test]
    fn latin_words_are_stemmed_and_joined_forms_kept() {
        let table: &[(&str, &[&str])] = &[
            (
                "how do I rotate the log files",
                &["w:rotat", "w:log", "w:file"],
            ),
            (
                "apt-get install",
                &["j:apt-get", "w:apt", "w:get", "w:install"],
            ),
            ("/etc/skel", &["j:etc/skel", "w:etc", "w:skel"]),
            ("ＲＡＩＤ１ ipv6", &["w:raid1", "w:ipv6"]),
            (
                "log-rotation settings",
                &["j:log-rotation", "w:log", "w:rotat", "w:set"],
            ),
            (
                "root のパスワード",
                &["w:root", "k:パスワド", "k2:パス", "k2:スワ", "k2:ワド"],
            ),
        ];
        for (query, expected) in table {
            assert_eq!(shown(query), *expected, "{query}");
        }
    }

    #[test]
    fn stems_meet_across_inflections() {
        for family in [
            &["rotate", "rotating", "rotated", "rotation", "rotations"][..],
            &["install", "installing", "installed", "installation"],
            &["configure", "configured", "configuring", "configuration"],
            &["schedule", "scheduling", "scheduled"],
            &["mirror", "mirrored", "mirroring", "mirrors"],
            &["encrypt", "encrypted", "encryption"],
            &["policy", "policies"],
        ] {
            let stems: Vec<String> = family.iter().map(|word| stem(word)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{family:?}: {stems:?}"
            );
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("logs"), "log");
        assert_eq!(stem("added"), "add");
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("raid1"), "raid1");
    }

    #[test]
    fn particles_punctuation_and_function_words_are_no_units() {
        assert!(units(&normalize_str("のをにはがとでへやも、。")).is_empty());
        assert!(units(&normalize_str("what is the way to a"))
            .iter()
            .all(|u| u.text == "way"));
    }

    #[test]
    fn kana_variants_fold_together() {
        let fold = |s: &str| -> String { s.chars().filter_map(fold_kana).collect() };
        assert_eq!(fold("ウインドウマネージャー"), fold("ウィンドウマネージャ"));
        assert_eq!(fold("ファームウエア"), fold("ファームウェア"));
        assert_eq!(fold("プロキシー"), fold("プロキシ"));
    }

    #[test]
    fn word_units_match_whole_words_by_stem() {
        let unit = |text: &str, kind| Unit {
            text: text.into(),
            kind,
        };
        let rotat = unit("rotat", UnitKind::Word);
        let text = "logrotate rotates; rotation, rotatable";
        let at = |word: &str| {
            let start = text.find(word).unwrap();
            start..start + "rotat".len()
        };
        assert!(!word_matches(text, 3..8, &rotat), "inside logrotate");
        assert!(word_matches(text, at("rotates"), &rotat));
        assert!(word_matches(text, at("rotation"), &rotat));
        assert!(!word_matches(text, at("rotatable"), &rotat));
        let policy = unit("policy", UnitKind::Word);
        assert_eq!(policy.needle(), "polic");
        assert!(word_matches("two policies", 4..9, &policy));
        let joined = unit("apt-get", UnitKind::Joined);
        assert!(word_matches("run apt-get now", 4..11, &joined));
        assert!(!word_matches("apt-getter", 0..7, &joined));
    }

    fn shown_tokens(tokens: &[IndexToken]) -> Vec<String> {
        tokens
            .iter()
            .map(|token| format!("{}@{}", token.text, token.position))
            .collect()
    }

    #[test]
    fn unit_tokens_are_grams_of_the_loose_text_stems_and_joined_forms() {
        let text = normalize_str("請求・書を apt-get で");
        let tokens = unit_tokens(&text);
        assert_eq!(
            shown_tokens(&tokens),
            [
                "請@0",
                "請求@0",
                "求@1",
                "求書@1",
                "書@2",
                "書を@2",
                "apt@4",
                "apt-get@4",
                "get@7"
            ],
            "the middle dot and spaces are gone from the loose text; で stands alone"
        );
        let words = word_tokens(&normalize_str("The apt-get Install"));
        assert_eq!(
            shown_tokens(&words),
            ["the@0", "apt@3", "get@6", "install@9"]
        );
        let joined = unit_tokens("a/b.c-d/e");
        let forms: Vec<&str> = joined
            .iter()
            .filter(|t| t.kind == TokenKind::Joined)
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(
            forms,
            ["a/b", "a/b.c", "a/b.c-d", "b.c", "b.c-d", "b.c-d/e", "c-d", "c-d/e", "d/e"],
            "windows of two to four words"
        );
    }

    /// The tokens as the first version made them (a position table per text, a string
    /// per token, one sort), the oracle the one-pass [`IndexTokens`] must equal: the
    /// section index's terms may not change with how they are computed.
    mod first_version {
        use super::super::*;

        fn loose_positions(normalized: &str) -> Vec<u32> {
            let mut positions = vec![0; normalized.len() + 1];
            let mut next = 0u32;
            for (at, c) in normalized.char_indices() {
                positions[at] = next;
                next += u32::from(loose_char(c).is_some());
            }
            positions[normalized.len()] = next;
            positions
        }

        fn script_runs(text: &str) -> Vec<(Script, &str)> {
            let mut runs = Vec::new();
            let mut start = 0;
            let mut current: Option<Script> = None;
            for (at, c) in text.char_indices() {
                let kind = match script(c) {
                    Script::Other if c == 'ー' => Script::Katakana,
                    kind => kind,
                };
                if current.is_some_and(|run| run != kind) {
                    runs.push((current.expect("checked"), &text[start..at]));
                    start = at;
                }
                current = Some(kind);
            }
            if let Some(kind) = current {
                runs.push((kind, &text[start..]));
            }
            runs
        }

        fn latin_forms(normalized: &str) -> Vec<Vec<std::ops::Range<usize>>> {
            let mut forms: Vec<Vec<std::ops::Range<usize>>> = Vec::new();
            let mut open = false;
            for (kind, run) in script_runs(normalized) {
                let start = run.as_ptr() as usize - normalized.as_ptr() as usize;
                match kind {
                    Script::Latin => {
                        let range = start..start + run.len();
                        match forms.last_mut() {
                            Some(form) if open => form.push(range),
                            _ => forms.push(vec![range]),
                        }
                        open = true;
                    }
                    Script::Other if open && run.chars().all(is_joiner) => {}
                    _ => open = false,
                }
            }
            forms
        }

        pub(super) fn unit_tokens(normalized: &str) -> Vec<IndexToken> {
            let positions = loose_positions(normalized);
            let mut tokens = Vec::new();
            let mut previous: Option<(char, usize)> = None;
            for (at, c) in normalized.char_indices() {
                let Some(loose) = loose_char(c) else {
                    continue;
                };
                if !is_gram_char(loose) {
                    previous = None;
                    continue;
                }
                if let Some((before, start)) = previous {
                    tokens.push(IndexToken {
                        text: [before, loose].iter().collect(),
                        kind: TokenKind::Gram,
                        position: positions[start],
                        bytes: start..at + c.len_utf8(),
                    });
                }
                if script(loose) == Script::Kanji {
                    tokens.push(IndexToken {
                        text: loose.to_string(),
                        kind: TokenKind::Gram,
                        position: positions[at],
                        bytes: at..at + c.len_utf8(),
                    });
                }
                previous = Some((loose, at));
            }
            for form in latin_forms(normalized) {
                for (index, part) in form.iter().enumerate() {
                    let word = &normalized[part.clone()];
                    if keeps_word(word) {
                        tokens.push(IndexToken {
                            text: stem(word),
                            kind: TokenKind::Stem,
                            position: positions[part.start],
                            bytes: part.clone(),
                        });
                    }
                    let longest = form.len().min(index + MAX_JOINED_WORDS);
                    for last in form.iter().take(longest).skip(index + 1) {
                        tokens.push(IndexToken {
                            text: normalized[part.start..last.end].to_owned(),
                            kind: TokenKind::Joined,
                            position: positions[part.start],
                            bytes: part.start..last.end,
                        });
                    }
                }
            }
            tokens.sort_by_key(|token| token.position);
            tokens
        }

        pub(super) fn word_tokens(normalized: &str) -> Vec<IndexToken> {
            let positions = loose_positions(normalized);
            script_runs(normalized)
                .into_iter()
                .filter(|(kind, _)| *kind == Script::Latin)
                .map(|(_, run)| {
                    let start = run.as_ptr() as usize - normalized.as_ptr() as usize;
                    IndexToken {
                        text: run.to_owned(),
                        kind: TokenKind::Word,
                        position: positions[start],
                        bytes: start..start + run.len(),
                    }
                })
                .collect()
        }

        pub(super) fn forms(normalized: &str) -> Vec<Vec<std::ops::Range<usize>>> {
            latin_forms(normalized)
        }

        pub(super) fn runs(text: &str) -> Vec<(Script, &str)> {
            script_runs(text)
        }
    }

    /// Texts mixing every script, separators, joiners, long-vowel marks and folded kana.
    fn mixed_text() -> impl proptest::strategy::Strategy<Value = String> {
        let pieces = proptest::sample::select(vec![
            "請求",
            "書",
            "自動起動",
            "々",
            "ア",
            "ァ",
            "ー",
            "ッ",
            "ヴ",
            "を",
            "の",
            "は",
            "apt",
            "get",
            "Rotating",
            "installed",
            "policies",
            "ipv6",
            "a",
            "I",
            "the",
            "x1",
            "-",
            "/",
            ".",
            ":",
            "@",
            "+",
            "_",
            " ",
            "\n",
            "・",
            "、",
            "**",
            "「",
            "」",
            "#",
            "|",
            "é",
            "Ω",
            "١",
            "😀",
            "\u{3000}",
        ]);
        proptest::collection::vec(pieces, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        #[test]
        fn one_pass_tokens_equal_the_first_version(text in mixed_text()) {
            let normalized = normalize_str(&text);
            for raw in [text.as_str(), normalized.as_str()] {
                proptest::prop_assert_eq!(unit_tokens(raw), first_version::unit_tokens(raw));
                proptest::prop_assert_eq!(word_tokens(raw), first_version::word_tokens(raw));
                proptest::prop_assert_eq!(latin_forms(raw), first_version::forms(raw));
                proptest::prop_assert_eq!(script_runs(raw), first_version::runs(raw));
            }
        }
    }

    /// One [`IndexTokens`] reused for text after text gives each the tokens a fresh one
    /// gives (nothing of the previous text is left in its buffers).
    #[test]
    fn reused_index_tokens_forget_the_previous_text() {
        let texts = ["apt-get の設定", "請求・書", "", "log/rotate ファイル x"];
        let mut reused = IndexTokens::default();
        for text in texts.iter().chain(texts.iter().rev()) {
            reused.units(text);
            assert_eq!(reused.owned(), unit_tokens(text), "{text}");
            reused.words(text);
            assert_eq!(reused.owned(), word_tokens(text), "{text}");
        }
    }

    /// A text's own units are all found among its index tokens, the way the section
    /// index looks for them: a Latin unit as its token, a kana or kanji unit as grams at
    /// consecutive positions.
    #[test]
    fn every_unit_of_a_text_is_among_its_index_tokens() {
        for text in [
            "フォルダごとの容量を調べる",
            "毎晩決まった時刻に自作のスクリプトを自動で走らせたい",
            "ウエッブブラウザーは何を選べばいい",
            "how do I rotate the log-rotation settings of /etc/skel",
            "root のパスワード、ＲＡＩＤ１ と ipv6",
        ] {
            let normalized = normalize_str(text);
            let tokens = unit_tokens(&normalized);
            let has = |text: &str, kind: TokenKind| {
                tokens.iter().any(|t| t.text == text && t.kind == kind)
            };
            for unit in units(&normalized) {
                let found = match unit.kind {
                    UnitKind::Word => has(&unit.text, TokenKind::Stem),
                    UnitKind::Joined => has(&unit.text, TokenKind::Joined),
                    _ => {
                        let own = unit_tokens(&unit.text);
                        let first = own[0].position;
                        tokens.iter().any(|start| {
                            own.iter().all(|gram| {
                                tokens.iter().any(|t| {
                                    t.text == gram.text
                                        && t.position + first == start.position + gram.position
                                })
                            })
                        })
                    }
                };
                assert!(found, "{text}: {unit:?}");
            }
        }
    }
}
