//! Where in a raw text a normalised needle can occur, found without normalising the text.
//!
//! Normalising is most of the cost of a scan that has no index (`vault_search`), yet a
//! needle occurs in a small part of most texts. A [`Prefilter`] names raw places
//! (*candidates*) such that every occurrence of the needle in `normalize(text)` comes
//! from text next to one of them; [`super::near`] then normalises only around those.
//! Missing a candidate would hide a hit, so the rule is built to be sound, not clever:
//!
//! - The *anchor* is the longest run of the needle's characters that normalisation
//!   keeps one for one: no whitespace (runs collapse), no digits, `,` or `.` (kanji
//!   numerals turn into those), no numeral kanji and no combining characters. A needle
//!   with no such character but a digit (`4711`) is anchored by that digit, with every
//!   kanji numeral as a candidate too (see [`digit_anchor`]).
//! - Away from combining characters every raw character is normalised on its own (a
//!   segment of one, see `fold`), so each anchor character in the output comes from one
//!   raw character whose normalisation alone contains it. Either all of them are the
//!   anchor's own characters in either ASCII case — the anchor as written, found
//!   case-insensitively — or one is another character that folds to an anchor character
//!   (`Ｉ`, `ⅰ`, `ﬁ` for `i`; `【` for `(`): each of those is a candidate on its own.
//!   Which raw characters fold to which is read off every character of Unicode once.
//! - Combining characters (`か` + U+3099 -> `が`) can make an anchor character that no
//!   single raw character folds to. Where the anchor has such a character, every
//!   character that starts no segment of its own is a candidate too.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, Input, MatchKind, Span};
use unicode_normalization::char::decompose_canonical;
use unicode_normalization::{is_nfkc_quick, IsNormalized};

use super::clean::stands_alone;
use super::fold::{is_stable, starts_segment, Folder};
use super::loose::loose_char;
use super::normalize::normalize_str;
use super::numerals::{can_make_digit, is_numeral};
use super::variants::representative;

/// A needle's anchor and what finds its raw spellings.
#[derive(Debug)]
pub(crate) struct Prefilter {
    anchor: String,
    /// Every character other than the anchor's own that folds to one of them, sorted
    /// (looked up at every place a fingerprint starts: a binary search is quicker than
    /// hashing).
    others: Vec<char>,
    /// Those of `others` whose normalisation alone holds no character of the anchor
    /// (`十` for the digit anchor `7`: alone it is `10`), sorted: no candidate where
    /// they stand alone ([`stands_alone`]), only inside a longer numeral run.
    without_anchor_alone: Vec<char>,
    /// Where the anchor or one of `others` may start (see [`Fingerprints`]).
    fingerprints: BTreeSet<Vec<u8>>,
    /// The search for `fingerprints` when this prefilter is used alone.
    search: Starts,
    /// Whether combining characters are candidates too.
    combining_characters: bool,
    needle_len: usize,
    /// See [`Prefilter::followed_by`].
    followers: Option<Vec<char>>,
}

impl Prefilter {
    /// The prefilter of `needle` (normalised); `None` when no character of it can
    /// anchor one (a needle of digits and spaces, say), and every text must be
    /// normalised whole.
    pub(crate) fn new(needle: &str) -> Option<Prefilter> {
        let table = table();
        let mut others = BTreeSet::new();
        let anchor = match longest_anchor(needle) {
            Some(anchor) => anchor,
            None => {
                let digit = digit_anchor(needle)?;
                let value = digit.as_bytes()[0] - b'0';
                let sources = table.numeral_sources.iter();
                others.extend(sources.filter_map(|(source, numerals)| {
                    let makes = numerals.chars().any(|n| can_make_digit(n, value));
                    makes.then_some(*source)
                }));
                digit
            }
        };
        for c in anchor.chars() {
            let preimages = table.preimages.get(&c).into_iter().flatten();
            others.extend(preimages.filter(|&&x| x != c.to_ascii_uppercase()));
        }
        let mut fingerprints = ascii_case_variants(&anchor.as_bytes()[..anchor.len().min(3)]);
        for &c in &others {
            if is_common_in_japanese(c) {
                fingerprints.insert(c.to_string().into_bytes());
            } else {
                fingerprints.insert(fingerprint(c));
            }
        }
        let without_anchor_alone = others
            .iter()
            .copied()
            .filter(|&c| {
                let alone = normalize_str(c.encode_utf8(&mut [0; 4]));
                !alone.chars().any(|made| anchor.contains(made))
            })
            .collect();
        Some(Prefilter {
            anchor: anchor.to_string(),
            others: others.into_iter().collect(),
            without_anchor_alone,
            search: Starts::new(&fingerprints),
            fingerprints,
            combining_characters: anchor.chars().any(|c| table.composed.contains(&c)),
            needle_len: needle.len(),
            followers: None,
        })
    }

    /// Narrows the candidates of a one-letter ASCII anchor to the letter as written
    /// where what follows it can be one of `followers` in loose text: the anchor is a
    /// character of a loose needle that is followed there only by `followers` (the
    /// characters after each of its places in the needle). The letter as written, then
    /// ASCII characters that loose text drops (spaces, `-`, `.`, `(`: see
    /// [`vanishes_from_loose_text`]), then another ASCII letter that no combining mark
    /// follows, normalise to those two letters with separators between them, and loose
    /// text keeps the two side by side: such a place cannot be the needle's, unless the
    /// second letter is a follower. In English text this leaves few of a common
    /// letter's places (`c` of `incident` only before `i`, or before something other
    /// than a letter, as the end of a line), where every place would make the windows
    /// cover the whole text. Look-alikes of the letter stay candidates whatever follows
    /// them.
    pub(crate) fn followed_by(mut self, followers: &[char]) -> Prefilter {
        if self.anchor.len() == 1 && self.anchor.as_bytes()[0].is_ascii_alphabetic() {
            self.followers = Some(followers.to_vec());
        }
        self
    }

    /// Whether the anchor as written at `at` of `bytes` (one ASCII letter) is followed,
    /// past ASCII characters that loose text drops, by an ASCII letter that is no
    /// follower and not composed with what comes after it.
    fn followed_by_other_letter(&self, bytes: &[u8], at: usize) -> bool {
        let Some(followers) = &self.followers else {
            return false;
        };
        let mut next = at + self.anchor.len();
        while bytes
            .get(next)
            .is_some_and(|&b| vanishes_from_loose_text(b))
        {
            next += 1;
        }
        let Some(&letter) = bytes.get(next).filter(|b| b.is_ascii_alphabetic()) else {
            return false;
        };
        let alone = bytes.get(next + 1).is_none_or(u8::is_ascii);
        alone && !followers.contains(&char::from(letter.to_ascii_lowercase()))
    }

    /// The needle's length in bytes: how much normalised text an occurrence spans.
    pub(crate) fn needle_len(&self) -> usize {
        self.needle_len
    }

    /// The candidates in `text`, in order, each the byte range of a raw spelling or one
    /// character: every occurrence of the needle in `normalize(text)` overlaps the
    /// normalisation of one of them.
    pub(crate) fn candidates(&self, text: &str) -> Vec<Range<usize>> {
        self.candidates_among(text, &self.search.find(text.as_bytes()))
    }

    /// [`Prefilter::candidates`] given `starts`, every place (in order) where one of
    /// this prefilter's fingerprints starts, and maybe other places.
    fn candidates_among(&self, text: &str, starts: &[usize]) -> Vec<Range<usize>> {
        let bytes = text.as_bytes();
        let mut spellings = Vec::new();
        for &at in starts {
            let after = &bytes[at..];
            if after
                .get(..self.anchor.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(self.anchor.as_bytes()))
            {
                if !self.followed_by_other_letter(bytes, at) {
                    spellings.push(at..at + self.anchor.len());
                }
                continue;
            }
            // A fingerprint starts with an ASCII or a leading byte, so at a character.
            if let Some(c) = text[at..]
                .chars()
                .next()
                .filter(|c| self.others.binary_search(c).is_ok())
            {
                if !self.alone_without_anchor(text, at, c) {
                    spellings.push(at..at + c.len_utf8());
                }
            }
        }
        if self.combining_characters {
            spellings.extend(non_starters(text));
            spellings.sort_by_key(|range| range.start);
        }
        spellings
    }

    /// Whether `c` (one of `others`) at `at` of `text` stands alone there and so
    /// normalises to what it does alone, which holds no anchor character.
    fn alone_without_anchor(&self, text: &str, at: usize, c: char) -> bool {
        self.without_anchor_alone.binary_search(&c).is_ok() && stands_alone(text, at, c)
    }

    /// What makes this prefilter's candidates: equal prefilters find the same ones.
    fn key(&self) -> (&str, Option<&[char]>) {
        (&self.anchor, self.followers.as_deref())
    }
}

/// Several prefilters whose candidates are wanted in the same texts (`vault_find`'s
/// patterns, normalised and loose), found in one search for all their fingerprints
/// rather than one to three searches of the text per prefilter; each place found is
/// then checked against every prefilter, which is exact, so each gets the candidates it
/// gets alone. Equal prefilters are checked once.
#[derive(Debug)]
pub(crate) struct Prefilters {
    distinct: Vec<Prefilter>,
    /// For each prefilter as given, its index in `distinct`.
    slots: Vec<usize>,
    search: Starts,
}

impl Prefilters {
    pub(crate) fn new(prefilters: Vec<Prefilter>) -> Prefilters {
        let mut distinct: Vec<Prefilter> = Vec::new();
        let mut slots = Vec::with_capacity(prefilters.len());
        for prefilter in prefilters {
            match distinct
                .iter()
                .position(|seen| seen.key() == prefilter.key())
            {
                Some(slot) => slots.push(slot),
                None => {
                    slots.push(distinct.len());
                    distinct.push(prefilter);
                }
            }
        }
        let fingerprints = distinct
            .iter()
            .flat_map(|prefilter| prefilter.fingerprints.iter().cloned())
            .collect();
        Prefilters {
            search: Starts::new(&fingerprints),
            distinct,
            slots,
        }
    }

    /// The candidates of each prefilter as given (see [`Prefilter::candidates`]).
    pub(crate) fn candidates(&self, text: &str) -> Vec<Vec<Range<usize>>> {
        let starts = self.search.find(text.as_bytes());
        let found: Vec<Vec<Range<usize>>> = self
            .distinct
            .iter()
            .map(|prefilter| prefilter.candidates_among(text, &starts))
            .collect();
        self.slots.iter().map(|&slot| found[slot].clone()).collect()
    }
}

/// One search for a set of fingerprints: Teddy looks at as many first bytes as the
/// shortest pattern has, and takes at most 64 patterns (16 of one byte), so the
/// fingerprints are searched by length (one, two, three or more bytes), in as few
/// searches as those limits allow.
#[derive(Debug)]
struct Starts(Vec<Fingerprints>);

/// The most patterns Teddy takes: of one byte, and of more.
const TEDDY_ONE_BYTE_PATTERNS: usize = 16;
const TEDDY_PATTERNS: usize = 64;

impl Starts {
    fn new(fingerprints: &BTreeSet<Vec<u8>>) -> Starts {
        let mut groups: [Vec<&Vec<u8>>; 3] = Default::default();
        for pattern in fingerprints {
            groups[pattern.len().min(3) - 1].push(pattern);
        }
        let mut searches = Vec::new();
        for (length, group) in groups.iter().enumerate() {
            let most = match length {
                0 => TEDDY_ONE_BYTE_PATTERNS,
                _ => TEDDY_PATTERNS,
            };
            let searches_needed = group.len().div_ceil(most).max(1);
            for chunk in group.chunks(group.len().div_ceil(searches_needed).max(1)) {
                searches.push(Fingerprints::new(chunk));
            }
        }
        Starts(searches)
    }

    /// Every place of `bytes` where a fingerprint starts, in order.
    fn find(&self, bytes: &[u8]) -> Vec<usize> {
        let mut starts = Vec::new();
        for fingerprints in &self.0 {
            let mut from = 0;
            while let Some(at) = fingerprints.next(bytes, from) {
                starts.push(at);
                from = at + 1;
            }
        }
        if self.0.len() > 1 {
            starts.sort_unstable();
            starts.dedup();
        }
        starts
    }
}

/// Finds every place a spelling may start, a few false hits aside, by *fingerprints*:
/// the anchor's first three bytes in every ASCII case, and for each other character
/// the first two of its UTF-8 bytes. A few dozen fingerprints stand for the hundreds of
/// characters folding onto an anchor (mathematical letters share `F0 9D`, full-width
/// ones `EF BC`/`EF BD`), which keeps the search a vectorised one over few patterns
/// (Teddy; an automaton reading every byte was most of a scan's time); each hit is then
/// checked in full. Two bytes of a kana or kanji block would hit all over Japanese
/// text, so characters there (`㏌`, `四`) are searched whole: Teddy mixes patterns in
/// buckets, and the first two bytes of a squared sign with those of another pattern in
/// its bucket match kana all over the text (measured: the search took three times as
/// long). A pattern's first bytes are all Teddy looks at, so fingerprints of one, two
/// and three or more bytes are searched apart ([`Starts`]). Every fingerprint starts
/// with an ASCII or a leading byte.
#[derive(Debug)]
enum Fingerprints {
    Packed(packed::Searcher),
    /// Where the CPU has no Teddy, or the fingerprints are too many for it.
    Automaton(AhoCorasick),
}

impl Fingerprints {
    fn new(patterns: &[&Vec<u8>]) -> Fingerprints {
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(patterns)
            .build();
        match packed {
            Some(searcher) => Fingerprints::Packed(searcher),
            None => Fingerprints::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(patterns)
                    .expect("short byte strings"),
            ),
        }
    }

    /// Where the leftmost fingerprint at or after `from` starts.
    fn next(&self, text: &[u8], from: usize) -> Option<usize> {
        let span = Span::from(from..text.len());
        let found = match self {
            Fingerprints::Packed(searcher) => searcher.find_in(text, span),
            Fingerprints::Automaton(automaton) => automaton.find(Input::new(text).span(span)),
        };
        found.map(|found| found.start())
    }
}

/// Whether `byte` is an ASCII character whose normalisation, wherever it stands, is
/// only characters loose text drops (whitespace, `-`, `.`, `[` as `(`...). ASCII
/// characters other than digits, `,` and `.` are normalised one by one (no ASCII
/// character composes, and only numeral runs join `,` and `.` to their neighbours,
/// which takes a digit); a whitespace run collapses to one space, which loose text
/// drops too.
fn vanishes_from_loose_text(byte: u8) -> bool {
    static VANISHING: OnceLock<[bool; 128]> = OnceLock::new();
    let vanishing = VANISHING.get_or_init(|| {
        let mut vanishing = [false; 128];
        for (byte, vanishes) in (0u8..).zip(vanishing.iter_mut()) {
            let normalized = normalize_str(char::from(byte).encode_utf8(&mut [0; 4]));
            *vanishes = normalized.chars().all(|c| loose_char(c).is_none());
        }
        vanishing
    });
    vanishing.get(usize::from(byte)).copied().unwrap_or(false)
}

/// `bytes` in every combination of ASCII cases.
fn ascii_case_variants(bytes: &[u8]) -> BTreeSet<Vec<u8>> {
    let mut variants = BTreeSet::from([Vec::new()]);
    for &byte in bytes {
        let cases = BTreeSet::from([byte.to_ascii_lowercase(), byte.to_ascii_uppercase()]);
        variants = variants
            .iter()
            .flat_map(|start| {
                cases.iter().map(move |&case| {
                    let mut variant = start.clone();
                    variant.push(case);
                    variant
                })
            })
            .collect();
    }
    variants
}

/// Whether `c` is in the blocks of kana, CJK symbols and kanji (leading bytes
/// `E3`-`E9`), which make up most of a Japanese text.
fn is_common_in_japanese(c: char) -> bool {
    ('\u{3000}'..='\u{9FFF}').contains(&c)
}

/// The first two UTF-8 bytes of `c` (its one byte if ASCII).
fn fingerprint(c: char) -> Vec<u8> {
    let mut utf8 = [0; 4];
    let bytes = c.encode_utf8(&mut utf8).as_bytes();
    bytes[..bytes.len().min(2)].to_vec()
}

/// Whether normalisation keeps `c` one for one wherever it stands (see the module doc).
fn can_anchor(c: char) -> bool {
    !(c.is_whitespace() || c.is_ascii_digit() || matches!(c, ',' | '.') || is_numeral(c))
        && starts_segment(c)
}

/// The longest run of `needle` made of characters that can anchor (the first of equals).
fn longest_anchor(needle: &str) -> Option<&str> {
    needle
        .split(|c| !can_anchor(c))
        .min_by_key(|run| std::cmp::Reverse(run.len()))
        .filter(|run| !run.is_empty())
}

/// The digit that anchors a needle without an anchor (`4711`), when it has one: a
/// digit of normalised text comes from that digit or a look-alike (`４`, `④`), from a
/// kanji digit of its value (`四`), or from a numeral run evaluated with a power of ten
/// (`四十`, `千`: only powers make digits that no digit of the run has, by carries and
/// zeros); those characters, and every character whose normalisation holds one of them
/// (`㈣`, `⼗`), are its candidates. Numeral runs never cross a clean boundary, so a
/// window around a candidate holds its whole run. Of the needle's digits, the one
/// whose kanji is rarest in Japanese text (`一` is in `一般` and `統一`).
fn digit_anchor(needle: &str) -> Option<&str> {
    let digit = DIGITS_RAREST_FIRST.chars().find(|&d| needle.contains(d))?;
    let at = needle.find(digit)?;
    Some(&needle[at..=at])
}

/// The digits by how common their kanji are in Japanese text, rarest first.
pub(crate) const DIGITS_RAREST_FIRST: &str = "7986045321";

/// What is read once off every character of Unicode.
#[derive(Debug, Default)]
struct Table {
    /// The kanji numerals and `〇`, and every character whose normalisation alone holds
    /// one of them, each with the numerals it stands for.
    numeral_sources: Vec<(char, String)>,
    /// For a character, the other characters whose normalisation alone contains it.
    preimages: HashMap<char, Vec<char>>,
    /// Characters that the fold of a canonical composite yields and the fold of the
    /// composite's first character does not: only a composition makes them.
    composed: HashSet<char>,
    /// The characters below U+10000 that start no segment of their own.
    non_starters: Vec<u64>,
}

impl Table {
    fn is_non_starter(&self, c: char) -> bool {
        match usize::try_from(u32::from(c)) {
            Ok(code) if code < BMP => self.non_starters[code / 64] & (1 << (code % 64)) != 0,
            _ => !starts_segment(c),
        }
    }
}

const BMP: usize = 0x1_0000;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build_table)
}

/// Reads every assigned plane (planes 4 to 13 hold no characters, and above them only
/// tags, selectors and private use, which fold to themselves). Takes a few tens of
/// milliseconds, once per process.
fn build_table() -> Table {
    let mut table = Table {
        non_starters: vec![0; BMP / 64],
        ..Table::default()
    };
    let mut folder = Folder::default();
    let (mut folded, mut base_folded) = (String::new(), String::new());
    let mut decomposition = Vec::new();
    for c in (0..0x4_0000)
        .chain(0xE_0000..0xE_1000)
        .filter_map(char::from_u32)
    {
        if (c as usize) < BMP && !starts_segment(c) {
            table.non_starters[c as usize / 64] |= 1 << (c as usize % 64);
        }
        if folds_to_itself(c) {
            if is_numeral(c) && !c.is_ascii_digit() {
                table.numeral_sources.push((c, c.to_string()));
            }
            continue;
        }
        folded.clear();
        folder.fold(c.encode_utf8(&mut [0; 4]), &mut folded);
        let kanji_numerals: String = folded
            .chars()
            .filter(|&x| is_numeral(x) && !x.is_ascii_digit())
            .collect();
        if !kanji_numerals.is_empty() {
            table.numeral_sources.push((c, kanji_numerals));
        }
        for out in folded.chars().filter(|&out| out != c) {
            let preimages = table.preimages.entry(out).or_default();
            if !preimages.contains(&c) {
                preimages.push(c);
            }
        }
        decomposition.clear();
        decompose_canonical(c, |d| decomposition.push(d));
        if let [base, _, ..] = decomposition[..] {
            base_folded.clear();
            folder.fold(base.encode_utf8(&mut [0; 4]), &mut base_folded);
            table
                .composed
                .extend(folded.chars().filter(|&out| !base_folded.contains(out)));
        }
    }
    table
}

/// Whether `c`, alone, normalises to itself: stable, or NFKC-normal without case and
/// with no look-alike representative. Composites can be stable (`が`), so only those
/// without a canonical decomposition count here.
fn folds_to_itself(c: char) -> bool {
    let mut decomposes = false;
    decompose_canonical(c, |d| decomposes |= d != c);
    if decomposes || c.is_whitespace() {
        return false;
    }
    is_stable(c)
        || is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
            && c.to_lowercase().eq(std::iter::once(c))
            && representative(c) == c
}

/// The byte ranges of the characters of `text` that start no segment of their own.
fn non_starters(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let table = table();
    text.char_indices()
        .filter(|&(_, c)| c >= '\u{300}' && table.is_non_starter(c))
        .map(|(at, c)| at..at + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(needle: &str) -> Option<&str> {
        longest_anchor(needle)
    }

    #[test]
    fn the_anchor_is_the_longest_run_normalisation_keeps_one_for_one() {
        assert_eq!(anchor("incident-4711"), Some("incident-"));
        assert_eq!(anchor("障害対応"), Some("障害対応"));
        assert_eq!(anchor("2026年 4月"), Some("年"));
        assert_eq!(anchor("a b.cd"), Some("cd"));
        assert_eq!(anchor("2026"), None);
        assert_eq!(anchor(" . , "), None);
    }

    #[test]
    fn preimages_are_what_folds_to_a_character() {
        let table = table();
        let of = |c: char| table.preimages.get(&c).cloned().unwrap_or_default();
        for (c, folding) in [
            ('i', ['Ｉ', 'ｉ', 'ⅰ', 'ﬁ']),
            ('(', ['[', '【', '（', '㈱']),
            ('ー', ['ｰ', '─', '━', 'ｰ']),
            ('a', ['A', 'Ａ', 'ａ', 'ª']),
        ] {
            for x in folding {
                assert!(of(c).contains(&x), "{x} folds to {c}");
            }
        }
        assert!(!of('i').contains(&'i'));
    }

    #[test]
    fn only_compositions_make_composed_characters() {
        let table = table();
        for c in ['が', 'é', 'パ', '가'] {
            assert!(table.composed.contains(&c), "{c}");
        }
        for c in ['i', 'a', 'か', '障', '(', '-'] {
            assert!(!table.composed.contains(&c), "{c}");
        }
        for c in ['\u{3099}', 'ﾞ', '\u{301}', '\u{1161}'] {
            assert!(table.is_non_starter(c), "{c:?}");
        }
        for c in ['a', 'か', '障', 'ｶ', '가'] {
            assert!(!table.is_non_starter(c), "{c:?}");
        }
        let below_marks = ('\0'..'\u{300}').filter(|&c| table.is_non_starter(c));
        assert_eq!(below_marks.count(), 0, "`non_starters` skips them unread");
    }

    /// Teddy is on x86_64 and aarch64 only. Anchors with one-byte fingerprints (`(`
    /// has `[` and `{`) or with many look-alikes in the kana and kanji blocks (`m`, `c`
    /// and `p` have dozens of squared units such as `㎎`) may get the automaton there
    /// too: slower, as exact.
    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn few_fingerprints_stand_for_many_characters() {
        let letters = Prefilter::new("incident-").unwrap().others.len();
        assert!(
            letters > 300,
            "mathematical, full-width, circled letters: {letters}"
        );
        for needle in [
            "incident-",
            "障害対応",
            "がいど",
            "error-rate",
            "サーバ",
            "4711",
        ] {
            let prefilter = Prefilter::new(needle).unwrap();
            for fingerprints in &prefilter.search.0 {
                assert!(matches!(fingerprints, Fingerprints::Packed(_)), "{needle}");
            }
        }
    }

    /// `vault_find`'s anchors for `incident-4711` (normalised `incident-` and `4711`,
    /// loose `c` before `i` and `7`) searched together find what each finds alone, in
    /// four Teddy searches rather than eleven.
    #[test]
    fn prefilters_together_find_what_each_finds_alone() {
        let anchors = || {
            vec![
                Prefilter::new("incident-").unwrap(),
                Prefilter::new("4711").unwrap(),
                Prefilter::new("c").unwrap().followed_by(&['i']),
                Prefilter::new("7").unwrap(),
            ]
        };
        let together = Prefilters::new(anchors());
        assert_eq!(together.distinct.len(), 3, "`4711` and `7` have one anchor");
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            assert_eq!(
                together.search.0.len(),
                4,
                "one byte, two, and three in two halves (the squared signs and kanji)"
            );
            for fingerprints in &together.search.0 {
                assert!(matches!(fingerprints, Fingerprints::Packed(_)));
            }
        }
        let text =
            "See incident-4711, ＩＮＣＩＤＥＮＴ－四七一一 ㉗ ㏌ cite cat Ｃ 十分 traffic 7.";
        let alone: Vec<_> = anchors().iter().map(|a| a.candidates(text)).collect();
        assert_eq!(together.candidates(text), alone);
        assert!(alone.iter().all(|candidates| !candidates.is_empty()));
    }

    /// The text of each candidate `needle`'s prefilter finds in `text`.
    fn candidate_texts<'t>(needle: &str, text: &'t str) -> Vec<&'t str> {
        let prefilter = Prefilter::new(needle).unwrap();
        let candidates = prefilter.candidates(text).into_iter();
        candidates.map(|range| &text[range]).collect()
    }

    #[test]
    fn candidates_cover_every_spelling_of_the_anchor() {
        assert_eq!(
            candidate_texts("incident-", "x INCIDENT- y ｉncident－ z incident"),
            ["INCIDENT-", "ｉ", "－"]
        );
        assert_eq!(
            candidate_texts("incident-", "ｚｉ（ｔ）"),
            ["ｉ", "ｔ"],
            "`ｚ` and `（` share fingerprints with `ｉ` and `ｔ`; they fold to no anchor character"
        );
        assert_eq!(
            candidate_texts("in", "㏌ですinINin"),
            ["㏌", "in", "IN", "in"],
            "both searches, in order, the anchor also where it overlaps itself"
        );
        assert_eq!(candidate_texts("aa", "aaa"), ["aa", "aa"]);
        assert_eq!(
            candidate_texts("4,711", "47 四月 ４ 七 ㈦ 第⼗ 5 一般 千 ⑦"),
            ["7", "七", "㈦", "⼗", "千", "⑦"],
            "a needle of digits: its rarest digit, its look-alikes, its kanji, powers of ten"
        );
        let c_before_i = Prefilter::new("c").unwrap().followed_by(&['i']);
        let text = "Cite each cat, chic\u{301} ｃat tic.";
        let found = c_before_i.candidates(text).into_iter();
        assert_eq!(
            found.map(|range| &text[range]).collect::<Vec<_>>(),
            ["C", "c", "ｃ", "c"],
            "before `i`, a non-letter or a mark, and any look-alike"
        );
        let text = "traffic first, tic - it, tic (x), c.\nx, c -\u{301}x, c ,5, tic [ i";
        let found = c_before_i.candidates(text).into_iter();
        assert_eq!(
            found.map(|range| &text[range]).collect::<Vec<_>>(),
            ["c", "c", "c", "c"],
            "past what loose text drops, a letter other than `i` rules a place out"
        );
        assert_eq!(
            candidate_texts("がいど", "か\u{3099}いど"),
            ["\u{3099}"],
            "the mark that composes が"
        );
    }

    #[test]
    fn a_power_of_ten_standing_alone_is_no_candidate_of_a_digit_it_cannot_make() {
        assert_eq!(
            candidate_texts("4711", "は十分、は㈩分、七十、十七、十\u{301}、4十、は十"),
            ["七", "十", "十", "七", "十", "十"],
            "`十` and `㈩` between plain characters are `10`; beside a numeral or a mark, candidates"
        );
        assert_eq!(
            candidate_texts("4101", "は十分"),
            ["十"],
            "alone, `十` makes the digits `1` and `0`"
        );
    }
}
